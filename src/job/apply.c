/* SPDX-License-Identifier: MIT */
/* apply.c - puts the values of a YAML node tree into struct dt_job, section
 * by section and key by key, against the schema: unknown and duplicate
 * keys are refused here (error.c words the messages), and each key's
 * value goes to value.c (or layers.c for model.layers). The same code
 * applies the job file and each --set override (c->set says which). */
#include "job/apply.h"

#include <stdio.h>
#include <string.h>

enum dt_status
dt_job_apply_section(struct dt_job_ctx *c, const char *prefix,
		     const struct dt_ynode *map)
{
	char path[256];
	enum dt_status st;
	int i, ki;

	for (i = 0; i < map->n_kids / 2; i++) {
		const struct dt_ynode *key = map->kids[2 * i];

		st = dt_job_entry_key(c, prefix, map, i, path, sizeof path);
		if (st != DT_OK)
			return st;
		if (strchr(key->text, '.') != NULL)
			return dt_job_failf(c, dt_job_node_pos(c, key), path,
					    "expected a key without '.', found "
					    "\"%s\"; nest mappings instead",
					    key->text);
		ki = dt_job_schema_find(path);
		if (ki < 0)
			return dt_job_unknown_key(c, dt_job_node_pos(c, key),
						  path);
		st = dt_job_apply_key(c, ki, path, map->kids[2 * i + 1]);
		if (st != DT_OK)
			return st;
	}
	return DT_OK;
}

enum dt_status
dt_job_apply_key(struct dt_job_ctx *c, int ki, const char *path,
		 const struct dt_ynode *v)
{
	const struct dt_key *k = &dt_job_schema[ki];
	struct dt_job *job = c->job;
	enum dt_status st;

	switch (k->type) {
	case DT_KEY_SECTION:
		if (v->kind != DT_YNODE_MAP)
			return dt_job_type_error(c, k, path, v);
		st = dt_job_apply_section(c, path, v);
		if (st == DT_OK && !dt_job_given(job->origin.key[ki]))
			job->origin.key[ki] = dt_job_node_pos(c, v);
		return st;
	case DT_KEY_SHAPE:
		st = dt_job_store_list(c, k, path, v, (char *)job + k->off,
				       (int *)((char *)job + k->off_n),
				       job->origin.shape);
		break;
	case DT_KEY_NAMES:
		st = dt_job_store_list(c, k, path, v, (char *)job + k->off,
				       (int *)((char *)job + k->off_n),
				       job->origin.stage);
		break;
	case DT_KEY_LAYERS:
		return dt_job_apply_layers(c, ki, path, v);
	case DT_KEY_SOURCE:
		return dt_job_store_source(c, ki, path, v);
	default:
		return dt_job_store_scalar(c, k, path, v, (char *)job + k->off,
					   &job->origin.key[ki]);
	}
	if (st == DT_OK)
		job->origin.key[ki] = dt_job_node_pos(c, v);
	return st;
}
