/* SPDX-License-Identifier: MIT */
/* alloc.c - allocation that aborts on exhaustion (STYLE.md: one rule). */
#include "util/alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Linux 5.14's advice (include/uapi/asm-generic/mman-common.h), for C
 * libraries that predate it; an older kernel refuses it with EINVAL. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static void
die_oom(size_t n, size_t size)
{
	fprintf(stderr, "dtrain: out of memory allocating %zu x %zu bytes\n",
		n, size);
	abort();
}

static size_t
checked_bytes(size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		die_oom(n, size);
	return n * size;
}

void *
dt_xmalloc(size_t n, size_t size)
{
	size_t bytes = checked_bytes(n, size);
	void *p = malloc(bytes ? bytes : 1);

	if (p == NULL)
		die_oom(n, size);
	return p;
}

void *
dt_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		die_oom(n, size);
	return p;
}

void *
dt_xrealloc(void *p, size_t n, size_t size)
{
	size_t bytes = checked_bytes(n, size);
	void *q = realloc(p, bytes ? bytes : 1);

	if (q == NULL)
		die_oom(n, size);
	return q;
}

char *
dt_xstrdup(const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = dt_xmalloc(len, 1);

	memcpy(p, s, len);
	return p;
}

float *
dt_xalloc_floats(size_t n)
{
	size_t bytes = checked_bytes(n ? n : 1, sizeof(float));
	void *p = NULL;

	bytes = (bytes + 63) & ~(size_t)63;
	if (posix_memalign(&p, 64, bytes) != 0)
		die_oom(n, sizeof(float));
	memset(p, 0, bytes);
	return p;
}

void
dt_free_each(void *const *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i]);
}

float *
dt_xalloc_pages(size_t n)
{
	size_t bytes = checked_bytes(n ? n : 1, sizeof(float));
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die_oom(n, sizeof(float));
	return p;
}

void
dt_free_pages(float *p, size_t n)
{
	if (p != NULL)
		munmap(p, checked_bytes(n ? n : 1, sizeof(float)));
}

void
dt_pages_shrink(float *p, size_t n, size_t keep)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)(p + (keep ? keep : 1));
	uintptr_t b = (uintptr_t)(p + (n ? n : 1));

	a = (a + page - 1) & ~(page - 1);
	b = (b + page - 1) & ~(page - 1);
	if (p != NULL && b > a)
		munmap((void *)a, b - a);
}

size_t
dt_pages_release(float *base, size_t lo, size_t hi)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)(base + lo), b = (uintptr_t)(base + hi);

	if (hi <= lo)
		return 0;
	a = (a + page - 1) & ~(page - 1);
	b &= ~(page - 1);
	if (b <= a || madvise((void *)a, b - a, MADV_DONTNEED) != 0)
		return 0;
	return b - a;
}

size_t
dt_pages_prefault(float *base, size_t lo, size_t hi)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)(base + lo), b = (uintptr_t)(base + hi);

	if (hi <= lo)
		return 0;
	/* outward: every page a float of the span lies in, all inside the
	 * block's mapping (page-aligned, its length rounded up to pages) */
	a &= ~(page - 1);
	b = (b + page - 1) & ~(page - 1);
	if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) != 0)
		return 0;
	return b - a;
}
