/* SPDX-License-Identifier: MIT */
/* sync_plan.h - the plan's decision of how each pipeline stage's
 * gradient is summed and applied (dt_plan_sync, sync_plan.c): the
 * implementation, overlap, the wire, the buckets, the span of the
 * trained parameters this rank's optimizer updates, the optimizer's
 * buffers and the bytes per step. Written once here; the trainer's
 * gradient sync (train/sync.h) obeys it and plan --dry-run prints it. */
#ifndef DT_PLAN_SYNC_PLAN_H
#define DT_PLAN_SYNC_PLAN_H

#include <stdint.h>

#include "job/job.h"

struct dt_plan;
struct dt_model;
struct dt_tp_block;
struct dt_grid_pos;

/* The gradient-sync implementations (train/sync.h). */
enum dt_sync_impl {
	DT_SYNC_IMPL_ALLREDUCE = 0,	/* float sums, the whole model */
	DT_SYNC_IMPL_EXACT,		/* double accumulator and sum */
	DT_SYNC_IMPL_STAGES,		/* float, over a stage or slice */
	DT_SYNC_IMPL_STAGES_EXACT,	/* double, over a stage or slice */
	DT_SYNC_IMPL_SERVERS,		/* parameter servers */
	DT_SYNC_IMPL_ZERO,		/* sharded optimizer state (and
					 * gradients), parallel.zero */
};

/* What one rank of a stage does with its gradient each optimizer step
 * (every rank of a stage does the same). Counts are floats of the
 * rank's trained arena unless they say bytes. */
struct dt_sync_plan {
	enum dt_sync_impl impl;
	enum dt_sync_impl base;		/* whose sums it runs: impl, or for
					 * zero the implementation level 0
					 * would run (allreduce, exact,
					 * stages, stages-exact) */
	int zero;			/* parallel.zero where summed, else 0:
					 * 1 the optimizer state sharded, 2
					 * the gradient's sum too, 3 the
					 * parameters too (resident: own part
					 * and one node gathered) */
	int shards;			/* parts the trained floats are cut
					 * into (dt_comm_part): sum_ranks at
					 * zero, else 1 */
	int sum_ranks;			/* ranks whose gradients add up
					 * (data- x tensor-parallel ranks of
					 * the stage); 0 with servers */
	int summed;			/* something crosses the wire:
					 * sum_ranks > 1 */
	int overlap;			/* buckets start during the last
					 * backward (parallel.overlap where
					 * summed) */
	enum dt_grad_wire wire;		/* the job's where summed, else f32 */
	int64_t wire_bytes;		/* a value on the wire: 2 bf16, 8 the
					 * exact f32 wire, 4 float; also for
					 * servers (4) */
	int64_t bucket_bytes;		/* gradient per bucket (cut at whole
					 * tensors, sync.h); 0: one bucket of
					 * the whole gradient */
	int64_t trained;		/* trained floats of the stage */
	int64_t own_lo, own_hi;		/* trained floats [own_lo, own_hi)
					 * the optimizer of the stage's sum
					 * rank 0 updates (every one but at
					 * zero: dt_plan_sync_own gives each
					 * rank's; servers update for the
					 * workers) */
	int64_t own_max;		/* the most trained floats one rank's
					 * optimizer updates: ceil(trained /
					 * shards) */
	int optim_buffers;		/* optimizer buffers, each own_max
					 * floats at most */
	int64_t gather_max;		/* zero 3: the trained floats of the
					 * two gather units (dt_plan_gather_
					 * units) held at once: a unit is
					 * gathered whole before its forward
					 * and its backward, and the next
					 * one's gather is in flight
					 * meanwhile; else 0 */
	int64_t acc_seg;		/* zero >= 2 in the exact mode: the
					 * accumulator is the rank's own part
					 * only (own_max doubles), and each
					 * micro-batch's gradient is reduce-
					 * scattered into it, acc_seg values
					 * a part at a time; else 0 (whole) */
	int grad_parts;			/* zero >= 2 and depth first: the
					 * float gradient is summed into the
					 * parts a few nodes at a time during
					 * backward (each micro-batch's into
					 * the accumulator's parts in the
					 * exact mode; the one micro-batch's
					 * into the own floats with float
					 * sums), and the pages of the floats
					 * summed and not owned handed back,
					 * so the gradient resident is the own
					 * part, or a node and part_seg
					 * floats */
	int grads_resident;		/* zero >= 2 and parallel.
					 * zero_resident_grads: the float
					 * gradient's pages never handed back
					 * (the same sums and bits), so every
					 * parameter's float gradient is
					 * resident; the accumulator and the
					 * optimizer stay sharded */
	int64_t part_seg;		/* grad_parts: the most floats of a
					 * part summed in one message and
					 * pending beyond a node (acc_seg in
					 * the exact mode, else
					 * min(own_max, DT_SYNC_ACC_SEG));
					 * else 0 */
	int64_t node_max;		/* the trained floats of the stage's
					 * largest node */
	int64_t tp_norm_floats;		/* tensor slices: the whole split
					 * tensor and block tensor rank 0
					 * takes a norm in (train/sync.c,
					 * split_norms), the largest of each;
					 * else 0 */
	int64_t tp_block_floats;	/* tensor slices at zero >= 2: the
					 * largest split block, made whole
					 * for the norm on each tensor rank's
					 * first data-parallel rank
					 * (train/sync_zero.c); else 0 */
	int64_t cut_floats;		/* zero >= 2: the floats of the
					 * tensors a part boundary cuts, whose
					 * gradients are summed whole for the
					 * norm (train/sync_zero.c); else 0 */
	int64_t accumulator_bytes;	/* exact: the double accumulator,
					 * (trained) doubles, or at acc_seg
					 * > 0 (own_max); else 0 */
	int64_t bytes_per_step;		/* gradient bytes the rank hands to
					 * MPI per step, as the trainer
					 * counts them (trained x wire_bytes
					 * where summed; 0 else, and with
					 * servers) */
};

/* The most values of a rank's part in one of the reduce-scatters that
 * add a micro-batch's gradient into the parts of the double accumulator
 * at zero >= 2 (acc_seg): the ring's doubles then take (P + 1) x 2 MiB
 * a rank at most. */
#define DT_SYNC_ACC_SEG 262144

/* Names of the implementations, as summary.json and plan --dry-run
 * write them: "allreduce", "exact", "stages", "stages-exact",
 * "parameter_server". */
const char *dt_sync_impl_name(enum dt_sync_impl impl);

/* Whether job's gradients on plan (dt_plan_batch's grid) are summed
 * over more than one rank by the collective sums (not parameter
 * servers), and whether those sums overlap backward: the one place the
 * overlap rule is written. Pure. */
int dt_plan_sync_summed(const struct dt_job *job, const struct dt_plan *plan);
int dt_plan_sync_overlap(const struct dt_job *job,
			 const struct dt_plan *plan);

/* 1 when job's checkpoints on plan are written in shards (ckpt/ckpt.h):
 * each stage's first rank writes its stage's parameters and every rank
 * its part of the optimizer state, nothing gathered to rank 0; 0 where
 * rank 0 gathers the whole model and writes it alone: parameter servers
 * (they hold the state), tensor slices (plan->tp_sliced: rank 0 gathers
 * the blocks into whole tensors), checkpoint.compress (the gathered
 * format's gzip'd optimizer file) or more ranks than a manifest lists
 * (DT_CKPT_SHARD_FILES_MAX / 2). The one place the rule is written:
 * train/state.c and plan --dry-run read it. Pure. */
int dt_plan_ckpt_sharded(const struct dt_job *job, const struct dt_plan *plan);

/* Whether the norm of split tensor t of m (dt_model_tensor_tp_block over
 * tp_size tensor ranks) is chained where the ranks own their slices
 * (train/sync.c, split_norms): every tensor rank's block a run of whole
 * rows of a multiple of 8 floats (the blocks may differ in size), whose
 * squares' eight lanes pass from tensor rank to tensor rank; else its
 * blocks are gathered whole on tensor rank 0. The same answer on every
 * rank. */
int dt_plan_tp_norm_chained(const struct dt_model *m, int t, int tp_size);

/* The bytes the rank at pos sends its tensor group each step for the
 * gradient norm where the ranks own their slices (plan->tp_sliced;
 * train/sync.c, split_norms, which only data-parallel rank 0 of each
 * tensor group runs): for each split trained tensor of its stage (a tied
 * copy left out), 64 bytes of eight double lanes to the next tensor
 * rank where the norm is chained (dt_plan_tp_norm_chained; none from the
 * last), else its block's floats x 4 to tensor rank 0 (none from tensor
 * rank 0). 0 elsewhere. The count the trainer measures
 * (dt_grad_sync_norm_bytes, summary.json's tp_norm_bytes). Pure. */
int64_t dt_plan_tp_norm_bytes(const struct dt_plan *plan,
			      const struct dt_grid_pos *pos);

/* The bytes the rank at pos (its stage's sync plan y) sends
 * data-parallel rank 0 of its tensor rank each step at parallel.zero 2
 * and 3 where the tensor ranks own their slices (train/sync_zero.c,
 * block_whole): for each split trained tensor of its stage (a tied copy
 * left out), the floats x 4 of the tensor's block in its own part
 * (dt_comm_part over y->shards of its tensor rank's trained floats, the
 * blocks its own size). 0 on data-parallel rank 0 and elsewhere. The
 * count the trainer measures (dt_grad_sync_block_bytes, summary.json's
 * zero_block_bytes). Pure. */
int64_t dt_plan_zero_block_bytes(const struct dt_plan *plan,
				 const struct dt_sync_plan *y,
				 const struct dt_grid_pos *pos);

/* The most floats any of the tp_size tensor ranks' blocks of split
 * tensor t of m holds (the blocks of a vocabulary the degree does not
 * divide differ). */
int64_t dt_plan_tp_block_max(const struct dt_model *m, int t, int tp_size);

/* Optimizer state buffers the job's optimizer keeps per trained float:
 * SGD 0 (1 with momentum), Adam and AdamW 2. */
int dt_plan_optim_buffers(const struct dt_job *job);

/* The trained floats [*lo, *hi) the optimizer of the rank whose index
 * among the stage's summing ranks (its rank in their communicator) is
 * sum_rank updates: dt_comm_part of sync->trained over sync->shards
 * (comm/comm.h: the part a reduce-scatter leaves it and an all-gather
 * takes from it); every trained float with one shard. Pure. */
void dt_plan_sync_own(const struct dt_sync_plan *sync, int sum_rank,
		      int64_t *lo, int64_t *hi);

/* zero 3's gather units (parallel.gather_mb): nodes 0..n-1 (in node
 * order) hold the trained floats [lo[i], hi[i]) (lo[i] == hi[i]: none).
 * A unit is a run of consecutive nodes with trained floats, each
 * starting where the one before ends, whose floats together are at most
 * cap (a node larger than cap is a unit of its own; cap <= 0: every
 * node is); each unit is gathered with one broadcast per owner
 * (train/sync_zero3.c), so small nodes (norms, biases, a small model's
 * layers) share a collective instead of costing every rank one each.
 * unit[i] receives node i's unit (0, 1, ... in node order) or -1 for a
 * node without trained floats. Returns the number of units. The plan
 * (gathered_params_max) and the trainer group by this one rule. Pure. */
int dt_plan_gather_units(int n, const int64_t *lo, const int64_t *hi,
			 int64_t cap, int *unit);

/* parallel.gather_mb in floats (4 bytes each). */
int64_t dt_plan_gather_cap(const struct dt_job *job);

/* Where job and plan cannot shard as parallel.zero asks: DT_ERR_PLAN
 * naming parallel.zero and the key it does not combine with
 * (parallel.sync: parameter_server at any level; at level 2, where the
 * gradient is summed, parallel.overlap: true and parallel.grad_wire:
 * bf16), with the fix; DT_OK otherwise. Pure. */
enum dt_status dt_plan_sync_check(const struct dt_job *job,
				  const struct dt_plan *plan,
				  struct dt_error *err);

/* The floats of the largest gradient bucket of model m's trained
 * tensors at cap_floats (0: one bucket), by the bucket rule of
 * train/sync.h (dt_grad_buckets_make: whole tensors from the last one
 * down, a bucket closed once it holds cap_floats or more), which this
 * follows; 0 when m is NULL or trains nothing. Pure. */
int64_t dt_plan_bucket_max(const struct dt_model *m, int64_t cap_floats);

/* The largest TCP eager limit parallel.tcp_eager_kb auto chooses:
 * 8 MiB (bench/README, "The TCP eager limit from the plan": on 2
 * simulated hosts at 1 Gbit/s the fm MLP's one 2.1 MB bucket at 4 MiB
 * ran 3156 to 4920 samples/s where Open MPI's 64 KiB gave 3060 to 3225,
 * and mlp-1m's 4.24 MB first bucket at 8 MiB ran faster than at Open
 * MPI's own in 4 of 4 alternating runs, 1916 to 2026 against 1719 to
 * 1941). */
#define DT_PLAN_TCP_EAGER_MAX 8388608

/* Open MPI's TCP eager limit (btl_tcp_eager_limit, with
 * btl_tcp_rndv_eager_limit and btl_tcp_max_send_size the same), bytes,
 * that job's gradient sums on plan ask for; 0 leaves Open MPI's own
 * (64 KiB in 4.1). parallel.tcp_eager_kb N: N KiB (0: 0). auto: where
 * the whole model's float sums (the allreduce implementation, one
 * stage, no tensor parallelism) cross the wire and their largest
 * bucket (dt_plan_bucket_max of the plan's bucket_bytes, times the
 * wire's bytes a value) is above 64 KiB and at most
 * DT_PLAN_TCP_EAGER_MAX less 4 KiB (room for Open MPI's headers), the
 * power of two >= that bucket plus 4 KiB, so each bucket's message
 * (one, at 2 ranks: libnbc's recursive doubling) leaves in one
 * fragment instead of 64 KiB ones after a rendezvous; else 0. *largest
 * (may be NULL) receives that largest bucket's bytes (0 where auto
 * does not look). The sums' bits do not depend on it. Pure. */
int64_t dt_plan_tcp_eager(const struct dt_job *job, const struct dt_plan *plan,
			  int64_t *largest);

/* Fills *out with stage `stage`'s sync on plan (its grid, exact_accum
 * and stages set). Pure. */
void dt_plan_sync(const struct dt_job *job, const struct dt_plan *plan,
		  int stage, struct dt_sync_plan *out);

#endif
