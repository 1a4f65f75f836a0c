/* SPDX-License-Identifier: MIT */
/* value.c - one value of one key: checks a node against the key's type and
 * range and stores it, with its position. Scalars (numbers read by the
 * YAML 1.2 core schema, true/false, enum words, names, paths, "auto" or a
 * degree), data sources (a path or URL, or {path, sha256, size}) and lists
 * of integers or names. */
#include "job/value.h"

#include <assert.h>
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Largest integer a double holds exactly: the bound for integers written
 * as 1e3 or 2.0. */
#define EXACT_INT_MAX 9007199254740992.0

/* Checks x against k's range; the message shows the value as written. */
static enum dt_status
check_range(const struct dt_job_ctx *c, const struct dt_key *k,
	    const char *path, const struct dt_ynode *v, double x)
{
	char range[64];
	bool ok = true;
	int i;

	if (k->choices != NULL) {
		ok = false;
		for (i = 0; k->choices[i] != 0; i++)
			ok = ok || x == (double)k->choices[i];
	}
	if (k->flags & DT_KEYF_MIN)
		ok = k->flags & DT_KEYF_MIN_OPEN ? x > k->min : x >= k->min;
	if (ok && (k->flags & DT_KEYF_MAX))
		ok = k->flags & DT_KEYF_MAX_OPEN ? x < k->max : x <= k->max;
	if (ok)
		return DT_OK;
	dt_job_range_text(k, range, sizeof range);
	return dt_job_failf(c, dt_job_node_pos(c, v), path,
			    "must be %s, found %s", range, v->text);
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
		return dt_job_type_error(c, k, path, v);
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
			return dt_job_failf(c, dt_job_node_pos(c, v), path,
					    "expected an integer that fits "
					    "64 bits, found %s", v->text);
	return dt_job_type_error(c, k, path, v);
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
		return dt_job_failf(c, dt_job_node_pos(c, v), path,
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
		return dt_job_type_error(c, k, path, v);
	kind = dt_yaml_number(v->text, &num);
	if (kind == DT_YNUM_NOT)
		return dt_job_type_error(c, k, path, v);
	if (!isfinite(num.value))
		return dt_job_failf(c, dt_job_node_pos(c, v), path,
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
	return dt_job_type_error(c, k, path, v);
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
	return dt_job_type_error(c, k, path, v);
}

/* Names become directory and layer names: letters, digits, '.', '_', '-',
 * not starting with '.'. */
static enum dt_status
store_name(const struct dt_job_ctx *c, const struct dt_key *k,
	   const char *path, const struct dt_ynode *v, char *dst)
{
	char found[160];
	size_t i;

	/* An empty tie (`tie:`, `--set model.layers.head.tie=`) clears
	 * it: the layer gets a weight of its own again. */
	if (k == &dt_job_layer_schema[DT_LAYER_KEY_TIE] &&
	    v->kind == DT_YNODE_SCALAR && dt_yaml_is_null(v)) {
		dst[0] = '\0';
		return DT_OK;
	}
	if (v->kind != DT_YNODE_SCALAR || dt_yaml_is_null(v))
		return dt_job_type_error(c, k, path, v);
	if (v->len == 0 || v->len >= k->size)
		return dt_job_failf(c, dt_job_node_pos(c, v), path,
				    "expected a name of 1 to %zu characters, "
				    "found %zu characters", k->size - 1,
				    v->len);
	for (i = 0; i < v->len; i++) {
		char ch = v->text[i];

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		    (ch == '.' && i > 0))
			continue;
		dt_yaml_describe(v, found, sizeof found);
		return dt_job_failf(c, dt_job_node_pos(c, v), path,
				    "expected a name of letters, digits, '.', "
				    "'_' and '-' (not starting with '.'), found "
				    "%s", found);
	}
	memcpy(dst, v->text, v->len + 1);
	return DT_OK;
}

/* Length of the "scheme" of a URL-like "scheme://..." text, 0 if none. */
static size_t
url_scheme(const char *p)
{
	size_t n = 0;

	if (!isalpha((unsigned char)p[0]))
		return 0;
	while (isalnum((unsigned char)p[n]) || p[n] == '+' || p[n] == '-' ||
	       p[n] == '.')
		n++;
	return strncmp(p + n, "://", 3) == 0 ? n : 0;
}

/* Whether p is an http:// or https:// URL, which is never a path. */
static bool
is_url(const char *p)
{
	size_t n = url_scheme(p);

	return (n == 4 && strncasecmp(p, "http", 4) == 0) ||
	       (n == 5 && strncasecmp(p, "https", 5) == 0);
}

/* Joins dir and a relative p, dropping "./" pieces; absolute paths stay as
 * they are. */
static bool
resolve_path(const char *dir, const char *p, char *dst, size_t size)
{
	int n;

	while (p[0] == '.' && p[1] == '/')
		p += 2;
	if (p[0] == '/' || dir == NULL || dir[0] == '\0' ||
	    strcmp(p, ".") == 0)
		n = snprintf(dst, size, "%s", p);
	else if (dir[strlen(dir) - 1] == '/')
		n = snprintf(dst, size, "%s%s", dir, p);
	else
		n = snprintf(dst, size, "%s/%s", dir, p);
	return n >= 0 && (size_t)n < size;
}

/* Fails unless the resolved path p is well-formed UTF-8: dtrain writes it
 * into job.yaml and meta.json, and libyaml refuses any other byte, so a
 * run would make a job.yaml its own resume cannot read. The value read
 * from YAML is UTF-8 already; a bad byte comes from the directory it was
 * resolved against. The message shows the path with such bytes as \xNN
 * and gives the offset of the first. */
static enum dt_status
check_utf8(const struct dt_job_ctx *c, const char *path,
	   const struct dt_ynode *v, const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t n = strlen(p), i = 0, bad = n, o = 0;
	char shown[256];
	uint32_t cp;
	int len;

	while (i < n) {
		len = dt_job_utf8_char(u + i, n - i, &cp);
		if (len == 0 && bad == n)
			bad = i;
		if (o + 5 < sizeof shown) {
			if (len == 0)
				o += (size_t)snprintf(shown + o, sizeof shown - o,
						      "\\x%02x", u[i]);
			else if (o + (size_t)len < sizeof shown)
				memcpy(shown + o, u + i, (size_t)len), o += (size_t)len;
		}
		i += len == 0 ? 1 : (size_t)len;
	}
	if (bad == n)
		return DT_OK;
	shown[o < sizeof shown ? o : sizeof shown - 1] = '\0';
	return dt_job_failf(c, dt_job_node_pos(c, v), path,
			    "expected a path that is valid UTF-8 once resolved, "
			    "found byte 0x%02x at byte offset %zu of \"%s\" "
			    "(from the directory it is resolved against); "
			    "job.yaml keeps the path and must read back: "
			    "rename the directory or give an absolute path",
			    u[bad], bad, shown);
}

/* Stores a path (a local one, or with urls an http(s) URL kept as given). */
static enum dt_status
store_path(const struct dt_job_ctx *c, const struct dt_key *k,
	   const char *path, const struct dt_ynode *v, char *dst, bool urls)
{
	char found[160];

	if (v->kind != DT_YNODE_SCALAR || dt_yaml_is_null(v) || v->len == 0)
		return dt_job_type_error(c, k, path, v);
	if (urls && is_url(v->text)) {
		if (v->len >= k->size)
			return dt_job_failf(c, dt_job_node_pos(c, v), path,
					    "expected a URL of at most %zu "
					    "bytes, found %zu bytes",
					    k->size - 1, v->len);
		memcpy(dst, v->text, v->len + 1);
		return DT_OK;
	}
	if (url_scheme(v->text) > 0) {
		dt_yaml_describe(v, found, sizeof found);
		return dt_job_failf(c, dt_job_node_pos(c, v), path, urls ?
				    "expected a path or an http:// or "
				    "https:// URL, found %s" :
				    "expected a local path, found the URL %s",
				    found);
	}
	if (!resolve_path(v->set != 0 || c->set != 0 ? c->set_dir : c->dir,
			  v->text, dst, k->size))
		return dt_job_failf(c, dt_job_node_pos(c, v), path,
				    "expected a path of at most %zu bytes "
				    "once resolved, found a longer one",
				    k->size - 1);
	return check_utf8(c, path, v, dst);
}

/* A parallel degree: "auto", or an integer in k's range. */
static enum dt_status
store_degree(const struct dt_job_ctx *c, const struct dt_key *k,
	     const char *path, const struct dt_ynode *v, int64_t *dst)
{
	if (v->kind == DT_YNODE_SCALAR && strcmp(v->text, "auto") == 0) {
		*dst = DT_DEGREE_AUTO;
		return DT_OK;
	}
	return store_int(c, k, path, v, dst);
}

/* Reads an init value, text: a word of dt_job_init_words other than
 * normal, or "normal(STD)" with STD a number in [0, FLT_MAX] (the graph
 * draws in float). Returns false, *out untouched, for anything else. */
static bool
parse_init(const char *text, struct dt_init_choice *out)
{
	size_t n = strlen(text);
	struct dt_ynum num;
	char std[64];
	int r;

	for (r = DT_INIT_RULE_AUTO; r <= DT_INIT_RULE_GPT2; r++)
		if (r != DT_INIT_RULE_NORMAL &&
		    strcmp(text, dt_job_init_words[r]) == 0) {
			*out = (struct dt_init_choice){
				.rule = (enum dt_init_rule)r,
			};
			return true;
		}
	if (n < 9 || strncmp(text, "normal(", 7) != 0 ||
	    text[n - 1] != ')' || n - 8 >= sizeof std)
		return false;
	memcpy(std, text + 7, n - 8);
	std[n - 8] = '\0';
	if (dt_yaml_number(std, &num) == DT_YNUM_NOT || !isfinite(num.value) ||
	    num.value < 0 || num.value > FLT_MAX)
		return false;
	*out = (struct dt_init_choice){
		.rule = DT_INIT_RULE_NORMAL,
		.std = num.value + 0.0,		/* -0 reads as 0 */
	};
	return true;
}

static enum dt_status
store_init(const struct dt_job_ctx *c, const struct dt_key *k,
	   const char *path, const struct dt_ynode *v,
	   struct dt_init_choice *dst)
{
	if (v->kind != DT_YNODE_SCALAR || dt_yaml_is_null(v) ||
	    !parse_init(v->text, dst))
		return dt_job_type_error(c, k, path, v);
	return DT_OK;
}

enum dt_status
dt_job_store_scalar(const struct dt_job_ctx *c, const struct dt_key *k,
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
	case DT_KEY_PATH: st = store_path(c, k, path, v, dst, false); break;
	case DT_KEY_DEGREE: st = store_degree(c, k, path, v, dst); break;
	case DT_KEY_INIT: st = store_init(c, k, path, v, dst); break;
	default: assert(!"not a scalar key");
	}
	if (st == DT_OK)
		*slot = dt_job_node_pos(c, v);
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
	case DT_KEY_DEGREE:
		*(int64_t *)dst = k->def == NULL ? 0 :
				  strcmp(k->def, "auto") == 0 ?
				  DT_DEGREE_AUTO : strtoll(k->def, NULL, 10);
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
	case DT_KEY_INIT:
		/* A layer's has no default of its own: model.init's. */
		memset(dst, 0, sizeof(struct dt_init_choice));
		if (k->def != NULL && !parse_init(k->def, dst))
			assert(!"a default init the parser refuses");
		break;
	default:
		break;
	}
}

/* ---- data sources ---- */

static const struct dt_key size_part = {
	.key = "size", .type = DT_KEY_INT, .flags = DT_KEYF_MIN | DT_KEYF_MAX,
	.min = 1, .max = 4611686018427387904.0,	/* 2^62 bytes */
};

/* The source of schema row ki, and the positions of its parts. */
static struct dt_source *
source_of(struct dt_job *job, int ki, struct dt_pos **parts)
{
	*parts = job->origin.source[dt_job_source_slot(ki)];
	return (struct dt_source *)((char *)job + dt_job_schema[ki].off);
}

/* Copies the path where the row wants a second copy (data.train.images). */
static void
mirror(struct dt_job *job, int ki)
{
	const struct dt_key *k = &dt_job_schema[ki];
	const struct dt_source *src = (const struct dt_source *)
				      ((const char *)job + k->off);

	/* Both are char[k->size]. */
	if (k->mirror != 0)
		memcpy((char *)job + k->mirror, src->path,
		       strlen(src->path) + 1);
}

static enum dt_status
store_sha256(const struct dt_job_ctx *c, const char *path,
	     const struct dt_ynode *v, char *dst)
{
	char found[160];
	size_t i;
	bool ok = v->kind == DT_YNODE_SCALAR && v->len == 64;

	for (i = 0; ok && i < v->len; i++)
		ok = isxdigit((unsigned char)v->text[i]) != 0;
	if (!ok) {
		dt_yaml_describe(v, found, sizeof found);
		return dt_job_failf(c, dt_job_node_pos(c, v), path,
				    "expected 64 hex digits, found %s", found);
	}
	for (i = 0; i < 64; i++)
		dst[i] = (char)tolower((unsigned char)v->text[i]);
	dst[64] = '\0';
	return DT_OK;
}

enum dt_status
dt_job_store_source_part(struct dt_job_ctx *c, int ki, const char *part,
			 const char *path, const struct dt_ynode *v)
{
	const struct dt_key *k = &dt_job_schema[ki];
	struct dt_pos *parts, *slot;
	struct dt_source *src = source_of(c->job, ki, &parts);
	enum dt_status st;

	if (strcmp(part, "path") == 0) {
		slot = &parts[0];
		st = store_path(c, k, path, v, src->path, true);
	} else if (strcmp(part, "sha256") == 0) {
		slot = &parts[1];
		st = store_sha256(c, path, v, src->sha256);
	} else {
		assert(strcmp(part, "size") == 0);
		slot = &parts[2];
		st = store_int(c, &size_part, path, v, &src->size);
	}
	if (st != DT_OK)
		return st;
	*slot = dt_job_node_pos(c, v);
	if (!dt_job_given(c->job->origin.key[ki]))
		c->job->origin.key[ki] = *slot;
	mirror(c->job, ki);
	return DT_OK;
}

enum dt_status
dt_job_store_source(struct dt_job_ctx *c, int ki, const char *path,
		    const struct dt_ynode *v)
{
	struct dt_pos *parts;
	struct dt_source *src = source_of(c->job, ki, &parts);
	char sub[256], found[160];
	enum dt_status st;
	int j;

	if (v->kind == DT_YNODE_SEQ || dt_yaml_is_null(v) ||
	    (v->kind == DT_YNODE_SCALAR && v->len == 0)) {
		dt_yaml_describe(v, found, sizeof found);
		return dt_job_failf(c, dt_job_node_pos(c, v), path,
				    "expected a path or URL, or a mapping "
				    "{path, sha256, size}, found %s", found);
	}
	/* A new value replaces the whole source: a new file has a new
	 * digest. */
	memset(src, 0, sizeof *src);
	memset(parts, 0, 3 * sizeof *parts);
	c->job->origin.key[ki] = (struct dt_pos){ 0, 0, 0 };
	if (v->kind == DT_YNODE_SCALAR) {
		st = dt_job_store_source_part(c, ki, "path", path, v);
		if (st == DT_OK)
			c->job->origin.key[ki] = dt_job_node_pos(c, v);
		return st;
	}
	for (j = 0; j < v->n_kids / 2; j++) {
		const struct dt_ynode *key = v->kids[2 * j];

		st = dt_job_entry_key(c, path, v, j, sub, sizeof sub);
		if (st != DT_OK)
			return st;
		if (strcmp(key->text, "path") != 0 &&
		    strcmp(key->text, "sha256") != 0 &&
		    strcmp(key->text, "size") != 0)
			return dt_job_unknown_key(c, dt_job_node_pos(c, key),
						  sub);
		st = dt_job_store_source_part(c, ki, key->text, sub,
					      v->kids[2 * j + 1]);
		if (st != DT_OK)
			return st;
	}
	c->job->origin.key[ki] = dt_job_node_pos(c, v);
	if (src->path[0] == '\0') {
		static const struct dt_key path_part = {
			.key = "path", .type = DT_KEY_SOURCE,
		};

		snprintf(sub, sizeof sub, "%s.path", path);
		return dt_job_missing(c, &path_part, sub,
				      dt_job_node_pos(c, v), "");
	}
	return DT_OK;
}

/* ---- lists ---- */

enum dt_status
dt_job_store_shape_item(const struct dt_job_ctx *c, const struct dt_key *k,
			const char *path, const struct dt_ynode *v,
			int64_t *dst, struct dt_pos *slot)
{
	static const struct dt_key item = { .key = "", .type = DT_KEY_INT };
	bool neg1 = k->flags & DT_KEYF_NEG1;
	enum dt_status st;
	int64_t x;

	st = store_int(c, &item, path, v, &x);
	if (st != DT_OK)
		return st;
	if ((x < 1 && !(neg1 && x == -1)) || x > DT_JOB_SAMPLE_MAX)
		return dt_job_failf(c, dt_job_node_pos(c, v), path,
				    "must be in [1, %d]%s, found %s",
				    DT_JOB_SAMPLE_MAX, neg1 ? " or -1" : "",
				    v->text);
	*dst = x;
	*slot = dt_job_node_pos(c, v);
	return DT_OK;
}

enum dt_status
dt_job_store_list(const struct dt_job_ctx *c, const struct dt_key *k,
		  const char *path, const struct dt_ynode *v, void *dst,
		  int *n, struct dt_pos *pos)
{
	const struct dt_key name = { .key = "", .type = DT_KEY_NAME,
				     .size = k->size };
	size_t item_size = k->type == DT_KEY_SHAPE ? sizeof(int64_t) : k->size;
	char item[288];
	enum dt_status st;
	int64_t prod = 1;
	int i, neg1 = -1;

	assert(k->type == DT_KEY_SHAPE || k->type == DT_KEY_NAMES);
	if (v->kind != DT_YNODE_SEQ || v->n_kids == 0)
		return dt_job_type_error(c, k, path, v);
	if (v->n_kids > k->n_max)
		return dt_job_failf(c, dt_job_node_pos(c, v->kids[k->n_max]),
				    path, "expected at most %d %s, found %d",
				    k->n_max, k->type == DT_KEY_SHAPE ?
				    "dimensions" : "names", v->n_kids);
	memset(dst, 0, (size_t)k->n_max * item_size);
	memset(pos, 0, (size_t)k->n_max * sizeof *pos);
	*n = v->n_kids;
	for (i = 0; i < v->n_kids; i++) {
		char *p = (char *)dst + (size_t)i * item_size;

		snprintf(item, sizeof item, "%s.%d", path, i);
		if (k->type == DT_KEY_NAMES) {
			st = store_name(c, &name, item, v->kids[i], p);
			if (st == DT_OK)
				pos[i] = dt_job_node_pos(c, v->kids[i]);
		} else {
			st = dt_job_store_shape_item(c, k, item, v->kids[i],
						     (int64_t *)p, &pos[i]);
			if (st == DT_OK && *(int64_t *)p == -1 && neg1 >= 0)
				return dt_job_failf(c, pos[i], item,
						    "expected at most one -1, "
						    "found a second");
			if (st == DT_OK && *(int64_t *)p == -1)
				neg1 = i;
		}
		if (st != DT_OK)
			return st;
		/* The items multiply into the values of one sample: bound
		 * the product (each item is <= the bound, so no overflow). */
		if (k->type == DT_KEY_SHAPE && *(int64_t *)p > 0) {
			if (prod > DT_JOB_SAMPLE_MAX / *(int64_t *)p)
				return dt_job_failf(c, pos[i], path,
						    "expected at most %d values "
						    "in one sample (the product "
						    "of the items), found more "
						    "at item %d (%s)",
						    DT_JOB_SAMPLE_MAX, i,
						    v->kids[i]->text);
			prod *= *(int64_t *)p;
		}
	}
	return DT_OK;
}
