/* SPDX-License-Identifier: MIT */
/* fuzz_ckpt_meta.c - a checkpoint's meta.json (dt_ck_meta_decode).
 *
 * Any text must decode or fail with DT_ERR_FORMAT and a message. What
 * decodes must be metadata a save accepts (dt_ck_meta_check: a resumed
 * run saves it again), and its encoding must decode to the same values,
 * bit for bit. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt_priv.h"
#include "util/status.h"

static int
same_meta(const struct dt_ckpt_meta *a, const struct dt_ckpt_meta *b)
{
	if (a->step != b->step || a->epoch != b->epoch ||
	    a->epoch_samples != b->epoch_samples ||
	    a->optim_steps != b->optim_steps || a->seed != b->seed ||
	    a->world_size != b->world_size || a->dp_size != b->dp_size ||
	    a->pp_size != b->pp_size || a->tp_size != b->tp_size ||
	    a->n_extra != b->n_extra ||
	    strcmp(a->job_text ? a->job_text : "",
		   b->job_text ? b->job_text : "") != 0)
		return 0;
	for (size_t i = 0; i < a->n_extra; i++) {
		const struct dt_ckpt_scalar *x = &a->extra[i], *y = &b->extra[i];

		if (strcmp(x->key, y->key) != 0 || x->type != y->type ||
		    (x->type == DT_CKPT_INT64 && x->i != y->i) ||
		    (x->type == DT_CKPT_DOUBLE &&
		     memcmp(&x->d, &y->d, sizeof x->d) != 0))
			return 0;
	}
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The decoder wants a NUL after the text, as read_small leaves. */
	char *text = malloc(size + 1);
	struct dt_ckpt_meta m, again;
	struct dt_error err;
	enum dt_status st;

	dt_fuzz_check(text != NULL, "out of memory");
	memcpy(text, data, size);
	text[size] = '\0';
	dt_error_clear(&err);
	st = dt_ck_meta_decode(text, size, &m, &err);
	dt_fuzz_check(st == DT_OK || (st == DT_ERR_FORMAT &&
				      err.msg[0] != '\0'),
		      "meta.json refused without DT_ERR_FORMAT and a message");
	if (st == DT_OK) {
		char *enc;

		st = dt_ck_meta_check(&m, &err);
		dt_fuzz_check(st == DT_OK, "a decoded meta.json fails "
			      "dt_ck_meta_check");
		enc = dt_ck_meta_encode(&m);
		st = dt_ck_meta_decode(enc, strlen(enc), &again, &err);
		dt_fuzz_check(st == DT_OK, "an encoded meta.json does not "
			      "decode");
		dt_fuzz_check(same_meta(&m, &again), "meta.json does not "
			      "round-trip");
		dt_ckpt_meta_fini(&again);
		free(enc);
	}
	dt_ckpt_meta_fini(&m);
	free(text);
	return 0;
}
