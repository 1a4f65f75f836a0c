/* SPDX-License-Identifier: MIT */
/* rng.c - counter-based generator; see rng.h for the reference. */
#include "util/rng.h"

#include <math.h>

static uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t
dt_rng_u64(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b)
{
	/* Chain the keys through the finaliser so that nearby keys give
	 * unrelated outputs; the golden-ratio increments keep a zero key
	 * from mapping to zero. */
	uint64_t h = mix64(seed + 0x9e3779b97f4a7c15ULL);

	h = mix64(h ^ ((uint64_t)purpose + 0x9e3779b97f4a7c15ULL * 2));
	h = mix64(h ^ (a + 0x9e3779b97f4a7c15ULL * 3));
	h = mix64(h ^ (b + 0x9e3779b97f4a7c15ULL * 4));
	return h;
}

void
dt_rng_u64_run(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b0,
	       int64_t n, uint64_t *out)
{
	/* dt_rng_u64's chain up to its last step. */
	uint64_t h = mix64(seed + 0x9e3779b97f4a7c15ULL);

	h = mix64(h ^ ((uint64_t)purpose + 0x9e3779b97f4a7c15ULL * 2));
	h = mix64(h ^ (a + 0x9e3779b97f4a7c15ULL * 3));
	for (int64_t j = 0; j < n; j++)
		out[j] = mix64(h ^ (b0 + (uint64_t)j +
				    0x9e3779b97f4a7c15ULL * 4));
}

float
dt_rng_uniform(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b)
{
	return (float)(dt_rng_u64(seed, purpose, a, b) >> 40) *
	       (1.0f / 16777216.0f);
}

float
dt_rng_normal(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b)
{
	/* 53-bit uniforms in (0, 1] for the logarithm. */
	double u1 = ((double)(dt_rng_u64(seed, purpose, a, 2 * b) >> 11) + 1.0) *
		    (1.0 / 9007199254740992.0);
	double u2 = (double)(dt_rng_u64(seed, purpose, a, 2 * b + 1) >> 11) *
		    (1.0 / 9007199254740992.0);

	return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

uint64_t
dt_rng_below(uint64_t seed, uint32_t purpose, uint64_t a, uint64_t b,
	     uint64_t n)
{
	/* Lemire, "Fast random integer generation in an interval", 2019;
	 * rejected draws re-key with a counter in the high bits of b. */
	uint64_t threshold = (0 - n) % n;

	for (uint64_t k = 0;; k++) {
		uint64_t x = dt_rng_u64(seed, purpose, a, b ^ (k << 48));
		__uint128_t m = (__uint128_t)x * n;

		if ((uint64_t)m >= threshold)
			return (uint64_t)(m >> 64);
	}
}
