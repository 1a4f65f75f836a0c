/* SPDX-License-Identifier: MIT */
/* sync_ps.c - the parameter-server implementation of the gradient-sync
 * seam (sync.h, comm/ps.h): a worker pushes its float gradient to the
 * server ranks, each holding a shard of the parameters and the optimizer
 * state, and pulls back the updated parameters; synchronous, or
 * asynchronous with a staleness bound. It answers for the servers' role
 * itself: a server rank serves instead of training, the workers hand it
 * a restored state before the first step and release it after the
 * last, a checkpoint collects the state from it, and the staleness and
 * the servers' figures are its lines in metrics.jsonl and summary.json.
 * The sync's own optimizer (sync.c) is never stepped here: it holds the
 * state worker 0 collects for checkpoints and restores for a resume. */
#include <json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/decay.h"
#include "train/sync_priv.h"
#include "util/jsonnum.h"

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

/* Every worker: the servers' state after every update so far; the
 * parameters to every worker, the optimizer state to world rank 0. */
static enum dt_status
ps_collect(struct dt_grad_sync *s, struct dt_error *err)
{
	int first = dt_comm_rank(s->cfg.world) == 0, n_bufs = 0;
	/* bufs: (n_bufs) (n) */
	float **bufs = dt_optim_state(s->optim, &n_bufs);
	int64_t steps = 0;
	enum dt_status st;

	st = dt_ps_gather_state(s->ps, dt_model_params(s->cfg.model),
				first ? bufs : NULL, first ? &steps : NULL,
				err);
	if (st == DT_OK && first)
		dt_optim_set_steps(s->optim, steps);
	return st;
}

/* A worker's side of a resume: world rank 0 sends the restored state to
 * the servers. */
static enum dt_status
ps_start(struct dt_grad_sync *s, struct dt_error *err)
{
	int n_bufs = 0;
	/* bufs: (n_bufs) (n) */
	float **bufs = dt_optim_state(s->optim, &n_bufs);

	if (!s->resumed)
		return DT_OK;
	return dt_ps_scatter_state(s->ps, dt_model_params(s->cfg.model),
				   dt_comm_rank(s->cfg.world) == 0 ? bufs :
				   NULL, dt_optim_steps(s->optim), err);
}

static enum dt_status
ps_release(struct dt_grad_sync *s, struct dt_error *err)
{
	return dt_ps_done(s->ps, dt_model_params(s->cfg.model), err);
}

static double
ps_lr(int64_t step, void *ctx)
{
	const struct dt_grad_sync *s = ctx;

	return dt_lr_at(&s->cfg.plan->lr_schedule, step);
}

/* A server's whole run: its shard of a restored state (from ps_start),
 * then serving until every worker is done. */
static enum dt_status
ps_serve(struct dt_grad_sync *s, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	if (s->resumed)
		st = dt_ps_scatter_state(s->ps, NULL, NULL, 0, err);
	if (st == DT_OK)
		st = dt_ps_serve(s->ps, s->resumed ? NULL :
				 dt_model_params(s->cfg.model), ps_lr, s, err);
	return st;
}

/* The gradients' staleness over the log window (worker 0). */
static void
ps_log(struct dt_grad_sync *s, struct json_object *line)
{
	struct dt_ps_stats st;
	struct dt_error e;

	if (dt_ps_stats(s->ps, &st, &e) != DT_OK)
		return;
	json_object_object_add(line, "staleness_mean",
			       dt_json_float(st.staleness_mean));
	json_object_object_add(line, "staleness_max",
			       json_object_new_int64(st.staleness_max));
}

/* The servers, the mode and what the run's gradients met (worker 0). */
static void
ps_summary(struct dt_grad_sync *s, struct json_object *o)
{
	struct json_object *h = json_object_new_array();
	struct dt_ps_stats ps;
	struct dt_error e;

	memset(&ps, 0, sizeof ps);
	if (dt_ps_stats(s->ps, &ps, &e) == DT_OK)
		for (int i = 0; i < ps.n_hist; i++)
			json_object_array_add(h,
					      json_object_new_int64(ps.hist[i]));
	json_object_object_add(o, "parameter_servers", json_object_new_int(
				       dt_ps_n_servers(s->ps)));
	json_object_object_add(o, "ps_mode", json_object_new_string(
				       s->lazy ? "async" : "sync"));
	json_object_object_add(o, "max_staleness", json_object_new_int64(
				       s->lazy ? s->cfg.job->parallel.
				       max_staleness : 0));
	/* hist[i]: shard gradients applied i updates stale; the last bucket
	 * counts any staler than the bound (always 0). */
	json_object_object_add(o, "staleness_histogram", h);
	json_object_object_add(o, "server_bytes_per_step",
			       dt_json_number(ps.server_bytes_per_step));
}

static const struct dt_grad_sync_role ps_role = {
	ps_collect, ps_start, ps_release, ps_serve, ps_log, ps_summary,
	NULL, NULL, NULL,
};

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
	s->serves = dt_ps_is_server(s->ps);
	s->workers = s->serves ? NULL : dt_ps_workers(s->ps);
	s->state_remote = 1;
	s->no_norm = 1;
	s->role = &ps_role;
	return DT_OK;
}

const struct dt_grad_sync_ops dt_sync_ps_ops = {
	"parameter_server", ps_init, no_op, no_op, no_op, ps_begin,
	ps_finish, ps_norm2, ps_apply, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, NULL, NULL, NULL,
};
