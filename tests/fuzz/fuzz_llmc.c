/* SPDX-License-Identifier: MIT */
/* fuzz_llmc.c - llm.c's token shard reader: the header check
 * (dt_llmc_header_check) and the mapped shard (dt_tokens_open_shards,
 * dt_tokens_gather).
 *
 * Byte 0 of the input picks the context (1 + byte % 32), byte 1 the
 * vocab_size (0: the largest token + 1, else byte * 256); the rest is the
 * file. An accepted shard's header must agree with its length, and its
 * first and last windows gather ids below vocab_size. */
#include "fuzz.h"

#include <stdlib.h>

#include "data/data.h"
#include "util/status.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dt_token_data td = { 0 };
	struct dt_error err;
	char *path;
	int64_t context, vocab, n = -1;

	if (size < 2)
		return 0;
	context = 1 + data[0] % 32;
	vocab = (int64_t)data[1] * 256;
	path = (char *)dt_fuzz_file(0, data + 2, size - 2);
	if (dt_llmc_header_check(path, data + 2, (int64_t)(size - 2), &n,
				 &err) == DT_OK)
		dt_fuzz_check(DT_LLMC_HEADER_BYTES + 2 * n == (int64_t)size - 2,
			      "a header accepted whose count is not the "
			      "file's");
	if (dt_tokens_open_shards(&path, 1, DT_TOKFILE_LLMC, vocab, context,
				  0, &td, &err) == DT_OK) {
		int64_t idx[2] = { 0, td.n - 1 };
		int32_t *x = calloc(2 * (size_t)context, sizeof *x);
		int32_t *y = calloc(2 * (size_t)context, sizeof *y);

		dt_fuzz_check(x != NULL && y != NULL, "out of memory");
		dt_fuzz_check(n >= 0 && td.n_tokens == n && td.n >= 1,
			      "a shard opened that its header refuses");
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
