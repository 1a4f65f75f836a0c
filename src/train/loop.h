/* SPDX-License-Identifier: MIT */
/* loop.h - the training loop's cadence: one optimizer step after
 * another, and between them the log lines, evaluations, checkpoints and
 * the stop on a signal. Internal to train/. */
#ifndef DT_TRAIN_LOOP_H
#define DT_TRAIN_LOOP_H

#include "train/state.h"
#include "train/train.h"

/* Trains r from its position to the end of the plan (collective over the
 * workers). Fills res's steps, samples, train_loss, wall_s,
 * samples_per_s and skipped_steps. DT_ERR_NUMERIC for a non-finite step
 * under train.on_nonfinite abort or a diverging one under
 * train.on_divergence abort (diverge.h; before its update, with no
 * checkpoint of it), DT_ERR_INTERRUPTED after the
 * checkpoint of a signal; a failure inside a step ends the job
 * (dt_run_die). */
enum dt_status dt_loop_run(struct dt_run *r, struct dt_train_result *res,
			   struct dt_error *err);

#endif
