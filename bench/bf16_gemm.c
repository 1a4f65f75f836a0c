/* SPDX-License-Identifier: MIT */
/* bf16_gemm.c - the kernel seam's product in f32 (OpenBLAS) and in bf16
 * (oneDNN, train.precision: bf16) at the shipped jobs' and GPT-2's
 * shapes, one thread, for bench/README.
 *
 *   bf16_gemm [SECONDS]
 *
 * Each shape runs dt_kern_sgemm for about SECONDS (default 0.3) of the
 * thread's CPU time at each precision, after one call that makes the
 * primitive, and prints the GFLOP/s (2 m n k a call) over that CPU time;
 * bf16 includes the rounding of both inputs to bf16. Run with
 * OPENBLAS_NUM_THREADS=1. A benchmark: it asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "graph/kern.h"
#include "util/alloc.h"

/* m, n, k, trans_a, trans_b, and what the product is. */
static const struct {
	int64_t m, n, k;
	int ta, tb;
	const char *what;
} shapes[] = {
	{ 512, 128, 128, 0, 0, "char-GPT attention projection" },
	{ 512, 512, 128, 0, 0, "char-GPT fc" },
	{ 512, 128, 512, 0, 0, "char-GPT proj" },
	{ 128, 128, 512, 1, 0, "char-GPT dW" },
	{ 48, 256, 784, 0, 0, "MLP first layer (micro-batch 48)" },
	{ 64, 6272, 288, 0, 0, "CNN conv2 forward (32 samples)" },
	{ 288, 6272, 64, 1, 0, "CNN conv2 dcol" },
	{ 1024, 3072, 768, 0, 0, "GPT-2 fc at T 1024" },
};

static double
cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double
rate(int bf16, int64_t m, int64_t n, int64_t k, int ta, int tb,
     const float *a, const float *b, float *c, double secs)
{
	int64_t lda = ta ? m : k, ldb = tb ? k : n, calls = 0;
	double t0, t;

	dt_kern_set_bf16(bf16);
	dt_kern_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
	t0 = cpu_now();
	do {
		dt_kern_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
			      n);
		calls++;
	} while ((t = cpu_now() - t0) < secs);
	dt_kern_set_bf16(0);
	return 2.0 * (double)(m * n * k) * (double)calls / t * 1e-9;
}

int
main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.3;
	size_t len = (size_t)1 << 22;
	float *a = dt_xalloc_floats(len), *b = dt_xalloc_floats(len);
	float *c = dt_xalloc_floats(len);

	if (dt_kern_bf16_missing() != NULL) {
		printf("bf16: this CPU lacks %s\n", dt_kern_bf16_missing());
		return 0;
	}
	for (size_t i = 0; i < len; i++) {
		a[i] = (float)(i % 7) * 0.1f - 0.3f;
		b[i] = (float)(i % 5) * 0.1f - 0.2f;
	}
	printf("    m x n x k          f32    bf16  GFLOP/s   product\n");
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		double f = rate(0, shapes[s].m, shapes[s].n, shapes[s].k,
				shapes[s].ta, shapes[s].tb, a, b, c, secs);
		double h = rate(1, shapes[s].m, shapes[s].n, shapes[s].k,
				shapes[s].ta, shapes[s].tb, a, b, c, secs);

		printf("%5lld x %4lld x %4lld %7.1f %7.1f  (%.2fx)  %s\n",
		       (long long)shapes[s].m, (long long)shapes[s].n,
		       (long long)shapes[s].k, f, h, h / f, shapes[s].what);
	}
	free(a);
	free(b);
	free(c);
	return 0;
}
