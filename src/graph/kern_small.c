/* SPDX-License-Identifier: MIT */
/* kern_small.c - dtrain's own kernel for the small matrix products of one
 * attention head (kern.h's dt_kern_sgemm_small).
 *
 * A char-GPT micro-batch makes about 3000 products of 16 x 64 x 32 and
 * smaller, one (sample, head, row tile) at a time. Through OpenBLAS each
 * such call pays for its interface checks, its buffer allocator (a global
 * lock taken on every call: with two threads making these products at
 * once, the lock is contended and the threads meet in futex calls) and
 * the packing of both operands, for under a microsecond of arithmetic.
 * Here op(B) is packed into a panel on the stack and the rows of op(A)
 * are read in place, 6 rows by 16 columns of C at a time in 12 vector
 * registers (4 rows in 8 for the last rows of a call; the register
 * blocking of Goto and van de Geijn,
 * "Anatomy of High-Performance Matrix Multiplication", ACM TOMS 34(3),
 * 2008, without the cache blocking, which these sizes do not need).
 *
 * Every element of C is one sum over k in index order, then times alpha
 * (plus beta times C): with fused multiply-adds where the processor has
 * AVX2 and FMA (in a GCC build), a multiply and an add elsewhere. Its
 * bits therefore depend on its row of op(A), its column of op(B), alpha
 * and beta, never on m, n or which rows or columns share the call. */
#include "graph/kern.h"
#include "graph/kern_paths.h"

#include <string.h>

#include "util/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define KERN_SMALL_AVX2 1
#endif

/* No contraction of a multiply and an add into an FMA anywhere below,
 * whatever -march or -ffp-contract the build uses (GCC's C mode contracts
 * by default, also intrinsics, which it writes as vector operators): the
 * FMAs of the AVX2 path are the explicit _mm256_fmadd_ps, so the plain C
 * path makes a multiply and an add on every processor, and beta * C is
 * added to alpha * sum the same way in a full block as in a partial
 * one. */
#ifdef __GNUC__
#ifndef __clang__
#pragma GCC optimize("fp-contract=off")
#endif
#endif

/* Floats of the packed op(B) panel, on the stack: 32 KiB. */
#define SMALL_PANEL 8192

/* Rows of C per register block, and its columns (two 8-float vectors). */
#define SMALL_MR 4
#define SMALL_MAXR 6
#define SMALL_NR 16

/* bp[p * np + j] = op(B)[p][j] for p < k and j < n, 0 for n <= j < np. */
static void
pack_b(int trans_b, int n, int k, const float *b, int ldb, float *bp, int np)
{
	for (int p = 0; p < k; p++) {
		float *row = bp + (size_t)p * np;

		if (!trans_b)
			memcpy(row, b + (size_t)p * ldb,
			       (size_t)n * sizeof(float));
		memset(row + n, 0, (size_t)(np - n) * sizeof(float));
	}
	if (trans_b)
		for (int j = 0; j < n; j++) {
			const float *col = b + (size_t)j * ldb;	/* (k) */

			for (int p = 0; p < k; p++)
				bp[(size_t)p * np + j] = col[p];
		}
}

/* Element (r, p) of op(A) is ar[r][p * step], where ar[r] points at row r
 * of the block (or its column, transposed) and step is 1 or lda. Rows past
 * m repeat row m - 1 and their results are dropped. */
static void
block_rows(int trans_a, const float *a, int lda, int i, int m,
	   const float *ar[SMALL_MR], int *step)
{
	for (int r = 0; r < SMALL_MR; r++) {
		const int row = i + r < m ? i + r : m - 1;

		ar[r] = trans_a ? a + row : a + (size_t)row * lda;
	}
	*step = trans_a ? lda : 1;
}

/* C's block of rows [i, i + mr) and columns [j, j + nc) from acc (the
 * sums, SMALL_MR x SMALL_NR): alpha * acc, plus beta * C unless beta is
 * 0 (C is then not read). */
static void
store_block(const float acc[][SMALL_NR], int mr, int nc, float alpha,
	    float beta, float *c, int ldc)
{
	for (int r = 0; r < mr; r++) {
		float *cr = c + (size_t)r * ldc;

		if (beta == 0.0f)
			for (int j = 0; j < nc; j++)
				cr[j] = alpha * acc[r][j];
		else
			for (int j = 0; j < nc; j++)
				cr[j] = alpha * acc[r][j] + beta * cr[j];
	}
}

#ifdef KERN_SMALL_AVX2
/* pack_b for trans_b, 8 x 8 blocks at a time through registers: rows j..j+7
 * of B (stored (n, k)) become columns j..j+7 of 8 rows of the panel. */
__attribute__((target("avx2,fma"))) static void
pack_bt_avx2(int n, int k, const float *b, int ldb, float *bp, int np)
{
	int j = 0;

	for (; j + 8 <= n; j += 8) {
		int p = 0;

		for (; p + 8 <= k; p += 8) {
			const float *s = b + (size_t)j * ldb + p;
			__m256 r0 = _mm256_loadu_ps(s);
			__m256 r1 = _mm256_loadu_ps(s + ldb);
			__m256 r2 = _mm256_loadu_ps(s + 2 * (size_t)ldb);
			__m256 r3 = _mm256_loadu_ps(s + 3 * (size_t)ldb);
			__m256 r4 = _mm256_loadu_ps(s + 4 * (size_t)ldb);
			__m256 r5 = _mm256_loadu_ps(s + 5 * (size_t)ldb);
			__m256 r6 = _mm256_loadu_ps(s + 6 * (size_t)ldb);
			__m256 r7 = _mm256_loadu_ps(s + 7 * (size_t)ldb);
			__m256 t0 = _mm256_unpacklo_ps(r0, r1);
			__m256 t1 = _mm256_unpackhi_ps(r0, r1);
			__m256 t2 = _mm256_unpacklo_ps(r2, r3);
			__m256 t3 = _mm256_unpackhi_ps(r2, r3);
			__m256 t4 = _mm256_unpacklo_ps(r4, r5);
			__m256 t5 = _mm256_unpackhi_ps(r4, r5);
			__m256 t6 = _mm256_unpacklo_ps(r6, r7);
			__m256 t7 = _mm256_unpackhi_ps(r6, r7);
			__m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44);
			__m256 u1 = _mm256_shuffle_ps(t0, t2, 0xee);
			__m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44);
			__m256 u3 = _mm256_shuffle_ps(t1, t3, 0xee);
			__m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44);
			__m256 u5 = _mm256_shuffle_ps(t4, t6, 0xee);
			__m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44);
			__m256 u7 = _mm256_shuffle_ps(t5, t7, 0xee);
			float *d = bp + (size_t)p * np + j;

			_mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4,
								   0x20));
			_mm256_storeu_ps(d + np, _mm256_permute2f128_ps(
							 u1, u5, 0x20));
			_mm256_storeu_ps(d + 2 * (size_t)np,
					 _mm256_permute2f128_ps(u2, u6, 0x20));
			_mm256_storeu_ps(d + 3 * (size_t)np,
					 _mm256_permute2f128_ps(u3, u7, 0x20));
			_mm256_storeu_ps(d + 4 * (size_t)np,
					 _mm256_permute2f128_ps(u0, u4, 0x31));
			_mm256_storeu_ps(d + 5 * (size_t)np,
					 _mm256_permute2f128_ps(u1, u5, 0x31));
			_mm256_storeu_ps(d + 6 * (size_t)np,
					 _mm256_permute2f128_ps(u2, u6, 0x31));
			_mm256_storeu_ps(d + 7 * (size_t)np,
					 _mm256_permute2f128_ps(u3, u7, 0x31));
		}
		for (; p < k; p++)
			for (int q = j; q < j + 8; q++)
				bp[(size_t)p * np + q] = b[(size_t)q * ldb + p];
	}
	for (; j < n; j++)
		for (int p = 0; p < k; p++)
			bp[(size_t)p * np + j] = b[(size_t)j * ldb + p];
	for (int p = 0; p < k; p++)
		for (int q = n; q < np; q++)
			bp[(size_t)p * np + q] = 0.0f;
}

/* Rows [i, i + MR) of C (MR = 4 or 6, at most SMALL_MAXR) and columns
 * [j, j + SMALL_NR): 2 * MR sums in vector registers (12 at MR = 6, so
 * that the FMAs' latency is covered; 8 at MR = 4 for the last rows).
 * Rows past m repeat row m - 1 and are not stored. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
block_avx2(const int mr_max, int trans_a, int m, int n, int k, int i, int j,
	   const __m256 va, const float *a, int lda, const float *bp, int np,
	   float beta, float *c, int ldc)
{
	const float *ar[SMALL_MAXR];
	__m256 s0[SMALL_MAXR], s1[SMALL_MAXR];
	const int step = trans_a ? lda : 1;
	const float *bj = bp + j;

#pragma GCC unroll 6
	for (int r = 0; r < mr_max; r++) {
		const int row = i + r < m ? i + r : m - 1;

		ar[r] = trans_a ? a + row : a + (size_t)row * lda;
		s0[r] = _mm256_setzero_ps();
		s1[r] = _mm256_setzero_ps();
	}
	for (int p = 0; p < k; p++) {
		const __m256 b0 = _mm256_loadu_ps(bj);
		const __m256 b1 = _mm256_loadu_ps(bj + 8);
		const size_t o = (size_t)p * step;

#pragma GCC unroll 6
		for (int r = 0; r < mr_max; r++) {
			const __m256 x = _mm256_broadcast_ss(ar[r] + o);

			s0[r] = _mm256_fmadd_ps(x, b0, s0[r]);
			s1[r] = _mm256_fmadd_ps(x, b1, s1[r]);
		}
		bj += np;
	}
	const int mr = m - i < mr_max ? m - i : mr_max;
	float *cb = c + (size_t)i * ldc + j;

	if (j + SMALL_NR <= n) {
		const __m256 vb = _mm256_set1_ps(beta);

#pragma GCC unroll 6
		for (int r = 0; r < mr_max; r++) {
			float *cr = cb + (size_t)r * ldc;
			__m256 y0 = _mm256_mul_ps(va, s0[r]);
			__m256 y1 = _mm256_mul_ps(va, s1[r]);

			if (r >= mr)
				break;
			if (beta != 0.0f) {
				y0 = _mm256_add_ps(y0, _mm256_mul_ps(
						 vb, _mm256_loadu_ps(cr)));
				y1 = _mm256_add_ps(y1, _mm256_mul_ps(
						 vb, _mm256_loadu_ps(cr + 8)));
			}
			_mm256_storeu_ps(cr, y0);
			_mm256_storeu_ps(cr + 8, y1);
		}
		return;
	}
	float acc[SMALL_MAXR][SMALL_NR];

#pragma GCC unroll 6
	for (int r = 0; r < mr_max; r++) {
		_mm256_storeu_ps(acc[r], s0[r]);
		_mm256_storeu_ps(acc[r] + 8, s1[r]);
	}
	store_block((const float (*)[SMALL_NR])acc, mr, n - j,
		    _mm256_cvtss_f32(va), beta, cb, ldc);
}

__attribute__((target("avx2,fma"))) static void
small_avx2(int trans_a, int m, int n, int k, float alpha, const float *a,
	   int lda, const float *bp, int np, float beta, float *c, int ldc)
{
	const __m256 va = _mm256_set1_ps(alpha);

	for (int i = 0; i < m;) {
		const int rows = m - i > 4 ? 6 : 4;

		for (int j = 0; j < np; j += SMALL_NR)
			if (rows == 6)
				block_avx2(6, trans_a, m, n, k, i, j, va, a,
					   lda, bp, np, beta, c, ldc);
			else
				block_avx2(4, trans_a, m, n, k, i, j, va, a,
					   lda, bp, np, beta, c, ldc);
		i += rows;
	}
}
#endif

/* The same blocks in plain C: a multiply and an add per term (the
 * baseline x86-64 has no FMA, and nothing here asks the compiler to
 * contract). */
static void
small_c(int trans_a, int m, int n, int k, float alpha, const float *a,
	int lda, const float *bp, int np, float beta, float *c, int ldc)
{
	for (int i = 0; i < m; i += SMALL_MR) {
		const float *ar[SMALL_MR];
		int step;

		block_rows(trans_a, a, lda, i, m, ar, &step);
		for (int j = 0; j < np; j += SMALL_NR) {
			float acc[SMALL_MR][SMALL_NR] = {{0}};

			for (int p = 0; p < k; p++) {
				const float *bj = bp + (size_t)p * np + j;

				for (int r = 0; r < SMALL_MR; r++) {
					const float x = ar[r][(size_t)p * step];

					for (int q = 0; q < SMALL_NR; q++) {
						const float t = x * bj[q];

						acc[r][q] = acc[r][q] + t;
					}
				}
			}
			store_block((const float (*)[SMALL_NR])acc,
				    m - i < SMALL_MR ? m - i : SMALL_MR,
				    n - j < SMALL_NR ? n - j : SMALL_NR, alpha,
				    beta, c + (size_t)i * ldc + j, ldc);
		}
	}
}

/* Set by dt_kern_small_set_generic (tests only). */
static int small_generic;

void
dt_kern_small_set_generic(int on)
{
	small_generic = on;
}

int
dt_kern_small_simd(void)
{
#ifdef KERN_SMALL_AVX2
	return !small_generic && dt_cpu_has(DT_CPU_AVX2 | DT_CPU_FMA);
#else
	return 0;
#endif
}

int
dt_kern_small_fits(int64_t n, int64_t k)
{
	const int64_t np = (n + SMALL_NR - 1) / SMALL_NR * SMALL_NR;

	return n > 0 && k > 0 && np * k <= SMALL_PANEL;
}

void
dt_kern_sgemm_small(int trans_a, int trans_b, int64_t m, int64_t n,
		    int64_t k, float alpha, const float *a, int64_t lda,
		    const float *b, int64_t ldb, float beta, float *c,
		    int64_t ldc)
{
	float bp[SMALL_PANEL] __attribute__((aligned(32)));
	int np;

	if (m <= 0 || n <= 0)
		return;
	if (k <= 0 || alpha == 0.0f || !dt_kern_small_fits(n, k)) {
		/* the BLAS's own: with alpha 0, A and B are not read */
		dt_kern_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b,
			      ldb, beta, c, ldc);
		return;
	}
	np = (int)((n + SMALL_NR - 1) / SMALL_NR * SMALL_NR);
#ifdef KERN_SMALL_AVX2
	if (dt_kern_small_simd()) {
		if (trans_b)
			pack_bt_avx2((int)n, (int)k, b, (int)ldb, bp, np);
		else
			pack_b(0, (int)n, (int)k, b, (int)ldb, bp, np);
		small_avx2(trans_a, (int)m, (int)n, (int)k, alpha, a,
			   (int)lda, bp, np, beta, c, (int)ldc);
		return;
	}
#endif
	pack_b(trans_b, (int)n, (int)k, b, (int)ldb, bp, np);
	small_c(trans_a, (int)m, (int)n, (int)k, alpha, a, (int)lda, bp, np,
		beta, c, (int)ldc);
}
