/* SPDX-License-Identifier: MIT */
/* cpus.h - how many CPUs this process may run on. */
#ifndef DT_UTIL_CPUS_H
#define DT_UTIL_CPUS_H

#include <stddef.h>

/* The CPUs of this process's affinity mask (sched_getaffinity(2): what
 * taskset(1), a batch scheduler's binding or mpirun's --bind-to leave
 * it), never more than the node's online CPUs; the online CPUs where the
 * mask cannot be read (not Linux, or a kernel mask wider than the
 * 1024 CPUs of a cpu_set_t), and 1 where neither can. At least 1; allocates
 * nothing; thread-safe. */
int dt_cpus_allowed(void);

/* The CPUs of that same mask as a list into buf (size bytes, always
 * terminated): their numbers in ascending order, runs as ranges, the way
 * /proc/PID/status writes Cpus_allowed_list ("0", "0-1", "0,2-3"); a
 * list too long for buf ends in "...". Where the mask cannot be read,
 * the online CPUs "0-N". Returns the count, dt_cpus_allowed()'s. */
int dt_cpus_allowed_list(char *buf, size_t size);

/* The cores that local_ranks ranks on a node, each with this process's
 * mask, share for their threads (plan/plan.h, struct dt_plan_host): the
 * node's online CPUs, but no more than local_ranks x dt_cpus_allowed(),
 * so that each rank's even share of it (dt_plan_blas_threads) fits its
 * own mask, whether the ranks share one mask (taskset over mpirun) or
 * each has its own (mpirun binding each rank to a core). local_ranks
 * below 1 counts as 1. At least 1. */
int dt_cpus_node_share(int local_ranks);

#endif
