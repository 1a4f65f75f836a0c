/* SPDX-License-Identifier: MIT */
/* rng.h - counter-based random numbers.
 *
 * Every draw is a pure function of (seed, purpose, a, b): no hidden state,
 * so a resumed run, a re-sharded run or a run on another number of ranks
 * draws the same numbers for the same (step, sample). The mixing function is
 * SplitMix64's finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom
 * number generators", OOPSLA 2014) applied to a combination of the keys. */
#ifndef DT_UTIL_RNG_H
#define DT_UTIL_RNG_H

#include <stdint.h>

/* What a draw is for; part of the key so streams never overlap. */
enum dt_rng_purpose {
	DT_RNG_INIT = 1,	/* parameter init: a = parameter tensor, b = element */
	DT_RNG_SHUFFLE = 2,	/* epoch order: a = epoch, b = position */
	DT_RNG_DROPOUT = 3,	/* a = step, b = element */
	DT_RNG_SAMPLE = 4,	/* text sampling */
};

/* 64 uniformly distributed bits for key (seed, purpose, a, b). */
uint64_t dt_rng_u64(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b);
/* out[j] = dt_rng_u64(seed, purpose, a, b0 + j) for j in [0, n): the same
 * bits, with the keys before b mixed once for the run (a dropout mask
 * draws hundreds of thousands a step). out holds n values; n >= 0. */
void dt_rng_u64_run(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b0,
		    int64_t n, uint64_t *out);
/* Uniform float in [0, 1) with 24 random bits. */
float dt_rng_uniform(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b);
/* Standard normal via Box-Muller on two draws keyed (a, 2b) and (a, 2b+1). */
float dt_rng_normal(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b);
/* Uniform integer in [0, n) without modulo bias (Lemire's method), n > 0. */
uint64_t dt_rng_below(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b,
		      uint64_t n);

#endif
