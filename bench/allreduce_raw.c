/* SPDX-License-Identifier: MIT */
/* allreduce_raw.c - the time of one gradient all-reduce alone, for
 * bench/cluster.sh: the same bytes as a training step sums, on the same
 * ranks and links, with no training around it.
 *
 *   mpirun ... allreduce_raw [--hier|--hier-scatter|--ring] [--iters N] BYTES f32|f64
 *
 * Sums BYTES / 4 floats (f32) or BYTES / 8 doubles (f64) in place over
 * every rank, N times (default 10) after 2 untimed warm-up sums. Flat:
 * dt_comm_allreduce_sum_*, which is one MPI_Allreduce (MPI_IN_PLACE) per
 * 2^30 elements and nothing else (src/comm/comm_mpi.c), so this is the
 * raw MPI time; run it under `--mca coll_han_priority 100` for Open MPI's
 * coll/han. --hier: through dt_comm_hier_new_form in mode on with the
 * reduce form (src/comm/hier.c: node reduce, one rank per host, node
 * broadcast); --hier-scatter: the scatter form (node reduce-scatter, a
 * rank per host and part, node all-gather); --ring (f64 only): the exact
 * mode's own sum of the same doubles, dt_comm_allreduce_sum_f64_f32 (a
 * reduce-scatter of doubles, an all-gather of the rounded floats:
 * src/comm/comm_mpi.c). Every sum starts after a barrier; its
 * time is the slowest rank's (a maximum over the ranks, not timed).
 * Rank 0 prints one line:
 *   "allreduce BYTES bytes f32 ranks P hosts H flat: median M ms min m ms
 *    (N sums)"
 * A benchmark: it asserts nothing; exit 1 on a usage or MPI error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"
#include "comm/hier.h"
#include "util/alloc.h"

#define WARMUP 2

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int
usage(void)
{
	fprintf(stderr, "usage: allreduce_raw [--hier|--hier-scatter|--ring] "
		"[--iters N] BYTES f32|f64\n");
	return 1;
}

int
main(int argc, char **argv)
{
	struct dt_error err = { 0 };
	struct dt_comm *world, *h = NULL, *c;
	int hier = 0, ring = 0, iters = 10, f64, i = 1, hosts = 1;
	int per_host = 1;
	float *out = NULL;
	long long bytes;
	size_t n, elem;
	void *buf;
	double *t;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--hier") == 0)
			hier = 1;
		else if (strcmp(argv[i], "--hier-scatter") == 0)
			hier = 2;
		else if (strcmp(argv[i], "--ring") == 0)
			ring = 1;
		else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
			iters = atoi(argv[++i]);
		else
			return usage();
	}
	if (argc - i != 2 || iters < 1 || (strcmp(argv[i + 1], "f32") != 0 &&
					    strcmp(argv[i + 1], "f64") != 0))
		return usage();
	bytes = atoll(argv[i]);
	f64 = strcmp(argv[i + 1], "f64") == 0;
	if (ring && (!f64 || hier))
		return usage();
	elem = f64 ? sizeof(double) : sizeof(float);
	if (bytes < (long long)elem)
		return usage();
	n = (size_t)bytes / elem;
	if (dt_comm_mpi_new(&world, &err) != DT_OK) {
		fprintf(stderr, "allreduce_raw: %s\n", err.msg);
		return 1;
	}
	if (dt_comm_hier_new_form(world, hier ? DT_HIER_ON : DT_HIER_OFF,
				  hier == 2 ? DT_HIER_FORM_SCATTER :
					      DT_HIER_FORM_REDUCE,
				  &h, &hosts, &per_host, &err) != DT_OK) {
		fprintf(stderr, "allreduce_raw: %s\n", err.msg);
		dt_comm_abort(world, 1);
	}
	c = h != NULL ? h : world;
	buf = dt_xcalloc(n, elem);	/* (n) the gradient stand-in */
	if (ring)
		out = dt_xcalloc(n, sizeof *out);	/* (n) its floats */
	t = dt_xmalloc((size_t)iters, sizeof *t);
	for (int k = 0; k < WARMUP + iters; k++) {
		double t0;
		int us;
		enum dt_status st;

		if (dt_comm_barrier(c, &err) != DT_OK)
			break;
		t0 = now_s();
		st = ring ? dt_comm_allreduce_sum_f64_f32(c, buf, out, n, &err)
		     : f64 ? dt_comm_allreduce_sum_f64(c, buf, n, &err)
			   : dt_comm_allreduce_sum_f32(c, buf, n, &err);
		/* The slowest rank's time, in whole microseconds (the
		 * communicator's maximum is over ints). */
		us = (int)((now_s() - t0) * 1e6 + 0.5);
		if (st != DT_OK ||
		    dt_comm_allreduce_max_int(world, &us, 1, &err) != DT_OK)
			break;
		if (k >= WARMUP)
			t[k - WARMUP] = us * 1e-3;
	}
	if (err.msg[0] != '\0') {
		fprintf(stderr, "allreduce_raw: %s\n", err.msg);
		dt_comm_abort(world, 1);
	}
	qsort(t, (size_t)iters, sizeof *t, cmp_double);
	if (dt_comm_rank(world) == 0)
		printf("allreduce %lld bytes %s ranks %d hosts %d %s: median "
		       "%.3f ms min %.3f ms (%d sums)\n", bytes,
		       f64 ? "f64" : "f32", dt_comm_size(world), hosts,
		       ring ? "ring" : h == NULL ? "flat" :
		       dt_comm_hier_form(h) == DT_HIER_FORM_SCATTER ?
		       "hier-scatter" : "hier", t[iters / 2], t[0], iters);
	dt_comm_free(h);
	dt_comm_free(world);
	free(buf);
	free(out);
	free(t);
	return 0;
}
