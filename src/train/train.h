/* SPDX-License-Identifier: MIT */
/* train.h - the training run and what a person sees of it.
 *
 * One call runs a whole job on the ranks of a communicator: it builds the
 * plan (plan.h, dt_plan_build), lays this rank out in it and builds its
 * model (the whole model, or its pipeline stage and tensor slice), loads
 * the data (every rank, the whole file, then reads only its slice of each
 * global batch), and steps: per optimizer step each rank runs its part of
 * the plan's schedule of micro-batches (exec.h), the gradient sync
 * (sync.h) sums the gradients over the ranks that share them, and every
 * rank applies the same update to what it holds. */
#ifndef DT_TRAIN_TRAIN_H
#define DT_TRAIN_TRAIN_H

#include <stdint.h>

#include "comm/comm.h"
#include "job/job.h"
#include "util/status.h"

struct dt_run_opts {
	const char *run_dir;	/* NULL: runs/<job name> */
	int progress;		/* 1: progress line (rank 0 on a TTY) */
	int resume;		/* 1: continue the run in run_dir from its
				 * newest valid checkpoint (from the start if
				 * it has none) instead of starting afresh */
	int start_over;		/* resume: start from step 0 although the run
				 * has trained and has no usable checkpoint
				 * (refused otherwise) */
	int64_t tcp_eager;	/* Open MPI's TCP eager limit the caller set
				 * before MPI started (dt_comm_mpi_tcp_eager),
				 * bytes; 0: Open MPI's own; -1: the
				 * environment's. The first lines and
				 * summary.json say it. */
};

/* What a finished run reports (identical on every rank). */
struct dt_train_result {
	int64_t steps;		/* the whole run's, resumed parts included */
	int64_t samples;	/* the whole run's */
	int64_t session_steps;	/* this run or resume's alone */
	int64_t session_samples;	/* this run or resume's alone */
	double train_loss;	/* mean loss over the last log window */
	double eval_loss;	/* mean over the whole eval set; NAN if none */
	double eval_accuracy;
	double wall_s;		/* this session's training, seconds */
	double samples_per_s;	/* session_samples / wall_s */
	int64_t skipped_steps;	/* updates dropped for non-finite values */
	int64_t resumed_from;	/* checkpoint step resumed from, -1 if none */
	int already_done;	/* resumed with nothing to do, nothing
				 * trained or written: 1 at or past the
				 * last step, 2 stopped early
				 * (eval.patience still used up) */
};

/* Runs job on every rank of comm (collective). Writes, from rank 0, into the
 * run directory: job.yaml (the resolved job), metrics.jsonl (one JSON line
 * per logged step and per evaluation), checkpoints on the job's cadence
 * (checkpoint.*) and, at the end, summary.json.
 * With opts->resume the newest checkpoint that verifies is loaded by rank 0
 * and broadcast (a newer one that fails is named on stderr and skipped),
 * metrics.jsonl is cut back to the checkpoint's step, and training goes on
 * exactly as if never stopped: same updates, same data order, same
 * metrics. The data position is kept in samples, so a resume at another
 * data-parallel degree sees every sample of the epoch once.
 * SIGINT/SIGTERM on any rank: every rank finishes the step, a checkpoint is
 * written, and DT_ERR_INTERRUPTED is returned (exit code 3).
 * A non-finite loss or gradient returns DT_ERR_NUMERIC naming the step (and
 * the rank whose loss it was) with train.on_nonfinite = abort, never
 * checkpointing it; with skip_step the update is dropped and counted.
 * A finite loss or gradient norm far above the run's early level
 * (train.on_divergence abort, train/diverge.h) returns DT_ERR_NUMERIC
 * likewise. A plan that does not fit this node's memory returns
 * DT_ERR_PLAN before anything is allocated or written (memcheck.h).
 * Returns DT_OK and fills *res; DT_ERR_EXISTS if the run directory already
 * holds results (nothing is written); DT_ERR_PLAN for an impossible batch
 * layout; DT_ERR_IO / DT_ERR_FORMAT / DT_ERR_DATA when a rank cannot load
 * its data. Failures that one rank finds are agreed on collectively: the
 * failing rank prints its message to stderr prefixed with "rank R: " and
 * gets an empty err->msg; the other ranks get "rank R failed". Failures in
 * the middle of a step end the job with MPI_Abort. */
enum dt_status dt_train_run(const struct dt_job *job,
			    const struct dt_run_opts *opts,
			    struct dt_comm *comm, struct dt_train_result *res,
			    struct dt_error *err);

#endif
