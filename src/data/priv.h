/* priv.h - what the format readers of src/data/ share; nothing outside
 * src/data/ includes it.
 *
 *   blob.c    a whole file in memory: inflated (gzip), read, or mapped
 *   tokens.c  cutting a token stream into samples (also used by text.c) */
#ifndef DT_DATA_PRIV_H
#define DT_DATA_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "data/data.h"
#include "util/status.h"

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

#endif
