/* SPDX-License-Identifier: MIT */
/* kern.c - the OpenBLAS backend of the kernel seam (kern.h), and the
 * transformer layers' hot loops in portable C.
 *
 * The loops are written for GCC's -O2 vectoriser (layer.h's DT_VEC_LOOP
 * says what it takes: a constant inner trip count, restrict parameters,
 * no branch on a loaded value except a select stored directly), and built
 * twice through target_clones, as optim.c's Adam: the SSE2 baseline (4
 * lanes) and AVX2 (8 lanes). The avx2 target has no FMA, so neither clone
 * contracts a multiply-add, and every reduction keeps 8 partial sums
 * whatever the vector width, so both give the same bits. */
#include "graph/kern.h"

#include <cblas.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "graph/layer.h"
#include "util/cpu_features.h"
#include "util/threadpool.h"

#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && \
	!defined(__clang__)
#define KERN_CLONES \
	__attribute__((target_clones("avx2", "default")))
/* GELU's passes on AVX-512 too (dt_kern_gelu), chosen at run time by
 * dt_cpu_has, so that DTRAIN_CPU=avx2 takes the clones above. */
#define KERN_GELU_AVX512
#include <immintrin.h>
#else
#define KERN_CLONES
#endif

/* Lanes of the reductions: sums run in KERN_LANES partial sums, lane j
 * taking elements j, j + 8, j + 16, ..., added at the end in a fixed
 * tree. */
#define KERN_LANES 8

/* dt_kern_sgemm for a product of class conv (dt_kern_onednn_f32). */
static void
sgemm_class(int conv, int trans_a, int trans_b, int64_t m, int64_t n,
	    int64_t k, float alpha, const float *a, int64_t lda,
	    const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
	if (alpha == 0.0f) {
		/* BLAS says A and B are not read when alpha is 0, but some
		 * OpenBLAS kernels (0.3.21's AVX-512 sgemm, chosen where
		 * OPENBLAS_CORETYPE is unset on a Zen 5) multiply anyway, so
		 * an Inf or NaN in A gives NaN: C = beta * C here instead. */
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++)
				c[i * ldc + j] = beta == 0.0f ?
					0.0f : beta * c[i * ldc + j];
		return;
	}
	if (dt_kern_bf16()) {
		dt_kern_bf16_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda,
				   b, ldb, beta, c, ldc);
		return;
	}
	if (dt_kern_onednn_f32(conv, m, n, k)) {
		dt_kern_onednn_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda,
				     b, ldb, beta, c, ldc);
		return;
	}
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n,
		    (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c,
		    (int)ldc);
}

void
dt_kern_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
	      float alpha, const float *a, int64_t lda, const float *b,
	      int64_t ldb, float beta, float *c, int64_t ldc)
{
	sgemm_class(0, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta,
		    c, ldc);
}

void
dt_kern_conv_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
		   float alpha, const float *a, int64_t lda, const float *b,
		   int64_t ldb, float beta, float *c, int64_t ldc)
{
	sgemm_class(1, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta,
		    c, ldc);
}

void
dt_kern_sgemm_grid(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
		   float alpha, const float *a, int64_t lda,
		   const int64_t sa[2], const float *b, int64_t ldb,
		   const int64_t sb[2], float beta, float *c, int64_t ldc,
		   const int64_t sc[2], int64_t n_outer, int64_t n_inner)
{
	for (int64_t o = 0; o < n_outer; o++)
		for (int64_t i = 0; i < n_inner; i++)
			dt_kern_sgemm(trans_a, trans_b, m, n, k, alpha,
				      a + o * sa[0] + i * sa[1], lda,
				      b + o * sb[0] + i * sb[1], ldb, beta,
				      c + o * sc[0] + i * sc[1], ldc);
}

/* The bits of a float and back, which GCC's vectoriser handles in
 * registers (a union read of the other member: defined in GNU C). */
union kern_bits {
	float f;
	int32_t i;
};

/* e^x as kern.h's dt_kern_exp says. No branch: |x| is clamped on its bit
 * pattern (an integer min, which vectorises where a float select feeding
 * arithmetic does not), n = round(x / ln2) comes from the 1.5 * 2^23
 * shifter, whose low bits then hold n for the exponent field, and x - x
 * (0 for finite x, NaN for NaN and inf) carries NaN through. */
static inline float
kern_expf(float x)
{
	const float shifter = 12582912.0f;	/* 1.5 * 2^23 */
	union kern_bits v, s;
	int32_t mag;
	float t, n, r, p;

	v.f = x;
	mag = v.i & 0x7fffffff;
	mag = mag < 0x42ae0000 ? mag : 0x42ae0000;	/* |x| <= 87 */
	v.i = (v.i & (int32_t)0x80000000) | mag;
	t = v.f * 1.44269504088896341f + shifter;
	n = t - shifter;
	/* ln2 in two parts (Cody-Waite): n * 0.693359375 is exact. */
	r = v.f - n * 0.693359375f;
	r = r - n * -2.12194440e-4f;
	p = 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * r * r + r + 1.0f;
	s.f = t;
	s.i = (s.i - 0x4b400000 + 127) * (1 << 23);	/* 2^n, n in [-126, 126] */
	return p * s.f + (x - x);
}

KERN_CLONES static void
exp_inplace(float *restrict x, int64_t n)
{
	DT_VEC_LOOP(i, n, x[i] = kern_expf(x[i]));
}

void
dt_kern_exp(float *x, int64_t n)
{
	exp_inplace(x, n);
}

/* The fixed tree over the lanes. */
static inline float
lanes_sum(const float *l)
{
	return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* Max of x[0..n), n > 0; NaN values are passed over (as fmaxf does), the
 * exp of the softmax then carries them. */
KERN_CLONES static float
row_max(const float *restrict x, int64_t n)
{
	float l[KERN_LANES];
	int64_t b = 0;
	float m;

	for (int j = 0; j < KERN_LANES; j++)
		l[j] = x[0];
	for (; b + KERN_LANES <= n; b += KERN_LANES)
		for (int j = 0; j < KERN_LANES; j++)
			l[j] = x[b + j] > l[j] ? x[b + j] : l[j];
	for (; b < n; b++)
		l[0] = x[b] > l[0] ? x[b] : l[0];
	m = l[0];
	for (int j = 1; j < KERN_LANES; j++)
		m = l[j] > m ? l[j] : m;
	return m;
}

/* x = e^(x - max) in place; returns the sum, in lanes. */
KERN_CLONES static float
exp_shift_sum(float *restrict x, int64_t n, float max)
{
	float l[KERN_LANES] = { 0 };
	int64_t b = 0;

	for (; b + KERN_LANES <= n; b += KERN_LANES)
		for (int j = 0; j < KERN_LANES; j++) {
			float e = kern_expf(x[b + j] - max);

			x[b + j] = e;
			l[j] += e;
		}
	for (int j = 0; b < n; b++, j++) {
		float e = kern_expf(x[b] - max);

		x[b] = e;
		l[j] += e;
	}
	return lanes_sum(l);
}

KERN_CLONES static void
scale_inplace(float *restrict x, int64_t n, float s)
{
	DT_VEC_LOOP(i, n, x[i] *= s);
}

float
dt_kern_max(const float *x, int64_t n)
{
	return row_max(x, n);
}

void
dt_kern_scale(float *x, int64_t n, float s)
{
	scale_inplace(x, n, s);
}

float
dt_kern_softmax(float *x, int64_t n, float *max)
{
	float m = row_max(x, n);
	float sum = exp_shift_sum(x, n, m);

	scale_inplace(x, n, 1.0f / sum);
	if (max != NULL)
		*max = m;
	return sum;
}

KERN_CLONES static float
dot_lanes(const float *restrict a, const float *restrict b, int64_t n)
{
	float l[KERN_LANES] = { 0 };
	int64_t k = 0;

	for (; k + KERN_LANES <= n; k += KERN_LANES)
		for (int j = 0; j < KERN_LANES; j++)
			l[j] += a[k + j] * b[k + j];
	for (int j = 0; k < n; k++, j++)
		l[j] += a[k] * b[k];
	return lanes_sum(l);
}

float
dt_kern_dot(const float *a, const float *b, int64_t n)
{
	return dot_lanes(a, b, n);
}

KERN_CLONES static void
softmax_vjp(const float *restrict y, float *restrict d, int64_t n, float dot,
	    float scale)
{
	DT_VEC_LOOP(i, n, d[i] = scale * y[i] * (d[i] - dot));
}

void
dt_kern_softmax_grad(const float *y, float *d, int64_t n, float scale)
{
	softmax_vjp(y, d, n, dot_lanes(y, d, n), scale);
}

#define GELU_K 0.7978845608028654f	/* sqrt(2/pi) */
#define GELU_A 0.044715f

/* sigmoid(2u) for x, the factor gelu(x) = x s; as e^(-2u) saturates at
 * e^87, s never divides by inf. */
static inline float
gelu_s(float x)
{
	float u = GELU_K * (x + GELU_A * x * x * x);

	return 1.0f / (1.0f + kern_expf(-2.0f * u));
}

KERN_CLONES static void
gelu_fwd(const float *restrict x, float *restrict y, int64_t n)
{
	DT_VEC_LOOP(i, n, y[i] = x[i] * gelu_s(x[i]));
}

#ifdef KERN_GELU_AVX512
/* The AVX-512 twins of kern_expf, gelu_s and gelu_d: 16 values at a time,
 * every operation the scalar one in the same order (a multiply and an
 * add where the C has them, never a fused multiply-add: GCC's avx512f
 * target brings FMA with it, so contraction is turned off for these
 * functions), hence the same bits as the SSE2 and AVX2 clones on any
 * value, NaN and inf included (test_graph_kern's test_gelu_bits). */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#define V16(c) _mm512_set1_ps(c)

__attribute__((target("avx512f"))) static inline __m512
expf16(__m512 x)
{
	const __m512 shifter = V16(12582912.0f);
	__m512i bits = _mm512_castps_si512(x);
	__m512i mag = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
	__m512 v, t, nn, r, p;

	mag = _mm512_min_epi32(mag, _mm512_set1_epi32(0x42ae0000));
	v = _mm512_castsi512_ps(_mm512_or_si512(
		_mm512_and_si512(bits, _mm512_set1_epi32((int)0x80000000)),
		mag));
	t = _mm512_add_ps(_mm512_mul_ps(v, V16(1.44269504088896341f)),
			  shifter);
	nn = _mm512_sub_ps(t, shifter);
	r = _mm512_sub_ps(v, _mm512_mul_ps(nn, V16(0.693359375f)));
	r = _mm512_sub_ps(r, _mm512_mul_ps(nn, V16(-2.12194440e-4f)));
	p = V16(1.9875691500e-4f);
	p = _mm512_add_ps(_mm512_mul_ps(p, r), V16(1.3981999507e-3f));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), V16(8.3334519073e-3f));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), V16(4.1665795894e-2f));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), V16(1.6666665459e-1f));
	p = _mm512_add_ps(_mm512_mul_ps(p, r), V16(5.0000001201e-1f));
	p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, r), r),
					r), V16(1.0f));
	/* 2^n: (bits(t) - 0x4b400000 + 127) << 23 */
	__m512i e = _mm512_add_epi32(
		_mm512_sub_epi32(_mm512_castps_si512(t),
				 _mm512_set1_epi32(0x4b400000)),
		_mm512_set1_epi32(127));

	return _mm512_add_ps(
		_mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(e, 23))),
		_mm512_sub_ps(x, x));
}

__attribute__((target("avx512f"))) static inline __m512
gelu_s16(__m512 x)
{
	/* GELU_K * (x + GELU_A * x * x * x) */
	__m512 c = _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(V16(GELU_A), x),
					       x), x);
	__m512 u = _mm512_mul_ps(V16(GELU_K), _mm512_add_ps(x, c));

	return _mm512_div_ps(V16(1.0f), _mm512_add_ps(V16(1.0f),
			     expf16(_mm512_mul_ps(V16(-2.0f), u))));
}

__attribute__((target("avx512f"))) static inline __m512
gelu_d16(__m512 x)
{
	const __m512 s = gelu_s16(x);
	/* 1 + 3 GELU_A x x, with 3 * GELU_A folded as the C folds it */
	const __m512 q = _mm512_add_ps(V16(1.0f), _mm512_mul_ps(
		_mm512_mul_ps(V16(3.0f * GELU_A), x), x));
	/* s + 2 x s (1 - s) GELU_K q, multiplied left to right */
	__m512 g = _mm512_mul_ps(_mm512_mul_ps(V16(2.0f), x), s);

	g = _mm512_mul_ps(g, _mm512_sub_ps(V16(1.0f), s));
	g = _mm512_mul_ps(_mm512_mul_ps(g, V16(GELU_K)), q);
	return _mm512_add_ps(s, g);
}

__attribute__((target("avx512f"))) static int64_t
gelu_fwd16(const float *x, float *y, int64_t n)
{
	int64_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i);

		_mm512_storeu_ps(y + i, _mm512_mul_ps(v, gelu_s16(v)));
	}
	return i;
}

__attribute__((target("avx512f"))) static int64_t
gelu_bwd16(const float *x, const float *dy, float *dx, int64_t n, int add)
{
	int64_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m512 g = _mm512_mul_ps(gelu_d16(_mm512_loadu_ps(x + i)),
					 _mm512_loadu_ps(dy + i));

		if (add)
			g = _mm512_add_ps(_mm512_loadu_ps(dx + i), g);
		_mm512_storeu_ps(dx + i, g);
	}
	return i;
}
#undef V16
#pragma GCC pop_options
#endif

void
dt_kern_gelu(const float *x, float *y, int64_t n)
{
	int64_t i = 0;

#ifdef KERN_GELU_AVX512
	if (dt_cpu_has(DT_CPU_AVX512F))
		i = gelu_fwd16(x, y, n);
#endif
	gelu_fwd(x + i, y + i, n - i);
}

static inline float
gelu_d(float x)
{
	float s = gelu_s(x);

	return s + 2.0f * x * s * (1.0f - s) * GELU_K *
		   (1.0f + 3.0f * GELU_A * x * x);
}

KERN_CLONES static void
gelu_bwd(const float *restrict x, const float *restrict dy,
	 float *restrict dx, int64_t n, int add)
{
	if (add)
		DT_VEC_LOOP(i, n, dx[i] += gelu_d(x[i]) * dy[i]);
	else
		DT_VEC_LOOP(i, n, dx[i] = gelu_d(x[i]) * dy[i]);
}

void
dt_kern_gelu_grad(const float *x, const float *dy, float *dx, int64_t n,
		  int add)
{
	int64_t i = 0;

#ifdef KERN_GELU_AVX512
	if (dt_cpu_has(DT_CPU_AVX512F))
		i = gelu_bwd16(x, dy, dx, n, add);
#endif
	gelu_bwd(x + i, dy + i, dx + i, n - i, add);
}

/* The sum of x[0..c) and of (x - m)^2, in lanes. */
KERN_CLONES static float
row_sum(const float *restrict x, int64_t c)
{
	float l[KERN_LANES] = { 0 };
	int64_t k = 0;

	for (; k + KERN_LANES <= c; k += KERN_LANES)
		for (int j = 0; j < KERN_LANES; j++)
			l[j] += x[k + j];
	for (int j = 0; k < c; k++, j++)
		l[j] += x[k];
	return lanes_sum(l);
}

KERN_CLONES static float
row_sq_dev(const float *restrict x, int64_t c, float m)
{
	float l[KERN_LANES] = { 0 };
	int64_t k = 0;

	for (; k + KERN_LANES <= c; k += KERN_LANES)
		for (int j = 0; j < KERN_LANES; j++) {
			float d = x[k + j] - m;

			l[j] += d * d;
		}
	for (int j = 0; k < c; k++, j++) {
		float d = x[k] - m;

		l[j] += d * d;
	}
	return lanes_sum(l);
}

KERN_CLONES static void
ln_row(const float *restrict x, const float *restrict gain,
       const float *restrict bias, float *restrict y, int64_t c, float m,
       float s)
{
	DT_VEC_LOOP(j, c, y[j] = (x[j] - m) * s * gain[j] + bias[j]);
}

void
dt_kern_layernorm(const float *x, const float *gain, const float *bias,
		  float *y, float *mean, float *rstd, int64_t rows, int64_t c,
		  float eps)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * c;	/* (c) */
		float m = row_sum(xr, c) / (float)c;
		float v = row_sq_dev(xr, c, m) / (float)c;
		float s = 1.0f / sqrtf(v + eps);

		ln_row(xr, gain, bias, y + r * c, c, m, s);
		mean[r] = m;
		rstd[r] = s;
	}
}

/* One row of the layernorm gradient: the parameter gradients, and the two
 * row means of dn = gain * dy and dn * xhat into mean2[0], mean2[1] (sums
 * in lanes, over c). */
KERN_CLONES static void
ln_grad_params(const float *restrict x, const float *restrict dy,
	       const float *restrict gain, float *restrict dgain,
	       float *restrict dbias, int64_t c, float m, float s,
	       float *restrict sums)
{
	float l0[KERN_LANES] = { 0 }, l1[KERN_LANES] = { 0 };
	int64_t k = 0;

	for (; k + KERN_LANES <= c; k += KERN_LANES)
		for (int j = 0; j < KERN_LANES; j++) {
			float xhat = (x[k + j] - m) * s;
			float dn = gain[k + j] * dy[k + j];

			l0[j] += dn;
			l1[j] += dn * xhat;
			dgain[k + j] += dy[k + j] * xhat;
			dbias[k + j] += dy[k + j];
		}
	for (int j = 0; k < c; k++, j++) {
		float xhat = (x[k] - m) * s;
		float dn = gain[k] * dy[k];

		l0[j] += dn;
		l1[j] += dn * xhat;
		dgain[k] += dy[k] * xhat;
		dbias[k] += dy[k];
	}
	sums[0] = lanes_sum(l0);
	sums[1] = lanes_sum(l1);
}

KERN_CLONES static void
ln_grad_x(const float *restrict x, const float *restrict dy,
	  const float *restrict gain, float *restrict dx, int64_t c, float m,
	  float s, float dn_mean, float dnx_mean, int add)
{
	if (add)
		DT_VEC_LOOP(j, c, dx[j] += s * (gain[j] * dy[j] - dn_mean -
						(x[j] - m) * s * dnx_mean));
	else
		DT_VEC_LOOP(j, c, dx[j] = s * (gain[j] * dy[j] - dn_mean -
					       (x[j] - m) * s * dnx_mean));
}

void
dt_kern_layernorm_grad(const float *x, const float *dy, const float *gain,
		       const float *mean, const float *rstd, float *dx,
		       int add, float *dgain, float *dbias, int64_t rows,
		       int64_t c)
{
	for (int64_t r = 0; r < rows; r++) {
		float sums[2];

		ln_grad_params(x + r * c, dy + r * c, gain, dgain, dbias, c,
			       mean[r], rstd[r], sums);
		if (dx != NULL)
			ln_grad_x(x + r * c, dy + r * c, gain, dx + r * c, c,
				  mean[r], rstd[r], sums[0] / (float)c,
				  sums[1] / (float)c, add);
	}
}

KERN_CLONES static void
add2(const float *restrict a, const float *restrict b, float *restrict y,
     int64_t n)
{
	DT_VEC_LOOP(i, n, y[i] = a[i] + b[i]);
}

void
dt_kern_add(const float *a, const float *b, float *y, int64_t n)
{
	add2(a, b, y, n);
}

KERN_CLONES static void
acc1(const float *restrict x, float *restrict y, int64_t n)
{
	DT_VEC_LOOP(i, n, y[i] += x[i]);
}

void
dt_kern_acc(const float *x, float *y, int64_t n)
{
	acc1(x, y, n);
}

KERN_CLONES static void
mul2(const float *restrict x, const float *restrict s, float *restrict y,
     int64_t n, int add)
{
	if (add)
		DT_VEC_LOOP(i, n, y[i] += x[i] * s[i]);
	else
		DT_VEC_LOOP(i, n, y[i] = x[i] * s[i]);
}

void
dt_kern_mul(const float *x, const float *s, float *y, int64_t n, int add)
{
	mul2(x, s, y, n, add);
}

/* The pool-split loops of kern.h. A part of an elementwise loop is a run
 * of whole blocks; the fewest blocks worth a thread of their own: */
#define KERN_GRAIN_BLOCKS 2
/* Rows of layer normalisation, and columns of a column sum, per part at
 * the least. */
#define KERN_GRAIN_ROWS 32
#define KERN_GRAIN_COLS 32

enum kern_ew {
	KERN_EW_ADD,
	KERN_EW_ACC,
	KERN_EW_MUL,
	KERN_EW_COPY,
};

struct ew_job {
	enum kern_ew op;
	const float *a, *b;	/* (n) inputs; b only for add and mul */
	float *y;		/* (n) output */
	int64_t n;
	int add;
};

static void
ew_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct ew_job *j = ctx;
	int64_t a = lo * DT_KERN_BLOCK;
	int64_t len = (hi * DT_KERN_BLOCK < j->n ? hi * DT_KERN_BLOCK : j->n) -
		      a;

	switch (j->op) {
	case KERN_EW_ADD:
		add2(j->a + a, j->b + a, j->y + a, len);
		break;
	case KERN_EW_ACC:
		acc1(j->a + a, j->y + a, len);
		break;
	case KERN_EW_MUL:
		mul2(j->a + a, j->b + a, j->y + a, len, j->add);
		break;
	case KERN_EW_COPY:
		if (j->a != NULL)
			memcpy(j->y + a, j->a + a, (size_t)len * sizeof(float));
		else
			memset(j->y + a, 0, (size_t)len * sizeof(float));
		break;
	}
}

static void
ew_run(struct dt_pool *pool, struct ew_job *j)
{
	dt_pool_for(pool, (j->n + DT_KERN_BLOCK - 1) / DT_KERN_BLOCK,
		    KERN_GRAIN_BLOCKS, ew_part, j);
}

void
dt_kern_par_add(struct dt_pool *pool, const float *a, const float *b,
		float *y, int64_t n)
{
	struct ew_job j = { .op = KERN_EW_ADD, .a = a, .b = b, .y = y, .n = n };

	ew_run(pool, &j);
}

void
dt_kern_par_acc(struct dt_pool *pool, const float *x, float *y, int64_t n)
{
	struct ew_job j = { .op = KERN_EW_ACC, .a = x, .y = y, .n = n };

	ew_run(pool, &j);
}

void
dt_kern_par_mul(struct dt_pool *pool, const float *x, const float *s,
		float *y, int64_t n, int add)
{
	struct ew_job j = {
		.op = KERN_EW_MUL, .a = x, .b = s, .y = y, .n = n, .add = add,
	};

	ew_run(pool, &j);
}

void
dt_kern_par_copy(struct dt_pool *pool, const float *x, float *y, int64_t n)
{
	struct ew_job j = { .op = KERN_EW_COPY, .a = x, .y = y, .n = n };

	ew_run(pool, &j);
}

enum kern_f64 { KERN_F64_ADD, KERN_F64_ROUND, KERN_F64_ZERO };

struct f64_job {
	enum kern_f64 op;
	float *g;		/* (n) */
	double *acc;		/* (n): added to or zeroed */
	const double *src;	/* (n): rounded into g */
	int64_t n;
	int zero_g;
};

static void
f64_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct f64_job *j = ctx;
	int64_t a = lo * DT_KERN_BLOCK;
	int64_t b = hi * DT_KERN_BLOCK < j->n ? hi * DT_KERN_BLOCK : j->n;
	float *restrict g = j->g;
	double *restrict acc = j->acc;

	switch (j->op) {
	case KERN_F64_ADD:
		for (int64_t i = a; i < b; i++)
			acc[i] += (double)g[i];
		if (j->zero_g)
			memset(g + a, 0, (size_t)(b - a) * sizeof *g);
		break;
	case KERN_F64_ROUND:
		for (int64_t i = a; i < b; i++)
			g[i] = (float)j->src[i];
		break;
	case KERN_F64_ZERO:
		memset(acc + a, 0, (size_t)(b - a) * sizeof *acc);
		break;
	}
}

static void
f64_run(struct dt_pool *pool, struct f64_job *j)
{
	dt_pool_for(pool, (j->n + DT_KERN_BLOCK - 1) / DT_KERN_BLOCK,
		    KERN_GRAIN_BLOCKS, f64_part, j);
}

void
dt_kern_par_f64_add(struct dt_pool *pool, float *g, double *acc, int64_t n,
		    int zero_g)
{
	struct f64_job j = {
		.op = KERN_F64_ADD, .g = g, .acc = acc, .n = n,
		.zero_g = zero_g,
	};

	f64_run(pool, &j);
}

void
dt_kern_par_f64_round(struct dt_pool *pool, const double *acc, float *g,
		      int64_t n)
{
	struct f64_job j = {
		.op = KERN_F64_ROUND, .g = g, .src = acc, .n = n,
	};

	f64_run(pool, &j);
}

void
dt_kern_par_f64_zero(struct dt_pool *pool, double *acc, int64_t n)
{
	struct f64_job j = { .op = KERN_F64_ZERO, .acc = acc, .n = n };

	f64_run(pool, &j);
}

/* Rows of C per part of dt_kern_par_sgemm at the least. */
#define KERN_GRAIN_GEMM_ROWS 32

/* The multiply-adds of a one-thread product between two calls of the
 * progress hook (dt_kern_set_progress): about 0.2 ms at 90 GFLOP/s, a
 * few hundred kB of a 1 Gbit/s link, and few enough calls that
 * repacking the shared operand for each costs little. */
#define KERN_PROGRESS_MACS ((int64_t)1 << 24)
/* The fewest rows of C in such a part: each call packs op(B) (k, n)
 * again, a cost of about 20 multiply-adds a value, so a part of r rows
 * costs about 20 / r more (dt_kern_par_sgemm of 784 x 1024 x 128 took
 * 10% longer in parts of 132 rows, and 128 x 1024 x 1024 cut into 12-
 * row parts 8 times as long). */
#define KERN_PROGRESS_ROWS 256

/* The hook (NULL: none) and its argument; set and called on the thread
 * that calls the products. */
static void (*kern_progress)(void *ctx);
static void *kern_progress_ctx;

struct gemm_job {
	int trans_a, trans_b;
	int64_t m, n, k;
	int64_t align;		/* rows of a block: dt_kern_gemm_align() */
	int64_t chunks;		/* one-thread calls, the hook between */
	float alpha, beta;
	const float *a, *b;	/* op(A) (m, k), op(B) (k, n) */
	int64_t lda, ldb, ldc;
	float *c;		/* (m, n) */
};

int64_t
dt_kern_gemm_align(void)
{
	static const struct {
		const char *core;
		int64_t rows;
	} known[] = {
		{ "Haswell", 12 }, { "Zen", 12 },
		{ "SkylakeX", 16 }, { "Cooperlake", 16 },
	};
	const char *core = openblas_get_corename();

	for (size_t i = 0; core != NULL && i < sizeof known / sizeof *known;
	     i++)
		if (strcmp(core, known[i].core) == 0)
			return known[i].rows;
	return 48;
}

int
dt_kern_blas_avx512(void)
{
	static const char *const wide[] = {
		"SkylakeX", "Cooperlake", "SapphireRapids",
	};
	const char *core = openblas_get_corename();

	for (size_t i = 0; core != NULL && i < sizeof wide / sizeof *wide;
	     i++)
		if (strcmp(core, wide[i]) == 0)
			return 1;
	return 0;
}

/* Blocks [lo, hi) of j->align rows of C, the last one cut at m. */
static void
gemm_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct gemm_job *j = ctx;
	int64_t r0 = lo * j->align;
	int64_t r1 = hi * j->align < j->m ? hi * j->align : j->m;
	/* rows [r0, r1) of op(A): rows of A, or columns of A stored (k, m) */
	const float *a = j->a + (j->trans_a ? r0 : r0 * j->lda);

	dt_kern_sgemm(j->trans_a, j->trans_b, r1 - r0, j->n, j->k, j->alpha,
		      a, j->lda, j->b, j->ldb, j->beta, j->c + r0 * j->ldc,
		      j->ldc);
}

void
dt_kern_set_progress(void (*fn)(void *ctx), void *ctx)
{
	kern_progress = fn;
	kern_progress_ctx = ctx;
}

/* The nb blocks as j->chunks calls of gemm_part, chunk t taking blocks
 * [nb*t/c, nb*(t+1)/c), the progress hook called between them. */
static void
gemm_chunks(void *ctx, int64_t lo, int64_t hi)
{
	const struct gemm_job *j = ctx;
	const int64_t nb = hi - lo, c = j->chunks;

	for (int64_t t = 0; t < c; t++) {
		if (t > 0 && kern_progress != NULL)
			kern_progress(kern_progress_ctx);
		gemm_part(ctx, lo + nb * t / c, lo + nb * (t + 1) / c);
	}
}

/* How many calls a one-thread product of j's shape makes where a
 * progress hook is set: one for each KERN_PROGRESS_MACS multiply-adds
 * and each KERN_PROGRESS_ROWS rows, whichever gives fewer (at most one
 * a block), where OpenBLAS runs on one thread; else one. */
static int64_t
gemm_chunk_count(const struct gemm_job *j, int64_t blocks)
{
	double macs = (double)j->m * (double)j->n * (double)j->k;
	int64_t c = (int64_t)(macs / (double)KERN_PROGRESS_MACS);

	/* OpenBLAS on several threads of its own splits each call's rows
	 * among them where its kernels' blocks need not fall (measured: its
	 * Haswell kernels, OPENBLAS_CORETYPE=Haswell as on an AVX2-only CPU,
	 * on 2 threads gave other bits for 784 x 1024 x 128 in 3 calls), so
	 * no cut can promise one call's bits there: no cut. */
	if (kern_progress == NULL || openblas_get_num_threads() > 1)
		return 1;
	if (c > j->m / KERN_PROGRESS_ROWS)
		c = j->m / KERN_PROGRESS_ROWS;
	if (c > blocks)
		c = blocks;
	return c > 1 ? c : 1;
}

void
dt_kern_par_sgemm(struct dt_pool *pool, int trans_a, int trans_b, int64_t m,
		  int64_t n, int64_t k, float alpha, const float *a,
		  int64_t lda, const float *b, int64_t ldb, float beta,
		  float *c, int64_t ldc)
{
	struct gemm_job j = {
		.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n,
		.k = k, .alpha = alpha, .beta = beta, .a = a, .b = b,
		.lda = lda, .ldb = ldb, .ldc = ldc, .c = c,
	};
	int64_t blocks, parts = (m + KERN_GRAIN_GEMM_ROWS - 1) /
				KERN_GRAIN_GEMM_ROWS;
	int blas;

	if (m <= 0)
		return;
	j.align = dt_kern_gemm_align();
	blocks = (m + j.align - 1) / j.align;
	if (dt_pool_threads(pool) <= 1) {
		/* one part, through the pool so that its timing counts it;
		 * cut where a progress hook waits, at blocks (the bits of
		 * one call, as the pool's parts) */
		j.chunks = gemm_chunk_count(&j, blocks);
		dt_pool_for(pool, blocks, blocks, gemm_chunks, &j);
		return;
	}
	/* at most ceil(m / 32) parts, as many blocks to each as can be */
	if (parts > dt_pool_threads(pool))
		parts = dt_pool_threads(pool);
	blas = dt_kern_set_threads(1);
	dt_pool_for(pool, blocks, (blocks + parts - 1) / parts, gemm_part,
		    &j);
	dt_kern_set_threads(blas);
}

/* The two products of dt_kern_par_sgemm2: index t < p1 of the loop is
 * part t of p1 of the first, the others parts of p2 of the second. */
struct gemm2_job {
	struct gemm_job g[2];
	int64_t blocks[2];	/* blocks of align rows of each */
	int parts[2];		/* p1, p2 */
};

static void
gemm2_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct gemm2_job *j = ctx;

	for (int64_t i = lo; i < hi; i++) {
		const int w = i < j->parts[0] ? 0 : 1;
		const int64_t t = w == 0 ? i : i - j->parts[0];
		const int64_t nb = j->blocks[w], np = j->parts[w];

		if (nb * t / np < nb * (t + 1) / np)
			gemm_part((void *)&j->g[w], nb * t / np,
				  nb * (t + 1) / np);
	}
}

/* Whether a one-thread dt_kern_par_sgemm2 of g[0] and g[1] goes to
 * dt_kern_bf16_sgemm2: in bf16, neither empty nor alpha 0 (sgemm_class's
 * own case), and each one call (no progress hook cuts it). */
static int
pair_bf16(const struct dt_kern_gemm *g1, const struct dt_kern_gemm *g2)
{
	const struct dt_kern_gemm *g[2] = { g1, g2 };

	if (!dt_kern_bf16())
		return 0;
	for (int w = 0; w < 2; w++) {
		const struct gemm_job j = { .m = g[w]->m, .n = g[w]->n,
					    .k = g[w]->k };
		const int64_t align = dt_kern_gemm_align();

		if (g[w]->m <= 0 || g[w]->n <= 0 || g[w]->k <= 0 ||
		    g[w]->alpha == 0.0f ||
		    gemm_chunk_count(&j, (g[w]->m + align - 1) / align) > 1)
			return 0;
	}
	return 1;
}

/* dt_kern_bf16_sgemm2 on ctx, g[0] and g[1] (the whole range). */
static void
gemm2_bf16(void *ctx, int64_t lo, int64_t hi)
{
	const struct dt_kern_gemm *const *g = ctx;

	(void)lo;
	(void)hi;
	dt_kern_bf16_sgemm2(g[0], g[1]);
}

void
dt_kern_par_sgemm2(struct dt_pool *pool, const struct dt_kern_gemm *g1,
		   const struct dt_kern_gemm *g2)
{
	const struct dt_kern_gemm *g[2] = { g1, g2 };
	const int threads = dt_pool_threads(pool);
	struct gemm2_job j;
	double f[2];
	int blas;

	if (threads <= 1 && pair_bf16(g1, g2)) {
		/* one part, through the pool so that its timing counts it */
		dt_pool_for(pool, 1, 1, gemm2_bf16, (void *)g);
		return;
	}
	if (threads <= 1 || g1->m <= 0 || g2->m <= 0) {
		for (int w = 0; w < 2; w++)
			dt_kern_par_sgemm(pool, g[w]->trans_a, g[w]->trans_b,
					  g[w]->m, g[w]->n, g[w]->k,
					  g[w]->alpha, g[w]->a, g[w]->lda,
					  g[w]->b, g[w]->ldb, g[w]->beta,
					  g[w]->c, g[w]->ldc);
		return;
	}
	memset(&j, 0, sizeof j);
	for (int w = 0; w < 2; w++) {
		j.g[w] = (struct gemm_job){
			.trans_a = g[w]->trans_a, .trans_b = g[w]->trans_b,
			.m = g[w]->m, .n = g[w]->n, .k = g[w]->k,
			.align = dt_kern_gemm_align(), .alpha = g[w]->alpha,
			.beta = g[w]->beta, .a = g[w]->a, .b = g[w]->b,
			.lda = g[w]->lda, .ldb = g[w]->ldb, .ldc = g[w]->ldc,
			.c = g[w]->c,
		};
		j.blocks[w] = (g[w]->m + j.g[w].align - 1) / j.g[w].align;
		f[w] = (double)g[w]->m * (double)g[w]->n * (double)g[w]->k;
	}
	/* threads in proportion to the multiply-adds, at least one each */
	j.parts[0] = (int)(threads * f[0] / (f[0] + f[1]) + 0.5);
	if (j.parts[0] < 1)
		j.parts[0] = 1;
	if (j.parts[0] > threads - 1)
		j.parts[0] = threads - 1;
	j.parts[1] = threads - j.parts[0];
	for (int w = 0; w < 2; w++) {
		const int64_t most = (g[w]->m + KERN_GRAIN_GEMM_ROWS - 1) /
				     KERN_GRAIN_GEMM_ROWS;

		if (j.parts[w] > most)
			j.parts[w] = (int)most;
		if (j.parts[w] > j.blocks[w])
			j.parts[w] = (int)j.blocks[w];
	}
	blas = dt_kern_set_threads(1);
	dt_pool_for(pool, j.parts[0] + j.parts[1], 1, gemm2_part, &j);
	dt_kern_set_threads(blas);
}

struct bcast_job {
	const float *b;		/* (n) */
	float *y;		/* (rows, n) */
	int64_t n;
};

static void
bcast_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct bcast_job *j = ctx;

	for (int64_t r = lo; r < hi; r++)
		memcpy(j->y + r * j->n, j->b, (size_t)j->n * sizeof(float));
}

void
dt_kern_par_broadcast(struct dt_pool *pool, const float *b, float *y,
		      int64_t rows, int64_t n)
{
	struct bcast_job j = { .b = b, .y = y, .n = n };

	dt_pool_for(pool, rows, n > 0 ? (DT_KERN_BLOCK + n - 1) / n : 1,
		    bcast_part, &j);
}

/* db[j0..j1) += the rows of dy[., j0..j1) in order. */
KERN_CLONES static void
col_sums(const float *restrict dy, int64_t ld, float *restrict db,
	 int64_t rows, int64_t len)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *row = dy + r * ld;

		DT_VEC_LOOP(j, len, db[j] += row[j]);
	}
}

struct cols_job {
	const float *dy;	/* (rows, ld) */
	int64_t ld, rows;
	float *db;		/* (cols) */
};

static void
cols_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct cols_job *j = ctx;

	col_sums(j->dy + lo, j->ld, j->db + lo, j->rows, hi - lo);
}

void
dt_kern_par_col_sums(struct dt_pool *pool, const float *dy, int64_t ld,
		     float *db, int64_t rows, int64_t cols)
{
	struct cols_job j = { .dy = dy, .ld = ld, .rows = rows, .db = db };

	dt_pool_for(pool, cols, KERN_GRAIN_COLS, cols_part, &j);
}

struct ln_job {
	const float *x, *dy;		/* (rows, c) */
	const float *gain, *bias;	/* (c) */
	float *y, *dx;			/* (rows, c) */
	float *mean, *rstd;		/* (rows): forward writes them */
	const float *smean, *srstd;	/* (rows): backward reads them */
	float *dgain, *dbias;		/* (c) */
	int64_t rows, c;
	float eps;
	int add;
};

static void
ln_fwd_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct ln_job *j = ctx;

	dt_kern_layernorm(j->x + lo * j->c, j->gain, j->bias, j->y + lo * j->c,
			  j->mean + lo, j->rstd + lo, hi - lo, j->c, j->eps);
}

void
dt_kern_par_layernorm(struct dt_pool *pool, const float *x, const float *gain,
		      const float *bias, float *y, float *mean, float *rstd,
		      int64_t rows, int64_t c, float eps)
{
	struct ln_job j = {
		.x = x, .gain = gain, .bias = bias, .y = y, .mean = mean,
		.rstd = rstd, .rows = rows, .c = c, .eps = eps,
	};

	dt_pool_for(pool, rows, KERN_GRAIN_ROWS, ln_fwd_part, &j);
}

/* The two row means of ln_grad_params (the same lanes, the same order),
 * without the parameter gradients. */
KERN_CLONES static void
ln_grad_sums(const float *restrict x, const float *restrict dy,
	     const float *restrict gain, int64_t c, float m, float s,
	     float *restrict sums)
{
	float l0[KERN_LANES] = { 0 }, l1[KERN_LANES] = { 0 };
	int64_t k = 0;

	for (; k + KERN_LANES <= c; k += KERN_LANES)
		for (int j = 0; j < KERN_LANES; j++) {
			float xhat = (x[k + j] - m) * s;
			float dn = gain[k + j] * dy[k + j];

			l0[j] += dn;
			l1[j] += dn * xhat;
		}
	for (int j = 0; k < c; k++, j++) {
		float xhat = (x[k] - m) * s;
		float dn = gain[k] * dy[k];

		l0[j] += dn;
		l1[j] += dn * xhat;
	}
	sums[0] = lanes_sum(l0);
	sums[1] = lanes_sum(l1);
}

static void
ln_dx_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct ln_job *j = ctx;
	const int64_t c = j->c;

	for (int64_t r = lo; r < hi; r++) {
		float sums[2];

		ln_grad_sums(j->x + r * c, j->dy + r * c, j->gain, c,
			     j->smean[r], j->srstd[r], sums);
		ln_grad_x(j->x + r * c, j->dy + r * c, j->gain, j->dx + r * c,
			  c, j->smean[r], j->srstd[r], sums[0] / (float)c,
			  sums[1] / (float)c, j->add);
	}
}

/* dgain[k] += dy * xhat and dbias[k] += dy for the columns [0, len) of
 * x and dy (row stride c), row after row, as ln_grad_params adds them. */
KERN_CLONES static void
ln_grad_cols(const float *restrict x, const float *restrict dy,
	     const float *restrict mean, const float *restrict rstd,
	     float *restrict dgain, float *restrict dbias, int64_t rows,
	     int64_t c, int64_t len)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * c, *dr = dy + r * c;
		const float m = mean[r], s = rstd[r];

		DT_VEC_LOOP(k, len, {
			float xhat = (xr[k] - m) * s;

			dgain[k] += dr[k] * xhat;
			dbias[k] += dr[k];
		});
	}
}

static void
ln_cols_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct ln_job *j = ctx;

	ln_grad_cols(j->x + lo, j->dy + lo, j->smean, j->srstd, j->dgain + lo,
		     j->dbias + lo, j->rows, j->c, hi - lo);
}

void
dt_kern_par_layernorm_grad(struct dt_pool *pool, const float *x,
			   const float *dy, const float *gain,
			   const float *mean, const float *rstd, float *dx,
			   int add, float *dgain, float *dbias, int64_t rows,
			   int64_t c)
{
	struct ln_job j = {
		.x = x, .dy = dy, .gain = gain, .dx = dx, .smean = mean,
		.srstd = rstd, .dgain = dgain, .dbias = dbias, .rows = rows,
		.c = c, .add = add,
	};

	if (dx != NULL)
		dt_pool_for(pool, rows, KERN_GRAIN_ROWS, ln_dx_part, &j);
	dt_pool_for(pool, c, KERN_GRAIN_COLS, ln_cols_part, &j);
}

int
dt_kern_set_threads(int n)
{
	int before = openblas_get_num_threads();

	if (n != before)
		openblas_set_num_threads(n);
	return before;
}

/* ---- convolution ------------------------------------------------------ */

/* Output columns [*lo, *hi) whose input column ow*S - P + kw lies in
 * [0, W); the others read padding. */
static void
conv_valid_cols(const struct dt_kern_conv *g, int64_t kw, int64_t *lo,
		int64_t *hi)
{
	int64_t first = g->pad - kw, last = g->w - 1 + g->pad - kw;

	*lo = first > 0 ? (first + g->s - 1) / g->s : 0;
	*hi = last < 0 ? 0 : last / g->s + 1;
	if (*hi > g->ow)
		*hi = g->ow;
	if (*lo > *hi)
		*lo = *hi;
}

/* Column row (kh, kw) of channel plane xc: for output row oh, sets *at so
 * that entry ow (at stride S) is xc[*at + ow*S], or returns false when the
 * input row is padding. Only the entries conv_valid_cols gives are read,
 * so *at + ow*S stays in the plane even where *at lies before its row. */
static bool
conv_row_start(const struct dt_kern_conv *g, int64_t kh, int64_t kw,
	       int64_t oh, int64_t *at)
{
	int64_t ih = oh * g->s - g->pad + kh;

	if (ih < 0 || ih >= g->h)
		return false;
	*at = ih * g->w - g->pad + kw;
	return true;
}

/* Whether the output has the input's size at stride 1 (2P = K - 1): then
 * column row (kh, kw) is the input plane shifted by d = (kh - P) W + (kw -
 * P), one contiguous run [lo, hi) of the oh*ow entries, with the input
 * rows outside the image and the |kw - P| edge columns of every row set
 * to 0 (they would read the neighbouring row). */
static bool
conv_same(const struct dt_kern_conv *g)
{
	return g->s == 1 && g->oh == g->h && g->ow == g->w;
}

struct conv_shift {
	int64_t d;		/* input index = output index + d */
	int64_t lo, hi;		/* the run that reads the plane */
	int64_t oh0, oh1;	/* output rows inside the image */
	int64_t dw;		/* kw - P: edge columns [0, -dw) or
				 * [W - dw, W) */
};

static int64_t
conv_clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void
conv_shift_of(const struct dt_kern_conv *g, int64_t kh, int64_t kw,
	      struct conv_shift *sh)
{
	const int64_t dh = kh - g->pad, plane = g->h * g->w;

	sh->dw = kw - g->pad;
	sh->d = dh * g->w + sh->dw;
	sh->oh0 = conv_clamp(-dh, 0, g->h);
	sh->oh1 = conv_clamp(g->h - dh, sh->oh0, g->h);
	/* the image rows, less what would read before or after the plane
	 * (edge columns of the first or last row) */
	sh->lo = conv_clamp(sh->oh0 * g->w > -sh->d ? sh->oh0 * g->w : -sh->d,
			    0, plane);
	sh->hi = conv_clamp(sh->oh1 * g->w < plane - sh->d ? sh->oh1 * g->w
							   : plane - sh->d,
			    sh->lo, plane);
}

/* The edge columns of the image rows of one column row, set to 0. */
static inline void
conv_zero_edges(const struct dt_kern_conv *g, const struct conv_shift *sh,
		float *row)
{
	const int64_t n = conv_clamp(sh->dw < 0 ? -sh->dw : sh->dw, 0, g->w);
	const int64_t at = sh->dw < 0 ? 0 : g->w - n;

	if (n == 0)
		return;
	for (int64_t oh = sh->oh0; oh < sh->oh1; oh++)
		for (int64_t i = 0; i < n; i++)
			row[oh * g->w + at + i] = 0.0f;
}

/* One column row (kh, kw) of plane xc in the general geometry. */
static void
im2col_row(const struct dt_kern_conv *g, int64_t kh, int64_t kw,
	   const float *xc, float *dst)
{
	int64_t lo, hi, at;

	conv_valid_cols(g, kw, &lo, &hi);
	for (int64_t oh = 0; oh < g->oh; oh++, dst += g->ow) {
		if (!conv_row_start(g, kh, kw, oh, &at)) {
			memset(dst, 0, (size_t)g->ow * sizeof(float));
			continue;
		}
		for (int64_t ow = 0; ow < lo; ow++)
			dst[ow] = 0.0f;
		if (g->s == 1)
			memcpy(dst + lo, xc + at + lo,
			       (size_t)(hi - lo) * sizeof(float));
		else
			for (int64_t ow = lo; ow < hi; ow++)
				dst[ow] = xc[at + ow * g->s];
		for (int64_t ow = hi; ow < g->ow; ow++)
			dst[ow] = 0.0f;
	}
}

/* x[0..n) = 0: a short run (a row's edge, a first row) inline rather
 * than through memset. */
static inline void
conv_zero(float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = 0.0f;
}

/* The same-size geometry (conv_same): column rows (kh, kw) of every
 * channel, the shift worked out once per (kh, kw). */
static void
im2col_same(const struct dt_kern_conv *g, const float *x, float *col,
	    int64_t ld)
{
	const int64_t kk = g->k * g->k, l = g->oh * g->ow;
	const int64_t plane = g->h * g->w;

	for (int64_t kh = 0; kh < g->k; kh++)
		for (int64_t kw = 0; kw < g->k; kw++) {
			struct conv_shift sh;

			conv_shift_of(g, kh, kw, &sh);
			for (int64_t c = 0; c < g->c; c++) {
				float *dst = col + (c * kk + kh * g->k + kw) *
							   ld;

				conv_zero(dst, sh.lo);
				memcpy(dst + sh.lo, x + c * plane + sh.lo + sh.d,
				       (size_t)(sh.hi - sh.lo) *
					       sizeof(float));
				conv_zero(dst + sh.hi, l - sh.hi);
				conv_zero_edges(g, &sh, dst);
			}
		}
}

void
dt_kern_im2col(const struct dt_kern_conv *g, const float *x, float *col,
	       int64_t ld)
{
	const int64_t kk = g->k * g->k;
	const int64_t plane = g->h * g->w;

	if (conv_same(g)) {
		im2col_same(g, x, col, ld);
		return;
	}
	for (int64_t r = 0; r < g->c * kk; r++)
		im2col_row(g, r % kk / g->k, r % g->k, x + r / kk * plane,
			   col + r * ld);
}

/* col2im in the same-size geometry: for every channel the rows (kh, kw)
 * in order, as the general loop adds them. */
static void
col2im_same(const struct dt_kern_conv *g, float *col, int64_t ld, float *dx)
{
	const int64_t kk = g->k * g->k, plane = g->h * g->w;

	for (int64_t kh = 0; kh < g->k; kh++)
		for (int64_t kw = 0; kw < g->k; kw++) {
			struct conv_shift sh;

			conv_shift_of(g, kh, kw, &sh);
			for (int64_t c = 0; c < g->c; c++) {
				float *src = col + (c * kk + kh * g->k + kw) *
							   ld;

				conv_zero_edges(g, &sh, src);
				acc1(src + sh.lo, dx + c * plane + sh.lo + sh.d,
				     sh.hi - sh.lo);
			}
		}
}

void
dt_kern_col2im(const struct dt_kern_conv *g, float *col, int64_t ld,
	       float *dx, int add)
{
	const int64_t kk = g->k * g->k;
	const int64_t plane = g->h * g->w;

	if (!add)
		memset(dx, 0, (size_t)(g->c * plane) * sizeof(float));
	if (conv_same(g)) {
		col2im_same(g, col, ld, dx);
		return;
	}
	for (int64_t r = 0; r < g->c * kk; r++) {
		const int64_t kh = r % kk / g->k, kw = r % g->k;
		float *dc = dx + r / kk * plane;
		float *src = col + r * ld;
		int64_t lo, hi, at;

		conv_valid_cols(g, kw, &lo, &hi);
		for (int64_t oh = 0; oh < g->oh; oh++, src += g->ow) {
			if (!conv_row_start(g, kh, kw, oh, &at))
				continue;
			for (int64_t ow = lo; ow < hi; ow++)
				dc[at + ow * g->s] += src[ow];
		}
	}
}

KERN_CLONES static void
bias_row(float *restrict y, int64_t n, float v, int relu)
{
	if (relu)
		DT_VEC_LOOP(i, n, {
			float u = y[i] + v;

			y[i] = u > 0.0f ? u : 0.0f;
		});
	else
		DT_VEC_LOOP(i, n, y[i] = y[i] + v);
}

void
dt_kern_bias_act(float *y, const float *bias, int64_t rows, int64_t n,
		 int relu)
{
	for (int64_t r = 0; r < rows; r++)
		bias_row(y + r * n, n, bias != NULL ? bias[r] : 0.0f, relu);
}

static inline float
kern_relu_grad(float y, float dy)
{
	return y > 0.0f ? dy : 0.0f;
}

KERN_CLONES static void
relu_mask(const float *restrict y, const float *restrict dy,
	  float *restrict t, int64_t n)
{
	DT_VEC_LOOP(i, n, t[i] = kern_relu_grad(y[i], dy[i]));
}

KERN_CLONES static void
copy_row(const float *restrict x, float *restrict y, int64_t n)
{
	DT_VEC_LOOP(i, n, y[i] = x[i]);
}

void
dt_kern_gather_rows(const float *y, const float *dy, float *t, int64_t ld,
		    int64_t rows, int64_t n)
{
	for (int64_t r = 0; r < rows; r++)
		if (y != NULL)
			relu_mask(y + r * n, dy + r * n, t + r * ld, n);
		else
			copy_row(dy + r * n, t + r * ld, n);
}

void
dt_kern_row_sums(const float *x, float *db, int add, int64_t rows, int64_t n)
{
	for (int64_t r = 0; r < rows; r++) {
		float s = row_sum(x + r * n, n);

		db[r] = add ? db[r] + s : s;
	}
}

/* ---- 2x2 max pooling ------------------------------------------------ */

/* One output row from input rows r0 and r1; base0 is the index of
 * r0[0], w the row stride. */
#define MAXPOOL2_ONE(j)                                         \
	do {                                                    \
		float a = r0[2 * (j)];                          \
		float b = r0[2 * (j) + 1];                      \
		float c = r1[2 * (j)];                          \
		float d = r1[2 * (j) + 1];                      \
		int32_t base = base0 + 2 * (int32_t)(j);        \
		float v = b > a ? b : a;                        \
		int32_t at = b > a ? base + 1 : base;           \
                                                                \
		at = c > v ? base + w : at;                     \
		v = c > v ? c : v;                              \
		at = d > v ? base + w + 1 : at;                 \
		v = d > v ? d : v;                              \
		y[j] = v;                                       \
		arg[j] = at;                                    \
	} while (0)

/* One output row from input rows r0 and r1: blocks of 8, then one of 4
 * (the rows of a small map are short: 7 or 14 outputs), then one by one.
 * base0 is the index of r0[0], w the row stride. Inlined into each clone
 * of maxpool2_planes, so that it gets the clone's vectors. */
static inline __attribute__((always_inline)) void
maxpool2_row(int64_t ow, const float *restrict r0, const float *restrict r1,
	     float *restrict y, int32_t *restrict arg, int32_t base0,
	     int32_t w)
{
	int64_t j = 0;

	for (; j + 8 <= ow; j += 8)
		for (int k = 0; k < 8; k++)
			MAXPOOL2_ONE(j + k);
	for (; j + 4 <= ow; j += 4)
		for (int k = 0; k < 4; k++)
			MAXPOOL2_ONE(j + k);
	for (; j < ow; j++)
		MAXPOOL2_ONE(j);
}

KERN_CLONES static void
maxpool2_planes(const float *restrict x, int64_t xs, float *restrict y,
		int32_t *restrict arg, int64_t planes, int64_t h, int64_t w,
		int32_t at)
{
	const int64_t oh = h / 2, ow = w / 2;

	for (int64_t p = 0; p < planes; p++, x += xs, y += oh * ow,
		     arg += oh * ow, at += (int32_t)(h * w))
		for (int64_t r = 0; r < oh; r++)
			maxpool2_row(ow, x + 2 * r * w, x + (2 * r + 1) * w,
				     y + r * ow, arg + r * ow,
				     at + (int32_t)(2 * r * w), (int32_t)w);
}

void
dt_kern_maxpool2(const float *x, int64_t xs, float *y, int32_t *arg,
		 int64_t planes, int64_t h, int64_t w, int32_t at)
{
	maxpool2_planes(x, xs, y, arg, planes, h, w, at);
}

void
dt_kern_unpool_relu(const float *dy, const float *y, const int32_t *arg,
		    float *dx, int64_t ld, int64_t n_out, int64_t planes,
		    int64_t plane)
{
	const int64_t q = n_out / planes;

	for (int64_t p = 0; p < planes; p++) {
		float *d = dx + p * ld - p * plane;

		memset(dx + p * ld, 0, (size_t)plane * sizeof(float));
		for (int64_t i = p * q; i < (p + 1) * q; i++)
			d[arg[i]] = y[i] > 0.0f ? dy[i] + 0.0f : 0.0f;
	}
}
