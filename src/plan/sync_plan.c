/* SPDX-License-Identifier: MIT */
/* sync_plan.c - how each stage's gradient is summed and applied
 * (sync_plan.h): decided here once, from the job and the plan's grid,
 * for the trainer's gradient sync (train/sync.h) to obey and for
 * plan --dry-run to print. */
#include "plan/sync_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "comm/comm.h"
#include "graph/graph.h"
#include "graph/layer.h"
#include "plan/plan.h"
#include "util/alloc.h"

static const char *const impl_names[] = {
	[DT_SYNC_IMPL_ALLREDUCE] = "allreduce",
	[DT_SYNC_IMPL_EXACT] = "exact",
	[DT_SYNC_IMPL_STAGES] = "stages",
	[DT_SYNC_IMPL_STAGES_EXACT] = "stages-exact",
	[DT_SYNC_IMPL_SERVERS] = "parameter_server",
	[DT_SYNC_IMPL_ZERO] = "zero",
};

const char *
dt_sync_impl_name(enum dt_sync_impl impl)
{
	return impl_names[impl];
}

int
dt_plan_tp_sliced(const struct dt_job *job, const struct dt_plan *plan)
{
	return plan->tp_size > 1 &&
	       job->parallel.sync != DT_SYNC_PARAMETER_SERVER &&
	       (job->parallel.zero < 2 || job->parallel.zero_slices) &&
	       plan->shapes != NULL &&
	       dt_model_tp_can_own_slices(plan->shapes);
}

/* The ranks of a stage whose gradients add up: its data- x tensor-
 * parallel ranks, or where the tensor ranks own their slices
 * (plan->tp_sliced) the data-parallel ranks of one tensor rank (a
 * replicated tensor's gradient is whole and alike on every tensor rank,
 * a split one's block its own); 0 with parameter servers (no collective
 * sum). */
static int
sum_ranks(const struct dt_job *job, const struct dt_plan *plan)
{
	if (job->parallel.sync == DT_SYNC_PARAMETER_SERVER)
		return 0;
	if (plan->tp_sliced)
		return plan->dp_size;
	return plan->dp_size * (plan->tp_size > 0 ? plan->tp_size : 1);
}

int
dt_plan_tp_norm_chained(const struct dt_model *m, int t, int tp_size)
{
	for (int q = 0; q < tp_size; q++) {
		struct dt_tp_block b;

		if (!dt_model_tensor_tp_block(m, t, q, &b) ||
		    !dt_tp_block_is_run(&b) || dt_tp_block_floats(&b) % 8 != 0)
			return 0;
	}
	return 1;
}

int64_t
dt_plan_tp_block_max(const struct dt_model *m, int t, int tp_size)
{
	int64_t most = 0;

	for (int q = 0; q < tp_size; q++) {
		struct dt_tp_block b;

		if (dt_model_tensor_tp_block(m, t, q, &b) &&
		    dt_tp_block_floats(&b) > most)
			most = dt_tp_block_floats(&b);
	}
	return most;
}

int64_t
dt_plan_tp_norm_bytes(const struct dt_plan *plan, const struct dt_grid_pos *pos)
{
	const struct dt_model *m = plan->shapes;
	const struct dt_stage_info *si;
	int64_t bytes = 0;

	if (!plan->tp_sliced || m == NULL || pos->dp != 0)
		return 0;
	si = &plan->stages[pos->stage];
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		struct dt_tp_block b;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset < si->trained_lo || ti.offset >= si->trained_hi ||
		    ti.tie_node != NULL ||
		    !dt_model_tensor_tp_block(m, t, pos->tp, &b))
			continue;
		if (dt_plan_tp_norm_chained(m, t, plan->tp_size))
			bytes += pos->tp < plan->tp_size - 1 ?
				 8 * (int64_t)sizeof(double) : 0;
		else if (pos->tp != 0)
			bytes += dt_tp_block_floats(&b) *
				 (int64_t)sizeof(float);
	}
	return bytes;
}

/* The floats of split trained tensor t of the whole model (ti) in the
 * trained arena of tensor rank tp where the tensor ranks own their
 * slices: its block there, or 0 where it is replicated or a tied copy;
 * *size: the floats it takes in that arena (the block, or the whole). */
static int64_t
split_floats(const struct dt_plan *plan, int t, int tp,
	     const struct dt_tensor_info *ti, int64_t *size)
{
	struct dt_tp_block b;

	if (!dt_model_tensor_tp_block(plan->shapes, t, tp, &b)) {
		*size = ti->size;
		return 0;
	}
	*size = dt_tp_block_floats(&b);
	return ti->tie_node == NULL ? *size : 0;
}

/* Tensor rank tp's trained floats of stage si where the tensor ranks
 * own their slices (each split tensor its block); with a part [lo, hi)
 * of them (lo < hi), the floats of its split tensors in it instead. */
static int64_t
rank_trained(const struct dt_plan *plan, const struct dt_stage_info *si,
	     int tp, int64_t lo, int64_t hi)
{
	const struct dt_model *m = plan->shapes;
	int64_t o = 0, in = 0;

	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		int64_t size, split, a, b;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset < si->trained_lo || ti.offset >= si->trained_hi)
			continue;
		split = split_floats(plan, t, tp, &ti, &size);
		a = o > lo ? o : lo;
		b = o + split < hi ? o + split : hi;
		in += b > a ? b - a : 0;
		o += size;
	}
	return lo < hi ? in : o;
}

int64_t
dt_plan_zero_block_bytes(const struct dt_plan *plan,
			 const struct dt_sync_plan *y,
			 const struct dt_grid_pos *pos)
{
	const struct dt_stage_info *si;
	size_t lo, hi;

	if (!plan->tp_sliced || plan->shapes == NULL || y->zero < 2 ||
	    pos->dp == 0)
		return 0;
	si = &plan->stages[pos->stage];
	dt_comm_part((size_t)rank_trained(plan, si, pos->tp, 0, 0),
		     y->shards, pos->dp, &lo, &hi);
	if (hi <= lo)
		return 0;
	return rank_trained(plan, si, pos->tp, (int64_t)lo, (int64_t)hi) *
	       (int64_t)sizeof(float);
}

/* The floats of the buffers split_norms (train/sync.c) keeps on tensor
 * rank 0 where the ranks own their slices: the largest split trained
 * tensor of the stage (trained floats [lo, hi) of the whole model) whose
 * norm is not chained, whole, and the largest block of one. */
static int64_t
tp_norm_floats(const struct dt_plan *plan, size_t lo, size_t hi)
{
	const struct dt_model *m = plan->shapes;
	int64_t whole = 0, blk = 0;

	for (int t = 0; plan->tp_sliced && t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		struct dt_tp_block b;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset < lo || ti.offset >= hi ||
		    !dt_model_tensor_tp_block(m, t, 0, &b) ||
		    dt_plan_tp_norm_chained(m, t, plan->tp_size))
			continue;
		if (ti.size > whole)
			whole = ti.size;
		if (dt_plan_tp_block_max(m, t, plan->tp_size) > blk)
			blk = dt_plan_tp_block_max(m, t, plan->tp_size);
	}
	return whole + blk;
}

/* The largest block of the stage's split trained tensors (trained
 * floats [lo, hi) of the whole model) where the tensor ranks own their
 * slices: zero 2 and 3 make each summed block whole on a tensor rank's
 * first data-parallel rank for the norm (train/sync_zero.c,
 * block_whole), in a buffer of this size. */
static int64_t
tp_block_floats(const struct dt_plan *plan, size_t lo, size_t hi)
{
	const struct dt_model *m = plan->shapes;
	int64_t most = 0;

	for (int t = 0; plan->tp_sliced && t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		struct dt_tp_block b;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset < lo || ti.offset >= hi ||
		    !dt_model_tensor_tp_block(m, t, 0, &b))
			continue;
		if (dt_plan_tp_block_max(m, t, plan->tp_size) > most)
			most = dt_plan_tp_block_max(m, t, plan->tp_size);
	}
	return most;
}

/* The trained floats a rank of the stage holds (trained floats [lo, hi)
 * of the whole model): every tensor whole, or where the tensor ranks own
 * their slices each split one as its block (dt_model_tensor_tp_block):
 * the largest tensor rank's, where a vocabulary the degree does not
 * divide gives blocks of two sizes. */
static int64_t
stage_trained(const struct dt_plan *plan, size_t lo, size_t hi)
{
	const struct dt_model *m = plan->shapes;
	int64_t n = 0;

	if (!plan->tp_sliced || m == NULL)
		return (int64_t)(hi - lo);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		struct dt_tp_block b;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset < lo || ti.offset >= hi)
			continue;
		n += dt_model_tensor_tp_block(m, t, 0, &b) ?
		     dt_plan_tp_block_max(m, t, plan->tp_size) : ti.size;
	}
	return n;
}

/* The floats tensor t of the whole model (ti) takes in a rank's
 * trained floats: its own, or where the tensor ranks own their slices
 * and it is split, its largest block (stage_trained's count; the
 * largest is tensor rank 0's). A rank's arena holds the stage's tensors
 * in model order, so the sum of these over the tensors before t is its
 * offset there. */
static int64_t
rank_size(const struct dt_plan *plan, int t, const struct dt_tensor_info *ti)
{
	struct dt_tp_block b;

	if (plan->tp_sliced &&
	    dt_model_tensor_tp_block(plan->shapes, t, 0, &b))
		return dt_plan_tp_block_max(plan->shapes, t, plan->tp_size);
	return ti->size;
}

int
dt_plan_sync_summed(const struct dt_job *job, const struct dt_plan *plan)
{
	return sum_ranks(job, plan) > 1;
}

/* A sum over one rank sends nothing, so nothing overlaps; parameter
 * servers push and pull after the last backward. */
int
dt_plan_sync_overlap(const struct dt_job *job, const struct dt_plan *plan)
{
	return dt_plan_sync_summed(job, plan) && job->parallel.overlap;
}

int
dt_plan_optim_buffers(const struct dt_job *job)
{
	if (job->train.optimizer == DT_OPTIM_SGD)
		return job->train.momentum > 0 ? 1 : 0;
	return 2;
}

static enum dt_sync_impl
impl_of(const struct dt_job *job, const struct dt_plan *plan)
{
	int split = plan->pp_size > 1 || plan->tp_size > 1;

	if (job->parallel.sync == DT_SYNC_PARAMETER_SERVER)
		return DT_SYNC_IMPL_SERVERS;
	if (split)
		return plan->exact_accum ? DT_SYNC_IMPL_STAGES_EXACT :
		       DT_SYNC_IMPL_STAGES;
	return plan->exact_accum ? DT_SYNC_IMPL_EXACT : DT_SYNC_IMPL_ALLREDUCE;
}

int
dt_plan_ckpt_sharded(const struct dt_job *job, const struct dt_plan *plan)
{
	/* Tensor slices go through rank 0, which writes whole tensors
	 * (train/gather.c): the shards' ranges of a block are not built. */
	return impl_of(job, plan) != DT_SYNC_IMPL_SERVERS &&
	       !plan->tp_sliced && !job->checkpoint.compress &&
	       (job->parallel.zero >= 3 ? 3 : 2) *
	       (int64_t)plan->world_size <= DT_CKPT_SHARD_FILES_MAX;
}

void
dt_plan_sync_own(const struct dt_sync_plan *sync, int sum_rank, int64_t *lo,
		 int64_t *hi)
{
	size_t a, b;

	dt_comm_part((size_t)sync->trained, sync->shards, sum_rank, &a, &b);
	*lo = (int64_t)a;
	*hi = (int64_t)b;
}

/* parallel.zero's level where the gradient is summed over more than one
 * rank (over one there is nothing to shard), else 0. */
static int
zero_level(const struct dt_job *job, const struct dt_plan *plan)
{
	return dt_plan_sync_summed(job, plan) ? (int)job->parallel.zero : 0;
}

enum dt_status
dt_plan_sync_check(const struct dt_job *job, const struct dt_plan *plan,
		   struct dt_error *err)
{
	const char *other = NULL, *why = NULL, *fix = NULL;
	char where[512];

	if (job->parallel.zero > 0 &&
	    job->parallel.sync == DT_SYNC_PARAMETER_SERVER) {
		other = "parallel.sync";
		why = "the parameter servers keep the optimizer state";
		fix = "parallel.sync: allreduce";
	} else if (zero_level(job, plan) >= 2 &&
		   dt_plan_sync_overlap(job, plan)) {
		other = "parallel.overlap";
		why = "levels 2 and 3 sum the gradient into its parts "
		      "without buckets, a blocking exchange between nodes' "
		      "backward passes or once after the last";
		fix = "parallel.overlap: false, or parallel.zero: 1";
	} else if (zero_level(job, plan) >= 2 &&
		   job->parallel.grad_wire == DT_GRAD_WIRE_BF16) {
		other = "parallel.grad_wire";
		why = "levels 2 and 3 have no bf16 reduce-scatter";
		fix = "parallel.grad_wire: f32, or parallel.zero: 1";
	}
	if (other == NULL)
		return DT_OK;
	dt_job_where(job, "parallel.zero", where, sizeof where);
	return dt_errorf(err, DT_ERR_PLAN, "%s%lld does not combine with %s "
			 "(%s); set %s", where, (long long)job->parallel.zero,
			 other, why, fix);
}

int64_t
dt_plan_gather_cap(const struct dt_job *job)
{
	return (int64_t)(job->parallel.gather_mb * 262144.0);
}

int
dt_plan_gather_units(int n, const int64_t *lo, const int64_t *hi,
		     int64_t cap, int *unit)
{
	int64_t size = 0, end = -1;
	int units = 0;

	for (int i = 0; i < n; i++) {
		int64_t len = hi[i] - lo[i];

		if (len <= 0) {
			unit[i] = -1;
			continue;
		}
		if (units == 0 || lo[i] != end || size + len > cap) {
			units++;
			size = 0;
		}
		unit[i] = units - 1;
		size += len;
		end = hi[i];
	}
	return units;
}

/* What zero 3 and the gradient's parts hold of the stage's nodes with
 * trained floats (in [lo, hi) of the whole model, plan->shapes, in node
 * order): the largest node; and of the gather units they make
 * (dt_plan_gather_units, cap floats; each node alone at cap 0) the two
 * largest, the largest sum of two units next to each other, the first
 * and the last. */
struct node_sizes {
	int64_t max, two_max, adjacent, ends;
};

static void
add_node(struct node_sizes *z, int64_t *best, int64_t *prev, int64_t *first,
	 int64_t run)
{
	if (run == 0)
		return;
	if (run > best[0]) {
		best[1] = best[0];
		best[0] = run;
	} else if (run > best[1]) {
		best[1] = run;
	}
	if (*prev > 0 && *prev + run > z->adjacent)
		z->adjacent = *prev + run;
	if (*first == 0)
		*first = run;
	z->ends = *first + (*prev > 0 ? run : 0);
	*prev = run;
}

static void
node_sizes(const struct dt_plan *plan, size_t lo, size_t hi, int64_t cap,
	   struct node_sizes *z)
{
	const struct dt_model *m = plan->shapes;
	int64_t best[2] = { 0, 0 }, prev = 0, first = 0, *nlo, *nhi, *size;
	int64_t node_max = 0;
	int64_t o = 0;		/* a tensor's offset in the rank's floats */
	int n, *unit, units;

	memset(z, 0, sizeof *z);
	if (m == NULL)
		return;
	n = dt_model_n_layers(m);
	nlo = dt_xcalloc((size_t)n + 1, sizeof *nlo);
	nhi = dt_xcalloc((size_t)n + 1, sizeof *nhi);
	unit = dt_xcalloc((size_t)n + 1, sizeof *unit);
	size = dt_xcalloc((size_t)n + 1, sizeof *size);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		int64_t len;
		int i;

		dt_model_tensor_info(m, t, &ti);
		i = ti.node_index;
		if (ti.offset < lo || ti.offset >= hi || ti.size == 0)
			continue;
		/* the tensor's place in the rank's trained floats */
		len = rank_size(plan, t, &ti);
		if (nhi[i] == 0)
			nlo[i] = o;
		nhi[i] = o + len;
		o += len;
	}
	units = dt_plan_gather_units(n, nlo, nhi, cap, unit);
	for (int i = 0; i < n; i++) {
		if (unit[i] >= 0)
			size[unit[i]] += nhi[i] - nlo[i];
		if (nhi[i] - nlo[i] > node_max)
			node_max = nhi[i] - nlo[i];
	}
	for (int u = 0; u < units; u++)
		add_node(z, best, &prev, &first, size[u]);
	free(nlo);
	free(nhi);
	free(unit);
	free(size);
	z->max = node_max;
	z->two_max = best[0] + best[1];
	if (z->adjacent == 0)
		z->adjacent = best[0];
}

/* The floats of the tensors of the stage (trained floats [lo, hi) of
 * the whole model) that a boundary between the parts of the stage's
 * trained floats cuts (as train/sync_zero.c finds them). */
static int64_t
cut_floats(const struct dt_plan *plan, const struct dt_sync_plan *y,
	   size_t lo, size_t hi)
{
	const struct dt_model *m = plan->shapes;
	int64_t cut = 0;

	size_t o = 0;		/* the tensor's offset in the rank's */

	for (int t = 0; m != NULL && t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		size_t a, b, len;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset < lo || ti.offset >= hi || ti.size == 0)
			continue;
		len = (size_t)rank_size(plan, t, &ti);
		for (int q = 0; q < y->shards; q++) {
			dt_comm_part((size_t)y->trained, y->shards, q, &a, &b);
			if (a <= o && o < b && o + len > b)
				cut += (int64_t)len;
		}
		o += len;
	}
	return cut;
}

/* zero 3 holds gathered the unit in use and the one prefetched
 * (dt_plan_gather_units; z over units): the unit used next in the same
 * direction, a neighbour, or after a wrong guess the one used instead
 * (train/sync_zero3.c). Without recompute that is a neighbour too, but
 * where forwards (or backwards) follow each other (a pipeline's
 * schedule, the breadth-first one's forwards), the last unit and the
 * first meet; a recomputed forward inside backward may meet any two, so
 * then the two largest. */
static int64_t
gathered_max(const struct dt_job *job, const struct dt_plan *plan,
	     const struct node_sizes *z)
{
	int64_t most = z->adjacent;

	if (job->model.recompute != DT_RECOMPUTE_NONE)
		return z->two_max;
	if ((plan->pp_size > 1 ||
	     plan->accum_schedule == DT_ACCUM_BREADTH_FIRST) && z->ends > most)
		most = z->ends;
	return most;
}

void
dt_plan_sync(const struct dt_job *job, const struct dt_plan *plan, int stage,
	     struct dt_sync_plan *out)
{
	const struct dt_stage_info *si = &plan->stages[stage];
	int summed = dt_plan_sync_summed(job, plan);
	struct node_sizes nodes;

	out->base = impl_of(job, plan);
	out->zero = zero_level(job, plan);
	out->impl = out->zero > 0 ? DT_SYNC_IMPL_ZERO : out->base;
	out->sum_ranks = sum_ranks(job, plan);
	out->summed = summed;
	out->overlap = dt_plan_sync_overlap(job, plan);
	/* bf16 only where something crosses the wire: over one rank it
	 * would change nothing. */
	out->wire = summed ? job->parallel.grad_wire : DT_GRAD_WIRE_F32;
	if (out->wire == DT_GRAD_WIRE_BF16)
		out->wire_bytes = 2;
	else
		out->wire_bytes = plan->exact_accum ? 8 : 4;
	out->bucket_bytes = out->overlap ?
			    (int64_t)(job->parallel.bucket_mb * 1048576.0) : 0;
	out->trained = stage_trained(plan, si->trained_lo, si->trained_hi);
	out->tp_norm_floats = tp_norm_floats(plan, si->trained_lo,
					     si->trained_hi);
	out->tp_block_floats = out->zero >= 2 ?
			       tp_block_floats(plan, si->trained_lo,
					       si->trained_hi) : 0;
	/* At zero the summing ranks cut the trained floats into parts, one
	 * a rank (dt_comm_part), and each optimizer updates its own. */
	out->shards = out->zero > 0 ? out->sum_ranks : 1;
	dt_plan_sync_own(out, 0, &out->own_lo, &out->own_hi);
	out->own_max = (out->trained + out->shards - 1) / out->shards;
	out->optim_buffers = dt_plan_optim_buffers(job);
	node_sizes(plan, si->trained_lo, si->trained_hi,
		   out->zero >= 3 ? dt_plan_gather_cap(job) : 0, &nodes);
	out->node_max = nodes.max;
	out->gather_max = out->zero >= 3 ? gathered_max(job, plan, &nodes) :
			  0;
	/* Level 2 and 3 in the exact mode keep the own part of the double
	 * accumulator and sum every micro-batch into the parts
	 * (train/sync_zero.c): each rank sends its floats of the others'
	 * parts to their owners, 4 bytes a value each micro-batch, where
	 * the whole accumulator is summed once, 8 bytes a value. */
	out->acc_seg = out->zero >= 2 && plan->exact_accum ?
		       (out->own_max < DT_SYNC_ACC_SEG ? out->own_max :
			DT_SYNC_ACC_SEG) : 0;
	out->cut_floats = out->zero >= 2 ?
			  cut_floats(plan, out, si->trained_lo, si->trained_hi) :
			  0;
	/* Depth first, each node's gradient is final as its backward ends
	 * (with float sums there is one micro-batch a step), so it goes
	 * to its parts then (train/sync_zero.c). */
	out->grad_parts = out->zero >= 2 &&
			  plan->accum_schedule != DT_ACCUM_BREADTH_FIRST;
	out->grads_resident = out->zero >= 2 &&
			      job->parallel.zero_resident_grads;
	out->part_seg = !out->grad_parts ? 0 : out->acc_seg > 0 ?
			out->acc_seg : out->own_max < DT_SYNC_ACC_SEG ?
			out->own_max : DT_SYNC_ACC_SEG;
	out->accumulator_bytes = !plan->exact_accum ? 0 :
				 out->acc_seg > 0 ? out->own_max * 8 :
				 out->trained * 8;
	/* The count the trainer measures (summary.json's bytes_per_step):
	 * keep it computed exactly this way. */
	out->bytes_per_step = summed ? out->trained * out->wire_bytes : 0;
	/* the floats of each micro-batch sent to their parts' owners */
	if (out->acc_seg > 0)
		out->bytes_per_step = out->trained * 4 *
				      plan->grad_accum_steps;
}

int64_t
dt_plan_bucket_max(const struct dt_model *m, int64_t cap_floats)
{
	int64_t n_trained, most = 0, lo = 0, hi = 0;
	int open = 0;

	if (m == NULL)
		return 0;
	n_trained = (int64_t)dt_model_n_trained(m);
	if (cap_floats <= 0)
		cap_floats = INT64_MAX;
	for (int t = dt_model_n_tensors(m) - 1; t >= 0; t--) {
		struct dt_tensor_info ti;
		int64_t off, end;

		dt_model_tensor_info(m, t, &ti);
		off = (int64_t)ti.offset;
		end = off + (int64_t)ti.size;
		if (off >= n_trained || ti.size == 0)
			continue;
		if (open && end != lo) {
			most = hi - lo > most ? hi - lo : most;
			open = 0;
		}
		if (!open) {
			hi = end;
			open = 1;
		}
		lo = off;
		if (hi - lo >= cap_floats) {
			most = hi - lo > most ? hi - lo : most;
			open = 0;
		}
	}
	if (open && hi - lo > most)
		most = hi - lo;
	return most;
}

/* Open MPI 4.1's own TCP eager limit: a bucket this small goes eagerly
 * already. */
#define OMPI_TCP_EAGER 65536
/* Room above a bucket for the PML's and the BTL's headers. */
#define TCP_EAGER_HEADROOM 4096

int64_t
dt_plan_tcp_eager(const struct dt_job *job, const struct dt_plan *plan,
		  int64_t *largest)
{
	const struct dt_sync_plan *y = plan->sync;
	int64_t big, lim, cap;

	if (largest != NULL)
		*largest = 0;
	if (job->parallel.tcp_eager_kb != DT_DEGREE_AUTO)
		return job->parallel.tcp_eager_kb * 1024;
	if (y == NULL || plan->pp_size != 1 || plan->tp_size != 1 ||
	    !y->summed || y->impl != DT_SYNC_IMPL_ALLREDUCE)
		return 0;
	cap = y->bucket_bytes / (int64_t)sizeof(float);
	if (y->bucket_bytes > 0 && cap == 0)
		cap = 1;	/* as train/sync.c cuts */
	big = dt_plan_bucket_max(plan->shapes, cap) * y->wire_bytes;
	if (largest != NULL)
		*largest = big;
	if (big <= OMPI_TCP_EAGER ||
	    big > DT_PLAN_TCP_EAGER_MAX - TCP_EAGER_HEADROOM)
		return 0;
	for (lim = OMPI_TCP_EAGER; lim < big + TCP_EAGER_HEADROOM; lim *= 2)
		;
	return lim;
}
