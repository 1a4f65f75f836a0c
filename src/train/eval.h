/* SPDX-License-Identifier: MIT */
/* eval.h - evaluation over the whole eval set. Internal to train/. */
#ifndef DT_TRAIN_EVAL_H
#define DT_TRAIN_EVAL_H

#include "train/state.h"

/* Mean loss (per sample, or per token for a language model) and accuracy
 * over the whole eval set (collective over the workers): each
 * data-parallel replica takes a contiguous share, runs it through the
 * executor (dt_exec_eval), and the sums are all-reduced. Errors:
 * DT_ERR_MPI. */
enum dt_status dt_eval_run(struct dt_run *r, double *loss, double *accuracy,
			   struct dt_error *err);

#endif
