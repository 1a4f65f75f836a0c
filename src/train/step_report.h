/* SPDX-License-Identifier: MIT */
/* step_report.h - what the ranks tell each other once per optimizer step.
 * Internal to train/. */
#ifndef DT_TRAIN_STEP_REPORT_H
#define DT_TRAIN_STEP_REPORT_H

/* One step's report, summed over the ranks that train by one MPI_SUM
 * all-reduce of its doubles (in this order). Each rank adds its share:
 * the loss of the samples it
 * ran, whether it got a signal, rank 0's checkpoint clock, and, for a
 * model cut into stages, the squared norms of its stage's tensors. */
struct dt_step_report {
	double loss_sum;	/* sum of per-sample (per-token) losses */
	double stop;		/* > 0: SIGINT/SIGTERM on some rank */
	double ckpt_due;	/* > 0: checkpoint.every_seconds is up */
	double tensor_norm2[];	/* (n_norms) each tensor's squared
				 * gradient norm, in model order */
};

/* The doubles before tensor_norm2: a report with n norms is
 * DT_STEP_REPORT_FIXED + n doubles. */
enum { DT_STEP_REPORT_FIXED = 3 };

/* Where one rank's wall-clock time went (seconds of CLOCK_MONOTONIC) over
 * a log window or a whole run. The parts do not overlap; what is in none
 * of them (evaluation, checkpoints, writing the log line) is not counted.
 * Four doubles in this order, so that it travels as a (4) vector. */
struct dt_time_breakdown {
	double compute_s;	/* the executor's forward and backward passes,
				 * pipeline sends and tensor-parallel sums
				 * included, data_wait_s excluded */
	double comm_wait_s;	/* exposed communication: blocked in the
				 * gradient sync's finish and the step
				 * report's all-reduce */
	double data_wait_s;	/* waiting for the next micro-batch (the
				 * loader's queue, or the gather) */
	double optim_s;		/* gradient norm, clipping, the update */
};

/* The doubles of struct dt_time_breakdown. */
enum { DT_TIME_PARTS = 4 };
_Static_assert(sizeof(struct dt_time_breakdown) ==
	       DT_TIME_PARTS * sizeof(double), "a breakdown is a (4) vector");

/* One worker's row of the table the loop gathers on logged steps: its
 * world rank, then its window's and its run's breakdowns. */
enum { DT_RANK_TIMES = 1 + 2 * DT_TIME_PARTS };

#endif
