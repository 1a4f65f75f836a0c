/* SPDX-License-Identifier: MIT */
/* keys.c - questions about the key tables: finding a key, which keys a
 * value of another key brings into use, the words that describe a key's
 * type and range, "did you mean", and the list of every key for the man
 * page test and `dtrain job-keys`.
 *
 * "Did you mean" uses the optimal string alignment distance (Levenshtein
 * with adjacent transpositions), as git and many CLIs do. */
#include "job/keys.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The parts of a data source in its mapping form, in origin.source order. */
static const char *const source_parts[] = { "path", "sha256", "size", NULL };

int
dt_job_schema_find(const char *key)
{
	int i;

	for (i = 0; i < dt_job_schema_len; i++)
		if (strcmp(dt_job_schema[i].key, key) == 0)
			return i;
	return -1;
}

int
dt_job_layer_key_find(const char *leaf)
{
	int i;

	for (i = 0; i < DT_JOB_LAYER_KEYS; i++)
		if (strcmp(dt_job_layer_schema[i].key, leaf) == 0)
			return i;
	return -1;
}

const struct dt_layer_type *
dt_job_layer_type(const struct dt_layer_spec *l)
{
	int i;

	for (i = 0; i < dt_layer_types_len; i++)
		if (dt_layer_types[i].kind == l->kind &&
		    (l->kind != DT_LAYER_ACTIVATION ||
		     dt_layer_types[i].act == l->activation))
			return &dt_layer_types[i];
	/* An activation layer always has its function; be safe anyway. */
	return &dt_layer_types[0];
}

bool
dt_job_key_applies(const struct dt_job *job, const struct dt_key *k)
{
	int w;

	if (k->when == NULL)
		return true;
	w = dt_job_schema_find(k->when);
	if (w < 0)
		return true;
	return (k->when_mask >> *(const int *)((const char *)job +
					       dt_job_schema[w].off)) & 1u;
}

const struct dt_source *
dt_job_source(const struct dt_job *job, int i, const char **key)
{
	int n = 0;

	assert(i >= 0 && i < DT_JOB_SOURCES);
	for (int ki = 0; ki < dt_job_schema_len; ki++) {
		const struct dt_key *k = &dt_job_schema[ki];

		if (k->type != DT_KEY_SOURCE || n++ != i)
			continue;
		*key = k->key;
		return (const struct dt_source *)((const char *)job + k->off);
	}
	assert(!"fewer source rows in the schema than DT_JOB_SOURCES");
	return NULL;
}

int
dt_job_source_slot(int ki)
{
	int i, n = 0;

	for (i = 0; i < ki; i++)
		n += dt_job_schema[i].type == DT_KEY_SOURCE;
	return n < DT_JOB_SOURCES ? n : DT_JOB_SOURCES - 1;
}

void
dt_job_type_text(const struct dt_key *k, char *buf, size_t size)
{
	size_t o;
	int i;

	switch (k->type) {
	case DT_KEY_SECTION: snprintf(buf, size, "a mapping"); return;
	case DT_KEY_INT:
	case DT_KEY_UINT: snprintf(buf, size, "an integer"); return;
	case DT_KEY_FLOAT: snprintf(buf, size, "a number"); return;
	case DT_KEY_BOOL: snprintf(buf, size, "true or false"); return;
	case DT_KEY_NAME: snprintf(buf, size, "a name"); return;
	case DT_KEY_PATH: snprintf(buf, size, "a path"); return;
	case DT_KEY_SOURCE: snprintf(buf, size, "a path or URL"); return;
	case DT_KEY_DEGREE: snprintf(buf, size, "auto or an integer"); return;
	case DT_KEY_INIT:
		snprintf(buf, size, "auto, he, xavier, gpt2 or normal(STD) "
			 "with STD a number >= 0");
		return;
	case DT_KEY_NAMES:
		snprintf(buf, size, "a list of 1 to %d layer names",
			 k->n_max);
		return;
	case DT_KEY_SHAPE:
		snprintf(buf, size, "a list of 1 to %d integers", k->n_max);
		return;
	case DT_KEY_LAYERS:
		snprintf(buf, size, "a list of layers");
		return;
	case DT_KEY_ENUM:
	case DT_KEY_LAYER_TYPE:
		break;
	}
	o = (size_t)snprintf(buf, size, "one of");
	for (i = 0; k->names[i] != NULL && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s %s",
				      i ? "," : "", k->names[i]);
}

int
dt_job_utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	static const uint32_t least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	int len, i;
	uint32_t v;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, v = s[0] & 0x1fu;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, v = s[0] & 0x0fu;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, v = s[0] & 0x07u;
	else
		return 0;
	if (n < (size_t)len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3fu);
	}
	if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

bool
dt_job_yaml_printable(uint32_t cp)
{
	return cp == 0x0a || (cp >= 0x20 && cp <= 0x7e) || cp == 0x85 ||
	       (cp >= 0xa0 && cp <= 0xd7ff) ||
	       (cp >= 0xe000 && cp <= 0xfffd && cp != 0xfeff) ||
	       (cp >= 0x10000 && cp <= 0x10ffff);
}

/* A bound as the table gives it: an integral bound in full (16777216,
 * not 1.67772e+07), others as %g. */
static void
bound_text(double v, char *buf, size_t size)
{
	if (v == floor(v) && fabs(v) <= 9223372036854775808.0)
		snprintf(buf, size, "%.0f", v);
	else
		snprintf(buf, size, "%g", v);
}

void
dt_job_range_text(const struct dt_key *k, char *buf, size_t size)
{
	char lo[32], hi[32];
	bool has_min = k->flags & DT_KEYF_MIN, has_max = k->flags & DT_KEYF_MAX;

	if (k->choices != NULL) {
		size_t o = (size_t)snprintf(buf, size, "in {");
		int i;

		for (i = 0; k->choices[i] != 0 && o < size; i++)
			o += (size_t)snprintf(buf + o, size - o, "%s%" PRId64,
					      i ? ", " : "", k->choices[i]);
		if (o < size)
			snprintf(buf + o, size - o, "}");
		return;
	}
	bound_text(k->min, lo, sizeof lo);
	bound_text(k->max, hi, sizeof hi);
	if (has_min && has_max)
		snprintf(buf, size, "in %c%s, %s%c",
			 k->flags & DT_KEYF_MIN_OPEN ? '(' : '[', lo, hi,
			 k->flags & DT_KEYF_MAX_OPEN ? ')' : ']');
	else if (has_min)
		snprintf(buf, size, "%s %s",
			 k->flags & DT_KEYF_MIN_OPEN ? ">" : ">=", lo);
	else if (has_max)
		snprintf(buf, size, "%s %s",
			 k->flags & DT_KEYF_MAX_OPEN ? "<" : "<=", hi);
	else if (size > 0)
		buf[0] = '\0';
}

void
dt_job_when_text(const struct dt_key *k, char *buf, size_t size)
{
	const struct dt_key *w;
	size_t o = 0;
	int i;

	if (size > 0)
		buf[0] = '\0';
	if (k->when == NULL || (i = dt_job_schema_find(k->when)) < 0)
		return;
	w = &dt_job_schema[i];
	for (i = 0; w->names[i] != NULL && o < size; i++)
		if ((k->when_mask >> i) & 1u)
			o += (size_t)snprintf(buf + o, size - o, "%s%s",
					      o ? ", " : "", w->names[i]);
}

void
dt_job_type_keys(const struct dt_layer_type *t, char *buf, size_t size)
{
	size_t o = 0;
	int k;

	if (size > 0)
		buf[0] = '\0';
	for (k = 0; k < DT_JOB_LAYER_KEYS && o < size; k++)
		if (k != DT_LAYER_KEY_TYPE && ((t->takes >> k) & 1u))
			o += (size_t)snprintf(buf + o, size - o, "%s%s",
					      o ? ", " : "",
					      dt_job_layer_schema[k].key);
}

#define SUGGEST_MAX 96

int
dt_job_distance(const char *a, const char *b)
{
	static const int big = 1 << 20;
	int d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];
	int la = (int)strlen(a), lb = (int)strlen(b), i, j;

	if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
		return big;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1], v;

			v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

int
dt_job_suggest_limit(size_t len)
{
	return len <= 3 ? 1 : len <= 6 ? 2 : 3;
}

static const char *
leaf_of(const char *key)
{
	const char *dot = strrchr(key, '.');

	return dot ? dot + 1 : key;
}

/* The best candidate so far for an unknown key. */
struct suggestion {
	const char *key;
	int d;
	char best[SUGGEST_MAX + 32];
};

/* Scores candidate cand: the edit distance of the whole path, or 1 when
 * only the section is wrong ("lr" for "train.lr"). */
static void
consider(struct suggestion *s, const char *cand)
{
	int d = dt_job_distance(s->key, cand);

	if (d > 1 && strcmp(leaf_of(s->key), leaf_of(cand)) == 0)
		d = 1;
	if (d < s->d) {
		s->d = d;
		snprintf(s->best, sizeof s->best, "%s", cand);
	}
}

void
dt_job_suggest(const char *key, char *buf, size_t size)
{
	static const char layers[] = "model.layers.";
	struct suggestion s = { .key = key, .d = 1 << 20 };
	char parent[SUGGEST_MAX + 32], cand[sizeof parent + 16];
	const char *p, *dot;
	int i;

	for (i = 0; i < dt_job_schema_len; i++)
		consider(&s, dt_job_schema[i].key);
	/* Layer keys carry the index the user wrote. */
	if (strncmp(key, layers, sizeof layers - 1) == 0) {
		size_t n;

		p = key + sizeof layers - 1;
		n = strspn(p, "0123456789");
		if (n > 0 && n < 8 && p[n] == '.') {
			for (i = 0; i < DT_JOB_LAYER_KEYS + 2; i++) {
				const char *leaf = i < DT_JOB_LAYER_KEYS ?
					dt_job_layer_schema[i].key :
					i == DT_JOB_LAYER_KEYS ?
					dt_job_block_repeat.key :
					dt_job_block_layers.key;

				snprintf(cand, sizeof cand, "%s%.*s.%s",
					 layers, (int)n, p, leaf);
				consider(&s, cand);
			}
		}
	}
	/* The parts of a data source's mapping. */
	dot = strrchr(key, '.');
	if (dot != NULL && (size_t)(dot - key) < SUGGEST_MAX) {
		snprintf(parent, sizeof parent, "%.*s", (int)(dot - key), key);
		i = dt_job_schema_find(parent);
		if (i >= 0 && dt_job_schema[i].type == DT_KEY_SOURCE) {
			for (i = 0; source_parts[i] != NULL; i++) {
				snprintf(cand, sizeof cand, "%s.%s", parent,
					 source_parts[i]);
				consider(&s, cand);
			}
		}
	}
	if (s.d > dt_job_suggest_limit(strlen(leaf_of(key))) || s.d == 0)
		s.best[0] = '\0';
	snprintf(buf, size, "%s", s.best);
}

void
dt_job_section_keys(const char *prefix, char *buf, size_t size)
{
	size_t n = strlen(prefix), o = 0;
	int i;

	if (size > 0)
		buf[0] = '\0';
	if (strncmp(prefix, "model.layers.", 13) == 0) {
		for (i = 0; i < DT_JOB_LAYER_KEYS && o < size; i++)
			o += (size_t)snprintf(buf + o, size - o, "%s%s",
					      i ? ", " : "",
					      dt_job_layer_schema[i].key);
		return;
	}
	i = dt_job_schema_find(prefix);
	if (i >= 0 && dt_job_schema[i].type == DT_KEY_SOURCE) {
		for (i = 0; source_parts[i] != NULL && o < size; i++)
			o += (size_t)snprintf(buf + o, size - o, "%s%s",
					      i ? ", " : "", source_parts[i]);
		return;
	}
	for (i = 0; i < dt_job_schema_len && o < size; i++) {
		const char *key = dt_job_schema[i].key, *rest = key;

		if (n > 0) {
			if (strncmp(key, prefix, n) != 0 || key[n] != '.')
				continue;
			rest = key + n + 1;
		}
		if (strchr(rest, '.') != NULL)
			continue;
		o += (size_t)snprintf(buf + o, size - o, "%s%s",
				      o ? ", " : "", rest);
	}
}

/* Writes the default of k as dt_job_each_key shows it. */
static void
default_text(const struct dt_key *k, char *buf, size_t size)
{
	if (k->def != NULL)
		snprintf(buf, size, "%s", k->def);
	else if ((k->flags & DT_KEYF_REQUIRED) && k->when == NULL)
		snprintf(buf, size, "required");
	else if (k->flags & DT_KEYF_REQUIRED) {
		char when[96];

		dt_job_when_text(k, when, sizeof when);
		snprintf(buf, size, "required with %s %s", k->when, when);
	} else if (k->def_doc != NULL)
		snprintf(buf, size, "%s", k->def_doc);
	else
		snprintf(buf, size, "none");
}

static void
each(const struct dt_key *k, const char *key,
     void (*fn)(const char *, const char *, const char *, const char *,
		void *), void *ctx)
{
	char type[256], range[64], def[192], full[320];

	dt_job_type_text(k, type, sizeof type);
	dt_job_range_text(k, range, sizeof range);
	if (range[0] != '\0')
		snprintf(full, sizeof full, "%s %s", type, range);
	else
		snprintf(full, sizeof full, "%s", type);
	default_text(k, def, sizeof def);
	fn(key, full, def, k->doc, ctx);
}

void
dt_job_each_key(void (*fn)(const char *key, const char *type,
			   const char *def, const char *doc, void *ctx),
		void *ctx)
{
	char key[64];
	int i;

	for (i = 0; i < dt_job_schema_len; i++) {
		const struct dt_key *k = &dt_job_schema[i];
		int j;

		if (k->type == DT_KEY_SECTION)
			continue;
		each(k, k->key, fn, ctx);
		if (k->type != DT_KEY_LAYERS)
			continue;
		for (j = 0; j < DT_JOB_LAYER_KEYS; j++) {
			snprintf(key, sizeof key, "model.layers.N.%s",
				 dt_job_layer_schema[j].key);
			each(&dt_job_layer_schema[j], key, fn, ctx);
		}
		each(&dt_job_block_repeat, "model.layers.N.repeat", fn, ctx);
		each(&dt_job_block_layers, "model.layers.N.layers", fn, ctx);
	}
}
