/* SPDX-License-Identifier: MIT */
/* best.c - the best evaluation, its checkpoint and early stopping
 * (best.h).
 *
 * Early stopping as in Prechelt, "Early Stopping - But When?" (Neural
 * Networks: Tricks of the Trade, 1998): stop once the monitored value
 * has not improved for `patience` evaluations in a row; the run's best
 * parameters are then those of the kept best checkpoint. Only a strictly
 * better value is an improvement, and a value that is not finite never
 * is. */
#include "train/best.h"

#include <errno.h>
#include <json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "train/state.h"
#include "util/jsonnum.h"

static const char *const monitor_words[] = {
	[DT_MONITOR_LOSS] = "loss",
	[DT_MONITOR_ACCURACY] = "accuracy",
	[DT_MONITOR_PERPLEXITY] = "perplexity",
};

void
dt_best_init(struct dt_best *b)
{
	memset(b, 0, sizeof *b);
	b->value = NAN;
	b->step = -1;
	b->eval_step = -1;
	b->eval_loss = b->eval_accuracy = NAN;
	b->stopped_at = -1;
}

static int
in_use(const struct dt_job *job)
{
	return job->eval.keep_best || job->eval.patience > 0;
}

enum dt_status
dt_best_check(const struct dt_run *r, struct dt_error *err)
{
	const struct dt_job *job = r->job;
	const char *key = job->eval.keep_best ? "eval.keep_best" :
			  "eval.patience";
	char where[DT_JOB_PATH_MAX + 64];

	if (!in_use(job) || r->have_eval)
		return DT_OK;
	dt_job_where(job, key, where, sizeof where);
	return dt_errorf(err, DT_ERR_JOB, "%sneeds an evaluation split "
			 "(data.eval, or data.eval_fraction for tokens and "
			 "text)", where);
}

/* The monitored value of an evaluation. */
static double
monitored(const struct dt_job *job, double loss, double accuracy)
{
	switch (job->eval.monitor) {
	case DT_MONITOR_ACCURACY:
		return accuracy;
	case DT_MONITOR_PERPLEXITY:
		return exp(loss);
	case DT_MONITOR_LOSS:
	default:
		return loss;
	}
}

static int
better(const struct dt_job *job, double v, const struct dt_best *b)
{
	if (!isfinite(v))
		return 0;
	if (b->step < 0)
		return 1;
	return job->eval.monitor == DT_MONITOR_ACCURACY ? v > b->value :
	       v < b->value;
}

/* The best checkpoint's directory: CKPT_DIR/best. */
static enum dt_status
best_dir(const struct dt_run *r, char *buf, size_t size, struct dt_error *err)
{
	int n = snprintf(buf, size, "%s/best", r->ckpt_dir);

	if (n < 0 || (size_t)n >= size)
		return dt_errorf(err, DT_ERR_IO, "%s/best: path too long",
				 r->ckpt_dir);
	return DT_OK;
}

enum dt_status
dt_best_after_eval(struct dt_run *r, double loss, double accuracy,
		   struct dt_error *err)
{
	const struct dt_job *job = r->job;
	struct dt_best *b = &r->best;
	double v = monitored(job, loss, accuracy);
	char dir[DT_JOB_PATH_MAX + 16];
	enum dt_status st;

	b->eval_step = r->position.step;
	b->eval_loss = loss;
	b->eval_accuracy = accuracy;
	if (!in_use(job))
		return DT_OK;
	if (!better(job, v, b)) {
		b->bad_evals++;
		return DT_OK;
	}
	b->value = v;
	b->step = r->position.step;
	b->bad_evals = 0;
	if (!job->eval.keep_best)
		return DT_OK;
	st = best_dir(r, dir, sizeof dir, err);
	if (st != DT_OK)
		return st;	/* every rank alike */
	/* The checkpoint directory's parent exists (the run directory or
	 * checkpoint.dir's); the directory itself may not yet. A failure
	 * here shows up, agreed on, as the save's. */
	if (r->rank == 0 && mkdir(r->ckpt_dir, 0777) != 0 && errno != EEXIST)
		fprintf(stderr, "dtrain: warning: %s: %s\n", r->ckpt_dir,
			strerror(errno));
	return dt_run_checkpoint_to(r, dir, 1, err);
}

int
dt_best_should_stop(const struct dt_run *r)
{
	return r->job->eval.patience > 0 &&
	       r->best.bad_evals >= r->job->eval.patience;
}

void
dt_best_say_stop(const struct dt_run *r)
{
	const struct dt_best *b = &r->best;

	if (r->rank != 0)
		return;
	fprintf(stderr, "dtrain: early stop at step %lld: eval %s has not "
		"improved on %.6g (step %lld) for %lld evaluations "
		"(eval.patience)\n", (long long)r->position.step,
		monitor_words[r->job->eval.monitor], b->value,
		(long long)b->step, (long long)b->bad_evals);
}

int
dt_best_stop_now(struct dt_run *r)
{
	if (!dt_best_should_stop(r))
		return 0;
	r->best.stopped_at = r->position.step;
	dt_best_say_stop(r);
	return 1;
}

void
dt_best_meta_put(const struct dt_best *b, struct dt_ckpt_scalar *extra)
{
	snprintf(extra[0].key, sizeof extra[0].key, "best_value");
	extra[0].type = DT_CKPT_DOUBLE;
	extra[0].d = b->value;
	snprintf(extra[1].key, sizeof extra[1].key, "best_step");
	extra[1].type = DT_CKPT_INT64;
	extra[1].i = b->step;
	snprintf(extra[2].key, sizeof extra[2].key, "best_bad_evals");
	extra[2].type = DT_CKPT_INT64;
	extra[2].i = b->bad_evals;
}

void
dt_best_meta_get(struct dt_best *b, const struct dt_ckpt_meta *meta)
{
	dt_best_init(b);
	for (size_t i = 0; i < meta->n_extra; i++) {
		const struct dt_ckpt_scalar *e = &meta->extra[i];

		if (strcmp(e->key, "best_value") == 0)
			b->value = e->d;
		else if (strcmp(e->key, "best_step") == 0)
			b->step = e->i;
		else if (strcmp(e->key, "best_bad_evals") == 0)
			b->bad_evals = e->i;
	}
}

void
dt_best_summary(const struct dt_run *r, struct json_object *o)
{
	const struct dt_job *job = r->job;
	const struct dt_best *b = &r->best;
	struct json_object *best, *stop;
	char dir[DT_JOB_PATH_MAX + 16], path[DT_JOB_PATH_MAX + 48];

	if (!in_use(job))
		return;
	best = json_object_new_object();
	json_object_object_add(best, "monitor", json_object_new_string(
				       monitor_words[job->eval.monitor]));
	json_object_object_add(best, "value", b->step >= 0 ?
			       dt_json_float(b->value) : NULL);
	json_object_object_add(best, "step", b->step >= 0 ?
			       json_object_new_int64(b->step) : NULL);
	path[0] = '\0';
	if (job->eval.keep_best && b->step >= 0 &&
	    (best_dir(r, dir, sizeof dir, NULL) != DT_OK ||
	     dt_ckpt_path(path, sizeof path, dir, b->step, NULL) != DT_OK))
		path[0] = '\0';
	json_object_object_add(best, "checkpoint", path[0] != '\0' ?
			       json_object_new_string(path) : NULL);
	json_object_object_add(o, "best", best);
	if (job->eval.patience <= 0)
		return;
	stop = NULL;
	if (b->stopped_at >= 0) {
		char why[256];

		snprintf(why, sizeof why, "eval %s did not improve on step "
			 "%lld's for %lld evaluations (eval.patience)",
			 monitor_words[job->eval.monitor], (long long)b->step,
			 (long long)b->bad_evals);
		stop = json_object_new_object();
		json_object_object_add(stop, "step",
				       json_object_new_int64(b->stopped_at));
		json_object_object_add(stop, "reason",
				       json_object_new_string(why));
	}
	json_object_object_add(o, "early_stop", stop);
}
