/* SPDX-License-Identifier: MIT */
/* tfevents.c - TensorBoard event files (see tfevents.h for the format and
 * its sources). */
#include "util/tfevents.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"

#define TAG_MAX 255
/* An Event with one scalar: a few fixed fields and the tag. */
#define EVENT_MAX (64 + TAG_MAX)

struct dt_tfevents {
	FILE *f;
	char path[PATH_MAX];
};

/* The reflected CRC-32C polynomial (Castagnoli: 0x1EDC6F41). */
#define CRC32C_POLY 0x82f63b78u

uint32_t
dt_crc32c(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;

	/* Bit by bit: event files are written a few records a step, far
	 * from where a table would pay. */
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= b[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (CRC32C_POLY & (0u - (crc & 1u)));
	}
	return ~crc;
}

uint32_t
dt_crc32c_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* ---- protocol-buffer wire format ------------------------------------ */

struct buf {
	unsigned char p[EVENT_MAX];
	size_t n;
};

static void
put_byte(struct buf *b, unsigned char c)
{
	if (b->n < sizeof b->p)
		b->p[b->n] = c;
	b->n++;
}

static void
put_varint(struct buf *b, uint64_t v)
{
	while (v >= 0x80) {
		put_byte(b, (unsigned char)(v | 0x80));
		v >>= 7;
	}
	put_byte(b, (unsigned char)v);
}

/* A field key: number << 3 | wire type (0 varint, 1 64-bit, 2 length-
 * delimited, 5 32-bit). */
static void
put_key(struct buf *b, int field, int wire)
{
	put_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

static void
put_le(struct buf *b, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		put_byte(b, (unsigned char)(v >> (8 * i)));
}

static void
put_bytes(struct buf *b, int field, const void *p, size_t n)
{
	put_key(b, field, 2);
	put_varint(b, n);
	for (size_t i = 0; i < n; i++)
		put_byte(b, ((const unsigned char *)p)[i]);
}

static void
put_double(struct buf *b, int field, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof u);
	put_key(b, field, 1);
	put_le(b, u, 8);
}

/* ---- records ---------------------------------------------------------- */

static enum dt_status
write_record(struct dt_tfevents *w, const struct buf *e, struct dt_error *err)
{
	unsigned char head[12], tail[4];
	uint32_t c;

	assert(e->n <= sizeof e->p);	/* EVENT_MAX covers the largest */

	for (int i = 0; i < 8; i++)
		head[i] = (unsigned char)((uint64_t)e->n >> (8 * i));
	c = dt_crc32c_mask(dt_crc32c(0, head, 8));
	for (int i = 0; i < 4; i++)
		head[8 + i] = (unsigned char)(c >> (8 * i));
	c = dt_crc32c_mask(dt_crc32c(0, e->p, e->n));
	for (int i = 0; i < 4; i++)
		tail[i] = (unsigned char)(c >> (8 * i));
	if (fwrite(head, 1, sizeof head, w->f) != sizeof head ||
	    fwrite(e->p, 1, e->n, w->f) != e->n ||
	    fwrite(tail, 1, sizeof tail, w->f) != sizeof tail ||
	    fflush(w->f) != 0)
		return dt_errorf(err, DT_ERR_IO, "%s: write failed: %s",
				 w->path, strerror(errno));
	return DT_OK;
}

enum dt_status
dt_tfevents_open(const char *dir, struct dt_tfevents **out,
		 struct dt_error *err)
{
	struct dt_tfevents *w = dt_xcalloc(1, sizeof *w);
	char host[256] = "localhost";
	struct timespec now;
	struct buf e = { .n = 0 };
	enum dt_status st;
	int n;

	*out = NULL;
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "localhost");
	host[sizeof host - 1] = '\0';
	clock_gettime(CLOCK_REALTIME, &now);
	n = snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%lld.%s."
		     "%ld", dir, (long long)now.tv_sec, host, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof w->path) {
		free(w);
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", dir);
	}
	w->f = fopen(w->path, "wbx");
	if (w->f == NULL) {
		st = dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s", w->path,
			       strerror(errno));
		free(w);
		return st;
	}
	put_double(&e, 1, (double)now.tv_sec + 1e-9 * (double)now.tv_nsec);
	put_bytes(&e, 3, "brain.Event:2", 13);
	st = write_record(w, &e, err);
	if (st != DT_OK) {
		fclose(w->f);
		unlink(w->path);
		free(w);
		return st;
	}
	*out = w;
	return DT_OK;
}

enum dt_status
dt_tfevents_scalar(struct dt_tfevents *w, const char *tag, int64_t step,
		   double wall_time, double value, struct dt_error *err)
{
	struct buf val = { .n = 0 }, sum = { .n = 0 }, e = { .n = 0 };
	size_t tlen = strlen(tag);
	float f = (float)value;
	uint32_t u;

	if (tlen > TAG_MAX || step < 0)
		return dt_errorf(err, DT_ERR_USAGE, "%s: scalar \"%.40s\": a "
				 "tag of at most %d bytes and a step >= 0",
				 w->path, tag, TAG_MAX);
	put_bytes(&val, 1, tag, tlen);
	memcpy(&u, &f, sizeof u);
	put_key(&val, 2, 5);
	put_le(&val, u, 4);
	put_bytes(&sum, 1, val.p, val.n);
	put_double(&e, 1, wall_time);
	put_key(&e, 2, 0);
	put_varint(&e, (uint64_t)step);
	put_bytes(&e, 5, sum.p, sum.n);
	return write_record(w, &e, err);
}

const char *
dt_tfevents_path(const struct dt_tfevents *w)
{
	return w->path;
}

enum dt_status
dt_tfevents_close(struct dt_tfevents *w, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	if (w == NULL)
		return DT_OK;
	if (fclose(w->f) != 0)
		st = dt_errorf(err, DT_ERR_IO, "%s: close failed: %s", w->path,
			       strerror(errno));
	free(w);
	return st;
}
