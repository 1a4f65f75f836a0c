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
 * Prints "rank R: progress_us U, done after K tests, sums ok" and exits
 * 0, or names the first wrong value and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dist/comm.h"

#define N (1 << 20)

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
	for (int i = 0; i < N; i++)
		d[i] = (double)((rank + 1) * (i % 5 + 1));
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
	for (int i = 0; i < N && !bad; i++) {
		double want = size * (size + 1) / 2.0 * (i % 5 + 1);

		if (d[i] != want) {
			printf("rank %d: element %d: %.17g, expected %.17g\n",
			       rank, i, d[i], want);
			bad = 1;
		}
	}
	printf("rank %d: progress_us %lld, done after %d tests%s\n", rank,
	       (long long)c->progress_us, tests, bad ? "" : ", sums ok");
	fflush(stdout);
	dt_comm_free(c);
	dt_comm_free(world);
	return bad;
}
