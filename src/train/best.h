/* SPDX-License-Identifier: MIT */
/* best.h - the best evaluation so far: eval.keep_best (its checkpoint
 * kept apart) and eval.patience (early stopping), judged by
 * eval.monitor. Internal to train/. */
#ifndef DT_TRAIN_BEST_H
#define DT_TRAIN_BEST_H

#include <stdint.h>

#include "ckpt/ckpt.h"
#include "util/status.h"

struct dt_run;
struct json_object;

/* What a run knows of its evaluations; the same on every rank (the
 * evaluations are), saved in each checkpoint's meta and restored. */
struct dt_best {
	double value;		/* best monitored value; meaningless while
				 * step < 0 */
	int64_t step;		/* its step; -1: no finite evaluation yet */
	int64_t bad_evals;	/* evaluations since it without improvement */
	int64_t eval_step;	/* step of the last evaluation, -1: none */
	double eval_loss, eval_accuracy;	/* its results */
	int64_t stopped_at;	/* the step eval.patience ended the run at,
				 * -1: it did not */
};

/* The number of extra checkpoint scalars dt_best_meta_put writes. */
#define DT_BEST_N_EXTRA 3

/* No evaluation yet. */
void dt_best_init(struct dt_best *b);

/* DT_ERR_JOB naming eval.keep_best or eval.patience when one is set and
 * the run has no eval split (r->have_eval 0); else DT_OK. */
enum dt_status dt_best_check(const struct dt_run *r, struct dt_error *err);

/* After an evaluation at r's step with these results (collective over
 * the workers, as dt_run_checkpoint): counts it against the best and,
 * with eval.keep_best and a better value, writes the checkpoint of this
 * step into CKPT_DIR/best (keeping only it there). Rank 0 says on stderr
 * when eval.patience is used up. DT_ERR_* of the checkpoint. */
enum dt_status dt_best_after_eval(struct dt_run *r, double loss,
				  double accuracy, struct dt_error *err);

/* Whether eval.patience is used up: patience > 0 and as many evaluations
 * in a row without improvement. */
int dt_best_should_stop(const struct dt_run *r);

/* Rank 0: the early-stop line on stderr (the step, the best value and
 * its step, the evaluations without improvement). */
void dt_best_say_stop(const struct dt_run *r);

/* The loop's question after an evaluation: when dt_best_should_stop,
 * records the step as the one the run stopped at, says so
 * (dt_best_say_stop) and returns 1; else 0. */
int dt_best_stop_now(struct dt_run *r);

/* The checkpoint scalars of b into extra[0 .. DT_BEST_N_EXTRA). */
void dt_best_meta_put(const struct dt_best *b, struct dt_ckpt_scalar *extra);

/* b from a loaded checkpoint's meta (no evaluation yet when it has none
 * of the scalars: a checkpoint of an older dtrain). */
void dt_best_meta_get(struct dt_best *b, const struct dt_ckpt_meta *meta);

/* Rank 0: summary.json's "best" ({"monitor", "value", "step",
 * "checkpoint" or null}, with eval.keep_best or eval.patience) and
 * "early_stop" ({"step", "reason"} or null, with eval.patience) into o. */
void dt_best_summary(const struct dt_run *r, struct json_object *o);

#endif
