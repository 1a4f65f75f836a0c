/* SPDX-License-Identifier: MIT */
/* fuzz_tokens.c - the token file reader (dt_tokens_load, dt_tokens_gather),
 * plain (mapped) or gzip (inflated).
 *
 * Bytes 0-3 of the input pick the arguments, the rest is the file:
 *   byte 0  bit 0: elem_size 4 (uint32) instead of 2 (uint16)
 *   byte 1  vocab_size: 0 (the largest token + 1) or byte * 64
 *   byte 2  context: 1 + byte % 64
 *   byte 3  stride: byte % 16 (0 = context)
 * A loaded stream's first and last samples are gathered, and every token
 * and target must be below vocab_size. */
#include "fuzz.h"

#include <stdlib.h>

#include "data/data.h"
#include "util/status.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dt_token_data td = { 0 };
	struct dt_error err;
	const char *path;
	int elem_size;
	int64_t vocab, context, stride;

	if (size < 4)
		return 0;
	elem_size = data[0] & 1 ? 4 : 2;
	vocab = (int64_t)data[1] * 64;
	context = 1 + data[2] % 64;
	stride = data[3] % 16;
	path = dt_fuzz_file(0, data + 4, size - 4);
	if (dt_tokens_load(path, elem_size, vocab, context, stride, &td,
			   &err) == DT_OK) {
		int64_t idx[2] = { 0, td.n - 1 };
		int32_t *x = calloc(2 * (size_t)context, sizeof *x);
		int32_t *y = calloc(2 * (size_t)context, sizeof *y);

		dt_fuzz_check(x != NULL && y != NULL, "out of memory");
		dt_fuzz_check(td.n >= 1 && td.context == context,
			      "a loaded token stream without samples");
		dt_fuzz_check(vocab == 0 || td.vocab_size == vocab,
			      "vocab_size not kept");
		dt_tokens_gather(&td, idx, 2, x, y);
		for (int64_t i = 0; i < 2 * context; i++)
			dt_fuzz_check(x[i] >= 0 && x[i] < td.vocab_size &&
				      y[i] >= 0 && y[i] < td.vocab_size,
				      "a gathered token is not below "
				      "vocab_size");
		free(x);
		free(y);
	}
	dt_tokens_fini(&td);
	return 0;
}
