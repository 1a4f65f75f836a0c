/* SPDX-License-Identifier: MIT */
/* test_formats.c - Check suite for the CSV, NPY, token and text readers
 * of src/data/: good files (plain and gzip), then truncated, mistyped and
 * malformed ones, each with the exact message a user would read. Every
 * file is written by the test into a temporary directory. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "data/data.h"
#include "scratch_dir.h"
#include "util/alloc.h"

/* Made once per test case by an unchecked fixture, before Check forks. */
static char tmpdir[512];

/* ---- building files ------------------------------------------------------ */

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
	if (n > 0)
		memcpy(b->p + b->n, src, n);
	b->n += n;
}

static void
put_le(struct bytes *b, uint64_t v, int size)
{
	for (int i = 0; i < size; i++) {
		unsigned char c = (unsigned char)(v >> (8 * i));

		put(b, &c, 1);
	}
}

static void
put_str(struct bytes *b, const char *s)
{
	put(b, s, strlen(s));
}

static void
path_of(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", tmpdir, name);
}

/* Writes n bytes to tmpdir/name (gzip when gz); the path goes to out. */
static void
write_file(char *out, const char *name, const void *p, size_t n, int gz)
{
	path_of(out, name);
	if (gz) {
		gzFile f = gzopen(out, "wb6");

		ck_assert_ptr_nonnull(f);
		if (n > 0)
			ck_assert_int_eq(gzwrite(f, p, (unsigned)n), (int)n);
		ck_assert_int_eq(gzclose(f), Z_OK);
	} else {
		FILE *f = fopen(out, "wb");

		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(p, 1, n, f), n);
		ck_assert_int_eq(fclose(f), 0);
	}
}

static void
write_text(char *out, const char *name, const char *text)
{
	write_file(out, name, text, strlen(text), 0);
}

/* Checks that err says exactly "PATH" followed by the formatted rest. */
static void
expect_msg(const struct dt_error *err, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
expect_msg(const struct dt_error *err, const char *path, const char *fmt, ...)
{
	char rest[1024], want[PATH_MAX + 1100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rest, sizeof rest, fmt, ap);
	va_end(ap);
	snprintf(want, sizeof want, "%s%s", path, rest);
	ck_assert_str_eq(err->msg, want);
}

/* ---- CSV ----------------------------------------------------------------- */

static struct dt_csv_opts
csv_opts(int header, int label_col, int64_t n_classes)
{
	struct dt_csv_opts o = { .header = header, .label_col = label_col,
				 .n_classes = n_classes, .scale = 1 };

	return o;
}

START_TEST(test_csv_good)
{
	static const char text[] =
		"a,b,label\n"
		"1.5,-2,0\n"
		"\n"
		"3e2, 4 ,2\n"
		"0,0.25,1\n";
	char path[PATH_MAX];
	struct dt_csv_opts o = csv_opts(1, -1, 3);
	struct dt_dataset ds;
	struct dt_error err;

	for (int gz = 0; gz < 2; gz++) {
		write_file(path, gz ? "good.csv.gz" : "good.csv", text,
			   strlen(text), gz);
		ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
				 DT_OK);
		ck_assert_int_eq(ds.n, 3);
		ck_assert_int_eq(ds.sample_size, 2);
		ck_assert_int_eq(ds.n_shape, 1);
		ck_assert_int_eq(ds.shape[0], 2);
		ck_assert_ptr_null(ds.x_u8);
		ck_assert_float_eq(ds.x_f32[0], 1.5f);
		ck_assert_float_eq(ds.x_f32[1], -2.0f);
		ck_assert_float_eq(ds.x_f32[2], 300.0f);
		ck_assert_float_eq(ds.x_f32[3], 4.0f);
		ck_assert_float_eq(ds.x_f32[5], 0.25f);
		ck_assert_int_eq(ds.y[0], 0);
		ck_assert_int_eq(ds.y[1], 2);
		ck_assert_int_eq(ds.y[2], 1);
		ck_assert_float_eq(ds.scale, 1.0f);
		dt_dataset_fini(&ds);
	}
}
END_TEST

/* Regression targets, inputs without labels (predict), a detected
 * header, and data.normalize's statistics worked out by hand. */
START_TEST(test_csv_targets_and_norm)
{
	static const char text[] = "1,10,0.5,-1\n3,30,1.5,1\n";
	char path[PATH_MAX];
	struct dt_csv_opts o = csv_opts(0, 1, 1);
	struct dt_dataset ds;
	struct dt_norm norm, back;
	struct dt_error err;
	float x[4];
	int64_t idx[2] = { 1, 0 };
	char *t;

	/* Two targets from column 1 on: features columns 0 and 3. */
	o.n_targets = 2;
	write_text(path, "targets.csv", text);
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err), DT_OK);
	ck_assert_int_eq(ds.sample_size, 2);
	ck_assert_int_eq(ds.n_targets, 2);
	ck_assert_ptr_null(ds.y);
	ck_assert_float_eq(ds.x_f32[1], -1.0f);
	ck_assert_float_eq(ds.t[2], 30.0f);
	ck_assert_float_eq(ds.t[3], 1.5f);
	/* Means (2, 0), population standard deviations (1, 1). */
	dt_norm_fit(&norm, DT_NORM_STANDARD, &ds);
	ck_assert(norm.shift[0] == 2.0 && norm.shift[1] == 0.0);
	ck_assert(norm.mul[0] == 1.0 && norm.mul[1] == 1.0);
	ds.norm = &norm;
	dt_dataset_gather(&ds, idx, 2, x, NULL);
	ck_assert_float_eq(x[0], 1.0f);
	ck_assert_float_eq(x[1], 1.0f);
	ck_assert_float_eq(x[2], -1.0f);
	ck_assert_float_eq(x[3], -1.0f);
	t = dt_norm_text(&norm);
	ck_assert_str_eq(t, "scale 1\nnormalize standard 2\n2 1\n0 1\n");
	ck_assert_int_eq(dt_norm_parse(t, "meta", &back, &err), DT_OK);
	ck_assert(back.n == 2 && back.shift[0] == 2.0 && back.scale == 1.0);
	dt_norm_fini(&back);
	ck_assert_int_eq(dt_norm_parse("scale 1\nnormalize standard 2\n2 1\n",
				       "meta", &back, &err), DT_ERR_FORMAT);
	ck_assert_str_eq(err.msg, "meta: line 4: expected two finite numbers "
			 "(shift and multiplier of feature 1)");
	free(t);
	dt_norm_fini(&norm);
	/* minmax: min 1 and -1, ranges 2 and 2. */
	dt_norm_fit(&norm, DT_NORM_MINMAX, &ds);
	ck_assert(norm.shift[0] == 1.0 && norm.shift[1] == -1.0);
	ck_assert(norm.mul[0] == 0.5 && norm.mul[1] == 0.5);
	dt_norm_fini(&norm);
	dt_dataset_fini(&ds);

	/* Predict: 4 features and no label; a detected header. */
	o = csv_opts(DT_CSV_HEADER_DETECT, -1, 3);
	o.n_features = 4;
	write_text(path, "nolabel.csv", "a,b,c,d\n1,2,3,4\n5,6,7,8\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err), DT_OK);
	ck_assert_int_eq(ds.n, 2);
	ck_assert_int_eq(ds.sample_size, 4);
	ck_assert_ptr_null(ds.y);
	ck_assert_float_eq(ds.x_f32[4], 5.0f);
	dt_dataset_fini(&ds);
	/* With the label column: dropped. */
	write_text(path, "label.csv", "1,2,3,4,0\n5,6,7,8,2\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err), DT_OK);
	ck_assert_int_eq(ds.sample_size, 4);
	ck_assert_float_eq(ds.x_f32[4], 5.0f);
	dt_dataset_fini(&ds);
	write_text(path, "wrong.csv", "1,2,3,4\n5,6,7\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": line 2, column 4: 3 columns, expected 4 "
		   "(as on line 1)");
}
END_TEST

START_TEST(test_csv_dialects)
{
	char path[PATH_MAX];
	struct dt_csv_opts o = csv_opts(0, 0, 10);
	struct dt_dataset ds;
	struct dt_error err;
	float x[2];
	int32_t y;
	int64_t idx = 1;

	/* A BOM, CRLF, ';', quoted cells, label first, scale 0 taken as 1. */
	write_text(path, "semi.csv", "\xEF\xBB\xBF" "7;\"1.0\";2\r\n"
		   "\"9\" ; 3 ;\"-4\"\r\n");
	o.delimiter = ';';
	o.scale = 0;
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err), DT_OK);
	ck_assert_int_eq(ds.n, 2);
	dt_dataset_gather(&ds, &idx, 1, x, &y);
	ck_assert_int_eq(y, 9);
	ck_assert_float_eq(x[0], 3.0f);
	ck_assert_float_eq(x[1], -4.0f);
	dt_dataset_fini(&ds);

	/* Tab-separated, label in the middle, a quoted header. */
	write_text(path, "tab.tsv", "\"x 1\"\t\"the, label\"\tx2\n"
		   "0.5\t1\t2\n");
	o = csv_opts(1, 1, 2);
	o.delimiter = '\t';
	o.scale = 2;
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err), DT_OK);
	ck_assert_int_eq(ds.n, 1);
	idx = 0;
	dt_dataset_gather(&ds, &idx, 1, x, &y);
	ck_assert_float_eq(x[0], 1.0f);
	ck_assert_float_eq(x[1], 4.0f);
	ck_assert_int_eq(y, 1);
	dt_dataset_fini(&ds);
}
END_TEST

START_TEST(test_csv_errors)
{
	char path[PATH_MAX];
	struct dt_csv_opts o = csv_opts(0, -1, 3);
	struct dt_dataset ds;
	struct dt_error err;

	write_text(path, "ragged.csv", "1,2,0\n3,4,1\n5,2\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": line 3, column 3: 2 columns, expected 3 (as on line 1)");
	ck_assert_ptr_null(ds.x_f32);
	ck_assert_ptr_null(ds.y);
	dt_dataset_fini(&ds);

	write_text(path, "word.csv", "1,2,0\n1,abc,0\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": line 2, column 2: expected a number, "
		   "found \"abc\"");

	write_text(path, "junk.csv", "1,2,0\n1,2x,0\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": line 2, column 2: expected a number, "
		   "found \"2x\"");

	write_text(path, "empty.csv", "1,2,0\n,2,0\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": line 2, column 1: empty cell, expected a "
		   "number");

	write_text(path, "quote.csv", "1,\"2,0\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": line 1, column 2: unterminated quoted cell "
		   "(a cell cannot span lines)");

	write_text(path, "after.csv", "1,\"2\"x,0\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": line 1, column 2: text after the closing "
		   "quote");

	write_text(path, "one.csv", "1\n2\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": line 1: 1 column: a label and at least one "
		   "feature are needed (is the delimiter ','?)");
}
END_TEST

START_TEST(test_csv_values)
{
	char path[PATH_MAX];
	struct dt_csv_opts o = csv_opts(0, -1, 3);
	struct dt_dataset ds;
	struct dt_error err;

	write_text(path, "frac.csv", "1,2,0\n1,2,1.5\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": line 2, column 3: label 1.5 is not an "
		   "integer");

	write_text(path, "range.csv", "1,2,0\n1,2,3\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": line 2, column 3: label 3 out of range "
		   "[0, 3)");

	write_text(path, "neg.csv", "1,2,-1\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": line 1, column 3: label -1 out of range "
		   "[0, 3)");

	write_text(path, "nan.csv", "nan,2,0\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": line 1, column 1: \"nan\" is not a finite "
		   "number");

	write_text(path, "big.csv", "1,1e39,0\n");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": line 1, column 2: \"1e39\" is out of float32 "
		   "range");

	write_text(path, "header-only.csv", "a,b,c\n\n");
	o.header = 1;
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": no data rows after the header");

	/* The first data row places the label column. */
	write_text(path, "header-row.csv", "a,b,c\n1,2,3\n");
	o.label_col = 3;
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": label column 3 does not exist: the file has "
		   "3 columns (line 2)");

	write_text(path, "nul.csv", "");
	o.header = 0;
	o.label_col = 0;
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": no data rows");
}
END_TEST

START_TEST(test_csv_binary_and_io)
{
	char path[PATH_MAX];
	struct dt_csv_opts o = csv_opts(0, -1, 3);
	struct dt_dataset ds;
	struct dt_error err;
	static const char junk[] = "1,\x01\x02\"z,0\n";
	struct bytes b = { 0 };
	unsigned char *whole;
	size_t n;

	write_file(path, "bin.csv", junk, sizeof junk - 1, 0);
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": line 1, column 2: expected a number, found "
		   "\"\\x01\\x02\\\"z\"");

	/* A gzip file cut short. */
	for (int i = 0; i < 2000; i++)
		put_str(&b, "1,2,0\n");
	write_file(path, "cut.csv.gz", b.p, b.n, 1);
	{
		FILE *f = fopen(path, "rb");

		ck_assert_ptr_nonnull(f);
		whole = dt_xmalloc(1 << 16, 1);
		n = fread(whole, 1, 1 << 16, f);
		fclose(f);
	}
	write_file(path, "cut.csv.gz", whole, n - 10, 0);
	free(whole);
	free(b.p);
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_FORMAT);
	ck_assert_msg(strstr(err.msg, ": truncated gzip stream") != NULL,
		      "%s", err.msg);

	path_of(path, "no-such.csv");
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err), DT_ERR_IO);
	expect_msg(&err, path, ": cannot open: No such file or directory");
}
END_TEST

/* A gzip stream that inflates past the memory there is (here made small
 * with the DTRAIN_TEST_MEM_AVAILABLE test aid) is refused with a message,
 * for every reader that inflates a whole file; under the bound it loads. */
START_TEST(test_gzip_bomb_bounded)
{
	char path[PATH_MAX];
	struct dt_csv_opts o = csv_opts(0, -1, 3);
	struct dt_dataset ds;
	struct dt_token_data td;
	struct dt_error err;
	struct bytes b = { 0 };

	for (int i = 0; i < 400000; i++)	/* 2.4 MB, gzip ~10 KB */
		put_str(&b, "1,2,0\n");
	write_file(path, "bomb.csv.gz", b.p, b.n, 1);
	free(b.p);
	setenv("DTRAIN_TEST_MEM_AVAILABLE", "1000000", 1);
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": inflates to more than 524288 bytes, past "
		   "the 1000000 bytes of memory this node has free (a gzip "
		   "bomb, or data too large for this machine)");
	ck_assert_int_eq(dt_tokens_load(path, 2, 65536, 4, 0, &td, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": inflates to more than 524288 bytes, past "
		   "the 1000000 bytes of memory this node has free (a gzip "
		   "bomb, or data too large for this machine)");
	setenv("DTRAIN_TEST_MEM_AVAILABLE", "100000000", 1);
	ck_assert_int_eq(dt_dataset_load_csv(path, &o, &ds, &err), DT_OK);
	ck_assert_int_eq(ds.n, 400000);
	dt_dataset_fini(&ds);
	unsetenv("DTRAIN_TEST_MEM_AVAILABLE");
}
END_TEST

/* A first line of 200000 columns and one data row: the rows reserved are
 * bounded by what the bytes can hold, so the load fits in an address
 * space of 256 MiB (the old reservation of 1024 rows took 800 MB). In a
 * child, under RLIMIT_AS; skipped under AddressSanitizer, whose shadow
 * memory needs far more address space than that. */
START_TEST(test_csv_wide_first_line)
{
#if defined(__SANITIZE_ADDRESS__)
	return;
#else
	char path[PATH_MAX];
	struct bytes b = { 0 };
	pid_t pid;
	int status;

	for (int i = 0; i < 200000; i++)
		put_str(&b, "0,");
	put_str(&b, "1\n");
	write_file(path, "wide.csv", b.p, b.n, 0);
	free(b.p);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		struct rlimit rl = { 256u << 20, 256u << 20 };
		struct dt_csv_opts o = csv_opts(0, -1, 3);
		struct dt_dataset ds;
		struct dt_error err;

		if (setrlimit(RLIMIT_AS, &rl) != 0)
			_exit(3);
		if (dt_dataset_load_csv(path, &o, &ds, &err) != DT_OK ||
		    ds.n != 1 || ds.sample_size != 200000)
			_exit(1);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "wide CSV: status 0x%x", status);
#endif
}
END_TEST

/* ---- NPY ----------------------------------------------------------------- */

/* An NPY file: the preamble, header_dict padded (with spaces and '\n') so
 * the data starts at a multiple of 64, then the data. */
static void
put_npy(struct bytes *b, int major, const char *dict, const void *data,
	size_t n)
{
	size_t pre = major == 1 ? 10 : 12;
	size_t hlen = strlen(dict) + 1;

	hlen += (64 - (pre + hlen) % 64) % 64;
	put(b, "\x93NUMPY", 6);
	put_le(b, (uint64_t)major, 1);
	put_le(b, 0, 1);
	put_le(b, hlen, major == 1 ? 2 : 4);
	put_str(b, dict);
	for (size_t i = strlen(dict) + 1; i < hlen; i++)
		put_str(b, " ");
	put_str(b, "\n");
	put(b, data, n);
}

static void
write_npy(char *path, const char *name, int major, const char *dict,
	  const void *data, size_t n, int gz)
{
	struct bytes b = { 0 };

	put_npy(&b, major, dict, data, n);
	write_file(path, name, b.p, b.n, gz);
	free(b.p);
}

START_TEST(test_npy_good)
{
	char fpath[PATH_MAX], lpath[PATH_MAX];
	float f[12];
	int64_t lab[3] = { 2, 0, 1 };
	struct dt_dataset ds;
	struct dt_error err;
	float x[4];
	int32_t y;
	int64_t idx = 2;

	for (int i = 0; i < 12; i++)
		f[i] = (float)i * 0.5f;
	for (int gz = 0; gz < 2; gz++) {
		write_npy(fpath, gz ? "f.npy.gz" : "f.npy", 1,
			  "{'descr': '<f4', 'fortran_order': False, "
			  "'shape': (3, 2, 2), }", f, sizeof f, gz);
		write_npy(lpath, "l.npy", 2, "{'descr': '<i8', "
			  "'fortran_order': False, 'shape': (3,), }", lab,
			  sizeof lab, 0);
		ck_assert_int_eq(dt_dataset_load_npy(fpath, lpath, 3, 2.0f, &ds,
						     &err), DT_OK);
		ck_assert_int_eq(ds.n, 3);
		ck_assert_int_eq(ds.sample_size, 4);
		ck_assert_int_eq(ds.n_shape, 2);
		ck_assert_int_eq(ds.shape[0], 2);
		ck_assert_int_eq(ds.shape[1], 2);
		dt_dataset_gather(&ds, &idx, 1, x, &y);
		ck_assert_float_eq(x[0], 8.0f);	/* f[8] * scale */
		ck_assert_float_eq(x[3], 11.0f);
		ck_assert_int_eq(y, 1);
		dt_dataset_fini(&ds);
	}
}
END_TEST

START_TEST(test_npy_types)
{
	char fpath[PATH_MAX], lpath[PATH_MAX];
	uint8_t u8[6] = { 0, 255, 7, 8, 9, 10 };
	uint8_t lab8[2] = { 1, 0 };
	double f64[6] = { 1, 2, 3, 4, 5, -6.5 };
	int32_t i32[6] = { -1, 2, -3, 4, -5, 6 };
	int32_t lab32[2] = { 0, 4 };
	struct dt_dataset ds;
	struct dt_npy a;
	struct dt_error err;

	write_npy(fpath, "u8.npy", 1, "{'descr': '|u1', 'fortran_order': "
		  "False, 'shape': (2, 3), }", u8, sizeof u8, 0);
	write_npy(lpath, "lab8.npy", 1, "{'descr': '|u1', 'fortran_order': "
		  "False, 'shape': (2,), }", lab8, sizeof lab8, 0);
	ck_assert_int_eq(dt_dataset_load_npy(fpath, lpath, 2, 1, &ds, &err),
			 DT_OK);
	ck_assert_ptr_nonnull(ds.x_u8);
	ck_assert_ptr_null(ds.x_f32);
	ck_assert_int_eq(ds.x_u8[1], 255);
	ck_assert_int_eq(ds.y[0], 1);
	dt_dataset_fini(&ds);

	/* Double quotes, keys in another order, v3, no trailing comma. */
	write_npy(fpath, "f64.npy", 3, "{\"shape\": (2, 3), \"fortran_order\":"
		  " False, \"descr\": \"<f8\"}", f64, sizeof f64, 0);
	write_npy(lpath, "lab32.npy", 1, "{'descr': '<i4', 'fortran_order': "
		  "False, 'shape': (2,)}", lab32, sizeof lab32, 0);
	ck_assert_int_eq(dt_dataset_load_npy(fpath, lpath, 5, 1, &ds, &err),
			 DT_OK);
	ck_assert_float_eq(ds.x_f32[5], -6.5f);
	ck_assert_int_eq(ds.y[1], 4);
	dt_dataset_fini(&ds);

	write_npy(fpath, "i32.npy", 1, "{'descr': '<i4', 'fortran_order': "
		  "False, 'shape': (2, 3), }", i32, sizeof i32, 0);
	ck_assert_int_eq(dt_dataset_load_npy(fpath, lpath, 5, 1, &ds, &err),
			 DT_OK);
	ck_assert_float_eq(ds.x_f32[4], -5.0f);
	dt_dataset_fini(&ds);

	/* The array reader on its own: a scalar and an empty array. */
	write_npy(fpath, "scalar.npy", 1, "{'descr': '<f8', 'fortran_order': "
		  "False, 'shape': (), }", f64, 8, 0);
	ck_assert_int_eq(dt_npy_read(fpath, &a, &err), DT_OK);
	ck_assert_int_eq(a.n_dims, 0);
	ck_assert_int_eq(a.dtype, DT_NPY_F64);
	ck_assert_double_eq(((double *)a.data)[0], 1.0);
	dt_npy_fini(&a);
	write_npy(fpath, "empty.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (0, 5), }", NULL, 0, 0);
	ck_assert_int_eq(dt_npy_read(fpath, &a, &err), DT_OK);
	ck_assert_int_eq(a.n_dims, 2);
	ck_assert_int_eq(a.dims[1], 5);
	dt_npy_fini(&a);
	ck_assert_int_eq(dt_dataset_load_npy(fpath, lpath, 5, 1, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, fpath, ": no records (shape (0, 5))");
}
END_TEST

START_TEST(test_npy_header_errors)
{
	char path[PATH_MAX];
	float f[4] = { 0 };
	struct dt_npy a;
	struct dt_error err;
	struct bytes b = { 0 };

	/* Header dicts start at byte 10 (v1). */
	write_npy(path, "fortran.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "True, 'shape': (2, 2), }", f, sizeof f, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 44: fortran_order is True: only C-order "
		   "arrays are supported (save np.ascontiguousarray(arr))");
	ck_assert_ptr_null(a.data);

	write_npy(path, "be.npy", 1, "{'descr': '>f4', 'fortran_order': "
		  "False, 'shape': (2, 2), }", f, sizeof f, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 20: dtype '>f4' is not supported: "
		   "expected one of '<f4', '<f8', '|u1', '<i4', '<i8' "
		   "(little-endian float32, float64, uint8, int32, int64); "
		   "this array is big-endian, save it with "
		   "arr.astype(arr.dtype.newbyteorder('<'))");

	write_npy(path, "f2.npy", 1, "{'descr': '<f2', 'fortran_order': "
		  "False, 'shape': (2, 2), }", f, 8, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 20: dtype '<f2' is not supported: "
		   "expected one of '<f4', '<f8', '|u1', '<i4', '<i8' "
		   "(little-endian float32, float64, uint8, int32, int64)");

	write_npy(path, "rec.npy", 1, "{'descr': [('a', '<f4')], "
		  "'fortran_order': False, 'shape': (2,), }", f, 8, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 20: descr is a list: structured arrays "
		   "are not supported; save one plain array per file");

	write_npy(path, "key.npy", 1, "{'descr': '<f4', 'order': False, "
		  "'shape': (2, 2), }", f, sizeof f, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 27: header dict: unknown key 'order' "
		   "(expected 'descr', 'fortran_order' and 'shape')");

	write_npy(path, "nokey.npy", 1, "{'descr': '<f4', 'shape': (2, 2), }",
		  f, sizeof f, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 10: header dict: no 'fortran_order' "
		   "key");

	write_npy(path, "twice.npy", 1, "{'descr': '<f4', 'descr': '<f4', "
		  "'fortran_order': False, 'shape': (2, 2), }", f, sizeof f, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 27: header dict: key 'descr' appears "
		   "twice");

	write_npy(path, "shape.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (2, x), }", f, sizeof f, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 64: shape: expected a dimension (a "
		   "non-negative integer) or ')', found 'x'");

	write_npy(path, "nine.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (1,1,1,1,1,1,1,1,1), }", f, 4, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 77: shape: more than 8 dimensions");

	write_npy(path, "huge.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (4611686018427387904, 4), }", f, 4, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 60: shape: dimension 0 "
		   "(4611686018427387904) makes the data larger than this "
		   "machine can address");

	put_str(&b, "PK\x03\x04 this is a zip");
	write_file(path, "magic.npy", b.p, b.n, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 0: bad magic: an NPY file starts with "
		   "\\x93NUMPY (is this a .npy file?)");

	b.n = 0;
	put(&b, "\x93NUMPY\x04\x00\x10\x00", 10);
	write_file(path, "v4.npy", b.p, b.n, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 6: NPY version 4.0 is not supported "
		   "(1.0, 2.0 and 3.0 are)");

	write_file(path, "short.npy", "\x93NUM", 4, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 4: truncated header: the file ends "
		   "inside the 6-byte magic");
	free(b.p);
}
END_TEST

START_TEST(test_npy_body_errors)
{
	char path[PATH_MAX], lpath[PATH_MAX];
	float f[5] = { 1, 2, NAN, 4, 5 };
	float lab_f[2] = { 0, 1 };
	int32_t lab[3] = { 0, 1, 2 };
	struct dt_npy a;
	struct dt_dataset ds;
	struct dt_error err;
	struct bytes b = { 0 };

	write_npy(path, "cut.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (2, 2), }", f, 12, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 140: truncated: expected 16 bytes of "
		   "data, found 12 (the data starts at byte 128)");

	write_npy(path, "long.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (2, 2), }", f, 20, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 144: trailing data after 144 bytes (4 "
		   "more bytes than the header promises)");

	/* The header length promises more than the file has. */
	put_npy(&b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': "
		"(2, 2), }", f, 16);
	write_file(path, "hcut.npy", b.p, 40, 0);
	ck_assert_int_eq(dt_npy_read(path, &a, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 40: truncated header: expected 118 "
		   "header bytes, the file ends after 30");
	free(b.p);

	/* Dataset-level: shapes, label types, counts, ranges, NaN. */
	write_npy(lpath, "lab.npy", 1, "{'descr': '<i4', 'fortran_order': "
		  "False, 'shape': (3,), }", lab, sizeof lab, 0);
	write_npy(path, "flat.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (4,), }", f, 16, 0);
	ck_assert_int_eq(dt_dataset_load_npy(path, lpath, 3, 1, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 60: features must have 2 to 4 "
		   "dimensions (records, then each sample's shape), found "
		   "shape (4,)");

	write_npy(path, "f22.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (2, 2), }", f, 16, 0);
	ck_assert_int_eq(dt_dataset_load_npy(path, lpath, 3, 1, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": features has 2 records, labels has 3 (%s); "
		   "the two files must describe the same samples", lpath);

	write_npy(lpath, "labf.npy", 1, "{'descr': '<f4', 'fortran_order': "
		  "False, 'shape': (2,), }", lab_f, sizeof lab_f, 0);
	ck_assert_int_eq(dt_dataset_load_npy(path, lpath, 3, 1, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, lpath, ": byte 20: labels must have an integer dtype "
		   "('|u1', '<i4' or '<i8'), found '<f4'");

	write_npy(lpath, "lab2d.npy", 1, "{'descr': '<i4', 'fortran_order': "
		  "False, 'shape': (2, 1), }", lab, 8, 0);
	ck_assert_int_eq(dt_dataset_load_npy(path, lpath, 3, 1, &ds, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, lpath, ": byte 60: labels must be 1-dimensional (one "
		   "label per record), found shape (2, 1)");

	write_npy(lpath, "lab2.npy", 1, "{'descr': '<i4', 'fortran_order': "
		  "False, 'shape': (2,), }", lab + 1, 8, 0);
	ck_assert_int_eq(dt_dataset_load_npy(path, lpath, 2, 1, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, lpath, ": record 1: label 2 out of range [0, 2)");

	ck_assert_int_eq(dt_dataset_load_npy(path, lpath, 3, 1, &ds, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": record 1: feature 0 is NaN (as float32)");
	ck_assert_ptr_null(ds.x_f32);
	ck_assert_ptr_null(ds.y);
}
END_TEST

/* ---- tokens -------------------------------------------------------------- */

START_TEST(test_tokens_good)
{
	char path[PATH_MAX];
	uint16_t t16[10];
	uint32_t t32[7] = { 5, 70000, 3, 9, 1, 2, 0 };
	struct dt_token_data td;
	struct dt_error err;
	int32_t x[8], y[8];
	int64_t idx[2] = { 2, 0 };

	for (int i = 0; i < 10; i++)
		t16[i] = (uint16_t)(100 + i);
	for (int gz = 0; gz < 2; gz++) {
		write_file(path, gz ? "t16.bin.gz" : "t16.bin", t16, sizeof t16,
			   gz);
		/* 10 tokens, context 3, windows apart by 3: starts 0, 3, 6. */
		ck_assert_int_eq(dt_tokens_load(path, 2, 0, 3, 0, &td, &err),
				 DT_OK);
		ck_assert_int_eq(td.n_tokens, 10);
		ck_assert_int_eq(td.n, 3);
		ck_assert_int_eq(td.stride, 3);
		ck_assert_int_eq(td.vocab_size, 110);
		ck_assert_int_eq(td.mapped, !gz);
		dt_tokens_gather(&td, idx, 2, x, y);
		ck_assert_int_eq(x[0], 106);
		ck_assert_int_eq(x[2], 108);
		ck_assert_int_eq(y[0], 107);
		ck_assert_int_eq(y[2], 109);
		ck_assert_int_eq(x[3], 100);
		ck_assert_int_eq(y[5], 103);
		dt_tokens_fini(&td);
	}

	/* Overlapping windows: stride 1 gives n_tokens - context samples. */
	ck_assert_int_eq(dt_tokens_load(path, 2, 200, 4, 1, &td, &err), DT_OK);
	ck_assert_int_eq(td.n, 6);
	ck_assert_int_eq(td.vocab_size, 200);
	idx[0] = 5;
	dt_tokens_gather(&td, idx, 1, x, NULL);
	ck_assert_int_eq(x[0], 105);
	ck_assert_int_eq(x[3], 108);
	dt_tokens_fini(&td);

	write_file(path, "t32.bin", t32, sizeof t32, 0);
	ck_assert_int_eq(dt_tokens_load(path, 4, 0, 2, 2, &td, &err), DT_OK);
	ck_assert_int_eq(td.n, 3);
	ck_assert_int_eq(td.vocab_size, 70001);
	idx[0] = 0;
	dt_tokens_gather(&td, idx, 1, x, y);
	ck_assert_int_eq(x[1], 70000);
	ck_assert_int_eq(y[1], 3);
	dt_tokens_fini(&td);
	dt_tokens_fini(NULL);
}
END_TEST

START_TEST(test_tokens_inputs)
{
	char path[PATH_MAX];
	uint16_t t16[10];
	struct dt_token_data td;
	struct dt_error err;
	int32_t x[5];
	int64_t idx[1] = { 1 };

	for (int i = 0; i < 10; i++)
		t16[i] = (uint16_t)(100 + i);
	write_file(path, "in.bin", t16, sizeof t16, 0);
	/* 10 tokens, windows of 5 inputs at stride 5 with no label after
	 * them: starts 0 and 5 (with labels only 0: 5 + 5 + 1 > 10). */
	ck_assert_int_eq(dt_tokens_load(path, 2, 0, 1, 0, &td, &err), DT_OK);
	ck_assert_int_eq(dt_tokens_window_inputs(&td, path, 5, 0, &err),
			 DT_OK);
	ck_assert_int_eq(td.n, 2);
	ck_assert_int_eq(td.context, 5);
	ck_assert_int_eq(td.stride, 5);
	dt_tokens_gather(&td, idx, 1, x, NULL);
	ck_assert_int_eq(x[0], 105);
	ck_assert_int_eq(x[4], 109);
	/* Exactly one window; stride 3: starts 0, 3, 6 for windows of 4. */
	ck_assert_int_eq(dt_tokens_window_inputs(&td, path, 10, 0, &err),
			 DT_OK);
	ck_assert_int_eq(td.n, 1);
	ck_assert_int_eq(dt_tokens_window_inputs(&td, path, 4, 3, &err),
			 DT_OK);
	ck_assert_int_eq(td.n, 3);
	ck_assert_int_eq(dt_tokens_window_inputs(&td, path, 11, 0, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": 10 tokens, too few for one input of "
		   "context 11");
	dt_tokens_fini(&td);
}
END_TEST

START_TEST(test_tokens_errors)
{
	char path[PATH_MAX];
	uint16_t t16[6] = { 1, 2, 3, 50257, 4, 5 };
	uint32_t big[2] = { 1, 0x80000000u };
	struct dt_token_data td;
	struct dt_error err;

	write_file(path, "odd.bin", t16, 11, 0);
	ck_assert_int_eq(dt_tokens_load(path, 2, 0, 2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 10: the file ends inside a token: 11 "
		   "bytes is not a multiple of 2 (uint16 tokens); is the file "
		   "cut short, or the token type wrong?");
	ck_assert_ptr_null(td.tokens);

	write_file(path, "odd4.bin", t16, 10, 0);
	ck_assert_int_eq(dt_tokens_load(path, 4, 0, 2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 8: the file ends inside a token: 10 "
		   "bytes is not a multiple of 4 (uint32 tokens); is the file "
		   "cut short, or the token type wrong?");

	write_file(path, "vocab.bin", t16, sizeof t16, 0);
	ck_assert_int_eq(dt_tokens_load(path, 2, 50257, 2, 0, &td, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": byte 6: token 50257 (index 3) is not below "
		   "vocab_size 50257");

	ck_assert_int_eq(dt_tokens_load(path, 2, 0, 6, 0, &td, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": 6 tokens, too few for one sample of context "
		   "6 (needs 7)");

	write_file(path, "big.bin", big, sizeof big, 0);
	ck_assert_int_eq(dt_tokens_load(path, 4, 0, 1, 0, &td, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": byte 4: token 2147483648 (index 1) is above "
		   "2147483647, the largest id dtrain handles");

	write_file(path, "empty.bin", "", 0, 0);
	ck_assert_int_eq(dt_tokens_load(path, 2, 0, 1, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 0: empty token file");

	path_of(path, "missing.bin");
	ck_assert_int_eq(dt_tokens_load(path, 2, 0, 1, 0, &td, &err),
			 DT_ERR_IO);
	expect_msg(&err, path, ": cannot open: No such file or directory");
}
END_TEST

/* ---- token shards (llm.c, raw uint16) ------------------------------------ */

/* An llm.c shard: the 256-int32 header (magic, version, count as given)
 * and the tokens. */
static void
llmc_bytes(struct bytes *b, int64_t magic, int64_t version, int64_t count,
	   const uint16_t *tok, size_t n)
{
	memset(b, 0, sizeof *b);
	put_le(b, (uint64_t)magic, 4);
	put_le(b, (uint64_t)version, 4);
	put_le(b, (uint64_t)count, 4);
	for (int i = 3; i < 256; i++)
		put_le(b, 0, 4);
	for (size_t i = 0; i < n; i++)
		put_le(b, tok[i], 2);
}

START_TEST(test_llmc_shards)
{
	char p0[PATH_MAX], p1[PATH_MAX], p2[PATH_MAX];
	char *paths[3] = { p0, p1, p2 };
	uint16_t a[9] = { 10, 11, 12, 13, 14, 15, 16, 17, 18 };
	uint16_t c[7] = { 30, 31, 32, 33, 34, 35, 36 };
	int32_t x[3 * 3], y[3 * 3];
	int64_t idx[3];
	struct dt_token_data td;
	struct dt_error err;
	struct bytes b;
	char *list;

	llmc_bytes(&b, 20240520, 1, 9, a, 9);
	write_file(p0, "s0.bin", b.p, b.n, 0);
	free(b.p);
	/* Too short for a window of 3 and its target: no samples. */
	llmc_bytes(&b, 20240520, 1, 2, a, 2);
	write_file(p1, "s1.bin", b.p, b.n, 0);
	free(b.p);
	llmc_bytes(&b, 20240520, 1, 7, c, 7);
	write_file(p2, "s2.bin", b.p, b.n, 0);
	free(b.p);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 3, DT_TOKFILE_LLMC, 0,
					       3, 0, &td, &err), DT_OK);
	/* s0: 9 tokens, (9 - 3 - 1) / 3 + 1 = 2 windows (starts 0, 3);
	 * s1: none; s2: (7 - 4) / 3 + 1 = 2 (starts 0, 3). */
	ck_assert_int_eq(td.n, 4);
	ck_assert_int_eq(td.n_tokens, 18);
	ck_assert_int_eq(td.vocab_size, 37);
	ck_assert_ptr_null(td.tokens);
	idx[0] = 1;
	idx[1] = 2;
	idx[2] = 3;
	dt_tokens_gather(&td, idx, 3, x, y);
	/* Window 1: s0 from 13; window 2: s2 from 30; window 3: s2 from 33. */
	ck_assert_int_eq(x[0], 13);
	ck_assert_int_eq(x[2], 15);
	ck_assert_int_eq(y[2], 16);
	ck_assert_int_eq(x[3], 30);
	ck_assert_int_eq(y[5], 33);
	ck_assert_int_eq(x[6], 33);
	ck_assert_int_eq(y[8], 36);
	list = dt_tokens_shard_list(&td);
	ck_assert_str_eq(list, "s0.bin\t1042\ns1.bin\t1028\ns2.bin\t1038\n");
	free(list);
	dt_tokens_fini(&td);
	ck_assert_ptr_null(td.shards);

	/* nanoGPT's train.bin: the same ids without a header. */
	write_file(p0, "train.bin", a, sizeof a, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_RAW16, 19,
					       4, 0, &td, &err), DT_OK);
	ck_assert_int_eq(td.n, 2);
	idx[0] = 1;
	dt_tokens_gather(&td, idx, 1, x, y);
	ck_assert_int_eq(x[0], 14);
	ck_assert_int_eq(y[3], 18);
	dt_tokens_fini(&td);
}
END_TEST

/* Each malformed field of the header is refused naming the file, the
 * field and its byte offset. */
START_TEST(test_llmc_header_errors)
{
	char path[PATH_MAX];
	char *paths[1] = { path };
	uint16_t t[6] = { 1, 2, 3, 4, 5, 6 };
	struct dt_token_data td;
	struct dt_error err;
	struct bytes b;

	llmc_bytes(&b, 20240521, 1, 6, t, 6);
	write_file(path, "magic.bin", b.p, b.n, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_LLMC, 0,
					       2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 0: header field magic is 20240521, "
		   "expected 20240520 (an llm.c token shard)");
	ck_assert_ptr_null(td.shards);
	free(b.p);

	llmc_bytes(&b, 20240801, 7, 6, t, 6);
	write_file(path, "llama.bin", b.p, b.n, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_LLMC, 0,
					       2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 0: header field magic is 20240801, "
		   "expected 20240520 (an llm.c token shard); 20240801 is "
		   "llm.c's LLaMA-3 shard with uint32 tokens, not read");
	free(b.p);

	llmc_bytes(&b, 20240520, 2, 6, t, 6);
	write_file(path, "version.bin", b.p, b.n, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_LLMC, 0,
					       2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 4: header field version is 2, "
		   "expected 1 (uint16 tokens)");
	free(b.p);

	/* A count the body does not hold: cut short, or too long. */
	llmc_bytes(&b, 20240520, 1, 7, t, 6);
	write_file(path, "count.bin", b.p, b.n, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_LLMC, 0,
					       2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 8: header field token count is 7, but "
		   "the file's 12 bytes after the header hold 6 uint16 "
		   "tokens; is the file cut short?");
	write_file(path, "half.bin", b.p, b.n - 1, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_LLMC, 0,
					       2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 8: header field token count is 7, but "
		   "the file's 11 bytes after the header hold 5 and a half "
		   "uint16 tokens; is the file cut short?");
	free(b.p);
	llmc_bytes(&b, 20240520, 1, -1, t, 6);
	write_file(path, "neg.bin", b.p, b.n, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_LLMC, 0,
					       2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 8: header field token count is -1, but "
		   "the file's 12 bytes after the header hold 6 uint16 "
		   "tokens; is the file cut short?");

	write_file(path, "cut.bin", b.p, 1000, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_LLMC, 0,
					       2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 1000: the file ends inside the "
		   "1024-byte llm.c header; is it an llm.c token shard?");
	free(b.p);

	/* A token past the vocabulary: its byte counts the header. */
	t[4] = 300;
	llmc_bytes(&b, 20240520, 1, 6, t, 6);
	write_file(path, "vocab.bin", b.p, b.n, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_LLMC, 300,
					       2, 0, &td, &err), DT_ERR_DATA);
	expect_msg(&err, path, ": byte 1032: token 300 (index 4) is not below "
		   "vocab_size 300");
	free(b.p);

	write_file(path, "odd.bin", t, 11, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_RAW16, 0,
					       2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 10: the file ends inside a token: 11 "
		   "bytes is not a multiple of 2 (uint16 tokens)");
	write_file(path, "gz.bin.gz", t, sizeof t, 1);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_RAW16, 0,
					       2, 0, &td, &err),
			 DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 0: a gzip file; shards are mapped as "
		   "they are, so gunzip it first");
	write_file(path, "short.bin", t, 4, 0);
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_RAW16, 0,
					       2, 0, &td, &err), DT_ERR_DATA);
	expect_msg(&err, path, ": 2 tokens in 1 file, none long enough for "
		   "one sample of context 2 (needs 3)");
	path_of(path, "missing.bin");
	ck_assert_int_eq(dt_tokens_open_shards(paths, 1, DT_TOKFILE_RAW16, 0,
					       2, 0, &td, &err), DT_ERR_IO);
	expect_msg(&err, path, ": cannot open: No such file or directory");
}
END_TEST

START_TEST(test_shards_expand)
{
	char pat[PATH_MAX], want[PATH_MAX], p[PATH_MAX];
	char **names;
	int64_t n;
	struct dt_error err;

	ck_assert_int_eq(dt_shards_expand("d/s-{000008..000011}.bin", &names,
					  &n, &err), DT_OK);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(names[0], "d/s-000008.bin");
	ck_assert_str_eq(names[1], "d/s-000009.bin");
	ck_assert_str_eq(names[3], "d/s-000011.bin");
	dt_shards_names_free(names, n);
	/* A list, then a range without padding, left to right. */
	ck_assert_int_eq(dt_shards_expand("{train,val}_{9..10}", &names, &n,
					  &err), DT_OK);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(names[0], "train_9");
	ck_assert_str_eq(names[1], "train_10");
	ck_assert_str_eq(names[2], "val_9");
	ck_assert_str_eq(names[3], "val_10");
	dt_shards_names_free(names, n);
	ck_assert_int_eq(dt_shards_is_pattern("a/b.bin"), 0);
	ck_assert_int_ne(dt_shards_is_pattern("a/*.bin"), 0);
	/* a URL's query is not a wildcard; its path's braces are a pattern */
	ck_assert_int_eq(dt_shards_is_pattern("https://h/x.npy?token=a"), 0);
	ck_assert_int_eq(dt_shards_is_pattern("http://[::1]:80/x.bin"), 0);
	ck_assert_int_eq(dt_shards_is_pattern("http://h/x.bin#a[1]"), 0);
	ck_assert_int_ne(dt_shards_is_pattern("http://h/s{0..2}.bin?t=1"), 0);
	ck_assert_int_ne(dt_shards_is_pattern("http://h/s*.bin?t=1"), 0);
	ck_assert_ptr_null(dt_shards_url_wildcard("https://h/x.bin?a=*"));
	ck_assert_ptr_nonnull(dt_shards_url_wildcard("https://h/*.bin"));
	ck_assert_ptr_null(dt_shards_url_wildcard("data/*.bin"));

	/* A glob: sorted, and only what matches. */
	write_file(p, "g_b.tok", "x", 1, 0);
	write_file(p, "g_a.tok", "x", 1, 0);
	write_file(p, "g_c.other", "x", 1, 0);
	path_of(pat, "g_*.tok");
	ck_assert_int_eq(dt_shards_expand(pat, &names, &n, &err), DT_OK);
	ck_assert_int_eq(n, 2);
	path_of(want, "g_a.tok");
	ck_assert_str_eq(names[0], want);
	path_of(want, "g_b.tok");
	ck_assert_str_eq(names[1], want);
	dt_shards_names_free(names, n);
	path_of(pat, "g_{a,c}.*");
	ck_assert_int_eq(dt_shards_expand(pat, &names, &n, &err), DT_OK);
	ck_assert_int_eq(n, 2);
	path_of(want, "g_c.other");
	ck_assert_str_eq(names[1], want);
	dt_shards_names_free(names, n);

	path_of(pat, "none_*.bin");
	ck_assert_int_eq(dt_shards_expand(pat, &names, &n, &err), DT_ERR_IO);
	ck_assert_ptr_null(names);
	ck_assert_int_eq(n, 0);
	expect_msg(&err, pat, ": no file matches %s", pat);
	ck_assert_int_eq(dt_shards_expand("s{1..3.bin", &names, &n, &err),
			 DT_ERR_DATA);
	ck_assert_str_eq(err.msg, "s{1..3.bin: byte 1: '{' without its '}' "
			 "(braces do not nest)");
	ck_assert_int_eq(dt_shards_expand("s{5..2}", &names, &n, &err),
			 DT_ERR_DATA);
	ck_assert_str_eq(err.msg, "s{5..2}: byte 1: range {5..2} must go up "
			 "and hold at most 1000000 numbers");
	ck_assert_int_eq(dt_shards_expand("s{a..c}", &names, &n, &err),
			 DT_ERR_DATA);
	ck_assert_str_eq(err.msg, "s{a..c}: byte 1: a range must be "
			 "{FIRST..LAST} with decimal numbers");
	ck_assert_int_eq(dt_shards_expand("x/{one}", &names, &n, &err),
			 DT_ERR_DATA);
	ck_assert_str_eq(err.msg, "x/{one}: byte 2: expected a range "
			 "{FIRST..LAST} or a list {a,b,...} inside the braces");
	ck_assert_int_eq(dt_shards_expand("{0..1}{2..3", &names, &n, &err),
			 DT_ERR_DATA);
	ck_assert_str_eq(err.msg, "{0..1}{2..3: byte 6: '{' without its '}' "
			 "(braces do not nest)");
}
END_TEST

/* ---- text ---------------------------------------------------------------- */

START_TEST(test_text_bytes)
{
	char path[PATH_MAX], vpath[PATH_MAX];
	struct dt_vocab v, w;
	struct dt_token_data td;
	struct dt_error err;
	char piece[4];
	int32_t x[4], y[4];
	int64_t idx = 1;
	static const uint32_t want[] = { '\n', ' ', 'a', 'b', 'c' };

	write_text(path, "bytes.txt", "cab ba\nc");
	ck_assert_int_eq(dt_vocab_build(path, DT_TEXT_BYTES, &v, &err), DT_OK);
	ck_assert_int_eq(v.unit, DT_TEXT_BYTES);
	ck_assert_int_eq(v.size, 5);
	for (int i = 0; i < 5; i++)
		ck_assert_uint_eq(v.units[i], want[i]);
	ck_assert_int_eq(dt_vocab_id(&v, 'b'), 3);
	ck_assert_int_eq(dt_vocab_id(&v, 'z'), -1);
	ck_assert_uint_eq(dt_vocab_piece(&v, 4, piece), 1);
	ck_assert_int_eq(piece[0], 'c');

	path_of(vpath, "bytes.vocab");
	ck_assert_int_eq(dt_vocab_save(&v, vpath, &err), DT_OK);
	ck_assert_int_eq(dt_vocab_load(vpath, &w, &err), DT_OK);
	ck_assert_int_eq(w.unit, v.unit);
	ck_assert_int_eq(w.size, v.size);
	ck_assert_mem_eq(w.units, v.units, 5 * sizeof *v.units);

	/* "cab ba\nc": ids 4 2 3 1 3 2 0 4; context 4, stride 4: 1 sample. */
	ck_assert_int_eq(dt_text_encode(path, &w, 3, 2, &td, &err), DT_OK);
	ck_assert_int_eq(td.n_tokens, 8);
	ck_assert_int_eq(td.elem_size, 2);
	ck_assert_int_eq(td.vocab_size, 5);
	ck_assert_int_eq(td.n, 3);
	dt_tokens_gather(&td, &idx, 1, x, y);
	ck_assert_int_eq(x[0], 3);	/* 'b' at position 2 */
	ck_assert_int_eq(x[1], 1);
	ck_assert_int_eq(x[2], 3);
	ck_assert_int_eq(y[2], 2);
	dt_tokens_fini(&td);

	write_text(path, "other.txt", "cabd");
	ck_assert_int_eq(dt_text_encode(path, &w, 1, 0, &td, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": byte 3: byte 0x64 is not in the vocabulary "
		   "(was it built from another text?)");
	dt_vocab_fini(&v);
	dt_vocab_fini(&w);
}
END_TEST

START_TEST(test_text_chars)
{
	/* ASCII, 2-, 3- and 4-byte characters. */
	static const char text[] = "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80"
				   " h\xC3\xA9";
	char path[PATH_MAX], vpath[PATH_MAX], out[64];
	struct dt_vocab v, w;
	struct dt_token_data td;
	struct dt_error err;
	size_t o = 0;
	int64_t idx[1];

	write_file(path, "chars.txt.gz", text, strlen(text), 1);
	ck_assert_int_eq(dt_vocab_build(path, DT_TEXT_CHARS, &v, &err), DT_OK);
	/* ' ' h l o U+00E9 U+2713 U+1F600 */
	ck_assert_int_eq(v.size, 7);
	ck_assert_uint_eq(v.units[0], ' ');
	ck_assert_uint_eq(v.units[4], 0xE9);
	ck_assert_uint_eq(v.units[5], 0x2713);
	ck_assert_uint_eq(v.units[6], 0x1F600);

	path_of(vpath, "chars.vocab");
	ck_assert_int_eq(dt_vocab_save(&v, vpath, &err), DT_OK);
	ck_assert_int_eq(dt_vocab_load(vpath, &w, &err), DT_OK);
	ck_assert_int_eq(w.unit, DT_TEXT_CHARS);

	/* Encoding then decoding every token gives the text back. */
	ck_assert_int_eq(dt_text_encode(path, &w, 1, 1, &td, &err), DT_OK);
	ck_assert_int_eq(td.n_tokens, 12);
	for (int64_t i = 0; i < td.n; i++) {
		int32_t x, y;

		idx[0] = i;
		dt_tokens_gather(&td, idx, 1, &x, &y);
		o += dt_vocab_piece(&w, x, out + o);
		if (i == td.n - 1)
			o += dt_vocab_piece(&w, y, out + o);
	}
	ck_assert_uint_eq(o, strlen(text));
	ck_assert_mem_eq(out, text, o);
	dt_tokens_fini(&td);

	write_text(path, "new.txt", "h\xC3\xA8");
	ck_assert_int_eq(dt_text_encode(path, &w, 1, 0, &td, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": byte 1: character U+00E8 is not in the "
		   "vocabulary (was it built from another text?)");

	write_text(path, "short.txt", "h\xC3\xA9");
	ck_assert_int_eq(dt_text_encode(path, &w, 2, 0, &td, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": 2 tokens, too few for one sample of context "
		   "2 (needs 3)");
	dt_vocab_fini(&v);
	dt_vocab_fini(&w);
}
END_TEST

START_TEST(test_text_bad_utf8)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "ab\xC3(", ": byte 2: invalid UTF-8: byte 0x28 cannot follow "
		  "0xC3" },
		{ "a\xC0\x80", ": byte 1: invalid UTF-8: byte 0xC0 cannot start "
		  "a character" },
		{ "a\x80", ": byte 1: invalid UTF-8: byte 0x80 cannot start a "
		  "character" },
		{ "\xED\xA0\x80", ": byte 0: invalid UTF-8: byte 0xA0 cannot "
		  "follow 0xED (an overlong form, a surrogate or a code point "
		  "above U+10FFFF)" },
		{ "xy\xF4\x90\x80\x80", ": byte 2: invalid UTF-8: byte 0x90 "
		  "cannot follow 0xF4 (an overlong form, a surrogate or a code "
		  "point above U+10FFFF)" },
		{ "ab\xE2\x9C", ": byte 2: invalid UTF-8: the text ends inside "
		  "a 3-byte character" },
	};
	char path[PATH_MAX], want[1024];
	struct dt_vocab v;
	struct dt_error err;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		write_text(path, "bad.txt", cases[i].text);
		ck_assert_int_eq(dt_vocab_build(path, DT_TEXT_CHARS, &v, &err),
				 DT_ERR_FORMAT);
		snprintf(want, sizeof want, "%s (read text that is not UTF-8 "
			 "as bytes)", cases[i].msg);
		expect_msg(&err, path, "%s", want);
		ck_assert_ptr_null(v.units);
		/* As bytes, the same file is fine. */
		ck_assert_int_eq(dt_vocab_build(path, DT_TEXT_BYTES, &v, &err),
				 DT_OK);
		dt_vocab_fini(&v);
	}
	write_text(path, "empty.txt", "");
	ck_assert_int_eq(dt_vocab_build(path, DT_TEXT_BYTES, &v, &err),
			 DT_ERR_DATA);
	expect_msg(&err, path, ": empty text: no vocabulary to build");
}
END_TEST

/* A vocabulary file with a correct CRC for whatever the fields say. */
static void
write_vocab(char *path, const char *name, uint32_t version, uint32_t unit,
	    int64_t count, const uint32_t *units, int n_units)
{
	struct bytes b = { 0 };

	put(&b, "DTVOCAB\0", 8);
	put_le(&b, version, 4);
	put_le(&b, 32, 4);
	put_le(&b, unit, 4);
	put_le(&b, 0, 4);
	put_le(&b, (uint64_t)count, 8);
	for (int i = 0; i < n_units; i++)
		put_le(&b, units[i], 4);
	put_le(&b, crc32_z(0, b.p, b.n), 4);
	write_file(path, name, b.p, b.n, 0);
	free(b.p);
}

START_TEST(test_vocab_file_errors)
{
	static const uint32_t good[] = { 'a', 'b', 0x1F600 };
	static const uint32_t down[] = { 'b', 'a' };
	static const uint32_t surrogate[] = { 'a', 0xD800 };
	char path[PATH_MAX];
	struct dt_vocab v;
	struct dt_error err;
	unsigned char raw[64];
	FILE *f;
	size_t n;

	write_vocab(path, "good.vocab", 1, 2, 3, good, 3);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_OK);
	ck_assert_int_eq(v.size, 3);
	dt_vocab_fini(&v);

	/* One flipped bit in a unit: the CRC catches it. */
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	n = fread(raw, 1, sizeof raw, f);
	fclose(f);
	ck_assert_uint_eq(n, 48);
	raw[36] ^= 1;
	write_file(path, "flip.vocab", raw, n, 0);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	ck_assert_msg(strstr(err.msg, ": byte 44: CRC-32 mismatch: stored "
			     "0x") != NULL, "%s", err.msg);
	ck_assert_ptr_null(v.units);

	write_file(path, "cut.vocab", raw, 40, 0);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 40: truncated: expected 48 bytes, the "
		   "file has 40");

	write_file(path, "hdr.vocab", raw, 20, 0);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 20: truncated header: expected 32 "
		   "bytes, the file has 20");

	write_vocab(path, "down.vocab", 1, 2, 2, down, 2);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 36: unit 97 is not above the one before "
		   "it (98): units must be strictly ascending");

	write_vocab(path, "sur.vocab", 1, 2, 2, surrogate, 2);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 36: unit 55296 is not a valid code "
		   "point");

	write_vocab(path, "byte.vocab", 1, 1, 3, good, 3);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 40: unit 128512 is not a valid byte");

	write_vocab(path, "v2.vocab", 2, 2, 3, good, 3);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 8: version 2 is not supported (1 is)");

	write_vocab(path, "unit.vocab", 1, 7, 3, good, 3);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 16: unit 7, expected 1 (bytes) or 2 "
		   "(chars)");

	write_vocab(path, "count.vocab", 1, 1, 300, good, 3);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 24: count 300 out of range [1, 256]");

	write_vocab(path, "more.vocab", 1, 2, 2, good, 3);
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 44: trailing data after 44 bytes");

	write_text(path, "text.vocab", "a b c d e f g h i j k l m n o p\n");
	ck_assert_int_eq(dt_vocab_load(path, &v, &err), DT_ERR_FORMAT);
	expect_msg(&err, path, ": byte 0: bad magic: a vocabulary file starts "
		   "with DTVOCAB (is this a dtrain vocabulary?)");

	/* Saving where it cannot: an error, and no file left behind. */
	v.unit = DT_TEXT_BYTES;
	v.size = 2;
	v.units = (uint32_t *)down;
	path_of(path, "no-dir/x.vocab");
	ck_assert_int_eq(dt_vocab_save(&v, path, &err), DT_ERR_IO);
	ck_assert_msg(strstr(err.msg, "x.vocab.tmp: cannot create: No such "
			     "file or directory") != NULL, "%s", err.msg);
}
END_TEST

/* ---- the suite ----------------------------------------------------------- */

static void
make_tmpdir(void)
{
	scratch_dir_make(tmpdir, sizeof tmpdir, "formats");
}

static void
remove_tmpdir(void)
{
	scratch_dir_remove(tmpdir);
}

static Suite *
formats_suite(void)
{
	Suite *s = suite_create("formats");
	TCase *tc = tcase_create("csv");

	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_csv_good);
	tcase_add_test(tc, test_csv_targets_and_norm);
	tcase_add_test(tc, test_csv_dialects);
	tcase_add_test(tc, test_csv_errors);
	tcase_add_test(tc, test_csv_values);
	tcase_add_test(tc, test_csv_binary_and_io);
	tcase_add_test(tc, test_gzip_bomb_bounded);
	tcase_add_test(tc, test_csv_wide_first_line);
	suite_add_tcase(s, tc);

	tc = tcase_create("npy");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_npy_good);
	tcase_add_test(tc, test_npy_types);
	tcase_add_test(tc, test_npy_header_errors);
	tcase_add_test(tc, test_npy_body_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("tokens");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_tokens_good);
	tcase_add_test(tc, test_tokens_inputs);
	tcase_add_test(tc, test_tokens_errors);
	tcase_add_test(tc, test_llmc_shards);
	tcase_add_test(tc, test_llmc_header_errors);
	tcase_add_test(tc, test_shards_expand);
	suite_add_tcase(s, tc);

	tc = tcase_create("text");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_text_bytes);
	tcase_add_test(tc, test_text_chars);
	tcase_add_test(tc, test_text_bad_utf8);
	tcase_add_test(tc, test_vocab_file_errors);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(formats_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
