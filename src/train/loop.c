/* SPDX-License-Identifier: MIT */
/* loop.c - the training loop's cadence (loop.h).
 *
 * Gradient averaging: every micro-batch's backward adds
 * (1/global_batch) * d(sum of its per-sample losses) into the gradient,
 * so after the gradient sync every rank holds the gradient of the mean
 * loss over the global batch, whatever the layout.
 *
 * The data position is (epoch, samples of the epoch consumed by all
 * ranks): global batch b of an epoch is perm[off, off + global_batch), and
 * data-parallel replica r takes its contiguous share of it. An epoch ends
 * when fewer than global_batch samples remain (they are dropped). */
#include "train/loop.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train/diverge.h"
#include "train/eval.h"
#include "train/metrics.h"
#include "train/signals.h"
#include "util/alloc.h"
#include "util/trace.h"

/* The loop's clocks and sums between log lines. */
struct cadence {
	double t0;		/* training began */
	double t_window;	/* the log window began */
	struct dt_time_breakdown win, total;	/* this rank's, of the log
						 * window and of the run */
	double win_forward_s;	/* of win.compute_s, the forward passes' */
	double grad_norm;	/* of the step just run, before clipping */
	double test_delay;	/* DTRAIN_TEST_DATA_DELAY on this rank, s */
	double pending_loss;	/* loss not yet reduced (lazy sync) */
	double lr;		/* of the step just run */
	double now;		/* after the step's report, then after its
				 * update (the window's end) */
	int64_t first_step;
	int64_t first_samples;	/* r->position.samples when it began */
	float grad_scale;	/* 1 / (global_batch x labels per sample) */
};

static void
test_signal_hook(const struct dt_run *r)
{
	if (r->test_signal_step == r->position.step + 1)
		raise(SIGTERM);
}

/* Test aid, documented in dtrain(1): DTRAIN_TEST_DATA_DELAY=R:MS makes
 * rank R wait MS milliseconds for each step's data, as a slow loader
 * would, so tests can see where the time breakdown puts it. */
static double
test_delay_setup(const struct dt_run *r)
{
	const char *v = getenv("DTRAIN_TEST_DATA_DELAY");
	const char *colon = v != NULL ? strchr(v, ':') : NULL;

	if (colon == NULL || strtol(v, NULL, 10) != r->rank)
		return 0;
	return strtod(colon + 1, NULL) * 1e-3;
}

static double
test_delay(double seconds)
{
	struct timespec ts = { (time_t)seconds,
			       (long)((seconds - floor(seconds)) * 1e9) };
	double t = dt_now();

	if (seconds <= 0)
		return 0;
	nanosleep(&ts, NULL);
	return dt_now() - t;
}

static int
is_done(const struct dt_run *r)
{
	if (r->job->train.steps > 0)
		return r->position.step >= r->job->train.steps;
	return r->position.epoch >= r->job->train.epochs;
}

/* Whether the workers meet after step `step` (1-based): a logged step,
 * an evaluation, a checkpoint by steps, or the last step. */
static int
meets(const struct dt_run *r, int64_t step)
{
	const struct dt_job *job = r->job;

	return (job->log.every_steps > 0 && step % job->log.every_steps == 0) ||
	       (job->eval.every_steps > 0 && step % job->eval.every_steps == 0) ||
	       (job->checkpoint.every_steps > 0 &&
		step % job->checkpoint.every_steps == 0) ||
	       step >= r->plan.total_steps;
}

/* Whether a checkpoint is due after this step by seconds (rank 0's clock
 * decides; the flag travels in the step report). */
static int
ckpt_due_local(const struct dt_run *r, double now)
{
	const struct dt_job *job = r->job;

	return job->checkpoint.every_seconds > 0 && r->rank == 0 &&
	       now - r->last_ckpt_time >= job->checkpoint.every_seconds;
}

/* The step report: this rank's shares, summed over the workers every
 * step, or with a lazy sync only where the workers meet anyway (logged
 * steps, evaluations, checkpoints), so a slow worker is not waited for
 * between; unreduced, its loss waits in c->pending_loss. */
static enum dt_status
exchange_report(struct dt_run *r, struct cadence *c, double step_loss,
		struct dt_error *err)
{
	struct dt_step_report *rep = r->report;
	int exchange = !dt_grad_sync_lazy(r->sync) ||
		       meets(r, r->position.step + 1);

	c->now = dt_now();
	c->pending_loss += step_loss;
	rep->loss_sum = c->pending_loss;
	rep->stop = dt_signals_pending() != 0;
	rep->ckpt_due = ckpt_due_local(r, c->now);
	if (!exchange) {
		rep->loss_sum = rep->stop = rep->ckpt_due = 0;
		return DT_OK;
	}
	c->pending_loss = 0;
	return dt_comm_allreduce_sum_f64(dt_grad_sync_workers(r->sync),
					 (double *)rep, DT_STEP_REPORT_FIXED +
					 (size_t)r->n_norms, err);
}

/* train.on_nonfinite abort: the error, naming the rank whose loss was
 * not finite (the lowest), else the gradient. */
static enum dt_status
nonfinite_error(struct dt_run *r, double step_loss, struct dt_error *err)
{
	int size = dt_comm_size(r->comm);
	int who = -(isfinite(step_loss) ? size : r->rank);
	long long step = (long long)(r->position.step + 1);

	dt_comm_allreduce_max_int(dt_grad_sync_workers(r->sync), &who, 1,
				  NULL);
	who = -who;
	if (who < size)
		return dt_errorf(err, DT_ERR_NUMERIC, "step %lld: non-finite "
				 "loss on rank %d; stopping without a "
				 "checkpoint (set train.on_nonfinite: "
				 "skip_step to drop such steps)", step, who);
	return dt_errorf(err, DT_ERR_NUMERIC, "step %lld: non-finite "
			 "gradient (loss %g); stopping without a checkpoint",
			 step, r->report->loss_sum);
}

/* The update of a step whose loss and gradient are finite: clipped to
 * train.clip_norm by the squared norm norm2, then applied. */
static void
update(struct dt_run *r, double norm2, double lr)
{
	double clip = r->job->train.clip_norm;

	if (clip > 0 && sqrt(norm2) > clip)
		dt_grad_sync_clip(r->sync, (float)(clip / sqrt(norm2)));
	dt_grad_sync_apply(r->sync, (float)lr);
	r->position.window_loss += r->report->loss_sum;
	r->position.window_samples += r->plan.global_batch *
				      r->labels_per_sample;
	r->position.samples += r->plan.global_batch;
}

/* One optimizer step: the executor, the gradient sync, the report, the
 * update (or its refusal), and the position moved on. */
static enum dt_status
run_step(struct dt_run *r, struct cadence *c, struct dt_error *err)
{
	double step_loss = 0, norm2, wait = 0, begin, t[4];

	c->lr = dt_lr_at(&r->plan.lr_schedule, r->position.step);
	t[0] = dt_now();
	wait = test_delay(c->test_delay);
	if (dt_exec_step(r, c->grad_scale, &step_loss, &wait,
			 &c->win_forward_s, err) != DT_OK)
		dt_run_die(r, err);
	t[1] = dt_now();
	begin = dt_grad_sync_take_begin(r->sync);
	test_signal_hook(r);
	if (dt_grad_sync_finish(r->sync, step_loss, r->report, err) != DT_OK)
		dt_run_die(r, err);
	r->steps_counted++;
	if (exchange_report(r, c, step_loss, err) != DT_OK)
		dt_run_die(r, err);
	t[2] = dt_now();
	norm2 = dt_grad_sync_norm2(r->sync, r->report);
	c->grad_norm = dt_grad_sync_has_norm(r->sync) ? sqrt(norm2) : NAN;
	if (!isfinite(r->report->loss_sum) || !isfinite(norm2)) {
		if (r->job->train.on_nonfinite == DT_NONFINITE_ABORT)
			return nonfinite_error(r, step_loss, err);
		r->position.skipped++;
	} else if (dt_diverge_check(&r->diverge, r->position.step + 1,
				    dt_grad_sync_lazy(r->sync) ? NAN :
				    r->report->loss_sum * c->grad_scale,
				    sqrt(norm2), r->rank == 0 ? stderr : NULL,
				    err) != DT_OK) {
		return DT_ERR_NUMERIC;	/* before the update, unsaved */
	} else {
		update(r, norm2, c->lr);
	}
	t[3] = dt_now();
	dt_trace_event("step", t[0], t[3], "step", (long)r->position.step);
	dt_trace_event("compute", t[0], t[1], NULL, 0);
	dt_trace_event("sync", t[1], t[2], NULL, 0);
	dt_trace_event("optimizer", t[2], t[3], NULL, 0);
	c->win.compute_s += t[1] - t[0] - wait - begin;
	c->win.data_wait_s += wait;
	c->win.comm_wait_s += t[2] - t[1] + begin;
	c->win.optim_s += t[3] - t[2];
	c->now = t[3];
	r->position.step++;
	r->position.epoch_off += r->plan.global_batch;
	r->position.window_steps++;
	return DT_OK;
}

/* The workers' breakdowns of the window and the run, into
 * r->rank_times, every worker's row (a sum of rows that are zero but
 * for their owner's: one small all-reduce, on logged steps only). */
static void
gather_times(struct dt_run *r, struct cadence *c)
{
	struct dt_comm *w = dt_grad_sync_workers(r->sync);
	/* row: (DT_RANK_TIMES), this worker's */
	double *row = r->rank_times + DT_RANK_TIMES * dt_comm_rank(w);
	struct dt_error err;

	memset(r->rank_times, 0, (size_t)r->n_workers * DT_RANK_TIMES *
	       sizeof *r->rank_times);
	c->total.compute_s += c->win.compute_s;
	c->total.comm_wait_s += c->win.comm_wait_s;
	c->total.data_wait_s += c->win.data_wait_s;
	c->total.optim_s += c->win.optim_s;
	row[0] = r->rank;
	memcpy(row + 1, &c->win, sizeof c->win);
	memcpy(row + 1 + DT_TIME_PARTS, &c->total, sizeof c->total);
	if (dt_comm_allreduce_sum_f64(w, r->rank_times, (size_t)r->n_workers *
				      DT_RANK_TIMES, &err) != DT_OK)
		dt_run_die(r, &err);
	memset(&c->win, 0, sizeof c->win);
}

/* The log line of the window that ends at this step, and a new window. */
static enum dt_status
log_window(struct dt_run *r, struct cadence *c, int last,
	   struct dt_train_result *res, struct dt_error *err)
{
	struct dt_position *at = &r->position;
	double span = c->now - c->t_window > 0 ? c->now - c->t_window : 1e-9;
	struct dt_log_line line = {
		.loss = at->window_samples > 0 ?
			at->window_loss / (double)at->window_samples : NAN,
		.lr = c->lr,
		.samples_per_s = (double)(at->window_steps *
					  r->plan.global_batch) / span,
		.data_wait_s = c->win.data_wait_s,
		.forward_s = c->win_forward_s,
		.backward_s = c->win.compute_s > c->win_forward_s ?
			      c->win.compute_s - c->win_forward_s : 0,
		.elapsed_s = c->now - c->t0,
		.grad_norm = c->grad_norm,
	};
	enum dt_status st = DT_OK;

	line.tokens_per_s = dt_job_format_token_ids(r->job->data.format) ||
			    r->job->data.format == DT_FORMAT_TEXT ?
			    line.samples_per_s * (double)r->labels_per_sample :
			    NAN;
	gather_times(r, c);
	c->win_forward_s = 0;
	res->train_loss = line.loss;
	if (r->rank == 0) {
		st = dt_metrics_log(r, &line, err);
		dt_progress_step(&r->progress, at->step, at->epoch, line.loss,
				 line.lr, line.samples_per_s, c->now - c->t0,
				 last);
	}
	at->window_loss = 0;
	at->window_steps = 0;
	at->window_samples = 0;
	c->t_window = dt_now();
	return st;
}

/* Rank 0's in-place line for a step that is not logged: the log
 * window's loss and rate so far. */
static void
tick(struct dt_run *r, const struct cadence *c)
{
	const struct dt_position *at = &r->position;
	double now = dt_now(), span = now - c->t_window;

	if (r->rank != 0)
		return;
	dt_progress_tick(&r->progress, at->step, at->epoch,
			 at->window_samples > 0 ? at->window_loss /
			 (double)at->window_samples : NAN,
			 span > 0 ? (double)(at->window_steps *
					     r->plan.global_batch) / span : 0,
			 now - c->t0);
}

/* Rank 0 failed to write an output (st, err): every worker learns of it;
 * then the checkpoint, when one can be written, and the error naming the
 * file. DT_OK when every write succeeded. */
static enum dt_status
output_failed(struct dt_run *r, enum dt_status st, struct dt_error *err)
{
	struct dt_comm *w = dt_grad_sync_workers(r->sync);
	struct dt_error e2;
	char what[sizeof err->msg];
	const char *saved;

	if (dt_comm_agree(w, st, NULL) == DT_OK)
		return DT_OK;
	snprintf(what, sizeof what, "%s", r->rank == 0 ? err->msg :
		 "rank 0 could not write an output");
	saved = dt_run_checkpoint(r, &e2) == DT_OK ? "checkpoint written; "
		"make room, then continue with dtrain resume" :
		"no checkpoint written";
	return dt_errorf(err, DT_ERR_IO, "%s; stopping at step %lld (%s)",
			 what, (long long)r->position.step, saved);
}

/* The evaluation of eval.every_steps after this step: its metrics line
 * (into *out, rank 0), the best checkpoint, eval.patience. A signal during
 * it sets *stop and leaves the rest undone. */
static enum dt_status
periodic_eval(struct dt_run *r, struct cadence *c, int *stop, int *last,
	      enum dt_status *out, struct dt_error *err)
{
	int64_t step = r->position.step;
	enum dt_status st;
	double el, ea;

	st = dt_eval_run(r, &el, &ea, err);
	if (st == DT_ERR_INTERRUPTED) {
		*stop = 1;
		return DT_OK;
	}
	if (st != DT_OK)
		dt_run_die(r, err);
	if (r->rank == 0) {
		if (*out == DT_OK)
			*out = dt_metrics_eval(r, el, ea, err);
		dt_progress_eval(&r->progress, step, el, ea,
				 r->labels_per_sample > 1 ? exp(el) : NAN);
	}
	st = dt_best_after_eval(r, el, ea, err);
	if (st != DT_OK)
		return st;
	/* eval.patience used up: this is the last step (a signal still
	 * gets its checkpoint and exit 3 first). */
	if (!*stop && dt_best_stop_now(r))
		*last = 1;
	c->t_window = dt_now();
	return DT_OK;
}

/* After a step: the log line, the evaluation and the checkpoint that are
 * due, and the stop a signal asked for. *last: the run's last step. */
static enum dt_status
between_steps(struct dt_run *r, struct cadence *c, int *last,
	      struct dt_train_result *res, struct dt_error *err)
{
	const struct dt_job *job = r->job;
	int64_t step = r->position.step;
	int stop = r->report->stop > 0, ckpt, wrote = 0;
	enum dt_status st;
	enum dt_status out = DT_OK;

	*last = is_done(r) || step == r->plan.total_steps;
	if ((job->log.every_steps > 0 && step % job->log.every_steps == 0) ||
	    *last) {
		out = log_window(r, c, *last, res, err);
		wrote = 1;
	} else {
		tick(r, c);
	}
	if (r->have_eval && job->eval.every_steps > 0 &&
	    step % job->eval.every_steps == 0 && !*last) {
		st = periodic_eval(r, c, &stop, last, &out, err);
		if (st != DT_OK)
			return st;
		wrote = 1;
	}
	if (wrote && output_failed(r, out, err) != DT_OK)
		return err->status;
	ckpt = (job->checkpoint.every_steps > 0 &&
		step % job->checkpoint.every_steps == 0) ||
	       r->report->ckpt_due > 0 || stop;
	if (ckpt && (!*last || stop)) {
		st = dt_run_checkpoint(r, err);
		if (st != DT_OK)
			return st;
		r->last_ckpt_time = dt_now();
	}
	if (!stop)
		return DT_OK;
	char nbuf[32] = "";

	if (dt_comm_size(r->comm) > 1)
		snprintf(nbuf, sizeof nbuf, "-n %d ", dt_comm_size(r->comm));
	dt_progress_end(&r->progress);
	return dt_errorf(err, DT_ERR_INTERRUPTED, "interrupted at step %lld; "
			 "checkpoint written; continue with: dtrain resume "
			 "%s%s", (long long)step, nbuf, r->dir);
}

/* The loader thread, unless data.prefetch is 0 (the executor gathers),
 * and the one that downloads URL shards ahead (data.prefetch_shards). */
static void
start_loader(struct dt_run *r)
{
	const struct dt_plan *p = &r->plan;
	struct dt_loader_cfg lc = {
		.src = &r->train, .seed = r->job->seed,
		.global_batch = p->global_batch,
		.micro_batch = p->micro_batch,
		.grad_accum_steps = p->grad_accum_steps,
		.dp_rank = r->layout.grid.dp,
		.dp_size = p->dp_size,
		.epoch = r->position.epoch,
		.epoch_off = r->position.epoch_off,
		.depth = r->job->data.prefetch,
		.step = r->position.step,
		.total_steps = r->plan.total_steps,
	};

	if (dt_tokens_ahead_start(&r->train.td, r->job->data.prefetch_shards,
				  dt_comm_rank(r->comm)) != 0)
		fprintf(stderr, "dtrain: rank %d: cannot start the thread "
			"that fetches shards ahead; each is fetched when "
			"it is read\n", dt_comm_rank(r->comm));
	/* Held-out shards are fetched when read; a failure names the rank. */
	if (r->have_eval)
		dt_tokens_ahead_start(&r->eval.td, 0, dt_comm_rank(r->comm));
	if (r->job->data.prefetch > 0)
		r->loader = dt_loader_new(&lc);
}

/* Into the next epoch when this one has no whole global batch left; its
 * order, when the executor gathers. */
static void
turn_epoch(struct dt_run *r)
{
	struct dt_position *at = &r->position;

	if (at->epoch_off + r->plan.global_batch > r->train.n) {
		at->epoch++;
		at->epoch_off = 0;
	}
	if (r->loader == NULL && r->perm_epoch != at->epoch && !is_done(r)) {
		dt_shuffle(r->job->seed, at->epoch, r->train.n, r->perm);
		r->perm_epoch = at->epoch;
	}
}

enum dt_status
dt_loop_run(struct dt_run *r, struct dt_train_result *res,
	    struct dt_error *err)
{
	const struct dt_plan *p = &r->plan;
	struct cadence c;
	enum dt_status st;
	int last = 0;

	memset(&c, 0, sizeof c);
	/* The mean loss per sample, or per token for a language model. */
	c.grad_scale = 1.0f / (float)(p->global_batch * r->labels_per_sample);
	c.first_step = r->position.step;
	c.first_samples = r->position.samples;
	dt_progress_from_step(&r->progress, c.first_step);
	c.t0 = c.t_window = dt_now();
	c.grad_norm = NAN;
	c.test_delay = test_delay_setup(r);
	r->last_ckpt_time = c.t0;
	r->n_workers = dt_comm_size(dt_grad_sync_workers(r->sync));
	r->rank_times = dt_xcalloc((size_t)r->n_workers * DT_RANK_TIMES,
				   sizeof *r->rank_times);
	start_loader(r);
	dt_trace_start(r->rank);
	for (;;) {
		turn_epoch(r);
		if (is_done(r))
			break;
		st = run_step(r, &c, err);
		if (st == DT_ERR_NUMERIC)	/* of this state: set aside */
			dt_run_set_aside(r, err);
		if (st == DT_OK)
			st = between_steps(r, &c, &last, res, err);
		if (st != DT_OK) {
			dt_trace_finish(r->dir);
			return st;
		}
		if (last)
			break;
	}
	dt_trace_finish(r->dir);
	res->steps = r->position.step;
	res->samples = r->position.samples;
	res->session_steps = r->position.step - c.first_step;
	res->session_samples = r->position.samples - c.first_samples;
	res->wall_s = dt_now() - c.t0;
	res->samples_per_s = (double)res->session_samples /
			     (res->wall_s > 0 ? res->wall_s : 1e-9);
	res->skipped_steps = r->position.skipped;
	return DT_OK;
}
