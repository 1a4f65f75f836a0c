/* train.h - the training loop and what a person sees of it.
 *
 * One call runs a whole job on the ranks of a communicator: it resolves the
 * plan, prepares the run directory (rank 0), loads the data (every rank, the
 * whole file, then reads only its slice of each global batch), builds the
 * model and optimizer, and steps: per optimizer step each data-parallel rank
 * runs grad_accum_steps micro-batches, the gradients are summed with one
 * all-reduce, and every rank applies the same update, so parameters stay
 * identical on every rank. */
#ifndef DT_TRAIN_TRAIN_H
#define DT_TRAIN_TRAIN_H

#include <stdint.h>

#include "dist/comm.h"
#include "job/job.h"
#include "util/status.h"

struct dt_run_opts {
	const char *run_dir;	/* NULL: runs/<job name> */
	int progress;		/* 1: progress line (rank 0 on a TTY) */
};

/* What a finished run reports (identical on every rank). */
struct dt_train_result {
	int64_t steps;
	int64_t samples;
	double train_loss;	/* mean loss over the last log window */
	double eval_loss;	/* mean over the whole eval set; NAN if none */
	double eval_accuracy;
	double wall_s;
	double samples_per_s;
};

/* Runs job on every rank of comm (collective). Writes, from rank 0, into the
 * run directory: job.yaml (the resolved job), metrics.jsonl (one JSON line
 * per logged step and per evaluation) and, at the end, summary.json.
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
