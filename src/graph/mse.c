/* SPDX-License-Identifier: MIT */
/* mse.c - mean squared error loss against float targets.
 *
 * The loss of a sample is the mean over its N outputs of (y - t)^2; the
 * losses of the batch are summed into pass->loss_sum, as softmax
 * cross-entropy sums its per-sample losses, so grad_scale = 1/global_batch
 * gives the gradient of the batch mean. Targets come in pass->targets,
 * (B, N) floats. The node's output is a copy of the prediction, so
 * dt_model_probs reads predictions. Backward: d(loss)/dy = 2 (y - t) / N,
 * times pass->grad_scale. pass->n_correct is left alone: there is nothing
 * to be right about.
 * FLOPs: 3 per output (subtract, square, add). */
#include <string.h>

#include "graph/layer.h"

static enum dt_status
mse_infer(struct dt_node *n, const struct dt_job *job, struct dt_error *err)
{
	(void)job;
	(void)err;
	n->out_shape = n->in_shape[0];
	return DT_OK;
}

static void
mse_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	const int64_t size = n->out_size, len = p->batch * size;
	const float *y = in[0];			/* (B, N) */
	const float *t = p->targets;		/* (B, N) or NULL */

	memcpy(n->out, y, (size_t)len * sizeof(float));
	if (t == NULL)
		return;
	for (int64_t r = 0; r < p->batch; r++) {
		float sum = 0.0f;

		for (int64_t j = r * size; j < (r + 1) * size; j++) {
			float d = y[j] - t[j];

			sum += d * d;
		}
		p->loss_sum += (double)sum / (double)size;
	}
}

static void
mse_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
	     float *const *din, const bool *din_add)
{
	const int64_t len = p->batch * n->out_size;
	const float k = 2.0f * p->grad_scale / (float)n->out_size;
	const float *y = in[0];			/* (B, N) */
	const float *t = p->targets;		/* (B, N) */
	float *dy = din[0];			/* (B, N) */

	if (dy == NULL)
		return;
	if (din_add[0])
		for (int64_t i = 0; i < len; i++)
			dy[i] += k * (y[i] - t[i]);
	else
		for (int64_t i = 0; i < len; i++)
			dy[i] = k * (y[i] - t[i]);
}

static double
mse_fwd_flops(const struct dt_node *n)
{
	return 3.0 * (double)n->out_size;
}

const struct dt_layer_ops dt_layer_mse = {
	.kind = "mse",
	.infer = mse_infer,
	.forward = mse_forward,
	.backward = mse_backward,
	.fwd_flops = mse_fwd_flops,
};
