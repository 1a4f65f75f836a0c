/* SPDX-License-Identifier: MIT */
/* bf16.c - bfloat16 conversions (bf16.h).
 *
 * Rounding to nearest even on the bit pattern: adding 0x7fff plus the
 * lowest kept bit to the 32-bit word carries into the kept half exactly
 * when the dropped half is above one half, or is one half and the kept
 * half is odd; a carry out of the mantissa moves the exponent up, which is
 * the right result (up to infinity for the largest finite values). NaNs
 * are handled first, since the carry could turn one into an infinity. */
#include "util/bf16.h"

#include <string.h>

uint16_t
dt_bf16_from_f32(float x)
{
	uint32_t u;

	memcpy(&u, &x, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);	/* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

float
dt_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float x;

	memcpy(&x, &u, sizeof x);
	return x;
}

void
dt_bf16_pack(uint16_t *restrict out, const float *restrict in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = dt_bf16_from_f32(in[i]);
}

void
dt_bf16_unpack(float *restrict out, const uint16_t *restrict in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = dt_bf16_to_f32(in[i]);
}
