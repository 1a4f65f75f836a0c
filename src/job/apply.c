/* apply.c - puts the values of a YAML node tree into struct dt_job, key by
 * key, against the schema: unknown and duplicate keys, types and ranges
 * are checked here, and each value's position is recorded. The same code
 * applies the job file and each --set override (c->set says which). */
#include "job/priv.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest integer a double holds exactly: the bound for integers written
 * as 1e3 or 2.0. */
#define EXACT_INT_MAX 9007199254740992.0

static struct dt_pos
node_pos(const struct dt_job_ctx *c, const struct dt_ynode *n)
{
	struct dt_pos pos = { 0, 0, 0 };

	if (c->set != 0) {
		pos.from_set = c->set;
	} else {
		pos.line = n->line;
		pos.col = n->col;
	}
	return pos;
}

static enum dt_status
type_error(const struct dt_job_ctx *c, const struct dt_key *k,
	   const char *path, const struct dt_ynode *v)
{
	char want[128], found[160];

	dt_job_type_text(k, want, sizeof want);
	dt_yaml_describe(v, found, sizeof found);
	return dt_job_failf(c, node_pos(c, v), path, "expected %s, found %s",
			    want, found);
}

/* Checks x against k's range; the message shows the value as written. */
static enum dt_status
check_range(const struct dt_job_ctx *c, const struct dt_key *k,
	    const char *path, const struct dt_ynode *v, double x)
{
	char range[64];
	bool ok = true;

	if (k->flags & DT_KEYF_MIN)
		ok = k->flags & DT_KEYF_MIN_OPEN ? x > k->min : x >= k->min;
	if (ok && (k->flags & DT_KEYF_MAX))
		ok = k->flags & DT_KEYF_MAX_OPEN ? x < k->max : x <= k->max;
	if (ok)
		return DT_OK;
	dt_job_range_text(k, range, sizeof range);
	return dt_job_failf(c, node_pos(c, v), path, "must be %s, found %s",
			    range, v->text);
}

/* Reads an integer: decimal, 0x, 0o, or a float form with an exact integral
 * value (1e3, 2.0). Fills *neg and *mag. */
static enum dt_status
read_integer(const struct dt_job_ctx *c, const struct dt_key *k,
	     const char *path, const struct dt_ynode *v, bool *neg,
	     uint64_t *mag)
{
	struct dt_ynum num;
	enum dt_ynum_kind kind;

	if (v->kind != DT_YNODE_SCALAR || v->quoted || dt_yaml_is_null(v))
		return type_error(c, k, path, v);
	kind = dt_yaml_number(v->text, &num);
	if (kind == DT_YNUM_INT && !num.overflow) {
		*neg = num.neg && num.mag != 0;
		*mag = num.mag;
		return DT_OK;
	}
	if (kind == DT_YNUM_FLOAT && num.value == floor(num.value) &&
	    fabs(num.value) <= EXACT_INT_MAX) {
		*neg = num.value < 0;
		*mag = (uint64_t)fabs(num.value);
		return DT_OK;
	}
	if (kind == DT_YNUM_INT || kind == DT_YNUM_FLOAT)
		if (num.overflow || fabs(num.value) > EXACT_INT_MAX)
			return dt_job_failf(c, node_pos(c, v), path,
					    "expected an integer that fits "
					    "64 bits, found %s", v->text);
	return type_error(c, k, path, v);
}

static enum dt_status
store_int(const struct dt_job_ctx *c, const struct dt_key *k,
	  const char *path, const struct dt_ynode *v, void *dst)
{
	enum dt_status st;
	uint64_t mag = 0;
	bool neg = false;

	st = read_integer(c, k, path, v, &neg, &mag);
	if (st != DT_OK)
		return st;
	if (k->type == DT_KEY_UINT) {
		if (neg)
			return check_range(c, k, path, v, -1.0);
		*(uint64_t *)dst = mag;
		return DT_OK;
	}
	if (mag > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
		return dt_job_failf(c, node_pos(c, v), path,
				    "expected an integer that fits 64 bits, "
				    "found %s", v->text);
	st = check_range(c, k, path, v, neg ? -(double)mag : (double)mag);
	if (st != DT_OK)
		return st;
	if (neg)
		*(int64_t *)dst = mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN :
				  -(int64_t)mag;
	else
		*(int64_t *)dst = (int64_t)mag;
	return DT_OK;
}

static enum dt_status
store_float(const struct dt_job_ctx *c, const struct dt_key *k,
	    const char *path, const struct dt_ynode *v, double *dst)
{
	struct dt_ynum num;
	enum dt_ynum_kind kind;
	enum dt_status st;

	if (v->kind != DT_YNODE_SCALAR || v->quoted || dt_yaml_is_null(v))
		return type_error(c, k, path, v);
	kind = dt_yaml_number(v->text, &num);
	if (kind == DT_YNUM_NOT)
		return type_error(c, k, path, v);
	if (!isfinite(num.value))
		return dt_job_failf(c, node_pos(c, v), path,
				    "expected a finite number, found %s",
				    v->text);
	st = check_range(c, k, path, v, num.value);
	if (st == DT_OK)
		*dst = num.value;
	return st;
}

static enum dt_status
store_bool(const struct dt_job_ctx *c, const struct dt_key *k,
	   const char *path, const struct dt_ynode *v, bool *dst)
{
	if (v->kind == DT_YNODE_SCALAR && !v->quoted) {
		if (strcmp(v->text, "true") == 0) {
			*dst = true;
			return DT_OK;
		}
		if (strcmp(v->text, "false") == 0) {
			*dst = false;
			return DT_OK;
		}
	}
	return type_error(c, k, path, v);
}

static enum dt_status
store_enum(const struct dt_job_ctx *c, const struct dt_key *k,
	   const char *path, const struct dt_ynode *v, int *dst)
{
	int i;

	if (v->kind == DT_YNODE_SCALAR && !dt_yaml_is_null(v))
		for (i = 0; k->names[i] != NULL; i++)
			if (strcmp(v->text, k->names[i]) == 0) {
				*dst = i;
				return DT_OK;
			}
	return type_error(c, k, path, v);
}

/* Names become directory and layer names: letters, digits, '.', '_', '-',
 * not starting with '.'. */
static enum dt_status
store_name(const struct dt_job_ctx *c, const struct dt_key *k,
	   const char *path, const struct dt_ynode *v, char *dst)
{
	size_t i;

	if (v->kind != DT_YNODE_SCALAR || dt_yaml_is_null(v))
		return type_error(c, k, path, v);
	if (v->len == 0 || v->len >= k->size)
		return dt_job_failf(c, node_pos(c, v), path,
				    "expected a name of 1 to %zu characters, "
				    "found %zu characters", k->size - 1,
				    v->len);
	for (i = 0; i < v->len; i++) {
		char ch = v->text[i];

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		    (ch == '.' && i > 0))
			continue;
		{
			char found[160];

			dt_yaml_describe(v, found, sizeof found);
			return dt_job_failf(c, node_pos(c, v), path,
					    "expected a name of letters, "
					    "digits, '.', '_' and '-' (not "
					    "starting with '.'), found %s",
					    found);
		}
	}
	memcpy(dst, v->text, v->len + 1);
	return DT_OK;
}

/* Joins dir and a relative p, dropping "./" pieces; URLs and absolute paths
 * stay as they are. */
static bool
resolve_path(const char *dir, const char *p, char *dst, size_t size)
{
	int n;

	while (p[0] == '.' && p[1] == '/')
		p += 2;
	if (p[0] == '/' || strstr(p, "://") != NULL || dir == NULL ||
	    dir[0] == '\0' || strcmp(p, ".") == 0)
		n = snprintf(dst, size, "%s", p);
	else if (dir[strlen(dir) - 1] == '/')
		n = snprintf(dst, size, "%s%s", dir, p);
	else
		n = snprintf(dst, size, "%s/%s", dir, p);
	return n >= 0 && (size_t)n < size;
}

static enum dt_status
store_path(const struct dt_job_ctx *c, const struct dt_key *k,
	   const char *path, const struct dt_ynode *v, char *dst)
{
	if (v->kind != DT_YNODE_SCALAR || dt_yaml_is_null(v) || v->len == 0)
		return type_error(c, k, path, v);
	if (!resolve_path(c->dir, v->text, dst, k->size))
		return dt_job_failf(c, node_pos(c, v), path,
				    "expected a path of at most %zu bytes "
				    "once resolved, found a longer one",
				    k->size - 1);
	return DT_OK;
}

/* Stores scalar v for key k into dst and its position into *slot. */
static enum dt_status
store_scalar(const struct dt_job_ctx *c, const struct dt_key *k,
	     const char *path, const struct dt_ynode *v, void *dst,
	     struct dt_pos *slot)
{
	enum dt_status st = DT_OK;

	switch (k->type) {
	case DT_KEY_INT:
	case DT_KEY_UINT: st = store_int(c, k, path, v, dst); break;
	case DT_KEY_FLOAT: st = store_float(c, k, path, v, dst); break;
	case DT_KEY_BOOL: st = store_bool(c, k, path, v, dst); break;
	case DT_KEY_ENUM: st = store_enum(c, k, path, v, dst); break;
	case DT_KEY_NAME: st = store_name(c, k, path, v, dst); break;
	case DT_KEY_PATH: st = store_path(c, k, path, v, dst); break;
	default: assert(!"not a scalar key");
	}
	if (st == DT_OK)
		*slot = node_pos(c, v);
	return st;
}

void
dt_job_store_default(const struct dt_key *k, void *dst)
{
	int i;

	switch (k->type) {
	case DT_KEY_INT:
		*(int64_t *)dst = k->def ? strtoll(k->def, NULL, 10) : 0;
		break;
	case DT_KEY_UINT:
		*(uint64_t *)dst = k->def ? strtoull(k->def, NULL, 10) : 0;
		break;
	case DT_KEY_FLOAT:
		*(double *)dst = k->def ? strtod(k->def, NULL) : 0.0;
		break;
	case DT_KEY_BOOL:
		*(bool *)dst = k->def != NULL && strcmp(k->def, "true") == 0;
		break;
	case DT_KEY_ENUM:
		*(int *)dst = 0;
		for (i = 0; k->def != NULL && k->names[i] != NULL; i++)
			if (strcmp(k->def, k->names[i]) == 0)
				*(int *)dst = i;
		break;
	case DT_KEY_NAME:
	case DT_KEY_PATH:
		snprintf(dst, k->size, "%s", k->def ? k->def : "");
		break;
	default:
		break;
	}
}

void
dt_job_layer_reset(struct dt_job *job, int i)
{
	struct dt_layer_spec *l = &job->model.layers[i];
	int k;

	memset(l, 0, sizeof *l);
	for (k = 0; k < DT_JOB_LAYER_KEYS; k++) {
		dt_job_store_default(&dt_job_layer_schema[k],
				     (char *)l + dt_job_layer_schema[k].off);
		memset(&job->origin.layer[i][k], 0,
		       sizeof job->origin.layer[i][k]);
	}
}

/* The key of mapping entry i (kids[2i]) as text, or an error: keys must be
 * plain words, since a dot would read as a path. */
static enum dt_status
entry_key(const struct dt_job_ctx *c, const char *prefix,
	  const struct dt_ynode *map, int i, char *path, size_t size)
{
	const struct dt_ynode *key = map->kids[2 * i];
	char found[160];
	int j, n;

	if (key->kind != DT_YNODE_SCALAR) {
		dt_yaml_describe(key, found, sizeof found);
		return dt_job_failf(c, node_pos(c, key), prefix[0] ? prefix :
				    NULL, "expected a key name, found %s",
				    found);
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
				return dt_job_failf(c, node_pos(c, key), path,
						    "duplicate key");
			return dt_job_failf(c, node_pos(c, key), path,
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

		st = entry_key(c, prefix, map, i, path, sizeof path);
		if (st != DT_OK)
			return st;
		if (strchr(key->text, '.') != NULL)
			return dt_job_failf(c, node_pos(c, key), path,
					    "expected a key without '.', found "
					    "\"%s\"; nest mappings instead",
					    key->text);
		ki = dt_job_schema_find(path);
		if (ki < 0)
			return dt_job_unknown_key(c, node_pos(c, key), path);
		st = dt_job_apply_key(c, ki, path, map->kids[2 * i + 1]);
		if (st != DT_OK)
			return st;
	}
	return DT_OK;
}

enum dt_status
dt_job_apply_layer_key(struct dt_job_ctx *c, int i, int k, const char *path,
		       const struct dt_ynode *v)
{
	const struct dt_key *lk = &dt_job_layer_schema[k];

	return store_scalar(c, lk, path, v,
			    (char *)&c->job->model.layers[i] + lk->off,
			    &c->job->origin.layer[i][k]);
}

enum dt_status
dt_job_apply_layer(struct dt_job_ctx *c, int i, const struct dt_ynode *map)
{
	char prefix[64], path[256];
	enum dt_status st;
	int j, k;

	snprintf(prefix, sizeof prefix, "model.layers.%d", i);
	if (map->kind != DT_YNODE_MAP) {
		char found[160];

		dt_yaml_describe(map, found, sizeof found);
		return dt_job_failf(c, node_pos(c, map), prefix,
				    "expected a mapping such as {type: dense, "
				    "units: 10}, found %s", found);
	}
	for (j = 0; j < map->n_kids / 2; j++) {
		const struct dt_ynode *key = map->kids[2 * j];

		st = entry_key(c, prefix, map, j, path, sizeof path);
		if (st != DT_OK)
			return st;
		k = dt_job_layer_key_find(key->text);
		if (k < 0)
			return dt_job_unknown_key(c, node_pos(c, key), path);
		st = dt_job_apply_layer_key(c, i, k, path,
					    map->kids[2 * j + 1]);
		if (st != DT_OK)
			return st;
	}
	return DT_OK;
}

static enum dt_status
apply_layers(struct dt_job_ctx *c, int ki, const char *path,
	     const struct dt_ynode *v)
{
	struct dt_job *job = c->job;
	enum dt_status st;
	int i;

	if (v->kind != DT_YNODE_SEQ)
		return type_error(c, &dt_job_schema[ki], path, v);
	if (v->n_kids > DT_JOB_MAX_LAYERS)
		return dt_job_failf(c, node_pos(c, v->kids[DT_JOB_MAX_LAYERS]),
				    path, "expected at most %d layers, found "
				    "%d", DT_JOB_MAX_LAYERS, v->n_kids);
	job->model.n_layers = v->n_kids;
	for (i = 0; i < v->n_kids; i++) {
		dt_job_layer_reset(job, i);
		job->model.layers[i].pos = node_pos(c, v->kids[i]);
		st = dt_job_apply_layer(c, i, v->kids[i]);
		if (st != DT_OK)
			return st;
	}
	job->origin.key[ki] = node_pos(c, v);
	return DT_OK;
}

static const struct dt_key shape_item = {
	.key = "model.input_shape.N", .type = DT_KEY_INT,
	.flags = DT_KEYF_MIN, .min = 1,
};

enum dt_status
dt_job_apply_shape_item(struct dt_job_ctx *c, int i, const char *path,
			const struct dt_ynode *v)
{
	return store_scalar(c, &shape_item, path, v,
			    &c->job->model.input_shape[i],
			    &c->job->origin.shape[i]);
}

static enum dt_status
apply_shape(struct dt_job_ctx *c, int ki, const char *path,
	    const struct dt_ynode *v)
{
	struct dt_job *job = c->job;
	char item[64];
	enum dt_status st;
	int i;

	if (v->kind != DT_YNODE_SEQ || v->n_kids == 0)
		return type_error(c, &dt_job_schema[ki], path, v);
	if (v->n_kids > DT_JOB_MAX_DIMS)
		return dt_job_failf(c, node_pos(c, v->kids[DT_JOB_MAX_DIMS]),
				    path, "expected at most %d dimensions, "
				    "found %d", DT_JOB_MAX_DIMS, v->n_kids);
	memset(job->model.input_shape, 0, sizeof job->model.input_shape);
	memset(job->origin.shape, 0, sizeof job->origin.shape);
	job->model.n_input_dims = v->n_kids;
	for (i = 0; i < v->n_kids; i++) {
		snprintf(item, sizeof item, "%s.%d", path, i);
		st = dt_job_apply_shape_item(c, i, item, v->kids[i]);
		if (st != DT_OK)
			return st;
	}
	job->origin.key[ki] = node_pos(c, v);
	return DT_OK;
}

enum dt_status
dt_job_apply_key(struct dt_job_ctx *c, int ki, const char *path,
		 const struct dt_ynode *v)
{
	const struct dt_key *k = &dt_job_schema[ki];
	enum dt_status st;

	switch (k->type) {
	case DT_KEY_SECTION:
		if (v->kind != DT_YNODE_MAP)
			return type_error(c, k, path, v);
		st = dt_job_apply_section(c, path, v);
		if (st == DT_OK && !dt_job_given(c->job->origin.key[ki]))
			c->job->origin.key[ki] = node_pos(c, v);
		return st;
	case DT_KEY_SHAPE:
		return apply_shape(c, ki, path, v);
	case DT_KEY_LAYERS:
		return apply_layers(c, ki, path, v);
	default:
		return store_scalar(c, k, path, v, (char *)c->job + k->off,
				    &c->job->origin.key[ki]);
	}
}
