/* SPDX-License-Identifier: MIT */
/* fuzz_vocab.c - the text readers: dt_vocab_build and dt_text_encode on
 * arbitrary text, and dt_vocab_load on arbitrary vocabulary files, plain
 * or gzip.
 *
 * Byte 0 of the input picks what the rest is:
 *   0  a text, vocabulary of bytes       1  a text, of UTF-8 characters
 *   2  a DTVOCAB file                    (byte % 3)
 * A text's vocabulary must encode the same text (every character is in
 * it); a loaded vocabulary must map each of its units to its own id. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "data/data.h"
#include "util/status.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dt_vocab v = { 0 };
	struct dt_token_data td = { 0 };
	struct dt_error err;
	const char *path;
	int mode;

	if (size < 1)
		return 0;
	mode = data[0] % 3;
	path = dt_fuzz_file(0, data + 1, size - 1);
	if (mode < 2) {
		enum dt_text_unit unit = mode == 0 ? DT_TEXT_BYTES :
						     DT_TEXT_CHARS;

		if (dt_vocab_build(path, unit, &v, &err) == DT_OK) {
			enum dt_status st;

			dt_fuzz_check(v.size >= 1, "an empty vocabulary");
			st = dt_text_encode(path, &v, 1, 0, &td, &err);
			/* One character is too few for one sample. */
			dt_fuzz_check(st == DT_OK || (st == DT_ERR_DATA &&
				      strstr(err.msg, "too few") != NULL),
				      "a text does not encode with its own "
				      "vocabulary");
			if (st == DT_OK) {
				dt_fuzz_check(td.vocab_size == v.size,
					      "vocab_size is not the "
					      "vocabulary's");
			}
		}
	} else if (dt_vocab_load(path, &v, &err) == DT_OK) {
		for (int64_t i = 0; i < v.size; i++) {
			char piece[4];

			dt_fuzz_check(dt_vocab_id(&v, v.units[i]) == i,
				      "a unit of a loaded vocabulary has "
				      "another id");
			dt_fuzz_check(dt_vocab_piece(&v, i, piece) >= 1,
				      "an empty piece");
		}
	}
	dt_tokens_fini(&td);
	dt_vocab_fini(&v);
	return 0;
}
