/* SPDX-License-Identifier: MIT */
/* eval.h - evaluation over the whole eval set. Internal to train/. */
#ifndef DT_TRAIN_EVAL_H
#define DT_TRAIN_EVAL_H

#include "train/state.h"

/* The samples an evaluation scores: the first eval.max_batches x the
 * global batch of the eval split, or all of it when it is smaller or
 * eval.max_batches is 0. Needs the plan and the data loaded. */
int64_t dt_eval_samples(const struct dt_run *r);

/* Mean loss (per sample, or per token for a language model) and accuracy
 * over the first dt_eval_samples(r) samples of the eval set (collective
 * over the workers): each data-parallel replica takes a contiguous share,
 * runs it through the executor (dt_exec_eval) in pieces, and the sums are
 * all-reduced. After each piece the workers learn whether any of them got
 * SIGINT or SIGTERM (signals.h); if so every one stops there and returns
 * DT_ERR_INTERRUPTED, *loss and *accuracy untouched, the model as it was.
 * Other errors: DT_ERR_MPI. */
enum dt_status dt_eval_run(struct dt_run *r, double *loss, double *accuracy,
			   struct dt_error *err);

#endif
