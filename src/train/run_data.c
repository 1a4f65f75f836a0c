/* SPDX-License-Identifier: MIT */
/* run_data.c - the run's data (run_data.h): the sources fetched, the vocabulary
 * of a text, the splits opened and checked against the model. */
#include "train/run_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/progress.h"
#include "train/rundir.h"
#include "util/meter.h"

/* Test aid, documented in dtrain(1): DTRAIN_TEST_FAIL_READ_RANK=R makes
 * rank R look for its training images under a name that does not exist, to
 * exercise the path where one rank cannot read its data. */
static const char *
fail_train_images(const struct dt_run *r, char *buf, size_t size)
{
	const char *v = getenv("DTRAIN_TEST_FAIL_READ_RANK");

	if (v != NULL && *v != '\0' && atoi(v) == r->rank) {
		snprintf(buf, size, "%s.missing-for-test",
			 r->data_job->data.train.images);
		return buf;
	}
	return NULL;
}

/* Whether the files at a and b hold the same bytes (0 when either cannot
 * be read). */
static int
same_bytes(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	int same = fa != NULL && fb != NULL, ca, cb;

	while (same) {
		ca = getc(fa);
		cb = getc(fb);
		same = ca == cb;
		if (ca == EOF)
			break;
	}
	same = same && !ferror(fa) && !ferror(fb);
	if (fa != NULL)
		fclose(fa);
	if (fb != NULL)
		fclose(fb);
	return same;
}

/* The run directory's vocabulary file (tokenizer.json or vocab.bin)
 * into path (size bytes). */
static enum dt_status
vocab_path(const struct dt_run *r, char *path, size_t size,
	   struct dt_error *err)
{
	return dt_rundir_path(path, size, r->dir,
			      r->vocab.unit == DT_TEXT_BPE ? "tokenizer.json" :
			      "vocab.bin", err);
}

/* Saves the text's vocabulary in the run directory (rank 0). One there
 * already (a resume) must be the one made now: the checkpoints' ids mean
 * its tokens, and another tokenizer or a text with other characters would
 * give them other meanings without a word. A start over (resume
 * --start-over) keeps no checkpoint, so another one is no error: it is
 * noted (r->vocab_changed) and replaces the old once dt_run_restore has
 * found no checkpoint (dt_run_vocab_replace). */
static enum dt_status
write_vocab(struct dt_run *r, struct dt_error *err)
{
	const struct dt_job *dj = r->data_job;
	char path[DT_JOB_PATH_MAX + 32], fresh[DT_JOB_PATH_MAX + 40];
	enum dt_status st;
	int other;

	if (r->rank != 0)
		return DT_OK;
	st = vocab_path(r, path, sizeof path, err);
	if (st != DT_OK || access(path, F_OK) != 0)
		return st != DT_OK ? st : dt_vocab_save(&r->vocab, path, err);
	snprintf(fresh, sizeof fresh, "%s.now", path);
	st = dt_vocab_save(&r->vocab, fresh, err);
	other = st == DT_OK && !same_bytes(path, fresh);
	if (other && r->start_over)
		r->vocab_changed = 1;
	else if (other)
		st = dt_errorf(err, DT_ERR_DATA, "%s: the run was trained with "
			       "this %s, and %s now gives another, so the "
			       "checkpoints' token ids would change meaning; "
			       "resume with the %s it was trained with, or "
			       "start a new run", path,
			       r->vocab.unit == DT_TEXT_BPE ? "tokenizer" :
			       "vocabulary",
			       r->vocab.unit == DT_TEXT_BPE ?
			       dj->data.tokenizer : dj->data.train.file.path,
			       r->vocab.unit == DT_TEXT_BPE ? "tokenizer" :
			       "text");
	(void)unlink(fresh);
	return st;
}

enum dt_status
dt_run_vocab_replace(struct dt_run *r, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 32];
	enum dt_status st;

	if (r->rank != 0 || !r->vocab_changed)
		return DT_OK;
	st = vocab_path(r, path, sizeof path, err);
	if (st == DT_OK)
		st = dt_vocab_save(&r->vocab, path, err);
	if (st == DT_OK)
		fprintf(stderr, "dtrain: %s: replaced by the %s of %s "
			"(--start-over)\n", path,
			r->vocab.unit == DT_TEXT_BPE ? "tokenizer" :
			"vocabulary",
			r->vocab.unit == DT_TEXT_BPE ?
			r->data_job->data.tokenizer :
			r->data_job->data.train.file.path);
	r->vocab_changed = 0;
	return st;
}

/* Every embedding that reads the token ids must have a row for each id
 * the data holds. */
static enum dt_status
check_token_ids(const struct dt_run *r, struct dt_error *err)
{
	const struct dt_job *dj = r->data_job;
	int64_t ids = dj->data.format == DT_FORMAT_TEXT ?
		      r->vocab.size : r->train.td.vocab_size;

	if (!r->train.tokens)
		return DT_OK;
	for (int i = 0; i < dj->model.n_layers; i++) {
		const struct dt_layer_spec *l = &dj->model.layers[i];
		int reads_input = l->n_inputs == 0 ? i == 0 :
				  strcmp(l->inputs[0], "input") == 0;
		char key[64], where[512];

		if (l->kind != DT_LAYER_EMBEDDING || !reads_input ||
		    l->vocab >= ids)
			continue;
		snprintf(key, sizeof key, "model.layers.%d.vocab", i);
		dt_job_where(dj, key, where, sizeof where);
		return dt_errorf(err, DT_ERR_DATA,
				 "%sthe data holds %lld distinct token "
				 "ids but the embedding has %lld rows; "
				 "raise vocab to at least %lld", where,
				 (long long)ids, (long long)l->vocab,
				 (long long)ids);
	}
	return DT_OK;
}

/* The samples of each split against the model's input (DT_ERR_JOB: the
 * job's model.input_shape is wrong for its data) and output
 * (DT_ERR_DATA). */
static enum dt_status
check_sizes(const struct dt_run *r, struct dt_error *err)
{
	int64_t in = dt_model_input_size(r->model);

	for (int which = 0; which < 1 + r->have_eval; which++) {
		const struct dt_batch_source *s = which ? &r->eval : &r->train;
		char where[512];

		dt_job_where(r->job, "model.input_shape", where, sizeof where);
		if (s->x_size != in)
			return dt_errorf(err, DT_ERR_JOB,
					 "%s%s data: samples have %lld inputs "
					 "but the model takes %lld", where,
					 which ? "eval" : "training",
					 (long long)s->x_size, (long long)in);
		if (s->y_size != r->y_per_sample)
			return dt_errorf(err, DT_ERR_DATA,
					 "%s data: samples have %lld %s "
					 "but the model's output has %lld",
					 which ? "eval" : "training",
					 (long long)s->y_size,
					 s->ds.t != NULL ? "targets" :
					 "labels",
					 (long long)r->y_per_sample);
	}
	return DT_OK;
}

/* data.text_unit bpe: the tokenizer, whose ids the model's output must
 * cover, saved in the run directory for sample and predict. */
static enum dt_status
load_bpe(struct dt_run *r, int64_t classes, struct dt_error *err)
{
	const struct dt_job *dj = r->data_job;
	char where[DT_JOB_PATH_MAX + 128];
	enum dt_status st;

	if (dj->data.tokenizer[0] == '\0') {
		dt_job_where(dj, "data.text_unit", where, sizeof where);
		return dt_errorf(err, DT_ERR_JOB, "%stext_unit bpe needs "
				 "data.tokenizer, the tokenizer file", where);
	}
	st = dt_vocab_load_bpe(dj->data.tokenizer, &r->vocab, err);
	if (st == DT_OK && r->vocab.size > classes)
		st = dt_errorf(err, DT_ERR_DATA, "%s: the tokenizer has %lld "
			       "ids but the model's output has %lld classes; "
			       "raise the last layer's units (and the "
			       "embedding's vocab) to %lld",
			       dj->data.tokenizer, (long long)r->vocab.size,
			       (long long)classes, (long long)r->vocab.size);
	if (st == DT_OK)
		st = write_vocab(r, err);
	return st;
}

/* data.format text: the vocabulary of the training file, which the
 * model's output must cover. */
static enum dt_status
load_vocab(struct dt_run *r, int64_t classes, struct dt_error *err)
{
	const struct dt_job *dj = r->data_job;
	enum dt_status st;

	if (dj->data.format != DT_FORMAT_TEXT)
		return DT_OK;
	if (dj->data.text_unit == DT_JOB_TEXT_BPE)
		return load_bpe(r, classes, err);
	if (dj->data.tokenizer[0] != '\0') {
		char where[DT_JOB_PATH_MAX + 128];

		dt_job_where(dj, "data.tokenizer", where, sizeof where);
		return dt_errorf(err, DT_ERR_JOB, "%sa tokenizer is used only "
				 "with data.text_unit: bpe", where);
	}
	st = dt_source_vocab(dj, &r->vocab, err);
	if (st == DT_OK && r->vocab.size > classes)
		st = dt_errorf(err, DT_ERR_DATA,
			       "%s: the text has %lld distinct "
			       "characters but the model's output has "
			       "%lld classes; raise the last layer's "
			       "units (and the embedding's vocab) to "
			       "%lld", dj->data.train.file.path,
			       (long long)r->vocab.size,
			       (long long)classes,
			       (long long)r->vocab.size);
	if (st == DT_OK)
		st = write_vocab(r, err);
	return st;
}

/* data.normalize: the statistics of the training split, which every
 * rank holds whole and sums alike (data/norm.c); the eval split takes
 * the training split's scale and map. A resume replaces them with the
 * checkpoint's (state.c). */
static void
fit_norm(struct dt_run *r)
{
	_Static_assert(DT_NORMALIZE_STANDARD == DT_NORM_STANDARD &&
		       DT_NORMALIZE_MINMAX == DT_NORM_MINMAX,
		       "enum dt_data_normalize is data.h's DT_NORM_*");
	if (r->train.tokens || r->train.n == 0)
		return;
	dt_norm_fit(&r->norm, (int)r->data_job->data.normalize,
		    &r->train.ds);
	r->train.ds.norm = &r->norm;
	r->eval.ds.norm = &r->norm;
	r->eval.ds.scale = r->train.ds.scale;
}

enum dt_status
dt_run_load_data(struct dt_run *r, int progress, struct dt_error *err)
{
	char buf[DT_JOB_PATH_MAX + 32];
	int64_t classes = dt_model_n_classes(r->model);
	int64_t targets = dt_loss_is_regression(r->job->model.loss) ?
			  r->y_per_sample : 0;
	int64_t mb = r->plan.micro_batch;
	const struct dt_job *dj = r->data_job;
	const struct dt_meter *old;
	struct dt_progress shown;
	struct dt_meter m;
	enum dt_status st;

	st = dt_source_fetch_all(r->data_job, r->comm, progress, err);
	/* Reading and decoding the files: a task line on rank 0's terminal
	 * (progress.h), through the readers' meter (util/meter.h). */
	dt_progress_init(&shown, progress ? stderr : NULL, progress, 0);
	dt_progress_meter(&shown, &m);
	old = dt_meter_use(&m);
	if (st == DT_OK)
		st = load_vocab(r, classes, err);
	if (st == DT_OK)
		st = dt_source_open(&r->train, dj, 0, classes, targets, mb,
				    &r->vocab,
				    fail_train_images(r, buf, sizeof buf),
				    err);
	if (st == DT_OK)
		st = dt_source_open(&r->eval, dj, 1, classes, targets, mb,
				    &r->vocab, NULL, err);
	dt_meter_use(old);
	dt_progress_end(&shown);
	if (st != DT_OK)
		return st;
	r->have_eval = r->eval.n > 0;
	fit_norm(r);
	st = check_token_ids(r, err);
	if (st == DT_OK)
		st = check_sizes(r, err);
	return st;
}
