/* SPDX-License-Identifier: MIT */
/* idx.c - the IDX reader (the MNIST family's format, described by LeCun,
 * Cortes and Burges at http://yann.lecun.com/exdb/mnist/):
 *
 *   byte 0, 1   zero
 *   byte 2      element type: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32,
 *               0x0D f32, 0x0E f64
 *   byte 3      number of dimensions
 *   byte 4..    one big-endian u32 per dimension
 *   then        the elements, big-endian, row-major
 *
 * Everything goes through zlib's gz* interface, which reads gzip and plain
 * files alike, so every offset in a message counts bytes of the
 * decompressed stream. A header is not trusted with memory: the body buffer
 * grows as data actually arrives, so a file that promises terabytes and
 * holds four bytes fails with "truncated" instead of exhausting memory. */
#include "data/data.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "util/alloc.h"
#include "util/endian.h"
#include "util/gz.h"
#include "util/meter.h"

/* Bytes asked of gzread per call: small enough that an error offset is
 * close to the spot, and at least twice zlib's input buffer (GZ_BUFFER) so
 * that zlib inflates or copies straight into our buffer. */
#define READ_CHUNK ((size_t)1 << 16)
#define GZ_BUFFER (1 << 15)
/* The body buffer starts at most this big and doubles as data arrives. */
#define FIRST_ALLOC ((size_t)64 << 20)

/* An open IDX stream and how far into it we are. */
struct reader {
	gzFile f;
	const char *path;
	int64_t off;		/* decompressed bytes delivered so far */
};

static long long
ll(int64_t v)
{
	return (long long)v;
}

/* Turns the stream's zlib error state, if any, into a status. Called after
 * every short read: zlib reports a truncated or corrupt stream through
 * gzerror, not through the return value alone. */
static enum dt_status
check_stream(struct reader *r, struct dt_error *err)
{
	return dt_gz_read_status(r->f, r->path, r->off, errno,
				 "zlib found it reading on from this byte; "
				 "fetch the file again", err);
}

/* Reads up to len bytes into buf; *got says how many came. A short count
 * with DT_OK means a clean end of stream. */
static enum dt_status
read_some(struct reader *r, void *buf, size_t len, size_t *got,
	  struct dt_error *err)
{
	unsigned char *p = buf;

	*got = 0;
	while (*got < len) {
		size_t want = len - *got;
		int n;

		if (want > READ_CHUNK)
			want = READ_CHUNK;
		n = gzread(r->f, p + *got, (unsigned)want);
		if (n < 0)
			return check_stream(r, err);
		*got += (size_t)n;
		r->off += n;
		dt_meter_update((int64_t)gzoffset(r->f));
		if (n == 0)
			return check_stream(r, err);
	}
	return DT_OK;
}

static uint32_t
be32(const unsigned char *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

static size_t
type_size(int type)
{
	switch (type) {
	case 0x08: return 1;	/* unsigned byte */
	case 0x09: return 1;	/* signed byte */
	case 0x0B: return 2;	/* short */
	case 0x0C: return 4;	/* int */
	case 0x0D: return 4;	/* float */
	case 0x0E: return 8;	/* double */
	}
	return 0;
}

/* Checks the 4-byte magic and the dimensions, filling idx->type, n_dims,
 * dims and elem_size, and *body with the promised body size in bytes. */
static enum dt_status
read_header(struct reader *r, struct dt_idx *idx, uint64_t *body,
	    struct dt_error *err)
{
	unsigned char magic[4], dimb[16];
	uint64_t bytes;
	size_t got;
	enum dt_status st;

	st = read_some(r, magic, sizeof magic, &got, err);
	if (st != DT_OK)
		return st;
	if (got < sizeof magic)
		return dt_errorf(err, DT_ERR_FORMAT,
				 "%s: byte %lld: truncated header: the file "
				 "ends inside the 4-byte magic", r->path,
				 ll(r->off));
	if (magic[0] != 0 || magic[1] != 0)
		return dt_errorf(err, DT_ERR_FORMAT,
				 "%s: byte %d: bad magic 0x%02x%02x%02x%02x: "
				 "an IDX file starts with two zero bytes "
				 "(is this an IDX file?)", r->path,
				 magic[0] != 0 ? 0 : 1, magic[0], magic[1],
				 magic[2], magic[3]);
	idx->type = magic[2];
	idx->elem_size = type_size(idx->type);
	if (idx->elem_size == 0)
		return dt_errorf(err, DT_ERR_FORMAT,
				 "%s: byte 2: unknown element type 0x%02X, "
				 "expected one of 0x08 (u8), 0x09 (i8), "
				 "0x0B (i16), 0x0C (i32), 0x0D (f32), "
				 "0x0E (f64)", r->path, magic[2]);
	idx->n_dims = magic[3];
	if (idx->n_dims < 1 || idx->n_dims > 4)
		return dt_errorf(err, DT_ERR_FORMAT,
				 "%s: byte 3: %d dimensions, expected 1 to 4",
				 r->path, idx->n_dims);

	st = read_some(r, dimb, 4 * (size_t)idx->n_dims, &got, err);
	if (st != DT_OK)
		return st;
	if (got < 4 * (size_t)idx->n_dims)
		return dt_errorf(err, DT_ERR_FORMAT,
				 "%s: byte %lld: truncated header: expected "
				 "%d dimension sizes (bytes 4 to %d), the file "
				 "ends after %zu of those bytes", r->path,
				 ll(r->off), idx->n_dims,
				 3 + 4 * idx->n_dims, got);

	/* The size is checked in unsigned 64-bit, one factor at a time, so
	 * the first dimension that overflows is the one named. */
	bytes = idx->elem_size;
	for (int i = 0; i < idx->n_dims; i++) {
		uint32_t d = be32(dimb + 4 * i);

		if (d == 0)
			return dt_errorf(err, DT_ERR_FORMAT,
					 "%s: byte %d: dimension %d is 0, "
					 "expected > 0", r->path, 4 + 4 * i, i);
		if (bytes > (uint64_t)INT64_MAX / d ||
		    bytes * d > (uint64_t)SIZE_MAX)
			return dt_errorf(err, DT_ERR_FORMAT,
					 "%s: byte %d: dimension %d (%" PRIu32
					 ") makes the data larger than this "
					 "machine can address", r->path,
					 4 + 4 * i, i, d);
		bytes *= d;
		idx->dims[i] = d;
	}
	*body = bytes;
	return DT_OK;
}

/* Reads exactly body bytes into a fresh buffer (*out, caller frees), or
 * fails naming how many came. */
static enum dt_status
read_body(struct reader *r, uint64_t body, void **out, struct dt_error *err)
{
	int64_t start = r->off;
	size_t cap = body < FIRST_ALLOC ? (size_t)body : FIRST_ALLOC;
	size_t have = 0;
	unsigned char *buf = dt_xmalloc(cap, 1);
	enum dt_status st = DT_OK;

	while (have < body) {
		size_t got;

		if (have == cap) {
			cap = body / 2 < cap ? (size_t)body : 2 * cap;
			buf = dt_xrealloc(buf, cap, 1);
		}
		st = read_some(r, buf + have, cap - have, &got, err);
		have += got;
		if (st != DT_OK)
			break;
		if (have < cap)	/* clean end of stream */
			break;
	}
	if (st == DT_OK && have < body)
		st = dt_errorf(err, DT_ERR_FORMAT,
			       "%s: byte %lld: truncated: expected %" PRIu64
			       " bytes of data, found %zu (the data starts at "
			       "byte %lld)", r->path, ll(r->off), body, have,
			       ll(start));
	if (st != DT_OK) {
		free(buf);
		return st;
	}
	*out = buf;
	return DT_OK;
}

/* After the body the stream must end. Anything more is an error, but the
 * rest is read first: a corrupt gzip stream that happens to inflate to too
 * many bytes is reported as corrupt (its CRC fails at the end), which is
 * the real problem. */
static enum dt_status
expect_end(struct reader *r, struct dt_error *err)
{
	int64_t end = r->off;
	unsigned char scratch[4096];
	size_t got;
	enum dt_status st;

	do {
		st = read_some(r, scratch, sizeof scratch, &got, err);
		if (st != DT_OK)
			return st;
	} while (got == sizeof scratch);
	if (r->off == end)
		return DT_OK;
	return dt_errorf(err, DT_ERR_FORMAT,
			 "%s: byte %lld: trailing data after %lld bytes "
			 "(%lld more bytes than the header promises)",
			 r->path, ll(end), ll(end), ll(r->off - end));
}

enum dt_status
dt_idx_read(const char *path, struct dt_idx *idx, struct dt_error *err)
{
	struct reader r = { .path = path };
	uint64_t body = 0;
	void *data = NULL;
	struct stat sb;
	enum dt_status st;

	memset(idx, 0, sizeof *idx);
	errno = 0;
	r.f = gzopen(path, "rb");
	if (r.f == NULL) {
		/* gzopen leaves errno 0 when zlib itself ran out of memory. */
		if (errno == 0) {
			dt_gz_oom(path);
		}
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	}
	gzbuffer(r.f, GZ_BUFFER);
	/* Progress in bytes of the file (compressed ones for .gz). */
	if (stat(path, &sb) == 0)
		dt_meter_begin("read", path, (int64_t)sb.st_size);

	st = read_header(&r, idx, &body, err);
	if (st == DT_OK)
		st = read_body(&r, body, &data, err);
	if (st == DT_OK)
		st = expect_end(&r, err);
	dt_meter_end();

	st = dt_gz_close(r.f, path, st, err);
	if (st != DT_OK) {
		free(data);
		memset(idx, 0, sizeof *idx);
		return st;
	}
	dt_be_to_host(data, idx->elem_size, body / idx->elem_size);
	idx->data = data;
	return DT_OK;
}

void
dt_idx_fini(struct dt_idx *idx)
{
	if (idx == NULL)
		return;
	free(idx->data);
	memset(idx, 0, sizeof *idx);
}

enum dt_status
dt_idx_peek(const char *path, struct dt_idx *idx, struct dt_error *err)
{
	struct reader r = { .path = path };
	uint64_t body = 0;
	enum dt_status st;

	memset(idx, 0, sizeof *idx);
	errno = 0;
	r.f = gzopen(path, "rb");
	if (r.f == NULL)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 errno ? strerror(errno) : "out of memory");
	st = read_header(&r, idx, &body, err);
	gzclose_r(r.f);
	if (st != DT_OK)
		memset(idx, 0, sizeof *idx);
	return st;
}
