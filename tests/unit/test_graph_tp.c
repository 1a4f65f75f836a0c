/* SPDX-License-Identifier: MIT */
/* test_graph_tp.c - Check suite for tensor parallelism in src/graph/
 * (tensor.c and the split kernels of dense.c and attention.c): a tensor
 * group of 2 or 4 ranks simulated in one process, one thread and one model
 * per rank, the group's sums going through a shared buffer between pthread
 * barriers. Every rank's loss and probabilities, and the sum over the
 * ranks of the gradient arenas after dt_model_tp_prepare_grads, must match
 * a one-rank model to 1e-5 relative, in training and in evaluation. Also:
 * the floats each rank passes to the sums against
 * dt_model_tp_floats_per_sample and against counts made by hand, FLOPs of
 * the split layers, and the plan's errors for degrees that do not divide a
 * layer. Ranks that own their slices (dt_model_tp_own_slices: dense
 * columns and rows, attention heads, uneven vocabulary blocks) against
 * ranks holding whole tensors:
 * the same bits, outputs and blocks of the gradients, for the heads
 * materialized, fused and recomputed, in f32 and (where the CPU has
 * AVX512_BF16) bf16; dt_node_tp_block's blocks by hand. Models are built
 * from job text through the YAML parser. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/kern.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "job/job.h"
#include "util/alloc.h"
#include "util/rng.h"

#define TOL 1e-5
#define MAX_RANKS 4
#define MICRO_BATCHES 2

/* An MLP in the shape of 784-512-256-10, smaller, with two column/row
 * pairs (d0 + d1 through relu and dropout, d2 + d3 through gelu); the
 * layer entries start on line 6, column 7. */
static const char mlp_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [20]\n"
	"  layers:\n"
	"    - {type: dense, name: d0, units: 32, activation: relu}\n"
	"    - {type: dropout, name: drop, rate: 0.25}\n"
	"    - {type: dense, name: d1, units: 16, activation: relu}\n"
	"    - {type: dense, name: d2, units: 24, activation: gelu}\n"
	"    - {type: dense, name: d3, units: 6}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 3, steps: 10, lr: 0.1}\n";

/* A pre-norm transformer block as in jobs/char-gpt.yaml, smaller: T = 8,
 * C = 16, 4 heads, a 4x gelu MLP, dropout and residual adds. */
static const char gpt_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 16, dim: 16}\n"
	"    - {type: pos_embedding, name: pos, length: 8, dim: 16}\n"
	"    - {type: layernorm, name: ln1}\n"
	"    - {type: attention, name: attn, heads: 4, causal: true}\n"
	"    - {type: dropout, name: attn_drop, rate: 0.2}\n"
	"    - {type: add, name: res1, inputs: [pos, attn_drop]}\n"
	"    - {type: layernorm, name: ln2}\n"
	"    - {type: dense, name: fc, units: 64, activation: gelu}\n"
	"    - {type: dense, name: proj, units: 16}\n"
	"    - {type: dropout, name: mlp_drop, rate: 0.2}\n"
	"    - {type: add, name: res2, inputs: [res1, mlp_drop]}\n"
	"    - {type: layernorm, name: ln_f}\n"
	"    - {type: dense, name: head, units: 16}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

/* The block without its layernorms: attention and fc read outputs that a
 * residual add reads too, so their input gradients add to another's
 * (din_add), and attention has no qkv or proj bias. */
static const char gpt_bare_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 16, dim: 16}\n"
	"    - {type: pos_embedding, name: pos, length: 8, dim: 16}\n"
	"    - {type: attention, name: attn, heads: 4, causal: true, "
	"bias: false}\n"
	"    - {type: add, name: res1, inputs: [pos, attn]}\n"
	"    - {type: dense, name: fc, units: 32, activation: tanh}\n"
	"    - {type: dropout, name: fc_drop, rate: 0.3}\n"
	"    - {type: dense, name: proj, units: 16, bias: false}\n"
	"    - {type: add, name: res2, inputs: [res1, proj]}\n"
	"    - {type: dense, name: head, units: 16}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

/* An attention block alone: the embeddings, attention with its biases,
 * and a dense head no pair splits; the attention entry is on line 8,
 * column 7. */
static const char attn_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 16, dim: 16}\n"
	"    - {type: pos_embedding, name: pos, length: 8, dim: 16}\n"
	"    - {type: attention, name: attn, heads: 4, causal: true}\n"
	"    - {type: dense, name: head, units: 16}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

static void
parse_job(const char *text, struct dt_job *job)
{
	struct dt_error err;
	enum dt_status st;

	st = dt_job_parse("job.yaml", text, strlen(text), NULL, 0, job, &err);
	ck_assert_msg(st == DT_OK, "%s", err.msg);
}

static struct dt_model *
build(const struct dt_job *job, int64_t max_batch)
{
	struct dt_model *m = NULL;
	struct dt_error err;
	enum dt_status st = dt_model_new(job, max_batch, &m, &err);

	ck_assert_msg(st == DT_OK, "%s", err.msg);
	return m;
}

/* max |a - b| / max |b| over n floats: the error relative to the size of
 * the tensor (an element near 0 in a sum of rounded terms has no useful
 * relative error of its own). */
static double
rel_err(const float *a, const float *b, int64_t n)
{
	double diff = 0.0, scale = 0.0;

	for (int64_t i = 0; i < n; i++) {
		diff = fmax(diff, fabs((double)a[i] - b[i]));
		scale = fmax(scale, fabs((double)b[i]));
	}
	if (scale == 0.0)
		return diff;
	return diff / scale;
}

static double
rel_err_scalar(double a, double b)
{
	return fabs(a - b) / fmax(fabs(b), 1e-30);
}

/* ---- a tensor group of threads ------------------------------------- */

struct group {
	int size;
	pthread_barrier_t barrier;
	float *slot[MAX_RANKS];		/* each rank's buffer in a sum */
	size_t n[MAX_RANKS];
	size_t moved[MAX_RANKS];	/* floats each rank passed */
	int mismatched;			/* ranks that disagreed on n */
};

struct rank_ctx {
	struct group *g;
	int rank;
};

/* The sum over the group: every rank posts its buffer, sums all of them
 * in rank order into a buffer of its own (so each gets the same bits),
 * waits until nobody reads any more, and copies the sum back. */
static void
group_allreduce(void *ctx, float *buf, size_t n)
{
	struct rank_ctx *rc = ctx;
	struct group *g = rc->g;
	float *sum = dt_xalloc_floats(n);

	g->slot[rc->rank] = buf;
	g->n[rc->rank] = n;
	g->moved[rc->rank] += n;
	pthread_barrier_wait(&g->barrier);
	for (int r = 0; r < g->size; r++) {
		if (g->n[r] != n) {
			__atomic_add_fetch(&g->mismatched, 1, __ATOMIC_RELAXED);
			continue;
		}
		for (size_t i = 0; i < n; i++)
			sum[i] += g->slot[r][i];
	}
	pthread_barrier_wait(&g->barrier);
	memcpy(buf, sum, n * sizeof(float));
	free(sum);
	pthread_barrier_wait(&g->barrier);
}

/* What the ranks run on: the same micro-batches for all. */
struct work {
	const float *x;			/* (MICRO_BATCHES, batch, in) */
	const int32_t *labels;		/* (MICRO_BATCHES, batch, labels) */
	int64_t batch, in_size, n_labels;
	bool training;
};

struct rank_run {
	struct dt_model *m;
	struct rank_ctx rc;
	const struct work *w;
	double loss[MICRO_BATCHES];
	int64_t correct[MICRO_BATCHES];
	float *probs[MICRO_BATCHES];	/* copies of dt_model_probs */
	int64_t probs_size;
};

/* Runs the micro-batches through r->m: training (gradients accumulate
 * over them, as a global batch would) or evaluation. */
static void *
run_rank(void *arg)
{
	struct rank_run *r = arg;
	const struct work *w = r->w;

	for (int mb = 0; mb < MICRO_BATCHES; mb++) {
		const float *x = w->x + mb * w->batch * w->in_size;
		const int32_t *labels = w->labels +
					mb * w->batch * w->n_labels;

		dt_model_set_position(r->m, 7, mb * w->batch);
		if (w->training)
			dt_model_train_step(r->m, x, labels, w->batch,
					    1.0f / (float)(MICRO_BATCHES *
							   w->batch),
					    &r->loss[mb], &r->correct[mb]);
		else
			dt_model_eval(r->m, x, labels, w->batch, &r->loss[mb],
				      &r->correct[mb]);
		memcpy(r->probs[mb], dt_model_probs(r->m),
		       (size_t)r->probs_size * sizeof(float));
	}
	return NULL;
}

static void
rank_run_init(struct rank_run *r, struct dt_model *m, const struct work *w)
{
	memset(r, 0, sizeof *r);
	r->m = m;
	r->w = w;
	r->probs_size = w->batch * dt_model_labels_per_sample(m) *
			dt_model_n_classes(m);
	for (int mb = 0; mb < MICRO_BATCHES; mb++)
		r->probs[mb] = dt_xalloc_floats((size_t)r->probs_size);
}

static void
rank_run_fini(struct rank_run *r)
{
	for (int mb = 0; mb < MICRO_BATCHES; mb++)
		free(r->probs[mb]);
}

/* Inputs for m: token ids below vocab when vocab > 0, else uniform values
 * in [-1, 1); labels in [0, n_classes). */
static void
make_work(struct work *w, const struct dt_model *m, int64_t batch,
	  int64_t vocab, bool training)
{
	int64_t nx, nl, classes = dt_model_n_classes(m);
	float *x;
	int32_t *labels;

	w->batch = batch;
	w->in_size = dt_model_input_size(m);
	w->n_labels = dt_model_labels_per_sample(m);
	w->training = training;
	nx = MICRO_BATCHES * batch * w->in_size;
	nl = MICRO_BATCHES * batch * w->n_labels;
	x = dt_xalloc_floats((size_t)nx);
	labels = dt_xcalloc((size_t)nl, sizeof *labels);
	for (int64_t i = 0; i < nx; i++) {
		double u = dt_rng_uniform(99, DT_RNG_SAMPLE, 1, (uint64_t)i);

		x[i] = vocab > 0 ? (float)floor(u * (double)vocab)
				 : (float)(2.0 * u - 1.0);
	}
	for (int64_t i = 0; i < nl; i++)
		labels[i] = (int32_t)(dt_rng_uniform(99, DT_RNG_SAMPLE, 2,
						     (uint64_t)i) *
				      (double)classes);
	w->x = x;
	w->labels = labels;
}

static void
free_work(struct work *w)
{
	free((void *)w->x);
	free((void *)w->labels);
}

/* Whether the group runs split: set by the test of the split (when false,
 * prepare_grads is skipped so the comparison must catch the double
 * counting of replicated gradients). */
struct outcome {
	double worst_loss, worst_probs, worst_grad;
	char worst_tensor[128];
	int64_t correct_diff;
	size_t moved[MAX_RANKS];
	int mismatched;
	bool params_equal;
};

/* Set by the vocabulary tests: the group also runs
 * dt_model_plan_vocab_parallel, and, with vocab_probs, each rank's
 * probabilities are compared on its own classes only (the others are
 * 0 by the design: the sum over the ranks is compared too). */
static bool vocab_split, vocab_probs;
/* Set by test_vocab_loss: the loss node alone is marked vocabulary-split
 * on top of the plan (its input then the same bits on every rank). */
static bool vocab_loss_only;

/* Rank r's share of V rows or classes over s ranks, by hand from
 * dtrain-job(5)'s rule, summing the sizes of the ranks before it: each
 * holds V / s, and the first V mod s one more. */
static void
share_by_hand(int64_t vocab, int s, int r, int64_t *lo, int64_t *len)
{
	*lo = 0;
	for (int q = 0; q < r; q++)
		*lo += vocab / s + (q < vocab % s ? 1 : 0);
	*len = vocab / s + (r < vocab % s ? 1 : 0);
}

/* The error of rank r's probabilities of micro-batch mb against one
 * rank's under the vocabulary split: its own classes against the whole
 * model's, the others must be 0 (inf when not). */
static double
vocab_probs_err(const struct rank_run *run, const struct rank_run *one,
		int mb, int r, int tp)
{
	int64_t classes = dt_model_n_classes(one->m);
	int64_t lo, len, rows = one->probs_size / classes;
	double e = 0.0;

	share_by_hand(classes, tp, r, &lo, &len);
	for (int64_t i = 0; i < rows; i++) {
		const float *a = run->probs[mb] + i * classes;

		for (int64_t k = 0; k < classes; k++)
			if ((k < lo || k >= lo + len) && a[k] != 0.0f)
				return INFINITY;
		e = fmax(e, rel_err(a + lo, one->probs[mb] + i * classes + lo,
				    len));
	}
	return e;
}

/* Runs one model of text alone and a group of tp ranks on the same
 * micro-batches (training or evaluation) and compares them: loss and
 * probabilities of every rank, and in training the sum over the ranks of
 * the gradient arenas (after dt_model_tp_prepare_grads when prepare). */
static void
compare(const char *text, int tp, int64_t batch, int64_t vocab,
	bool training, bool prepare, struct outcome *out)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *ref, *m[MAX_RANKS];
	struct rank_run one, runs[MAX_RANKS];
	pthread_t th[MAX_RANKS];
	struct group g = { .size = tp };
	struct work w;
	struct dt_error err;
	size_t n_params, n_trained;
	float *sum;

	ck_assert_int_le(tp, MAX_RANKS);
	memset(out, 0, sizeof *out);
	parse_job(text, job);
	ref = build(job, batch);
	make_work(&w, ref, batch, vocab, training);
	rank_run_init(&one, ref, &w);
	run_rank(&one);

	pthread_barrier_init(&g.barrier, NULL, (unsigned)tp);
	for (int r = 0; r < tp; r++) {
		enum dt_status st;

		m[r] = build(job, batch);
		st = dt_model_plan_tensor_parallel(m[r], job, tp, &err);
		ck_assert_msg(st == DT_OK, "%s", err.msg);
		if (vocab_split) {
			st = dt_model_plan_vocab_parallel(m[r], job, tp,
							  true, &err);
			ck_assert_msg(st == DT_OK, "%s", err.msg);
		}
		if (vocab_loss_only) {
			m[r]->nodes[m[r]->n_nodes - 1].tp_mode = DT_TP_VOCAB;
			m[r]->nodes[m[r]->n_nodes - 1].tp_size = tp;
		}
		rank_run_init(&runs[r], m[r], &w);
		runs[r].rc.g = &g;
		runs[r].rc.rank = r;
		dt_model_set_tensor_group(m[r], r, tp, group_allreduce,
					  &runs[r].rc);
	}
	for (int r = 0; r < tp; r++)
		ck_assert_int_eq(pthread_create(&th[r], NULL, run_rank,
						&runs[r]), 0);
	for (int r = 0; r < tp; r++)
		pthread_join(th[r], NULL);
	pthread_barrier_destroy(&g.barrier);
	out->mismatched = g.mismatched;
	memcpy(out->moved, g.moved, sizeof g.moved);

	for (int r = 0; r < tp; r++)
		for (int mb = 0; mb < MICRO_BATCHES; mb++) {
			out->worst_loss = fmax(out->worst_loss,
					       rel_err_scalar(runs[r].loss[mb],
							      one.loss[mb]));
			if (vocab_probs)
				out->worst_probs = fmax(out->worst_probs,
					vocab_probs_err(&runs[r], &one, mb, r,
							tp));
			else
				out->worst_probs = fmax(out->worst_probs,
					rel_err(runs[r].probs[mb],
						one.probs[mb],
						one.probs_size));
			out->correct_diff += llabs(runs[r].correct[mb] -
						   one.correct[mb]);
		}

	n_params = dt_model_n_params(ref);
	n_trained = dt_model_n_trained(ref);
	out->params_equal = true;
	for (int r = 0; r < tp; r++)
		if (memcmp(dt_model_params(m[r]), dt_model_params(ref),
			   n_params * sizeof(float)) != 0)
			out->params_equal = false;
	sum = dt_xalloc_floats(n_params);
	for (int r = 0; r < tp; r++) {
		const float *gr = dt_model_grads(m[r]);

		if (prepare)
			dt_model_tp_prepare_grads(m[r]);
		for (size_t i = 0; i < n_trained; i++)
			sum[i] += gr[i];
	}
	for (int t = 0; t < dt_model_n_tensors(ref); t++) {
		struct dt_tensor_info ti;
		double e;

		dt_model_tensor_info(ref, t, &ti);
		if (ti.offset >= n_trained)
			continue;
		e = rel_err(sum + ti.offset, dt_model_grads(ref) + ti.offset,
			    ti.size);
		if (e > out->worst_grad || out->worst_tensor[0] == '\0') {
			out->worst_grad = fmax(e, out->worst_grad);
			snprintf(out->worst_tensor, sizeof out->worst_tensor,
				 "%s.%s", ti.node, ti.name);
		}
	}
	if (!training)
		ck_assert_msg(out->worst_grad == 0.0, "eval wrote gradients");

	free(sum);
	for (int r = 0; r < tp; r++) {
		rank_run_fini(&runs[r]);
		dt_model_free(m[r]);
	}
	rank_run_fini(&one);
	dt_model_free(ref);
	free_work(&w);
	free(job);
}

static void
expect_match(const char *what, const char *text, int tp, int64_t batch,
	     int64_t vocab, bool training, int64_t floats_per_sample)
{
	struct outcome o;

	compare(text, tp, batch, vocab, training, true, &o);
	ck_assert_msg(o.worst_loss <= TOL, "%s tp=%d: loss off by %g", what,
		      tp, o.worst_loss);
	ck_assert_msg(o.worst_probs <= TOL, "%s tp=%d: probs off by %g", what,
		      tp, o.worst_probs);
	ck_assert_msg(o.worst_grad <= TOL, "%s tp=%d: gradient of %s off by "
		      "%g", what, tp, o.worst_tensor, o.worst_grad);
	ck_assert_msg(o.correct_diff == 0, "%s tp=%d: n_correct differs",
		      what, tp);
	ck_assert_msg(o.params_equal, "%s tp=%d: parameters differ", what,
		      tp);
	ck_assert_int_eq(o.mismatched, 0);
	/* Every rank passes the same floats to the sums: in training the
	 * plan's count, in evaluation the forward part of it. */
	for (int r = 0; r < tp; r++)
		ck_assert_msg(o.moved[r] == (size_t)(floats_per_sample *
						     batch * MICRO_BATCHES),
			      "%s tp=%d rank %d: %zu floats summed, the plan "
			      "says %lld per sample", what, tp, r, o.moved[r],
			      (long long)floats_per_sample);
}

/* The floats per sample by hand (graph.h's rule), for training and for
 * evaluation (forward sums only). MLP: d0 is a column layer reading the
 * model input (no input gradient, no sum), d1 a row layer summing its
 * output (16), d2 a column layer summing its input gradient (16), d3 a
 * row layer summing its output (6). */
#define MLP_TRAIN_FLOATS (16 + 16 + 6)
#define MLP_EVAL_FLOATS (16 + 6)
/* gpt (T = 8, C = 16): attention sums its output and its input gradient
 * (T*C each), fc its input gradient (T*C), proj its output (T*C). */
#define GPT_TRAIN_FLOATS (4 * 8 * 16)
#define GPT_EVAL_FLOATS (2 * 8 * 16)

START_TEST(test_mlp_train)
{
	int tp = _i == 0 ? 2 : 4;

	expect_match("mlp", mlp_text, tp, 3, 0, true, MLP_TRAIN_FLOATS);
}
END_TEST

START_TEST(test_mlp_eval)
{
	int tp = _i == 0 ? 2 : 4;

	expect_match("mlp", mlp_text, tp, 3, 0, false, MLP_EVAL_FLOATS);
}
END_TEST

START_TEST(test_gpt_train)
{
	int tp = _i == 0 ? 2 : 4;

	expect_match("gpt", gpt_text, tp, 2, 16, true, GPT_TRAIN_FLOATS);
}
END_TEST

START_TEST(test_gpt_eval)
{
	int tp = _i == 0 ? 2 : 4;

	expect_match("gpt", gpt_text, tp, 2, 16, false, GPT_EVAL_FLOATS);
}
END_TEST

/* fc and attention read outputs another node reads too (din_add), and
 * attention has no biases. */
START_TEST(test_gpt_bare_train)
{
	int tp = _i == 0 ? 2 : 4;

	expect_match("gpt-bare", gpt_bare_text, tp, 2, 16, true,
		     GPT_TRAIN_FLOATS);
}
END_TEST

/* The comparison has teeth: without dt_model_tp_prepare_grads the
 * replicated gradients count tp times and the check must see it. */
START_TEST(test_unprepared_grads_differ)
{
	struct outcome o;

	compare(gpt_text, 2, 2, 16, true, false, &o);
	ck_assert_msg(o.worst_loss <= TOL, "loss off by %g", o.worst_loss);
	ck_assert_msg(o.worst_grad > 0.5, "gradients summed without "
		      "prepare_grads matched (%g, %s)", o.worst_grad,
		      o.worst_tensor);
}
END_TEST

/* ---- ranks that own their slice (dt_model_tp_own_slices) ---------- */

/* The models and runs of one tensor group. */
struct tp_group {
	struct group g;
	struct dt_model *m[MAX_RANKS];
	struct rank_run runs[MAX_RANKS];
};

/* Builds a group of tp ranks for job (each owning its slices when
 * sliced) and runs w's micro-batches on it. */
static void
run_group(const struct dt_job *job, int tp, int64_t batch,
	  const struct work *w, bool sliced, struct tp_group *tg)
{
	pthread_t th[MAX_RANKS];
	struct dt_error err;

	memset(tg, 0, sizeof *tg);
	tg->g.size = tp;
	pthread_barrier_init(&tg->g.barrier, NULL, (unsigned)tp);
	for (int r = 0; r < tp; r++) {
		tg->m[r] = build(job, batch);
		ck_assert_msg(dt_model_plan_tensor_parallel(tg->m[r], job, tp,
							    &err) == DT_OK,
			      "%s", err.msg);
		if (vocab_split)
			ck_assert_msg(dt_model_plan_vocab_parallel(tg->m[r],
					job, tp, true, &err) == DT_OK, "%s",
				      err.msg);
		rank_run_init(&tg->runs[r], tg->m[r], w);
		tg->runs[r].rc.g = &tg->g;
		tg->runs[r].rc.rank = r;
		dt_model_set_tensor_group(tg->m[r], r, tp, group_allreduce,
					  &tg->runs[r].rc);
		if (sliced)
			dt_model_tp_own_slices(tg->m[r]);
	}
	for (int r = 0; r < tp; r++)
		ck_assert_int_eq(pthread_create(&th[r], NULL, run_rank,
						&tg->runs[r]), 0);
	for (int r = 0; r < tp; r++)
		pthread_join(th[r], NULL);
	pthread_barrier_destroy(&tg->g.barrier);
	ck_assert_int_eq(tg->g.mismatched, 0);
}

static void
free_group(struct tp_group *tg)
{
	for (int r = 0; r < tg->g.size; r++) {
		rank_run_fini(&tg->runs[r]);
		dt_model_free(tg->m[r]);
	}
}

/* Whether node is in the NULL-ended list names. */
static bool
named(const char *node, const char *const *names)
{
	for (; *names != NULL; names++)
		if (strcmp(node, *names) == 0)
			return true;
	return false;
}

/* The nodes of a job by how they split: dense column layers, dense row
 * layers and attention heads; each list ends with NULL. */
struct split_names {
	const char *const *column, *const *row, *const *heads;
};

static const char *const no_nodes[] = { NULL };

/* How tensor ti of a node splits, worked out here from its kind and its
 * name: 'c' a column layer's weight or bias, 'r' a row layer's weight or
 * attention's proj_weight (rows), 'q' attention's qkv_weight or qkv_bias
 * (three column runs), 0 not split. */
static char
split_kind(const struct dt_tensor_info *ti, const struct split_names *sn)
{
	if (named(ti->node, sn->column))
		return 'c';
	if (named(ti->node, sn->row))
		return strcmp(ti->name, "weight") == 0 ? 'r' : 0;
	if (!named(ti->node, sn->heads))
		return 0;
	if (strncmp(ti->name, "qkv_", 4) == 0)
		return 'q';
	return strcmp(ti->name, "proj_weight") == 0 ? 'r' : 0;
}

/* Whether blk (the owner's floats, ti) is rank r's block of whole, the
 * same tensor of a whole-tensor rank, for a tensor of kind `kind`
 * (split_kind): a column layer's (in, out) weight its columns
 * [r*out/tp, ...) row by row, its bias those entries; a row block the
 * rows [r*in/tp, ...); attention's qkv (C, 3C) (or (3C)) in each row the
 * columns [r*C/tp, (r+1)*C/tp) of q, then of k, then of v, side by side;
 * a tensor not split the whole. */
static bool
block_equal(const float *blk, const float *whole,
	    const struct dt_tensor_info *ti, int r, int tp, char kind)
{
	int64_t rows = ti->n_dims == 2 ? ti->shape[0] : 1;
	int64_t out = ti->shape[ti->n_dims - 1];

	if (kind == 'q') {
		int64_t c = out / 3, len = c / tp;

		for (int64_t i = 0; i < rows; i++)
			for (int64_t part = 0; part < 3; part++)
				if (memcmp(blk + (i * 3 + part) * len,
					   whole + i * out + part * c + r * len,
					   (size_t)len * sizeof(float)) != 0)
					return false;
		return true;
	}
	if (kind == 'c') {
		int64_t len = out / tp;

		for (int64_t i = 0; i < rows; i++)
			if (memcmp(blk + i * len, whole + i * out + r * len,
				   (size_t)len * sizeof(float)) != 0)
				return false;
		return true;
	}
	if (kind == 0)
		r = 0;
	return memcmp(blk, whole + (size_t)r * (size_t)ti->size,
		      (size_t)ti->size * sizeof(float)) == 0;
}

/* A group owning its slices against one holding whole tensors, same job,
 * same micro-batches (in bf16 products with bf16): every rank's losses
 * and probabilities the same bits; every split tensor (split_kind) 1/tp
 * of its floats, and its parameters and accumulated gradients the
 * owner's block of the whole tensor's, bit for bit; every other tensor
 * whole and the same; the arenas n_params floats each (counted by hand).
 * Then dt_model_tp_prepare_grads leaves an owning rank's gradients as
 * they are (its sums run over the data-parallel group alone), where it
 * zeroes the replicated ones of a whole-tensor rank other than 0. */
static void
expect_slices(const char *text, int tp, int64_t vocab,
	      const struct split_names *sn, int64_t n_params, bool bf16)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct tp_group whole, own;
	struct dt_model *probe;
	struct work w;
	float *before;

	parse_job(text, job);
	probe = build(job, 2);
	make_work(&w, probe, 2, vocab, true);
	dt_kern_set_bf16(bf16);
	run_group(job, tp, 2, &w, false, &whole);
	run_group(job, tp, 2, &w, true, &own);
	dt_kern_set_bf16(0);
	for (int r = 0; r < tp; r++) {
		struct dt_model *a = whole.m[r], *b = own.m[r];

		ck_assert_int_eq(dt_model_n_params(b), n_params);
		ck_assert_int_eq(dt_model_n_tensors(a), dt_model_n_tensors(b));
		for (int mb = 0; mb < MICRO_BATCHES; mb++) {
			ck_assert_msg(own.runs[r].loss[mb] ==
				      whole.runs[r].loss[mb],
				      "tp %d rank %d: loss %.9g, whole "
				      "tensors %.9g", tp, r,
				      own.runs[r].loss[mb],
				      whole.runs[r].loss[mb]);
			ck_assert(memcmp(own.runs[r].probs[mb],
					 whole.runs[r].probs[mb],
					 (size_t)whole.runs[r].probs_size *
					 sizeof(float)) == 0);
		}
		for (int t = 0; t < dt_model_n_tensors(a); t++) {
			struct dt_tensor_info ta, tb;
			char kind;

			dt_model_tensor_info(a, t, &ta);
			dt_model_tensor_info(b, t, &tb);
			ck_assert_str_eq(ta.node, tb.node);
			kind = split_kind(&ta, sn);
			ck_assert_msg(tb.size == (kind ? ta.size / tp
						       : ta.size),
				      "%s.%s: %lld floats held, whole %lld",
				      ta.node, ta.name, (long long)tb.size,
				      (long long)ta.size);
			ck_assert_msg(block_equal(dt_model_params(b) +
						  tb.offset,
						  dt_model_params(a) +
						  ta.offset, &tb, r, tp,
						  kind) &&
				      block_equal(dt_model_grads(b) +
						  tb.offset,
						  dt_model_grads(a) +
						  ta.offset, &tb, r, tp,
						  kind),
				      "tp %d rank %d: %s.%s is not the block "
				      "of the whole tensor", tp, r, ta.node,
				      ta.name);
		}
	}
	before = dt_xalloc_floats(dt_model_n_params(own.m[1]));
	memcpy(before, dt_model_grads(own.m[1]),
	       dt_model_n_params(own.m[1]) * sizeof(float));
	dt_model_tp_prepare_grads(own.m[1]);
	ck_assert(memcmp(before, dt_model_grads(own.m[1]),
			 dt_model_n_params(own.m[1]) * sizeof(float)) == 0);
	free(before);
	before = dt_xalloc_floats(dt_model_n_params(whole.m[1]));
	memcpy(before, dt_model_grads(whole.m[1]),
	       dt_model_n_params(whole.m[1]) * sizeof(float));
	dt_model_tp_prepare_grads(whole.m[1]);
	ck_assert(memcmp(before, dt_model_grads(whole.m[1]),
			 dt_model_n_params(whole.m[1]) * sizeof(float)) != 0);
	free(before);
	free_group(&whole);
	free_group(&own);
	dt_model_free(probe);
	free_work(&w);
	free(job);
}

/* The MLP (in 20): d0 (20 -> 32) and d2 (16 -> 24) by columns, d1
 * (32 -> 16) and d3 (24 -> 6) by rows, their biases whole. */
START_TEST(test_mlp_own_slices)
{
	static const char *const column[] = { "d0", "d2", NULL };
	static const char *const row[] = { "d1", "d3", NULL };
	const struct split_names sn = { column, row, no_nodes };
	int tp = _i == 0 ? 2 : 4;

	expect_slices(mlp_text, tp, 0, &sn,
		      (20 * 32 + 32) / tp + 32 * 16 / tp + 16 +
		      (16 * 24 + 24) / tp + 24 * 6 / tp + 6, false);
}
END_TEST

/* text with the model keys `keys` (YAML lines, "" for none) put first
 * under model:, in a new heap string. */
static char *
with_model_keys(const char *text, const char *keys)
{
	const char *at = strstr(text, "model:\n");
	size_t head, len = strlen(text) + strlen(keys) + 1;
	char *s = dt_xmalloc(len, 1);

	ck_assert_ptr_nonnull(at);
	head = (size_t)(at - text) + strlen("model:\n");
	memcpy(s, text, head);
	strcpy(s + head, keys);
	strcat(s, text + head);
	return s;
}

/* The variant of loop index i of the heads tests: tp 2 or 4 (bit 0), the
 * heads materialized, fused or with their probabilities recomputed
 * ((i / 2) % 3), f32 or bf16 (i / 6). Returns false, saying why, for a
 * bf16 variant on a CPU without AVX512_BF16 (or with DTRAIN_CPU taking it
 * away). */
static bool
heads_variant(int i, int *tp, const char **keys, bool *bf16)
{
	static const char *const modes[] = {
		"", "  attention: fused\n", "  recompute: attention\n",
	};

	*tp = i % 2 == 0 ? 2 : 4;
	*keys = modes[(i / 2) % 3];
	*bf16 = i / 6 == 1;
	if (*bf16 && dt_kern_bf16_missing() != NULL) {
		printf("test_graph_tp: bf16 slices of attention skipped: the "
		       "CPU lacks %s\n", dt_kern_bf16_missing());
		return false;
	}
	return true;
}

/* The attention block alone (C 16, T 8, 4 heads): attn's qkv (16 x 48 +
 * 48) by heads and its proj_weight (16 x 16) by rows, its proj_bias
 * (16), the embeddings (16 x 16, 8 x 16) and the head (16 x 16 + 16)
 * whole. */
START_TEST(test_attn_own_slices)
{
	static const char *const heads[] = { "attn", NULL };
	const struct split_names sn = { no_nodes, no_nodes, heads };
	const char *keys;
	bool bf16;
	int tp;
	char *text;

	if (!heads_variant(_i, &tp, &keys, &bf16))
		return;
	text = with_model_keys(attn_text, keys);
	expect_slices(text, tp, 16, &sn,
		      16 * 16 + 8 * 16 + (16 * 48 + 48) / tp +
		      16 * 16 / tp + 16 + 16 * 16 + 16, bf16);
	free(text);
}
END_TEST

/* The block (C 16, vocab 16, T 8): fc (16 -> 64) by columns, proj
 * (64 -> 16) by rows, attention by heads (qkv 16 x 48 + 48 and the
 * proj_weight's 16 x 16 rows; proj_bias 16 whole); the embeddings
 * (16 x 16, 8 x 16), three layernorms (2 x 16 each) and the head
 * (16 x 16 + 16) whole. */
START_TEST(test_gpt_own_slices)
{
	static const char *const column[] = { "fc", NULL };
	static const char *const row[] = { "proj", NULL };
	static const char *const heads[] = { "attn", NULL };
	const struct split_names sn = { column, row, heads };
	const char *keys;
	bool bf16;
	int tp;
	char *text;

	if (!heads_variant(_i, &tp, &keys, &bf16))
		return;
	text = with_model_keys(gpt_text, keys);
	expect_slices(text, tp, 16, &sn,
		      16 * 16 + 8 * 16 + 3 * 2 * 16 +
		      (16 * 48 + 48) / tp + 16 * 16 / tp + 16 +
		      (16 * 64 + 64) / tp + 64 * 16 / tp + 16 +
		      16 * 16 + 16, bf16);
	free(text);
}
END_TEST

/* The block without layernorms or attention biases: attention's input
 * gradient adds to the residual's (din_add); qkv (16 x 48) and proj
 * (16 x 16) by heads, fc (16 -> 32) by columns, proj (32 -> 16, no bias)
 * by rows. */
START_TEST(test_gpt_bare_own_slices)
{
	static const char *const column[] = { "fc", NULL };
	static const char *const row[] = { "proj", NULL };
	static const char *const heads[] = { "attn", NULL };
	const struct split_names sn = { column, row, heads };
	const char *keys;
	bool bf16;
	int tp;
	char *text;

	if (!heads_variant(_i, &tp, &keys, &bf16))
		return;
	text = with_model_keys(gpt_bare_text, keys);
	expect_slices(text, tp, 16, &sn,
		      16 * 16 + 8 * 16 + 16 * 48 / tp + 16 * 16 / tp +
		      (16 * 32 + 32) / tp + 32 * 16 / tp + 16 * 16 + 16,
		      bf16);
	free(text);
}
END_TEST

/* dt_node_tp_block by hand for the block at tp 4: attention's qkv
 * (16, 48) at rank 2 the columns 8..11 of q, 24..27 of k and 40..43 of
 * v; proj_weight (16, 16) its rows 8..11; fc (16 -> 64) at rank 1 its
 * columns 16..31; proj (64 -> 16) its rows 16..31; proj_bias, the row
 * layer's bias and a layernorm's gain replicated. */
START_TEST(test_tp_block)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m;
	struct dt_error err;
	struct dt_tp_block b;
	const struct dt_node *attn = NULL, *fc = NULL, *proj = NULL,
			     *ln = NULL;

	parse_job(gpt_text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 4, &err),
			 DT_OK);
	for (int i = 0; i < m->n_nodes; i++) {
		const struct dt_node *n = &m->nodes[i];

		if (strcmp(n->name, "attn") == 0)
			attn = n;
		else if (strcmp(n->name, "fc") == 0)
			fc = n;
		else if (strcmp(n->name, "proj") == 0)
			proj = n;
		else if (strcmp(n->name, "ln1") == 0)
			ln = n;
	}
	ck_assert(attn && fc && proj && ln);
	ck_assert_int_eq(attn->n_tensors, 4);
	ck_assert(dt_node_tp_block(attn, 0, 2, &b));	/* qkv_weight */
	ck_assert(b.first_row == 0 && b.n_rows == 16 && b.row_len == 48);
	ck_assert(b.n_seg == 3 && b.seg_len == 4 && b.seg_col[0] == 8 &&
		  b.seg_col[1] == 24 && b.seg_col[2] == 40);
	ck_assert(dt_node_tp_block(attn, 1, 2, &b));	/* qkv_bias */
	ck_assert(b.first_row == 0 && b.n_rows == 1 && b.row_len == 48);
	ck_assert(b.n_seg == 3 && b.seg_len == 4 && b.seg_col[0] == 8 &&
		  b.seg_col[1] == 24 && b.seg_col[2] == 40);
	ck_assert(dt_node_tp_block(attn, 2, 2, &b));	/* proj_weight */
	ck_assert(b.first_row == 8 && b.n_rows == 4 && b.row_len == 16);
	ck_assert(b.n_seg == 1 && b.seg_col[0] == 0 && b.seg_len == 16);
	ck_assert(!dt_node_tp_block(attn, 3, 2, &b));	/* proj_bias */
	ck_assert(dt_node_tp_block(fc, 0, 1, &b));
	ck_assert(b.first_row == 0 && b.n_rows == 16 && b.row_len == 64);
	ck_assert(b.n_seg == 1 && b.seg_col[0] == 16 && b.seg_len == 16);
	ck_assert(dt_node_tp_block(fc, 1, 1, &b));
	ck_assert(b.n_rows == 1 && b.row_len == 64 && b.seg_col[0] == 16 &&
		  b.seg_len == 16);
	ck_assert(dt_node_tp_block(proj, 0, 1, &b));
	ck_assert(b.first_row == 16 && b.n_rows == 16 && b.row_len == 16);
	ck_assert(b.n_seg == 1 && b.seg_col[0] == 0 && b.seg_len == 16);
	ck_assert(!dt_node_tp_block(proj, 1, 1, &b));
	ck_assert(!dt_node_tp_block(ln, 0, 0, &b));
	dt_model_free(m);
	free(job);
}
END_TEST

/* Heads that tp does not divide: the plan's refusal, naming the layer,
 * and nothing for dt_model_tp_own_slices to split afterwards. */
START_TEST(test_heads_refused)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct group g = { .size = 3 };
	struct rank_ctx rc = { &g, 1 };
	struct dt_model *m;
	struct dt_error err;
	size_t n_params;

	parse_job(attn_text, job);
	m = build(job, 2);
	n_params = dt_model_n_params(m);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 3, &err),
			 DT_ERR_PLAN);
	ck_assert_str_eq(err.msg, "job.yaml:8:7: model.layers.2 (attn): "
			 "tensor_parallel 3 does not divide heads 4");
	dt_model_set_tensor_group(m, 1, 3, group_allreduce, &rc);
	dt_model_tp_own_slices(m);
	ck_assert_uint_eq(dt_model_n_params(m), n_params);
	dt_model_free(m);
	free(job);
}
END_TEST

/* Which nodes split, the floats each node range sums, and FLOPs. */
START_TEST(test_plan_mlp)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m;
	struct dt_layer_info li;
	struct dt_error err;
	double flops1;
	int last;

	parse_job(mlp_text, job);
	m = build(job, 0);	/* shapes only, as plan/ builds it */
	last = dt_model_n_layers(m) - 1;
	ck_assert_int_eq(last, 8);	/* d0 relu drop d1 relu d2 gelu d3
					 * loss */
	flops1 = dt_model_flops_per_sample(m);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0, last), 0);

	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 2, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0, last),
			 MLP_TRAIN_FLOATS);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0, 3), 16);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 4, last), 16 + 6);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0, 2), 0);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 5, 5), 16);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 7, 7), 6);

	/* d0: 2*20*32/2 + 32/2; d1: 2*32*16/2 + 16 (its bias is whole) */
	dt_model_layer_info(m, 0, &li);
	ck_assert_str_eq(li.name, "d0");
	ck_assert_double_eq(li.fwd_flops, 640.0 + 16.0);
	dt_model_layer_info(m, 3, &li);
	ck_assert_str_eq(li.name, "d1");
	ck_assert_double_eq(li.fwd_flops, 512.0 + 16.0);
	dt_model_layer_info(m, 7, &li);
	ck_assert_str_eq(li.name, "d3");
	ck_assert_double_eq(li.fwd_flops, 144.0 + 6.0);
	/* by dense nodes, (1312 + 1040 + 792 + 294) - (656 + 528 + 396 +
	 * 150) = 1708 fewer forward FLOPs */
	ck_assert_double_eq_tol(dt_model_flops_per_sample(m),
				flops1 - 3.0 * 1708.0, 1e-9);

	/* 1 gives the unsplit model back, to the bit */
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 1, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0, last), 0);
	ck_assert(dt_model_flops_per_sample(m) == flops1);
	dt_model_free(m);
	free(job);
}
END_TEST

START_TEST(test_plan_gpt)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m;
	struct dt_layer_info li;
	struct dt_error err;
	int n;

	parse_job(gpt_text, job);
	m = build(job, 0);
	n = dt_model_n_layers(m);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 4, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0, n - 1),
			 GPT_TRAIN_FLOATS);
	for (int i = 0; i < n; i++) {
		dt_model_layer_info(m, i, &li);
		if (strcmp(li.name, "attn") == 0) {
			/* T = 8, C = 16, h = 4, over 4 ranks: projections
			 * 2*T*C*4C/4, qkv bias 3*T*C/4, proj bias T*C,
			 * scores and sum 4*T*T*C/4, softmax 5*h*T*T/4 */
			double want = 2.0 * 8 * 16 * 64 / 4 + 3.0 * 8 * 16 / 4
				    + 8 * 16 + 4.0 * 8 * 8 * 16 / 4
				    + 5.0 * 4 * 8 * 8 / 4;

			ck_assert_double_eq_tol(li.fwd_flops, want, 1e-9);
			ck_assert_int_eq(dt_model_tp_floats_per_sample(m, i,
								       i),
					 2 * 8 * 16);
		}
		if (strcmp(li.name, "head") == 0)	/* not split */
			ck_assert_double_eq(li.fwd_flops,
					    8.0 * (2 * 16 * 16 + 16));
	}
	dt_model_free(m);
	free(job);
}
END_TEST

/* A degree that does not divide a layer: DT_ERR_PLAN naming the layer's
 * place and name. */
START_TEST(test_plan_errors)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m;
	struct dt_error err;

	parse_job(mlp_text, job);
	m = build(job, 0);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 3, &err),
			 DT_ERR_PLAN);
	ck_assert_int_eq(err.status, DT_ERR_PLAN);
	ck_assert_str_eq(err.msg, "job.yaml:6:7: model.layers.0 (d0): "
			 "tensor_parallel 3 does not divide units 32");
	/* the failed plan leaves nothing split */
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0,
						       dt_model_n_layers(m) -
						       1), 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 0, &err),
			 DT_ERR_PLAN);
	dt_model_free(m);

	parse_job(gpt_text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 8, &err),
			 DT_ERR_PLAN);
	ck_assert_str_eq(err.msg, "job.yaml:9:7: model.layers.3 (attn): "
			 "tensor_parallel 8 does not divide heads 4");
	dt_model_free(m);
	free(job);
}
END_TEST


/* ---- the vocabulary split (dt_model_plan_vocab_parallel) ------------ */

/* The table alone before the loss (T = 8, V = 16, dim 16): the loss reads
 * the embedding's (8, 16) rows as logits, so the loss stays whole and
 * every value is the embedding's own: byte for byte. */
static const char emb_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 16, dim: 16}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

/* A token model whose head the loss reads (T = 8, V = 16, C = 8): the
 * head's logits of V/s classes, the loss across the ranks. */
static const char head_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 16, dim: 8}\n"
	"    - {type: layernorm, name: ln}\n"
	"    - {type: dense, name: head, units: 16}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

/* The same, the head tied to the table (GPT-2's lm_head), no bias. */
static const char tied_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 16, dim: 8}\n"
	"    - {type: layernorm, name: ln}\n"
	"    - {type: dense, name: head, units: 16, tie: tok, bias: false}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

/* Vocabularies that the degrees do not divide (dtrain-job(5): the first
 * V mod s ranks hold one row or class more). The table alone, V 97 and
 * dim 17 (the loss's 17 classes: 9 + 8 at tp 2, 5 + 4 + 4 + 4 at tp 4),
 * and the head models at V 97 (49 + 48; 33 + 32 + 32; 25 + 24 + 24 + 24)
 * and V 98 (25 + 25 + 24 + 24 at tp 4). */
static const char emb97_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 97, dim: 17}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

static const char head97_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 97, dim: 8}\n"
	"    - {type: layernorm, name: ln}\n"
	"    - {type: dense, name: head, units: 97}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

static const char head98_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 98, dim: 8}\n"
	"    - {type: layernorm, name: ln}\n"
	"    - {type: dense, name: head, units: 98}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

static const char tied97_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 97, dim: 8}\n"
	"    - {type: layernorm, name: ln}\n"
	"    - {type: dense, name: head, units: 97, tie: tok, bias: true}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

/* The floats per sample of the vocabulary-split nodes, by hand (T = 8):
 * the embedding sums its (8, dim) output; the head its (8, 8) input
 * gradient in training; the loss gathers every rank's maximum and its
 * z[label], first-maximum pair (3 s a row) and passes s running sums. */
#define EMB_FLOATS (8 * 16)
#define HEAD_FLOATS(tp, train) (8 * 8 + ((train) ? 8 * 8 : 0) + 4 * (tp) * 8)

/* Runs text on tp ranks with the vocabulary split, token ids below
 * vocab, and checks the floats moved against want and
 * dt_model_tp_floats_per_sample. */
static void
vocab_run_ids(const char *text, int64_t vocab, int tp, bool training,
	      bool split_loss, int64_t want, struct outcome *o)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m;
	struct dt_error err;

	parse_job(text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, tp, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_plan_vocab_parallel(m, job, tp, true,
							&err),
			 DT_OK);
	if (training)	/* the count is training's */
		ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0,
				 dt_model_n_layers(m) - 1), want);
	dt_model_free(m);
	free(job);
	vocab_split = true;
	vocab_probs = split_loss;
	compare(text, tp, 2, vocab, training, true, o);
	vocab_split = vocab_probs = false;
	ck_assert_int_eq(o->mismatched, 0);
	for (int r = 0; r < tp; r++)
		ck_assert_msg(o->moved[r] == (size_t)(want * 2 * MICRO_BATCHES),
			      "tp %d rank %d: %zu floats summed, want %lld a "
			      "sample", tp, r, o->moved[r], (long long)want);
	ck_assert_msg(o->correct_diff == 0, "tp %d: n_correct differs", tp);
	ck_assert_msg(o->params_equal, "tp %d: parameters differ", tp);
}

/* vocab_run_ids with the ids of the 16-row tables. */
static void
vocab_run(const char *text, int tp, bool training, bool split_loss,
	  int64_t want, struct outcome *o)
{
	vocab_run_ids(text, 16, tp, training, split_loss, want, o);
}

/* The embedding split by rows: its output, the loss, the probabilities
 * and the table's gradient (its rows summed over the ranks) byte for
 * byte, in training and in evaluation. */
START_TEST(test_vocab_embedding)
{
	int tp = _i % 2 == 0 ? 2 : 4;
	bool training = _i < 2;
	struct outcome o;

	vocab_run(emb_text, tp, training, false, EMB_FLOATS, &o);
	ck_assert_msg(o.worst_loss == 0.0 && o.worst_probs == 0.0,
		      "tp %d: loss off by %g, probs by %g", tp, o.worst_loss,
		      o.worst_probs);
	ck_assert_msg(o.worst_grad == 0.0, "tp %d: gradient of %s off by %g",
		      tp, o.worst_tensor, o.worst_grad);
}
END_TEST

/* The cross-entropy across the ranks on logits that are the same bits on
 * every rank: the loss of emb_text marked vocabulary-split over the
 * table's whole (8, 16) rows, in evaluation (its backward would leave the
 * other classes' gradient to a layer that reads them): the loss, n_correct
 * and each rank's probabilities of its classes byte for byte, the others
 * 0. */
START_TEST(test_vocab_loss)
{
	int tp = _i == 0 ? 2 : 4;
	struct outcome o;

	vocab_loss_only = true;
	vocab_run(emb_text, tp, false, true, EMB_FLOATS + 4 * tp * 8, &o);
	vocab_loss_only = false;
	ck_assert_msg(o.worst_loss == 0.0, "tp %d: loss off by %g", tp,
		      o.worst_loss);
	ck_assert_msg(o.worst_probs == 0.0, "tp %d: probs off by %g", tp,
		      o.worst_probs);
}
END_TEST

/* The head's logits of V/s classes and the loss across the ranks. The
 * head's share is an sgemm of V/s columns, whose bits this build's BLAS
 * may block differently from the whole V (measured here: the loss
 * 5e-9 off at tp 2), so the loss, the probabilities and the gradients
 * are held to TOL, the tensor-parallel tolerance; n_correct is exact.
 * Tensors in order: tok.weight, ln.gamma, ln.beta, head.weight,
 * head.bias. */
START_TEST(test_vocab_head)
{
	int tp = _i % 2 == 0 ? 2 : 4;
	bool training = _i < 2;
	struct outcome o;

	vocab_run(head_text, tp, training, true, HEAD_FLOATS(tp, training),
		  &o);
	ck_assert_msg(o.worst_loss <= TOL, "tp %d: loss off by %g", tp,
		      o.worst_loss);
	ck_assert_msg(o.worst_probs <= TOL, "tp %d: probs off by %g", tp,
		      o.worst_probs);
	ck_assert_msg(o.worst_grad <= TOL, "tp %d: gradient of %s off by %g",
		      tp, o.worst_tensor, o.worst_grad);
}
END_TEST

/* The tied head (its copy's rows of the classes), as test_vocab_head. */
START_TEST(test_vocab_tied)
{
	int tp = _i % 2 == 0 ? 2 : 4;
	bool training = _i < 2;
	struct outcome o;

	vocab_run(tied_text, tp, training, true, HEAD_FLOATS(tp, training),
		  &o);
	ck_assert_msg(o.worst_loss <= TOL, "tp %d: loss off by %g", tp,
		      o.worst_loss);
	ck_assert_msg(o.worst_probs <= TOL, "tp %d: probs off by %g", tp,
		      o.worst_probs);
	ck_assert_msg(o.worst_grad <= TOL, "tp %d: gradient of %s off by %g",
		      tp, o.worst_tensor, o.worst_grad);
}
END_TEST

/* The vocabularies the degrees do not divide: the table's uneven blocks
 * by rows, the loss, the probabilities and the table's gradient byte for
 * byte (as test_vocab_embedding), V 97 at tp 2 and 4. The old plan kept
 * the table whole: nothing summed, which the floats' count catches. */
START_TEST(test_vocab_uneven_embedding)
{
	int tp = _i % 2 == 0 ? 2 : 4;
	bool training = _i < 2;
	struct outcome o;

	vocab_run_ids(emb97_text, 97, tp, training, false, 8 * 17, &o);
	ck_assert_msg(o.worst_loss == 0.0 && o.worst_probs == 0.0,
		      "tp %d: loss off by %g, probs by %g", tp, o.worst_loss,
		      o.worst_probs);
	ck_assert_msg(o.worst_grad == 0.0, "tp %d: gradient of %s off by %g",
		      tp, o.worst_tensor, o.worst_grad);
}
END_TEST

/* The cross-entropy across uneven class shares (17 classes: 9 + 8 at
 * tp 2, 5 + 4 + 4 + 4 at tp 4) on logits that are the same bits on every
 * rank, as test_vocab_loss: the loss, n_correct and each rank's
 * probabilities of its classes byte for byte, the others 0. */
START_TEST(test_vocab_uneven_loss)
{
	int tp = _i == 0 ? 2 : 4;
	struct outcome o;

	vocab_loss_only = true;
	vocab_run_ids(emb97_text, 97, tp, false, true, 8 * 17 + 4 * tp * 8,
		      &o);
	vocab_loss_only = false;
	ck_assert_msg(o.worst_loss == 0.0, "tp %d: loss off by %g", tp,
		      o.worst_loss);
	ck_assert_msg(o.worst_probs == 0.0, "tp %d: probs off by %g", tp,
		      o.worst_probs);
}
END_TEST

/* The untied head (_i / 2 = 0..3: V 97 at tp 2, 3, 4, V 98 at tp 4) and
 * the tied one with a bias (_i / 2 = 4..6: V 97 at tp 2, 3, 4), in
 * training (even _i) and evaluation: the tables' uneven rows, the head's
 * uneven classes and the loss across them, to TOL as test_vocab_head
 * (the head's share is an sgemm of fewer columns); n_correct exact. */
START_TEST(test_vocab_uneven_head)
{
	static const struct {
		const char *text;
		int64_t vocab;
		int tp;
	} v[] = {
		{ head97_text, 97, 2 }, { head97_text, 97, 3 },
		{ head97_text, 97, 4 }, { head98_text, 98, 4 },
		{ tied97_text, 97, 2 }, { tied97_text, 97, 3 },
		{ tied97_text, 97, 4 },
	};
	const int i = _i / 2, tp = v[i].tp;
	const bool training = _i % 2 == 0;
	struct outcome o;

	vocab_run_ids(v[i].text, v[i].vocab, tp, training, true,
		      HEAD_FLOATS(tp, training), &o);
	ck_assert_msg(o.worst_loss <= TOL, "V %lld tp %d: loss off by %g",
		      (long long)v[i].vocab, tp, o.worst_loss);
	ck_assert_msg(o.worst_probs <= TOL, "V %lld tp %d: probs off by %g",
		      (long long)v[i].vocab, tp, o.worst_probs);
	ck_assert_msg(o.worst_grad <= TOL, "V %lld tp %d: gradient of %s off "
		      "by %g", (long long)v[i].vocab, tp, o.worst_tensor,
		      o.worst_grad);
}
END_TEST

/* Ranks owning their uneven vocabulary blocks (dt_model_tp_own_slices)
 * against ranks holding whole tensors, same tp (_i: V 97 untied at tp 2,
 * 3, 4, V 98 at tp 4, V 97 tied with a bias at tp 3): every rank's loss
 * and probabilities the same bits; rank r holds its share by hand (len
 * rows of the table (len, 8), the head's (8, len) columns and (len) bias,
 * or the tied copy's (len, 8) rows and (len) bias), its parameters and
 * gradients the block of the whole tensors', and an arena of 17 len + 16
 * floats (table, head, ln's gamma and beta of 8), sized at its own
 * blocks. */
START_TEST(test_vocab_uneven_own_slices)
{
	static const struct {
		const char *text;
		int64_t vocab;
		int tp;
	} v[] = {
		{ head97_text, 97, 2 }, { head97_text, 97, 3 },
		{ head97_text, 97, 4 }, { head98_text, 98, 4 },
		{ tied97_text, 97, 3 },
	};
	const int tp = v[_i].tp;
	const int64_t vocab = v[_i].vocab;
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct tp_group whole, own;
	struct dt_model *probe;
	struct work w;

	parse_job(v[_i].text, job);
	probe = build(job, 2);
	make_work(&w, probe, 2, vocab, true);
	vocab_split = true;
	run_group(job, tp, 2, &w, false, &whole);
	run_group(job, tp, 2, &w, true, &own);
	vocab_split = false;
	for (int r = 0; r < tp; r++) {
		struct dt_model *a = whole.m[r], *b = own.m[r];
		int64_t lo, len;

		share_by_hand(vocab, tp, r, &lo, &len);
		ck_assert_int_eq(dt_model_n_params(b), 17 * len + 16);
		for (int mb = 0; mb < MICRO_BATCHES; mb++) {
			ck_assert_msg(own.runs[r].loss[mb] ==
				      whole.runs[r].loss[mb],
				      "V %lld tp %d rank %d: loss %.9g, whole "
				      "tensors %.9g", (long long)vocab, tp, r,
				      own.runs[r].loss[mb],
				      whole.runs[r].loss[mb]);
			ck_assert(memcmp(own.runs[r].probs[mb],
					 whole.runs[r].probs[mb],
					 (size_t)whole.runs[r].probs_size *
					 sizeof(float)) == 0);
		}
		for (int t = 0; t < dt_model_n_tensors(a); t++) {
			struct dt_tensor_info ta, tb;
			bool rows, cols;

			dt_model_tensor_info(a, t, &ta);
			dt_model_tensor_info(b, t, &tb);
			/* the table and a tied copy (V, 8) by rows; an
			 * untied head (8, V) and a bias (V) by columns */
			rows = ta.n_dims == 2 && ta.shape[0] == vocab;
			cols = !rows && ta.shape[ta.n_dims - 1] == vocab;
			ck_assert_int_eq(tb.size, rows || cols ?
					 ta.size / vocab * len : ta.size);
			for (int arena = 0; arena < 2; arena++) {
				const float *x = (arena ? dt_model_grads(b)
						  : dt_model_params(b)) +
						 tb.offset;
				const float *y = (arena ? dt_model_grads(a)
						  : dt_model_params(a)) +
						 ta.offset;
				int64_t n_rows = ta.size / vocab;

				if (rows)
					y += lo * 8;
				for (int64_t i = 0; cols && i < n_rows; i++)
					ck_assert_msg(memcmp(x + i * len,
						y + i * vocab + lo,
						(size_t)len * sizeof(float)) ==
						0, "%s.%s rank %d row %lld",
						ta.node, ta.name, r,
						(long long)i);
				if (!cols)
					ck_assert_msg(memcmp(x, y,
						(size_t)tb.size *
						sizeof(float)) == 0,
						"%s.%s rank %d", ta.node,
						ta.name, r);
			}
		}
	}
	free_group(&whole);
	free_group(&own);
	dt_model_free(probe);
	free_work(&w);
	free(job);
}
END_TEST

/* dt_node_tp_block's vocabulary case at tp 4 (V 16, C 8): the table's
 * rank 3 block is rows 12..15 whole, the tied copy's rank 1 block rows
 * 4..7 whole; the trainer's plan (split_tied false) keeps a tied head
 * whole; an untied head's rank 1 block at tp 2 is columns 8..15. */
START_TEST(test_vocab_blocks)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m;
	struct dt_error err;
	struct dt_tp_block b;
	const struct dt_node *tok, *head;

	parse_job(tied_text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 4, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_plan_vocab_parallel(m, job, 4, true,
							&err),
			 DT_OK);
	tok = &m->nodes[0];
	head = &m->nodes[2];
	ck_assert(dt_node_tp_block(tok, 0, 3, &b));
	ck_assert_int_eq(b.first_row, 12);
	ck_assert_int_eq(b.n_rows, 4);
	ck_assert_int_eq(b.row_len, 8);
	ck_assert_int_eq(b.n_seg, 1);
	ck_assert_int_eq(b.seg_col[0], 0);
	ck_assert_int_eq(b.seg_len, 8);
	ck_assert(dt_node_tp_block(head, 0, 1, &b));
	ck_assert_int_eq(b.first_row, 4);
	ck_assert_int_eq(b.n_rows, 4);
	ck_assert_int_eq(b.seg_len, 8);
	dt_model_free(m);
	/* without split_tied (the trainer's call) the tied head and the
	 * loss stay whole, the table splits */
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 4, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_plan_vocab_parallel(m, job, 4, false,
							&err),
			 DT_OK);
	ck_assert(dt_node_tp_block(&m->nodes[0], 0, 3, &b));
	ck_assert(!dt_node_tp_block(&m->nodes[2], 0, 1, &b));
	ck_assert_int_eq(m->nodes[m->n_nodes - 1].tp_mode, DT_TP_NONE);
	dt_model_free(m);
	/* the untied head: its weight (8, 16) by columns, its bias too */
	free(job);
	job = dt_xcalloc(1, sizeof *job);
	parse_job(head_text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 2, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_plan_vocab_parallel(m, job, 2, false,
							&err),
			 DT_OK);
	ck_assert(dt_node_tp_block(&m->nodes[2], 0, 1, &b));
	ck_assert_int_eq(b.first_row, 0);
	ck_assert_int_eq(b.n_rows, 8);
	ck_assert_int_eq(b.row_len, 16);
	ck_assert_int_eq(b.seg_col[0], 8);
	ck_assert_int_eq(b.seg_len, 8);
	ck_assert(dt_node_tp_block(&m->nodes[2], 1, 1, &b));
	ck_assert_int_eq(b.n_rows, 1);
	ck_assert_int_eq(b.seg_col[0], 8);
	ck_assert_int_eq(m->nodes[m->n_nodes - 1].tp_mode, DT_TP_VOCAB);
	dt_model_free(m);
	free(job);
}
END_TEST

/* The uneven blocks by hand: V 97 at tp 4 holds 25 + 24 + 24 + 24 rows
 * or classes from 0, 25, 49, 73; V 98 at tp 4 25 + 25 + 24 + 24 from 0,
 * 25, 50, 74; V 97 at tp 2 49 + 48. The table's rows, the untied head's
 * weight and bias columns, the tied copy's rows; the owner of every class
 * against share_by_hand; the plan's FLOPs of the head and the loss the
 * largest share's, 25 classes at V 97 tp 4: head 2*8*8*25 + 8*25 = 3400
 * (a bias per class), loss 5*8*25 = 1000. */
START_TEST(test_vocab_uneven_blocks)
{
	static const int64_t lo97[] = { 0, 25, 49, 73 }, n97[] = { 25, 24,
								    24, 24 };
	static const int64_t lo98[] = { 0, 25, 50, 74 }, n98[] = { 25, 25,
								    24, 24 };
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m;
	struct dt_error err;
	struct dt_tp_block b;
	struct dt_layer_info li;

	parse_job(head97_text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 4, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_plan_vocab_parallel(m, job, 4, false,
							&err), DT_OK);
	ck_assert_int_eq(m->nodes[0].tp_mode, DT_TP_VOCAB);
	ck_assert_int_eq(m->nodes[2].tp_mode, DT_TP_VOCAB);
	ck_assert_int_eq(m->nodes[3].tp_mode, DT_TP_VOCAB);
	for (int r = 0; r < 4; r++) {
		ck_assert(dt_node_tp_block(&m->nodes[0], 0, r, &b));
		ck_assert_int_eq(b.first_row, lo97[r]);
		ck_assert_int_eq(b.n_rows, n97[r]);
		ck_assert_int_eq(b.row_len, 8);
		ck_assert_int_eq(b.n_seg, 1);
		ck_assert_int_eq(b.seg_col[0], 0);
		ck_assert_int_eq(b.seg_len, 8);
		for (int k = 0; k < 2; k++) {	/* weight (8, 97), bias */
			ck_assert(dt_node_tp_block(&m->nodes[2], k, r, &b));
			ck_assert_int_eq(b.first_row, 0);
			ck_assert_int_eq(b.n_rows, k == 0 ? 8 : 1);
			ck_assert_int_eq(b.row_len, 97);
			ck_assert_int_eq(b.n_seg, 1);
			ck_assert_int_eq(b.seg_col[0], lo97[r]);
			ck_assert_int_eq(b.seg_len, n97[r]);
		}
	}
	dt_model_layer_info(m, 2, &li);
	ck_assert_str_eq(li.name, "head");
	ck_assert_double_eq(li.fwd_flops, 3400.0);
	dt_model_layer_info(m, 3, &li);
	ck_assert_double_eq(li.fwd_flops, 1000.0);
	dt_model_free(m);
	free(job);

	job = dt_xcalloc(1, sizeof *job);
	parse_job(head98_text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 4, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_plan_vocab_parallel(m, job, 4, false,
							&err), DT_OK);
	for (int r = 0; r < 4; r++) {
		ck_assert(dt_node_tp_block(&m->nodes[0], 0, r, &b));
		ck_assert_int_eq(b.first_row, lo98[r]);
		ck_assert_int_eq(b.n_rows, n98[r]);
		ck_assert(dt_node_tp_block(&m->nodes[2], 0, r, &b));
		ck_assert_int_eq(b.seg_col[0], lo98[r]);
		ck_assert_int_eq(b.seg_len, n98[r]);
	}
	dt_model_free(m);
	free(job);

	/* the tied copy (97, 8) by rows, its bias by columns, at tp 2 */
	job = dt_xcalloc(1, sizeof *job);
	parse_job(tied97_text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 2, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_plan_vocab_parallel(m, job, 2, true,
							&err), DT_OK);
	ck_assert(dt_node_tp_block(&m->nodes[2], 0, 1, &b));
	ck_assert_int_eq(b.first_row, 49);
	ck_assert_int_eq(b.n_rows, 48);
	ck_assert_int_eq(b.row_len, 8);
	ck_assert_int_eq(b.seg_len, 8);
	ck_assert(dt_node_tp_block(&m->nodes[2], 1, 0, &b));
	ck_assert_int_eq(b.n_rows, 1);
	ck_assert_int_eq(b.seg_col[0], 0);
	ck_assert_int_eq(b.seg_len, 49);
	dt_model_free(m);
	free(job);

	/* every class's owner, over vocabularies and degrees */
	for (int64_t vocab = 1; vocab <= 40; vocab++)
		for (int s = 1; s <= 7 && s <= vocab; s++)
			for (int r = 0; r < s; r++) {
				int64_t lo, len, lo2, len2;

				share_by_hand(vocab, s, r, &lo, &len);
				dt_tp_vocab_share(vocab, s, r, &lo2, &len2);
				ck_assert_int_eq(lo2, lo);
				ck_assert_int_eq(len2, len);
				ck_assert_int_ge(len, 1);
				for (int64_t c = lo; c < lo + len; c++)
					ck_assert_int_eq(
						dt_tp_vocab_owner(vocab, s, c),
						r);
			}
}
END_TEST

/* A degree above the vocabulary: the table, the head and the loss stay
 * whole (a rank would hold no row), nothing to sum for them. A degree
 * that merely does not divide it splits (test_vocab_uneven_*). Then a
 * head of 3 classes, no vocabulary's, at tp 2: the table (16 rows)
 * splits, the head and the loss stay whole as before the uneven split
 * (the embedding's 8 x 8 output summed, nothing else). */
START_TEST(test_vocab_fewer_than_degree)
{
	static const char text[] =
		"data:\n"
		"  train: {images: a.idx, labels: b.idx}\n"
		"model:\n"
		"  input_shape: [8]\n"
		"  layers:\n"
		"    - {type: embedding, name: tok, vocab: 3, dim: 8}\n"
		"    - {type: layernorm, name: ln}\n"
		"    - {type: dense, name: head, units: 3}\n"
		"  loss: softmax_cross_entropy\n"
		"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";
	static const char classes_text[] =
		"data:\n"
		"  train: {images: a.idx, labels: b.idx}\n"
		"model:\n"
		"  input_shape: [8]\n"
		"  layers:\n"
		"    - {type: embedding, name: tok, vocab: 16, dim: 8}\n"
		"    - {type: layernorm, name: ln}\n"
		"    - {type: dense, name: head, units: 3}\n"
		"  loss: softmax_cross_entropy\n"
		"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m;
	struct dt_error err;

	parse_job(text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 4, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_plan_vocab_parallel(m, job, 4, true,
							&err), DT_OK);
	for (int i = 0; i < m->n_nodes; i++)
		ck_assert_int_eq(m->nodes[i].tp_mode, DT_TP_NONE);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0,
						       dt_model_n_layers(m) -
						       1), 0);
	dt_model_free(m);
	free(job);

	job = dt_xcalloc(1, sizeof *job);
	parse_job(classes_text, job);
	m = build(job, 0);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, job, 2, &err),
			 DT_OK);
	ck_assert_int_eq(dt_model_plan_vocab_parallel(m, job, 2, true,
							&err), DT_OK);
	ck_assert_int_eq(m->nodes[0].tp_mode, DT_TP_VOCAB);
	for (int i = 1; i < m->n_nodes; i++)
		ck_assert_int_eq(m->nodes[i].tp_mode, DT_TP_NONE);
	ck_assert_int_eq(dt_model_tp_floats_per_sample(m, 0,
						       dt_model_n_layers(m) -
						       1), 8 * 8);
	dt_model_free(m);
	free(job);
}
END_TEST

static Suite *
graph_tp_suite(void)
{
	Suite *s = suite_create("graph_tp");
	TCase *plan = tcase_create("plan");
	TCase *group = tcase_create("group");

	tcase_add_test(plan, test_plan_mlp);
	tcase_add_test(plan, test_plan_gpt);
	tcase_add_test(plan, test_plan_errors);
	tcase_add_test(plan, test_tp_block);
	tcase_add_test(plan, test_heads_refused);
	suite_add_tcase(s, plan);

	tcase_set_timeout(group, 60);
	tcase_add_loop_test(group, test_mlp_train, 0, 2);
	tcase_add_loop_test(group, test_mlp_eval, 0, 2);
	tcase_add_loop_test(group, test_gpt_train, 0, 2);
	tcase_add_loop_test(group, test_gpt_eval, 0, 2);
	tcase_add_loop_test(group, test_gpt_bare_train, 0, 2);
	tcase_add_test(group, test_unprepared_grads_differ);
	tcase_add_loop_test(group, test_mlp_own_slices, 0, 2);
	tcase_add_loop_test(group, test_attn_own_slices, 0, 12);
	tcase_add_loop_test(group, test_gpt_own_slices, 0, 12);
	tcase_add_loop_test(group, test_gpt_bare_own_slices, 0, 12);
	tcase_add_loop_test(group, test_vocab_embedding, 0, 4);
	tcase_add_loop_test(group, test_vocab_loss, 0, 2);
	tcase_add_loop_test(group, test_vocab_head, 0, 4);
	tcase_add_loop_test(group, test_vocab_tied, 0, 4);
	tcase_add_loop_test(group, test_vocab_uneven_embedding, 0, 4);
	tcase_add_loop_test(group, test_vocab_uneven_loss, 0, 2);
	tcase_add_loop_test(group, test_vocab_uneven_head, 0, 14);
	tcase_add_loop_test(group, test_vocab_uneven_own_slices, 0, 5);
	tcase_add_test(plan, test_vocab_blocks);
	tcase_add_test(plan, test_vocab_uneven_blocks);
	tcase_add_test(plan, test_vocab_fewer_than_degree);
	suite_add_tcase(s, group);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(graph_tp_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
