/* SPDX-License-Identifier: MIT */
/* source.c - one interface over the data formats (see source.h). */
#include "train/source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/fetch.h"
#include "train/agree.h"
#include "util/alloc.h"

static int
is_url(const char *p)
{
	return strncmp(p, "http://", 7) == 0 || strncmp(p, "https://", 8) == 0;
}

enum dt_data_kind
dt_source_expect(const struct dt_job *job, const struct dt_source *src)
{
	switch (job->data.format) {
	case DT_FORMAT_IDX:
		return DT_DATA_IDX;
	case DT_FORMAT_NPY:
		return DT_DATA_NPY;
	case DT_FORMAT_LLMC:
		return DT_DATA_LLMC;
	case DT_FORMAT_TOKENS:
	case DT_FORMAT_U16:
		return DT_DATA_BINARY;
	case DT_FORMAT_CSV:
	case DT_FORMAT_TEXT:
		return DT_DATA_TEXT;
	}
	(void)src;
	return DT_DATA_ANY;
}

/* A pattern of shards (data.h, dt_shards_expand) names local files of a
 * token format, each checked when it is opened (llm.c's header, whole
 * tokens); a sha256 or size in the job names one file, so a pattern
 * takes neither. */
static enum dt_status
check_pattern(const struct dt_job *job, const char *key,
	      const struct dt_source *src, struct dt_error *err)
{
	char where[DT_JOB_PATH_MAX + 128];

	dt_job_where(job, key, where, sizeof where);
	if (!dt_job_format_token_ids(job->data.format))
		return dt_errorf(err, DT_ERR_JOB, "%s%s: a pattern of shards "
				 "is read for data.format tokens, llmc and "
				 "u16 only", where, src->path);
	if (dt_shards_url_wildcard(src->path) != NULL)
		return dt_errorf(err, DT_ERR_JOB, "%s%s: a pattern of URLs "
				 "takes brace ranges {000..127} and lists "
				 "{a,b} only; nothing can list files over "
				 "HTTP for '*' or '['", where,
				 src->path);
	if (src->sha256[0] != '\0' || src->size != 0)
		return dt_errorf(err, DT_ERR_JOB, "%s%s: sha256 and size name "
				 "one file, and a pattern names several; give "
				 "the pattern alone", where, src->path);
	return DT_OK;
}

/* Makes one source local: a URL is fetched (or found in the cache) and its
 * path rewritten to the cached file; a local file is checked against the
 * size and sha256 the job gives, as a download is. On error err names the
 * source's place in the job (key). */
static enum dt_status
fetch_one(const struct dt_job *job, const char *key, struct dt_source *src,
	  char *mirror, int progress, struct dt_error *err)
{
	struct dt_fetch_source fs = { .expect = dt_source_expect(job, src) };
	struct dt_fetch_opts opts;
	char local[DT_JOB_PATH_MAX];
	char where[DT_JOB_PATH_MAX + 128];
	enum dt_status st;

	if (src->path[0] == '\0')
		return DT_OK;
	if (dt_shards_is_pattern(src->path))
		return check_pattern(job, key, src, err);
	fs.url = src->path;
	fs.sha256 = src->sha256;
	fs.size = src->size;
	dt_fetch_opts_init(&opts);
	opts.progress = progress;
	opts.max_bytes = job->data.max_bytes;
	st = dt_fetch(&fs, &opts, local, sizeof local, err);
	if (st != DT_OK) {
		dt_job_where(job, key, where, sizeof where);
		dt_error_prefix(err, "%s", where);
		return st;
	}
	if (!is_url(src->path))
		return DT_OK;
	snprintf(src->path, sizeof src->path, "%s", local);
	if (mirror != NULL)
		snprintf(mirror, DT_JOB_PATH_MAX, "%s", local);
	return DT_OK;
}

/* fetch_one for each source of the job's split which (0 train, 1 eval),
 * job being the copy whose paths are rewritten. */
static enum dt_status
fetch_split(struct dt_job *job, int which, int progress, struct dt_error *err)
{
	struct dt_data_split *s = which == 0 ? &job->data.train :
				  &job->data.eval;
	const char *name = which == 0 ? "data.train" : "data.eval";
	char key[32];
	enum dt_status st;

	snprintf(key, sizeof key, "%s.images", name);
	st = fetch_one(job, key, &s->images_src, s->images, progress, err);
	snprintf(key, sizeof key, "%s.labels", name);
	if (st == DT_OK)
		st = fetch_one(job, key, &s->labels_src, s->labels, progress,
			       err);
	snprintf(key, sizeof key, "%s.file", name);
	if (st == DT_OK)
		st = fetch_one(job, key, &s->file, NULL, progress, err);
	return st;
}

enum dt_status
dt_source_fetch_all(struct dt_job *job, struct dt_comm *comm, int progress,
		    struct dt_error *err)
{
	enum dt_status st = DT_OK, all;
	int first = dt_comm_local_rank(comm) == 0;

	/* The node's first rank downloads (and hashes the local files the
	 * job gives digests for); the others wait on the node barrier and
	 * then find the files, and the digests, in the cache. A failed
	 * download is agreed on by every rank, so none tries it again. */
	if (first)
		st = fetch_split(job, 0, progress, err);
	if (st == DT_OK && first)
		st = fetch_split(job, 1, progress, err);
	if (dt_comm_node_barrier(comm, NULL) != DT_OK && st == DT_OK)
		st = dt_errorf(err, DT_ERR_MPI, "node barrier failed");
	all = dt_comm_agree(comm, st, first ? err : NULL);
	if (all != DT_OK)
		return st != DT_OK ? st : dt_errorf(err, all, "another rank "
						    "could not fetch the data "
						    "(its message is above)");
	if (!first)
		st = fetch_split(job, 0, 0, err);
	if (st == DT_OK && !first)
		st = fetch_split(job, 1, 0, err);
	/* Only a file that differs on this rank fails here: named with the
	 * rank, since the node's first rank found it right. */
	if (st != DT_OK && dt_comm_size(comm) > 1)
		dt_error_prefix(err, "rank %d: ", dt_comm_rank(comm));
	st = dt_comm_agree(comm, st, err);
	/* Then every rank proves it reads the same bytes (train/agree.h). */
	if (st == DT_OK)
		st = dt_agree_data(job, comm, err);
	return st;
}

enum dt_status
dt_source_vocab(const struct dt_job *job, struct dt_vocab *v,
		struct dt_error *err)
{
	return dt_vocab_build(job->data.train.file.path,
			      job->data.text_unit == DT_JOB_TEXT_UTF8 ?
			      DT_TEXT_CHARS : DT_TEXT_BYTES, v, err);
}

/* Token files read in place (dt_tokens_open_shards): llmc and u16
 * always, tokens when the source is a pattern of shards; a pattern of
 * URLs is fetched shard by shard as it is read (dt_tokens_open_urls). */
static enum dt_status
open_shards(struct dt_batch_source *s, const struct dt_job *job,
	    const char *path, int64_t n_classes, struct dt_error *err)
{
	enum dt_token_file kind = job->data.format == DT_FORMAT_LLMC ?
				  DT_TOKFILE_LLMC : DT_TOKFILE_RAW16;
	int64_t ctx = job->data.context, n = 1;
	char *one[1] = { (char *)path }, **names = one;
	char where[DT_JOB_PATH_MAX + 128];
	enum dt_status st = DT_OK;

	if (job->data.format == DT_FORMAT_TOKENS && job->data.token_bytes == 4)
		kind = DT_TOKFILE_RAW32;
	if (dt_shards_is_pattern(path))
		st = dt_shards_expand(path, &names, &n, err);
	if (st == DT_OK && is_url(path)) {
		st = dt_tokens_open_urls(names, n, kind, n_classes, ctx, ctx,
					 job->data.cache_max_bytes, &s->td,
					 err);
		/* Its one job error: a bound below the largest shard. */
		if (st == DT_ERR_JOB) {
			dt_job_where(job, "data.cache_max_bytes", where,
				     sizeof where);
			dt_error_prefix(err, "%s", where);
		}
	} else if (st == DT_OK) {
		st = dt_tokens_open_shards(names, n, kind, n_classes, ctx, ctx,
					   &s->td, err);
	}
	if (names != one)
		dt_shards_names_free(names, n);
	return st;
}

static enum dt_status
open_tokens(struct dt_batch_source *s, const struct dt_job *job,
	    const char *path, int64_t n_classes, const struct dt_vocab *vocab,
	    struct dt_error *err)
{
	int64_t ctx = job->data.context;

	if (job->data.format == DT_FORMAT_TEXT)
		return dt_text_encode(path, vocab, ctx, ctx, &s->td, err);
	if (job->data.format != DT_FORMAT_TOKENS || dt_shards_is_pattern(path))
		return open_shards(s, job, path, n_classes, err);
	return dt_tokens_load(path, (int)job->data.token_bytes, n_classes,
			      ctx, ctx, &s->td, err);
}

/* A split of a token stream (data.format tokens or text). Without an
 * eval file the eval split is the tail of the training file's windows
 * (data.eval_fraction). */
static enum dt_status
open_token_split(struct dt_batch_source *s, const struct dt_job *job,
		 int which, int64_t n_classes, int64_t max_batch,
		 const struct dt_vocab *vocab, struct dt_error *err)
{
	const struct dt_data_split *sp = which == 0 ? &job->data.train :
					 &job->data.eval;
	const char *path = sp->file.path;
	int tail = which == 1 && path[0] == '\0';
	enum dt_status st;

	if (tail) {
		if (job->data.eval_fraction <= 0)
			return DT_OK;
		path = job->data.train.file.path;
	}
	s->tokens = 1;
	st = open_tokens(s, job, path, n_classes, vocab, err);
	if (st != DT_OK)
		return st;
	s->n = s->td.n;
	if (job->data.eval.file.path[0] == '\0' &&
	    job->data.eval_fraction > 0) {
		int64_t n_eval = (int64_t)((double)s->td.n *
					   job->data.eval_fraction);

		if (n_eval < 1)
			n_eval = 1;
		if (n_eval >= s->td.n)
			return dt_errorf(err, DT_ERR_DATA,
					 "%s: %lld samples of context "
					 "%lld are too few to hold out "
					 "data.eval_fraction %g",
					 path, (long long)s->td.n,
					 (long long)job->data.context,
					 job->data.eval_fraction);
		s->first = tail ? s->td.n - n_eval : 0;
		s->n = tail ? n_eval : s->td.n - n_eval;
	}
	s->x_size = job->data.context;
	s->y_size = job->data.context;
	s->scratch = dt_xmalloc((size_t)(max_batch * job->data.context),
				sizeof *s->scratch);
	return DT_OK;
}

/* The targets of an mse model: one float per output, the data's width
 * checked against the model's. */
static enum dt_status
check_targets(const struct dt_batch_source *s, const char *path,
	      int64_t n_targets, struct dt_error *err)
{
	if (n_targets == 0 || s->ds.n_targets == n_targets)
		return DT_OK;
	return dt_errorf(err, DT_ERR_DATA, "%s: %lld targets per sample, but "
			 "the model's output (model.loss mse) has %lld",
			 path, (long long)s->ds.n_targets,
			 (long long)n_targets);
}

enum dt_status
dt_source_open(struct dt_batch_source *s, const struct dt_job *job,
	       int which, int64_t n_classes, int64_t n_targets,
	       int64_t max_batch, const struct dt_vocab *vocab,
	       const char *fail_train_images, struct dt_error *err)
{
	const struct dt_data_split *sp = which == 0 ? &job->data.train :
					 &job->data.eval;
	/* 0: resolved by the reader from what the file stores. */
	float scale = (float)job->data.scale;
	enum dt_status st = DT_OK;

	memset(s, 0, sizeof *s);
	s->max_batch = max_batch;
	switch (job->data.format) {
	case DT_FORMAT_IDX:
	case DT_FORMAT_NPY:
		if (sp->images[0] == '\0')
			return DT_OK;
		if (job->data.format == DT_FORMAT_IDX && n_targets > 0)
			return dt_errorf(err, DT_ERR_JOB, "%s: data.format idx "
					 "holds class labels; model.loss mse "
					 "takes its float targets from csv "
					 "columns or an npy array", job->path);
		if (job->data.format == DT_FORMAT_IDX)
			st = dt_dataset_load_idx(which == 0 && fail_train_images ?
						 fail_train_images : sp->images,
						 sp->labels, n_classes, scale,
						 &s->ds, err);
		else
			st = dt_dataset_load_npy(sp->images, sp->labels,
						 n_targets > 0 ? 0 : n_classes,
						 scale, &s->ds, err);
		if (st == DT_OK)
			st = check_targets(s, sp->labels, n_targets, err);
		break;
	case DT_FORMAT_CSV: {
		struct dt_csv_opts o = {
			.header = job->data.header,
			.label_col = (int)job->data.label_column,
			.delimiter = ',',
			.n_classes = n_classes,
			.n_targets = n_targets,
			.scale = scale,
		};

		if (sp->file.path[0] == '\0')
			return DT_OK;
		st = dt_dataset_load_csv(sp->file.path, &o, &s->ds, err);
		break;
	}
	case DT_FORMAT_TOKENS:
	case DT_FORMAT_TEXT:
	case DT_FORMAT_LLMC:
	case DT_FORMAT_U16:
		return open_token_split(s, job, which, n_classes, max_batch,
					vocab, err);
	}
	if (st != DT_OK)
		return st;
	s->n = s->ds.n;
	s->x_size = s->ds.sample_size;
	s->y_size = s->ds.t != NULL ? s->ds.n_targets : 1;
	return DT_OK;
}

void
dt_source_fini(struct dt_batch_source *s)
{
	dt_dataset_fini(&s->ds);
	dt_tokens_fini(&s->td);
	free(s->scratch);
	memset(s, 0, sizeof *s);
}

void
dt_source_gather(const struct dt_batch_source *s, const int64_t *idx,
		 int64_t count, float *x, int32_t *y)
{
	if (!s->tokens) {
		dt_dataset_gather(&s->ds, idx, count, x, y);
		/* y is allocated storage: floats may live in it. */
		if (s->ds.t != NULL && y != NULL)
			dt_dataset_gather_targets(&s->ds, idx, count,
						  (float *)(void *)y);
		return;
	}
	/* Windows are numbered within the split; token ids travel to the
	 * embedding as floats (exact below 2^24). */
	for (int64_t done = 0; done < count; done += s->max_batch) {
		int64_t c = count - done < s->max_batch ? count - done :
			    s->max_batch;
		int64_t shifted[64];

		for (int64_t k = 0; k < c; k += 64) {
			int64_t m = c - k < 64 ? c - k : 64;

			for (int64_t j = 0; j < m; j++)
				shifted[j] = s->first + idx[done + k + j];
			dt_tokens_gather(&s->td, shifted, m,
					 s->scratch + k * s->x_size,
					 y + (done + k) * s->y_size);
		}
		for (int64_t i = 0; i < c * s->x_size; i++)
			x[done * s->x_size + i] = (float)s->scratch[i];
	}
}

void
dt_source_ahead(const struct dt_batch_source *s, const int64_t *perm,
		int64_t off, int64_t steps, const struct dt_source_walk *w)
{
	int64_t idx[512], n = 0, n_now = 0;

	if (!s->tokens || s->td.ahead == NULL)
		return;
	/* 512 windows name the next shards for any depth worth having. */
	for (int64_t j = 0; j < steps && off + w->global_batch <= s->n &&
	     n < 512; j++, off += w->global_batch) {
		for (int64_t k = 0; k < w->grad_accum_steps; k++) {
			int64_t at = off + dt_shard_offset(0, w->global_batch,
							   w->dp_rank,
							   w->dp_size,
							   w->micro_batch, k);

			for (int64_t m = 0; m < w->micro_batch && n < 512;
			     m++)
				idx[n++] = s->first + perm[at + m];
		}
		if (j == 0)
			n_now = n;
	}
	dt_tokens_ahead(&s->td, idx, n_now, n);
}

int64_t
dt_source_bytes(const struct dt_batch_source *s)
{
	if (s->n <= 0)
		return 0;
	/* Shards are mapped: the page cache holds them, not the run. */
	if (s->tokens)
		return s->td.shards != NULL ? 0 :
		       s->td.n_tokens * s->td.elem_size;
	return s->ds.n * s->ds.sample_size * (s->ds.x_u8 != NULL ? 1 : 4) +
	       s->ds.n * s->y_size * (int64_t)sizeof(int32_t);
}
