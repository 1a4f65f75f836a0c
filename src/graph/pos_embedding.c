/* SPDX-License-Identifier: MIT */
/* pos_embedding.c - learned absolute position embedding (GPT-2's wpe:
 * Radford et al., "Language Models are Unsupervised Multitask Learners",
 * 2019; the learned variant of Vaswani et al., "Attention Is All You
 * Need", 2017, section 3.5).
 *
 * The input is (T, dim), typically a token embedding's output; the layer
 * adds position t's learned vector:
 *   y[t] = x[t] + weight[t]     weight (length, dim), T <= length
 * so a model trained with length positions also runs on shorter windows.
 * The weight is drawn from N(0, 0.02^2) as GPT-2 does, unless the job's
 * init says otherwise (graph/init.c). dim must equal the
 * input's width (a hand-built job may leave it 0 to take that width).
 *   backward  dx = dy,  dweight[t] += sum over the batch of dy[t]
 * Under sequence parallelism (struct dt_node's seq_rows) the node adds
 * the positions of its tensor rank's rows only (row g of the micro-batch
 * at position g mod T), and dweight holds the sums over those rows:
 * partial sums, which the group's sum completes.
 * FLOPs per sample: T*dim, the additions. */
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"
#include "util/threadpool.h"

#define POS_EMBEDDING_INIT_STD 0.02f

static enum dt_status
pos_embedding_infer(struct dt_node *n, const struct dt_job *job,
		    struct dt_error *err)
{
	const struct dt_shape *in = &n->in_shape[0];
	int64_t t, dim;

	if (in->n_dims != 2)
		return dt_node_errorf(n, job, err,
				      "pos_embedding needs a (T, dim) input, "
				      "found %d axes", in->n_dims);
	t = in->dim[0];
	dim = in->dim[1];
	if (n->spec.length < 1)
		return dt_node_errorf(n, job, err,
				      "length must be >= 1, found %lld",
				      (long long)n->spec.length);
	if (t > n->spec.length)
		return dt_node_errorf(n, job, err,
				      "the input has %lld positions but "
				      "length is %lld; raise length or "
				      "shorten the context", (long long)t,
				      (long long)n->spec.length);
	if (n->spec.dim < 0 || (n->spec.dim > 0 && n->spec.dim != dim))
		return dt_node_errorf(n, job, err,
				      "dim is %lld but the input is %lld "
				      "wide", (long long)n->spec.dim,
				      (long long)dim);
	n->out_shape = *in;
	n->n_tensors = 1;
	n->tensor[0] = (struct dt_param_tensor){
		.name = "weight",
		.n_dims = 2,
		.shape = { n->spec.length, dim },
		.init = DT_INIT_NORMAL,
		.std = POS_EMBEDDING_INIT_STD,
	};
	return DT_OK;
}

/* Forward runs on the pass's thread pool by samples, backward's dweight
 * by its elements (each summing the samples in order), so the pool size
 * never changes the bits. */
struct pos_job {
	const struct dt_node *n;
	const float *x;		/* (B, T, dim) */
};

static void
pos_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct pos_job *j = ctx;
	const int64_t size = j->n->out_size;	/* T * dim */
	const float *w = j->n->tensor[0].data;	/* (length, dim); first T rows */

	for (int64_t b = lo; b < hi; b++) {
		const float *x = j->x + b * size;	/* (T, dim) */
		float *y = j->n->out + b * size;	/* (T, dim) */

		dt_kern_add(x, w, y, size);
	}
}

/* A share of rows (struct dt_node's seq_rows): rows [lo, hi) of the
 * share, row i at position (first + i) mod T. */
struct pos_rows_job {
	const struct dt_node *n;
	const float *x;		/* (rows, dim) */
	int64_t first, t;
};

/* A thread's rows [lo, hi) of the rank's row share (struct pos_rows_job):
 * out = x + the position embedding's row at the global row's position,
 * (first + i) mod t. */
static void
pos_rows_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct pos_rows_job *j = ctx;
	const int64_t dim = dt_node_row_len(j->n);
	const float *w = j->n->tensor[0].data;	/* (length, dim) */

	for (int64_t i = lo; i < hi; i++)
		dt_kern_add(j->x + i * dim, w + (j->first + i) % j->t * dim,
			    j->n->out + i * dim, dim);
}

static void
pos_embedding_forward(struct dt_node *n, struct dt_pass *p,
		      const float *const *in)
{
	struct pos_job j = { .n = n, .x = in[0] };
	struct pos_rows_job jr = { .n = n, .x = in[0],
				   .t = n->out_shape.dim[0] };
	int64_t rows;

	if (!n->seq_rows) {
		dt_pool_for(p->pool, p->batch,
			    (8192 + n->out_size - 1) / n->out_size,
			    pos_part, &j);
		return;
	}
	dt_node_rows(n, p, &jr.first, &rows);
	dt_pool_for(p->pool, rows, (8192 + dt_node_row_len(n) - 1) /
		    dt_node_row_len(n), pos_rows_part, &jr);
}

/* dweight of a share of rows: position t's row of dweight gets the rows
 * of the share at t, in order (rows first + i with (first + i) mod T =
 * t, every T-th), as the whole pass adds its samples' in order. */
static void
pos_rows_dweight(struct dt_node *n, struct dt_pass *p)
{
	const int64_t dim = dt_node_row_len(n), t = n->out_shape.dim[0];
	int64_t first, rows;

	dt_node_rows(n, p, &first, &rows);
	for (int64_t pos = 0; pos < t; pos++) {
		int64_t i0 = ((pos - first) % t + t) % t;

		if (i0 < rows)
			dt_kern_par_col_sums(p->pool, n->dout + i0 * dim,
					     t * dim,
					     n->tensor[0].grad + pos * dim,
					     (rows - i0 + t - 1) / t, dim);
	}
}

static void
pos_embedding_backward(struct dt_node *n, struct dt_pass *p,
		       const float *const *in, float *const *din,
		       const bool *din_add)
{
	const int64_t size = n->out_size;	/* T * dim */
	float *dw = n->tensor[0].grad;		/* (length, dim); first T rows */
	int64_t first, rows;

	(void)in;
	if (n->seq_rows)
		pos_rows_dweight(n, p);
	else
		dt_kern_par_col_sums(p->pool, n->dout, size, dw, p->batch,
				     size);
	if (din[0] == NULL)
		return;
	dt_node_rows(n, p, &first, &rows);
	if (din_add[0])
		dt_kern_par_acc(p->pool, n->dout, din[0],
				rows * dt_node_row_len(n));
	else
		dt_kern_par_copy(p->pool, n->dout, din[0],
				 rows * dt_node_row_len(n));
}

static double
pos_embedding_fwd_flops(const struct dt_node *n)
{
	return (double)n->out_size;
}

const struct dt_layer_ops dt_layer_pos_embedding = {
	.kind = "pos_embedding",
	.infer = pos_embedding_infer,
	.forward = pos_embedding_forward,
	.backward = pos_embedding_backward,
	.fwd_flops = pos_embedding_fwd_flops,
	.row_shares = true,
};
