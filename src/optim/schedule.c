/* SPDX-License-Identifier: MIT */
/* schedule.c - learning-rate schedules; see schedule.h for the formulas
 * and their sources. */
#include "optim/schedule.h"

#include <assert.h>
#include <math.h>

double
dt_lr_at(const struct dt_lr_schedule *s, int64_t step)
{
	int64_t t, span;

	assert(step >= 0);
	if (step < s->warmup_steps)
		return s->lr * (double)(step + 1) / (double)s->warmup_steps;
	t = step - s->warmup_steps;

	switch (s->kind) {
	case DT_SCHED_CONSTANT:
		return s->lr;
	case DT_SCHED_STEP:
		/* Integer division: the rate drops on the step that
		 * completes each step_size block after the warmup. */
		return s->lr * pow(s->gamma, (double)(t / s->step_size));
	case DT_SCHED_COSINE:
		span = s->total_steps - s->warmup_steps;
		if (t >= span)
			return s->min_lr;
		return s->min_lr + (s->lr - s->min_lr) * 0.5 *
		       (1.0 + cos(M_PI * (double)t / (double)span));
	}
	return s->lr;
}

enum dt_status
dt_lr_schedule_check(const struct dt_lr_schedule *s, struct dt_error *err)
{
	if (!(s->lr > 0.0) || !isfinite(s->lr))
		return dt_errorf(err, DT_ERR_JOB,
				 "lr schedule: lr: must be a finite number > 0, "
				 "found %g", s->lr);
	if (s->warmup_steps < 0)
		return dt_errorf(err, DT_ERR_JOB,
				 "lr schedule: warmup_steps: must be >= 0, "
				 "found %lld", (long long)s->warmup_steps);
	switch (s->kind) {
	case DT_SCHED_CONSTANT:
		return DT_OK;
	case DT_SCHED_STEP:
		if (s->step_size <= 0)
			return dt_errorf(err, DT_ERR_JOB,
					 "lr schedule: step_size: must be > 0 "
					 "for a step schedule, found %lld",
					 (long long)s->step_size);
		if (!(s->gamma > 0.0 && s->gamma <= 1.0))
			return dt_errorf(err, DT_ERR_JOB,
					 "lr schedule: gamma: must be in (0, 1] "
					 "for a step schedule, found %g",
					 s->gamma);
		return DT_OK;
	case DT_SCHED_COSINE:
		if (s->total_steps <= s->warmup_steps)
			return dt_errorf(err, DT_ERR_JOB,
					 "lr schedule: total_steps: must be "
					 "greater than warmup_steps (%lld) for "
					 "a cosine schedule, found %lld",
					 (long long)s->warmup_steps,
					 (long long)s->total_steps);
		if (!(s->min_lr >= 0.0 && s->min_lr <= s->lr))
			return dt_errorf(err, DT_ERR_JOB,
					 "lr schedule: min_lr: must be in "
					 "[0, lr] = [0, %g], found %g", s->lr,
					 s->min_lr);
		return DT_OK;
	}
	return dt_errorf(err, DT_ERR_JOB, "lr schedule: unknown kind %d",
			 (int)s->kind);
}
