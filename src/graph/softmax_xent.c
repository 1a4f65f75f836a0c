/* SPDX-License-Identifier: MIT */
/* softmax_xent.c - softmax cross-entropy loss over the classes of each
 * sample, or of each token.
 *
 * The last layer gives (classes), one label per sample, or (T, classes),
 * one label per token: labels are then (B, T) and every token is a row of
 * its own. Forward, per row: p = softmax(z) computed stably as
 * exp(z - max z) / sum, and the loss -log p[label] = log-sum-exp(z) -
 * z[label] with log-sum-exp(z) = max z + log sum exp(z - max z), so no exp
 * overflows. The node's output is p (B, [T,] classes); the losses of all
 * rows are summed into pass->loss_sum (double) and argmax hits counted in
 * pass->n_correct (the first maximal class wins a tie). The maximum and
 * the normalisation run in the kernel seam (kern.h); the exponentials
 * stay libm's expf, summed in order, which keeps the bits of the MLP and
 * CNN jobs: with the seam's exp (dt_kern_softmax) the loss moved by an
 * ulp, and tests/integration/layouts.sh's CNN run over 4 tensor ranks,
 * which sits near its 1e-5 tolerance (at seed 3 it parts from one rank by
 * 3e-4 on the old code too), drifted past it to 1.6e-5 by step 13, for
 * a gain of 0.3% of a char-GPT step. Labels are assumed
 * in range (the data loader checks them).
 * Backward: d(loss)/dz = p - onehot(label), times pass->grad_scale.
 *
 * In place (layer.h's loss_in_place; graph.c decides): in a training
 * model whose last layer the loss alone reads, n->out is that layer's
 * output buffer, so forward reads each row's logits z, keeps z[label]
 * and the argmax hit, then writes p over z; backward scales p into
 * d(loss)/dz in the same buffer, which is also the last layer's dout
 * (its backward reads its input and dout, not its output). One (B, [T,]
 * classes) buffer instead of three (logits, probabilities, d(logits)):
 * with GPT-2's vocabulary of 50257 at context 1024, 412 MB less a
 * sample. The float operations and their order are those of the three
 * buffers, so the same bits; only the logits are gone after forward
 * (eval, predict and sample build models that keep them, graph.h).
 * Both passes split their rows over the pass's thread pool (xent_job),
 * each row's arithmetic as on one thread.
 * Vocabulary split (layer.h's DT_TP_VOCAB, over s ranks, this one r, its
 * classes [lo, lo + len) of dt_tp_vocab_share: r*V/s and V/s where s
 * divides V, else ceil(V/s) or floor(V/s) classes, none empty): the
 * logits of the other classes are never gathered, yet every rank gets
 * the one-rank loss bits (the design of doc/DESIGN.md, "Tensor-parallel
 * slices", Vocabulary split):
 *   - each row's maximum: each rank's maximum over its classes, gathered
 *     (every rank posts its own in a slot of an (s, rows) buffer of zeros
 *     and the group sums it: x + 0, exact) and the largest taken, which
 *     is the row's maximum in any order;
 *   - z[label] and the first maximal class (for n_correct): from the
 *     rank that owns the label and from the first rank that holds the
 *     maximum, gathered the same way;
 *   - the sum of exp(z - max), which one rank adds in class order, as a
 *     chain: rank 0 adds its classes from 0 and the group's sum (its
 *     value plus the others' zeros) hands the running sums of all rows to
 *     every rank, rank 1 goes on from them, and so on; after rank s - 1
 *     every rank holds the totals, added in the one-rank order;
 *   - the probabilities of its classes (the others 0), and backward's
 *     p - onehot(label) on its own classes; the loss and n_correct are the
 *     same on every rank.
 * Where the tensor ranks own their slices and the head is untied
 * (dt_model_tp_slice_logits: out_cols), the buffer in place holds this
 * rank's classes only, (B, [T,] len) with leading dimension len + 1
 * (tensor.c says why the padding float), class lo + j at column j; else
 * the whole (B, [T,] V), its classes at columns [lo, lo + len). The
 * same arithmetic on each row, so the same bits; GPT-2's 50257 classes
 * at context 1024 over 2 ranks hold 103 MB a sample instead of 206 MB.
 * The group's sums move 4 s floats a row (tensor.c's count).
 * FLOPs: 5 per class per row (max, subtract, exp, sum, divide). */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"
#include "util/alloc.h"
#include "util/threadpool.h"

static enum dt_status
softmax_xent_infer(struct dt_node *n, const struct dt_job *job,
		   struct dt_error *err)
{
	const struct dt_shape *s = &n->in_shape[0];
	char buf[96];

	if (s->n_dims > 2)
		return dt_node_errorf(n, job, err,
				      "softmax cross-entropy reads (classes) "
				      "or (tokens, classes), this last layer "
				      "gives %s; add a flatten or a dense "
				      "layer", dt_shape_format(s, buf,
							       sizeof buf));
	if (s->dim[s->n_dims - 1] < 2)
		return dt_node_errorf(n, job, err,
				      "softmax cross-entropy needs at least 2 "
				      "classes, this last layer gives %lld",
				      (long long)s->dim[s->n_dims - 1]);
	n->out_shape = *s;
	return DT_OK;
}

/* Classes per row and rows per sample. */
static void
softmax_xent_rows(const struct dt_node *n, int64_t *classes, int64_t *rows)
{
	*classes = n->out_shape.dim[n->out_shape.n_dims - 1];
	*rows = n->out_size / *classes;
}

/* The first j with z[j] == zmax, the row's maximum. */
static int64_t
first_max(const float *z, int64_t classes, float zmax)
{
	for (int64_t j = 0; j < classes; j++)
		if (z[j] == zmax)
			return j;
	return 0;	/* a NaN row */
}

/* Values a part of the rows takes before it is worth a thread of its
 * own: the MLP's and CNN's 10 classes stay on one thread, GPT-2's 50257
 * split by rows. */
#define XENT_GRAIN 32768

/* A softmax cross-entropy pass split over the pass's pool by rows. Each
 * row writes only its own prob (dz) and its own loss and hit; the sums
 * over rows are taken after the loop, in row order, on the calling
 * thread, so the pool size changes no bit. */
struct xent_job {
	const float *z;			/* (rows, classes) */
	float *prob;			/* (rows, classes) */
	float *dz;			/* (rows, classes), backward */
	const int32_t *labels;		/* (rows) or NULL */
	double *loss;			/* (rows), forward with labels */
	unsigned char *hit;		/* (rows), forward with labels */
	int64_t classes;
	float scale;			/* backward */
	bool add;			/* backward: dz += */
};

static void
xent_fwd_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct xent_job *j = ctx;
	const int64_t classes = j->classes;

	for (int64_t r = lo; r < hi; r++) {
		const float *z = j->z + r * classes;	/* (classes) */
		float *prob = j->prob + r * classes;	/* (classes) */
		const float zmax = dt_kern_max(z, classes);
		float sum = 0.0f, zlabel = 0.0f;

		/* read before prob overwrites z (in place) */
		if (j->labels != NULL) {
			zlabel = z[j->labels[r]];
			j->hit[r] = first_max(z, classes, zmax) ==
				    j->labels[r];
		}
		/* libm's expf and a sum in order, as before the kernel
		 * seam: the MLP and CNN jobs keep their bits (see the top
		 * of the file). */
		for (int64_t k = 0; k < classes; k++) {
			prob[k] = expf(z[k] - zmax);
			sum += prob[k];
		}
		dt_kern_scale(prob, classes, 1.0f / sum);
		if (j->labels != NULL)
			j->loss[r] = (double)(zmax + logf(sum) - zlabel);
	}
}

/* This rank's classes [*lo, *lo + *len) under the vocabulary split of
 * pass p; false (the whole row) without it. */
static bool
vocab_share(const struct dt_node *n, const struct dt_pass *p,
	    int64_t classes, int64_t *lo, int64_t *len)
{
	if (p->tp == NULL || n->tp_size <= 1 || n->tp_mode != DT_TP_VOCAB)
		return false;
	assert(p->tp->size == n->tp_size);
	dt_tp_vocab_share(classes, n->tp_size, p->tp->rank, lo, len);
	return true;
}

/* Gathers vals (rows * width) of every rank over group tp into all (s,
 * rows * width): each rank's in its slot, through the group's sum of a
 * buffer of zeros (x + 0: exact). */
static void
group_gather(const struct dt_tp *tp, const float *vals, int64_t n,
	     float *all)
{
	memset(all, 0, (size_t)(tp->size * n) * sizeof(float));
	memcpy(all + tp->rank * n, vals, (size_t)n * sizeof(float));
	tp->allreduce(tp->ctx, all, (size_t)(tp->size * n));
}

/* The vocabulary-split forward over rows rows of classes, this rank's
 * classes [lo, lo + len); see the top of the file. */
static void
vocab_forward(struct dt_node *n, struct dt_pass *p, const float *z_all,
	      int64_t rows, int64_t classes, int64_t lo, int64_t len)
{
	const struct dt_tp *tp = p->tp;
	const int s = tp->size;
	const int32_t *labels = p->labels;
	/* a row's stride and where its class lo lies: classes and lo, or
	 * out_cols (len + 1) and 0 where the buffer holds this rank's
	 * classes only */
	const int64_t ld = n->out_cols > 0 ? n->out_cols : classes;
	const int64_t at = n->out_cols > 0 ? 0 : lo;
	float *prob_all = n->out;			/* (rows, ld) */
	float *mine = dt_xalloc_floats((size_t)(2 * rows));
	float *all = dt_xalloc_floats((size_t)(2 * rows * s));
	float *zmax = dt_xalloc_floats((size_t)rows);
	float *sum = dt_xalloc_floats((size_t)rows);
	double loss_sum = 0.0;
	int64_t n_correct = 0;

	/* the maxima */
	assert(n->out_cols <= 0 ||
	       (n->out_cols == len + 1 && prob_all == z_all));
	for (int64_t r = 0; r < rows; r++)
		mine[r] = dt_kern_max(z_all + r * ld + at, len);
	group_gather(tp, mine, rows, all);
	for (int64_t r = 0; r < rows; r++) {
		zmax[r] = all[r];
		for (int q = 1; q < s; q++)
			if (all[q * rows + r] > zmax[r])
				zmax[r] = all[q * rows + r];
	}
	/* z[label] and the first maximal class, before prob overwrites z
	 * (in place); a rank without them posts 0 and classes */
	if (labels != NULL) {
		for (int64_t r = 0; r < rows; r++) {
			const float *z = z_all + r * ld + at;	/* class lo */
			int64_t k = 0;

			while (k < len && z[k] != zmax[r])
				k++;
			mine[2 * r] = labels[r] >= lo && labels[r] < lo + len
				      ? z[labels[r] - lo] : 0.0f;
			mine[2 * r + 1] = (float)(k < len ? lo + k : classes);
		}
		group_gather(tp, mine, 2 * rows, all);
	}
	/* exp(z - max) of its classes, the sums as a chain over the ranks */
	for (int64_t r = 0; r < rows; r++) {
		const float *z = z_all + r * ld + at;
		float *prob = prob_all + r * ld + at;

		for (int64_t k = 0; k < len; k++)
			prob[k] = expf(z[k] - zmax[r]);
	}
	memset(sum, 0, (size_t)rows * sizeof(float));
	for (int q = 0; q < s; q++) {
		for (int64_t r = 0; r < rows; r++) {
			const float *prob = prob_all + r * ld + at;
			float acc = sum[r];

			if (q != tp->rank) {
				sum[r] = 0.0f;
				continue;
			}
			for (int64_t k = 0; k < len; k++)
				acc += prob[k];
			sum[r] = acc;
		}
		tp->allreduce(tp->ctx, sum, (size_t)rows);
	}
	for (int64_t r = 0; r < rows; r++) {
		float *prob = prob_all + r * ld;

		dt_kern_scale(prob + at, len, 1.0f / sum[r]);
		/* not in place (so the whole row): the rest 0 */
		if (prob_all != z_all) {
			memset(prob, 0, (size_t)lo * sizeof(float));
			memset(prob + lo + len, 0,
			       (size_t)(classes - lo - len) * sizeof(float));
		}
		if (labels == NULL)
			continue;

		const int owner = dt_tp_vocab_owner(classes, s, labels[r]);
		int64_t first = classes;

		for (int q = 0; q < s; q++)
			if (all[(q * rows + r) * 2 + 1] < (float)first)
				first = (int64_t)all[(q * rows + r) * 2 + 1];
		loss_sum += (double)(zmax[r] + logf(sum[r]) -
				     all[(owner * rows + r) * 2]);
		n_correct += first == labels[r];
	}
	p->loss_sum += loss_sum;
	p->n_correct += n_correct;
	free(mine);
	free(all);
	free(zmax);
	free(sum);
}

static void
softmax_xent_forward(struct dt_node *n, struct dt_pass *p,
		     const float *const *in)
{
	int64_t classes, tokens;
	struct xent_job j = {
		.z = in[0], .prob = n->out, .labels = p->labels,
	};
	double loss_sum = 0.0;
	int64_t n_correct = 0, rows, lo, len;

	softmax_xent_rows(n, &classes, &tokens);
	rows = p->batch * tokens;
	if (vocab_share(n, p, classes, &lo, &len)) {
		vocab_forward(n, p, in[0], rows, classes, lo, len);
		return;
	}
	j.classes = classes;
	if (j.labels != NULL) {
		j.loss = dt_xmalloc((size_t)rows, sizeof *j.loss);
		j.hit = dt_xmalloc((size_t)rows, sizeof *j.hit);
	}
	dt_pool_for(p->pool, rows, (XENT_GRAIN + classes - 1) / classes,
		    xent_fwd_part, &j);
	if (j.labels != NULL) {
		for (int64_t r = 0; r < rows; r++) {
			loss_sum += j.loss[r];
			n_correct += j.hit[r];
		}
		free(j.loss);
		free(j.hit);
	}
	p->loss_sum += loss_sum;
	p->n_correct += n_correct;
}

/* dz = (or +=) scale * prob over len values: one pass over the whole
 * part rather than one per row of a few classes, so that it runs in SIMD
 * registers (layer.h's DT_VEC_LOOP). */
static void
scale_probs(const float *restrict prob, float *restrict dz, int64_t len,
	    float scale, bool add)
{
	if (add)
		DT_VEC_LOOP(i, len, dz[i] += scale * prob[i]);
	else
		DT_VEC_LOOP(i, len, dz[i] = scale * prob[i]);
}

/* In place: p (len values) becomes scale * p, the product scale_probs
 * writes, in the same buffer. */
static void
scale_probs_in_place(float *p, int64_t len, float scale)
{
	DT_VEC_LOOP(i, len, p[i] = scale * p[i]);
}

static void
xent_bwd_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct xent_job *j = ctx;
	const int64_t classes = j->classes;

	if (j->dz == j->prob)	/* in place: nothing else wrote dz */
		scale_probs_in_place(j->dz + lo * classes,
				     (hi - lo) * classes, j->scale);
	else
		scale_probs(j->prob + lo * classes, j->dz + lo * classes,
			    (hi - lo) * classes, j->scale, j->add);
	for (int64_t r = lo; r < hi; r++)
		j->dz[r * classes + j->labels[r]] -= j->scale;
}

/* The vocabulary-split backward: d(loss)/dz = scale (p - onehot) on the
 * rank's classes [lo, lo + len) only, row by row with the arithmetic of
 * xent_bwd_part. */
static void
vocab_backward(const struct xent_job *j, int64_t rows, int64_t lo,
	       int64_t len, int64_t out_cols)
{
	/* a row's stride and where its class lo lies, as vocab_forward */
	const int64_t ld = out_cols > 0 ? out_cols : j->classes;
	const int64_t first = out_cols > 0 ? 0 : lo;

	for (int64_t r = 0; r < rows; r++) {
		const int64_t at = r * ld + first;

		if (j->dz == j->prob)
			scale_probs_in_place(j->dz + at, len, j->scale);
		else
			scale_probs(j->prob + at, j->dz + at, len, j->scale,
				    j->add);
		if (j->labels[r] >= lo && j->labels[r] < lo + len)
			j->dz[at + j->labels[r] - lo] -= j->scale;
	}
}

static void
softmax_xent_backward(struct dt_node *n, struct dt_pass *p,
		      const float *const *in, float *const *din,
		      const bool *din_add)
{
	int64_t classes, tokens, lo, len;
	struct xent_job j = {
		.prob = n->out, .dz = din[0], .labels = p->labels,
		.scale = p->grad_scale, .add = din_add[0],
	};

	(void)in;
	if (j.dz == NULL)
		return;
	softmax_xent_rows(n, &classes, &tokens);
	/* in place: the loss is the only reader of its input */
	assert(j.dz != n->out || !j.add);
	j.classes = classes;
	if (vocab_share(n, p, classes, &lo, &len)) {
		assert(n->out_cols <= 0 ||
		       (n->out_cols == len + 1 && j.dz == n->out));
		vocab_backward(&j, p->batch * tokens, lo, len,
			       n->out_cols);
		return;
	}
	dt_pool_for(p->pool, p->batch * tokens,
		    (XENT_GRAIN + classes - 1) / classes, xent_bwd_part, &j);
}

static double
softmax_xent_fwd_flops(const struct dt_node *n)
{
	if (n->tp_size > 1 && n->tp_mode == DT_TP_VOCAB) {
		/* the largest share's classes, rank 0's (as dense.c's) */
		const int64_t classes =
			n->out_shape.dim[n->out_shape.n_dims - 1];
		int64_t lo, len;

		dt_tp_vocab_share(classes, n->tp_size, 0, &lo, &len);
		return 5.0 * (double)(n->out_size / classes) * (double)len;
	}
	return 5.0 * (double)n->out_size;
}

const struct dt_layer_ops dt_layer_softmax_xent = {
	.kind = "softmax_cross_entropy",
	.infer = softmax_xent_infer,
	.forward = softmax_xent_forward,
	.backward = softmax_xent_backward,
	.fwd_flops = softmax_xent_fwd_flops,
	.loss_in_place = true,
};
