/* SPDX-License-Identifier: MIT */
/* test_util.c - the shared helpers of src/util/: byte order (endian.h),
 * atomic file replacement (fileio.h), zlib's gz* errors (gz.h), JSON
 * numbers (jsonnum.h), the peak resident memory (sysmem.h), the list
 * of CPUs in the affinity mask (cpus.h) and the pages of a paged block
 * handed back and made resident again (alloc.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* sched_setaffinity, CPU_SET */
#endif
#include <check.h>
#include <errno.h>
#include <float.h>
#include <json.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "util/alloc.h"
#include "util/cpus.h"
#include "util/endian.h"
#include "util/fileio.h"
#include "util/gz.h"
#include "util/jsonnum.h"
#include "util/sysmem.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_IS_LE 0
#else
#define HOST_IS_LE 1
#endif

/* ---- byte order --------------------------------------------------------- */

START_TEST(little_endian_fields)
{
	unsigned char b[8];
	static const unsigned char want8[8] = { 0x08, 0x07, 0x06, 0x05,
						0x04, 0x03, 0x02, 0x01 };
	/* 1.0f is 0x3f800000, -2.5f 0xc0200000 (IEEE 754 binary32). */
	static const unsigned char want_f32[8] = { 0x00, 0x00, 0x80, 0x3f,
						   0x00, 0x00, 0x20, 0xc0 };
	const float f[2] = { 1.0f, -2.5f };

	dt_le_put(b, 0x0102030405060708ull, 8);
	ck_assert_mem_eq(b, want8, 8);
	ck_assert_uint_eq(dt_le_get(b, 8), 0x0102030405060708ull);
	ck_assert_uint_eq(dt_le_get(b, 2), 0x0708);
	ck_assert_uint_eq(dt_le_get(b + 4, 4), 0x01020304);
	/* Only the low bytes are written. */
	memset(b, 0xee, sizeof b);
	dt_le_put(b, 0xaabbccdd, 2);
	ck_assert_uint_eq(b[0], 0xdd);
	ck_assert_uint_eq(b[1], 0xcc);
	ck_assert_uint_eq(b[2], 0xee);
	dt_le_put_f32(b, f, 2);
	ck_assert_mem_eq(b, want_f32, 8);
}
END_TEST

START_TEST(swaps)
{
	unsigned char two[4] = { 1, 2, 3, 4 }, four[8] = { 1, 2, 3, 4, 5, 6,
							   7, 8 };
	unsigned char eight[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	unsigned char three[6] = { 1, 2, 3, 4, 5, 6 };
	static const unsigned char two_w[4] = { 2, 1, 4, 3 };
	static const unsigned char four_w[8] = { 4, 3, 2, 1, 8, 7, 6, 5 };
	static const unsigned char eight_w[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
	static const unsigned char three_w[6] = { 3, 2, 1, 6, 5, 4 };
	unsigned char le[4], be[4];
	uint32_t host = 0x11223344, v;

	dt_bswap(two, 2, 2);
	ck_assert_mem_eq(two, two_w, 4);
	dt_bswap(four, 4, 2);
	ck_assert_mem_eq(four, four_w, 8);
	dt_bswap(eight, 8, 1);
	ck_assert_mem_eq(eight, eight_w, 8);
	dt_bswap(three, 3, 2);
	ck_assert_mem_eq(three, three_w, 6);
	/* 0x11223344 in file order becomes the host's number. */
	dt_le_put(le, host, 4);
	dt_le_to_host(le, 4, 1);
	memcpy(&v, le, 4);
	ck_assert_uint_eq(v, host);
	for (int i = 0; i < 4; i++)
		be[i] = (unsigned char)(host >> (24 - 8 * i));
	dt_be_to_host(be, 4, 1);
	memcpy(&v, be, 4);
	ck_assert_uint_eq(v, host);
	ck_assert_int_eq(HOST_IS_LE, le[0] == 0x44);
}
END_TEST

/* ---- atomic replacement ------------------------------------------------- */

static char dir[64];

static void
make_dir(void)
{
	strcpy(dir, "/tmp/dtrain-test-util.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -r %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static enum dt_status
write_text(FILE *out, void *ctx, struct dt_error *err)
{
	(void)err;
	fputs(ctx, out);
	return DT_OK;
}

static enum dt_status
write_half_then_fail(FILE *out, void *ctx, struct dt_error *err)
{
	(void)ctx;
	fputs("half", out);
	return dt_errorf(err, DT_ERR_IO, "disk full");
}

static void
expect_file(const char *path, const char *text)
{
	char buf[64] = "";
	FILE *f = fopen(path, "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
	fclose(f);
	ck_assert_str_eq(buf, text);
}

START_TEST(atomic_write)
{
	char path[128], tmp[160], want[256], small[16];
	struct dt_error err;
	struct stat sb;
	int fds[2];

	make_dir();
	snprintf(path, sizeof path, "%s/out.json", dir);
	ck_assert_int_eq(dt_file_tmp_name(tmp, sizeof tmp, path, &err), DT_OK);
	snprintf(want, sizeof want, "%s.tmp.%ld", path, (long)getpid());
	ck_assert_str_eq(tmp, want);
	ck_assert_int_eq(dt_file_tmp_name(small, sizeof small, path, &err),
			 DT_ERR_IO);
	snprintf(want, sizeof want, "%s: path too long", path);
	ck_assert_str_eq(err.msg, want);

	ck_assert_int_eq(dt_file_write_atomic(path, write_text, "one", &err),
			 DT_OK);
	expect_file(path, "one");
	ck_assert_int_eq(dt_file_write_atomic(path, write_text, "two", &err),
			 DT_OK);
	expect_file(path, "two");
	/* A failed fill keeps the old file and leaves no temporary. */
	ck_assert_int_eq(dt_file_write_atomic(path, write_half_then_fail,
					      NULL, &err), DT_ERR_IO);
	ck_assert_str_eq(err.msg, "disk full");
	expect_file(path, "two");
	ck_assert_int_eq(access(tmp, F_OK), -1);

	/* A rename that cannot happen removes the temporary. */
	expect_file(path, "two");
	ck_assert_int_eq(rename(path, tmp), 0);
	snprintf(want, sizeof want, "%s/no/such", dir);
	ck_assert_int_eq(dt_file_rename(tmp, want, &err), DT_ERR_IO);
	snprintf(want, sizeof want, "%s: cannot rename to %s/no/such: %s",
		 tmp, dir, strerror(ENOENT));
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_eq(access(tmp, F_OK), -1);
	snprintf(want, sizeof want, "%s/no/such", dir);
	ck_assert_int_eq(dt_file_write_atomic(want, write_text, "x", &err),
			 DT_ERR_IO);
	/* Named by the path asked for, not by its temporary name. */
	snprintf(tmp, sizeof tmp, "%s/no/such: cannot create: %s", dir,
		 strerror(ENOENT));
	ck_assert_str_eq(err.msg, tmp);

	/* fsync of a pipe fails (EINVAL); the descriptor is closed all the
	 * same, and an earlier failure is kept. */
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(dt_file_sync_close(fds[0], "the pipe", DT_OK, &err),
			 DT_ERR_IO);
	snprintf(want, sizeof want, "the pipe: fsync failed: %s",
		 strerror(EINVAL));
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_eq(close(fds[0]), -1);
	dt_errorf(&err, DT_ERR_FORMAT, "earlier");
	ck_assert_int_eq(dt_file_sync_close(fds[1], "the pipe", DT_ERR_FORMAT,
					    &err), DT_ERR_FORMAT);
	ck_assert_str_eq(err.msg, "earlier");
	ck_assert_int_eq(close(fds[1]), -1);

	/* A path that is there but not a regular file is refused and left
	 * as it is: a FIFO, a symbolic link (left dangling, not replaced by
	 * a file), a directory. */
	snprintf(want, sizeof want, "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(want, 0644), 0);
	ck_assert_int_eq(dt_file_write_atomic(want, write_text, "x", &err),
			 DT_ERR_IO);
	ck_assert_msg(strstr(err.msg, "/fifo: exists and is not a regular "
			     "file (a FIFO)") != NULL, "%s", err.msg);
	ck_assert_int_eq(lstat(want, &sb), 0);
	ck_assert(S_ISFIFO(sb.st_mode));
	snprintf(want, sizeof want, "%s/link", dir);
	ck_assert_int_eq(symlink(path, want), 0);
	ck_assert_int_eq(dt_file_write_atomic(want, write_text, "x", &err),
			 DT_ERR_IO);
	ck_assert_msg(strstr(err.msg, "/link: exists and is not a regular "
			     "file (a symbolic link)") != NULL, "%s", err.msg);
	ck_assert_int_eq(lstat(want, &sb), 0);
	ck_assert(S_ISLNK(sb.st_mode));
	ck_assert_int_eq(dt_file_write_atomic(dir, write_text, "x", &err),
			 DT_ERR_IO);
	ck_assert_msg(strstr(err.msg, "exists and is not a regular file (a "
			     "directory)") != NULL, "%s", err.msg);
	snprintf(want, sizeof want, "%s.tmp.%ld", dir, (long)getpid());
	ck_assert_int_eq(access(want, F_OK), -1);

	ck_assert_int_eq(dt_file_fsync_dir(dir, &err), DT_OK);
	snprintf(want, sizeof want, "%s/no/such", dir);
	ck_assert_int_eq(dt_file_fsync_dir(want, &err), DT_ERR_IO);
	ck_assert_msg(strstr(err.msg, "/no/such: cannot open directory: ") !=
		      NULL, "%s", err.msg);
	remove_dir();
}
END_TEST

START_TEST(dir_of)
{
	char buf[16];

	ck_assert_int_eq(dt_file_dir_of(buf, sizeof buf, "name"), 0);
	ck_assert_str_eq(buf, ".");
	ck_assert_int_eq(dt_file_dir_of(buf, sizeof buf, "/name"), 0);
	ck_assert_str_eq(buf, "/");
	ck_assert_int_eq(dt_file_dir_of(buf, sizeof buf, "a/b/c"), 0);
	ck_assert_str_eq(buf, "a/b");
	strcpy(buf, "kept");
	ck_assert_int_eq(dt_file_dir_of(buf, sizeof buf,
					"a-long-directory/c"), -1);
	ck_assert_str_eq(buf, "kept");
}
END_TEST

/* ---- gzip streams ------------------------------------------------------- */

/* Writes the gzip compression of 64 KiB of counting bytes to path, less
 * its last cut bytes, with byte flip (if >= 0) of the file inverted. */
static void
write_gz(const char *path, size_t cut, long flip)
{
	unsigned char data[65536], out[70000];
	z_stream z;
	FILE *f;

	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 7 % 251);
	memset(&z, 0, sizeof z);
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = data;
	z.avail_in = sizeof data;
	z.next_out = out;
	z.avail_out = sizeof out;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	if (flip >= 0)
		out[flip] ^= 0xff;
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(out, 1, z.total_out - cut, f),
			  z.total_out - cut);
	fclose(f);
	deflateEnd(&z);
}

/* Reads path through gzread to its end or first error; the status of
 * the stream then, with *off the bytes gzread delivered. */
static enum dt_status
read_all(const char *path, int64_t *off, struct dt_error *err)
{
	unsigned char buf[4096];
	enum dt_status st = DT_OK;
	gzFile f = gzopen(path, "rb");
	int n;

	ck_assert_ptr_nonnull(f);
	*off = 0;
	while ((n = gzread(f, buf, sizeof buf)) == (int)sizeof buf)
		*off += n;
	if (n > 0)
		*off += n;
	st = dt_gz_read_status(f, path, *off, errno, "fetch it anew", err);
	return dt_gz_close(f, path, st, err);
}

START_TEST(gz_errors)
{
	char path[128], want[256];
	struct dt_error err;
	int64_t off;

	make_dir();
	snprintf(path, sizeof path, "%s/a.gz", dir);
	write_gz(path, 0, -1);
	ck_assert_int_eq(read_all(path, &off, &err), DT_OK);
	ck_assert_int_eq(off, 65536);
	/* Cut inside the deflate data: zlib delivers what it can. */
	write_gz(path, 100, -1);
	ck_assert_int_eq(read_all(path, &off, &err), DT_ERR_FORMAT);
	ck_assert_int_lt(off, 65536);
	snprintf(want, sizeof want, "%s: byte %lld: truncated gzip stream: "
		 "unexpected end of file (the .gz file is cut short; fetch it "
		 "again)", path, (long long)off);
	ck_assert_str_eq(err.msg, want);
	/* The stored CRC-32 (trailer bytes -8 .. -5) no longer matches. */
	{
		FILE *f;
		long size;

		write_gz(path, 0, -1);
		f = fopen(path, "rb");
		ck_assert_ptr_nonnull(f);
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fclose(f);
		write_gz(path, 0, size - 8);
	}
	ck_assert_int_eq(read_all(path, &off, &err), DT_ERR_FORMAT);
	snprintf(want, sizeof want, "%s: byte %lld: corrupt gzip stream: "
		 "incorrect data check (fetch it anew)", path, (long long)off);
	ck_assert_str_eq(err.msg, want);
	remove_dir();
}
END_TEST

/* The text json-c writes for o (which is consumed), into buf. */
static const char *
json_text(struct json_object *o, char *buf, size_t size)
{
	snprintf(buf, size, "%s", json_object_to_json_string_ext(
			 o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return buf;
}

/* Numbers in the fewest digits that read back as the same double: the
 * texts are Python's repr of each value (its own shortest round trip,
 * David Gay's algorithm), but for 3e15, which Python writes out in full,
 * each read back bit for bit; not finite: NULL, which json-c writes as
 * null. */
START_TEST(json_numbers)
{
	static const struct {
		double v;
		const char *text;
	} cases[] = {
		{ 0.1, "0.1" }, { 2.5, "2.5" }, { 1e-3, "0.001" },
		{ 1e300, "1e+300" }, { 100, "100.0" }, { -0.75, "-0.75" },
		{ 3e15, "3e+15" }, { 123456, "123456.0" },
		{ 1.0 / 3, "0.3333333333333333" },
		{ 2.3025850929940459, "2.302585092994046" },
		{ 5e-324, "5e-324" },
		{ (double)0.1f, "0.10000000149011612" },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_text(dt_json_number(cases[i].v), buf, sizeof buf);
		ck_assert_str_eq(buf, cases[i].text);
		ck_assert(strtod(buf, NULL) == cases[i].v);
	}
	ck_assert_ptr_null(dt_json_number(NAN));
	ck_assert_ptr_null(dt_json_number(INFINITY));
}
END_TEST

/* Floats in the fewest digits that read back as the same float32: the
 * texts were worked out in Python (the fewest %.Ng digits whose value,
 * rounded to float32 by struct.pack("<f"), is v's float32), each read back to the same float by strtof and by strtod then a cast;
 * never more than 9 significant digits. A double past FLT_MAX keeps its
 * own shortest text rather than becoming inf and null. */
START_TEST(json_floats)
{
	static const struct {
		double v;
		const char *text;
	} cases[] = {
		{ 0.45234512417018414, "0.45234513" },
		{ 0.1, "0.1" }, { (double)0.1f, "0.1" }, { 0.002, "0.002" },
		{ 1.0 / 3, "0.33333334" },
		{ 2.3025850929940459, "2.3025851" },
		{ 123456.789, "123456.79" }, { 5e-05, "5e-05" },
		{ 16777217.0, "16777216.0" }, { 1e10, "10000000000.0" },
		{ 100, "100.0" }, { -0.75, "-0.75" }, { 0, "0.0" },
		{ 1e-45, "1e-45" }, { FLT_MAX, "3.4028235e+38" },
		{ 1e300, "1e+300" },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *d;
		int digits = 0;

		json_text(dt_json_float(cases[i].v), buf, sizeof buf);
		ck_assert_msg(strcmp(buf, cases[i].text) == 0,
			      "%.17g: \"%s\", want \"%s\"", cases[i].v, buf,
			      cases[i].text);
		if (fabs(cases[i].v) > FLT_MAX)
			continue;
		ck_assert(strtof(buf, NULL) == (float)cases[i].v);
		ck_assert((float)strtod(buf, NULL) == (float)cases[i].v);
		for (d = buf; *d != '\0' && *d != 'e'; d++)
			digits += *d >= '1' && *d <= '9' ? 1 : 0;
		ck_assert_int_le(digits, 9);
	}
	ck_assert_ptr_null(dt_json_float(NAN));
	ck_assert_ptr_null(dt_json_float(-INFINITY));
}
END_TEST

/* Times to the microsecond, fixed: rounded, never "-0.000000", never an
 * exponent below 1e15 s. */
START_TEST(json_seconds)
{
	static const struct {
		double v;
		const char *text;
	} cases[] = {
		{ 12.3456789, "12.345679" }, { 0.000123456789, "0.000123" },
		{ 1234567.0, "1234567.000000" }, { 2.0, "2.000000" },
		{ 0.0000126, "0.000013" }, { -0.0000001, "0.000000" },
		{ 0, "0.000000" }, { 86400.25, "86400.250000" },
		{ 1e16, "1e+16" },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_str_eq(json_text(dt_json_seconds(cases[i].v), buf,
					   sizeof buf), cases[i].text);
	ck_assert_ptr_null(dt_json_seconds(-INFINITY));
	ck_assert_ptr_null(dt_json_seconds(NAN));
}
END_TEST

/* ---- peak resident memory ---------------------------------------------- */

/* VmRSS of /proc/self/status in bytes: what is resident now. */
static int64_t
resident_now(void)
{
	char line[256];
	long long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
			break;
	fclose(f);
	ck_assert_int_gt(kb, 0);
	return (int64_t)kb * 1024;
}

/* Touching 64 MiB raises the high-water mark to at least what was
 * resident before plus those 64 MiB (less a few pages), and freeing them
 * does not lower it, while what is resident falls. */
START_TEST(peak_resident)
{
	const size_t n = (size_t)64 << 20;
	int64_t before = 0, after = 0, later = 0, now = resident_now();
	char *buf;

	ck_assert_int_eq(dt_sysmem_peak_resident(&before), 0);
	ck_assert_int_ge(before, now - ((int64_t)1 << 20));
	/* mmap, not malloc: munmap gives the pages back whatever the
	 * allocator (ASan's keeps freed blocks in quarantine). */
	buf = mmap(NULL, n, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(buf, MAP_FAILED);
	memset(buf, 1, n);
	ck_assert_int_eq(((volatile char *)buf)[n - 1], 1);
	ck_assert_int_eq(dt_sysmem_peak_resident(&after), 0);
	ck_assert_int_ge(after, now + (int64_t)n - ((int64_t)1 << 20));
	ck_assert_int_eq(munmap(buf, n), 0);
	ck_assert_int_eq(dt_sysmem_peak_resident(&later), 0);
	/* The kernel's counters of resident pages are per CPU and
	 * approximate: a few hundred KiB either way. */
	ck_assert_int_ge(later, after - ((int64_t)1 << 20));
	ck_assert_int_lt(resident_now(), after - (int64_t)n / 2);
}
END_TEST

/* ---- paged blocks (alloc.h) --------------------------------------------- */

/* Whether each of the n pages from p is resident (mincore), as bits. */
static unsigned
resident_pages(const void *p, int n)
{
	unsigned char vec[8];
	unsigned bits = 0;

	ck_assert_int_le(n, 8);
	ck_assert_int_eq(mincore((void *)p, (size_t)n * (size_t)
				 sysconf(_SC_PAGESIZE), vec), 0);
	for (int i = 0; i < n; i++)
		bits |= (vec[i] & 1u) << i;
	return bits;
}

static long
minor_faults(void)
{
	struct rusage u;

	ck_assert_int_eq(getrusage(RUSAGE_SELF, &u), 0);
	return u.ru_minflt;
}

/* dt_pages_prefault on a block of 4 pages and 10 floats (5 pages): pages 1
 * and 2 handed back (dt_pages_release), then the span [per + 5, 2 per + 1)
 * prefaulted: both pages it lies in are resident again before any write,
 * read as zeros, the other pages keep their floats, and writing them
 * costs no fault; a resident page keeps its data; a read-only mapping
 * (the kernel refuses MADV_POPULATE_WRITE with EINVAL, as a kernel before
 * 5.14 refuses the advice) returns 0 and changes nothing. */
START_TEST(pages_prefault)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const size_t per = page / sizeof(float), n = 4 * per + 10;
	float *b = dt_xalloc_pages(n);	/* (n) */
	volatile float *v = b;
	size_t got;
	long f0;

	for (size_t i = 0; i < n; i++)
		b[i] = (float)(i + 1);
	ck_assert_uint_eq(resident_pages(b, 5), 0x1f);
	ck_assert_uint_eq(dt_pages_release(b, per, 3 * per), 2 * page);
	ck_assert_uint_eq(resident_pages(b, 5), 0x19);
	ck_assert_uint_eq(dt_pages_prefault(b, 7, 7), 0);
	got = dt_pages_prefault(b, per + 5, 2 * per + 1);
	if (got == 0) {
		/* only where the kernel lacks the advice */
		ck_assert_int_ne(madvise(b, page, MADV_POPULATE_WRITE), 0);
		ck_assert_int_eq(errno, EINVAL);
		dt_free_pages(b, n);
		return;
	}
	ck_assert_uint_eq(got, 2 * page);
	ck_assert_uint_eq(resident_pages(b, 5), 0x1f);
	for (size_t i = 0; i < n; i++)
		ck_assert_float_eq(b[i], i >= per && i < 3 * per ? 0.0f :
				   (float)(i + 1));
	f0 = minor_faults();
	for (size_t i = per; i < 3 * per; i += per / 2)
		v[i] = -1.0f;
#ifndef __SANITIZE_ADDRESS__
	/* (AddressSanitizer's own pages fault here: its shadow and the
	 * allocations of minor_faults' stdio; the residency above holds) */
	ck_assert_int_eq(minor_faults() - f0, 0);
#else
	(void)f0;
#endif
	/* resident pages, the last one part of the mapping's only */
	ck_assert_uint_eq(dt_pages_prefault(b, 0, 3), page);
	ck_assert_uint_eq(dt_pages_prefault(b, n - 1, n), page);
	ck_assert_float_eq(b[2], 3.0f);
	ck_assert_float_eq(b[n - 1], (float)n);
	/* refused: nothing done, 0 */
	ck_assert_uint_eq(dt_pages_release(b, 0, per), page);
	ck_assert_int_eq(mprotect(b, 5 * page, PROT_READ), 0);
	ck_assert_uint_eq(dt_pages_prefault(b, 0, 2 * per), 0);
	ck_assert_uint_eq(resident_pages(b, 5), 0x1e);
	ck_assert_float_eq(b[1], 0.0f);
	ck_assert_float_eq(b[per], -1.0f);
	ck_assert_int_eq(mprotect(b, 5 * page, PROT_READ | PROT_WRITE), 0);
	dt_free_pages(b, n);
}
END_TEST

/* Whether page i from p is mapped at all: mincore answers ENOMEM for a
 * page that is not. */
static int
page_mapped(const void *p, size_t i)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char vec[1];

	if (mincore((char *)p + i * page, page, vec) == 0)
		return 1;
	ck_assert_int_eq(errno, ENOMEM);
	return 0;
}

/* A block of 4 pages and 10 floats (5 pages), every float written (all
 * 5 resident), shrunk by dt_pages_shrink to keep floats, keep = 0, per
 * (a page), 2 per + 3 (not page-aligned) and n: it keeps the pages up to
 * the one that holds float keep - 1 (the first page with keep 0, as
 * dt_free_pages(p, 0) frees it), resident with their floats as they
 * were, and unmaps the others (no longer resident, nor mapped); then
 * dt_free_pages(b, keep) unmaps the rest. keep == n (and n = 0 on a
 * block of one page) unmap nothing; a NULL block does nothing. */
START_TEST(pages_shrink)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const size_t per = page / sizeof(float), n = 4 * per + 10;
	const size_t keeps[] = { 0, per, 2 * per + 3, n };
	const size_t pages[] = { 1, 1, 3, 5 };	/* kept, by hand */
	float *b;

	for (size_t k = 0; k < sizeof keeps / sizeof *keeps; k++) {
		b = dt_xalloc_pages(n);
		for (size_t i = 0; i < n; i++)
			b[i] = (float)(i + 1);
		ck_assert_uint_eq(resident_pages(b, 5), 0x1f);
		dt_pages_shrink(b, n, keeps[k]);
		for (size_t i = 0; i < 5; i++)
			ck_assert_int_eq(page_mapped(b, i), i < pages[k]);
		ck_assert_uint_eq(resident_pages(b, (int)pages[k]),
				  (1u << pages[k]) - 1);
		for (size_t i = 0; i < pages[k] * per && i < n; i++)
			ck_assert_float_eq(b[i], (float)(i + 1));
		dt_free_pages(b, keeps[k]);
		ck_assert_int_eq(page_mapped(b, 0), 0);
	}
	/* a block of no floats is one page, kept whole */
	b = dt_xalloc_pages(0);
	b[0] = 7.0f;
	dt_pages_shrink(b, 0, 0);
	ck_assert_int_eq(page_mapped(b, 0), 1);
	ck_assert_float_eq(b[0], 7.0f);
	dt_free_pages(b, 0);
	dt_pages_shrink(NULL, n, 0);
}
END_TEST

/* Sets this process's mask to the CPUs of list (-1 ends it); 0 if the
 * kernel refused (a CPU not online). */
static int
set_mask(const int *list)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; list[i] >= 0; i++)
		CPU_SET(list[i], &set);
	return sched_setaffinity(0, sizeof set, &set) == 0;
}

START_TEST(cpu_list)
{
	static const struct {
		int cpus[5];
		const char *list;
	} cases[] = {
		{ { 0, -1 }, "0" },
		{ { 1, -1 }, "1" },
		{ { 0, 1, -1 }, "0-1" },
		{ { 0, 2, 3, -1 }, "0,2-3" },
		{ { 1, 3, -1 }, "1,3" },
	};
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t saved;
	char buf[64], small[5];

	ck_assert_int_eq(sched_getaffinity(0, sizeof saved, &saved), 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int n = 0;

		while (cases[i].cpus[n] >= 0)
			n++;
		if (cases[i].cpus[n - 1] >= online || !set_mask(cases[i].cpus))
			continue;
		ck_assert_int_eq(dt_cpus_allowed_list(buf, sizeof buf), n);
		ck_assert_str_eq(buf, cases[i].list);
		ck_assert_int_eq(dt_cpus_allowed(), n);
	}
	/* Too long for the buffer: cut, with "..." at its end. */
	if (online >= 4 && set_mask((const int[]){ 0, 2, 3, -1 })) {
		ck_assert_int_eq(dt_cpus_allowed_list(small, sizeof small), 3);
		ck_assert_str_eq(small, "0...");
	}
	ck_assert_int_eq(sched_setaffinity(0, sizeof saved, &saved), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("util");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, little_endian_fields);
	tcase_add_test(tc, swaps);
	tcase_add_test(tc, atomic_write);
	tcase_add_test(tc, dir_of);
	tcase_add_test(tc, gz_errors);
	tcase_add_test(tc, json_numbers);
	tcase_add_test(tc, json_floats);
	tcase_add_test(tc, json_seconds);
	tcase_add_test(tc, peak_resident);
	tcase_add_test(tc, cpu_list);
	tcase_add_test(tc, pages_prefault);
	tcase_add_test(tc, pages_shrink);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
