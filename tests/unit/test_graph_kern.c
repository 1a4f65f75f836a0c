/* SPDX-License-Identifier: MIT */
/* test_graph_kern.c - Check suite for the kernel seam (src/graph/kern.h):
 * every loop against a plain double-precision reference written from the
 * formula, at lengths that are and are not multiples of the 8 lanes
 * (0, 1, 7, 8, 13, 96, 1000): exp over [-87, 87] to 1.5 ulp and its
 * clamping and NaN, softmax with its sum and max, the dot product, GELU
 * against the tanh form and its derivative against a central difference
 * of that, the softmax Jacobian product, layernorm forward and backward,
 * the elementwise add, accumulate and multiply, and the sgemm grid and
 * the small-product kernel against a triple loop; the bf16 product
 * against a double sum of bf16-rounded inputs; the f32 product on oneDNN
 * against a double sum and OpenBLAS's, and parallel.kernels' routing. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "graph/kern.h"
#include "graph/kern_paths.h"
#include "util/alloc.h"
#include "util/cpu_features.h"
#include "util/rng.h"
#include "util/threadpool.h"

static const int64_t lengths[] = { 0, 1, 7, 8, 13, 96, 1000 };
#define N_LENGTHS ((int)(sizeof lengths / sizeof lengths[0]))

/* Reproducible values in [lo, hi). */
static void
fill(float *a, int64_t n, uint64_t key, float lo, float hi)
{
	for (int64_t i = 0; i < n; i++)
		a[i] = lo + (hi - lo) * dt_rng_uniform(99, DT_RNG_SAMPLE, key,
						       (uint64_t)i);
}

static int
close_enough(double got, double want, double atol, double rtol)
{
	return fabs(got - want) <= atol + rtol * fabs(want);
}

START_TEST(test_exp)
{
	enum { N = 200001 };
	float *x = dt_xalloc_floats(N), *y = dt_xalloc_floats(N);
	double worst = 0.0;
	float special[6] = { 0.0f, -0.0f, 100.0f, -100.0f, NAN, 1.0f };

	for (int i = 0; i < N; i++)
		x[i] = -87.0f + 174.0f * (float)i / (float)(N - 1);
	memcpy(y, x, N * sizeof(float));
	dt_kern_exp(y, N);
	for (int i = 0; i < N; i++) {
		double want = exp((double)x[i]);
		double ulp = nextafterf((float)want, INFINITY) - (float)want;

		worst = fmax(worst, fabs(y[i] - want) / ulp);
	}
	ck_assert_msg(worst <= 1.5, "exp: %g ulp", worst);
	dt_kern_exp(special, 6);
	ck_assert(special[0] == 1.0f && special[1] == 1.0f);
	/* saturates at e^87 and e^-87 */
	ck_assert(close_enough(special[2], exp(87.0), 0, 1e-6));
	ck_assert(close_enough(special[3], exp(-87.0), 0, 1e-6));
	ck_assert(isnan(special[4]));
	ck_assert(close_enough(special[5], M_E, 0, 1.2e-7));
	free(x);
	free(y);
}
END_TEST

START_TEST(test_softmax_dot)
{
	for (int l = 1; l < N_LENGTHS; l++) {
		int64_t n = lengths[l];
		float *x = dt_xalloc_floats((size_t)n);
		float *y = dt_xalloc_floats((size_t)n);
		double max = -INFINITY, sum = 0.0, dot = 0.0;
		float got_max, got_sum;

		fill(x, n, (uint64_t)l, -6.0f, 6.0f);
		memcpy(y, x, (size_t)n * sizeof(float));
		got_sum = dt_kern_softmax(y, n, &got_max);
		for (int64_t i = 0; i < n; i++)
			max = fmax(max, x[i]);
		for (int64_t i = 0; i < n; i++)
			sum += exp(x[i] - max);
		ck_assert(got_max == (float)max);
		ck_assert(close_enough(got_sum, sum, 0, 1e-6));
		for (int64_t i = 0; i < n; i++)
			ck_assert(close_enough(y[i], exp(x[i] - max) / sum,
					       1e-9, 1e-6));
		for (int64_t i = 0; i < n; i++)
			dot += (double)x[i] * y[i];
		ck_assert(close_enough(dt_kern_dot(x, y, n), dot, 1e-6, 1e-5));
		free(x);
		free(y);
	}
	ck_assert(dt_kern_dot(NULL, NULL, 0) == 0.0f);
}
END_TEST

/* The Jacobian product of the softmax against its definition. */
START_TEST(test_softmax_grad)
{
	for (int l = 1; l < N_LENGTHS; l++) {
		int64_t n = lengths[l];
		float *y = dt_xalloc_floats((size_t)n);
		float *d = dt_xalloc_floats((size_t)n);
		float *d0 = dt_xalloc_floats((size_t)n);
		double dot = 0.0;

		fill(y, n, 10 + (uint64_t)l, -3.0f, 3.0f);
		dt_kern_softmax(y, n, NULL);
		fill(d0, n, 20 + (uint64_t)l, -1.0f, 1.0f);
		memcpy(d, d0, (size_t)n * sizeof(float));
		dt_kern_softmax_grad(y, d, n, 0.25f);
		for (int64_t i = 0; i < n; i++)
			dot += (double)y[i] * d0[i];
		for (int64_t i = 0; i < n; i++)
			ck_assert(close_enough(d[i], 0.25 * y[i] * (d0[i] - dot),
					       1e-8, 1e-5));
		free(y);
		free(d);
		free(d0);
	}
}
END_TEST

static double
gelu_ref(double x)
{
	return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) *
				     (x + 0.044715 * x * x * x)));
}

START_TEST(test_gelu)
{
	for (int l = 0; l < N_LENGTHS; l++) {
		int64_t n = lengths[l];
		float *x = dt_xalloc_floats((size_t)n + 4);
		float *y = dt_xalloc_floats((size_t)n + 4);
		float *dy = dt_xalloc_floats((size_t)n + 4);
		float *dx = dt_xalloc_floats((size_t)n + 4);

		fill(x, n, 30 + (uint64_t)l, -8.0f, 8.0f);
		fill(dy, n, 40 + (uint64_t)l, -1.0f, 1.0f);
		dt_kern_gelu(x, y, n);
		dt_kern_gelu_grad(x, dy, dx, n, 0);
		for (int64_t i = 0; i < n; i++) {
			double h = 1e-4, d = (gelu_ref(x[i] + h) -
					      gelu_ref(x[i] - h)) / (2 * h);

			ck_assert_msg(close_enough(y[i], gelu_ref(x[i]), 1e-7,
						   1e-6), "gelu(%g) = %g, want "
				      "%g", (double)x[i], (double)y[i],
				      gelu_ref(x[i]));
			ck_assert_msg(close_enough(dx[i], d * dy[i], 1e-6,
						   1e-5), "gelu'(%g)", (double)x[i]);
		}
		/* add accumulates onto what dx holds */
		dt_kern_gelu_grad(x, dy, dx, n, 1);
		for (int64_t i = 0; i < n; i++) {
			double d = (gelu_ref(x[i] + 1e-4) -
				    gelu_ref(x[i] - 1e-4)) / 2e-4;

			ck_assert(close_enough(dx[i], 2.0 * d * dy[i], 2e-6,
					       1e-5));
		}
		free(x);
		free(y);
		free(dy);
		free(dx);
	}
	/* far tails: 0 (a tiny negative) and x; NaN stays NaN */
	float t[3] = { -60.0f, 60.0f, NAN }, u[3];

	dt_kern_gelu(t, u, 3);
	ck_assert(u[0] <= 0.0f && u[0] > -1e-30f);
	ck_assert(u[1] == 60.0f);
	ck_assert(isnan(u[2]));
}
END_TEST

/* Layernorm of 3 rows against the formula in double, both directions. */
/* GELU's formula as kern.c writes it, one float operation at a time in
 * its order, on dt_kern_exp (the SSE2 and AVX2 clones): the bits every
 * path of dt_kern_gelu and dt_kern_gelu_grad must give, the AVX-512 one
 * (16 values a step, chosen where the CPU has AVX-512F) included. */
static float
gelu_s_bits(float x)
{
	float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
	float e = -2.0f * u;

	dt_kern_exp(&e, 1);
	return 1.0f / (1.0f + e);
}

static int
same_bits(float a, float b)
{
	return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

START_TEST(test_gelu_bits)
{
	enum { N = 1043 };	/* 65 blocks of 16 and a tail of 3 */
	float *x = dt_xalloc_floats(N), *y = dt_xalloc_floats(N);
	float *dy = dt_xalloc_floats(N), *dx = dt_xalloc_floats(N);
	float *dx0 = dt_xalloc_floats(N);
	static const float special[] = {
		0.0f, -0.0f, 1e-40f, -1e-40f, 60.0f, -60.0f, 100.0f, -100.0f,
		INFINITY, -INFINITY, NAN, 3.0f, -3.0f, 0.5f, -0.5f, 9.5f,
	};

	fill(x, N, 77, -10.0f, 10.0f);
	memcpy(x + 100, special, sizeof special);
	fill(dy, N, 78, -1.0f, 1.0f);
	fill(dx0, N, 79, -1.0f, 1.0f);
	for (int64_t n = 0; n <= N; n += n < 40 ? 1 : N - 40) {
		dt_kern_gelu(x, y, n);
		memcpy(dx, dx0, N * sizeof(float));
		dt_kern_gelu_grad(x, dy, dx, n, 1);
		for (int64_t i = 0; i < n; i++) {
			float v = x[i], s = gelu_s_bits(v);
			float d = s + 2.0f * v * s * (1.0f - s) *
				  0.7978845608028654f *
				  (1.0f + 3.0f * 0.044715f * v * v);

			ck_assert_msg(same_bits(y[i], v * s),
				      "gelu(%a) = %a, want %a (n %lld)",
				      (double)v, (double)y[i],
				      (double)(v * s), (long long)n);
			ck_assert_msg(same_bits(dx[i], dx0[i] + d * dy[i]),
				      "gelu'(%a): %a, want %a", (double)v,
				      (double)dx[i],
				      (double)(dx0[i] + d * dy[i]));
		}
		ck_assert(n == N || same_bits(dx[n], dx0[n]));
		dt_kern_gelu_grad(x, dy, dx, n, 0);
		for (int64_t i = 0; i < n; i++) {
			float v = x[i], s = gelu_s_bits(v);
			float d = s + 2.0f * v * s * (1.0f - s) *
				  0.7978845608028654f *
				  (1.0f + 3.0f * 0.044715f * v * v);

			ck_assert_msg(same_bits(dx[i], d * dy[i]),
				      "gelu'(%a) dy", (double)v);
		}
	}
	free(x);
	free(y);
	free(dy);
	free(dx);
	free(dx0);
}
END_TEST

START_TEST(test_layernorm)
{
	for (int l = 1; l < N_LENGTHS; l++) {
		const int64_t c = lengths[l], rows = 3;
		float *x = dt_xalloc_floats((size_t)(rows * c));
		float *y = dt_xalloc_floats((size_t)(rows * c));
		float *dy = dt_xalloc_floats((size_t)(rows * c));
		float *dx = dt_xalloc_floats((size_t)(rows * c));
		float *g = dt_xalloc_floats((size_t)c);
		float *bias = dt_xalloc_floats((size_t)c);
		float *dg = dt_xcalloc((size_t)c, sizeof(float));
		float *db = dt_xcalloc((size_t)c, sizeof(float));
		float mean[3], rstd[3];
		double *rdg = dt_xcalloc((size_t)c, sizeof(double));
		double *rdb = dt_xcalloc((size_t)c, sizeof(double));

		fill(x, rows * c, 50 + (uint64_t)l, -2.0f, 3.0f);
		fill(dy, rows * c, 60 + (uint64_t)l, -1.0f, 1.0f);
		fill(g, c, 70 + (uint64_t)l, 0.5f, 1.5f);
		fill(bias, c, 80 + (uint64_t)l, -0.5f, 0.5f);
		dt_kern_layernorm(x, g, bias, y, mean, rstd, rows, c, 1e-5f);
		dt_kern_layernorm_grad(x, dy, g, mean, rstd, dx, 0, dg, db,
				       rows, c);
		for (int64_t r = 0; r < rows; r++) {
			const float *xr = x + r * c, *dyr = dy + r * c;
			double m = 0, v = 0, s, a = 0, b = 0;

			for (int64_t j = 0; j < c; j++)
				m += xr[j];
			m /= (double)c;
			for (int64_t j = 0; j < c; j++)
				v += (xr[j] - m) * (xr[j] - m);
			v /= (double)c;
			s = 1.0 / sqrt(v + 1e-5);
			ck_assert(close_enough(mean[r], m, 1e-6, 1e-5));
			ck_assert(close_enough(rstd[r], s, 1e-6, 1e-5));
			for (int64_t j = 0; j < c; j++) {
				double xh = (xr[j] - m) * s;

				ck_assert(close_enough(y[r * c + j],
						       g[j] * xh + bias[j],
						       1e-5, 1e-5));
				a += g[j] * dyr[j];
				b += g[j] * dyr[j] * xh;
				rdg[j] += dyr[j] * xh;
				rdb[j] += dyr[j];
			}
			a /= (double)c;
			b /= (double)c;
			for (int64_t j = 0; j < c; j++) {
				double xh = (xr[j] - m) * s;

				ck_assert(close_enough(dx[r * c + j],
						       s * (g[j] * dyr[j] - a -
							    xh * b),
						       1e-4, 1e-4));
			}
		}
		for (int64_t j = 0; j < c; j++) {
			ck_assert(close_enough(dg[j], rdg[j], 1e-5, 1e-5));
			ck_assert(close_enough(db[j], rdb[j], 1e-5, 1e-5));
		}
		/* without dx only the parameter gradients move */
		dt_kern_layernorm_grad(x, dy, g, mean, rstd, NULL, 0, dg, db,
				       rows, c);
		for (int64_t j = 0; j < c; j++)
			ck_assert(close_enough(db[j], 2.0 * rdb[j], 1e-5,
					       1e-5));
		free(x);
		free(y);
		free(dy);
		free(dx);
		free(g);
		free(bias);
		free(dg);
		free(db);
		free(rdg);
		free(rdb);
	}
}
END_TEST

START_TEST(test_elementwise)
{
	for (int l = 0; l < N_LENGTHS; l++) {
		int64_t n = lengths[l];
		float *a = dt_xalloc_floats((size_t)n + 1);
		float *b = dt_xalloc_floats((size_t)n + 1);
		float *y = dt_xalloc_floats((size_t)n + 1);

		fill(a, n, 90 + (uint64_t)l, -1.0f, 1.0f);
		fill(b, n, 100 + (uint64_t)l, -1.0f, 1.0f);
		dt_kern_add(a, b, y, n);
		for (int64_t i = 0; i < n; i++)
			ck_assert(y[i] == a[i] + b[i]);
		dt_kern_acc(a, y, n);
		for (int64_t i = 0; i < n; i++)
			ck_assert(y[i] == (a[i] + b[i]) + a[i]);
		dt_kern_mul(a, b, y, n, 0);
		for (int64_t i = 0; i < n; i++)
			ck_assert(y[i] == a[i] * b[i]);
		dt_kern_mul(a, b, y, n, 1);
		for (int64_t i = 0; i < n; i++)
			ck_assert(y[i] == a[i] * b[i] + a[i] * b[i]);
		free(a);
		free(b);
		free(y);
	}
}
END_TEST

/* A 2 x 3 grid of (5, 4) = (5, 6) (6, 4)^T products with strides that
 * interleave the matrices, against a triple loop; _i picks the
 * transposes. */
START_TEST(test_sgemm_grid)
{
	const int ta = _i & 1, tb = (_i >> 1) & 1;
	enum { M = 5, N = 4, K = 6, LD = 40 };
	/* A rows: op(A) is (M, K); stored (M, K) or (K, M) at row stride
	 * LD; each grid cell is offset by (o * 3 + i) * 7 floats. */
	const int64_t sa[2] = { 21, 7 }, sb[2] = { 21, 7 }, sc[2] = { 12, 4 };
	float *a = dt_xalloc_floats(LD * 8 + 64);
	float *b = dt_xalloc_floats(LD * 8 + 64);
	float *c = dt_xcalloc(LD * 8 + 64, sizeof(float));

	fill(a, LD * 8 + 64, 110, -1.0f, 1.0f);
	fill(b, LD * 8 + 64, 111, -1.0f, 1.0f);
	dt_kern_sgemm_grid(ta, tb, M, N, K, 0.5f, a, LD, sa, b, LD, sb, 0.0f,
			   c, 2 * LD, sc, 2, 3);
	for (int o = 0; o < 2; o++)
		for (int g = 0; g < 3; g++) {
			const float *ag = a + o * sa[0] + g * sa[1];
			const float *bg = b + o * sb[0] + g * sb[1];
			const float *cg = c + o * sc[0] + g * sc[1];

			for (int i = 0; i < M; i++)
				for (int j = 0; j < N; j++) {
					double want = 0.0;

					for (int k = 0; k < K; k++)
						want += (double)(ta ? ag[k * LD + i]
								    : ag[i * LD + k]) *
							(tb ? bg[j * LD + k]
							    : bg[k * LD + j]);
					ck_assert(close_enough(cg[i * 2 * LD + j],
							       0.5 * want, 1e-6,
							       1e-5));
				}
		}
	free(a);
	free(b);
	free(c);
}
END_TEST

/* dt_kern_sgemm_small, on its own kernel (_i & 4: the AVX2/FMA path where
 * the processor has it, else the plain C path) and with the transposes
 * of _i & 3: shapes around its 6- and 4-row blocks and 16-column
 * panels, against a double triple loop; beta 0 over NaN in C and beta
 * 0.3 (not exact in binary); every row the same bits as a one-row call
 * on that row alone and its last column as a one-column call (so no
 * split of the rows or columns changes a bit); alpha 0 with Inf in A
 * leaving beta * C, as the BLAS does; and a panel too large handed to
 * dt_kern_sgemm. */
START_TEST(test_sgemm_small)
{
	const int ta = _i & 1, tb = (_i >> 1) & 1, generic = (_i >> 2) & 1;
	static const int ms[] = { 1, 3, 4, 5, 6, 7, 16, 17 };
	static const int ns[] = { 1, 8, 15, 16, 17, 32, 64, 70 };
	static const int ks[] = { 1, 2, 31, 32, 64, 100 };
	enum { NM = 8, NN = 8, NK = 6, LD = 160, SZ = LD * 160 };
	float *a = dt_xalloc_floats(SZ), *b = dt_xalloc_floats(SZ);
	float *c = dt_xalloc_floats(SZ), *r = dt_xalloc_floats(SZ);
	float *o = dt_xalloc_floats(SZ);	/* C before the call */

	fill(a, SZ, 120, -1.0f, 1.0f);
	fill(b, SZ, 121, -1.0f, 1.0f);
	dt_kern_small_set_generic(generic);
	for (int s = 0; s < NM * NN * NK; s++) {
		const int m = ms[s % NM], n = ns[s / NM % NN];
		const int k = ks[s / (NM * NN)];
		const float beta = s % 2 ? 0.3f : 0.0f;

		fill(c, SZ, 122, -1.0f, 1.0f);
		if (beta == 0.0f)
			for (int i = 0; i < m; i++)
				c[i * LD] = NAN;
		memcpy(r, c, SZ * sizeof(float));
		memcpy(o, c, SZ * sizeof(float));
		dt_kern_sgemm_small(ta, tb, m, n, k, 0.25f, a, LD, b, LD,
				    beta, c, LD);
		for (int i = 0; i < m; i++) {
			float *row = r + i * LD, *got = c + i * LD;

			for (int j = 0; j < n; j++) {
				double want = 0.0;

				for (int p = 0; p < k; p++)
					want += (double)(ta ? a[p * LD + i]
							    : a[i * LD + p]) *
						(tb ? b[j * LD + p]
						    : b[p * LD + j]);
				want *= 0.25;
				if (beta != 0.0f)
					want += (double)beta * row[j];
				ck_assert_msg(close_enough(got[j], want, 1e-5,
							   1e-5),
					      "m %d n %d k %d (%d, %d): %.9g, "
					      "want %.9g", m, n, k, i, j,
					      got[j], want);
			}
			/* the same row alone, and C untouched past n */
			dt_kern_sgemm_small(ta, tb, 1, n, k, 0.25f,
					    a + (ta ? i : i * LD), LD, b, LD,
					    beta, row, LD);
			ck_assert_msg(memcmp(row, got, (size_t)n *
					     sizeof(float)) == 0,
				      "m %d n %d k %d: row %d alone differs",
				      m, n, k, i);
			ck_assert(memcmp(row + n, got + n, (size_t)(LD - n) *
					 sizeof(float)) == 0);
			/* and its last column alone (a partial block of 16
			 * where the full call had a full one) */
			row[n - 1] = o[i * LD + n - 1];
			dt_kern_sgemm_small(ta, tb, 1, 1, k, 0.25f,
					    a + (ta ? i : i * LD), LD,
					    b + (tb ? (n - 1) * LD : n - 1),
					    LD, beta, row + n - 1, LD);
			ck_assert_msg(memcmp(row + n - 1, got + n - 1,
					     sizeof(float)) == 0,
				      "m %d n %d k %d: column %d alone differs",
				      m, n, k, n - 1);
		}
	}
	/* alpha 0: A and B are not read (Inf in A), C = beta * C */
	a[0] = INFINITY;
	for (int j = 0; j < 4; j++)
		c[j] = 2.0f;
	dt_kern_sgemm_small(ta, tb, 1, 4, 8, 0.0f, a, LD, b, LD, 1.0f, c, LD);
	for (int j = 0; j < 4; j++)
		ck_assert_float_eq(c[j], 2.0f);
	a[0] = 0.5f;
	/* 160 columns by 64 terms is past the panel: the BLAS computes it */
	ck_assert(!dt_kern_small_fits(160, 64));
	ck_assert(dt_kern_small_fits(64, 128));
	dt_kern_sgemm_small(ta, tb, 3, 160, 64, 1.0f, a, LD, b, LD, 0.0f, c,
			    LD);
	dt_kern_sgemm(ta, tb, 3, 160, 64, 1.0f, a, LD, b, LD, 0.0f, r, LD);
	ck_assert(memcmp(c, r, 3 * LD * sizeof(float)) == 0);
	dt_kern_small_set_generic(0);
	free(a);
	free(b);
	free(c);
	free(r);
	free(o);
}
END_TEST

/* x rounded to bfloat16, nearest even, written here from the format (the
 * top 16 bits of a float) apart from util/bf16.c; finite x only. */
static double
bf16_round(float x)
{
	uint32_t u;

	memcpy(&u, &x, sizeof u);
	u += 0x7fffu + ((u >> 16) & 1u);
	u &= 0xffff0000u;
	memcpy(&x, &u, sizeof x);
	return x;
}

/* The bf16 product (kern.h, dt_kern_bf16_sgemm, and dt_kern_sgemm with
 * dt_kern_set_bf16) with the transposes of _i & 3, alpha 0.5, beta 0
 * over NaN and beta 1, at 37 x 50 x 300 with row strides past the rows:
 * within f32 summation error (K * 2^-23 of the sum of |products|) of a
 * double sum of the bf16-rounded inputs, within bf16's error (2^-8 of
 * it, each input off by 2^-9 at most) of the double product of the
 * float inputs, and farther from that than float sums alone could be
 * (so the inputs really were rounded); each row the same bits in a call
 * of its own rows 13 to 36, and on another thread. Skipped on a CPU
 * without AVX512_BF16 or AMX (run is refused there). */
struct bf16_case {
	int ta, tb;
	const float *a, *b;
	float *c;
};

static void *
bf16_thread(void *arg)
{
	struct bf16_case *k = arg;

	dt_kern_bf16_sgemm(k->ta, k->tb, 37, 50, 300, 0.5f, k->a, 310,
			   k->b, 310, 0.0f, k->c, 60);
	return NULL;
}

START_TEST(test_sgemm_bf16)
{
	const int ta = _i & 1, tb = (_i >> 1) & 1;
	enum { M = 37, N = 50, K = 300, LD = 310, LDC = 60 };
	float *a = dt_xalloc_floats(LD * LD), *b = dt_xalloc_floats(LD * LD);
	float *c = dt_xalloc_floats(M * LDC), *c2 = dt_xalloc_floats(M * LDC);
	double worst_exact = 0.0, worst_err = 0.0;
	struct bf16_case tc = { ta, tb, a, b, c2 };
	pthread_t th;

	if (dt_kern_bf16_missing() != NULL)
		return;
	fill(a, LD * LD, 120, -1.0f, 1.0f);
	fill(b, LD * LD, 121, -1.0f, 1.0f);
	for (int i = 0; i < M * LDC; i++)
		c[i] = NAN;
	dt_kern_set_bf16(1);
	dt_kern_sgemm(ta, tb, M, N, K, 0.5f, a, LD, b, LD, 0.0f, c, LDC);
	dt_kern_set_bf16(0);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double r = 0.0, x = 0.0, mag = 0.0;

			for (int k = 0; k < K; k++) {
				float av = ta ? a[k * LD + i] : a[i * LD + k];
				float bv = tb ? b[j * LD + k] : b[k * LD + j];

				r += bf16_round(av) * bf16_round(bv);
				x += (double)av * bv;
				mag += fabs((double)av * bv);
			}
			double got = c[i * LDC + j];

			ck_assert_msg(fabs(got - 0.5 * r) <=
				      0.5 * K * ldexp(mag, -23),
				      "(%d,%d) %g want %g", i, j, got, 0.5 * r);
			ck_assert(fabs(got - 0.5 * x) <= 0.5 * ldexp(mag, -8));
			if (fabs(got - 0.5 * x) / mag > worst_exact)
				worst_exact = fabs(got - 0.5 * x) / mag;
			if (fabs(got - 0.5 * r) / mag > worst_err)
				worst_err = fabs(got - 0.5 * r) / mag;
		}
	ck_assert_msg(worst_exact > 4.0 * worst_err && worst_exact > 1e-4,
		      "inputs not rounded: %g vs %g", worst_exact, worst_err);
	/* beta 1 adds to C: again gives twice C, to float rounding. */
	memcpy(c2, c, M * LDC * sizeof *c);
	dt_kern_bf16_sgemm(ta, tb, M, N, K, 0.5f, a, LD, b, LD, 1.0f, c2,
			   LDC);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++)
			ck_assert(c2[i * LDC + j] == 2.0f * c[i * LDC + j]);
	/* Rows 13 to 36 alone: the same bits. */
	dt_kern_bf16_sgemm(ta, tb, M - 13, N, K, 0.5f,
			   ta ? a + 13 : a + 13 * LD, LD, b, LD, 0.0f, c2, LDC);
	ck_assert(memcmp(c2, c + 13 * LDC, (size_t)((M - 14) * LDC + N) *
			 sizeof *c) == 0);
	/* Another thread, its own primitive: the same bits. */
	ck_assert(pthread_create(&th, NULL, bf16_thread, &tc) == 0);
	ck_assert(pthread_join(th, NULL) == 0);
	for (int i = 0; i < M; i++)
		ck_assert(memcmp(c2 + i * LDC, c + i * LDC,
				 N * sizeof *c) == 0);
	free(a);
	free(b);
	free(c);
	free(c2);
}
END_TEST

/* The bf16 product's parts (kern.h): dt_kern_to_bf16 of rows at a
 * stride past their length gives each value rounded to nearest even
 * (the upper half of bf16_round's bits), packed; dt_kern_bf16_gemm on
 * such copies of A and B gives dt_kern_bf16_sgemm's bits on the floats,
 * for the transposes of _i & 3, alpha 0.5, beta 0 over NaN and beta 1;
 * dt_kern_bf16_work's area holds what is written to it, as large as
 * asked. Skipped on a CPU without AVX512_BF16 or AMX. */
START_TEST(test_bf16_gemm_parts)
{
	const int ta = _i & 1, tb = (_i >> 1) & 1;
	enum { M = 29, N = 40, K = 70, LD = 80, LDC = 45 };
	const int ar = ta ? K : M, ac = ta ? M : K;
	const int br = tb ? N : K, bc = tb ? K : N;
	float *a = dt_xalloc_floats(LD * LD), *b = dt_xalloc_floats(LD * LD);
	float *c = dt_xalloc_floats(M * LDC), *c2 = dt_xalloc_floats(M * LDC);
	uint16_t *ah, *bh, *w;

	if (dt_kern_bf16_missing() != NULL)
		goto out;
	fill(a, LD * LD, 140, -1.0f, 1.0f);
	fill(b, LD * LD, 141, -1.0f, 1.0f);
	w = dt_kern_bf16_work((size_t)(ar * ac + br * bc));
	ah = w;
	bh = w + ar * ac;
	dt_kern_to_bf16(ah, a, ar, ac, LD);
	dt_kern_to_bf16(bh, b, br, bc, LD);
	for (int r = 0; r < ar; r++)
		for (int q = 0; q < ac; q++) {
			float want = bf16_round(a[r * LD + q]);
			uint32_t u;

			memcpy(&u, &want, sizeof u);
			ck_assert_uint_eq(ah[r * ac + q], u >> 16);
		}
	for (int i = 0; i < M * LDC; i++)
		c[i] = c2[i] = NAN;
	dt_kern_bf16_sgemm(ta, tb, M, N, K, 0.5f, a, LD, b, LD, 0.0f, c, LDC);
	dt_kern_bf16_gemm(ta, tb, M, N, K, 0.5f, ah, bh, 0.0f, c2, LDC);
	for (int i = 0; i < M; i++)
		ck_assert(memcmp(c + i * LDC, c2 + i * LDC,
				 N * sizeof *c) == 0);
	dt_kern_bf16_sgemm(ta, tb, M, N, K, 0.5f, a, LD, b, LD, 1.0f, c, LDC);
	dt_kern_bf16_gemm(ta, tb, M, N, K, 0.5f, ah, bh, 1.0f, c2, LDC);
	for (int i = 0; i < M; i++)
		ck_assert(memcmp(c + i * LDC, c2 + i * LDC,
				 N * sizeof *c) == 0);
	w = dt_kern_bf16_work(1 << 20);
	w[0] = 1;
	w[(1 << 20) - 1] = 2;
	ck_assert(w[0] == 1 && w[(1 << 20) - 1] == 2);
out:
	free(a);
	free(b);
	free(c);
	free(c2);
}
END_TEST

/* g's product by dt_kern_bf16_sgemm (the reference of a pair). */
static void
bf16_one(const struct dt_kern_gemm *g)
{
	dt_kern_bf16_sgemm(g->trans_a, g->trans_b, g->m, g->n, g->k,
			   g->alpha, g->a, g->lda, g->b, g->ldb, g->beta,
			   g->c, g->ldc);
}

/* dt_kern_bf16_sgemm2, and dt_kern_par_sgemm2 on one thread under
 * train.precision: bf16, give the bits of the two dt_kern_bf16_sgemm
 * calls in turn, with the shared output gradient dy (R, O) as g1's B
 * and g2's A (_i 0: an untied dense layer's dW = x^T dy, dx = dy w^T),
 * as both A's (_i 1: a tied one's dW = dy^T x, dx = dy w), and (_i 2)
 * _i 0 with dx written over x, g1's A (attention's output projection);
 * beta 1 on dW, 0 on dx over NaN. Skipped without AVX512_BF16. */
START_TEST(test_bf16_sgemm2)
{
	enum { R = 37, I = 23, O = 40, LD = 48 };
	float *x = dt_xalloc_floats(R * LD), *dy = dt_xalloc_floats(R * LD);
	float *w = dt_xalloc_floats(LD * LD), *x2 = dt_xalloc_floats(R * LD);
	float *dw[2], *dx[2];
	const int tied = _i == 1;

	for (int v = 0; v < 2; v++) {
		dw[v] = dt_xalloc_floats(LD * LD);
		dx[v] = _i == 2 ? (v ? x2 : x) : dt_xalloc_floats(R * LD);
	}
	if (dt_kern_bf16_missing() != NULL)
		goto out;
	fill(x, R * LD, 150, -1.0f, 1.0f);
	fill(dy, R * LD, 151, -1.0f, 1.0f);
	fill(w, LD * LD, 152, -1.0f, 1.0f);
	memcpy(x2, x, R * LD * sizeof *x);
	for (int v = 0; v < 2; v++) {
		fill(dw[v], LD * LD, 153, -1.0f, 1.0f);
		for (int i = 0; _i != 2 && i < R * LD; i++)
			dx[v][i] = NAN;
	}
	for (int v = 0; v < 2; v++) {
		const float *xv = _i == 2 && v ? x2 : x;
		const struct dt_kern_gemm gw = {
			.trans_a = 1, .m = tied ? O : I, .n = tied ? I : O,
			.k = R, .alpha = 1.0f, .a = tied ? dy : xv, .lda = LD,
			.b = tied ? xv : dy, .ldb = LD, .beta = 1.0f,
			.c = dw[v], .ldc = LD,
		};
		const struct dt_kern_gemm gx = {
			.trans_b = !tied, .m = R, .n = I, .k = O,
			.alpha = 1.0f, .a = dy, .lda = LD, .b = w, .ldb = LD,
			.beta = 0.0f, .c = dx[v], .ldc = LD,
		};

		if (v == 0) {
			bf16_one(&gw);
			bf16_one(&gx);
		} else {
			dt_kern_set_bf16(1);
			dt_kern_par_sgemm2(NULL, &gw, &gx);
			dt_kern_set_bf16(0);
		}
	}
	for (int i = 0; i < LD * LD; i++)
		ck_assert(memcmp(&dw[0][i], &dw[1][i], sizeof(float)) == 0);
	for (int i = 0; i < R * LD; i++)
		ck_assert(memcmp(&dx[0][i], &dx[1][i], sizeof(float)) == 0);
	ck_assert(!isnan(dx[1][(R - 1) * LD + I - 1]));
out:
	for (int v = 0; v < 2; v++) {
		free(dw[v]);
		if (_i != 2)
			free(dx[v]);
	}
	free(x);
	free(x2);
	free(dy);
	free(w);
}
END_TEST

/* dt_kern_sgemm_small under train.precision: bf16 (kern_small.c's
 * AVX512_BF16 kernel) with the transposes of _i & 3, alpha 0.25, beta 0
 * over NaN and beta 0.3, at shapes around its 8-row blocks, 16-column
 * panels and pairs of k (odd k included): within f32 summation error
 * (k * 2^-23 of the sum of |products|) of a double sum of the
 * bf16-rounded inputs, within bf16's error (2^-7 + 2^-16 of it, and
 * the sum's) of the double
 * product of the float inputs, and farther from that than float sums
 * alone could be (the inputs really were rounded); every row the same
 * bits alone, and its last column alone. Off without bf16, and skipped
 * on a CPU without AVX512_BF16. */
START_TEST(test_sgemm_small_bf16)
{
	const int ta = _i & 1, tb = (_i >> 1) & 1;
	static const int ms[] = { 1, 7, 8, 9, 17 };
	static const int ns[] = { 1, 15, 16, 17, 64, 70 };
	static const int ks[] = { 1, 2, 3, 31, 64, 100 };
	enum { NM = 5, NN = 6, NK = 6, LD = 160, SZ = LD * 160 };
	float *a = dt_xalloc_floats(SZ), *b = dt_xalloc_floats(SZ);
	float *c = dt_xalloc_floats(SZ), *o = dt_xalloc_floats(SZ);
	double worst_exact = 0.0, worst_err = 0.0;

	ck_assert(!dt_kern_small_bf16());
	if (dt_kern_bf16_missing() != NULL ||
	    !dt_cpu_has(DT_CPU_AVX512F | DT_CPU_AVX512_BF16))
		goto out;
	dt_kern_set_bf16(1);
	ck_assert(dt_kern_small_bf16());
	fill(a, SZ, 130, -1.0f, 1.0f);
	fill(b, SZ, 131, -1.0f, 1.0f);
	for (int s = 0; s < NM * NN * NK; s++) {
		const int m = ms[s % NM], n = ns[s / NM % NN];
		const int k = ks[s / (NM * NN)];
		const float beta = s % 2 ? 0.3f : 0.0f;

		fill(c, SZ, 132, -1.0f, 1.0f);
		if (beta == 0.0f)
			for (int i = 0; i < m; i++)
				c[i * LD] = NAN;
		memcpy(o, c, SZ * sizeof(float));
		dt_kern_sgemm_small(ta, tb, m, n, k, 0.25f, a, LD, b, LD,
				    beta, c, LD);
		for (int i = 0; i < m; i++) {
			float *got = c + i * LD, *row = o + i * LD;
			float alone[LD];

			for (int j = 0; j < n; j++) {
				double r = 0.0, x = 0.0, mag = 0.0, want;

				for (int p = 0; p < k; p++) {
					float av = ta ? a[p * LD + i]
						      : a[i * LD + p];
					float bv = tb ? b[j * LD + p]
						      : b[p * LD + j];

					r += bf16_round(av) * bf16_round(bv);
					x += (double)av * bv;
					mag += fabs((double)av * bv);
				}
				want = 0.25 * r;
				if (beta != 0.0f)
					want += (double)beta * row[j];
				ck_assert_msg(fabs(got[j] - want) <=
					      0.25 * (k + 2) * ldexp(mag, -23) +
					      ldexp(fabs(want), -23),
					      "m %d n %d k %d (%d, %d): %.9g, "
					      "want %.9g", m, n, k, i, j,
					      got[j], want);
				if (beta != 0.0f || mag == 0.0)
					continue;
				/* each input off by 2^-8 of itself at
				 * most (8 bits of precision), so each
				 * product by 2^-7 + 2^-16, the sum as
				 * above */
				ck_assert(fabs(got[j] - 0.25 * x) <=
					  0.25 * (ldexp(mag, -7) +
						  ldexp(mag, -16) +
						  (k + 2) * ldexp(mag, -23)));
				if (fabs(got[j] - 0.25 * x) / mag > worst_exact)
					worst_exact = fabs(got[j] - 0.25 * x) /
						      mag;
				if (fabs(got[j] - want) / mag > worst_err)
					worst_err = fabs(got[j] - want) / mag;
			}
			/* past n untouched; the row alone, the last column
			 * alone: the same bits */
			ck_assert(memcmp(row + n, got + n, (size_t)(LD - n) *
					 sizeof(float)) == 0);
			memcpy(alone, row, sizeof alone);
			dt_kern_sgemm_small(ta, tb, 1, n, k, 0.25f,
					    a + (ta ? i : i * LD), LD, b, LD,
					    beta, alone, LD);
			ck_assert_msg(memcmp(alone, got, (size_t)n *
					     sizeof(float)) == 0,
				      "m %d n %d k %d: row %d alone differs",
				      m, n, k, i);
			memcpy(alone, row, sizeof alone);
			dt_kern_sgemm_small(ta, tb, 1, 1, k, 0.25f,
					    a + (ta ? i : i * LD), LD,
					    b + (tb ? (n - 1) * LD : n - 1),
					    LD, beta, alone + n - 1, LD);
			ck_assert_msg(memcmp(alone + n - 1, got + n - 1,
					     sizeof(float)) == 0,
				      "m %d n %d k %d: column %d alone differs",
				      m, n, k, n - 1);
		}
	}
	dt_kern_set_bf16(0);
	ck_assert_msg(worst_exact > 4.0 * worst_err && worst_exact > 1e-4,
		      "inputs not rounded: %g vs %g", worst_exact, worst_err);
out:
	free(a);
	free(b);
	free(c);
	free(o);
}
END_TEST

/* The f32 product on oneDNN (kern.h, dt_kern_onednn_sgemm) with the
 * transposes of _i & 3, alpha 0.5, beta 0 over NaN and beta 1, at 37 x
 * 50 x 300 with row strides past the rows: within f32 summation error
 * (K * 2^-24 of the sum of |products|, alpha included) of a double sum,
 * and so within twice that of OpenBLAS's product; beta 1 adds C to
 * within one rounding; run again and on another thread, the same bits;
 * dt_kern_conv_sgemm gives oneDNN's bits under parallel.kernels: onednn,
 * OpenBLAS's under openblas; under auto the dense products go to
 * oneDNN where dt_cpu_fma512_full says the CPU runs 512-bit FMAs at full
 * width, else to OpenBLAS, the convolution's to oneDNN on a CPU with
 * AVX-512 (as
 * DTRAIN_CPU leaves it), but for those of 9 terms where OpenBLAS runs
 * its AVX-512 kernels (skipped where DTRAIN_KERNELS is set, which
 * wins). */
struct f32_case {
	int ta, tb;
	const float *a, *b;
	float *c;
};

static void *
f32_thread(void *arg)
{
	struct f32_case *k = arg;

	dt_kern_onednn_sgemm(k->ta, k->tb, 37, 50, 300, 0.5f, k->a, 310,
			     k->b, 310, 0.0f, k->c, 60);
	return NULL;
}

START_TEST(test_sgemm_onednn_f32)
{
	const int ta = _i & 1, tb = (_i >> 1) & 1;
	enum { M = 37, N = 50, K = 300, LD = 310, LDC = 60 };
	float *a = dt_xalloc_floats(LD * LD), *b = dt_xalloc_floats(LD * LD);
	float *c = dt_xalloc_floats(M * LDC), *c2 = dt_xalloc_floats(M * LDC);
	float *cb = dt_xalloc_floats(M * LDC);
	const char *env = getenv("DTRAIN_KERNELS");
	struct f32_case tc = { ta, tb, a, b, c2 };
	double mag[M][N];
	pthread_t th;

	fill(a, LD * LD, 130, -1.0f, 1.0f);
	fill(b, LD * LD, 131, -1.0f, 1.0f);
	for (int i = 0; i < M * LDC; i++)
		c[i] = NAN;
	dt_kern_onednn_sgemm(ta, tb, M, N, K, 0.5f, a, LD, b, LD, 0.0f, c,
			     LDC);
	dt_kern_set_lib(DT_KERN_LIB_OPENBLAS);
	if (env == NULL || *env == '\0')
		dt_kern_sgemm(ta, tb, M, N, K, 0.5f, a, LD, b, LD, 0.0f, cb,
			      LDC);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double r = 0.0;

			mag[i][j] = 0.0;
			for (int k = 0; k < K; k++) {
				float av = ta ? a[k * LD + i] : a[i * LD + k];
				float bv = tb ? b[j * LD + k] : b[k * LD + j];

				r += (double)av * bv;
				mag[i][j] += 0.5 * fabs((double)av * bv);
			}
			ck_assert_msg(fabs(c[i * LDC + j] - 0.5 * r) <=
				      K * ldexp(mag[i][j], -24),
				      "(%d,%d) %g want %g", i, j,
				      c[i * LDC + j], 0.5 * r);
			if (env == NULL || *env == '\0')
				ck_assert(fabs(c[i * LDC + j] -
					       cb[i * LDC + j]) <=
					  2.0 * K * ldexp(mag[i][j], -24));
		}
	/* beta 1: C + the product again, to within one rounding of 2 C */
	memcpy(c2, c, M * LDC * sizeof *c);
	dt_kern_onednn_sgemm(ta, tb, M, N, K, 0.5f, a, LD, b, LD, 1.0f, c2,
			     LDC);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++)
			ck_assert(fabs(c2[i * LDC + j] - 2.0f * c[i * LDC + j])
				  <= K * ldexp(mag[i][j], -23));
	/* again, and on another thread: the same bits */
	ck_assert(pthread_create(&th, NULL, f32_thread, &tc) == 0);
	ck_assert(pthread_join(th, NULL) == 0);
	for (int i = 0; i < M; i++)
		ck_assert(memcmp(c2 + i * LDC, c + i * LDC,
				 N * sizeof *c) == 0);
	if (env == NULL || *env == '\0') {
		dt_kern_conv_sgemm(ta, tb, M, N, K, 0.5f, a, LD, b, LD, 0.0f,
				   c2, LDC);
		for (int i = 0; i < M; i++)
			ck_assert(memcmp(c2 + i * LDC, cb + i * LDC,
					 N * sizeof *c) == 0);
		dt_kern_set_lib(DT_KERN_LIB_ONEDNN);
		dt_kern_conv_sgemm(ta, tb, M, N, K, 0.5f, a, LD, b, LD, 0.0f,
				   c2, LDC);
		for (int i = 0; i < M; i++)
			ck_assert(memcmp(c2 + i * LDC, c + i * LDC,
					 N * sizeof *c) == 0);
		dt_kern_set_lib(DT_KERN_LIB_AUTO);
		ck_assert_int_eq(dt_kern_onednn_f32(0, M, N, K),
				 dt_cpu_has(DT_CPU_AVX512F) &&
				 dt_cpu_fma512_full(NULL, 0));
		ck_assert_int_eq(dt_kern_onednn_dense(),
				 dt_kern_onednn_f32(0, M, N, K));
		ck_assert_int_eq(dt_kern_onednn_f32(1, M, N, K),
				 dt_cpu_has(DT_CPU_AVX512F));
		/* the CNN's first layer: 9 terms */
		ck_assert_int_eq(dt_kern_onednn_f32(1, 32, 1568, 9),
				 dt_cpu_has(DT_CPU_AVX512F) &&
				 !dt_kern_blas_avx512());
	}
	dt_kern_set_lib(DT_KERN_LIB_AUTO);
	free(a);
	free(b);
	free(c);
	free(c2);
	free(cb);
}
END_TEST

/* dt_cpu_fma512_rule on the CPUID of known processors: AVX-512F and
 * AMD family 1Ah (Zen 5) models 00h-1Fh (Turin, this machine's 02h, and
 * Turin Dense) and 40h-4Fh (Granite Ridge), or AMX-BF16 (Intel's
 * Sapphire Rapids, family 6 model 8Fh), run 512-bit FMAs at full width;
 * Zen 4 (19h, Genoa 11h), the mobile Zen 5 (Strix Point 24h, Krackan
 * 60h), Skylake-SP (6, 55h) and a Zen 5 with AVX-512F taken away
 * (DTRAIN_CPU=avx2) do not, nor an unknown vendor; the phrase names the
 * reason and the family and model in hex. */
START_TEST(test_fma512_rule)
{
	const unsigned z5 = DT_CPU_AVX2 | DT_CPU_FMA | DT_CPU_AVX512F |
			    DT_CPU_AVX512_BF16;
	static const struct {
		struct dt_cpu_id id;
		int full;
		const char *why;
	} cases[] = {
		{ { DT_CPU_VENDOR_AMD, 0x1a, 0x02, 0 }, 1,
		  "Zen 5 with a 512-bit FPU datapath (AMD family 1Ah model "
		  "02h)" },
		{ { DT_CPU_VENDOR_AMD, 0x1a, 0x11, 0 }, 1, NULL },
		{ { DT_CPU_VENDOR_AMD, 0x1a, 0x44, 0 }, 1, NULL },
		{ { DT_CPU_VENDOR_AMD, 0x1a, 0x24, 0 }, 0,
		  "not known by CPUID to run 512-bit FMAs at full width "
		  "(AMD family 1Ah model 24h)" },
		{ { DT_CPU_VENDOR_AMD, 0x1a, 0x60, 0 }, 0, NULL },
		{ { DT_CPU_VENDOR_AMD, 0x19, 0x11, 0 }, 0,
		  "Zen 4: AVX-512 on 256-bit units (AMD family 19h model "
		  "11h)" },
		{ { DT_CPU_VENDOR_INTEL, 0x6, 0x55, 0 }, 0, NULL },
		{ { DT_CPU_VENDOR_OTHER, 0x1a, 0x02, 0 }, 0,
		  "not known by CPUID to run 512-bit FMAs at full width" },
	};
	char why[160];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct dt_cpu_id id = cases[i].id;

		id.sets = z5;
		ck_assert_int_eq(dt_cpu_fma512_rule(&id, why, sizeof why),
				 cases[i].full);
		if (cases[i].why != NULL)
			ck_assert_str_eq(why, cases[i].why);
		/* DTRAIN_CPU=avx2 takes AVX-512F away: never */
		id.sets = DT_CPU_AVX2 | DT_CPU_FMA;
		ck_assert_int_eq(dt_cpu_fma512_rule(&id, why, sizeof why), 0);
		ck_assert(strncmp(why, "no AVX-512F", 11) == 0);
	}
	{
		struct dt_cpu_id spr = { DT_CPU_VENDOR_INTEL, 0x6, 0x8f,
					 z5 | DT_CPU_AMX_BF16 };

		ck_assert_int_eq(dt_cpu_fma512_rule(&spr, why, sizeof why), 1);
		ck_assert_str_eq(why, "AMX-BF16: two 512-bit FMA ports a core "
				 "(Intel family 06h model 8Fh)");
		/* cut to fit, never past the buffer */
		ck_assert_int_eq(dt_cpu_fma512_rule(&spr, why, 8), 1);
		ck_assert_str_eq(why, "AMX-BF1");
	}
}
END_TEST

/* dt_kern_f32_rule, parallel.kernels: auto on each kind of CPU: the
 * dense products (class 0) on oneDNN only with AVX-512F and full-width
 * 512-bit FMAs; the convolution's (class 1) on oneDNN with AVX-512F,
 * where OpenBLAS runs AVX-512 kernels only at 32 or more in every
 * dimension; openblas and onednn take every product whatever the CPU. */
START_TEST(test_f32_rule)
{
	static const struct {
		enum dt_kern_lib lib;
		int conv, avx512, fma512, blas512;
		int64_t m, n, k;
		int dnn;
	} cases[] = {
		/* Zen 5 (full width), OpenBLAS on Haswell kernels */
		{ DT_KERN_LIB_AUTO, 0, 1, 1, 0, 96, 512, 784, 1 },
		{ DT_KERN_LIB_AUTO, 0, 1, 1, 0, 768, 3072, 1024, 1 },
		{ DT_KERN_LIB_AUTO, 1, 1, 1, 0, 32, 1568, 9, 1 },
		/* Zen 4 (half width) */
		{ DT_KERN_LIB_AUTO, 0, 1, 0, 0, 96, 512, 784, 0 },
		{ DT_KERN_LIB_AUTO, 1, 1, 0, 0, 32, 1568, 9, 1 },
		/* OpenBLAS on its AVX-512 kernels: the 9-term ones stay */
		{ DT_KERN_LIB_AUTO, 1, 1, 1, 1, 32, 1568, 9, 0 },
		{ DT_KERN_LIB_AUTO, 1, 1, 0, 1, 64, 392, 288, 1 },
		{ DT_KERN_LIB_AUTO, 0, 1, 1, 1, 64, 392, 288, 1 },
		/* AVX2 only (or DTRAIN_CPU=avx2) */
		{ DT_KERN_LIB_AUTO, 0, 0, 0, 0, 96, 512, 784, 0 },
		{ DT_KERN_LIB_AUTO, 1, 0, 0, 0, 64, 392, 288, 0 },
		/* forced */
		{ DT_KERN_LIB_OPENBLAS, 0, 1, 1, 0, 96, 512, 784, 0 },
		{ DT_KERN_LIB_OPENBLAS, 1, 1, 1, 0, 64, 392, 288, 0 },
		{ DT_KERN_LIB_ONEDNN, 0, 0, 0, 0, 96, 512, 784, 1 },
		{ DT_KERN_LIB_ONEDNN, 1, 0, 0, 1, 32, 1568, 9, 1 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(dt_kern_f32_rule(cases[i].lib, cases[i].conv,
					       cases[i].avx512,
					       cases[i].fma512,
					       cases[i].blas512, cases[i].m,
					       cases[i].n, cases[i].k) ==
			      cases[i].dnn, "case %zu", i);
}
END_TEST

static int progress_calls;

static void
count_progress(void *ctx)
{
	(void)ctx;
	progress_calls++;
}

/* dt_kern_set_progress: a one-thread dt_kern_par_sgemm calls the hook
 * min(floor(m n k / 2^24), floor(m / 256)) - 1 times (the shapes of
 * mlp-1m's backward at micro-batch 128: 784 x 1024 x 128 and 1024 x
 * 1024 x 128 give 3 parts, 2 calls, and 4 parts, 3 calls; the 128-row
 * dX of 128 x 1024 x 1024 and a product under 2^25 multiply-adds, none),
 * and every element keeps the bits of the product without the hook.
 * With OpenBLAS on 2 threads of its own (it splits each call's rows where
 * its blocks need not fall: its Haswell kernels did), no cut, no call. */
START_TEST(test_sgemm_progress)
{
	static const struct {
		int ta, tb;
		int64_t m, n, k;
		int calls;
	} sh[] = {
		{ 1, 0, 784, 1024, 128, 2 },
		{ 1, 0, 1024, 1024, 128, 3 },
		{ 0, 1, 128, 1024, 1024, 0 },
		{ 0, 0, 784, 512, 48, 0 },
	};
	float *a = dt_xalloc_floats(1 << 20);
	float *b = dt_xalloc_floats(1 << 20);
	float *c0 = dt_xalloc_floats(1 << 20);
	float *c1 = dt_xalloc_floats(1 << 20);

	int blas = dt_kern_set_threads(1);

	fill(a, 1 << 20, 120, -1.0f, 1.0f);
	fill(b, 1 << 20, 121, -1.0f, 1.0f);
	for (size_t i = 0; i < 2 * sizeof sh / sizeof *sh; i++) {
		const size_t s = i % (sizeof sh / sizeof *sh);
		const int threads = i < sizeof sh / sizeof *sh ? 1 : 2;
		const int64_t m = sh[s].m, n = sh[s].n, k = sh[s].k;
		const int64_t lda = sh[s].ta ? m : k, ldb = sh[s].tb ? k : n;

		dt_kern_set_threads(threads);

		dt_kern_set_progress(NULL, NULL);
		dt_kern_par_sgemm(NULL, sh[s].ta, sh[s].tb, m, n, k, 1.0f, a,
				  lda, b, ldb, 0.0f, c0, n);
		progress_calls = 0;
		dt_kern_set_progress(count_progress, NULL);
		dt_kern_par_sgemm(NULL, sh[s].ta, sh[s].tb, m, n, k, 1.0f, a,
				  lda, b, ldb, 0.0f, c1, n);
		dt_kern_set_progress(NULL, NULL);
		ck_assert_int_eq(progress_calls,
				 threads == 1 ? sh[s].calls : 0);
		ck_assert(memcmp(c0, c1, (size_t)(m * n) * sizeof *c0) == 0);
	}
	dt_kern_set_threads(blas);
	free(a);
	free(b);
	free(c0);
	free(c1);
}
END_TEST

/* The leading dimension does not change the bits, which the tensor-
 * parallel slices rely on (doc/DESIGN.md, "Tensor-parallel slices"): a
 * column share of W (in, out) kept as its own (in, len) block, ld = len,
 * must give the products that the same columns read in place from the
 * whole W, ld = out, give. For each transpose pair (_i & 3) and each
 * kernel (dt_kern_sgemm, dt_kern_par_sgemm on two threads,
 * dt_kern_sgemm_small), C = op(A) op(B) + 0.3 C with A, B and C at
 * offsets inside wide buffers (ld 4x the row, as a slice of a whole
 * tensor) against compact copies of the same floats (ld = the row):
 * every float of C the same bits. k = 600 crosses OpenBLAS's block of k,
 * m = 200 its blocks of rows; the small kernel takes k = 128, a panel
 * it computes itself (dt_kern_small_fits). */
START_TEST(test_sgemm_ld)
{
	const int ta = _i & 1, tb = (_i >> 1) & 1;
	enum { M = 200, N = 40, K = 600, W = 4 };
	/* stored rows x cols of A, B, C */
	const int64_t ar = ta ? K : M, ac = ta ? M : K;
	const int64_t br = tb ? N : K, bc = tb ? K : N;
	float *aw = dt_xalloc_floats(ar * ac * W);
	float *a = dt_xalloc_floats(ar * ac);
	float *bw = dt_xalloc_floats(br * bc * W);
	float *b = dt_xalloc_floats(br * bc);
	float *cw = dt_xalloc_floats(M * N * W);
	float *c = dt_xalloc_floats(M * N);

	fill(aw, ar * ac * W, 120, -1.0f, 1.0f);
	fill(bw, br * bc * W, 121, -1.0f, 1.0f);
	/* The slice starts one row-length in: the column share of rank 1. */
	for (int64_t r = 0; r < ar; r++)
		memcpy(a + r * ac, aw + r * ac * W + ac,
		       (size_t)ac * sizeof *a);
	for (int64_t r = 0; r < br; r++)
		memcpy(b + r * bc, bw + r * bc * W + bc,
		       (size_t)bc * sizeof *b);
	for (int kern = 0; kern < 3; kern++) {
		struct dt_pool *pool = kern == 1 ? dt_pool_new(2) : NULL;
		const float *as = aw + ac, *bs = bw + bc;
		float *cs = cw + N;

		fill(cw, M * N * W, 122, -1.0f, 1.0f);
		for (int64_t r = 0; r < M; r++)
			memcpy(c + r * N, cs + r * N * W, N * sizeof *c);
		if (kern == 0) {
			dt_kern_sgemm(ta, tb, M, N, K, 1.0f, as, ac * W, bs,
				      bc * W, 0.3f, cs, N * W);
			dt_kern_sgemm(ta, tb, M, N, K, 1.0f, a, ac, b, bc, 0.3f,
				      c, N);
		} else if (kern == 1) {
			dt_kern_par_sgemm(pool, ta, tb, M, N, K, 1.0f, as,
					  ac * W, bs, bc * W, 0.3f, cs, N * W);
			dt_kern_par_sgemm(pool, ta, tb, M, N, K, 1.0f, a, ac, b,
					  bc, 0.3f, c, N);
		} else {
			ck_assert(dt_kern_small_fits(N, 128));
			dt_kern_sgemm_small(ta, tb, M, N, 128, 1.0f, as,
					    ac * W, bs, bc * W, 0.3f, cs,
					    N * W);
			dt_kern_sgemm_small(ta, tb, M, N, 128, 1.0f, a, ac, b,
					    bc, 0.3f, c, N);
		}
		for (int64_t r = 0; r < M; r++)
			ck_assert_msg(memcmp(c + r * N, cs + r * N * W,
					     N * sizeof *c) == 0,
				      "kernel %d, trans %d %d: row %lld of C "
				      "differs with another leading dimension",
				      kern, ta, tb, (long long)r);
		dt_pool_free(pool);
	}
	free(aw);
	free(a);
	free(bw);
	free(b);
	free(cw);
	free(c);
}
END_TEST

static Suite *
kern_suite(void)
{
	Suite *s = suite_create("graph_kern");
	TCase *tc = tcase_create("kern");

	tcase_add_test(tc, test_exp);
	tcase_add_test(tc, test_softmax_dot);
	tcase_add_test(tc, test_softmax_grad);
	tcase_add_test(tc, test_gelu);
	tcase_add_test(tc, test_gelu_bits);
	tcase_add_test(tc, test_layernorm);
	tcase_add_test(tc, test_elementwise);
	tcase_add_loop_test(tc, test_sgemm_grid, 0, 4);
	tcase_add_loop_test(tc, test_sgemm_small, 0, 8);
	tcase_add_loop_test(tc, test_sgemm_bf16, 0, 4);
	tcase_add_loop_test(tc, test_bf16_gemm_parts, 0, 4);
	tcase_add_loop_test(tc, test_bf16_sgemm2, 0, 3);
	tcase_add_loop_test(tc, test_sgemm_small_bf16, 0, 4);
	tcase_add_loop_test(tc, test_sgemm_onednn_f32, 0, 4);
	tcase_add_test(tc, test_sgemm_progress);
	tcase_add_test(tc, test_fma512_rule);
	tcase_add_test(tc, test_f32_rule);
	tcase_add_loop_test(tc, test_sgemm_ld, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(kern_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
