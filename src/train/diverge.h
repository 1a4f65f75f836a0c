/* SPDX-License-Identifier: MIT */
/* diverge.h - the divergence guard (train.on_divergence): a step whose
 * loss or gradient norm is far above what the run began with stops the
 * run, or is warned about, before its update is applied. Internal to
 * train/.
 *
 * Thresholds (DT_DIVERGE_*; dtrain-job(5), train.on_divergence):
 *   loss      > DT_DIVERGE_LOSS_K x max(early mean loss, ln(classes))
 *             (mse: DT_DIVERGE_LOSS_K x the early mean loss)
 *   grad norm > DT_DIVERGE_NORM_K x the early mean grad norm
 * where "early mean" is the mean over the first DT_DIVERGE_WINDOW
 * checked steps of the run (a resumed run carries it in its checkpoint),
 * and a step inside that window is checked against the steps before it.
 * The first checked step has none before it: it is counted, not judged,
 * so the guard judges from the second checked step on.
 * The ln(classes) floor is the loss of a uniform guess, so a model that
 * starts out no better than chance may move around it freely; a loss ten
 * times that is confidently wrong on almost every sample. */
#ifndef DT_TRAIN_DIVERGE_H
#define DT_TRAIN_DIVERGE_H

#include <stdint.h>
#include <stdio.h>

#include "job/job.h"
#include "util/status.h"

#define DT_DIVERGE_LOSS_K 10.0
#define DT_DIVERGE_NORM_K 100.0
#define DT_DIVERGE_WINDOW 20

/* The guard's state: the policy, the loss floor and the early sums.
 * Caller-owned (dt_diverge_init); nothing to free. */
struct dt_diverge {
	enum dt_on_divergence policy;
	double loss_floor;	/* ln(classes); 0 for mse */
	double loss_sum;	/* of the first loss_n (<= WINDOW) steps */
	int64_t loss_n;
	double norm_sum;	/* of the first norm_n (<= WINDOW) steps */
	int64_t norm_n;
	int warned;		/* warn: a warning was printed */
};

/* Sets up d for policy and a model with loss kind `loss` over n_classes
 * classes (ignored for mse), with empty early sums. */
void dt_diverge_init(struct dt_diverge *d, enum dt_on_divergence policy,
		     enum dt_loss_kind loss, int64_t n_classes);

/* Checks step `step` (1-based): loss is its mean loss per sample (or per
 * token), grad_norm its global gradient norm before clipping; either may
 * be NAN when not known at this step (not checked, not counted). Both
 * are finite otherwise (the non-finite guard runs first). A step within
 * the thresholds is added to the early sums while they are filling.
 * Over a threshold: policy abort returns DT_ERR_NUMERIC with a message
 * naming the step, the value, the threshold and how it was derived;
 * warn prints that once per run to `warn` (when not NULL) and returns
 * DT_OK; off returns DT_OK without looking. */
enum dt_status dt_diverge_check(struct dt_diverge *d, int64_t step,
				double loss, double grad_norm, FILE *warn,
				struct dt_error *err);

#endif
