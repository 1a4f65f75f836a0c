/* SPDX-License-Identifier: MIT */
/* job.c - dt_job_load and dt_job_parse: defaults from the schema, then the
 * file, then each --set override in order, then the checks that need the
 * whole job (check.c). Nothing here writes a file. */
#include "job/apply.h"
#include "job/check.h"
#include "job/tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"

/* A job file larger than this is certainly a mistake (a data file named by
 * accident); refuse it before libyaml chews on it. */
#define JOB_FILE_MAX (4u << 20)

static void
apply_defaults(struct dt_job *job)
{
	int i;

	for (i = 0; i < dt_job_schema_len; i++) {
		const struct dt_key *k = &dt_job_schema[i];

		dt_job_store_default(k, (char *)job + k->off);
	}
}

/* The directory relative data paths in name are read from, made absolute
 * so the resolved job means the same from any working directory. False
 * when it does not fit in size bytes. */
static bool
base_dir(const char *name, char *dir, size_t size)
{
	char cwd[DT_JOB_PATH_MAX];
	const char *slash = strrchr(name, '/');
	int n = slash ? (int)(slash - name) : 0, r;

	if (name[0] == '/') {
		r = snprintf(dir, size, "%.*s", n > 0 ? n : 1, name);
	} else {
		if (getcwd(cwd, sizeof cwd) == NULL)
			snprintf(cwd, sizeof cwd, ".");
		if (slash == NULL)
			r = snprintf(dir, size, "%s", cwd);
		else if (strcmp(cwd, "/") == 0)
			r = snprintf(dir, size, "/%.*s", n, name);
		else
			r = snprintf(dir, size, "%s/%.*s", cwd, n, name);
	}
	return r >= 0 && (size_t)r < size;
}

/* The job's default name: the file's basename without .yaml or .yml, with
 * anything a name may not hold turned into '_'. */
static void
default_name(const char *path, char *name, size_t size)
{
	const char *base = strrchr(path, '/');
	size_t n, i;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
		n -= 5;
	else if (n > 4 && strcmp(base + n - 4, ".yml") == 0)
		n -= 4;
	if (n >= size)
		n = size - 1;
	for (i = 0; i < n; i++) {
		char ch = base[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
			  (ch == '.' && i > 0);

		name[i] = ok ? ch : '_';
	}
	name[n] = '\0';
	if (n == 0)
		snprintf(name, size, "job");
}

static enum dt_status
no_such_item(const struct dt_job_ctx *c, const char *key, const char *what,
	     int n)
{
	struct dt_pos pos = { 0, 0, c->set };

	if (n == 0)
		return dt_job_failf(c, pos, key, "no such %s; there are none",
				    what);
	return dt_job_failf(c, pos, key, "no such %s; there are %d (0 to %d)",
			    what, n, n - 1);
}

/* A part of a data source ("data.train.images.sha256"): applies it and
 * returns true, or returns false when key is not one. */
static bool
apply_source_part(struct dt_job_ctx *c, const char *key,
		  const struct dt_ynode *v, enum dt_status *st)
{
	const char *dot = strrchr(key, '.');
	char parent[256];
	int ki;

	if (dot == NULL || (strcmp(dot, ".path") != 0 &&
			    strcmp(dot, ".sha256") != 0 &&
			    strcmp(dot, ".size") != 0))
		return false;
	snprintf(parent, sizeof parent, "%.*s", (int)(dot - key), key);
	ki = dt_job_schema_find(parent);
	if (ki < 0 || dt_job_schema[ki].type != DT_KEY_SOURCE)
		return false;
	*st = dt_job_store_source_part(c, ki, dot + 1, key, v);
	return true;
}

/* The key of layer i's type closest to leaf, or NULL. */
static const char *
closest_layer_key(const struct dt_job *job, int i, const char *leaf)
{
	const struct dt_layer_type *t =
		dt_job_layer_type(&job->model.layers[i]);
	const char *best = NULL;
	int k, d, best_d = 1 << 20;

	for (k = 0; k < DT_JOB_LAYER_KEYS; k++) {
		if (!((t->takes >> k) & 1u))
			continue;
		d = dt_job_distance(leaf, dt_job_layer_schema[k].key);
		if (d < best_d) {
			best_d = d;
			best = dt_job_layer_schema[k].key;
		}
	}
	return best_d <= dt_job_suggest_limit(strlen(leaf)) ? best : NULL;
}

/* "model.layers.NAME[.KEY]" for a layer that is no repeat block's as
 * written (tree.c took those): the layer named NAME once blocks are
 * expanded ("head", "dense3", "block.2.fc"). */
static enum dt_status
apply_named_layer(struct dt_job_ctx *c, const char *key,
		  const struct dt_ynode *v)
{
	const struct dt_job *job = c->job;
	struct dt_pos pos = { 0, 0, c->set };
	const char *rest = key + 13, *dot = strrchr(rest, '.'), *best;
	char name[DT_LAYER_NAME_MAX + 1], keys[256];
	int i, k, n = job->model.n_layers;

	i = dt_job_find_layer(job, rest, n);
	if (i >= 0)
		return dt_job_apply_layer(c, i, v, true);
	if (dot != NULL && (size_t)(dot - rest) < sizeof name) {
		snprintf(name, sizeof name, "%.*s", (int)(dot - rest), rest);
		i = dt_job_find_layer(job, name, n);
	}
	if (i >= 0) {
		k = dt_job_layer_key_find(dot + 1);
		if (k >= 0)
			return dt_job_apply_layer_key(c, i, k, key, NULL, v);
		best = closest_layer_key(job, i, dot + 1);
		dt_job_type_keys(dt_job_layer_type(&job->model.layers[i]),
				 keys, sizeof keys);
		if (best != NULL)
			return dt_job_failf(c, pos, key, "unknown key; did you "
					    "mean model.layers.%s.%s? (%s "
					    "takes %s)", name, best,
					    dt_job_layer_type(&job->model
							      .layers[i])->name,
					    keys);
		return dt_job_failf(c, pos, key, "unknown key; %s takes %s",
				    dt_job_layer_type(&job->model.layers[i])
				    ->name, keys);
	}
	if (dot != NULL && dt_job_layer_key_find(dot + 1) >= 0)
		snprintf(name, sizeof name, "%.*s", (int)(dot - rest), rest);
	else
		snprintf(name, sizeof name, "%s", rest);
	best = dt_job_closest_layer(job, name, n, false);
	if (best != NULL)
		return dt_job_failf(c, pos, key, "no layer or repeat block "
				    "named \"%s\"; did you mean '%s'?", name,
				    best);
	return dt_job_failf(c, pos, key, "no layer or repeat block named "
			    "\"%s\" (a layer is named by its name:, or by "
			    "its index model.layers.N)", name);
}

/* "model.layers.N.repeat": layer N is one copy's; the count is the
 * block's, by name. */
static enum dt_status
repeat_by_index(const struct dt_job_ctx *c, const char *key, int i)
{
	const char *name = c->job->model.layers[i].name, *dot;
	struct dt_pos pos = { 0, 0, c->set };

	dot = strchr(name, '.');
	if (dot != NULL)
		return dt_job_failf(c, pos, key, "a repeat count is the "
				    "block's: layer %d is %s; set "
				    "model.layers.%.*s.repeat", i, name,
				    (int)(dot - name), name);
	return dt_job_failf(c, pos, key, "layer %d (%s) is in no repeat "
			    "block; only a block takes repeat, as "
			    "model.layers.BLOCK.repeat", i, name);
}

/* Applies the value node v of one override to key. */
static enum dt_status
apply_override(struct dt_job_ctx *c, const char *key,
	       const struct dt_ynode *v)
{
	const struct dt_key *shape = &dt_job_schema[dt_job_schema_find(
					"model.input_shape")];
	struct dt_job *job = c->job;
	struct dt_pos pos = { 0, 0, c->set };
	enum dt_status st;
	const char *rest;
	int i, k, ki;

	i = dt_job_list_index(key, "model.layers", &rest);
	if (i >= 0) {
		if (i >= job->model.n_layers)
			return no_such_item(c, key, "layer",
					    job->model.n_layers);
		if (rest[0] == '\0')
			return dt_job_apply_layer(c, i, v, true);
		k = dt_job_layer_key_find(rest + 1);
		if (k >= 0)
			return dt_job_apply_layer_key(c, i, k, key, NULL, v);
		if (strcmp(rest, ".repeat") == 0)
			return repeat_by_index(c, key, i);
	}
	i = dt_job_list_index(key, "model.input_shape", &rest);
	if (i >= 0 && rest[0] == '\0') {
		if (i >= job->model.n_input_dims)
			return no_such_item(c, key, "dimension",
					    job->model.n_input_dims);
		return dt_job_store_shape_item(c, shape, key, v,
					       &job->model.input_shape[i],
					       &job->origin.shape[i]);
	}
	if (strncmp(key, "model.layers.", 13) == 0 &&
	    dt_job_list_index(key, "model.layers", &rest) < 0 &&
	    dt_job_schema_find(key) < 0)
		return apply_named_layer(c, key, v);
	ki = dt_job_schema_find(key);
	if (ki >= 0)
		return dt_job_apply_key(c, ki, key, v);
	if (apply_source_part(c, key, v, &st))
		return st;
	return dt_job_unknown_key(c, pos, key);
}

/* Whether a --set value starts (after blanks) a YAML flow mapping or
 * sequence, which a brace pattern of shards does too. */
static bool
flow_start(const char *value)
{
	value += strspn(value, " \t");
	return *value == '{' || *value == '[';
}

/* Splits override number c->set, text, into its key (into key, size
 * bytes) and its value as a node tree (*v, caller frees; "key=" gives an
 * empty plain scalar, as in a file), every node marked as the override's. */
static enum dt_status
split_set(struct dt_job_ctx *c, const char *text, char *key, size_t size,
	  struct dt_ynode **v)
{
	struct dt_pos pos = { 0, 0, c->set };
	const char *eq = strchr(text, '='), *k0 = text, *k1 = eq;
	struct dt_yaml_error ye;

	*v = NULL;
	/* Blanks around the key ("train.lr = 0.1") mean the obvious. */
	while (k1 != NULL && k0 < k1 && (*k0 == ' ' || *k0 == '\t'))
		k0++;
	while (k1 != NULL && k1 > k0 && (k1[-1] == ' ' || k1[-1] == '\t'))
		k1--;
	if (eq == NULL || k1 == k0)
		return dt_job_failf(c, pos, NULL, "expected key.path=value");
	snprintf(key, size, "%.*s", (int)(k1 - k0), k0);
	if (!dt_yaml_parse(eq + 1, strlen(eq + 1), v, &ye))
		return dt_job_failf(c, pos, key, "value is not valid YAML: %s%s"
				    "%s%s%s", ye.msg, flow_start(eq + 1) ?
				    "; a value that starts with { or [ is a "
				    "YAML mapping or list: to give it as a "
				    "string (a brace pattern of shards), "
				    "quote it: --set '" : "",
				    flow_start(eq + 1) ? key : "",
				    flow_start(eq + 1) ? "=\"" : "",
				    flow_start(eq + 1) ? "...\"'" : "");
	if (*v == NULL) {
		*v = dt_xcalloc(1, sizeof **v);
		(*v)->kind = DT_YNODE_SCALAR;
		(*v)->text = dt_xcalloc(1, 1);
	}
	dt_job_tree_mark(*v, c->set);
	return DT_OK;
}

/* Parses the job file into *root, a mapping (caller frees). */
static enum dt_status
read_file(struct dt_job_ctx *c, struct dt_ynode **root)
{
	struct dt_pos top = { 1, 1, 0 };
	struct dt_yaml_error ye;
	char found[160];

	if (!dt_yaml_parse(c->text, c->len, root, &ye)) {
		struct dt_pos at = { ye.line, ye.col, 0 };

		return dt_job_failf(c, at, NULL, "%s", ye.msg);
	}
	if (*root == NULL || dt_yaml_is_null(*root))
		return dt_job_failf(c, top, NULL, "expected a mapping of job "
				    "sections (data, model, train, ...), found "
				    "an empty file");
	c->job->origin.root.line = (*root)->line;
	c->job->origin.root.col = (*root)->col;
	if ((*root)->kind != DT_YNODE_MAP) {
		dt_yaml_describe(*root, found, sizeof found);
		top = c->job->origin.root;
		return dt_job_failf(c, top, NULL, "expected a mapping of job "
				    "sections (data, model, train, ...), found "
				    "%s", found);
	}
	return DT_OK;
}

/* The overrides not put into the file's tree, applied after it. */
struct later {
	char key[DT_JOB_MAX_SETS][256];
	struct dt_ynode *v[DT_JOB_MAX_SETS];	/* NULL: done in the tree */
};

/* The file, then the overrides: those that name a var or a repeat
 * block's layer edit the file's tree before it is applied (tree.c), in
 * order; the tree's var references are then replaced and the tree
 * applied; the other overrides follow, in order, their values' var
 * references replaced too. */
static enum dt_status
apply_sources(struct dt_job_ctx *c, const char *const *overrides, int n,
	      struct dt_ynode *root, struct later *l)
{
	struct dt_ynode *vars = NULL;
	enum dt_status st;
	bool done;
	int i;

	st = dt_job_vars_check(c, root, &vars);
	for (i = 0; i < n && st == DT_OK; i++) {
		c->set = i + 1;
		st = split_set(c, overrides[i] ? overrides[i] : "", l->key[i],
			       sizeof l->key[i], &l->v[i]);
		if (st == DT_OK)
			st = dt_job_tree_set(c, root, vars, l->key[i],
					     &l->v[i], &done);
	}
	c->set = 0;
	vars = dt_job_vars_detach(root);
	if (st == DT_OK)
		st = dt_job_vars_subst(c, vars, root, "");
	if (st == DT_OK)
		st = dt_job_apply_section(c, "", root);
	for (i = 0; i < n && st == DT_OK; i++) {
		if (l->v[i] == NULL)
			continue;
		c->set = i + 1;
		st = dt_job_vars_subst(c, vars, l->v[i], l->key[i]);
		if (st == DT_OK)
			st = apply_override(c, l->key[i], l->v[i]);
	}
	c->set = 0;
	dt_yaml_free(vars);
	return st;
}

enum dt_status
dt_job_parse(const char *name, const char *text, size_t len,
	     const char *const *overrides, int n_overrides,
	     struct dt_job *job, struct dt_error *err)
{
	char file_dir[DT_JOB_PATH_MAX], cwd[DT_JOB_PATH_MAX];
	struct dt_ynode *root = NULL;
	struct dt_job_ctx c;
	struct later *l;
	enum dt_status st;
	int i;

	if (name == NULL)
		name = "<job>";
	if (text == NULL) {
		text = "";
		len = 0;
	}
	memset(job, 0, sizeof *job);
	memset(&c, 0, sizeof c);
	c.job = job;
	c.err = err;
	c.name = name;
	c.text = text;
	c.len = len;
	if (strlen(name) >= sizeof job->path)
		return dt_errorf(err, DT_ERR_JOB, "%.64s...: job file name "
				 "longer than %d bytes", name,
				 DT_JOB_PATH_MAX - 1);
	snprintf(job->path, sizeof job->path, "%s", name);
	if (n_overrides < 0 || n_overrides > DT_JOB_MAX_SETS)
		return dt_errorf(err, DT_ERR_JOB, "--set: expected at most %d "
				 "overrides, found %d", DT_JOB_MAX_SETS,
				 n_overrides);
	job->origin.n_sets = n_overrides;
	for (i = 0; i < n_overrides; i++)
		snprintf(job->origin.sets[i], DT_JOB_SET_MAX, "%s",
			 overrides[i] ? overrides[i] : "");
	apply_defaults(job);

	if (!base_dir(name, file_dir, sizeof file_dir))
		return dt_errorf(err, DT_ERR_JOB, "%s: the job file's directory "
				 "is longer than %d bytes", name,
				 DT_JOB_PATH_MAX - 1);
	if (getcwd(cwd, sizeof cwd) == NULL)
		cwd[0] = '\0';
	c.dir = file_dir;
	c.set_dir = cwd;
	st = read_file(&c, &root);
	if (st == DT_OK) {
		l = dt_xcalloc(1, sizeof *l);
		st = apply_sources(&c, overrides, n_overrides, root, l);
		for (i = 0; i < n_overrides; i++)
			dt_yaml_free(l->v[i]);
		free(l);
	}
	dt_yaml_free(root);
	if (st != DT_OK)
		return st;
	if (!dt_job_given(job->origin.key[dt_job_schema_find("name")]))
		default_name(job->path, job->name, sizeof job->name);
	return dt_job_finish(&c);
}

enum dt_status
dt_job_load(const char *path, const char *const *overrides, int n_overrides,
	    struct dt_job *job, struct dt_error *err)
{
	size_t cap = 4096, len = 0, got;
	enum dt_status st;
	char *text;
	FILE *f;

	f = fopen(path, "rb");
	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open the job "
				 "file: %s", path, strerror(errno));
	text = dt_xmalloc(cap, 1);
	for (;;) {
		got = fread(text + len, 1, cap - len, f);
		len += got;
		if (len < cap)
			break;
		if (cap >= JOB_FILE_MAX) {
			fclose(f);
			free(text);
			return dt_errorf(err, DT_ERR_JOB, "%s: expected a job "
					 "file of at most %u bytes, found a "
					 "larger file", path, JOB_FILE_MAX);
		}
		cap *= 2;
		text = dt_xrealloc(text, cap, 1);
	}
	if (ferror(f)) {
		int e = errno;

		fclose(f);
		free(text);
		return dt_errorf(err, DT_ERR_IO, "%s: cannot read the job "
				 "file: %s", path, strerror(e));
	}
	fclose(f);
	st = dt_job_parse(path, text, len, overrides, n_overrides, job, err);
	free(text);
	return st;
}

bool
dt_job_format_token_ids(enum dt_data_format f)
{
	return f == DT_FORMAT_TOKENS || f == DT_FORMAT_LLMC ||
	       f == DT_FORMAT_U16;
}
