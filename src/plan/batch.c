/* batch.c - batch arithmetic and BLAS threads per rank (see plan.h). */
#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

#include "optim/schedule.h"

enum dt_status
dt_plan_batch(const struct dt_job *job, int world_size, struct dt_plan *plan,
	      struct dt_error *err)
{
	int64_t g = job->train.global_batch, m = job->train.micro_batch;
	int64_t k = job->train.grad_accum_steps, dp = world_size;
	int ps = job->parallel.sync == DT_SYNC_PARAMETER_SERVER;
	char where[512];

	memset(plan, 0, sizeof *plan);
	if (world_size < 1)
		return dt_errorf(err, DT_ERR_PLAN, "world size %d < 1",
				 world_size);
	if (job->parallel.strategy != DT_STRATEGY_DATA) {
		/* The job file describes pipeline and tensor layouts, but no
		 * rank can run them yet: refuse rather than run something
		 * else than asked. */
		dt_job_where(job, "parallel.strategy", where, sizeof where);
		return dt_errorf(err, DT_ERR_PLAN,
				 "%s%s: pipeline and tensor parallelism are "
				 "not implemented in this version of dtrain; "
				 "use strategy data (all-reduce or parameter "
				 "servers)", where,
				 job->parallel.strategy == DT_STRATEGY_MODEL ?
				 "model" : "hybrid");
	}
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
	if (job->parallel.data_parallel > 0 &&
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
					 "give only two of the three",
					 where, (long long)g, (long long)m,
					 (long long)k, (long long)dp,
					 (long long)(m * k * dp));
		}
	} else if (g != 0 && m != 0) {
		if (g % (m * dp) != 0) {
			dt_job_where(job, "train.global_batch", where,
				     sizeof where);
			return dt_errorf(err, DT_ERR_PLAN,
					 "%sglobal batch %lld is not a multiple "
					 "of micro_batch %lld x data-parallel "
					 "degree %lld = %lld",
					 where, (long long)g, (long long)m,
					 (long long)dp, (long long)(m * dp));
		}
		k = g / (m * dp);
	} else if (g != 0) {
		if (k == 0)
			k = 1;
		if (g % (k * dp) != 0) {
			dt_job_where(job, "train.global_batch", where,
				     sizeof where);
			return dt_errorf(err, DT_ERR_PLAN,
					 "%sglobal batch %lld is not a multiple "
					 "of grad_accum_steps %lld x "
					 "data-parallel degree %lld = %lld",
					 where, (long long)g, (long long)k,
					 (long long)dp, (long long)(k * dp));
		}
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
dt_plan_blas_threads(int cores, int local_ranks, const char *env_value)
{
	if (env_value != NULL && *env_value != '\0') {
		char *end;
		long v = strtol(env_value, &end, 10);

		if (*end == '\0' && v > 0 && v < 4096)
			return (int)v;
	}
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
	if (dt_lr_schedule_check(s, err) != DT_OK) {
		dt_job_where(job, "train.schedule", where, sizeof where);
		dt_error_prefix(err, "%s", where);
		return DT_ERR_JOB;
	}
	return DT_OK;
}
