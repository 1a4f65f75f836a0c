/* SPDX-License-Identifier: MIT */
/* check.h - job/ only: check.c runs the checks that need the whole job. */
#ifndef DT_JOB_CHECK_H
#define DT_JOB_CHECK_H

#include "job/layers.h"

/* The checks that need more than one key, once every source is applied;
 * fills the defaults that depend on other keys. */
enum dt_status dt_job_finish(struct dt_job_ctx *c);

#endif
