/* SPDX-License-Identifier: MIT */
/* test_graph_layers.c - Check suite for the image, shape, combining and
 * regularising layers of src/graph/ (conv2d.c, pooling.c, shape.c,
 * dropout.c, softmax.c, add.c, concat.c, mse.c, and dense.c and
 * softmax_xent.c over tokens) and for the graph as a DAG: finite-difference
 * gradient checks of every input and parameter of each layer alone,
 * forward values against naive reference loops, FLOP, parameter and
 * activation counts against hand counts, whole-model gradient checks of a
 * small CNN, of a DAG with a residual add and a concat, of a per-token
 * model and of an mse model, `inputs:` resolution and shape errors with
 * their text, and dropout masks that depend on (step, sample) only. Jobs
 * are built by hand, so the suite does not depend on the YAML parser. The
 * gradient rig is gradcheck.c's, shared with the other layer suites. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "gradcheck.h"
#include "util/alloc.h"
#include "util/threadpool.h"
#include "util/rng.h"

static struct dt_shape
shape_of(int n_dims, int64_t d0, int64_t d1, int64_t d2)
{
	struct dt_shape s = { .n_dims = n_dims, .dim = { d0, d1, d2, 0 } };

	return s;
}

/* ---- one node on its own, with up to four inputs ------------------- */

/* A node of ops reading other nodes "a", "b", ... (gradcheck.h). */
static enum dt_status
rig_try(struct gc_rig *r, const struct dt_layer_ops *ops,
	const struct dt_layer_spec *spec, int n_in,
	const struct dt_shape *shapes, int64_t batch, struct dt_error *err)
{
	return gc_try(r, &gc_node_inputs, ops, spec, n_in, shapes, batch, err);
}

static void
rig_init(struct gc_rig *r, const struct dt_layer_ops *ops,
	 const struct dt_layer_spec *spec, int n_in,
	 const struct dt_shape *shapes, int64_t batch)
{
	gc_init(r, &gc_node_inputs, ops, spec, n_in, shapes, batch);
}

/* Every parameter and input gradient against central differences at step
 * eps: |a - n| <= 1e-4 + 1e-3 max(|a|, |n|). */
static void
rig_check(struct gc_rig *r, double eps)
{
	gc_check(r, &(struct gc_tol){ .eps = eps, .atol = 1e-4,
				      .rtol = 1e-3 });
}

/* Spreads input k's values apart (a shuffled ramp, steps of 0.05) so a
 * maximum stays put under the finite-difference step. */
static void
distinct_values(struct gc_rig *r, int k)
{
	int64_t len = r->batch * r->n.in_size[k];

	for (int64_t i = 0; i < len; i++)
		r->x[k][i] = 0.05f * (float)((i * 37 + 11) % len) -
			     0.025f * (float)len;
}

/* ---- conv2d --------------------------------------------------------- */

struct conv_case {
	int64_t c, h, w;	/* c == 0: a 2-D (h, w) input */
	int64_t oc, k, s, pad;
	bool bias;
};

static const struct conv_case conv_cases[] = {
	{ 2, 5, 6, 3, 3, 1, 1, true },	/* padding keeps the size */
	{ 0, 7, 7, 2, 3, 2, 0, true },	/* one channel, stride 2 */
	{ 3, 4, 5, 2, 1, 1, 0, true },	/* 1x1 */
	{ 2, 6, 5, 2, 2, 3, 1, false },	/* stride 3, padding, no bias */
	{ 1, 4, 4, 1, 4, 1, 0, true },	/* kernel = image */
	{ 0, 5, 7, 3, 3, 1, 1, true },	/* one channel, odd sizes, same */
	{ 2, 3, 1, 2, 5, 1, 2, true },	/* 5x5 same on a 3x1 image */
};

static void
conv_setup(struct gc_rig *r, const struct conv_case *cc, int64_t batch)
{
	struct dt_layer_spec spec = {
		.kind = DT_LAYER_CONV2D,
		.channels = cc->oc,
		.kernel = cc->k,
		.stride = cc->s,
		.padding = cc->pad,
		.bias = cc->bias,
	};
	struct dt_shape in = cc->c > 0 ? shape_of(3, cc->c, cc->h, cc->w)
				       : shape_of(2, cc->h, cc->w, 0);

	rig_init(r, &dt_layer_conv2d, &spec, 1, &in, batch);
}

START_TEST(test_conv2d_gradient)
{
	struct gc_rig r;

	conv_setup(&r, &conv_cases[_i], 2);
	rig_check(&r, 1e-2);
	gc_free(&r);
}
END_TEST

/* Input value (c, i, j) of sample b of r, 0 outside the image. */
static double
pixel(const struct gc_rig *r, int64_t b, int64_t c, int64_t i, int64_t j)
{
	int64_t ch, h, w;

	dt_shape_chw(&r->n.in_shape[0], &ch, &h, &w);
	if (i < 0 || i >= h || j < 0 || j >= w)
		return 0.0;
	return r->x[0][((b * ch + c) * h + i) * w + j];
}

/* Output (o, y, x) of sample b of conv case cc by the definition. */
static double
ref_conv(const struct gc_rig *r, const struct conv_case *cc, int64_t b,
	 int64_t o, int64_t y, int64_t x)
{
	int64_t c = cc->c > 0 ? cc->c : 1;
	const float *wt = r->n.tensor[0].data;	/* (OC, C, K, K) */
	double sum = cc->bias ? r->n.tensor[1].data[o] : 0.0;

	for (int64_t ci = 0; ci < c; ci++)
		for (int64_t i = 0; i < cc->k; i++)
			for (int64_t j = 0; j < cc->k; j++)
				sum += wt[((o * c + ci) * cc->k + i) * cc->k +
					  j] *
				       pixel(r, b, ci, y * cc->s - cc->pad + i,
					     x * cc->s - cc->pad + j);
	return sum;
}

START_TEST(test_conv2d_values)
{
	const struct conv_case *cc = &conv_cases[_i];
	int64_t c = cc->c > 0 ? cc->c : 1;
	int64_t oh = (cc->h + 2 * cc->pad - cc->k) / cc->s + 1;
	int64_t ow = (cc->w + 2 * cc->pad - cc->k) / cc->s + 1;
	const float *out;
	struct gc_rig r;

	conv_setup(&r, cc, 2);
	ck_assert_int_eq(r.n.out_shape.n_dims, 3);
	ck_assert_int_eq(r.n.out_shape.dim[0], cc->oc);
	ck_assert_int_eq(r.n.out_shape.dim[1], oh);
	ck_assert_int_eq(r.n.out_shape.dim[2], ow);
	ck_assert_int_eq(r.n.n_params,
			 cc->oc * c * cc->k * cc->k + (cc->bias ? cc->oc : 0));
	gc_objective(&r);
	out = r.n.out;
	for (int64_t b = 0; b < 2; b++)
		for (int64_t o = 0; o < cc->oc; o++)
			for (int64_t y = 0; y < oh; y++)
				for (int64_t x = 0; x < ow; x++)
					ck_assert_double_eq_tol(
						*out++,
						ref_conv(&r, cc, b, o, y, x),
						1e-5);
	gc_free(&r);
}
END_TEST

/* The batched im2col path against direct convolution by the definition,
 * forward and backward, on 20 samples: several channels, strides and
 * padding. Then the same pass on pools of 2 and 3 threads, which must
 * give the one-thread bits exactly. The last case is large enough for
 * conv2d.c to cut the batch (7 chunks of 3 samples, 3 groups of 9), so
 * its threads split forward, backward and the sum of the partials. */
static const struct conv_case conv_batched_cases[] = {
	{ 3, 7, 6, 4, 3, 2, 1, true },	/* stride 2, padding 1, 3 -> 4 maps */
	{ 2, 5, 5, 3, 3, 1, 1, true },	/* padding keeps the size */
	{ 4, 6, 7, 2, 2, 2, 0, false },	/* 2x2 stride 2, no bias */
	{ 0, 9, 8, 5, 4, 3, 2, true },	/* one channel, 4x4 stride 3 pad 2 */
	{ 3, 4, 5, 2, 1, 1, 0, true },	/* 1x1 */
	{ 4, 20, 20, 8, 3, 1, 1, true },	/* 400 positions */
	{ 0, 7, 9, 4, 3, 1, 1, true },	/* one channel, odd sizes, same */
	{ 3, 6, 5, 2, 5, 1, 2, false },	/* 5x5 same, no bias */
	{ 2, 2, 3, 3, 5, 1, 2, true },	/* 5x5 same, kernel past the image */
	{ 2, 7, 7, 3, 3, 2, 0, true },	/* stride 2, padding 0 */
};

/* The upstream gradient (o, y, x) of sample b. */
static double
grad_at(const struct gc_rig *r, const struct conv_case *cc, int64_t b,
	int64_t o, int64_t y, int64_t x)
{
	return r->g[((b * cc->oc + o) * r->n.out_shape.dim[1] + y) *
		    r->n.out_shape.dim[2] + x];
}

static void
check_batched(const struct conv_case *cc, int64_t batch)
{
	const int64_t c = cc->c > 0 ? cc->c : 1;
	struct gc_rig r;

	conv_setup(&r, cc, batch);
	const int64_t oh = r.n.out_shape.dim[1], ow = r.n.out_shape.dim[2];
	const int64_t n_out = batch * r.n.out_size;
	const int64_t n_in = batch * r.n.in_size[0];
	const float *wt = r.n.tensor[0].data;	/* (OC, C, K, K) */
	float *out1 = dt_xalloc_floats((size_t)n_out);
	float *dx1 = dt_xalloc_floats((size_t)n_in);
	float *gr1 = dt_xalloc_floats((size_t)r.n.n_params);

	gc_backward(&r, true, false);
	for (int64_t b = 0; b < batch; b++)
		for (int64_t o = 0; o < cc->oc; o++)
			for (int64_t y = 0; y < oh; y++)
				for (int64_t x = 0; x < ow; x++)
					ck_assert_double_eq_tol(
						r.n.out[((b * cc->oc + o) * oh +
							 y) * ow + x],
						ref_conv(&r, cc, b, o, y, x),
						1e-5);
	/* dW[o, ci, i, j] = sum over b, y, x of g * x(shifted) */
	for (int64_t o = 0; o < cc->oc; o++)
		for (int64_t ci = 0; ci < c; ci++)
			for (int64_t i = 0; i < cc->k; i++)
				for (int64_t j = 0; j < cc->k; j++) {
					double sum = 0.0;

					for (int64_t b = 0; b < batch; b++)
						for (int64_t y = 0; y < oh; y++)
							for (int64_t x = 0;
							     x < ow; x++)
								sum += grad_at(&r, cc, b, o, y, x) *
								       pixel(&r, b, ci, y * cc->s - cc->pad + i,
									     x * cc->s - cc->pad + j);
					ck_assert_double_eq_tol(
						r.n.tensor[0].grad[((o * c + ci) *
								    cc->k + i) *
								   cc->k + j],
						sum, 1e-4);
				}
	if (cc->bias)
		for (int64_t o = 0; o < cc->oc; o++) {
			double sum = 0.0;

			for (int64_t b = 0; b < batch; b++)
				for (int64_t y = 0; y < oh; y++)
					for (int64_t x = 0; x < ow; x++)
						sum += grad_at(&r, cc, b, o, y, x);
			ck_assert_double_eq_tol(r.n.tensor[1].grad[o], sum,
						1e-4);
		}
	/* dX[b, ci, ih, iw] = sum of g * w over the outputs that read it */
	for (int64_t b = 0; b < batch; b++)
		for (int64_t ci = 0; ci < c; ci++)
			for (int64_t ih = 0; ih < cc->h; ih++)
				for (int64_t iw = 0; iw < cc->w; iw++) {
					double sum = 0.0;

					for (int64_t o = 0; o < cc->oc; o++)
						for (int64_t y = 0; y < oh; y++)
							for (int64_t x = 0;
							     x < ow; x++) {
								int64_t i = ih - (y * cc->s - cc->pad);
								int64_t j = iw - (x * cc->s - cc->pad);

								if (i < 0 || i >= cc->k || j < 0 || j >= cc->k)
									continue;
								sum += grad_at(&r, cc, b, o, y, x) *
								       wt[((o * c + ci) * cc->k + i) * cc->k + j];
							}
					ck_assert_double_eq_tol(
						r.dx[0][((b * c + ci) * cc->h +
							 ih) * cc->w + iw],
						sum, 1e-4);
				}

	memcpy(out1, r.n.out, (size_t)n_out * sizeof(float));
	memcpy(dx1, r.dx[0], (size_t)n_in * sizeof(float));
	memcpy(gr1, r.grads, (size_t)r.n.n_params * sizeof(float));
	for (int threads = 2; threads <= 3; threads++) {
		r.pool = dt_pool_new(threads);
		gc_backward(&r, true, false);
		ck_assert_mem_eq(r.n.out, out1, (size_t)n_out * sizeof(float));
		ck_assert_mem_eq(r.dx[0], dx1, (size_t)n_in * sizeof(float));
		ck_assert_mem_eq(r.grads, gr1,
				 (size_t)r.n.n_params * sizeof(float));
		dt_pool_free(r.pool);
		r.pool = NULL;
	}
	free(out1);
	free(dx1);
	free(gr1);
	gc_free(&r);
}

START_TEST(test_conv2d_batched)
{
	check_batched(&conv_batched_cases[_i], 20);
}
END_TEST

/* One sample: a single group, no partial sums. */
START_TEST(test_conv2d_batch1)
{
	check_batched(&conv_batched_cases[_i], 1);
}
END_TEST

START_TEST(test_conv2d_counts)
{
	struct gc_rig r;
	struct dt_layer_spec spec = {
		.kind = DT_LAYER_CONV2D, .channels = 32, .kernel = 3,
		.padding = 1, .bias = true,
	};
	struct dt_shape in = shape_of(2, 28, 28, 0);

	rig_init(&r, &dt_layer_conv2d, &spec, 1, &in, 1);
	/* 2*K*K*Cin*Cout*Hout*Wout + Cout*Hout*Wout */
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n),
			    2.0 * 9 * 1 * 32 * 28 * 28 + 32 * 28 * 28);
	/* the columns (C*K*K, L) and the masked gradient (OC, L) per
	 * sample, and an eighth of a group's partial dW and db (groups are
	 * 8 samples): (32*9 + 32) / 8 */
	ck_assert_int_eq(r.n.ops->scratch_floats(&r.n),
			 9 * 28 * 28 + 32 * 28 * 28 + 40);
	ck_assert_str_eq(r.n.tensor[0].name, "weight");
	ck_assert_int_eq(r.n.tensor[0].n_dims, 4);
	ck_assert_int_eq(r.n.tensor[0].shape[0], 32);
	ck_assert_int_eq(r.n.tensor[0].shape[1], 1);
	ck_assert_int_eq(r.n.tensor[0].init, DT_INIT_HE_NORMAL);
	ck_assert_int_eq(r.n.tensor[0].fan_in, 9);
	gc_free(&r);

	spec.bias = false;
	spec.stride = 2;
	spec.padding = 0;
	spec.channels = 4;
	in = shape_of(3, 3, 9, 8);
	rig_init(&r, &dt_layer_conv2d, &spec, 1, &in, 1);
	/* Hout = (9 - 3)/2 + 1 = 4, Wout = (8 - 3)/2 + 1 = 3 */
	ck_assert_int_eq(r.n.out_shape.dim[1], 4);
	ck_assert_int_eq(r.n.out_shape.dim[2], 3);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 2.0 * 9 * 3 * 4 * 4 * 3);
	ck_assert_int_eq(r.n.n_tensors, 1);
	gc_free(&r);
}
END_TEST

/* ---- batchnorm on the pool ------------------------------------------ */

/* Batchnorm over 40 channels of 30 samples splits its channels over pools
 * of 2 and 3 threads and gives the one-thread bits: outputs, running
 * statistics, input and parameter gradients. (Its values and gradients
 * are checked in test_graph_nlp.c.) */
START_TEST(test_batchnorm_pool)
{
	struct dt_layer_spec spec = {
		.kind = DT_LAYER_BATCHNORM, .eps = 1e-5, .momentum = 0.1,
	};
	struct dt_shape in = shape_of(3, 40, 6, 6);
	const int64_t batch = 30;
	struct gc_rig r;

	rig_init(&r, &dt_layer_batchnorm, &spec, 1, &in, batch);
	for (int64_t j = 0; j < r.n.tensor[3].size; j++)
		r.n.tensor[3].data[j] = 0.5f + 0.25f * (float)j;
	const size_t n_out = (size_t)(batch * r.n.out_size);
	const size_t np = (size_t)r.n.n_params;
	float *start = dt_xalloc_floats(np), *params1 = dt_xalloc_floats(np);
	float *grads1 = dt_xalloc_floats(np), *out1 = dt_xalloc_floats(n_out);
	float *dx1 = dt_xalloc_floats(n_out);

	memcpy(start, r.params, np * sizeof(float));
	gc_backward(&r, true, false);
	memcpy(params1, r.params, np * sizeof(float));
	memcpy(grads1, r.grads, np * sizeof(float));
	memcpy(out1, r.n.out, n_out * sizeof(float));
	memcpy(dx1, r.dx[0], n_out * sizeof(float));
	/* the running statistics moved */
	ck_assert_int_ne(memcmp(params1, start, np * sizeof(float)), 0);
	for (int threads = 2; threads <= 3; threads++) {
		r.pool = dt_pool_new(threads);
		memcpy(r.params, start, np * sizeof(float));
		gc_backward(&r, true, false);
		ck_assert_mem_eq(r.params, params1, np * sizeof(float));
		ck_assert_mem_eq(r.grads, grads1, np * sizeof(float));
		ck_assert_mem_eq(r.n.out, out1, n_out * sizeof(float));
		ck_assert_mem_eq(r.dx[0], dx1, n_out * sizeof(float));
		dt_pool_free(r.pool);
		r.pool = NULL;
	}
	free(start);
	free(params1);
	free(grads1);
	free(out1);
	free(dx1);
	gc_free(&r);
}
END_TEST

/* Each activation over 3 x 20000 values (15 blocks of 4096) on pools of
 * 2 and 3 threads gives the one-thread output and input gradient, added
 * and written. */
START_TEST(test_activation_pool)
{
	static const enum dt_activation acts[] = {
		DT_ACT_RELU, DT_ACT_TANH, DT_ACT_SIGMOID, DT_ACT_GELU,
	};
	struct dt_layer_spec spec = {
		.kind = DT_LAYER_ACTIVATION, .activation = acts[_i],
	};
	struct dt_shape in = shape_of(1, 20000, 0, 0);
	const int64_t batch = 3;
	struct gc_rig r;

	rig_init(&r, &dt_layer_activation, &spec, 1, &in, batch);
	const size_t len = (size_t)(batch * r.n.out_size);
	float *out1 = dt_xalloc_floats(len), *dx1 = dt_xalloc_floats(len);

	for (int add = 0; add <= 1; add++) {
		for (size_t i = 0; i < len; i++)
			r.dx[0][i] = 0.5f;
		gc_backward(&r, true, add);
		memcpy(out1, r.n.out, len * sizeof(float));
		memcpy(dx1, r.dx[0], len * sizeof(float));
		for (int threads = 2; threads <= 3; threads++) {
			r.pool = dt_pool_new(threads);
			for (size_t i = 0; i < len; i++)
				r.dx[0][i] = 0.5f;
			memset(r.n.out, 0, len * sizeof(float));
			gc_backward(&r, true, add);
			ck_assert_mem_eq(r.n.out, out1, len * sizeof(float));
			ck_assert_mem_eq(r.dx[0], dx1, len * sizeof(float));
			dt_pool_free(r.pool);
			r.pool = NULL;
		}
	}
	free(out1);
	free(dx1);
	gc_free(&r);
}
END_TEST


/* ---- pooling -------------------------------------------------------- */

struct pool_case {
	bool max;
	int64_t c, h, w, k, s, pad;
};

static const struct pool_case pool_cases[] = {
	{ true, 2, 4, 6, 2, 0, 0 },	/* stride defaults to the kernel */
	{ true, 1, 5, 5, 3, 2, 1 },
	{ true, 0, 5, 4, 2, 1, 0 },	/* 2-D input, overlapping windows */
	{ true, 2, 5, 7, 2, 0, 0 },	/* 2x2 stride 2 leaving a row over */
	{ true, 3, 6, 9, 3, 0, 0 },	/* 3x3 windows tiling the image */
	{ false, 2, 4, 6, 2, 0, 0 },
	{ false, 1, 5, 5, 3, 2, 1 },
	{ false, 0, 4, 5, 2, 1, 1 },
};

static void
pool_setup(struct gc_rig *r, const struct pool_case *pc, int64_t batch)
{
	struct dt_layer_spec spec = {
		.kind = pc->max ? DT_LAYER_MAXPOOL2D : DT_LAYER_AVGPOOL2D,
		.kernel = pc->k,
		.stride = pc->s,
		.padding = pc->pad,
	};
	struct dt_shape in = pc->c > 0 ? shape_of(3, pc->c, pc->h, pc->w)
				       : shape_of(2, pc->h, pc->w, 0);

	rig_init(r, pc->max ? &dt_layer_maxpool2d : &dt_layer_avgpool2d,
		 &spec, 1, &in, batch);
}

START_TEST(test_pool_gradient)
{
	struct gc_rig r;

	pool_setup(&r, &pool_cases[_i], 2);
	if (pool_cases[_i].max)
		distinct_values(&r, 0);
	rig_check(&r, 1e-3);
	gc_free(&r);
}
END_TEST

/* Output (c, y, x) of sample b of pool case pc by the definition:
 * the maximum of the window's pixels inside the image, or the window's
 * sum over K*K with padding as zeros. */
static double
ref_pool(const struct gc_rig *r, const struct pool_case *pc, int64_t b,
	 int64_t c, int64_t y, int64_t x)
{
	int64_t ch, h, w, s = pc->s > 0 ? pc->s : pc->k;
	double best = -INFINITY, sum = 0.0;

	dt_shape_chw(&r->n.in_shape[0], &ch, &h, &w);
	for (int64_t i = y * s - pc->pad; i < y * s - pc->pad + pc->k; i++)
		for (int64_t j = x * s - pc->pad; j < x * s - pc->pad + pc->k;
		     j++) {
			if (i < 0 || i >= h || j < 0 || j >= w)
				continue;
			best = fmax(best, pixel(r, b, c, i, j));
			sum += pixel(r, b, c, i, j);
		}
	return pc->max ? best : sum / (double)(pc->k * pc->k);
}

START_TEST(test_pool_values)
{
	const struct pool_case *pc = &pool_cases[_i];
	int64_t c = pc->c > 0 ? pc->c : 1;
	int64_t s = pc->s > 0 ? pc->s : pc->k;
	int64_t oh = (pc->h + 2 * pc->pad - pc->k) / s + 1;
	int64_t ow = (pc->w + 2 * pc->pad - pc->k) / s + 1;
	const float *out;
	struct gc_rig r;

	pool_setup(&r, pc, 2);
	ck_assert_int_eq(r.n.out_shape.dim[0], c);
	ck_assert_int_eq(r.n.out_shape.dim[1], oh);
	ck_assert_int_eq(r.n.out_shape.dim[2], ow);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n),
			    (double)(pc->k * pc->k * c * oh * ow));
	gc_objective(&r);
	out = r.n.out;
	for (int64_t b = 0; b < 2; b++)
		for (int64_t ci = 0; ci < c; ci++)
			for (int64_t y = 0; y < oh; y++)
				for (int64_t x = 0; x < ow; x++)
					ck_assert_double_eq_tol(
						*out++,
						ref_pool(&r, pc, b, ci, y, x),
						1e-6);
	gc_free(&r);
}
END_TEST

/* ---- shape, softmax, dropout, add, concat, losses ------------------- */

START_TEST(test_flatten_reshape)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { .kind = DT_LAYER_FLATTEN };
	struct dt_shape in = shape_of(3, 2, 3, 4);
	struct dt_error err;

	rig_init(&r, &dt_layer_flatten, &spec, 1, &in, 3);
	ck_assert_int_eq(r.n.out_shape.n_dims, 1);
	ck_assert_int_eq(r.n.out_shape.dim[0], 24);
	gc_objective(&r);
	ck_assert(memcmp(r.n.out, r.x[0], 3 * 24 * sizeof(float)) == 0);
	rig_check(&r, 1e-2);
	gc_free(&r);

	spec = (struct dt_layer_spec){ .kind = DT_LAYER_RESHAPE, .n_shape = 2,
				       .shape = { -1, 6 } };
	rig_init(&r, &dt_layer_reshape, &spec, 1, &in, 3);
	ck_assert_int_eq(r.n.out_shape.n_dims, 2);
	ck_assert_int_eq(r.n.out_shape.dim[0], 4);
	ck_assert_int_eq(r.n.out_shape.dim[1], 6);
	rig_check(&r, 1e-2);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 0.0);
	gc_free(&r);

	spec.shape[1] = 5;
	ck_assert_int_eq(rig_try(&r, &dt_layer_reshape, &spec, 1, &in, 1,
				 &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "rig.yaml: model.layers.0: shape (-1, 5) "
			 "does not hold the 24 values of a (2, 3, 4)");
	gc_free(&r);
	spec.shape[0] = -1;
	spec.shape[1] = -1;
	ck_assert_int_eq(rig_try(&r, &dt_layer_reshape, &spec, 1, &in, 1,
				 &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "only one dimension may be -1"), "%s",
		      err.msg);
	gc_free(&r);
	spec.n_shape = 3;
	spec.shape[0] = 2;
	spec.shape[1] = 3;
	spec.shape[2] = 0;
	ck_assert_int_eq(rig_try(&r, &dt_layer_reshape, &spec, 1, &in, 1,
				 &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "shape.2: must be -1 or in [1, 24]"),
		      "%s", err.msg);
	gc_free(&r);
}
END_TEST

START_TEST(test_softmax_layer)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { .kind = DT_LAYER_SOFTMAX };
	struct dt_shape in = shape_of(2, 3, 5, 0);

	rig_init(&r, &dt_layer_softmax, &spec, 1, &in, 2);
	for (int64_t i = 0; i < 2 * 15; i++)
		r.x[0][i] *= 3.0f;
	gc_objective(&r);
	for (int64_t row = 0; row < 6; row++) {
		double s = 0.0, z = 0.0;

		for (int j = 0; j < 5; j++)
			z += exp(r.x[0][row * 5 + j]);
		for (int j = 0; j < 5; j++) {
			s += r.n.out[row * 5 + j];
			ck_assert_double_eq_tol(r.n.out[row * 5 + j],
						exp(r.x[0][row * 5 + j]) / z,
						1e-6);
		}
		ck_assert_double_eq_tol(s, 1.0, 1e-6);
	}
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 5.0 * 15);
	rig_check(&r, 5e-3);
	gc_free(&r);
}
END_TEST

START_TEST(test_dropout_layer)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { .kind = DT_LAYER_DROPOUT, .rate = 0.25 };
	struct dt_shape in = shape_of(1, 40, 0, 0);
	struct dt_error err;
	int64_t dropped = 0;

	rig_init(&r, &dt_layer_dropout, &spec, 1, &in, 10);
	gc_objective(&r);
	for (int64_t i = 0; i < 400; i++) {
		if (r.n.out[i] == 0.0f)
			dropped++;
		else
			ck_assert_float_eq_tol(r.n.out[i], r.x[0][i] / 0.75f,
					       1e-6f);
	}
	/* 100 expected; 4 standard deviations either side. */
	ck_assert_msg(dropped > 65 && dropped < 135, "%lld dropped",
		      (long long)dropped);
	rig_check(&r, 1e-2);

	/* Eval: the identity. */
	r.training = false;
	gc_objective(&r);
	ck_assert(memcmp(r.n.out, r.x[0], 400 * sizeof(float)) == 0);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 40.0);
	ck_assert_int_eq(r.n.ops->scratch_floats(&r.n), 40);
	gc_free(&r);

	spec.rate = 1.0;
	ck_assert_int_eq(rig_try(&r, &dt_layer_dropout, &spec, 1, &in, 1,
				 &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "rig.yaml: model.layers.0: rate must be in "
			 "[0, 1), found 1");
	gc_free(&r);
}
END_TEST

START_TEST(test_add_layer)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { .kind = DT_LAYER_ADD };
	struct dt_shape in[3] = { shape_of(2, 2, 3, 0), shape_of(2, 2, 3, 0),
				  shape_of(2, 2, 3, 0) };
	struct dt_error err;

	rig_init(&r, &dt_layer_add, &spec, 3, in, 2);
	gc_objective(&r);
	for (int64_t i = 0; i < 12; i++)
		ck_assert_float_eq_tol(r.n.out[i],
				       r.x[0][i] + r.x[1][i] + r.x[2][i],
				       1e-6f);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 2.0 * 6);
	rig_check(&r, 1e-2);
	gc_free(&r);

	in[2] = shape_of(2, 3, 2, 0);
	ck_assert_int_eq(rig_try(&r, &dt_layer_add, &spec, 3, in, 1, &err),
			 DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "rig.yaml: model.layers.0: input shapes "
			 "differ: a (2, 3) vs c (3, 2)");
	gc_free(&r);
}
END_TEST

START_TEST(test_concat_layer)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { .kind = DT_LAYER_CONCAT };
	struct dt_shape in[2] = { shape_of(2, 3, 2, 0), shape_of(2, 3, 4, 0) };
	struct dt_error err;

	rig_init(&r, &dt_layer_concat, &spec, 2, in, 2);
	ck_assert_int_eq(r.n.out_shape.n_dims, 2);
	ck_assert_int_eq(r.n.out_shape.dim[0], 3);
	ck_assert_int_eq(r.n.out_shape.dim[1], 6);
	gc_objective(&r);
	for (int64_t row = 0; row < 6; row++) {
		ck_assert(memcmp(r.n.out + row * 6, r.x[0] + row * 2,
				 2 * sizeof(float)) == 0);
		ck_assert(memcmp(r.n.out + row * 6 + 2, r.x[1] + row * 4,
				 4 * sizeof(float)) == 0);
	}
	rig_check(&r, 1e-2);
	gc_free(&r);

	in[1] = shape_of(2, 4, 2, 0);
	ck_assert_int_eq(rig_try(&r, &dt_layer_concat, &spec, 2, in, 1, &err),
			 DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "rig.yaml: model.layers.0: input shapes "
			 "differ before the last axis: a (3, 2) vs b (4, 2)");
	gc_free(&r);
}
END_TEST

/* Dense over the rows of another layer's (T, C) output. */
START_TEST(test_dense_rows)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { .kind = DT_LAYER_DENSE, .units = 4,
				      .bias = true };
	struct dt_shape in = shape_of(2, 3, 5, 0);

	rig_init(&r, &dt_layer_dense, &spec, 1, &in, 2);
	ck_assert_int_eq(r.n.out_shape.n_dims, 2);
	ck_assert_int_eq(r.n.out_shape.dim[0], 3);
	ck_assert_int_eq(r.n.out_shape.dim[1], 4);
	ck_assert_int_eq(r.n.n_params, 5 * 4 + 4);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 3 * (2.0 * 5 * 4 + 4));
	rig_check(&r, 1e-2);
	gc_free(&r);

	/* The model input is flattened, as before. */
	rig_init(&r, &dt_layer_dense, &spec, 1, &in, 2);
	r.n.inputs[0] = DT_NODE_INPUT;
	ck_assert_int_eq(dt_layer_dense.infer(&r.n, &gc_job, NULL), DT_OK);
	ck_assert_int_eq(r.n.out_shape.n_dims, 1);
	ck_assert_int_eq(r.n.tensor[0].shape[0], 15);
	gc_free(&r);

	spec.bias = false;
	rig_init(&r, &dt_layer_dense, &spec, 1, &in, 2);
	ck_assert_int_eq(r.n.n_params, 5 * 4);
	rig_check(&r, 1e-2);
	gc_free(&r);
}
END_TEST

START_TEST(test_token_loss)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { 0 };
	struct dt_shape in = shape_of(2, 3, 5, 0);
	struct dt_pass p;
	struct dt_error err;
	double want = 0.0;
	int64_t want_correct = 0;

	rig_init(&r, &dt_layer_softmax_xent, &spec, 1, &in, 2);
	for (int64_t i = 0; i < 30; i++)
		r.x[0][i] *= 3.0f;
	p = gc_pass(&r);
	gc_forward(&r, &p);
	for (int64_t row = 0; row < 6; row++) {
		const float *z = r.x[0] + row * 5;
		double s = 0.0;
		int arg = 0;

		for (int j = 0; j < 5; j++) {
			s += exp(z[j]);
			if (z[j] > z[arg])
				arg = j;
		}
		want += log(s) - z[r.labels[row]];
		want_correct += arg == r.labels[row];
	}
	ck_assert_double_eq_tol(p.loss_sum, want, 1e-5);
	ck_assert_int_eq(p.n_correct, want_correct);
	rig_check(&r, 5e-3);
	gc_free(&r);

	in = shape_of(3, 2, 3, 4);
	ck_assert_int_eq(rig_try(&r, &dt_layer_softmax_xent, &spec, 1, &in,
				 1, &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "reads (classes) or (tokens, classes), "
			     "this last layer gives (2, 3, 4)"), "%s",
		      err.msg);
	gc_free(&r);
}
END_TEST

START_TEST(test_mse_loss)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { 0 };
	struct dt_shape in = shape_of(1, 3, 0, 0);
	struct dt_pass p;

	rig_init(&r, &dt_layer_mse, &spec, 1, &in, 2);
	rig_check(&r, 1e-2);
	/* (1, 2, 3) vs (1, 0, 0): (0 + 4 + 9)/3; (0,0,0) vs (1,1,1): 1. */
	const float x[6] = { 1, 2, 3, 0, 0, 0 }, t[6] = { 1, 0, 0, 1, 1, 1 };

	memcpy(r.x[0], x, sizeof x);
	memcpy(r.targets, t, sizeof t);
	p = gc_pass(&r);
	gc_forward(&r, &p);
	ck_assert_double_eq_tol(p.loss_sum, 13.0 / 3.0 + 1.0, 1e-6);
	ck_assert_int_eq(p.n_correct, 0);
	ck_assert(memcmp(r.n.out, x, sizeof x) == 0);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 9.0);
	gc_free(&r);
}
END_TEST

/* (1, 2, 3) and (0, 0, 0.5) against (1, 0, 0) and (1, 1, 1): the errors
 * d = (0, 2, 3) and (-1, -1, -0.5); one of them exactly 0. */
static const float robust_x[6] = { 1, 2, 3, 0, 0, 0.5f };
static const float robust_t[6] = { 1, 0, 0, 1, 1, 1 };

/* The gradient the rig's backward wrote for input value i. */
static float
rig_dx(const struct gc_rig *r, int i)
{
	return r->dx[0][i];
}

START_TEST(test_l1_loss)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { 0 };
	struct dt_shape in = shape_of(1, 3, 0, 0);
	struct dt_pass p;
	/* sign(d) / 3 times the rig's grad_scale, 0 where d is 0 */
	const float k = GC_SCALE / 3.0f;
	const float want[6] = { 0, k, k, -k, -k, -k };

	rig_init(&r, &dt_layer_l1, &spec, 1, &in, 2);
	ck_assert(r.n.huber_delta == 0.0f);
	memcpy(r.x[0], robust_x, sizeof robust_x);
	memcpy(r.targets, robust_t, sizeof robust_t);
	/* At d = 0 the central difference is (|e| - |-e|) / 2e = 0 too. */
	rig_check(&r, 1e-2);
	p = gc_pass(&r);
	gc_forward(&r, &p);
	/* (0 + 2 + 3) / 3 + (1 + 1 + 0.5) / 3 */
	ck_assert_double_eq_tol(p.loss_sum, 5.0 / 3.0 + 2.5 / 3.0, 1e-6);
	ck_assert(memcmp(r.n.out, robust_x, sizeof robust_x) == 0);
	gc_backward(&r, true, false);
	for (int i = 0; i < 6; i++)
		ck_assert_float_eq(rig_dx(&r, i), want[i]);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 9.0);
	gc_free(&r);
}
END_TEST

/* Huber with delta 0.75 (gc_job's model.huber_delta): d^2 / 2 inside,
 * 0.75 (|d| - 0.375) outside. */
START_TEST(test_huber_loss)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { 0 };
	struct dt_shape in = shape_of(1, 3, 0, 0);
	struct dt_pass p;
	/* d clamped to [-0.75, 0.75], over 3, times grad_scale */
	const float k = GC_SCALE / 3.0f;
	const float want[6] = { 0, 0.75f * k, 0.75f * k, -0.75f * k,
				-0.75f * k, -0.5f * k };

	rig_init(&r, &dt_layer_huber, &spec, 1, &in, 2);
	ck_assert(r.n.huber_delta == 0.75f);
	/* Random errors first: smooth everywhere but at |d| = 0.75. */
	rig_check(&r, 1e-3);
	memcpy(r.x[0], robust_x, sizeof robust_x);
	memcpy(r.targets, robust_t, sizeof robust_t);
	rig_check(&r, 1e-2);
	p = gc_pass(&r);
	gc_forward(&r, &p);
	/* 0, 0.75 * 1.625, 0.75 * 2.625 over 3; 0.75 * 0.625 twice and
	 * 0.5^2 / 2 over 3: 3.1875 / 3 + 1.0625 / 3 = 17 / 12. */
	ck_assert_double_eq_tol(p.loss_sum, 17.0 / 12.0, 1e-6);
	gc_backward(&r, true, false);
	for (int i = 0; i < 6; i++)
		ck_assert_float_eq_tol(rig_dx(&r, i), want[i], 1e-7);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 12.0);
	gc_free(&r);
}
END_TEST

/* ---- whole models ---------------------------------------------------- */

/* An empty job with input_shape dims and loss; layers are added with
 * add_layer. Caller frees. */
static struct dt_job *
new_job(int n_dims, const int64_t *dims, enum dt_loss_kind loss,
	uint64_t seed)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);

	snprintf(job->path, sizeof job->path, "job.yaml");
	job->seed = seed;
	job->model.n_input_dims = n_dims;
	for (int d = 0; d < n_dims; d++)
		job->model.input_shape[d] = dims[d];
	job->model.loss = loss;
	return job;
}

/* Appends a layer named name (default "<kind><index>" when NULL) reading
 * the comma-separated inputs (NULL: the previous layer), at line 10 +
 * index, column 7. Returns it for the kind's fields. */
static struct dt_layer_spec *
add_layer(struct dt_job *job, enum dt_layer_kind kind, const char *name,
	  const char *inputs)
{
	int i = job->model.n_layers++;
	struct dt_layer_spec *l = &job->model.layers[i];

	l->kind = kind;
	l->bias = true;
	if (name != NULL)
		snprintf(l->name, sizeof l->name, "%s", name);
	else
		snprintf(l->name, sizeof l->name, "layer%d", i);
	l->pos.line = 10 + i;
	l->pos.col = 7;
	while (inputs != NULL && *inputs != '\0') {
		size_t len = strcspn(inputs, ",");

		snprintf(l->inputs[l->n_inputs++], DT_LAYER_NAME_MAX, "%.*s",
			 (int)len, inputs);
		inputs += len + (inputs[len] == ',');
	}
	return l;
}

/* Every parameter gradient of m against central differences of the mean
 * loss at step eps, |a - n| <= atol + 1e-2 max(|a|, |n|); kinks: see
 * gc_model_check. Returns the number of mismatches. */
static int
model_gradcheck(struct dt_model *m, const float *x, const int32_t *labels,
		const float *targets, int64_t batch, double eps, double atol,
		bool kinks, int *skipped)
{
	return gc_model_check(m, x, labels, targets, batch,
			      &(struct gc_model_tol){ .eps = eps,
						      .atol = atol,
						      .rtol = 1e-2,
						      .kinks = kinks },
			      skipped);
}

/* conv 3x3 (2 maps, padding 1) relu, maxpool 2, conv 3x3 stride 2 (3
 * maps) tanh, avgpool 2 stride 1, flatten, dense 3: every image layer in
 * one model, on a 2-D (8, 8) input. */
static struct dt_job *
tiny_cnn(uint64_t seed)
{
	static const int64_t dims[] = { 8, 8 };
	struct dt_job *job = new_job(2, dims, DT_LOSS_SOFTMAX_CROSS_ENTROPY,
				     seed);
	struct dt_layer_spec *l;

	l = add_layer(job, DT_LAYER_CONV2D, "conv0", NULL);
	l->channels = 2;
	l->kernel = 3;
	l->padding = 1;
	l->activation = DT_ACT_RELU;
	l = add_layer(job, DT_LAYER_MAXPOOL2D, "pool0", NULL);
	l->kernel = 2;
	l = add_layer(job, DT_LAYER_CONV2D, "conv1", NULL);
	l->channels = 3;
	l->kernel = 3;
	l->stride = 2;
	l->padding = 1;
	l->activation = DT_ACT_TANH;
	l = add_layer(job, DT_LAYER_AVGPOOL2D, "pool1", NULL);
	l->kernel = 2;
	l->stride = 1;
	add_layer(job, DT_LAYER_FLATTEN, "flat", NULL);
	l = add_layer(job, DT_LAYER_DENSE, "out", NULL);
	l->units = 3;
	return job;
}

START_TEST(test_cnn_gradient)
{
	struct dt_job *job = tiny_cnn(3);
	struct dt_model *m = NULL;
	struct dt_error err;
	enum { B = 3 };
	float x[B * 64];
	int32_t labels[B] = { 0, 2, 1 };

	int skipped;

	ck_assert_msg(dt_model_new(job, B, &m, &err) == DT_OK, "%s", err.msg);
	gc_fill_uniform(x, B * 64, 50);
	ck_assert_int_eq(model_gradcheck(m, x, labels, NULL, B, 1e-3, 1e-4,
					 true, &skipped), 0);
	ck_assert_msg(skipped * 10 < (int)dt_model_n_params(m),
		      "%d of %zu parameters straddle a kink", skipped,
		      dt_model_n_params(m));
	dt_model_free(m);
	free(job);
}
END_TEST

/* Shapes, parameters, FLOPs and activation floats of the tiny CNN by
 * hand. */
START_TEST(test_cnn_counts)
{
	struct dt_job *job = tiny_cnn(0);
	struct dt_model *m = NULL;
	struct dt_layer_info info;
	struct dt_error err;
	static const char *const names[] = {
		"conv0", "conv0.relu", "pool0", "conv1", "conv1.tanh",
		"pool1", "flat", "out", "loss",
	};
	static const int64_t outs[][3] = {
		{ 2, 8, 8 }, { 2, 8, 8 }, { 2, 4, 4 }, { 3, 2, 2 },
		{ 3, 2, 2 }, { 3, 1, 1 }, { 3 }, { 3 }, { 3 },
	};
	static const int n_dims[] = { 3, 3, 3, 3, 3, 3, 1, 1, 1 };
	static const double fwd[] = {
		2.0 * 9 * 1 * 2 * 64 + 2 * 64,	/* conv0 */
		128,				/* relu */
		4.0 * 32,			/* maxpool: K*K per output */
		2.0 * 9 * 2 * 3 * 4 + 3 * 4,	/* conv1 */
		12,				/* tanh */
		4.0 * 3,			/* avgpool */
		0,				/* flatten */
		2.0 * 3 * 3 + 3,		/* dense */
		5.0 * 3,			/* loss */
	};
	static const int64_t params[] = {
		2 * 9 + 2, 0, 0, 3 * 2 * 9 + 3, 0, 0, 0, 3 * 3 + 3, 0,
	};
	double total = 0.0;

	ck_assert_msg(dt_model_new(job, 4, &m, &err) == DT_OK, "%s", err.msg);
	ck_assert_int_eq(dt_model_n_layers(m), 9);
	for (int i = 0; i < 9; i++) {
		dt_model_layer_info(m, i, &info);
		ck_assert_str_eq(info.name, names[i]);
		ck_assert_int_eq(info.n_dims, n_dims[i]);
		for (int d = 0; d < n_dims[i]; d++)
			ck_assert_int_eq(info.out_shape[d], outs[i][d]);
		ck_assert_int_eq(info.n_params, params[i]);
		ck_assert_double_eq(info.fwd_flops, fwd[i]);
		total += fwd[i];
	}
	ck_assert_double_eq(dt_model_flops_per_sample(m), 3.0 * total);
	ck_assert_uint_eq(dt_model_n_params(m), 20 + 57 + 12);
	ck_assert_int_eq(dt_model_n_classes(m), 3);
	ck_assert_int_eq(dt_model_labels_per_sample(m), 1);
	ck_assert_int_eq(dt_model_targets_per_sample(m), 0);
	/* Outputs of every node, gradients of all but the loss (nothing
	 * reads it), conv columns (9*64 and 18*4), masked gradients (2*64
	 * and 3*4) and an eighth of a group's partial sum, rounded up
	 * (20/8 -> 3 and 57/8 -> 8; groups are 8 samples), and the maxpool
	 * argmax (32). */
	int64_t outs_sum = 128 + 128 + 32 + 12 + 12 + 3 + 3 + 3 + 3;
	int64_t douts = 128 + 128 + 32 + 12 + 12 + 3 + 3 + 3;

	ck_assert_int_eq(dt_model_act_floats_per_sample(m),
			 outs_sum + douts + 9 * 64 + 18 * 4 + 2 * 64 + 3 * 4 +
				 3 + 8 + 32);
	ck_assert_str_eq(info.kind, "softmax_cross_entropy");
	dt_model_layer_info(m, 2, &info);
	ck_assert_str_eq(info.kind, "maxpool2d");
	dt_model_free(m);
	free(job);
}
END_TEST

/* input (6) -> a: dense 4 tanh -> b: dense 4 sigmoid -> res: add [a, b]
 * -> side: dense 2 on [input] -> cat: concat [res, side] -> out: dense 3.
 * a feeds b and res, the model input feeds a and side. */
static struct dt_job *
dag_job(uint64_t seed)
{
	static const int64_t dims[] = { 6 };
	struct dt_job *job = new_job(1, dims, DT_LOSS_SOFTMAX_CROSS_ENTROPY,
				     seed);
	struct dt_layer_spec *l;

	l = add_layer(job, DT_LAYER_DENSE, "a", NULL);
	l->units = 4;
	l->activation = DT_ACT_TANH;
	l = add_layer(job, DT_LAYER_DENSE, "b", NULL);
	l->units = 4;
	l->activation = DT_ACT_SIGMOID;
	add_layer(job, DT_LAYER_ADD, "res", "a,b");
	l = add_layer(job, DT_LAYER_DENSE, "side", "input");
	l->units = 2;
	add_layer(job, DT_LAYER_CONCAT, "cat", "res,side");
	l = add_layer(job, DT_LAYER_DENSE, "out", NULL);
	l->units = 3;
	return job;
}

START_TEST(test_dag_gradient)
{
	struct dt_job *job = dag_job(5);
	struct dt_model *m = NULL;
	struct dt_layer_info info;
	struct dt_error err;
	enum { B = 4 };
	float x[B * 6];
	int32_t labels[B] = { 0, 2, 1, 1 };

	ck_assert_msg(dt_model_new(job, B, &m, &err) == DT_OK, "%s", err.msg);
	/* a, a.tanh, b, b.sigmoid, res, side, cat, out, loss */
	ck_assert_int_eq(dt_model_n_layers(m), 9);
	dt_model_layer_info(m, 6, &info);
	ck_assert_str_eq(info.name, "cat");
	ck_assert_int_eq(info.out_shape[0], 6);
	ck_assert_int_eq(info.job_layer, 4);
	dt_model_layer_info(m, 5, &info);
	ck_assert_str_eq(info.name, "side");
	ck_assert_int_eq(info.n_params, 6 * 2 + 2);
	gc_fill_uniform(x, B * 6, 60);
	ck_assert_int_eq(model_gradcheck(m, x, labels, NULL, B, 1e-2, 2e-5,
					 false, NULL),
			 0);
	dt_model_free(m);

	/* One input read twice: add [a, a] doubles a. */
	snprintf(job->model.layers[2].inputs[1], DT_LAYER_NAME_MAX, "a");
	ck_assert_msg(dt_model_new(job, B, &m, &err) == DT_OK, "%s", err.msg);
	ck_assert_int_eq(model_gradcheck(m, x, labels, NULL, B, 1e-2, 2e-5,
					 false, NULL),
			 0);
	dt_model_free(m);
	free(job);
}
END_TEST

/* The message of the issue, word for word, and the other ways `inputs:`
 * can be wrong. */
START_TEST(test_dag_errors)
{
	static const int64_t dims[] = { 64 * 128 };
	struct dt_job *job = new_job(1, dims, DT_LOSS_SOFTMAX_CROSS_ENTROPY,
				     0);
	struct dt_model *m = NULL;
	struct dt_layer_spec *l;
	struct dt_error err;

	l = add_layer(job, DT_LAYER_RESHAPE, "tokens", NULL);
	l->n_shape = 2;
	l->shape[0] = 64;
	l->shape[1] = -1;
	l = add_layer(job, DT_LAYER_DENSE, "block.0.attn", NULL);
	l->units = 128;
	l = add_layer(job, DT_LAYER_DENSE, "dense3", "tokens");
	l->units = 256;
	l->activation = DT_ACT_RELU;
	add_layer(job, DT_LAYER_DROPOUT, NULL, NULL);
	add_layer(job, DT_LAYER_SOFTMAX, NULL, NULL);
	l = add_layer(job, DT_LAYER_ADD, "add5", "block.0.attn,dense3");
	l->pos.line = 14;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "job.yaml:14:7: model.layers.5 (add5): "
			 "input shapes differ: block.0.attn (64, 128) vs "
			 "dense3 (64, 256)");

	/* Fixed, the model builds; the loss reads per token. */
	job->model.layers[2].units = 128;
	ck_assert_msg(dt_model_new(job, 2, &m, &err) == DT_OK, "%s", err.msg);
	ck_assert_int_eq(dt_model_labels_per_sample(m), 64);
	ck_assert_int_eq(dt_model_n_classes(m), 128);
	dt_model_free(m);

	snprintf(l->inputs[1], DT_LAYER_NAME_MAX, "dense33");
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "job.yaml:14:7: model.layers.5 (add5): "
			 "inputs.1: no layer named \"dense33\" (\"input\" is "
			 "the model input)");
	snprintf(l->inputs[1], DT_LAYER_NAME_MAX, "add5");
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "inputs.1: \"add5\" is model.layers.5, "
			     "this layer itself"), "%s", err.msg);
	l->n_inputs = 1;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "job.yaml:14:7: model.layers.5 (add5): add "
			 "takes 2 to 4 inputs, found 1");

	/* A later layer, and a dense with two inputs. */
	snprintf(job->model.layers[1].inputs[0], DT_LAYER_NAME_MAX, "dense3");
	job->model.layers[1].n_inputs = 1;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "job.yaml:11:7: model.layers.1 "
			 "(block.0.attn): inputs.0: \"dense3\" is "
			 "model.layers.2, which comes later; a layer can only "
			 "read layers before it");
	snprintf(job->model.layers[1].inputs[0], DT_LAYER_NAME_MAX, "input");
	snprintf(job->model.layers[1].inputs[1], DT_LAYER_NAME_MAX, "tokens");
	job->model.layers[1].n_inputs = 2;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "job.yaml:11:7: model.layers.1 "
			 "(block.0.attn): dense takes 1 input, found 2");
	free(job);
}
END_TEST

START_TEST(test_image_errors)
{
	static const int64_t dims[] = { 784 };
	struct dt_job *job = new_job(1, dims, DT_LOSS_SOFTMAX_CROSS_ENTROPY,
				     0);
	struct dt_model *m = NULL;
	struct dt_layer_spec *l;
	struct dt_error err;

	l = add_layer(job, DT_LAYER_CONV2D, "c", NULL);
	l->channels = 4;
	l->kernel = 3;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "job.yaml:10:7: model.layers.0 (c): conv2d "
			 "reads (channels, height, width) or (height, width); "
			 "input gives (784)");
	job->model.n_input_dims = 2;
	job->model.input_shape[0] = 2;
	job->model.input_shape[1] = 5;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "job.yaml:10:7: model.layers.0 (c): kernel "
			 "3 does not fit input (2, 5) with padding 0");
	l->padding = 3;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "padding must be in [0, kernel - 1] = "
			     "[0, 2], found 3"), "%s", err.msg);
	l->padding = 1;
	l->channels = 0;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "channels must be in [1, "), "%s",
		      err.msg);
	l->channels = 4;
	l = add_layer(job, DT_LAYER_MAXPOOL2D, "p", NULL);
	l->kernel = 3;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "job.yaml:11:7: model.layers.1 (p): kernel "
			 "3 does not fit c (4, 2, 5) with padding 0");
	l->kernel = 2;
	/* The loss cannot read a map. */
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "model.layers.1 (p): softmax "
			     "cross-entropy reads (classes) or (tokens, "
			     "classes), this last layer gives (4, 1, 2)"),
		      "%s", err.msg);
	free(job);
}
END_TEST

/* Embedding-free token model: input (4*5) -> reshape (4, 5) -> dense 6
 * per token -> per-token softmax cross-entropy with labels (B, 4). */
START_TEST(test_token_model)
{
	static const int64_t dims[] = { 20 };
	struct dt_job *job = new_job(1, dims, DT_LOSS_SOFTMAX_CROSS_ENTROPY,
				     9);
	struct dt_model *m = NULL;
	struct dt_layer_spec *l;
	struct dt_error err;
	enum { B = 3, T = 4, V = 6 };
	float x[B * 20];
	int32_t labels[B * T];
	double loss, loss_eval;
	int64_t correct, correct_eval;

	l = add_layer(job, DT_LAYER_RESHAPE, NULL, NULL);
	l->n_shape = 2;
	l->shape[0] = T;
	l->shape[1] = 5;
	l = add_layer(job, DT_LAYER_DENSE, NULL, NULL);
	l->units = 8;
	l->activation = DT_ACT_GELU;
	l = add_layer(job, DT_LAYER_DENSE, NULL, NULL);
	l->units = V;
	ck_assert_msg(dt_model_new(job, B, &m, &err) == DT_OK, "%s", err.msg);
	ck_assert_int_eq(dt_model_labels_per_sample(m), T);
	ck_assert_int_eq(dt_model_n_classes(m), V);
	ck_assert_uint_eq(dt_model_n_params(m), 5 * 8 + 8 + 8 * V + V);
	gc_fill_uniform(x, B * 20, 70);
	for (int i = 0; i < B * T; i++)
		labels[i] = (i * 5 + 2) % V;
	ck_assert_int_eq(model_gradcheck(m, x, labels, NULL, B, 1e-2, 2e-5,
					 false, NULL),
			 0);

	/* loss_sum is the sum over tokens of -log p[label]; n_correct
	 * counts tokens. */
	dt_model_train_step(m, x, labels, B, 1.0f, &loss, &correct);
	dt_model_eval(m, x, labels, B, &loss_eval, &correct_eval);
	ck_assert(loss == loss_eval && correct == correct_eval);
	const float *probs = dt_model_probs(m);
	double want = 0.0;
	int64_t want_correct = 0;

	for (int t = 0; t < B * T; t++) {
		int arg = 0;

		for (int j = 1; j < V; j++)
			if (probs[t * V + j] > probs[t * V + arg])
				arg = j;
		want -= log(probs[t * V + labels[t]]);
		want_correct += arg == labels[t];
	}
	ck_assert_double_eq_tol(loss, want, 1e-4);
	ck_assert_int_eq(correct, want_correct);
	/* Near log V per token at init. */
	ck_assert(loss / (B * T) > 0.5 * log(V) && loss / (B * T) < 2 * log(V));
	dt_model_free(m);
	free(job);
}
END_TEST

START_TEST(test_mse_model)
{
	static const int64_t dims[] = { 5 };
	struct dt_job *job = new_job(1, dims, DT_LOSS_MSE, 4);
	struct dt_model *m = NULL;
	struct dt_layer_spec *l;
	struct dt_error err;
	enum { B = 4 };
	float x[B * 5], t[B * 2];
	double loss, loss_eval, none;

	l = add_layer(job, DT_LAYER_DENSE, NULL, NULL);
	l->units = 6;
	l->activation = DT_ACT_TANH;
	l = add_layer(job, DT_LAYER_DENSE, NULL, NULL);
	l->units = 2;
	ck_assert_msg(dt_model_new(job, B, &m, &err) == DT_OK, "%s", err.msg);
	ck_assert_int_eq(dt_model_targets_per_sample(m), 2);
	ck_assert_int_eq(dt_model_labels_per_sample(m), 0);
	ck_assert_int_eq(dt_model_n_classes(m), 0);
	gc_fill_uniform(x, B * 5, 80);
	gc_fill_uniform(t, B * 2, 81);
	ck_assert_int_eq(model_gradcheck(m, x, NULL, t, B, 1e-2, 2e-5, false,
					 NULL), 0);
	dt_model_train_step_targets(m, x, t, B, 1.0f, &loss);
	dt_model_eval_targets(m, x, t, B, &loss_eval);
	ck_assert(loss == loss_eval);
	const float *pred = dt_model_probs(m);
	double want = 0.0;

	for (int i = 0; i < B * 2; i++)
		want += ((double)pred[i] - t[i]) * ((double)pred[i] - t[i]) / 2;
	ck_assert_double_eq_tol(loss, want, 1e-6);
	dt_model_eval_targets(m, x, NULL, B, &none);
	ck_assert(none == 0.0);
	dt_model_free(m);
	free(job);
}
END_TEST

/* Dense -> tanh -> dense (2 outputs) under l1 (_i 0) and huber with
 * delta 0.3 (_i 1), through the graph: model.huber_delta reaches the loss,
 * the gradients match central differences, and the loss is the mean of
 * the per-output losses worked out here in double. */
START_TEST(test_robust_model)
{
	static const int64_t dims[] = { 5 };
	const enum dt_loss_kind kind = _i == 0 ? DT_LOSS_L1 : DT_LOSS_HUBER;
	struct dt_job *job = new_job(1, dims, kind, 4);
	struct dt_model *m = NULL;
	struct dt_layer_spec *l;
	struct dt_error err;
	enum { B = 4 };
	float x[B * 5], t[B * 2];
	double loss, want = 0.0;

	job->model.huber_delta = 0.3;
	l = add_layer(job, DT_LAYER_DENSE, NULL, NULL);
	l->units = 6;
	l->activation = DT_ACT_TANH;
	l = add_layer(job, DT_LAYER_DENSE, NULL, NULL);
	l->units = 2;
	ck_assert_msg(dt_model_new(job, B, &m, &err) == DT_OK, "%s", err.msg);
	ck_assert_int_eq(dt_model_targets_per_sample(m), 2);
	ck_assert_int_eq(dt_model_n_classes(m), 0);
	gc_fill_uniform(x, B * 5, 80);
	gc_fill_uniform(t, B * 2, 81);
	ck_assert_int_eq(model_gradcheck(m, x, NULL, t, B, 1e-3, 2e-5, true,
					 NULL), 0);
	dt_model_eval_targets(m, x, t, B, &loss);
	const float *pred = dt_model_probs(m);

	for (int i = 0; i < B * 2; i++) {
		double a = fabs((double)pred[i] - t[i]);

		if (kind == DT_LOSS_L1)
			want += a / 2;
		else
			want += (a <= 0.3 ? a * a / 2 : 0.3 * (a - 0.15)) / 2;
	}
	ck_assert_double_eq_tol(loss, want, 1e-6);
	dt_model_free(m);
	free(job);
}
END_TEST

/* The mask against dropout.c's definition, one draw per element pair:
 * N = 601 values per sample so that the first element of a micro-batch
 * may be the high half of its draw, 3 samples (1803 values, past the
 * 512 values of one run of draws), starting at samples 4 (an even first
 * element, an odd count: a lone last one) and 5 (an odd first). */
START_TEST(test_dropout_reference)
{
	struct gc_rig r;
	struct dt_layer_spec spec = { .kind = DT_LAYER_DROPOUT, .rate = 0.3 };
	struct dt_shape in = shape_of(1, 601, 0, 0);
	const uint64_t cut = (uint64_t)(0.3 * 4294967296.0);
	const float keep = (float)(1.0 / (1.0 - 0.3));
	int64_t dropped = 0;

	rig_init(&r, &dt_layer_dropout, &spec, 1, &in, 3);
	r.step = 11;
	for (int first = 4; first <= 5; first++) {
		struct dt_pass p;
		uint64_t key, e0 = (uint64_t)first * 601;

		r.first_sample = first;
		p = gc_pass(&r);
		gc_forward(&r, &p);
		key = dt_rng_u64(p.seed, DT_RNG_DROPOUT, UINT64_MAX,
				 (uint64_t)r.n.layer);
		for (int64_t i = 0; i < 3 * 601; i++) {
			uint64_t e = e0 + (uint64_t)i;
			uint64_t b = dt_rng_u64(key, DT_RNG_DROPOUT, 11, e / 2);
			uint64_t u = e % 2 ? b >> 32 : b & 0xffffffffu;
			float want = u >= cut ? r.x[0][i] * keep : 0.0f;

			ck_assert_msg(r.n.out[i] == want, "sample %d, value "
				      "%lld: %g, want %g", first, (long long)i,
				      (double)r.n.out[i], (double)want);
			dropped += u < cut;
		}
	}
	/* 1082 expected of 3606; 4 standard deviations either side. */
	ck_assert_msg(dropped > 970 && dropped < 1194, "%lld dropped",
		      (long long)dropped);
	gc_free(&r);
}
END_TEST

/* input (16) -> dropout 0.5 -> mse: the prediction is the masked input. */
static struct dt_job *
dropout_job(void)
{
	static const int64_t dims[] = { 16 };
	struct dt_job *job = new_job(1, dims, DT_LOSS_MSE, 21);

	add_layer(job, DT_LAYER_DROPOUT, "drop", NULL)->rate = 0.5;
	return job;
}

START_TEST(test_dropout_split)
{
	struct dt_job *job = dropout_job();
	struct dt_model *m = NULL;
	struct dt_error err;
	enum { B = 8, N = 16 };
	float x[B * N], whole[B * N], parts[B * N], other[B * N];
	int64_t zeros = 0;

	ck_assert_msg(dt_model_new(job, B, &m, &err) == DT_OK, "%s", err.msg);
	gc_fill_uniform(x, B * N, 90);
	for (int i = 0; i < B * N; i++)
		x[i] += 2.0f;	/* never 0: a 0 out means dropped */

	/* Step 7: one micro-batch of 8 samples starting at sample 40 ... */
	dt_model_set_position(m, 7, 40);
	dt_model_train_step_targets(m, x, x, B, 1.0f, NULL);
	memcpy(whole, dt_model_probs(m), sizeof whole);
	/* ... equals two of 4, at 40 and 44, and 8 of 1. */
	dt_model_set_position(m, 7, 40);
	dt_model_train_step_targets(m, x, x, 4, 1.0f, NULL);
	memcpy(parts, dt_model_probs(m), 4 * N * sizeof(float));
	dt_model_set_position(m, 7, 44);
	dt_model_train_step_targets(m, x + 4 * N, x, 4, 1.0f, NULL);
	memcpy(parts + 4 * N, dt_model_probs(m), 4 * N * sizeof(float));
	ck_assert(memcmp(whole, parts, sizeof whole) == 0);
	for (int b = 0; b < B; b++) {
		dt_model_set_position(m, 7, 40 + b);
		dt_model_train_step_targets(m, x + b * N, x, 1, 1.0f, NULL);
		ck_assert(memcmp(whole + b * N, dt_model_probs(m),
				 N * sizeof(float)) == 0);
	}
	for (int i = 0; i < B * N; i++) {
		if (whole[i] == 0.0f)
			zeros++;
		else
			ck_assert(whole[i] == 2.0f * x[i]);
	}
	ck_assert_msg(zeros > 32 && zeros < 96, "%lld dropped",
		      (long long)zeros);

	/* Another step, or other samples: other masks. */
	dt_model_set_position(m, 8, 40);
	dt_model_train_step_targets(m, x, x, B, 1.0f, NULL);
	memcpy(other, dt_model_probs(m), sizeof other);
	ck_assert(memcmp(whole, other, sizeof whole) != 0);
	dt_model_set_position(m, 7, 48);
	dt_model_train_step_targets(m, x, x, B, 1.0f, NULL);
	ck_assert(memcmp(whole, dt_model_probs(m), sizeof whole) != 0);

	/* Eval: the identity, wherever the position. */
	dt_model_eval_targets(m, x, NULL, B, NULL);
	ck_assert(memcmp(x, dt_model_probs(m), sizeof x) == 0);
	dt_model_free(m);

	/* Same seed, same job: the same masks in a fresh model. */
	ck_assert(dt_model_new(job, B, &m, &err) == DT_OK);
	dt_model_set_position(m, 7, 40);
	dt_model_train_step_targets(m, x, x, B, 1.0f, NULL);
	ck_assert(memcmp(whole, dt_model_probs(m), sizeof whole) == 0);
	dt_model_free(m);
	free(job);
}
END_TEST

/* Two dropout layers of one width draw different masks. */
START_TEST(test_dropout_layers_differ)
{
	struct dt_job *job = dropout_job();
	struct dt_model *m = NULL;
	struct dt_error err;
	enum { B = 4, N = 16 };
	float x[B * N], ones[B * N], first[B * N];
	int64_t both = 0, zeros = 0;

	add_layer(job, DT_LAYER_DROPOUT, "drop2", NULL)->rate = 0.5;
	for (int i = 0; i < B * N; i++)
		x[i] = ones[i] = 1.0f;
	job->model.n_layers = 1;
	ck_assert(dt_model_new(job, B, &m, &err) == DT_OK);
	dt_model_train_step_targets(m, x, ones, B, 1.0f, NULL);
	memcpy(first, dt_model_probs(m), sizeof first);
	dt_model_free(m);
	job->model.n_layers = 2;
	ck_assert(dt_model_new(job, B, &m, &err) == DT_OK);
	dt_model_train_step_targets(m, x, ones, B, 1.0f, NULL);
	/* Output = x * m1 * m2: zero where either dropped; 4 where both
	 * kept. With independent masks about a quarter survive. */
	for (int i = 0; i < B * N; i++) {
		float v = dt_model_probs(m)[i];

		ck_assert(v == 0.0f || v == 4.0f);
		ck_assert(first[i] != 0.0f || v == 0.0f);
		both += v == 4.0f;
		zeros += first[i] == 0.0f;
	}
	ck_assert_msg(both < B * N - zeros, "second mask equals the first");
	dt_model_free(m);
	free(job);
}
END_TEST

/* Gradients through dropout accumulate over micro-batches exactly as over
 * one batch when the positions follow the samples. */
START_TEST(test_dropout_accumulation)
{
	static const int64_t dims[] = { 6 };
	struct dt_job *job = new_job(1, dims, DT_LOSS_SOFTMAX_CROSS_ENTROPY,
				     13);
	struct dt_model *m = NULL;
	struct dt_layer_spec *l;
	struct dt_error err;
	enum { K = 3, M = 4, IN = 6 };
	float x[K * M * IN];
	int32_t labels[K * M];
	double parts_loss = 0.0, whole_loss, l_k;

	l = add_layer(job, DT_LAYER_DENSE, NULL, NULL);
	l->units = 8;
	l->activation = DT_ACT_RELU;
	add_layer(job, DT_LAYER_DROPOUT, NULL, NULL)->rate = 0.3;
	l = add_layer(job, DT_LAYER_DENSE, NULL, NULL);
	l->units = 3;
	ck_assert(dt_model_new(job, K * M, &m, &err) == DT_OK);
	gc_fill_uniform(x, K * M * IN, 100);
	for (int i = 0; i < K * M; i++)
		labels[i] = i % 3;

	size_t n = dt_model_n_params(m);
	float *parts = dt_xalloc_floats(n);

	dt_model_zero_grads(m);
	for (int k = 0; k < K; k++) {
		dt_model_set_position(m, 2, 100 + k * M);
		dt_model_train_step(m, x + k * M * IN, labels + k * M, M,
				    1.0f / (K * M), &l_k, NULL);
		parts_loss += l_k;
	}
	memcpy(parts, dt_model_grads(m), n * sizeof(float));
	dt_model_zero_grads(m);
	dt_model_set_position(m, 2, 100);
	dt_model_train_step(m, x, labels, K * M, 1.0f / (K * M), &whole_loss,
			    NULL);
	for (size_t i = 0; i < n; i++)
		ck_assert_float_eq_tol(parts[i], dt_model_grads(m)[i], 1e-5f);
	ck_assert_double_eq_tol(parts_loss, whole_loss, 1e-5);

	/* Eval differs from training (no mask) and is repeatable. */
	double e1, e2;

	dt_model_eval(m, x, labels, K * M, &e1, NULL);
	dt_model_eval(m, x, labels, K * M, &e2, NULL);
	ck_assert(e1 == e2 && e1 != whole_loss);
	free(parts);
	dt_model_free(m);
	free(job);
}
END_TEST

/* conv 3x3 same (3 maps) relu, maxpool 2 on the odd (9, 9) map, conv 3x3
 * same (4 maps) relu, maxpool 3 stride 1, conv 3x3 stride 2 padding 1
 * relu, flatten,
 * dense 3. With fused, every relu is the convolution's `activation:`,
 * which the graph fuses (conv0 with pool0, conv1 with its relu only, as
 * a 3x3 pooling is not fused, conv2 with its relu); otherwise each relu
 * is an activation layer of its own, which stays a node of its own. */
static struct dt_job *
fusion_job(bool fused)
{
	static const int64_t dims[] = { 9, 9 };
	struct dt_job *job = new_job(2, dims, DT_LOSS_SOFTMAX_CROSS_ENTROPY,
				     5);
	static const char *names[] = { "conv0", "conv1", "conv2" };
	struct dt_layer_spec *l;

	for (int i = 0; i < 3; i++) {
		l = add_layer(job, DT_LAYER_CONV2D, names[i], NULL);
		l->channels = 3 + i;
		l->kernel = 3;
		l->padding = 1;
		l->stride = i < 2 ? 1 : 2;
		if (fused)
			l->activation = DT_ACT_RELU;
		else
			add_layer(job, DT_LAYER_ACTIVATION, NULL, NULL)
				->activation = DT_ACT_RELU;
		if (i == 2)
			break;
		l = add_layer(job, DT_LAYER_MAXPOOL2D, NULL, NULL);
		l->kernel = i == 0 ? 2 : 3;
		l->stride = i == 0 ? 0 : 1;
	}
	add_layer(job, DT_LAYER_FLATTEN, "flat", NULL);
	add_layer(job, DT_LAYER_DENSE, "out", NULL)->units = 3;
	return job;
}

/* One training step of m on a pool of threads (1: none): the loss and
 * the gradient, into grads (n_params). */
static double
fusion_step(struct dt_model *m, const float *x, const int32_t *labels,
	    int64_t batch, int threads, float *grads)
{
	struct dt_pool *pool = threads > 1 ? dt_pool_new(threads) : NULL;
	double loss;

	dt_model_set_pool(m, pool);
	dt_model_zero_grads(m);
	dt_model_train_step(m, x, labels, batch, 1.0f, &loss, NULL);
	memcpy(grads, dt_model_grads(m),
	       dt_model_n_params(m) * sizeof(float));
	dt_model_set_pool(m, NULL);
	dt_pool_free(pool);
	return loss;
}

/* The fused convolution, relu and pooling give the bits of the nodes
 * apart (a pipeline stage boundary between them stops the fusion, and
 * every layout must give the one-rank bits): the same loss and
 * gradients, on 11 samples (a group of 8 and one of 3, in chunks of 2
 * and an odd one); and the same bits on pools of 2 and 3 threads. */
START_TEST(test_conv_fusion)
{
	struct dt_job *jf = fusion_job(true), *ju = fusion_job(false);
	struct dt_model *mf = NULL, *mu = NULL;
	struct dt_error err;
	enum { B = 11 };
	float x[B * 81];
	int32_t labels[B];
	double loss_f, loss_u;

	ck_assert_msg(dt_model_new(jf, B, &mf, &err) == DT_OK, "%s", err.msg);
	ck_assert_msg(dt_model_new(ju, B, &mu, &err) == DT_OK, "%s", err.msg);
	/* fused: conv0 conv0.relu pool0 conv1 conv1.relu pool conv2
	 * conv2.relu flat out loss */
	ck_assert_int_eq(mf->n_nodes, 11);
	ck_assert_int_eq(mf->nodes[0].fused_act, DT_ACT_RELU);
	ck_assert(mf->nodes[1].act_fused);
	ck_assert_ptr_eq(mf->nodes[0].fused_pool, &mf->nodes[2]);
	ck_assert(mf->nodes[2].pool_fused);
	ck_assert_int_eq(mf->nodes[3].fused_act, DT_ACT_RELU);
	ck_assert_ptr_null(mf->nodes[3].fused_pool);
	ck_assert(!mf->nodes[5].pool_fused);
	ck_assert_int_eq(mf->nodes[6].fused_act, DT_ACT_RELU);
	ck_assert(mf->nodes[7].act_fused);
	ck_assert_int_eq(mu->n_nodes, 11);
	for (int i = 0; i < mu->n_nodes; i++) {
		ck_assert_int_eq(mu->nodes[i].fused_act, DT_ACT_NONE);
		ck_assert(!mu->nodes[i].act_fused);
		ck_assert_ptr_null(mu->nodes[i].fused_pool);
	}

	size_t n = dt_model_n_params(mf);
	float *gf = dt_xalloc_floats(n), *gu = dt_xalloc_floats(n);
	float *g2 = dt_xalloc_floats(n);

	ck_assert_uint_eq(dt_model_n_params(mu), n);
	memcpy(dt_model_params(mu), dt_model_params(mf), n * sizeof(float));
	gc_fill_uniform(x, B * 81, 61);
	for (int b = 0; b < B; b++)
		labels[b] = b % 3;
	loss_f = fusion_step(mf, x, labels, B, 1, gf);
	loss_u = fusion_step(mu, x, labels, B, 1, gu);
	ck_assert_mem_eq(&loss_f, &loss_u, sizeof loss_f);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(memcmp(&gf[i], &gu[i], sizeof gf[i]) == 0,
			      "gradient %zu: %a fused, %a apart", i,
			      (double)gf[i], (double)gu[i]);
	for (int threads = 2; threads <= 3; threads++) {
		double loss = fusion_step(mf, x, labels, B, threads, g2);

		ck_assert_mem_eq(&loss, &loss_f, sizeof loss);
		ck_assert_mem_eq(g2, gf, n * sizeof(float));
	}
	free(gf);
	free(gu);
	free(g2);
	dt_model_free(mf);
	dt_model_free(mu);
	free(jf);
	free(ju);
}
END_TEST

/* An activation layer of its own, and `activation:` on a conv. */
START_TEST(test_activation_layer)
{
	static const int64_t dims[] = { 4 };
	struct dt_job *job = new_job(1, dims, DT_LOSS_SOFTMAX_CROSS_ENTROPY,
				     1);
	struct dt_model *m = NULL;
	struct dt_layer_info info;
	struct dt_error err;

	add_layer(job, DT_LAYER_DENSE, "d", NULL)->units = 3;
	add_layer(job, DT_LAYER_ACTIVATION, "act", NULL)->activation =
		DT_ACT_GELU;
	ck_assert_msg(dt_model_new(job, 2, &m, &err) == DT_OK, "%s", err.msg);
	ck_assert_int_eq(dt_model_n_layers(m), 3);
	dt_model_layer_info(m, 1, &info);
	ck_assert_str_eq(info.name, "act");
	ck_assert_str_eq(info.kind, "gelu");
	dt_model_free(m);
	job->model.layers[1].activation = DT_ACT_NONE;
	ck_assert_int_eq(dt_model_new(job, 2, &m, &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "model.layers.1 (act): "), "%s",
		      err.msg);
	free(job);
}
END_TEST

static Suite *
graph_layers_suite(void)
{
	Suite *s = suite_create("graph_layers");
	TCase *layers = tcase_create("layers");
	TCase *model = tcase_create("model");

	tcase_add_loop_test(layers, test_conv2d_gradient, 0,
			    sizeof conv_cases / sizeof conv_cases[0]);
	tcase_add_test(layers, test_batchnorm_pool);
	tcase_add_loop_test(layers, test_activation_pool, 0, 4);
	tcase_add_loop_test(layers, test_conv2d_batched, 0,
			    sizeof conv_batched_cases /
				    sizeof conv_batched_cases[0]);
	tcase_add_loop_test(layers, test_conv2d_batch1, 0,
			    sizeof conv_batched_cases /
				    sizeof conv_batched_cases[0]);
	tcase_add_loop_test(layers, test_conv2d_values, 0,
			    sizeof conv_cases / sizeof conv_cases[0]);
	tcase_add_test(layers, test_conv2d_counts);
	tcase_add_loop_test(layers, test_pool_gradient, 0,
			    sizeof pool_cases / sizeof pool_cases[0]);
	tcase_add_loop_test(layers, test_pool_values, 0,
			    sizeof pool_cases / sizeof pool_cases[0]);
	tcase_add_test(layers, test_flatten_reshape);
	tcase_add_test(layers, test_softmax_layer);
	tcase_add_test(layers, test_dropout_layer);
	tcase_add_test(layers, test_dropout_reference);
	tcase_add_test(layers, test_add_layer);
	tcase_add_test(layers, test_concat_layer);
	tcase_add_test(layers, test_dense_rows);
	tcase_add_test(layers, test_token_loss);
	tcase_add_test(layers, test_mse_loss);
	tcase_add_test(layers, test_l1_loss);
	tcase_add_test(layers, test_huber_loss);
	suite_add_tcase(s, layers);

	tcase_add_test(model, test_cnn_gradient);
	tcase_add_test(model, test_cnn_counts);
	tcase_add_test(model, test_dag_gradient);
	tcase_add_test(model, test_dag_errors);
	tcase_add_test(model, test_image_errors);
	tcase_add_test(model, test_token_model);
	tcase_add_test(model, test_mse_model);
	tcase_add_loop_test(model, test_robust_model, 0, 2);
	tcase_add_test(model, test_dropout_split);
	tcase_add_test(model, test_dropout_layers_differ);
	tcase_add_test(model, test_dropout_accumulation);
	tcase_add_test(model, test_activation_layer);
	tcase_add_test(model, test_conv_fusion);
	suite_add_tcase(s, model);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(graph_layers_suite());
	int failed;

	gc_record_to("test_graph_layers");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
