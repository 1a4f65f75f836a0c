/* SPDX-License-Identifier: MIT */
/* share.h - the one cut of n items into p nearly equal runs, used by the
 * communicator's chunks (comm/comm.c) and by the graph's row shares
 * (graph/rows.c), so a share the graph holds is the one the collectives
 * move. */
#ifndef DT_UTIL_SHARE_H
#define DT_UTIL_SHARE_H

#include <stddef.h>

/* The first of run i's items, 0 <= i <= p (p > 0): floor(n i / p), so
 * run i is [dt_share_lo(n, p, i), dt_share_lo(n, p, i + 1)) and the runs'
 * lengths differ by at most one, the longer ones last. Computed as
 * q i + floor(r i / p) with q = n / p and r = n % p, so r i < p^2 cannot
 * overflow where n i could. No errors. */
static inline size_t
dt_share_lo(size_t n, int p, int i)
{
	size_t q = n / (size_t)p, r = n % (size_t)p;

	return q * (size_t)i + r * (size_t)i / (size_t)p;
}

#endif
