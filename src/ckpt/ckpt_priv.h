/* SPDX-License-Identifier: MIT */
/* ckpt_priv.h - what the files of src/ckpt/ share and nobody else uses: files
 * written and read with a running size and CRC-32 (optionally through
 * gzip), the safetensors header and data streams, and the two JSON files
 * of a checkpoint (meta.json, MANIFEST.json). */
#ifndef DT_CKPT_PRIV_H
#define DT_CKPT_PRIV_H

#include <stdint.h>

#include <json.h>
#include <zlib.h>

#include "ckpt/ckpt.h"
#include "util/status.h"

#define DT_CK_PATH_MAX 4096
#define DT_CK_PARAMS "params.safetensors"
#define DT_CK_OPTIM "optim.safetensors"
#define DT_CK_OPTIM_GZ "optim.safetensors.gz"
#define DT_CK_META "meta.json"
#define DT_CK_MANIFEST "MANIFEST.json"
#define DT_CK_FORMAT_VERSION 1
/* Largest safetensors header accepted (the reference reader's limit). */
#define DT_CK_HEADER_MAX ((int64_t)100 << 20)
/* Largest meta.json / MANIFEST.json accepted: the job text is in meta. */
#define DT_CK_JSON_MAX ((int64_t)64 << 20)

/* ---- files with a running size and CRC-32 (io.c) ----------------------- */

/* A file being written. size and crc cover the bytes on disk (after gzip
 * when gz is set). A failed write records the path and errno in the error;
 * the caller removes the file (or its temporary directory). */
struct dt_ck_wfile {
	int fd;
	char path[DT_CK_PATH_MAX];
	int64_t size;
	uint32_t crc;
	int gz;
	z_stream z;
	unsigned char *zbuf;
};

/* Creates path (O_EXCL: it must not exist). DT_ERR_IO naming the path. */
enum dt_status dt_ck_wopen(struct dt_ck_wfile *w, const char *path, int gz,
			   struct dt_error *err);
/* Appends n bytes. DT_ERR_IO naming the path and the errno. */
enum dt_status dt_ck_write(struct dt_ck_wfile *w, const void *p, size_t n,
			   struct dt_error *err);
/* Appends n floats as little-endian bytes. */
enum dt_status dt_ck_write_f32(struct dt_ck_wfile *w, const float *p,
			       size_t n, struct dt_error *err);
/* Finishes the gzip stream, fsyncs and closes; size and crc are final.
 * Always closes the descriptor. */
enum dt_status dt_ck_wclose(struct dt_ck_wfile *w, struct dt_error *err);
/* Closes without flushing, after an error. */
void dt_ck_wabort(struct dt_ck_wfile *w);

/* A file being read. label names it in messages ("params.safetensors").
 * raw_size and crc cover the bytes read from disk; pos counts the bytes
 * handed out (after gunzip when gz is set). */
struct dt_ck_rfile {
	int fd;
	char label[DT_CK_PATH_MAX];
	int64_t file_size;
	int64_t raw_size;
	int64_t pos;
	uint32_t crc;
	int gz;
	int z_done;
	z_stream z;
	unsigned char *zbuf;
};

/* Opens path for reading. DT_ERR_IO "LABEL: cannot open: ..." */
enum dt_status dt_ck_ropen(struct dt_ck_rfile *r, const char *path,
			   const char *label, int gz, struct dt_error *err);
/* Reads exactly n bytes into p. DT_ERR_FORMAT at an early end of file or
 * bad gzip data, naming the byte offset; DT_ERR_IO if read(2) fails. */
enum dt_status dt_ck_read(struct dt_ck_rfile *r, void *p, size_t n,
			  struct dt_error *err);
/* Checks that nothing follows what was read (the gzip stream ends exactly
 * there, and nothing follows it) and reads the file to its end, so that
 * raw_size and crc cover the whole file. DT_ERR_FORMAT otherwise. */
enum dt_status dt_ck_rfinish(struct dt_ck_rfile *r, struct dt_error *err);
/* Closes; accepts a file whose open failed. */
void dt_ck_rclose(struct dt_ck_rfile *r);

/* Writes data (n bytes) to a new file at path, fsyncs and closes it;
 * *size and *crc describe what was written. */
enum dt_status dt_ck_write_file(const char *path, const void *data,
				size_t n, int64_t *size, uint32_t *crc,
				struct dt_error *err);
/* Removes path and everything under it, without following symbolic links.
 * Returns 0, or -1 with errno set (ENOENT counts as success). */
int dt_ck_rm_tree(const char *path);

/* ---- safetensors (safetensors.c) ---------------------------------------- */

/* One tensor as described by a header. */
struct dt_ck_entry {
	char name[DT_CKPT_NAME_MAX];
	int n_dims;
	int64_t shape[DT_CKPT_MAX_DIMS];
	int64_t begin, end;	/* data_offsets: bytes after the header */
	int has_crc;
	uint32_t crc;
};

/* A parsed header: entries sorted by offset, covering [0, data_size). */
struct dt_ck_header {
	struct dt_ck_entry *t;
	size_t n;
	int64_t data_size;
};

/* Checks a tensor list for writing: n >= min_n, names, shapes, uniqueness.
 * DT_ERR_FORMAT "what: ..." naming the tensor. */
enum dt_status dt_ck_check_tensors(const struct dt_ckpt_tensor *t, size_t n,
				   size_t min_n, int fetched,
				   const char *what, struct dt_error *err);
/* Where a saved tensor's data is NULL: the caller's fetch (ckpt.h,
 * dt_ckpt_fetch_fn) for file `file` (0 the parameters, 1 the optimizer
 * state). */
struct dt_ck_fetch {
	dt_ckpt_fetch_fn *fn;
	void *ctx;
	int file;
};
/* Writes a whole safetensors file (header with crc32 metadata, then the
 * data) to w. The tensors must have passed dt_ck_check_tensors. A tensor
 * whose data is NULL is fetched from src (not NULL then) twice, piece by
 * piece (DT_CKPT_STREAM_FLOATS): once for its CRC-32 before the header,
 * once for its bytes after it, in list order both times; a failure stops
 * the fetches and is returned. */
enum dt_status dt_ck_st_write(struct dt_ck_wfile *w,
			      const struct dt_ckpt_tensor *t, size_t n,
			      const struct dt_ck_fetch *src,
			      struct dt_error *err);
/* Writes a safetensors header for n tensors (name, n_dims, shape and crc
 * of each entry; data_offsets follow from the shapes, contiguous in this
 * order) with dtrain's crc32 metadata; the data is the caller's to write
 * after it. */
enum dt_status dt_ck_st_write_header(struct dt_ck_wfile *w,
				     const struct dt_ck_entry *t, size_t n,
				     struct dt_error *err);
/* Reads and checks a header. require_crc: every tensor must carry a crc32
 * entry. On error *h is empty. */
enum dt_status dt_ck_st_read_header(struct dt_ck_rfile *r, int require_crc,
				    struct dt_ck_header *h,
				    struct dt_error *err);
/* Reads the data of every entry of h, in order, into dst[i] (h->n
 * pointers; NULL discards), checking each crc32 the header carries. */
enum dt_status dt_ck_st_read_data(struct dt_ck_rfile *r,
				  const struct dt_ck_header *h,
				  float *const *dst, struct dt_error *err);
void dt_ck_header_fini(struct dt_ck_header *h);

/* Whether s ends with tail. */
int dt_ck_ends_with(const char *s, const char *tail);

/* Whether name is a span's, "ARRAY[LO:HI]" (LO >= 0, HI > LO, the last
 * '[' opening it): then 1, with ARRAY's length in *len and [lo, hi);
 * else 0 and the outputs unspecified. */
int dt_ck_span_parse(const char *name, size_t *len, int64_t *lo,
		     int64_t *hi);

/* Matches entry e of file label to the one of the targets t (n) with its
 * name and shape, not seen before (seen: n flags, set for it); its index
 * into *j. DT_ERR_FORMAT "LABEL: ..." for a tensor the model does not
 * have, one seen in another file, or another shape. */
enum dt_status dt_ck_match_target(const char *label,
				  const struct dt_ck_entry *e,
				  const struct dt_ckpt_target *t, size_t n,
				  unsigned char *seen, size_t *j,
				  struct dt_error *err);

/* Matches h against the caller's targets (by name, with shapes) and fills
 * dst (h->n pointers) with the target buffers. DT_ERR_FORMAT "LABEL: ..." */
enum dt_status dt_ck_match(const struct dt_ck_header *h, const char *label,
			   const struct dt_ckpt_target *t, size_t n,
			   float **dst, struct dt_error *err);

/* ---- meta.json and MANIFEST.json (meta.c) ------------------------------- */

#define DT_CK_MAX_FILES (DT_CKPT_SHARD_FILES_MAX + 16)

struct dt_ck_file {
	char name[64];
	int64_t size;
	uint32_t crc;
};

struct dt_ck_manifest {
	int64_t step;
	size_t n;
	struct dt_ck_file f[DT_CK_MAX_FILES];
};

/* The manifest of the checkpoint at path into a heap *man (free it),
 * allocated also on error. DT_ERR_FORMAT or DT_ERR_IO "MANIFEST.json:
 * ...". */
enum dt_status dt_ck_read_manifest(const char *path,
				   struct dt_ck_manifest **man,
				   struct dt_error *err);

/* Checks meta for saving. DT_ERR_FORMAT naming the field. */
enum dt_status dt_ck_meta_check(const struct dt_ckpt_meta *m,
				struct dt_error *err);
/* meta.json text (heap, NUL-terminated) for m; m must have passed
 * dt_ck_meta_check. */
char *dt_ck_meta_encode(const struct dt_ckpt_meta *m);
/* Parses meta.json text (len bytes) into *m (heap copies). DT_ERR_FORMAT
 * "meta.json: ..." with *m zeroed. */
enum dt_status dt_ck_meta_decode(const char *text, size_t len,
				 struct dt_ckpt_meta *m, struct dt_error *err);

char *dt_ck_manifest_encode(const struct dt_ck_manifest *man);
enum dt_status dt_ck_manifest_decode(const char *text, size_t len,
				     struct dt_ck_manifest *man,
				     struct dt_error *err);

/* Parses one JSON value from text (len bytes, NUL at text[len]) that must
 * be followed by nothing but whitespace. DT_ERR_FORMAT "LABEL: ...". */
enum dt_status dt_ck_json_parse(const char *text, size_t len,
				const char *label, struct json_object **out,
				struct dt_error *err);
/* An integer member that fits int64_t exactly. */
int dt_ck_json_int64(struct json_object *v, int64_t *out);
/* 8 lowercase or uppercase hex digits. */
int dt_ck_parse_crc(const char *s, uint32_t *out);

#endif
