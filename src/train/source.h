/* SPDX-License-Identifier: MIT */
/* source.h - the training loop's view of a data split, whatever its format:
 * n samples, each x_size floats of input and y_size int32 labels (1 for a
 * classifier, context for a next-token language model) or float targets
 * (a regression's outputs). Internal to
 * train/. */
#ifndef DT_TRAIN_SOURCE_H
#define DT_TRAIN_SOURCE_H

#include <stdint.h>

#include "data/data.h"
#include "data/fetch.h"
#include "comm/comm.h"
#include "job/job.h"
#include "util/status.h"

struct dt_batch_source {
	int tokens;			/* 1: windows of a token stream */
	struct dt_dataset ds;		/* idx, csv, npy */
	struct dt_token_data td;	/* tokens, text */
	int64_t first;			/* tokens: first window of the split */
	int64_t n;			/* samples in the split */
	int64_t x_size;			/* floats per sample */
	int64_t y_size;			/* labels (or targets) per sample */
	int32_t *scratch;		/* tokens: (max_batch, context) ids */
	int64_t max_batch;
};

/* Makes every source of job's data available locally (URLs fetched into
 * the cache once per node: the node's first rank downloads while the
 * others wait, then they read the cached file), then opens split `which`
 * (0 train, 1 eval) for batches of at most max_batch samples. Labels must
 * be in [0, n_classes); n_targets > 0 (an mse model) reads that many
 * float targets per sample instead (csv columns, an npy array; y_size
 * is then n_targets). data.scale unset: the reader's
 * dt_dataset_auto_scale. For text the vocabulary comes from vocab (built
 * by dt_source_vocab). fail_train_images: test aid, see train.c.
 * Returns DT_OK; a split that the job does not have gives n = 0.
 * Errors name the file and the place (see data.h). */
enum dt_status dt_source_open(struct dt_batch_source *s,
			      const struct dt_job *job, int which,
			      int64_t n_classes, int64_t n_targets,
			      int64_t max_batch,
			      const struct dt_vocab *vocab,
			      const char *fail_train_images,
			      struct dt_error *err);
void dt_source_fini(struct dt_batch_source *s);

/* Fetches the job's URL sources (collective: local rank 0 of each node
 * first). Afterwards the paths in the local copy *job point at local files. */
enum dt_status dt_source_fetch_all(struct dt_job *job, struct dt_comm *comm,
				   int progress, struct dt_error *err);

/* What src, one of job's data sources, must look like when downloaded:
 * IDX for images and labels of format idx, NPY for npy, raw token ids
 * for tokens, text for csv and text (fetch.h, dt_data_sniff). */
enum dt_data_kind dt_source_expect(const struct dt_job *job,
				   const struct dt_source *src);

/* For data.format text: builds the vocabulary of the training file. */
enum dt_status dt_source_vocab(const struct dt_job *job, struct dt_vocab *v,
			       struct dt_error *err);

/* Copies samples idx[0..count) into x (count, x_size) and their labels
 * into y (count, y_size): int32 class ids, or for a source of targets
 * y_size floats per sample in the same (allocated) storage. */
void dt_source_gather(const struct dt_batch_source *s, const int64_t *idx,
		      int64_t count, float *x, int32_t *y);

/* A rank's share of each global batch, for dt_source_ahead. */
struct dt_source_walk {
	int64_t global_batch, micro_batch, grad_accum_steps;
	int dp_rank, dp_size;
};

/* Tells a source of URL shards (a no-op for any other) which windows this
 * rank reads now and next, so that their shards are kept in the cache or
 * downloaded ahead (dt_tokens_ahead): its share of the global batches at
 * epoch offsets off (the step under way), off + global_batch, ... of the
 * epoch ordered by perm (s->n), at most `steps` of them, the one under
 * way included, and none past the epoch's last whole batch (the next
 * epoch's first shards are fetched as they are read). */
void dt_source_ahead(const struct dt_batch_source *s, const int64_t *perm,
		     int64_t off, int64_t steps,
		     const struct dt_source_walk *w);

/* Bytes the split's samples take in memory (inputs as stored, labels),
 * as dtrain plan counts them from the files' headers; 0 for an empty
 * split. */
int64_t dt_source_bytes(const struct dt_batch_source *s);

#endif
