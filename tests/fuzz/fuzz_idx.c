/* SPDX-License-Identifier: MIT */
/* fuzz_idx.c - the IDX reader (dt_idx_peek, dt_idx_read) and the dataset
 * built from it (dt_dataset_load_idx, dt_dataset_gather), plain or gzip.
 *
 * The input is the file. When it reads as images (2 to 4 dimensions), a
 * labels file of as many zeros goes with it; when it reads as labels (1
 * dimension), an images file of as many 1x1 pixels. Then the first and
 * the last sample are gathered. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "data/data.h"
#include "util/status.h"

#define N_CLASSES 10

/* The IDX file of n records of 'dims' u8 elements each, all zero (1 to 3
 * dimensions after the records), into slot 1; returns its path. */
static const char *
zeros_file(int64_t n, int n_sample_dims)
{
	size_t hdr = 4 + 4 * (size_t)(1 + n_sample_dims);
	unsigned char *buf = calloc(1, hdr + (size_t)n);
	const char *path;

	dt_fuzz_check(buf != NULL, "out of memory");
	buf[2] = 0x08;
	buf[3] = (unsigned char)(1 + n_sample_dims);
	for (int d = 0; d <= n_sample_dims; d++) {
		uint32_t v = d == 0 ? (uint32_t)n : 1;

		buf[4 + 4 * d] = (unsigned char)(v >> 24);
		buf[5 + 4 * d] = (unsigned char)(v >> 16);
		buf[6 + 4 * d] = (unsigned char)(v >> 8);
		buf[7 + 4 * d] = (unsigned char)v;
	}
	path = dt_fuzz_file(1, buf, hdr + (size_t)n);
	free(buf);
	return path;
}

static void
gather_ends(const struct dt_dataset *ds)
{
	int64_t idx[2] = { 0, ds->n - 1 };
	float *x = calloc(2 * (size_t)ds->sample_size, sizeof *x);
	int32_t y[2];

	dt_fuzz_check(x != NULL, "out of memory");
	dt_dataset_gather(ds, idx, 2, x, y);
	dt_fuzz_check(y[0] >= 0 && y[0] < N_CLASSES && y[1] >= 0 &&
		      y[1] < N_CLASSES, "a gathered label is out of range");
	free(x);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = dt_fuzz_file(0, data, size);
	struct dt_idx peek = { 0 }, idx = { 0 };
	struct dt_dataset ds = { 0 };
	struct dt_error err;
	enum dt_status st, st_peek;

	st_peek = dt_idx_peek(path, &peek, &err);
	st = dt_idx_read(path, &idx, &err);
	dt_fuzz_check(st != DT_OK || st_peek == DT_OK,
		      "dt_idx_read takes a file whose header dt_idx_peek "
		      "refuses");
	if (st == DT_OK) {
		dt_fuzz_check(peek.n_dims == idx.n_dims && peek.type ==
			      idx.type && memcmp(peek.dims, idx.dims,
						 sizeof idx.dims) == 0,
			      "dt_idx_peek and dt_idx_read disagree");
		if (idx.n_dims >= 2)
			st = dt_dataset_load_idx(path, zeros_file(idx.dims[0],
								  0),
						 N_CLASSES, 1.0f / 255, &ds,
						 &err);
		else
			st = dt_dataset_load_idx(zeros_file(idx.dims[0], 2),
						 path, N_CLASSES, 1.0f, &ds,
						 &err);
		if (st == DT_OK)
			gather_ends(&ds);
	}
	dt_dataset_fini(&ds);
	dt_idx_fini(&idx);
	dt_idx_fini(&peek);
	return 0;
}
