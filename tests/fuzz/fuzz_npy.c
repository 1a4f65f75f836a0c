/* SPDX-License-Identifier: MIT */
/* fuzz_npy.c - the NPY reader (dt_npy_read) and the dataset built from it
 * (dt_dataset_load_npy, dt_dataset_gather), plain or gzip.
 *
 * The input is the file. When it reads as features (2 to 4 dimensions), a
 * uint8 labels file of as many zeros goes with it; when it reads as
 * labels (1 dimension), a features file of as many single bytes. Then the
 * first and the last sample are gathered. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data.h"
#include "util/status.h"

#define N_CLASSES 10
/* Records of a companion file written; past it the pair is not tried. */
#define MAX_RECORDS (1 << 16)

/* A version 1.0 .npy of uint8 zeros, shape (n,) or (n, 1), into slot 1;
 * returns its path. */
static const char *
zeros_file(int64_t n, int two_dims)
{
	char dict[128];
	unsigned char *buf;
	size_t hdr = 128, len;
	const char *path;
	int k;

	k = snprintf(dict, sizeof dict, "{'descr': '|u1', 'fortran_order': "
		     "False, 'shape': (%lld,%s), }", (long long)n,
		     two_dims ? " 1" : "");
	dt_fuzz_check(k > 0 && (size_t)k < hdr - 10 - 1, "dict too long");
	len = hdr + (size_t)n;
	buf = calloc(1, len);
	dt_fuzz_check(buf != NULL, "out of memory");
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (unsigned char)((hdr - 10) & 0xff);
	buf[9] = (unsigned char)((hdr - 10) >> 8);
	memset(buf + 10, ' ', hdr - 10);
	memcpy(buf + 10, dict, (size_t)k);
	buf[hdr - 1] = '\n';
	path = dt_fuzz_file(1, buf, len);
	free(buf);
	return path;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = dt_fuzz_file(0, data, size);
	struct dt_npy arr = { 0 };
	struct dt_dataset ds = { 0 };
	struct dt_error err;
	enum dt_status st;

	st = dt_npy_read(path, &arr, &err);
	if (st == DT_OK && arr.n_dims >= 1 && arr.dims[0] >= 1 &&
	    arr.dims[0] <= MAX_RECORDS) {
		if (arr.n_dims >= 2)
			st = dt_dataset_load_npy(path, zeros_file(arr.dims[0],
								  0),
						 N_CLASSES, 1.0f / 255, &ds,
						 &err);
		else
			st = dt_dataset_load_npy(zeros_file(arr.dims[0], 1),
						 path, N_CLASSES, 1.0f, &ds,
						 &err);
		if (st == DT_OK) {
			int64_t idx[2] = { 0, ds.n - 1 };
			float *x = calloc(2 * (size_t)ds.sample_size,
					  sizeof *x);
			int32_t y[2];

			dt_fuzz_check(x != NULL, "out of memory");
			dt_dataset_gather(&ds, idx, 2, x, y);
			dt_fuzz_check(y[0] >= 0 && y[0] < N_CLASSES &&
				      y[1] >= 0 && y[1] < N_CLASSES,
				      "a gathered label is out of range");
			free(x);
		}
	}
	dt_dataset_fini(&ds);
	dt_npy_fini(&arr);
	return 0;
}
