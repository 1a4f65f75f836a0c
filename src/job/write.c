/* SPDX-License-Identifier: MIT */
/* write.c - the job going out: dt_job_write prints the resolved job as
 * YAML that reads back to the same job. */
#include "job/keys.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * stay strings. Every character libyaml would not take raw is escaped
 * (\xNN below U+0100, \uNNNN above; YAML reads either back as that code
 * point in UTF-8), so the text reads back to the same bytes. The job's
 * strings are well-formed UTF-8 (value.c refuses others); a byte that is
 * not, which cannot occur, is written as U+FFFD rather than raw, so the
 * file still parses. */
static void
put_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	uint32_t cp;
	int len;

	fputc('"', out);
	while (n > 0) {
		len = dt_job_utf8_char(p, n, &cp);
		if (len == 0) {
			fputs("\\uFFFD", out);
			p++, n--;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (int)cp);
		else if (cp == '\n')
			fputs("\\n", out);
		else if (cp == '\t')
			fputs("\\t", out);
		else if (!dt_job_yaml_printable(cp) || cp == 0x85)
			fprintf(out, cp < 0x100 ? "\\x%02x" : "\\u%04x",
				(unsigned)cp);
		else
			fwrite(p, 1, (size_t)len, out);
		p += len;
		n -= (size_t)len;
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
	case DT_KEY_INIT: {
		const struct dt_init_choice *ic = p;

		if (ic->rule == DT_INIT_RULE_NORMAL) {
			format_double(ic->std, num, sizeof num);
			fprintf(out, "normal(%s)", num);
		} else {
			/* INHERIT only as model.init of a job made in code,
			 * where it means auto. */
			fputs(dt_job_init_words[ic->rule ==
				DT_INIT_RULE_INHERIT ? DT_INIT_RULE_AUTO :
				ic->rule], out);
		}
		break;
	}
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
			    (k == DT_LAYER_KEY_INPUTS && l->n_inputs == 0) ||
			    (k == DT_LAYER_KEY_TIE && l->tie[0] == '\0'))
				continue;
			/* A pos_embedding's dim left out is its input's. */
			if (k == DT_LAYER_KEY_DIM && l->dim == 0)
				continue;
			/* An init left out is model.init's. */
			if (k == DT_LAYER_KEY_INIT &&
			    l->init.rule == DT_INIT_RULE_INHERIT)
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
