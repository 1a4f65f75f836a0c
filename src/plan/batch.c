/* SPDX-License-Identifier: MIT */
/* batch.c - batch arithmetic and BLAS threads per rank (see plan.h). */
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

#include "optim/schedule.h"

static const char *const degree_keys[3] = {
	"parallel.data_parallel", "parallel.pipeline_parallel",
	"parallel.tensor_parallel",
};

/* "data_parallel 2 x tensor_parallel 1 (default)" into buf: the degrees
 * but the one at index skip (-1: none), as the job gives them. */
static void
degrees_text(const int64_t deg[3], const int given[3], int skip, char *buf,
	     size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < 3 && len < size; i++) {
		if (i == skip)
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%s%s %lld%s",
					len ? " x " : "", degree_keys[i] + 9,
					(long long)deg[i],
					given[i] ? "" : " (default)");
	}
}

/* Resolves the degrees of a model or hybrid job over n ranks (the workers)
 * into plan->dp_size, pp_size and tp_size; see plan.h and dtrain-job(5). */
static enum dt_status
resolve_split(const struct dt_job *job, int n, int servers,
	      struct dt_plan *plan, struct dt_error *err)
{
	int64_t deg[3] = { job->parallel.data_parallel,
			   job->parallel.pipeline_parallel,
			   job->parallel.tensor_parallel };
	int given[3], n_auto = -1, blame = -1;
	int model = job->parallel.strategy == DT_STRATEGY_MODEL;
	int64_t product = 1;
	char where[512], text[256];

	for (int i = 0; i < 3; i++) {
		given[i] = deg[i] != 0;
		if (deg[i] == DT_DEGREE_AUTO)
			n_auto = i;
	}
	if (model && given[0] && deg[0] != 1) {
		dt_job_where(job, degree_keys[0], where, sizeof where);
		if (deg[0] == DT_DEGREE_AUTO)
			snprintf(text, sizeof text, "auto");
		else
			snprintf(text, sizeof text, "%lld", (long long)deg[0]);
		return dt_errorf(err, DT_ERR_PLAN, "%smust be 1 with strategy "
				 "model (one copy of the model, split), found "
				 "%s; use strategy hybrid for replicas of a "
				 "split model", where, text);
	}
	if (model && !given[1] && !given[2]) {
		/* A model split over every rank: a pipeline, the simplest
		 * split that every model admits. */
		deg[0] = 1;
		deg[1] = n;
		deg[2] = 1;
	} else if (!given[0] && !given[1] && !given[2]) {
		/* hybrid with no degree: replicas of an unsplit model. */
		deg[0] = n;
		deg[1] = 1;
		deg[2] = 1;
	} else {
		for (int i = 0; i < 3; i++) {
			if (!given[i])
				deg[i] = 1;
			/* Saturates: a product past the world size is
			 * wrong whatever its value. */
			if (i != n_auto &&
			    __builtin_mul_overflow(product, deg[i], &product))
				product = INT64_MAX;
		}
		if (n_auto >= 0) {
			if (n % product != 0) {
				degrees_text(deg, given, n_auto, text,
					     sizeof text);
				dt_job_where(job, degree_keys[n_auto], where,
					     sizeof where);
				return dt_errorf(err, DT_ERR_PLAN,
						 "%sauto: %d %s not a multiple "
						 "of %s = %lld; run with -n a "
						 "multiple of %lld%s", where, n,
						 servers ? "workers are" :
						 "ranks are", text,
						 (long long)product,
						 (long long)product,
						 servers ? " plus the servers" :
						 "");
			}
			deg[n_auto] = n / product;
		} else if (product != n) {
			degrees_text(deg, given, -1, text, sizeof text);
			/* Name the place of the last degree the job gives:
			 * the one most likely written for another world. */
			for (int i = 0; i < 3; i++)
				if (given[i])
					blame = i;
			dt_job_where(job, degree_keys[blame], where,
				     sizeof where);
			return dt_errorf(err, DT_ERR_PLAN,
					 "%s%s = %lld ranks, but %d%s; run "
					 "with -n %lld, or set one degree to "
					 "auto", where, text,
					 (long long)product, n,
					 servers ? " workers (ranks less the "
					 "servers) are given" : " are given",
					 (long long)(product + servers));
		}
	}
	plan->dp_size = (int)deg[0];
	plan->pp_size = (int)deg[1];
	plan->tp_size = (int)deg[2];
	return DT_OK;
}

/* Where key's value came from, "job.yaml:14:5" or "--set key=value",
 * into buf: dt_job_where's text less its ": key: " tail. */
static void
place(const struct dt_job *job, const char *key, char *buf, size_t size)
{
	size_t len, klen = strlen(key);

	dt_job_where(job, key, buf, size);
	len = strlen(buf);
	if (len >= klen + 4 && strcmp(buf + len - 2, ": ") == 0 &&
	    strncmp(buf + len - klen - 4, ": ", 2) == 0 &&
	    strncmp(buf + len - klen - 2, key, klen) == 0)
		buf[len - klen - 4] = '\0';
}

/* When the data-parallel degree dp came from the rank count (the job
 * gives none), the degrees that would fit a global batch g of per-rank
 * multiple `per` (micro_batch, or grad_accum_steps), into buf as
 * "; data-parallel degrees that fit: 1, 2, 3, 4, 6, 8 (-n sets the
 * degree: ranks / (pipeline x tensor))", or "" when the job fixes dp or
 * no degree up to 2 x dp + 8 fits. */
static void
dp_hint(const struct dt_job *job, int64_t g, int64_t per, int64_t dp,
	char *buf, size_t size)
{
	size_t used;
	int found = 0;

	buf[0] = '\0';
	if (job->parallel.data_parallel > 0 || per <= 0)
		return;
	used = (size_t)snprintf(buf, size, "; data-parallel degrees that fit:");
	for (int64_t d = 1; d <= 2 * dp + 8 && found < 8 && used < size; d++) {
		if (g % (per * d) != 0)
			continue;
		used += (size_t)snprintf(buf + used, size - used, "%s %lld",
					 found ? "," : "", (long long)d);
		found++;
	}
	if (found == 0) {
		buf[0] = '\0';
		return;
	}
	if (used < size)
		snprintf(buf + used, size - used, " (-n sets the degree: "
			 "ranks / (pipeline x tensor))");
}

/* With a pipeline, parallel.micro_batches is grad_accum_steps: fixes *k
 * when the job gives it, after checking it against train.grad_accum_steps
 * and against the value train.global_batch and train.micro_batch give. */
static enum dt_status
pipeline_micro_batches(const struct dt_job *job, int64_t dp, int64_t *k,
		       struct dt_error *err)
{
	int64_t mb = job->parallel.micro_batches, derived;
	int64_t g = job->train.global_batch, m = job->train.micro_batch;
	char where[512], other[512];

	if (mb <= 0)
		return DT_OK;
	dt_job_where(job, "parallel.micro_batches", where, sizeof where);
	if (*k != 0 && *k != mb) {
		place(job, "train.grad_accum_steps", other, sizeof other);
		return dt_errorf(err, DT_ERR_PLAN, "%s%lld micro-batches per "
				 "pipeline step, but train.grad_accum_steps is "
				 "%lld (%s); with a pipeline they are the same "
				 "number (the micro-batches of one optimizer "
				 "step): give only one (from the command "
				 "line, --set train.grad_accum_steps=%lld "
				 "replaces the file's)", where, (long long)mb,
				 (long long)*k, other, (long long)mb);
	}
	if (*k == 0 && g != 0 && m != 0 && g % (m * dp) == 0 &&
	    (derived = g / (m * dp)) != mb) {
		place(job, "train.global_batch", other, sizeof other);
		return dt_errorf(err, DT_ERR_PLAN, "%s%lld micro-batches per "
				 "pipeline step, but train.global_batch %lld "
				 "(%s) / (micro_batch %lld x data-parallel "
				 "degree %lld) makes grad_accum_steps %lld; "
				 "with a pipeline they are the same number: "
				 "give only two of global_batch, micro_batch "
				 "and micro_batches", where, (long long)mb,
				 (long long)g, other, (long long)m,
				 (long long)dp, (long long)derived);
	}
	*k = mb;
	return DT_OK;
}

/* Refuses a global batch g that does not split into f x dp samples per
 * step, f being train.micro_batch or grad_accum_steps (named by what),
 * with a data-parallel degree that would fit (dp_hint) and pipe, the
 * pipeline's remark or "". */
static enum dt_status
check_multiple(const struct dt_job *job, int64_t g, const char *what,
	       int64_t f, int64_t dp, const char *pipe, struct dt_error *err)
{
	char hint[160];
	char where[512];

	if (g % (f * dp) == 0)
		return DT_OK;
	dp_hint(job, g, f, dp, hint, sizeof hint);
	dt_job_where(job, "train.global_batch", where, sizeof where);
	return dt_errorf(err, DT_ERR_PLAN, "%sglobal batch %lld is not a "
			 "multiple of %s %lld x data-parallel degree %lld = "
			 "%lld%s%s", where, (long long)g, what, (long long)f,
			 (long long)dp, (long long)(f * dp), hint, pipe);
}

enum dt_status
dt_plan_batch(const struct dt_job *job, int world_size, struct dt_plan *plan,
	      struct dt_error *err)
{
	int64_t g = job->train.global_batch, m = job->train.micro_batch;
	int64_t k = job->train.grad_accum_steps, dp = world_size;
	int ps = job->parallel.sync == DT_SYNC_PARAMETER_SERVER;
	const char *pipe = "";
	char where[512];
	enum dt_status st;

	memset(plan, 0, sizeof *plan);
	plan->pp_size = 1;
	plan->tp_size = 1;
	plan->pipe_schedule = job->parallel.schedule;
	if (world_size < 1)
		return dt_errorf(err, DT_ERR_PLAN, "world size %d < 1",
				 world_size);
	if (ps) {
		/* The last parallel.servers ranks serve; the others are the
		 * data-parallel workers. */
		dp = world_size - job->parallel.servers;
		if (dp < 1) {
			dt_job_where(job, "parallel.servers", where,
				     sizeof where);
			return dt_errorf(err, DT_ERR_PLAN,
					 "%s%lld parameter servers leave no "
					 "worker among %d ranks; run with more "
					 "ranks or fewer servers", where,
					 (long long)job->parallel.servers,
					 world_size);
		}
		if (job->train.clip_norm > 0 ||
		    job->train.on_nonfinite == DT_NONFINITE_SKIP_STEP) {
			dt_job_where(job, job->train.clip_norm > 0 ?
				     "train.clip_norm" : "train.on_nonfinite",
				     where, sizeof where);
			return dt_errorf(err, DT_ERR_PLAN,
					 "%snot supported with parameter "
					 "servers (no rank sees the whole "
					 "gradient); use parallel.sync: "
					 "allreduce", where);
		}
	}
	if (job->parallel.strategy != DT_STRATEGY_DATA) {
		st = resolve_split(job, (int)dp,
				   ps ? (int)job->parallel.servers : 0, plan,
				   err);
		if (st != DT_OK)
			return st;
		if (ps && (plan->pp_size > 1 || plan->tp_size > 1)) {
			/* A server shard would have to follow the stages
			 * and the tensor slices; not in this version. */
			dt_job_where(job, "parallel.sync", where,
				     sizeof where);
			return dt_errorf(err, DT_ERR_PLAN,
					 "%sparameter servers work with "
					 "data parallelism only, found "
					 "pipeline_parallel %d x "
					 "tensor_parallel %d; use "
					 "parallel.sync: allreduce",
					 where, plan->pp_size, plan->tp_size);
		}
		dp = plan->dp_size;
	} else if (job->parallel.data_parallel > 0 &&
		   job->parallel.data_parallel != dp) {
		dt_job_where(job, "parallel.data_parallel", where,
			     sizeof where);
		return dt_errorf(err, DT_ERR_PLAN,
				 "%sdata-parallel degree %lld does not match "
				 "the %lld data-parallel ranks of %d; run "
				 "with -n %lld or remove the key",
				 where, (long long)job->parallel.data_parallel,
				 (long long)dp, world_size,
				 (long long)(job->parallel.data_parallel +
					     world_size - dp));
	}
	if (plan->pp_size > 1) {
		st = pipeline_micro_batches(job, dp, &k, err);
		if (st != DT_OK)
			return st;
		/* With a pipeline a remainder means a step that does not
		 * split into whole micro-batches: say so. */
		pipe = "; with a pipeline the global batch must split into "
		       "micro-batches of micro_batch samples, "
		       "grad_accum_steps (parallel.micro_batches) of them "
		       "per data-parallel rank";
	}
	if (g == 0 && m == 0) {
		dt_job_where(job, "train", where, sizeof where);
		return dt_errorf(err, DT_ERR_PLAN,
				 "%sgive train.global_batch or train.micro_batch",
				 where);
	}
	if (g != 0 && m != 0 && k != 0) {
		if (m * k * dp != g) {
			dt_job_where(job, "train.global_batch", where,
				     sizeof where);
			return dt_errorf(err, DT_ERR_PLAN,
					 "%sglobal batch %lld != micro_batch "
					 "%lld x grad_accum_steps %lld x "
					 "data-parallel degree %lld = %lld; "
					 "give only two of the three%s",
					 where, (long long)g, (long long)m,
					 (long long)k, (long long)dp,
					 (long long)(m * k * dp), pipe);
		}
	} else if (g != 0 && m != 0) {
		st = check_multiple(job, g, "micro_batch", m, dp, pipe, err);
		if (st != DT_OK)
			return st;
		k = g / (m * dp);
	} else if (g != 0) {
		if (k == 0)
			k = 1;
		st = check_multiple(job, g, "grad_accum_steps", k, dp, pipe,
				    err);
		if (st != DT_OK)
			return st;
		m = g / (k * dp);
	} else {
		if (k == 0)
			k = 1;
		g = m * k * dp;
	}
	plan->world_size = world_size;
	plan->dp_size = (int)dp;
	plan->global_batch = g;
	plan->micro_batch = m;
	plan->grad_accum_steps = k;
	plan->per_rank_batch = m * k;
	return DT_OK;
}

int
dt_plan_blas_threads(int cores, int local_ranks, int64_t job_value,
		     const char *env_value)
{
	if (env_value != NULL && *env_value != '\0') {
		char *end;
		long v = strtol(env_value, &end, 10);

		if (*end == '\0' && v > 0 && v < 4096)
			return (int)v;
	}
	if (job_value > 0)	/* job/ keeps it <= 4096 */
		return (int)job_value;
	if (local_ranks < 1)
		local_ranks = 1;
	return cores / local_ranks > 1 ? cores / local_ranks : 1;
}

enum dt_status
dt_plan_schedule(const struct dt_job *job, int64_t total_steps,
		 struct dt_lr_schedule *s, struct dt_error *err)
{
	char where[512];

	memset(s, 0, sizeof *s);
	s->kind = job->train.schedule.kind == DT_SCHEDULE_STEP ?
		  DT_SCHED_STEP :
		  job->train.schedule.kind == DT_SCHEDULE_COSINE ?
		  DT_SCHED_COSINE : DT_SCHED_CONSTANT;
	s->lr = job->train.lr;
	s->warmup_steps = job->train.schedule.warmup_steps;
	s->total_steps = total_steps;
	s->step_size = job->train.schedule.step_size;
	s->gamma = job->train.schedule.gamma;
	s->min_lr = job->train.schedule.min_lr;
	if (s->kind != DT_SCHED_STEP) {
		s->step_size = 1;
		s->gamma = 1;
	}
	/* dt_lr_schedule_check's total_steps is no job key: this one error
	 * names the keys. */
	if (s->kind == DT_SCHED_COSINE && s->total_steps <= s->warmup_steps)
		dt_errorf(err, DT_ERR_JOB, "lr schedule: the run's %lld steps "
			  "(train.steps, or train.epochs of the data) must be "
			  "more than train.schedule.warmup_steps (%lld) for a "
			  "cosine schedule: lower warmup_steps or run more "
			  "steps", (long long)s->total_steps,
			  (long long)s->warmup_steps);
	else if (dt_lr_schedule_check(s, err) == DT_OK)
		return DT_OK;
	dt_job_where(job, "train.schedule", where, sizeof where);
	dt_error_prefix(err, "%s", where);
	return DT_ERR_JOB;
}
