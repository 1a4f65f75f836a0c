/* SPDX-License-Identifier: MIT */
/* schedule.h - learning-rate schedules as a pure function of the step.
 *
 * Constant, step decay (PyTorch's StepLR) and cosine decay (Loshchilov &
 * Hutter, "SGDR: Stochastic Gradient Descent with Warm Restarts", ICLR 2017,
 * one cycle without restarts), each with an optional linear warmup (Goyal
 * et al., "Accurate, Large Minibatch SGD", 2017). No state: a resumed run
 * asks for the step it is at and gets the same rate. */
#ifndef DT_OPTIM_SCHEDULE_H
#define DT_OPTIM_SCHEDULE_H

#include <stdint.h>

#include "util/status.h"

enum dt_sched_kind {
	DT_SCHED_CONSTANT = 0,
	DT_SCHED_STEP,
	DT_SCHED_COSINE,
};

/* A schedule. Steps count optimizer updates from 0; step s is the rate
 * used for update number s+1. */
struct dt_lr_schedule {
	enum dt_sched_kind kind;
	double lr;		/* base rate, > 0 */
	int64_t warmup_steps;	/* >= 0; 0 = no warmup */
	int64_t total_steps;	/* cosine: the whole run, warmup included */
	int64_t step_size;	/* step: updates between decays, > 0 */
	double gamma;		/* step: factor per decay, in (0, 1] */
	double min_lr;		/* cosine: the rate at total_steps, in [0, lr] */
};

/* The learning rate at step (>= 0):
 *   warmup, step < W:  lr * (step + 1) / W     (lr/W at step 0, lr at W-1)
 * and after it, with t = step - W:
 *   constant:          lr
 *   step:              lr * gamma^floor(t / step_size)
 *   cosine:            min_lr + (lr - min_lr) * (1 + cos(pi * t / (T - W))) / 2
 *                      for t < T - W (T = total_steps), min_lr from then on.
 * The decay starts when the warmup ends, so the rate is continuous there.
 * s must have passed dt_lr_schedule_check. */
double dt_lr_at(const struct dt_lr_schedule *s, int64_t step);

/* Checks the fields the kind uses (ranges as commented above). Returns
 * DT_OK, or DT_ERR_JOB with "lr schedule: FIELD: must be ..., found ..." in
 * err. */
enum dt_status dt_lr_schedule_check(const struct dt_lr_schedule *s,
				    struct dt_error *err);

#endif
