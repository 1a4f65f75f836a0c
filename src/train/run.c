/* SPDX-License-Identifier: MIT */
/* run.c - a run's set-up and teardown (train.h): the plan, the layout
 * and its model, the gradient sync, the run directory, the data, the
 * resume, the loop (loop.c), and at the end the final evaluation,
 * checkpoint and summary; the parameter servers' side of it all.
 *
 * Deterministic checks come first: every rank reaches the same verdict,
 * so no agreement is needed and rank 0 alone reports it. What one rank
 * alone can fail (its files, its data) is agreed on collectively. */
#include "train/train.h"

#include <cblas.h>
#include <json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/sync_plan.h"
#include "train/agree.h"
#include "train/run_data.h"
#include "train/eval.h"
#include "train/init_from.h"
#include "train/loop.h"
#include "train/memcheck.h"
#include "train/metrics.h"
#include "train/rundir.h"
#include "train/signals.h"
#include "train/state.h"
#include "graph/kern.h"
#include "graph/kern_paths.h"
#include "util/alloc.h"
#include "util/cpus.h"
#include "util/sysmem.h"

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

/* A resumed run at or past its end (*done 1) or stopped early with its
 * eval.patience still used up (*done 2): nothing to do, and a length
 * below what was reached is an error (the parameters cannot go back). */
static enum dt_status
resume_point(struct dt_run *r, int *done, struct dt_error *err)
{
	const struct dt_job *job = r->job;
	const struct dt_position *at = &r->position;
	int64_t ep = at->epoch;
	char where[512];

	*done = 0;
	if (r->resumed_from < 0)
		return DT_OK;
	if (at->epoch_off + r->plan.global_batch > r->train.n)
		ep++;	/* where the loop would start */
	if (job->train.steps > 0 && at->step > job->train.steps) {
		dt_job_where(job, "train.steps", where, sizeof where);
		return dt_errorf(err, DT_ERR_USAGE, "%sthe run has already "
				 "reached step %lld; train.steps %lld cannot "
				 "take it back", where, (long long)at->step,
				 (long long)job->train.steps);
	}
	if (job->train.steps <= 0 && ep > job->train.epochs) {
		dt_job_where(job, "train.epochs", where, sizeof where);
		return dt_errorf(err, DT_ERR_USAGE, "%sthe run has already "
				 "finished epoch %lld; train.epochs %lld cannot "
				 "take it back", where, (long long)ep,
				 (long long)job->train.epochs);
	}
	*done = job->train.steps > 0 ? at->step >= job->train.steps :
		ep >= job->train.epochs;
	if (!*done && dt_best_should_stop(r)) {
		/* Stopped early, and eval.patience (maybe another now) is
		 * still used up. */
		*done = 2;
		if (r->rank == 0)
			fprintf(stderr, "dtrain: the run stopped early at "
				"step %lld (eval.patience %lld); raise "
				"eval.patience to go on\n",
				(long long)at->step,
				(long long)job->eval.patience);
	}
	return DT_OK;
}

/* An epochs-based run resumed at another global batch: its length is
 * what the loop will do, the steps done plus those left at this batch
 * (the rest of this epoch's samples, then whole epochs; each epoch's
 * last partial batch is dropped, as always), so that the run ends at its
 * epochs whatever the batch, and the schedule spans that length. At the
 * batch it was saved with this is epochs x steps per epoch, unchanged. */
static enum dt_status
resumed_length(struct dt_run *r, struct dt_error *err)
{
	const struct dt_position *at = &r->position;
	int64_t gb = r->plan.global_batch, n = r->train.n;
	int64_t ep = at->epoch, off = at->epoch_off, total;
	enum dt_status st;

	if (r->resumed_from < 0 || r->job->train.steps > 0)
		return DT_OK;
	if (off + gb > n) {
		ep++;
		off = 0;
	}
	if (ep >= r->job->train.epochs)
		return DT_OK;
	total = at->step + (n - off) / gb +
		(r->job->train.epochs - ep - 1) * r->plan.steps_per_epoch;
	if (total == r->plan.total_steps)
		return DT_OK;
	r->plan.total_steps = total;
	st = dt_plan_schedule(r->job, total, &r->plan.lr_schedule, err);
	if (st != DT_OK)
		return st;
	json_object_put(r->plan.desc);
	r->plan.desc = dt_plan_describe(r->job, &r->plan);
	return DT_OK;
}

/* Rank 0, on resume: a cosine schedule whose length changed (--set
 * train.steps or train.epochs, another global batch) is said to be
 * reshaped, with the rate of the next step before and after, read
 * against the length of the run's previous plan.json (the schedule that
 * trained up to the checkpoint). The new length is kept: a run extended
 * on purpose wants its decay spread over the new length. */
static void
note_schedule(const struct dt_run *r)
{
	char path[DT_JOB_PATH_MAX + 32];
	struct json_object *plan, *batch, *total;
	struct dt_lr_schedule was = r->plan.lr_schedule;
	int64_t step = r->position.step;

	if (r->rank != 0 || r->resumed_from < 0 ||
	    was.kind != DT_SCHED_COSINE ||
	    snprintf(path, sizeof path, "%s/plan.json", r->dir) >=
	    (int)sizeof path)
		return;
	plan = json_object_from_file(path);
	if (plan != NULL && json_object_object_get_ex(plan, "batch", &batch) &&
	    json_object_object_get_ex(batch, "total_steps", &total))
		was.total_steps = json_object_get_int64(total);
	json_object_put(plan);
	if (was.total_steps == r->plan.total_steps ||
	    was.total_steps <= was.warmup_steps)
		return;
	fprintf(stderr, "dtrain: the cosine schedule now spans %lld steps "
		"(it spanned %lld): the rate of step %lld is %g (it was %g "
		"on the old span)\n", (long long)r->plan.total_steps,
		(long long)was.total_steps, (long long)(step + 1),
		dt_lr_at(&r->plan.lr_schedule, step), dt_lr_at(&was, step));
}

/* Rank 0: a new run directory (refusing one with results), or the
 * existing one of a resumed run (job.yaml once there is something to
 * do); every rank: the paths. */
static enum dt_status
prepare_dir(struct dt_run *r, const struct dt_run_opts *opts,
	    struct dt_error *err)
{
	enum dt_status st = DT_OK;
	struct stat sb;
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
	/* One run per directory, from here to the end of the run: taken
	 * before anything in it is looked at when it exists, so that a
	 * second run is told who holds it, and right after it is made. */
	if (stat(r->dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
		return dt_errorf(err, DT_ERR_USAGE, "%s: exists and is not a "
				 "directory; a run directory is one (made when "
				 "missing): give another --run-dir", r->dir);
	if (access(r->dir, F_OK) == 0)
		st = dt_rundir_lock(r->dir, &r->dir_lock, err);
	else
		r->dir_made = !opts->resume;
	if (st == DT_OK && !opts->resume)
		st = dt_rundir_prepare(r->dir, err);
	if (st == DT_OK && r->dir_lock < 0)
		st = dt_rundir_lock(r->dir, &r->dir_lock, err);
	if (st == DT_OK)	/* the run id, the checkpoint directory */
		st = dt_run_claim(r, opts->resume, opts->start_over, err);
	if (st == DT_OK && !opts->resume)
		st = save_job(r, err);	/* resume: once there is work */
	return st;
}

void
dt_run_die(struct dt_run *r, const struct dt_error *err)
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

/* Parameters of the whole model (a stage model holds its stage's), as
 * `dtrain plan` counts them: a tied copy (`tie:`) is the embedding's
 * table again, not a parameter of its own. */
static size_t
whole_params(const struct dt_run *r)
{
	return dt_model_n_params(r->plan.shapes) -
	       (size_t)dt_model_n_tied(r->plan.shapes);
}

/* How the gradient sums overlap backward: buckets, the accumulation
 * schedule, what drives them. */
static void
announce_overlap(const struct dt_run *r)
{
	int64_t us = dt_grad_sync_progress_us(r->sync);
	int n = dt_grad_sync_n_buckets(r->sync);

	fprintf(stderr, "dtrain: gradient sums during backward: %d bucket%s, "
		"accumulation %s, ", n, n == 1 ? "" : "s",
		r->plan.accum_schedule == DT_ACCUM_BREADTH_FIRST ?
		"breadth_first" : "depth_first");
	if (us > 0)
		fprintf(stderr, "a progress thread every %lld us\n",
			(long long)us);
	else
		fprintf(stderr, "progress between layers\n");
}

/* Open MPI's TCP eager limit and why (parallel.tcp_eager_kb). */
static void
announce_tcp_eager(const struct dt_run *r)
{
	int64_t big = 0, kb = r->job->parallel.tcp_eager_kb;

	if (r->plan.world_size < 2)
		return;
	fprintf(stderr, "dtrain: TCP eager limit: ");
	if (r->tcp_eager < 0) {
		fprintf(stderr, "the environment's (OMPI_MCA_btl_tcp_*)\n");
		return;
	}
	if (r->tcp_eager > 0)
		fprintf(stderr, "%lld KiB", (long long)(r->tcp_eager / 1024));
	else
		fprintf(stderr, "Open MPI's own");
	if (kb != DT_DEGREE_AUTO) {
		fprintf(stderr, " (parallel.tcp_eager_kb %lld)\n",
			(long long)kb);
		return;
	}
	dt_plan_tcp_eager(r->job, &r->plan, &big);
	if (big > 0)
		fprintf(stderr, " (auto: the largest gradient bucket, %.1f "
			"KiB, %s)\n", (double)big / 1024.0,
			r->tcp_eager > 0 ? "fits" : big <= 65536 ?
			"goes eagerly already" : "is over the most auto sets");
	else
		fprintf(stderr, " (auto: no float sums of the whole model)\n");
}

/* What each evaluation scores, and when (eval.max_batches bounds it). */
static void
announce_eval(const struct dt_run *r)
{
	int64_t n = dt_eval_samples(r), every = r->job->eval.every_steps;
	char when[64] = "";

	if (!r->have_eval)
		return;
	if (every > 0)
		snprintf(when, sizeof when, " every %lld steps and",
			 (long long)every);
	if (n < r->eval.n)
		fprintf(stderr, "dtrain: evaluation: %lld of %lld samples "
			"(eval.max_batches %lld x global batch %lld)%s at the "
			"end\n", (long long)n, (long long)r->eval.n,
			(long long)r->job->eval.max_batches,
			(long long)r->plan.global_batch, when);
	else
		fprintf(stderr, "dtrain: evaluation: all %lld samples%s at "
			"the end\n", (long long)n, when);
}

/* What the features go through before the model: the scale and where
 * it comes from, the normalisation and its statistics. */
static void
announce_inputs(const struct dt_run *r)
{
	const struct dt_job *job = r->job;
	const char *why = job->data.scale > 0 ? "data.scale" :
			  r->train.ds.x_u8 != NULL ?
			  "the default for features stored as bytes" :
			  "the default for features stored as numbers";

	if (r->train.tokens)
		return;
	fprintf(stderr, "dtrain: inputs: scale %.9g (%s), normalize %s%s\n",
		r->norm.scale, why, dt_norm_kind_name(r->norm.kind),
		r->norm.kind == DT_NORM_NONE ? "" :
		" (statistics of the training split)");
}

static void
announce(const struct dt_run *r)
{
	const struct dt_plan *p = &r->plan;
	int hosts, per_host, hier;

	fprintf(stderr, "dtrain: %s: %d rank%s x %d BLAS thread%s, global "
		"batch %lld = micro-batch %lld x %lld accumulation x %d "
		"data-parallel, %lld steps (%lld per epoch, %lld samples "
		"dropped per epoch), %zu parameters\n", r->job->name,
		p->world_size, p->world_size == 1 ? "" : "s",
		p->blas_threads, p->blas_threads == 1 ? "" : "s",
		(long long)p->global_batch, (long long)p->micro_batch,
		(long long)p->grad_accum_steps, p->dp_size,
		(long long)p->total_steps, (long long)p->steps_per_epoch,
		(long long)p->samples_dropped, whole_params(r));
	announce_inputs(r);
	dt_kern_paths_say(stderr, "dtrain: ", openblas_get_corename());
	hier = dt_grad_sync_hier(r->sync, &hosts, &per_host);
	if (hier || hosts > 1)
		fprintf(stderr, "dtrain: gradient sum over %d host%s, at most "
			"%d rank%s on one: %s\n", hosts, hosts == 1 ? "" : "s",
			per_host, per_host == 1 ? "" : "s",
			hier ? "hierarchical (each host's ranks first)" : "flat");
	if (dt_grad_sync_overlap(r->sync))
		announce_overlap(r);
	announce_tcp_eager(r);
	announce_eval(r);
	if (r->layout.split)
		fprintf(stderr, "dtrain: grid %d data-parallel x %d pipeline "
			"stages x %d tensor-parallel, %s schedule, %lld "
			"micro-batches per step (bubble %.1f%%)\n",
			p->dp_size, p->pp_size, p->tp_size,
			p->pipe_schedule == DT_PIPE_1F1B ? "1F1B" : "GPipe",
			(long long)p->grad_accum_steps,
			100.0 * dt_plan_bubble(p));
}

/* 1 when every rank trains: the training ranks' communicator is the
 * world (not with parameter servers, whose ranks serve instead). */
static int
all_train(const struct dt_run *r)
{
	return dt_grad_sync_workers(r->sync) == r->comm;
}

/* Each rank's bytes per training step, to every rank (a sum of slots):
 * world_size x DT_METRICS_BYTE_COUNTS (point-to-point, gradient,
 * tensor-parallel, the norm's sends, zero's blocks). NULL when some
 * ranks do not train (they do not take part). */
static double *
bytes_per_step(struct dt_run *r, enum dt_status *st, struct dt_error *err)
{
	uint64_t n = (uint64_t)(r->steps_counted > 0 ? r->steps_counted : 1);
	int world = r->plan.world_size, k = DT_METRICS_BYTE_COUNTS;
	double *bytes;				/* (world_size, k) */
	double *mine;				/* (k) */

	*st = DT_OK;
	if (!all_train(r))
		return NULL;
	bytes = dt_xcalloc((size_t)(k * world), sizeof *bytes);
	mine = bytes + k * r->rank;
	mine[0] = (double)(r->layout.bytes_p2p / n);
	mine[1] = (double)(dt_grad_sync_bytes(r->sync) / n);
	mine[2] = (double)(r->layout.bytes_tp / n);
	mine[3] = (double)(dt_grad_sync_norm_bytes(r->sync) / n);
	mine[4] = (double)(dt_grad_sync_block_bytes(r->sync) / n);
	*st = dt_comm_allreduce_sum_f64(r->comm, bytes, (size_t)(k * world),
					err);
	return bytes;
}

/* Test aid, documented in dtrain(1): DTRAIN_TEST_BALLAST=R:MIB makes
 * rank R touch MIB MiB more at the end of its run (and free them), as a
 * term the plan forgot would, so tests see the run say so. */
static void
test_ballast(const struct dt_run *r)
{
	const char *v = getenv("DTRAIN_TEST_BALLAST");
	const char *colon = v != NULL ? strchr(v, ':') : NULL;
	long mib = colon != NULL ? strtol(colon + 1, NULL, 10) : 0;
	volatile char *b;	/* (mib << 20) */

	if (colon == NULL || strtol(v, NULL, 10) != r->rank || mib <= 0 ||
	    mib > 1 << 20)
		return;
	b = dt_xmalloc((size_t)mib << 20, 1);
	for (size_t i = 0; i < (size_t)mib << 20; i += 4096)
		b[i] = 1;
	free((void *)b);
}

/* Each worker's peak resident memory so far (util/sysmem.h: VmHWM), into
 * r->peak_resident on every worker: a sum of slots that are zero but for
 * their owner's (collective over the workers). */
static enum dt_status
gather_peaks(struct dt_run *r, struct dt_error *err)
{
	struct dt_comm *w = dt_grad_sync_workers(r->sync);
	int64_t peak;

	test_ballast(r);
	free(r->peak_resident);
	r->peak_resident = dt_xcalloc((size_t)r->n_workers,
				      sizeof *r->peak_resident);
	r->peak_resident[dt_comm_rank(w)] =
		dt_sysmem_peak_resident(&peak) == 0 ? (double)peak : -1;
	return dt_comm_allreduce_sum_f64(w, r->peak_resident,
					 (size_t)r->n_workers, err);
}

/* A signal stopped the final evaluation: the final checkpoint, as for a
 * stop during a step, and exit 3 (no summary: the run has no final
 * evaluation). */
static enum dt_status
stopped_in_eval(struct dt_run *r, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	if (!dt_grad_sync_state_remote(r->sync) &&
	    r->last_ckpt_step != r->position.step)
		st = dt_run_checkpoint(r, err);
	if (st != DT_OK)
		return st;
	if (r->last_ckpt_step != r->position.step)
		return dt_errorf(err, DT_ERR_INTERRUPTED, "interrupted during "
				 "the final evaluation, after the last step "
				 "%lld; no checkpoint of it (checkpoint.at_end "
				 "is false)", (long long)r->position.step);
	return dt_errorf(err, DT_ERR_INTERRUPTED, "interrupted during the "
			 "final evaluation, after the last step %lld; "
			 "checkpoint written; evaluate it with: dtrain eval %s",
			 (long long)r->position.step, r->dir);
}

/* The end of a run: the final evaluation, its metrics line, the final
 * checkpoint (unless the release wrote it) and summary.json. */
static enum dt_status
finish(struct dt_run *r, struct dt_train_result *res, struct dt_error *err)
{
	enum dt_status st;
	/* bytes: (world_size, 3); NULL with parameter servers */
	double *bytes = bytes_per_step(r, &st, err);

	enum dt_status out = DT_OK, peaks;
	struct dt_error out_err, peaks_err;

	if (st == DT_OK && r->have_eval &&
	    r->best.eval_step == r->position.step) {
		/* Evaluated at this step already (an early stop). */
		res->eval_loss = r->best.eval_loss;
		res->eval_accuracy = r->best.eval_accuracy;
	} else if (st == DT_OK && r->have_eval) {
		st = dt_eval_run(r, &res->eval_loss, &res->eval_accuracy, err);
		if (st == DT_ERR_INTERRUPTED) {
			free(bytes);
			return stopped_in_eval(r, err);
		}
		if (st == DT_OK && r->rank == 0)
			out = dt_metrics_eval(r, res->eval_loss,
					      res->eval_accuracy, &out_err);
		if (st == DT_OK)
			st = dt_best_after_eval(r, res->eval_loss,
						res->eval_accuracy, err);
	}
	if (st == DT_OK && !dt_grad_sync_state_remote(r->sync) &&
	    r->job->checkpoint.at_end &&
	    r->last_ckpt_step != r->position.step)
		st = dt_run_checkpoint(r, err);
	/* The peaks after the last checkpoint, which may gather the whole
	 * model to rank 0; every worker takes part whatever its status. */
	peaks = gather_peaks(r, &peaks_err);
	if (st == DT_OK && peaks != DT_OK)
		st = dt_errorf(err, peaks, "%s", peaks_err.msg);
	/* A metrics line that could not be written fails the run after the
	 * checkpoint, instead of a summary over a cut file. */
	if (st == DT_OK) {
		if (out != DT_OK)
			st = dt_errorf(err, out, "%s", out_err.msg);
		else
			st = dt_metrics_write_summary(r, res, bytes, err);
		st = agree_on(r, dt_grad_sync_workers(r->sync), st, err);
	}
	if (st == DT_OK)
		dt_metrics_memory_note(r, stderr);
	free(bytes);
	return st;
}

/* A rank that does not train (a parameter server): the sync's role for
 * the whole run. A failure here leaves the training ranks waiting, so it
 * ends the job. */
static enum dt_status
serve(struct dt_run *r, struct dt_error *err)
{
	if (dt_grad_sync_serve(r->sync, err) != DT_OK)
		dt_run_die(r, err);
	return DT_OK;
}

/* After the loop. Where the optimizer state lives on ranks that stop at
 * the release (parameter servers), the final checkpoint is written while
 * they still hold it; then the release, which brings the final
 * parameters. */
static enum dt_status
release(struct dt_run *r, enum dt_status st, struct dt_error *err)
{
	struct dt_error e2;

	if (st == DT_OK && dt_grad_sync_state_remote(r->sync) &&
	    r->job->checkpoint.at_end &&
	    r->last_ckpt_step != r->position.step)
		st = dt_run_checkpoint(r, err);
	if (dt_grad_sync_release(r->sync, &e2) != DT_OK)
		dt_run_die(r, &e2);
	return st;
}

/* Every rank's check of its CPU affinity against its threads: with fewer
 * CPUs in its mask than threads (mpirun binding a rank to one core, srun
 * without --cpus-per-task, taskset), the threads take turns on them and
 * a step runs up to threads times slower; says so on stderr, with the
 * fix. A warning only: the run goes on with the bits it would have. */
static void
check_affinity(const struct dt_run *r)
{
	int threads = r->plan.blas_threads, n;
	char cpus[128];

	n = dt_cpus_allowed_list(cpus, sizeof cpus);
	if (n >= threads)
		return;
	fprintf(stderr, "dtrain: rank %d: %d threads, but its CPU affinity "
		"allows %d CPU%s (%s %s), so the threads share %s; give each "
		"rank %d cores: under mpirun --map-by slot:PE=%d --bind-to "
		"core (what dtrain run -n does), under srun "
		"--cpus-per-task=%d; or run fewer threads "
		"(parallel.blas_threads, OPENBLAS_NUM_THREADS)\n", r->rank, threads, n,
		n == 1 ? "" : "s", n == 1 ? "CPU" : "CPUs", cpus,
		n == 1 ? "it" : "them", threads, threads, threads);
}

/* The plan, the layout and its model, the optimizer and the gradient
 * sync (collective: every rank, servers too). */
static enum dt_status
setup_compute(struct dt_run *r, struct dt_error *err)
{
	struct dt_plan_host host = {
		.cores = dt_cpus_node_share(dt_comm_local_size(r->comm)),
		.local_ranks = dt_comm_local_size(r->comm),
		.blas_env = getenv("OPENBLAS_NUM_THREADS"),
	};
	struct dt_grad_sync_cfg cfg;
	enum dt_status st;

	st = dt_plan_build(r->job, dt_comm_size(r->comm), &host, NULL,
			   &r->plan, err);
	if (st != DT_OK)
		return st;
	dt_kern_set_bf16(r->job->train.precision == DT_PRECISION_BF16);
	_Static_assert((int)DT_KERN_LIB_AUTO == DT_KERNELS_AUTO &&
		       (int)DT_KERN_LIB_OPENBLAS == DT_KERNELS_OPENBLAS &&
		       (int)DT_KERN_LIB_ONEDNN == DT_KERNELS_ONEDNN,
		       "parallel.kernels is kern.h's choice");
	dt_kern_set_lib((enum dt_kern_lib)r->job->parallel.kernels);
	/* Before the first arena: each rank measures its node (they agree,
	 * since the figure moves between their reads). */
	st = agree(r, dt_memcheck(&r->plan, host.local_ranks, err), err);
	if (st != DT_OK)
		return st;
	check_affinity(r);
	openblas_set_num_threads(r->plan.blas_threads);
	/* As many threads of our own as of OpenBLAS's: they take turns
	 * (our loops run between the products), and the pool's split never
	 * changes the bits (util/threadpool.h), so one knob serves both. */
	r->pool = dt_pool_new(r->plan.blas_threads);
	st = dt_layout_setup(r, err);
	if (st != DT_OK)
		return st;
	dt_model_set_pool(r->model, r->pool);
	/* mse, l1, huber: the loss of a sample is already the mean over
	 * its outputs (graph/mse.c, l1_huber.c), so the batch mean divides
	 * by samples. */
	r->labels_per_sample = dt_loss_is_regression(r->job->model.loss) ? 1 :
			       dt_model_labels_per_sample(r->model);
	r->y_per_sample = dt_loss_is_regression(r->job->model.loss) ?
			  dt_model_targets_per_sample(r->plan.shapes) :
			  r->labels_per_sample;
	dt_diverge_init(&r->diverge, r->job->train.on_divergence,
			r->job->model.loss, dt_model_n_classes(r->plan.shapes));
	memset(&cfg, 0, sizeof cfg);
	cfg.job = r->job;
	cfg.plan = &r->plan;
	cfg.model = r->model;
	cfg.pool = r->pool;
	cfg.world = r->comm;
	cfg.sum_comm = r->plan.tp_sliced ? r->layout.dp_comm :
		       r->layout.stage_comm;
	if (r->plan.tp_sliced) {
		cfg.tp_comm = r->layout.tp_comm;
		cfg.tp_norms = r->layout.grid.dp == 0;
	}
	cfg.pipe_comm = r->layout.pipe_comm;
	cfg.stage = r->layout.grid.stage;
	cfg.norm_owner = r->layout.grid.dp == 0 && r->layout.grid.tp == 0;
	cfg.first_tensor = r->layout.first_tensor;
	cfg.n_tensors_all = r->layout.n_tensors_all;
	cfg.step = &r->position.step;
	st = dt_grad_sync_new(&cfg, &r->sync, err);
	r->n_norms = dt_grad_sync_n_norms(r->sync);
	r->report = dt_xcalloc(1, sizeof *r->report +
			       (size_t)(r->n_norms + 1) * sizeof(double));
	return st;
}

/* Completes the plan with the loaded data's sizes (steps per epoch,
 * total steps, the learning-rate schedule). */
static enum dt_status
plan_data(struct dt_run *r, struct dt_error *err)
{
	struct dt_plan_data data = {
		.n_train = r->train.n,
		.train_bytes = dt_source_bytes(&r->train) + r->train.n * 8,
		.n_eval = r->have_eval ? r->eval.n : -1,
		.eval_bytes = dt_source_bytes(&r->eval),
	};

	return dt_plan_set_data(r->job, &data, &r->plan, err);
}

/* The run directory, the data, the plan's data sizes and the resume
 * point; *done: a resumed run with nothing left to do (1 or 2, as
 * resume_point says). */
static enum dt_status
setup_run(struct dt_run *r, const struct dt_run_opts *opts, int *done,
	  struct dt_error *err)
{
	enum dt_status st;

	*done = 0;
	r->data_job = dt_xmalloc(1, sizeof *r->data_job);
	memcpy(r->data_job, r->job, sizeof *r->job);
	st = agree(r, prepare_dir(r, opts, err), err);
	if (st == DT_OK)
		st = agree(r, dt_run_load_data(r, opts->progress &&
					       r->rank == 0 &&
					       dt_progress_tty(), err),
			   err);
	if (st == DT_OK)
		st = plan_data(r, err);
	if (st == DT_OK)
		st = dt_best_check(r, err);	/* the same on every rank */
	if (st == DT_OK && opts->resume)
		st = dt_run_restore(r, err);
	if (st == DT_OK)
		st = dt_run_init_from(r, err);	/* a new start only */
	if (st != DT_OK || !opts->resume)
		return st;
	/* Every rank holds the same position: no agreement needed. */
	st = resume_point(r, done, err);
	if (st == DT_OK && !*done)
		st = resumed_length(r, err);
	if (st == DT_OK && !*done)
		note_schedule(r);
	if (st == DT_OK && !*done)
		st = agree(r, save_job(r, err), err);
	return st;
}

/* A worker's run from the first step to summary.json. */
static enum dt_status
work(struct dt_run *r, const struct dt_run_opts *opts,
     struct dt_train_result *res, struct dt_error *err)
{
	enum dt_status st;

	/* A restored state goes to the ranks that keep it (the servers). */
	if (dt_grad_sync_start(r->sync, err) != DT_OK)
		dt_run_die(r, err);
	r->perm = dt_xmalloc((size_t)r->train.n, sizeof *r->perm);
	dt_progress_init(&r->progress,
			 r->rank == 0 && opts->progress ? stderr : NULL,
			 isatty(STDERR_FILENO), r->plan.total_steps);
	if (r->rank == 0 && opts->progress)
		announce(r);
	test_signal_setup(r);
	st = dt_loop_run(r, res, err);
	dt_progress_end(&r->progress);
	st = release(r, st, err);
	if (st == DT_OK)
		st = finish(r, res, err);
	return st;
}

/* A signal during the set-up (the data's fetch and decoding above all)
 * is held until it ends, then every rank learns of it here: a stop
 * before the first step, with the checkpoint a resumed run came from
 * untouched (collective over every rank). */
static enum dt_status
stopped_in_setup(struct dt_run *r, struct dt_error *err)
{
	int stop = dt_signals_pending() != 0;
	enum dt_status st;

	st = dt_comm_allreduce_max_int(r->comm, &stop, 1, err);
	if (st != DT_OK || !stop)
		return st;
	if (r->resumed_from < 0)
		return dt_errorf(err, DT_ERR_INTERRUPTED, "interrupted while "
				 "setting up (loading the data), before the "
				 "first step; nothing was trained or kept: run "
				 "the job again");
	return dt_errorf(err, DT_ERR_INTERRUPTED, "interrupted while setting "
			 "up (loading the data), before the first step after "
			 "step %lld; its checkpoint is unchanged; continue "
			 "with: dtrain resume %s", (long long)r->position.step,
			 r->dir);
}

static void
run_fini(struct dt_run *r)
{
	dt_loader_free(r->loader);
	dt_grad_sync_free(r->sync);
	if (r->metrics != NULL)
		fclose(r->metrics);
	dt_tfevents_close(r->tb, NULL);
	free(r->rank_times);
	free(r->peak_resident);
	dt_layout_fini(&r->layout);
	dt_model_free(r->model);
	dt_pool_free(r->pool);
	dt_source_fini(&r->train);
	dt_source_fini(&r->eval);
	dt_vocab_fini(&r->vocab);
	dt_norm_fini(&r->norm);
	free(r->data_job);
	free(r->data_files);
	free(r->perm);
	free(r->report);
	dt_plan_fini(&r->plan);
	dt_run_release_ckpt(r, 0);
	if (r->dir_lock >= 0)
		close(r->dir_lock);	/* releases the run directory */
}

static void
run_init(struct dt_run *r, const struct dt_job *job, struct dt_comm *comm,
	 struct dt_train_result *res)
{
	memset(r, 0, sizeof *r);
	memset(res, 0, sizeof *res);
	res->eval_loss = NAN;
	res->eval_accuracy = NAN;
	res->train_loss = NAN;
	res->resumed_from = -1;
	r->job = job;
	r->comm = comm;
	r->rank = dt_comm_rank(comm);
	r->perm_epoch = -1;
	r->last_ckpt_step = -1;
	r->resumed_from = -1;
	r->dir_lock = -1;
	r->ckpt_lock = -1;
	dt_best_init(&r->best);
}

enum dt_status
dt_train_run(const struct dt_job *job, const struct dt_run_opts *opts,
	     struct dt_comm *comm, struct dt_train_result *res,
	     struct dt_error *err)
{
	struct dt_run r;
	enum dt_status st;
	int done = 0;

	run_init(&r, job, comm, res);
	r.tcp_eager = opts->tcp_eager;
	/* From here a first SIGINT or SIGTERM asks for a stop at the next
	 * point that checks (after the set-up, a step, a piece of an
	 * evaluation); dt_signals_restore below. */
	dt_signals_install();
	/* Before anything is allocated, every rank proves it holds the
	 * same resolved job, data sizes and build (train/agree.h): a rank
	 * launched with another --set or a node-local job file that differs
	 * stops every rank, named with the first differing key. */
	st = dt_agree_check(job, comm, err);
	if (st == DT_OK)
		st = setup_compute(&r, err);
	if (st == DT_OK)
		st = setup_run(&r, opts, &done, err);
	if (st == DT_OK && !done)
		st = stopped_in_setup(&r, err);
	res->resumed_from = r.resumed_from;
	if (st == DT_OK && done) {
		res->already_done = done;
		res->steps = r.position.step;
	}
	if (st == DT_OK && !done)
		st = agree(&r, dt_metrics_write_plan(&r, err), err);
	if (st == DT_OK && !done)
		st = agree(&r, dt_metrics_reopen(&r, r.resumed_from, err), err);
	if (st == DT_OK && !done)
		st = agree(&r, dt_metrics_open_tb(&r, err), err);
	if (st != DT_OK && r.rank == 0 && r.dir_made && r.dir_lock >= 0) {
		/* refused before the first step (data, init_from, a full
		 * disk, ...) in a directory this run made: leave nothing
		 * behind */
		dt_run_release_ckpt(&r, 1);
		close(r.dir_lock);
		r.dir_lock = -1;
		dt_rundir_unmake(r.dir);
	}
	if (st != DT_OK || done)
		goto out;	/* every rank, servers too, knows */
	if (!dt_grad_sync_trains(r.sync))
		st = serve(&r, err);
	else
		st = work(&r, opts, res, err);
	if (!all_train(&r)) {
		/* Those that train and those that serve end together, on
		 * the same status. */
		enum dt_status all = dt_comm_agree(comm, st, NULL);

		if (all != DT_OK && st == DT_OK)
			st = dt_errorf(err, all, "a worker failed");
	}
out:
	dt_signals_restore();
	run_fini(&r);
	return st;
}
