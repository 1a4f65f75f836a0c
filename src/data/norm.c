/* SPDX-License-Identifier: MIT */
/* norm.c - data.normalize: per-feature statistics of the training split
 * (standard: mean and population standard deviation; minmax: the range),
 * the affine map they give, and its text in a checkpoint's meta.json.
 * The sums run in double, sample by sample in file order, so every rank
 * that holds the same split computes the same bits. */
#include "data/data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

static const char *const kind_names[] = { "none", "standard", "minmax" };

const char *
dt_norm_kind_name(int kind)
{
	return kind >= 0 && kind <= DT_NORM_MINMAX ? kind_names[kind] : "?";
}

void
dt_norm_fini(struct dt_norm *norm)
{
	if (norm == NULL)
		return;
	free(norm->shift);
	free(norm->mul);
	free(norm->fshift);
	free(norm->fmul);
	memset(norm, 0, sizeof *norm);
}

/* The float32 copies the map applies. */
static void
round_floats(struct dt_norm *norm)
{
	norm->fshift = dt_xmalloc((size_t)norm->n, sizeof *norm->fshift);
	norm->fmul = dt_xmalloc((size_t)norm->n, sizeof *norm->fmul);
	for (int64_t j = 0; j < norm->n; j++) {
		norm->fshift[j] = (float)norm->shift[j];
		norm->fmul[j] = (float)norm->mul[j];
	}
}

/* Feature j of sample s as dt_dataset_gather gives it before the map. */
static double
feature(const struct dt_dataset *ds, int64_t s, int64_t j)
{
	int64_t i = s * ds->sample_size + j;
	float v = ds->x_u8 != NULL ? (float)ds->x_u8[i] * ds->scale :
		  ds->x_f32[i] * ds->scale;

	return (double)v;
}

static void
fit_standard(struct dt_norm *norm, const struct dt_dataset *ds)
{
	const int64_t n = norm->n;

	for (int64_t s = 0; s < ds->n; s++)
		for (int64_t j = 0; j < n; j++)
			norm->shift[j] += feature(ds, s, j);
	for (int64_t j = 0; j < n; j++)
		norm->shift[j] /= (double)ds->n;
	for (int64_t s = 0; s < ds->n; s++)
		for (int64_t j = 0; j < n; j++) {
			double d = feature(ds, s, j) - norm->shift[j];

			norm->mul[j] += d * d;
		}
	for (int64_t j = 0; j < n; j++) {
		double sd = sqrt(norm->mul[j] / (double)ds->n);

		norm->mul[j] = sd > 0 ? 1.0 / sd : 1.0;
	}
}

static void
fit_minmax(struct dt_norm *norm, const struct dt_dataset *ds)
{
	const int64_t n = norm->n;
	double *hi = dt_xmalloc((size_t)n, sizeof *hi);	/* (n) */

	for (int64_t j = 0; j < n; j++)
		norm->shift[j] = hi[j] = feature(ds, 0, j);
	for (int64_t s = 1; s < ds->n; s++)
		for (int64_t j = 0; j < n; j++) {
			double v = feature(ds, s, j);

			if (v < norm->shift[j])
				norm->shift[j] = v;
			if (v > hi[j])
				hi[j] = v;
		}
	for (int64_t j = 0; j < n; j++)
		norm->mul[j] = hi[j] > norm->shift[j] ?
			       1.0 / (hi[j] - norm->shift[j]) : 1.0;
	free(hi);
}

void
dt_norm_fit(struct dt_norm *norm, int kind, const struct dt_dataset *ds)
{
	memset(norm, 0, sizeof *norm);
	norm->kind = kind;
	norm->scale = ds->scale;
	if (kind == DT_NORM_NONE || ds->n < 1)
		return;
	norm->n = ds->sample_size;
	norm->shift = dt_xcalloc((size_t)norm->n, sizeof *norm->shift);
	norm->mul = dt_xcalloc((size_t)norm->n, sizeof *norm->mul);
	if (kind == DT_NORM_STANDARD)
		fit_standard(norm, ds);
	else
		fit_minmax(norm, ds);
	round_floats(norm);
}

void
dt_norm_apply(const struct dt_norm *norm, float *x, int64_t count)
{
	const int64_t n = norm->n;

	if (norm->kind == DT_NORM_NONE || n == 0)
		return;
	for (int64_t k = 0; k < count; k++) {
		float *row = x + k * n;	/* (n) */

		for (int64_t j = 0; j < n; j++)
			row[j] = (row[j] - norm->fshift[j]) * norm->fmul[j];
	}
}

char *
dt_norm_text(const struct dt_norm *norm)
{
	size_t size = 96 + (size_t)norm->n * 56, o;
	char *s = dt_xmalloc(size, 1);

	o = (size_t)snprintf(s, size, "scale %.17g\nnormalize %s %lld\n",
			     norm->scale, dt_norm_kind_name(norm->kind),
			     (long long)norm->n);
	for (int64_t j = 0; j < norm->n; j++)
		o += (size_t)snprintf(s + o, size - o, "%.17g %.17g\n",
				      norm->shift[j], norm->mul[j]);
	return s;
}

/* One finite double at *p, moved past it. */
static int
take_double(const char **p, double *v)
{
	char *end;

	*v = strtod(*p, &end);
	if (end == *p || !isfinite(*v))
		return -1;
	*p = end;
	return 0;
}

enum dt_status
dt_norm_parse(const char *text, const char *where, struct dt_norm *norm,
	      struct dt_error *err)
{
	char word[16];
	long long n = -1;
	int used = 0, kind;
	const char *p = text;

	memset(norm, 0, sizeof *norm);
	if (sscanf(p, "scale %lf\nnormalize %15s %lld%n", &norm->scale, word,
		   &n, &used) != 3 || !isfinite(norm->scale) ||
	    norm->scale <= 0 || n < 0 || n > ((long long)1 << 40))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: line 1: expected "
				 "\"scale S\", then \"normalize KIND N\"",
				 where);
	for (kind = 0; kind <= DT_NORM_MINMAX; kind++)
		if (strcmp(word, kind_names[kind]) == 0)
			break;
	if (kind > DT_NORM_MINMAX || (kind == DT_NORM_NONE) != (n == 0))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: line 2: normalize "
				 "%s %lld: expected none 0, standard N or "
				 "minmax N", where, word, n);
	norm->kind = kind;
	norm->n = n;
	p += used;
	if (n == 0)
		return DT_OK;
	norm->shift = dt_xmalloc((size_t)n, sizeof *norm->shift);
	norm->mul = dt_xmalloc((size_t)n, sizeof *norm->mul);
	for (int64_t j = 0; j < n; j++)
		if (take_double(&p, &norm->shift[j]) != 0 ||
		    take_double(&p, &norm->mul[j]) != 0) {
			dt_norm_fini(norm);
			return dt_errorf(err, DT_ERR_FORMAT, "%s: line %lld: "
					 "expected two finite numbers (shift "
					 "and multiplier of feature %lld)",
					 where, (long long)(j + 3),
					 (long long)j);
		}
	round_floats(norm);
	return DT_OK;
}
