/* SPDX-License-Identifier: MIT */
/* fma_peak.c - register-only multiply-add loops, one per instruction set
 * (fma_peak.h). Each loop keeps 12 independent accumulators, enough to
 * cover the FMA latency (4 cycles) times its throughput (2 a cycle) of
 * today's x86 cores, and never touches memory, so its rate is the core's
 * arithmetic limit for that instruction. Each function is built for its
 * own instruction set (GCC's target attribute), so the binary runs on any
 * x86-64 and skips what the CPU lacks. */
#include "fma_peak.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "util/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define FMA_X86 1
#endif

#define CHAINS 12
#define ITERS (1L << 23)	/* loop trips; CHAINS instructions each */

static const char *const names[] = {
	"sse2 f32", "avx2 f32", "avx512 f32", "avx512 bf16",
};

/* FLOPs of one step of one accumulator of each loop (fma_peak.h). */
static const double flops_per_step[] = { 8.0, 16.0, 32.0, 64.0 };

#ifdef FMA_X86
/* The body of a loop: the twelve accumulators spelled out, as GCC keeps
 * an array of vectors in memory (a store and a load on every chain). T is
 * the vector type, INIT(j) an accumulator's first value, STEP(x) its
 * next, ADD(x, y) and LAST(x) the final sum to a float. */
#define CHAIN_LOOP(T, INIT, STEP, ADD, LAST)				\
	T a0 = INIT(0), a1 = INIT(1), a2 = INIT(2), a3 = INIT(3);	\
	T a4 = INIT(4), a5 = INIT(5), a6 = INIT(6), a7 = INIT(7);	\
	T a8 = INIT(8), a9 = INIT(9), a10 = INIT(10), a11 = INIT(11);	\
	for (long i = 0; i < iters; i++) {				\
		a0 = STEP(a0); a1 = STEP(a1); a2 = STEP(a2);		\
		a3 = STEP(a3); a4 = STEP(a4); a5 = STEP(a5);		\
		a6 = STEP(a6); a7 = STEP(a7); a8 = STEP(a8);		\
		a9 = STEP(a9); a10 = STEP(a10); a11 = STEP(a11);	\
	}								\
	a0 = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5),	\
		 ADD(a6, a7)));						\
	return LAST(ADD(a0, ADD(ADD(a8, a9), ADD(a10, a11))))

/* Each loop returns the sum of its accumulators, so that none is dead.
 * The f32 loops step x to x m + c, which tends to c / (1 - m) = 1 and
 * never meets a subnormal. */
static float
loop_sse2(long iters)
{
	__m128 m = _mm_set1_ps(0.999999f), c = _mm_set1_ps(1e-6f);

#define INIT_SSE(j) _mm_set1_ps((float)(j))
#define STEP_SSE(x) _mm_add_ps(_mm_mul_ps(x, m), c)
	CHAIN_LOOP(__m128, INIT_SSE, STEP_SSE, _mm_add_ps, _mm_cvtss_f32);
}

__attribute__((target("avx2,fma"))) static float
loop_avx2(long iters)
{
	__m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);

#define INIT_AVX2(j) _mm256_set1_ps((float)(j))
#define STEP_AVX2(x) _mm256_fmadd_ps(x, m, c)
	CHAIN_LOOP(__m256, INIT_AVX2, STEP_AVX2, _mm256_add_ps,
		   _mm256_cvtss_f32);
}

__attribute__((target("avx512f"))) static float
loop_avx512(long iters)
{
	__m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);

#define INIT_512(j) _mm512_set1_ps((float)(j))
#define STEP_512(x) _mm512_fmadd_ps(x, m, c)
	CHAIN_LOOP(__m512, INIT_512, STEP_512, _mm512_add_ps,
		   _mm512_reduce_add_ps);
}

__attribute__((target("avx512f,avx512bf16"))) static float
loop_bf16(long iters)
{
	/* each step adds two products of 1/1024 x 1/1024 to every float:
	 * about 16 after ITERS steps, far from overflow and subnormals */
	__m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0x1p-10f),
					 _mm512_set1_ps(0x1p-10f));

#define STEP_BF16(x) _mm512_dpbf16_ps(x, a, a)
	CHAIN_LOOP(__m512, INIT_512, STEP_BF16, _mm512_add_ps,
		   _mm512_reduce_add_ps);
}
#endif

const char *
dt_bench_fma_name(enum dt_bench_fma k)
{
	return names[k];
}

int
dt_bench_fma_present(enum dt_bench_fma k)
{
#ifdef FMA_X86
	switch (k) {
	case DT_BENCH_FMA_SSE2_F32:
		return 1;
	case DT_BENCH_FMA_AVX2_F32:
		return dt_cpu_has(DT_CPU_AVX2 | DT_CPU_FMA);
	case DT_BENCH_FMA_AVX512_F32:
		return dt_cpu_has(DT_CPU_AVX512F);
	case DT_BENCH_FMA_AVX512_BF16:
		return dt_cpu_has(DT_CPU_AVX512F | DT_CPU_AVX512_BF16);
	case DT_BENCH_FMA_KINDS:
		break;
	}
#else
	(void)k;
#endif
	return 0;
}

enum dt_bench_fma
dt_bench_fma_f32(void)
{
	if (dt_bench_fma_present(DT_BENCH_FMA_AVX512_F32))
		return DT_BENCH_FMA_AVX512_F32;
	if (dt_bench_fma_present(DT_BENCH_FMA_AVX2_F32))
		return DT_BENCH_FMA_AVX2_F32;
	return DT_BENCH_FMA_SSE2_F32;
}

struct worker {
	enum dt_bench_fma kind;
	int thread_cpu;
	pthread_t tid;
	double gflops;		/* this thread's rate */
	volatile float sink;	/* the loop's result, kept */
};

static double
seconds(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *
work(void *arg)
{
	struct worker *w = arg;
	clockid_t clk = w->thread_cpu ? CLOCK_THREAD_CPUTIME_ID
				      : CLOCK_MONOTONIC;
	double t0 = seconds(clk), t;
	float r = 0.0f;

#ifdef FMA_X86
	switch (w->kind) {
	case DT_BENCH_FMA_SSE2_F32:
		r = loop_sse2(ITERS);
		break;
	case DT_BENCH_FMA_AVX2_F32:
		r = loop_avx2(ITERS);
		break;
	case DT_BENCH_FMA_AVX512_F32:
		r = loop_avx512(ITERS);
		break;
	case DT_BENCH_FMA_AVX512_BF16:
		r = loop_bf16(ITERS);
		break;
	case DT_BENCH_FMA_KINDS:
		break;
	}
#endif
	t = seconds(clk) - t0;
	w->sink = r;
	w->gflops = t > 0.0 ? (double)ITERS * CHAINS *
			      flops_per_step[w->kind] / t * 1e-9 : 0.0;
	return NULL;
}

double
dt_bench_fma_gflops(enum dt_bench_fma k, int threads, int reps,
		    int thread_cpu)
{
	struct worker w[64];
	double best = 0.0;

	if (threads < 1 || threads > 64 || !dt_bench_fma_present(k))
		return 0.0;
	for (int r = 0; r < reps; r++) {
		double sum = 0.0;
		int started = 0;

		for (int t = 0; t < threads; t++) {
			w[t].kind = k;
			w[t].thread_cpu = thread_cpu;
			if (pthread_create(&w[t].tid, NULL, work, &w[t]) != 0)
				break;
			started++;
		}
		for (int t = 0; t < started; t++) {
			pthread_join(w[t].tid, NULL);
			sum += w[t].gflops;
		}
		if (started < threads)
			return 0.0;
		if (sum > best)
			best = sum;
	}
	return best;
}
