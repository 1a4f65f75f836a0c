/* SPDX-License-Identifier: MIT */
/* describe.c - what `dtrain plan --dry-run` shows (see plan.h). The text is
 * printed from the JSON description, so the two always agree; the
 * description prints what the plan holds (its stages, their gradient
 * sync: plan/sync_plan.h) and adds up bytes, deciding nothing itself. */
#include "plan/plan.h"

#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "comm/ps.h"
#include "graph/graph.h"
#include "graph/kern.h"
#include "graph/layer.h"
#include "plan/sync_plan.h"
#include "util/alloc.h"
#include "util/jsonnum.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))

static struct json_object *
shape_array(int n, const int64_t *dims)
{
	struct json_object *a = json_object_new_array();

	for (int i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_int64(dims[i]));
	return a;
}

/* What a rank of each stage holds and moves; describe() fills one per
 * stage. */
struct stage_plan {
	const struct dt_stage_info *si;
	const struct dt_sync_plan *sync;
	int64_t in_flight;		/* micro-batches whose activations
					 * the stage holds at once */
	int64_t tp_floats;		/* per sample, summed in the tensor
					 * group */
	struct json_object *memory;	/* of one of its ranks */
	int64_t kern_shapes;		/* oneDNN primitives; 0: none */
	int64_t kern_bytes;		/* their memory and the library's */
	int64_t total;			/* bytes, of one of its ranks */
	int64_t step;			/* bytes, its rank's in a step */
	int64_t at_setup;		/* bytes, with tensor slices: the
					 * whole parameters at setup beside
					 * the runtime and the dataset (the
					 * total is the larger of step and
					 * this); else 0 */
	int64_t p2p, grad_allreduce, tp_allreduce;	/* bytes per step */
	bool ckpt;			/* the job writes checkpoints */
	bool ckpt_gathered;		/* in the gathered format (not
					 * dt_plan_ckpt_sharded) */
};

static int64_t get_i(const struct json_object *o, const char *a,
		     const char *b);

/* model.recompute's words, in the order of enum dt_recompute. */
static const char *const recompute_words[] = { "none", "blocks",
					       "attention" };

/* model.attention, as the job file spells it. */
static const char *const attention_words[] = { "materialized", "fused" };

/* The number o's key a holds, 0 when it holds none. */
static double
get_d(const struct json_object *o, const char *a)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, a, &x))
		return 0;
	return json_object_get_double(x);
}

/* The element of the gradient sums' wire (train/sync.h). */
static const char *
wire_word(const struct dt_sync_plan *sync)
{
	if (sync->wire == DT_GRAD_WIRE_BF16)
		return "bf16";
	return sync->wire_bytes == 8 ? "f64" : "f32";
}

/* The samples of the evaluation's last, partial micro-batch on the first
 * data-parallel replica (train/eval.c: whole micro-batches over its share
 * of the eval set, bounded by eval.max_batches), 0 where it has none;
 * where the eval set's size is not known yet (the run's check before
 * allocation, before the data is read), one of micro_batch - 1 samples:
 * a tail's shapes are as many whatever its size. */
static int64_t
eval_tail(const struct dt_job *job, const struct dt_plan *plan)
{
	int64_t n = plan->data.n_eval, max = job->eval.max_batches;

	if (n < 0)
		return plan->micro_batch - 1;
	if (n == 0 || plan->micro_batch <= 0)
		return 0;
	if (max > 0 && max <= n / plan->global_batch)
		n = max * plan->global_batch;
	return n / plan->dp_size % plan->micro_batch;
}

/* oneDNN's own memory on a rank of stage si (doc/DESIGN.md, "oneDNN's
 * own memory"): none where its products go to OpenBLAS; else the
 * library's pages and first allocations, and for each distinct shape of
 * product the stage makes (dt_model_product_shapes) its primitive. The
 * choice is the run's: train.precision bf16 (its products always on
 * oneDNN), or the f32 dense products on oneDNN by parallel.kernels,
 * DTRAIN_KERNELS and the CPU (dt_kern_onednn_dense_for). */
static void
kernels_runtime(const struct dt_job *job, const struct dt_plan *plan,
		struct stage_plan *sp)
{
	int bf16 = job->train.precision == DT_PRECISION_BF16;
	int64_t batches[2] = { plan->micro_batch, eval_tail(job, plan) };

	sp->kern_shapes = sp->kern_bytes = 0;
	if (!bf16 && !dt_kern_onednn_dense_for(
		    (enum dt_kern_lib)job->parallel.kernels))
		return;
	sp->kern_shapes = dt_model_product_shapes(
		plan->shapes, sp->si->first_node, sp->si->last_node, batches,
		2, plan->blas_threads, dt_kern_gemm_align(), !bf16,
		sp->sync->overlap);
	sp->kern_bytes = DT_PLAN_ONEDNN_BYTES +
			 sp->kern_shapes * DT_PLAN_ONEDNN_SHAPE_BYTES;
}

/* One stage's memory and bytes per step, for a rank of it (every rank of
 * a stage holds and moves the same). */
static void
plan_stage(const struct dt_plan *plan, int64_t dataset, int64_t loader,
	   struct stage_plan *sp)
{
	const struct dt_sync_plan *y = sp->sync;
	int64_t mb = plan->micro_batch;
	int64_t input = dt_model_input_size(plan->shapes) * mb;
	int64_t per_step = mb * plan->grad_accum_steps;
	/* Each micro-batch in flight has its slot of activations and its
	 * copy of the input batch (train/exec.c); the recompute's workspace
	 * is one for all of them. */
	int64_t act = (sp->si->act_floats * mb + input) * sp->in_flight * 4 +
		      sp->si->act_work_floats * mb * 4;
	/* A rank holds its stage's tensors only (the whole model without a
	 * pipeline): parameters and gradients, and the optimizer's buffers
	 * over the span it updates. */
	int64_t n_params = y->trained + (int64_t)(sp->si->buffer_hi -
						  sp->si->buffer_lo);
	int64_t opt = y->optim_buffers * y->own_max * 4;
	/* zero 3 keeps its own part of the trained parameters and two gather
	 * units, the one in use and the one prefetched (the buffers
	 * whole; sync_zero3.c). */
	int64_t resident = y->zero >= 3 ? y->own_max + y->gather_max +
			   (int64_t)(sp->si->buffer_hi - sp->si->buffer_lo) :
			   n_params;
	/* The exact sum's ring (comm/comm_mpi.c) receives each bucket's
	 * chunk from its neighbour into a buffer of doubles kept from step
	 * to step: 1/p of the stage's doubles (and one), p ranks summing. */
	int64_t sum_buf = y->summed && (y->base == DT_SYNC_IMPL_EXACT ||
					y->base == DT_SYNC_IMPL_STAGES_EXACT) ?
			  (y->trained / y->sum_ranks + 1) * 8 : 0;
	/* At zero 2 and 3 an owner sums a piece of its part of the
	 * accumulator at a time (train/sync_zero.c): acc_seg floats
	 * received and their doubles. */
	if (y->acc_seg > 0)
		sum_buf = y->acc_seg * 12 + 12;
	/* with float sums a piece of part_seg floats received */
	else if (y->grad_parts)
		sum_buf = y->part_seg * 4 + 4;
	/* At zero 2 and 3 the tensors a part boundary cuts are summed whole
	 * for the norm, in a buffer of their own (train/sync_zero.c). */
	sum_buf += y->cut_floats * 4;
	/* With tensor slices the norm's whole tensor and block on the
	 * stage's first rank (train/sync.c), counted on each rank, and at
	 * zero 2 and 3 a summed block made whole on each tensor rank's
	 * first data-parallel rank (train/sync_zero.c): the other
	 * data-parallel ranks' figures are less that block
	 * (norm_buffers_lacked). */
	sum_buf += (y->tp_norm_floats + y->tp_block_floats) * 4;
	/* zero 2 and 3 with the gradient's parts (train/sync_zero.c): in
	 * the exact mode the own part after the last backward, or during
	 * one the nodes not yet summed, fewer than part_seg floats and a
	 * node (the sums so far are in the accumulator); with float sums
	 * the own floats hold the sum as it builds up, so the rank whose
	 * part backward passes first holds all of it beside the nodes of
	 * the other parts not yet summed. Else, and where the job keeps
	 * the gradient resident (parallel.zero_resident_grads), every
	 * parameter's. */
	int64_t pend = y->node_max + y->part_seg;
	int64_t grads = !y->grad_parts || y->grads_resident ? n_params :
			y->acc_seg == 0 ? y->own_max + pend :
			y->own_max > pend ? y->own_max : pend;
	/* zero 3 where the job checkpoints in the gathered format with a
	 * pipeline or tensor slices: the whole parameters gathered on every
	 * summing rank (sync_zero3.c), after an update, beside the own part
	 * of the gradient (the whole gradient where it is kept resident):
	 * beyond what the step holds by as much as that exceeds the step's
	 * parameters and gradient. With neither, rank 0
	 * writes the gathered format a piece at a time (train/state.c,
	 * stream_checkpoint; the pieces held, zero_collect_bytes'); an
	 * evaluation gathers unit by unit as a step does, and a checkpoint
	 * in shards writes each rank's part, gathering only the tensors a
	 * part boundary cuts, one at a time (each within its node's unit,
	 * train/state.c): none holds more than the step. */
	int64_t whole = 0;
	int64_t ckpt_grads = y->grads_resident ? n_params : y->own_max;
	struct json_object *mem;

	if (grads > n_params)
		grads = n_params;
	if (y->zero >= 3 && sp->ckpt_gathered &&
	    (plan->pp_size > 1 || plan->tp_size > 1) &&
	    n_params + ckpt_grads > resident + grads)
		whole = n_params + ckpt_grads - resident - grads;
	/* With tensor slices a rank builds and initialises its stage's
	 * tensors whole, then keeps its blocks in the same arena
	 * (graph/tensor.c, dt_model_tp_own_slices): at setup the whole
	 * parameters are resident beside the runtime and the dataset only
	 * (no gradient, optimizer state, accumulator or activations yet);
	 * beyond the step's total by as much as they exceed it (a
	 * tensor-parallel degree of 8 with little optimizer state). */
	int64_t stage_whole = (int64_t)(sp->si->trained_hi -
					sp->si->trained_lo +
					sp->si->buffer_hi - sp->si->buffer_lo);
	int64_t step = (resident + grads + whole) * 4 + opt +
		       y->accumulator_bytes + sum_buf + act + dataset + loader +
		       DT_PLAN_RUNTIME_BYTES + sp->kern_bytes;
	int64_t at_setup = stage_whole * 4 + dataset + DT_PLAN_RUNTIME_BYTES;
	int64_t setup = plan->tp_sliced && at_setup > step ?
			at_setup - step : 0;
	mem = json_object_new_object();

	ADD(mem, "params", json_object_new_int64(resident * 4));
	ADD(mem, "grads", json_object_new_int64(grads * 4));
	ADD(mem, "optimizer_state", json_object_new_int64(opt));
	ADD(mem, "grad_accumulator",
	    json_object_new_int64(y->accumulator_bytes));
	ADD(mem, "sum_buffers", json_object_new_int64(sum_buf));
	if (whole > 0)
		ADD(mem, "params_gather", json_object_new_int64(whole * 4));
	if (setup > 0)
		ADD(mem, "params_setup", json_object_new_int64(setup));
	ADD(mem, "activations", json_object_new_int64(act));
	ADD(mem, "dataset", json_object_new_int64(dataset));
	ADD(mem, "loader", json_object_new_int64(loader));
	ADD(mem, "runtime", json_object_new_int64(DT_PLAN_RUNTIME_BYTES));
	if (sp->kern_bytes > 0)
		ADD(mem, "kernels_runtime",
		    json_object_new_int64(sp->kern_bytes));
	sp->total = step + setup;
	sp->step = step;
	sp->at_setup = plan->tp_sliced ? at_setup : 0;
	ADD(mem, "total", json_object_new_int64(sp->total));
	sp->memory = mem;
	/* The three counts the trainer measures and writes to summary.json
	 * (bytes_per_step): keep them computed exactly this way. */
	sp->p2p = (sp->si->send_fwd_floats + sp->si->send_bwd_floats) * 4 *
		  per_step;
	sp->grad_allreduce = y->bytes_per_step;
	sp->tp_allreduce = plan->tp_size > 1 ? sp->tp_floats * 4 * per_step :
			   0;
}

static struct json_object *
describe_grid(const struct dt_job *job, const struct dt_plan *plan)
{
	struct json_object *grid = json_object_new_object();

	ADD(grid, "world_size", json_object_new_int(plan->world_size));
	ADD(grid, "data_parallel", json_object_new_int(plan->dp_size));
	ADD(grid, "pipeline_parallel", json_object_new_int(plan->pp_size));
	ADD(grid, "tensor_parallel", json_object_new_int(
		    plan->tp_size > 0 ? plan->tp_size : 1));
	/* parallel.sequence_parallel: true is refused by the job check
	 * (not built yet), so every plan has the rows between split
	 * layers whole on every tensor rank. */
	ADD(grid, "sequence_parallel", json_object_new_boolean(
		    job->parallel.sequence_parallel));
	ADD(grid, "schedule", json_object_new_string(
		    plan->pipe_schedule == DT_PIPE_1F1B ? "1f1b" : "gpipe"));
	ADD(grid, "micro_batches", json_object_new_int64(
		    plan->grad_accum_steps));
	ADD(grid, "accum_schedule", json_object_new_string(
		    plan->accum_schedule == DT_ACCUM_BREADTH_FIRST ?
		    "breadth_first" : "depth_first"));
	ADD(grid, "bubble_fraction", dt_json_float(dt_plan_bubble(plan)));
	ADD(grid, "blas_threads_per_rank",
	    json_object_new_int(plan->blas_threads));
	ADD(grid, "balance", json_object_new_string(
		    job->parallel.balance == DT_BALANCE_PARAMS ? "params" :
		    "flops"));
	return grid;
}

static struct json_object *
describe_batch(const struct dt_plan *plan)
{
	struct json_object *batch = json_object_new_object();

	ADD(batch, "global_batch", json_object_new_int64(plan->global_batch));
	ADD(batch, "micro_batch", json_object_new_int64(plan->micro_batch));
	ADD(batch, "grad_accum_steps",
	    json_object_new_int64(plan->grad_accum_steps));
	ADD(batch, "per_rank_batch", json_object_new_int64(plan->per_rank_batch));
	ADD(batch, "steps_per_epoch", plan->steps_per_epoch >= 0 ?
	    json_object_new_int64(plan->steps_per_epoch) : NULL);
	ADD(batch, "samples_dropped_per_epoch", plan->samples_dropped >= 0 ?
	    json_object_new_int64(plan->samples_dropped) : NULL);
	ADD(batch, "total_steps", plan->total_steps >= 0 ?
	    json_object_new_int64(plan->total_steps) : NULL);
	return batch;
}

/* The layers and the model's totals, into o. */
static void
describe_layers(const struct dt_plan *plan, struct json_object *o)
{
	const struct dt_model *model = plan->shapes;
	struct json_object *layers = json_object_new_array();
	double fwd = 0, total_flops = dt_model_flops_per_sample(model);

	for (int i = 0; i < dt_model_n_layers(model); i++) {
		struct dt_layer_info li;
		struct json_object *l = json_object_new_object();

		dt_model_layer_info(model, i, &li);
		ADD(l, "name", json_object_new_string(li.name));
		ADD(l, "kind", json_object_new_string(li.kind));
		ADD(l, "output_shape", shape_array(li.n_dims, li.out_shape));
		ADD(l, "params", json_object_new_int64(li.n_params));
		ADD(l, "fwd_flops_per_sample", dt_json_number(li.fwd_flops));
		ADD(l, "bwd_flops_per_sample",
		    dt_json_number(2 * li.fwd_flops));
		ADD(l, "stage", json_object_new_int(plan->stage_of_node[i]));
		json_object_array_add(layers, l);
		fwd += li.fwd_flops;
	}
	ADD(o, "layers", layers);
	/* A tied copy (`tie:`) is the embedding's table again, no
	 * parameter of its own. */
	ADD(o, "params", json_object_new_int64(
		    (int64_t)dt_model_n_params(model) -
		    dt_model_n_tied(model)));
	ADD(o, "flops_per_sample", dt_json_number(total_flops));
	ADD(o, "fwd_flops_per_sample", dt_json_number(fwd));
	ADD(o, "recompute_flops_per_sample",
	    dt_json_number(dt_model_recompute_flops_per_sample(model)));
	ADD(o, "flops_per_step",
	    dt_json_number(total_flops * (double)plan->global_batch));
}

/* The loader thread's ring of prepared micro-batches (inputs and labels)
 * and its own copy of the epoch order, in bytes. */
static int64_t
loader_bytes(const struct dt_job *job, const struct dt_plan *plan)
{
	const struct dt_model *model = plan->shapes;
	int64_t input = dt_model_input_size(model) * plan->micro_batch;
	int64_t slots = job->data.prefetch * plan->grad_accum_steps;
	int64_t n_train = plan->data.n_train;

	if (job->data.prefetch <= 0)
		return 0;
	return slots * (input + plan->micro_batch *
			dt_model_labels_per_sample(model)) * 4 +
	       (n_train > 0 ? n_train * 8 : 0);
}

/* What the plan decided for a stage's gradient (plan/sync_plan.h). */
static struct json_object *
describe_sync(const struct dt_sync_plan *y)
{
	struct json_object *x = json_object_new_object();

	ADD(x, "implementation", json_object_new_string(
		    dt_sync_impl_name(y->impl)));
	ADD(x, "sum_ranks", json_object_new_int(y->sum_ranks));
	ADD(x, "overlap", json_object_new_boolean(y->overlap));
	ADD(x, "wire", json_object_new_string(wire_word(y)));
	ADD(x, "wire_bytes_per_value", json_object_new_int64(y->wire_bytes));
	ADD(x, "bucket_bytes", json_object_new_int64(y->bucket_bytes));
	ADD(x, "optimizer_offset", json_object_new_int64(y->own_lo));
	ADD(x, "optimizer_params",
	    json_object_new_int64(y->own_hi - y->own_lo));
	ADD(x, "optimizer_buffers", json_object_new_int(y->optim_buffers));
	ADD(x, "sums", json_object_new_string(dt_sync_impl_name(y->base)));
	ADD(x, "zero", json_object_new_int(y->zero));
	ADD(x, "shards", json_object_new_int(y->shards));
	ADD(x, "optimizer_params_max", json_object_new_int64(y->own_max));
	ADD(x, "gathered_params_max", json_object_new_int64(y->gather_max));
	ADD(x, "accumulator_bytes",
	    json_object_new_int64(y->accumulator_bytes));
	ADD(x, "accumulator_segment", json_object_new_int64(y->acc_seg));
	ADD(x, "resident_grads", json_object_new_boolean(y->grads_resident));
	ADD(x, "bytes_per_step", json_object_new_int64(y->bytes_per_step));
	return x;
}

/* The ranks of stage s (the workers' only). */
static struct json_object *
stage_ranks(const struct dt_plan *plan, int s)
{
	struct json_object *in = json_object_new_array();

	for (int r = 0; r < plan->world_size - plan->n_servers; r++) {
		struct dt_grid_pos pos;

		dt_plan_position(plan, r, &pos);
		if (pos.stage == s)
			json_object_array_add(in, json_object_new_int(r));
	}
	return in;
}

static struct json_object *
describe_stage(const struct dt_plan *plan, const struct stage_plan *sp,
	       int s)
{
	struct json_object *x = json_object_new_object();
	struct json_object *names = json_object_new_array();
	const struct dt_stage_info *si = sp->si;

	for (int i = si->first_node; i <= si->last_node; i++) {
		struct dt_layer_info li;

		dt_model_layer_info(plan->shapes, i, &li);
		json_object_array_add(names, json_object_new_string(li.name));
	}
	ADD(x, "stage", json_object_new_int(s));
	ADD(x, "first_node", json_object_new_int(si->first_node));
	ADD(x, "last_node", json_object_new_int(si->last_node));
	ADD(x, "nodes", names);
	ADD(x, "flops_per_sample", dt_json_number(si->flops_per_sample));
	ADD(x, "params", json_object_new_int64(si->n_params));
	ADD(x, "trained_params", json_object_new_int64(sp->sync->trained));
	ADD(x, "activation_floats_per_sample",
	    json_object_new_int64(si->act_floats));
	ADD(x, "activation_work_floats_per_sample",
	    json_object_new_int64(si->act_work_floats));
	ADD(x, "micro_batches_in_flight", json_object_new_int64(sp->in_flight));
	ADD(x, "in_flight_reason",
	    json_object_new_string(dt_plan_in_flight_reason(plan, s)));
	/* As in the ranks' memory: the slots and the input batch. */
	ADD(x, "activation_bytes", json_object_new_int64(
		    get_i(sp->memory, "activations", NULL)));
	ADD(x, "send_fwd_floats_per_sample",
	    json_object_new_int64(si->send_fwd_floats));
	ADD(x, "send_bwd_floats_per_sample",
	    json_object_new_int64(si->send_bwd_floats));
	ADD(x, "tp_floats_per_sample", json_object_new_int64(sp->tp_floats));
	ADD(x, "ranks", stage_ranks(plan, s));
	ADD(x, "sync", describe_sync(sp->sync));
	return x;
}

/* Every stage, with its share of what the stages are balanced on. */
static struct json_object *
describe_stages(const struct dt_job *job, const struct dt_plan *plan,
		const struct stage_plan *sp)
{
	struct json_object *stages = json_object_new_array();
	int by_params = job->parallel.balance == DT_BALANCE_PARAMS;
	double balanced = 0;	/* FLOPs or parameters of all stages */

	for (int s = 0; s < plan->pp_size; s++) {
		json_object_array_add(stages, describe_stage(plan, &sp[s], s));
		balanced += by_params ? (double)sp[s].si->n_params :
			    sp[s].si->flops_per_sample;
	}
	for (int s = 0; s < plan->pp_size; s++)
		ADD(json_object_array_get_idx(stages, (size_t)s), "share",
		    dt_json_number(balanced > 0 ? (by_params ?
			(double)sp[s].si->n_params :
			sp[s].si->flops_per_sample) / balanced : 0));
	return stages;
}

/* A worker pushes its gradient and pulls the parameters, all shards
 * together: the gradient bytes each way per step. */
static void
describe_servers(const struct dt_job *job, const struct dt_plan *plan,
		 struct json_object *comm)
{
	size_t n_trained = (size_t)plan->sync[0].trained;
	int64_t grad_bytes = (int64_t)n_trained * 4;
	int async = job->parallel.mode == DT_PS_ASYNC;
	int64_t stale = async ? job->parallel.max_staleness : 0;

	ADD(comm, "algorithm", json_object_new_string("parameter server"));
	ADD(comm, "gradient_bytes", json_object_new_int64(grad_bytes));
	ADD(comm, "sent_per_step", json_object_new_int64(grad_bytes));
	ADD(comm, "received_per_step", json_object_new_int64(grad_bytes));
	ADD(comm, "server_bytes_per_step", json_object_new_int64((int64_t)
		    dt_ps_server_step_bytes(n_trained, plan->n_servers,
					    plan->dp_size)));
	ADD(comm, "server_memory", json_object_new_int64((int64_t)
		    dt_ps_server_bytes(n_trained, plan->n_servers,
				       plan->dp_size, stale,
				       plan->sync[0].optim_buffers)));
	ADD(comm, "mode", json_object_new_string(async ? "async" : "sync"));
	ADD(comm, "max_staleness", json_object_new_int64(stale));
}

/* The ring over the sum ranks of the stage with the most trained floats,
 * in the precision they are summed in. */
static void
describe_ring(const struct dt_plan *plan, struct json_object *comm)
{
	const struct dt_sync_plan *y = &plan->sync[0];
	int64_t elem = y->wire_bytes, grad_bytes = 0, p, ring;

	for (int s = 0; s < plan->pp_size; s++)
		if (plan->sync[s].trained * elem > grad_bytes)
			grad_bytes = plan->sync[s].trained * elem;
	p = y->sum_ranks;
	ring = p > 1 ? 2 * (p - 1) * grad_bytes / p : 0;
	/* The exact mode's ring (comm/comm.h): reduce-scatter of the
	 * doubles, all-gather of the rounded floats, (p-1)/p x (8 + 4)
	 * bytes a value. With several ranks on a host
	 * (parallel.hierarchical) the hosts sum doubles. */
	if (elem == 8)
		ring = p > 1 ? 3 * (p - 1) * grad_bytes / (2 * p) : 0;
	/* zero 2 and 3 with the accumulator in parts: each micro-batch's
	 * floats of the others' parts to their owners (train/sync_zero.c),
	 * then the parameters' all-gather once. */
	if (y->acc_seg > 0 && p > 1)
		ring = (p - 1) * (grad_bytes / 2) *
		       (plan->grad_accum_steps + 1) / p;
	ADD(comm, "algorithm", json_object_new_string(
		    y->acc_seg > 0 ? "each micro-batch's floats to their "
		    "parts' owners, summed there in f64 in the ring's order, "
		    "and all-gather (f32)" :
		    y->grad_parts ? "the floats to their parts' owners as "
		    "their nodes' backward ends, summed there (f32), and "
		    "all-gather (f32)" :
		    elem == 8 ? "ring reduce-scatter (f64) and all-gather (f32)" :
		    "ring all-reduce"));
	/* The wire's element, whether buckets start during backward, and
	 * their size: the plan's (plan/sync_plan.h). */
	ADD(comm, "wire", json_object_new_string(wire_word(y)));
	ADD(comm, "wire_bytes_per_value", json_object_new_int64(elem));
	ADD(comm, "overlap", json_object_new_boolean(y->overlap));
	ADD(comm, "bucket_bytes", json_object_new_int64(y->bucket_bytes));
	ADD(comm, "gradient_bytes", json_object_new_int64(grad_bytes));
	ADD(comm, "sent_per_step", json_object_new_int64(ring));
	ADD(comm, "received_per_step", json_object_new_int64(ring));
}

/* At parallel.zero 1 to 3, where checkpoints are gathered (in shards
 * each rank writes its own part), what a summing rank holds beside its
 * own part while a checkpoint is written. With a pipeline or tensor
 * slices, on the first of a stage's summing ranks alone (with slices,
 * of each tensor rank's summing ranks): the others'
 * parts of the optimizer state, collected into a whole copy of the
 * stage's state before a checkpoint (train/sync_zero.c, zero_collect)
 * and kept until the next update, optim_buffers x trained floats. Else
 * world rank 0 fetches the state a piece at a time from the parts as it
 * writes (train/state.c, stream_checkpoint), each piece into the save's
 * buffer of DT_CKPT_STREAM_FLOATS floats (ckpt/safetensors.c,
 * dt_ck_st_write: one piece, or the trained floats where fewer, is what
 * it touches), alive while a file is written; at zero 3 a piece of the
 * parameters is first gathered into its place in the arena on every
 * summing rank (dt_grad_sync_params_span) and handed back once copied,
 * so rank 0 holds two pieces at once and every other summing rank one
 * (the units a step gathers are not counted as room for it: an
 * evaluation just before leaves its last unit gathered). 0 on the
 * other ranks, and where the job writes no checkpoint (ckpt false). */
static int64_t
zero_collect_bytes(const struct dt_plan *plan, const struct dt_sync_plan *y,
		   const struct dt_grid_pos *pos, bool ckpt)
{
	int64_t piece;

	if (y->zero < 1 || !y->summed || !ckpt)
		return 0;
	if (plan->pp_size == 1 && plan->tp_size == 1) {
		piece = (y->trained < DT_CKPT_STREAM_FLOATS ? y->trained :
			 DT_CKPT_STREAM_FLOATS) * 4;
		return (pos->dp == 0 ? piece : 0) + (y->zero >= 3 ? piece : 0);
	}
	/* With tensor slices each tensor rank's data-parallel ranks sum
	 * apart, so every tensor rank's first collects its own blocks. */
	if (pos->dp != 0 || (!plan->tp_sliced && pos->tp != 0))
		return 0;
	return y->optim_buffers * y->trained * 4;
}

/* The bytes of the stage's figure for the norm's buffers with tensor
 * slices (plan_stage's sum_buffers) that the rank at pos does not hold:
 * at zero 2 and 3 the summed block is made whole on data-parallel rank
 * 0 only (train/sync_zero.c, block_whole). The whole tensor and block
 * of split_norms (train/sync.c), tensor rank 0's, stay counted on every
 * rank. */
static int64_t
norm_buffers_lacked(const struct dt_sync_plan *y,
		    const struct dt_grid_pos *pos)
{
	return pos->dp != 0 ? y->tp_block_floats * 4 : 0;
}

/* Whether job writes a checkpoint at all (checkpoint.at_end, .every_steps,
 * .every_seconds, or eval.keep_best's copy). */
static bool
writes_checkpoint(const struct dt_job *job)
{
	return job->checkpoint.at_end || job->checkpoint.every_steps > 0 ||
	       job->checkpoint.every_seconds > 0 || job->eval.keep_best;
}

/* Where checkpoints are gathered (not dt_plan_ckpt_sharded), rank 0
 * holds the whole model while it writes a checkpoint of a model
 * cut into stages or tensor slices (train/gather.c): the parameters and
 * optimizer state gathered from every stage into a copy of their own,
 * on top of its stage's memory (a tensor-parallel rank holding its
 * blocks or, unsliced, whole tensors copies the whole model the same); with
 * parallel.zero it also holds its stage's whole optimizer state,
 * collected (zero_collect_bytes: `collect` bytes). Every rank's figure
 * is also its stage's less the `less` bytes of norm buffers it lacks
 * (norm_buffers_lacked). Both are a step's (sp): the total is the
 * larger of that step's and the setup's (sp->at_setup, which has
 * neither), params_setup what the second holds beyond the first. A new
 * object. */
static struct json_object *
gather_memory(const struct dt_plan *plan, const struct stage_plan *sp,
	      int rank0, int64_t collect, int64_t less)
{
	const struct dt_model *model = plan->shapes;
	struct json_object *m = NULL, *sum = NULL;
	int64_t gather = collect, step;

	if (rank0 && (plan->pp_size > 1 || plan->tp_size > 1))
		gather += ((int64_t)dt_model_n_params(model) +
			   plan->sync[0].optim_buffers *
			   (int64_t)dt_model_n_trained(model)) * 4;

	json_object_deep_copy(sp->memory, &m, NULL);
	step = sp->step + gather - less;
	/* less: the stage's norm buffers this rank lacks
	 * (norm_buffers_lacked) */
	if (less > 0 && json_object_object_get_ex(m, "sum_buffers", &sum))
		ADD(m, "sum_buffers", json_object_new_int64(
			    json_object_get_int64(sum) - less));
	if (gather > 0)
		ADD(m, "checkpoint_gather", json_object_new_int64(gather));
	if (sp->at_setup > step)
		ADD(m, "params_setup",
		    json_object_new_int64(sp->at_setup - step));
	else
		json_object_object_del(m, "params_setup");
	ADD(m, "total", json_object_new_int64(step > sp->at_setup ? step :
					      sp->at_setup));
	return m;
}

/* How checkpoints are written (dt_plan_ckpt_sharded): "shards" with
 * the parameter files (one a stage, by its first rank), the optimizer
 * files (one a training rank) and the largest of those in bytes (each
 * rank of a stage writes a 1/sum_ranks part, dt_comm_part, of every
 * buffer: its optimizer's own part at parallel.zero), or "gathered"
 * (rank 0 writes the whole model). A new object. */
static struct json_object *
describe_checkpoint(const struct dt_plan *plan, int sharded)
{
	struct json_object *c = json_object_new_object();
	int64_t part = 0, files = 0;
	int per_stage = plan->world_size / plan->pp_size;

	for (int s = 0; sharded && s < plan->pp_size; s++) {
		const struct dt_sync_plan *y = &plan->sync[s];
		int p = y->sum_ranks > 1 ? y->sum_ranks : 1;
		int64_t b = y->optim_buffers * ((y->trained + p - 1) / p) * 4;

		part = b > part ? b : part;
		/* A rank whose part is empty (no optimizer state, as plain
		 * SGD's, or fewer trained floats than ranks) writes no file
		 * (train/state.c, shard_tensors). */
		if (y->optim_buffers > 0)
			files += y->trained < per_stage ? y->trained
							: per_stage;
	}
	ADD(c, "format", json_object_new_string(sharded ? "shards" :
						"gathered"));
	/* At zero 3 each rank writes the tensors wholly in its part, and
	 * the one its part's end cuts in a file of its own (train/state.c):
	 * at most two files a rank. */
	ADD(c, "params_from", json_object_new_string(
		    !sharded ? "rank 0" : plan->sync[0].zero >= 3 ?
		    "each rank's part" : "each stage's first rank"));
	ADD(c, "param_files", json_object_new_int(
		    !sharded ? 1 : plan->sync[0].zero >= 3 ?
		    2 * plan->world_size : plan->pp_size));
	ADD(c, "optimizer_files", json_object_new_int64(sharded ? files : 1));
	/* Gathered at zero 1 to 3 on one stage without tensor slices:
	 * rank 0 fetches a piece at a time from the parts as it writes
	 * (train/state.c, stream_checkpoint). */
	if (!sharded && plan->sync[0].zero >= 1 && plan->pp_size == 1 &&
	    plan->tp_size == 1)
		ADD(c, "gathered_piece_floats",
		    json_object_new_int64(DT_CKPT_STREAM_FLOATS));
	ADD(c, "optimizer_part_bytes_max", json_object_new_int64(part));
	return c;
}

static struct json_object *
describe_server_rank(const struct dt_plan *plan, int r)
{
	struct json_object *x = json_object_new_object();
	size_t off, len;

	dt_ps_shard((size_t)plan->sync[0].trained, plan->n_servers,
		    r - plan->dp_size, &off, &len);
	ADD(x, "rank", json_object_new_int(r));
	ADD(x, "role", json_object_new_string("parameter server"));
	ADD(x, "shard_offset", json_object_new_int64((int64_t)off));
	ADD(x, "shard_params", json_object_new_int64((int64_t)len));
	return x;
}

/* Worker rank r's place, memory (its stage's, and the checkpoint's
 * gathers where it makes them: gathers, checkpoints not written in
 * shards) and bytes per step. */
static struct json_object *
describe_rank(const struct dt_plan *plan, const struct stage_plan *sp,
	      int r, int gathers)
{
	struct json_object *x = json_object_new_object();
	struct json_object *bytes = json_object_new_object();
	const struct stage_plan *mine;
	struct dt_grid_pos pos;
	int64_t collect, less;

	dt_plan_position(plan, r, &pos);
	mine = &sp[pos.stage];
	ADD(x, "rank", json_object_new_int(r));
	ADD(x, "role", json_object_new_string(
		    mine->sync->impl == DT_SYNC_IMPL_SERVERS ? "worker" :
		    plan->pp_size > 1 || plan->tp_size > 1 ?
		    "model-parallel worker" : "data-parallel worker"));
	ADD(x, "dp_rank", json_object_new_int(pos.dp));
	ADD(x, "dp", json_object_new_int(pos.dp));
	ADD(x, "stage", json_object_new_int(pos.stage));
	ADD(x, "tp", json_object_new_int(pos.tp));
	ADD(x, "samples_per_step", json_object_new_int64(plan->per_rank_batch));
	collect = gathers ? zero_collect_bytes(plan, mine->sync, &pos,
					       mine->ckpt) : 0;
	less = plan->tp_sliced ? norm_buffers_lacked(mine->sync, &pos) : 0;
	if ((gathers && r == 0 && (plan->pp_size > 1 || plan->tp_size > 1)) ||
	    collect > 0 || less > 0) {
		ADD(x, "memory", gather_memory(plan, mine,
					       gathers && r == 0, collect,
					       less));
	} else {
		ADD(x, "memory", json_object_get(mine->memory));
	}
	ADD(bytes, "p2p_bytes", json_object_new_int64(mine->p2p));
	ADD(bytes, "grad_allreduce_bytes",
	    json_object_new_int64(mine->grad_allreduce));
	ADD(bytes, "tp_allreduce_bytes",
	    json_object_new_int64(mine->tp_allreduce));
	ADD(bytes, "tp_norm_bytes",
	    json_object_new_int64(dt_plan_tp_norm_bytes(plan, &pos)));
	ADD(bytes, "zero_block_bytes", json_object_new_int64(
		    dt_plan_zero_block_bytes(plan, mine->sync, &pos)));
	ADD(x, "bytes_per_step", bytes);
	return x;
}

/* With tensor parallelism: whether the tensor ranks own their slices
 * (dt_plan_tp_sliced) and which tensors the plan splits into blocks and
 * which every tensor rank holds whole ("node.name" lists, a tied copy
 * left out), or NULL. A new object. */
static struct json_object *
describe_tensor_split(const struct dt_plan *plan)
{
	const struct dt_model *m = plan->shapes;
	struct json_object *o, *split, *repl;

	if (plan->tp_size <= 1 || m == NULL)
		return NULL;
	o = json_object_new_object();
	split = json_object_new_array();
	repl = json_object_new_array();
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		struct dt_tp_block b;
		char name[256];

		dt_model_tensor_info(m, t, &ti);
		if (ti.tie_node != NULL)
			continue;
		snprintf(name, sizeof name, "%s.%s", ti.node, ti.name);
		json_object_array_add(dt_model_tensor_tp_block(m, t, 0, &b) ?
				      split : repl,
				      json_object_new_string(name));
	}
	ADD(o, "slices", json_object_new_boolean(plan->tp_sliced));
	ADD(o, "split", split);
	ADD(o, "replicated", repl);
	return o;
}

struct json_object *
dt_plan_describe(const struct dt_job *job, const struct dt_plan *plan)
{
	const struct dt_model *model = plan->shapes;
	struct json_object *o = json_object_new_object();
	struct json_object *comm = json_object_new_object();
	struct json_object *data = json_object_new_object();
	struct json_object *ranks = json_object_new_array();
	struct json_object *most = NULL;	/* the busiest rank's memory */
	int pp = plan->pp_size, busiest = 0;
	struct stage_plan *sp = dt_xcalloc((size_t)pp, sizeof *sp);
	int64_t dataset = plan->data.train_bytes + plan->data.eval_bytes;
	int64_t loader = loader_bytes(job, plan);
	int sharded = dt_plan_ckpt_sharded(job, plan);

	ADD(o, "name", json_object_new_string(job->name));
	ADD(o, "recompute", json_object_new_string(
		    recompute_words[job->model.recompute]));
	ADD(o, "attention", json_object_new_string(
		    attention_words[job->model.attention]));
	ADD(o, "grid", describe_grid(job, plan));
	if (plan->tp_size > 1)
		ADD(o, "tensor_split", describe_tensor_split(plan));
	ADD(o, "batch", describe_batch(plan));
	describe_layers(plan, o);
	for (int s = 0; s < pp; s++) {
		sp[s].si = &plan->stages[s];
		sp[s].sync = &plan->sync[s];
		sp[s].in_flight = plan->in_flight[s];
		sp[s].ckpt = writes_checkpoint(job);
		sp[s].ckpt_gathered = sp[s].ckpt && !sharded;
		sp[s].tp_floats = dt_model_tp_floats_per_sample(
			model, sp[s].si->first_node, sp[s].si->last_node);
		kernels_runtime(job, plan, &sp[s]);
		plan_stage(plan, dataset, loader, &sp[s]);
		if (sp[s].total > sp[busiest].total)
			busiest = s;
	}
	ADD(o, "stages", describe_stages(job, plan, sp));
	if (plan->sync[0].impl == DT_SYNC_IMPL_SERVERS)
		describe_servers(job, plan, comm);
	else
		describe_ring(plan, comm);
	ADD(o, "communication_per_rank", comm);
	ADD(data, "train_samples", plan->data.n_train >= 0 ?
	    json_object_new_int64(plan->data.n_train) : NULL);
	ADD(data, "eval_samples", plan->data.n_eval >= 0 ?
	    json_object_new_int64(plan->data.n_eval) : NULL);
	ADD(o, "data", data);
	for (int r = 0; r < plan->world_size; r++) {
		struct json_object *x, *m;

		if (r >= plan->world_size - plan->n_servers) {
			json_object_array_add(ranks,
					      describe_server_rank(plan, r));
			continue;
		}
		x = describe_rank(plan, sp, r, !sharded);
		json_object_array_add(ranks, x);
		json_object_object_get_ex(x, "memory", &m);
		if (get_i(m, "total", NULL) > (most == NULL ?
		    sp[busiest].total : get_i(most, "total", NULL)))
			most = m;
	}
	ADD(o, "ranks", ranks);
	ADD(o, "checkpoint", describe_checkpoint(plan, sharded));
	/* The rank that needs the most: rank 0 while it gathers a
	 * checkpoint (a pipeline's or tensor parallelism's whole model, a
	 * zero level's whole optimizer state), or a rank of the stage with
	 * the most. */
	ADD(o, "memory_per_rank", json_object_get(
		    most != NULL ? most : sp[busiest].memory));
	for (int s = 0; s < pp; s++)
		json_object_put(sp[s].memory);
	free(sp);
	return o;
}

static int64_t
get_i(const struct json_object *o, const char *a, const char *b)
{
	struct json_object *x = NULL, *y = NULL;

	if (!json_object_object_get_ex(o, a, &x))
		return -1;
	if (b == NULL)
		return json_object_get_int64(x);
	if (!json_object_object_get_ex(x, b, &y) || y == NULL)
		return -1;
	return json_object_get_int64(y);
}

static void
bytes_text(char *buf, size_t size, int64_t b)
{
	if (b >= (int64_t)1 << 30)
		snprintf(buf, size, "%.2f GiB", (double)b / (1 << 30));
	else if (b >= 1 << 20)
		snprintf(buf, size, "%.2f MiB", (double)b / (1 << 20));
	else if (b >= 1 << 10)
		snprintf(buf, size, "%.1f KiB", (double)b / (1 << 10));
	else
		snprintf(buf, size, "%lld B", (long long)b);
}

static void
flops_text(char *buf, size_t size, double f)
{
	if (f >= 1e9)
		snprintf(buf, size, "%.3f GFLOP", f * 1e-9);
	else if (f >= 1e6)
		snprintf(buf, size, "%.3f MFLOP", f * 1e-6);
	else
		snprintf(buf, size, "%.0f FLOP", f);
}

static struct json_object *
get(const struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	json_object_object_get_ex(o, key, &x);
	return x;
}

/* "0-1, 4-5, 8": the ints of array a, runs of consecutive ones as
 * ranges. */
static void
print_list(FILE *out, struct json_object *a)
{
	size_t n = json_object_array_length(a);

	for (size_t i = 0; i < n;) {
		int64_t lo = json_object_get_int64(
			json_object_array_get_idx(a, i));
		size_t j = i;

		while (j + 1 < n && json_object_get_int64(
			       json_object_array_get_idx(a, j + 1)) ==
		       lo + (int64_t)(j + 1 - i))
			j++;
		if (j == i)
			fprintf(out, "%s%lld", i ? ", " : "", (long long)lo);
		else
			fprintf(out, "%s%lld-%lld", i ? ", " : "",
				(long long)lo, (long long)(lo + (int64_t)(j - i)));
		i = j + 1;
	}
}

static void
print_memory(FILE *out, const char *head, struct json_object *mem)
{
	static const char *const memkeys[] = { "params", "grads",
					       "optimizer_state",
					       "grad_accumulator",
					       "sum_buffers", "params_gather",
					       "params_setup",
					       "activations", "dataset",
					       "loader", "runtime",
					       "kernels_runtime",
					       "checkpoint_gather", "total" };
	char b[32];

	fprintf(out, "%s", head);
	for (size_t i = 0; i < sizeof memkeys / sizeof memkeys[0]; i++) {
		/* The accumulator exists only on the double path, the
		 * ring's buffers only where it sums, the gather only on
		 * rank 0 of a pipeline or of tensor parallelism. */
		if ((strcmp(memkeys[i], "grad_accumulator") == 0 ||
		     strcmp(memkeys[i], "sum_buffers") == 0 ||
		     strcmp(memkeys[i], "params_gather") == 0 ||
		     strcmp(memkeys[i], "params_setup") == 0 ||
		     strcmp(memkeys[i], "kernels_runtime") == 0 ||
		     strcmp(memkeys[i], "checkpoint_gather") == 0) &&
		    get_i(mem, memkeys[i], NULL) <= 0)
			continue;
		bytes_text(b, sizeof b, get_i(mem, memkeys[i], NULL));
		fprintf(out, "%s %s %s", i ? "," : "", memkeys[i], b);
	}
}

/* Without stages: the memory of a rank, and rank 0's on its own line
 * where it differs (the optimizer state it collects for a checkpoint at
 * parallel.zero 1 to 3). */
static void
print_unsplit_memory(const struct json_object *d, FILE *out)
{
	struct json_object *ranks = get(d, "ranks");
	struct json_object *r0 = json_object_array_get_idx(ranks, 0);

	if (json_object_array_length(ranks) < 2 ||
	    get_i(get(r0, "memory"), "checkpoint_gather", NULL) <= 0) {
		print_memory(out, "\nmemory per rank:",
			     get(d, "memory_per_rank"));
		return;
	}
	print_memory(out, "\nmemory per rank:",
		     get(json_object_array_get_idx(ranks, 1), "memory"));
	print_memory(out, "\nmemory of rank 0 (it collects the optimizer "
		     "state for a checkpoint):", get(r0, "memory"));
}

/* Per stage: its nodes, work, ranks, and what each of its ranks holds
 * and moves per optimizer step. */
/* The all-reduce's wire: the element, what the exact mode costs, and
 * the buckets. */
static void
print_wire(FILE *out, struct json_object *comm)
{
	struct json_object *w, *ov, *bb;
	const char *word;
	char b[32];

	if (get_i(comm, "sent_per_step", NULL) == 0 ||
	    !json_object_object_get_ex(comm, "wire", &w) ||
	    !json_object_object_get_ex(comm, "overlap", &ov) ||
	    !json_object_object_get_ex(comm, "bucket_bytes", &bb))
		return;
	word = json_object_get_string(w);
	bytes_text(b, sizeof b, json_object_get_int64(bb));
	fprintf(out, "gradients on the wire as %s (%s)", word,
		strcmp(word, "f64") == 0 ? "the exact double sum: 8 bytes a "
		"value reduce-scattered, the rounded float's 4 gathered back, "
		"1.5 x the bytes of f32" : strcmp(word, "bf16") == 0 ?
		"2 bytes a value, summed in f32: half the bytes of f32" :
		"4 bytes a value");
	if (json_object_get_boolean(ov))
		fprintf(out, "; summed in buckets of %s started during "
			"backward\n", b);
	else
		fprintf(out, "; one blocking sum after backward\n");
}

/* The plan's sync of a stage (describe_sync): who updates what. */
static void
print_sync(FILE *out, const char *head, struct json_object *sync)
{
	int64_t n = get_i(sync, "sum_ranks", NULL);
	char how[256] = "", acc[160] = "";
	const char *res = "";

	if (sync == NULL)
		return;
	fprintf(out, "%sgradient sync: %s", head, json_object_get_string(
			get(sync, "implementation")));
	if (n > 0)
		fprintf(out, " over %lld rank%s", (long long)n,
			n == 1 ? "" : "s");
	if (get_i(sync, "zero", NULL) >= 3)
		snprintf(how, sizeof how, " unit by unit (parallel.gather_mb "
			 "of consecutive nodes; node by node at 0) before each "
			 "forward and backward, the next one prefetched (two "
			 "units, "
			 "at most %lld floats; the unowned rest given back; an "
			 "evaluation's forward likewise)",
			 (long long)get_i(sync, "gathered_params_max", NULL));
	if (json_object_get_boolean(get(sync, "resident_grads")))
		res = "; the whole float gradient kept resident "
		      "(parallel.zero_resident_grads)";
	if (get_i(sync, "accumulator_segment", NULL) > 0)
		snprintf(acc, sizeof acc, "; each rank keeps its part of the "
			 "double accumulator, each micro-batch reduce-"
			 "scattered into it (%lld values a part at a time)",
			 (long long)get_i(sync, "accumulator_segment", NULL));
	if (get_i(sync, "zero", NULL) > 0)
		fprintf(out, "; zero %lld: each rank's optimizer updates its "
			"1/%lld of the trained floats (at most %lld), then "
			"the parameters are all-gathered%s%s%s; on the first "
			"rank",
			(long long)get_i(sync, "zero", NULL),
			(long long)get_i(sync, "shards", NULL),
			(long long)get_i(sync, "optimizer_params_max", NULL),
			how, acc, res);
	fprintf(out, "%s the optimizer (%lld buffer%s a value) updates "
		"trained floats %lld-%lld\n",
		get_i(sync, "zero", NULL) > 0 ? "" : ";",
		(long long)get_i(sync, "optimizer_buffers", NULL),
		get_i(sync, "optimizer_buffers", NULL) == 1 ? "" : "s",
		(long long)get_i(sync, "optimizer_offset", NULL),
		(long long)(get_i(sync, "optimizer_offset", NULL) +
			    get_i(sync, "optimizer_params", NULL)));
}

/* A tensor list of describe_tensor_split, "a, b, c" (at most 6 names
 * and a count of the rest), or "none". */
static void
print_names(FILE *out, const struct json_object *list)
{
	size_t n = json_object_array_length(list);

	if (n == 0)
		fprintf(out, "none");
	for (size_t i = 0; i < n && i < 6; i++)
		fprintf(out, "%s%s", i > 0 ? ", " : "",
			json_object_get_string(
				json_object_array_get_idx(list, i)));
	if (n > 6)
		fprintf(out, " and %zu more", n - 6);
}

/* What a rank holds, and with tensor parallelism which tensors are split
 * and which replicated. */
static void
print_tensor_split(const struct json_object *d, FILE *out)
{
	struct json_object *ts = NULL;

	json_object_object_get_ex(d, "tensor_split", &ts);
	if (ts == NULL) {
		fprintf(out, "a rank holds its stage's parameters, gradients "
			"and optimizer state\n");
		return;
	}
	if (json_object_get_boolean(get(ts, "slices")))
		fprintf(out, "a rank holds its stage's parameters, gradients "
			"and optimizer state, of the split tensors its tensor "
			"rank's block only; the gradient is summed over the "
			"data-parallel ranks of each tensor rank\n");
	else
		fprintf(out, "a rank holds its stage's parameters, gradients "
			"and optimizer state; the ranks of a tensor group hold "
			"whole tensors and compute their slices (at "
			"parallel.zero 2 and 3 without parallel.zero_slices, "
			"with parameter servers and "
			"with a tied head without parallel.tied_slices, tensor "
			"slices are not built)\n");
	fprintf(out, "  split over the tensor ranks: ");
	print_names(out, get(ts, "split"));
	fprintf(out, "\n  replicated on every tensor rank: ");
	print_names(out, get(ts, "replicated"));
	fprintf(out, "\n");
	if (!json_object_get_boolean(get(get(d, "grid"),
					 "sequence_parallel")))
		fprintf(out, "  between split layers (norms, dropouts, "
			"residual adds) every tensor rank computes every row "
			"(parallel.sequence_parallel false)\n");
}

static void
print_stages(const struct json_object *d, FILE *out)
{
	struct json_object *stages = get(d, "stages"), *ranks = get(d, "ranks");
	int world = (int)get_i(d, "grid", "world_size");
	char b1[32], b2[32], b3[32];

	fprintf(out, "\n");
	for (size_t s = 0; s < json_object_array_length(stages); s++) {
		struct json_object *st = json_object_array_get_idx(stages, s);
		struct json_object *nodes = get(st, "nodes"), *in = get(st, "ranks");
		struct json_object *r, *bytes;
		size_t nn = json_object_array_length(nodes);

		if (json_object_array_length(in) == 0)
			continue;
		r = json_object_array_get_idx(ranks, (size_t)
			json_object_get_int64(json_object_array_get_idx(in, 0)));
		flops_text(b1, sizeof b1, json_object_get_double(
				   get(st, "flops_per_sample")));
		if (nn == 1)
			fprintf(out, "stage %zu: node %lld (%s)", s,
				(long long)get_i(st, "first_node", NULL),
				json_object_get_string(
					json_object_array_get_idx(nodes, 0)));
		else
			fprintf(out, "stage %zu: nodes %lld-%lld (%s .. %s, "
				"%zu)", s,
				(long long)get_i(st, "first_node", NULL),
				(long long)get_i(st, "last_node", NULL),
				json_object_get_string(
					json_object_array_get_idx(nodes, 0)),
				json_object_get_string(
					json_object_array_get_idx(nodes,
								  nn - 1)), nn);
		fprintf(out, ", %s per sample, %lld parameters", b1,
			(long long)get_i(st, "params", NULL));
		if (json_object_array_length(stages) > 1)
			fprintf(out, ", %.1f%% of the %s", 100 *
				json_object_get_double(get(st, "share")),
				strcmp(json_object_get_string(get(get(d,
					"grid"), "balance")), "params") == 0 ?
				"parameters" : "FLOPs");
		fprintf(out, "\n");
		fprintf(out, "  ranks ");
		print_list(out, in);
		if (world <= 16) {
			fprintf(out, " (dp, stage, tp:");
			for (size_t i = 0; i < json_object_array_length(in);
			     i++) {
				struct json_object *x = json_object_array_get_idx(
					ranks, (size_t)json_object_get_int64(
						json_object_array_get_idx(in,
									  i)));

				fprintf(out, "%s %lld,%lld,%lld", i ? ";" : "",
					(long long)get_i(x, "dp", NULL),
					(long long)get_i(x, "stage", NULL),
					(long long)get_i(x, "tp", NULL));
			}
			fprintf(out, ")");
		}
		fprintf(out, "; %lld micro-batch(es) of activations held "
			"(%s)\n",
			(long long)get_i(st, "micro_batches_in_flight", NULL),
			json_object_get_string(get(st, "in_flight_reason")));
		/* Rank 0 also holds the gathered model while it writes a
		 * checkpoint: its own line. */
		if (get_i(r, "rank", NULL) == 0 &&
		    json_object_array_length(in) > 1)
			r = json_object_array_get_idx(ranks, (size_t)
				json_object_get_int64(
					json_object_array_get_idx(in, 1)));
		print_memory(out, get_i(r, "rank", NULL) == 0 ?
			     "  memory of rank 0:" : "  memory per rank:",
			     get(r, "memory"));
		if (s == 0 && get_i(r, "rank", NULL) != 0) {
			struct json_object *r0 =
				json_object_array_get_idx(ranks, 0);

			print_memory(out, "\n  memory of rank 0:",
				     get(r0, "memory"));
		}
		bytes = get(r, "bytes_per_step");
		bytes_text(b1, sizeof b1, get_i(bytes, "p2p_bytes", NULL));
		bytes_text(b2, sizeof b2, get_i(bytes, "grad_allreduce_bytes",
						NULL));
		bytes_text(b3, sizeof b3, get_i(bytes, "tp_allreduce_bytes",
						NULL));
		fprintf(out, "\n  bytes per rank and step: point-to-point %s, "
			"gradient all-reduce %s, tensor all-reduce %s\n", b1,
			b2, b3);
		print_sync(out, "  ", get(st, "sync"));
	}
	print_tensor_split(d, out);
}

/* The checkpoints' line: who writes what (describe_checkpoint). */
static void
print_checkpoint(const struct json_object *d, FILE *out)
{
	struct json_object *c = get(d, "checkpoint");
	char b[32];

	if (c == NULL)
		return;
	if (strcmp(json_object_get_string(get(c, "format")), "shards") != 0 &&
	    get(c, "gathered_piece_floats") != NULL) {
		fprintf(out, "checkpoints: rank 0 gathers the model's "
			"parameters and optimizer state from the ranks' parts "
			"a piece of %lld floats at a time and writes them "
			"alone\n", (long long)get_i(c, "gathered_piece_floats",
						   NULL));
		return;
	}
	if (strcmp(json_object_get_string(get(c, "format")), "shards") != 0) {
		fprintf(out, "checkpoints: rank 0 gathers the whole model's "
			"parameters and optimizer state and writes them "
			"alone\n");
		return;
	}
	bytes_text(b, sizeof b, get_i(c, "optimizer_part_bytes_max", NULL));
	if (strcmp(json_object_get_string(get(c, "params_from")),
		   "each rank's part") == 0)
		fprintf(out, "checkpoints: each rank writes its own shard, in "
			"parallel: the parameters from its part (zero 3: at "
			"most %lld files, the tensors wholly in a part, and "
			"each one a part's end cuts gathered alone, then "
			"handed back; nothing else gathered)",
			(long long)get_i(c, "param_files", NULL));
	else
		fprintf(out, "checkpoints: each rank writes its own shard, in "
			"parallel, nothing gathered: %lld parameter file(s) "
			"(each stage's first rank)",
			(long long)get_i(c, "param_files", NULL));
	fprintf(out, ", %lld optimizer-state file(s) (one a rank, at most "
		"%s), the manifest last\n",
		(long long)get_i(c, "optimizer_files", NULL), b);
}

void
dt_plan_print(const struct json_object *d, FILE *out)
{
	struct json_object *layers, *x;
	char b1[32], b2[32], b3[32];
	int64_t pp = get_i(d, "grid", "pipeline_parallel");
	int split = pp > 1 || get_i(d, "grid", "tensor_parallel") > 1;
	const char *att = json_object_get_string(get(d, "attention"));
	int fused = att != NULL && strcmp(att, "fused") == 0;

	json_object_object_get_ex(d, "name", &x);
	fprintf(out, "plan for %s\n\n", json_object_get_string(x));
	fprintf(out, "grid: %lld rank%s = data-parallel %lld x pipeline %lld "
		"x tensor %lld; %lld BLAS thread(s) per rank\n",
		(long long)get_i(d, "grid", "world_size"),
		get_i(d, "grid", "world_size") == 1 ? "" : "s",
		(long long)get_i(d, "grid", "data_parallel"),
		(long long)pp,
		(long long)get_i(d, "grid", "tensor_parallel"),
		(long long)get_i(d, "grid", "blas_threads_per_rank"));
	if (pp > 1)
		fprintf(out, "pipeline: %s schedule, %lld micro-batch(es) per "
			"step, bubble %.1f%% of each step\n",
			json_object_get_string(get(get(d, "grid"), "schedule")),
			(long long)get_i(d, "grid", "micro_batches"),
			100 * json_object_get_double(get(get(d, "grid"),
							 "bubble_fraction")));
	fprintf(out, "batch: global %lld = micro-batch %lld x accumulation "
		"%lld x data-parallel %lld\n",
		(long long)get_i(d, "batch", "global_batch"),
		(long long)get_i(d, "batch", "micro_batch"),
		(long long)get_i(d, "batch", "grad_accum_steps"),
		(long long)get_i(d, "grid", "data_parallel"));
	if (pp == 1)
		fprintf(out, "accumulation schedule: %s (%s)\n",
			json_object_get_string(get(get(d, "grid"),
						   "accum_schedule")),
			strcmp(json_object_get_string(get(get(d, "grid"),
				"accum_schedule")), "breadth_first") == 0 ?
			"every forward, then the backward node by node over "
			"the micro-batches" : "forward and backward of one "
			"micro-batch after another");
	if (get_i(d, "batch", "steps_per_epoch") >= 0)
		fprintf(out, "steps: %lld per epoch (%lld samples dropped per "
			"epoch of %lld), %lld in all\n",
			(long long)get_i(d, "batch", "steps_per_epoch"),
			(long long)get_i(d, "batch",
					 "samples_dropped_per_epoch"),
			(long long)get_i(d, "data", "train_samples"),
			(long long)get_i(d, "batch", "total_steps"));
	fprintf(out, "\n%-24s %-21s %-18s %12s %14s %14s%s\n", "layer", "kind",
		"output", "params", "fwd/sample", "bwd/sample",
		pp > 1 ? "  stage" : "");
	json_object_object_get_ex(d, "layers", &layers);
	for (size_t i = 0; i < json_object_array_length(layers); i++) {
		struct json_object *l = json_object_array_get_idx(layers, i);
		struct json_object *name, *kind, *shape, *fw;
		char shp[64] = "(";
		size_t len = 1;

		json_object_object_get_ex(l, "name", &name);
		json_object_object_get_ex(l, "kind", &kind);
		json_object_object_get_ex(l, "output_shape", &shape);
		json_object_object_get_ex(l, "fwd_flops_per_sample", &fw);
		for (size_t k = 0; k < json_object_array_length(shape); k++)
			len += (size_t)snprintf(shp + len, sizeof shp - len,
						"%s%lld", k ? ", " : "",
						(long long)json_object_get_int64(
							json_object_array_get_idx(shape, k)));
		if (len < sizeof shp - 1)
			strcat(shp, ")");
		flops_text(b1, sizeof b1, json_object_get_double(fw));
		flops_text(b2, sizeof b2, 2 * json_object_get_double(fw));
		fprintf(out, "%-24s %-21s %-18s %12lld %14s %14s",
			json_object_get_string(name),
			json_object_get_string(kind), shp,
			(long long)get_i(l, "params", NULL), b1, b2);
		if (pp > 1)
			fprintf(out, "  %5lld", (long long)get_i(l, "stage",
								 NULL));
		fprintf(out, "\n");
	}
	json_object_object_get_ex(d, "flops_per_sample", &x);
	flops_text(b1, sizeof b1, json_object_get_double(x));
	json_object_object_get_ex(d, "flops_per_step", &x);
	flops_text(b2, sizeof b2, json_object_get_double(x));
	fprintf(out, "\ntotal: %lld parameters; %s per sample (forward + "
		"backward%s), %s per optimizer step\n",
		(long long)get_i(d, "params", NULL), b1,
		get_i(d, "grid", "tensor_parallel") > 1 ?
		", one tensor-parallel rank's share" : "", b2);
	if (get_d(d, "recompute_flops_per_sample") > 0) {
		flops_text(b1, sizeof b1,
			   get_d(d, "recompute_flops_per_sample"));
		fprintf(out, "recompute: %s%s; its forward again in backward "
			"adds %s per sample (in the total)\n",
			json_object_get_string(get(d, "recompute")),
			fused ? ", and the fused attention's tiles" : "", b1);
	}
	if (fused)
		fprintf(out, "attention: fused (tiles with an online softmax: "
			"no (T, T) scores kept)\n");
	if (split)
		print_stages(d, out);
	else {
		print_unsplit_memory(d, out);
		print_sync(out, "\n", get(json_object_array_get_idx(
			get(d, "stages"), 0), "sync"));
	}
	bytes_text(b1, sizeof b1, get_i(d, "communication_per_rank",
					"sent_per_step"));
	bytes_text(b2, sizeof b2, get_i(d, "communication_per_rank",
					"received_per_step"));
	bytes_text(b3, sizeof b3, get_i(d, "communication_per_rank",
					"gradient_bytes"));
	json_object_object_get_ex(d, "communication_per_rank", &x);
	{
		struct json_object *alg, *sb, *sm, *mode, *stale;

		json_object_object_get_ex(x, "algorithm", &alg);
		if (json_object_object_get_ex(x, "server_bytes_per_step", &sb)) {
			char b4[32], b5[32];

			json_object_object_get_ex(x, "server_memory", &sm);
			json_object_object_get_ex(x, "mode", &mode);
			json_object_object_get_ex(x, "max_staleness", &stale);
			bytes_text(b4, sizeof b4, json_object_get_int64(sb));
			bytes_text(b5, sizeof b5, json_object_get_int64(sm));
			fprintf(out, "\nworkers: %lld; parameter servers: %lld "
				"(%s mode, max staleness %lld); each server moves "
				"%s per step and holds %s\n",
				(long long)get_i(d, "grid", "data_parallel"),
				(long long)(get_i(d, "grid", "world_size") -
					    get_i(d, "grid", "data_parallel")),
				json_object_get_string(mode),
				(long long)json_object_get_int64(stale), b4, b5);
			fprintf(out, "communication per worker and step: "
				"pushes %s, pulls %s\n", b1, b2);
		} else if (split && get_i(d, "communication_per_rank",
					  "sent_per_step") == 0) {
			fprintf(out, "no gradient all-reduce: each stage has "
				"one rank\n");
		} else {
			fprintf(out, "%s%s per rank and step: sent %s, received "
				"%s (%s of %s of gradients%s)\n",
				split ? "" : "\n", split ?
				"gradient all-reduce on the wire (ring estimate)" :
				"communication", b1, b2,
				json_object_get_string(alg), b3,
				split ? " over the data- and tensor-parallel "
				"ranks of the largest stage" : "");
			print_wire(out, x);
		}
	}
	print_checkpoint(d, out);
	dt_plan_link_print(d, out);
}
