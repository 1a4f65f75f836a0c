/* SPDX-License-Identifier: MIT */
/* embedding.c - token embedding: a table lookup from token ids to vectors
 * (GPT-2's wte: Radford et al., "Language Models are Unsupervised Multitask
 * Learners", 2019).
 *
 * The input holds token ids as floats, (T) per sample (any shape of up to
 * three axes works; the output appends dim to it): floats are exact
 * integers below 2^24, which bounds vocab. The weight is (vocab, dim),
 * drawn from N(0, 0.02^2) as GPT-2 does (unless the job's init says
 * otherwise: graph/init.c), and
 *   forward   y[t] = weight[id[t]]                  (T, dim)
 *   backward  dweight[id[t]] += dy[t]  (a scatter-add; ids repeat)
 * Token ids carry no gradient: when something upstream asks for one it
 * gets zeros. The data loader checks the ids against vocab; an id out of
 * range or not an integer is a bug upstream that a debug build asserts on.
 * A build with NDEBUG neither clamps it (that would train the wrong row
 * silently) nor reads outside the table: the row comes out as zeros and
 * takes no gradient.
 * Vocabulary split (layer.h's DT_TP_VOCAB, over s ranks, this one r): the
 * rank looks up only the ids in its rows [lo, lo + len) (dt_tp_vocab_share:
 * len is ceil(V/s) or floor(V/s), lo = r*V/s where s divides V), and
 * writes zeros for the others; the sum over the group then gives every
 * rank each token's row (one rank gives the row, the others 0: exact).
 * Backward adds dy to the rows of its range only. With the node's tp_own
 * the table is the (len, C) block of those rows.
 * FLOPs per sample, nominal: 1 per output element (a copy, counted as
 * activations are), so backward's scatter-add is about the 2x of graph.h. */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "graph/layer.h"
#include "util/threadpool.h"

#define EMBEDDING_MAX_VOCAB (INT64_C(1) << 24)	/* float ids are exact */
#define EMBEDDING_INIT_STD 0.02f

static enum dt_status
embedding_infer(struct dt_node *n, const struct dt_job *job,
		struct dt_error *err)
{
	const struct dt_shape *in = &n->in_shape[0];

	if (in->n_dims < 1 || in->n_dims >= DT_SHAPE_MAX_DIMS)
		return dt_node_errorf(n, job, err,
				      "embedding needs token ids of 1 to %d "
				      "axes, found %d", DT_SHAPE_MAX_DIMS - 1,
				      in->n_dims);
	if (n->spec.vocab < 1 || n->spec.vocab > EMBEDDING_MAX_VOCAB)
		return dt_node_errorf(n, job, err,
				      "vocab must be in [1, %lld] (token ids "
				      "travel as floats), found %lld",
				      (long long)EMBEDDING_MAX_VOCAB,
				      (long long)n->spec.vocab);
	if (n->spec.dim < 1)
		return dt_node_errorf(n, job, err,
				      "dim must be >= 1, found %lld",
				      (long long)n->spec.dim);
	n->out_shape = *in;
	n->out_shape.dim[n->out_shape.n_dims++] = n->spec.dim;
	n->n_tensors = 1;
	n->tensor[0] = (struct dt_param_tensor){
		.name = "weight",
		.n_dims = 2,
		.shape = { n->spec.vocab, n->spec.dim },
		.init = DT_INIT_NORMAL,
		.std = EMBEDDING_INIT_STD,
	};
	return DT_OK;
}

/* The row of token id v, or -1 when v is not an id in [0, vocab). */
static int64_t
embedding_row(float v, int64_t vocab)
{
	assert(v >= 0.0f && v < (float)vocab && v == floorf(v));
	if (!(v >= 0.0f && v < (float)vocab))
		return -1;
	return (int64_t)v;
}

/* Both passes run on the pass's thread pool: forward by tokens (each
 * output row is one table row), backward by the table's columns (each
 * column of dweight takes the tokens in order, as one thread would), so
 * the pool size never changes the bits. */
struct emb_job {
	const struct dt_node *n;
	const float *ids;	/* (B * T) */
	int64_t batch;
	/* the rows this rank holds: [lo, lo + len), at table row lo - at */
	int64_t lo, len, at;
};

/* The table row of id v in job j's range, or -1 outside it (or not an
 * id). */
static int64_t
own_row(const struct emb_job *j, float v)
{
	int64_t row = embedding_row(v, j->n->spec.vocab);

	if (row < j->lo || row >= j->lo + j->len)
		return -1;
	return row - j->at;
}

/* Fills j's range: the whole table, or the rank's rows under the
 * vocabulary split of pass p. */
static void
emb_range(struct emb_job *j, const struct dt_pass *p)
{
	const struct dt_node *n = j->n;

	j->lo = 0;
	j->len = n->spec.vocab;
	j->at = 0;
	if (p->tp == NULL || n->tp_size <= 1 || n->tp_mode != DT_TP_VOCAB)
		return;
	assert(p->tp->size == n->tp_size);
	dt_tp_vocab_share(n->spec.vocab, n->tp_size, p->tp->rank, &j->lo,
			  &j->len);
	j->at = n->tp_own ? j->lo : 0;
}

static void
gather_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct emb_job *j = ctx;
	const struct dt_node *n = j->n;
	const int64_t dim = n->spec.dim;
	const float *w = n->tensor[0].data;	/* (vocab, dim) */

	for (int64_t t = lo; t < hi; t++) {
		int64_t row = own_row(j, j->ids[t]);
		float *y = n->out + t * dim;	/* (dim) */

		if (row >= 0)
			memcpy(y, w + row * dim, (size_t)dim * sizeof(float));
		else
			memset(y, 0, (size_t)dim * sizeof(float));
	}
}

static void
embedding_forward(struct dt_node *n, struct dt_pass *p,
		  const float *const *in)
{
	struct emb_job j = { .n = n, .ids = in[0] };

	emb_range(&j, p);
	dt_pool_for(p->pool, p->batch * n->in_size[0],
		    (1024 + n->spec.dim - 1) / n->spec.dim, gather_part, &j);
	if (j.len < n->spec.vocab)
		p->tp->allreduce(p->tp->ctx, n->out,
				 (size_t)(p->batch * n->out_size));
}

/* The scatter-add of the columns [lo, hi) of every token's dy. */
static void
scatter_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct emb_job *j = ctx;
	const struct dt_node *n = j->n;
	const int64_t tokens = n->in_size[0] * j->batch;
	const int64_t dim = n->spec.dim;
	float *dw = n->tensor[0].grad;	/* (vocab, dim) */

	for (int64_t t = 0; t < tokens; t++) {
		int64_t row = own_row(j, j->ids[t]);
		const float *dy = n->dout + t * dim;	/* (dim) */

		if (row < 0)
			continue;
		for (int64_t c = lo; c < hi; c++)
			dw[row * dim + c] += dy[c];
	}
}

static void
embedding_backward(struct dt_node *n, struct dt_pass *p,
		   const float *const *in, float *const *din,
		   const bool *din_add)
{
	const int64_t tokens = p->batch * n->in_size[0];
	struct emb_job j = { .n = n, .ids = in[0], .batch = p->batch };

	emb_range(&j, p);
	dt_pool_for(p->pool, n->spec.dim, 16, scatter_part, &j);
	if (din[0] != NULL && !din_add[0])
		memset(din[0], 0, (size_t)tokens * sizeof(float));
}

static double
embedding_fwd_flops(const struct dt_node *n)
{
	/* the same copies on every rank under the vocabulary split (its
	 * own rows and zeros for the others) */
	return (double)n->in_size[0] * (double)n->spec.dim;
}

const struct dt_layer_ops dt_layer_embedding = {
	.kind = "embedding",
	.infer = embedding_infer,
	.forward = embedding_forward,
	.backward = embedding_backward,
	.fwd_flops = embedding_fwd_flops,
};
