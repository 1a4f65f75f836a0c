/* SPDX-License-Identifier: MIT */
/* cmd_eval.c - `dtrain eval RUN_DIR`: the loss and accuracy of a checkpoint
 * on a split of the run's job or on another source in its format; for a
 * regression (model.loss mse) the mean squared and absolute errors and
 * R^2 (the coefficient of determination).
 *
 * The sums are those of the trainer's evaluation (train/train.c): the
 * loss summed over samples and label positions (nats) from the loss
 * node, the correct argmaxes from the same node, so for the same
 * checkpoint and split the mean loss and accuracy equal the eval_loss and
 * eval_accuracy of the run's summary.json (up to the order of a sum in
 * double). Besides: the top-k accuracy (a label counts when fewer than k
 * classes have a higher logit than it: ranked by the logits, as the
 * probabilities of the unlikely classes underflow to 0 and would tie with
 * the label), the labels whose logits hold a NaN (a diverged model: its
 * loss and accuracies are then not numbers, and said to be), for
 * classifiers (one label
 * per sample) per-class accuracy and the confusion matrix, for per-token
 * language models the perplexity exp(loss) (Jelinek et al., 1977).
 * Under mpirun each rank takes the contiguous share [n r/R, n (r+1)/R) of
 * the samples and the sums are added over the ranks in double. Batches
 * are --batch samples, or as many up to 128 as the memory available
 * holds (cmd/model_io.h, dt_cmd_batch_fit). */
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

#define EVAL_BATCH 128		/* the batch without --batch */
#define EVAL_MAX_CONFUSION 1024	/* classes up to which a matrix is kept */

struct eval_args {
	const char *data;	/* NULL: "eval" */
	const char *checkpoint;	/* NULL: the newest */
	int top_k;
	int batch;		/* 0: sized from memory */
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
	{ .name = "batch", .kind = DT_CMD_ARG_INT, .arg = "n",
	  .offset = offsetof(struct eval_args, batch), .min = 1,
	  .max = 65536, .doc = "samples per batch (default: up to 128)" },
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
 * [2] top-k correct, [3] labels counted, [4] labels whose logits hold a
 * NaN, then per class the labels and the correct ones, then the
 * confusion matrix (label-major). */
#define SUMS_HEAD 5
struct eval_sums {
	double *v;
	size_t n;
	int64_t classes;
	int per_class;
};

static double *
per_class_count(struct eval_sums *s)
{
	return s->v + SUMS_HEAD;
}

static double *
per_class_correct(struct eval_sums *s)
{
	return s->v + SUMS_HEAD + s->classes;
}

static double *
confusion(struct eval_sums *s)
{
	return s->v + SUMS_HEAD + 2 * s->classes;
}

/* Adds one batch: logits (rows, classes) (rows = batch x lps), labels
 * (rows). A label counts for the top-k when fewer than top_k classes
 * have a higher logit; the prediction is the highest logit, the lower id
 * on a tie. A row with a NaN counts in [4] and in no accuracy. */
static void
count_batch(struct eval_sums *s, const float *logits, const int32_t *y,
	    int64_t rows, int top_k)
{
	int64_t c = s->classes;

	for (int64_t r = 0; r < rows; r++) {
		const float *z = logits + r * c;
		int32_t label = y[r];
		int64_t higher = 0, best = 0, nan = 0;

		for (int64_t j = 0; j < c; j++) {
			nan += isnan(z[j]) != 0;
			if (z[j] > z[label])
				higher++;
			if (z[j] > z[best])
				best = j;
		}
		s->v[3] += 1;
		if (s->per_class)
			per_class_count(s)[label] += 1;
		if (nan > 0) {
			s->v[4] += 1;
			continue;
		}
		if (higher < top_k)
			s->v[2] += 1;
		if (s->per_class) {
			if (best == label)
				per_class_correct(s)[label] += 1;
			confusion(s)[label * c + best] += 1;
		}
	}
}

/* The sums of a regression (mse) after the head ([0] loss, [3]
 * samples): per output j, 4 values at SUMS_HEAD + 4 j: the squared
 * errors, the absolute errors, the targets and their squares. */
static double *
output_sums(struct eval_sums *s, int64_t j)
{
	return s->v + SUMS_HEAD + 4 * j;
}

/* Adds one batch of a regression: predictions and targets (rows, k). */
static void
count_regress(struct eval_sums *s, const float *pred, const float *t,
	      int64_t rows, int64_t k)
{
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < k; j++) {
			double *o = output_sums(s, j);
			double d = (double)pred[r * k + j] - t[r * k + j];
			double v = t[r * k + j];

			o[0] += d * d;
			o[1] += fabs(d);
			o[2] += v;
			o[3] += v * v;
		}
		s->v[3] += 1;
	}
}

/* What one `dtrain eval` holds from start to end. */
struct eval_run {
	struct eval_args a;
	struct dt_cmd_line line;
	struct dt_cmd_model cm;
	struct dt_batch_source src;
	struct eval_sums s;
	struct dt_comm *comm;
	struct dt_progress shown;
	const char *what;	/* --data, or "eval" */
	int which;		/* the job's split: 0 train, 1 eval */
	int64_t lps;		/* labels (or mse targets) per sample */
	int regress;		/* model.loss mse: targets, MSE/MAE/R^2 */
	int64_t batch;		/* samples per forward pass */
};

/* Runs the model over this rank's share of the source and sums into
 * e->s; rank 0's share stands for all on the progress line. */
static enum dt_status
run_share(struct eval_run *e, struct dt_error *err)
{
	struct eval_sums *s = &e->s;
	int rank = dt_comm_rank(e->comm), size = dt_comm_size(e->comm);
	int64_t n = e->src.n, lo = n * rank / size, hi = n * (rank + 1) / size;
	int64_t in = dt_model_input_size(e->cm.model), b = e->batch;
	float *x = dt_xalloc_floats((size_t)(b * in));	/* (B, in) */
	int32_t *y = dt_xmalloc((size_t)(b * e->lps), sizeof *y);
	/* (B, lps) */
	int64_t *idx = dt_xmalloc((size_t)b, sizeof *idx);	/* (B) */

	dt_progress_task_begin(&e->shown, "eval", n, 0);
	for (int64_t i = lo; i < hi; i += b) {
		int64_t count = hi - i < b ? hi - i : b, correct = 0, osz;
		double ls = 0;

		for (int64_t j = 0; j < count; j++)
			idx[j] = i + j;
		dt_source_gather(&e->src, idx, count, x, y);
		if (e->regress) {
			/* y holds the targets (source.h). */
			const float *t = (const float *)(const void *)y;

			dt_model_eval_targets(e->cm.model, x, t, count, &ls);
			s->v[0] += ls;
			count_regress(s, dt_cmd_model_logits(&e->cm, &osz), t,
				      count, e->lps);
			dt_progress_task_update(&e->shown, (i + count - lo) *
						n / (hi - lo));
			continue;
		}
		dt_model_eval(e->cm.model, x, y, count, &ls, &correct);
		s->v[0] += ls;
		s->v[1] += (double)correct;
		count_batch(s, dt_cmd_model_logits(&e->cm, &osz), y,
			    count * e->lps, e->a.top_k);
		dt_progress_task_update(&e->shown, (i + count - lo) * n /
					(hi - lo));
	}
	dt_progress_task_end(&e->shown);
	free(x);
	free(y);
	free(idx);
	return dt_comm_allreduce_sum_f64(e->comm, s->v, s->n, err);
}

/* The loss and the accuracies to report: NaN when a label's logits held
 * a NaN (the sums of the others would pass for the model's). */
static void
results(const struct eval_sums *s, double *loss, double *acc, double *top)
{
	double labels = s->v[3], nan = s->v[4] > 0 ? NAN : 0;

	*loss = s->v[0] / labels + nan;
	*acc = s->v[1] / labels + nan;
	*top = s->v[2] / labels + nan;
}

static void
print_per_class(struct eval_sums *s)
{
	int width = 1;

	printf("per-class accuracy:\n");
	for (int64_t c = 0; c < s->classes; c++) {
		double k = per_class_count(s)[c];

		printf("  class %lld: %.4f (%.0f of %.0f)\n", (long long)c,
		       k > 0 ? per_class_correct(s)[c] / k : 0.0,
		       per_class_correct(s)[c], k);
	}
	printf("confusion matrix (a row per label, a column per "
	       "prediction):\n");
	for (double top = s->v[3]; top >= 10; top /= 10)
		width++;
	for (int64_t r = 0; r < s->classes; r++) {
		for (int64_t c = 0; c < s->classes; c++)
			printf("%s%*.0f", c ? " " : "  ", width,
			       confusion(s)[r * s->classes + c]);
		putchar('\n');
	}
}

/* A regression's figures over all outputs: mean squared and absolute
 * error per value, and R^2 = 1 - sum of squared errors / sum of squares
 * about each output's mean (the outputs weighted by their variance);
 * r2 per output into r2_out[k] when not NULL. */
static void
regress_results(struct eval_sums *s, int64_t k, double *mse, double *mae,
		double *r2, double *r2_out)
{
	double n = s->v[3], sse = 0, sae = 0, sst = 0;

	for (int64_t j = 0; j < k; j++) {
		double *o = output_sums(s, j);
		double ss = o[3] - o[2] * o[2] / n;

		sse += o[0];
		sae += o[1];
		sst += ss;
		if (r2_out != NULL)
			r2_out[j] = 1.0 - o[0] / ss;
	}
	*mse = sse / (n * (double)k);
	*mae = sae / (n * (double)k);
	*r2 = 1.0 - sse / sst;
}

static void
print_regress(struct eval_run *e)
{
	double mse, mae, r2;
	double *r2_out = dt_xmalloc((size_t)e->lps, sizeof *r2_out);

	regress_results(&e->s, e->lps, &mse, &mae, &r2, r2_out);
	printf("%s: checkpoint of step %lld, %s: %lld samples of %lld "
	       "output%s\n", e->line.operand, (long long)e->cm.step, e->what,
	       (long long)e->src.n, (long long)e->lps, e->lps == 1 ? "" : "s");
	printf("mse %.6g\nmae %.6g\nr2 %.6f\n", mse, mae, r2);
	for (int64_t j = 0; e->lps > 1 && j < e->lps; j++)
		printf("  output %lld: r2 %.6f\n", (long long)j, r2_out[j]);
	free(r2_out);
}

static void
json_regress(struct json_object *o, struct eval_run *e)
{
	double mse, mae, r2;
	double *r2_out = dt_xmalloc((size_t)e->lps, sizeof *r2_out);
	struct json_object *per = json_object_new_array();

	regress_results(&e->s, e->lps, &mse, &mae, &r2, r2_out);
	json_object_object_add(o, "outputs", json_object_new_int64(e->lps));
	json_object_object_add(o, "mse", dt_json_float(mse));
	json_object_object_add(o, "mae", dt_json_float(mae));
	json_object_object_add(o, "r2", dt_json_float(r2));
	for (int64_t j = 0; j < e->lps; j++)
		json_object_array_add(per, dt_json_float(r2_out[j]));
	json_object_object_add(o, "r2_per_output", per);
	free(r2_out);
}

static void
print_text(struct eval_run *e)
{
	struct eval_sums *s = &e->s;
	double loss, acc, top;

	if (e->regress) {
		print_regress(e);
		return;
	}
	results(s, &loss, &acc, &top);
	printf("%s: checkpoint of step %lld, %s: %lld samples",
	       e->line.operand, (long long)e->cm.step, e->what,
	       (long long)e->src.n);
	if (e->lps > 1)
		printf(" of %lld tokens", (long long)e->lps);
	printf("\n");
	if (s->v[4] > 0)
		printf("not a number: the model's logits hold a NaN for %.0f "
		       "of %.0f labels (a diverged checkpoint?)\n", s->v[4],
		       s->v[3]);
	printf("loss %.6f nats per %s\n", loss, e->lps > 1 ? "token" :
	       "sample");
	if (e->lps > 1)
		printf("perplexity %.4f\n", exp(loss));
	printf("accuracy %.6f (%.0f of %.0f)\n", acc, s->v[1], s->v[3]);
	printf("top-%d accuracy %.6f\n", e->a.top_k, top);
	if (s->per_class)
		print_per_class(s);
}

static void
json_per_class(struct json_object *o, struct eval_sums *s)
{
	struct json_object *acc = json_object_new_array();
	struct json_object *cnt = json_object_new_array();
	struct json_object *mat = json_object_new_array();

	for (int64_t c = 0; c < s->classes; c++) {
		double k = per_class_count(s)[c];
		struct json_object *row = json_object_new_array();

		json_object_array_add(acc, k > 0 ?
				      dt_json_float(per_class_correct(s)[c] /
						    k) : NULL);
		json_object_array_add(cnt, json_object_new_int64((int64_t)k));
		for (int64_t j = 0; j < s->classes; j++)
			json_object_array_add(row, json_object_new_int64(
				(int64_t)confusion(s)[c * s->classes + j]));
		json_object_array_add(mat, row);
	}
	json_object_object_add(o, "per_class_accuracy", acc);
	json_object_object_add(o, "class_counts", cnt);
	json_object_object_add(o, "confusion", mat);
}

static void
print_json(struct eval_run *e)
{
	struct json_object *o = json_object_new_object();
	double loss, acc, top;

	results(&e->s, &loss, &acc, &top);
	json_object_object_add(o, "run_dir",
			       json_object_new_string(e->line.operand));
	json_object_object_add(o, "checkpoint",
			       json_object_new_string(e->cm.ckpt));
	json_object_object_add(o, "step", json_object_new_int64(e->cm.step));
	json_object_object_add(o, "data", json_object_new_string(e->what));
	json_object_object_add(o, "samples", json_object_new_int64(e->src.n));
	json_object_object_add(o, "batch", json_object_new_int64(e->batch));
	if (e->regress) {
		json_object_object_add(o, "loss", dt_json_float(
			e->s.v[0] / e->s.v[3]));
		json_regress(o, e);
		goto out;
	}
	json_object_object_add(o, "labels_per_sample",
			       json_object_new_int64(e->lps));
	json_object_object_add(o, "nan_labels",
			       json_object_new_int64((int64_t)e->s.v[4]));
	json_object_object_add(o, "loss", dt_json_float(loss));
	json_object_object_add(o, "accuracy", dt_json_float(acc));
	json_object_object_add(o, "top_k", json_object_new_int(e->a.top_k));
	json_object_object_add(o, "top_k_accuracy", dt_json_float(top));
	if (e->lps > 1)
		json_object_object_add(o, "perplexity",
				       dt_json_float(exp(loss)));
	if (e->s.per_class)
		json_per_class(o, &e->s);
out:
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_SPACED |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* The communicator, the job and the shapes of its model, the split. */
static enum dt_status
eval_open(struct eval_run *e, int64_t step, struct dt_error *err)
{
	enum dt_status st = dt_cmd_comm_new(&e->comm, err);

	if (st == DT_OK)
		st = dt_cmd_model_open(e->line.operand, e->line.sets,
				       e->line.n_sets, step, 0, &e->cm, err);
	if (st != DT_OK)
		return st;
	e->regress = dt_loss_is_regression(e->cm.job->model.loss);
	if (strcmp(e->what, "train") == 0)
		e->which = 0;
	else if (strcmp(e->what, "eval") != 0)
		st = set_source(e->cm.job, e->what, err);
	return st;
}

/* Fetches and opens the split, and checks it against the model. */
static enum dt_status
eval_read(struct eval_run *e, struct dt_error *err)
{
	const struct dt_meter *old;
	struct dt_meter m;
	enum dt_status st;
	int64_t in = dt_model_input_size(e->cm.model);

	st = dt_source_fetch_all(e->cm.job, e->comm, 0, err);
	dt_progress_meter(&e->shown, &m);
	old = dt_meter_use(&m);
	if (st == DT_OK)
		st = dt_source_open(&e->src, e->cm.job, e->which,
				    dt_model_n_classes(e->cm.model),
				    dt_model_targets_per_sample(e->cm.model),
				    EVAL_BATCH, &e->cm.vocab, NULL, err);
	dt_meter_use(old);
	if (st != DT_OK)
		return st;
	/* The inputs as the model was trained on them. */
	dt_cmd_model_inputs(&e->cm, &e->src.ds);
	e->lps = dt_model_labels_per_sample(e->cm.model) +
		 dt_model_targets_per_sample(e->cm.model);
	if (e->src.n == 0)
		return dt_errorf(err, DT_ERR_USAGE, "%s: the job has no %s "
				 "split (give --data train or a source)",
				 e->line.operand, e->what);
	if (e->src.x_size != in || e->src.y_size != e->lps)
		return dt_errorf(err, DT_ERR_DATA, "%s: samples have %lld "
				 "inputs and %lld labels but the model takes "
				 "%lld and predicts %lld", e->what,
				 (long long)e->src.x_size,
				 (long long)e->src.y_size, (long long)in,
				 (long long)e->lps);
	return DT_OK;
}

/* --top-k, the sums, the batch that memory allows, the parameters. */
static enum dt_status
eval_prepare(struct eval_run *e, struct dt_error *err)
{
	struct eval_sums *s = &e->s;
	struct dt_cmd_batch_cost cost = { .cmd = "eval", .dflt = EVAL_BATCH };
	enum dt_status st;

	s->classes = dt_model_n_classes(e->cm.model);
	/* Top-k of more than the classes would be 1 by definition. */
	if (e->regress && e->a.top_k > 0)
		return dt_errorf(err, DT_ERR_USAGE, "--top-k: the model is a "
				 "regression (loss mse), without classes");
	if (e->regress)
		s->n = SUMS_HEAD + (size_t)(4 * e->lps);
	else if (e->a.top_k == 0)
		e->a.top_k = s->classes < 5 ? (int)s->classes : 5;
	else if (e->a.top_k > s->classes)
		return dt_errorf(err, DT_ERR_USAGE, "--top-k %d: the model "
				 "has %lld classes", e->a.top_k,
				 (long long)s->classes);
	s->per_class = !e->regress && e->lps == 1 &&
		       s->classes <= EVAL_MAX_CONFUSION;
	if (!e->regress)
		s->n = SUMS_HEAD + (s->per_class ?
				    (size_t)(s->classes * (s->classes + 2)) :
				    0);
	s->v = dt_xcalloc(s->n, sizeof *s->v);
	/* The batch's inputs, labels and sample indices. */
	cost.asked = e->a.batch;
	cost.local_ranks = dt_comm_local_size(e->comm);
	cost.fixed = (int64_t)(s->n * sizeof *s->v);
	cost.per_sample = 4 * dt_model_input_size(e->cm.model) +
			  4 * e->lps + 8;
	st = dt_cmd_batch_fit(&e->cm, &cost, &e->batch, err);
	if (st == DT_OK)
		st = dt_cmd_model_load(&e->cm, e->batch, err);
	return st;
}

static enum dt_status
eval_output(struct eval_run *e, struct dt_error *err)
{
	if (e->a.json)
		print_json(e);
	else
		print_text(e);
	if (fflush(stdout) != 0)
		return dt_errorf(err, DT_ERR_IO, "writing to standard output "
				 "failed");
	return DT_OK;
}

static int
cmd_eval(int argc, char **argv)
{
	struct eval_run e = { .which = 1 };	/* top_k, batch 0: not given */
	struct dt_error err;
	int64_t step = -1;
	enum dt_status st;
	int rc;

	rc = dt_cmd_parse(&dt_cmd_eval, argc, argv, &e.a, &e.line);
	if (rc >= 0)
		return rc;
	dt_error_clear(&err);
	if (dt_cmd_checkpoint_arg(e.a.checkpoint, &step) != 0) {
		free(e.line.sets);
		return dt_cmd_usage_error(&dt_cmd_eval, "--checkpoint %s: "
					  "expected a step or best",
					  e.a.checkpoint);
	}
	e.what = e.a.data != NULL ? e.a.data : "eval";
	st = eval_open(&e, step, &err);
	free(e.line.sets);
	dt_cmd_progress_init(&e.shown, e.comm);
	if (st == DT_OK)
		st = eval_read(&e, &err);
	if (st == DT_OK)
		st = eval_prepare(&e, &err);
	if (st == DT_OK)
		st = run_share(&e, &err);
	dt_progress_end(&e.shown);
	if (st == DT_OK && dt_comm_rank(e.comm) == 0)
		st = eval_output(&e, &err);
	free(e.s.v);
	dt_source_fini(&e.src);
	dt_cmd_model_close(&e.cm);
	return dt_cmd_comm_finish(e.comm, st, &err);
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
