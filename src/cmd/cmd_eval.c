/* SPDX-License-Identifier: MIT */
/* cmd_eval.c - `dtrain eval RUN_DIR`: the loss and accuracy of a checkpoint
 * on a split of the run's job or on another source in its format.
 *
 * The sums are those of the trainer's evaluation (train/train.c): the
 * loss summed over samples and label positions (nats) from the loss
 * node, the correct argmaxes from the same node, so for the same
 * checkpoint and split the mean loss and accuracy equal the eval_loss and
 * eval_accuracy of the run's summary.json (up to the order of a sum in
 * double). Besides: the top-k accuracy (a label counts when fewer than k
 * classes have a higher probability than it), for classifiers (one label
 * per sample) per-class accuracy and the confusion matrix, for per-token
 * language models the perplexity exp(loss) (Jelinek et al., 1977).
 * Under mpirun each rank takes the contiguous share [n r/R, n (r+1)/R) of
 * the samples and the sums are added over the ranks in double. */
#include "cmd/cmd.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/model_io.h"
#include "data/fetch.h"
#include "comm/comm.h"
#include "graph/graph.h"
#include "train/progress.h"
#include "train/source.h"
#include "util/meter.h"
#include "util/alloc.h"
#include "util/jsonnum.h"

#define EVAL_BATCH 128
#define EVAL_MAX_CONFUSION 1024	/* classes up to which a matrix is kept */

struct eval_args {
	const char *data;	/* NULL: "eval" */
	const char *checkpoint;	/* NULL: the newest */
	int top_k;
	int json;
};

static const struct dt_cmd_opt eval_opts[] = {
	{ .name = "data", .kind = DT_CMD_ARG_STRING, .arg = "split_or_source",
	  .offset = offsetof(struct eval_args, data),
	  .doc = "train, eval (default) or a path or URL" },
	DT_CMD_OPT_CHECKPOINT_ENTRY(offsetof(struct eval_args, checkpoint)),
	{ .name = "top-k", .kind = DT_CMD_ARG_INT, .arg = "k",
	  .offset = offsetof(struct eval_args, top_k), .min = 1,
	  .max = 1000000, .doc = "also count the k most likely (default 5)" },
	{ .name = "json", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct eval_args, json),
	  .doc = "print JSON instead of text" },
	DT_CMD_OPT_SET_ENTRY,
	{ .kind = DT_CMD_ARG_END },
};

/* Points split 1 (eval) of job at src: "IMAGES,LABELS" for idx and npy, a
 * file otherwise. */
static enum dt_status
set_source(struct dt_job *job, const char *src, struct dt_error *err)
{
	struct dt_data_split *sp = &job->data.eval;
	const char *comma = strchr(src, ',');

	memset(sp, 0, sizeof *sp);
	if (job->data.format == DT_FORMAT_IDX ||
	    job->data.format == DT_FORMAT_NPY) {
		size_t n = comma == NULL ? 0 : (size_t)(comma - src);

		if (comma == NULL || n == 0 || comma[1] == '\0' ||
		    n >= sizeof sp->images || strlen(comma + 1) >=
		    sizeof sp->labels)
			return dt_errorf(err, DT_ERR_USAGE, "--data %s: the job "
					 "reads images and labels; give "
					 "IMAGES,LABELS (two paths or URLs)",
					 src);
		memcpy(sp->images, src, n);
		snprintf(sp->labels, sizeof sp->labels, "%s", comma + 1);
		snprintf(sp->images_src.path, sizeof sp->images_src.path, "%s",
			 sp->images);
		snprintf(sp->labels_src.path, sizeof sp->labels_src.path, "%s",
			 sp->labels);
		return DT_OK;
	}
	if (strlen(src) >= sizeof sp->file.path)
		return dt_errorf(err, DT_ERR_USAGE, "--data: path too long");
	snprintf(sp->file.path, sizeof sp->file.path, "%s", src);
	return DT_OK;
}

/* The sums of one rank, added over the ranks: [0] loss, [1] correct,
 * [2] top-k correct, [3] labels counted, then per class the labels and
 * the correct ones, then the confusion matrix (label-major). */
struct eval_sums {
	double *v;
	size_t n;
	int64_t classes;
	int per_class;
};

static double *
per_class_count(struct eval_sums *s)
{
	return s->v + 4;
}

static double *
per_class_correct(struct eval_sums *s)
{
	return s->v + 4 + s->classes;
}

static double *
confusion(struct eval_sums *s)
{
	return s->v + 4 + 2 * s->classes;
}

/* Adds one batch: probs (count, lps, classes), labels (count, lps). */
static void
count_batch(struct eval_sums *s, const float *probs, const int32_t *y,
	    int64_t rows, int top_k)
{
	int64_t c = s->classes;

	for (int64_t r = 0; r < rows; r++) {
		const float *p = probs + r * c;
		int32_t label = y[r];
		int64_t higher = 0, best = 0;

		for (int64_t j = 0; j < c; j++) {
			if (p[j] > p[label])
				higher++;
			if (p[j] > p[best])
				best = j;
		}
		if (higher < top_k)
			s->v[2] += 1;
		s->v[3] += 1;
		if (s->per_class) {
			per_class_count(s)[label] += 1;
			if (best == label)
				per_class_correct(s)[label] += 1;
			confusion(s)[label * c + best] += 1;
		}
	}
}

/* Runs the model over this rank's share of src and sums into s; rank
 * 0's share stands for all on the progress line. */
static enum dt_status
run_share(struct dt_cmd_model *cm, struct dt_batch_source *src,
	  struct dt_comm *comm, struct eval_sums *s, int top_k,
	  struct dt_progress *shown, struct dt_error *err)
{
	int rank = dt_comm_rank(comm), size = dt_comm_size(comm);
	int64_t n = src->n, lo = n * rank / size, hi = n * (rank + 1) / size;
	int64_t in = dt_model_input_size(cm->model);
	int64_t lps = dt_model_labels_per_sample(cm->model);
	float *x = dt_xalloc_floats((size_t)(EVAL_BATCH * in));	/* (B, in) */
	int32_t *y = dt_xmalloc((size_t)(EVAL_BATCH * lps), sizeof *y);
	/* (B, lps) */
	int64_t *idx = dt_xmalloc(EVAL_BATCH, sizeof *idx);

	dt_progress_task_begin(shown, "eval", n, 0);
	for (int64_t i = lo; i < hi; i += EVAL_BATCH) {
		int64_t count = hi - i < EVAL_BATCH ? hi - i : EVAL_BATCH;
		int64_t correct = 0;
		double ls = 0;

		for (int64_t j = 0; j < count; j++)
			idx[j] = i + j;
		dt_source_gather(src, idx, count, x, y);
		dt_model_eval(cm->model, x, y, count, &ls, &correct);
		s->v[0] += ls;
		s->v[1] += (double)correct;
		count_batch(s, dt_model_probs(cm->model), y, count * lps,
			    top_k);
		dt_progress_task_update(shown, (i + count - lo) * n /
					(hi - lo));
	}
	dt_progress_task_end(shown);
	free(x);
	free(y);
	free(idx);
	return dt_comm_allreduce_sum_f64(comm, s->v, s->n, err);
}

static void
print_text(const char *dir, const char *what, const struct dt_cmd_model *cm,
	   struct eval_sums *s, int64_t n, int64_t lps, int top_k)
{
	double labels = s->v[3], loss = s->v[0] / labels;
	int width = 1;

	printf("%s: checkpoint of step %lld, %s: %lld samples", dir,
	       (long long)cm->step, what, (long long)n);
	if (lps > 1)
		printf(" of %lld tokens", (long long)lps);
	printf("\n");
	printf("loss %.6f nats per %s\n", loss, lps > 1 ? "token" : "sample");
	if (lps > 1)
		printf("perplexity %.4f\n", exp(loss));
	printf("accuracy %.6f (%.0f of %.0f)\n", s->v[1] / labels, s->v[1],
	       labels);
	printf("top-%d accuracy %.6f\n", top_k, s->v[2] / labels);
	if (!s->per_class)
		return;
	printf("per-class accuracy:\n");
	for (int64_t c = 0; c < s->classes; c++) {
		double k = per_class_count(s)[c];

		printf("  class %lld: %.4f (%.0f of %.0f)\n", (long long)c,
		       k > 0 ? per_class_correct(s)[c] / k : 0.0,
		       per_class_correct(s)[c], k);
	}
	printf("confusion matrix (a row per label, a column per "
	       "prediction):\n");
	for (double top = labels; top >= 10; top /= 10)
		width++;
	for (int64_t r = 0; r < s->classes; r++) {
		for (int64_t c = 0; c < s->classes; c++)
			printf("%s%*.0f", c ? " " : "  ", width,
			       confusion(s)[r * s->classes + c]);
		putchar('\n');
	}
}

static void
print_json(const char *dir, const char *what, const struct dt_cmd_model *cm,
	   struct eval_sums *s, int64_t n, int64_t lps, int top_k)
{
	struct json_object *o = json_object_new_object();
	double labels = s->v[3], loss = s->v[0] / labels;

	json_object_object_add(o, "run_dir", json_object_new_string(dir));
	json_object_object_add(o, "checkpoint",
			       json_object_new_string(cm->ckpt));
	json_object_object_add(o, "step", json_object_new_int64(cm->step));
	json_object_object_add(o, "data", json_object_new_string(what));
	json_object_object_add(o, "samples", json_object_new_int64(n));
	json_object_object_add(o, "labels_per_sample",
			       json_object_new_int64(lps));
	json_object_object_add(o, "loss", dt_json_float(loss));
	json_object_object_add(o, "accuracy",
			       dt_json_float(s->v[1] / labels));
	json_object_object_add(o, "top_k", json_object_new_int(top_k));
	json_object_object_add(o, "top_k_accuracy",
			       dt_json_float(s->v[2] / labels));
	if (lps > 1)
		json_object_object_add(o, "perplexity",
				       dt_json_float(exp(loss)));
	if (s->per_class) {
		struct json_object *acc = json_object_new_array();
		struct json_object *cnt = json_object_new_array();
		struct json_object *mat = json_object_new_array();

		for (int64_t c = 0; c < s->classes; c++) {
			double k = per_class_count(s)[c];
			struct json_object *row = json_object_new_array();

			json_object_array_add(acc, k > 0 ?
				dt_json_float(per_class_correct(s)[c] /
						       k) : NULL);
			json_object_array_add(cnt,
					      json_object_new_int64((int64_t)k));
			for (int64_t j = 0; j < s->classes; j++)
				json_object_array_add(row,
					json_object_new_int64((int64_t)
					confusion(s)[c * s->classes + j]));
			json_object_array_add(mat, row);
		}
		json_object_object_add(o, "per_class_accuracy", acc);
		json_object_object_add(o, "class_counts", cnt);
		json_object_object_add(o, "confusion", mat);
	}
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_SPACED |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static int
cmd_eval(int argc, char **argv)
{
	struct eval_args a = { .top_k = 0 };	/* 0: not given */
	struct dt_cmd_line line;
	struct dt_cmd_model cm = { 0 };
	struct dt_batch_source src;
	struct eval_sums s = { 0 };
	struct dt_comm *comm = NULL;
	struct dt_progress shown;
	const struct dt_meter *old;
	struct dt_meter m;
	struct dt_error err;
	const char *what;
	int64_t step = -1, lps = 0;
	enum dt_status st;
	int which = 1, rc;

	rc = dt_cmd_parse(&dt_cmd_eval, argc, argv, &a, &line);
	if (rc >= 0)
		return rc;
	dt_error_clear(&err);
	memset(&src, 0, sizeof src);
	if (dt_cmd_checkpoint_arg(a.checkpoint, &step) != 0) {
		free(line.sets);
		return dt_cmd_usage_error(&dt_cmd_eval, "--checkpoint %s: "
					  "expected a step or best",
					  a.checkpoint);
	}
	what = a.data != NULL ? a.data : "eval";
	st = dt_cmd_comm_new(&comm, &err);
	if (st == DT_OK)
		st = dt_cmd_model_open(line.operand, line.sets, line.n_sets,
				       step, EVAL_BATCH, &cm, &err);
	free(line.sets);
	if (st == DT_OK && cm.job->model.loss != DT_LOSS_SOFTMAX_CROSS_ENTROPY)
		st = dt_errorf(&err, DT_ERR_USAGE, "%s: eval needs a "
			       "classifier or language model (loss "
			       "softmax_cross_entropy); this one's loss is "
			       "mse", line.operand);
	if (st == DT_OK) {
		if (strcmp(what, "train") == 0)
			which = 0;
		else if (strcmp(what, "eval") != 0)
			st = set_source(cm.job, what, &err);
	}
	if (st == DT_OK)
		st = dt_source_fetch_all(cm.job, comm, 0, &err);
	dt_cmd_progress_init(&shown, comm);
	dt_progress_meter(&shown, &m);
	old = dt_meter_use(&m);
	if (st == DT_OK)
		st = dt_source_open(&src, cm.job, which,
				    dt_model_n_classes(cm.model), EVAL_BATCH,
				    &cm.vocab, NULL, &err);
	dt_meter_use(old);
	if (st == DT_OK) {
		lps = dt_model_labels_per_sample(cm.model);
		if (src.n == 0)
			st = dt_errorf(&err, DT_ERR_USAGE, "%s: the job has no "
				       "%s split (give --data train or a "
				       "source)", line.operand, what);
		else if (src.x_size != dt_model_input_size(cm.model) ||
			 src.y_size != lps)
			st = dt_errorf(&err, DT_ERR_DATA, "%s: samples have "
				       "%lld inputs and %lld labels but the "
				       "model takes %lld and predicts %lld",
				       what, (long long)src.x_size,
				       (long long)src.y_size,
				       (long long)dt_model_input_size(cm.model),
				       (long long)lps);
	}
	if (st == DT_OK) {
		s.classes = dt_model_n_classes(cm.model);
		/* Top-k of more than the classes would be 1 by definition. */
		if (a.top_k == 0)
			a.top_k = s.classes < 5 ? (int)s.classes : 5;
		else if (a.top_k > s.classes)
			st = dt_errorf(&err, DT_ERR_USAGE, "--top-k %d: the "
				       "model has %lld classes", a.top_k,
				       (long long)s.classes);
	}
	if (st == DT_OK) {
		s.per_class = lps == 1 && s.classes <= EVAL_MAX_CONFUSION;
		s.n = 4 + (s.per_class ? (size_t)(s.classes * (s.classes + 2))
			   : 0);
		s.v = dt_xcalloc(s.n, sizeof *s.v);
		st = run_share(&cm, &src, comm, &s, a.top_k, &shown, &err);
	}
	dt_progress_end(&shown);
	if (st == DT_OK && dt_comm_rank(comm) == 0) {
		if (a.json)
			print_json(line.operand, what, &cm, &s, src.n, lps,
				   a.top_k);
		else
			print_text(line.operand, what, &cm, &s, src.n, lps,
				   a.top_k);
		if (fflush(stdout) != 0)
			st = dt_errorf(&err, DT_ERR_IO, "writing to standard "
				       "output failed");
	}
	free(s.v);
	dt_source_fini(&src);
	dt_cmd_model_close(&cm);
	return dt_cmd_comm_finish(comm, st, &err);
}

const struct dt_cmd dt_cmd_eval = {
	.name = "eval",
	.summary = "loss and accuracy of a run's checkpoint on a split",
	.opts = eval_opts,
	.operand = "run_dir",
	.operand_noun = "run directory",
	.operand_doc = "the run directory",
	.run = cmd_eval,
};
