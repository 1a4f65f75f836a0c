/* SPDX-License-Identifier: MIT */
/* softmax.c - softmax over the last axis, as a layer of its own (the loss
 * has its own fused softmax; this one is for models that use
 * probabilities inside, e.g. as weights).
 *
 * Each row of the last axis: y = exp(x - max x) / sum exp(x - max x),
 * stable for any range of x. Backward from the output alone:
 * dx = y * (dy - sum(dy * y)), the row's Jacobian-vector product.
 * The forward pass and the backward dot product run in the kernel seam
 * (kern.h).
 * FLOPs: 5 per value (max, subtract, exp, sum, divide), as the loss. */
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"

static enum dt_status
softmax_infer(struct dt_node *n, const struct dt_job *job,
	      struct dt_error *err)
{
	(void)job;
	(void)err;
	n->out_shape = n->in_shape[0];
	return DT_OK;
}

static int64_t
last_dim(const struct dt_node *n)
{
	return n->out_shape.n_dims > 0
		       ? n->out_shape.dim[n->out_shape.n_dims - 1] : 1;
}

static void
softmax_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	const int64_t d = last_dim(n), rows = p->batch * n->out_size / d;

	for (int64_t r = 0; r < rows; r++) {
		float *y = n->out + r * d;	/* (d) */

		memcpy(y, in[0] + r * d, (size_t)d * sizeof(float));
		dt_kern_softmax(y, d, NULL);
	}
}

static void
softmax_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
		 float *const *din, const bool *din_add)
{
	const int64_t d = last_dim(n), rows = p->batch * n->out_size / d;

	(void)in;
	if (din[0] == NULL)
		return;
	for (int64_t r = 0; r < rows; r++) {
		const float *y = n->out + r * d;	/* (d) */
		const float *dy = n->dout + r * d;	/* (d) */
		float *dx = din[0] + r * d;		/* (d) */
		float dot = dt_kern_dot(dy, y, d);

		if (din_add[0])
			for (int64_t j = 0; j < d; j++)
				dx[j] += y[j] * (dy[j] - dot);
		else
			for (int64_t j = 0; j < d; j++)
				dx[j] = y[j] * (dy[j] - dot);
	}
}

static double
softmax_fwd_flops(const struct dt_node *n)
{
	return 5.0 * (double)n->out_size;
}

const struct dt_layer_ops dt_layer_softmax = {
	.kind = "softmax",
	.infer = softmax_infer,
	.forward = softmax_forward,
	.backward = softmax_backward,
	.fwd_flops = softmax_fwd_flops,
};
