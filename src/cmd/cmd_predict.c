/* SPDX-License-Identifier: MIT */
/* cmd_predict.c - `dtrain predict RUN_DIR --input FILE -o FILE`: the model of
 * a run's checkpoint on new inputs, written as one NPY array.
 *
 * Inputs: NPY (.npy, .npy.gz: records, then each sample's shape), CSV
 * (.csv, .csv.gz: one row per sample, the model's features alone, or
 * laid out as the job's CSV data with its label or target columns, read
 * and dropped; the first data row decides, a row of another width is
 * refused naming its line and column; a header line is detected (a cell
 * that is not a number) unless --header or --no-header says), IDX (an
 * images file of the MNIST family), and for a text or tokens job its
 * text or token file, cut into windows of data.context tokens at stride
 * data.context with no label after them (dt_text_encode, dt_tokens_load,
 * dt_tokens_window_inputs). Features go through what training applied:
 * the scale and data.normalize's statistics saved in the checkpoint
 * (model_io.h, dt_cmd_model_inputs), or, for a checkpoint without them,
 * data.scale as the job resolves it (idx, npy and csv jobs; a text or
 * tokens job's NPY or CSV holds token ids, checked against the
 * embeddings). Outputs, float32 unless noted, one row per sample:
 *   logits          (N, *out)     the last layer's output (default); for
 *                                 a regression (mse) the predicted values
 *   --probabilities (N, *out)     softmax over the last axis (the loss's
 *                                 output)
 *   --top-k K       (N, [T,] K)   int64 class ids, most likely first, the
 *                                 lower id first on a tie (ranked by the
 *                                 logits: probabilities underflow to 0
 *                                 and tie)
 * Batches of --batch samples, or as many up to 256 as the memory
 * available holds (cmd/model_io.h, dt_cmd_batch_fit), the least of the
 * ranks'. Under mpirun each rank runs a contiguous
 * share of the batches (batches [nb r/R, nb (r+1)/R) of nb), so that a
 * batch holds the same rows on any number of ranks, and the rows are
 * summed into rank 0's array (each row is nonzero on one rank only, so
 * the sum is a copy: the file is the same bits on any number of ranks),
 * which writes the file. */
#include "cmd/cmd.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/model_io.h"
#include "data/data.h"
#include "comm/comm.h"
#include "graph/graph.h"
#include "train/progress.h"
#include "train/rundir.h"
#include "util/alloc.h"
#include "util/meter.h"

#define PREDICT_BATCH 256	/* the batch without --batch */

struct predict_args {
	const char *input;
	const char *output;
	int probabilities;
	int top_k;		/* 0: not asked */
	int batch;		/* 0: sized from memory */
	const char *checkpoint;	/* NULL: the newest */
	int header, no_header;	/* a CSV's first line: names or data */
};

static const struct dt_cmd_opt predict_opts[] = {
	{ .name = "input", .kind = DT_CMD_ARG_STRING,
	  .arg = "file", .offset = offsetof(struct predict_args, input),
	  .flags = DT_CMD_OPT_BARE | DT_CMD_OPT_PATH,
	  .doc = "inputs: NPY, CSV, IDX or the job's text" },
	{ .name = "output", .short_name = 'o', .kind = DT_CMD_ARG_STRING,
	  .arg = "file", .offset = offsetof(struct predict_args, output),
	  .flags = DT_CMD_OPT_BARE | DT_CMD_OPT_PATH,
	  .doc = "the NPY file to write" },
	{ .name = "probabilities", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct predict_args, probabilities),
	  .doc = "write probabilities, not logits" },
	{ .name = "top-k", .kind = DT_CMD_ARG_INT, .arg = "k",
	  .offset = offsetof(struct predict_args, top_k), .min = 1,
	  .max = 1000000, .doc = "write the k most likely class ids" },
	{ .name = "batch", .kind = DT_CMD_ARG_INT, .arg = "n",
	  .offset = offsetof(struct predict_args, batch), .min = 1,
	  .max = 65536, .doc = "samples per batch (default: up to 256)" },
	DT_CMD_OPT_CHECKPOINT_ENTRY(offsetof(struct predict_args,
					     checkpoint)),
	{ .name = "header", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct predict_args, header),
	  .doc = "a CSV input's first line names the columns" },
	{ .name = "no-header", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct predict_args, no_header),
	  .doc = "a CSV input's first line is data" },
	{ .kind = DT_CMD_ARG_END },
};

/* The inputs, whatever the file: n samples of size floats. */
struct inputs {
	int64_t n, size;
	float *x;		/* (n, size), heap */
};

static int
has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* path without a ".gz" ends in suffix. */
static int
is_kind(const char *path, const char *suffix)
{
	char buf[DT_JOB_PATH_MAX];

	snprintf(buf, sizeof buf, "%s", path);
	if (has_suffix(buf, ".gz"))
		buf[strlen(buf) - 3] = '\0';
	return has_suffix(buf, suffix);
}

/* Element i of a buffer of IDX type code or NPY dtype, as a double. */
static double
idx_elem(const void *data, int type, int64_t i)
{
	switch (type) {
	case 0x08: return ((const uint8_t *)data)[i];
	case 0x09: return ((const int8_t *)data)[i];
	case 0x0B: return ((const int16_t *)data)[i];
	case 0x0C: return ((const int32_t *)data)[i];
	case 0x0D: return ((const float *)data)[i];
	default: return ((const double *)data)[i];
	}
}

static double
npy_elem(const void *data, enum dt_npy_dtype t, int64_t i)
{
	switch (t) {
	case DT_NPY_U8: return ((const uint8_t *)data)[i];
	case DT_NPY_I32: return ((const int32_t *)data)[i];
	case DT_NPY_I64: return (double)((const int64_t *)data)[i];
	case DT_NPY_F32: return ((const float *)data)[i];
	case DT_NPY_F64: return ((const double *)data)[i];
	}
	return 0;
}

/* Checks one sample's size against the model's input and allocates. */
static enum dt_status
shape_inputs(struct inputs *in, const char *path, int64_t n, int64_t size,
	     int64_t want, struct dt_error *err)
{
	if (n < 1)
		return dt_errorf(err, DT_ERR_DATA, "%s: no samples", path);
	if (size != want)
		return dt_errorf(err, DT_ERR_DATA, "%s: samples have %lld "
				 "values but the model takes %lld", path,
				 (long long)size, (long long)want);
	in->n = n;
	in->size = size;
	in->x = dt_xalloc_floats((size_t)(n * size));
	return DT_OK;
}

static enum dt_status
read_tokens(const struct dt_cmd_model *cm, const char *path,
	    struct inputs *in, int64_t want, struct dt_error *err)
{
	const struct dt_job *job = cm->job;
	int64_t ctx = job->data.context;
	struct dt_token_data td = { 0 };
	enum dt_status st;

	/* Read as windows of one token, then cut into windows of ctx
	 * inputs with no label after them: ctx tokens make one, not the
	 * ctx + 1 of a training sample. */
	if (job->data.format == DT_FORMAT_TEXT)
		st = dt_text_encode(path, &cm->vocab, 1, 1, &td, err);
	else if (job->data.format == DT_FORMAT_LLMC)
		st = dt_tokens_open_shards((char *const *)&path, 1,
					   DT_TOKFILE_LLMC,
					   dt_model_n_classes(cm->model), 1, 1,
					   &td, err);
	else
		st = dt_tokens_load(path, job->data.format == DT_FORMAT_U16 ?
				    2 : (int)job->data.token_bytes,
				    dt_model_n_classes(cm->model), 1, 1, &td,
				    err);
	if (st == DT_OK)
		st = dt_tokens_window_inputs(&td, path, ctx, ctx, err);
	if (st == DT_OK)
		st = shape_inputs(in, path, td.n, ctx, want, err);
	if (st == DT_OK) {
		int32_t *ids = dt_xmalloc((size_t)ctx, sizeof *ids);

		for (int64_t s = 0; s < td.n; s++) {
			dt_tokens_gather(&td, &s, 1, ids, NULL);
			for (int64_t t = 0; t < ctx; t++)
				in->x[s * ctx + t] = (float)ids[t];
		}
		free(ids);
	}
	dt_tokens_fini(&td);
	return st;
}

/* A text or tokens model takes token ids: whole numbers below the vocab
 * of every embedding that reads the input. An NPY or CSV file may hold
 * anything; the embedding would abort on it. */
static enum dt_status
check_token_ids(const struct dt_cmd_model *cm, const char *path,
		const struct inputs *in, struct dt_error *err)
{
	const struct dt_job *job = cm->job;
	const char *name = NULL;
	int64_t vocab = -1;

	if (job->data.format != DT_FORMAT_TEXT &&
	    !dt_job_format_token_ids(job->data.format))
		return DT_OK;
	for (int i = 0; i < job->model.n_layers; i++) {
		const struct dt_layer_spec *l = &job->model.layers[i];
		int reads_input = l->n_inputs == 0 ? i == 0 :
				  strcmp(l->inputs[0], "input") == 0;

		if (l->kind == DT_LAYER_EMBEDDING && reads_input &&
		    (vocab < 0 || l->vocab < vocab)) {
			vocab = l->vocab;
			name = l->name;
		}
	}
	for (int64_t i = 0; vocab > 0 && i < in->n * in->size; i++) {
		float v = in->x[i];

		if (!(v >= 0.0f && v < (float)vocab && v == floorf(v)))
			return dt_errorf(err, DT_ERR_DATA, "%s: sample %lld "
					 "(from 0), input %lld: %g is not a "
					 "token id: embedding %s takes whole "
					 "numbers from 0 to %lld", path,
					 (long long)(i / in->size),
					 (long long)(i % in->size), (double)v,
					 name, (long long)(vocab - 1));
	}
	return DT_OK;
}

/* What one `dtrain predict` holds from start to end. */
struct predict_run {
	struct predict_args a;
	struct dt_cmd_line line;
	struct dt_cmd_model cm;
	struct inputs in;
	struct dt_comm *comm;
	struct dt_progress shown;
	float *out;		/* (n, width) logits or probabilities */
	float *pad;		/* (batch, size): a short last batch */
	double *ids;		/* (n, rows, k) for --top-k */
	int64_t width, classes, rows;	/* per sample: outputs, classes,
					 * predictions (T, or 1) */
	int ld;			/* the last layer's output: ld dims */
	int64_t ldims[4];
	int64_t batch;
};

/* The scale of inputs stored as bytes (u8) or not, when the checkpoint
 * says none: data.scale, or what the readers resolve without it. Token
 * ids go in as they are. */
static float
input_scale(const struct dt_cmd_model *cm, int bytes)
{
	enum dt_data_format fmt = cm->job->data.format;

	if (fmt == DT_FORMAT_TEXT || dt_job_format_token_ids(fmt))
		return 1.0f;
	if (cm->has_norm)
		return (float)cm->norm.scale;
	if (cm->job->data.scale > 0)
		return (float)cm->job->data.scale;
	return bytes ? 1.0f / 255.0f : 1.0f;
}

/* The checkpoint's normalisation over in's samples (none for token
 * ids, whose jobs have none). */
static void
normalize_inputs(const struct dt_cmd_model *cm, struct inputs *in)
{
	if (cm->has_norm && cm->norm.kind != DT_NORM_NONE)
		dt_norm_apply(&cm->norm, in->x, in->n);
}

static enum dt_status
read_npy(const struct dt_cmd_model *cm, const char *path, struct inputs *in,
	 int64_t want, struct dt_error *err)
{
	struct dt_npy a = { 0 };
	int64_t size = 1;
	float scale;
	enum dt_status st = dt_npy_read(path, &a, err);

	if (st == DT_OK && a.n_dims < 1)
		st = dt_errorf(err, DT_ERR_DATA, "%s: a scalar, not an array "
			       "of samples", path);
	if (st == DT_OK) {
		for (int d = 1; d < a.n_dims; d++)
			size *= a.dims[d];
		st = shape_inputs(in, path, a.dims[0], size, want, err);
	}
	scale = input_scale(cm, a.dtype == DT_NPY_U8);
	for (int64_t i = 0; st == DT_OK && i < in->n * size; i++)
		in->x[i] = (float)npy_elem(a.data, a.dtype, i) * scale;
	dt_npy_fini(&a);
	return st;
}

static enum dt_status
read_csv(const struct predict_run *p, const char *path, struct inputs *in,
	 int64_t want, struct dt_error *err)
{
	const struct dt_cmd_model *cm = &p->cm;
	enum dt_data_format fmt = cm->job->data.format;
	int64_t targets = dt_model_targets_per_sample(cm->model);
	struct dt_dataset ds = { 0 };
	struct dt_csv_opts o = {
		.header = p->a.header ? 1 : p->a.no_header ? 0 :
			  DT_CSV_HEADER_DETECT,
		.label_col = fmt == DT_FORMAT_CSV ?
			     (int)cm->job->data.label_column : -1,
		.delimiter = ',',
		.n_classes = INT32_MAX,
		.n_targets = targets,
		.n_features = want,
		.scale = input_scale(cm, 0),
	};
	enum dt_status st = dt_dataset_load_csv(path, &o, &ds, err);

	if (st == DT_OK)
		st = shape_inputs(in, path, ds.n, ds.sample_size, want, err);
	if (st == DT_OK) {
		int64_t *idx = dt_xmalloc((size_t)ds.n, sizeof *idx);

		for (int64_t i = 0; i < ds.n; i++)
			idx[i] = i;
		dt_dataset_gather(&ds, idx, ds.n, in->x, NULL);
		free(idx);
	}
	dt_dataset_fini(&ds);
	return st;
}

/* Reads path, by its kind, into in (n samples of the model's input),
 * scaled and normalised as in training. */
static enum dt_status
read_inputs(const struct predict_run *p, const char *path,
	    struct inputs *in, struct dt_error *err)
{
	const struct dt_cmd_model *cm = &p->cm;
	int64_t want = dt_model_input_size(cm->model);
	enum dt_data_format fmt = cm->job->data.format;
	struct dt_idx idx = { 0 };
	int64_t size = 1;
	float scale;
	enum dt_status st;

	memset(in, 0, sizeof *in);
	if (is_kind(path, ".npy"))
		st = read_npy(cm, path, in, want, err);
	else if (is_kind(path, ".csv"))
		st = read_csv(p, path, in, want, err);
	else if (fmt == DT_FORMAT_TEXT || dt_job_format_token_ids(fmt))
		return read_tokens(cm, path, in, want, err);
	else {
		st = dt_idx_read(path, &idx, err);
		if (st == DT_OK) {
			for (int d = 1; d < idx.n_dims; d++)
				size *= idx.dims[d];
			st = shape_inputs(in, path, idx.dims[0], size, want,
					  err);
		}
		scale = input_scale(cm, idx.type == 0x08);
		for (int64_t i = 0; st == DT_OK && i < in->n * size; i++)
			in->x[i] = (float)idx_elem(idx.data, idx.type, i) *
				   scale;
		dt_idx_fini(&idx);
	}
	if (st == DT_OK)
		normalize_inputs(cm, in);
	return st;
}

/* The k largest of p (n values) into ids, largest first, the lower id
 * first on a tie (a partial selection sort: k is small). */
static void
top_k(const float *p, int64_t n, int k, double *ids)
{
	for (int j = 0; j < k; j++) {
		int64_t best = -1;

		for (int64_t c = 0; c < n; c++) {
			int taken = 0;

			for (int q = 0; q < j && !taken; q++)
				taken = (int64_t)ids[q] == c;
			if (!taken && (best < 0 || p[c] > p[best]))
				best = c;
		}
		ids[j] = (double)best;
	}
}

struct npy_out {
	const char *descr;	/* "<f4" or "<i8" */
	int n_dims;
	int64_t dims[6];
	const void *data;
	size_t bytes;
};

/* Writes an NPY v1.0 file: the header dict padded with spaces to a
 * multiple of 64 bytes with its newline (numpy/lib/format.py). */
static enum dt_status
write_npy(FILE *f, void *ctx, struct dt_error *err)
{
	const struct npy_out *o = ctx;
	char dict[256], shape[160] = "";
	size_t len, pad;
	unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0 };

	for (int d = 0; d < o->n_dims; d++) {
		size_t at = strlen(shape);

		snprintf(shape + at, sizeof shape - at, "%lld,%s",
			 (long long)o->dims[d], d + 1 < o->n_dims ? " " : "");
	}
	if (o->n_dims > 1)	/* (3,) for one axis, (3, 4) for more */
		shape[strlen(shape) - 1] = '\0';
	snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': "
		 "False, 'shape': (%s), }", o->descr, shape);
	len = strlen(dict);
	pad = 64 - (10 + len + 1) % 64;
	if (pad == 64)
		pad = 0;
	pre[8] = (unsigned char)((len + pad + 1) & 0xFF);
	pre[9] = (unsigned char)((len + pad + 1) >> 8);
	if (fwrite(pre, 1, 10, f) != 10 || fwrite(dict, 1, len, f) != len)
		goto fail;
	for (size_t i = 0; i < pad; i++)
		if (fputc(' ', f) == EOF)
			goto fail;
	if (fputc('\n', f) == EOF ||
	    fwrite(o->data, 1, o->bytes, f) != o->bytes)
		goto fail;
	return DT_OK;
fail:
	return dt_errorf(err, DT_ERR_IO, "write failed: %s", strerror(errno));
}

/* The usage errors of the options alone: an exit status, or -1. */
static int
check_args(const struct predict_args *a, int64_t *step)
{
	if (a->input == NULL || a->output == NULL)
		return dt_cmd_usage_error(&dt_cmd_predict, "%s",
					  a->input == NULL ?
					  "--input is required" :
					  "-o is required");
	if (a->header && a->no_header)
		return dt_cmd_usage_error(&dt_cmd_predict, "%s",
					  "--header and --no-header exclude "
					  "each other");
	if (a->top_k > 0 && a->probabilities)
		return dt_cmd_usage_error(&dt_cmd_predict, "%s",
					  "--top-k and --probabilities "
					  "exclude each other");
	if (dt_cmd_checkpoint_arg(a->checkpoint, step) != 0)
		return dt_cmd_usage_error(&dt_cmd_predict, "--checkpoint %s: "
					  "expected a step or best",
					  a->checkpoint);
	return -1;
}

/* The communicator, the job and its model's shapes, the inputs. */
static enum dt_status
predict_open(struct predict_run *p, int64_t step, struct dt_error *err)
{
	const struct dt_meter *old;
	struct dt_meter m;
	enum dt_status st = dt_cmd_comm_new(&p->comm, err);

	if (st == DT_OK)
		st = dt_cmd_model_open(p->line.operand, NULL, 0, step, 0,
				       &p->cm, err);
	if (st == DT_OK && (p->a.top_k > 0 || p->a.probabilities) &&
	    p->cm.job->model.loss != DT_LOSS_SOFTMAX_CROSS_ENTROPY)
		st = dt_errorf(err, DT_ERR_USAGE, "%s: --probabilities and "
			       "--top-k need a softmax_cross_entropy model",
			       p->line.operand);
	dt_cmd_progress_init(&p->shown, st == DT_OK ? p->comm : NULL);
	dt_progress_meter(&p->shown, &m);
	old = dt_meter_use(&m);
	if (st == DT_OK)
		st = read_inputs(p, p->a.input, &p->in, err);
	if (st == DT_OK)
		st = check_token_ids(&p->cm, p->a.input, &p->in, err);
	dt_meter_use(old);
	return st;
}

/* The batch that memory allows, the least over the ranks (a batch is
 * the same rows on any number of ranks). */
static enum dt_status
predict_batch(struct predict_run *p, struct dt_error *err)
{
	struct dt_cmd_batch_cost cost = {
		.cmd = "predict", .asked = p->a.batch, .dflt = PREDICT_BATCH,
		.local_ranks = dt_comm_local_size(p->comm),
		/* The padded last batch's inputs. */
		.per_sample = 4 * p->in.size,
	};
	enum dt_status st;
	int neg;

	/* The output on every rank; rank 0 converts the ids to int64. */
	if (p->a.top_k > 0)
		cost.fixed = p->in.n * p->rows * p->a.top_k * 8 * 2;
	else
		cost.fixed = p->in.n * p->width * 4;
	st = dt_cmd_batch_fit(&p->cm, &cost, &p->batch, err);
	if (st != DT_OK || dt_comm_size(p->comm) == 1)
		return st;
	neg = -(int)p->batch;
	st = dt_comm_allreduce_max_int(p->comm, &neg, 1, err);
	p->batch = -neg;
	return st;
}

/* The output's shape, the batch, the parameters and the buffers. */
static enum dt_status
predict_prepare(struct predict_run *p, struct dt_error *err)
{
	enum dt_status st;

	dt_cmd_model_logits_shape(&p->cm, &p->ld, p->ldims);
	p->classes = p->ldims[p->ld - 1];
	p->rows = 1;
	for (int d = 0; d < p->ld; d++)
		p->rows *= p->ldims[d];
	p->width = p->rows;
	p->rows /= p->classes;
	if (p->a.top_k > p->classes)
		return dt_errorf(err, DT_ERR_USAGE, "--top-k %d: the model "
				 "has %lld classes", p->a.top_k,
				 (long long)p->classes);
	st = predict_batch(p, err);
	if (st == DT_OK)
		st = dt_cmd_model_load(&p->cm, p->batch, err);
	if (st != DT_OK)
		return st;
	if (p->a.top_k > 0)
		p->ids = dt_xcalloc((size_t)(p->in.n * p->rows * p->a.top_k),
				    sizeof *p->ids);
	else
		p->out = dt_xcalloc((size_t)(p->in.n * p->width),
				    sizeof *p->out);
	/* A last batch short of the batch runs padded with zeros to the
	 * full size: every product then has the rows of any other batch,
	 * and a BLAS whose rounding of a row depends on the call's row
	 * count (OpenBLAS's Haswell kernels for a call's last rows) rounds
	 * it as in a full batch. */
	if (p->in.n % p->batch != 0)
		p->pad = dt_xcalloc((size_t)(p->batch * p->in.size),
				    sizeof *p->pad);
	return DT_OK;
}

/* One batch of count rows from sample i into the output. */
static void
predict_one(struct predict_run *p, int64_t i, int64_t count)
{
	const float *x = p->in.x + i * p->in.size, *res;
	int64_t osz;

	if (count < p->batch) {
		memcpy(p->pad, x, (size_t)(count * p->in.size) *
		       sizeof *p->pad);
		x = p->pad;
	}
	dt_model_eval(p->cm.model, x, NULL, p->batch, NULL, NULL);
	if (p->a.probabilities)
		res = dt_model_probs(p->cm.model);
	else
		res = dt_cmd_model_logits(&p->cm, &osz);
	if (p->out != NULL) {
		memcpy(p->out + i * p->width, res, (size_t)(count * p->width) *
		       sizeof *p->out);
		return;
	}
	for (int64_t r = 0; r < count * p->rows; r++)
		top_k(res + r * p->classes, p->classes, p->a.top_k,
		      p->ids + (i * p->rows + r) * p->a.top_k);
}

/* This rank's share of whole batches, then the sum into rank 0. */
static enum dt_status
predict_share(struct predict_run *p, struct dt_error *err)
{
	int rank = dt_comm_rank(p->comm), size = dt_comm_size(p->comm);
	int64_t n = p->in.n, b = p->batch, nb = (n + b - 1) / b;
	int64_t lo = nb * rank / size * b, hi = nb * (rank + 1) / size * b;

	if (hi > n)
		hi = n;
	/* Rank 0's share stands for all on the progress line. */
	dt_progress_task_begin(&p->shown, "predict", n, 0);
	for (int64_t i = lo; i < hi; i += b) {
		dt_progress_task_update(&p->shown, (i - lo) * n / (hi - lo));
		predict_one(p, i, hi - i < b ? hi - i : b);
	}
	dt_progress_task_end(&p->shown);
	if (p->out != NULL)
		return dt_comm_allreduce_sum_f32(p->comm, p->out,
						 (size_t)(n * p->width), err);
	return dt_comm_allreduce_sum_f64(p->comm, p->ids,
					 (size_t)(n * p->rows * p->a.top_k),
					 err);
}

/* Rank 0: the NPY file, atomically. */
static enum dt_status
predict_write(struct predict_run *p, struct dt_error *err)
{
	struct npy_out o = { .n_dims = 1, .dims = { p->in.n } };
	int64_t *lids = NULL;
	enum dt_status st;

	if (p->ids != NULL) {
		size_t n = (size_t)(p->in.n * p->rows * p->a.top_k);

		lids = dt_xmalloc(n, sizeof *lids);
		for (size_t i = 0; i < n; i++)
			lids[i] = (int64_t)p->ids[i];
		for (int d = 0; d < p->ld - 1; d++)
			o.dims[o.n_dims++] = p->ldims[d];
		o.dims[o.n_dims++] = p->a.top_k;
		o.descr = "<i8";
		o.data = lids;
		o.bytes = n * sizeof *lids;
	} else {
		for (int d = 0; d < p->ld; d++)
			o.dims[o.n_dims++] = p->ldims[d];
		o.descr = "<f4";
		o.data = p->out;
		o.bytes = (size_t)(p->in.n * p->width) * sizeof *p->out;
	}
	st = dt_rundir_write_atomic(p->a.output, write_npy, &o, err);
	free(lids);
	if (st == DT_OK)
		fprintf(stderr, "%s: %s of %lld samples (checkpoint of step "
			"%lld)\n", p->a.output, p->ids != NULL ?
			"top-k class ids" : p->a.probabilities ?
			"probabilities" :
			dt_loss_is_regression(p->cm.job->model.loss) ?
			"predicted values" : "logits", (long long)p->in.n,
			(long long)p->cm.step);
	return st;
}

static int
cmd_predict(int argc, char **argv)
{
	struct predict_run p = { .a.batch = 0 };	/* 0: not given */
	const char *inputs[2] = { NULL, NULL };	/* --input, end */
	struct dt_error err;
	enum dt_status st;
	int64_t step;
	int rc = dt_cmd_parse(&dt_cmd_predict, argc, argv, &p.a, &p.line);

	if (rc >= 0)
		return rc;
	free(p.line.sets);
	rc = check_args(&p.a, &step);
	if (rc >= 0)
		return rc;
	dt_error_clear(&err);
	inputs[0] = p.a.input;
	if (dt_cmd_output_check(p.a.output, p.line.operand, NULL, inputs,
				&err) != DT_OK)
		return dt_cmd_usage_error(&dt_cmd_predict, "%s", err.msg);
	st = predict_open(&p, step, &err);
	if (st == DT_OK)
		st = predict_prepare(&p, &err);
	if (st == DT_OK)
		st = predict_share(&p, &err);
	dt_progress_end(&p.shown);
	if (st == DT_OK && dt_comm_rank(p.comm) == 0)
		st = predict_write(&p, &err);
	free(p.out);
	free(p.pad);
	free(p.ids);
	free(p.in.x);
	dt_cmd_model_close(&p.cm);
	return dt_cmd_comm_finish(p.comm, st, &err);
}

const struct dt_cmd dt_cmd_predict = {
	.name = "predict",
	.summary = "run a run's model on new inputs, writing NPY",
	.opts = predict_opts,
	.operand = "run_dir",
	.operand_noun = "run directory",
	.operand_doc = "the run directory",
	.run = cmd_predict,
};
