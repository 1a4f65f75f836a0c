/* SPDX-License-Identifier: MIT */
/* exec.h - the executor: one optimizer step, and the evaluation forward
 * passes, of any layout (data parallel, pipeline stages, tensor-parallel
 * groups and their products) over the plan's schedule. Data parallelism
 * is the one-stage case: the schedule F0 B0 F1 B1 ..., one activation
 * slot, no messages between stages; or, breadth first (plan.h,
 * dt_plan_accum_schedule), F0 .. F(m-1) into m slots and then one
 * backward pass over all of them, node by node. Internal to train/. */
#ifndef DT_TRAIN_EXEC_H
#define DT_TRAIN_EXEC_H

#include <stdint.h>

#include "comm/comm.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "util/status.h"

struct dt_run;

/* Where this rank sits and what it holds to run its part of a step;
 * made by dt_layout_setup, owned by the executor. */
struct dt_layout {
	struct dt_grid_pos grid;	/* this rank in dp x pp x tp */
	int split;			/* the model is cut (pp > 1 or tp > 1):
					 * a stage model, checkpoints gather */
	int last_stage;			/* it holds the loss */
	struct dt_stage_info stage;	/* what its stage holds */
	int first_tensor;		/* its stage's first tensor in the
					 * whole model's list */
	int n_tensors_all;		/* tensors of the whole model */
	/* The communicators, each a split of the world by the coordinates
	 * its members share. */
	struct dt_comm *stage_comm;	/* the dp x tp ranks of the stage:
					 * they sum its gradient (with
					 * whole tensors) */
	struct dt_comm *dp_comm;	/* the data-parallel ranks of the
					 * stage's tensor rank: they sum
					 * its gradient where the tensor
					 * ranks own their slices
					 * (plan.tp_sliced), else NULL */
	struct dt_comm *pipe_comm;	/* the stages of one pipeline; rank
					 * in it = stage */
	struct dt_comm *tp_comm;	/* the tensor-parallel group */
	struct dt_comm *world;		/* every rank (borrowed) */
	const struct dt_pipe_op *ops;	/* (n_ops) the stage's schedule */
	int64_t n_ops;
	int n_slots;			/* micro-batches in flight */
	float **slot_x;			/* (n_slots) (micro_batch, input) */
	int32_t **slot_y;		/* (n_slots) (micro_batch, labels) */
	int *slot_req;			/* (n_slots, max_req) pending sends */
	int *slot_n_req;		/* (n_slots) */
	int max_req;
	int64_t *eval_idx;		/* (micro_batch) eval sample indices */
	/* Bytes this rank moved in training steps: pipeline sends and the
	 * tensor-parallel sums (payloads). */
	uint64_t bytes_p2p, bytes_tp;
};

/* Collective over r->comm: fills r->layout from r->plan (grid position,
 * communicators, schedule, slots) and builds r->model, the whole model
 * or this rank's stage of it. DT_ERR_PLAN for a split the model cannot
 * take (every rank reaches the same verdict), DT_ERR_MPI otherwise. */
enum dt_status dt_layout_setup(struct dt_run *r, struct dt_error *err);

/* Frees what dt_layout_setup made (not r->model). */
void dt_layout_fini(struct dt_layout *l);

/* Bytes this rank has handed to MPI on the layout's communicators. */
uint64_t dt_layout_bytes_sent(const struct dt_layout *l);

/* One optimizer step's forward and backward passes on this rank, in the
 * schedule's order, with the gradient-sync calls of r->sync around each
 * backward (sync.h). Every bucket of the sync is begun once, in order:
 * with overlap (dt_grad_sync_overlap) from the model's backward hook in
 * the step's last micro-batch (op micro == grad_accum_steps - 1), as soon
 * as the node that makes the bucket final has run, with
 * dt_grad_sync_progress after every node; breadth first, as soon as that
 * node's pass over the last micro-batch has run, with
 * dt_grad_sync_progress after every node's pass over every micro-batch
 * (and the sync's breadth-first calls, sync.h, instead of those around
 * each backward); without overlap, all of them after the last
 * backward. On DT_OK the sums of the begun buckets may still be in
 * flight: the gradient arena (dt_model_grads, (n_trained) floats) is
 * MPI's until dt_grad_sync_finish, which the caller must call before it
 * reads or writes the gradient. grad_scale multiplies d(loss)/d(params)
 * (1 / (global batch x labels per sample) for a mean loss). *loss_sum
 * gets this rank's share of the step's loss sum (the last stage's
 * tensor-parallel rank 0; 0 elsewhere); *data_wait grows by the seconds
 * spent waiting for the loader or gathering data; *forward_s grows by
 * the wall-clock seconds of the step's forward passes (copying each
 * micro-batch in and a pipeline's sends and receives included, the data
 * waits not), so that the rest of the step's compute is its backward
 * passes (with the gradient accumulation and the sums driven between
 * layers).
 * Errors: DT_ERR_MPI with err naming the call and the rank (a failed
 * begin inside backward ends the pass there; the buckets after it are
 * not begun). */
enum dt_status dt_exec_step(struct dt_run *r, float grad_scale,
			    double *loss_sum, double *data_wait,
			    double *forward_s, struct dt_error *err);

/* The forward passes of eval rows [lo, hi), micro-batch by micro-batch:
 * adds the loss sum and the correct count to sums[0..1] (the last
 * stage's tensor-parallel rank 0 only). Errors: DT_ERR_MPI. */
enum dt_status dt_exec_eval(struct dt_run *r, int64_t lo, int64_t hi,
			    double *sums, struct dt_error *err);

#endif
