/* SPDX-License-Identifier: MIT */
/* cmd_predict.c - `dtrain predict RUN_DIR --input FILE -o FILE`: the model of
 * a run's checkpoint on new inputs, written as one NPY array.
 *
 * Inputs: NPY (.npy, .npy.gz: records, then each sample's shape), CSV
 * (.csv, .csv.gz: laid out as the job's CSV data, the label column
 * present and ignored), IDX (an images file of the MNIST family), and for
 * a text or tokens job its text or token file, cut into windows of
 * data.context tokens at stride data.context with no label after them
 * (dt_text_encode, dt_tokens_load, dt_tokens_window_inputs). Features
 * are multiplied by data.scale as in training (idx, npy and csv jobs; a
 * text or tokens job's NPY or CSV holds token ids, checked against the
 * embeddings). Outputs, float32 unless noted, one row per sample:
 *   logits          (N, *out)     the last layer's output (default)
 *   --probabilities (N, *out)     softmax over the last axis (the loss's
 *                                 output)
 *   --top-k K       (N, [T,] K)   int64 class ids, most likely first, the
 *                                 lower id first on a tie
 * Batches of --batch samples. Under mpirun each rank runs a contiguous
 * share of the batches (batches [nb r/R, nb (r+1)/R) of nb), so that a
 * batch holds the same rows on any number of ranks, and the rows are summed into rank 0's array
 * (each row is nonzero on one rank only, so the sum is a copy: the file is
 * the same bits on any number of ranks), which writes the file. */
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

struct predict_args {
	const char *input;
	const char *output;
	int probabilities;
	int top_k;		/* 0: not asked */
	int batch;
	const char *checkpoint;	/* NULL: the newest */
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
	  .max = 65536, .doc = "samples per batch (default 256)" },
	DT_CMD_OPT_CHECKPOINT_ENTRY(offsetof(struct predict_args,
					     checkpoint)),
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

/* Reads path, by its kind, into in (n samples of the model's input). */
static enum dt_status
read_inputs(const struct dt_cmd_model *cm, const char *path,
	    struct inputs *in, struct dt_error *err)
{
	int64_t want = dt_model_input_size(cm->model);
	enum dt_data_format fmt = cm->job->data.format;
	/* data.scale is for idx, npy and csv data; token ids go in as
	 * they are (its default, 1/255, would make them fractions). */
	float scale = fmt == DT_FORMAT_TEXT || dt_job_format_token_ids(fmt) ?
		      1.0f : cm->job->data.scale > 0 ?
		      (float)cm->job->data.scale : 1.0f;
	enum dt_status st;

	memset(in, 0, sizeof *in);
	if (is_kind(path, ".npy")) {
		struct dt_npy a = { 0 };
		int64_t size = 1;

		st = dt_npy_read(path, &a, err);
		if (st == DT_OK && a.n_dims < 1)
			st = dt_errorf(err, DT_ERR_DATA, "%s: a scalar, not "
				       "an array of samples", path);
		if (st == DT_OK) {
			for (int d = 1; d < a.n_dims; d++)
				size *= a.dims[d];
			st = shape_inputs(in, path, a.dims[0], size, want,
					  err);
		}
		for (int64_t i = 0; st == DT_OK && i < in->n * size; i++)
			in->x[i] = (float)npy_elem(a.data, a.dtype, i) * scale;
		dt_npy_fini(&a);
		return st;
	}
	if (is_kind(path, ".csv")) {
		struct dt_dataset ds = { 0 };
		struct dt_csv_opts o = {
			.header = fmt == DT_FORMAT_CSV ? cm->job->data.header
			: 0,
			.label_col = fmt == DT_FORMAT_CSV ?
				     (int)cm->job->data.label_column : -1,
			.delimiter = ',',
			.n_classes = INT32_MAX,
			.scale = scale,
		};

		st = dt_dataset_load_csv(path, &o, &ds, err);
		if (st == DT_OK)
			st = shape_inputs(in, path, ds.n, ds.sample_size, want,
					  err);
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
	if (fmt == DT_FORMAT_TEXT || dt_job_format_token_ids(fmt))
		return read_tokens(cm, path, in, want, err);
	{
		struct dt_idx idx = { 0 };
		int64_t size = 1;

		st = dt_idx_read(path, &idx, err);
		if (st == DT_OK) {
			for (int d = 1; d < idx.n_dims; d++)
				size *= idx.dims[d];
			st = shape_inputs(in, path, idx.dims[0], size, want,
					  err);
		}
		for (int64_t i = 0; st == DT_OK && i < in->n * size; i++)
			in->x[i] = (float)idx_elem(idx.data, idx.type, i) *
				   scale;
		dt_idx_fini(&idx);
		return st;
	}
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

static int
cmd_predict(int argc, char **argv)
{
	struct predict_args a = { .batch = 256 };
	struct dt_cmd_line line;
	struct dt_cmd_model cm = { 0 };
	struct inputs in = { 0 };
	struct dt_comm *comm = NULL;
	struct dt_error err;
	struct npy_out o = { 0 };
	float *out = NULL;	/* (n, width) logits or probabilities */
	float *pad = NULL;	/* (batch, size): a short last batch */
	double *ids = NULL;	/* (n, rows, k) for --top-k */
	int64_t width = 0, classes = 0, rows = 0;
	int ld;
	int64_t ldims[4], step;
	struct dt_progress shown;
	const struct dt_meter *old;
	struct dt_meter m;
	enum dt_status st;
	int rc = dt_cmd_parse(&dt_cmd_predict, argc, argv, &a, &line);

	if (rc >= 0)
		return rc;
	free(line.sets);
	if (a.input == NULL || a.output == NULL)
		return dt_cmd_usage_error(&dt_cmd_predict, "%s", a.input ==
					  NULL ? "--input is required" :
					  "-o is required");
	if (a.top_k > 0 && a.probabilities)
		return dt_cmd_usage_error(&dt_cmd_predict, "%s",
					  "--top-k and --probabilities "
					  "exclude each other");
	if (dt_cmd_checkpoint_arg(a.checkpoint, &step) != 0)
		return dt_cmd_usage_error(&dt_cmd_predict, "--checkpoint %s: "
					  "expected a step or best",
					  a.checkpoint);
	dt_error_clear(&err);
	st = dt_cmd_comm_new(&comm, &err);
	if (st == DT_OK)
		st = dt_cmd_model_open(line.operand, NULL, 0, step, a.batch,
				       &cm, &err);
	if (st == DT_OK && (a.top_k > 0 || a.probabilities) &&
	    cm.job->model.loss != DT_LOSS_SOFTMAX_CROSS_ENTROPY)
		st = dt_errorf(&err, DT_ERR_USAGE, "%s: --probabilities and "
			       "--top-k need a softmax_cross_entropy model",
			       line.operand);
	dt_cmd_progress_init(&shown, st == DT_OK ? comm : NULL);
	dt_progress_meter(&shown, &m);
	old = dt_meter_use(&m);
	if (st == DT_OK)
		st = read_inputs(&cm, a.input, &in, &err);
	if (st == DT_OK)
		st = check_token_ids(&cm, a.input, &in, &err);
	dt_meter_use(old);
	if (st == DT_OK) {
		int rank = dt_comm_rank(comm), size = dt_comm_size(comm);
		/* Whole batches per rank: a batch is the same rows whatever
		 * the number of ranks, so BLAS rounds every row the same. */
		int64_t nb = (in.n + a.batch - 1) / a.batch;
		int64_t lo = nb * rank / size * a.batch;
		int64_t hi = nb * (rank + 1) / size * a.batch;

		dt_cmd_model_logits_shape(&cm, &ld, ldims);
		classes = ldims[ld - 1];
		rows = 1;
		for (int d = 0; d < ld; d++)
			rows *= ldims[d];
		width = rows;
		rows /= classes;
		if (a.top_k > classes)
			st = dt_errorf(&err, DT_ERR_USAGE, "--top-k %d: the model "
				       "has %lld classes", a.top_k,
				       (long long)classes);
		else if (a.top_k > 0)
			ids = dt_xcalloc((size_t)(in.n * rows * a.top_k),
					 sizeof *ids);
		else
			out = dt_xcalloc((size_t)(in.n * width), sizeof *out);
		if (hi > in.n)
			hi = in.n;
		/* Rank 0's share stands for all on the progress line. */
		dt_progress_task_begin(&shown, "predict", in.n, 0);
		/* A last batch short of --batch runs padded with zeros to
		 * the full size: every product then has the rows of any
		 * other batch, and a BLAS whose rounding of a row depends on
		 * the call's row count (OpenBLAS's Haswell kernels for a
		 * call's last rows) rounds it as in a full batch. */
		if (in.n % a.batch != 0)
			pad = dt_xcalloc((size_t)(a.batch * in.size),
					 sizeof *pad);
		for (int64_t i = lo; st == DT_OK && i < hi; i += a.batch) {
			int64_t count = hi - i < a.batch ? hi - i : a.batch;
			const float *x = in.x + i * in.size;
			int64_t osz;
			const float *res;

			dt_progress_task_update(&shown, (i - lo) * in.n /
						(hi - lo));
			if (count < a.batch) {
				memcpy(pad, x, (size_t)(count * in.size) *
				       sizeof *pad);
				x = pad;
			}
			dt_model_eval(cm.model, x, NULL, a.batch, NULL, NULL);
			if (a.probabilities || a.top_k > 0)
				res = dt_model_probs(cm.model);
			else
				res = dt_cmd_model_logits(&cm, &osz);
			if (out != NULL) {
				memcpy(out + i * width, res, (size_t)(count *
				       width) * sizeof *out);
				continue;
			}
			for (int64_t r = 0; r < count * rows; r++)
				top_k(res + r * classes, classes, a.top_k,
				      ids + (i * rows + r) * a.top_k);
		}
		dt_progress_task_end(&shown);
	}
	dt_progress_end(&shown);
	if (st == DT_OK && out != NULL)
		st = dt_comm_allreduce_sum_f32(comm, out,
					       (size_t)(in.n * width), &err);
	if (st == DT_OK && ids != NULL)
		st = dt_comm_allreduce_sum_f64(comm, ids,
					       (size_t)(in.n * rows * a.top_k),
					       &err);
	if (st == DT_OK && dt_comm_rank(comm) == 0) {
		int64_t *lids = NULL;

		o.dims[0] = in.n;
		o.n_dims = 1;
		if (ids != NULL) {
			size_t n = (size_t)(in.n * rows * a.top_k);

			lids = dt_xmalloc(n, sizeof *lids);
			for (size_t i = 0; i < n; i++)
				lids[i] = (int64_t)ids[i];
			for (int d = 0; d < ld - 1; d++)
				o.dims[o.n_dims++] = ldims[d];
			o.dims[o.n_dims++] = a.top_k;
			o.descr = "<i8";
			o.data = lids;
			o.bytes = n * sizeof *lids;
		} else {
			for (int d = 0; d < ld; d++)
				o.dims[o.n_dims++] = ldims[d];
			o.descr = "<f4";
			o.data = out;
			o.bytes = (size_t)(in.n * width) * sizeof *out;
		}
		st = dt_rundir_write_atomic(a.output, write_npy, &o, &err);
		free(lids);
		if (st == DT_OK)
			fprintf(stderr, "%s: %s of %lld samples (checkpoint "
				"of step %lld)\n", a.output, ids != NULL ?
				"top-k class ids" : a.probabilities ?
				"probabilities" : "logits", (long long)in.n,
				(long long)cm.step);
	}
	free(out);
	free(pad);
	free(ids);
	free(in.x);
	dt_cmd_model_close(&cm);
	return dt_cmd_comm_finish(comm, st, &err);
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
