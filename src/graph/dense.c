/* dense.c - fully connected layer, Y = X W + b.
 *
 * W is (in, out) row-major and b (out). The input is flattened per sample,
 * so a (B, 28, 28) batch is read as (B, 784). A whole micro-batch goes
 * through one cblas_sgemm each way (OpenBLAS):
 *   forward   Y(B,out) = X(B,in) W(in,out) + b
 *   backward  dW(in,out) += X^T dY   (beta = 1: accumulates micro-batches)
 *             db(out)    += column sums of dY
 *             dX(B,in)    = dY W^T   (skipped when nothing upstream needs it)
 * FLOPs per sample: forward 2*in*out for the product (a multiply-add is 2)
 * plus out for the bias; backward is counted as twice that (graph.h), which
 * is exact for dW plus dX and ignores the bias sums.
 * Init: He-normal when the layer's `activation:` is relu or gelu,
 * Xavier-uniform otherwise (layer.h gives the papers); bias zero. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "graph/layer.h"

static enum dt_status
dense_infer(struct dt_node *n, const struct dt_job *job, struct dt_error *err)
{
	int64_t in = n->in_size[0], units = n->spec.units;
	enum dt_activation act = n->spec.activation;

	if (n->n_inputs != 1)
		return dt_node_errorf(n, job, err,
				      "dense takes one input, found %d",
				      n->n_inputs);
	if (units < 1)
		return dt_node_errorf(n, job, err,
				      "units must be >= 1, found %lld",
				      (long long)units);
	if (units > INT_MAX)
		return dt_node_errorf(n, job, err,
				      "units must be <= %d (BLAS sizes are "
				      "int), found %lld", INT_MAX,
				      (long long)units);
	n->out_shape.n_dims = 1;
	n->out_shape.dim[0] = units;

	n->n_tensors = 2;
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
	const int batch = (int)p->batch;
	const int n_in = (int)n->in_size[0], n_out = (int)n->out_size;
	const float *w = n->tensor[0].data;	/* (in, out) */
	const float *b = n->tensor[1].data;	/* (out) */
	float *y = n->out;			/* (B, out) */

	/* Broadcasting b into Y first lets the sgemm add the product with
	 * beta = 1, saving a second pass over Y. */
	for (int r = 0; r < batch; r++)
		memcpy(y + (size_t)r * n_out, b, (size_t)n_out * sizeof(float));
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, n_out,
		    n_in, 1.0f, in[0], n_in, w, n_out, 1.0f, y, n_out);
}

static void
dense_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
	       float *const *din, const bool *din_add)
{
	const int batch = (int)p->batch;
	const int n_in = (int)n->in_size[0], n_out = (int)n->out_size;
	const float *w = n->tensor[0].data;	/* (in, out) */
	const float *dy = n->dout;		/* (B, out) */
	float *dw = n->tensor[0].grad;		/* (in, out) */
	float *db = n->tensor[1].grad;		/* (out) */

	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n_in, n_out,
		    batch, 1.0f, in[0], n_in, dy, n_out, 1.0f, dw, n_out);
	for (int r = 0; r < batch; r++) {
		const float *row = dy + (size_t)r * n_out;

		for (int j = 0; j < n_out; j++)
			db[j] += row[j];
	}
	if (din[0] != NULL)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch,
			    n_in, n_out, 1.0f, dy, n_out, w, n_out,
			    din_add[0] ? 1.0f : 0.0f, din[0], n_in);
}

static double
dense_fwd_flops(const struct dt_node *n)
{
	return 2.0 * (double)n->in_size[0] * (double)n->out_size +
	       (double)n->out_size;
}

const struct dt_layer_ops dt_layer_dense = {
	.kind = "dense",
	.infer = dense_infer,
	.forward = dense_forward,
	.backward = dense_backward,
	.fwd_flops = dense_fwd_flops,
};
