/* SPDX-License-Identifier: MIT */
/* memcheck.h - the memory check before a run allocates (issue 13: an
 * out-of-memory at allocation ended in SIGABRT with an MPI backtrace).
 * Internal to train/. */
#ifndef DT_TRAIN_MEMCHECK_H
#define DT_TRAIN_MEMCHECK_H

#include "plan/plan.h"
#include "util/status.h"

/* Compares what plan says the ranks of this node need (each rank's
 * memory total in plan->desc's ranks[], less the runtime term, which is
 * resident by the time this runs; the dataset's term counts once the
 * plan knows its size): rank 0's, which may include a checkpoint's
 * gather, plus local_ranks - 1 times the largest of the others' (exact
 * for a single node, an overestimate by at most rank 0's gather on
 * another), with the memory this process may still take
 * (util/sysmem.h: the node's MemAvailable, or the cgroup's limit less
 * its usage where that is less). Returns DT_OK when it fits or when
 * neither figure can be read; DT_ERR_PLAN (exit status 2) with both
 * figures, in bytes and MiB, and which limit binds, when it does not.
 * Allocates nothing. */
enum dt_status dt_memcheck(const struct dt_plan *plan, int local_ranks,
			   struct dt_error *err);

#endif
