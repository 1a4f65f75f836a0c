/* SPDX-License-Identifier: MIT */
/* cmd_plan.c - `dtrain plan --dry-run`: what a job would do on N ranks, without
 * allocating the model or loading the data (the IDX files' headers, and
 * one counting pass over a token or text file, for the sample counts and
 * the dataset's memory as run holds it), and whether each data source is
 * already local.
 * A URL source is read from its cached copy when there is one; when there
 * is none yet the plan is made without the sample counts, since fetching
 * is `dtrain fetch`'s and `run`'s business, not a dry run's. */
#include "cmd/cmd.h"

#include <cblas.h>
#include <errno.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "data/data.h"
#include "data/fetch.h"
#include "graph/graph.h"
#include "job/job.h"
#include "optim/schedule.h"
#include "plan/plan.h"
#include "plan/sync_plan.h"
#include "util/alloc.h"
#include "util/cpus.h"

/* One data source of the job and where it is (or would be) on this
 * machine. */
struct plan_source {
	const char *split;		/* "train", "eval" */
	const char *part;		/* "images", "labels", "file" */
	const struct dt_source *src;
	int is_url;
	int cached;			/* the file is here (a local path: it
					 * exists) */
	char path[DT_JOB_PATH_MAX];	/* the local file, or the cache file a
					 * download would make */
};

#define PLAN_MAX_SOURCES 6

/* Whether every shard a local pattern (p->path, of a token format) names
 * is there, as run's loader would find them: sets p->cached. Errors name
 * the key's place and the first shard missing, in run's words, or the
 * pattern's own fault (dt_shards_expand). */
static enum dt_status
pattern_present(const struct dt_job *job, struct plan_source *p,
		const char *key, struct dt_error *err)
{
	char **names = NULL, where[512];
	int64_t n = 0, i;
	enum dt_status st;

	st = dt_shards_expand(p->path, &names, &n, err);
	for (i = 0; st == DT_OK && i < n; i++)
		if (access(names[i], F_OK) != 0) {
			dt_job_where(job, key, where, sizeof where);
			st = dt_errorf(err, DT_ERR_IO, "%s%s: cannot open: %s",
				       where, names[i], strerror(errno));
		}
	dt_shards_names_free(names, n);
	p->cached = st == DT_OK;
	return st;
}

/* Fills out[0..PLAN_MAX_SOURCES) with the sources the job gives, in the
 * order train images, labels, file, then eval's, and *n_out with their
 * number. Looks at the cache without creating it. On error (a source
 * dt_fetch would refuse, no cache directory) returns its status. */
static enum dt_status
find_sources(const struct dt_job *job, struct plan_source *out, int *n_out,
	     struct dt_error *err)
{
	const struct dt_data_split *splits[2] = { &job->data.train,
						  &job->data.eval };
	struct dt_fetch_opts opts;
	int n = 0;

	dt_fetch_opts_init(&opts);
	for (int i = 0; i < 2; i++) {
		const struct dt_source *parts[3] = { &splits[i]->images_src,
						     &splits[i]->labels_src,
						     &splits[i]->file };
		static const char *const part_names[3] = { "images", "labels",
							   "file" };

		for (int k = 0; k < 3; k++) {
			struct plan_source *p = &out[n];
			struct dt_fetch_source fs = {
				.url = parts[k]->path,
				.sha256 = parts[k]->sha256,
				.size = parts[k]->size,
			};
			enum dt_status st;
			char key[64];

			if (parts[k]->path[0] == '\0')
				continue;
			p->split = i == 0 ? "train" : "eval";
			p->part = part_names[k];
			p->src = parts[k];
			p->is_url = strncmp(fs.url, "http://", 7) == 0 ||
				    strncmp(fs.url, "https://", 8) == 0;
			st = dt_fetch_is_cached(&fs, &opts, p->path,
						sizeof p->path, &p->cached,
						err);
			if (st != DT_OK)
				return st;
			snprintf(key, sizeof key, "data.%s.%s", p->split,
				 p->part);
			/* A pattern of local shards: each must be there. */
			if (!p->is_url && !p->cached &&
			    dt_job_format_token_ids(job->data.format) &&
			    dt_shards_is_pattern(p->path)) {
				st = pattern_present(job, p, key, err);
				if (st != DT_OK)
					return st;
			}
			/* A local file that is not there fails run at load
			 * time: say so now, in run's words. */
			if (!p->is_url && !p->cached) {
				char where[512];

				dt_job_where(job, key, where, sizeof where);
				return dt_errorf(err, DT_ERR_IO, "%s%s: cannot "
						 "open: %s", where, p->path,
						 strerror(ENOENT));
			}
			n++;
		}
	}
	*n_out = n;
	return DT_OK;
}

/* The local file of split's part, or NULL when it is a URL that is not in
 * the cache yet. */
static const char *
local_file(const struct plan_source *srcs, int n, const char *split,
	   const char *part)
{
	for (int i = 0; i < n; i++)
		if (strcmp(srcs[i].split, split) == 0 &&
		    strcmp(srcs[i].part, part) == 0)
			return srcs[i].is_url && !srcs[i].cached ? NULL :
			       srcs[i].path;
	return NULL;
}

/* Samples and in-memory bytes of an IDX split, from the headers alone;
 * *n = -1 when the split is absent or its files are not local yet.
 * DT_ERR_JOB when its samples do not fit model.input_shape (a bad job,
 * exit 2, as run says), DT_ERR_DATA for unreadable or unequal files. */
static enum dt_status
peek_split(const struct dt_job *job, const struct plan_source *srcs,
	   int n_srcs, const char *split, int64_t inputs, int64_t *n,
	   int64_t *bytes, struct dt_error *err)
{
	const char *images = local_file(srcs, n_srcs, split, "images");
	const char *labels = local_file(srcs, n_srcs, split, "labels");
	struct dt_idx img, lab;
	enum dt_status st;
	int64_t per = 1;

	*n = -1;
	*bytes = 0;
	if (job->data.format != DT_FORMAT_IDX || images == NULL ||
	    labels == NULL)
		return DT_OK;
	st = dt_idx_peek(images, &img, err);
	if (st == DT_OK)
		st = dt_idx_peek(labels, &lab, err);
	if (st != DT_OK)
		return st;
	if (img.dims[0] != lab.dims[0])
		return dt_errorf(err, DT_ERR_DATA, "%s: images has %lld "
				 "records, labels has %lld (%s)", images,
				 (long long)img.dims[0],
				 (long long)lab.dims[0], labels);
	for (int i = 1; i < img.n_dims; i++)
		per *= img.dims[i];
	if (per != inputs) {
		char where[512];

		/* The same words as run's check after loading. */
		dt_job_where(job, "model.input_shape", where, sizeof where);
		return dt_errorf(err, DT_ERR_JOB, "%s%s data: samples have "
				 "%lld inputs but the model takes %lld", where,
				 strcmp(split, "train") == 0 ? "training" :
				 "eval", (long long)per, (long long)inputs);
	}
	*n = img.dims[0];
	/* u8 images stay bytes, others become floats; labels int32; the
	 * epoch order int64 per sample. */
	*bytes = *n * per * (img.type == 0x08 ? 1 : 4) + *n * 4;
	return DT_OK;
}

/* Tokens a token or text file gives and the bytes each takes in memory,
 * as the loaders keep them (tokens.c: token_bytes each; text.c: uint16
 * ids, uint32 past 65536 distinct units); *n_tokens = -1 when the file is
 * a URL not cached yet. */
static enum dt_status
count_tokens(const struct dt_job *job, const char *path, int64_t *n_tokens,
	     int64_t *elem, struct dt_error *err)
{
	struct dt_text_count c;
	enum dt_status st;
	int chars = job->data.text_unit == DT_JOB_TEXT_UTF8;

	*n_tokens = -1;
	*elem = 0;
	if (path == NULL)
		return DT_OK;
	st = dt_text_count(path, &c, err);
	if (st != DT_OK)
		return st;
	if (job->data.format == DT_FORMAT_TOKENS) {
		*elem = job->data.token_bytes;
		*n_tokens = c.bytes / job->data.token_bytes;
	} else {
		*elem = chars && c.distinct_chars > 65536 ? 4 : 2;
		*n_tokens = chars ? c.chars : c.bytes;
	}
	return DT_OK;
}

/* Samples (windows of data.context tokens and the next one's targets) in
 * n_tokens tokens, as dt_tokens_window cuts them; 0 when too few. */
static int64_t
windows(const struct dt_job *job, int64_t n_tokens)
{
	int64_t ctx = job->data.context;

	return n_tokens < ctx + 1 ? 0 : (n_tokens - ctx - 1) / ctx + 1;
}

/* Samples and in-memory bytes of both splits of a token or text job, as
 * run's dt_source_open makes them: without an eval file the eval split is
 * the last data.eval_fraction of the training file's windows, and holds
 * that file's tokens a second time. -1 samples when unknown or absent. */
static enum dt_status
peek_tokens(const struct dt_job *job, const struct plan_source *srcs,
	    int n_srcs, struct dt_plan_data *d, struct dt_error *err)
{
	int64_t tok, elem, etok, eelem, n;
	enum dt_status st;

	if (job->data.format != DT_FORMAT_TOKENS &&
	    job->data.format != DT_FORMAT_TEXT)
		return DT_OK;
	/* A pattern of shards is mapped, not held: nothing to count. */
	if (dt_shards_is_pattern(job->data.train.file.path) ||
	    dt_shards_is_pattern(job->data.eval.file.path))
		return DT_OK;
	st = count_tokens(job, local_file(srcs, n_srcs, "train", "file"), &tok,
			  &elem, err);
	if (st != DT_OK || tok < 0)
		return st;
	n = windows(job, tok);
	d->n_train = n;
	d->train_bytes = tok * elem;
	if (job->data.eval.file.path[0] != '\0') {
		st = count_tokens(job, local_file(srcs, n_srcs, "eval", "file"),
				  &etok, &eelem, err);
		if (st != DT_OK || etok < 0)
			return st;
		d->n_eval = windows(job, etok);
		d->eval_bytes = etok * eelem;
	} else if (job->data.eval_fraction > 0 && n > 1) {
		int64_t n_eval = (int64_t)((double)n *
					   job->data.eval_fraction);

		if (n_eval < 1)
			n_eval = 1;
		if (n_eval < n) {
			d->n_train = n - n_eval;
			d->n_eval = n_eval;
			d->eval_bytes = tok * elem;
		}
	}
	return DT_OK;
}

/* The "sources" array of the JSON plan. */
static struct json_object *
describe_sources(const struct plan_source *srcs, int n)
{
	struct json_object *a = json_object_new_array();

	for (int i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "split",
				       json_object_new_string(srcs[i].split));
		json_object_object_add(o, "part",
				       json_object_new_string(srcs[i].part));
		json_object_object_add(o, "url", srcs[i].is_url ?
				       json_object_new_string(
					       srcs[i].src->path) : NULL);
		json_object_object_add(o, "cached",
				       json_object_new_boolean(
					       srcs[i].cached));
		json_object_object_add(o, "path",
				       json_object_new_string(srcs[i].path));
		json_object_array_add(a, o);
	}
	return a;
}

static void
print_sources(const struct plan_source *srcs, int n, int64_t n_train,
	      FILE *out)
{
	int missing = 0;

	if (n == 0)
		return;
	fprintf(out, "\ndata sources:\n");
	for (int i = 0; i < n; i++) {
		const struct plan_source *p = &srcs[i];
		char key[32];

		snprintf(key, sizeof key, "%s.%s", p->split, p->part);
		if (p->is_url && p->cached)
			fprintf(out, "  %-13s cached      %s\n%16s(from %s)\n",
				key, p->path, "", p->src->path);
		else if (p->is_url)
			fprintf(out, "  %-13s not cached  %s\n%16s(to %s)\n",
				key, p->src->path, "", p->path);
		else
			fprintf(out, "  %-13s %-11s %s\n", key,
				p->cached ? "local" : "missing", p->path);
		missing += p->is_url && !p->cached;
	}
	if (missing > 0 && n_train < 0)
		fprintf(out, "samples, steps per epoch and dataset memory "
			"unknown until the data is downloaded (dtrain fetch, "
			"or the first run)\n");
}

/* What the features go through before the model (idx, npy, csv): the
 * scale, the rule where the job gives none, and data.normalize. */
static struct json_object *
describe_inputs(const struct dt_job *job)
{
	static const char *const norm[] = { "none", "standard", "minmax" };
	struct json_object *o;
	char text[160];
	enum dt_data_format f = job->data.format;

	if (f != DT_FORMAT_IDX && f != DT_FORMAT_NPY && f != DT_FORMAT_CSV)
		return NULL;
	if (job->data.scale > 0)
		snprintf(text, sizeof text, "%.9g (data.scale)",
			 job->data.scale);
	else if (f == DT_FORMAT_CSV)
		snprintf(text, sizeof text, "1 (CSV numbers go in as read)");
	else
		snprintf(text, sizeof text, "1/255 if the features are stored "
			 "as bytes (uint8), else 1");
	o = json_object_new_object();
	json_object_object_add(o, "scale", json_object_new_string(text));
	json_object_object_add(o, "normalize", json_object_new_string(
				       norm[job->data.normalize]));
	return o;
}

static void
print_inputs(struct json_object *desc, FILE *out)
{
	struct json_object *in, *v;

	if (!json_object_object_get_ex(desc, "inputs", &in) || in == NULL)
		return;
	json_object_object_get_ex(in, "scale", &v);
	fprintf(out, "\ninputs: scale %s", json_object_get_string(v));
	json_object_object_get_ex(in, "normalize", &v);
	if (strcmp(json_object_get_string(v), "none") == 0)
		fprintf(out, "; normalize none\n");
	else
		fprintf(out, "; normalize %s per feature, with statistics of "
			"the training split (computed when the run reads it, "
			"kept in every checkpoint)\n",
			json_object_get_string(v));
}

struct plan_args {
	int dry_run;	/* accepted for clarity; plan never runs anything */
	int ranks;
	int json;
	int print_job;
	const char *link;	/* RATE,LATENCY, or NULL */
	double gflops;		/* stated per-rank GFLOP/s; -1: measure */
};

static double
seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* GFLOP/s of OpenBLAS's sgemm on this machine at threads threads: square
 * products of order 512 (2 x 512^3 FLOPs each) for at least 0.2 s. The
 * model's layers reach less than this (not all of their work is a large
 * product), so the compute time it gives is a lower bound. */
static double
measure_gflops(int threads)
{
	enum { N = 512 };
	float *a = dt_xcalloc((size_t)N * N * 3, sizeof *a);
	float *b = a + N * N, *c = b + N * N;	/* (N, N) each */
	double t0, t;
	int reps = 0;

	for (size_t i = 0; i < (size_t)N * N; i++) {
		a[i] = (float)(i % 7) * 0.25f;
		b[i] = (float)(i % 5) * 0.5f;
	}
	openblas_set_num_threads(threads);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1, a,
		    N, b, N, 0, c, N);	/* warm up */
	t0 = seconds_now();
	do {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N,
			    N, 1, a, N, b, N, 0, c, N);
		reps++;
		t = seconds_now() - t0;
	} while (t < 0.2 || reps < 3);
	free(a);
	return 2.0 * N * N * N * reps / t * 1e-9;
}

/* --link: the per-step estimate added to desc. */
static enum dt_status
add_link(const struct plan_args *a, const struct dt_job *job,
	 const struct dt_plan *plan, struct json_object *desc,
	 struct dt_error *err)
{
	int ps = job->parallel.sync == DT_SYNC_PARAMETER_SERVER;
	int overlap = plan->sync[0].overlap;	/* plan/sync_plan.h */
	struct dt_plan_link link;
	char source[96];
	double gflops = a->gflops;
	enum dt_status st;

	if (a->link == NULL)
		return a->gflops >= 0 ? dt_errorf(err, DT_ERR_USAGE, "--gflops "
						  "needs --link") : DT_OK;
	if (a->gflops == 0)
		return dt_errorf(err, DT_ERR_USAGE, "--gflops: expected a "
				 "number > 0, found \"0\" (leave it out to "
				 "measure)");
	st = dt_plan_link_parse(a->link, &link, err);
	if (st != DT_OK)
		return st;
	if (gflops > 0) {
		snprintf(source, sizeof source, "stated (--gflops)");
	} else {
		gflops = measure_gflops(plan->blas_threads);
		snprintf(source, sizeof source, "measured here (sgemm of order "
			 "512, %d BLAS thread%s)", plan->blas_threads,
			 plan->blas_threads == 1 ? "" : "s");
	}
	/* The bucketed sums of parallel.overlap run behind backward; the
	 * parameter servers' push and pull do not. */
	dt_plan_link_estimate(desc, &link, gflops, source, overlap,
			      ps ? "parameter servers do not overlap" :
			      overlap ? "parallel.overlap: true" :
			      job->parallel.overlap ? "a sum over one rank "
			      "sends nothing" : "parallel.overlap: false");
	return DT_OK;
}

static const struct dt_cmd_opt plan_opts[] = {
	{ .name = "dry-run", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct plan_args, dry_run),
	  .doc = "accepted for clarity: plan never runs anything" },
	{ .name = "ranks", .short_name = 'n', .kind = DT_CMD_ARG_INT,
	  .arg = "ranks", .offset = offsetof(struct plan_args, ranks),
	  .min = 1, .max = 1 << 20,
	  .doc = "plan for this many ranks (default 1)" },
	{ .name = "json", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct plan_args, json),
	  .doc = "print the plan as one JSON document" },
	{ .name = "print-job", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct plan_args, print_job),
	  .doc = "print the resolved job as YAML instead" },
	{ .name = "link", .kind = DT_CMD_ARG_STRING, .arg = "rate,latency",
	  .offset = offsetof(struct plan_args, link),
	  .doc = "estimate a step on this link (10gbit,50us)" },
	{ .name = "gflops", .kind = DT_CMD_ARG_NUMBER, .arg = "rate",
	  .offset = offsetof(struct plan_args, gflops), .min = 0,
	  .doc = "per-rank GFLOP/s for --link (default: measure)" },
	DT_CMD_OPT_SET_ENTRY,
	{ .kind = DT_CMD_ARG_END },
};

/* --print-job: writes what run would train (defaults filled in, --set
 * applied, repeat blocks expanded) to stdout as YAML that run reads back.
 * With -n (ranks > 0) the layout is first checked as run -n checks it.
 * Returns the exit status. */
static int
print_job(const struct dt_job *job, int ranks,
	  const struct dt_plan_host *host)
{
	struct dt_plan plan;
	struct dt_error err;
	enum dt_status st = DT_OK;

	if (ranks > 0) {
		memset(&plan, 0, sizeof plan);
		st = dt_plan_build(job, ranks, host, NULL, &plan, &err);
		dt_plan_fini(&plan);
	}
	if (st == DT_OK)
		st = dt_job_write(job, stdout, &err);
	if (st == DT_OK && fflush(stdout) != 0)
		st = dt_errorf(&err, DT_ERR_IO, "standard output: %s",
			       strerror(errno));
	return st == DT_OK ? 0 : dt_cmd_fail(st, &err);
}

/* Builds *plan for the job on ranks ranks and gives it the data: the
 * sources (srcs[0..*n_srcs)) and the sample counts and bytes their
 * headers give. On error returns its status; the caller finishes *plan
 * either way. */
static enum dt_status
plan_with_data(const struct dt_job *job, int ranks,
	       const struct dt_plan_host *host, struct dt_plan *plan,
	       struct plan_source *srcs, int *n_srcs,
	       struct dt_plan_data *data, struct dt_error *err)
{
	enum dt_status st;

	st = dt_plan_build(job, ranks, host, NULL, plan, err);
	if (st == DT_OK)
		st = find_sources(job, srcs, n_srcs, err);
	if (st == DT_OK)
		st = peek_split(job, srcs, *n_srcs, "train",
				dt_model_input_size(plan->shapes),
				&data->n_train, &data->train_bytes, err);
	if (st == DT_OK)
		st = peek_split(job, srcs, *n_srcs, "eval",
				dt_model_input_size(plan->shapes),
				&data->n_eval, &data->eval_bytes, err);
	if (st == DT_OK)
		st = peek_tokens(job, srcs, *n_srcs, data, err);
	/* The loader's epoch order, int64 per sample. */
	if (st == DT_OK && data->n_train > 0)
		data->train_bytes += data->n_train * 8;
	if (st == DT_OK)
		st = dt_plan_set_data(job, data, plan, err);
	return st;
}

static int
cmd_plan(int argc, char **argv)
{
	static struct dt_job job;
	struct json_object *inputs;
	/* ranks 0: no -n, 1 rank; gflops -1: no --gflops */
	struct plan_args a = { .ranks = 0, .gflops = -1 };
	struct dt_cmd_line line;
	struct plan_source srcs[PLAN_MAX_SOURCES];
	struct json_object *desc;
	struct dt_plan plan;
	struct dt_error err;
	enum dt_status st;
	int ranks, n_srcs = 0, out_errno = 0;
	struct dt_plan_data data = { -1, 0, -1, 0 };
	struct dt_plan_host host = {
		.cores = dt_cpus_node_share(1),
		.local_ranks = 1,
		.blas_env = getenv("OPENBLAS_NUM_THREADS"),
	};
	int rc = dt_cmd_parse(&dt_cmd_plan, argc, argv, &a, &line);

	if (rc >= 0)
		return rc;
	ranks = a.ranks > 0 ? a.ranks : 1;
	if (a.print_job && (a.json || a.link != NULL || a.gflops >= 0)) {
		free(line.sets);
		return dt_cmd_usage_error(&dt_cmd_plan, "%s prints the job, "
					  "not a plan: it takes no --json, "
					  "--link or --gflops", "--print-job");
	}
	st = dt_cmd_load_job(line.operand, line.sets, line.n_sets, &job,
			     &err);
	free(line.sets);
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);
	host.local_ranks = ranks;
	if (a.print_job)
		return print_job(&job, a.ranks, &host);
	memset(&plan, 0, sizeof plan);
	st = plan_with_data(&job, ranks, &host, &plan, srcs, &n_srcs, &data,
			    &err);
	if (st != DT_OK) {
		dt_plan_fini(&plan);
		return dt_cmd_fail(st, &err);
	}
	desc = json_object_get(plan.desc);
	json_object_object_add(desc, "sources",
			       describe_sources(srcs, n_srcs));
	inputs = describe_inputs(&job);
	if (inputs != NULL)
		json_object_object_add(desc, "inputs", inputs);
	st = add_link(&a, &job, &plan, desc, &err);
	/* The JSON goes out in one call, larger than stdout's buffer: its
	 * errno is taken here, where the last flush would find nothing
	 * left to write and so no reason (main.c). */
	if (st == DT_OK && a.json &&
	    printf("%s\n", json_object_to_json_string_ext(
			   desc, JSON_C_TO_STRING_PRETTY |
			   JSON_C_TO_STRING_SPACED)) < 0)
		out_errno = errno != 0 ? errno : EIO;
	else if (st == DT_OK && !a.json) {
		dt_plan_print(desc, stdout);
		print_inputs(desc, stdout);
		print_sources(srcs, n_srcs, data.n_train, stdout);
	}
	json_object_put(desc);
	dt_plan_fini(&plan);
	if (out_errno != 0)
		return dt_cmd_stdout_error(out_errno);
	return st == DT_OK ? 0 : dt_cmd_fail(st, &err);
}

const struct dt_cmd dt_cmd_plan = {
	.name = "plan",
	.summary = "show what a job would run where, before anything runs",
	.opts = plan_opts,
	.operand = "job.yaml",
	.operand_noun = "job file",
	.operand_doc = "the job file",
	.run = cmd_plan,
};
