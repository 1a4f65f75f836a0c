/* SPDX-License-Identifier: MIT */
/* cpus.c - the CPUs this process may run on (cpus.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* sched_getaffinity, CPU_COUNT (Linux) */
#endif
#include "util/cpus.h"

#include <sched.h>
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
