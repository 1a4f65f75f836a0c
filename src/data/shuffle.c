/* SPDX-License-Identifier: MIT */
/* shuffle.c - the epoch order and each rank's share of a global batch.
 *
 * The shuffle is Fisher-Yates (Knuth, TAOCP vol. 2, 3.4.2, Algorithm P)
 * with every swap drawn from the counter-based generator keyed by
 * (seed, DT_RNG_SHUFFLE, epoch, position): the order depends on nothing
 * but (seed, epoch, n), so every rank computes the same permutation on its
 * own, and a resumed or re-sharded run sees the same order. */
#include "data/data.h"

#include <assert.h>

#include "util/rng.h"

void
dt_shuffle(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm)
{
	assert(n >= 0);
	for (int64_t i = 0; i < n; i++)
		perm[i] = i;
	/* Position i swaps with a uniform j in [0, i]; going down from the
	 * top makes every permutation equally likely. */
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)dt_rng_below(seed, DT_RNG_SHUFFLE,
						  (uint64_t)epoch, (uint64_t)i,
						  (uint64_t)i + 1);
		int64_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}

int64_t
dt_shard_offset(int64_t step, int64_t global_batch, int dp_rank, int dp_size,
		int64_t micro_batch, int64_t k)
{
	int64_t per_rank;

	/* plan/ guarantees global_batch = micro_batch * accum * dp_size. */
	assert(step >= 0 && dp_size > 0 && micro_batch > 0);
	assert(dp_rank >= 0 && dp_rank < dp_size);
	assert(global_batch % dp_size == 0);
	per_rank = global_batch / dp_size;
	assert(per_rank % micro_batch == 0);
	assert(k >= 0 && k < per_rank / micro_batch);
	return step * global_batch + dp_rank * per_rank + k * micro_batch;
}

int64_t
dt_steps_per_epoch(int64_t n, int64_t global_batch, int64_t *dropped)
{
	assert(n >= 0 && global_batch > 0);
	if (dropped != NULL)
		*dropped = n % global_batch;
	return n / global_batch;
}
