/* SPDX-License-Identifier: MIT */
/* bf16.h - bfloat16 (the top 16 bits of an IEEE 754 binary32: sign, the
 * 8-bit exponent, 7 bits of mantissa), the element type of gradients on
 * the wire with parallel.grad_wire: bf16. Conversion from float rounds to
 * nearest, ties to even (IEEE 754-2008 section 4.3.1), as Intel's BF16
 * specification (document 338302) and Google's TPU format define it. */
#ifndef DT_UTIL_BF16_H
#define DT_UTIL_BF16_H

#include <stddef.h>
#include <stdint.h>

/* x rounded to the nearest bfloat16, ties to the even mantissa. Infinities
 * and zeros keep their sign; a NaN stays a NaN (quiet, its sign and top
 * mantissa bits kept); a finite x past the largest bfloat16
 * (3.3895314e38) rounds to infinity as IEEE rounding does. */
uint16_t dt_bf16_from_f32(float x);

/* The float whose top 16 bits are h and whose low 16 bits are 0: exact. */
float dt_bf16_to_f32(uint16_t h);

/* Elementwise conversions of n values: out (n) from in (n); the buffers
 * must not overlap. */
void dt_bf16_pack(uint16_t *out, const float *in, size_t n);
void dt_bf16_unpack(float *out, const uint16_t *in, size_t n);

#endif
