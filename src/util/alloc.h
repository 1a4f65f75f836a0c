/* SPDX-License-Identifier: MIT */
/* alloc.h - checked allocation: out of memory aborts with a message, and
 * n * size is checked for overflow. Never returns NULL for size > 0. */
#ifndef DT_UTIL_ALLOC_H
#define DT_UTIL_ALLOC_H

#include <stddef.h>

/* n elements of size bytes; aborts on overflow or exhaustion. */
void *dt_xmalloc(size_t n, size_t size);
/* As dt_xmalloc, zero-filled. */
void *dt_xcalloc(size_t n, size_t size);
/* Resizes p (may be NULL) to n elements of size bytes. */
void *dt_xrealloc(void *p, size_t n, size_t size);
/* A heap copy of s (s must not be NULL). */
char *dt_xstrdup(const char *s);
/* 64-byte aligned, zero-filled block of n floats, for tensor arenas; release
 * with free(). */
float *dt_xalloc_floats(size_t n);
/* Frees each of the n blocks in p (NULL ones too, as free() takes them):
 * a destructor's list of arrays, void *own[] = { a, b, c }, freed with
 * dt_free_each(own, sizeof own / sizeof *own). */
void dt_free_each(void *const *p, size_t n);

#endif
