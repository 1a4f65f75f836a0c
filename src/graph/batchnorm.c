/* SPDX-License-Identifier: MIT */
/* batchnorm.c - batch normalisation per channel (Ioffe & Szegedy, "Batch
 * Normalization: Accelerating Deep Network Training by Reducing Internal
 * Covariate Shift", ICML 2015), with PyTorch's conventions.
 *
 * A (C, H, W) input is normalised per channel over the B*H*W values of
 * the micro-batch (BatchNorm2d), a (C) input per feature over the B
 * samples (BatchNorm1d). With N the values per channel:
 *   training:   mean, var = the batch's (var biased: / N)
 *   evaluation: mean, var = running_mean, running_var
 *   y = gamma * (x - mean) / sqrt(var + eps) + beta
 * gamma ("weight") starts at 1 and beta ("bias") at 0. Every training
 * forward pass (each micro-batch) updates the running statistics with the
 * spec's momentum m, using the unbiased variance as PyTorch does:
 *   running_mean = (1 - m) running_mean + m mean
 *   running_var  = (1 - m) running_var  + m var * N / (N - 1)
 * (with N == 1 there is no unbiased variance and running_var is left as it
 * is; the normalised output is then 0 everywhere, as the batch has no
 * spread). running_mean (start 0) and running_var (start 1) are buffers
 * (layer.h): in the parameter arena so checkpoints carry them, but not
 * trained.
 *
 * Data parallelism: the batch statistics are those of the rank's own
 * micro-batch, not of the global batch (PyTorch's BatchNorm, not
 * SyncBatchNorm), so ranks normalise with different statistics and their
 * running statistics drift apart; a checkpoint keeps the ones of the rank
 * that writes it. Micro-batches of a few samples make noisy statistics.
 *
 * Backward in training (the statistics depend on x), with xhat = (x - mean)
 * * rstd, rstd = 1 / sqrt(var + eps), sums over the channel's N values:
 *   dx = gamma * rstd * (dy - sum(dy) / N - xhat * sum(dy * xhat) / N)
 *   dgamma += sum(dy * xhat),  dbeta += sum(dy)
 * and in evaluation (fixed statistics) dx = gamma * rstd * dy. No scratch:
 * backward recomputes the batch statistics from its input, bit for bit as
 * forward did, instead of keeping 2*C floats for the whole batch that the
 * per-sample scratch accounting could only charge as 2*C per sample. The
 * channel sums are accumulated in double, as N = B*H*W can be large.
 * The channels are split over the pass's thread pool, which never changes
 * the bits (each channel is summed whole, in one order, by one thread).
 * FLOPs per sample, nominal: 8 per element (mean 1, variance 3, normalise
 * 2, scale and shift 2), as layernorm. */
#include <math.h>

#include "graph/layer.h"
#include "util/threadpool.h"

enum { BN_GAMMA, BN_BETA, BN_RUNNING_MEAN, BN_RUNNING_VAR };

/* Channels (the first axis), and values per channel in one sample. */
static int64_t
bn_channels(const struct dt_node *n)
{
	return n->in_shape[0].dim[0];
}

static int64_t
bn_spatial(const struct dt_node *n)
{
	return n->in_size[0] / bn_channels(n);
}

static enum dt_status
batchnorm_infer(struct dt_node *n, const struct dt_job *job,
		struct dt_error *err)
{
	int64_t c;

	/* A 2-D input is refused rather than guessed at: graph.h reads it
	 * as a one-channel image (H, W) for conv2d but as (T, features) for
	 * a sequence, and the two call for different statistics. */
	if (n->in_shape[0].n_dims != 1 && n->in_shape[0].n_dims != 3)
		return dt_node_errorf(n, job, err,
				      "batchnorm needs a (C) or (C, H, W) "
				      "input, found %d axes; for a (T, C) "
				      "sequence use layernorm, for an (H, W) "
				      "image reshape it to (1, H, W)",
				      n->in_shape[0].n_dims);
	if (!(n->spec.eps > 0.0))
		return dt_node_errorf(n, job, err,
				      "eps must be > 0, found %g", n->spec.eps);
	if (!(n->spec.momentum >= 0.0 && n->spec.momentum <= 1.0))
		return dt_node_errorf(n, job, err,
				      "momentum must be in [0, 1], found %g",
				      n->spec.momentum);
	c = bn_channels(n);
	n->out_shape = n->in_shape[0];
	n->n_tensors = 4;
	n->tensor[BN_GAMMA] = (struct dt_param_tensor){
		.name = "weight", .n_dims = 1, .shape = { c },
		.init = DT_INIT_ONE,
	};
	n->tensor[BN_BETA] = (struct dt_param_tensor){
		.name = "bias", .n_dims = 1, .shape = { c },
		.init = DT_INIT_ZERO,
	};
	n->tensor[BN_RUNNING_MEAN] = (struct dt_param_tensor){
		.name = "running_mean", .n_dims = 1, .shape = { c },
		.init = DT_INIT_ZERO, .buffer = true,
	};
	n->tensor[BN_RUNNING_VAR] = (struct dt_param_tensor){
		.name = "running_var", .n_dims = 1, .shape = { c },
		.init = DT_INIT_ONE, .buffer = true,
	};
	return DT_OK;
}

/* Mean and biased variance of channel ch over the batch x (B, C, S). */
static void
bn_batch_stats(const float *x, int64_t batch, int64_t c, int64_t s,
	       int64_t ch, double *mean, double *var)
{
	const double count = (double)(batch * s);
	double sum = 0.0, sq = 0.0, m;

	for (int64_t b = 0; b < batch; b++) {
		const float *xs = x + (b * c + ch) * s;	/* (S) */

		for (int64_t i = 0; i < s; i++)
			sum += xs[i];
	}
	m = sum / count;
	for (int64_t b = 0; b < batch; b++) {
		const float *xs = x + (b * c + ch) * s;	/* (S) */

		for (int64_t i = 0; i < s; i++) {
			double d = xs[i] - m;

			sq += d * d;
		}
	}
	*mean = m;
	*var = sq / count;
}

/* The passes split their work by channels: each channel's statistics,
 * outputs, input gradients and parameter gradients belong to it alone,
 * summed in the same order on any thread, so the pool size never changes
 * the bits. */
struct bn_job {
	struct dt_node *n;
	struct dt_pass *p;
	const float *x;		/* (B, C, S) */
	float *dx;		/* (B, C, S) or NULL */
	bool add;
};

static void
forward_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct bn_job *j = ctx;
	struct dt_node *n = j->n;
	const struct dt_pass *p = j->p;
	const int64_t c = bn_channels(n), s = bn_spatial(n);
	const int64_t count = p->batch * s;
	const double eps = n->spec.eps, mom = n->spec.momentum;
	const float *gamma = n->tensor[BN_GAMMA].data;		/* (C) */
	const float *beta = n->tensor[BN_BETA].data;		/* (C) */
	float *run_mean = n->tensor[BN_RUNNING_MEAN].data;	/* (C) */
	float *run_var = n->tensor[BN_RUNNING_VAR].data;	/* (C) */

	for (int64_t ch = lo; ch < hi; ch++) {
		double mean, var;

		if (p->training && p->recompute) {
			/* the second forward of model.recompute: the
			 * statistics are updated once per micro-batch */
			bn_batch_stats(j->x, p->batch, c, s, ch, &mean, &var);
		} else if (p->training) {
			bn_batch_stats(j->x, p->batch, c, s, ch, &mean, &var);
			run_mean[ch] = (float)((1.0 - mom) * run_mean[ch] +
					       mom * mean);
			if (count > 1)
				run_var[ch] = (float)((1.0 - mom) * run_var[ch] +
						      mom * var * (double)count /
						      (double)(count - 1));
		} else {
			mean = run_mean[ch];
			var = run_var[ch];
		}

		/* y = x * scale + shift folds the normalisation and the
		 * affine map into one multiply-add per value. */
		const float scale = (float)(gamma[ch] / sqrt(var + eps));
		const float shift = beta[ch] - (float)mean * scale;

		for (int64_t b = 0; b < p->batch; b++) {
			const float *x = j->x + (b * c + ch) * s;	/* (S) */
			float *y = n->out + (b * c + ch) * s;		/* (S) */

			for (int64_t i = 0; i < s; i++)
				y[i] = x[i] * scale + shift;
		}
	}
}

/* Channels per thread below which the pass stays on one: about 8k values. */
static int64_t
bn_grain(const struct dt_node *n, int64_t batch)
{
	int64_t per = batch * bn_spatial(n);

	return per >= 8192 ? 1 : 8192 / per;
}

static void
batchnorm_forward(struct dt_node *n, struct dt_pass *p,
		  const float *const *in)
{
	struct bn_job j = { .n = n, .p = p, .x = in[0] };

	dt_pool_for(p->pool, bn_channels(n), bn_grain(n, p->batch),
		    forward_part, &j);
}

static void
backward_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct bn_job *j = ctx;
	struct dt_node *n = j->n;
	const struct dt_pass *p = j->p;
	const int64_t c = bn_channels(n), s = bn_spatial(n);
	const double count = (double)(p->batch * s);
	const float *gamma = n->tensor[BN_GAMMA].data;		/* (C) */
	float *dgamma = n->tensor[BN_GAMMA].grad;		/* (C) */
	float *dbeta = n->tensor[BN_BETA].grad;			/* (C) */

	for (int64_t ch = lo; ch < hi; ch++) {
		double mean, var, sum_dy = 0.0, sum_dy_xhat = 0.0;

		if (p->training) {
			bn_batch_stats(j->x, p->batch, c, s, ch, &mean, &var);
		} else {
			mean = n->tensor[BN_RUNNING_MEAN].data[ch];
			var = n->tensor[BN_RUNNING_VAR].data[ch];
		}

		const float rstd = (float)(1.0 / sqrt(var + n->spec.eps));
		const float m = (float)mean;

		for (int64_t b = 0; b < p->batch; b++) {
			const float *x = j->x + (b * c + ch) * s;	/* (S) */
			const float *dy = n->dout + (b * c + ch) * s;	/* (S) */

			for (int64_t i = 0; i < s; i++) {
				sum_dy += dy[i];
				sum_dy_xhat += dy[i] * ((x[i] - m) * rstd);
			}
		}
		dgamma[ch] += (float)sum_dy_xhat;
		dbeta[ch] += (float)sum_dy;
		if (j->dx == NULL)
			continue;

		/* In evaluation the statistics are constants: only the
		 * dy term remains. */
		const float k = gamma[ch] * rstd;
		const float a = p->training ? (float)(sum_dy / count) : 0.0f;
		const float bb = p->training ? (float)(sum_dy_xhat / count)
					     : 0.0f;

		for (int64_t b = 0; b < p->batch; b++) {
			const float *x = j->x + (b * c + ch) * s;	/* (S) */
			const float *dy = n->dout + (b * c + ch) * s;	/* (S) */
			float *dx = j->dx + (b * c + ch) * s;		/* (S) */

			for (int64_t i = 0; i < s; i++) {
				float xhat = (x[i] - m) * rstd;
				float g = k * (dy[i] - a - xhat * bb);

				dx[i] = j->add ? dx[i] + g : g;
			}
		}
	}
}

static void
batchnorm_backward(struct dt_node *n, struct dt_pass *p,
		   const float *const *in, float *const *din,
		   const bool *din_add)
{
	struct bn_job j = {
		.n = n, .p = p, .x = in[0], .dx = din[0], .add = din_add[0],
	};

	dt_pool_for(p->pool, bn_channels(n), bn_grain(n, p->batch),
		    backward_part, &j);
}

static double
batchnorm_fwd_flops(const struct dt_node *n)
{
	return 8.0 * (double)n->in_size[0];
}

const struct dt_layer_ops dt_layer_batchnorm = {
	.kind = "batchnorm",
	.infer = batchnorm_infer,
	.forward = batchnorm_forward,
	.backward = batchnorm_backward,
	.fwd_flops = batchnorm_fwd_flops,
};
