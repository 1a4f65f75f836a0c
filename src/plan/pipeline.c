/* SPDX-License-Identifier: MIT */
/* pipeline.c - the rank grid and the pipeline schedules (see plan.h). */
#include "plan/plan.h"

#include <assert.h>

#include "plan/sync_plan.h"

void
dt_plan_position(const struct dt_plan *plan, int rank,
		 struct dt_grid_pos *pos)
{
	int pp = plan->pp_size > 0 ? plan->pp_size : 1;
	int tp = plan->tp_size > 0 ? plan->tp_size : 1;

	pos->tp = rank % tp;
	pos->stage = rank / tp % pp;
	pos->dp = rank / (tp * pp);
}

int
dt_plan_rank(const struct dt_plan *plan, int dp, int stage, int tp)
{
	int pp = plan->pp_size > 0 ? plan->pp_size : 1;
	int tps = plan->tp_size > 0 ? plan->tp_size : 1;

	return (dp * pp + stage) * tps + tp;
}

int
dt_plan_exact_accum(const struct dt_plan *plan)
{
	int tp = plan->tp_size > 0 ? plan->tp_size : 1;

	if (plan->world_size > plan->dp_size * tp *
	    (plan->pp_size > 0 ? plan->pp_size : 1))
		return 0;	/* parameter servers */
	return plan->grad_accum_steps > 1 || plan->dp_size * tp > 2;
}

enum dt_status
dt_plan_accum_schedule(const struct dt_job *job, const struct dt_plan *plan,
		       enum dt_accum_schedule *out, struct dt_error *err)
{
	enum dt_accum_schedule want = job->parallel.accum_schedule;
	int ps = job->parallel.sync == DT_SYNC_PARAMETER_SERVER;
	const char *why = NULL;
	char where[512];

	if (plan->pp_size > 1)
		why = "a pipeline runs its own micro-batch schedule "
		      "(parallel.schedule)";
	else if (plan->tp_size > 1)
		why = "tensor-parallel layers sum inside every micro-batch's "
		      "backward, in the depth-first order";
	else if (ps)
		why = "parameter servers take the whole gradient after the "
		      "last backward";
	if (want == DT_ACCUM_BREADTH_FIRST && why != NULL) {
		dt_job_where(job, "parallel.accum_schedule", where,
			     sizeof where);
		return dt_errorf(err, DT_ERR_PLAN, "%sbreadth_first applies "
				 "to plain data parallelism only (%s); use "
				 "auto or depth_first", where, why);
	}
	if (want == DT_ACCUM_AUTO)
		want = why == NULL && dt_plan_sync_overlap(job, plan) &&
		       plan->grad_accum_steps > 1 ?
		       DT_ACCUM_BREADTH_FIRST : DT_ACCUM_DEPTH_FIRST;
	*out = want;
	return DT_OK;
}

double
dt_plan_bubble(const struct dt_plan *plan)
{
	double pp = plan->pp_size, m = (double)plan->grad_accum_steps;

	if (plan->pp_size <= 1 || m < 1)
		return 0;
	return (pp - 1) / (m + pp - 1);
}

int64_t
dt_plan_in_flight(const struct dt_plan *plan, int stage)
{
	int64_t m = plan->grad_accum_steps, left = plan->pp_size - stage;

	if (plan->pp_size <= 1)
		return plan->accum_schedule == DT_ACCUM_BREADTH_FIRST ? m : 1;
	if (plan->pipe_schedule == DT_PIPE_GPIPE)
		return m;
	return left < m ? left : m;
}

const char *
dt_plan_in_flight_reason(const struct dt_plan *plan, int stage)
{
	if (plan->pp_size <= 1)
		return plan->accum_schedule == DT_ACCUM_BREADTH_FIRST ?
		       "breadth-first accumulation: every micro-batch's "
		       "forward before the backward" :
		       "each micro-batch's backward follows its forward";
	if (plan->pipe_schedule == DT_PIPE_GPIPE)
		return "GPipe: every micro-batch's forward before any "
		       "backward";
	if (plan->grad_accum_steps <= plan->pp_size - stage)
		return "1F1B: the step has no more micro-batches than the "
		       "stages from here to the last";
	return stage + 1 == plan->pp_size ?
	       "1F1B: the last stage runs each backward right after its "
	       "forward" :
	       "1F1B: the forwards that fill the stages after this one, "
	       "plus the one whose backward comes next";
}

void
dt_plan_pipe_ops(const struct dt_plan *plan, int stage, struct dt_pipe_op *ops)
{
	int64_t m = plan->grad_accum_steps, w, k = 0;

	if (plan->pp_size <= 1 &&
	    plan->accum_schedule != DT_ACCUM_BREADTH_FIRST) {
		for (int64_t i = 0; i < m; i++) {
			ops[k++] = (struct dt_pipe_op){ 0, i };
			ops[k++] = (struct dt_pipe_op){ 1, i };
		}
		return;
	}
	if (plan->pp_size <= 1 || plan->pipe_schedule == DT_PIPE_GPIPE) {
		for (int64_t i = 0; i < m; i++)
			ops[k++] = (struct dt_pipe_op){ 0, i };
		for (int64_t i = 0; i < m; i++)
			ops[k++] = (struct dt_pipe_op){ 1, i };
		return;
	}
	w = plan->pp_size - stage - 1;
	if (w > m)
		w = m;
	for (int64_t i = 0; i < w; i++)
		ops[k++] = (struct dt_pipe_op){ 0, i };
	for (int64_t i = 0; i + w < m; i++) {
		ops[k++] = (struct dt_pipe_op){ 0, w + i };
		ops[k++] = (struct dt_pipe_op){ 1, i };
	}
	for (int64_t i = m - w; i < m; i++)
		ops[k++] = (struct dt_pipe_op){ 1, i };
	assert(k == 2 * m);
}
