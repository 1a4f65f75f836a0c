/* train.c - the data-parallel training loop (see train.h).
 *
 * Gradient averaging: every micro-batch's backward adds
 * (1/global_batch) * d(sum of its per-sample losses) into the gradient
 * arena, so after one sum all-reduce every rank holds the gradient of the
 * mean loss over the global batch, whatever the data-parallel degree and
 * the number of micro-batches. */
#include "train/train.h"

#include <cblas.h>
#include <errno.h>
#include <json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/data.h"
#include "graph/graph.h"
#include "optim/optim.h"
#include "plan/plan.h"
#include "train/progress.h"
#include "train/rundir.h"
#include "util/alloc.h"

/* Everything one run holds; allocated before the first step. */
struct run {
	const struct dt_job *job;
	struct dt_comm *comm;
	struct dt_plan plan;
	int rank;
	char dir[DT_JOB_PATH_MAX];
	struct dt_dataset train, eval;
	int have_eval;
	struct dt_model *model;
	struct dt_optim *optim;
	int64_t steps_per_epoch, dropped, total_steps;
	int64_t *perm;		/* (n_train) epoch order */
	int64_t *eval_idx;	/* (micro_batch) scratch indices */
	float *x;		/* (micro_batch, input_size) */
	int32_t *y;		/* (micro_batch) */
	FILE *metrics;		/* rank 0 only */
	struct dt_progress progress;
};

/* Collective agreement on a status; the failing rank reports its own
 * message at once, so the user sees which rank and why. */
static enum dt_status
agree(struct run *r, enum dt_status local, struct dt_error *err)
{
	enum dt_status st = dt_comm_agree(r->comm, local, err);

	if (local != DT_OK && err != NULL && err->msg[0] != '\0') {
		if (dt_comm_size(r->comm) > 1) {
			fprintf(stderr, "dtrain: rank %d: %s\n", r->rank,
				err->msg);
			err->msg[0] = '\0';
		}
	}
	return st;
}

static enum dt_status
write_job(FILE *out, void *ctx, struct dt_error *err)
{
	return dt_job_write(ctx, out, err);
}

static enum dt_status
prepare_dir(struct run *r, const struct dt_run_opts *opts,
	    struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 32];
	enum dt_status st;
	int n;

	if (opts->run_dir != NULL)
		n = snprintf(r->dir, sizeof r->dir, "%s", opts->run_dir);
	else
		n = snprintf(r->dir, sizeof r->dir, "runs/%s", r->job->name);
	if (n < 0 || (size_t)n >= sizeof r->dir)
		return dt_errorf(err, DT_ERR_IO, "run directory path too long");
	if (r->rank != 0)
		return DT_OK;
	st = dt_rundir_prepare(r->dir, err);
	if (st == DT_OK)
		st = dt_rundir_path(path, sizeof path, r->dir, "job.yaml", err);
	if (st == DT_OK)
		st = dt_rundir_write_atomic(path, write_job, (void *)r->job,
					    err);
	if (st == DT_OK)
		st = dt_rundir_path(path, sizeof path, r->dir, "metrics.jsonl",
				    err);
	if (st == DT_OK) {
		r->metrics = fopen(path, "w");
		if (r->metrics == NULL)
			st = dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s",
				       path, strerror(errno));
	}
	return st;
}

/* Test aid, documented in dtrain(1): DTRAIN_TEST_FAIL_READ_RANK=R makes
 * rank R look for its training images under a name that does not exist, to
 * exercise the path where one rank cannot read its data. */
static const char *
train_images_path(const struct run *r, char *buf, size_t size)
{
	const char *v = getenv("DTRAIN_TEST_FAIL_READ_RANK");

	if (v != NULL && *v != '\0' && atoi(v) == r->rank) {
		snprintf(buf, size, "%s.missing-for-test",
			 r->job->data.train.images);
		return buf;
	}
	return r->job->data.train.images;
}

static enum dt_status
load_data(struct run *r, struct dt_error *err)
{
	char buf[DT_JOB_PATH_MAX + 32];
	int64_t classes = dt_model_n_classes(r->model);
	float scale = (float)r->job->data.scale;
	enum dt_status st;

	st = dt_dataset_load_idx(train_images_path(r, buf, sizeof buf),
				 r->job->data.train.labels, classes, scale,
				 &r->train, err);
	if (st != DT_OK)
		return st;
	if (r->train.sample_size != dt_model_input_size(r->model))
		return dt_errorf(err, DT_ERR_DATA,
				 "%s: samples have %lld features but "
				 "model.input_shape has %lld",
				 r->job->data.train.images,
				 (long long)r->train.sample_size,
				 (long long)dt_model_input_size(r->model));
	r->have_eval = r->job->data.eval.images[0] != '\0';
	if (!r->have_eval)
		return DT_OK;
	st = dt_dataset_load_idx(r->job->data.eval.images,
				 r->job->data.eval.labels, classes, scale,
				 &r->eval, err);
	if (st == DT_OK && r->eval.sample_size != r->train.sample_size)
		st = dt_errorf(err, DT_ERR_DATA,
			       "%s: samples have %lld features, the training "
			       "set has %lld", r->job->data.eval.images,
			       (long long)r->eval.sample_size,
			       (long long)r->train.sample_size);
	return st;
}

static enum dt_status
schedule_steps(struct run *r, struct dt_error *err)
{
	char where[512];

	r->steps_per_epoch = dt_steps_per_epoch(r->train.n,
						r->plan.global_batch,
						&r->dropped);
	if (r->steps_per_epoch < 1) {
		dt_job_where(r->job, "train.global_batch", where,
			     sizeof where);
		return dt_errorf(err, DT_ERR_PLAN,
				 "%sglobal batch %lld is larger than the %lld "
				 "training samples", where,
				 (long long)r->plan.global_batch,
				 (long long)r->train.n);
	}
	if (r->job->train.steps > 0)
		r->total_steps = r->job->train.steps;
	else
		r->total_steps = r->job->train.epochs * r->steps_per_epoch;
	return DT_OK;
}

/* Mean loss and accuracy over the whole eval set: each data-parallel rank
 * takes a contiguous share, the sums are all-reduced. */
static enum dt_status
evaluate(struct run *r, double *loss, double *accuracy, struct dt_error *err)
{
	int64_t n = r->eval.n, dp = r->plan.dp_size, rank = r->rank;
	int64_t lo = n * rank / dp, hi = n * (rank + 1) / dp;
	int64_t mb = r->plan.micro_batch;
	double sums[2] = { 0, 0 };
	enum dt_status st;

	for (int64_t i = lo; i < hi; i += mb) {
		int64_t count = hi - i < mb ? hi - i : mb, correct = 0;
		double ls = 0;

		for (int64_t j = 0; j < count; j++)
			r->eval_idx[j] = i + j;
		dt_dataset_gather(&r->eval, r->eval_idx, count, r->x, r->y);
		dt_model_eval(r->model, r->x, r->y, count, &ls, &correct);
		sums[0] += ls;
		sums[1] += (double)correct;
	}
	st = dt_comm_allreduce_sum_f64(r->comm, sums, 2, err);
	if (st != DT_OK)
		return st;
	*loss = sums[0] / (double)n;
	*accuracy = sums[1] / (double)n;
	return DT_OK;
}

static void
metrics_line(struct run *r, struct json_object *o)
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

struct summary_ctx {
	const struct run *r;
	const struct dt_train_result *res;
};

static enum dt_status
write_summary(FILE *out, void *ctx, struct dt_error *err)
{
	const struct summary_ctx *s = ctx;
	const struct run *r = s->r;
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(r->job->name));
	json_object_object_add(o, "steps", json_object_new_int64(s->res->steps));
	json_object_object_add(o, "samples",
			       json_object_new_int64(s->res->samples));
	json_object_object_add(o, "train_loss",
			       json_object_new_double(s->res->train_loss));
	if (r->have_eval) {
		json_object_object_add(o, "eval_loss",
				       json_object_new_double(s->res->eval_loss));
		json_object_object_add(o, "eval_accuracy",
				       json_object_new_double(
					       s->res->eval_accuracy));
	} else {
		json_object_object_add(o, "eval_loss", NULL);
		json_object_object_add(o, "eval_accuracy", NULL);
	}
	json_object_object_add(o, "wall_s", json_object_new_double(s->res->wall_s));
	json_object_object_add(o, "samples_per_s",
			       json_object_new_double(s->res->samples_per_s));
	json_object_object_add(o, "world_size",
			       json_object_new_int(r->plan.world_size));
	json_object_object_add(o, "data_parallel",
			       json_object_new_int(r->plan.dp_size));
	json_object_object_add(o, "global_batch",
			       json_object_new_int64(r->plan.global_batch));
	json_object_object_add(o, "micro_batch",
			       json_object_new_int64(r->plan.micro_batch));
	json_object_object_add(o, "grad_accum_steps",
			       json_object_new_int64(r->plan.grad_accum_steps));
	json_object_object_add(o, "bytes_sent_rank0",
			       json_object_new_int64(
				       (int64_t)dt_comm_bytes_sent(r->comm)));
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					     JSON_C_TO_STRING_SPACED), out);
	fputc('\n', out);
	json_object_put(o);
	if (ferror(out))
		return dt_errorf(err, DT_ERR_IO, "summary.json: write failed");
	return DT_OK;
}

/* A failure in the middle of training cannot be agreed on (the other ranks
 * are inside a collective): report it with the rank and end the job. */
static void
die_in_step(struct run *r, const struct dt_error *err)
{
	fprintf(stderr, "dtrain: rank %d: %s\n", r->rank, err->msg);
	dt_comm_abort(r->comm, dt_status_exit_code(err->status));
}

static void
train_loop(struct run *r, struct dt_train_result *res)
{
	const struct dt_job *job = r->job;
	const struct dt_plan *p = &r->plan;
	float grad_scale = 1.0f / (float)p->global_batch;
	size_t n_params = dt_model_n_params(r->model);
	float *params = dt_model_params(r->model);
	float *grads = dt_model_grads(r->model);
	int64_t log_every = job->log.every_steps > 0 ? job->log.every_steps : 0;
	int64_t eval_every = job->eval.every_steps;
	int64_t epoch = -1, window_steps = 0;
	double window_loss = 0, t0 = dt_now(), t_window = t0;
	double last_loss = NAN;
	struct dt_error err;

	dt_error_clear(&err);
	for (int64_t step = 0; step < r->total_steps; step++) {
		int64_t e = step / r->steps_per_epoch;
		int64_t s = step % r->steps_per_epoch;
		float lr = (float)job->train.lr;
		double local_loss = 0;

		if (e != epoch) {
			dt_shuffle(job->seed, e, r->train.n, r->perm);
			epoch = e;
		}
		dt_model_zero_grads(r->model);
		for (int64_t k = 0; k < p->grad_accum_steps; k++) {
			int64_t off = dt_shard_offset(s, p->global_batch,
						      r->rank, p->dp_size,
						      p->micro_batch, k);
			double ls = 0;

			dt_dataset_gather(&r->train, r->perm + off,
					  p->micro_batch, r->x, r->y);
			dt_model_train_step(r->model, r->x, r->y,
					    p->micro_batch, grad_scale, &ls,
					    NULL);
			local_loss += ls;
		}
		if (dt_comm_allreduce_sum_f32(r->comm, grads, n_params, &err))
			die_in_step(r, &err);
		dt_optim_step(r->optim, params, grads, lr);
		window_loss += local_loss;
		window_steps++;

		int last = step + 1 == r->total_steps;
		if ((log_every > 0 && (step + 1) % log_every == 0) || last) {
			double now = dt_now();
			double sum = window_loss;
			double mean, rate;

			if (dt_comm_allreduce_sum_f64(r->comm, &sum, 1, &err))
				die_in_step(r, &err);
			mean = sum / (double)(window_steps * p->global_batch);
			rate = (double)(window_steps * p->global_batch) /
			       (now - t_window > 0 ? now - t_window : 1e-9);
			last_loss = mean;
			if (r->rank == 0) {
				struct json_object *o = json_object_new_object();

				json_object_object_add(o, "step",
						       json_object_new_int64(step + 1));
				json_object_object_add(o, "epoch",
						       json_object_new_int64(e));
				json_object_object_add(o, "loss",
						       json_object_new_double(mean));
				json_object_object_add(o, "lr",
						       json_object_new_double(lr));
				json_object_object_add(o, "samples_per_s",
						       json_object_new_double(rate));
				metrics_line(r, o);
				dt_progress_step(&r->progress, step + 1, e,
						 mean, lr, rate, now - t0,
						 last);
			}
			window_loss = 0;
			window_steps = 0;
			t_window = dt_now();
		}
		if (r->have_eval && eval_every > 0 &&
		    (step + 1) % eval_every == 0 && !last) {
			double el, ea;

			if (evaluate(r, &el, &ea, &err))
				die_in_step(r, &err);
			if (r->rank == 0) {
				struct json_object *o = json_object_new_object();

				json_object_object_add(o, "step",
						       json_object_new_int64(step + 1));
				json_object_object_add(o, "epoch",
						       json_object_new_int64(e));
				json_object_object_add(o, "eval_loss",
						       json_object_new_double(el));
				json_object_object_add(o, "eval_accuracy",
						       json_object_new_double(ea));
				metrics_line(r, o);
				dt_progress_eval(&r->progress, step + 1, el,
						 ea);
			}
			t_window = dt_now();
		}
	}
	res->steps = r->total_steps;
	res->samples = r->total_steps * p->global_batch;
	res->train_loss = last_loss;
	res->wall_s = dt_now() - t0;
	res->samples_per_s = (double)res->samples /
			     (res->wall_s > 0 ? res->wall_s : 1e-9);
}

static void
run_fini(struct run *r)
{
	if (r->metrics != NULL)
		fclose(r->metrics);
	dt_model_free(r->model);
	dt_optim_free(r->optim);
	dt_dataset_fini(&r->train);
	dt_dataset_fini(&r->eval);
	free(r->perm);
	free(r->eval_idx);
	free(r->x);
	free(r->y);
}

static int
node_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

enum dt_status
dt_train_run(const struct dt_job *job, const struct dt_run_opts *opts,
	     struct dt_comm *comm, struct dt_train_result *res,
	     struct dt_error *err)
{
	struct run r;
	enum dt_status st;
	int threads;

	memset(&r, 0, sizeof r);
	memset(res, 0, sizeof *res);
	res->eval_loss = NAN;
	res->eval_accuracy = NAN;
	r.job = job;
	r.comm = comm;
	r.rank = dt_comm_rank(comm);

	/* Deterministic checks first: every rank reaches the same verdict,
	 * so no agreement is needed and rank 0 alone reports it. */
	st = dt_plan_batch(job, dt_comm_size(comm), &r.plan, err);
	if (st != DT_OK)
		return st;
	threads = dt_plan_blas_threads(node_cores(), dt_comm_local_size(comm),
				       getenv("OPENBLAS_NUM_THREADS"));
	openblas_set_num_threads(threads);

	st = dt_model_new(job, r.plan.micro_batch, &r.model, err);
	if (st != DT_OK)
		goto out;
	r.optim = dt_optim_new(job, dt_model_n_params(r.model));

	st = agree(&r, prepare_dir(&r, opts, err), err);
	if (st != DT_OK)
		goto out;
	st = agree(&r, load_data(&r, err), err);
	if (st != DT_OK)
		goto out;
	st = schedule_steps(&r, err);
	if (st != DT_OK)
		goto out;

	r.perm = dt_xmalloc((size_t)r.train.n, sizeof *r.perm);
	r.eval_idx = dt_xmalloc((size_t)r.plan.micro_batch, sizeof *r.eval_idx);
	r.x = dt_xalloc_floats((size_t)(r.plan.micro_batch *
					dt_model_input_size(r.model)));
	r.y = dt_xmalloc((size_t)r.plan.micro_batch, sizeof *r.y);
	dt_progress_init(&r.progress,
			 r.rank == 0 && opts->progress ? stderr : NULL,
			 isatty(STDERR_FILENO), r.total_steps);
	if (r.rank == 0 && opts->progress)
		fprintf(stderr, "dtrain: %s: %d rank%s x %d BLAS thread%s, "
			"global batch %lld = micro-batch %lld x %lld "
			"accumulation x %d data-parallel, %lld steps "
			"(%lld per epoch, %lld samples dropped per epoch), "
			"%zu parameters\n", job->name, r.plan.world_size,
			r.plan.world_size == 1 ? "" : "s", threads,
			threads == 1 ? "" : "s",
			(long long)r.plan.global_batch,
			(long long)r.plan.micro_batch,
			(long long)r.plan.grad_accum_steps, r.plan.dp_size,
			(long long)r.total_steps, (long long)r.steps_per_epoch,
			(long long)r.dropped, dt_model_n_params(r.model));

	train_loop(&r, res);
	dt_progress_end(&r.progress);
	if (r.have_eval) {
		st = evaluate(&r, &res->eval_loss, &res->eval_accuracy, err);
		if (st != DT_OK)
			goto out;
	}
	if (r.rank == 0) {
		char path[DT_JOB_PATH_MAX + 32];
		struct summary_ctx sc = { &r, res };

		if (r.have_eval) {
			struct json_object *o = json_object_new_object();

			json_object_object_add(o, "step",
					       json_object_new_int64(res->steps));
			json_object_object_add(o, "epoch",
					       json_object_new_int64(
						       (res->steps - 1) /
						       r.steps_per_epoch));
			json_object_object_add(o, "eval_loss",
					       json_object_new_double(res->eval_loss));
			json_object_object_add(o, "eval_accuracy",
					       json_object_new_double(
						       res->eval_accuracy));
			metrics_line(&r, o);
		}
		st = dt_rundir_path(path, sizeof path, r.dir, "summary.json",
				    err);
		if (st == DT_OK)
			st = dt_rundir_write_atomic(path, write_summary, &sc,
						    err);
	}
	st = agree(&r, st, err);
out:
	run_fini(&r);
	return st;
}
