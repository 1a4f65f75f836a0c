/* SPDX-License-Identifier: MIT */
/* l1_huber.c - the mean absolute error (l1) and Huber losses against float
 * targets, the robust siblings of mse.c.
 *
 * As in mse.c, the loss of a sample is the mean over its N outputs of a
 * per-output loss of the error d = y - t, the losses of the batch are
 * summed into pass->loss_sum, the node's output is a copy of the
 * prediction, targets come in pass->targets, (B, N) floats, and backward
 * multiplies by pass->grad_scale.
 *
 * l1: |d|; its gradient sign(d) / N, and 0 where d is exactly 0 (the
 * subgradient of |d| at 0 that the middle of [-1, 1] gives; a prediction
 * that hits its target is left where it is).
 *
 * huber (P. J. Huber, "Robust Estimation of a Location Parameter", Annals
 * of Mathematical Statistics 35(1), 1964): with delta = model.huber_delta,
 * d^2 / 2 where |d| <= delta, else delta (|d| - delta / 2): quadratic near
 * the target, linear past delta, continuous with its first derivative;
 * the gradient is d clamped to [-delta, delta], over N.
 * FLOPs: 3 per output for l1 (subtract, absolute value, add), 4 for huber
 * (a compare besides). */
#include <math.h>
#include <string.h>

#include "graph/layer.h"

static enum dt_status
l1_infer(struct dt_node *n, const struct dt_job *job, struct dt_error *err)
{
	(void)job;
	(void)err;
	n->out_shape = n->in_shape[0];
	return DT_OK;
}

static enum dt_status
huber_infer(struct dt_node *n, const struct dt_job *job, struct dt_error *err)
{
	(void)err;
	n->out_shape = n->in_shape[0];
	n->huber_delta = (float)job->model.huber_delta;
	return DT_OK;
}

/* The loss of one error d: |d| for l1 (delta 0), Huber's for delta > 0. */
static inline float
elem_loss(float d, float delta)
{
	float a = fabsf(d);

	if (delta == 0.0f)
		return a;
	return a <= delta ? 0.5f * d * d : delta * (a - 0.5f * delta);
}

/* Its derivative: sign(d) (0 at 0) for l1, d clamped to [-delta, delta]
 * for Huber. */
static inline float
elem_grad(float d, float delta)
{
	if (delta == 0.0f)
		return d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f;
	return d > delta ? delta : d < -delta ? -delta : d;
}

static void
robust_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	const int64_t size = n->out_size, len = p->batch * size;
	const float *y = in[0];			/* (B, N) */
	const float *t = p->targets;		/* (B, N) or NULL */

	memcpy(n->out, y, (size_t)len * sizeof(float));
	if (t == NULL)
		return;
	for (int64_t r = 0; r < p->batch; r++) {
		float sum = 0.0f;

		for (int64_t j = r * size; j < (r + 1) * size; j++)
			sum += elem_loss(y[j] - t[j], n->huber_delta);
		p->loss_sum += (double)sum / (double)size;
	}
}

static void
robust_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
		float *const *din, const bool *din_add)
{
	const int64_t len = p->batch * n->out_size;
	const float k = p->grad_scale / (float)n->out_size;
	const float *y = in[0];			/* (B, N) */
	const float *t = p->targets;		/* (B, N) */
	float *dy = din[0];			/* (B, N) */

	if (dy == NULL)
		return;
	for (int64_t i = 0; i < len; i++) {
		float g = k * elem_grad(y[i] - t[i], n->huber_delta);

		dy[i] = din_add[0] ? dy[i] + g : g;
	}
}

static double
l1_fwd_flops(const struct dt_node *n)
{
	return 3.0 * (double)n->out_size;
}

static double
huber_fwd_flops(const struct dt_node *n)
{
	return 4.0 * (double)n->out_size;
}

const struct dt_layer_ops dt_layer_l1 = {
	.kind = "l1",
	.infer = l1_infer,
	.forward = robust_forward,
	.backward = robust_backward,
	.fwd_flops = l1_fwd_flops,
};

const struct dt_layer_ops dt_layer_huber = {
	.kind = "huber",
	.infer = huber_infer,
	.forward = robust_forward,
	.backward = robust_backward,
	.fwd_flops = huber_fwd_flops,
};
