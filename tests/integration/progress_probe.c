/* SPDX-License-Identifier: MIT */
/* progress_probe.c - the progress thread of the non-blocking sums
 * (dt_comm_mpi_new_watched's progress_us) under mpirun, for
 * tests/integration/progress.sh:
 *
 *   progress_probe US
 *
 * Every rank starts a non-blocking sum of N doubles on a split of the
 * world (as the trainer's sums run on the stage's communicator), rank r
 * holding (r + 1) x (i % 5 + 1) at i, whose sum over P ranks is exactly
 * P (P + 1) / 2 x (i % 5 + 1); then makes no MPI call for 300 ms; then
 * counts the dt_comm_coll_test calls, 1 ms apart, until the sum is done
 * (at most 5000), waits for it and checks every value. A sum of N
 * doubles between processes takes many turns of Open MPI's progress
 * engine (a ring in rounds, messages in fragments), so without a thread
 * it is not done at the first test after the pause; with one it is.
 * Prints "rank R: progress_us U, done after K tests, sums ok". Then two
 * sums of N/2 doubles each, started one after the other: after
 * dt_comm_coll_wait_first(1) the first holds its sum (checked before the
 * second is waited for), after dt_comm_coll_wait the second; prints
 * "rank R: first of two sums ok after wait_first, then the second".
 * Exits 0, or names the first wrong value and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "comm/comm.h"

#define N (1 << 20)

/* The first wrong value of d[0..n), rank r of size holding
 * (r + 1) x (i % m + 1) at i before the sum, printed with what; 0 when
 * every one is right. */
static int
check(const double *d, int n, int m, int rank, int size, const char *what)
{
	for (int i = 0; i < n; i++) {
		double want = size * (size + 1) / 2.0 * (i % m + 1);

		if (d[i] != want) {
			printf("rank %d: %s: element %d: %.17g, expected "
			       "%.17g\n", rank, what, i, d[i], want);
			return 1;
		}
	}
	return 0;
}

static void
fill(double *d, int n, int m, int rank)
{
	for (int i = 0; i < n; i++)
		d[i] = (double)((rank + 1) * (i % m + 1));
}

static void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int
main(int argc, char **argv)
{
	static double d[N];
	struct dt_error err = { 0 };
	struct dt_comm *world, *c = NULL;
	int rank, size, done = 0, tests = 0, bad = 0;
	long us;

	if (argc != 2 || (us = strtol(argv[1], NULL, 10)) < 0) {
		fprintf(stderr, "usage: progress_probe US\n");
		return 1;
	}
	if (dt_comm_mpi_new_watched(&world, 0, us, &err) != DT_OK ||
	    dt_comm_split(world, 0, dt_comm_rank(world), &c, &err) != DT_OK) {
		fprintf(stderr, "progress_probe: %s\n", err.msg);
		return 1;
	}
	rank = dt_comm_rank(c);
	size = dt_comm_size(c);
	fill(d, N, 5, rank);
	if (dt_comm_iallreduce_sum_f64(c, d, N, &err) != DT_OK) {
		fprintf(stderr, "progress_probe: %s\n", err.msg);
		dt_comm_abort(world, 1);
	}
	pause_ms(300);
	while (!done && tests < 5000) {
		if (dt_comm_coll_test(c, &done, &err) != DT_OK) {
			fprintf(stderr, "progress_probe: %s\n", err.msg);
			dt_comm_abort(world, 1);
		}
		tests++;
		if (!done)
			pause_ms(1);
	}
	if (dt_comm_coll_wait(c, &err) != DT_OK) {
		fprintf(stderr, "progress_probe: %s\n", err.msg);
		dt_comm_abort(world, 1);
	}
	bad = check(d, N, 5, rank, size, "the sum");
	printf("rank %d: progress_us %lld, done after %d tests%s\n", rank,
	       (long long)c->progress_us, tests, bad ? "" : ", sums ok");

	fill(d, N / 2, 7, rank);
	fill(d + N / 2, N / 2, 3, rank);
	if (dt_comm_iallreduce_sum_f64(c, d, N / 2, &err) != DT_OK ||
	    dt_comm_iallreduce_sum_f64(c, d + N / 2, N / 2, &err) != DT_OK ||
	    dt_comm_coll_wait_first(c, 1, &err) != DT_OK) {
		fprintf(stderr, "progress_probe: %s\n", err.msg);
		dt_comm_abort(world, 1);
	}
	bad |= check(d, N / 2, 7, rank, size, "first of two sums");
	if (dt_comm_coll_wait(c, &err) != DT_OK) {
		fprintf(stderr, "progress_probe: %s\n", err.msg);
		dt_comm_abort(world, 1);
	}
	bad |= check(d + N / 2, N / 2, 3, rank, size, "second of two sums");
	if (!bad)
		printf("rank %d: first of two sums ok after wait_first, then "
		       "the second\n", rank);
	fflush(stdout);
	dt_comm_free(c);
	dt_comm_free(world);
	return bad;
}
