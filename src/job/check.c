/* SPDX-License-Identifier: MIT */
/* check.c - the checks that need more than one key, run once the file and
 * every --set are applied: keys used only with some value of another key
 * (data.header with format csv), keys required only then, then the rules
 * of each section in schema order, so the first complaint is the first
 * section's; then run length, batch keys and nesterov. */
#include "job/check.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static struct dt_pos
pos_of(const struct dt_job *job, const char *key)
{
	int ki = dt_job_schema_find(key);

	return ki < 0 ? (struct dt_pos){ 0, 0, 0 } : job->origin.key[ki];
}

/* Where to point for a key that is missing: its nearest enclosing mapping
 * that was given, else the top of the file. */
static struct dt_pos
missing_pos(const struct dt_job *job, const char *key)
{
	char sect[128];
	char *dot;

	snprintf(sect, sizeof sect, "%s", key);
	while ((dot = strrchr(sect, '.')) != NULL) {
		struct dt_pos pos;

		*dot = '\0';
		pos = pos_of(job, sect);
		if (pos.line != 0)
			return pos;
	}
	return job->origin.root;
}

/* The enum value of key, as a word. */
static const char *
enum_word(const struct dt_job *job, const char *key)
{
	const struct dt_key *k = &dt_job_schema[dt_job_schema_find(key)];

	return k->names[*(const int *)((const char *)job + k->off)];
}

/* Whether an enum or integer key holds its default value. */
static bool
at_default(const struct dt_job *job, const struct dt_key *k)
{
	const void *v = (const char *)job + k->off;

	if (k->type == DT_KEY_ENUM) {
		int e = *(const int *)v;

		return k->def != NULL ? strcmp(k->names[e], k->def) == 0
				      : e == 0;
	}
	if (k->type == DT_KEY_INT)
		return *(const int64_t *)v ==
		       (k->def != NULL ? strtoll(k->def, NULL, 10) : 0);
	return false;
}

/* Key ki against the key it depends on: not given when unused, given
 * when required. */
static enum dt_status
check_when(const struct dt_job_ctx *c, int ki)
{
	const struct dt_key *k = &dt_job_schema[ki];
	const struct dt_job *job = c->job;
	struct dt_pos pos = job->origin.key[ki];
	char why[128], only[96];

	if (k->when == NULL)
		return DT_OK;
	/* A --set that changes the key this one depends on makes a value
	 * that is only the default moot, not wrong: the job a run saves
	 * names its defaults (parallel.schedule: gpipe), and resuming a
	 * pipeline run as strategy data must not trip over them. */
	if (dt_job_given(pos) && !dt_job_key_applies(job, k) &&
	    !(pos_of(job, k->when).from_set && at_default(job, k))) {
		dt_job_when_text(k, only, sizeof only);
		return dt_job_failf(c, dt_job_blame(pos, pos_of(job, k->when)),
				    k->key, "not used when %s is %s (only %s)",
				    k->when, enum_word(job, k->when), only);
	}
	if (!dt_job_given(pos) && (k->flags & DT_KEYF_REQUIRED) &&
	    dt_job_key_applies(job, k)) {
		snprintf(why, sizeof why, " (%s is %s)", k->when,
			 enum_word(job, k->when));
		return dt_job_missing(c, k, k->key,
				      dt_job_blame(missing_pos(job, k->key),
						   pos_of(job, k->when)), why);
	}
	return DT_OK;
}

/* A source given by parts (--set data.train.images.sha256=...) has a
 * path. */
static enum dt_status
check_source(const struct dt_job_ctx *c, int ki)
{
	static const struct dt_key path_part = {
		.key = "path", .type = DT_KEY_SOURCE,
	};
	const struct dt_key *k = &dt_job_schema[ki];
	const struct dt_source *src = (const struct dt_source *)
				      ((const char *)c->job + k->off);
	char key[128];

	if (!dt_job_given(c->job->origin.key[ki]) || src->path[0] != '\0')
		return DT_OK;
	snprintf(key, sizeof key, "%s.path", k->key);
	return dt_job_missing(c, &path_part, key, c->job->origin.key[ki], "");
}

/* data.eval with idx and npy: both files or neither. */
static enum dt_status
check_eval_pair(const struct dt_job_ctx *c)
{
	const struct dt_job *job = c->job;
	struct dt_pos ip = pos_of(job, "data.eval.images");
	struct dt_pos lp = pos_of(job, "data.eval.labels");
	const char *key;

	if (dt_job_given(ip) == dt_job_given(lp))
		return DT_OK;
	key = dt_job_given(ip) ? "data.eval.labels" : "data.eval.images";
	return dt_job_missing(c, &dt_job_schema[dt_job_schema_find(key)], key,
			      missing_pos(job, key), dt_job_given(ip) ?
			      " (data.eval.images is given)" :
			      " (data.eval.labels is given)");
}

static enum dt_status
check_eval_fraction(const struct dt_job_ctx *c)
{
	struct dt_pos fp = pos_of(c->job, "data.eval_fraction");
	struct dt_pos ep = pos_of(c->job, "data.eval.file");

	if (!dt_job_given(fp) || !dt_job_given(ep))
		return DT_OK;
	return dt_job_failf(c, dt_job_blame(fp, ep), "data.eval_fraction",
			    "not used when data.eval.file is given");
}

static enum dt_status
check_min_lr(const struct dt_job_ctx *c)
{
	const struct dt_job *job = c->job;
	struct dt_pos mp = pos_of(job, "train.schedule.min_lr");

	if (!dt_job_given(mp) || job->train.schedule.min_lr <= job->train.lr)
		return DT_OK;
	return dt_job_failf(c, dt_job_blame(mp, pos_of(job, "train.lr")),
			    "train.schedule.min_lr", "must be <= train.lr "
			    "(%g), found %g", job->train.lr,
			    job->train.schedule.min_lr);
}

static const char *const degree_keys[] = {
	"parallel.data_parallel", "parallel.pipeline_parallel",
	"parallel.tensor_parallel",
};

/* At most one degree is auto; strategy data splits no model. */
static enum dt_status
check_degrees(const struct dt_job_ctx *c)
{
	const struct dt_job *job = c->job;
	const int64_t *deg[3] = {
		&job->parallel.data_parallel, &job->parallel.pipeline_parallel,
		&job->parallel.tensor_parallel,
	};
	char found[32];
	int i, first_auto = -1;

	for (i = 0; i < 3; i++) {
		if (*deg[i] != DT_DEGREE_AUTO)
			continue;
		if (first_auto >= 0)
			return dt_job_failf(c, pos_of(job, degree_keys[i]),
					    degree_keys[i], "expected at most "
					    "one degree set to auto, found %s "
					    "auto too", degree_keys[first_auto]);
		first_auto = i;
	}
	if (job->parallel.strategy != DT_STRATEGY_DATA)
		return DT_OK;
	for (i = 1; i < 3; i++) {
		if (*deg[i] == 0 || *deg[i] == 1)
			continue;
		if (*deg[i] == DT_DEGREE_AUTO)
			snprintf(found, sizeof found, "auto");
		else
			snprintf(found, sizeof found, "%" PRId64, *deg[i]);
		return dt_job_failf(c, dt_job_blame(pos_of(job, degree_keys[i]),
				    pos_of(job, "parallel.strategy")),
				    degree_keys[i], "must be 1 with strategy "
				    "data, found %s; use strategy hybrid or "
				    "model", found);
	}
	return DT_OK;
}

/* parallel.stages names layers, each after the one before, and as many as
 * the pipeline has stages after the first. */
static enum dt_status
check_stages(const struct dt_job_ctx *c)
{
	const struct dt_job *job = c->job;
	int64_t pp = job->parallel.pipeline_parallel;
	const char *best;
	char key[64];
	int s, j, prev = 0;

	for (s = 0; s < job->parallel.n_stages; s++) {
		const char *name = job->parallel.stages[s];
		struct dt_pos at = job->origin.stage[s];

		snprintf(key, sizeof key, "parallel.stages.%d", s);
		j = dt_job_find_layer(job, name, job->model.n_layers);
		if (j < 0) {
			best = dt_job_closest_layer(job, name,
						    job->model.n_layers,
						    false);
			if (best != NULL)
				return dt_job_failf(c, at, key, "expected the "
						    "name of a layer, found "
						    "\"%s\"; did you mean "
						    "'%s'?", name, best);
			return dt_job_failf(c, at, key, "expected the name of "
					    "a layer, found \"%s\"", name);
		}
		if (j == 0)
			return dt_job_failf(c, at, key, "expected a layer after "
					    "the first, found \"%s\" "
					    "(model.layers.0), which starts "
					    "stage 0 anyway", name);
		if (j <= prev)
			return dt_job_failf(c, at, key, "expected a layer after "
					    "\"%s\" (model.layers.%d), found "
					    "\"%s\" (model.layers.%d)",
					    job->model.layers[prev].name, prev,
					    name, j);
		prev = j;
	}
	if (job->parallel.n_stages == 0 || pp <= 0 ||
	    job->parallel.n_stages + 1 == pp)
		return DT_OK;
	if (pp == 1)
		return dt_job_failf(c, dt_job_blame(
				    pos_of(job, "parallel.stages"),
				    pos_of(job, "parallel.pipeline_parallel")),
				    "parallel.stages", "expected no names with "
				    "pipeline_parallel 1 (one stage), found %d; "
				    "raise pipeline_parallel to %d or remove "
				    "the key", job->parallel.n_stages,
				    job->parallel.n_stages + 1);
	return dt_job_failf(c, dt_job_blame(pos_of(job, "parallel.stages"),
			    pos_of(job, "parallel.pipeline_parallel")),
			    "parallel.stages", "expected %" PRId64 " names "
			    "(the first layers of stages 1 to %" PRId64 " with "
			    "pipeline_parallel %" PRId64 "), found %d", pp - 1,
			    pp - 1, pp, job->parallel.n_stages);
}

/* A regression (mse, l1, huber) has no accuracy to watch: refused here
 * rather than compared as NaN at every evaluation. */
static enum dt_status
check_monitor(const struct dt_job_ctx *c)
{
	const struct dt_job *job = c->job;

	if (!dt_loss_is_regression(job->model.loss) ||
	    job->eval.monitor != DT_MONITOR_ACCURACY)
		return DT_OK;
	return dt_job_failf(c, dt_job_blame(pos_of(job, "eval.monitor"),
					    pos_of(job, "model.loss")),
			    "eval.monitor", "accuracy needs classes, but "
			    "model.loss is %s, a regression: monitor loss "
			    "instead", enum_word(job, "model.loss"));
}

/* Sequence parallelism (Korthikanti et al., 2022): the tensor group's
 * row collectives (comm/comm.h, struct dt_tp) and the row-wise layers'
 * shares of the rows (graph/rows.c) are built, the split layers' side
 * (reduce-scattering their outputs, gathering their inputs) is not, so
 * true is refused rather than run as plain tensor parallelism. */
static enum dt_status
check_sequence_parallel(const struct dt_job_ctx *c)
{
	const struct dt_job *job = c->job;

	if (!job->parallel.sequence_parallel)
		return DT_OK;
	return dt_job_failf(c, pos_of(job, "parallel.sequence_parallel"),
			    "parallel.sequence_parallel", "true is not "
			    "supported yet (the split layers do not "
			    "reduce-scatter their outputs over rows nor "
			    "gather their inputs); set it to false or remove "
			    "the key");
}

/* The rules that run when the schema walk reaches a key. */
static const struct {
	const char *key;
	enum dt_status (*check)(const struct dt_job_ctx *);
} hooks[] = {
	{ "data.eval.labels", check_eval_pair },
	{ "data.eval_fraction", check_eval_fraction },
	{ "model.layers", dt_job_check_layers },
	{ "train.schedule.min_lr", check_min_lr },
	{ "parallel.tensor_parallel", check_degrees },
	{ "parallel.stages", check_stages },
	{ "eval.monitor", check_monitor },
	{ "parallel.sequence_parallel", check_sequence_parallel },
};

/* Exactly one of epochs and steps; at least one batch key; nesterov needs
 * momentum. */
static enum dt_status
check_train(struct dt_job_ctx *c)
{
	struct dt_job *job = c->job;
	struct dt_pos ep, sp;

	ep = pos_of(job, "train.epochs");
	sp = pos_of(job, "train.steps");
	if (!dt_job_given(ep) && !dt_job_given(sp))
		return dt_job_failf(c, missing_pos(job, "train.steps"), "train",
				    "expected train.epochs or train.steps, "
				    "found neither");
	if (dt_job_given(ep) && dt_job_given(sp) &&
	    (ep.from_set == 0) != (sp.from_set == 0)) {
		/* One came from the file and one from --set: the run length
		 * on the command line replaces the file's, whichever unit. */
		int drop = dt_job_schema_find(sp.from_set ? "train.epochs" :
					      "train.steps");

		if (sp.from_set)
			job->train.epochs = 0;
		else
			job->train.steps = 0;
		job->origin.key[drop] = (struct dt_pos){ 0, 0, 0 };
	} else if (dt_job_given(ep) && dt_job_given(sp)) {
		/* Blame the one given last: an override, or the later line. */
		bool steps_last = sp.from_set != ep.from_set ?
				  sp.from_set > ep.from_set : sp.line > ep.line;

		return dt_job_failf(c, steps_last ? sp : ep, steps_last ?
				    "train.steps" : "train.epochs", "expected "
				    "train.epochs or train.steps, found both");
	}
	if (!dt_job_given(pos_of(job, "train.global_batch")) &&
	    !dt_job_given(pos_of(job, "train.micro_batch")))
		return dt_job_failf(c, missing_pos(job, "train.micro_batch"),
				    "train", "expected train.global_batch or "
				    "train.micro_batch (or both), found "
				    "neither");
	if (job->train.nesterov && job->train.momentum == 0.0)
		return dt_job_failf(c, pos_of(job, "train.nesterov"),
				    "train.nesterov", "true needs "
				    "train.momentum > 0, found momentum 0");
	return DT_OK;
}

/* "job.yaml:12:3" or "--set TEXT" for where a value came from. */
static void
place(const struct dt_job_ctx *c, struct dt_pos pos, char *buf, size_t size)
{
	if (pos.from_set > 0 && pos.from_set <= c->job->origin.n_sets)
		snprintf(buf, size, "--set %s",
			 c->job->origin.sets[pos.from_set - 1]);
	else
		snprintf(buf, size, "%s:%d:%d", c->name, pos.line, pos.col);
}

/* The window length of a token or text job, said by the first given of
 * data.context, model.input_shape ([T]) and each pos_embedding's length. */
struct window {
	bool check;		/* fail on a disagreement (else skip it) */
	int64_t t;		/* 0: none given yet */
	struct dt_pos at;
	char key[96];
};

/* Takes value v of key, given at at, into w: the first one sets it, a
 * later one must agree (a pos_embedding, whose length is a most, may be
 * longer). */
static enum dt_status
window_take(const struct dt_job_ctx *c, struct window *w, const char *key,
	    int64_t v, struct dt_pos at, bool at_least)
{
	char where[DT_JOB_SET_MAX + 64];

	if (w->t == 0) {
		w->t = v;
		w->at = at;
		snprintf(w->key, sizeof w->key, "%s", key);
		return DT_OK;
	}
	if (v == w->t || (at_least && v > w->t) || !w->check)
		return DT_OK;
	place(c, w->at, where, sizeof where);
	return dt_job_failf(c, at, key, "expected %s%" PRId64 ", the window "
			    "length %s gives (%s), found %" PRId64 "; give it "
			    "in one place and leave the other out",
			    at_least ? "at least " : "", w->t, w->key, where,
			    v);
}

/* Fails for a model.input_shape, given at at, of more than one number in a
 * token or text job, whose input is one window of T tokens. */
static enum dt_status
input_not_window(const struct dt_job_ctx *c, const struct window *w,
		 struct dt_pos at)
{
	char where[DT_JOB_SET_MAX + 64];

	if (w->t == 0)
		return dt_job_failf(c, at, "model.input_shape", "expected "
				    "[T], one number: a %s job's input is a "
				    "window of T tokens (data.context), "
				    "found %d numbers",
				    c->job->data.format == DT_FORMAT_TEXT ?
				    "text" : "token",
				    c->job->model.n_input_dims);
	place(c, w->at, where, sizeof where);
	return dt_job_failf(c, at, "model.input_shape", "expected [%" PRId64
			    "], one number: the window length %s gives (%s), "
			    "found %d numbers; give it in one place and leave "
			    "the other out", w->t, w->key, where,
			    c->job->model.n_input_dims);
}

/* data.context, model.input_shape and pos_embedding.length of a token
 * (tokens, llmc, u16) or text job are one number: each left out is derived from the first given
 * (in that order); with check, those given must agree (checked after the
 * other checks, so a wrong value of one key is named first). */
static enum dt_status
derive_window(const struct dt_job_ctx *c, bool check)
{
	struct dt_job *job = c->job;
	int kc = dt_job_schema_find("data.context");
	int ks = dt_job_schema_find("model.input_shape");
	struct window w = { .check = check };
	enum dt_status st = DT_OK;
	char key[96];
	int i;

	if (!dt_job_format_token_ids(job->data.format) &&
	    job->data.format != DT_FORMAT_TEXT)
		return DT_OK;
	if (dt_job_given(job->origin.key[kc]))
		st = window_take(c, &w, "data.context", job->data.context,
				 job->origin.key[kc], false);
	if (st == DT_OK && dt_job_given(job->origin.key[ks]) &&
	    job->model.n_input_dims == 1)
		st = window_take(c, &w, "model.input_shape.0",
				 job->model.input_shape[0],
				 job->origin.shape[0], false);
	for (i = 0; st == DT_OK && i < job->model.n_layers; i++) {
		const struct dt_layer_spec *l = &job->model.layers[i];
		struct dt_pos at = job->origin.layer[i][DT_LAYER_KEY_LENGTH];

		if (l->kind != DT_LAYER_POS_EMBEDDING || !dt_job_given(at))
			continue;
		snprintf(key, sizeof key, "model.layers.%s.length", l->name);
		st = window_take(c, &w, key, l->length, at, true);
	}
	if (st == DT_OK && check && dt_job_given(job->origin.key[ks]) &&
	    job->model.n_input_dims != 1)
		return input_not_window(c, &w, job->origin.key[ks]);
	if (st != DT_OK || w.t == 0 || check)
		return st;
	if (!dt_job_given(job->origin.key[kc])) {
		job->data.context = w.t;
		job->origin.key[kc] = w.at;
	}
	if (!dt_job_given(job->origin.key[ks])) {
		job->model.n_input_dims = 1;
		job->model.input_shape[0] = w.t;
		job->origin.key[ks] = w.at;
		job->origin.shape[0] = w.at;
	}
	for (i = 0; i < job->model.n_layers; i++) {
		struct dt_layer_spec *l = &job->model.layers[i];
		struct dt_pos *at = &job->origin.layer[i][DT_LAYER_KEY_LENGTH];

		if (l->kind == DT_LAYER_POS_EMBEDDING && !dt_job_given(*at)) {
			l->length = w.t;
			*at = w.at;
		}
	}
	return DT_OK;
}

enum dt_status
dt_job_finish(struct dt_job_ctx *c)
{
	struct dt_job *job = c->job;
	enum dt_status st;
	size_t h;
	int i;

	dt_job_default_names(job);
	derive_window(c, false);
	for (i = 0; i < dt_job_schema_len; i++) {
		const struct dt_key *k = &dt_job_schema[i];

		st = check_when(c, i);
		if (st == DT_OK && k->when == NULL &&
		    (k->flags & DT_KEYF_REQUIRED) &&
		    !dt_job_given(job->origin.key[i]))
			st = dt_job_missing(c, k, k->key,
					    missing_pos(job, k->key), "");
		if (st == DT_OK && k->type == DT_KEY_SOURCE)
			st = check_source(c, i);
		for (h = 0; st == DT_OK && h < sizeof hooks / sizeof hooks[0];
		     h++)
			if (strcmp(hooks[h].key, k->key) == 0)
				st = hooks[h].check(c);
		if (st != DT_OK)
			return st;
	}
	st = check_train(c);
	return st == DT_OK ? derive_window(c, true) : st;
}
