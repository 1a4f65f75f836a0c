/* SPDX-License-Identifier: MIT */
/* endian.h - byte order for the binary files dtrain reads and writes:
 * checkpoints and the text vocabulary (little-endian, STYLE.md), NPY and
 * token files (little-endian), IDX (big-endian). The conversions are the
 * same code on every host: the host's order decides only whether a
 * conversion to host order swaps. */
#ifndef DT_UTIL_ENDIAN_H
#define DT_UTIL_ENDIAN_H

#include <stddef.h>
#include <stdint.h>

/* The low size bytes (1 .. 8) of v at p, least significant first. */
void dt_le_put(unsigned char *p, uint64_t v, int size);

/* The unsigned integer of size bytes (1 .. 8) at p, least significant
 * first. */
uint64_t dt_le_get(const unsigned char *p, int size);

/* n floats as IEEE 754 binary32 little-endian bytes into out (4 n bytes;
 * out and p must not overlap). */
void dt_le_put_f32(unsigned char *out, const float *p, size_t n);

/* Reverses the bytes of each of count elements of elem_size bytes at data
 * (only byte-aligned), in place. */
void dt_bswap(void *data, size_t elem_size, size_t count);

/* count little-endian elements of elem_size bytes at data to host order,
 * in place: nothing on a little-endian host, dt_bswap on a big-endian
 * one. */
void dt_le_to_host(void *data, size_t elem_size, size_t count);

/* As dt_le_to_host for big-endian elements. */
void dt_be_to_host(void *data, size_t elem_size, size_t count);

#endif
