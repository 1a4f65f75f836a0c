/* SPDX-License-Identifier: MIT */
/* eval.c - evaluation over the whole eval set (eval.h). */
#include "train/eval.h"

/* Progress reports per evaluation, about: the share is run in as many
 * pieces of whole micro-batches. */
#define EVAL_PIECES 50

enum dt_status
dt_eval_run(struct dt_run *r, double *loss, double *accuracy,
	    struct dt_error *err)
{
	int64_t n = r->eval.n, dp = r->plan.dp_size;
	int64_t replica = r->layout.grid.dp, mb = r->plan.micro_batch;
	int64_t lo = n * replica / dp, hi = n * (replica + 1) / dp;
	/* Whole micro-batches, the same on every rank: the micro-batches,
	 * and so the sums, are those of one call over [lo, hi). */
	int64_t piece = ((hi - lo) / EVAL_PIECES / mb + 1) * mb;
	double sums[2] = { 0, 0 };	/* loss sum, correct count */
	double per = (double)n * (double)r->labels_per_sample;
	enum dt_status st = DT_OK;

	/* Rank 0's share stands for all: "eval 3200/10000". */
	dt_progress_task_begin(&r->progress, "eval", n, 0);
	/* At least one call, for an empty share too (it ends the stage's
	 * transfers as before). */
	for (int64_t i = lo; st == DT_OK; i += piece) {
		int64_t end = hi - i < piece ? hi : i + piece;

		st = dt_exec_eval(r, i, end, sums, err);
		dt_progress_task_update(&r->progress, end >= hi ? n :
					(end - lo) * n / (hi - lo));
		if (end >= hi)
			break;
	}
	dt_progress_task_end(&r->progress);
	if (st == DT_OK)
		st = dt_comm_allreduce_sum_f64(dt_grad_sync_workers(r->sync),
					       sums, 2, err);
	if (st != DT_OK)
		return st;
	*loss = sums[0] / per;
	*accuracy = sums[1] / per;
	return DT_OK;
}
