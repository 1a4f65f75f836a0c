/* SPDX-License-Identifier: MIT */
/* fuzz_csv.c - the CSV reader (dt_dataset_load_csv), plain or gzip.
 *
 * Byte 0 of the input picks the options, the rest is the file:
 *   bit 0     header
 *   bits 1-2  delimiter: ',' ';' '\t' or 0 (the default, ',')
 *   bits 3-4  label column: -1 (the last), 0, 1 or -2
 *   bit 5     n_classes 2 instead of 10
 * A loaded dataset's first and last samples are gathered. */
#include "fuzz.h"

#include <stdlib.h>

#include "data/data.h"
#include "util/status.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char delims[4] = { ',', ';', '\t', 0 };
	static const int label_cols[4] = { -1, 0, 1, -2 };
	struct dt_csv_opts o = { 0 };
	struct dt_dataset ds = { 0 };
	struct dt_error err;
	const char *path;
	uint8_t sel;

	if (size < 1)
		return 0;
	sel = data[0];
	o.header = sel & 1;
	o.delimiter = delims[(sel >> 1) & 3];
	o.label_col = label_cols[(sel >> 3) & 3];
	o.n_classes = sel & 32 ? 2 : 10;
	o.scale = 0;
	path = dt_fuzz_file(0, data + 1, size - 1);
	if (dt_dataset_load_csv(path, &o, &ds, &err) == DT_OK) {
		int64_t idx[2] = { 0, ds.n - 1 };
		float *x = calloc(2 * (size_t)ds.sample_size, sizeof *x);
		int32_t y[2];

		dt_fuzz_check(ds.n >= 1 && ds.sample_size >= 1,
			      "a loaded CSV file without samples");
		dt_fuzz_check(x != NULL, "out of memory");
		dt_dataset_gather(&ds, idx, 2, x, y);
		dt_fuzz_check(y[0] >= 0 && y[0] < o.n_classes && y[1] >= 0 &&
			      y[1] < o.n_classes,
			      "a gathered label is out of range");
		free(x);
	}
	dt_dataset_fini(&ds);
	return 0;
}
