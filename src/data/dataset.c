/* SPDX-License-Identifier: MIT */
/* dataset.c - a labelled dataset from an IDX images file and an IDX labels
 * file, and the gather that turns sample indices into a batch. */
#include "data/data.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

static long long
ll(int64_t v)
{
	return (long long)v;
}

/* Element i of an integer IDX array, widened. Only called for the integer
 * types. */
static int64_t
idx_int_at(const struct dt_idx *idx, int64_t i)
{
	switch (idx->type) {
	case 0x08: return ((const uint8_t *)idx->data)[i];
	case 0x09: return ((const int8_t *)idx->data)[i];
	case 0x0B: return ((const int16_t *)idx->data)[i];
	case 0x0C: return ((const int32_t *)idx->data)[i];
	}
	assert(!"idx_int_at: not an integer type");
	return 0;
}

/* Element i of a non-u8 IDX array as a float. */
static float
idx_float_at(const struct dt_idx *idx, int64_t i)
{
	switch (idx->type) {
	case 0x0D: return ((const float *)idx->data)[i];
	case 0x0E: return (float)((const double *)idx->data)[i];
	}
	return (float)idx_int_at(idx, i);
}

static int
is_integer_type(int type)
{
	return type == 0x08 || type == 0x09 || type == 0x0B || type == 0x0C;
}

/* Checks the labels file's shape and type and every value, and fills ds->y. */
static enum dt_status
take_labels(const char *path, const struct dt_idx *lab, int64_t n_classes,
	    struct dt_dataset *ds, struct dt_error *err)
{
	if (lab->n_dims != 1)
		return dt_errorf(err, DT_ERR_FORMAT,
				 "%s: byte 3: labels must be 1-dimensional "
				 "(one label per record), found %d dimensions",
				 path, lab->n_dims);
	if (!is_integer_type(lab->type))
		return dt_errorf(err, DT_ERR_FORMAT,
				 "%s: byte 2: labels must have an integer "
				 "type (0x08, 0x09, 0x0B or 0x0C), found 0x%02X",
				 path, lab->type);

	ds->y = dt_xmalloc((size_t)ds->n, sizeof *ds->y);
	for (int64_t i = 0; i < ds->n; i++) {
		int64_t v = idx_int_at(lab, i);

		if (v < 0 || v >= n_classes)
			return dt_errorf(err, DT_ERR_DATA,
					 "%s: record %lld: label %lld out of "
					 "range [0, %lld)", path, ll(i), ll(v),
					 ll(n_classes));
		ds->y[i] = (int32_t)v;
	}
	return DT_OK;
}

/* Moves the images into ds: u8 buffers are adopted as they are, anything
 * else is converted to float and checked for NaN and infinity. */
static enum dt_status
take_images(const char *path, struct dt_idx *img, struct dt_dataset *ds,
	    struct dt_error *err)
{
	int64_t count = ds->n * ds->sample_size;

	if (img->type == 0x08) {
		ds->x_u8 = img->data;
		img->data = NULL;
		return DT_OK;
	}
	ds->x_f32 = dt_xmalloc((size_t)count, sizeof *ds->x_f32);
	for (int64_t i = 0; i < count; i++)
		ds->x_f32[i] = idx_float_at(img, i);
	if (img->type != 0x0D && img->type != 0x0E)
		return DT_OK;
	for (int64_t i = 0; i < count; i++) {
		if (!isfinite(ds->x_f32[i]))
			return dt_errorf(err, DT_ERR_DATA,
					 "%s: record %lld: feature %lld is %s "
					 "(as float32)", path,
					 ll(i / ds->sample_size),
					 ll(i % ds->sample_size),
					 isnan(ds->x_f32[i]) ? "NaN" :
					 "infinite");
	}
	return DT_OK;
}

enum dt_status
dt_dataset_load_idx(const char *images, const char *labels,
		    int64_t n_classes, float scale, struct dt_dataset *ds,
		    struct dt_error *err)
{
	struct dt_idx img, lab;
	enum dt_status st;

	assert(n_classes > 0);
	memset(ds, 0, sizeof *ds);
	st = dt_idx_read(images, &img, err);
	if (st != DT_OK)
		return st;
	st = dt_idx_read(labels, &lab, err);
	if (st != DT_OK) {
		dt_idx_fini(&img);
		return st;
	}

	if (img.n_dims < 2) {
		st = dt_errorf(err, DT_ERR_FORMAT,
			       "%s: byte 3: images must have 2 to 4 dimensions "
			       "(records, then each sample's shape), found 1",
			       images);
		goto out;
	}
	if (img.dims[0] != lab.dims[0]) {
		st = dt_errorf(err, DT_ERR_DATA,
			       "%s: images has %lld records, labels has %lld "
			       "(%s); the two files must describe the same "
			       "samples", images, ll(img.dims[0]),
			       ll(lab.dims[0]), labels);
		goto out;
	}

	ds->n = img.dims[0];
	ds->n_shape = img.n_dims - 1;
	ds->sample_size = 1;
	for (int i = 0; i < ds->n_shape; i++) {
		ds->shape[i] = img.dims[i + 1];
		ds->sample_size *= img.dims[i + 1];
	}
	st = take_labels(labels, &lab, n_classes, ds, err);
	if (st == DT_OK)
		st = take_images(images, &img, ds, err);
	ds->scale = scale != 0 ? scale : dt_dataset_auto_scale(ds);
out:
	dt_idx_fini(&img);
	dt_idx_fini(&lab);
	if (st != DT_OK)
		dt_dataset_fini(ds);
	return st;
}

void
dt_dataset_fini(struct dt_dataset *ds)
{
	if (ds == NULL)
		return;
	free(ds->x_u8);
	free(ds->x_f32);
	free(ds->y);
	free(ds->t);
	memset(ds, 0, sizeof *ds);
}

float
dt_dataset_auto_scale(const struct dt_dataset *ds)
{
	return ds->x_u8 != NULL ? 1.0f / 255.0f : 1.0f;
}

/* The kernels below run in blocks of 16 with a constant inner trip count,
 * then the rest one by one: GCC's -O2 vectoriser (the "very cheap" cost
 * model) only takes loops whose trip count is a known multiple of the
 * vector width, and the pointers must be restrict parameters. One sample
 * is a few hundred values (784 for 28x28 images), gathered once per
 * sample per step. */

/* dst = src * scale over n bytes. */
static void
scale_u8(const uint8_t *restrict src, float *restrict dst, int64_t n,
	 float scale)
{
	int64_t j = 0;

	for (; j + 16 <= n; j += 16)
		for (int k = 0; k < 16; k++)
			dst[j + k] = (float)src[j + k] * scale;
	for (; j < n; j++)
		dst[j] = (float)src[j] * scale;
}

/* dst = src * scale over n floats. */
static void
scale_f32(const float *restrict src, float *restrict dst, int64_t n,
	  float scale)
{
	int64_t j = 0;

	for (; j + 16 <= n; j += 16)
		for (int k = 0; k < 16; k++)
			dst[j + k] = src[j + k] * scale;
	for (; j < n; j++)
		dst[j] = src[j] * scale;
}

void
dt_dataset_gather(const struct dt_dataset *ds, const int64_t *idx,
		  int64_t count, float *x, int32_t *y)
{
	const int64_t ss = ds->sample_size;
	const float scale = ds->scale;

	for (int64_t k = 0; k < count; k++) {
		int64_t s = idx[k];
		float *dst = x + k * ss;	/* (ss) */

		assert(s >= 0 && s < ds->n);
		if (ds->x_u8 != NULL)
			scale_u8(ds->x_u8 + s * ss, dst, ss, scale);
		else
			scale_f32(ds->x_f32 + s * ss, dst, ss, scale);
		if (y != NULL && ds->y != NULL)
			y[k] = ds->y[s];
	}
	if (ds->norm != NULL)
		dt_norm_apply(ds->norm, x, count);
}

void
dt_dataset_gather_targets(const struct dt_dataset *ds, const int64_t *idx,
			  int64_t count, float *t)
{
	const int64_t nt = ds->n_targets;

	assert(ds->t != NULL);
	for (int64_t k = 0; k < count; k++)
		memcpy(t + k * nt, ds->t + idx[k] * nt,
		       (size_t)nt * sizeof *t);
}
