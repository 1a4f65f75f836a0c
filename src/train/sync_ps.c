/* SPDX-License-Identifier: MIT */
/* sync_ps.c - the parameter-server implementation of the gradient-sync
 * seam (sync.h, comm/ps.h): a worker pushes its float gradient to the
 * server ranks, each holding a shard of the parameters and the optimizer
 * state, and pulls back the updated parameters; synchronous, or
 * asynchronous with a staleness bound. */
#include <math.h>
#include <stdlib.h>

#include "train/decay.h"
#include "train/sync_priv.h"

static void
no_op(struct dt_grad_sync *s)
{
	(void)s;
}

static enum dt_status
ps_begin(struct dt_grad_sync *s, int bucket, struct dt_error *err)
{
	(void)s;
	(void)bucket;
	(void)err;
	return DT_OK;
}

/* No rank sees the whole gradient: each worker checks its own before it
 * reaches the servers. */
static enum dt_status
ps_finish(struct dt_grad_sync *s, double step_loss,
	  struct dt_step_report *report, struct dt_error *err)
{
	double n2 = dt_sync_local_norm2(s);
	int64_t step = *s->cfg.step;

	(void)report;
	if (!isfinite(step_loss) || !isfinite(n2))
		return dt_errorf(err, DT_ERR_NUMERIC, "step %lld: non-finite "
				 "%s on rank %d; stopping without a "
				 "checkpoint", (long long)(step + 1),
				 isfinite(step_loss) ? "gradient" : "loss",
				 dt_comm_rank(s->cfg.world));
	return dt_ps_step(s->ps, dt_model_grads(s->cfg.model),
			  dt_model_params(s->cfg.model), step, err);
}

static double
ps_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	(void)s;
	(void)report;
	return 0;
}

/* The servers made the update; finish brought the parameters. */
static void
ps_apply(struct dt_grad_sync *s, float lr)
{
	(void)s;
	(void)lr;
}

/* Collective over s->cfg.world, servers and workers alike. */
static enum dt_status
ps_init(struct dt_grad_sync *s, struct dt_error *err)
{
	const struct dt_job *job = s->cfg.job;
	struct dt_ps_cfg cfg = {
		.n_servers = (int)job->parallel.servers,
		.async = job->parallel.mode == DT_PS_ASYNC,
		.max_staleness = job->parallel.max_staleness,
		.n_params = dt_model_n_trained(s->cfg.model),
		.job = job,
	};
	enum dt_status st;

	if (dt_decay_restricted(job))
		cfg.decay = dt_decay_spans(s->cfg.model, job->train.decay,
					   &cfg.n_decay);
	st = dt_ps_new(s->cfg.world, &cfg, &s->ps, err);
	free(cfg.decay);

	if (st != DT_OK)
		return st;
	s->lazy = cfg.async;
	s->workers = dt_ps_is_server(s->ps) ? NULL : dt_ps_workers(s->ps);
	return DT_OK;
}

const struct dt_grad_sync_ops dt_sync_ps_ops = {
	"parameter_server", ps_init, no_op, no_op, no_op, ps_begin,
	ps_finish, ps_norm2, ps_apply, NULL, NULL,
};
