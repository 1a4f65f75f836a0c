/* SPDX-License-Identifier: MIT */
/* tree.c - the job file's node tree edited before it is applied: the
 * named values of the top-level `vars:` mapping put where a plain scalar
 * "$NAME" refers to them, and the --set overrides that name a var
 * ("vars.width=64") or a repeat block or one of its layers
 * ("model.layers.block.repeat=6", "model.layers.block.fc.units=256").
 *
 * Why vars and not YAML anchors and aliases: an alias copies its anchor's
 * value where the file is read, so `--set` could change one place only,
 * and sweeping a width from the command line is what a named value is
 * for; a var is changed once with --set vars.NAME=VALUE and every use
 * follows. A var's value is a scalar and cannot refer to another var, so
 * each reference becomes one scalar and the expanded tree is the size of
 * the file: there is no "billion laughs" to bound. Aliases stay refused
 * by yaml.c.
 *
 * A block's layers are expanded into copies only when the tree is
 * applied (layers.c), so an edit here reaches every copy, and the count
 * of copies itself can change. */
#include "job/tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

static const char layers_prefix[] = "model.layers.";

void
dt_job_tree_mark(struct dt_ynode *n, int set)
{
	int i;

	n->set = set;
	for (i = 0; i < n->n_kids; i++)
		dt_job_tree_mark(n->kids[i], set);
}

/* The value of key word in mapping map, or NULL; its index in *at. */
static struct dt_ynode *
lookup(const struct dt_ynode *map, const char *word, int *at)
{
	int j;

	if (map == NULL || map->kind != DT_YNODE_MAP)
		return NULL;
	for (j = 0; j < map->n_kids / 2; j++)
		if (map->kids[2 * j]->kind == DT_YNODE_SCALAR &&
		    strcmp(map->kids[2 * j]->text, word) == 0) {
			if (at != NULL)
				*at = j;
			return map->kids[2 * j + 1];
		}
	return NULL;
}

/* Whether s is a var name: [A-Za-z_][A-Za-z0-9_]*. */
static bool
is_var_name(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
	      *s == '_'))
		return false;
	for (s++; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* The var a plain scalar refers to ("width" for $width), or NULL. */
static const char *
reference(const struct dt_ynode *n)
{
	if (n->kind != DT_YNODE_SCALAR || n->quoted || n->text[0] != '$' ||
	    !is_var_name(n->text + 1))
		return NULL;
	return n->text + 1;
}

/* Checks the value v of var path. */
static enum dt_status
check_value(struct dt_job_ctx *c, const char *path, const struct dt_ynode *v)
{
	char found[160];

	if (v->kind != DT_YNODE_SCALAR || dt_yaml_is_null(v)) {
		dt_yaml_describe(v, found, sizeof found);
		return dt_job_failf(c, dt_job_node_pos(c, v), path, "expected "
				    "a number, a word or true or false, found "
				    "%s", found);
	}
	if (reference(v) != NULL)
		return dt_job_failf(c, dt_job_node_pos(c, v), path, "expected "
				    "a value, found the reference %s; a var "
				    "cannot refer to another var", v->text);
	return DT_OK;
}

enum dt_status
dt_job_vars_check(struct dt_job_ctx *c, const struct dt_ynode *root,
		  struct dt_ynode **vars)
{
	char path[256], found[160];
	enum dt_status st;
	struct dt_ynode *v;
	int j;

	*vars = NULL;
	v = lookup(root, "vars", NULL);
	if (v == NULL)
		return DT_OK;
	if (v->kind != DT_YNODE_MAP) {
		dt_yaml_describe(v, found, sizeof found);
		return dt_job_failf(c, dt_job_node_pos(c, v), "vars",
				    "expected a mapping of names to values "
				    "such as {width: 128}, found %s", found);
	}
	for (j = 0; j < v->n_kids / 2; j++) {
		const struct dt_ynode *key = v->kids[2 * j];

		st = dt_job_entry_key(c, "vars", v, j, path, sizeof path);
		if (st != DT_OK)
			return st;
		if (!is_var_name(key->text))
			return dt_job_failf(c, dt_job_node_pos(c, key), path,
					    "expected a name of letters, "
					    "digits and '_' that does not "
					    "start with a digit, found \"%s\"",
					    key->text);
		st = check_value(c, path, v->kids[2 * j + 1]);
		if (st != DT_OK)
			return st;
	}
	*vars = v;
	return DT_OK;
}

/* The names of vars, comma-separated, into buf. */
static void
var_names(const struct dt_ynode *vars, char *buf, size_t size)
{
	size_t o = 0;
	int j;

	buf[0] = '\0';
	for (j = 0; vars != NULL && j < vars->n_kids / 2 && o < size; j++)
		o += (size_t)snprintf(buf + o, size - o, "%s%s", j ? ", " : "",
				      vars->kids[2 * j]->text);
}

/* Fails for a reference to var name, which vars does not hold. */
static enum dt_status
undefined(struct dt_job_ctx *c, struct dt_pos at, const char *path,
	  const struct dt_ynode *vars, const char *name, const char *what)
{
	char names[256];
	const char *best = NULL;
	int j, d, best_d = 1 << 20;

	if (vars == NULL || vars->n_kids == 0)
		return dt_job_failf(c, at, path, "%s %s, but the job has no "
				    "vars: section that names it", what,
				    name);
	for (j = 0; j < vars->n_kids / 2; j++) {
		d = dt_job_distance(name, vars->kids[2 * j]->text);
		if (d < best_d) {
			best_d = d;
			best = vars->kids[2 * j]->text;
		}
	}
	var_names(vars, names, sizeof names);
	if (best_d <= dt_job_suggest_limit(strlen(name)))
		return dt_job_failf(c, at, path, "%s %s, which vars: does not "
				    "name; did you mean %s? (vars: %s)", what,
				    name, best, names);
	return dt_job_failf(c, at, path, "%s %s, which vars: does not name "
			    "(vars: %s)", what, name, names);
}

/* Puts var value v into scalar n, which refers to it. */
static void
substitute(struct dt_ynode *n, const struct dt_ynode *v)
{
	free(n->text);
	n->len = v->len;
	n->text = dt_xmalloc(v->len + 1, 1);
	memcpy(n->text, v->text, v->len + 1);
	n->quoted = v->quoted;
	if (v->set != 0)
		n->set = v->set;
}

/* The path of item j, kid, of the list at path: a layer or block with a
 * name by that name, as --set spells it ("model.layers.head",
 * "model.layers.block.fc" for "model.layers.block.layers" item fc),
 * anything else by its index. */
static void
item_path(const char *path, const struct dt_ynode *kid, int j, char *buf,
	  size_t size)
{
	const struct dt_ynode *name = lookup(kid, "name", NULL);
	size_t n = strlen(path);

	if (strncmp(path, layers_prefix, sizeof layers_prefix - 2) != 0 ||
	    name == NULL || name->kind != DT_YNODE_SCALAR) {
		snprintf(buf, size, "%s.%d", path, j);
		return;
	}
	if (n > 7 + sizeof layers_prefix &&
	    strcmp(path + n - 7, ".layers") == 0)
		n -= 7;
	snprintf(buf, size, "%.*s.%s", (int)n, path, name->text);
}

enum dt_status
dt_job_vars_subst(struct dt_job_ctx *c, const struct dt_ynode *vars,
		  struct dt_ynode *n, const char *path)
{
	char sub[256], ref[80];
	const struct dt_ynode *v;
	const char *name;
	enum dt_status st;
	int j;

	name = reference(n);
	if (name != NULL) {
		v = lookup(vars, name, NULL);
		if (v == NULL) {
			snprintf(ref, sizeof ref, "$%.60s", name);
			return undefined(c, dt_job_node_pos(c, n), path, vars,
					 ref, "found");
		}
		substitute(n, v);
		return DT_OK;
	}
	for (j = 0; j < n->n_kids; j++) {
		if (n->kind == DT_YNODE_MAP && j % 2 == 0)
			continue;	/* keys are never references */
		if (n->kind == DT_YNODE_MAP)
			snprintf(sub, sizeof sub, "%s%s%s", path,
				 path[0] ? "." : "", n->kids[j - 1]->text);
		else
			item_path(path, n->kids[j], j, sub, sizeof sub);
		st = dt_job_vars_subst(c, vars, n->kids[j], sub);
		if (st != DT_OK)
			return st;
	}
	return DT_OK;
}

struct dt_ynode *
dt_job_vars_detach(struct dt_ynode *root)
{
	struct dt_ynode *v;
	int at;

	v = lookup(root, "vars", &at);
	if (v == NULL)
		return NULL;
	dt_yaml_free(root->kids[2 * at]);
	memmove(&root->kids[2 * at], &root->kids[2 * at + 2],
		(size_t)(root->n_kids - 2 * at - 2) * sizeof *root->kids);
	root->n_kids -= 2;
	return v;
}

/* Sets key word of mapping map to *v (taken: *v becomes NULL). */
static void
put(struct dt_ynode *map, const char *word, struct dt_ynode **v, int set)
{
	struct dt_ynode *key;
	int at;

	if (lookup(map, word, &at) != NULL) {
		dt_yaml_free(map->kids[2 * at + 1]);
		map->kids[2 * at + 1] = *v;
		*v = NULL;
		return;
	}
	key = dt_xcalloc(1, sizeof *key);
	key->kind = DT_YNODE_SCALAR;
	key->len = strlen(word);
	key->text = dt_xmalloc(key->len + 1, 1);
	memcpy(key->text, word, key->len + 1);
	key->set = set;
	map->kids = dt_xrealloc(map->kids, (size_t)map->n_kids + 2,
				sizeof *map->kids);
	map->kids[map->n_kids++] = key;
	map->kids[map->n_kids++] = *v;
	*v = NULL;
}

/* --set vars.NAME=VALUE. */
static enum dt_status
set_var(struct dt_job_ctx *c, struct dt_ynode *vars, const char *key,
	struct dt_ynode **v)
{
	struct dt_pos at = { 0, 0, c->set };
	const char *name = key + 5;
	enum dt_status st;

	if (lookup(vars, name, NULL) == NULL)
		return undefined(c, at, key, vars, name, "expected a var of "
				 "the job file, found");
	st = check_value(c, key, *v);
	if (st != DT_OK)
		return st;
	put(vars, name, v, c->set);
	return DT_OK;
}

/* Whether list entry n of model.layers is a repeat block. */
static bool
is_block(const struct dt_ynode *n)
{
	return n->kind == DT_YNODE_MAP && (lookup(n, "repeat", NULL) != NULL ||
					   lookup(n, "layers", NULL) != NULL);
}

/* The layers entry e stands for once expanded (as layers.c counts them
 * when the entry is right; a wrong one fails when applied). */
static int64_t
expanded(const struct dt_ynode *e)
{
	const struct dt_ynode *r = lookup(e, "repeat", NULL);
	const struct dt_ynode *l = lookup(e, "layers", NULL);
	struct dt_ynum num;

	if (!is_block(e) || r == NULL || l == NULL ||
	    r->kind != DT_YNODE_SCALAR || l->kind != DT_YNODE_SEQ ||
	    dt_yaml_number(r->text, &num) != DT_YNUM_INT || num.neg ||
	    num.overflow || num.mag > DT_JOB_MAX_LAYERS)
		return 1;
	return (int64_t)num.mag * l->n_kids;
}

/* The name layer map m of a block goes by inside it: its `name:`, or
 * "<type><j>" as layers.c names it. */
static void
local_name(const struct dt_ynode *m, int j, char *buf, size_t size)
{
	const struct dt_ynode *name = lookup(m, "name", NULL);
	const struct dt_ynode *type = lookup(m, "type", NULL);

	if (name != NULL && name->kind == DT_YNODE_SCALAR)
		snprintf(buf, size, "%s", name->text);
	else if (type != NULL && type->kind == DT_YNODE_SCALAR)
		snprintf(buf, size, "%s%d", type->text, j);
	else
		buf[0] = '\0';
}

/* The local names of block b's layers, comma-separated. */
static void
local_names(const struct dt_ynode *b, char *buf, size_t size)
{
	const struct dt_ynode *l = lookup(b, "layers", NULL);
	char one[DT_LAYER_NAME_MAX];
	size_t o = 0;
	int j;

	buf[0] = '\0';
	for (j = 0; l != NULL && l->kind == DT_YNODE_SEQ && j < l->n_kids &&
	     o < size; j++) {
		local_name(l->kids[j], j, one, sizeof one);
		o += (size_t)snprintf(buf + o, size - o, "%s%s", j ? ", " : "",
				      one);
	}
}

/* tail ("repeat", "fc", "fc.units") of a key naming block b (entry e of
 * model.layers). */
static enum dt_status
set_in_block(struct dt_job_ctx *c, struct dt_ynode *b, const char *key,
	     const char *bname, const char *tail, struct dt_ynode **v,
	     bool *done)
{
	struct dt_ynode *l = lookup(b, "layers", NULL);
	struct dt_pos at = { 0, 0, c->set };
	char one[DT_LAYER_NAME_MAX], names[256];
	size_t n;
	int j;

	if (strcmp(tail, "repeat") == 0 || strcmp(tail, "layers") == 0 ||
	    strcmp(tail, "name") == 0) {
		put(b, tail, v, c->set);
		*done = true;
		return DT_OK;
	}
	for (j = 0; l != NULL && l->kind == DT_YNODE_SEQ && j < l->n_kids;
	     j++) {
		local_name(l->kids[j], j, one, sizeof one);
		n = strlen(one);
		if (n == 0 || strncmp(tail, one, n) != 0)
			continue;
		if (tail[n] == '\0') {
			dt_yaml_free(l->kids[j]);
			l->kids[j] = *v;
			*v = NULL;
			*done = true;
			return DT_OK;
		}
		if (tail[n] == '.' && strchr(tail + n + 1, '.') == NULL &&
		    l->kids[j]->kind == DT_YNODE_MAP &&
		    dt_job_layer_key_find(tail + n + 1) >= 0) {
			put(l->kids[j], tail + n + 1, v, c->set);
			*done = true;
			return DT_OK;
		}
	}
	if (dt_job_layer_key_find(tail) >= 0) {
		local_names(b, names, sizeof names);
		return dt_job_failf(c, at, key, "a repeat block takes repeat, "
				    "layers, name; set %s in one of its layers, "
				    "model.layers.%s.LAYER.%s (its layers: "
				    "%s)", tail, bname, tail, names);
	}
	return DT_OK;		/* a copy's layer ("block.2.fc"), or wrong */
}

enum dt_status
dt_job_tree_set(struct dt_job_ctx *c, struct dt_ynode *root,
		struct dt_ynode *vars, const char *key, struct dt_ynode **v,
		bool *done)
{
	struct dt_ynode *list;
	char bname[DT_LAYER_NAME_MAX];
	const char *rest, *tail;
	int64_t first = 0;
	size_t n;
	int e;

	*done = false;
	if (strncmp(key, "vars.", 5) == 0) {
		*done = true;
		return set_var(c, vars, key, v);
	}
	if (strncmp(key, layers_prefix, sizeof layers_prefix - 1) != 0 ||
	    dt_job_list_index(key, "model.layers", &rest) >= 0)
		return DT_OK;
	rest = key + sizeof layers_prefix - 1;
	list = lookup(lookup(root, "model", NULL), "layers", NULL);
	if (list == NULL || list->kind != DT_YNODE_SEQ)
		return DT_OK;
	for (e = 0; e < list->n_kids; first += expanded(list->kids[e]), e++) {
		struct dt_ynode *b = list->kids[e];
		const struct dt_ynode *name = lookup(b, "name", NULL);

		if (!is_block(b))
			continue;
		if (name != NULL && name->kind == DT_YNODE_SCALAR)
			snprintf(bname, sizeof bname, "%s", name->text);
		else
			snprintf(bname, sizeof bname, "block%lld",
				 (long long)first);
		n = strlen(bname);
		if (strncmp(rest, bname, n) != 0)
			continue;
		if (rest[n] == '\0') {
			dt_yaml_free(list->kids[e]);
			list->kids[e] = *v;
			*v = NULL;
			*done = true;
			return DT_OK;
		}
		if (rest[n] != '.')
			continue;
		tail = rest + n + 1;
		return set_in_block(c, b, key, bname, tail, v, done);
	}
	return DT_OK;
}
