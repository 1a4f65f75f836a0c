/* SPDX-License-Identifier: MIT */
/* bpe_files.c - a byte-level BPE (bpe.h) over files: learning from a text
 * file, encoding one into ids, writing the ids as a token file (flat
 * little-endian uint16 or uint32, the format tokens.c reads) and decoding
 * a token file back into the bytes it stands for; the encoded text kept
 * in the download cache. */
#include "data/bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/bpe_priv.h"
#include "data/data_priv.h"
#include "data/fetch.h"
#include "util/alloc.h"
#include "util/endian.h"
#include "util/fileio.h"

enum dt_status
dt_bpe_trainer_feed_file(struct dt_bpe_trainer *t, const char *path,
			 struct dt_error *err)
{
	struct dt_blob blob;
	enum dt_status st = dt_blob_read(path, 1, &blob, err);

	if (st != DT_OK)
		return st;
	st = dt_bpe_trainer_feed(t, blob.p, blob.n, err);
	if (st != DT_OK)
		dt_error_prefix(err, "%s: ", path);
	dt_blob_fini(&blob);
	return st;
}

enum dt_status
dt_bpe_encode_file(struct dt_bpe *b, const char *path, int32_t **ids,
		   int64_t *n_ids, struct dt_error *err)
{
	struct dt_blob blob;
	enum dt_status st = dt_blob_read(path, 1, &blob, err);

	*ids = NULL;
	*n_ids = 0;
	if (st != DT_OK)
		return st;
	*ids = dt_xmalloc(blob.n + 1, sizeof **ids);
	st = dt_bpe_encode(b, blob.p, blob.n, *ids, n_ids, err);
	dt_blob_fini(&blob);
	if (st != DT_OK) {
		dt_error_prefix(err, "%s: ", path);
		free(*ids);
		*ids = NULL;
		*n_ids = 0;
		return st;
	}
	*ids = dt_xrealloc(*ids, (size_t)*n_ids + 1, sizeof **ids);
	return DT_OK;
}

int
dt_bpe_token_width(const struct dt_bpe *b)
{
	return dt_bpe_size(b) <= 65536 ? 2 : 4;
}

struct token_out {
	const int32_t *ids;	/* (n) */
	int64_t n;
	int width;
};

static enum dt_status
put_tokens(FILE *out, void *ctx, struct dt_error *err)
{
	const struct token_out *t = ctx;
	unsigned char buf[4096];
	size_t k = 0;

	for (int64_t i = 0; i < t->n; i++) {
		dt_le_put(buf + k, (uint64_t)t->ids[i], t->width);
		k += (size_t)t->width;
		if (k == sizeof buf || i + 1 == t->n) {
			if (fwrite(buf, 1, k, out) != k)
				return dt_errorf(err, DT_ERR_IO, "write failed");
			k = 0;
		}
	}
	return DT_OK;
}

enum dt_status
dt_bpe_write_tokens(const struct dt_bpe *b, const int32_t *ids, int64_t n,
		    const char *path, struct dt_error *err)
{
	struct token_out t = { ids, n, dt_bpe_token_width(b) };

	return dt_file_write_atomic(path, put_tokens, &t, err);
}

struct decode_out {
	const struct dt_bpe *b;
	const struct dt_blob *blob;
	int width;
};

static enum dt_status
put_bytes(FILE *out, void *ctx, struct dt_error *err)
{
	const struct decode_out *d = ctx;

	for (size_t at = 0; at < d->blob->n; at += (size_t)d->width) {
		const unsigned char *p;
		int64_t id = (int64_t)dt_le_get(d->blob->p + at, d->width);
		size_t len = dt_bpe_piece(d->b, id, &p);

		if (fwrite(p, 1, len, out) != len)
			return dt_errorf(err, DT_ERR_IO, "write failed");
	}
	return DT_OK;
}

enum dt_status
dt_bpe_decode_file(const struct dt_bpe *b, const char *tokens,
		   const char *out, struct dt_error *err)
{
	struct dt_blob blob;
	struct decode_out d = { b, &blob, dt_bpe_token_width(b) };
	enum dt_status st = dt_blob_read(tokens, 1, &blob, err);

	if (st != DT_OK)
		return st;
	if (blob.n % (size_t)d.width != 0)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: the file ends "
			       "inside a token (%d bytes each for a tokenizer "
			       "of %lld ids)", tokens,
			       blob.n - blob.n % (size_t)d.width, d.width,
			       (long long)dt_bpe_size(b));
	for (size_t at = 0; st == DT_OK && at < blob.n; at += (size_t)d.width) {
		uint64_t id = dt_le_get(blob.p + at, d.width);

		if (id >= (uint64_t)dt_bpe_size(b))
			st = dt_errorf(err, DT_ERR_DATA, "%s: byte %zu: token "
				       "%llu is not below the tokenizer's size "
				       "%lld", tokens, at,
				       (unsigned long long)id,
				       (long long)dt_bpe_size(b));
	}
	if (st == DT_OK)
		st = dt_file_write_atomic(out, put_bytes, &d, err);
	dt_blob_fini(&blob);
	return st;
}

/* The cache file of the text at path: CACHE/bpe-T-X.tok into buf. */
static enum dt_status
cache_file(const struct dt_bpe *b, const char *path, char *buf, size_t size,
	   struct dt_error *err)
{
	char dir[DT_FILE_PATH_MAX], hex[65];
	enum dt_status st = dt_fetch_cache_dir(NULL, dir, sizeof dir, err);
	int n;

	if (st == DT_OK)
		st = dt_sha256_file(path, hex, err);
	if (st != DT_OK)
		return st;
	n = snprintf(buf, size, "%s/bpe-%.16s-%.16s.tok", dir,
		     dt_bpe_digest(b), hex);
	if (n < 0 || (size_t)n >= size)
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", dir);
	return DT_OK;
}

enum dt_status
dt_bpe_text_encode(struct dt_bpe *b, const char *path, int64_t context,
		   int64_t stride, struct dt_token_data *td,
		   struct dt_error *err)
{
	char cache[DT_FILE_PATH_MAX];
	int width = dt_bpe_token_width(b);
	int32_t *ids;
	int64_t n;
	struct dt_error skip;
	enum dt_status st;

	memset(td, 0, sizeof *td);
	if (dt_bpe_digest(b)[0] == '\0' ||
	    cache_file(b, path, cache, sizeof cache, &skip) != DT_OK)
		cache[0] = '\0';
	if (cache[0] != '\0' && access(cache, R_OK) == 0)
		return dt_tokens_load(cache, width, dt_bpe_size(b), context,
				      stride, td, err);
	st = dt_bpe_encode_file(b, path, &ids, &n, err);
	if (st != DT_OK)
		return st;
	if (n == 0) {
		free(ids);
		return dt_errorf(err, DT_ERR_DATA, "%s: empty text", path);
	}
	if (cache[0] != '\0' &&
	    dt_bpe_write_tokens(b, ids, n, cache, &skip) == DT_OK) {
		free(ids);
		return dt_tokens_load(cache, width, dt_bpe_size(b), context,
				      stride, td, err);
	}
	/* no cache: the ids in memory, narrowed to the file's width */
	if (width == 2) {
		uint16_t *narrow = dt_xmalloc((size_t)n, sizeof *narrow);

		for (int64_t i = 0; i < n; i++)
			narrow[i] = (uint16_t)ids[i];
		free(ids);
		td->owned = narrow;
	} else {
		td->owned = ids;
	}
	td->tokens = td->owned;
	td->n_tokens = n;
	td->elem_size = width;
	td->vocab_size = dt_bpe_size(b);
	td->owned_len = (size_t)n * (size_t)width;
	st = dt_tokens_window(td, path, context, stride, err);
	if (st != DT_OK)
		dt_tokens_fini(td);
	return st;
}
