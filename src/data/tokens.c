/* SPDX-License-Identifier: MIT */
/* tokens.c - language-model data: a flat file of little-endian uint16 or
 * uint32 token ids (the layout nanoGPT's prepare.py writes with
 * np.array(ids, dtype=np.uint16).tofile), cut into windows of `context`
 * tokens whose targets are the following tokens. A plain file is mapped
 * read-only, so every rank on a node shares one copy in the page cache. */
#include "data/data.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "data/data_priv.h"
#include "util/alloc.h"
#include "util/endian.h"

static long long
ll(int64_t v)
{
	return (long long)v;
}

static int64_t
token_at(const struct dt_token_data *td, int64_t i)
{
	if (td->elem_size == 2)
		return ((const uint16_t *)td->tokens)[i];
	return ((const uint32_t *)td->tokens)[i];
}

enum dt_status
dt_tokens_window(struct dt_token_data *td, const char *path, int64_t context,
		 int64_t stride, struct dt_error *err)
{
	assert(context >= 1 && stride >= 0);
	if (stride == 0)
		stride = context;
	td->context = context;
	td->stride = stride;
	if (td->n_tokens < context + 1)
		return dt_errorf(err, DT_ERR_DATA, "%s: %lld tokens, too few "
				 "for one sample of context %lld (needs %lld)",
				 path, ll(td->n_tokens), ll(context),
				 ll(context + 1));
	td->n = (td->n_tokens - context - 1) / stride + 1;
	return DT_OK;
}

enum dt_status
dt_tokens_window_inputs(struct dt_token_data *td, const char *path,
			int64_t context, int64_t stride, struct dt_error *err)
{
	assert(context >= 1 && stride >= 0);
	if (stride == 0)
		stride = context;
	if (td->n_tokens < context)
		return dt_errorf(err, DT_ERR_DATA, "%s: %lld tokens, too few "
				 "for one input of context %lld", path,
				 ll(td->n_tokens), ll(context));
	td->context = context;
	td->stride = stride;
	td->n = (td->n_tokens - context) / stride + 1;
	return DT_OK;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_IS_LE 0
#else
#define HOST_IS_LE 1
#endif

enum dt_status
dt_tokens_load(const char *path, int elem_size, int64_t vocab_size,
	       int64_t context, int64_t stride, struct dt_token_data *td,
	       struct dt_error *err)
{
	struct dt_blob b;
	int64_t max = -1;
	enum dt_status st;

	assert(elem_size == 2 || elem_size == 4);
	assert(vocab_size >= 0 && context >= 1 && stride >= 0);
	memset(td, 0, sizeof *td);
	/* A big-endian host must swap the ids, so it cannot map them. */
	st = dt_blob_read(path, HOST_IS_LE, &b, err);
	if (st != DT_OK)
		return st;
	if (b.n == 0) {
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte 0: empty token "
			       "file", path);
		goto fail;
	}
	if (b.n % (size_t)elem_size != 0) {
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: the file ends "
			       "inside a token: %zu bytes is not a multiple of "
			       "%d (uint%d tokens); is the file cut short, or "
			       "the token type wrong?", path,
			       b.n - b.n % (size_t)elem_size, b.n, elem_size,
			       8 * elem_size);
		goto fail;
	}
	dt_le_to_host(b.p, (size_t)elem_size, b.n / (size_t)elem_size);
	td->elem_size = elem_size;
	td->n_tokens = (int64_t)(b.n / (size_t)elem_size);
	td->tokens = b.p;
	for (int64_t i = 0; i < td->n_tokens; i++) {
		int64_t t = token_at(td, i);

		if (vocab_size > 0 && t >= vocab_size) {
			st = dt_errorf(err, DT_ERR_DATA, "%s: byte %lld: token "
				       "%lld (index %lld) is not below "
				       "vocab_size %lld", path,
				       ll(i * elem_size), ll(t), ll(i),
				       ll(vocab_size));
			goto fail;
		}
		if (t > INT32_MAX) {
			st = dt_errorf(err, DT_ERR_DATA, "%s: byte %lld: token "
				       "%lld (index %lld) is above %d, the "
				       "largest id dtrain handles", path,
				       ll(i * elem_size), ll(t), ll(i),
				       INT32_MAX);
			goto fail;
		}
		if (t > max)
			max = t;
	}
	td->vocab_size = vocab_size > 0 ? vocab_size : max + 1;
	st = dt_tokens_window(td, path, context, stride, err);
	if (st != DT_OK)
		goto fail;
	td->owned = b.p;
	td->owned_len = b.n;
	td->mapped = b.mapped;
	return DT_OK;
fail:
	dt_blob_fini(&b);
	memset(td, 0, sizeof *td);
	return st;
}

void
dt_tokens_fini(struct dt_token_data *td)
{
	if (td == NULL)
		return;
	dt_tokens_shards_fini(td);
	if (td->mapped)
		munmap(td->owned, td->owned_len);
	else
		free(td->owned);
	memset(td, 0, sizeof *td);
}

void
dt_tokens_gather(const struct dt_token_data *td, const int64_t *idx,
		 int64_t count, int32_t *x, int32_t *y)
{
	const int64_t c = td->context;

	if (td->shards != NULL) {
		dt_tokens_shards_gather(td, idx, count, x, y);
		return;
	}
	for (int64_t k = 0; k < count; k++) {
		int64_t start = idx[k] * td->stride;

		assert(idx[k] >= 0 && idx[k] < td->n);
		for (int64_t j = 0; j < c; j++)
			x[k * c + j] = (int32_t)token_at(td, start + j);
		if (y == NULL)
			continue;
		for (int64_t j = 0; j < c; j++)
			y[k * c + j] = (int32_t)token_at(td, start + j + 1);
	}
}
