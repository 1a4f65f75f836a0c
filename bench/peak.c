/* SPDX-License-Identifier: MIT */
/* peak.c - this machine's arithmetic limit per core, measured now.
 *
 *   peak [REPS]            the table: every loop present, 1 and 2 threads
 *   peak --f32 THREADS     one number: the f32 limit on THREADS threads
 *
 * Runs the register-only multiply-add loops of fma_peak.c (AVX2 f32,
 * AVX-512 f32, the AVX512_BF16 dot, and the SSE2 baseline) on 1 and 2
 * threads and prints GFLOP/s, the best of REPS (default 7) runs each: the
 * most the cores can do for the model's products, against which
 * side-by-side.sh and bench_layers take the MFU. A loop the CPU lacks (or
 * that DTRAIN_CPU takes away) is said and skipped. --f32 prints the rate
 * of the widest float32 loop present (AVX-512, else AVX2, else SSE2), the
 * f32 limit, for a script. A benchmark: it asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fma_peak.h"
#include "util/cpu_features.h"

int
main(int argc, char **argv)
{
	char cpu[256];
	int reps = 7;

	if (argc == 3 && strcmp(argv[1], "--f32") == 0) {
		int threads = atoi(argv[2]);

		if (threads < 1 || threads > 64) {
			fprintf(stderr, "peak: --f32 takes 1 to 64 threads, "
				"found \"%s\"\n", argv[2]);
			return 2;
		}
		printf("%.1f\n", dt_bench_fma_gflops(dt_bench_fma_f32(),
						     threads, reps, 1));
		return 0;
	}
	if (argc > 2 || (argc == 2 && (reps = atoi(argv[1])) < 1)) {
		fprintf(stderr, "usage: peak [REPS] | peak --f32 THREADS\n");
		return 2;
	}
	dt_cpu_describe(cpu, sizeof cpu);
	printf("CPU %s\n", cpu);
	printf("register-only multiply-add loops, GFLOP/s (2 FLOPs a "
	       "multiply-add), best of %d runs\n", reps);
	printf("%-14s %10s %10s\n", "loop", "1 thread", "2 threads");
	for (int k = 0; k < DT_BENCH_FMA_KINDS; k++) {
		enum dt_bench_fma f = (enum dt_bench_fma)k;

		if (!dt_bench_fma_present(f)) {
			printf("%-14s %10s %10s   (not on this CPU)\n",
			       dt_bench_fma_name(f), "-", "-");
			continue;
		}
		printf("%-14s %10.1f %10.1f%s\n", dt_bench_fma_name(f),
		       dt_bench_fma_gflops(f, 1, reps, 1),
		       dt_bench_fma_gflops(f, 2, reps, 1),
		       f == dt_bench_fma_f32() ? "   (the f32 limit)" : "");
	}
	return 0;
}
