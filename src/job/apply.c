/* apply.c - puts the values of a YAML node tree into struct dt_job, section
 * by section and key by key, against the schema: unknown and duplicate
 * keys are found here, and each key's value goes to value.c (or layers.c
 * for model.layers). The same code applies the job file and each --set
 * override (c->set says which). */
#include "job/priv.h"

#include <stdio.h>
#include <string.h>

enum dt_status
dt_job_entry_key(const struct dt_job_ctx *c, const char *prefix,
		 const struct dt_ynode *map, int i, char *path, size_t size)
{
	const struct dt_ynode *key = map->kids[2 * i];
	char found[160];
	int j, n;

	if (key->kind != DT_YNODE_SCALAR) {
		dt_yaml_describe(key, found, sizeof found);
		return dt_job_failf(c, dt_job_node_pos(c, key),
				    prefix[0] ? prefix : NULL,
				    "expected a key name, found %s", found);
	}
	n = snprintf(path, size, "%s%s%s", prefix, prefix[0] ? "." : "",
		     key->text);
	if (n < 0 || (size_t)n >= size)
		path[size - 1] = '\0';
	for (j = 0; j < i; j++) {
		const struct dt_ynode *old = map->kids[2 * j];

		if (old->kind == DT_YNODE_SCALAR &&
		    strcmp(old->text, key->text) == 0) {
			if (c->set != 0)
				return dt_job_failf(c, dt_job_node_pos(c, key),
						    path, "duplicate key");
			return dt_job_failf(c, dt_job_node_pos(c, key), path,
					    "duplicate key, first given on "
					    "line %d", old->line);
		}
	}
	return DT_OK;
}

enum dt_status
dt_job_unknown_key(const struct dt_job_ctx *c, struct dt_pos pos,
		   const char *path)
{
	char best[160], keys[512], sect[256];
	const char *dot, *colon;

	dot = strrchr(path, '.');
	colon = strchr(dot ? dot : path, ':');
	if (colon != NULL) {
		/* "activation:relu" in a flow mapping is one plain scalar. */
		snprintf(sect, sizeof sect, "%.*s", (int)(colon - path), path);
		if (dt_job_schema_find(sect) >= 0 ||
		    dt_job_layer_key_find(dot ? sect + (dot - path) + 1 :
					  sect) >= 0)
			return dt_job_failf(c, pos, path, "unknown key; put a "
					    "space after ':' to give %s a "
					    "value", sect);
	}
	dt_job_suggest(path, best, sizeof best);
	if (best[0] != '\0')
		return dt_job_failf(c, pos, path,
				    "unknown key; did you mean '%s'?", best);
	snprintf(sect, sizeof sect, "%.*s", dot ? (int)(dot - path) : 0,
		 path);
	dt_job_section_keys(sect, keys, sizeof keys);
	if (keys[0] == '\0')
		return dt_job_failf(c, pos, path, "unknown key");
	return dt_job_failf(c, pos, path, "unknown key; %s takes %s",
			    sect[0] ? sect : "the top level", keys);
}

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
