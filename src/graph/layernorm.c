/* layernorm.c - layer normalisation over the last axis (Ba, Kiros, Hinton,
 * "Layer Normalization", 2016).
 *
 * The input (..., C) is read as R = in_size / C rows of C features per
 * sample; each row is normalised by its own mean and (biased) variance and
 * then scaled and shifted per feature:
 *   y = gain * (x - mean) * rstd + bias,   rstd = 1 / sqrt(var + eps)
 * gain starts at 1 and bias at 0. The statistics do not depend on the batch,
 * so training and evaluation compute the same thing.
 * Backward (as llm.c's layernorm_backward), with xhat = (x - mean) * rstd
 * and dn = gain * dy over one row:
 *   dx = rstd * (dn - mean(dn) - xhat * mean(dn * xhat))
 *   dgain += sum over rows of dy * xhat,  dbias += sum over rows of dy
 * Scratch: mean and rstd of every row, 2*R floats per sample, so backward
 * does not recompute the statistics.
 * FLOPs per sample, nominal: 8 per element (mean 1, variance 3, normalise
 * 2, scale and shift 2); the per-row square root and division are not
 * counted. */
#include <math.h>

#include "graph/layer.h"

/* Features per row: the size of the last axis. */
static int64_t
layernorm_width(const struct dt_node *n)
{
	return n->in_shape[0].dim[n->in_shape[0].n_dims - 1];
}

static enum dt_status
layernorm_infer(struct dt_node *n, const struct dt_job *job,
		struct dt_error *err)
{
	int64_t c;

	if (n->in_shape[0].n_dims < 1)
		return dt_node_errorf(n, job, err,
				      "layernorm needs an input with at least "
				      "one axis");
	if (!(n->spec.eps > 0.0))
		return dt_node_errorf(n, job, err,
				      "eps must be > 0, found %g", n->spec.eps);
	c = layernorm_width(n);
	n->out_shape = n->in_shape[0];
	n->n_tensors = 2;
	n->tensor[0] = (struct dt_param_tensor){
		.name = "weight",
		.n_dims = 1,
		.shape = { c },
		.init = DT_INIT_ONE,
	};
	n->tensor[1] = (struct dt_param_tensor){
		.name = "bias",
		.n_dims = 1,
		.shape = { c },
		.init = DT_INIT_ZERO,
	};
	return DT_OK;
}

static void
layernorm_forward(struct dt_node *n, struct dt_pass *p,
		  const float *const *in)
{
	const int64_t c = layernorm_width(n);
	const int64_t rows = p->batch * (n->in_size[0] / c);
	const float eps = (float)n->spec.eps;
	const float *gain = n->tensor[0].data;	/* (C) */
	const float *bias = n->tensor[1].data;	/* (C) */
	float *mean = n->scratch;		/* (B*R) */
	float *rstd = n->scratch + rows;	/* (B*R) */

	for (int64_t r = 0; r < rows; r++) {
		const float *x = in[0] + r * c;	/* (C) */
		float *y = n->out + r * c;	/* (C) */
		float m = 0.0f, v = 0.0f, s;

		for (int64_t j = 0; j < c; j++)
			m += x[j];
		m /= (float)c;
		/* Two passes: the one-pass E[x^2] - E[x]^2 cancels badly
		 * when the mean is large next to the spread. */
		for (int64_t j = 0; j < c; j++) {
			float d = x[j] - m;

			v += d * d;
		}
		v /= (float)c;
		s = 1.0f / sqrtf(v + eps);
		for (int64_t j = 0; j < c; j++)
			y[j] = (x[j] - m) * s * gain[j] + bias[j];
		mean[r] = m;
		rstd[r] = s;
	}
}

static void
layernorm_backward(struct dt_node *n, struct dt_pass *p,
		   const float *const *in, float *const *din,
		   const bool *din_add)
{
	const int64_t c = layernorm_width(n);
	const int64_t rows = p->batch * (n->in_size[0] / c);
	const float *gain = n->tensor[0].data;	/* (C) */
	float *dgain = n->tensor[0].grad;	/* (C) */
	float *dbias = n->tensor[1].grad;	/* (C) */
	const float *mean = n->scratch;		/* (B*R) */
	const float *rstd = n->scratch + rows;	/* (B*R) */

	for (int64_t r = 0; r < rows; r++) {
		const float *x = in[0] + r * c;		/* (C) */
		const float *dy = n->dout + r * c;	/* (C) */
		const float m = mean[r], s = rstd[r];
		float dn_mean = 0.0f, dn_xhat_mean = 0.0f;

		for (int64_t j = 0; j < c; j++) {
			float xhat = (x[j] - m) * s;
			float dn = gain[j] * dy[j];

			dn_mean += dn;
			dn_xhat_mean += dn * xhat;
			dgain[j] += dy[j] * xhat;
			dbias[j] += dy[j];
		}
		if (din[0] == NULL)
			continue;
		dn_mean /= (float)c;
		dn_xhat_mean /= (float)c;

		float *dx = din[0] + r * c;	/* (C) */

		for (int64_t j = 0; j < c; j++) {
			float xhat = (x[j] - m) * s;
			float g = s * (gain[j] * dy[j] - dn_mean -
				       xhat * dn_xhat_mean);

			dx[j] = din_add[0] ? dx[j] + g : g;
		}
	}
}

static double
layernorm_fwd_flops(const struct dt_node *n)
{
	return 8.0 * (double)n->in_size[0];
}

static int64_t
layernorm_scratch_floats(const struct dt_node *n)
{
	return 2 * (n->in_size[0] / layernorm_width(n));
}

const struct dt_layer_ops dt_layer_layernorm = {
	.kind = "layernorm",
	.infer = layernorm_infer,
	.forward = layernorm_forward,
	.backward = layernorm_backward,
	.fwd_flops = layernorm_fwd_flops,
	.scratch_floats = layernorm_scratch_floats,
};
