/* SPDX-License-Identifier: MIT */
/* test_data.c - Check suite for src/data: the IDX reader (plain and gzip,
 * good files and every kind of damage), datasets, gather, the shuffle and
 * the shard arithmetic. Every test writes its own small files into a
 * temporary directory; the real Fashion-MNIST files are read too when they
 * are installed. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "data/data.h"
#include "scratch_dir.h"
#include "util/alloc.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"

/* Made once per test case by an unchecked fixture, before Check forks;
 * kept short so that every path built from it fits in PATH_MAX. */
static char tmpdir[512];

/* ---- building files ---------------------------------------------------- */

/* A growable byte string: the bytes of one file. */
struct bytes {
	unsigned char *p;
	size_t n, cap;
};

static void
put(struct bytes *b, const void *src, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = 2 * (b->n + n) + 64;
		b->p = dt_xrealloc(b->p, b->cap, 1);
	}
	memcpy(b->p + b->n, src, n);
	b->n += n;
}

static void
put_u8(struct bytes *b, unsigned v)
{
	unsigned char c = (unsigned char)v;

	put(b, &c, 1);
}

static void
put_be(struct bytes *b, uint64_t v, int size)
{
	for (int i = size - 1; i >= 0; i--)
		put_u8(b, (unsigned)(v >> (8 * i)) & 0xff);
}

static void
put_f32(struct bytes *b, float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	put_be(b, u, 4);
}

static void
put_f64(struct bytes *b, double f)
{
	uint64_t u;

	memcpy(&u, &f, 8);
	put_be(b, u, 8);
}

/* The magic and dimensions of an IDX file. */
static void
put_header(struct bytes *b, int type, int n_dims, const uint32_t *dims)
{
	put_u8(b, 0);
	put_u8(b, 0);
	put_u8(b, (unsigned)type);
	put_u8(b, (unsigned)n_dims);
	for (int i = 0; i < n_dims; i++)
		put_be(b, dims[i], 4);
}

static void
path_of(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", tmpdir, name);
}

static void
write_raw(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

/* Writes b to tmpdir/name (gzip-compressed when gz) and its path to out. */
static void
write_file(char *out, const char *name, const struct bytes *b, int gz)
{
	path_of(out, name);
	if (gz) {
		gzFile f = gzopen(out, "wb9");

		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(gzwrite(f, b->p, (unsigned)b->n), (int)b->n);
		ck_assert_int_eq(gzclose(f), Z_OK);
	} else {
		write_raw(out, b->p, b->n);
	}
}

/* The whole raw content of path; caller frees. */
static unsigned char *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p;
	long len;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	ck_assert_int_ge(len, 0);
	rewind(f);
	p = dt_xmalloc((size_t)len, 1);
	ck_assert_uint_eq(fread(p, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return p;
}

/* A u8 IDX of shape (records, 4, 5) with a varied body: 400 bytes for
 * 20 records, enough for a multi-byte deflate stream. */
static void
make_images_u8(struct bytes *b, uint32_t records)
{
	uint32_t dims[3] = { records, 4, 5 };

	put_header(b, 0x08, 3, dims);
	for (uint32_t i = 0; i < records * 20; i++)
		put_u8(b, (i * 37 + i / 7) & 0xff);
}

/* Reads path expecting failure with status and a message equal to want. */
static void
expect_msg(const char *path, enum dt_status status, const char *want)
{
	struct dt_idx idx;
	struct dt_error err = { 0 };

	ck_assert_int_eq(dt_idx_read(path, &idx, &err), status);
	ck_assert_int_eq(err.status, status);
	ck_assert_str_eq(err.msg, want);
	ck_assert_ptr_null(idx.data);
	dt_idx_fini(&idx);
}

/* As expect_msg, for a message that starts with "PATH: " + prefix and
 * contains part (when not NULL). */
static void
expect_prefix(const char *path, enum dt_status status, const char *prefix,
	      const char *part)
{
	struct dt_idx idx;
	struct dt_error err = { 0 };
	char want[PATH_MAX + 256];

	ck_assert_int_eq(dt_idx_read(path, &idx, &err), status);
	snprintf(want, sizeof want, "%s: %s", path, prefix);
	ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0,
		      "message \"%s\" does not start with \"%s\"", err.msg,
		      want);
	if (part != NULL)
		ck_assert_msg(strstr(err.msg, part) != NULL,
			      "message \"%s\" lacks \"%s\"", err.msg, part);
	ck_assert_ptr_null(idx.data);
}

/* ---- the IDX reader ------------------------------------------------------ */

START_TEST(test_idx_u8_plain_and_gz)
{
	for (int gz = 0; gz <= 1; gz++) {
		struct bytes b = { 0 };
		struct dt_idx idx;
		struct dt_error err = { 0 };
		char path[PATH_MAX];
		const unsigned char *d;

		make_images_u8(&b, 20);
		write_file(path, gz ? "u8.idx.gz" : "u8.idx", &b, gz);
		ck_assert_int_eq(dt_idx_read(path, &idx, &err), DT_OK);
		ck_assert_int_eq(idx.type, 0x08);
		ck_assert_int_eq(idx.n_dims, 3);
		ck_assert_int_eq(idx.dims[0], 20);
		ck_assert_int_eq(idx.dims[1], 4);
		ck_assert_int_eq(idx.dims[2], 5);
		ck_assert_int_eq(idx.dims[3], 0);
		ck_assert_uint_eq(idx.elem_size, 1);
		d = idx.data;
		for (uint32_t i = 0; i < 400; i++)
			ck_assert_uint_eq(d[i], (i * 37 + i / 7) & 0xff);
		dt_idx_fini(&idx);
		ck_assert_ptr_null(idx.data);
		free(b.p);
	}
}
END_TEST

START_TEST(test_idx_wide_types)
{
	/* One 1-D file per type, big-endian on disk, host order in memory. */
	for (int gz = 0; gz <= 1; gz++) {
		struct bytes b = { 0 };
		struct dt_idx idx;
		struct dt_error err = { 0 };
		char path[PATH_MAX];
		uint32_t n;

		n = 3;
		put_header(&b, 0x09, 1, &n);
		put_u8(&b, 0xff);	/* -1 */
		put_u8(&b, 0x7f);	/* 127 */
		put_u8(&b, 0x80);	/* -128 */
		write_file(path, gz ? "i8.gz" : "i8", &b, gz);
		ck_assert_int_eq(dt_idx_read(path, &idx, &err), DT_OK);
		ck_assert_uint_eq(idx.elem_size, 1);
		ck_assert_int_eq(((int8_t *)idx.data)[0], -1);
		ck_assert_int_eq(((int8_t *)idx.data)[1], 127);
		ck_assert_int_eq(((int8_t *)idx.data)[2], -128);
		dt_idx_fini(&idx);

		b.n = 0;
		put_header(&b, 0x0B, 1, &n);
		put_be(&b, 0xfffe, 2);	/* -2 */
		put_be(&b, 0x1234, 2);
		put_be(&b, 300, 2);
		write_file(path, gz ? "i16.gz" : "i16", &b, gz);
		ck_assert_int_eq(dt_idx_read(path, &idx, &err), DT_OK);
		ck_assert_uint_eq(idx.elem_size, 2);
		ck_assert_int_eq(((int16_t *)idx.data)[0], -2);
		ck_assert_int_eq(((int16_t *)idx.data)[1], 0x1234);
		ck_assert_int_eq(((int16_t *)idx.data)[2], 300);
		dt_idx_fini(&idx);

		b.n = 0;
		n = 2;
		put_header(&b, 0x0C, 1, &n);
		put_be(&b, (uint32_t)-70000, 4);
		put_be(&b, 0x01020304, 4);
		write_file(path, gz ? "i32.gz" : "i32", &b, gz);
		ck_assert_int_eq(dt_idx_read(path, &idx, &err), DT_OK);
		ck_assert_uint_eq(idx.elem_size, 4);
		ck_assert_int_eq(((int32_t *)idx.data)[0], -70000);
		ck_assert_int_eq(((int32_t *)idx.data)[1], 0x01020304);
		dt_idx_fini(&idx);

		b.n = 0;
		put_header(&b, 0x0D, 1, &n);
		put_f32(&b, 1.5f);
		put_f32(&b, -0.25f);
		write_file(path, gz ? "f32.gz" : "f32", &b, gz);
		ck_assert_int_eq(dt_idx_read(path, &idx, &err), DT_OK);
		ck_assert_uint_eq(idx.elem_size, 4);
		ck_assert(((float *)idx.data)[0] == 1.5f);
		ck_assert(((float *)idx.data)[1] == -0.25f);
		dt_idx_fini(&idx);

		b.n = 0;
		put_header(&b, 0x0E, 1, &n);
		put_f64(&b, 3.141592653589793);
		put_f64(&b, -1e300);
		write_file(path, gz ? "f64.gz" : "f64", &b, gz);
		ck_assert_int_eq(dt_idx_read(path, &idx, &err), DT_OK);
		ck_assert_uint_eq(idx.elem_size, 8);
		ck_assert(((double *)idx.data)[0] == 3.141592653589793);
		ck_assert(((double *)idx.data)[1] == -1e300);
		dt_idx_fini(&idx);
		free(b.p);
	}
}
END_TEST

START_TEST(test_idx_four_dims)
{
	uint32_t dims[4] = { 2, 1, 3, 2 };
	struct bytes b = { 0 };
	struct dt_idx idx;
	struct dt_error err = { 0 };
	char path[PATH_MAX];

	put_header(&b, 0x08, 4, dims);
	for (int i = 0; i < 12; i++)
		put_u8(&b, (unsigned)i);
	write_file(path, "four", &b, 0);
	ck_assert_int_eq(dt_idx_read(path, &idx, &err), DT_OK);
	ck_assert_int_eq(idx.n_dims, 4);
	ck_assert_int_eq(idx.dims[3], 2);
	ck_assert_uint_eq(((unsigned char *)idx.data)[11], 11);
	dt_idx_fini(&idx);
	free(b.p);
}
END_TEST

START_TEST(test_idx_truncated_body)
{
	/* (2, 3) u8: header 4 + 2*4 = 12 bytes, body 6, only 4 present. */
	for (int gz = 0; gz <= 1; gz++) {
		uint32_t dims[2] = { 2, 3 };
		struct bytes b = { 0 };
		char path[PATH_MAX], want[PATH_MAX + 200];

		put_header(&b, 0x08, 2, dims);
		put(&b, "\1\2\3\4", 4);
		write_file(path, gz ? "short.gz" : "short", &b, gz);
		snprintf(want, sizeof want,
			 "%s: byte 16: truncated: expected 6 bytes of data, "
			 "found 4 (the data starts at byte 12)", path);
		expect_msg(path, DT_ERR_FORMAT, want);
		free(b.p);
	}
}
END_TEST

START_TEST(test_idx_lying_header)
{
	/* A header that promises 2 TB over a 4-byte body must fail as
	 * truncated, without trying to allocate the promise. */
	uint32_t dims[2] = { 0x7fffffff, 1000 };
	struct bytes b = { 0 };
	char path[PATH_MAX], want[PATH_MAX + 200];

	put_header(&b, 0x08, 2, dims);
	put(&b, "abcd", 4);
	write_file(path, "liar", &b, 0);
	snprintf(want, sizeof want,
		 "%s: byte 16: truncated: expected 2147483647000 bytes of "
		 "data, found 4 (the data starts at byte 12)", path);
	expect_msg(path, DT_ERR_FORMAT, want);
	free(b.p);
}
END_TEST

START_TEST(test_idx_truncated_header)
{
	uint32_t dims[2] = { 2, 3 };
	struct bytes b = { 0 };
	char path[PATH_MAX], want[PATH_MAX + 200];

	path_of(path, "empty");
	write_raw(path, "", 0);
	snprintf(want, sizeof want, "%s: byte 0: truncated header: the file "
		 "ends inside the 4-byte magic", path);
	expect_msg(path, DT_ERR_FORMAT, want);

	put_header(&b, 0x08, 2, dims);
	path_of(path, "halfdims");
	write_raw(path, b.p, 10);	/* magic + 6 of the 8 dimension bytes */
	expect_prefix(path, DT_ERR_FORMAT, "byte 10: truncated header",
		      NULL);
	free(b.p);
}
END_TEST

START_TEST(test_idx_truncated_gzip)
{
	struct bytes b = { 0 };
	char path[PATH_MAX], cut[PATH_MAX];
	unsigned char *raw;
	size_t n;

	make_images_u8(&b, 20);
	write_file(path, "whole.gz", &b, 1);
	raw = slurp(path, &n);

	/* Without its 8-byte trailer the body inflates completely but the
	 * member never ends: the stream is cut, not the IDX body. */
	path_of(cut, "notrailer.gz");
	write_raw(cut, raw, n - 8);
	expect_prefix(cut, DT_ERR_FORMAT, "byte 416: truncated gzip stream",
		      NULL);

	/* Cut in the middle of the deflate data. */
	path_of(cut, "halfgz.gz");
	write_raw(cut, raw, n / 2);
	expect_prefix(cut, DT_ERR_FORMAT, "byte ", "truncated gzip stream");
	free(raw);
	free(b.p);
}
END_TEST

START_TEST(test_idx_corrupt_gzip)
{
	struct bytes b = { 0 };
	char path[PATH_MAX], bad[PATH_MAX];
	unsigned char *raw;
	size_t n;

	make_images_u8(&b, 20);
	write_file(path, "good.gz", &b, 1);
	raw = slurp(path, &n);

	/* The trailer's CRC-32 is the first 4 of its last 8 bytes. zlib
	 * inflates ahead of the reader, so the offset is wherever reading
	 * stood when zlib met the trailer. */
	raw[n - 8] ^= 0x5a;
	path_of(bad, "badcrc.gz");
	write_raw(bad, raw, n);
	expect_prefix(bad, DT_ERR_FORMAT, "byte ",
		      "corrupt gzip stream: incorrect data check");
	raw[n - 8] ^= 0x5a;

	/* Damage inside the deflate data: whatever it inflates to, the
	 * reader must blame the stream, not the IDX layout. */
	for (size_t at = 12; at < n - 8; at += 7) {
		raw[at] ^= 0xa5;
		write_raw(bad, raw, n);
		expect_prefix(bad, DT_ERR_FORMAT, "byte ", "gzip stream");
		raw[at] ^= 0xa5;
	}
	free(raw);
	free(b.p);
}
END_TEST

START_TEST(test_idx_bad_magic)
{
	uint32_t n = 1;
	struct bytes b = { 0 };
	char path[PATH_MAX], want[PATH_MAX + 200];

	put_header(&b, 0x08, 1, &n);
	put_u8(&b, 7);
	b.p[0] = 0x01;
	write_file(path, "magic0", &b, 0);
	snprintf(want, sizeof want, "%s: byte 0: bad magic 0x01000801: an "
		 "IDX file starts with two zero bytes (is this an IDX "
		 "file?)", path);
	expect_msg(path, DT_ERR_FORMAT, want);

	b.p[0] = 0;
	b.p[1] = 0x42;
	write_file(path, "magic1", &b, 1);
	expect_prefix(path, DT_ERR_FORMAT, "byte 1: bad magic 0x00420801",
		      NULL);
	free(b.p);
}
END_TEST

START_TEST(test_idx_bad_type)
{
	uint32_t n = 1;
	struct bytes b = { 0 };
	char path[PATH_MAX];

	put_header(&b, 0x0A, 1, &n);
	put_u8(&b, 7);
	write_file(path, "type0a", &b, 0);
	expect_prefix(path, DT_ERR_FORMAT,
		      "byte 2: unknown element type 0x0A, expected one of",
		      NULL);
	b.p[2] = 0x00;
	write_file(path, "type00", &b, 1);
	expect_prefix(path, DT_ERR_FORMAT, "byte 2: unknown element type 0x00",
		      NULL);
	free(b.p);
}
END_TEST

START_TEST(test_idx_bad_dims)
{
	uint32_t dims[5] = { 1, 1, 1, 1, 1 };
	uint32_t huge[4] = { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff };
	uint32_t zero[3] = { 2, 0, 3 };
	struct bytes b = { 0 };
	char path[PATH_MAX];

	put_header(&b, 0x08, 0, dims);
	put_u8(&b, 1);
	write_file(path, "dims0", &b, 0);
	expect_prefix(path, DT_ERR_FORMAT,
		      "byte 3: 0 dimensions, expected 1 to 4", NULL);

	b.n = 0;
	put_header(&b, 0x08, 5, dims);
	put_u8(&b, 1);
	write_file(path, "dims5", &b, 0);
	expect_prefix(path, DT_ERR_FORMAT,
		      "byte 3: 5 dimensions, expected 1 to 4", NULL);

	b.n = 0;
	put_header(&b, 0x08, 3, zero);
	write_file(path, "dimzero", &b, 0);
	expect_prefix(path, DT_ERR_FORMAT,
		      "byte 8: dimension 1 is 0, expected > 0", NULL);

	/* 8 * (2^32 - 1)^2 > 2^63: the second dimension overflows. */
	b.n = 0;
	put_header(&b, 0x0E, 4, huge);
	write_file(path, "overflow", &b, 0);
	expect_prefix(path, DT_ERR_FORMAT, "byte 8: dimension 1 (4294967295)",
		      "larger than this machine can address");
	free(b.p);
}
END_TEST

START_TEST(test_idx_trailing)
{
	/* (2) u8: header 8, body 2, then 3 bytes too many. */
	for (int gz = 0; gz <= 1; gz++) {
		uint32_t n = 2;
		struct bytes b = { 0 };
		char path[PATH_MAX], want[PATH_MAX + 200];

		put_header(&b, 0x08, 1, &n);
		put(&b, "\1\2xyz", 5);
		write_file(path, gz ? "trail.gz" : "trail", &b, gz);
		snprintf(want, sizeof want,
			 "%s: byte 10: trailing data after 10 bytes (3 more "
			 "bytes than the header promises)", path);
		expect_msg(path, DT_ERR_FORMAT, want);
		free(b.p);
	}
}
END_TEST

START_TEST(test_idx_missing)
{
	char path[PATH_MAX], want[PATH_MAX + 200];

	path_of(path, "no-such-file");
	snprintf(want, sizeof want, "%s: cannot open: No such file or "
		 "directory", path);
	expect_msg(path, DT_ERR_IO, want);
}
END_TEST

/* ---- datasets -------------------------------------------------------------- */

/* Labels file of type u8 with the given values. */
static void
write_labels_u8(char *path, const char *name, const unsigned *v, uint32_t n)
{
	struct bytes b = { 0 };

	put_header(&b, 0x08, 1, &n);
	for (uint32_t i = 0; i < n; i++)
		put_u8(&b, v[i]);
	write_file(path, name, &b, 1);
	free(b.p);
}

/* Images (n, 2, 3) of type u8, pixel j of record i = 6*i + j. */
static void
write_images_small(char *path, const char *name, uint32_t n)
{
	uint32_t dims[3] = { n, 2, 3 };
	struct bytes b = { 0 };

	put_header(&b, 0x08, 3, dims);
	for (uint32_t i = 0; i < 6 * n; i++)
		put_u8(&b, i);
	write_file(path, name, &b, 0);
	free(b.p);
}

START_TEST(test_dataset_u8)
{
	static const unsigned lab[4] = { 0, 3, 9, 1 };
	char img[PATH_MAX], lbl[PATH_MAX];
	struct dt_dataset ds;
	struct dt_error err = { 0 };
	int64_t pick[2] = { 2, 0 };
	float x[12];
	int32_t y[2];

	write_images_small(img, "ds-img", 4);
	write_labels_u8(lbl, "ds-lbl.gz", lab, 4);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 10, 0.5f, &ds, &err),
			 DT_OK);
	ck_assert_int_eq(ds.n, 4);
	ck_assert_int_eq(ds.sample_size, 6);
	ck_assert_int_eq(ds.n_shape, 2);
	ck_assert_int_eq(ds.shape[0], 2);
	ck_assert_int_eq(ds.shape[1], 3);
	ck_assert_ptr_nonnull(ds.x_u8);
	ck_assert_ptr_null(ds.x_f32);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(ds.y[i], (int)lab[i]);

	/* Record 2 holds 12..17, record 0 holds 0..5; both halved. */
	dt_dataset_gather(&ds, pick, 2, x, y);
	for (int j = 0; j < 6; j++) {
		ck_assert(x[j] == (float)(12 + j) * 0.5f);
		ck_assert(x[6 + j] == (float)j * 0.5f);
	}
	ck_assert_int_eq(y[0], 9);
	ck_assert_int_eq(y[1], 0);
	dt_dataset_gather(&ds, pick + 1, 1, x, NULL);
	ck_assert(x[5] == 2.5f);
	dt_dataset_fini(&ds);
	ck_assert_ptr_null(ds.x_u8);
	dt_dataset_fini(&ds);
}
END_TEST

START_TEST(test_dataset_float_and_wide)
{
	uint32_t dims[2] = { 3, 2 }, n = 3;
	struct bytes b = { 0 };
	char img[PATH_MAX], lbl[PATH_MAX];
	struct dt_dataset ds;
	struct dt_error err = { 0 };
	int64_t pick[3] = { 1, 1, 2 };
	float x[6];
	int32_t y[3];

	/* f32 images, i32 labels. */
	put_header(&b, 0x0D, 2, dims);
	for (int i = 0; i < 6; i++)
		put_f32(&b, 0.25f * (float)i - 0.5f);
	write_file(img, "f-img", &b, 1);
	b.n = 0;
	put_header(&b, 0x0C, 1, &n);
	put_be(&b, 4, 4);
	put_be(&b, 0, 4);
	put_be(&b, 2, 4);
	write_file(lbl, "f-lbl", &b, 0);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 5, 2.0f, &ds, &err),
			 DT_OK);
	ck_assert_ptr_null(ds.x_u8);
	ck_assert_ptr_nonnull(ds.x_f32);
	ck_assert_int_eq(ds.n_shape, 1);
	ck_assert_int_eq(ds.sample_size, 2);
	/* Record 1 = (0.0, 0.25), record 2 = (0.5, 0.75); scaled by 2. */
	dt_dataset_gather(&ds, pick, 3, x, y);
	ck_assert(x[0] == 0.0f && x[1] == 0.5f);
	ck_assert(x[2] == 0.0f && x[3] == 0.5f);
	ck_assert(x[4] == 1.0f && x[5] == 1.5f);
	ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 2);
	dt_dataset_fini(&ds);

	/* i16 images become floats. */
	b.n = 0;
	put_header(&b, 0x0B, 2, dims);
	for (int i = 0; i < 6; i++)
		put_be(&b, (uint16_t)(int16_t)(-1000 * i), 2);
	write_file(img, "s-img", &b, 0);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 5, 1.0f, &ds, &err),
			 DT_OK);
	ck_assert_ptr_nonnull(ds.x_f32);
	ck_assert(ds.x_f32[5] == -5000.0f);
	dt_dataset_fini(&ds);

	/* A NaN among float features is bad data. */
	b.n = 0;
	put_header(&b, 0x0D, 2, dims);
	for (int i = 0; i < 6; i++)
		put_f32(&b, i == 3 ? NAN : 1.0f);
	write_file(img, "nan-img", &b, 0);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 5, 1.0f, &ds, &err),
			 DT_ERR_DATA);
	ck_assert_ptr_nonnull(strstr(err.msg, ": record 1: feature 1 is NaN"));
	ck_assert_ptr_null(ds.x_f32);
	ck_assert_ptr_null(ds.y);
	free(b.p);
}
END_TEST

START_TEST(test_dataset_count_mismatch)
{
	static const unsigned lab[3] = { 0, 1, 2 };
	char img[PATH_MAX], lbl[PATH_MAX], want[3 * PATH_MAX];
	struct dt_dataset ds;
	struct dt_error err = { 0 };

	write_images_small(img, "cm-img", 4);
	write_labels_u8(lbl, "cm-lbl", lab, 3);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 10, 1.0f, &ds, &err),
			 DT_ERR_DATA);
	snprintf(want, sizeof want, "%s: images has 4 records, labels has 3 "
		 "(%s); the two files must describe the same samples", img,
		 lbl);
	ck_assert_str_eq(err.msg, want);
	ck_assert_ptr_null(ds.x_u8);
	ck_assert_ptr_null(ds.y);
}
END_TEST

START_TEST(test_dataset_label_range)
{
	static const unsigned lab[4] = { 0, 3, 12, 1 };
	uint32_t n = 4;
	struct bytes b = { 0 };
	char img[PATH_MAX], lbl[PATH_MAX], want[PATH_MAX + 100];
	struct dt_dataset ds;
	struct dt_error err = { 0 };

	write_images_small(img, "lr-img", 4);
	write_labels_u8(lbl, "lr-lbl", lab, 4);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 10, 1.0f, &ds, &err),
			 DT_ERR_DATA);
	snprintf(want, sizeof want,
		 "%s: record 2: label 12 out of range [0, 10)", lbl);
	ck_assert_str_eq(err.msg, want);
	ck_assert_ptr_null(ds.y);

	/* Signed labels: -1 is out of range too. */
	put_header(&b, 0x09, 1, &n);
	put(&b, "\0\1\377\2", 4);
	write_file(lbl, "lr-neg", &b, 0);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 10, 1.0f, &ds, &err),
			 DT_ERR_DATA);
	snprintf(want, sizeof want,
		 "%s: record 2: label -1 out of range [0, 10)", lbl);
	ck_assert_str_eq(err.msg, want);

	/* The same labels with enough classes load. */
	write_labels_u8(lbl, "lr-ok", lab, 4);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 13, 1.0f, &ds, &err),
			 DT_OK);
	dt_dataset_fini(&ds);
	free(b.p);
}
END_TEST

START_TEST(test_dataset_bad_shapes)
{
	uint32_t dims[2] = { 4, 1 }, n = 4;
	struct bytes b = { 0 };
	char img[PATH_MAX], lbl[PATH_MAX];
	struct dt_dataset ds;
	struct dt_error err = { 0 };

	write_images_small(img, "bs-img", 4);

	/* Float labels. */
	put_header(&b, 0x0D, 1, &n);
	for (int i = 0; i < 4; i++)
		put_f32(&b, 1.0f);
	write_file(lbl, "bs-flt", &b, 0);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 10, 1.0f, &ds, &err),
			 DT_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(err.msg, "labels must have an integer"));

	/* Two-dimensional labels. */
	b.n = 0;
	put_header(&b, 0x08, 2, dims);
	put(&b, "\0\1\2\3", 4);
	write_file(lbl, "bs-2d", &b, 0);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 10, 1.0f, &ds, &err),
			 DT_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(err.msg, "labels must be 1-dimensional"));

	/* One-dimensional images. */
	b.n = 0;
	put_header(&b, 0x08, 1, &n);
	put(&b, "\0\1\2\3", 4);
	write_file(img, "bs-1d", &b, 0);
	write_file(lbl, "bs-lbl", &b, 0);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 10, 1.0f, &ds, &err),
			 DT_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(err.msg, "images must have 2 to 4"));

	/* A missing labels file is an I/O error naming it. */
	path_of(lbl, "bs-none");
	write_images_small(img, "bs-img", 4);
	ck_assert_int_eq(dt_dataset_load_idx(img, lbl, 10, 1.0f, &ds, &err),
			 DT_ERR_IO);
	ck_assert_int_eq(strncmp(err.msg, lbl, strlen(lbl)), 0);
	free(b.p);
}
END_TEST

/* ---- shuffle and sharding ------------------------------------------------ */

START_TEST(test_shuffle_permutation)
{
	enum { N = 1000 };
	int64_t *a = dt_xmalloc(N, sizeof *a), *b = dt_xmalloc(N, sizeof *b);
	char *seen = dt_xcalloc(N, 1);
	int moved = 0;

	dt_shuffle(42, 3, N, a);
	for (int i = 0; i < N; i++) {
		ck_assert(a[i] >= 0 && a[i] < N);
		ck_assert_int_eq(seen[a[i]], 0);
		seen[a[i]] = 1;
		moved += a[i] != i;
	}
	ck_assert_int_gt(moved, N / 2);

	/* A pure function of (seed, epoch). */
	dt_shuffle(42, 3, N, b);
	ck_assert_int_eq(memcmp(a, b, N * sizeof *a), 0);
	dt_shuffle(42, 4, N, b);
	ck_assert_int_ne(memcmp(a, b, N * sizeof *a), 0);
	dt_shuffle(43, 3, N, b);
	ck_assert_int_ne(memcmp(a, b, N * sizeof *a), 0);

	dt_shuffle(1, 0, 0, a);		/* nothing to do */
	dt_shuffle(1, 0, 1, a);
	ck_assert_int_eq(a[0], 0);
	free(a);
	free(b);
	free(seen);
}
END_TEST

START_TEST(test_shuffle_uniform)
{
	/* Each of the 3! orders of three items over 6000 epochs: expected
	 * 1000 each, standard deviation about 29; 800..1200 is > 6 sigma. */
	int count[3][3][3] = { 0 };

	for (int64_t e = 0; e < 6000; e++) {
		int64_t p[3];

		dt_shuffle(7, e, 3, p);
		count[p[0]][p[1]][p[2]]++;
	}
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 3; k++) {
				if (i == j || j == k || i == k)
					continue;
				ck_assert_int_ge(count[i][j][k], 800);
				ck_assert_int_le(count[i][j][k], 1200);
			}
}
END_TEST

START_TEST(test_shard_cover)
{
	/* For every data-parallel degree and micro-batch size that divides,
	 * the ranks' micro-batches tile each global batch exactly once. */
	enum { GB = 12, STEPS = 3 };
	static const int64_t micro[] = { 1, 2 };

	for (int dp = 1; dp <= 3; dp++) {
		for (size_t m = 0; m < sizeof micro / sizeof micro[0]; m++) {
			int64_t mb = micro[m], accum = GB / dp / mb;

			for (int64_t step = 0; step < STEPS; step++) {
				int hits[GB * (STEPS + 1)] = { 0 };

				for (int r = 0; r < dp; r++)
					for (int64_t k = 0; k < accum; k++) {
						int64_t off = dt_shard_offset(
							step, GB, r, dp, mb, k);

						for (int64_t i = 0; i < mb; i++)
							hits[off + i]++;
					}
				for (int64_t pos = 0; pos < GB * (STEPS + 1);
				     pos++) {
					int inside = pos >= step * GB &&
						     pos < (step + 1) * GB;

					ck_assert_int_eq(hits[pos], inside);
				}
			}
		}
	}
	/* Step 2, rank 1 of 3, micro-batch 1 of 2-sample micro-batches:
	 * 2*12 + 1*4 + 1*2. */
	ck_assert_int_eq(dt_shard_offset(2, 12, 1, 3, 2, 1), 30);
}
END_TEST

START_TEST(test_steps_per_epoch)
{
	int64_t dropped = -1;

	ck_assert_int_eq(dt_steps_per_epoch(60000, 96, &dropped), 625);
	ck_assert_int_eq(dropped, 0);
	ck_assert_int_eq(dt_steps_per_epoch(60000, 128, &dropped), 468);
	ck_assert_int_eq(dropped, 96);	/* 60000 - 468*128 */
	ck_assert_int_eq(dt_steps_per_epoch(60000, 100, &dropped), 600);
	ck_assert_int_eq(dropped, 0);
	ck_assert_int_eq(dt_steps_per_epoch(10000, 96, &dropped), 104);
	ck_assert_int_eq(dropped, 16);	/* 10000 - 104*96 */
	ck_assert_int_eq(dt_steps_per_epoch(10, 32, &dropped), 0);
	ck_assert_int_eq(dropped, 10);
	ck_assert_int_eq(dt_steps_per_epoch(7, 7, NULL), 1);
}
END_TEST

/* ---- the real data, when installed ------------------------------------- */

static void
check_fashion(const char *images, const char *labels, int64_t n)
{
	struct dt_dataset ds;
	struct dt_error err = { 0 };
	int64_t per_class[10] = { 0 };
	int64_t first = 0;
	float x[784];

	ck_assert_msg(dt_dataset_load_idx(images, labels, 10, 1.0f / 255.0f,
					  &ds, &err) == DT_OK, "%s", err.msg);
	ck_assert_int_eq(ds.n, n);
	ck_assert_int_eq(ds.n_shape, 2);
	ck_assert_int_eq(ds.shape[0], 28);
	ck_assert_int_eq(ds.shape[1], 28);
	ck_assert_int_eq(ds.sample_size, 784);
	ck_assert_ptr_nonnull(ds.x_u8);
	for (int64_t i = 0; i < n; i++) {
		ck_assert(ds.y[i] >= 0 && ds.y[i] <= 9);
		per_class[ds.y[i]]++;
	}
	/* Fashion-MNIST is balanced: n/10 of each class. */
	for (int c = 0; c < 10; c++)
		ck_assert_int_eq(per_class[c], n / 10);
	dt_dataset_gather(&ds, &first, 1, x, NULL);
	for (int j = 0; j < 784; j++)
		ck_assert(x[j] >= 0.0f && x[j] <= 1.0f);
	dt_dataset_fini(&ds);
}

START_TEST(test_fashion_mnist)
{
	check_fashion(FMNIST "/train-images-idx3-ubyte.gz",
		      FMNIST "/train-labels-idx1-ubyte.gz", 60000);
	check_fashion(FMNIST "/t10k-images-idx3-ubyte.gz",
		      FMNIST "/t10k-labels-idx1-ubyte.gz", 10000);
}
END_TEST

/* ---- the suite ----------------------------------------------------------- */

static void
make_tmpdir(void)
{
	scratch_dir_make(tmpdir, sizeof tmpdir, "data");
}

static void
remove_tmpdir(void)
{
	scratch_dir_remove(tmpdir);
}

static Suite *
data_suite(void)
{
	Suite *s = suite_create("data");
	TCase *tc = tcase_create("idx");

	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_idx_u8_plain_and_gz);
	tcase_add_test(tc, test_idx_wide_types);
	tcase_add_test(tc, test_idx_four_dims);
	tcase_add_test(tc, test_idx_truncated_body);
	tcase_add_test(tc, test_idx_lying_header);
	tcase_add_test(tc, test_idx_truncated_header);
	tcase_add_test(tc, test_idx_truncated_gzip);
	tcase_add_test(tc, test_idx_corrupt_gzip);
	tcase_add_test(tc, test_idx_bad_magic);
	tcase_add_test(tc, test_idx_bad_type);
	tcase_add_test(tc, test_idx_bad_dims);
	tcase_add_test(tc, test_idx_trailing);
	tcase_add_test(tc, test_idx_missing);
	suite_add_tcase(s, tc);

	tc = tcase_create("dataset");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_dataset_u8);
	tcase_add_test(tc, test_dataset_float_and_wide);
	tcase_add_test(tc, test_dataset_count_mismatch);
	tcase_add_test(tc, test_dataset_label_range);
	tcase_add_test(tc, test_dataset_bad_shapes);
	suite_add_tcase(s, tc);

	tc = tcase_create("order");
	tcase_add_test(tc, test_shuffle_permutation);
	tcase_add_test(tc, test_shuffle_uniform);
	tcase_add_test(tc, test_shard_cover);
	tcase_add_test(tc, test_steps_per_epoch);
	suite_add_tcase(s, tc);

	if (access(FMNIST "/train-images-idx3-ubyte.gz", R_OK) == 0 &&
	    access(FMNIST "/train-labels-idx1-ubyte.gz", R_OK) == 0 &&
	    access(FMNIST "/t10k-images-idx3-ubyte.gz", R_OK) == 0 &&
	    access(FMNIST "/t10k-labels-idx1-ubyte.gz", R_OK) == 0) {
		tc = tcase_create("fashion-mnist");
		tcase_set_timeout(tc, 120);
		tcase_add_test(tc, test_fashion_mnist);
		suite_add_tcase(s, tc);
	} else {
		printf("test_data: %s not installed, skipping the "
		       "Fashion-MNIST test\n", FMNIST);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(data_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
