/* SPDX-License-Identifier: MIT */
/* layers.c - model.layers: each entry is a layer mapping, or a repeat block
 * {repeat: N, name: B, layers: [...]} that is expanded here, at parse time,
 * into N copies of its layers. The layer of copy C whose own name is L is
 * named "B.C.L" (L defaults to "<type><j>", j its index in the block, and B
 * to "block<i>", i the index of the block's first layer once expanded).
 * Inside a copy, an `inputs:` name of a layer of the same block means that
 * copy's layer, and "block_input" means the layer before the copy (the
 * previous copy's last layer, or the layer before the block); other names
 * are left for the checks. Expanded layers keep the positions of their
 * entries in the block, so errors point at what the user wrote.
 *
 * Also here: what each layer type takes and needs (dt_layer_types in
 * schema.c), and the checks of the whole list once every source is in. */
#include "job/layers.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define BLOCK_INPUT "block_input"

/* Whether layer type t takes layer key k. */
static bool
takes(const struct dt_layer_type *t, int k)
{
	return (t->takes >> k) & 1u;
}

static enum dt_status
store_type(struct dt_job_ctx *c, int i, const char *path,
	   const struct dt_ynode *v)
{
	const struct dt_key *k = &dt_job_layer_schema[DT_LAYER_KEY_TYPE];
	struct dt_layer_spec *l = &c->job->model.layers[i];
	int t;

	if (v->kind == DT_YNODE_SCALAR && !dt_yaml_is_null(v))
		for (t = 0; t < dt_layer_types_len; t++)
			if (strcmp(v->text, dt_layer_types[t].name) == 0) {
				l->kind = dt_layer_types[t].kind;
				if (l->kind == DT_LAYER_ACTIVATION)
					l->activation = dt_layer_types[t].act;
				c->job->origin.layer[i][DT_LAYER_KEY_TYPE] =
					dt_job_node_pos(c, v);
				return DT_OK;
			}
	return dt_job_type_error(c, k, path, v);
}

/* Layer names that mean something else in `inputs:`. */
static enum dt_status
check_reserved(const struct dt_job_ctx *c, const char *path,
	       const struct dt_ynode *v)
{
	if (strcmp(v->text, "input") != 0 && strcmp(v->text, BLOCK_INPUT) != 0)
		return DT_OK;
	return dt_job_failf(c, dt_job_node_pos(c, v), path, "expected a name "
			    "other than input and " BLOCK_INPUT " (they mean "
			    "the model's and a block's input), found \"%s\"",
			    v->text);
}

enum dt_status
dt_job_apply_layer_key(struct dt_job_ctx *c, int i, int k, const char *path,
		       const struct dt_ynode *key, const struct dt_ynode *v)
{
	const struct dt_key *lk = &dt_job_layer_schema[k];
	struct dt_job *job = c->job;
	struct dt_layer_spec *l = &job->model.layers[i];
	const struct dt_layer_type *t = dt_job_layer_type(l);
	enum dt_status st;
	char keys[256];

	if (k != DT_LAYER_KEY_TYPE && !takes(t, k) &&
	    dt_job_given(job->origin.layer[i][DT_LAYER_KEY_TYPE])) {
		dt_job_type_keys(t, keys, sizeof keys);
		return dt_job_failf(c, dt_job_node_pos(c, key ? key : v), path,
				    "%s takes %s", t->name, keys);
	}
	switch (k) {
	case DT_LAYER_KEY_TYPE:
		return store_type(c, i, path, v);
	case DT_LAYER_KEY_SHAPE:
		st = dt_job_store_list(c, lk, path, v, l->shape, &l->n_shape,
				       job->origin.layer_shape[i]);
		break;
	case DT_LAYER_KEY_INPUTS:
		st = dt_job_store_list(c, lk, path, v, l->inputs, &l->n_inputs,
				       job->origin.input[i]);
		break;
	case DT_LAYER_KEY_NAME:
		st = dt_job_store_scalar(c, lk, path, v, (char *)l + lk->off,
					 &job->origin.layer[i][k]);
		if (st == DT_OK)
			st = check_reserved(c, path, v);
		return st;
	default:
		return dt_job_store_scalar(c, lk, path, v, (char *)l + lk->off,
					   &job->origin.layer[i][k]);
	}
	if (st == DT_OK)
		job->origin.layer[i][k] = dt_job_node_pos(c, v);
	return st;
}

void
dt_job_layer_reset(struct dt_job *job, int i)
{
	memset(&job->model.layers[i], 0, sizeof job->model.layers[i]);
	memset(job->origin.layer[i], 0, sizeof job->origin.layer[i]);
	memset(job->origin.input[i], 0, sizeof job->origin.input[i]);
	memset(job->origin.layer_shape[i], 0,
	       sizeof job->origin.layer_shape[i]);
}

/* Index of the first entry of mapping map whose key is word, or -1. */
static int
find_entry(const struct dt_ynode *map, const char *word)
{
	int j;

	for (j = 0; j < map->n_kids / 2; j++)
		if (map->kids[2 * j]->kind == DT_YNODE_SCALAR &&
		    strcmp(map->kids[2 * j]->text, word) == 0)
			return j;
	return -1;
}

/* Whether list entry n is a repeat block rather than a layer. */
static bool
is_block(const struct dt_ynode *n)
{
	return n->kind == DT_YNODE_MAP &&
	       (find_entry(n, "repeat") >= 0 || find_entry(n, "layers") >= 0);
}

/* Applies mapping map to layer i, its keys named prefix.KEY in messages
 * ("model.layers.7", "model.layers.block.fc"). */
static enum dt_status
apply_layer_at(struct dt_job_ctx *c, int i, const char *prefix,
	       const struct dt_ynode *map, bool replace)
{
	char path[256], found[160];
	struct dt_pos pos;
	enum dt_status st;
	int j, k, t;

	if (map->kind != DT_YNODE_MAP) {
		dt_yaml_describe(map, found, sizeof found);
		return dt_job_failf(c, dt_job_node_pos(c, map), prefix,
				    "expected a mapping such as {type: dense, "
				    "units: 10}, found %s", found);
	}
	if (is_block(map))
		return dt_job_failf(c, dt_job_node_pos(c, map), prefix,
				    "expected a layer, found a repeat block; "
				    "blocks are entries of model.layers and "
				    "do not nest");
	/* The type first, so each other key can be checked against it. */
	t = find_entry(map, "type");
	if (t >= 0 && replace) {
		pos = c->job->model.layers[i].pos;
		dt_job_layer_reset(c->job, i);
		c->job->model.layers[i].pos = pos;
	}
	if (t >= 0) {
		snprintf(path, sizeof path, "%s.type", prefix);
		st = store_type(c, i, path, map->kids[2 * t + 1]);
		if (st != DT_OK)
			return st;
	}
	for (j = 0; j < map->n_kids / 2; j++) {
		const struct dt_ynode *key = map->kids[2 * j];

		st = dt_job_entry_key(c, prefix, map, j, path, sizeof path);
		if (st != DT_OK)
			return st;
		if (j == t)
			continue;
		k = dt_job_layer_key_find(key->text);
		if (k < 0)
			return dt_job_unknown_key(c, dt_job_node_pos(c, key),
						  path);
		st = dt_job_apply_layer_key(c, i, k, path, key,
					    map->kids[2 * j + 1]);
		if (st != DT_OK)
			return st;
	}
	return DT_OK;
}

enum dt_status
dt_job_apply_layer(struct dt_job_ctx *c, int i, const struct dt_ynode *map,
		   bool replace)
{
	char prefix[64];

	snprintf(prefix, sizeof prefix, "model.layers.%d", i);
	return apply_layer_at(c, i, prefix, map, replace);
}

/* Writes layer i's default name, "<type><i>". */
static void
default_name(struct dt_job *job, int i)
{
	struct dt_layer_spec *l = &job->model.layers[i];

	snprintf(l->name, sizeof l->name, "%s%d", dt_job_layer_type(l)->name,
		 i);
}

void
dt_job_default_names(struct dt_job *job)
{
	int i;

	for (i = 0; i < job->model.n_layers; i++)
		if (!dt_job_given(job->origin.layer[i][DT_LAYER_KEY_NAME]))
			default_name(job, i);
}

/* ---- repeat blocks ---- */

struct block {
	int64_t repeat;
	const struct dt_ynode *layers;	/* the layers of one copy */
	char name[DT_LAYER_NAME_MAX];
	struct dt_pos repeat_pos;
};

/* Reads the keys of block map, whose first layer will be layer first. */
static enum dt_status
read_block(struct dt_job_ctx *c, int first, const struct dt_ynode *map,
	   struct block *b)
{
	const struct dt_key *name = &dt_job_layer_schema[DT_LAYER_KEY_NAME];
	char prefix[64], path[256];
	struct dt_pos at, unused;
	enum dt_status st;
	int j;

	memset(b, 0, sizeof *b);
	snprintf(prefix, sizeof prefix, "model.layers.%d", first);
	snprintf(b->name, sizeof b->name, "block%d", first);
	for (j = 0; j < map->n_kids / 2; j++) {
		const struct dt_ynode *key = map->kids[2 * j];
		const struct dt_ynode *v = map->kids[2 * j + 1];

		st = dt_job_entry_key(c, prefix, map, j, path, sizeof path);
		if (st != DT_OK)
			return st;
		at = dt_job_node_pos(c, key);
		if (strcmp(key->text, "repeat") == 0) {
			st = dt_job_store_scalar(c, &dt_job_block_repeat, path,
						 v, &b->repeat, &b->repeat_pos);
		} else if (strcmp(key->text, "layers") == 0) {
			if (v->kind != DT_YNODE_SEQ)
				return dt_job_type_error(c,
							 &dt_job_block_layers,
							 path, v);
			if (v->n_kids == 0)
				return dt_job_failf(c, dt_job_node_pos(c, v),
						    path, "expected at least "
						    "one layer, found an "
						    "empty list");
			b->layers = v;
		} else if (strcmp(key->text, "name") == 0) {
			st = dt_job_store_scalar(c, name, path, v, b->name,
						 &unused);
			if (st == DT_OK)
				st = check_reserved(c, path, v);
		} else if (dt_job_layer_key_find(key->text) >= 0) {
			return dt_job_failf(c, at, path, "a repeat block "
					    "takes repeat, layers, name; put "
					    "%s in one of its layers",
					    key->text);
		} else {
			return dt_job_unknown_key(c, at, path);
		}
		if (st != DT_OK)
			return st;
	}
	if (b->repeat == 0) {
		snprintf(path, sizeof path, "%s.repeat", prefix);
		return dt_job_missing(c, &dt_job_block_repeat, path,
				      dt_job_node_pos(c, map), "");
	}
	if (b->layers == NULL) {
		snprintf(path, sizeof path, "%s.layers", prefix);
		return dt_job_missing(c, &dt_job_block_layers, path,
				      dt_job_node_pos(c, map), "");
	}
	return DT_OK;
}

/* Layers entry n stands for, as far as can be told without checking it:
 * for the count in a message about too many layers. */
static int64_t
rough_count(const struct dt_ynode *n)
{
	struct dt_ynum num;
	const struct dt_ynode *r, *l;
	int ri, li;

	if (!is_block(n))
		return 1;
	ri = find_entry(n, "repeat");
	li = find_entry(n, "layers");
	if (ri < 0 || li < 0)
		return 1;
	r = n->kids[2 * ri + 1];
	l = n->kids[2 * li + 1];
	if (r->kind != DT_YNODE_SCALAR || l->kind != DT_YNODE_SEQ ||
	    dt_yaml_number(r->text, &num) != DT_YNUM_INT || num.neg ||
	    num.overflow || num.mag > INT32_MAX)
		return 1;
	return (int64_t)num.mag * l->n_kids;
}

/* Fails with "too many layers" for list v at entry e (n layers before
 * it). */
static enum dt_status
too_many(const struct dt_job_ctx *c, struct dt_pos at, const char *path,
	 const struct dt_ynode *v, int e, int64_t n)
{
	for (; e < v->n_kids && n < INT64_MAX / 2; e++)
		n += rough_count(v->kids[e]);
	return dt_job_failf(c, at, path, "expected at most %d layers once "
			    "repeat blocks are expanded, found %" PRId64,
			    DT_JOB_MAX_LAYERS, n);
}

/* What `inputs:` name in in a copy of a block means: the name of that
 * copy's layer, the layer before the copy, or in itself. The names it
 * makes are those of layers already made, so they fit. */
static void
block_input(const struct dt_job *job, int first, const struct block *b,
	    char (*local)[DT_LAYER_NAME_MAX], int copy, const char *in,
	    char *out)
{
	int n = b->layers->n_kids, m, len;

	if (strcmp(in, BLOCK_INPUT) == 0) {
		if (copy > 0)
			len = snprintf(out, DT_LAYER_NAME_MAX, "%s.%d.%s",
				       b->name, copy - 1, local[n - 1]);
		else
			len = snprintf(out, DT_LAYER_NAME_MAX, "%s", first == 0 ?
				       "input" :
				       job->model.layers[first - 1].name);
		assert(len >= 0 && len < DT_LAYER_NAME_MAX);
		(void)len;
		return;
	}
	for (m = 0; m < n; m++)
		if (strcmp(in, local[m]) == 0) {
			len = snprintf(out, DT_LAYER_NAME_MAX, "%s.%d.%s",
				       b->name, copy, local[m]);
			assert(len >= 0 && len < DT_LAYER_NAME_MAX);
			(void)len;
			return;
		}
	memmove(out, in, strlen(in) + 1);
}

/* The place of layer j, e, of block b as --set names it: by the block's
 * name and the layer's ("model.layers.block.fc"), the layer's default
 * name ("dense3") when it has none, or its index in the block's list. */
static void
block_layer_path(const struct block *b, const struct dt_ynode *e, int j,
		 char *buf, size_t size)
{
	int at = e->kind == DT_YNODE_MAP ? find_entry(e, "name") : -1;
	const struct dt_ynode *v = at >= 0 ? e->kids[2 * at + 1] : NULL;

	if (v != NULL && v->kind == DT_YNODE_SCALAR && v->len > 0) {
		snprintf(buf, size, "model.layers.%s.%s", b->name, v->text);
		return;
	}
	at = e->kind == DT_YNODE_MAP ? find_entry(e, "type") : -1;
	v = at >= 0 ? e->kids[2 * at + 1] : NULL;
	if (v != NULL && v->kind == DT_YNODE_SCALAR && v->len > 0)
		snprintf(buf, size, "model.layers.%s.%s%d", b->name, v->text,
			 j);
	else
		snprintf(buf, size, "model.layers.%s.layers.%d", b->name, j);
}

/* Expands block b into layers first, first + 1, ... */
static enum dt_status
expand_block(struct dt_job_ctx *c, int first, const struct block *b)
{
	char local[DT_JOB_MAX_LAYERS][DT_LAYER_NAME_MAX];
	char path[2 * DT_LAYER_NAME_MAX + 32], in[DT_LAYER_NAME_MAX];
	struct dt_job *job = c->job;
	int n = b->layers->n_kids, copy, j, q, len;
	enum dt_status st;

	/* block_input may name the layer before the block: fix its default
	 * name, or a --set of its type would rename it from under us. */
	if (first > 0 && !dt_job_given(job->origin.layer[first - 1]
						     [DT_LAYER_KEY_NAME]))
		job->origin.layer[first - 1][DT_LAYER_KEY_NAME] =
			job->model.layers[first - 1].pos;

	for (j = 0; j < n; j++) {
		const struct dt_ynode *e = b->layers->kids[j];
		struct dt_layer_spec *l = &job->model.layers[first + j];

		dt_job_layer_reset(job, first + j);
		l->pos = dt_job_node_pos(c, e);
		block_layer_path(b, e, j, path, sizeof path);
		st = apply_layer_at(c, first + j, path, e, false);
		if (st != DT_OK)
			return st;
		if (dt_job_given(job->origin.layer[first + j]
					[DT_LAYER_KEY_NAME]))
			snprintf(local[j], sizeof local[j], "%s", l->name);
		else
			snprintf(local[j], sizeof local[j], "%s%d",
				 dt_job_layer_type(l)->name, j);
	}
	/* Copy 0 last: it holds the entries as written until then. */
	for (copy = (int)b->repeat - 1; copy >= 0; copy--) {
		for (j = 0; j < n; j++) {
			int src = first + j, dst = first + copy * n + j;
			struct dt_layer_spec *l = &job->model.layers[dst];
			struct dt_pos *np;

			if (dst != src) {
				/* memcpy, padding included: jobs compare
				 * and travel as bytes. */
				memcpy(l, &job->model.layers[src], sizeof *l);
				memcpy(job->origin.layer[dst],
				       job->origin.layer[src],
				       sizeof job->origin.layer[dst]);
				memcpy(job->origin.input[dst],
				       job->origin.input[src],
				       sizeof job->origin.input[dst]);
				memcpy(job->origin.layer_shape[dst],
				       job->origin.layer_shape[src],
				       sizeof job->origin.layer_shape[dst]);
			}
			np = &job->origin.layer[dst][DT_LAYER_KEY_NAME];
			if (!dt_job_given(*np))
				*np = l->pos;
			len = snprintf(l->name, sizeof l->name, "%s.%d.%s",
				       b->name, copy, local[j]);
			if (len < 0 || (size_t)len >= sizeof l->name) {
				snprintf(path, sizeof path,
					 "model.layers.%d.name", dst);
				return dt_job_failf(c, *np, path, "expected a "
						    "name of 1 to %zu "
						    "characters once the "
						    "block's name and copy are "
						    "added, found %d characters",
						    sizeof l->name - 1, len);
			}
		}
		for (j = 0; j < n; j++) {
			struct dt_layer_spec *l =
				&job->model.layers[first + copy * n + j];

			for (q = 0; q < l->n_inputs; q++) {
				memcpy(in, job->model.layers[first + j]
				       .inputs[q], sizeof in);
				block_input(job, first, b, local, copy, in,
					    l->inputs[q]);
			}
		}
	}
	return DT_OK;
}

enum dt_status
dt_job_apply_layers(struct dt_job_ctx *c, int ki, const char *path,
		    const struct dt_ynode *v)
{
	struct dt_job *job = c->job;
	struct block b;
	enum dt_status st;
	int e, i, n = 0;

	if (v->kind != DT_YNODE_SEQ)
		return dt_job_type_error(c, &dt_job_schema[ki], path, v);
	for (e = 0; e < v->n_kids; e++) {
		const struct dt_ynode *entry = v->kids[e];

		if (is_block(entry)) {
			st = read_block(c, n, entry, &b);
			if (st != DT_OK)
				return st;
			if (b.repeat > (DT_JOB_MAX_LAYERS - n) /
				       b.layers->n_kids)
				return too_many(c, b.repeat_pos, path, v, e,
						n);
			st = expand_block(c, n, &b);
			if (st != DT_OK)
				return st;
			n += (int)b.repeat * b.layers->n_kids;
			continue;
		}
		if (n == DT_JOB_MAX_LAYERS)
			return too_many(c, dt_job_node_pos(c, entry), path, v,
					e, n);
		dt_job_layer_reset(job, n);
		job->model.layers[n].pos = dt_job_node_pos(c, entry);
		st = dt_job_apply_layer(c, n, entry, false);
		if (st != DT_OK)
			return st;
		/* A block after it may name it as its input. */
		if (!dt_job_given(job->origin.layer[n][DT_LAYER_KEY_NAME]))
			default_name(job, n);
		n++;
	}
	for (i = n; i < job->model.n_layers; i++)
		dt_job_layer_reset(job, i);
	job->model.n_layers = n;
	job->origin.key[ki] = dt_job_node_pos(c, v);
	return DT_OK;
}

/* ---- checks once every source is in ---- */

int
dt_job_find_layer(const struct dt_job *job, const char *name, int n)
{
	int j;

	for (j = 0; j < n; j++)
		if (strcmp(job->model.layers[j].name, name) == 0)
			return j;
	return -1;
}

const char *
dt_job_closest_layer(const struct dt_job *job, const char *name, int n,
		     bool input)
{
	const char *best = input ? "input" : NULL;
	int j, d, best_d = input ? dt_job_distance(name, "input") : 1 << 20;

	for (j = 0; j < n; j++) {
		d = dt_job_distance(name, job->model.layers[j].name);
		if (d < best_d) {
			best_d = d;
			best = job->model.layers[j].name;
		}
	}
	/* A one-letter name is one edit from every other one. */
	return best_d <= dt_job_suggest_limit(strlen(name)) &&
	       (size_t)best_d < strlen(name) ? best : NULL;
}

/* Input q of layer i names "input" or an earlier layer. */
static enum dt_status
check_input(const struct dt_job_ctx *c, int i, int q)
{
	const struct dt_job *job = c->job;
	const char *in = job->model.layers[i].inputs[q], *best;
	struct dt_pos at = job->origin.input[i][q];
	char path[96];
	int j;

	if (strcmp(in, "input") == 0 || dt_job_find_layer(job, in, i) >= 0)
		return DT_OK;
	snprintf(path, sizeof path, "model.layers.%d.inputs.%d", i, q);
	j = dt_job_find_layer(job, in, job->model.n_layers);
	if (j >= 0)
		return dt_job_failf(c, at, path, "expected \"input\" or an "
				    "earlier layer, found \"%s\" "
				    "(model.layers.%d)", in, j);
	if (strcmp(in, BLOCK_INPUT) == 0)
		return dt_job_failf(c, at, path, "expected \"input\" or an "
				    "earlier layer, found \"%s\", which only "
				    "the layers of a repeat block use", in);
	best = dt_job_closest_layer(job, in, i, true);
	if (best != NULL)
		return dt_job_failf(c, at, path, "expected \"input\" or an "
				    "earlier layer, found \"%s\"; did you mean "
				    "'%s'?", in, best);
	return dt_job_failf(c, at, path, "expected \"input\" or an earlier "
			    "layer, found \"%s\"", in);
}

/* The keys of layer i against its type: none it does not take, all it
 * needs, and as many inputs as it takes. */
static enum dt_status
check_keys(const struct dt_job_ctx *c, int i)
{
	const struct dt_job *job = c->job;
	const struct dt_layer_spec *l = &job->model.layers[i];
	const struct dt_layer_type *t = dt_job_layer_type(l);
	const struct dt_pos *o = job->origin.layer[i];
	char key[96], keys[256], why[64];
	int k;

	for (k = 0; k < DT_JOB_LAYER_KEYS; k++) {
		snprintf(key, sizeof key, "model.layers.%d.%s", i,
			 dt_job_layer_schema[k].key);
		if (dt_job_given(o[k]) && !takes(t, k)) {
			dt_job_type_keys(t, keys, sizeof keys);
			return dt_job_failf(c, dt_job_blame(o[k],
					    o[DT_LAYER_KEY_TYPE]), key,
					    "%s takes %s", t->name, keys);
		}
		if (!dt_job_given(o[k]) && ((t->needs >> k) & 1u)) {
			snprintf(why, sizeof why, " (type is %s)", t->name);
			return dt_job_missing(c, &dt_job_layer_schema[k], key,
					      dt_job_blame(l->pos,
					      o[DT_LAYER_KEY_TYPE]), why);
		}
	}
	if (l->n_inputs == 0 ||
	    (l->n_inputs >= t->min_inputs && l->n_inputs <= t->max_inputs))
		return DT_OK;
	snprintf(key, sizeof key, "model.layers.%d.inputs", i);
	if (t->max_inputs == 1)
		return dt_job_failf(c, o[DT_LAYER_KEY_INPUTS], key, "%s takes "
				    "one input, found %d", t->name,
				    l->n_inputs);
	return dt_job_failf(c, o[DT_LAYER_KEY_INPUTS], key, "%s takes %d to "
			    "%d inputs, found %d", t->name, t->min_inputs,
			    t->max_inputs, l->n_inputs);
}

/* An embedding's or pos_embedding's table is looked up, not multiplied
 * with an input: it has no fan-in for the He or Xavier rule. (model.init
 * he or xavier leaves such tables at their own init; graph/init.c.) */
static enum dt_status
check_init(const struct dt_job_ctx *c, int i)
{
	const struct dt_layer_spec *l = &c->job->model.layers[i];
	enum dt_init_rule r = l->init.rule;
	char key[96];

	if ((l->kind != DT_LAYER_EMBEDDING &&
	     l->kind != DT_LAYER_POS_EMBEDDING) ||
	    (r != DT_INIT_RULE_HE && r != DT_INIT_RULE_XAVIER))
		return DT_OK;
	snprintf(key, sizeof key, "model.layers.%d.init", i);
	return dt_job_failf(c, c->job->origin.layer[i][DT_LAYER_KEY_INIT], key,
			    "%s takes auto, gpt2 or normal(STD) (a table "
			    "has no fan-in for he or xavier), found %s",
			    dt_job_layer_type(l)->name, dt_job_init_words[r]);
}

/* Fills the defaults of the keys layer i's type takes and were not given;
 * keys it does not take stay 0. */
static void
fill_defaults(struct dt_job *job, int i)
{
	struct dt_layer_spec *l = &job->model.layers[i];
	const struct dt_layer_type *t = dt_job_layer_type(l);
	int k;

	if (l->kind != DT_LAYER_ACTIVATION && !takes(t, DT_LAYER_KEY_ACTIVATION))
		l->activation = DT_ACT_NONE;
	for (k = 0; k < DT_JOB_LAYER_KEYS; k++) {
		const struct dt_key *lk = &dt_job_layer_schema[k];

		if (!takes(t, k) || dt_job_given(job->origin.layer[i][k]) ||
		    k == DT_LAYER_KEY_TYPE || k == DT_LAYER_KEY_NAME ||
		    k == DT_LAYER_KEY_INPUTS || k == DT_LAYER_KEY_SHAPE ||
		    k == DT_LAYER_KEY_TIE)
			continue;
		if (k == DT_LAYER_KEY_STRIDE)
			l->stride = l->kind == DT_LAYER_CONV2D ? 1 : l->kernel;
		else
			dt_job_store_default(lk, (char *)l + lk->off);
	}
}

enum dt_status
dt_job_check_layers(const struct dt_job_ctx *c)
{
	struct dt_job *job = c->job;
	char key[96];
	enum dt_status st;
	int i, j, q;

	if (job->model.n_layers == 0)
		return dt_job_failf(c, dt_job_pos(job, "model.layers"),
				    "model.layers", "expected at least one "
				    "layer, found an empty list");
	for (i = 0; i < job->model.n_layers; i++) {
		const struct dt_layer_spec *l = &job->model.layers[i];
		struct dt_pos at = job->origin.layer[i][DT_LAYER_KEY_NAME];

		if (!dt_job_given(job->origin.layer[i][DT_LAYER_KEY_TYPE])) {
			snprintf(key, sizeof key, "model.layers.%d.type", i);
			return dt_job_missing(c, &dt_job_layer_schema
					      [DT_LAYER_KEY_TYPE], key, l->pos,
					      "");
		}
		st = check_keys(c, i);
		if (st == DT_OK)
			st = check_init(c, i);
		if (st != DT_OK)
			return st;
		if (!dt_job_given(at))
			at = l->pos;
		j = dt_job_find_layer(job, l->name, i);
		if (j >= 0) {
			snprintf(key, sizeof key, "model.layers.%d.name", i);
			return dt_job_failf(c, at, key, "duplicate layer name "
					    "\"%s\", first used by "
					    "model.layers.%d", l->name, j);
		}
		for (q = 0; q < l->n_inputs; q++) {
			st = check_input(c, i, q);
			if (st != DT_OK)
				return st;
		}
		fill_defaults(job, i);
	}
	return DT_OK;
}
