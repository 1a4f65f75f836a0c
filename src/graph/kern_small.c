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

/* train.precision: bf16 (kern.h, dt_kern_set_bf16) on a CPU with
 * AVX512_BF16: the same products with op(A) and op(B) rounded to
 * bfloat16 (vcvtne2ps2bf16: nearest even; a denormal input counts as 0)
 * and summed in float by vdpbf16ps, which adds two products of a pair of
 * k (2p, 2p + 1) to a float lane per instruction (Intel's BF16
 * specification, document 338302). Each element of C is one chain of
 * such pair sums over k in index order (an odd k's last pair padded with
 * a 0), then times alpha (plus beta times C), so its bits still depend
 * on its row of op(A), its column of op(B) and k alone. op(B) is packed
 * as pairs of its rows (the "VNNI" layout: the 32-bit word (p, j) holds
 * op(B)[2p][j] in its low half and op(B)[2p + 1][j] in its high half),
 * rows of op(A) as the same pairs, BF16_MR rows at a time. */
#define BF16_MR 8
#define BF16_KMAX (SMALL_PANEL / SMALL_NR)	/* k, at most */

__attribute__((target("avx512f,avx512bw,avx512bf16"))) static __m512i
cvt_pair_rows(const float *r0, const float *r1, __mmask16 mk)
{
	/* words (r0[q], r1[q]) for the 16 columns q: vpermw interleaves
	 * the two rows' bf16 halves */
	const __m512i lace = _mm512_set_epi16(
		31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
		23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
	const __m512 x0 = _mm512_maskz_loadu_ps(mk, r0);
	const __m512 x1 = r1 != NULL ? _mm512_maskz_loadu_ps(mk, r1)
				     : _mm512_setzero_ps();
	const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);

	return _mm512_permutexvar_epi16(lace, h);
}

/* wp[p * np + j] = the pair (op(B)[2p][j], op(B)[2p + 1][j]) for p <
 * (k + 1) / 2, from the float panel bp (k, np) that pack_b made. */
__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void
pack_b_bf16(int k, const float *bp, int np, uint32_t *wp)
{
	for (int p = 0; 2 * p < k; p++) {
		const float *r0 = bp + (size_t)2 * p * np;
		const float *r1 = 2 * p + 1 < k ? r0 + np : NULL;

		for (int j = 0; j < np; j += SMALL_NR)
			_mm512_storeu_si512(wp + (size_t)p * np + j,
					    cvt_pair_rows(r0 + j,
							  r1 ? r1 + j : NULL,
							  0xffff));
	}
}

/* wa[r * kp + p] = the pair (op(A)[i + r][2p], op(A)[i + r][2p + 1]) for
 * the BF16_MR rows from i (rows past m repeat row m - 1), kp = (k + 1) /
 * 2; a transposed A goes through pack_bt_avx2 into t first. */
__attribute__((target("avx2,fma,avx512f,avx512bw,avx512bf16"))) static void
pack_a_bf16(int trans_a, const float *a, int lda, int i, int m, int k,
	    float *t, uint32_t *wa)
{
	const int kp = (k + 1) / 2;
	const int rows = m - i < BF16_MR ? m - i : BF16_MR;
	int ld = lda;

	if (trans_a) {
		/* t[r * k2 + p] = A[p][i + r]: the block's rows in place */
		const int k2 = 2 * kp;

		pack_bt_avx2(k, rows, a + i, lda, t, k2);
		for (int r = rows; r < BF16_MR; r++)	/* not read */
			memset(t + (size_t)r * k2, 0,
			       (size_t)k2 * sizeof(float));
		a = t;
		ld = k2;
		i = 0;
		m = rows;
	}
	for (int r = 0; r < BF16_MR; r++) {
		const int row = i + r < m ? i + r : m - 1;
		const float *ar = a + (size_t)row * ld;
		uint16_t *w = (uint16_t *)(wa + (size_t)r * kp);
		int p = 0;

		/* 32 floats a time: lanes 0-15 the first 16, then the rest */
		for (; p < k; p += 32) {
			const int left = k - p;
			const __mmask16 m0 = left >= 16 ? 0xffff
					     : (__mmask16)((1u << left) - 1);
			const __mmask16 m1 = left >= 32 ? 0xffff
					     : left <= 16 ? 0
					     : (__mmask16)((1u << (left - 16)) - 1);
			const __m512 x0 = _mm512_maskz_loadu_ps(m0, ar + p);
			const __m512 x1 = _mm512_maskz_loadu_ps(m1, ar + p + 16);
			const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
			const int words = (left < 32 ? left + 1 : 32) / 2;

			_mm512_mask_storeu_epi16(w + p,
						 (__mmask32)(words >= 16
						 ? 0xffffffffu
						 : (1u << (2 * words)) - 1),
						 h);
		}
	}
}

/* Rows [i, i + BF16_MR) of C and columns [j, j + SMALL_NR), from the
 * packed rows wa and panel wp: a float sum a row in a vector register. */
__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void
block_bf16(int m, int n, int kp, int i, int j, float alpha, float beta,
	   const uint32_t *wa, const uint32_t *wp, int np, float *c, int ldc)
{
	__m512 s[BF16_MR];
	const int mr = m - i < BF16_MR ? m - i : BF16_MR;
	const __mmask16 mk = n - j >= SMALL_NR ? 0xffff
			     : (__mmask16)((1u << (n - j)) - 1);
	const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);

#pragma GCC unroll 8
	for (int r = 0; r < BF16_MR; r++)
		s[r] = _mm512_setzero_ps();
	for (int p = 0; p < kp; p++) {
		const __m512bh b = (__m512bh)_mm512_loadu_si512(
			wp + (size_t)p * np + j);

#pragma GCC unroll 8
		for (int r = 0; r < BF16_MR; r++)
			s[r] = _mm512_dpbf16_ps(s[r], (__m512bh)
				_mm512_set1_epi32((int)wa[(size_t)r * kp + p]),
				b);
	}
	for (int r = 0; r < mr; r++) {
		float *cr = c + (size_t)(i + r) * ldc + j;
		__m512 y = _mm512_mul_ps(va, s[r]);

		if (beta != 0.0f)
			y = _mm512_add_ps(y, _mm512_mul_ps(
					  vb, _mm512_maskz_loadu_ps(mk, cr)));
		_mm512_mask_storeu_ps(cr, mk, y);
	}
}

__attribute__((target("avx2,fma,avx512f,avx512bw,avx512bf16"))) static void
small_bf16(int trans_a, int trans_b, int m, int n, int k, float alpha,
	   const float *a, int lda, const float *b, int ldb, float beta,
	   float *c, int ldc, float *bp, int np)
{
	uint32_t wp[SMALL_PANEL];	/* (k + 1) / 2 x np pairs */
	uint32_t wa[BF16_MR * BF16_KMAX / 2];	/* BF16_MR x kp pairs */
	float t[BF16_MR * BF16_KMAX];	/* BF16_MR x 2 kp, trans_a only */
	const int kp = (k + 1) / 2;

	if (trans_b)
		pack_bt_avx2(n, k, b, ldb, bp, np);
	else
		pack_b(0, n, k, b, ldb, bp, np);
	pack_b_bf16(k, bp, np, wp);
	for (int i = 0; i < m; i += BF16_MR) {
		pack_a_bf16(trans_a, a, lda, i, m, k, t, wa);
		for (int j = 0; j < n; j += SMALL_NR)
			block_bf16(m, n, kp, i, j, alpha, beta, wa, wp, np, c,
				   ldc);
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
dt_kern_small_bf16(void)
{
#ifdef KERN_SMALL_AVX2
	/* vpermw and the 16-bit masked store are AVX512BW's, which every
	 * CPU with AVX512_BF16 has; asked all the same */
	return dt_kern_bf16() && dt_kern_small_simd() &&
	       dt_cpu_has(DT_CPU_AVX512F | DT_CPU_AVX512_BF16) &&
	       __builtin_cpu_supports("avx512bw");
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
	if (dt_kern_small_bf16()) {
		small_bf16(trans_a, trans_b, (int)m, (int)n, (int)k, alpha, a,
			   (int)lda, b, (int)ldb, beta, c, (int)ldc, bp, np);
		return;
	}
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
