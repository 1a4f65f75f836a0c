/* SPDX-License-Identifier: MIT */
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
 * does not recompute the statistics. Both passes run in the kernel seam
 * (kern.h), its row sums in 8 lanes, split over the pass's thread pool:
 * forward and dx by rows, dgain and dbias by features (each summed over
 * the rows in order), so the pool size never changes the bits.
 * FLOPs per sample, nominal: 8 per element (mean 1, variance 3, normalise
 * 2, scale and shift 2); the per-row square root and division are not
 * counted.
 * Under sequence parallelism (struct dt_node's seq_rows) the node
 * normalises its tensor rank's rows only, and dgain and dbias are the
 * sums over those rows: partial sums, which the group's sum completes. */
#include "graph/kern.h"
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
	int64_t first, rows;

	dt_node_rows(n, p, &first, &rows);	/* B*R, or the share */
	float *mean = n->scratch;		/* (rows) */
	float *rstd = n->scratch + rows;	/* (rows) */

	/* Two passes for the variance: the one-pass E[x^2] - E[x]^2
	 * cancels badly when the mean is large next to the spread. */
	dt_kern_par_layernorm(p->pool, in[0], n->tensor[0].data, n->tensor[1].data, n->out,
			  mean, rstd, rows, c, (float)n->spec.eps);
}

static void
layernorm_backward(struct dt_node *n, struct dt_pass *p,
		   const float *const *in, float *const *din,
		   const bool *din_add)
{
	const int64_t c = layernorm_width(n);
	int64_t first, rows;

	dt_node_rows(n, p, &first, &rows);	/* B*R, or the share */
	const float *mean = n->scratch;		/* (rows) */
	const float *rstd = n->scratch + rows;	/* (rows) */

	dt_kern_par_layernorm_grad(p->pool, in[0], n->dout, n->tensor[0].data,
				   mean, rstd, din[0], din_add[0],
				   n->tensor[0].grad, n->tensor[1].grad,
				   rows, c);
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
	.row_shares = true,
};
