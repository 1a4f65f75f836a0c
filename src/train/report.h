/* SPDX-License-Identifier: MIT */
/* report.h - what the ranks tell each other once per optimizer step.
 * Internal to train/. */
#ifndef DT_TRAIN_REPORT_H
#define DT_TRAIN_REPORT_H

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

#endif
