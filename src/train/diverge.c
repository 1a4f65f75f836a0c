/* SPDX-License-Identifier: MIT */
/* diverge.c - the divergence guard (diverge.h).
 *
 * A loss spike test against the run's own early level, the heuristic
 * large-batch trainers use to catch a blown-up run (a fixed multiple of a
 * reference loss), with the uniform-guess loss ln(classes) as a floor for
 * cross-entropy so that a run that starts near chance is not held to its
 * first lucky batches. */
#include "train/diverge.h"

#include <math.h>
#include <string.h>

void
dt_diverge_init(struct dt_diverge *d, enum dt_on_divergence policy,
		enum dt_loss_kind loss, int64_t n_classes)
{
	memset(d, 0, sizeof *d);
	d->policy = policy;
	if (loss == DT_LOSS_SOFTMAX_CROSS_ENTROPY && n_classes > 1)
		d->loss_floor = log((double)n_classes);
}

/* The loss threshold, or +inf while there is no early mean yet: the
 * run's first checked step sets the reference and is not judged (the
 * floor alone would stop a model whose untrained loss is high, before
 * it has taken a single update). */
static double
loss_threshold(const struct dt_diverge *d, double *mean)
{
	*mean = d->loss_n > 0 ? d->loss_sum / (double)d->loss_n : NAN;
	if (d->loss_n == 0)
		return INFINITY;
	return DT_DIVERGE_LOSS_K * (d->loss_n > 0 && *mean > d->loss_floor ?
				    *mean : d->loss_floor);
}

static enum dt_status
tripped(struct dt_diverge *d, const char *what, FILE *warn,
	struct dt_error *err)
{
	if (d->policy == DT_DIVERGENCE_WARN) {
		if (warn != NULL && !d->warned)
			fprintf(warn, "dtrain: warning: %s; going on "
				"(train.on_divergence: warn; this warning is "
				"not repeated)\n", what);
		d->warned = 1;
		return DT_OK;
	}
	return dt_errorf(err, DT_ERR_NUMERIC, "%s: the run is diverging; "
			 "stopping without a checkpoint of this state (lower "
			 "train.lr, or set train.on_divergence: warn or off)",
			 what);
}

enum dt_status
dt_diverge_check(struct dt_diverge *d, int64_t step, double loss,
		 double grad_norm, FILE *warn, struct dt_error *err)
{
	char what[512];
	double mean, limit;
	int bad_loss = 0, bad_norm = 0;

	if (d->policy == DT_DIVERGENCE_OFF)
		return DT_OK;
	if (!isnan(loss)) {
		limit = loss_threshold(d, &mean);
		bad_loss = loss > limit;
		if (bad_loss) {
			if (d->loss_floor > 0)
				snprintf(what, sizeof what, "step %lld: loss "
					 "%g above the divergence threshold %g "
					 "(%g x max(early mean %g, ln(classes) "
					 "%g))", (long long)step, loss, limit,
					 DT_DIVERGE_LOSS_K, mean,
					 d->loss_floor);
			else
				snprintf(what, sizeof what, "step %lld: loss "
					 "%g above the divergence threshold %g "
					 "(%g x the early mean %g)",
					 (long long)step, loss, limit,
					 DT_DIVERGE_LOSS_K, mean);
			return tripped(d, what, warn, err);
		}
	}
	if (!isnan(grad_norm) && d->norm_n > 0) {
		mean = d->norm_sum / (double)d->norm_n;
		limit = DT_DIVERGE_NORM_K * mean;
		bad_norm = grad_norm > limit && mean > 0;
		if (bad_norm) {
			snprintf(what, sizeof what, "step %lld: gradient norm "
				 "%g above the divergence threshold %g (%g x "
				 "the early mean %g)", (long long)step,
				 grad_norm, limit, DT_DIVERGE_NORM_K, mean);
			return tripped(d, what, warn, err);
		}
	}
	if (!isnan(loss) && d->loss_n < DT_DIVERGE_WINDOW) {
		d->loss_sum += loss;
		d->loss_n++;
	}
	if (!isnan(grad_norm) && d->norm_n < DT_DIVERGE_WINDOW) {
		d->norm_sum += grad_norm;
		d->norm_n++;
	}
	return DT_OK;
}
