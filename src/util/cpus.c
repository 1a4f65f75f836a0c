/* SPDX-License-Identifier: MIT */
/* cpus.c - the CPUs this process may run on (cpus.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* sched_getaffinity, CPU_COUNT (Linux) */
#endif
#include "util/cpus.h"

#include <sched.h>
#include <stdio.h>
#include <unistd.h>

static int
online(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 && n < 1L << 20 ? (int)n : 1;
}

int
dt_cpus_allowed(void)
{
	int on = online();
#ifdef CPU_COUNT
	cpu_set_t set;
	int n;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return on;
	n = CPU_COUNT(&set);
	if (n > 0 && n < on)
		return n;
#endif
	return on;
}

int
dt_cpus_node_share(int local_ranks)
{
	int on = online(), allowed = dt_cpus_allowed();

	if (local_ranks < 1)
		local_ranks = 1;
	if ((long)allowed * local_ranks < on)
		return allowed * local_ranks;
	return on;
}

/* Appends "A" or "A-B" (with a comma after the first) to buf at *len;
 * once it does not fit, "..." where it can and *len left at size. */
static void
put_range(char *buf, size_t size, size_t *len, int a, int b)
{
	int k;

	if (*len >= size)
		return;
	k = a == b ? snprintf(buf + *len, size - *len, "%s%d",
			      *len > 0 ? "," : "", a) :
		     snprintf(buf + *len, size - *len, "%s%d-%d",
			      *len > 0 ? "," : "", a, b);
	if (k >= 0 && (size_t)k < size - *len) {
		*len += (size_t)k;
		return;
	}
	if (size >= 4)
		snprintf(buf + size - 4, 4, "...");
	*len = size;
}

/* The mask's list into buf (put_range's) and its count; -1 where it
 * cannot be read or is empty. */
static int
mask_list(char *buf, size_t size, size_t *len)
{
#ifdef CPU_COUNT
	cpu_set_t set;
	int n = 0, first = -1;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) != 0 ||
	    CPU_COUNT(&set) == 0)
		return -1;
	for (int c = 0; c <= CPU_SETSIZE; c++) {
		int in = c < CPU_SETSIZE && CPU_ISSET(c, &set);

		if (in && first < 0)
			first = c;
		if (!in && first >= 0) {
			put_range(buf, size, len, first, c - 1);
			n += c - first;
			first = -1;
		}
	}
	return n;
#else
	(void)buf;
	(void)size;
	(void)len;
	return -1;
#endif
}

int
dt_cpus_allowed_list(char *buf, size_t size)
{
	int on = online(), n;
	size_t len = 0;

	if (size == 0)
		return dt_cpus_allowed();
	buf[0] = '\0';
	n = mask_list(buf, size, &len);
	if (n > 0)
		return n < on ? n : on;
	put_range(buf, size, &len, 0, on - 1);
	return on;
}
