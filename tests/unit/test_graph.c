/* SPDX-License-Identifier: MIT */
/* test_graph.c - Check suite for src/graph/: finite-difference gradient
 * checks of every layer type (alone, through layer.h, and together, through
 * graph.h), the softmax cross-entropy value against a hand computation,
 * micro-batch accumulation, init determinism, parameter and FLOP counts,
 * and job-file errors. Jobs are built by hand (memset + fields), so the
 * suite does not depend on the YAML parser. The gradient rig is
 * gradcheck.c's, shared with the other layer suites. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/layer.h"
#include "gradcheck.h"
#include "util/alloc.h"

/* A job with input [n_in], layers of units[i] with acts[i], softmax
 * cross-entropy; positions line i+10, column 5. Caller frees. */
static struct dt_job *
make_job(int64_t n_in, int n_layers, const int64_t *units,
	 const enum dt_activation *acts, uint64_t seed)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);

	snprintf(job->path, sizeof job->path, "job.yaml");
	job->seed = seed;
	job->model.n_input_dims = 1;
	job->model.input_shape[0] = n_in;
	job->model.n_layers = n_layers;
	job->model.loss = DT_LOSS_SOFTMAX_CROSS_ENTROPY;
	for (int i = 0; i < n_layers; i++) {
		struct dt_layer_spec *l = &job->model.layers[i];

		l->kind = DT_LAYER_DENSE;
		snprintf(l->name, sizeof l->name, "dense%d", i);
		l->units = units[i];
		l->bias = true;
		l->activation = acts != NULL ? acts[i] : DT_ACT_NONE;
		l->pos.line = 10 + i;
		l->pos.col = 5;
	}
	return job;
}

static struct dt_job *
make_mnist_mlp(uint64_t seed)
{
	static const int64_t units[] = { 256, 128, 10 };
	static const enum dt_activation acts[] = { DT_ACT_RELU, DT_ACT_RELU,
						   DT_ACT_NONE };

	return make_job(784, 3, units, acts, seed);
}

/* ---- one node on its own ------------------------------------------- */

/* A node of ops with spec {units, bias, act} on a (in) input from the
 * model input (gradcheck.h). */
static void
rig_init(struct gc_rig *r, const struct dt_layer_ops *ops, int64_t in,
	 int64_t units, enum dt_activation act, int64_t batch)
{
	struct dt_layer_spec spec = { .units = units, .bias = true,
				      .activation = act };
	struct dt_shape shape = { .n_dims = 1, .dim = { in } };

	gc_init(r, &gc_model_input, ops, &spec, 1, &shape, batch);
}

/* Gradient tolerance for float central differences: |a - n| <= atol +
 * rtol * max(|a|, |n|). One layer alone is linear or smooth enough at the
 * step sizes used that 1e-3 holds with a wide margin (observed < 2e-5); a
 * whole model in float needs the 1e-2 of the usual recipe. */
static void
rig_check(struct gc_rig *r, double eps)
{
	gc_check(r, &(struct gc_tol){ .eps = eps, .atol = 1e-5,
				      .rtol = 1e-3 });
}

START_TEST(test_dense_gradient)
{
	struct gc_rig r;

	rig_init(&r, &dt_layer_dense, 5, 4, DT_ACT_NONE, 3);
	ck_assert_int_eq(r.n.n_params, 5 * 4 + 4);
	rig_check(&r, 1e-2);
	gc_free(&r);
}
END_TEST

static const enum dt_activation all_acts[] = {
	DT_ACT_RELU, DT_ACT_TANH, DT_ACT_SIGMOID, DT_ACT_GELU,
};

START_TEST(test_activation_gradient)
{
	enum dt_activation act = all_acts[_i];
	struct gc_rig r;

	rig_init(&r, &dt_layer_activation, 7, 0, act, 3);
	ck_assert_str_eq(r.n.kind, dt_activation_name(act));
	ck_assert_int_eq(r.n.n_params, 0);
	ck_assert_int_eq(r.n.out_size, 7);
	/* Keep relu's inputs away from its kink at 0. */
	for (int64_t i = 0; i < 3 * 7; i++)
		r.x[0][i] = copysignf(0.1f + 2.0f * fabsf(r.x[0][i]),
				      r.x[0][i]);
	rig_check(&r, act == DT_ACT_RELU ? 1e-2 : 5e-3);
	gc_free(&r);
}
END_TEST

START_TEST(test_activation_values)
{
	const float xs[] = { -3.0f, -0.5f, 0.0f, 0.5f, 3.0f };
	/* relu, tanh, sigmoid, gelu (tanh form) at xs, from the formulas in
	 * double precision. */
	double want[4][5];
	struct gc_rig r;

	for (int j = 0; j < 5; j++) {
		double x = xs[j];

		want[0][j] = x > 0 ? x : 0;
		want[1][j] = tanh(x);
		want[2][j] = 1.0 / (1.0 + exp(-x));
		want[3][j] = 0.5 * x *
			     (1.0 + tanh(sqrt(2.0 / M_PI) *
					 (x + 0.044715 * x * x * x)));
	}
	for (int a = 0; a < 4; a++) {
		rig_init(&r, &dt_layer_activation, 5, 0, all_acts[a], 1);
		memcpy(r.x[0], xs, sizeof xs);
		gc_objective(&r);
		for (int j = 0; j < 5; j++)
			ck_assert_double_eq_tol(r.n.out[j], want[a][j], 1e-6);
		gc_free(&r);
	}
	/* Known value: gelu(1) ~= 0.841192 in the tanh approximation. */
	ck_assert_double_eq_tol(0.5 * (1.0 + tanh(sqrt(2.0 / M_PI) *
						 1.044715)), 0.841192, 1e-6);
}
END_TEST

START_TEST(test_loss_gradient)
{
	struct gc_rig r;

	rig_init(&r, &dt_layer_softmax_xent, 5, 0, DT_ACT_NONE, 3);
	for (int64_t i = 0; i < 15; i++)
		r.x[0][i] *= 3.0f;
	rig_check(&r, 5e-3);
	gc_free(&r);
}
END_TEST

START_TEST(test_loss_value)
{
	struct gc_rig r;
	struct dt_pass p = { .batch = 1, .grad_scale = 0.5f };
	const float *in[1];
	float *din[1];
	bool add[1] = { false };

	rig_init(&r, &dt_layer_softmax_xent, 3, 0, DT_ACT_NONE, 1);
	r.x[0][0] = 1.0f;
	r.x[0][1] = 2.0f;
	r.x[0][2] = 3.0f;
	r.labels[0] = 2;
	in[0] = r.x[0];
	din[0] = r.dx[0];
	p.labels = r.labels;
	r.n.ops->forward(&r.n, &p, in);
	/* log(e + e^2 + e^3) - 3 */
	ck_assert_double_eq_tol(p.loss_sum, 0.40760596, 1e-6);
	ck_assert_int_eq(p.n_correct, 1);
	ck_assert_double_eq_tol(r.n.out[0], 0.09003057, 1e-6);
	ck_assert_double_eq_tol(r.n.out[1], 0.24472847, 1e-6);
	ck_assert_double_eq_tol(r.n.out[2], 0.66524096, 1e-6);
	r.n.ops->backward(&r.n, &p, in, din, add);
	ck_assert_double_eq_tol(r.dx[0][0], 0.5 * 0.09003057, 1e-6);
	ck_assert_double_eq_tol(r.dx[0][1], 0.5 * 0.24472847, 1e-6);
	ck_assert_double_eq_tol(r.dx[0][2], 0.5 * (0.66524096 - 1.0), 1e-6);

	/* Far-apart logits stay finite: no exp overflow. */
	r.x[0][0] = 1000.0f;
	r.x[0][1] = 0.0f;
	r.x[0][2] = -1000.0f;
	r.labels[0] = 1;
	p.loss_sum = 0.0;
	p.n_correct = 0;
	r.n.ops->forward(&r.n, &p, in);
	ck_assert_double_eq_tol(p.loss_sum, 1000.0, 1e-3);
	ck_assert_int_eq(p.n_correct, 0);
	ck_assert(isfinite(r.n.out[2]));
	gc_free(&r);
}
END_TEST

/* ---- whole models --------------------------------------------------- */

/* Every parameter of a model with all four activations against central
 * differences of the mean loss, through dt_model_train_step / eval. */
START_TEST(test_model_gradient)
{
	static const int64_t units[] = { 5, 5, 4, 4, 3 };
	static const enum dt_activation acts[] = {
		DT_ACT_RELU, DT_ACT_TANH, DT_ACT_SIGMOID, DT_ACT_GELU,
		DT_ACT_NONE,
	};
	struct dt_job *job = make_job(6, 5, units, acts, 7);
	const int64_t batch = 4;
	struct dt_model *m = NULL;
	struct dt_error err;
	float x[4 * 6];
	int32_t labels[4] = { 0, 2, 1, 2 };

	ck_assert_int_eq(dt_model_new(job, batch, &m, &err), DT_OK);
	gc_fill_uniform(x, 4 * 6, 10);
	ck_assert_int_eq(gc_model_check(m, x, labels, NULL, batch,
					&(struct gc_model_tol){
						.eps = 1e-2, .atol = 2e-5,
						.rtol = 1e-2 }, NULL), 0);
	dt_model_free(m);
	free(job);
}
END_TEST

/* k micro-batches of m with grad_scale 1/(k m) == one batch of k m. */
START_TEST(test_accumulation)
{
	static const int64_t units[] = { 5, 3 };
	static const enum dt_activation acts[] = { DT_ACT_TANH, DT_ACT_NONE };
	struct dt_job *job = make_job(6, 2, units, acts, 3);
	enum { K = 4, M = 3, IN = 6 };
	struct dt_model *m = NULL;
	struct dt_error err;
	float x[K * M * IN];
	int32_t labels[K * M];
	double loss_parts = 0.0, loss_whole, l;
	int64_t correct_parts = 0, correct_whole, c;

	ck_assert_int_eq(dt_model_new(job, K * M, &m, &err), DT_OK);
	gc_fill_uniform(x, K * M * IN, 20);
	for (int i = 0; i < K * M; i++)
		labels[i] = i % 3;

	size_t n = dt_model_n_params(m);
	float *parts = dt_xalloc_floats(n);

	dt_model_zero_grads(m);
	for (int k = 0; k < K; k++) {
		dt_model_train_step(m, x + k * M * IN, labels + k * M, M,
				    1.0f / (K * M), &l, &c);
		loss_parts += l;
		correct_parts += c;
	}
	memcpy(parts, dt_model_grads(m), n * sizeof(float));
	dt_model_zero_grads(m);
	dt_model_train_step(m, x, labels, K * M, 1.0f / (K * M), &loss_whole,
			    &correct_whole);
	for (size_t i = 0; i < n; i++)
		ck_assert_float_eq_tol(parts[i], dt_model_grads(m)[i], 1e-5f);
	ck_assert_double_eq_tol(loss_parts, loss_whole, 1e-5);
	ck_assert_int_eq(correct_parts, correct_whole);
	free(parts);
	dt_model_free(m);
	free(job);
}
END_TEST

/* dt_model_backward_breadth: K micro-batches in K slots, forwards first,
 * then the backward node by node, gives the gradient (bit for bit) and
 * the losses of K depth-first train steps; its hook sees every node from
 * the last down, each over micro-batches 0 .. K-1. */
struct hook_log {
	int n, node[64], micro[64];
};

static void
log_hook(void *ctx, int node, int micro)
{
	struct hook_log *h = ctx;

	if (h->n < 64) {
		h->node[h->n] = node;
		h->micro[h->n] = micro;
	}
	h->n++;
}

START_TEST(test_backward_breadth)
{
	static const int64_t units[] = { 5, 4, 3 };
	static const enum dt_activation acts[] = { DT_ACT_TANH, DT_ACT_RELU,
						   DT_ACT_NONE };
	struct dt_job *job = make_job(6, 3, units, acts, 9);
	enum { K = 3, M = 4, IN = 6 };
	struct dt_model *df = NULL, *bf = NULL;
	struct dt_error err;
	float x[K * M * IN];
	int32_t labels[K * M];
	const float *xs[K];
	const int32_t *ys[K];
	struct hook_log h = { 0 };
	double l_df, l_bf;
	int nodes, at = 0;

	ck_assert_int_eq(dt_model_new(job, M, &df, &err), DT_OK);
	ck_assert_int_eq(dt_model_new_slots(job, M, K, &bf, &err), DT_OK);
	ck_assert_int_eq(dt_model_new_slots(job, M, 0, &bf, &err),
			 DT_ERR_PLAN);
	gc_fill_uniform(x, K * M * IN, 21);
	for (int i = 0; i < K * M; i++)
		labels[i] = (i * 7) % 3;
	dt_model_zero_grads(df);
	dt_model_zero_grads(bf);
	for (int k = 0; k < K; k++) {
		xs[k] = x + k * M * IN;
		ys[k] = labels + k * M;
		dt_model_train_step(df, xs[k], ys[k], M, 1.0f / (K * M), &l_df,
				    NULL);
		dt_model_use_slot(bf, k);
		dt_model_stage_forward(bf, xs[k], ys[k], M, true, &l_bf, NULL);
		ck_assert(l_df == l_bf);
	}
	dt_model_backward_breadth(bf, K, xs, ys, M, 1.0f / (K * M), log_hook,
				  &h);
	ck_assert_int_eq(memcmp(dt_model_grads(df), dt_model_grads(bf),
				dt_model_n_params(df) * sizeof(float)), 0);
	/* 3 dense + 2 activations + the loss, each over 3 micro-batches. */
	nodes = dt_model_n_layers(bf);
	ck_assert_int_eq(nodes, 6);
	ck_assert_int_eq(h.n, nodes * K);
	for (int i = nodes - 1; i >= 0; i--)
		for (int k = 0; k < K; k++, at++) {
			ck_assert_int_eq(h.node[at], i);
			ck_assert_int_eq(h.micro[at], k);
		}
	dt_model_free(df);
	dt_model_free(bf);
	free(job);
}
END_TEST

/* dt_model_set_params_hook: on a one-thread pool a dense node with an
 * input gradient to make calls the hook from inside its backward, after
 * its weight and bias gradients and before its backward ends (the
 * backward hook of the node follows, that of the node above came
 * before). Nodes of 3 dense layers with tanh between: dense 0, 2, 4,
 * tanh 1, 3, the loss 5; the first dense layer makes no input gradient
 * (the model input has none), so the hook runs for 4 and then 2. At
 * each call the node's gradients are already their final values, bit
 * for bit, and those of the dense node below are still 0. Without the
 * hook nothing is called and the gradients are the same. */
struct params_log {
	struct dt_model *m;
	int n, event[16];		/* node, or 100 + node: backward hook */
	float *at[4];			/* the gradients at each params call */
	int n_at;
};

static void
params_logged(void *ctx, int node)
{
	struct params_log *h = ctx;
	size_t n = dt_model_n_params(h->m);

	if (h->n < 16)
		h->event[h->n] = node;
	h->n++;
	if (h->n_at < 4) {
		h->at[h->n_at] = dt_xalloc_floats(n);
		memcpy(h->at[h->n_at++], dt_model_grads(h->m),
		       n * sizeof(float));
	}
}

static void
backward_logged(void *ctx, int node)
{
	struct params_log *h = ctx;

	if (h->n < 16)
		h->event[h->n] = 100 + node;
	h->n++;
}

/* Whether node's tensors in grads equal those in ref (same arenas). */
static bool
node_grads_equal(struct dt_model *m, int node, const float *grads,
		 const float *ref)
{
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		if (ti.node_index == node &&
		    memcmp(grads + ti.offset, ref + ti.offset,
			   (size_t)ti.size * sizeof(float)) != 0)
			return false;
	}
	return true;
}

START_TEST(test_params_hook)
{
	static const int64_t units[] = { 5, 4, 3 };
	static const enum dt_activation acts[] = { DT_ACT_TANH, DT_ACT_TANH,
						   DT_ACT_NONE };
	static const int want[] = { 105, 4, 104, 103, 2, 102, 101, 100 };
	struct dt_job *job = make_job(6, 3, units, acts, 11);
	enum { M = 4, IN = 6 };
	struct dt_model *m = NULL;
	struct params_log h = { 0 };
	struct dt_error err;
	float x[M * IN], *zero, *final;
	int32_t labels[M] = { 0, 2, 1, 2 };
	size_t n;

	ck_assert_int_eq(dt_model_new(job, M, &m, &err), DT_OK);
	ck_assert_int_eq(dt_model_n_layers(m), 6);
	n = dt_model_n_params(m);
	gc_fill_uniform(x, M * IN, 23);
	h.m = m;
	dt_model_set_params_hook(m, params_logged, &h);
	dt_model_set_backward_hook(m, backward_logged, &h);
	dt_model_zero_grads(m);
	dt_model_train_step(m, x, labels, M, 1.0f / M, NULL, NULL);
	ck_assert_int_eq(h.n, 8);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(h.event[i], want[i]);
	ck_assert_int_eq(h.n_at, 2);
	final = dt_model_grads(m);
	zero = dt_xcalloc(n, sizeof *zero);
	ck_assert(node_grads_equal(m, 4, h.at[0], final));
	ck_assert(node_grads_equal(m, 2, h.at[0], zero));
	ck_assert(!node_grads_equal(m, 4, final, zero));
	ck_assert(node_grads_equal(m, 2, h.at[1], final));
	ck_assert(node_grads_equal(m, 0, h.at[1], zero));
	ck_assert(!node_grads_equal(m, 2, final, zero));

	/* removed: no call, the same gradients */
	float *with = dt_xalloc_floats(n);

	memcpy(with, final, n * sizeof(float));
	h.n = 0;
	dt_model_set_params_hook(m, NULL, NULL);
	dt_model_set_backward_hook(m, NULL, NULL);
	dt_model_zero_grads(m);
	dt_model_train_step(m, x, labels, M, 1.0f / M, NULL, NULL);
	ck_assert_int_eq(h.n, 0);
	ck_assert_int_eq(memcmp(with, dt_model_grads(m), n * sizeof(float)),
			 0);
	for (int i = 0; i < h.n_at; i++)
		free(h.at[i]);
	free(with);
	free(zero);
	dt_model_free(m);
	free(job);
}
END_TEST

/* Makes job read (T, C) per sample through a layernorm (its layer 0),
 * so that its dense layer 1 maps each of the T rows (dense.c). */
static void
per_token(struct dt_job *job, int64_t t, int64_t c)
{
	struct dt_layer_spec *l = &job->model.layers[0];

	job->model.n_input_dims = 2;
	job->model.input_shape[0] = t;
	job->model.input_shape[1] = c;
	l->kind = DT_LAYER_LAYERNORM;
	l->activation = DT_ACT_NONE;
	l->eps = 1e-5;
}

/* A training model (dt_model_new_slots) runs the softmax cross-entropy
 * in place over its dense last layer's logits: per token, T = 3 rows of
 * 7 classes, 2 * T * 7 floats a sample fewer than dt_model_new's model
 * (the loss's probabilities and the logits' gradient), and the same
 * loss, hits, gradients and probabilities, bit for bit. A last layer
 * with an activation (the loss reads the activation, whose backward
 * reads its output) and a pipeline cut just before the loss keep the
 * three buffers. */
START_TEST(test_loss_in_place)
{
	static const int64_t units[] = { 0, 7 };
	static const enum dt_activation acts_relu[] = { DT_ACT_NONE,
							DT_ACT_RELU };
	struct dt_job *job = make_job(6, 2, units, NULL, 13);
	struct dt_job *relu = make_job(6, 2, units, acts_relu, 13);
	enum { M = 4, T = 3, C = 6, V = 7 };
	struct dt_model *a = NULL, *b = NULL, *shapes = NULL;
	struct dt_stage_info whole, last;
	struct dt_error err;
	float x[M * T * C];
	int32_t labels[M * T];
	double la, lb;
	int64_t ca, cb;

	per_token(job, T, C);
	ck_assert_int_eq(dt_model_new(job, M, &a, &err), DT_OK);
	ck_assert_int_eq(dt_model_new_slots(job, M, 1, &b, &err), DT_OK);
	ck_assert_int_eq(dt_model_act_floats_per_sample(a) -
			 dt_model_act_floats_per_sample(b), 2 * T * V);
	gc_fill_uniform(x, M * T * C, 17);
	for (int i = 0; i < M * T; i++)
		labels[i] = (i * 5) % V;
	dt_model_zero_grads(a);
	dt_model_zero_grads(b);
	for (int step = 0; step < 2; step++) {
		dt_model_train_step(a, x, labels, M, 1.0f / (M * T), &la, &ca);
		dt_model_train_step(b, x, labels, M, 1.0f / (M * T), &lb, &cb);
		ck_assert(la == lb);
		ck_assert_int_eq(ca, cb);
	}
	ck_assert_int_eq(memcmp(dt_model_grads(a), dt_model_grads(b),
				dt_model_n_params(a) * sizeof(float)), 0);
	dt_model_eval(a, x, labels, M, &la, &ca);
	dt_model_eval(b, x, labels, M, &lb, &cb);
	ck_assert(la == lb && ca == cb);
	ck_assert_int_eq(memcmp(dt_model_probs(a), dt_model_probs(b),
				M * T * V * sizeof(float)), 0);
	dt_model_free(a);
	dt_model_free(b);

	/* a stage cut between the last layer and the loss: not in place */
	int cut[] = { 0, 0, 1 }, one[] = { 0, 0, 0 };

	ck_assert_int_eq(dt_model_new(job, 0, &shapes, &err), DT_OK);
	ck_assert_int_eq(dt_model_n_layers(shapes), 3);
	dt_model_stage_info(shapes, one, 1, 0, &whole);
	dt_model_stage_info(shapes, cut, 2, 1, &last);
	/* the layernorm: output, gradient, mean and 1/std a row; the dense
	 * layer: its logits */
	ck_assert_int_eq(whole.act_floats, 2 * T * C + 2 * T + T * V);
	/* received logits and their gradient, the loss's probabilities */
	ck_assert_int_eq(last.act_floats, 3 * T * V);
	dt_model_free(shapes);

	per_token(relu, T, C);
	ck_assert_int_eq(dt_model_new(relu, M, &a, &err), DT_OK);
	ck_assert_int_eq(dt_model_new_slots(relu, M, 1, &b, &err), DT_OK);
	ck_assert_int_eq(dt_model_act_floats_per_sample(a),
			 dt_model_act_floats_per_sample(b));
	dt_model_free(a);
	dt_model_free(b);
	free(job);
	free(relu);
}
END_TEST

START_TEST(test_init_determinism)
{
	struct dt_job *job = make_mnist_mlp(42);
	struct dt_model *a = NULL, *b = NULL, *c = NULL;
	struct dt_error err;
	size_t n;

	ck_assert_int_eq(dt_model_new(job, 2, &a, &err), DT_OK);
	ck_assert_int_eq(dt_model_new(job, 5, &b, &err), DT_OK);
	job->seed = 43;
	ck_assert_int_eq(dt_model_new(job, 2, &c, &err), DT_OK);
	n = dt_model_n_params(a);
	ck_assert(memcmp(dt_model_params(a), dt_model_params(b),
			 n * sizeof(float)) == 0);
	ck_assert(memcmp(dt_model_params(a), dt_model_params(c),
			 n * sizeof(float)) != 0);
	for (size_t i = 0; i < n; i++)
		ck_assert(dt_model_grads(a)[i] == 0.0f);

	/* He-normal for dense0 (followed by relu): std sqrt(2/784);
	 * Xavier-uniform for dense2 (no activation): |w| < sqrt(6/138). */
	struct dt_tensor_info t;
	double sum2 = 0.0;
	const float *p = dt_model_params(a);

	dt_model_tensor_info(a, 0, &t);
	for (int64_t i = 0; i < t.size; i++)
		sum2 += (double)p[t.offset + i] * p[t.offset + i];
	ck_assert_double_eq_tol(sqrt(sum2 / (double)t.size),
				sqrt(2.0 / 784.0), 0.02 * sqrt(2.0 / 784.0));
	dt_model_tensor_info(a, 1, &t);
	for (int64_t i = 0; i < t.size; i++)
		ck_assert(p[t.offset + i] == 0.0f);
	dt_model_tensor_info(a, 4, &t);
	ck_assert_str_eq(t.node, "dense2");
	ck_assert_str_eq(t.name, "weight");
	float limit = (float)sqrt(6.0 / (128 + 10)), wmax = 0.0f;

	for (int64_t i = 0; i < t.size; i++)
		wmax = fmaxf(wmax, fabsf(p[t.offset + i]));
	ck_assert(wmax <= limit && wmax > 0.9f * limit);
	dt_model_free(a);
	dt_model_free(b);
	dt_model_free(c);
	free(job);
}
END_TEST

START_TEST(test_counts)
{
	struct dt_job *job = make_mnist_mlp(0);
	struct dt_model *m = NULL, *shapes = NULL;
	struct dt_layer_info info;
	struct dt_tensor_info t;
	struct dt_error err;
	static const char *const names[] = {
		"dense0", "dense0.relu", "dense1", "dense1.relu", "dense2",
		"loss",
	};
	static const char *const kinds[] = {
		"dense", "relu", "dense", "relu", "dense",
		"softmax_cross_entropy",
	};
	static const int64_t outs[] = { 256, 256, 128, 128, 10, 10 };
	static const int job_layers[] = { 0, 0, 1, 1, 2, 2 };
	/* Hand count: dense 2*in*out + out, relu 1 per element, loss 5 per
	 * class; a step is 3x forward. */
	static const double fwd[] = {
		2.0 * 784 * 256 + 256, 256, 2.0 * 256 * 128 + 128, 128,
		2.0 * 128 * 10 + 10, 5.0 * 10,
	};
	static const int64_t params[] = {
		784 * 256 + 256, 0, 256 * 128 + 128, 0, 128 * 10 + 10, 0,
	};

	ck_assert_int_eq(dt_model_new(job, 32, &m, &err), DT_OK);
	ck_assert_uint_eq(dt_model_n_params(m), 235146);
	ck_assert_int_eq(dt_model_input_size(m), 784);
	ck_assert_int_eq(dt_model_n_classes(m), 10);
	ck_assert_int_eq(dt_model_n_layers(m), 6);
	double total = 0.0;

	for (int i = 0; i < 6; i++) {
		dt_model_layer_info(m, i, &info);
		ck_assert_str_eq(info.name, names[i]);
		ck_assert_str_eq(info.kind, kinds[i]);
		ck_assert_int_eq(info.n_dims, 1);
		ck_assert_int_eq(info.out_shape[0], outs[i]);
		ck_assert_int_eq(info.n_params, params[i]);
		ck_assert_double_eq(info.fwd_flops, fwd[i]);
		ck_assert_int_eq(info.job_layer, job_layers[i]);
		total += fwd[i];
	}
	ck_assert_double_eq(total, 470332.0);
	ck_assert_double_eq(dt_model_flops_per_sample(m), 3.0 * 470332.0);
	/* outputs of all nodes, gradients of all but the loss */
	ck_assert_int_eq(dt_model_act_floats_per_sample(m),
			 2 * (256 + 256 + 128 + 128 + 10) + 10);

	ck_assert_int_eq(dt_model_n_tensors(m), 6);
	size_t off = 0;

	for (int i = 0; i < 6; i++) {
		dt_model_tensor_info(m, i, &t);
		ck_assert_uint_eq(t.offset, off);
		off += (size_t)t.size;
	}
	ck_assert_uint_eq(off, 235146);
	dt_model_tensor_info(m, 2, &t);
	ck_assert_str_eq(t.node, "dense1");
	ck_assert_int_eq(t.n_dims, 2);
	ck_assert_int_eq(t.shape[0], 256);
	ck_assert_int_eq(t.shape[1], 128);

	/* Shapes only: the same numbers, no arenas. */
	ck_assert_int_eq(dt_model_new(job, 0, &shapes, &err), DT_OK);
	ck_assert_uint_eq(dt_model_n_params(shapes), 235146);
	ck_assert_double_eq(dt_model_flops_per_sample(shapes),
			    dt_model_flops_per_sample(m));
	ck_assert_ptr_null(dt_model_params(shapes));
	ck_assert_ptr_null(dt_model_probs(shapes));
	dt_model_free(shapes);
	dt_model_free(m);
	free(job);
}
END_TEST

START_TEST(test_flatten_input)
{
	static const int64_t units[] = { 4 };
	struct dt_job *job = make_job(1, 1, units, NULL, 0);
	struct dt_model *m = NULL;
	struct dt_tensor_info t;
	struct dt_error err;

	job->model.n_input_dims = 3;
	job->model.input_shape[0] = 1;
	job->model.input_shape[1] = 2;
	job->model.input_shape[2] = 3;
	ck_assert_int_eq(dt_model_new(job, 1, &m, &err), DT_OK);
	ck_assert_int_eq(dt_model_input_size(m), 6);
	dt_model_tensor_info(m, 0, &t);
	ck_assert_int_eq(t.shape[0], 6);
	ck_assert_int_eq(t.shape[1], 4);
	dt_model_free(m);
	free(job);
}
END_TEST

START_TEST(test_errors)
{
	static const int64_t units[] = { 8, 0, 3 };
	struct dt_job *job = make_job(4, 3, units, NULL, 0);
	struct dt_model *m = (struct dt_model *)&m;	/* must stay put */
	struct dt_model *const sentinel = m;
	struct dt_error err;

	ck_assert_int_eq(dt_model_new(job, 4, &m, &err), DT_ERR_JOB);
	ck_assert_ptr_eq(m, sentinel);
	ck_assert_int_eq(err.status, DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "job.yaml:11:5: model.layers.1 (dense1): "
			 "units must be >= 1, found 0");

	job->model.layers[1].units = 5;
	job->model.layers[2].units = 1;
	ck_assert_int_eq(dt_model_new(job, 4, &m, &err), DT_ERR_JOB);
	ck_assert_msg(strncmp(err.msg, "job.yaml:12:5: model.layers.2 "
			      "(dense2): ", 40) == 0 &&
		      strstr(err.msg, "2 classes"),
		      "%s", err.msg);

	job->model.layers[2].units = 3;
	job->model.layers[2].pos.line = 0;
	job->model.layers[2].units = -2;
	ck_assert_int_eq(dt_model_new(job, 4, &m, &err), DT_ERR_JOB);
	ck_assert_msg(strncmp(err.msg, "job.yaml: model.layers.2 (dense2): ",
			      35) == 0,
		      "%s", err.msg);

	job->model.layers[2].units = 3;
	ck_assert_int_eq(dt_model_new(job, -1, &m, &err), DT_ERR_PLAN);
	job->model.n_input_dims = 0;
	ck_assert_int_eq(dt_model_new(job, 4, &m, &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "model.input_shape") != NULL, "%s",
		      err.msg);
	job->model.n_input_dims = 1;
	job->model.n_layers = 0;
	ck_assert_int_eq(dt_model_new(job, 4, &m, &err), DT_ERR_JOB);
	ck_assert_msg(strstr(err.msg, "model.layers") != NULL, "%s", err.msg);
	ck_assert_ptr_eq(m, sentinel);

	job->model.n_layers = 3;
	ck_assert_int_eq(dt_model_new(job, 4, &m, &err), DT_OK);
	dt_model_free(m);
	dt_model_free(NULL);
	free(job);
}
END_TEST

/* Eval and training see the same forward pass; eval leaves gradients. */
START_TEST(test_eval_matches_train)
{
	struct dt_job *job = make_mnist_mlp(5);
	struct dt_model *m = NULL;
	struct dt_error err;
	enum { B = 8 };
	float *x = dt_xalloc_floats(B * 784);
	int32_t labels[B];
	double l_eval, l_train;
	int64_t c_eval, c_train;

	ck_assert_int_eq(dt_model_new(job, B, &m, &err), DT_OK);
	gc_fill_uniform(x, B * 784, 30);
	for (int i = 0; i < B; i++)
		labels[i] = i;
	dt_model_eval(m, x, labels, B, &l_eval, &c_eval);
	for (size_t i = 0; i < dt_model_n_params(m); i++)
		ck_assert(dt_model_grads(m)[i] == 0.0f);
	dt_model_train_step(m, x, labels, B, 1.0f / B, &l_train, &c_train);
	ck_assert(l_eval == l_train);
	ck_assert_int_eq(c_eval, c_train);
	/* Ten balanced classes at init: loss near log 10 per sample. */
	ck_assert(l_eval / B > 1.0 && l_eval / B < 4.0);
	const float *probs = dt_model_probs(m);

	for (int r = 0; r < B; r++) {
		double s = 0.0;

		for (int j = 0; j < 10; j++)
			s += probs[r * 10 + j];
		ck_assert_double_eq_tol(s, 1.0, 1e-5);
	}
	dt_model_eval(m, x, NULL, B, &l_eval, &c_eval);
	ck_assert(l_eval == 0.0 && c_eval == 0);
	free(x);
	dt_model_free(m);
	free(job);
}
END_TEST

/* A few steps of plain SGD learn a separable toy problem. */
START_TEST(test_learns)
{
	static const int64_t units[] = { 16, 3 };
	static const enum dt_activation acts[] = { DT_ACT_GELU, DT_ACT_NONE };
	struct dt_job *job = make_job(4, 2, units, acts, 11);
	struct dt_model *m = NULL;
	struct dt_error err;
	enum { B = 30 };
	float x[B * 4];
	int32_t labels[B];
	double first = 0.0, loss = 0.0;
	int64_t correct = 0;

	ck_assert_int_eq(dt_model_new(job, B, &m, &err), DT_OK);
	gc_fill_uniform(x, B * 4, 40);
	for (int i = 0; i < B; i++) {
		labels[i] = i % 3;
		x[i * 4 + labels[i]] += 2.0f;
	}
	for (int step = 0; step < 100; step++) {
		float *p = dt_model_params(m);
		const float *g = dt_model_grads(m);

		dt_model_zero_grads(m);
		dt_model_train_step(m, x, labels, B, 1.0f / B, &loss,
				    &correct);
		if (step == 0)
			first = loss;
		for (size_t i = 0; i < dt_model_n_params(m); i++)
			p[i] -= 0.5f * g[i];
	}
	ck_assert_msg(loss < 0.2 * first, "loss %g -> %g", first, loss);
	ck_assert_int_eq(correct, B);
	dt_model_free(m);
	free(job);
}
END_TEST

static Suite *
graph_suite(void)
{
	Suite *s = suite_create("graph");
	TCase *layers = tcase_create("layers");
	TCase *model = tcase_create("model");

	tcase_add_test(layers, test_dense_gradient);
	tcase_add_loop_test(layers, test_activation_gradient, 0, 4);
	tcase_add_test(layers, test_activation_values);
	tcase_add_test(layers, test_loss_gradient);
	tcase_add_test(layers, test_loss_value);
	suite_add_tcase(s, layers);

	tcase_add_test(model, test_model_gradient);
	tcase_add_test(model, test_accumulation);
	tcase_add_test(model, test_backward_breadth);
	tcase_add_test(model, test_params_hook);
	tcase_add_test(model, test_loss_in_place);
	tcase_add_test(model, test_init_determinism);
	tcase_add_test(model, test_counts);
	tcase_add_test(model, test_flatten_input);
	tcase_add_test(model, test_errors);
	tcase_add_test(model, test_eval_matches_train);
	tcase_add_test(model, test_learns);
	suite_add_tcase(s, model);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(graph_suite());
	int failed;

	gc_record_to("test_graph");
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
