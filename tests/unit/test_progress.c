/* SPDX-License-Identifier: MIT */
/* test_progress.c - the progress line and log lines (train/progress.c):
 * the one time-span format, the plain line with its ISO 8601 UTC time,
 * DTRAIN_PROGRESS_TTY over the caller's choice, and the ticker that
 * redraws the line between logged steps with the times moved on. The
 * expected strings are worked out by hand from the numbers given. */
#define _GNU_SOURCE 1	/* strptime, timegm */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/progress.h"
#include "util/span.h"

/* The whole of f as a NUL-terminated heap string. */
static char *
slurp(FILE *f)
{
	long n;
	char *s;

	fflush(f);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	s = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(s);
	rewind(f);
	ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	return s;
}

START_TEST(span_format)
{
	static const struct { double s; const char *want; } cases[] = {
		{ 0, "0m00s" }, { 59.4, "0m59s" }, { 59.6, "1m00s" },
		{ 3599, "59m59s" }, { 3600, "1h00m" }, { 3725, "1h02m" },
		{ 90061, "25h01m" }, { -3, "0m00s" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		dt_fmt_span(buf, sizeof buf, cases[i].s);
		ck_assert_str_eq(buf, cases[i].want);
	}
}
END_TEST

START_TEST(plain_line_has_utc_time)
{
	FILE *f = tmpfile();
	struct dt_progress p;
	struct tm tm;
	char *s, *last, rest[256];
	time_t before = time(NULL), at;

	unsetenv("DTRAIN_PROGRESS_TTY");
	dt_progress_init(&p, f, 0, 20);
	/* 10 s for 5 steps: 2 s a step, 15 steps left: 30 s. */
	dt_progress_step(&p, 5, 0, 1.5, 0.01, 100, 10.0, 0);
	dt_progress_eval(&p, 5, 0.25, 0.875);
	dt_progress_end(&p);
	s = slurp(f);
	memset(&tm, 0, sizeof tm);
	ck_assert_ptr_nonnull(strptime(s, "%Y-%m-%dT%H:%M:%SZ ", &tm));
	at = timegm(&tm);
	ck_assert_int_ge(at, before);
	ck_assert_int_le(at, time(NULL));
	ck_assert_int_eq(s[19], 'Z');
	snprintf(rest, sizeof rest, "%s", s + 21);
	*strchr(rest, '\n') = '\0';
	ck_assert_str_eq(rest, "step 5/20 epoch 0 loss 1.500000 lr 0.01 "
			 "samples/s 100 eta 0m30s");
	/* The evaluation line: a time of its own, then the numbers. */
	last = strchr(s, '\n') + 1;
	ck_assert_ptr_nonnull(strptime(last, "%Y-%m-%dT%H:%M:%SZ ", &tm));
	ck_assert_str_eq(last + 21, "eval at step 5: loss 0.2500 accuracy "
			 "0.8750\n");
	free(s);
	fclose(f);
}
END_TEST

START_TEST(env_decides_the_kind)
{
	FILE *f = tmpfile();
	struct dt_progress p;
	char *s;

	setenv("DTRAIN_PROGRESS_TTY", "1", 1);
	dt_progress_init(&p, f, 0, 100);
	dt_progress_step(&p, 10, 1, 0.5, 0.1, 200, 10.0, 1);
	dt_progress_end(&p);
	s = slurp(f);
	/* 1 s a step, 90 left. */
	ck_assert_str_eq(s, "\r\033[Kstep 10/100  epoch 1  loss 0.5000  200 "
			 "samples/s  0m10s  ETA 1m30s\n");
	free(s);
	fclose(f);

	f = tmpfile();
	setenv("DTRAIN_PROGRESS_TTY", "0", 1);
	dt_progress_init(&p, f, 1, 100);
	dt_progress_step(&p, 10, 1, 0.5, 0.1, 200, 10.0, 1);
	dt_progress_end(&p);
	s = slurp(f);
	ck_assert_ptr_nonnull(strstr(s, "Z step 10/100 epoch 1 loss 0.500000"));
	ck_assert_ptr_null(strchr(s, '\r'));
	free(s);
	fclose(f);
	unsetenv("DTRAIN_PROGRESS_TTY");
}
END_TEST

START_TEST(ticker_moves_the_times)
{
	FILE *f = tmpfile();
	struct dt_progress p;
	char *s, *last = NULL;
	int draws = 0, em, es, am, as;

	unsetenv("DTRAIN_PROGRESS_TTY");
	dt_progress_init(&p, f, 1, 100);
	dt_progress_step(&p, 10, 0, 0.5, 0.1, 200, 10.0, 1);
	sleep(3);
	dt_progress_end(&p);
	s = slurp(f);
	for (char *q = s; (q = strstr(q, "\r\033[K")) != NULL; q++) {
		draws++;
		last = q;
	}
	/* The step's own draw, then one a second. */
	ck_assert_int_ge(draws, 2);
	ck_assert_int_eq(sscanf(last, "\r\033[Kstep 10/100  epoch 0  loss "
				"0.5000  200 samples/s  %dm%ds  ETA %dm%ds",
				&em, &es, &am, &as), 4);
	/* Elapsed 10 s at the step, the ETA 90 s: both moved by the
	 * seconds since, by the same amount. */
	ck_assert_int_eq(em, 0);
	ck_assert_int_gt(es, 10);
	ck_assert_int_le(es, 14);
	ck_assert_int_eq(am * 60 + as, 100 - es);
	ck_assert_int_eq(s[strlen(s) - 1], '\n');
	free(s);
	fclose(f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("progress");
	TCase *tc = tcase_create("progress");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, span_format);
	tcase_add_test(tc, plain_line_has_utc_time);
	tcase_add_test(tc, env_decides_the_kind);
	tcase_add_test(tc, ticker_moves_the_times);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
