/* SPDX-License-Identifier: MIT */
/* eval.c - evaluation over the whole eval set (eval.h). */
#include "train/eval.h"

enum dt_status
dt_eval_run(struct dt_run *r, double *loss, double *accuracy,
	    struct dt_error *err)
{
	int64_t n = r->eval.n, dp = r->plan.dp_size;
	int64_t replica = r->layout.grid.dp;
	int64_t lo = n * replica / dp, hi = n * (replica + 1) / dp;
	double sums[2] = { 0, 0 };	/* loss sum, correct count */
	double per = (double)n * (double)r->labels_per_sample;
	enum dt_status st = dt_exec_eval(r, lo, hi, sums, err);

	if (st == DT_OK)
		st = dt_comm_allreduce_sum_f64(dt_grad_sync_workers(r->sync),
					       sums, 2, err);
	if (st != DT_OK)
		return st;
	*loss = sums[0] / per;
	*accuracy = sums[1] / per;
	return DT_OK;
}
