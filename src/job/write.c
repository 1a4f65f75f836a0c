/* write.c - the job going out: error messages with the source line and a
 * caret under the column (after jq's error locations), dt_job_pos and
 * dt_job_where for later stages, and dt_job_write, which prints the
 * resolved job as YAML that reads back to the same job. */
#include "job/priv.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
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

/* A double that strtod reads back to the same bits, in the fewest digits;
 * %g never writes inf or nan here since values are finite. */
static void
format_double(double v, char *buf, size_t size)
{
	int prec;

	for (prec = 15; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* A double-quoted YAML string: always quoted, so "true", "10" or "null"
 * stay strings. */
static void
put_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", out);
		else if (ch == '\t')
			fputs("\\t", out);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(out, "\\x%02x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

/* Writes the value of key k stored at p (no newline): a scalar, a flow
 * list or a source. */
static void
put_value(FILE *out, const struct dt_key *k, const void *p)
{
	const struct dt_source *src = p;
	char num[64];
	int i, n;

	switch (k->type) {
	case DT_KEY_INT:
		fprintf(out, "%" PRId64, *(const int64_t *)p);
		break;
	case DT_KEY_DEGREE:
		if (*(const int64_t *)p == DT_DEGREE_AUTO)
			fputs("auto", out);
		else
			fprintf(out, "%" PRId64, *(const int64_t *)p);
		break;
	case DT_KEY_UINT:
		fprintf(out, "%" PRIu64, *(const uint64_t *)p);
		break;
	case DT_KEY_FLOAT:
		format_double(*(const double *)p, num, sizeof num);
		fputs(num, out);
		break;
	case DT_KEY_BOOL:
		fputs(*(const bool *)p ? "true" : "false", out);
		break;
	case DT_KEY_ENUM:
		fputs(k->names[*(const int *)p], out);
		break;
	case DT_KEY_NAME:
	case DT_KEY_PATH:
		put_string(out, p);
		break;
	case DT_KEY_SOURCE:
		if (src->sha256[0] == '\0' && src->size == 0) {
			put_string(out, src->path);
			break;
		}
		fputs("{path: ", out);
		put_string(out, src->path);
		if (src->sha256[0] != '\0') {
			fputs(", sha256: ", out);
			put_string(out, src->sha256);
		}
		if (src->size != 0)
			fprintf(out, ", size: %" PRId64, src->size);
		fputc('}', out);
		break;
	case DT_KEY_SHAPE:
	case DT_KEY_NAMES:
		n = *(const int *)((const char *)p - k->off + k->off_n);
		fputc('[', out);
		for (i = 0; i < n; i++) {
			fputs(i ? ", " : "", out);
			if (k->type == DT_KEY_SHAPE)
				fprintf(out, "%" PRId64,
					((const int64_t *)p)[i]);
			else
				put_string(out, (const char *)p +
					   (size_t)i * k->size);
		}
		fputc(']', out);
		break;
	default:
		break;
	}
}

/* Whether key k has a value to write: keys not used with the job's other
 * values write nothing, nor do keys without a default while unset (0 or
 * ""), since their zero means "not given". */
static bool
has_value(const struct dt_job *job, const struct dt_key *k)
{
	const char *p = (const char *)job + k->off;

	if (!dt_job_key_applies(job, k))
		return false;
	/* An eval file leaves nothing to hold out (check.c). */
	if (k->off == offsetof(struct dt_job, data.eval_fraction) &&
	    k->type == DT_KEY_FLOAT && job->data.eval.file.path[0] != '\0')
		return false;
	if (k->def != NULL || k->type == DT_KEY_SHAPE ||
	    k->type == DT_KEY_LAYERS || k->type == DT_KEY_NAME)
		return true;
	switch (k->type) {
	case DT_KEY_INT:
	case DT_KEY_DEGREE: return *(const int64_t *)p != 0;
	case DT_KEY_UINT: return *(const uint64_t *)p != 0;
	case DT_KEY_FLOAT: return *(const double *)p != 0.0;
	case DT_KEY_PATH: return p[0] != '\0';
	case DT_KEY_SOURCE: return ((const struct dt_source *)p)->path[0];
	case DT_KEY_NAMES: return *(const int *)((const char *)job + k->off_n);
	default: return true;
	}
}

/* Whether section i has any key with a value below it. */
static bool
section_has_value(const struct dt_job *job, int i)
{
	size_t n = strlen(dt_job_schema[i].key);
	int j;

	for (j = i + 1; j < dt_job_schema_len; j++) {
		const struct dt_key *k = &dt_job_schema[j];

		if (strncmp(k->key, dt_job_schema[i].key, n) != 0 ||
		    k->key[n] != '.')
			break;
		if (k->type != DT_KEY_SECTION && has_value(job, k))
			return true;
	}
	return false;
}

/* One layer a line, as a flow mapping of its type and every key the type
 * takes; repeat blocks are written expanded. */
static void
put_layers(FILE *out, const struct dt_job *job, int indent)
{
	int i, k;

	for (i = 0; i < job->model.n_layers; i++) {
		const struct dt_layer_spec *l = &job->model.layers[i];
		const struct dt_layer_type *t = dt_job_layer_type(l);

		fprintf(out, "%*s- {type: %s", indent, "", t->name);
		for (k = 0; k < DT_JOB_LAYER_KEYS; k++) {
			const struct dt_key *lk = &dt_job_layer_schema[k];

			if (k == DT_LAYER_KEY_TYPE || !((t->takes >> k) & 1u) ||
			    (k == DT_LAYER_KEY_INPUTS && l->n_inputs == 0))
				continue;
			fprintf(out, ", %s: ", lk->key);
			put_value(out, lk, (const char *)l + lk->off);
		}
		fputs("}\n", out);
	}
}

enum dt_status
dt_job_write(const struct dt_job *job, FILE *out, struct dt_error *err)
{
	int i;

	fprintf(out, "# The job as dtrain resolved it: defaults filled in, "
		"--set applied,\n# data paths made absolute, repeat blocks "
		"expanded.\n");
	for (i = 0; i < dt_job_schema_len; i++) {
		const struct dt_key *k = &dt_job_schema[i];
		const char *leaf = strrchr(k->key, '.'), *s;
		int indent = 0;

		leaf = leaf ? leaf + 1 : k->key;
		for (s = k->key; *s != '\0'; s++)
			indent += *s == '.' ? 2 : 0;
		if (k->type == DT_KEY_SECTION) {
			if (section_has_value(job, i))
				fprintf(out, "%*s%s:\n", indent, "", leaf);
			continue;
		}
		if (!has_value(job, k))
			continue;
		fprintf(out, "%*s%s:", indent, "", leaf);
		if (k->type == DT_KEY_LAYERS) {
			fputc('\n', out);
			put_layers(out, job, indent + 2);
		} else {
			fputc(' ', out);
			put_value(out, k, (const char *)job + k->off);
			fputc('\n', out);
		}
	}
	if (fflush(out) != 0 || ferror(out))
		return dt_errorf(err, DT_ERR_IO, "cannot write the job: %s",
				 strerror(errno));
	return DT_OK;
}
