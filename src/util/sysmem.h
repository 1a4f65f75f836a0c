/* SPDX-License-Identifier: MIT */
/* sysmem.h - how much memory this process may still take, and how much
 * it has held at most. */
#ifndef DT_UTIL_SYSMEM_H
#define DT_UTIL_SYSMEM_H

#include <stdint.h>

/* What the memory this process can still allocate is bounded by: the
 * node's MemAvailable (/proc/meminfo, proc(5)), and, where the process is
 * in a memory-limited control group, that group's limit less its usage
 * (cgroup v2 memory.max - memory.current, or v1 memory.limit_in_bytes -
 * memory.usage_in_bytes, of the group /proc/self/cgroup names and of
 * every group above it, the least of them: a limit binds the groups
 * below; the kernel's Documentation/admin-guide/cgroup-v2 and
 * cgroup-v1/memory). Fills *avail (bytes) and *limit_kind ("node" or
 * "cgroup", the one that binds; a static string) and returns 0; returns -1
 * and leaves both untouched when neither can be read (not Linux, no
 * /proc). Reads a few small files; allocates nothing; thread-safe.
 * DTRAIN_TEST_MEM_AVAILABLE=BYTES in the environment (a test aid) is
 * returned instead, as "node". */
int dt_sysmem_available(int64_t *avail, const char **limit_kind);

/* This process's peak resident set size so far, in bytes, into *bytes:
 * the VmHWM line of /proc/self/status (proc(5): the high-water mark of
 * its resident pages, its binary's and libraries' included, which the
 * kernel keeps from the process's start). Returns 0, or -1 with *bytes
 * untouched where it cannot be read (not Linux, no /proc). Allocates
 * nothing; thread-safe. */
int dt_sysmem_peak_resident(int64_t *bytes);

#endif
