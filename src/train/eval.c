/* SPDX-License-Identifier: MIT */
/* eval.c - evaluation over the eval set, bounded by eval.max_batches,
 * and stopped by a signal between its pieces (eval.h). */
#include "train/eval.h"

#include <math.h>

#include <signal.h>
#include <stdlib.h>

#include "train/signals.h"

/* Progress reports per evaluation, about: the share is run in as many
 * pieces of whole micro-batches. */
#define EVAL_PIECES 50

int64_t
dt_eval_samples(const struct dt_run *r)
{
	int64_t n = r->eval.n, max = r->job->eval.max_batches;

	if (max > 0 && max <= n / r->plan.global_batch)
		return max * r->plan.global_batch;
	return n;
}

/* Test aid, documented in dtrain(1): DTRAIN_TEST_SIGNAL_IN_EVAL=R makes
 * rank R send itself SIGTERM once an evaluation has begun (after its
 * first piece), so tests can stop one through the real signal path. */
static void
test_signal_hook(const struct dt_run *r)
{
	const char *v = getenv("DTRAIN_TEST_SIGNAL_IN_EVAL");

	if (v != NULL && *v != '\0' && strtol(v, NULL, 10) == r->rank)
		raise(SIGTERM);
}

/* Whether any worker has been asked to stop (collective: every worker
 * calls it after the same piece). */
static enum dt_status
stop_asked(struct dt_run *r, int *stop, struct dt_error *err)
{
	*stop = dt_signals_pending() != 0;
	return dt_comm_allreduce_max_int(dt_grad_sync_workers(r->sync), stop,
					 1, err);
}

/* The micro-batches replica q runs in piece k of an evaluation of n
 * samples (dt_eval_run's cut: pieces of piece samples from the start
 * of q's share). */
static int64_t
piece_batches(const struct dt_run *r, int64_t n, int64_t q, int64_t k,
	      int64_t piece)
{
	int64_t dp = r->plan.dp_size, mb = r->plan.micro_batch;
	int64_t lo = n * q / dp, hi = n * (q + 1) / dp;
	int64_t i = lo + k * piece, end = hi - i < piece ? hi : i + piece;

	return i < hi ? (end - i + mb - 1) / mb : 0;
}

/* parallel.zero: 3 gathers each node's parameters before its forward,
 * collective over the data-parallel ranks: a replica with fewer
 * micro-batches in piece k than the most any has makes the gathers of
 * the forwards it lacks (dt_grad_sync_forward_idle), so every one makes
 * as many. Shares differ by at most one sample, so by at most one
 * forward. */
static void
forward_idle(struct dt_run *r, int64_t n, int64_t k, int64_t piece)
{
	int64_t most = 0, mine;

	if (!dt_grad_sync_params_parted(r->sync))
		return;
	for (int64_t q = 0; q < r->plan.dp_size; q++) {
		int64_t b = piece_batches(r, n, q, k, piece);

		most = b > most ? b : most;
	}
	mine = piece_batches(r, n, r->layout.grid.dp, k, piece);
	for (int64_t j = mine; j < most; j++)
		dt_grad_sync_forward_idle(r->sync);
}

enum dt_status
dt_eval_run(struct dt_run *r, double *loss, double *accuracy,
	    struct dt_error *err)
{
	int64_t n = dt_eval_samples(r), dp = r->plan.dp_size;
	int64_t replica = r->layout.grid.dp, mb = r->plan.micro_batch;
	int64_t lo = n * replica / dp, hi = n * (replica + 1) / dp;
	/* Whole micro-batches, the same on every rank: the micro-batches,
	 * and so the sums, are those of one call over [lo, hi). The pieces
	 * are cut from the largest share, so that every worker runs as
	 * many of them and meets the others after each to learn of a stop
	 * (a worker whose share is done runs nothing more). */
	int64_t share = (n + dp - 1) / dp;
	int64_t piece = (share / EVAL_PIECES / mb + 1) * mb;
	int64_t pieces = share > 0 ? (share + piece - 1) / piece : 1;
	double sums[2] = { 0, 0 };	/* loss sum, correct count */
	double per = (double)n * (double)r->labels_per_sample;
	enum dt_status st = DT_OK;
	int stop = 0;

	/* Rank 0's share stands for all: "eval 3200/10000". */
	dt_progress_task_begin(&r->progress, "eval", n, 0);
	for (int64_t k = 0; k < pieces && st == DT_OK && !stop; k++) {
		int64_t i = lo + k * piece;
		int64_t end = hi - i < piece ? hi : i + piece;

		/* At least one call, for an empty share too (it ends the
		 * stage's transfers as before). */
		if (i < hi || k == 0)
			st = dt_exec_eval(r, i < hi ? i : hi, end, sums, err);
		if (st == DT_OK)
			forward_idle(r, n, k, piece);
		if (st == DT_OK && hi > lo)
			dt_progress_task_update(&r->progress, end >= hi ? n :
						(end - lo) * n / (hi - lo));
		if (k == 0)
			test_signal_hook(r);
		if (st == DT_OK)
			st = stop_asked(r, &stop, err);
	}
	dt_progress_task_end(&r->progress);
	if (st == DT_OK && stop)
		return dt_errorf(err, DT_ERR_INTERRUPTED, "stopped by a signal "
				 "during the evaluation");
	if (st == DT_OK)
		st = dt_comm_allreduce_sum_f64(dt_grad_sync_workers(r->sync),
					       sums, 2, err);
	if (st != DT_OK)
		return st;
	*loss = sums[0] / per;
	/* A regression has nothing to be right about. */
	*accuracy = dt_loss_is_regression(r->job->model.loss) ? NAN :
		    sums[1] / per;
	return DT_OK;
}
