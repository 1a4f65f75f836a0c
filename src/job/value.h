/* SPDX-License-Identifier: MIT */
/* value.h - job/ only: value.c stores one value of a key, checked against
 * its type and range. */
#ifndef DT_JOB_VALUE_H
#define DT_JOB_VALUE_H

#include <stdint.h>

#include "job/error.h"

/* Stores scalar v for key k (INT, UINT, FLOAT, BOOL, ENUM, NAME, PATH,
 * DEGREE) into dst and its position into *slot, after checking its type
 * and range. */
enum dt_status dt_job_store_scalar(const struct dt_job_ctx *c,
				   const struct dt_key *k, const char *path,
				   const struct dt_ynode *v, void *dst,
				   struct dt_pos *slot);
/* Stores a data source (a string, or a mapping {path, sha256, size}) for
 * schema row ki; a string or mapping replaces the whole source. */
enum dt_status dt_job_store_source(struct dt_job_ctx *c, int ki,
				   const char *path, const struct dt_ynode *v);
/* Stores one part ("path", "sha256" or "size") of the source of row ki. */
enum dt_status dt_job_store_source_part(struct dt_job_ctx *c, int ki,
					const char *part, const char *path,
					const struct dt_ynode *v);
/* Stores list v of k (NAMES or SHAPE) into dst, the count into *n and the
 * items' positions into pos[]; the list replaces what is there. */
enum dt_status dt_job_store_list(const struct dt_job_ctx *c,
				 const struct dt_key *k, const char *path,
				 const struct dt_ynode *v, void *dst, int *n,
				 struct dt_pos *pos);
/* Stores item v of the SHAPE list k into *dst and *slot. */
enum dt_status dt_job_store_shape_item(const struct dt_job_ctx *c,
				       const struct dt_key *k,
				       const char *path,
				       const struct dt_ynode *v, int64_t *dst,
				       struct dt_pos *slot);
/* Stores the schema default of key k into dst (a field of the job). */
void dt_job_store_default(const struct dt_key *k, void *dst);

#endif
