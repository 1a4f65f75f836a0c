/* SPDX-License-Identifier: MIT */
/* layers.h - job/ only: layers.c applies and checks model.layers. */
#ifndef DT_JOB_LAYERS_H
#define DT_JOB_LAYERS_H

#include <stdbool.h>

#include "job/value.h"

/* Applies the list v to model.layers (row ki), expanding repeat blocks. */
enum dt_status dt_job_apply_layers(struct dt_job_ctx *c, int ki,
				   const char *path, const struct dt_ynode *v);
/* Applies mapping map to layer i (which exists): merged into it, or
 * replacing it when the mapping gives `type` and replace is true. */
enum dt_status dt_job_apply_layer(struct dt_job_ctx *c, int i,
				  const struct dt_ynode *map, bool replace);
/* Applies one layer key k of layer i with path; key is the key's node
 * (NULL for a --set), where an error about the layer's type points. */
enum dt_status dt_job_apply_layer_key(struct dt_job_ctx *c, int i, int k,
				      const char *path,
				      const struct dt_ynode *key,
				      const struct dt_ynode *v);
/* Puts layer i back to its zero state with no position. */
void dt_job_layer_reset(struct dt_job *job, int i);
/* Index of the layer named name among the first n, or -1. */
int dt_job_find_layer(const struct dt_job *job, const char *name, int n);
/* The name among the first n layers (and "input" when input is true)
 * closest to name, or NULL when none is close enough. */
const char *dt_job_closest_layer(const struct dt_job *job, const char *name,
				 int n, bool input);
/* Gives layers without a `name:` their default "<type><index>". */
void dt_job_default_names(struct dt_job *job);
/* The checks of model.layers once every source is applied: types, keys
 * per type, required keys, inputs, unique names; then fills the defaults
 * of the keys each layer's type takes. */
enum dt_status dt_job_check_layers(const struct dt_job_ctx *c);

#endif
