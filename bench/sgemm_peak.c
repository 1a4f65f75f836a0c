/* SPDX-License-Identifier: MIT */
/* sgemm_peak.c - the sgemm peak of this machine, for bench/side-by-side.sh.
 *
 *   sgemm_peak THREADS [SECONDS]
 *
 * Multiplies square 1024 float matrices through the kernel seam
 * (graph/kern.h) on THREADS BLAS threads for about SECONDS (default 1)
 * and prints the median GFLOP/s of the calls (2*1024^3 FLOPs each) as one
 * number, so a script can take it. The median of many short calls rather
 * than one long one: on a shared machine a call that waited for a core is
 * an outlier, not the rule. A benchmark: it asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "graph/kern.h"
#include "util/alloc.h"

#define N 1024
#define MAX_CALLS 1000

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	double seconds = argc > 2 ? atof(argv[2]) : 1.0;
	float *a = dt_xalloc_floats((size_t)N * N);	/* (N, N) */
	float *b = dt_xalloc_floats((size_t)N * N);	/* (N, N) */
	float *c = dt_xalloc_floats((size_t)N * N);	/* (N, N) */
	double t[MAX_CALLS], start;
	int n = 0;

	if (threads < 1 || seconds <= 0.0) {
		fprintf(stderr, "usage: sgemm_peak THREADS [SECONDS]\n");
		return 2;
	}
	for (size_t i = 0; i < (size_t)N * N; i++) {
		a[i] = (float)(i % 7) * 0.25f - 0.5f;
		b[i] = (float)(i % 5) * 0.125f - 0.25f;
	}
	dt_kern_set_threads(threads);
	/* one call to start the BLAS threads and warm the caches */
	dt_kern_sgemm(0, 0, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
	start = now();
	while (n < MAX_CALLS && (n < 3 || now() - start < seconds)) {
		double t0 = now();

		dt_kern_sgemm(0, 0, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
		t[n++] = now() - t0;
	}
	qsort(t, (size_t)n, sizeof t[0], cmp_double);
	printf("%.1f\n", 2.0 * N * N * N / t[n / 2] * 1e-9);
	free(a);
	free(b);
	free(c);
	return 0;
}
