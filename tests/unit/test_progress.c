/* SPDX-License-Identifier: MIT */
/* test_progress.c - the progress line and log lines (train/progress.c):
 * the one time-span format, the plain line with its ISO 8601 UTC time,
 * DTRAIN_PROGRESS_TTY over the caller's choice, and the ticker that
 * redraws the line between logged steps with the times moved on; the
 * task line of an evaluation or a file being read (after its delay, on
 * a terminal only) and the readers' meter that feeds it. The expected
 * strings are worked out by hand from the numbers given. */
#define _GNU_SOURCE 1	/* strptime, timegm */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "data/data.h"
#include "train/progress.h"
#include "util/meter.h"
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
	dt_progress_eval(&p, 5, 0.25, 0.875, NAN);
	dt_progress_eval(&p, 6, 0.5, 0.25, 1.75);
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
	ck_assert_int_eq(strncmp(last + 21, "eval at step 5: loss 0.2500 "
				 "accuracy 0.8750\n", 44), 0);
	/* A language model's adds its perplexity. */
	last = strchr(last, '\n') + 1;
	ck_assert_str_eq(last + 21, "eval at step 6: loss 0.5000 accuracy "
			 "0.2500 perplexity 1.7500\n");
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

START_TEST(resumed_eta_counts_this_run)
{
	FILE *f = tmpfile();
	struct dt_progress p;
	char *s;

	unsetenv("DTRAIN_PROGRESS_TTY");
	dt_progress_init(&p, f, 0, 20);
	/* Resumed at step 10: 5 steps in the 10 s since, 2 s a step, and 5
	 * steps left, 10 s (not 10 / 15 s a step, 3 s). */
	dt_progress_from_step(&p, 10);
	dt_progress_step(&p, 15, 0, 1.5, 0.01, 100, 10.0, 0);
	dt_progress_end(&p);
	s = slurp(f);
	ck_assert_str_eq(s + 21, "step 15/20 epoch 0 loss 1.500000 lr 0.01 "
			 "samples/s 100 eta 0m10s\n");
	free(s);
	fclose(f);

	f = tmpfile();
	setenv("DTRAIN_PROGRESS_TTY", "1", 1);
	dt_progress_init(&p, f, 0, 100);
	dt_progress_from_step(&p, 50);
	/* 10 steps in 20 s since step 50, 40 left: 80 s. */
	dt_progress_step(&p, 60, 1, 0.5, 0.1, 200, 20.0, 1);
	dt_progress_end(&p);
	s = slurp(f);
	ck_assert_str_eq(s, "\r\033[Kstep 60/100  epoch 1  loss 0.5000  200 "
			 "samples/s  0m20s  ETA 1m20s\n");
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

/* A task of 10000 samples, 3200 done 0.6 s in: after the delay its line
 * shows the count, the elapsed time and the ETA at the rate so far
 * (0.6 / 3200 x 6800 s: about 1.3 s), redrawn by the ticker; at its end
 * the line is cleared and nothing follows. */
START_TEST(task_line_after_its_delay)
{
	FILE *f = tmpfile();
	struct dt_progress p;
	char *s, *last = NULL, *end;
	int em, es, am, as, draws = 0;
	long done, total;

	unsetenv("DTRAIN_PROGRESS_TTY");
	dt_progress_init(&p, f, 1, 100);
	dt_progress_task_begin(&p, "eval", 10000, 0);
	dt_progress_task_update(&p, 100);	/* before the delay: nothing */
	fflush(f);
	ck_assert_int_eq(ftell(f), 0);
	usleep(600 * 1000);
	dt_progress_task_update(&p, 3200);
	sleep(2);				/* the ticker redraws it */
	dt_progress_task_end(&p);
	dt_progress_end(&p);
	s = slurp(f);
	for (char *q = s; (q = strstr(q, "\r\033[Keval ")) != NULL; q++) {
		draws++;
		last = q;
	}
	ck_assert_int_ge(draws, 2);
	ck_assert_int_eq(sscanf(last, "\r\033[Keval %ld/%ld  %dm%ds  ETA "
				"%dm%ds", &done, &total, &em, &es, &am, &as), 6);
	ck_assert_int_eq(done, 3200);
	ck_assert_int_eq(total, 10000);
	ck_assert_int_eq(em, 0);
	ck_assert_int_ge(es, 2);
	ck_assert_int_le(es, 4);
	/* The ETA at the rate of 3200 in es s: 6800 more take 2.1 x es. */
	ck_assert_int_ge(am * 60 + as, (int)(2.125 * es) - 2);
	ck_assert_int_le(am * 60 + as, (int)(2.125 * es) + 2);
	end = s + strlen(s) - 4;
	ck_assert_str_eq(end, "\r\033[K");
	ck_assert_ptr_null(strchr(s, '\n'));
	free(s);
	fclose(f);
}
END_TEST

/* A quick task shows nothing, and none shows off a terminal. */
START_TEST(task_quiet_when_quick_or_plain)
{
	FILE *f = tmpfile();
	struct dt_progress p;

	unsetenv("DTRAIN_PROGRESS_TTY");
	dt_progress_init(&p, f, 1, 100);
	dt_progress_task_begin(&p, "eval", 10, 0);
	dt_progress_task_update(&p, 10);
	dt_progress_task_end(&p);
	dt_progress_end(&p);
	fflush(f);
	ck_assert_int_eq(ftell(f), 0);
	dt_progress_init(&p, f, 0, 100);
	dt_progress_task_begin(&p, "eval", 10000, 0);
	usleep(600 * 1000);
	dt_progress_task_update(&p, 5000);
	sleep(1);
	dt_progress_task_end(&p);
	dt_progress_end(&p);
	fflush(f);
	ck_assert_int_eq(ftell(f), 0);
	fclose(f);
}
END_TEST

struct seen {
	char what[128];
	int64_t total, last, updates;
	int begins, ends, backwards;
};

static void
seen_begin(void *ctx, const char *what, int64_t total)
{
	struct seen *s = ctx;

	snprintf(s->what, sizeof s->what, "%s", what);
	s->total = total;
	s->begins++;
}

static void
seen_update(void *ctx, int64_t done)
{
	struct seen *s = ctx;

	s->backwards += done < s->last;
	s->last = done;
	s->updates++;
}

static void
seen_end(void *ctx)
{
	((struct seen *)ctx)->ends++;
}

/* dt_idx_read of a gzip IDX file of 40000 bytes of data reports through
 * the thread's meter: "read NAME", the compressed size as the total,
 * counts that only grow and end at it; without a meter nothing is
 * called. Then the meter's bytes become a task of a progress line. */
START_TEST(readers_report_to_the_meter)
{
	char path[] = "/tmp/test_progress_idxXXXXXX";
	unsigned char head[16] = { 0, 0, 8, 3, 0, 0, 0, 100, 0, 0, 0, 20,
				   0, 0, 0, 20 };
	static unsigned char body[40000];
	struct seen seen = { .last = 0 };
	struct dt_meter m = { seen_begin, seen_update, seen_end, &seen };
	struct dt_error err;
	struct dt_idx idx;
	struct stat sb;
	char want[64];
	int fd = mkstemp(path);
	gzFile g;

	ck_assert_int_ge(fd, 0);
	close(fd);
	for (size_t i = 0; i < sizeof body; i++)
		body[i] = (unsigned char)(i * 7919 >> 3);
	g = gzopen(path, "wb");
	ck_assert_ptr_nonnull(g);
	ck_assert_int_eq(gzwrite(g, head, sizeof head), (int)sizeof head);
	ck_assert_int_eq(gzwrite(g, body, sizeof body), (int)sizeof body);
	ck_assert_int_eq(gzclose(g), Z_OK);
	ck_assert_int_eq(stat(path, &sb), 0);

	ck_assert_ptr_null(dt_meter_use(&m));
	ck_assert_int_eq(dt_idx_read(path, &idx, &err), DT_OK);
	ck_assert_ptr_eq(dt_meter_use(NULL), &m);
	dt_idx_fini(&idx);
	ck_assert_int_eq(seen.begins, 1);
	ck_assert_int_eq(seen.ends, 1);
	snprintf(want, sizeof want, "read %s", strrchr(path, '/') + 1);
	ck_assert_str_eq(seen.what, want);
	ck_assert_int_eq(seen.total, (int64_t)sb.st_size);
	ck_assert_int_gt(seen.updates, 0);
	ck_assert_int_eq(seen.backwards, 0);
	ck_assert_int_eq(seen.last, (int64_t)sb.st_size);
	/* No meter: nothing more is called. */
	ck_assert_int_eq(dt_idx_read(path, &idx, &err), DT_OK);
	dt_idx_fini(&idx);
	ck_assert_int_eq(seen.begins, 1);
	unlink(path);
}
END_TEST

/* The meter of a progress line shows bytes as MB. */
START_TEST(meter_bytes_as_mb)
{
	FILE *f = tmpfile();
	struct dt_progress p;
	struct dt_meter m;
	const char *head;
	char *s;
	int em, es, am, as;

	unsetenv("DTRAIN_PROGRESS_TTY");
	dt_progress_init(&p, f, 1, 0);
	dt_progress_meter(&p, &m);
	dt_meter_use(&m);
	dt_meter_begin("read", "/data/x/train-images-idx3-ubyte.gz",
		       45600000);
	usleep(600 * 1000);
	dt_meter_update(12300000);
	dt_meter_end();
	dt_meter_use(NULL);
	dt_progress_end(&p);
	s = slurp(f);
	head = "\r\033[Kread train-images-idx3-ubyte.gz 12.3/45.6 MB  ";
	ck_assert_msg(strncmp(s, head, strlen(head)) == 0, "%s", s);
	/* 0.6 s for 12.3 MB: 33.3 MB more take about 1.6 s. */
	ck_assert_int_eq(sscanf(s + strlen(head), "%dm%ds  ETA %dm%ds", &em,
				&es, &am, &as), 4);
	ck_assert_int_eq(em * 60 + es, 1);
	ck_assert_int_eq(am * 60 + as, 2);
	ck_assert_str_eq(s + strlen(s) - 4, "\r\033[K");
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
	tcase_add_test(tc, resumed_eta_counts_this_run);
	tcase_add_test(tc, ticker_moves_the_times);
	tcase_add_test(tc, task_line_after_its_delay);
	tcase_add_test(tc, task_quiet_when_quick_or_plain);
	tcase_add_test(tc, readers_report_to_the_meter);
	tcase_add_test(tc, meter_bytes_as_mb);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
