/* dense.c - fully connected layer, Y = X W + b.
 *
 * W is (in, out) row-major and b (out), left out with `bias: false`. A
 * (T, C) output of another layer is read as T rows of C features, each
 * mapped to `units` (tokens through a projection, (T, C) -> (T, units));
 * any other input is flattened per sample, so a (B, 28, 28) batch is read
 * as (B, 784) (graph.h). A whole micro-batch goes through one cblas_sgemm
 * each way (OpenBLAS), with R = B * rows:
 *   forward   Y(R,out) = X(R,in) W(in,out) + b
 *   backward  dW(in,out) += X^T dY   (beta = 1: accumulates micro-batches)
 *             db(out)    += column sums of dY
 *             dX(R,in)    = dY W^T   (skipped when nothing upstream needs it)
 * FLOPs per sample: forward rows * (2*in*out for the product (a
 * multiply-add is 2) plus out for the bias); backward is counted as twice
 * that (graph.h), which is exact for dW plus dX and ignores the bias sums.
 * Init: He-normal when the layer's `activation:` is relu or gelu,
 * Xavier-uniform otherwise (layer.h gives the papers); bias zero. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "graph/layer.h"

/* Rows per sample: T for another layer's (T, C) output, else 1. */
static int64_t
dense_rows(const struct dt_node *n)
{
	if (n->in_shape[0].n_dims == 2 && n->inputs[0] != DT_NODE_INPUT)
		return n->in_shape[0].dim[0];
	return 1;
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
	};
	n->tensor[1] = (struct dt_param_tensor){
		.name = "bias",
		.n_dims = 1,
		.shape = { units },
		.init = DT_INIT_ZERO,
	};
	return DT_OK;
}

static void
dense_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	const int64_t rows = p->batch * dense_rows(n);
	const int n_out = (int)n->spec.units;
	const int n_in = (int)n->tensor[0].shape[0];
	const float *w = n->tensor[0].data;	/* (in, out) */
	float *y = n->out;			/* (R, out) */
	float beta = 0.0f;

	/* Broadcasting b into Y first lets the sgemm add the product with
	 * beta = 1, saving a second pass over Y. */
	if (n->n_tensors > 1) {
		const float *b = n->tensor[1].data;	/* (out) */

		for (int64_t r = 0; r < rows; r++)
			memcpy(y + r * n_out, b, (size_t)n_out * sizeof(float));
		beta = 1.0f;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows,
		    n_out, n_in, 1.0f, in[0], n_in, w, n_out, beta, y, n_out);
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

static void
dense_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
	       float *const *din, const bool *din_add)
{
	const int64_t rows = p->batch * dense_rows(n);
	const int n_out = (int)n->spec.units;
	const int n_in = (int)n->tensor[0].shape[0];
	const float *w = n->tensor[0].data;	/* (in, out) */
	const float *dy = n->dout;		/* (R, out) */
	float *dw = n->tensor[0].grad;		/* (in, out) */

	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n_in, n_out,
		    (int)rows, 1.0f, in[0], n_in, dy, n_out, 1.0f, dw, n_out);
	if (n->n_tensors > 1)
		bias_grad(dy, n->tensor[1].grad, rows, n_out);
	if (din[0] != NULL)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows,
			    n_in, n_out, 1.0f, dy, n_out, w, n_out,
			    din_add[0] ? 1.0f : 0.0f, din[0], n_in);
}

static double
dense_fwd_flops(const struct dt_node *n)
{
	double bias = n->n_tensors > 1 ? (double)n->out_size : 0.0;

	return 2.0 * (double)n->in_size[0] * (double)n->spec.units + bias;
}

const struct dt_layer_ops dt_layer_dense = {
	.kind = "dense",
	.infer = dense_infer,
	.forward = dense_forward,
	.backward = dense_backward,
	.fwd_flops = dense_fwd_flops,
};
