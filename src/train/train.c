/* train.c - the data-parallel training loop (see train.h).
 *
 * Gradient averaging: every micro-batch's backward adds
 * (1/global_batch) * d(sum of its per-sample losses) into the gradient
 * arena, so after one sum all-reduce every rank holds the gradient of the
 * mean loss over the global batch, whatever the data-parallel degree and
 * the number of micro-batches.
 *
 * The data position is (epoch, samples of the epoch consumed by all
 * ranks): global batch b of an epoch is perm[off, off + global_batch), and
 * data-parallel rank r takes its contiguous share of it. An epoch ends
 * when fewer than global_batch samples remain (they are dropped). */
#include "train/train.h"

#include <cblas.h>
#include <errno.h>
#include <json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/loader.h"
#include "train/pipeline.h"
#include "train/rundir.h"
#include "train/signals.h"
#include "train/state.h"
#include "util/alloc.h"
#include "util/pool.h"

/* Collective agreement on a status; the failing rank reports its own
 * message at once, so the user sees which rank and why. */
static enum dt_status
agree_on(struct dt_run *r, struct dt_comm *c, enum dt_status local,
	 struct dt_error *err)
{
	enum dt_status st = dt_comm_agree(c, local, err);

	if (local != DT_OK && err != NULL && err->msg[0] != '\0' &&
	    dt_comm_size(r->comm) > 1) {
		fprintf(stderr, "dtrain: rank %d: %s\n", r->rank, err->msg);
		err->msg[0] = '\0';
	}
	return st;
}

/* Agreement among every rank. */
static enum dt_status
agree(struct dt_run *r, enum dt_status local, struct dt_error *err)
{
	return agree_on(r, r->comm, local, err);
}

static enum dt_status
write_job(FILE *out, void *ctx, struct dt_error *err)
{
	return dt_job_write(ctx, out, err);
}

/* Rank 0: a new run directory (refusing one with results), or the
 * existing one of a resumed run; job.yaml (re)written either way, so a
 * later resume uses the job as last resolved. */
/* Rank 0: the resolved job as RUN_DIR/job.yaml, which resume reads. */
static enum dt_status
save_job(struct dt_run *r, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 32];
	enum dt_status st;

	if (r->rank != 0)
		return DT_OK;
	st = dt_rundir_path(path, sizeof path, r->dir, "job.yaml", err);
	if (st == DT_OK)
		st = dt_rundir_write_atomic(path, write_job, (void *)r->job,
					    err);
	return st;
}

/* A resumed run at or past its end: nothing to do, and a length below
 * what was reached is an error (the parameters cannot go back). */
static enum dt_status
resume_point(struct dt_run *r, int *done, struct dt_error *err)
{
	const struct dt_job *job = r->job;
	int64_t ep = r->epoch;
	char where[512];

	*done = 0;
	if (r->resumed_from < 0)
		return DT_OK;
	if (r->epoch_off + r->plan.global_batch > r->train.n)
		ep++;	/* where the loop would start */
	if (job->train.steps > 0 && r->step > job->train.steps) {
		dt_job_where(job, "train.steps", where, sizeof where);
		return dt_errorf(err, DT_ERR_USAGE, "%sthe run has already "
				 "reached step %lld; train.steps %lld cannot "
				 "take it back", where, (long long)r->step,
				 (long long)job->train.steps);
	}
	if (job->train.steps <= 0 && ep > job->train.epochs) {
		dt_job_where(job, "train.epochs", where, sizeof where);
		return dt_errorf(err, DT_ERR_USAGE, "%sthe run has already "
				 "finished epoch %lld; train.epochs %lld cannot "
				 "take it back", where, (long long)ep,
				 (long long)job->train.epochs);
	}
	*done = job->train.steps > 0 ? r->step >= job->train.steps :
		ep >= job->train.epochs;
	return DT_OK;
}

static enum dt_status
prepare_dir(struct dt_run *r, const struct dt_run_opts *opts,
	    struct dt_error *err)
{
	enum dt_status st = DT_OK;
	int n;

	if (opts->run_dir != NULL)
		n = snprintf(r->dir, sizeof r->dir, "%s", opts->run_dir);
	else
		n = snprintf(r->dir, sizeof r->dir, "runs/%s", r->job->name);
	if (n < 0 || (size_t)n >= sizeof r->dir)
		return dt_errorf(err, DT_ERR_IO, "run directory path too long");
	if (r->job->checkpoint.dir[0] != '\0')
		n = snprintf(r->ckpt_dir, sizeof r->ckpt_dir, "%s",
			     r->job->checkpoint.dir);
	else
		n = snprintf(r->ckpt_dir, sizeof r->ckpt_dir, "%s/checkpoints",
			     r->dir);
	if (n < 0 || (size_t)n >= sizeof r->ckpt_dir)
		return dt_errorf(err, DT_ERR_IO, "checkpoint path too long");
	if (r->rank != 0)
		return DT_OK;
	if (opts->resume)
		return DT_OK;	/* job.yaml once there is something to do */
	st = dt_rundir_prepare(r->dir, err);
	if (st == DT_OK)
		st = save_job(r, err);
	return st;
}

/* Test aid, documented in dtrain(1): DTRAIN_TEST_FAIL_READ_RANK=R makes
 * rank R look for its training images under a name that does not exist, to
 * exercise the path where one rank cannot read its data. */
static const char *
fail_train_images(const struct dt_run *r, char *buf, size_t size)
{
	const char *v = getenv("DTRAIN_TEST_FAIL_READ_RANK");

	if (v != NULL && *v != '\0' && atoi(v) == r->rank) {
		snprintf(buf, size, "%s.missing-for-test",
			 r->data_job->data.train.images);
		return buf;
	}
	return NULL;
}

static enum dt_status
write_vocab(struct dt_run *r, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 32];
	enum dt_status st;

	if (r->rank != 0)
		return DT_OK;
	st = dt_rundir_path(path, sizeof path, r->dir, "vocab.bin", err);
	if (st == DT_OK)
		st = dt_vocab_save(&r->vocab, path, err);
	return st;
}

static enum dt_status
load_data(struct dt_run *r, int progress, struct dt_error *err)
{
	char buf[DT_JOB_PATH_MAX + 32];
	int64_t classes = dt_model_n_classes(r->model);
	int64_t mb = r->plan.micro_batch, in = dt_model_input_size(r->model);
	const struct dt_job *dj = r->data_job;
	enum dt_status st;

	st = dt_source_fetch_all(r->data_job, r->comm, progress, err);
	if (st != DT_OK)
		return st;
	if (dj->data.format == DT_FORMAT_TEXT) {
		st = dt_source_vocab(dj, &r->vocab, err);
		if (st == DT_OK && r->vocab.size > classes)
			st = dt_errorf(err, DT_ERR_DATA,
				       "%s: the text has %lld distinct "
				       "characters but the model's output has "
				       "%lld classes; raise the last layer's "
				       "units (and the embedding's vocab) to "
				       "%lld", dj->data.train.file.path,
				       (long long)r->vocab.size,
				       (long long)classes,
				       (long long)r->vocab.size);
		if (st == DT_OK)
			st = write_vocab(r, err);
		if (st != DT_OK)
			return st;
	}
	st = dt_source_open(&r->train, dj, 0, classes, mb, &r->vocab,
			    fail_train_images(r, buf, sizeof buf), err);
	if (st == DT_OK)
		st = dt_source_open(&r->eval, dj, 1, classes, mb, &r->vocab,
				    NULL, err);
	if (st != DT_OK)
		return st;
	r->have_eval = r->eval.n > 0;
	if (r->train.tokens) {
		/* Every embedding that reads the token ids must have a row
		 * for each id the data holds. */
		int64_t ids = dj->data.format == DT_FORMAT_TEXT ?
			      r->vocab.size : r->train.td.vocab_size;

		for (int i = 0; i < dj->model.n_layers; i++) {
			const struct dt_layer_spec *l = &dj->model.layers[i];
			int reads_input = l->n_inputs == 0 ? i == 0 :
					  strcmp(l->inputs[0], "input") == 0;
			char key[64], where[512];

			if (l->kind != DT_LAYER_EMBEDDING || !reads_input ||
			    l->vocab >= ids)
				continue;
			snprintf(key, sizeof key, "model.layers.%d.vocab", i);
			dt_job_where(dj, key, where, sizeof where);
			return dt_errorf(err, DT_ERR_DATA,
					 "%sthe data holds %lld distinct token "
					 "ids but the embedding has %lld rows; "
					 "raise vocab to at least %lld", where,
					 (long long)ids, (long long)l->vocab,
					 (long long)ids);
		}
	}
	for (int which = 0; which < 1 + r->have_eval; which++) {
		const struct dt_batch_source *s = which ? &r->eval : &r->train;

		char where[512];

		dt_job_where(r->job, "model.input_shape", where, sizeof where);
		if (s->x_size != in)
			return dt_errorf(err, DT_ERR_DATA,
					 "%s%s data: samples have %lld inputs "
					 "but the model takes %lld", where,
					 which ? "eval" : "training",
					 (long long)s->x_size, (long long)in);
		if (s->y_size != r->lps)
			return dt_errorf(err, DT_ERR_DATA,
					 "%s data: samples have %lld labels "
					 "but the model's output has %lld",
					 which ? "eval" : "training",
					 (long long)s->y_size,
					 (long long)r->lps);
	}
	return DT_OK;
}

static enum dt_status
schedule_steps(struct dt_run *r, struct dt_error *err)
{
	const struct dt_job *job = r->job;
	char where[512];

	r->steps_per_epoch = dt_steps_per_epoch(r->train.n,
						r->plan.global_batch,
						&r->dropped);
	if (r->steps_per_epoch < 1) {
		dt_job_where(job, "train.global_batch", where, sizeof where);
		return dt_errorf(err, DT_ERR_PLAN,
				 "%sglobal batch %lld is larger than the %lld "
				 "training samples", where,
				 (long long)r->plan.global_batch,
				 (long long)r->train.n);
	}
	if (job->train.steps > 0)
		r->total_steps = job->train.steps;
	else
		r->total_steps = job->train.epochs * r->steps_per_epoch;

	return dt_plan_schedule(job, r->total_steps, &r->sched, err);
}

/* Mean loss and accuracy over the whole eval set: each data-parallel rank
 * takes a contiguous share, the sums are all-reduced. */
static enum dt_status
evaluate(struct dt_run *r, double *loss, double *accuracy,
	 struct dt_error *err)
{
	int64_t n = r->eval.n, dp = r->plan.dp_size;
	int64_t rank = r->mp ? r->pos.dp : r->rank;
	int64_t lo = n * rank / dp, hi = n * (rank + 1) / dp;
	int64_t mb = r->plan.micro_batch;
	double sums[2] = { 0, 0 };
	double per = (double)n * (double)r->lps;
	enum dt_status st;

	if (r->mp) {
		st = dt_pipe_eval(r, lo, hi, sums, err);
		if (st != DT_OK)
			return st;
		hi = lo;	/* done */
	}
	for (int64_t i = lo; i < hi; i += mb) {
		int64_t count = hi - i < mb ? hi - i : mb, correct = 0;
		double ls = 0;

		for (int64_t j = 0; j < count; j++)
			r->eval_idx[j] = i + j;
		dt_source_gather(&r->eval, r->eval_idx, count, r->x, r->y);
		dt_model_eval(r->model, r->x, r->y, count, &ls, &correct);
		sums[0] += ls;
		sums[1] += (double)correct;
	}
	st = dt_comm_allreduce_sum_f64(r->wcomm, sums, 2, err);
	if (st != DT_OK)
		return st;
	*loss = sums[0] / per;
	*accuracy = sums[1] / per;
	return DT_OK;
}

static void
metrics_line(struct dt_run *r, struct json_object *o)
{
	if (r->metrics == NULL) {
		json_object_put(o);
		return;
	}
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	      r->metrics);
	fputc('\n', r->metrics);
	fflush(r->metrics);
	json_object_put(o);
}

static void
eval_line(struct dt_run *r, double loss, double accuracy)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "step", json_object_new_int64(r->step));
	json_object_object_add(o, "epoch", json_object_new_int64(r->epoch));
	json_object_object_add(o, "eval_loss", json_object_new_double(loss));
	json_object_object_add(o, "eval_accuracy",
			       json_object_new_double(accuracy));
	metrics_line(r, o);
}

/* Bytes this rank has handed to MPI so far, on every communicator it
 * uses: collectives and point-to-point. */
static uint64_t
sent_bytes(const struct dt_run *r)
{
	uint64_t b = dt_comm_bytes_sent(r->comm) +
		     dt_comm_p2p_bytes_sent(r->comm);

	if (r->mp)
		b += dt_comm_bytes_sent(r->grad_comm) +
		     dt_comm_bytes_sent(r->tp_comm) +
		     dt_comm_p2p_bytes_sent(r->pipe_comm);
	return b;
}

struct summary_ctx {
	const struct dt_run *r;
	const struct dt_train_result *res;
	const double *bytes;	/* (world, 3) per-step bytes, or NULL */
};

static enum dt_status
write_summary(FILE *out, void *ctx, struct dt_error *err)
{
	const struct summary_ctx *s = ctx;
	const struct dt_run *r = s->r;
	struct json_object *o = json_object_new_object();

#define ADD(key, val) json_object_object_add(o, key, val)
	ADD("name", json_object_new_string(r->job->name));
	ADD("steps", json_object_new_int64(s->res->steps));
	ADD("samples", json_object_new_int64(s->res->samples));
	ADD("train_loss", json_object_new_double(s->res->train_loss));
	ADD("eval_loss", r->have_eval ?
	    json_object_new_double(s->res->eval_loss) : NULL);
	ADD("eval_accuracy", r->have_eval ?
	    json_object_new_double(s->res->eval_accuracy) : NULL);
	ADD("wall_s", json_object_new_double(s->res->wall_s));
	ADD("samples_per_s", json_object_new_double(s->res->samples_per_s));
	ADD("world_size", json_object_new_int(r->plan.world_size));
	ADD("data_parallel", json_object_new_int(r->plan.dp_size));
	ADD("global_batch", json_object_new_int64(r->plan.global_batch));
	ADD("micro_batch", json_object_new_int64(r->plan.micro_batch));
	ADD("grad_accum_steps", json_object_new_int64(r->plan.grad_accum_steps));
	ADD("skipped_steps", json_object_new_int64(s->res->skipped_steps));
	ADD("resumed_from", s->res->resumed_from >= 0 ?
	    json_object_new_int64(s->res->resumed_from) : NULL);
	if (r->ps != NULL) {
		struct dt_ps_stats ps;
		struct dt_error e;
		struct json_object *h = json_object_new_array();

		if (dt_ps_stats(r->ps, &ps, &e) == DT_OK)
			for (int i = 0; i < ps.n_hist; i++)
				json_object_array_add(h,
					json_object_new_int64(ps.hist[i]));
		ADD("parameter_servers",
		    json_object_new_int(dt_ps_n_servers(r->ps)));
		ADD("ps_mode", json_object_new_string(r->ps_async ? "async" :
						      "sync"));
		ADD("max_staleness", json_object_new_int64(
			    r->ps_async ? r->job->parallel.max_staleness : 0));
		/* hist[i]: shard gradients applied i updates stale; the last
		 * bucket counts any staler than the bound (always 0). */
		ADD("staleness_histogram", h);
		ADD("server_bytes_per_step",
		    json_object_new_double(ps.server_bytes_per_step));
	}
	ADD("bytes_sent_rank0", json_object_new_int64((int64_t)sent_bytes(r)));
	if (r->mp) {
		struct json_object *g = json_object_new_object();

		json_object_object_add(g, "data_parallel",
				       json_object_new_int(r->plan.dp_size));
		json_object_object_add(g, "pipeline_parallel",
				       json_object_new_int(r->plan.pp_size));
		json_object_object_add(g, "tensor_parallel",
				       json_object_new_int(r->plan.tp_size));
		json_object_object_add(g, "schedule", json_object_new_string(
			r->plan.pipe_schedule == DT_PIPE_1F1B ? "1f1b" :
			"gpipe"));
		ADD("grid", g);
	}
	if (s->bytes != NULL) {
		/* What each rank moved per training step, counted as it
		 * went (dtrain plan computes the same three numbers). */
		struct json_object *a = json_object_new_array();

		for (int i = 0; i < r->plan.world_size; i++) {
			struct json_object *e = json_object_new_object();
			const double *b = s->bytes + 3 * i;

			json_object_object_add(e, "rank", json_object_new_int(i));
			json_object_object_add(e, "p2p_bytes",
					       json_object_new_int64((int64_t)b[0]));
			json_object_object_add(e, "grad_allreduce_bytes",
					       json_object_new_int64((int64_t)b[1]));
			json_object_object_add(e, "tp_allreduce_bytes",
					       json_object_new_int64((int64_t)b[2]));
			json_object_array_add(a, e);
		}
		ADD("bytes_per_step", a);
	}
#undef ADD
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					     JSON_C_TO_STRING_SPACED), out);
	fputc('\n', out);
	json_object_put(o);
	if (ferror(out))
		return dt_errorf(err, DT_ERR_IO, "summary.json: write failed");
	return DT_OK;
}

/* A failure in the middle of training that the other ranks cannot know
 * of (they are inside a collective): report it with the rank and end the
 * job. */
static void
die_in_step(struct dt_run *r, const struct dt_error *err)
{
	fprintf(stderr, "dtrain: rank %d: %s\n", r->rank, err->msg);
	dt_comm_abort(r->comm, dt_status_exit_code(err->status));
}

/* Test aid, documented in dtrain(1): DTRAIN_TEST_SIGNAL_AT_STEP=[R:]N makes
 * rank R (default 0) send itself SIGTERM during step N (1-based), so tests
 * can stop a run at an exact step through the real signal path. */
static void
test_signal_setup(struct dt_run *r)
{
	const char *v = getenv("DTRAIN_TEST_SIGNAL_AT_STEP");
	const char *colon;
	long rank = 0;

	r->test_signal_step = -1;
	if (v == NULL || *v == '\0')
		return;
	colon = strchr(v, ':');
	if (colon != NULL) {
		rank = strtol(v, NULL, 10);
		v = colon + 1;
	}
	if (rank == r->rank)
		r->test_signal_step = strtol(v, NULL, 10);
}

static void
test_signal_hook(const struct dt_run *r)
{
	if (r->test_signal_step == r->step + 1)
		raise(SIGTERM);
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
	       step >= r->total_steps;
}

/* Worker 0: the staleness of the gradients the servers applied since the
 * last logged step. */
static void
add_staleness(struct dt_run *r, struct json_object *o)
{
	struct dt_ps_stats ps;
	struct dt_error e;

	if (dt_ps_stats(r->ps, &ps, &e) != DT_OK)
		return;
	json_object_object_add(o, "staleness_mean",
			       json_object_new_double(ps.staleness_mean));
	json_object_object_add(o, "staleness_max",
			       json_object_new_int64(ps.staleness_max));
}

static int
is_done(const struct dt_run *r)
{
	if (r->job->train.steps > 0)
		return r->step >= r->job->train.steps;
	return r->epoch >= r->job->train.epochs;
}

/* Whether a checkpoint is due after this step, by steps or by seconds
 * (rank 0's clock decides; the flag travels in the per-step reduction). */
static int
ckpt_due_local(const struct dt_run *r, double now)
{
	const struct dt_job *job = r->job;

	if (job->checkpoint.every_seconds > 0 && r->rank == 0 &&
	    now - r->last_ckpt_time >= job->checkpoint.every_seconds)
		return 1;
	return 0;
}

static enum dt_status
train_loop(struct dt_run *r, struct dt_train_result *res,
	   struct dt_error *err)
{
	const struct dt_job *job = r->job;
	const struct dt_plan *p = &r->plan;
	/* The mean loss per sample, or per token for a language model. */
	float grad_scale = 1.0f / (float)(p->global_batch * r->lps);
	size_t n_params = dt_model_n_trained(r->model);
	float *params = dt_model_params(r->model);
	float *grads = dt_model_grads(r->model);
	int64_t log_every = job->log.every_steps;
	int64_t eval_every = job->eval.every_steps;
	int64_t ckpt_every = job->checkpoint.every_steps;
	int64_t first_step = r->step;
	double t0 = dt_now(), t_window = t0, data_wait = 0, pending_loss = 0;
	struct dt_loader *loader;
	enum dt_status st;

	r->last_ckpt_time = t0;
	if (job->data.prefetch > 0) {
		struct dt_loader_cfg lc = {
			.src = &r->train, .seed = job->seed,
			.global_batch = p->global_batch,
			.micro_batch = p->micro_batch,
			.grad_accum_steps = p->grad_accum_steps,
			.dp_rank = r->mp ? r->pos.dp : r->rank,
			.dp_size = p->dp_size,
			.epoch = r->epoch, .epoch_off = r->epoch_off,
			.depth = job->data.prefetch,
		};

		/* Without a thread the loop gathers for itself. */
		r->loader = dt_loader_new(&lc);
	}
	loader = r->loader;
	for (;;) {
		double local_loss = 0, *stats = r->stats, now, lr;
		int last, stop, ckpt, exchange;

		if (r->epoch_off + p->global_batch > r->train.n) {
			r->epoch++;
			r->epoch_off = 0;
		}
		if (is_done(r))
			break;
		if (loader == NULL && r->perm_epoch != r->epoch) {
			dt_shuffle(job->seed, r->epoch, r->train.n, r->perm);
			r->perm_epoch = r->epoch;
		}
		lr = dt_lr_at(&r->sched, r->step);
		dt_model_zero_grads(r->model);
		dt_accum_start(r);
		if (r->mp && dt_pipe_train_step(r, grad_scale, &local_loss,
						&data_wait, err) != DT_OK)
			die_in_step(r, err);
		for (int64_t k = 0; k < p->grad_accum_steps && !r->mp; k++) {
			/* Global batch 0 of what remains of the epoch. */
			int64_t off = r->epoch_off +
				      dt_shard_offset(0, p->global_batch,
						      r->rank, p->dp_size,
						      p->micro_batch, k);
			double ls = 0;

			if (loader != NULL) {
				const struct dt_batch *b = dt_loader_next(loader);

				dt_model_set_position(r->model,
						      (uint64_t)r->step,
						      b->first_sample);
				dt_accum_before(r);
				dt_model_train_step(r->model, b->x, b->y,
						    p->micro_batch, grad_scale,
						    &ls, NULL);
				dt_loader_release(loader);
			} else {
				double tg = dt_now();

				dt_source_gather(&r->train, r->perm + off,
						 p->micro_batch, r->x, r->y);
				data_wait += dt_now() - tg;
				dt_model_set_position(r->model,
						      (uint64_t)r->step,
						      r->epoch * r->train.n +
						      off);
				dt_accum_before(r);
				dt_model_train_step(r->model, r->x, r->y,
						    p->micro_batch, grad_scale,
						    &ls, NULL);
			}
			dt_accum_after(r);
			local_loss += ls;
		}
		test_signal_hook(r);
		if (r->ps != NULL) {
			/* No rank sees the whole gradient: each worker checks
			 * its own before it reaches the servers, and a bad one
			 * ends the job (the others are inside the protocol). */
			double n2 = dt_grad_norm2(r, NULL);

			if (!isfinite(local_loss) || !isfinite(n2)) {
				dt_errorf(err, DT_ERR_NUMERIC, "step %lld: "
					  "non-finite %s on rank %d; stopping "
					  "without a checkpoint",
					  (long long)(r->step + 1),
					  isfinite(local_loss) ? "gradient" :
					  "loss", r->rank);
				die_in_step(r, err);
			}
			if (dt_ps_step(r->ps, grads, params, r->step, err))
				die_in_step(r, err);
		} else if (r->mp) {
			if (dt_pipe_sync_grads(r, stats + 3, err) != DT_OK)
				die_in_step(r, err);
		} else if (r->acc != NULL) {
			if (dt_accum_sum(r, dt_comm_size(r->comm) > 1 ?
					 r->comm : NULL, err) != DT_OK)
				die_in_step(r, err);
		} else {
			uint64_t b0 = dt_comm_bytes_sent(r->comm);

			if (dt_comm_allreduce_sum_f32(r->comm, grads, n_params,
						      err))
				die_in_step(r, err);
			r->bytes_grad += dt_comm_bytes_sent(r->comm) - b0;
		}
		r->bytes_steps++;
		/* One small reduction carries the loss, a stop asked for by a
		 * signal on any rank, and rank 0's checkpoint clock: every
		 * step, or in asynchronous parameter-server mode only where
		 * the workers meet anyway (logged steps, evaluations,
		 * checkpoints), so a slow worker is not waited for between. */
		now = dt_now();
		pending_loss += local_loss;
		exchange = !r->ps_async || meets(r, r->step + 1);
		stats[0] = pending_loss;
		stats[1] = dt_signals_pending() != 0;
		stats[2] = ckpt_due_local(r, now);
		if (exchange) {
			if (dt_comm_allreduce_sum_f64(r->wcomm, stats,
						      (size_t)r->n_stats, err))
				die_in_step(r, err);
			pending_loss = 0;
		} else {
			stats[1] = stats[2] = 0;
		}

		/* The squared gradient norm, tensor by tensor in model order
		 * (dt_grad_norm2): with model parallelism each stage's
		 * tensors came in the reduction above. */
		double norm2 = r->ps != NULL ? 0 :
			       dt_grad_norm2(r, r->mp ? stats + 3 : NULL);
		if (r->ps != NULL) {
			if (exchange)
				r->window_loss += stats[0];
			r->window_samples += p->global_batch * r->lps;
		} else if (!isfinite(stats[0]) || !isfinite(norm2)) {
			if (job->train.on_nonfinite == DT_NONFINITE_ABORT) {
				int bad = isfinite(local_loss) ? 0 : 1, who;

				who = bad ? r->rank : dt_comm_size(r->comm);
				who = -who;
				dt_comm_allreduce_max_int(r->wcomm, &who, 1,
							  NULL);
				who = -who;
				if (who < dt_comm_size(r->comm))
					return dt_errorf(err, DT_ERR_NUMERIC,
							 "step %lld: non-finite "
							 "loss on rank %d; "
							 "stopping without a "
							 "checkpoint (set "
							 "train.on_nonfinite: "
							 "skip_step to drop "
							 "such steps)",
							 (long long)(r->step + 1),
							 who);
				return dt_errorf(err, DT_ERR_NUMERIC,
						 "step %lld: non-finite "
						 "gradient (loss %g); stopping "
						 "without a checkpoint",
						 (long long)(r->step + 1),
						 stats[0]);
			}
			r->skipped++;
		} else {
			if (job->train.clip_norm > 0 &&
			    sqrt(norm2) > job->train.clip_norm) {
				float c = (float)(job->train.clip_norm /
						  sqrt(norm2));

				for (size_t i = 0; i < n_params; i++)
					grads[i] *= c;
			}
			dt_optim_step(r->optim, params, grads, (float)lr);
			r->window_loss += stats[0];
			r->window_samples += p->global_batch * r->lps;
		}
		r->step++;
		r->epoch_off += p->global_batch;
		r->window_steps++;

		last = is_done(r) || r->step == r->total_steps;
		if (loader != NULL)
			data_wait += dt_loader_take_wait(loader);
		if ((log_every > 0 && r->step % log_every == 0) || last) {
			double mean = r->window_samples > 0 ?
				      r->window_loss /
				      (double)r->window_samples : NAN;
			double rate = (double)(r->window_steps *
					       p->global_batch) /
				      (now - t_window > 0 ? now - t_window :
				       1e-9);

			res->train_loss = mean;
			if (r->rank == 0) {
				struct json_object *o = json_object_new_object();

				json_object_object_add(o, "step",
						       json_object_new_int64(r->step));
				json_object_object_add(o, "epoch",
						       json_object_new_int64(r->epoch));
				json_object_object_add(o, "loss",
						       json_object_new_double(mean));
				json_object_object_add(o, "lr",
						       json_object_new_double(lr));
				json_object_object_add(o, "samples_per_s",
						       json_object_new_double(rate));
				json_object_object_add(o, "data_wait_s",
						       json_object_new_double(data_wait));
				if (r->ps != NULL)
					add_staleness(r, o);
				if (r->skipped > 0)
					json_object_object_add(o, "skipped_steps",
							       json_object_new_int64(r->skipped));
				metrics_line(r, o);
				dt_progress_step(&r->progress, r->step,
						 r->epoch, mean, lr, rate,
						 now - t0, last);
			}
			r->window_loss = 0;
			r->window_steps = 0;
			r->window_samples = 0;
			data_wait = 0;
			t_window = dt_now();
		}
		if (r->have_eval && eval_every > 0 &&
		    r->step % eval_every == 0 && !last) {
			double el, ea;

			if (evaluate(r, &el, &ea, err))
				die_in_step(r, err);
			if (r->rank == 0) {
				eval_line(r, el, ea);
				dt_progress_eval(&r->progress, r->step, el, ea);
			}
			t_window = dt_now();
		}
		stop = stats[1] > 0;
		ckpt = (ckpt_every > 0 && r->step % ckpt_every == 0) ||
		       stats[2] > 0 || stop;
		if (ckpt && !last) {
			st = dt_run_checkpoint(r, err);
			if (st != DT_OK)
				return st;
			r->last_ckpt_time = dt_now();
		}
		if (stop) {
			char nbuf[32] = "";

			if (dt_comm_size(r->comm) > 1)
				snprintf(nbuf, sizeof nbuf, "-n %d ",
					 dt_comm_size(r->comm));
			dt_progress_end(&r->progress);
			return dt_errorf(err, DT_ERR_INTERRUPTED,
					 "interrupted at step %lld; checkpoint "
					 "written; continue with: dtrain "
					 "resume %s%s", (long long)r->step,
					 nbuf, r->dir);
		}
		if (last)
			break;
	}
	res->steps = r->step;
	res->samples = r->step * p->global_batch;
	res->wall_s = dt_now() - t0;
	res->samples_per_s = (double)((r->step - first_step) *
				      p->global_batch) /
			     (res->wall_s > 0 ? res->wall_s : 1e-9);
	res->skipped_steps = r->skipped;
	return DT_OK;
}

static void
run_fini(struct dt_run *r)
{
	dt_loader_free(r->loader);
	dt_ps_free(r->ps);
	if (r->metrics != NULL)
		fclose(r->metrics);
	if (r->mp)
		dt_pipe_fini(r);
	dt_model_free(r->model);
	dt_optim_free(r->optim);
	dt_pool_free(r->pool);
	dt_source_fini(&r->train);
	dt_source_fini(&r->eval);
	dt_vocab_fini(&r->vocab);
	free(r->data_job);
	free(r->perm);
	free(r->eval_idx);
	free(r->x);
	free(r->y);
	free(r->acc);
	free(r->stats);
}

static int
node_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

/* Parameters of the whole model (a stage model holds its stage's). */
static size_t
whole_params(const struct dt_run *r)
{
	size_t n = 0;

	if (!r->mp)
		return dt_model_n_params(r->model);
	for (int s = 0; s < r->plan.pp_size; s++)
		n += (size_t)r->sinfos[s].n_params;
	return n;
}

static void
announce(const struct dt_run *r, int threads)
{
	fprintf(stderr, "dtrain: %s: %d rank%s x %d BLAS thread%s, global "
		"batch %lld = micro-batch %lld x %lld accumulation x %d "
		"data-parallel, %lld steps (%lld per epoch, %lld samples "
		"dropped per epoch), %zu parameters\n", r->job->name,
		r->plan.world_size, r->plan.world_size == 1 ? "" : "s",
		threads, threads == 1 ? "" : "s",
		(long long)r->plan.global_batch, (long long)r->plan.micro_batch,
		(long long)r->plan.grad_accum_steps, r->plan.dp_size,
		(long long)r->total_steps, (long long)r->steps_per_epoch,
		(long long)r->dropped, whole_params(r));
	if (r->mp)
		fprintf(stderr, "dtrain: grid %d data-parallel x %d pipeline "
			"stages x %d tensor-parallel, %s schedule, %lld "
			"micro-batches per step (bubble %.1f%%)\n",
			r->plan.dp_size, r->plan.pp_size, r->plan.tp_size,
			r->plan.pipe_schedule == DT_PIPE_1F1B ? "1F1B" :
			"GPipe", (long long)r->plan.grad_accum_steps,
			100.0 * dt_plan_bubble(&r->plan));
}

/* The end of a run: the final evaluation, its metrics line, the final
 * checkpoint and summary.json. */
static enum dt_status
finish(struct dt_run *r, struct dt_train_result *res, struct dt_error *err)
{
	enum dt_status st = DT_OK;
	double *bytes = NULL;

	if (r->ps == NULL) {
		/* Each rank's bytes per step, to rank 0 (a sum of slots). */
		int64_t n = r->bytes_steps > 0 ? r->bytes_steps : 1;

		bytes = dt_xcalloc((size_t)(3 * r->plan.world_size),
				   sizeof *bytes);
		bytes[3 * r->rank] = (double)(r->bytes_p2p / (uint64_t)n);
		bytes[3 * r->rank + 1] = (double)(r->bytes_grad / (uint64_t)n);
		bytes[3 * r->rank + 2] = (double)(r->bytes_tp / (uint64_t)n);
		st = dt_comm_allreduce_sum_f64(r->comm, bytes,
					       (size_t)(3 * r->plan.world_size),
					       err);
		if (st != DT_OK) {
			free(bytes);
			return st;
		}
	}
	if (r->have_eval) {
		st = evaluate(r, &res->eval_loss, &res->eval_accuracy, err);
		if (st != DT_OK) {
			free(bytes);
			return st;
		}
		if (r->rank == 0)
			eval_line(r, res->eval_loss, res->eval_accuracy);
	}
	if (r->ps == NULL && r->job->checkpoint.at_end &&
	    r->last_ckpt_step != r->step) {
		st = dt_run_checkpoint(r, err);
		if (st != DT_OK) {
			free(bytes);
			return st;
		}
	}
	if (r->rank == 0) {
		char path[DT_JOB_PATH_MAX + 32];
		struct summary_ctx sc = { r, res, bytes };

		st = dt_rundir_path(path, sizeof path, r->dir, "summary.json",
				    err);
		if (st == DT_OK)
			st = dt_rundir_write_atomic(path, write_summary, &sc,
						    err);
	}
	free(bytes);
	return agree_on(r, r->wcomm, st, err);
}

static double
ps_lr(int64_t step, void *ctx)
{
	return dt_lr_at(&((struct dt_run *)ctx)->sched, step);
}

/* Parameter-server mode: set up the roles (collective over every rank). */
static enum dt_status
ps_setup(struct dt_run *r, struct dt_error *err)
{
	struct dt_ps_cfg cfg = {
		.n_servers = (int)r->job->parallel.servers,
		.async = r->job->parallel.mode == DT_PS_ASYNC,
		.max_staleness = r->job->parallel.max_staleness,
		.n_params = dt_model_n_trained(r->model),
		.job = r->job,
	};
	enum dt_status st = dt_ps_new(r->comm, &cfg, &r->ps, err);

	if (st != DT_OK)
		return st;
	r->ps_async = cfg.async;
	r->wcomm = dt_ps_is_server(r->ps) ? NULL : dt_ps_workers(r->ps);
	return DT_OK;
}

/* A server's whole run: restore its shard on resume, then serve until
 * every worker is done. A failure here leaves workers waiting, so it ends
 * the job. */
static enum dt_status
serve(struct dt_run *r, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	if (r->resumed_from >= 0)
		st = dt_ps_scatter_state(r->ps, NULL, NULL, 0, err);
	if (st == DT_OK)
		st = dt_ps_serve(r->ps, r->resumed_from >= 0 ? NULL :
				 dt_model_params(r->model), ps_lr, r, err);
	if (st != DT_OK)
		die_in_step(r, err);
	return DT_OK;
}

/* A worker's side of the resume in parameter-server mode: worker 0 sends
 * the restored state to the servers. */
static enum dt_status
ps_resume(struct dt_run *r, struct dt_error *err)
{
	int n_bufs = 0;
	float **bufs = dt_optim_state(r->optim, &n_bufs);

	if (r->resumed_from < 0)
		return DT_OK;
	return dt_ps_scatter_state(r->ps, dt_model_params(r->model),
				   r->rank == 0 ? bufs : NULL,
				   dt_optim_steps(r->optim), err);
}

enum dt_status
dt_train_run(const struct dt_job *job, const struct dt_run_opts *opts,
	     struct dt_comm *comm, struct dt_train_result *res,
	     struct dt_error *err)
{
	struct dt_run r;
	enum dt_status st;
	int threads;

	memset(&r, 0, sizeof r);
	memset(res, 0, sizeof *res);
	res->eval_loss = NAN;
	res->eval_accuracy = NAN;
	res->train_loss = NAN;
	res->resumed_from = -1;
	r.job = job;
	r.comm = comm;
	r.rank = dt_comm_rank(comm);
	r.perm_epoch = -1;
	r.last_ckpt_step = -1;
	r.resumed_from = -1;

	/* Deterministic checks first: every rank reaches the same verdict,
	 * so no agreement is needed and rank 0 alone reports it. */
	st = dt_plan_batch(job, dt_comm_size(comm), &r.plan, err);
	if (st != DT_OK)
		return st;
	threads = dt_plan_blas_threads(node_cores(), dt_comm_local_size(comm),
				       job->parallel.blas_threads,
				       getenv("OPENBLAS_NUM_THREADS"));
	openblas_set_num_threads(threads);
	/* As many threads of our own as of OpenBLAS's: they take turns
	 * (our loops run between the products), and the pool's split never
	 * changes the bits (util/pool.h), so one knob serves both. */
	r.pool = dt_pool_new(threads);

	if (r.plan.pp_size > 1 || r.plan.tp_size > 1) {
		/* Every rank reaches the same verdict on the layout. */
		r.lps = 1;
		st = dt_pipe_setup(&r, err);
	} else {
		st = dt_model_new(job, r.plan.micro_batch, &r.model, err);
	}
	if (st != DT_OK)
		goto out;
	if (dt_plan_exact_accum(&r.plan)) {
		r.acc = dt_xcalloc(dt_model_n_trained(r.model) + 1,
				   sizeof *r.acc);
	}
	dt_model_set_pool(r.model, r.pool);
	r.optim = dt_optim_new(job, dt_model_n_trained(r.model));
	dt_optim_set_pool(r.optim, r.pool);
	/* The per-step reduction: loss, stop, checkpoint clock, and with
	 * model parallelism each tensor's squared gradient norm. */
	r.n_stats = 3 + (r.mp ? r.n_tensors_all : 0);
	r.stats = dt_xcalloc((size_t)r.n_stats + 1, sizeof *r.stats);
	r.lps = dt_model_labels_per_sample(r.model);
	if (r.lps < 1) {
		st = dt_errorf(err, DT_ERR_JOB, "%s: model.loss: mse needs "
			       "float targets, which none of the data formats "
			       "provides yet; use softmax_cross_entropy",
			       job->path);
		goto out;
	}
	r.data_job = dt_xmalloc(1, sizeof *r.data_job);
	memcpy(r.data_job, job, sizeof *job);
	r.wcomm = comm;
	if (job->parallel.sync == DT_SYNC_PARAMETER_SERVER) {
		st = ps_setup(&r, err);
		if (st != DT_OK)
			goto out;
	}

	st = agree(&r, prepare_dir(&r, opts, err), err);
	if (st != DT_OK)
		goto out;
	st = agree(&r, load_data(&r, opts->progress && r.rank == 0 &&
				 isatty(STDERR_FILENO), err), err);
	if (st != DT_OK)
		goto out;
	st = schedule_steps(&r, err);
	if (st != DT_OK)
		goto out;
	if (opts->resume) {
		st = dt_run_restore(&r, err);
		if (st != DT_OK)
			goto out;
	}
	res->resumed_from = r.resumed_from;
	if (opts->resume) {
		int done = 0;

		/* Every rank holds the same position: no agreement needed. */
		st = resume_point(&r, &done, err);
		if (st == DT_OK && done) {
			res->already_done = 1;
			res->steps = r.step;
		}
		if (st != DT_OK || done)
			goto out;	/* every rank, servers too, knows */
		st = agree(&r, save_job(&r, err), err);
		if (st != DT_OK)
			goto out;
	}
	st = agree(&r, dt_run_reopen_metrics(&r, r.resumed_from, err), err);
	if (st != DT_OK)
		goto out;
	if (r.ps != NULL && dt_ps_is_server(r.ps)) {
		st = serve(&r, err);
		goto meet;
	}
	if (r.ps != NULL && ps_resume(&r, err) != DT_OK)
		die_in_step(&r, err);

	r.perm = dt_xmalloc((size_t)r.train.n, sizeof *r.perm);
	r.eval_idx = dt_xmalloc((size_t)r.plan.micro_batch, sizeof *r.eval_idx);
	r.x = dt_xalloc_floats((size_t)(r.plan.micro_batch *
					dt_model_input_size(r.model)));
	r.y = dt_xmalloc((size_t)(r.plan.micro_batch * r.lps), sizeof *r.y);
	dt_progress_init(&r.progress,
			 r.rank == 0 && opts->progress ? stderr : NULL,
			 isatty(STDERR_FILENO), r.total_steps);
	if (r.rank == 0 && opts->progress)
		announce(&r, threads);

	test_signal_setup(&r);
	dt_signals_install();
	st = train_loop(&r, res, err);
	dt_progress_end(&r.progress);
	if (r.ps != NULL) {
		/* The servers hold the final state: checkpoint it while they
		 * serve, then release them and take the final parameters. */
		struct dt_error e2;

		if (st == DT_OK && job->checkpoint.at_end &&
		    r.last_ckpt_step != r.step)
			st = dt_run_checkpoint(&r, err);
		if (dt_ps_done(r.ps, dt_model_params(r.model), &e2) != DT_OK)
			die_in_step(&r, &e2);
	}
	if (st == DT_OK)
		st = finish(&r, res, err);
	dt_signals_restore();
meet:
	if (r.ps != NULL) {
		/* Workers and servers end together, on the same status. */
		enum dt_status all = dt_comm_agree(comm, st, NULL);

		if (all != DT_OK && st == DT_OK)
			st = dt_errorf(err, all, "a worker failed");
	}
out:
	run_fini(&r);
	return st;
}
