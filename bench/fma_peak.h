/* SPDX-License-Identifier: MIT */
/* fma_peak.h - the machine's own arithmetic limit: the rate of a loop of
 * multiply-adds on registers alone (no memory traffic), per instruction
 * set, on one or more threads; for bench/peak.c, bench/bench_layers.c and
 * bench/side-by-side.sh's MFU. */
#ifndef DT_BENCH_FMA_PEAK_H
#define DT_BENCH_FMA_PEAK_H

/* The loops. FLOPs count 2 per multiply-add (a multiply and an add), the
 * same convention as the model FLOPs: 16 per AVX2 FMA (8 floats), 32 per
 * AVX-512 FMA (16 floats), 64 per vdpbf16ps (16 floats, each gaining the
 * sum of two bfloat16 products), 8 per SSE2 multiply and add (4 floats). */
enum dt_bench_fma {
	DT_BENCH_FMA_SSE2_F32,		/* mulps + addps, x86-64's baseline */
	DT_BENCH_FMA_AVX2_F32,		/* vfmadd231ps ymm, AVX2 and FMA */
	DT_BENCH_FMA_AVX512_F32,	/* vfmadd231ps zmm, AVX-512F */
	DT_BENCH_FMA_AVX512_BF16,	/* vdpbf16ps zmm, AVX512_BF16 */
	DT_BENCH_FMA_KINDS
};

/* A short name: "sse2 f32", "avx2 f32", "avx512 f32", "avx512 bf16". */
const char *dt_bench_fma_name(enum dt_bench_fma k);

/* Whether this build has the loop and the CPU (as DTRAIN_CPU leaves it,
 * util/cpu_features.h) can run it. */
int dt_bench_fma_present(enum dt_bench_fma k);

/* The widest float32 loop present: the f32 limit that MFU is taken
 * against. */
enum dt_bench_fma dt_bench_fma_f32(void);

/* GFLOP/s of loop k (present) on threads threads (1 to 64), the best of
 * reps runs of a fixed count of instructions (about 40 ms a thread on a
 * 3 GHz core), each run's rate the sum of its threads' (each thread's
 * FLOPs over its own time, with thread_cpu its CPU time, else the wall
 * clock): the best, as a limit is what the core does when nothing else
 * holds it. Threads are not pinned. Returns 0 when a thread could not be
 * started. */
double dt_bench_fma_gflops(enum dt_bench_fma k, int threads, int reps,
			   int thread_cpu);

#endif
