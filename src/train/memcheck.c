/* SPDX-License-Identifier: MIT */
/* memcheck.c - the plan's memory against the node's (memcheck.h). */
#include "train/memcheck.h"

#include <json.h>

#include "util/sysmem.h"

static int64_t
member(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v))
		return 0;
	return json_object_get_int64(v);
}

enum dt_status
dt_memcheck(const struct dt_plan *plan, int local_ranks,
	    struct dt_error *err)
{
	struct json_object *mem = NULL;
	const char *kind = "node";
	int64_t avail, per_rank;
	double need;

	if (plan->desc == NULL ||
	    !json_object_object_get_ex(plan->desc, "memory_per_rank", &mem))
		return DT_OK;
	per_rank = member(mem, "total") - member(mem, "runtime");
	if (per_rank <= 0 || dt_sysmem_available(&avail, &kind) != 0)
		return DT_OK;
	need = (double)per_rank * (local_ranks > 0 ? local_ranks : 1);
	if (need <= (double)avail)
		return DT_OK;
	return dt_errorf(err, DT_ERR_PLAN, "not enough memory: the plan needs "
			 "%d rank%s x %lld bytes (%.1f MiB: parameters, "
			 "gradients, optimizer state, activations, loader) = "
			 "%.0f bytes (%.1f MiB) on this node, but only %lld "
			 "bytes (%.1f MiB) are available (%s); lower "
			 "train.micro_batch, %suse fewer ranks per node or "
			 "more pipeline stages (dtrain plan --dry-run shows "
			 "the figures)", local_ranks,
			 local_ranks == 1 ? "" : "s", (long long)per_rank,
			 (double)per_rank / 1048576.0, need, need / 1048576.0,
			 (long long)avail, (double)avail / 1048576.0,
			 kind[0] == 'c' ? "the cgroup's memory limit less its "
			 "usage" : "the node's MemAvailable",
			 plan->accum_schedule == DT_ACCUM_BREADTH_FIRST ?
			 "set parallel.accum_schedule: depth_first (which "
			 "holds one micro-batch of activations, not all of "
			 "the step's), " : "or ");
}
