/* SPDX-License-Identifier: MIT */
/* test_hosts.c - the hosts of an elastic launch (launch/hosts.c): a hostfile
 * with comments, a host named twice and a line without slots=, its
 * refusals (a line longer than the reader's buffer, whose tail was once
 * read as a host of its own; slots that add up past an int), where the
 * ranks go when hosts are lost, the hostfile written
 * back, and the probe against a stand-in for mpirun (a shell script that
 * answers, fails or never answers, by the host it is given). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "launch/hosts.h"

static char dir[64];

static void
setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_hosts.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Writes text to DIR/name; the path into path (256 bytes). */
static void
put(const char *name, const char *text, char *path)
{
	FILE *f;

	snprintf(path, 256, "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* The file's text, at most 255 bytes. */
static void
slurp(const char *path, char *buf)
{
	FILE *f = fopen(path, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, 255, f);
	buf[n] = '\0';
	fclose(f);
}

/* a: 2 + 1 slots over two lines, b: no slots= (1), c: 4. */
static void
read_abc(struct dt_hosts *h)
{
	char path[256];
	struct dt_error err;

	put("hosts", "# the cluster\na slots=2 max_slots=8\n\n"
	    "b   # no slots\nc slots=4\na slots=1\n", path);
	ck_assert_int_eq(dt_hosts_read(path, h, &err), DT_OK);
}

START_TEST(read_merges_and_counts)
{
	struct dt_hosts h;

	read_abc(&h);
	ck_assert_int_eq(h.n, 3);
	ck_assert_str_eq(h.h[0].name, "a");
	ck_assert_int_eq(h.h[0].slots, 3);
	ck_assert_str_eq(h.h[1].name, "b");
	ck_assert_int_eq(h.h[1].slots, 1);
	ck_assert_str_eq(h.h[2].name, "c");
	ck_assert_int_eq(h.h[2].slots, 4);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(h.h[i].alive, 1);
	ck_assert_int_eq(dt_hosts_slots(&h), 8);
	dt_hosts_fini(&h);
}
END_TEST

START_TEST(read_refusals)
{
	char path[256], want[300];
	struct dt_hosts h;
	struct dt_error err;

	put("bad", "a slots=2\nb slots=0\n", path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_ERR_USAGE);
	snprintf(want, sizeof want, "%s:2: \"slots=0\": expected slots=N", path);
	ck_assert_msg(strstr(err.msg, want) != NULL, "%s", err.msg);
	ck_assert_int_eq(h.n, 0);
	put("word", "a slots=2x\n", path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_ERR_USAGE);
	put("empty", "# nobody\n\n", path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_ERR_USAGE);
	ck_assert_msg(strstr(err.msg, "names no host") != NULL, "%s",
		      err.msg);
	snprintf(path, sizeof path, "%s/missing", dir);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_ERR_IO);
}
END_TEST

/* Reads text as DIR/name; expects DT_ERR_USAGE with "PATH:" then want in
 * the message. */
static void
refused(const char *name, const char *text, const char *want)
{
	char path[256], full[600];
	struct dt_hosts h;
	struct dt_error err;

	put(name, text, path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_ERR_USAGE);
	snprintf(full, sizeof full, "%s:%s", path, want);
	ck_assert_msg(strstr(err.msg, full) != NULL, "%s", err.msg);
	ck_assert_int_eq(h.n, 0);
}

/* Reads text as DIR/name; expects one host with slots slots. */
static void
one_host(const char *name, const char *text, int slots)
{
	char path[256];
	struct dt_hosts h;
	struct dt_error err;

	put(name, text, path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_OK);
	ck_assert_int_eq(h.n, 1);
	ck_assert_int_eq(h.h[0].slots, slots);
	dt_hosts_fini(&h);
}

/* What Open MPI 4.1's mpirun took of each line (tried): "slots = 2" is 2
 * slots, max_slots=N alone N, count= and cpu= are slots=; the rest it
 * refuses, and so does dtrain now (each was 1 slot before). */
START_TEST(read_open_mpi_grammar)
{
	one_host("sp", "localhost slots = 2\n", 2);
	one_host("sp2", "localhost slots= 3 # three\n", 3);
	one_host("max", "localhost max_slots=4\n", 4);
	one_host("both", "localhost slots=2 max-slots=5\n", 2);
	one_host("count", "localhost count=6\n", 6);
	one_host("cpu", "localhost\tcpu=7\n", 7);
	one_host("v6", "fe80::1 slots=2\n", 2);
	refused("typo", "a\nlocalhost sluts=2\n",
		"2: \"sluts=2\": expected slots=N or max_slots=N");
	refused("bare", "localhost slots=2 foo\n",
		"1: \"foo\": expected slots=N or max_slots=N");
	refused("maxbad", "localhost max_slots=0\n",
		"1: \"max_slots=0\": expected max_slots=N with N from 1");
	refused("mpich", "localhost:2\n", "1: \"localhost:2\": HOST:N is "
		"MPICH's form, not Open MPI's; write \"localhost slots=2\"");
	refused("twice", "localhost slots=1 slots=3\n",
		"1: \"slots=3\": slots given twice");
	refused("twicemax", "localhost max_slots=1 slots_max=3\n",
		"1: \"slots_max=3\": max_slots given twice");
	refused("lt", "localhost slots=3 max_slots=2\n",
		"1: max_slots=2 is less than slots=3");
}
END_TEST

/* Writes n lines of line to DIR/name; the path into path (256 bytes). */
static void
put_lines(const char *name, const char *line, int n, char *path)
{
	FILE *f;

	snprintf(path, 256, "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < n; i++)
		fputs(line, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* A comment of 5000 bytes, spaces then " evil slots=7": read whole, it is
 * a comment; cut at the 4095 bytes of the old buffer, its tail made a
 * host "evil" with 7 slots. Refused now, naming line 2; a line of
 * DT_HOSTS_LINE_MAX bytes and its newline still reads. */
START_TEST(read_refuses_long_lines)
{
	char path[256], want[400], *text = malloc(8192);
	struct dt_hosts h;
	struct dt_error err;
	size_t at;

	ck_assert_ptr_nonnull(text);
	strcpy(text, "a slots=2\n#");
	at = strlen(text);
	memset(text + at, ' ', 5000);
	strcpy(text + at + 5000 - 13, " evil slots=7\nb\n");
	put("long", text, path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_ERR_USAGE);
	snprintf(want, sizeof want, "%s:2: line longer than 4094 bytes",
		 path);
	ck_assert_msg(strstr(err.msg, want) != NULL, "%s", err.msg);
	ck_assert_int_eq(h.n, 0);
	/* 4094 bytes: "c slots=3", spaces, then the newline. */
	strcpy(text, "c slots=3");
	memset(text + 9, ' ', DT_HOSTS_LINE_MAX - 9);
	strcpy(text + DT_HOSTS_LINE_MAX, "\nd\n");
	put("edge", text, path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_OK);
	ck_assert_int_eq(h.n, 2);
	ck_assert_int_eq(h.h[0].slots, 3);
	ck_assert_str_eq(h.h[1].name, "d");
	dt_hosts_fini(&h);
	free(text);
}
END_TEST

/* 2048 lines of slots=1048576 added up to 2^31, past an int; the file
 * is refused at the line where the sum passes 2^20, whether the lines
 * name one host or many, and 2^20 in all still reads. */
START_TEST(read_bounds_slot_sums)
{
	char path[256], want[400];
	struct dt_hosts h;
	struct dt_error err;

	put_lines("one", "a slots=1048576\n", 2048, path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_ERR_USAGE);
	snprintf(want, sizeof want, "%s:2: the hosts' slots add up to more "
		 "than 1048576", path);
	ck_assert_msg(strstr(err.msg, want) != NULL, "%s", err.msg);
	ck_assert_int_eq(h.n, 0);
	put("many", "a slots=1048575\nb slots=1\nc slots=1\n", path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_ERR_USAGE);
	snprintf(want, sizeof want, "%s:3: the hosts' slots add up", path);
	ck_assert_msg(strstr(err.msg, want) != NULL, "%s", err.msg);
	put("full", "a slots=1048575\nb slots=1\n", path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_OK);
	ck_assert_int_eq(dt_hosts_slots(&h), 1048576);
	dt_hosts_fini(&h);
}
END_TEST

START_TEST(placement_fills_slots_in_order)
{
	struct dt_hosts h, before;
	char buf[256];

	read_abc(&h);
	ck_assert_int_eq(dt_hosts_placement(&h, 5, buf, sizeof buf), 3);
	ck_assert_str_eq(buf, "a (ranks 0-2), b (rank 3), c (rank 4)");
	ck_assert_int_eq(dt_hosts_placement(&h, 2, buf, sizeof buf), 1);
	ck_assert_str_eq(buf, "a (ranks 0-1)");
	/* Past the 8 slots (--oversubscribe): 3 more, one to each host,
	 * as mpirun puts them; before, ranks 8-10 were on no host. */
	ck_assert_int_eq(dt_hosts_placement(&h, 11, buf, sizeof buf), 3);
	ck_assert_str_eq(buf, "a (ranks 0-3), b (ranks 4-5), c (ranks 6-10)");
	/* 5 more: 1 to each host, and 1 to each of the first two. */
	ck_assert_int_eq(dt_hosts_placement(&h, 13, buf, sizeof buf), 3);
	ck_assert_str_eq(buf, "a (ranks 0-4), b (ranks 5-7), c (ranks 8-12)");
	before.n = h.n;
	before.h = malloc((size_t)h.n * sizeof *h.h);
	memcpy(before.h, h.h, (size_t)h.n * sizeof *h.h);
	h.h[1].alive = 0;
	ck_assert_int_eq(dt_hosts_slots(&h), 7);
	ck_assert_int_eq(dt_hosts_placement(&h, 7, buf, sizeof buf), 2);
	ck_assert_str_eq(buf, "a (ranks 0-2), c (ranks 3-6)");
	h.h[1].probe = DT_HOST_SILENT;
	ck_assert_int_eq(dt_hosts_lost(&h, &before, 8, 10.0, buf, sizeof buf),
			 1);
	ck_assert_str_eq(buf, "b (rank 3: no answer to a probe within 10 s)");
	h.h[2].alive = 0;
	h.h[2].probe = 255;
	ck_assert_int_eq(dt_hosts_lost(&h, &before, 8, 10.0, buf, sizeof buf),
			 2);
	ck_assert_str_eq(buf, "b (rank 3: no answer to a probe within 10 s), "
			 "c (ranks 4-7: its probe failed, exit 255)");
	h.h[2].probe = DT_HOST_UNPROBED;
	ck_assert_int_eq(dt_hosts_lost(&h, &before, 8, 12.0, buf, sizeof buf),
			 2);
	ck_assert_str_eq(buf, "b (rank 3: no answer to a probe within 12 s), "
			 "c (ranks 4-7: no probe could be started)");
	/* A short buffer is cut, still terminated. */
	ck_assert_int_eq(dt_hosts_lost(&h, &before, 8, 10.0, buf, 6), 2);
	ck_assert_str_eq(buf, "b (ra");
	free(before.h);
	dt_hosts_fini(&h);
}
END_TEST

START_TEST(write_keeps_the_alive)
{
	struct dt_hosts h;
	struct dt_error err;
	char path[256], text[256];

	read_abc(&h);
	h.h[1].alive = 0;
	snprintf(path, sizeof path, "%s/out", dir);
	ck_assert_int_eq(dt_hosts_write(&h, path, &err), DT_OK);
	slurp(path, text);
	ck_assert_str_eq(text, "a slots=3\nc slots=4\n");
	dt_hosts_fini(&h);
}
END_TEST

/* The stand-in for mpirun gets the probe's hostfile as $0: "dead" never
 * answers, "bad" fails, the others answer. */
START_TEST(probe_marks_silent_and_failing_hosts)
{
	static const char script[] =
		"read h rest <\"$0\"; case $h in dead) exec sleep 30 ;; "
		"bad) exit 1 ;; esac; exit 0";
	const char *argv[] = { "/bin/sh", "-c", script, NULL, NULL };
	char path[256];
	struct dt_hosts h;
	struct dt_error err;
	struct timespec t0, t1;
	double s;

	put("hosts", "live1 slots=2\ndead\nlive2\nbad\nskipped\n", path);
	ck_assert_int_eq(dt_hosts_read(path, &h, &err), DT_OK);
	h.h[4].alive = 0;	/* lost before: not probed, stays lost */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	dt_hosts_probe(&h, argv, 3, dir, 1.0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	ck_assert_int_eq(h.h[0].alive, 1);
	ck_assert_int_eq(h.h[1].alive, 0);
	ck_assert_int_eq(h.h[2].alive, 1);
	ck_assert_int_eq(h.h[3].alive, 0);
	ck_assert_int_eq(h.h[4].alive, 0);
	/* Why: the sleeper timed out, "bad" exited 1. */
	ck_assert_int_eq(h.h[0].probe, 0);
	ck_assert_int_eq(h.h[1].probe, DT_HOST_SILENT);
	ck_assert_int_eq(h.h[3].probe, 1);
	/* Bounded by the timeout, not by the sleeper's 30 s. */
	ck_assert_msg(s >= 1.0 && s < 10.0, "probe took %.2f s", s);
	/* The probe's own hostfiles are gone. */
	snprintf(path, sizeof path, "%s/probe-1", dir);
	ck_assert_int_ne(access(path, F_OK), 0);
	dt_hosts_fini(&h);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("hosts");
	TCase *tc = tcase_create("hosts");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, read_merges_and_counts);
	tcase_add_test(tc, read_refusals);
	tcase_add_test(tc, read_open_mpi_grammar);
	tcase_add_test(tc, read_refuses_long_lines);
	tcase_add_test(tc, read_bounds_slot_sums);
	tcase_add_test(tc, placement_fills_slots_in_order);
	tcase_add_test(tc, write_keeps_the_alive);
	tcase_add_test(tc, probe_marks_silent_and_failing_hosts);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
