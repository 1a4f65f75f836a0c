/* SPDX-License-Identifier: MIT */
/* apply.h - job/ only: apply.c puts a node tree into the job, section by
 * section and key by key. */
#ifndef DT_JOB_APPLY_H
#define DT_JOB_APPLY_H

#include "job/layers.h"

/* Applies node v to the schema key at index ki (path is its full name):
 * checks its type and range and stores value and position. Sections merge
 * into what is there; lists replace it. */
enum dt_status dt_job_apply_key(struct dt_job_ctx *c, int ki,
				const char *path, const struct dt_ynode *v);
/* Applies every key of mapping map, whose path is prefix ("" for the top). */
enum dt_status dt_job_apply_section(struct dt_job_ctx *c, const char *prefix,
				    const struct dt_ynode *map);

#endif
