/* SPDX-License-Identifier: MIT */
/* fuzz_ckpt_manifest.c - a checkpoint's MANIFEST.json
 * (dt_ck_manifest_decode).
 *
 * Any text must decode or fail with DT_ERR_FORMAT and a message; every
 * listed name must be a plain file name (no '/', not starting with '.'),
 * since the reader opens it inside the checkpoint directory; and what
 * decodes must encode to a manifest that decodes to the same list. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt_priv.h"
#include "util/status.h"

static int
same_manifest(const struct dt_ck_manifest *a, const struct dt_ck_manifest *b)
{
	if (a->step != b->step || a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->f[i].name, b->f[i].name) != 0 ||
		    a->f[i].size != b->f[i].size || a->f[i].crc != b->f[i].crc)
			return 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct dt_ck_manifest man, again;
	struct dt_error err;
	enum dt_status st;

	dt_fuzz_check(text != NULL, "out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	dt_error_clear(&err);
	st = dt_ck_manifest_decode(text, size, &man, &err);
	dt_fuzz_check(st == DT_OK || (st == DT_ERR_FORMAT &&
				      err.msg[0] != '\0'),
		      "MANIFEST.json refused without DT_ERR_FORMAT and a "
		      "message");
	if (st == DT_OK) {
		char *enc;

		dt_fuzz_check(man.n <= DT_CK_MAX_FILES, "too many files");
		for (size_t i = 0; i < man.n; i++)
			dt_fuzz_check(man.f[i].name[0] != '\0' &&
				      man.f[i].name[0] != '.' &&
				      strchr(man.f[i].name, '/') == NULL,
				      "a listed name is not a plain file "
				      "name");
		enc = dt_ck_manifest_encode(&man);
		st = dt_ck_manifest_decode(enc, strlen(enc), &again, &err);
		dt_fuzz_check(st == DT_OK, "an encoded manifest does not "
			      "decode");
		dt_fuzz_check(same_manifest(&man, &again),
			      "MANIFEST.json does not round-trip");
		free(enc);
	}
	free(text);
	return 0;
}
