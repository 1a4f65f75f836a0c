/* SPDX-License-Identifier: MIT */
/* loader.h - a thread per rank that prepares the next micro-batches while
 * the current step computes (data.prefetch optimizer steps ahead).
 *
 * The order of a rank's micro-batches is a pure function of the position
 * (epoch, samples consumed in it): global batch b of an epoch is
 * perm[off, off + global_batch) of the epoch's shuffle, the rank takes its
 * contiguous share and cuts it into micro-batches. The loader walks the
 * same positions as the loop, shuffling each new epoch itself, so the
 * batches are exactly those the loop would gather. Internal to train/. */
#ifndef DT_TRAIN_LOADER_H
#define DT_TRAIN_LOADER_H

#include <stdint.h>

#include "train/source.h"

struct dt_loader;

/* What the loader needs to know; all borrowed for the loader's life. */
struct dt_loader_cfg {
	const struct dt_batch_source *src;
	uint64_t seed;
	int64_t global_batch, micro_batch, grad_accum_steps;
	int dp_rank, dp_size;
	int64_t epoch, epoch_off;	/* where the loop starts */
	int64_t depth;			/* optimizer steps prepared ahead, >= 1 */
	int64_t step, total_steps;	/* steps done where the loop starts,
					 * and in the whole run: URL shards
					 * are fetched ahead up to the last */
};

/* One prepared micro-batch: x (micro_batch, x_size), y (micro_batch,
 * y_size), and the global index of its first sample (for dropout). */
struct dt_batch {
	float *x;				/* (micro_batch, x_size) */
	int32_t *y;				/* (micro_batch, y_size) */
	int64_t epoch, first_sample;
};

/* Starts the thread. Returns NULL if the thread cannot be created (the
 * caller then gathers in its own thread). */
struct dt_loader *dt_loader_new(const struct dt_loader_cfg *cfg);

/* The next micro-batch in order, waiting for it if it is not ready; adds
 * the wait to the loader's clock. Valid until dt_loader_release. */
const struct dt_batch *dt_loader_next(struct dt_loader *l);
void dt_loader_release(struct dt_loader *l);

/* Seconds the consumer has waited in dt_loader_next since the last call
 * (and resets the count). */
double dt_loader_take_wait(struct dt_loader *l);

/* Stops and joins the thread; frees everything. NULL is accepted. */
void dt_loader_free(struct dt_loader *l);

#endif
