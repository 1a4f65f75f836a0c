/* SPDX-License-Identifier: MIT */
/* dense.c - fully connected layer, Y = X W + b.
 *
 * W is (in, out) row-major and b (out), left out with `bias: false`. A
 * (T, C) output of another layer is read as T rows of C features, each
 * mapped to `units` (tokens through a projection, (T, C) -> (T, units));
 * any other input is flattened per sample, so a (B, 28, 28) batch is read
 * as (B, 784) (graph.h). A whole micro-batch goes through one sgemm
 * each way (OpenBLAS, or oneDNN where kern.h sends it), with R = B * rows:
 *   forward   Y(R,out) = X(R,in) W(in,out) + b
 *   backward  dW(in,out) += X^T dY   (beta = 1: accumulates micro-batches)
 *             db(out)    += column sums of dY
 *             dX(R,in)    = dY W^T   (skipped when nothing upstream needs it)
 * dW and dX run side by side on the pass's pool (dt_kern_par_sgemm2),
 * with the bits of one call each.
 * FLOPs per sample: forward rows * (2*in*out for the product (a
 * multiply-add is 2) plus out for the bias); backward is counted as twice
 * that (graph.h), which is exact for dW plus dX and ignores the bias sums.
 * Init: He-normal when the layer's `activation:` is relu or gelu,
 * Xavier-uniform otherwise (layer.h gives the papers), unless the job's
 * init names another rule (graph/init.c); bias zero.
 * With `tie: <embedding>` the weight is that embedding's table (vocab,
 * dim), a tied copy (layer.h) read transposed, (out, in):
 *   forward   Y = X W^T + b;  backward  dW += dY^T X,  dX = dY W
 * and the layer is split over tensor-parallel ranks only by the
 * vocabulary split below, with its embedding's table.
 *
 * Tensor parallelism (layer.h; a group of s ranks, this one r), on slices
 * of the same buffers through the BLAS leading dimensions, no copies:
 *   DT_TP_COLUMN  cols = [r*out/s, (r+1)*out/s):
 *                 Y[:,cols] = X W[:,cols] + b[cols], the rest of Y 0;
 *                 dW[:,cols] += X^T dY[:,cols], db[cols] += sums;
 *                 dX = sum over the group of dY[:,cols] W[:,cols]^T
 *   DT_TP_ROW     rows = [r*in/s, (r+1)*in/s):
 *                 Y = sum over the group of X[:,rows] W[rows,:], then + b;
 *                 dW[rows,:] += X[:,rows]^T dY, db += sums (replicated);
 *                 dX[:,rows] = dY W[rows,:]^T, the rest of dX 0
 *   DT_TP_VOCAB   the layer the loss reads under the vocabulary split
 *                 (classes cols = the share dt_tp_vocab_share gives,
 *                 [r*out/s, (r+1)*out/s) where s divides out, else
 *                 ceil(out/s) or floor(out/s) of them): untied, a
 *                 column share as above; tied, W's rows of those classes:
 *                 Y[:,cols] = X W[cols,:]^T + b[cols], the rest of Y 0;
 *                 dW[cols,:] += dY[:,cols]^T X, db[cols] += sums;
 *                 dX = sum over the group of dY[:,cols] W[cols,:]
 * FLOPs then count one rank's share: the product over s, and the bias
 * over s for a column layer (a row layer adds the whole bias); under the
 * vocabulary split the largest share's, ceil(out/s) classes.
 * With the node's tp_own (dt_model_tp_own_slices) the split tensors are
 * this rank's blocks: a column layer's W[:,cols] a contiguous (in, len)
 * block read with ld = len and b[cols] its own (len), len = out/s (or
 * the rank's vocabulary share, dt_tp_vocab_share), a row layer's
 * W[rows,:] its (in/s, out) rows; the same products with another
 * leading dimension, whose bits do not depend on it (test_graph_kern.c,
 * test_sgemm_ld). An untied vocabulary-split head whose loss works in
 * place over its output (dt_model_tp_slice_logits: out_cols) has Y and
 * dY of its classes only, (R, len) with ld = len + 1, instead of (R,
 * out) with its classes at column lo: the same products again (the
 * padding float keeps ld above len, as out is: see tensor.c). */
#include <assert.h>
#include <limits.h>
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"
#include "util/threadpool.h"

/* Input features: W's rows, or its columns when it is a tied copy. */
static int64_t
dense_in(const struct dt_node *n)
{
	return n->tensor[0].shape[n->tie_src != NULL ? 1 : 0];
}

/* Rows per sample: T for another layer's (T, C) output, else 1. */
static int64_t
dense_rows(const struct dt_node *n)
{
	if (n->in_shape[0].n_dims == 2 && n->inputs[0] != DT_NODE_INPUT)
		return n->in_shape[0].dim[0];
	return 1;
}

/* `tie:` (layer.h's tie_src): the weight is a tied copy of the
 * embedding's table, (units, in) = (vocab, dim), and the passes use it
 * transposed (Press & Wolf, "Using the Output Embedding to Improve
 * Language Models", EACL 2017; GPT-2's lm_head). */
static enum dt_status
tie_weight(struct dt_node *n, const struct dt_job *job, int64_t in,
	   struct dt_error *err)
{
	const struct dt_layer_spec *e = &n->tie_src->spec;

	if (e->vocab != n->spec.units || e->dim != in)
		return dt_node_errorf(n, job, err,
				      "tie: %s's table is (%lld, %lld), so "
				      "units must be %lld and the input "
				      "width %lld; found units %lld, input "
				      "width %lld", e->name,
				      (long long)e->vocab, (long long)e->dim,
				      (long long)e->vocab, (long long)e->dim,
				      (long long)n->spec.units,
				      (long long)in);
	n->tensor[0] = (struct dt_param_tensor){
		.name = "weight",
		.n_dims = 2,
		.shape = { e->vocab, e->dim },
		.tied = true,	/* the graph's init copies the embedding's */
	};
	return DT_OK;
}

static enum dt_status
dense_infer(struct dt_node *n, const struct dt_job *job, struct dt_error *err)
{
	int64_t rows = dense_rows(n), units = n->spec.units;
	int64_t in = n->in_size[0] / rows;
	enum dt_activation act = n->spec.activation;

	if (units < 1)
		return dt_node_errorf(n, job, err,
				      "units must be >= 1, found %lld",
				      (long long)units);
	if (units > INT_MAX)
		return dt_node_errorf(n, job, err,
				      "units must be <= %d (BLAS sizes are "
				      "int), found %lld", INT_MAX,
				      (long long)units);
	if (rows > 1) {
		n->out_shape.n_dims = 2;
		n->out_shape.dim[0] = rows;
		n->out_shape.dim[1] = units;
	} else {
		n->out_shape.n_dims = 1;
		n->out_shape.dim[0] = units;
	}

	n->n_tensors = n->spec.bias ? 2 : 1;
	n->tensor[0] = (struct dt_param_tensor){
		.name = "weight",
		.n_dims = 2,
		.shape = { in, units },
		.init = act == DT_ACT_RELU || act == DT_ACT_GELU
				? DT_INIT_HE_NORMAL : DT_INIT_XAVIER_UNIFORM,
		.fan_in = in,
		.fan_out = units,
		.out_proj = true,
	};
	n->tensor[1] = (struct dt_param_tensor){
		.name = "bias",
		.n_dims = 1,
		.shape = { units },
		.init = DT_INIT_ZERO,
	};
	return n->tie_src != NULL ? tie_weight(n, job, in, err) : DT_OK;
}

/* y(n) += b(n). */
static void
add_row(float *restrict y, const float *restrict b, int64_t n)
{
	DT_VEC_LOOP(j, n, y[j] += b[j]);
}

/* This rank's share [*lo, *lo + *len) of width, for a node split over the
 * group of p (layer.h); the mode, or DT_TP_NONE when the node runs whole. */
static enum dt_tp_mode
dense_share(const struct dt_node *n, const struct dt_pass *p, int width,
	    int *lo, int *len)
{
	if (p->tp == NULL || n->tp_size <= 1 || n->tp_mode == DT_TP_NONE)
		return DT_TP_NONE;
	assert(p->tp->size == n->tp_size);
	if (n->tp_mode == DT_TP_VOCAB) {	/* may be uneven */
		int64_t vlo, vlen;

		dt_tp_vocab_share(width, n->tp_size, p->tp->rank, &vlo, &vlen);
		*lo = (int)vlo;
		*len = (int)vlen;
		return n->tp_mode;
	}
	assert(width % n->tp_size == 0);
	*len = width / n->tp_size;
	*lo = p->tp->rank * *len;
	return n->tp_mode;
}

/* Where the share of a split tensor starts in the tensor's floats: lo
 * floats (a column share's first column) or lo rows of out (a row
 * share's) into the whole tensor, 0 into a block of its own (tp_own). */
static size_t
share_at(const struct dt_node *n, int lo, int n_out)
{
	if (n->tp_own)
		return 0;
	if (n->tp_mode == DT_TP_VOCAB && n->tie_src != NULL)
		return (size_t)lo * (size_t)dense_in(n);	/* rows of W */
	return n->tp_mode == DT_TP_ROW ? (size_t)lo * (size_t)n_out
				       : (size_t)lo;
}

/* Where a column or vocabulary share's bias starts in the bias's floats:
 * lo, or 0 in a block of its own (tp_own). */
static size_t
bias_share_at(const struct dt_node *n, int lo)
{
	return n->tp_own ? 0 : (size_t)lo;
}

/* Y(R, out) zeroed but for columns [lo, lo+len), which get b (len floats;
 * NULL: zeroed too): a share's output before its product is added. */
static void
share_bias_fill(float *y, const float *b, int64_t rows, int n_out, int lo,
		int len)
{
	for (int64_t r = 0; r < rows; r++) {
		memset(y + r * n_out, 0, (size_t)n_out * sizeof(float));
		if (b != NULL)
			memcpy(y + r * n_out + lo, b,
			       (size_t)len * sizeof(float));
	}
}

/* The row stride of a column share of W: out, or its block's len. */
static int
column_ld(const struct dt_node *n, int n_out, int len)
{
	return n->tp_own ? len : n_out;
}

/* The leading dimension of Y and dY: out, or out_cols (len + 1) where the
 * node's output holds its share's columns only (the vocabulary-split
 * head, dt_model_tp_slice_logits). */
static int
out_ld(const struct dt_node *n, int n_out)
{
	return n->out_cols > 0 ? (int)n->out_cols : n_out;
}

/* Where a column share's first column lies in a row of Y and dY: lo, or
 * 0 where the output holds the share only (out_cols). */
static int
out_at(const struct dt_node *n, int lo)
{
	return n->out_cols > 0 ? 0 : lo;
}

/* Column share: Y(R, out) gets X W[:, lo..lo+len) + b there, 0 elsewhere;
 * or Y(R, len) gets it where the output is the share's only (out_cols). */
static void
column_forward(struct dt_pool *pool, struct dt_node *n, const float *x,
	       int64_t rows, int lo, int len)
{
	const int n_out = (int)n->spec.units;
	const int n_in = (int)dense_in(n);
	const size_t at = share_at(n, lo, n_out);
	const int ld = out_ld(n, n_out), y_at = out_at(n, lo);
	const float *b = n->n_tensors > 1 ? n->tensor[1].data +
		bias_share_at(n, lo) : NULL;
	float *y = n->out;			/* (R, out) or (R, len) */

	share_bias_fill(y, b, rows, ld, y_at, len);
	dt_kern_par_sgemm(pool, 0, 0, (int)rows, len,
		    n_in, 1.0f, x, n_in, n->tensor[0].data + at,
		    column_ld(n, n_out, len),
		    b != NULL ? 1.0f : 0.0f, y + y_at, ld);
}

/* Row share: Y(R, out) = sum over the group of X[:, lo..) W[lo.., :], then
 * + b on every rank. */
static void
row_forward(struct dt_pool *pool, struct dt_node *n, const struct dt_tp *tp,
	    const float *x, int64_t rows, int lo, int len)
{
	const int n_out = (int)n->spec.units;
	const int n_in = (int)dense_in(n);
	float *y = n->out;			/* (R, out) */

	dt_kern_par_sgemm(pool, 0, 0, (int)rows,
		    n_out, len, 1.0f, x + lo, n_in,
		    n->tensor[0].data + share_at(n, lo, n_out), n_out, 0.0f, y,
		    n_out);
	tp->allreduce(tp->ctx, y, (size_t)(rows * n_out));
	if (n->n_tensors > 1) {
		const float *b = n->tensor[1].data;

		for (int64_t r = 0; r < rows; r++)
			add_row(y + r * n_out, b, n_out);
	}
}

/* Tied vocabulary share: Y(R, out) gets X W[lo..lo+len, :]^T + b there,
 * 0 elsewhere; W is (out, in). */
static void
tied_vocab_forward(struct dt_pool *pool, struct dt_node *n, const float *x,
		   int64_t rows, int lo, int len)
{
	const int n_out = (int)n->spec.units;
	const int n_in = (int)dense_in(n);
	const float *b = n->n_tensors > 1 ? n->tensor[1].data +
		bias_share_at(n, lo) : NULL;
	float *y = n->out;			/* (R, out) */

	share_bias_fill(y, b, rows, n_out, lo, len);
	dt_kern_par_sgemm(pool, 0, 1, (int)rows, len, n_in, 1.0f, x, n_in,
			  n->tensor[0].data + share_at(n, lo, n_out), n_in,
			  b != NULL ? 1.0f : 0.0f, y + lo, n_out);
}

/* Tied vocabulary share backward: dW[lo.., :] += dY[:, lo..]^T X, the
 * bias's share, and dX = the sum over the group of dY[:, lo..] W[lo.., :]
 * (rank 0 adding to what another consumer wrote, as column_backward). */
static void
tied_vocab_backward(struct dt_pool *pool, struct dt_node *n,
		    const struct dt_tp *tp, const float *x, float *din,
		    bool din_add, int64_t rows, int lo, int len)
{
	const int n_out = (int)n->spec.units;
	const int n_in = (int)dense_in(n);
	const size_t at = share_at(n, lo, n_out);
	const float *dy = n->dout;		/* (R, out) */

	dt_kern_par_sgemm(pool, 1, 0, len, n_in, (int)rows, 1.0f, dy + lo,
			  n_out, x, n_in, 1.0f, n->tensor[0].grad + at, n_in);
	if (n->n_tensors > 1)
		for (int64_t r = 0; r < rows; r++)
			add_row(n->tensor[1].grad + bias_share_at(n, lo),
				dy + r * n_out + lo, len);
	if (din == NULL)
		return;
	dt_kern_par_sgemm(pool, 0, 0, (int)rows, n_in, len, 1.0f, dy + lo,
			  n_out, n->tensor[0].data + at, n_in,
			  din_add && tp->rank == 0 ? 1.0f : 0.0f, din, n_in);
	tp->allreduce(tp->ctx, din, (size_t)(rows * n_in));
}

static void
dense_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	const int64_t rows = p->batch * dense_rows(n);
	const int n_out = (int)n->spec.units;
	const int n_in = (int)dense_in(n);
	const float *w = n->tensor[0].data;	/* (in, out) */
	float *y = n->out;			/* (R, out) */
	struct dt_pool *pool = p->pool;
	float beta = 0.0f;
	int lo = 0, len = 0;

	switch (dense_share(n, p, n->tp_mode == DT_TP_ROW ? n_in : n_out, &lo,
			    &len)) {
	case DT_TP_VOCAB:
		if (n->tie_src != NULL) {
			tied_vocab_forward(pool, n, in[0], rows, lo, len);
			return;
		}
		/* untied: a column share */
		/* fall through */
	case DT_TP_COLUMN:
		column_forward(pool, n, in[0], rows, lo, len);
		return;
	case DT_TP_ROW:
		row_forward(pool, n, p->tp, in[0], rows, lo, len);
		return;
	default:
		break;
	}
	/* Broadcasting b into Y first lets the sgemm add the product with
	 * beta = 1, saving a second pass over Y. */
	if (n->n_tensors > 1) {
		dt_kern_par_broadcast(pool, n->tensor[1].data, y, rows,
				      n_out);
		beta = 1.0f;
	}
	/* A tied weight is (out, in): Y = X W^T. */
	dt_kern_par_sgemm(pool, 0, n->tie_src != NULL, (int)rows, n_out, n_in,
			  1.0f, in[0], n_in, w, n->tie_src != NULL ? n_in
			  : n_out, beta, y, n_out);
}

/* db(out) += the column sums of dy(rows, out), row after row: each db[j]
 * sees the same additions in the same order as a scalar loop would, so
 * the vectorised kernel (across j, layer.h's DT_VEC_LOOP) gives the same
 * bits. With the rows outer, every pass over dy is one contiguous row. */
static void
bias_grad(const float *restrict dy, float *restrict db, int64_t rows,
	  int64_t n_out)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *row = dy + r * n_out;

		DT_VEC_LOOP(j, n_out, db[j] += row[j]);
	}
}

/* Column share backward: dy's columns [lo, lo+len) are this rank's. The
 * input gradient is a sum over the group; when another consumer has
 * written din already (din_add), rank 0 adds its part to it and the others
 * overwrite it with theirs, so the sum counts that gradient once. */
static void
column_backward(struct dt_pool *pool, struct dt_node *n,
		const struct dt_tp *tp, const float *x, float *din,
		bool din_add, int64_t rows, int lo, int len)
{
	const int n_out = (int)n->spec.units;
	const int n_in = (int)dense_in(n);
	const size_t at = share_at(n, lo, n_out);
	const int ld = column_ld(n, n_out, len);
	const int dy_ld = out_ld(n, n_out), dy_at = out_at(n, lo);
	const float *w = n->tensor[0].data;	/* (in, out) or (in, len) */
	const float *dy = n->dout;		/* (R, out) or (R, len) */

	dt_kern_par_sgemm(pool, 1, 0, n_in, len,
		    (int)rows, 1.0f, x, n_in, dy + dy_at, dy_ld, 1.0f,
		    n->tensor[0].grad + at, ld);
	if (n->n_tensors > 1)
		for (int64_t r = 0; r < rows; r++)
			add_row(n->tensor[1].grad + bias_share_at(n, lo),
				dy + r * dy_ld + dy_at, len);
	if (din == NULL)
		return;
	dt_kern_par_sgemm(pool, 0, 1, (int)rows, n_in,
		    len, 1.0f, dy + dy_at, dy_ld, w + at, ld,
		    din_add && tp->rank == 0 ? 1.0f : 0.0f, din, n_in);
	tp->allreduce(tp->ctx, din, (size_t)(rows * n_in));
}

/* Row share backward: dW of rows [lo, lo+len), the whole (replicated) db,
 * and dX of those columns only, the others 0 (or left as they are with
 * din_add). */
static void
row_backward(struct dt_pool *pool, struct dt_node *n, const float *x,
	     float *din, bool din_add, int64_t rows, int lo, int len)
{
	const int n_out = (int)n->spec.units;
	const int n_in = (int)dense_in(n);
	const float *w = n->tensor[0].data;	/* (in, out) */
	const float *dy = n->dout;		/* (R, out) */

	const size_t at = share_at(n, lo, n_out);

	dt_kern_par_sgemm(pool, 1, 0, len, n_out,
		    (int)rows, 1.0f, x + lo, n_in, dy, n_out, 1.0f,
		    n->tensor[0].grad + at, n_out);
	if (n->n_tensors > 1)
		bias_grad(dy, n->tensor[1].grad, rows, n_out);
	if (din == NULL)
		return;
	if (!din_add)
		memset(din, 0, (size_t)(rows * n_in) * sizeof(float));
	dt_kern_par_sgemm(pool, 0, 1, (int)rows, len,
		    n_out, 1.0f, dy, n_out, w + at, n_out,
		    din_add ? 1.0f : 0.0f, din + lo, n_in);
}

/* The products of backward for a tied weight W (out, in), after the bias:
 * dW(out, in) += dY^T X and dX(R, in) = dY W, side by side. */
static void
tied_backward(struct dt_pool *pool, struct dt_node *n, const float *x,
	      float *din, bool din_add, int64_t rows)
{
	const int n_out = (int)n->spec.units;
	const int n_in = (int)dense_in(n);
	const float *dy = n->dout;		/* (R, out) */
	const struct dt_kern_gemm gw = {
		.trans_a = 1, .m = n_out, .n = n_in, .k = (int)rows,
		.alpha = 1.0f, .a = dy, .lda = n_out, .b = x, .ldb = n_in,
		.beta = 1.0f, .c = n->tensor[0].grad, .ldc = n_in,
	};

	if (din == NULL) {
		dt_kern_par_sgemm(pool, 1, 0, gw.m, gw.n, gw.k, 1.0f, gw.a,
				  gw.lda, gw.b, gw.ldb, 1.0f, gw.c, gw.ldc);
		return;
	}
	const struct dt_kern_gemm gx = {
		.m = (int)rows, .n = n_in, .k = n_out, .alpha = 1.0f,
		.a = dy, .lda = n_out, .b = n->tensor[0].data, .ldb = n_in,
		.beta = din_add ? 1.0f : 0.0f, .c = din, .ldc = n_in,
	};

	dt_kern_par_sgemm2(pool, &gw, &gx);
}

static void
dense_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
	       float *const *din, const bool *din_add)
{
	const int64_t rows = p->batch * dense_rows(n);
	const int n_out = (int)n->spec.units;
	const int n_in = (int)dense_in(n);
	const float *w = n->tensor[0].data;	/* (in, out) */
	const float *dy = n->dout;		/* (R, out) */
	float *dw = n->tensor[0].grad;		/* (in, out) */
	struct dt_pool *pool = p->pool;
	int lo = 0, len = 0;

	switch (dense_share(n, p, n->tp_mode == DT_TP_ROW ? n_in : n_out, &lo,
			    &len)) {
	case DT_TP_VOCAB:
		if (n->tie_src != NULL) {
			tied_vocab_backward(pool, n, p->tp, in[0], din[0],
					    din_add[0], rows, lo, len);
			return;
		}
		/* untied: a column share */
		/* fall through */
	case DT_TP_COLUMN:
		column_backward(pool, n, p->tp, in[0], din[0], din_add[0],
				rows, lo, len);
		return;
	case DT_TP_ROW:
		row_backward(pool, n, in[0], din[0], din_add[0], rows, lo,
			     len);
		return;
	default:
		break;
	}
	if (n->n_tensors > 1)
		dt_kern_par_col_sums(pool, dy, n_out, n->tensor[1].grad,
				     rows, n_out);
	if (n->tie_src != NULL) {
		tied_backward(pool, n, in[0], din[0], din_add[0], rows);
		return;
	}
	const struct dt_kern_gemm gw = {
		.trans_a = 1, .m = n_in, .n = n_out, .k = rows, .alpha = 1.0f,
		.a = in[0], .lda = n_in, .b = dy, .ldb = n_out, .beta = 1.0f,
		.c = dw, .ldc = n_out,
	};

	if (din[0] == NULL) {
		dt_kern_par_sgemm(pool, gw.trans_a, 0, gw.m, gw.n, gw.k, 1.0f,
				  gw.a, gw.lda, gw.b, gw.ldb, 1.0f, gw.c,
				  gw.ldc);
		return;
	}
	const struct dt_kern_gemm gx = {
		.trans_b = 1, .m = rows, .n = n_in, .k = n_out, .alpha = 1.0f,
		.a = dy, .lda = n_out, .b = w, .ldb = n_out,
		.beta = din_add[0] ? 1.0f : 0.0f, .c = din[0], .ldc = n_in,
	};

	if (dt_pool_threads(pool) <= 1 &&
	    (p->params_hook != NULL || !dt_kern_bf16())) {
		/* dW, then dX (dt_kern_par_sgemm2's order on one thread):
		 * the weight's sum may start before dX is done; where no
		 * sum waits, bf16 goes to dt_kern_par_sgemm2 below, which
		 * rounds dY once for both */
		dt_kern_par_sgemm(pool, gw.trans_a, 0, gw.m, gw.n, gw.k, 1.0f,
				  gw.a, gw.lda, gw.b, gw.ldb, 1.0f, gw.c,
				  gw.ldc);
		dt_pass_params_final(p);
		dt_kern_par_sgemm(pool, 0, gx.trans_b, gx.m, gx.n, gx.k,
				  1.0f, gx.a, gx.lda, gx.b, gx.ldb, gx.beta,
				  gx.c, gx.ldc);
		return;
	}
	/* dW = X^T dY and dX = dY W^T side by side */
	dt_kern_par_sgemm2(pool, &gw, &gx);
}

static double
dense_fwd_flops(const struct dt_node *n)
{
	double bias = n->n_tensors > 1 ? (double)n->out_size : 0.0;
	double share = n->tp_size > 1 && n->tp_mode != DT_TP_NONE
		       ? (double)n->tp_size : 1.0;

	if (share > 1.0 && n->tp_mode == DT_TP_VOCAB) {
		/* the largest share's classes, rank 0's: V/s where s divides
		 * V (the same bits as the division), else ceil(V/s) */
		int64_t lo, len;
		double rows = (double)(n->out_size / n->spec.units);

		dt_tp_vocab_share(n->spec.units, n->tp_size, 0, &lo, &len);
		return 2.0 * (double)n->in_size[0] * (double)len +
		       (n->n_tensors > 1 ? rows * (double)len : 0.0);
	}

	if (share > 1.0 && n->tp_mode == DT_TP_COLUMN)
		bias /= share;
	return 2.0 * (double)n->in_size[0] * (double)n->spec.units / share +
	       bias;
}

const struct dt_layer_ops dt_layer_dense = {
	.kind = "dense",
	.infer = dense_infer,
	.forward = dense_forward,
	.backward = dense_backward,
	.fwd_flops = dense_fwd_flops,
	.bwd_reads_no_out = true,
};
