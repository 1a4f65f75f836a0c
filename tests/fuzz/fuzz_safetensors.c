/* SPDX-License-Identifier: MIT */
/* fuzz_safetensors.c - the safetensors readers of checkpoints and
 * exports: dt_ck_st_read_header, dt_ck_st_read_data and dt_ck_rfinish
 * through dt_ck_rfile (plain or gzip), then dt_ckpt_import.
 *
 * Byte 0 of the input picks the mode, the rest is the file:
 *   bit 0  read it as gzip (optim.safetensors.gz)
 *   bit 1  require a crc32 for every tensor (as checkpoints do)
 * A plain file whose header reads is then imported into targets of the
 * names and shapes it lists (when its data is no larger than the file),
 * which must succeed exactly when the plain read without required CRCs
 * did. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "ckpt/ckpt_priv.h"
#include "util/status.h"

/* Reads the file as a checkpoint reader does; 1 if all of it is good. */
static int
read_whole(const char *path, int gz, int require_crc, struct dt_ck_header *h)
{
	struct dt_ck_rfile r;
	struct dt_error err;
	enum dt_status st;
	float **dst = NULL;

	st = dt_ck_ropen(&r, path, "fuzz.safetensors", gz, &err);
	dt_fuzz_check(st == DT_OK, "cannot open the scratch file");
	st = dt_ck_st_read_header(&r, require_crc, h, &err);
	if (st == DT_OK) {
		dt_fuzz_check(h->n >= 1 || h->data_size == 0,
			      "a header without tensors but with data");
		dst = calloc(h->n ? h->n : 1, sizeof *dst);
		dt_fuzz_check(dst != NULL, "out of memory");
		st = dt_ck_st_read_data(&r, h, dst, &err);
	}
	if (st == DT_OK)
		st = dt_ck_rfinish(&r, &err);
	dt_fuzz_check(st == DT_OK || st == DT_ERR_FORMAT || st == DT_ERR_IO,
		      "unexpected status from the safetensors reader");
	dt_fuzz_check(st == DT_OK || err.msg[0] != '\0',
		      "refused without a message");
	free(dst);
	dt_ck_rclose(&r);
	return st == DT_OK;
}

/* dt_ckpt_import into targets made from h (read from path). */
static void
import_as_listed(const char *path, const struct dt_ck_header *h,
		 int whole_ok)
{
	struct dt_ckpt_target *t = calloc(h->n ? h->n : 1, sizeof *t);
	struct dt_error err;
	enum dt_status st;

	dt_fuzz_check(t != NULL, "out of memory");
	for (size_t i = 0; i < h->n; i++) {
		const struct dt_ck_entry *e = &h->t[i];

		t[i].name = e->name;
		t[i].n_dims = e->n_dims;
		memcpy(t[i].shape, e->shape, sizeof t[i].shape);
		t[i].data = malloc(e->end > e->begin ?
				   (size_t)(e->end - e->begin) : 1);
		dt_fuzz_check(t[i].data != NULL, "out of memory");
	}
	st = dt_ckpt_import(path, t, h->n, &err);
	dt_fuzz_check((st == DT_OK) == whole_ok,
		      "dt_ckpt_import disagrees with the plain read");
	for (size_t i = 0; i < h->n; i++)
		free(t[i].data);
	free(t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dt_ck_header h = { 0 };
	const char *path;
	int gz, require_crc, ok;

	if (size < 1)
		return 0;
	gz = data[0] & 1;
	require_crc = (data[0] >> 1) & 1;
	path = dt_fuzz_file(0, data + 1, size - 1);
	ok = read_whole(path, gz, require_crc, &h);
	if (!gz && h.n > 0 && h.data_size <= (int64_t)size) {
		struct dt_ck_header h2 = { 0 };
		int ok2 = require_crc ? read_whole(path, 0, 0, &h2) : ok;

		import_as_listed(path, &h, ok2);
		dt_ck_header_fini(&h2);
	}
	dt_ck_header_fini(&h);
	return 0;
}
