/* SPDX-License-Identifier: MIT */
/* memcheck.c - the plan's memory against the node's (memcheck.h). */
#include "train/memcheck.h"

#include <json.h>
#include <stdio.h>

#include "util/sysmem.h"

static int64_t
member(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v))
		return 0;
	return json_object_get_int64(v);
}

/* The largest total less the runtime term of rank 0 (into *first) and
 * of the other workers (into *other, 0 with one rank): rank 0 alone
 * collects a checkpoint (plan.h, memory of ranks[]). */
static void
rank_needs(struct json_object *desc, int64_t *first, int64_t *other)
{
	struct json_object *ranks, *mem;

	*first = *other = 0;
	if (!json_object_object_get_ex(desc, "ranks", &ranks))
		return;
	for (size_t i = 0; i < json_object_array_length(ranks); i++) {
		struct json_object *x = json_object_array_get_idx(ranks, i);
		int64_t need;

		if (!json_object_object_get_ex(x, "memory", &mem))
			continue;	/* a parameter server */
		need = member(mem, "total") - member(mem, "runtime");
		if (i == 0)
			*first = need;
		else if (need > *other)
			*other = need;
	}
}

enum dt_status
dt_memcheck(const struct dt_plan *plan, int local_ranks,
	    struct dt_error *err)
{
	const char *kind = "node";
	int64_t avail, first, other;
	int n = local_ranks > 0 ? local_ranks : 1;
	char what[160];
	double need;

	if (plan->desc == NULL)
		return DT_OK;
	rank_needs(plan->desc, &first, &other);
	if (n == 1 || other <= 0 || other == first)
		other = first;
	/* Every rank of this node as the busiest but rank 0, which may
	 * collect a checkpoint: exact on one node (ranks 0 .. n-1), and
	 * at most that much more on a node without rank 0. */
	if (first <= 0 || dt_sysmem_available(&avail, &kind) != 0)
		return DT_OK;
	need = (double)first + (double)other * (n - 1);
	if (need <= (double)avail)
		return DT_OK;
	if (other == first)
		snprintf(what, sizeof what, "%d rank%s x %lld bytes (%.1f MiB",
			 n, n == 1 ? "" : "s", (long long)first,
			 (double)first / 1048576.0);
	else
		snprintf(what, sizeof what, "1 rank x %lld bytes (%.1f MiB, "
			 "rank 0 with the checkpoint's gather) + %d rank%s x "
			 "%lld bytes (%.1f MiB", (long long)first,
			 (double)first / 1048576.0, n - 1, n == 2 ? "" : "s",
			 (long long)other, (double)other / 1048576.0);
	return dt_errorf(err, DT_ERR_PLAN, "not enough memory: the plan needs "
			 "%s: parameters, gradients, optimizer state, "
			 "activations, loader) = %.0f bytes (%.1f MiB) on this "
			 "node, but only %lld bytes (%.1f MiB) are available "
			 "(%s); lower train.micro_batch, %suse fewer ranks per "
			 "node or more pipeline stages, or shard the model "
			 "state (parallel.zero) and recompute activations "
			 "(model.recompute) (dtrain plan --dry-run shows the "
			 "figures)", what, need, need / 1048576.0,
			 (long long)avail, (double)avail / 1048576.0,
			 kind[0] == 'c' ? "the cgroup's memory limit less its "
			 "usage" : "the node's MemAvailable",
			 plan->accum_schedule == DT_ACCUM_BREADTH_FIRST ?
			 "set parallel.accum_schedule: depth_first (which "
			 "holds one micro-batch of activations, not all of "
			 "the step's), " : "");
}
