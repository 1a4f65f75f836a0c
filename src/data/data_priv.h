/* SPDX-License-Identifier: MIT */
/* data_priv.h - what the format readers of src/data/ share; nothing outside
 * src/data/ includes it.
 *
 *   blob.c    a whole file in memory: inflated (gzip), read, or mapped
 *   tokens.c  cutting a token stream into samples (also used by text.c)
 *   shards.c  token data over many mapped files
 *   header.c  one HTTP response header line (for fetch.c; fuzzed alone)
 *   digest.c  the sha256 of a file, cached per version (uses fetch.c's
 *             cache directory) */
#ifndef DT_DATA_PRIV_H
#define DT_DATA_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "data/data.h"
#include "data/fetch.h"
#include "util/status.h"

/* Unmaps and frees a sharded td's shards (dt_tokens_fini calls it). */
void dt_tokens_shards_fini(struct dt_token_data *td);
/* dt_tokens_gather for a sharded td. */
void dt_tokens_shards_gather(const struct dt_token_data *td,
			     const int64_t *idx, int64_t count, int32_t *x,
			     int32_t *y);

/* The bytes of one file (decompressed when it is gzip). */
struct dt_blob {
	unsigned char *p;	/* (n) bytes; NULL when n == 0 */
	size_t n;
	int mapped;		/* p is an mmap of the file */
};

/* Reads path into b. A gzip file (magic 1f 8b) is inflated through zlib;
 * any other file is mapped read-only when may_map is nonzero, read into
 * memory otherwise. Memory grows with the bytes that actually arrive.
 * Errors: DT_ERR_IO "PATH: cannot open: ..." or a read error;
 * DT_ERR_FORMAT "PATH: byte N: truncated gzip stream ..." or "corrupt gzip
 * stream ...". On error *b is empty. */
enum dt_status dt_blob_read(const char *path, int may_map, struct dt_blob *b,
			    struct dt_error *err);
/* Unmaps or frees b and empties it; accepts an empty b. */
void dt_blob_fini(struct dt_blob *b);
/* Takes the memory of a read (not mapped) blob: returns b->p and empties
 * b; the caller frees it. */
unsigned char *dt_blob_take(struct dt_blob *b);

/* Fills td->context, stride and n for a token stream already in td
 * (n_tokens, elem_size, tokens), or fails with DT_ERR_DATA "PATH: N
 * tokens, too few for one sample of context C (needs C + 1)". stride 0
 * means context. */
enum dt_status dt_tokens_window(struct dt_token_data *td, const char *path,
				int64_t context, int64_t stride,
				struct dt_error *err);

/* What the header lines of the latest HTTP response said (RFC 9110). A
 * status line resets every field but status and reason, so a redirect's
 * headers never leak into the next response's. Zeroed before the first
 * line (as fetch.c's memset leaves it). */
struct dt_fetch_header {
	long status;		/* "HTTP/1.1 206 ...": 206; -1 if unreadable */
	char reason[96];	/* "Partial Content", cut to fit */
	int64_t content_length;	/* -1 = not sent */
	int64_t range_start;	/* Content-Range: bytes START-..., or -1 */
	int64_t range_total;	/* Content-Range: .../TOTAL, or -1 */
	long retry_after_s;	/* Retry-After: SECONDS (<= 86400), or -1 */
	char etag[128];		/* ETag (strong only), or "" */
	char last_modified[64];	/* Last-Modified, or "" */
	int chunked;		/* Transfer-Encoding names chunked: the
				 * body's end is marked (RFC 9112 7.1) */
};

/* Reads one header line (len bytes at line, not NUL-terminated, with or
 * without its CR LF; only its first 255 bytes are looked at) into *h: a
 * status line, ETag, Last-Modified, Content-Length, Retry-After (seconds
 * only, bounded to a day so that the wait in milliseconds cannot
 * overflow) or Content-Range; any other line leaves *h as it was. A
 * number that is missing or above INT64_MAX - 8 reads as -1. Never
 * fails; keeps no pointer into line. */
void dt_fetch_parse_header_line(struct dt_fetch_header *h, const char *line,
				size_t len);

/* The cache directory (fetch.h, dt_fetch_opts.cache_dir) into dir (size
 * bytes): DT_ERR_IO when none can be found (no $HOME), DT_ERR_USAGE when
 * it does not fit. Creates nothing. */
enum dt_status dt_fetch_cache_path(const struct dt_fetch_opts *o, char *dir,
				   size_t size, struct dt_error *err);
/* mkdir -p dir; DT_ERR_IO naming the part that cannot be made. */
enum dt_status dt_fetch_make_dirs(const char *dir, struct dt_error *err);

#endif
