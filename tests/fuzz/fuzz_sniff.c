/* SPDX-License-Identifier: MIT */
/* fuzz_sniff.c - the check of a download's first bytes against its format
 * (dt_data_sniff), plain or gzip.
 *
 * Byte 0 of the input picks the kind (byte % 5: any, IDX, NPY, text,
 * token data), the rest is the file. The answer must be DT_OK or
 * DT_ERR_DATA with a message, and DT_OK always for DT_DATA_ANY. */
#include "fuzz.h"

#include "data/fetch.h"
#include "util/status.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum dt_data_kind kinds[6] = {
		DT_DATA_ANY, DT_DATA_IDX, DT_DATA_NPY, DT_DATA_TEXT,
		DT_DATA_BINARY, DT_DATA_LLMC,
	};
	enum dt_data_kind kind;
	struct dt_error err;
	enum dt_status st;
	const char *path;

	if (size < 1)
		return 0;
	kind = kinds[data[0] % 6];
	path = dt_fuzz_file(0, data + 1, size - 1);
	dt_error_clear(&err);
	st = dt_data_sniff(path, kind, "http://fuzz.invalid/data", &err);
	dt_fuzz_check(st == DT_OK || (st == DT_ERR_DATA && err.msg[0] != '\0'),
		      "dt_data_sniff neither accepts nor refuses with a "
		      "message");
	dt_fuzz_check(kind != DT_DATA_ANY || st == DT_OK,
		      "DT_DATA_ANY refused");
	return 0;
}
