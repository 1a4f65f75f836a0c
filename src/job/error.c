/* SPDX-License-Identifier: MIT */
/* error.c - where a value of the job came from and what is wrong with it:
 * positions (of a node, a key, a list item, a --set), the messages with the
 * source line and a caret under the column (after jq's error locations),
 * and the common complaints (wrong type, missing key, unknown key,
 * duplicate key). dt_job_pos and dt_job_where give later stages the same
 * places. Every message of job/ goes through dt_job_failf. */
#include "job/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of a source line shown under a message. */
#define SHOWN_LINE_MAX 240

bool
dt_job_given(struct dt_pos pos)
{
	return pos.line != 0 || pos.from_set != 0;
}

struct dt_pos
dt_job_node_pos(const struct dt_job_ctx *c, const struct dt_ynode *n)
{
	struct dt_pos pos = { 0, 0, 0 };

	if (n->set != 0) {
		pos.from_set = n->set;
	} else if (c->set != 0) {
		pos.from_set = c->set;
	} else {
		pos.line = n->line;
		pos.col = n->col;
	}
	return pos;
}

struct dt_pos
dt_job_blame(struct dt_pos key, struct dt_pos cause)
{
	return cause.from_set > key.from_set ? cause : key;
}

/* "FILE:L:C: key: ", "--set TEXT: key: " or "FILE: key: " for pos. */
static void
where(const struct dt_job *job, const char *file, struct dt_pos pos,
      const char *key, char *buf, size_t size)
{
	int n;

	if (pos.from_set > 0 && pos.from_set <= job->origin.n_sets)
		n = snprintf(buf, size, "--set %s: ",
			     job->origin.sets[pos.from_set - 1]);
	else if (pos.line > 0)
		n = snprintf(buf, size, "%s:%d:%d: ", file, pos.line, pos.col);
	else
		n = snprintf(buf, size, "%s: ", file);
	if (key != NULL && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "%s: ", key);
}

/* Writes line, then a newline, then a caret under character column col
 * (1-based); tabs are copied so the caret lines up in a terminal. */
static void
caret(const char *line, size_t n, int col, char *buf, size_t size)
{
	size_t o = 0, i = 0, shown = n < SHOWN_LINE_MAX ? n : SHOWN_LINE_MAX;
	int at = 1;

	if (size == 0)
		return;
	o = (size_t)snprintf(buf, size, "%.*s\n", (int)shown, line);
	if (o >= size)
		return;
	while (at < col && o + 2 < size) {
		if (i < n) {
			buf[o++] = line[i] == '\t' ? '\t' : ' ';
			/* One column per character: skip continuation bytes. */
			i++;
			while (i < n && ((unsigned char)line[i] & 0xc0) == 0x80)
				i++;
		} else {
			buf[o++] = ' ';
		}
		at++;
	}
	if (o + 1 < size)
		buf[o++] = '^';
	buf[o] = '\0';
}

enum dt_status
dt_job_failf(const struct dt_job_ctx *c, struct dt_pos pos, const char *key,
	     const char *fmt, ...)
{
	char head[DT_JOB_SET_MAX + 256], msg[1024], src[2 * SHOWN_LINE_MAX + 8];
	const char *line;
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	where(c->job, c->name, pos, key, head, sizeof head);
	src[0] = '\0';
	if (pos.from_set == 0 && pos.line > 0 && c->text != NULL) {
		line = dt_yaml_line(c->text, c->len, pos.line, &n);
		if (line == NULL) {
			line = "";
			n = 0;
		}
		caret(line, n, pos.col, src, sizeof src);
	}
	if (src[0] != '\0')
		return dt_errorf(c->err, DT_ERR_JOB, "%s%s\n%s", head, msg,
				 src);
	return dt_errorf(c->err, DT_ERR_JOB, "%s%s", head, msg);
}

enum dt_status
dt_job_type_error(const struct dt_job_ctx *c, const struct dt_key *k,
		  const char *path, const struct dt_ynode *v)
{
	char want[256], found[160];

	dt_job_type_text(k, want, sizeof want);
	dt_yaml_describe(v, found, sizeof found);
	return dt_job_failf(c, dt_job_node_pos(c, v), path,
			    "expected %s, found %s", want, found);
}

enum dt_status
dt_job_missing(const struct dt_job_ctx *c, const struct dt_key *k,
	       const char *key, struct dt_pos at, const char *why)
{
	char type[256], range[64];

	dt_job_type_text(k, type, sizeof type);
	dt_job_range_text(k, range, sizeof range);
	return dt_job_failf(c, at, key, "required key missing%s; expected "
			    "%s%s%s", why, type, range[0] ? " " : "", range);
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

int
dt_job_list_index(const char *key, const char *list, const char **rest)
{
	size_t n = strlen(list), d;
	const char *p;

	if (strncmp(key, list, n) != 0 || key[n] != '.')
		return -1;
	p = key + n + 1;
	d = strspn(p, "0123456789");
	if (d == 0 || d > 4 || (d > 1 && p[0] == '0') ||
	    (p[d] != '\0' && p[d] != '.'))
		return -1;
	*rest = p + d;
	return atoi(p);
}

/* Item "N" of a list of n items (rest is ".N"), or -1. */
static int
item_index(const char *rest, int n)
{
	const char *end;
	int i;

	i = dt_job_list_index(rest, "", &end);
	return i >= 0 && i < n && end[0] == '\0' ? i : -1;
}

/* The position of a part of layer i ("units", "inputs.1", "shape.0"). */
static struct dt_pos
layer_pos(const struct dt_job *job, int i, const char *part)
{
	struct dt_pos none = { 0, 0, 0 };
	const struct dt_layer_spec *l = &job->model.layers[i];
	const char *dot = strchr(part, '.');
	char leaf[32];
	int k, j;

	if (dot == NULL) {
		k = dt_job_layer_key_find(part);
		return k < 0 ? none : job->origin.layer[i][k];
	}
	snprintf(leaf, sizeof leaf, "%.*s", (int)(dot - part), part);
	if (strcmp(leaf, "inputs") == 0) {
		j = item_index(dot, l->n_inputs);
		return j < 0 ? none : job->origin.input[i][j];
	}
	if (strcmp(leaf, "shape") == 0) {
		j = item_index(dot, l->n_shape);
		return j < 0 ? none : job->origin.layer_shape[i][j];
	}
	return none;
}

struct dt_pos
dt_job_pos(const struct dt_job *job, const char *key)
{
	static const char *const parts[] = { ".path", ".sha256", ".size" };
	struct dt_pos none = { 0, 0, 0 };
	const char *rest;
	size_t n;
	int i, p;

	i = dt_job_list_index(key, "model.layers", &rest);
	if (i >= 0) {
		if (i >= job->model.n_layers)
			return none;
		if (rest[0] == '\0')
			return job->model.layers[i].pos;
		return layer_pos(job, i, rest + 1);
	}
	i = dt_job_list_index(key, "model.input_shape", &rest);
	if (i >= 0)
		return i < job->model.n_input_dims && rest[0] == '\0' ?
		       job->origin.shape[i] : none;
	i = dt_job_list_index(key, "parallel.stages", &rest);
	if (i >= 0)
		return i < job->parallel.n_stages && rest[0] == '\0' ?
		       job->origin.stage[i] : none;
	i = dt_job_schema_find(key);
	if (i >= 0)
		return job->origin.key[i];
	for (p = 0; p < 3; p++) {
		char parent[128];

		n = strlen(key);
		if (n <= strlen(parts[p]) || n >= sizeof parent ||
		    strcmp(key + n - strlen(parts[p]), parts[p]) != 0)
			continue;
		snprintf(parent, sizeof parent, "%.*s",
			 (int)(n - strlen(parts[p])), key);
		i = dt_job_schema_find(parent);
		if (i >= 0 && dt_job_schema[i].type == DT_KEY_SOURCE)
			return job->origin.source[dt_job_source_slot(i)][p];
	}
	return none;
}

void
dt_job_where(const struct dt_job *job, const char *key, char *buf,
	     size_t size)
{
	where(job, job->path, dt_job_pos(job, key), key, buf, size);
}
