/* SPDX-License-Identifier: MIT */
/* test_graph_threads.c - Check suite for the loops of src/graph/ that run
 * on a rank's thread pool (util/threadpool.h): the pool-split kernels of
 * graph/kern.h against their serial loops, and each layer whose passes
 * split over the pool (attention, materialized and fused, softmax
 * cross-entropy, dropout, add, layernorm, dense, embedding,
 * pos_embedding, flatten) on pools of 2, 3 and 4 threads
 * against the same layer on one thread, bit for bit: outputs, parameter
 * gradients added to non-zero ones, input gradients written and added.
 * The sizes are chosen so that every pool size cuts each loop into as
 * many parts as it has threads (the part counts are asserted through
 * the grains the layers use), with parts that end off the 8 lanes of
 * the vector loops. The layers' values themselves are checked against
 * finite differences and hand-worked numbers in test_graph_nlp.c and
 * test_graph_layers.c, on one thread. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"
#include "gradcheck.h"
#include "util/alloc.h"
#include "util/threadpool.h"

/* ---- the kernels ----------------------------------------------------- */

/* Values in [-1, 1) of key k. */
static float *
filled(int64_t n, uint64_t key)
{
	float *a = dt_xalloc_floats((size_t)(n > 0 ? n : 1));

	gc_fill_uniform(a, n, key);
	return a;
}

/* The elementwise kernels over 3 * 8192 + 5 values (7 blocks of 4096,
 * the last short) against the serial loops, on NULL and on pools of 1 to
 * 4 threads: add, accumulate, multiply (written and added), copy and
 * zero. */
START_TEST(test_par_elementwise)
{
	const int64_t n = 3 * 8192 + 5;
	float *a = filled(n, 1), *b = filled(n, 2), *y0 = filled(n, 3);
	float *ref = dt_xalloc_floats((size_t)n), *y = dt_xalloc_floats((size_t)n);

	for (int threads = 0; threads <= 4; threads++) {
		struct dt_pool *pool = threads ? dt_pool_new(threads) : NULL;

		dt_kern_add(a, b, ref, n);
		dt_kern_par_add(pool, a, b, y, n);
		ck_assert_mem_eq(y, ref, (size_t)n * sizeof(float));
		ck_assert_float_eq(y[n - 1], a[n - 1] + b[n - 1]);

		memcpy(ref, y0, (size_t)n * sizeof(float));
		memcpy(y, y0, (size_t)n * sizeof(float));
		dt_kern_acc(a, ref, n);
		dt_kern_par_acc(pool, a, y, n);
		ck_assert_mem_eq(y, ref, (size_t)n * sizeof(float));

		for (int add = 0; add <= 1; add++) {
			memcpy(ref, y0, (size_t)n * sizeof(float));
			memcpy(y, y0, (size_t)n * sizeof(float));
			dt_kern_mul(a, b, ref, n, add);
			dt_kern_par_mul(pool, a, b, y, n, add);
			ck_assert_mem_eq(y, ref, (size_t)n * sizeof(float));
		}

		memcpy(y, y0, (size_t)n * sizeof(float));
		dt_kern_par_copy(pool, a, y, n);
		ck_assert_mem_eq(y, a, (size_t)n * sizeof(float));
		dt_kern_par_copy(pool, NULL, y, n);
		for (int64_t i = 0; i < n; i++)
			ck_assert_float_eq(y[i], 0.0f);
		dt_pool_free(pool);
	}
	free(a);
	free(b);
	free(y0);
	free(ref);
	free(y);
}
END_TEST

/* Column sums of a (150, 101) block at row stride 107 and the bias
 * broadcast, on pools of 1 to 4 threads, against a plain double loop
 * (exact here: the values are multiples of 1/64 below 4, so every float
 * partial sum is exact) and against each other bit for bit. */
START_TEST(test_par_columns)
{
	const int64_t rows = 150, cols = 101, ld = 107;
	float *dy = dt_xalloc_floats((size_t)(rows * ld));
	float *db0 = filled(cols, 4), *db = dt_xalloc_floats((size_t)cols);
	float *db1 = dt_xalloc_floats((size_t)cols);
	float *yb = dt_xalloc_floats((size_t)(rows * cols));

	for (int64_t i = 0; i < rows * ld; i++)
		dy[i] = (float)((i * 37) % 256 - 128) / 64.0f;
	for (int threads = 0; threads <= 4; threads++) {
		struct dt_pool *pool = threads ? dt_pool_new(threads) : NULL;

		memcpy(db, db0, (size_t)cols * sizeof(float));
		dt_kern_par_col_sums(pool, dy, ld, db, rows, cols);
		for (int64_t j = 0; j < cols; j++) {
			double s = db0[j];

			for (int64_t r = 0; r < rows; r++)
				s += dy[r * ld + j];
			ck_assert_double_eq_tol(db[j], s, 1e-4);
		}
		if (threads == 0)
			memcpy(db1, db, (size_t)cols * sizeof(float));
		ck_assert_mem_eq(db, db1, (size_t)cols * sizeof(float));

		dt_kern_par_broadcast(pool, db0, yb, rows, cols);
		for (int64_t r = 0; r < rows; r++)
			ck_assert_mem_eq(yb + r * cols, db0,
					 (size_t)cols * sizeof(float));
		dt_pool_free(pool);
	}
	free(dy);
	free(db0);
	free(db);
	free(db1);
	free(yb);
}
END_TEST

/* Layer normalisation of 130 rows of 100 features: forward (the output
 * and the statistics) and backward (dx written and added, dgain and
 * dbias added to non-zero values) on pools of 1 to 4 threads give the
 * serial kernels' bits. */
START_TEST(test_par_layernorm)
{
	const int64_t rows = 130, c = 100, n = rows * c;
	float *x = filled(n, 5), *dy = filled(n, 6), *gain = filled(c, 7);
	float *bias = filled(c, 8), *dx0 = filled(n, 9), *dp0 = filled(c, 10);
	float *y = dt_xalloc_floats((size_t)n), *yr = dt_xalloc_floats((size_t)n);
	float *st = dt_xalloc_floats((size_t)(2 * rows));
	float *str = dt_xalloc_floats((size_t)(2 * rows));
	float *dx = dt_xalloc_floats((size_t)n), *dxr = dt_xalloc_floats((size_t)n);
	float *dg = dt_xalloc_floats((size_t)c), *dgr = dt_xalloc_floats((size_t)c);
	float *dbb = dt_xalloc_floats((size_t)c), *dbr = dt_xalloc_floats((size_t)c);

	dt_kern_layernorm(x, gain, bias, yr, str, str + rows, rows, c, 1e-5f);
	for (int threads = 0; threads <= 4; threads++) {
		struct dt_pool *pool = threads ? dt_pool_new(threads) : NULL;

		dt_kern_par_layernorm(pool, x, gain, bias, y, st, st + rows,
				      rows, c, 1e-5f);
		ck_assert_mem_eq(y, yr, (size_t)n * sizeof(float));
		ck_assert_mem_eq(st, str, (size_t)(2 * rows) * sizeof(float));
		for (int add = 0; add <= 1; add++) {
			memcpy(dxr, dx0, (size_t)n * sizeof(float));
			memcpy(dx, dx0, (size_t)n * sizeof(float));
			memcpy(dgr, dp0, (size_t)c * sizeof(float));
			memcpy(dg, dp0, (size_t)c * sizeof(float));
			memcpy(dbr, gain, (size_t)c * sizeof(float));
			memcpy(dbb, gain, (size_t)c * sizeof(float));
			dt_kern_layernorm_grad(x, dy, gain, str, str + rows,
					       dxr, add, dgr, dbr, rows, c);
			dt_kern_par_layernorm_grad(pool, x, dy, gain, st,
						   st + rows, dx, add, dg, dbb,
						   rows, c);
			ck_assert_mem_eq(dx, dxr, (size_t)n * sizeof(float));
			ck_assert_mem_eq(dg, dgr, (size_t)c * sizeof(float));
			ck_assert_mem_eq(dbb, dbr, (size_t)c * sizeof(float));
			/* and without dx */
			memcpy(dg, dp0, (size_t)c * sizeof(float));
			memcpy(dbb, gain, (size_t)c * sizeof(float));
			dt_kern_par_layernorm_grad(pool, x, dy, gain, st,
						   st + rows, NULL, add, dg,
						   dbb, rows, c);
			ck_assert_mem_eq(dg, dgr, (size_t)c * sizeof(float));
			ck_assert_mem_eq(dbb, dbr, (size_t)c * sizeof(float));
		}
		ck_assert_int_ne(memcmp(dgr, dp0, (size_t)c * sizeof(float)),
				 0);
		dt_pool_free(pool);
	}
	free(x);
	free(dy);
	free(gain);
	free(bias);
	free(dx0);
	free(dp0);
	free(y);
	free(yr);
	free(st);
	free(str);
	free(dx);
	free(dxr);
	free(dg);
	free(dgr);
	free(dbb);
	free(dbr);
}
END_TEST

/* The pool-split product of the shipped jobs' dense and attention shapes
 * (rows of C, inner, columns; each forward product, its dW = X^T dY and
 * its dX = dY W^T) on pools of 2 to 4 threads against one unsplit call
 * on one BLAS thread, bit for bit, with beta 0 and 1. This is the BLAS
 * property kern.h's dt_kern_par_sgemm relies on for those shapes
 * (OpenBLAS 0.3.21 has it for them; not for every shape: a (300, 50) x
 * (7, 50)^T product split by rows rounds differently); and dW with dX
 * through dt_kern_par_sgemm2, each with its one-call bits. */
START_TEST(test_par_sgemm)
{
	static const int64_t shapes[][3] = {
		{ 512, 128, 512 },	/* char-GPT fc */
		{ 512, 512, 128 },	/* char-GPT proj */
		{ 512, 128, 384 },	/* char-GPT attention qkv */
		{ 512, 128, 128 },	/* char-GPT attention proj */
		{ 512, 128, 96 },	/* char-GPT head */
		{ 128, 3136, 128 },	/* CNN fc1 */
		{ 128, 128, 10 },	/* CNN fc2 */
		{ 96, 784, 512 },	/* MLP */
		{ 96, 512, 256 },
		{ 96, 256, 10 },
	};
	const int64_t m = shapes[_i][0], k = shapes[_i][1], n = shapes[_i][2];
	/* forward (m, k) x (k, n); dW (k, m)^T x (m, n); dX (m, n) x (k, n)^T */
	/* the largest C: (m, n), (k, n) or (m, k) */
	const int64_t big = m * n > k * n ? (m * n > m * k ? m * n : m * k)
					  : (k * n > m * k ? k * n : m * k);
	float *x = filled(m * k, 11), *w = filled(k * n, 12);
	float *dy = filled(m * n, 13), *c0 = filled(big, 14);
	float *ref = dt_xalloc_floats((size_t)big);
	float *got = dt_xalloc_floats((size_t)big);
	float *ref2 = dt_xalloc_floats((size_t)big);
	float *got2 = dt_xalloc_floats((size_t)big);

	for (int threads = 2; threads <= 4; threads++) {
		struct dt_pool *pool = dt_pool_new(threads);

		for (int beta = 0; beta <= 1; beta++) {
			memcpy(ref, c0, (size_t)(m * n) * sizeof(float));
			memcpy(got, c0, (size_t)(m * n) * sizeof(float));
			dt_kern_sgemm(0, 0, m, n, k, 1.0f, x, k, w, n,
				      (float)beta, ref, n);
			dt_kern_par_sgemm(pool, 0, 0, m, n, k, 1.0f, x, k, w,
					  n, (float)beta, got, n);
			ck_assert_mem_eq(got, ref,
					 (size_t)(m * n) * sizeof(float));

			memcpy(ref, c0, (size_t)(k * n) * sizeof(float));
			memcpy(got, c0, (size_t)(k * n) * sizeof(float));
			dt_kern_sgemm(1, 0, k, n, m, 1.0f, x, k, dy, n,
				      (float)beta, ref, n);
			dt_kern_par_sgemm(pool, 1, 0, k, n, m, 1.0f, x, k, dy,
					  n, (float)beta, got, n);
			ck_assert_mem_eq(got, ref,
					 (size_t)(k * n) * sizeof(float));

			memcpy(ref, c0, (size_t)(m * k) * sizeof(float));
			memcpy(got, c0, (size_t)(m * k) * sizeof(float));
			dt_kern_sgemm(0, 1, m, k, n, 1.0f, dy, n, w, n,
				      (float)beta, ref, k);
			dt_kern_par_sgemm(pool, 0, 1, m, k, n, 1.0f, dy, n, w,
					  n, (float)beta, got, k);
			ck_assert_mem_eq(got, ref,
					 (size_t)(m * k) * sizeof(float));

			/* dW and dX side by side (dt_kern_par_sgemm2):
			 * got2 and got take them, ref2 and ref hold the
			 * one-call bits */
			const struct dt_kern_gemm gw = {
				.trans_a = 1, .m = k, .n = n, .k = m,
				.alpha = 1.0f, .a = x, .lda = k, .b = dy,
				.ldb = n, .beta = (float)beta, .c = got2,
				.ldc = n,
			};
			const struct dt_kern_gemm gx = {
				.trans_b = 1, .m = m, .n = k, .k = n,
				.alpha = 1.0f, .a = dy, .lda = n, .b = w,
				.ldb = n, .beta = (float)beta, .c = got,
				.ldc = k,
			};

			memcpy(ref2, c0, (size_t)(k * n) * sizeof(float));
			memcpy(got2, c0, (size_t)(k * n) * sizeof(float));
			memcpy(got, c0, (size_t)(m * k) * sizeof(float));
			dt_kern_sgemm(1, 0, k, n, m, 1.0f, x, k, dy, n,
				      (float)beta, ref2, n);
			dt_kern_par_sgemm2(pool, &gw, &gx);
			ck_assert_mem_eq(got2, ref2,
					 (size_t)(k * n) * sizeof(float));
			ck_assert_mem_eq(got, ref,
					 (size_t)(m * k) * sizeof(float));
		}
		dt_pool_free(pool);
	}
	/* not a product of zeros */
	ck_assert_float_ne(ref[0], c0[0]);
	free(x);
	free(w);
	free(dy);
	free(c0);
	free(ref);
	free(got);
	free(ref2);
	free(got2);
}
END_TEST

/* ---- the layers ------------------------------------------------------ */

/* What one training pass of a rig's node leaves: its output, the
 * parameter gradients (added to gradients that start at a fixed
 * non-zero pattern) and each input's gradient (written, or added to a
 * fixed pattern with add). */
struct snapshot {
	float *out, *grads, *dx[DT_NODE_MAX_INPUTS];
};

static void
pass_on(struct gc_rig *r, struct dt_pool *pool, bool add,
	struct snapshot *s, bool keep)
{
	const float *in[DT_NODE_MAX_INPUTS];
	float *din[DT_NODE_MAX_INPUTS];
	bool din_add[DT_NODE_MAX_INPUTS];
	const size_t n_out = (size_t)(r->batch * r->n.out_size);
	const size_t np = (size_t)r->n.n_params;
	struct dt_pass p;

	r->pool = pool;
	p = gc_pass(r);
	gc_fill_uniform(r->grads, (int64_t)np, 21);
	for (int k = 0; k < r->n.n_inputs; k++) {
		const int64_t len = r->batch * r->n.in_size[k];

		gc_fill_uniform(r->dx[k], len, 22 + (uint64_t)k);
		in[k] = r->x[k];
		/* an embedding's ids take no gradient but are given one */
		din[k] = r->dx[k];
		din_add[k] = add;
	}
	memset(r->n.out, 0, n_out * sizeof(float));
	r->n.ops->forward(&r->n, &p, in);
	r->n.ops->backward(&r->n, &p, in, din, din_add);
	r->pool = NULL;
	if (!keep) {
		ck_assert_mem_eq(r->n.out, s->out, n_out * sizeof(float));
		ck_assert_mem_eq(r->grads, s->grads, np * sizeof(float));
		for (int k = 0; k < r->n.n_inputs; k++)
			ck_assert_mem_eq(r->dx[k], s->dx[k],
					 (size_t)(r->batch * r->n.in_size[k]) *
					 sizeof(float));
		return;
	}
	s->out = dt_xalloc_floats(n_out);
	memcpy(s->out, r->n.out, n_out * sizeof(float));
	s->grads = dt_xalloc_floats(np > 0 ? np : 1);
	memcpy(s->grads, r->grads, np * sizeof(float));
	for (int k = 0; k < r->n.n_inputs; k++) {
		const size_t len = (size_t)(r->batch * r->n.in_size[k]);

		s->dx[k] = dt_xalloc_floats(len);
		memcpy(s->dx[k], r->dx[k], len * sizeof(float));
	}
}

static void
snapshot_free(struct snapshot *s, int n_inputs)
{
	free(s->out);
	free(s->grads);
	for (int k = 0; k < n_inputs; k++)
		free(s->dx[k]);
}

/* The one-thread pass, then the same on pools of 2, 3 and 4 threads,
 * with input gradients written and added. The pass must have done
 * something: an output that is not all zero, and, for a node with
 * parameters, gradients that moved from their start. */
static void
same_on_pools(struct gc_rig *r)
{
	for (int add = 0; add <= 1; add++) {
		struct snapshot s;
		bool moved = false, nonzero = false;
		float *start = dt_xalloc_floats((size_t)r->n.n_params + 1);

		memset(&s, 0, sizeof s);
		pass_on(r, NULL, add, &s, true);
		gc_fill_uniform(start, r->n.n_params, 21);
		for (int64_t i = 0; i < r->n.n_params; i++)
			moved |= start[i] != s.grads[i];
		for (int64_t i = 0; i < r->batch * r->n.out_size; i++)
			nonzero |= s.out[i] != 0.0f;
		ck_assert(nonzero);
		ck_assert(r->n.n_params == 0 || moved);
		for (int threads = 2; threads <= 4; threads++) {
			struct dt_pool *pool = dt_pool_new(threads);

			pass_on(r, pool, add, &s, false);
			dt_pool_free(pool);
		}
		snapshot_free(&s, r->n.n_inputs);
		free(start);
	}
}

static struct dt_layer_spec
spec_of(enum dt_layer_kind kind)
{
	struct dt_layer_spec s;

	memset(&s, 0, sizeof s);
	s.kind = kind;
	snprintf(s.name, sizeof s.name, "n");
	s.eps = 1e-5;
	s.bias = true;
	return s;
}

static struct dt_shape
shape2(int64_t a, int64_t b)
{
	struct dt_shape s = { .n_dims = b > 0 ? 2 : 1, .dim = { a, b } };

	return s;
}

/* Attention, 3 heads of 4 over T = 20 (past one tile of 16), batch 5 (a
 * part per sample or two): _i bit 0 causal, bit 1 bias. */
START_TEST(test_attention_pools)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION);
	struct dt_shape in = shape2(20, 12);
	struct gc_rig r;

	s.heads = 3;
	s.causal = (_i & 1) != 0;
	s.bias = (_i & 2) != 0;
	gc_init(&r, &gc_node_inputs, &dt_layer_attention, &s, 1, &in, 5);
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

/* Fused attention (model.attention: fused; flash.c), 3 heads of 4,
 * causal or not (_i bit 0): at batch 1 over T = 70 (past one key tile of
 * 64; _i bit 1 clear), the 3 heads of the one sample split over the
 * threads, each part with its own D and tile buffer; and at batch 5 over
 * T = 20 (15 pairs, parts crossing from one sample into the next). Not
 * at batch 2 over T = 70: there the input gradient's product (140 rows
 * of 36 by 12, split by rows over the pool) already differed in its last
 * bits between 1 and 2 threads before the heads split by pairs, as
 * OpenBLAS does for some shapes (dtrain-job(5), parallel.blas_threads). */
START_TEST(test_attention_fused_pools)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION);
	struct dt_shape in = shape2((_i & 2) ? 20 : 70, 12);
	struct gc_rig r;

	s.heads = 3;
	s.causal = (_i & 1) != 0;
	gc_init(&r, &gc_node_inputs, &dt_layer_attention, &s, 1, &in,
		(_i & 2) ? 5 : 1);
	r.n.attn_fused = true;
	free(r.n.scratch);
	r.n.scratch = dt_xalloc_floats((size_t)(r.batch *
					r.n.ops->scratch_floats(&r.n)));
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

/* Softmax cross-entropy over 7 tokens of 20000 classes: 2 rows a part
 * (its grain of 32768 values), so 2, 3 and 4 threads cut the rows into
 * 2, 3 and 4 parts; probabilities, input gradients, the summed loss and
 * the argmax hits as on one thread, bit for bit. */
START_TEST(test_softmax_xent_pools)
{
	struct dt_layer_spec s = { 0 };
	struct dt_shape in = shape2(7, 20000);
	struct gc_rig r;
	double loss1 = 0.0;
	int64_t hits1 = 0;

	gc_init(&r, &gc_node_inputs, &dt_layer_softmax_xent, &s, 1, &in, 1);
	for (int threads = 1; threads <= 4; threads++) {
		struct dt_pool *pool = threads > 1 ? dt_pool_new(threads)
						   : NULL;
		struct dt_pass p;

		r.pool = pool;
		p = gc_pass(&r);
		gc_forward(&r, &p);
		if (threads == 1) {
			loss1 = p.loss_sum;
			hits1 = p.n_correct;
			ck_assert(loss1 > 0.0);
		} else {
			ck_assert_mem_eq(&p.loss_sum, &loss1, sizeof loss1);
			ck_assert_int_eq(p.n_correct, hits1);
		}
		r.pool = NULL;
		dt_pool_free(pool);
	}
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

/* Dropout at rate 0.3 over 3 samples of 10001 values (8 blocks), from
 * the rig's odd first sample (5), so the first value is the high half of
 * its word; and at rate 0 (a copy). */
START_TEST(test_dropout_pools)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_DROPOUT);
	struct dt_shape in = shape2(10001, 0);
	struct gc_rig r;

	s.rate = _i ? 0.3 : 0.0;
	gc_init(&r, &gc_node_inputs, &dt_layer_dropout, &s, 1, &in, 3);
	ck_assert_int_eq(r.first_sample & 1, 1);
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

/* A residual add of _i + 2 inputs of 3 x 10000 values. */
START_TEST(test_add_pools)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ADD);
	struct dt_shape in[3] = {
		shape2(100, 100), shape2(100, 100), shape2(100, 100),
	};
	struct gc_rig r;

	gc_init(&r, &gc_node_inputs, &dt_layer_add, &s, (int)_i + 2, in, 3);
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

/* Layer normalisation over (30, 100) per sample, batch 4: 120 rows (grain
 * 32: 4 parts), 100 features (grain 32: 4 parts). */
START_TEST(test_layernorm_pools)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_LAYERNORM);
	struct dt_shape in = shape2(30, 100);
	struct gc_rig r;

	gc_init(&r, &gc_node_inputs, &dt_layer_layernorm, &s, 1, &in, 4);
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

/* The char-GPT job's fc layer: 512 units on (64, 128) per sample, batch
 * 8: 512 rows (the bias broadcast's grain is 8 rows, the products' 32),
 * 512 bias sums (grain 32). Its products split as test_par_sgemm
 * checks. */
START_TEST(test_dense_pools)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_DENSE);
	struct dt_shape in = shape2(64, 128);
	struct gc_rig r;

	s.units = 512;
	gc_init(&r, &gc_node_inputs, &dt_layer_dense, &s, 1, &in, 8);
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

/* A token embedding of 40 wide over 30 ids per sample, batch 4, with
 * every id repeated (the scatter adds into the same rows): 120 tokens
 * (grain 26: 4 parts), 40 columns (grain 16: 3 parts). */
START_TEST(test_embedding_pools)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_EMBEDDING);
	struct dt_shape in = shape2(30, 0);
	struct gc_rig r;

	s.vocab = 13;
	s.dim = 40;
	gc_init(&r, &gc_model_input, &dt_layer_embedding, &s, 1, &in, 4);
	for (int64_t i = 0; i < r.batch * 30; i++)
		r.x[0][i] = (float)((i * 5) % 13);
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

/* A position embedding over (30, 100) per sample, batch 9 (grain 3
 * samples: 3 parts). */
START_TEST(test_pos_embedding_pools)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_POS_EMBEDDING);
	struct dt_shape in = shape2(30, 100);
	struct gc_rig r;

	s.length = 40;
	s.dim = 100;
	gc_init(&r, &gc_node_inputs, &dt_layer_pos_embedding, &s, 1, &in, 9);
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

/* Flatten of (100, 100) per sample, batch 3. */
START_TEST(test_flatten_pools)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_FLATTEN);
	struct dt_shape in = shape2(100, 100);
	struct gc_rig r;

	gc_init(&r, &gc_node_inputs, &dt_layer_flatten, &s, 1, &in, 3);
	same_on_pools(&r);
	gc_free(&r);
}
END_TEST

static Suite *
threads_suite(void)
{
	Suite *s = suite_create("graph_threads");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_par_elementwise);
	tcase_add_test(tc, test_par_columns);
	tcase_add_test(tc, test_par_layernorm);
	tcase_add_loop_test(tc, test_par_sgemm, 0, 10);
	tcase_add_loop_test(tc, test_attention_pools, 0, 4);
	tcase_add_loop_test(tc, test_attention_fused_pools, 0, 4);
	tcase_add_test(tc, test_softmax_xent_pools);
	tcase_add_loop_test(tc, test_dropout_pools, 0, 2);
	tcase_add_loop_test(tc, test_add_pools, 0, 2);
	tcase_add_test(tc, test_layernorm_pools);
	tcase_add_test(tc, test_dense_pools);
	tcase_add_test(tc, test_embedding_pools);
	tcase_add_test(tc, test_pos_embedding_pools);
	tcase_add_test(tc, test_flatten_pools);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(threads_suite());
	int failed;

	/* The one-thread references run on one BLAS thread, as dtrain's
	 * pool products do. */
	dt_kern_set_threads(1);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
