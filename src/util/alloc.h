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
/* A page-aligned, zero-filled block of n floats in its own anonymous
 * mapping (mmap), whose pages become resident only once written: for the
 * parameter and gradient arenas, whose unused pages parallel.zero: 3
 * hands back (dt_pages_release). Release with dt_free_pages(p, n) (p may
 * be NULL). Out of memory aborts, as dt_xmalloc. */
float *dt_xalloc_pages(size_t n);
void dt_free_pages(float *p, size_t n);
/* Shrinks p, a block of dt_xalloc_pages of n floats, to its first keep
 * (<= n) floats: the pages past the one that holds float keep - 1 are
 * unmapped (munmap), so they no longer count as resident; release the
 * rest with dt_free_pages(p, keep). The floats kept are untouched. */
void dt_pages_shrink(float *p, size_t n, size_t keep);
/* Hands back to the kernel the whole pages that lie inside floats
 * [lo, hi) of base, a block of dt_xalloc_pages (madvise MADV_DONTNEED):
 * they read as zeros again and no longer count as resident. A page that
 * holds a float outside [lo, hi) is kept. Returns the bytes handed back. */
size_t dt_pages_release(float *base, size_t lo, size_t hi);
/* Makes resident and writable, in one call (madvise MADV_POPULATE_WRITE,
 * Linux 5.14), the pages that floats [lo, hi) of base, a block of
 * dt_xalloc_pages, lie in (a page that holds only part of the span
 * counts), just before they are written: a page handed back
 * (dt_pages_release) then costs no fault of its own at the write, which
 * under a hypervisor's shadow page tables halves what it costs (bench/
 * README, "zero 3's page faults"). The data do not change: a page handed
 * back still reads as zeros, a resident one keeps its floats. The pages
 * are those the write would bring in, so nothing more is resident than
 * the write makes it. Returns the bytes of those pages, or 0 where hi <=
 * lo or the kernel refuses (EINVAL on a kernel before 5.14 or on a
 * mapping that cannot be written, ENOSYS, ENOMEM...): then each page not
 * made resident faults in as it is written, as without this call. */
size_t dt_pages_prefault(float *base, size_t lo, size_t hi);

#endif
