/* SPDX-License-Identifier: MIT */
/* build.c - the one plan constructor (see plan.h): every number of a
 * job's run worked out once, from the job, the world size, the host and
 * the data's sizes. */
#include "plan/plan.h"

#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "data/data.h"
#include "graph/graph.h"
#include "graph/kern.h"
#include "plan/sync_plan.h"
#include "util/alloc.h"
#include "util/cpu_features.h"

static const struct dt_plan_data unknown_data = { -1, 0, -1, 0 };

/* parallel.accum_schedule: auto keeps depth first where breadth first
 * would hold more than DT_PLAN_BREADTH_AUTO_BYTES of activations beyond
 * depth first's one micro-batch (plan.h), so that auto never makes a job
 * refused for memory that ran before; asked for by name it stays. */
static void
auto_fallback(const struct dt_job *job, struct dt_plan *plan,
	      const struct dt_stage_info *si)
{
	double extra = (double)(plan->grad_accum_steps - 1) *
		       (double)plan->micro_batch * (double)si->act_floats *
		       sizeof(float);

	if (job->parallel.accum_schedule == DT_ACCUM_AUTO &&
	    plan->accum_schedule == DT_ACCUM_BREADTH_FIRST &&
	    extra > DT_PLAN_BREADTH_AUTO_BYTES)
		plan->accum_schedule = DT_ACCUM_DEPTH_FIRST;
}

/* train.precision: bf16 needs a CPU with bf16 products, checked before
 * anything runs (run and plan alike). */
static enum dt_status
precision_check(const struct dt_job *job, struct dt_error *err)
{
	const char *missing = dt_kern_bf16_missing();
	char where[512];

	if (job->train.precision != DT_PRECISION_BF16 || missing == NULL)
		return DT_OK;
	dt_job_where(job, "train.precision", where, sizeof where);
	return dt_errorf(err, DT_ERR_PLAN, "%sbf16 needs %s, which this CPU "
			 "lacks (or DTRAIN_CPU=%s takes away); set "
			 "train.precision: f32", where, missing,
			 dt_cpu_kind_name(dt_cpu_kind()));
}

/* The stage layout of the whole model and what follows from it: each
 * stage's holdings, micro-batches in flight and schedule. */
static enum dt_status
lay_out(const struct dt_job *job, struct dt_plan *plan, struct dt_error *err)
{
	int pp = plan->pp_size;
	int64_t n_ops = 2 * plan->grad_accum_steps;
	/* the shapes of a model for training: its loss in place */
	enum dt_status st = dt_model_new_slots(job, 0, 1, &plan->shapes, err);

	if (st != DT_OK)
		return st;
	plan->n_nodes = dt_model_n_layers(plan->shapes);
	plan->stage_of_node = dt_xcalloc((size_t)plan->n_nodes,
					 sizeof *plan->stage_of_node);
	st = dt_plan_layout(job, plan, plan->shapes, plan->stage_of_node, err);
	if (st != DT_OK)
		return st;
	plan->tp_sliced = dt_plan_tp_sliced(job, plan);
	/* the vocabulary-split head's output as the trainer holds it, at
	 * rank 0's share, the largest (dt_tp_vocab_share) */
	if (plan->tp_sliced)
		dt_model_tp_slice_logits(plan->shapes, plan->stage_of_node,
					 0);
	plan->stages = dt_xcalloc((size_t)pp, sizeof *plan->stages);
	plan->in_flight = dt_xcalloc((size_t)pp, sizeof *plan->in_flight);
	plan->ops = dt_xcalloc((size_t)(pp * n_ops), sizeof *plan->ops);
	plan->sync = dt_xcalloc((size_t)pp, sizeof *plan->sync);
	for (int s = 0; s < pp; s++) {
		dt_model_stage_info(plan->shapes, plan->stage_of_node, pp, s,
				    &plan->stages[s]);
		auto_fallback(job, plan, &plan->stages[s]);
		plan->in_flight[s] = dt_plan_in_flight(plan, s);
		dt_plan_pipe_ops(plan, s, plan->ops + s * n_ops);
		dt_plan_sync(job, plan, s, &plan->sync[s]);
	}
	return DT_OK;
}

enum dt_status
dt_plan_build(const struct dt_job *job, int world_size,
	      const struct dt_plan_host *host, const struct dt_plan_data *data,
	      struct dt_plan *plan, struct dt_error *err)
{
	enum dt_status st = dt_plan_batch(job, world_size, plan, err);

	if (st != DT_OK)
		return st;
	plan->blas_threads = dt_plan_blas_threads(host->cores,
						  host->local_ranks,
						  job->parallel.blas_threads,
						  host->blas_env);
	plan->exact_accum = dt_plan_exact_accum(plan);
	st = dt_plan_accum_schedule(job, plan, &plan->accum_schedule, err);
	if (st == DT_OK)
		st = dt_plan_sync_check(job, plan, err);
	if (st == DT_OK)
		st = precision_check(job, err);
	if (st != DT_OK) {
		dt_plan_fini(plan);
		return st;
	}
	plan->n_servers = world_size - plan->dp_size * plan->pp_size *
			  plan->tp_size;
	plan->steps_per_epoch = -1;
	plan->samples_dropped = -1;
	plan->total_steps = -1;
	st = lay_out(job, plan, err);
	if (st == DT_OK)
		st = dt_plan_set_data(job, data != NULL ? data : &unknown_data,
				      plan, err);
	if (st != DT_OK)
		dt_plan_fini(plan);
	return st;
}

enum dt_status
dt_plan_set_data(const struct dt_job *job, const struct dt_plan_data *data,
		 struct dt_plan *plan, struct dt_error *err)
{
	char where[512];
	enum dt_status st;

	plan->data = *data;
	plan->steps_per_epoch = -1;
	plan->samples_dropped = -1;
	plan->total_steps = job->train.steps > 0 ? job->train.steps : -1;
	if (data->n_train >= 0) {
		plan->steps_per_epoch = dt_steps_per_epoch(
			data->n_train, plan->global_batch,
			&plan->samples_dropped);
		if (plan->steps_per_epoch < 1) {
			dt_job_where(job, "train.global_batch", where,
				     sizeof where);
			return dt_errorf(err, DT_ERR_PLAN, "%sglobal batch "
					 "%lld is larger than the %lld "
					 "training samples", where,
					 (long long)plan->global_batch,
					 (long long)data->n_train);
		}
		if (job->train.steps <= 0)
			plan->total_steps = job->train.epochs *
					    plan->steps_per_epoch;
	}
	if (plan->total_steps >= 0) {
		st = dt_plan_schedule(job, plan->total_steps,
				      &plan->lr_schedule, err);
		if (st != DT_OK)
			return st;
	}
	json_object_put(plan->desc);
	plan->desc = dt_plan_describe(job, plan);
	return DT_OK;
}

void
dt_plan_fini(struct dt_plan *plan)
{
	dt_model_free(plan->shapes);
	free(plan->stage_of_node);
	free(plan->stages);
	free(plan->in_flight);
	free(plan->ops);
	free(plan->sync);
	json_object_put(plan->desc);
	memset(plan, 0, sizeof *plan);
}
