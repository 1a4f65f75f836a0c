/* SPDX-License-Identifier: MIT */
/* test_graph_nlp.c - Check suite for the normalisation, embedding and
 * attention layers of src/graph/ (layernorm.c, batchnorm.c, embedding.c,
 * pos_embedding.c, attention.c): finite-difference gradient checks of the
 * input and every parameter, values computed by hand, the causal mask, FLOP
 * and scratch counts, init from the seed, and shape errors. Each layer is
 * driven alone through its vtable (layer.h) by the rig of gradcheck.c; one
 * test builds a small language model from a hand-made job through
 * graph.h. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "optim/optim.h"
#include "graph/layer.h"
#include "gradcheck.h"
#include "util/alloc.h"
#include "util/threadpool.h"

/* ---- one node on its own (the rig of gradcheck.h) -------------------- */

/* A node of ops with spec on one input of shape dims from the model
 * input; returns infer's status. */
static enum dt_status
rig_try(struct gc_rig *r, const struct dt_layer_ops *ops,
	const struct dt_layer_spec *spec, int n_dims, const int64_t *dims,
	int64_t batch, struct dt_error *err)
{
	struct dt_shape shape = { .n_dims = n_dims };

	for (int d = 0; d < n_dims; d++)
		shape.dim[d] = dims[d];
	return gc_try(r, &gc_model_input, ops, spec, 1, &shape, batch, err);
}

static void
rig_init(struct gc_rig *r, const struct dt_layer_ops *ops,
	 const struct dt_layer_spec *spec, int n_dims, const int64_t *dims,
	 int64_t batch)
{
	struct dt_error err;
	enum dt_status st = rig_try(r, ops, spec, n_dims, dims, batch, &err);

	ck_assert_msg(st == DT_OK, "%s", err.msg);
}

static void
rig_forward(struct gc_rig *r)
{
	struct dt_pass p = gc_pass(r);

	gc_forward(r, &p);
}

/* Float central differences at step eps against backward, for every
 * trained parameter and (with check_input) every input; buffers must keep
 * a zero gradient. Then that din_add adds. Tolerance: atol 1e-3, rtol
 * 1e-2, the usual recipe for float differences, and no error of 1e-2. */
static void
rig_check(struct gc_rig *r, double eps, bool check_input)
{
	gc_check(r, &(struct gc_tol){ .eps = eps, .atol = 1e-3, .rtol = 1e-2,
				      .max_err = 1e-2,
				      .no_input = !check_input });
}

static struct dt_layer_spec
spec_of(enum dt_layer_kind kind, const char *name)
{
	struct dt_layer_spec s;

	memset(&s, 0, sizeof s);
	s.kind = kind;
	snprintf(s.name, sizeof s.name, "%s", name);
	s.eps = 1e-5;
	s.momentum = 0.1;
	s.causal = true;
	s.bias = true;
	return s;
}

/* ---- layernorm -------------------------------------------------------- */

START_TEST(test_layernorm_gradient)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_LAYERNORM, "ln");
	static const int64_t dims[] = { 3, 5 };
	struct gc_rig r;

	rig_init(&r, &dt_layer_layernorm, &s, 2, dims, 2);
	ck_assert_int_eq(r.n.n_tensors, 2);
	ck_assert_int_eq(r.n.n_params, 5 + 5);
	/* A smaller step than elsewhere: the normalisation over 5 values
	 * curves enough that 1e-2 leaves a truncation error of 5e-4. */
	rig_check(&r, 3e-3, true);
	gc_free(&r);
}
END_TEST

START_TEST(test_layernorm_value)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_LAYERNORM, "ln");
	static const int64_t dims[] = { 4 };
	struct gc_rig r;

	rig_init(&r, &dt_layer_layernorm, &s, 1, dims, 1);
	/* Gain 1, bias 0 as initialised; [1,2,3,4]: mean 2.5, biased
	 * variance (2.25+0.25+0.25+2.25)/4 = 1.25, so y = (x - 2.5) /
	 * sqrt(1.25 + 1e-5) = +-1.5/1.1180384, +-0.5/1.1180384. */
	for (int j = 0; j < 4; j++) {
		r.n.tensor[0].data[j] = 1.0f;
		r.n.tensor[1].data[j] = 0.0f;
		r.x[0][j] = (float)(j + 1);
	}
	ck_assert(r.n.tensor[0].init == DT_INIT_ONE);
	ck_assert(r.n.tensor[1].init == DT_INIT_ZERO);
	rig_forward(&r);
	ck_assert_float_eq_tol(r.n.out[0], -1.3416347f, 1e-5f);
	ck_assert_float_eq_tol(r.n.out[1], -0.4472116f, 1e-5f);
	ck_assert_float_eq_tol(r.n.out[2], 0.4472116f, 1e-5f);
	ck_assert_float_eq_tol(r.n.out[3], 1.3416347f, 1e-5f);

	/* Gain and bias apply per feature after the normalisation. */
	r.n.tensor[0].data[3] = 2.0f;
	r.n.tensor[1].data[3] = 0.5f;
	rig_forward(&r);
	ck_assert_float_eq_tol(r.n.out[3], 2.0f * 1.3416347f + 0.5f, 1e-5f);
	gc_free(&r);
}
END_TEST

/* ---- batchnorm -------------------------------------------------------- */

/* 0: (C) input, training; 1: (C, H, W), training; 2: (C, H, W), eval. */
START_TEST(test_batchnorm_gradient)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_BATCHNORM, "bn");
	static const int64_t flat[] = { 3 }, chw[] = { 2, 2, 3 };
	struct gc_rig r;

	if (_i == 0)
		rig_init(&r, &dt_layer_batchnorm, &s, 1, flat, 4);
	else
		rig_init(&r, &dt_layer_batchnorm, &s, 3, chw, 2);
	r.training = _i != 2;
	ck_assert_int_eq(r.n.n_tensors, 4);
	ck_assert(!r.n.tensor[0].buffer && !r.n.tensor[1].buffer);
	ck_assert(r.n.tensor[2].buffer && r.n.tensor[3].buffer);
	/* Running variance must be positive for the eval variant. */
	for (int64_t j = 0; j < r.n.tensor[3].size; j++)
		r.n.tensor[3].data[j] = 0.5f + 0.25f * (float)j;
	rig_check(&r, 1e-2, true);
	for (int t = 2; t < 4; t++)
		for (int64_t j = 0; j < r.n.tensor[t].size; j++)
			ck_assert(r.n.tensor[t].grad[j] == 0.0f);
	gc_free(&r);
}
END_TEST

START_TEST(test_batchnorm_running_stats)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_BATCHNORM, "bn");
	static const int64_t flat[] = { 2 }, chw[] = { 1, 1, 2 };
	static const float x_flat[] = { 1, 2, 2, 2, 3, 2, 4, 2 };	/* (4, 2) */
	static const float x_chw[] = { 1, 2, 3, 4 };	/* (2, 1, 1, 2) */
	struct gc_rig r;

	/* (C) input, B = 4: feature 0 takes 1, 2, 3, 4: mean 2.5, biased
	 * variance 1.25, unbiased 5/3; feature 1 is constant 2. With
	 * momentum 0.1 from (0, 1): running_mean = 0.1 * 2.5 = 0.25 and
	 * 0.1 * 2 = 0.2; running_var = 0.9 + 0.1 * 5/3 = 1.0666667 and
	 * 0.9 + 0 = 0.9. */
	rig_init(&r, &dt_layer_batchnorm, &s, 1, flat, 4);
	for (int j = 0; j < 2; j++) {
		r.n.tensor[0].data[j] = 1.0f;
		r.n.tensor[1].data[j] = 0.0f;
		r.n.tensor[2].data[j] = 0.0f;
		r.n.tensor[3].data[j] = 1.0f;
	}
	memcpy(r.x[0], x_flat, sizeof x_flat);
	rig_forward(&r);
	ck_assert_float_eq_tol(r.n.tensor[2].data[0], 0.25f, 1e-6f);
	ck_assert_float_eq_tol(r.n.tensor[2].data[1], 0.2f, 1e-6f);
	ck_assert_float_eq_tol(r.n.tensor[3].data[0], 1.0666667f, 1e-6f);
	ck_assert_float_eq_tol(r.n.tensor[3].data[1], 0.9f, 1e-6f);
	/* The batch itself is normalised with the biased variance. */
	ck_assert_float_eq_tol(r.n.out[0], -1.3416347f, 1e-5f);
	ck_assert_float_eq_tol(r.n.out[6], 1.3416347f, 1e-5f);
	ck_assert_float_eq_tol(r.n.out[1], 0.0f, 1e-6f);

	/* Evaluation uses the running statistics and leaves them alone:
	 * (1 - 0.25) / sqrt(1.0666667 + 1e-5) = 0.7261877. */
	r.training = false;
	rig_forward(&r);
	ck_assert_float_eq_tol(r.n.out[0], 0.7261877f, 1e-5f);
	ck_assert_float_eq_tol(r.n.out[1], (2.0f - 0.2f) / sqrtf(0.90001f),
			       1e-5f);
	ck_assert_float_eq_tol(r.n.tensor[2].data[0], 0.25f, 1e-6f);
	ck_assert_float_eq_tol(r.n.tensor[3].data[0], 1.0666667f, 1e-6f);

	/* A second training step compounds: 0.9 * 0.25 + 0.1 * 2.5. */
	r.training = true;
	rig_forward(&r);
	ck_assert_float_eq_tol(r.n.tensor[2].data[0], 0.475f, 1e-6f);
	ck_assert_float_eq_tol(r.n.tensor[3].data[0],
			       0.9f * 1.0666667f + 0.1f * (5.0f / 3.0f),
			       1e-6f);
	gc_free(&r);

	/* (C, H, W) = (1, 1, 2), B = 2: one channel over B*H*W = 4 values,
	 * the same 1, 2, 3, 4, so the same statistics. */
	rig_init(&r, &dt_layer_batchnorm, &s, 3, chw, 2);
	r.n.tensor[0].data[0] = 1.0f;
	r.n.tensor[1].data[0] = 0.0f;
	r.n.tensor[2].data[0] = 0.0f;
	r.n.tensor[3].data[0] = 1.0f;
	memcpy(r.x[0], x_chw, sizeof x_chw);
	rig_forward(&r);
	ck_assert_float_eq_tol(r.n.tensor[2].data[0], 0.25f, 1e-6f);
	ck_assert_float_eq_tol(r.n.tensor[3].data[0], 1.0666667f, 1e-6f);
	ck_assert_float_eq_tol(r.n.out[3], 1.3416347f, 1e-5f);
	gc_free(&r);
}
END_TEST

/* ---- embeddings ------------------------------------------------------- */

START_TEST(test_embedding_gradient)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_EMBEDDING, "wte");
	static const int64_t dims[] = { 5 };
	struct gc_rig r;

	s.vocab = 7;
	s.dim = 3;
	rig_init(&r, &dt_layer_embedding, &s, 1, dims, 2);
	ck_assert_int_eq(r.n.out_shape.n_dims, 2);
	ck_assert_int_eq(r.n.out_shape.dim[0], 5);
	ck_assert_int_eq(r.n.out_shape.dim[1], 3);
	/* Ids with repeats (3 appears three times), rows 0 and 6 used. */
	static const float ids[] = { 3, 0, 3, 6, 1, 3, 2, 2, 5, 0 };

	memcpy(r.x[0], ids, sizeof ids);
	rig_check(&r, 1e-2, false);

	/* Lookup: output rows are weight rows. */
	rig_forward(&r);
	for (int t = 0; t < 10; t++)
		ck_assert(memcmp(r.n.out + t * 3,
				 r.n.tensor[0].data + (int)ids[t] * 3,
				 3 * sizeof(float)) == 0);
	/* Row 4 is never used: no gradient; ids get zeros upstream. */
	for (int64_t i = 0; i < 10; i++)
		r.dx[0][i] = 7.0f;
	gc_backward(&r, true, false);
	for (int j = 0; j < 3; j++)
		ck_assert(r.n.tensor[0].grad[4 * 3 + j] == 0.0f);
	for (int64_t i = 0; i < 10; i++)
		ck_assert(r.dx[0][i] == 0.0f);
	gc_free(&r);
}
END_TEST

#ifdef NDEBUG
/* Without assertions, an id outside [0, vocab) (a bug upstream: the data
 * loader checks ids) gives a zero row and no gradient, and reads nothing
 * outside the table; a debug build stops at the assertion instead. */
START_TEST(test_embedding_bad_ids)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_EMBEDDING, "wte");
	static const int64_t dims[] = { 4 };
	static const float ids[] = { 1, -1, 5, NAN };
	struct gc_rig r;

	s.vocab = 5;
	s.dim = 2;
	rig_init(&r, &dt_layer_embedding, &s, 1, dims, 1);
	memcpy(r.x[0], ids, sizeof ids);
	gc_backward(&r, false, false);
	for (int t = 1; t < 4; t++)
		for (int j = 0; j < 2; j++)
			ck_assert(r.n.out[t * 2 + j] == 0.0f);
	for (int64_t i = 0; i < r.n.n_params; i++)
		ck_assert(r.grads[i] == (i / 2 == 1 ? r.g[i - 2] : 0.0f));
	gc_free(&r);
}
END_TEST
#endif

START_TEST(test_pos_embedding_gradient)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_POS_EMBEDDING, "wpe");
	static const int64_t dims[] = { 3, 4 };
	struct gc_rig r;

	s.length = 5;
	s.dim = 4;
	rig_init(&r, &dt_layer_pos_embedding, &s, 2, dims, 2);
	ck_assert_int_eq(r.n.tensor[0].shape[0], 5);
	ck_assert_int_eq(r.n.tensor[0].shape[1], 4);
	rig_check(&r, 1e-2, true);
	/* y = x + P[t]; positions 3 and 4 are not reached at T = 3. */
	gc_backward(&r, true, false);
	for (int j = 0; j < 4; j++) {
		ck_assert_float_eq_tol(r.n.out[1 * 4 + j],
				       r.x[0][1 * 4 + j] +
				       r.n.tensor[0].data[1 * 4 + j], 1e-7f);
		ck_assert_float_eq_tol(r.n.out[12 + 2 * 4 + j],
				       r.x[0][12 + 2 * 4 + j] +
				       r.n.tensor[0].data[2 * 4 + j], 1e-7f);
	}
	for (int j = 3 * 4; j < 5 * 4; j++)
		ck_assert(r.n.tensor[0].grad[j] == 0.0f);
	gc_free(&r);
}
END_TEST

/* ---- attention -------------------------------------------------------- */

/* _i: bit 0 causal, bit 1 bias. Two heads, T = 3, C = 4, B = 2. */
START_TEST(test_attention_gradient)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION, "attn");
	static const int64_t dims[] = { 3, 4 };
	struct gc_rig r;

	s.heads = 2;
	s.causal = (_i & 1) != 0;
	s.bias = (_i & 2) != 0;
	rig_init(&r, &dt_layer_attention, &s, 2, dims, 2);
	ck_assert_int_eq(r.n.n_tensors, s.bias ? 4 : 2);
	ck_assert_int_eq(r.n.n_params,
			 4 * 12 + 4 * 4 + (s.bias ? 12 + 4 : 0));
	rig_check(&r, 1e-2, true);
	gc_free(&r);
}
END_TEST

/* At a size where OpenBLAS takes its blocked kernels (T = 33, C = 64, 4
 * heads, B = 3), checking every element would take long: compare the
 * derivative along one random direction through all parameters and inputs
 * at once with its central difference, at a smaller step than the
 * per-element checks since it moves every value together. _i: causal. */
START_TEST(test_attention_directional)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION, "attn");
	static const int64_t dims[] = { 33, 64 };
	struct gc_rig r;
	int64_t n_in, n_par;
	float *dir, *p0, *x0, *dx;
	double analytic = 0.0, up, down;
	const double eps = 3e-3;

	s.heads = 4;
	s.causal = _i != 0;
	rig_init(&r, &dt_layer_attention, &s, 2, dims, 3);
	n_in = r.batch * r.n.in_size[0];
	n_par = r.n.n_params;
	/* Weights of the usual scale keep the softmax away from one-hot. */
	for (int64_t i = 0; i < n_par; i++)
		r.params[i] *= 0.2f;
	dir = dt_xalloc_floats((size_t)(n_par + n_in));
	p0 = dt_xalloc_floats((size_t)n_par);
	x0 = dt_xalloc_floats((size_t)n_in);
	dx = dt_xalloc_floats((size_t)n_in);
	gc_fill_uniform(dir, n_par + n_in, 4);
	memcpy(p0, r.params, (size_t)n_par * sizeof(float));
	memcpy(x0, r.x[0], (size_t)n_in * sizeof(float));

	gc_backward(&r, true, false);
	memcpy(dx, r.dx[0], (size_t)n_in * sizeof(float));
	for (int64_t i = 0; i < n_par; i++)
		analytic += (double)r.grads[i] * dir[i];
	for (int64_t i = 0; i < n_in; i++)
		analytic += (double)dx[i] * dir[n_par + i];
	for (int sign = 1; sign >= -1; sign -= 2) {
		for (int64_t i = 0; i < n_par; i++)
			r.params[i] = p0[i] + (float)(sign * eps) * dir[i];
		for (int64_t i = 0; i < n_in; i++)
			r.x[0][i] = x0[i] + (float)(sign * eps) * dir[n_par + i];
		if (sign > 0)
			up = gc_objective(&r);
		else
			down = gc_objective(&r);
	}
	/* Observed relative error 3e-5; a softmax Jacobian off by 10% in
	 * its row sum moves the causal case by 2e-4. */
	if (!gc_close_enough(analytic, (up - down) / (2.0 * eps), 1e-3, 1e-4))
		ck_abort_msg("directional derivative: backward %g, numeric "
			     "%g", analytic, (up - down) / (2.0 * eps));
	free(dir);
	free(p0);
	free(x0);
	free(dx);
	gc_free(&r);
}
END_TEST

/* With one position the softmax is 1: out = (x W_v + b_v) W_o + b_o, W_v
 * the last C columns of qkv_weight. */
START_TEST(test_attention_one_position)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION, "attn");
	static const int64_t dims[] = { 1, 4 };
	const int c = 4;
	struct gc_rig r;

	s.heads = 2;
	s.causal = _i != 0;
	rig_init(&r, &dt_layer_attention, &s, 2, dims, 3);
	rig_forward(&r);

	const float *wqkv = r.n.tensor[0].data, *bqkv = r.n.tensor[1].data;
	const float *wo = r.n.tensor[2].data, *bo = r.n.tensor[3].data;

	ck_assert_str_eq(r.n.tensor[0].name, "qkv_weight");
	ck_assert_str_eq(r.n.tensor[3].name, "proj_bias");
	for (int b = 0; b < 3; b++) {
		double v[4];

		for (int j = 0; j < c; j++) {
			v[j] = bqkv[2 * c + j];
			for (int i = 0; i < c; i++)
				v[j] += (double)r.x[0][b * c + i] *
					wqkv[i * 3 * c + 2 * c + j];
		}
		for (int j = 0; j < c; j++) {
			double out = bo[j];

			for (int i = 0; i < c; i++)
				out += v[i] * wo[i * c + j];
			ck_assert_double_eq_tol(r.n.out[b * c + j], out, 1e-5);
		}
	}
	gc_free(&r);
}
END_TEST

/* Causal: the output at t does not move when inputs after t change; the
 * unmasked layer's does (the test can see a leak). */
START_TEST(test_attention_causal)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION, "attn");
	static const int64_t dims[] = { 5, 4 };
	const int t_len = 5, c = 4, batch = 2, size = t_len * c;
	float *base, *x0;
	struct gc_rig r;

	s.heads = 2;
	s.causal = true;
	rig_init(&r, &dt_layer_attention, &s, 2, dims, batch);
	base = dt_xalloc_floats((size_t)(batch * size));
	x0 = dt_xalloc_floats((size_t)(batch * size));
	memcpy(x0, r.x[0], (size_t)(batch * size) * sizeof(float));
	rig_forward(&r);
	memcpy(base, r.n.out, (size_t)(batch * size) * sizeof(float));
	for (int t = 0; t < t_len - 1; t++) {
		memcpy(r.x[0], x0, (size_t)(batch * size) * sizeof(float));
		for (int b = 0; b < batch; b++)
			for (int i = (t + 1) * c; i < size; i++)
				r.x[0][b * size + i] += 3.0f;
		rig_forward(&r);
		for (int b = 0; b < batch; b++) {
			for (int i = 0; i < (t + 1) * c; i++)
				ck_assert_float_eq_tol(r.n.out[b * size + i],
						       base[b * size + i],
						       1e-6f);
			ck_assert(fabsf(r.n.out[b * size + size - 1] -
					base[b * size + size - 1]) > 1e-4f);
		}
	}
	gc_free(&r);

	s.causal = false;
	rig_init(&r, &dt_layer_attention, &s, 2, dims, batch);
	rig_forward(&r);
	memcpy(base, r.n.out, (size_t)(batch * size) * sizeof(float));
	for (int i = (t_len - 1) * c; i < size; i++)
		r.x[0][i] += 3.0f;
	rig_forward(&r);
	ck_assert(fabsf(r.n.out[0] - base[0]) > 1e-4f);
	gc_free(&r);
	free(base);
	free(x0);
}
END_TEST

/* The attention forward against a plain double-precision reference at
 * T = 20 (past one causal tile of 16 and not a multiple of it), C = 6,
 * B = 2, then the finite-difference check: _i bit 0 causal, bit 1 three
 * heads (else one). */
START_TEST(test_attention_reference)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION, "attn");
	static const int64_t dims[] = { 20, 6 };
	enum { T = 20, C = 6, B = 2 };
	const int heads = (_i & 2) ? 3 : 1, hs = C / heads;
	double qkv[T][3 * C], y[T][C], sc[T];
	struct gc_rig r;

	s.heads = heads;
	s.causal = (_i & 1) != 0;
	rig_init(&r, &dt_layer_attention, &s, 2, dims, B);
	rig_forward(&r);

	const float *wqkv = r.n.tensor[0].data, *bqkv = r.n.tensor[1].data;
	const float *wo = r.n.tensor[2].data, *bo = r.n.tensor[3].data;

	for (int b = 0; b < B; b++) {
		const float *x = r.x[0] + b * T * C;

		for (int t = 0; t < T; t++)
			for (int j = 0; j < 3 * C; j++) {
				qkv[t][j] = bqkv[j];
				for (int i = 0; i < C; i++)
					qkv[t][j] += (double)x[t * C + i] *
						     wqkv[i * 3 * C + j];
			}
		for (int h = 0; h < heads; h++)
			for (int t = 0; t < T; t++) {
				int valid = s.causal ? t + 1 : T;
				double max = -INFINITY, sum = 0.0;

				for (int u = 0; u < valid; u++) {
					sc[u] = 0.0;
					for (int d = 0; d < hs; d++)
						sc[u] += qkv[t][h * hs + d] *
							 qkv[u][C + h * hs + d];
					sc[u] /= sqrt((double)hs);
					max = fmax(max, sc[u]);
				}
				for (int u = 0; u < valid; u++) {
					sc[u] = exp(sc[u] - max);
					sum += sc[u];
				}
				for (int d = 0; d < hs; d++) {
					y[t][h * hs + d] = 0.0;
					for (int u = 0; u < valid; u++)
						y[t][h * hs + d] +=
							sc[u] / sum *
							qkv[u][2 * C + h * hs + d];
				}
			}
		for (int t = 0; t < T; t++)
			for (int j = 0; j < C; j++) {
				double out = bo[j];

				for (int i = 0; i < C; i++)
					out += y[t][i] * wo[i * C + j];
				ck_assert_msg(gc_close_enough(r.n.out[(b * T + t) *
								   C + j],
							   out, 1e-6, 1e-5),
					      "b %d t %d j %d: %g vs %g", b, t,
					      j, (double)r.n.out[(b * T + t) *
								 C + j], out);
			}
	}
	rig_check(&r, 1e-2, true);
	gc_free(&r);
}
END_TEST

/* ---- fused attention (model.attention: fused; flash.c) --------------- */

/* r's node switched to the fused heads, its scratch sized for them. */
static void
rig_fuse(struct gc_rig *r)
{
	r->n.attn_fused = true;
	free(r->n.scratch);
	r->n.scratch = dt_xalloc_floats((size_t)(r->batch *
					r->n.ops->scratch_floats(&r->n)));
}

/* The largest |a - b| over n values, relative to the largest |b|. */
static double
max_rel_diff(const float *a, const float *b, int64_t n)
{
	double most = 0.0, big = 1e-30;

	for (int64_t i = 0; i < n; i++) {
		most = fmax(most, fabs((double)a[i] - b[i]));
		big = fmax(big, fabs((double)b[i]));
	}
	return most / big;
}

/* Fused against materialized on the same weights, inputs and upstream
 * gradient: the output, every parameter gradient and the input gradient
 * agree to 1e-5 of each array's largest value (observed forward: 4e-7
 * or less; the two paths sum the softmax in another order; without the
 * online softmax's rescale it is 2e-3 to 0.17). T is past one
 * tile of 64 and not a multiple of it. _i: bit 0 causal; bit 1 T = 150,
 * C = 128, 2 heads (hs 64, three tiles), else T = 100, C = 12, 3
 * heads (two tiles). */
START_TEST(test_attention_fused_equal)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION, "attn");
	const int64_t big[] = { 150, 128 }, small[] = { 100, 12 };
	const int64_t *dims = (_i & 2) ? big : small;
	struct gc_rig m, f;
	int64_t n_out, n_in;
	double e;

	s.heads = (_i & 2) ? 2 : 3;
	s.causal = (_i & 1) != 0;
	rig_init(&m, &dt_layer_attention, &s, 2, dims, 2);
	rig_init(&f, &dt_layer_attention, &s, 2, dims, 2);
	rig_fuse(&f);
	ck_assert(f.n.scratch != NULL && !m.n.attn_fused);
	/* weights of the usual scale keep the softmax away from one-hot */
	for (int64_t i = 0; i < m.n.n_params; i++) {
		m.params[i] *= 0.2f;
		f.params[i] *= 0.2f;
	}
	n_out = m.batch * m.n.out_size;
	n_in = m.batch * m.n.in_size[0];
	rig_forward(&m);
	rig_forward(&f);
	e = max_rel_diff(f.n.out, m.n.out, n_out);
	ck_assert_msg(e < 1e-5, "forward differs by %g", e);
	gc_backward(&m, true, false);
	gc_backward(&f, true, false);
	e = max_rel_diff(f.dx[0], m.dx[0], n_in);
	ck_assert_msg(e < 1e-5, "input gradient differs by %g", e);
	for (int k = 0; k < m.n.n_tensors; k++) {
		e = max_rel_diff(f.n.tensor[k].grad, m.n.tensor[k].grad,
				 m.n.tensor[k].size);
		ck_assert_msg(e < 1e-5, "%s gradient differs by %g",
			      m.n.tensor[k].name, e);
	}
	gc_free(&m);
	gc_free(&f);
}
END_TEST

/* The fused backward against central differences of every parameter and
 * input: T = 70 (two tiles, the second partly masked), C = 6, 3 heads,
 * B = 2. _i: causal. */
START_TEST(test_attention_fused_gradient)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION, "attn");
	static const int64_t dims[] = { 70, 6 };
	struct gc_rig r;

	s.heads = 3;
	s.causal = _i != 0;
	rig_init(&r, &dt_layer_attention, &s, 2, dims, 2);
	rig_fuse(&r);
	rig_check(&r, 1e-2, true);
	gc_free(&r);
}
END_TEST

/* The fused heads split the samples over a pool of 3 threads: the same
 * output and gradients, bit for bit, as on the calling thread alone
 * (B = 5, T = 70, C = 12, 3 heads, causal). */
START_TEST(test_attention_fused_threads)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION, "attn");
	static const int64_t dims[] = { 70, 12 };
	struct gc_rig one, three;

	s.heads = 3;
	rig_init(&one, &dt_layer_attention, &s, 2, dims, 5);
	rig_init(&three, &dt_layer_attention, &s, 2, dims, 5);
	rig_fuse(&one);
	rig_fuse(&three);
	three.pool = dt_pool_new(3);
	gc_backward(&one, true, false);
	gc_backward(&three, true, false);
	ck_assert(memcmp(one.n.out, three.n.out, (size_t)(5 * one.n.out_size) *
			 sizeof(float)) == 0);
	ck_assert(memcmp(one.dx[0], three.dx[0], (size_t)(5 *
			 one.n.in_size[0]) * sizeof(float)) == 0);
	ck_assert(memcmp(one.grads, three.grads, (size_t)one.n.n_params *
			 sizeof(float)) == 0);
	dt_pool_free(three.pool);
	gc_free(&one);
	gc_free(&three);
}
END_TEST

/* The fused scratch per sample: qkv 3*T*C, y and dy 2*T*C, lse h*T, D T
 * and the tile buffer 2*64*hs. T = 3, C = 4, h = 2: 36 + 24 + 6 + 3 +
 * 256 = 325. T = 2048, C = 768, h = 12 (GPT-2 small): 7864320 + 26624 +
 * 8192 = 7899136, against 4*T*C + 13*T*T = 60817408 materialized. The
 * FLOPs forward are the materialized ones; the backward adds the scores
 * and softmax again: 2*3*3*4 + 5*2*3*3 = 162. */
START_TEST(test_attention_fused_counts)
{
	struct dt_layer_spec s = spec_of(DT_LAYER_ATTENTION, "attn");
	static const int64_t tc[] = { 3, 4 }, gpt[] = { 2048, 768 };
	struct gc_rig r;

	s.heads = 2;
	rig_init(&r, &dt_layer_attention, &s, 2, tc, 1);
	r.n.attn_fused = true;
	ck_assert_int_eq(r.n.ops->scratch_floats(&r.n), 325);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 666.0);
	ck_assert_double_eq(r.n.ops->recompute_flops(&r.n), 162.0);
	gc_free(&r);
	/* counts only read the shapes: no rig of 240 MB */
	s.heads = 12;
	memset(&r.n, 0, sizeof r.n);
	r.n.spec = s;
	r.n.in_shape[0] = (struct dt_shape){ .n_dims = 2,
					     .dim = { gpt[0], gpt[1] } };
	ck_assert_int_eq(dt_layer_attention.scratch_floats(&r.n), 60817408);
	r.n.attn_fused = true;
	ck_assert_int_eq(dt_layer_attention.scratch_floats(&r.n), 7899136);
}
END_TEST

/* ---- counts, init, errors --------------------------------------------- */

START_TEST(test_flops_and_scratch)
{
	struct dt_layer_spec s;
	static const int64_t tc[] = { 3, 4 }, t5[] = { 3, 5 }, t3[] = { 3 },
			     chw[] = { 2, 3, 3 };
	struct gc_rig r;

	/* attention T = 3, C = 4, h = 2: projections 2*3*4*12 + 2*3*4*4 =
	 * 384, biases 3*3*4 + 3*4 = 48, scores 2*3*3*4 = 72, softmax
	 * 5*2*3*3 = 90, weighted sum 72: 666, 618 without biases. Scratch
	 * qkv 36 + att 2*9 + y 12 + ds 9 = 75 floats per sample. */
	s = spec_of(DT_LAYER_ATTENTION, "attn");
	s.heads = 2;
	rig_init(&r, &dt_layer_attention, &s, 2, tc, 1);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 666.0);
	ck_assert_int_eq(r.n.ops->scratch_floats(&r.n), 75);
	gc_free(&r);
	s.bias = false;
	rig_init(&r, &dt_layer_attention, &s, 2, tc, 1);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 618.0);
	gc_free(&r);

	/* layernorm (3, 5): 8 per element = 120; mean and rstd of 3 rows. */
	s = spec_of(DT_LAYER_LAYERNORM, "ln");
	rig_init(&r, &dt_layer_layernorm, &s, 2, t5, 1);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 120.0);
	ck_assert_int_eq(r.n.ops->scratch_floats(&r.n), 6);
	gc_free(&r);

	/* batchnorm (2, 3, 3): 8 per element = 144, no scratch. */
	s = spec_of(DT_LAYER_BATCHNORM, "bn");
	rig_init(&r, &dt_layer_batchnorm, &s, 3, chw, 1);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 144.0);
	ck_assert(r.n.ops->scratch_floats == NULL);
	gc_free(&r);

	/* embedding T = 3 -> (3, 5): 15; pos_embedding (3, 5): 15. */
	s = spec_of(DT_LAYER_EMBEDDING, "wte");
	s.vocab = 10;
	s.dim = 5;
	rig_init(&r, &dt_layer_embedding, &s, 1, t3, 1);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 15.0);
	gc_free(&r);
	s = spec_of(DT_LAYER_POS_EMBEDDING, "wpe");
	s.length = 8;
	s.dim = 5;
	rig_init(&r, &dt_layer_pos_embedding, &s, 2, t5, 1);
	ck_assert_double_eq(r.n.ops->fwd_flops(&r.n), 15.0);
	gc_free(&r);
}
END_TEST

/* Sample standard deviation of a. */
static double
std_of(const float *a, int64_t n)
{
	double sum = 0.0, sum2 = 0.0;

	for (int64_t i = 0; i < n; i++) {
		sum += a[i];
		sum2 += (double)a[i] * a[i];
	}
	return sqrt(sum2 / (double)n - (sum / (double)n) * (sum / (double)n));
}

/* The embeddings and the attention declare N(0, 0.02^2) for their weights
 * (their `auto` init, graph/init.c) and zero attention biases; the draw
 * of such a tensor is keyed by (seed, tensor index): the same key gives
 * the same bits, another seed or index other bits. Only the attention's
 * output projection is an output matrix (GPT-2's residual scaling). */
START_TEST(test_init)
{
	const struct dt_layer_ops *ops[] = {
		&dt_layer_embedding, &dt_layer_pos_embedding,
		&dt_layer_attention,
	};
	struct dt_layer_spec s[3] = {
		spec_of(DT_LAYER_EMBEDDING, "wte"),
		spec_of(DT_LAYER_POS_EMBEDDING, "wpe"),
		spec_of(DT_LAYER_ATTENTION, "attn"),
	};
	static const int64_t ids[] = { 8 }, tc[] = { 8, 32 };

	s[0].vocab = 100;
	s[0].dim = 50;
	s[1].length = 64;
	s[1].dim = 32;
	s[2].heads = 4;
	for (int k = 0; k < 3; k++) {
		struct gc_rig r;

		rig_init(&r, ops[k], &s[k], k == 0 ? 1 : 2,
			 k == 0 ? ids : tc, 1);
		for (int t = 0; t < r.n.n_tensors; t++) {
			struct dt_param_tensor *pt = &r.n.tensor[t];
			size_t bytes = (size_t)pt->size * sizeof(float);
			float *first;

			ck_assert_int_eq(pt->out_proj,
					 strcmp(pt->name, "proj_weight") == 0);
			if (pt->n_dims == 1) {
				ck_assert_int_eq(pt->init, DT_INIT_ZERO);
				continue;
			}
			ck_assert_int_eq(pt->init, DT_INIT_NORMAL);
			ck_assert(pt->std == 0.02f);
			first = dt_xalloc_floats((size_t)pt->size);
			dt_param_init_normal(pt, pt->std, 42, 7);
			memcpy(first, pt->data, bytes);
			gc_fill_uniform(pt->data, pt->size, 9);
			dt_param_init_normal(pt, pt->std, 42, 7);
			ck_assert(memcmp(first, pt->data, bytes) == 0);
			dt_param_init_normal(pt, pt->std, 43, 7);
			ck_assert(memcmp(first, pt->data, bytes) != 0);
			dt_param_init_normal(pt, pt->std, 42, 8);
			ck_assert(memcmp(first, pt->data, bytes) != 0);
			dt_param_init_normal(pt, pt->std, 42, 7);
			ck_assert_double_eq_tol(std_of(pt->data, pt->size),
						0.02, 0.002);
			free(first);
		}
		gc_free(&r);
	}
}
END_TEST

static void
expect_error(const struct dt_layer_ops *ops, const struct dt_layer_spec *s,
	     int n_dims, const int64_t *dims, const char *needle)
{
	struct dt_error err;
	struct gc_rig r;

	ck_assert_int_eq(rig_try(&r, ops, s, n_dims, dims, 1, &err),
			 DT_ERR_JOB);
	if (strstr(err.msg, needle) == NULL)
		ck_abort_msg("expected \"%s\" in \"%s\"", needle, err.msg);
}

START_TEST(test_errors)
{
	struct dt_layer_spec s;
	static const int64_t tc[] = { 3, 4 }, t3[] = { 3 },
			     four[] = { 1, 2, 3, 4 };

	s = spec_of(DT_LAYER_ATTENTION, "attn");
	s.heads = 3;
	s.pos.line = 12;
	s.pos.col = 7;
	expect_error(&dt_layer_attention, &s, 2, tc,
		     "rig.yaml:12:7: model.layers.0 (attn): heads must be "
		     ">= 1 and divide the input width 4, found 3");
	s.heads = 2;
	expect_error(&dt_layer_attention, &s, 1, t3, "(T, C) input");

	s = spec_of(DT_LAYER_POS_EMBEDDING, "wpe");
	s.length = 2;
	expect_error(&dt_layer_pos_embedding, &s, 2, tc,
		     "model.layers.0 (wpe): the input has 3 positions but "
		     "length is 2");
	s.length = 3;
	s.dim = 5;
	expect_error(&dt_layer_pos_embedding, &s, 2, tc,
		     "dim is 5 but the input is 4 wide");

	s = spec_of(DT_LAYER_EMBEDDING, "wte");
	s.vocab = (1 << 24) + 1;
	s.dim = 4;
	expect_error(&dt_layer_embedding, &s, 1, t3, "vocab must be in");
	s.vocab = 10;
	s.dim = 0;
	expect_error(&dt_layer_embedding, &s, 1, t3, "dim must be >= 1");

	s = spec_of(DT_LAYER_LAYERNORM, "ln");
	s.eps = 0.0;
	expect_error(&dt_layer_layernorm, &s, 2, tc, "eps must be > 0");

	s = spec_of(DT_LAYER_BATCHNORM, "bn");
	s.momentum = 1.5;
	expect_error(&dt_layer_batchnorm, &s, 1, t3, "momentum must be in");
	s.momentum = 0.1;
	expect_error(&dt_layer_batchnorm, &s, 4, four, "found 4 axes");
	expect_error(&dt_layer_batchnorm, &s, 2, tc, "use layernorm");
}
END_TEST

/* ---- a small language model through graph.h -------------------------- */

/* input (T = 4 token ids) -> embedding (vocab 11, dim 8) -> pos_embedding
 * (length 6) -> layernorm -> attention (2 heads, causal) -> dense 11 on
 * each position -> softmax cross-entropy per token. */
static struct dt_job *
make_lm_job(uint64_t seed)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	static const enum dt_layer_kind kinds[] = {
		DT_LAYER_EMBEDDING, DT_LAYER_POS_EMBEDDING, DT_LAYER_LAYERNORM,
		DT_LAYER_ATTENTION, DT_LAYER_DENSE,
	};
	static const char *const names[] = { "wte", "wpe", "ln", "attn",
					     "head" };

	snprintf(job->path, sizeof job->path, "lm.yaml");
	job->seed = seed;
	job->model.n_input_dims = 1;
	job->model.input_shape[0] = 4;
	job->model.n_layers = 5;
	job->model.loss = DT_LOSS_SOFTMAX_CROSS_ENTROPY;
	for (int i = 0; i < 5; i++) {
		struct dt_layer_spec *l = &job->model.layers[i];

		*l = spec_of(kinds[i], names[i]);
		l->pos.line = 10 + i;
		l->pos.col = 5;
	}
	job->model.layers[0].vocab = 11;
	job->model.layers[0].dim = 8;
	job->model.layers[1].length = 6;
	job->model.layers[1].dim = 8;
	job->model.layers[3].heads = 2;
	job->model.layers[4].units = 11;
	return job;
}

START_TEST(test_lm_model)
{
	struct dt_job *job = make_lm_job(5);
	struct dt_model *m = NULL, *again = NULL;
	struct dt_tensor_info ti;
	struct dt_error err;
	static const float x[] = { 1, 5, 10, 0, 3, 3, 7, 2 };	/* (2, 4) */
	static const int32_t labels[] = { 4, 9, 0, 1, 3, 7, 2, 10 }; /* (2, 4) */
	static const char *const tensors[] = {
		"wte.weight", "wpe.weight", "ln.weight", "ln.bias",
		"attn.qkv_weight", "attn.qkv_bias", "attn.proj_weight",
		"attn.proj_bias", "head.weight", "head.bias",
	};
	double loss;
	size_t n;

	if (dt_model_new(job, 2, &m, &err) != DT_OK)
		ck_abort_msg("%s", err.msg);
	ck_assert_int_eq(dt_model_n_tensors(m), 10);
	for (int i = 0; i < 10; i++) {
		char full[160];

		dt_model_tensor_info(m, i, &ti);
		snprintf(full, sizeof full, "%s.%s", ti.node, ti.name);
		ck_assert_str_eq(full, tensors[i]);
	}
	n = dt_model_n_params(m);
	ck_assert_uint_eq(n, 11 * 8 + 6 * 8 + 8 + 8 + 8 * 24 + 24 + 8 * 8 +
			     8 + 8 * 11 + 11);
	ck_assert_int_eq(dt_model_n_classes(m), 11);
	ck_assert_int_eq(dt_model_labels_per_sample(m), 4);
	/* Activations per sample: output and output gradient of wte, wpe,
	 * ln, attn (32 each: 256) and head (4*11: 88), the loss output (44),
	 * and scratch: layernorm 2*4 rows, attention 4*4*8 + 3*4*4 = 176. */
	ck_assert_int_eq(dt_model_act_floats_per_sample(m),
			 256 + 88 + 44 + 8 + 176);

	/* The same seed gives the same model. */
	ck_assert_int_eq(dt_model_new(job, 2, &again, &err), DT_OK);
	ck_assert(memcmp(dt_model_params(m), dt_model_params(again),
			 n * sizeof(float)) == 0);
	dt_model_free(again);

	/* Whole-model gradient of the summed loss against central
	 * differences on every 5th parameter (except the embedding rows no id
	 * selects, which have no gradient and nothing to check). */
	dt_model_zero_grads(m);
	dt_model_train_step(m, x, labels, 2, 1.0f, &loss, NULL);
	ck_assert(isfinite(loss));
	ck_assert_int_eq(gc_model_check(m, x, labels, NULL, 2,
					&(struct gc_model_tol){
						.eps = 1e-2, .atol = 1e-3,
						.rtol = 1e-2, .stride = 5,
						.sum = true }, NULL), 0);
	dt_model_free(m);
	free(job);
}
END_TEST

/* Tied weights (`tie:`, graph/tied.c): the lm model with its head tied to
 * wte. The head's weight is a copy of the table, (11, 8), with the same
 * bits after init; the parameter count leaves it out; each gradient
 * matches central differences of its own floats (the head's transposed
 * products and the embedding's scatter), and their sum, the gradient
 * the sync gives the one tensor, matches central differences of the
 * loss when the table and its copy move together, as one tensor does. */
START_TEST(test_tied_model)
{
	struct dt_job *job = make_lm_job(7);
	struct dt_model *m = NULL;
	struct dt_tie_info tie;
	struct dt_tensor_info ti;
	struct dt_error err;
	static const float x[] = { 1, 5, 10, 0, 3, 3, 7, 2 };	/* (2, 4) */
	static const int32_t labels[] = { 4, 9, 0, 1, 3, 7, 2, 10 }; /* (2, 4) */
	double loss, up, down;
	int bad = 0;

	snprintf(job->model.layers[4].tie, sizeof job->model.layers[4].tie,
		 "wte");
	if (dt_model_new(job, 2, &m, &err) != DT_OK)
		ck_abort_msg("%s", err.msg);
	ck_assert_int_eq(dt_model_n_ties(m), 1);
	dt_model_tie_info(m, 0, &tie);
	ck_assert_int_eq(tie.size, 11 * 8);
	dt_model_tensor_info(m, tie.copy_tensor, &ti);
	ck_assert_str_eq(ti.node, "head");
	ck_assert_str_eq(ti.tie_node, "wte");
	ck_assert_int_eq(ti.shape[0], 11);	/* (vocab, dim), as wte */
	ck_assert_int_eq(ti.shape[1], 8);
	dt_model_tensor_info(m, tie.src_tensor, &ti);
	ck_assert_ptr_null(ti.tie_node);
	/* the untied model's count, less the head's 8 x 11 weight */
	ck_assert_int_eq(dt_model_n_tied(m), 88);
	ck_assert_uint_eq(dt_model_n_params(m) - (size_t)dt_model_n_tied(m),
			  11 * 8 + 6 * 8 + 8 + 8 + 8 * 24 + 24 + 8 * 8 + 8 +
			  11);

	float *p = dt_model_params(m), *g = dt_model_grads(m);
	float *src = p + tie.src_offset, *copy = p + tie.copy_offset;

	ck_assert(memcmp(src, copy, 88 * sizeof(float)) == 0);
	dt_model_zero_grads(m);
	dt_model_train_step(m, x, labels, 2, 1.0f, &loss, NULL);
	ck_assert(isfinite(loss));
	ck_assert_int_eq(gc_model_check(m, x, labels, NULL, 2,
					&(struct gc_model_tol){
						.eps = 1e-2, .atol = 1e-3,
						.rtol = 1e-2, .stride = 3,
						.sum = true }, NULL), 0);
	/* The shared perturbation, on every element of the table. */
	dt_model_zero_grads(m);
	dt_model_train_step(m, x, labels, 2, 1.0f, &loss, NULL);
	for (int j = 0; j < 88; j++) {
		double want = (double)g[tie.src_offset + (size_t)j] +
			      g[tie.copy_offset + (size_t)j];
		float keep = src[j];

		src[j] = copy[j] = keep + 1e-2f;
		dt_model_eval(m, x, labels, 2, &up, NULL);
		src[j] = copy[j] = keep - 1e-2f;
		dt_model_eval(m, x, labels, 2, &down, NULL);
		src[j] = copy[j] = keep;
		if (!gc_close_enough(want, (up - down) / 2e-2, 1e-3, 1e-2) &&
		    bad++ < 5)
			fprintf(stderr, "tied table [%d]: %g vs %g\n", j, want,
				(up - down) / 2e-2);
		/* the copy's own term is not the whole: the head reads
		 * every row, the embedding 6 of 11 */
	}
	ck_assert_int_eq(bad, 0);
	dt_model_free(m);
	free(job);
}
END_TEST

/* model.recompute through graph.h: two copies of a block {ln, attn}
 * (named as `repeat:` names them) between the embeddings and the head.
 * Each copy's attention is read outside the copy, so it is kept; each
 * layernorm is transient. Per sample (T = 4, C = 8, h = 2): wte and wpe
 * 64 each (output and gradient), a layernorm 32 + 32 + 8, an attention
 * 64 + 176 (4*T*C + (h+1)*T*T), head 88, loss 44: 884 without recompute;
 * blocks keeps the attentions and one layernorm's 72 as the workspace:
 * 884 - 2*72 + 72 = 812; attention keeps 4*T*C = 128 of each
 * attention's scratch and one shared 2*T*T = 32: 884 - 2*48 + 32 = 820.
 * FLOPs: blocks adds the layernorms' forward, attention each attention's
 * 2*T*T*C + 5*h*T*T = 416. The gradients are the bits of none's and
 * pass the finite-difference check. */
START_TEST(test_lm_recompute)
{
	static const enum dt_layer_kind kinds[] = {
		DT_LAYER_EMBEDDING, DT_LAYER_POS_EMBEDDING, DT_LAYER_LAYERNORM,
		DT_LAYER_ATTENTION, DT_LAYER_LAYERNORM, DT_LAYER_ATTENTION,
		DT_LAYER_DENSE,
	};
	static const char *const names[] = { "wte", "wpe", "b.0.ln", "b.0.attn",
					     "b.1.ln", "b.1.attn", "head" };
	static const int64_t want_act[] = { 884, 812, 820 };
	static const float x[] = { 1, 5, 10, 0, 3, 3, 7, 2 };	/* (2, 4) */
	static const int32_t labels[] = { 4, 9, 0, 1, 3, 7, 2, 10 }; /* (2, 4) */
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m[3];
	struct dt_error err;
	double loss[3], ln_flops = 0;

	snprintf(job->path, sizeof job->path, "lm.yaml");
	job->seed = 5;
	job->model.n_input_dims = 1;
	job->model.input_shape[0] = 4;
	job->model.n_layers = 7;
	job->model.loss = DT_LOSS_SOFTMAX_CROSS_ENTROPY;
	for (int i = 0; i < 7; i++)
		job->model.layers[i] = spec_of(kinds[i], names[i]);
	job->model.layers[0].vocab = 11;
	job->model.layers[0].dim = 8;
	job->model.layers[1].length = 6;
	job->model.layers[1].dim = 8;
	job->model.layers[3].heads = 2;
	job->model.layers[5].heads = 2;
	job->model.layers[6].units = 11;
	for (int rc = 0; rc < 3; rc++) {
		job->model.recompute = (enum dt_recompute)rc;
		if (dt_model_new(job, 2, &m[rc], &err) != DT_OK)
			ck_abort_msg("%s", err.msg);
		ck_assert_int_eq(dt_model_act_floats_per_sample(m[rc]),
				 want_act[rc]);
		dt_model_zero_grads(m[rc]);
		dt_model_train_step(m[rc], x, labels, 2, 1.0f, &loss[rc],
				    NULL);
	}
	for (int i = 0; i < dt_model_n_layers(m[0]); i++) {
		struct dt_layer_info li;

		dt_model_layer_info(m[0], i, &li);
		if (strcmp(li.kind, "layernorm") == 0)
			ln_flops += li.fwd_flops;
	}
	ck_assert(ln_flops > 0);
	ck_assert(dt_model_recompute_flops_per_sample(m[0]) == 0);
	ck_assert(dt_model_recompute_flops_per_sample(m[1]) == ln_flops);
	ck_assert(dt_model_recompute_flops_per_sample(m[2]) == 2 * 416.0);
	ck_assert(dt_model_flops_per_sample(m[1]) ==
		  dt_model_flops_per_sample(m[0]) + ln_flops);
	for (int rc = 1; rc < 3; rc++) {
		ck_assert(loss[rc] == loss[0]);
		ck_assert(memcmp(dt_model_grads(m[rc]), dt_model_grads(m[0]),
				 dt_model_n_params(m[0]) * sizeof(float)) == 0);
		ck_assert_int_eq(gc_model_check(m[rc], x, labels, NULL, 2,
						&(struct gc_model_tol){
							.eps = 1e-3,
							.atol = 1e-3,
							.rtol = 2e-2,
							.stride = 3,
							.sum = true }, NULL), 0);
	}
	for (int rc = 0; rc < 3; rc++)
		dt_model_free(m[rc]);
	free(job);
}
END_TEST

/* Batchnorm's running statistics are buffers: laid out after every trained
 * tensor, so the optimizer (and weight decay) covers only dt_model_n_trained
 * floats; an AdamW step with weight decay leaves them as they were. */
START_TEST(test_buffers_after_trained)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m = NULL;
	struct dt_optim *o;
	struct dt_error err;
	struct dt_tensor_info ti;
	size_t n, nt;
	float *before;

	snprintf(job->path, sizeof job->path, "bn.yaml");
	job->model.n_input_dims = 1;
	job->model.input_shape[0] = 3;
	job->model.n_layers = 3;
	job->model.layers[0] = spec_of(DT_LAYER_DENSE, "fc");
	job->model.layers[0].units = 4;
	job->model.layers[1] = spec_of(DT_LAYER_BATCHNORM, "bn");
	job->model.layers[2] = spec_of(DT_LAYER_DENSE, "head");
	job->model.layers[2].units = 2;
	job->train.optimizer = DT_OPTIM_ADAMW;
	job->train.weight_decay = 0.5;
	job->train.beta1 = 0.9;
	job->train.beta2 = 0.999;
	job->train.eps = 1e-8;
	if (dt_model_new(job, 2, &m, &err) != DT_OK)
		ck_abort_msg("%s", err.msg);
	n = dt_model_n_params(m);
	nt = dt_model_n_trained(m);
	/* fc 3*4+4, bn weight+bias 8, head 4*2+2; buffers mean+var 8. */
	ck_assert_uint_eq(nt, 16 + 8 + 10);
	ck_assert_uint_eq(n, nt + 8);
	for (int i = 0; i < dt_model_n_tensors(m); i++) {
		dt_model_tensor_info(m, i, &ti);
		if (strncmp(ti.name, "running_", 8) == 0)
			ck_assert_uint_ge(ti.offset, nt);
		else
			ck_assert_uint_le(ti.offset + (size_t)ti.size, nt);
	}
	before = dt_xalloc_floats(n);
	memcpy(before, dt_model_params(m), n * sizeof(float));
	o = dt_optim_new(job, nt);
	dt_optim_step(o, dt_model_params(m), dt_model_grads(m), 0.1f);
	ck_assert(memcmp(before + nt, dt_model_params(m) + nt,
			 (n - nt) * sizeof(float)) == 0);
	ck_assert(memcmp(before, dt_model_params(m), nt * sizeof(float)) != 0);
	dt_optim_free(o);
	free(before);
	dt_model_free(m);
	free(job);
}
END_TEST

static Suite *
graph_nlp_suite(void)
{
	Suite *s = suite_create("graph_nlp");
	TCase *layers = tcase_create("layers");
	TCase *model = tcase_create("model");

	tcase_add_test(layers, test_layernorm_gradient);
	tcase_add_test(layers, test_layernorm_value);
	tcase_add_loop_test(layers, test_batchnorm_gradient, 0, 3);
	tcase_add_test(layers, test_batchnorm_running_stats);
	tcase_add_test(layers, test_embedding_gradient);
#ifdef NDEBUG
	tcase_add_test(layers, test_embedding_bad_ids);
#endif
	tcase_add_test(layers, test_pos_embedding_gradient);
	tcase_add_loop_test(layers, test_attention_gradient, 0, 4);
	tcase_add_loop_test(layers, test_attention_directional, 0, 2);
	tcase_add_loop_test(layers, test_attention_one_position, 0, 2);
	tcase_add_test(layers, test_attention_causal);
	tcase_add_loop_test(layers, test_attention_reference, 0, 4);
	tcase_add_loop_test(layers, test_attention_fused_equal, 0, 4);
	tcase_add_loop_test(layers, test_attention_fused_gradient, 0, 2);
	tcase_add_test(layers, test_attention_fused_counts);
	tcase_add_test(layers, test_attention_fused_threads);
	tcase_add_test(layers, test_flops_and_scratch);
	tcase_add_test(layers, test_init);
	tcase_add_test(layers, test_errors);
	suite_add_tcase(s, layers);

	tcase_add_test(model, test_lm_model);
	tcase_add_test(model, test_tied_model);
	tcase_add_test(model, test_lm_recompute);
	tcase_add_test(model, test_buffers_after_trained);
	suite_add_tcase(s, model);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(graph_nlp_suite());
	int failed;

	gc_record_to("test_graph_nlp");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
