/* SPDX-License-Identifier: MIT */
/* test_tfevents.c - Check suite for src/util/tfevents.c: CRC-32C against
 * the published check values, and an event file read back by a decoder
 * written here from the format description (tfevents.h), field by field. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/tfevents.h"

START_TEST(test_crc32c_known)
{
	static const unsigned char zeros[32] = { 0 };
	unsigned char ones[32], inc[32];

	/* The CRC catalogue's check value for CRC-32C. */
	ck_assert_uint_eq(dt_crc32c(0, "123456789", 9), 0xe3069283u);
	/* RFC 3720 appendix B.4. */
	memset(ones, 0xff, sizeof ones);
	for (int i = 0; i < 32; i++)
		inc[i] = (unsigned char)i;
	ck_assert_uint_eq(dt_crc32c(0, zeros, 32), 0x8a9136aau);
	ck_assert_uint_eq(dt_crc32c(0, ones, 32), 0x62a8ab43u);
	ck_assert_uint_eq(dt_crc32c(0, inc, 32), 0x46dd794eu);
	/* Continuing a CRC equals one pass. */
	ck_assert_uint_eq(dt_crc32c(dt_crc32c(0, "1234", 4), "56789", 5),
			  0xe3069283u);
	ck_assert_uint_eq(dt_crc32c_mask(0), 0xa282ead8u);
	ck_assert_uint_eq(dt_crc32c_mask(0x12345678u),
			  ((0x12345678u >> 15) | (0x12345678u << 17)) +
			  0xa282ead8u);
}
END_TEST

/* ---- a decoder, from the format description ----------------------- */

struct rd {
	const unsigned char *p, *end;
};

static uint64_t
le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint64_t
varint(struct rd *r)
{
	uint64_t v = 0;
	int shift = 0;

	for (;;) {
		ck_assert(r->p < r->end && shift < 64);
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		shift += 7;
		if ((*r->p++ & 0x80) == 0)
			return v;
	}
}

struct event {
	double wall_time;
	int64_t step;
	char version[32];
	char tag[64];
	float value;
	int has_value;
};

static void
decode_value(struct rd r, struct event *e)
{
	while (r.p < r.end) {
		uint64_t key = varint(&r);

		if (key == (1 << 3 | 2)) {
			uint64_t n = varint(&r);

			ck_assert(n < sizeof e->tag && r.p + n <= r.end);
			memcpy(e->tag, r.p, n);
			e->tag[n] = '\0';
			r.p += n;
		} else if (key == (2 << 3 | 5)) {
			uint32_t u = (uint32_t)le(r.p, 4);

			memcpy(&e->value, &u, 4);
			e->has_value = 1;
			r.p += 4;
		} else {
			ck_abort_msg("unexpected Value field key %llu",
				     (unsigned long long)key);
		}
	}
}

static void
decode_event(struct rd r, struct event *e)
{
	memset(e, 0, sizeof *e);
	while (r.p < r.end) {
		uint64_t key = varint(&r), n;

		switch (key) {
		case 1 << 3 | 1: {
			uint64_t u = le(r.p, 8);

			memcpy(&e->wall_time, &u, 8);
			r.p += 8;
			break;
		}
		case 2 << 3 | 0:
			e->step = (int64_t)varint(&r);
			break;
		case 3 << 3 | 2:
			n = varint(&r);
			ck_assert(n < sizeof e->version);
			memcpy(e->version, r.p, n);
			r.p += n;
			break;
		case 5 << 3 | 2: {	/* Summary { repeated Value value = 1 } */
			struct rd s;

			n = varint(&r);
			s.p = r.p;
			s.end = r.p + n;
			ck_assert_uint_eq(varint(&s), 1 << 3 | 2);
			n = varint(&s);
			ck_assert(s.p + n == s.end);	/* one value */
			decode_value((struct rd){ s.p, s.end }, e);
			r.p = s.end;
			break;
		}
		default:
			ck_abort_msg("unexpected Event field key %llu",
				     (unsigned long long)key);
		}
	}
}

/* Reads every record of the file, checking both CRCs. */
static int
read_events(const char *path, struct event *ev, int max)
{
	static unsigned char file[1 << 16];
	FILE *f = fopen(path, "rb");
	size_t n, off = 0;
	int k = 0;

	ck_assert_ptr_nonnull(f);
	n = fread(file, 1, sizeof file, f);
	fclose(f);
	while (off < n) {
		uint64_t len;

		ck_assert(off + 12 <= n);
		len = le(file + off, 8);
		ck_assert_uint_eq((uint32_t)le(file + off + 8, 4),
				  dt_crc32c_mask(dt_crc32c(0, file + off, 8)));
		ck_assert(off + 12 + len + 4 <= n && k < max);
		ck_assert_uint_eq((uint32_t)le(file + off + 12 + len, 4),
				  dt_crc32c_mask(dt_crc32c(0, file + off + 12,
							   len)));
		decode_event((struct rd){ file + off + 12,
					  file + off + 12 + len }, &ev[k++]);
		off += 12 + len + 4;
	}
	return k;
}

START_TEST(test_scalars_read_back)
{
	char dir[] = "/tmp/dtrain-test-tfevents.XXXXXX";
	struct dt_tfevents *w;
	struct dt_error err;
	struct event ev[8];
	char path[4096];
	struct dirent *d;
	DIR *dp;
	int n, files = 0;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(dt_tfevents_open(dir, &w, &err), DT_OK);
	ck_assert_int_eq(dt_tfevents_scalar(w, "train/loss", 1, 1700000000.25,
					    2.302585, &err), DT_OK);
	ck_assert_int_eq(dt_tfevents_scalar(w, "train/lr", 300, 1700000001.5,
					    1e-3, &err), DT_OK);
	ck_assert_int_eq(dt_tfevents_scalar(w, "eval/accuracy", 1LL << 40,
					    1700000002.0, 0.875, &err), DT_OK);
	snprintf(path, sizeof path, "%s", dt_tfevents_path(w));
	ck_assert_int_eq(dt_tfevents_close(w, &err), DT_OK);

	/* TensorBoard finds files by this name pattern. */
	dp = opendir(dir);
	while ((d = readdir(dp)) != NULL)
		if (strncmp(d->d_name, "events.out.tfevents.", 20) == 0)
			files++;
	closedir(dp);
	ck_assert_int_eq(files, 1);

	n = read_events(path, ev, 8);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(ev[0].version, "brain.Event:2");
	ck_assert(ev[0].wall_time > 1.6e9);
	ck_assert_str_eq(ev[1].tag, "train/loss");
	ck_assert_int_eq(ev[1].step, 1);
	ck_assert(ev[1].wall_time == 1700000000.25);
	ck_assert(ev[1].has_value && ev[1].value == 2.302585f);
	ck_assert_str_eq(ev[2].tag, "train/lr");
	ck_assert_int_eq(ev[2].step, 300);
	ck_assert(ev[2].value == 1e-3f);
	ck_assert_str_eq(ev[3].tag, "eval/accuracy");
	ck_assert_int_eq(ev[3].step, 1LL << 40);
	ck_assert(ev[3].value == 0.875f);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_errors)
{
	struct dt_tfevents *w = (void *)1;
	struct dt_error err;
	char tag[300];

	ck_assert_int_eq(dt_tfevents_open("/nonexistent/dir", &w, &err),
			 DT_ERR_IO);
	ck_assert_ptr_null(w);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/dir/events.out."
				     "tfevents."));
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot create"));
	ck_assert_int_eq(dt_tfevents_open("/tmp", &w, &err), DT_OK);
	memset(tag, 'a', sizeof tag - 1);
	tag[sizeof tag - 1] = '\0';
	ck_assert_int_eq(dt_tfevents_scalar(w, tag, 1, 0, 1, &err),
			 DT_ERR_USAGE);
	ck_assert_int_eq(dt_tfevents_scalar(w, "x", -1, 0, 1, &err),
			 DT_ERR_USAGE);
	unlink(dt_tfevents_path(w));
	ck_assert_int_eq(dt_tfevents_close(w, &err), DT_OK);
	ck_assert_int_eq(dt_tfevents_close(NULL, &err), DT_OK);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("tfevents");
	TCase *tc = tcase_create("tfevents");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_crc32c_known);
	tcase_add_test(tc, test_scalars_read_back);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
