/* SPDX-License-Identifier: MIT */
/* exec.c - the executor (exec.h): every layout's step over the plan's
 * schedule.
 *
 * A rank runs its stage's nodes (the whole model without a pipeline) and
 * trains its stage's tensors. Activations go forward and their gradients
 * backward between neighbouring stages with MPI point-to-point messages:
 * blocking receives and non-blocking sends, whose buffers (the slot of
 * the micro-batch) are not reused before the send has completed. Each
 * stage runs its schedule's operations (plan.h) in order; forward and
 * backward both take micro-batches in increasing order on every stage,
 * so the messages of one direction match in order. Without a pipeline
 * there are no live sets to move and the schedule is F0 B0 F1 B1 ...,
 * which is the plain data-parallel loop over micro-batches, or breadth
 * first F0 .. F(m-1) B0 .. B(m-1), whose backwards run as one pass node
 * by node (dt_model_backward_breadth), micro-batch k in slot k. */
#include "train/exec.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/kern.h"
#include "train/state.h"
#include "util/alloc.h"
#include "util/trace.h"

enum { TAG_ACT = 11, TAG_GRAD = 12 };

/* The tensor group's collectives (struct dt_tp: the split layers' sums
 * and sequence parallelism's row collectives): a failure cannot be
 * returned through the layer, and the other ranks wait inside the same
 * collective, so it ends the job. */
static void
tp_failed(struct dt_layout *l, const struct dt_error *err)
{
	fprintf(stderr, "dtrain: rank %d: %s\n", dt_comm_rank(l->world),
		err->msg);
	dt_comm_abort(l->world, dt_status_exit_code(err->status));
}

static void
tp_allreduce(void *ctx, float *buf, size_t n)
{
	struct dt_layout *l = ctx;
	struct dt_error err;

	if (dt_comm_allreduce_sum_f32(l->tp_comm, buf, n, &err) != DT_OK)
		tp_failed(l, &err);
}

static void
tp_reduce_scatter_rows(void *ctx, float *buf, size_t rows, size_t row_len)
{
	struct dt_layout *l = ctx;
	struct dt_error err;

	if (dt_comm_reduce_scatter_rows_f32(l->tp_comm, buf, rows, row_len,
					    &err) != DT_OK)
		tp_failed(l, &err);
}

static void
tp_allgather_rows(void *ctx, float *buf, size_t rows, size_t row_len)
{
	struct dt_layout *l = ctx;
	struct dt_error err;

	if (dt_comm_allgather_rows_f32(l->tp_comm, buf, rows, row_len,
				       &err) != DT_OK)
		tp_failed(l, &err);
}

/* Where this rank's stage's tensors start in the whole model's list. */
static int
first_tensor_of(const struct dt_plan *p, int stage)
{
	const struct dt_model *shapes = p->shapes;
	int first = 0;

	for (int t = 0; t < dt_model_n_tensors(shapes); t++) {
		struct dt_tensor_info ti;
		struct dt_layer_info li;
		int node = 0;

		dt_model_tensor_info(shapes, t, &ti);
		while (node < p->n_nodes) {
			dt_model_layer_info(shapes, node, &li);
			if (strcmp(li.name, ti.node) == 0)
				break;
			node++;
		}
		if (node < p->n_nodes && p->stage_of_node[node] < stage)
			first = t + 1;
	}
	return first;
}

/* The model of this rank: the whole one, or its stage, split by tensor
 * parallelism as the plan says. */
static enum dt_status
build_model(struct dt_run *r, struct dt_error *err)
{
	const struct dt_plan *p = &r->plan;
	struct dt_layout *l = &r->layout;
	enum dt_status st;

	if (!l->split)
		return dt_model_new_slots(r->job, p->micro_batch, l->n_slots,
					  &r->model, err);
	st = dt_model_new_stage(r->job, p->micro_batch, p->stage_of_node,
				p->pp_size, l->grid.stage, l->n_slots,
				&r->model, err);
	if (st == DT_OK)
		st = dt_plan_split_tensors(r->job, p->tp_size, r->model, err);
	return st;
}

static enum dt_status
split_comms(struct dt_run *r, struct dt_error *err)
{
	struct dt_layout *l = &r->layout;
	int pp = r->plan.pp_size, tp = r->plan.tp_size;
	enum dt_status st;

	st = dt_comm_split(r->comm, l->grid.stage, r->rank, &l->stage_comm,
			   err);
	if (st == DT_OK)
		st = dt_comm_split(r->comm, l->grid.dp * tp + l->grid.tp,
				   l->grid.stage, &l->pipe_comm, err);
	if (st == DT_OK)
		st = dt_comm_split(r->comm, l->grid.dp * pp + l->grid.stage,
				   l->grid.tp, &l->tp_comm, err);
	if (st == DT_OK && r->plan.tp_sliced)
		st = dt_comm_split(r->comm, l->grid.stage * tp + l->grid.tp,
				   l->grid.dp, &l->dp_comm, err);
	return st;
}

static void
alloc_slots(struct dt_run *r)
{
	struct dt_layout *l = &r->layout;
	int64_t mb = r->plan.micro_batch, in = dt_model_input_size(r->model);
	/* Labels (int32), or an mse model's float targets. */
	int64_t lps = dt_model_labels_per_sample(r->model) +
		      dt_model_targets_per_sample(r->model);

	l->slot_x = dt_xcalloc((size_t)l->n_slots, sizeof *l->slot_x);
	l->slot_y = dt_xcalloc((size_t)l->n_slots, sizeof *l->slot_y);
	for (int i = 0; i < l->n_slots; i++) {
		l->slot_x[i] = dt_xalloc_floats((size_t)(mb * in));
		l->slot_y[i] = dt_xcalloc((size_t)(mb * (lps > 0 ? lps : 1)),
					  sizeof(int32_t));
	}
	l->max_req = dt_model_n_live(r->model, 0) +
		     dt_model_n_live(r->model, 1) + 1;
	l->slot_req = dt_xcalloc((size_t)(l->n_slots * l->max_req),
				 sizeof *l->slot_req);
	l->slot_n_req = dt_xcalloc((size_t)l->n_slots, sizeof *l->slot_n_req);
	l->eval_idx = dt_xmalloc((size_t)mb, sizeof *l->eval_idx);
}

enum dt_status
dt_layout_setup(struct dt_run *r, struct dt_error *err)
{
	const struct dt_plan *p = &r->plan;
	struct dt_layout *l = &r->layout;
	enum dt_status st;

	l->world = r->comm;
	dt_plan_position(p, r->rank, &l->grid);
	l->split = p->pp_size > 1 || p->tp_size > 1;
	l->last_stage = l->grid.stage == p->pp_size - 1;
	l->stage = p->stages[l->grid.stage];
	l->first_tensor = first_tensor_of(p, l->grid.stage);
	l->n_tensors_all = dt_model_n_tensors(p->shapes);
	l->n_ops = 2 * p->grad_accum_steps;
	l->ops = p->ops + l->n_ops * l->grid.stage;
	l->n_slots = (int)p->in_flight[l->grid.stage];
	st = build_model(r, err);
	if (st == DT_OK)
		st = split_comms(r, err);
	if (st != DT_OK)
		return st;
	if (p->tp_size > 1) {
		dt_model_set_tensor_group(r->model, l->grid.tp, p->tp_size,
					  tp_allreduce, l);
		dt_model_set_tensor_group_rows(r->model,
					       tp_reduce_scatter_rows,
					       tp_allgather_rows);
	}
	/* Each tensor rank keeps only its blocks (doc/DESIGN.md,
	 * "Tensor-parallel slices"); the whole tensors it was built with
	 * go. */
	if (p->tp_sliced)
		dt_model_tp_own_slices(r->model);
	alloc_slots(r);
	return DT_OK;
}

void
dt_layout_fini(struct dt_layout *l)
{
	for (int i = 0; l->slot_x != NULL && i < l->n_slots; i++) {
		free(l->slot_x[i]);
		free(l->slot_y[i]);
	}
	free(l->slot_x);
	free(l->slot_y);
	free(l->slot_req);
	free(l->slot_n_req);
	free(l->eval_idx);
	dt_comm_free(l->dp_comm);
	dt_comm_free(l->tp_comm);
	dt_comm_free(l->pipe_comm);
	dt_comm_free(l->stage_comm);
	memset(l, 0, sizeof *l);
}

uint64_t
dt_layout_bytes_sent(const struct dt_layout *l)
{
	return dt_comm_bytes_sent(l->stage_comm) +
	       (l->dp_comm != NULL ? dt_comm_bytes_sent(l->dp_comm) : 0) +
	       dt_comm_bytes_sent(l->tp_comm) +
	       dt_comm_p2p_bytes_sent(l->pipe_comm);
}

/* Waits for the sends still reading slot's buffers. */
static enum dt_status
free_slot(struct dt_layout *l, int slot, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	for (int i = 0; i < l->slot_n_req[slot] && st == DT_OK; i++)
		st = dt_comm_wait(l->pipe_comm,
				  l->slot_req[slot * l->max_req + i], err);
	l->slot_n_req[slot] = 0;
	return st;
}

/* Receives (send = 0) or sends (1) the outputs (grad = 0) or gradients
 * (1) of one live set, batch rows each. after selects the set: 0 the one
 * from the stage before, 1 the one to the stage after. */
static enum dt_status
move_live(struct dt_run *r, int after, int grad, int send, int slot,
	  int64_t batch, struct dt_error *err)
{
	struct dt_layout *l = &r->layout;
	int peer = l->grid.stage + (after ? 1 : -1);
	int tag = grad ? TAG_GRAD : TAG_ACT;
	enum dt_status st = DT_OK;

	for (int j = 0; j < dt_model_n_live(r->model, after) && st == DT_OK;
	     j++) {
		float *out, *g, *buf;		/* (batch, fps) each */
		int64_t fps;

		dt_model_live_buffers(r->model, after, j, &out, &g, &fps);
		buf = grad ? g : out;
		if (buf == NULL)
			continue;
		if (send) {
			/* req: (1), the next free one of the slot's
			 * (max_req) */
			int *req = &l->slot_req[slot * l->max_req +
						l->slot_n_req[slot]];

			st = dt_comm_isend_f32(l->pipe_comm, buf,
					       (size_t)(batch * fps), peer,
					       tag, req, err);
			if (st == DT_OK)
				l->slot_n_req[slot]++;
		} else {
			st = dt_comm_recv_f32(l->pipe_comm, buf,
					      (size_t)(batch * fps), peer, tag,
					      err);
		}
	}
	return st;
}

/* Fills slot's x and y with micro-batch k of the step (from the loader
 * thread, or gathered here) and returns the global index of its first
 * sample; *data_wait grows by the time spent waiting for the loader or
 * gathering. */
static int64_t
load_micro(struct dt_run *r, int slot, int64_t k, double *data_wait)
{
	const struct dt_plan *p = &r->plan;
	struct dt_layout *l = &r->layout;
	int64_t in = dt_model_input_size(r->model);
	const struct dt_position *at = &r->position;

	if (r->loader != NULL) {
		const struct dt_batch *b = dt_loader_next(r->loader);
		int64_t first = b->first_sample;

		*data_wait += dt_loader_take_wait(r->loader);

		memcpy(l->slot_x[slot], b->x,
		       (size_t)(p->micro_batch * in) * sizeof(float));
		memcpy(l->slot_y[slot], b->y,
		       (size_t)(p->micro_batch * r->y_per_sample) *
		       sizeof(int32_t));
		dt_loader_release(r->loader);
		return first;
	}

	int64_t off = at->epoch_off + dt_shard_offset(0, p->global_batch,
						      l->grid.dp, p->dp_size,
						      p->micro_batch, k);
	double t = dt_now();

	if (k == 0) {
		struct dt_source_walk w = {
			.global_batch = p->global_batch,
			.micro_batch = p->micro_batch,
			.grad_accum_steps = p->grad_accum_steps,
			.dp_rank = l->grid.dp, .dp_size = p->dp_size,
		};

		dt_source_ahead(&r->train, r->perm, at->epoch_off,
				p->total_steps - at->step, &w);
	}
	dt_source_gather(&r->train, r->perm + off, p->micro_batch,
			 l->slot_x[slot], l->slot_y[slot]);
	*data_wait += dt_now() - t;
	return at->epoch * r->train.n + off;
}

/* The forward pass of micro-batch op->micro: its data, the activations
 * from the stage before, the stage's nodes, the activations to the stage
 * after. *forward_s grows by the pass's wall-clock time less what it
 * added to *data_wait. */
static enum dt_status
run_forward(struct dt_run *r, const struct dt_pipe_op *op, double *loss_sum,
	    double *data_wait, double *forward_s, struct dt_error *err)
{
	struct dt_layout *l = &r->layout;
	int64_t mb = r->plan.micro_batch;
	int slot = (int)(op->micro % l->n_slots);
	double ls = 0, t0 = dt_now(), w0 = *data_wait;
	int64_t first;
	enum dt_status st = free_slot(l, slot, err);

	if (st != DT_OK)
		goto out;
	first = load_micro(r, slot, op->micro, data_wait);
	dt_model_use_slot(r->model, slot);
	dt_model_set_position(r->model, (uint64_t)r->position.step, first);
	st = move_live(r, 0, 0, 0, slot, mb, err);
	if (st != DT_OK)
		goto out;
	dt_model_stage_forward(r->model, l->slot_x[slot],
			       l->last_stage ? l->slot_y[slot] : NULL, mb,
			       true, &ls, NULL);
	if (l->last_stage && l->grid.tp == 0)
		*loss_sum += ls;
	st = move_live(r, 1, 0, 1, slot, mb, err);
out:
	*forward_s += dt_now() - t0 - (*data_wait - w0);
	dt_trace_event("forward", t0, dt_now(), "micro", (long)op->micro);
	return st;
}

/* The buckets of one step's gradient sync: begun in order, from the
 * model's backward hook in the step's last micro-batch (overlap), and
 * the rest after it. */
struct bucket_feed {
	struct dt_grad_sync *sync;
	int next;			/* the first bucket not yet begun */
	enum dt_status st;		/* the first failure, kept for after
					 * the pass */
	struct dt_error *err;
	int overlap;			/* dt_grad_sync_overlap */
	int last_micro;			/* the step's last micro-batch */
};

/* dt_kern_set_progress's hook while sums are in flight in backward:
 * the long products move them on too, not only the ends of nodes. */
static void
product_progress(void *ctx)
{
	struct bucket_feed *f = ctx;

	if (f->st == DT_OK)
		f->st = dt_grad_sync_progress_in_product(f->sync, f->err);
}

/* Begins buckets up to the first one whose ready node is below node
 * (INT_MIN: all of them, after the pass); inside the pass, from the
 * first one begun on, the products of the rest of it drive the sums
 * (run_backward and run_backward_breadth take the hook away after). */
static void
feed_upto(struct bucket_feed *f, int node)
{
	int n = dt_grad_sync_n_buckets(f->sync);

	while (f->st == DT_OK && f->next < n &&
	       dt_grad_sync_bucket_node(f->sync, f->next) >= node)
		f->st = dt_grad_sync_begin(f->sync, f->next++, f->err);
	if (f->next > 0 && node != INT_MIN)
		dt_kern_set_progress(product_progress, f);
}

/* dt_model_set_backward_hook's callback: node's backward has run. */
static void
node_final(void *ctx, int node)
{
	struct bucket_feed *f = ctx;

	dt_grad_sync_node_backward_end(f->sync, node);
	feed_upto(f, node);
	if (f->st == DT_OK)
		f->st = dt_grad_sync_progress(f->sync, f->err);
}

/* dt_model_set_params_hook's callback: node's own gradients are final
 * before its backward ends (dense: its input gradient is still to
 * come), so its buckets may begin now. */
static void
node_params_final(void *ctx, int node)
{
	feed_upto(ctx, node);
}

/* dt_model_set_backward_hook's callback where no bucket is fed: node's
 * backward has run. */
static void
node_end(void *ctx, int node)
{
	dt_grad_sync_node_backward_end(ctx, node);
}

/* dt_model_backward_breadth's callback: node's backward over micro-
 * batch micro has run. The sums are driven forward after every node of
 * every micro-batch, so that they advance while the backward of all of
 * them runs. */
static void
node_micro_final(void *ctx, int node, int micro)
{
	struct bucket_feed *f = ctx;

	dt_grad_sync_node_done(f->sync, node);
	if (!f->overlap)
		return;
	if (micro == f->last_micro)
		feed_upto(f, node);
	if (f->st == DT_OK)
		f->st = dt_grad_sync_progress(f->sync, f->err);
}

/* The breadth-first backward of the whole step (every micro-batch's
 * forward has run, micro-batch k in slot k): buckets begin as soon as
 * their nodes' passes over the last micro-batch have run (overlap). */
static enum dt_status
run_backward_breadth(struct dt_run *r, float grad_scale,
		     struct bucket_feed *feed)
{
	struct dt_layout *l = &r->layout;

	dt_grad_sync_breadth_begin(r->sync);
	dt_model_backward_breadth(r->model, l->n_slots,
				  (const float *const *)l->slot_x,
				  (const int32_t *const *)l->slot_y,
				  r->plan.micro_batch, grad_scale,
				  node_micro_final, feed);
	dt_kern_set_progress(NULL, NULL);
	return feed->st;
}

/* The backward pass of micro-batch op->micro, inside the gradient sync's
 * per-micro-batch calls; feed (non-NULL in the step's last micro-batch
 * with overlap) begins the buckets as their nodes finish. */
static enum dt_status
run_backward(struct dt_run *r, const struct dt_pipe_op *op, float grad_scale,
	     struct bucket_feed *feed, struct dt_error *err)
{
	struct dt_layout *l = &r->layout;
	int64_t mb = r->plan.micro_batch;
	int slot = (int)(op->micro % l->n_slots);
	enum dt_status st;

	dt_model_use_slot(r->model, slot);
	st = move_live(r, 1, 1, 0, slot, mb, err);
	if (st != DT_OK)
		return st;
	dt_grad_sync_backward_begin(r->sync);
	if (feed != NULL && dt_grad_sync_begins_early(r->sync))
		dt_model_set_params_hook(r->model, node_params_final, feed);
	if (feed != NULL)
		dt_model_set_backward_hook(r->model, node_final, feed);
	else
		dt_model_set_backward_hook(r->model, node_end, r->sync);
	dt_model_stage_backward(r->model, l->slot_x[slot],
				l->last_stage ? l->slot_y[slot] : NULL, mb,
				grad_scale);
	dt_model_set_backward_hook(r->model, NULL, NULL);
	dt_model_set_params_hook(r->model, NULL, NULL);
	dt_kern_set_progress(NULL, NULL);
	dt_grad_sync_backward_end(r->sync);
	if (feed != NULL && feed->st != DT_OK)
		return feed->st;
	return move_live(r, 0, 1, 1, slot, mb, err);
}

/* dt_model_set_node_hook's callback: node is about to read its
 * parameters (parallel.zero: 3 gathers them, sync_zero3.c). */
static void
node_params(void *ctx, int node, bool backward)
{
	struct dt_grad_sync *sync = ctx;

	if (backward)
		dt_grad_sync_node_backward_begin(sync, node);
	else
		dt_grad_sync_node_forward_begin(sync, node);
}

enum dt_status
dt_exec_step(struct dt_run *r, float grad_scale, double *loss_sum,
	     double *data_wait, double *forward_s, struct dt_error *err)
{
	struct dt_layout *l = &r->layout;
	uint64_t p2p0 = dt_comm_p2p_bytes_sent(l->pipe_comm);
	uint64_t tp0 = dt_comm_bytes_sent(l->tp_comm);
	int64_t last_micro = r->plan.grad_accum_steps - 1;
	int overlap = dt_grad_sync_overlap(r->sync);
	struct bucket_feed feed = { r->sync, 0, DT_OK, err, overlap,
				    (int)last_micro };
	int breadth = r->plan.accum_schedule == DT_ACCUM_BREADTH_FIRST;
	enum dt_status st = DT_OK;

	*loss_sum = 0;
	dt_grad_sync_step_begin(r->sync);
	dt_model_set_node_hook(r->model, node_params, r->sync);
	for (int64_t i = 0; i < l->n_ops && st == DT_OK; i++) {
		const struct dt_pipe_op *op = &l->ops[i];

		if (!op->backward)
			st = run_forward(r, op, loss_sum, data_wait,
					 forward_s, err);
		else if (breadth)
			/* B0 .. B(m-1) are one pass, node by node. */
			st = op->micro == 0 ?
			     run_backward_breadth(r, grad_scale, &feed) : DT_OK;
		else
			st = run_backward(r, op, grad_scale,
					  overlap && op->micro == last_micro ?
					  &feed : NULL, err);
	}
	dt_model_set_node_hook(r->model, NULL, NULL);
	if (st == DT_OK)
		st = dt_comm_wait_all(l->pipe_comm, err);
	for (int s = 0; s < l->n_slots; s++)
		l->slot_n_req[s] = 0;
	l->bytes_p2p += dt_comm_p2p_bytes_sent(l->pipe_comm) - p2p0;
	l->bytes_tp += dt_comm_bytes_sent(l->tp_comm) - tp0;
	/* The step's last backward has run: every bucket not begun inside
	 * it (all of them without overlap) is final. */
	if (st == DT_OK) {
		feed_upto(&feed, INT_MIN);
		st = feed.st;
	}
	return st;
}

enum dt_status
dt_exec_eval(struct dt_run *r, int64_t lo, int64_t hi, double *sums,
	     struct dt_error *err)
{
	struct dt_layout *l = &r->layout;
	int64_t mb = r->plan.micro_batch;
	enum dt_status st = free_slot(l, 0, err);

	/* parallel.zero: 3 gathers each node's parameters before its
	 * forward, as in a step. */
	dt_model_set_node_hook(r->model, node_params, r->sync);
	for (int64_t i = lo; i < hi && st == DT_OK; i += mb) {
		int64_t count = hi - i < mb ? hi - i : mb, correct = 0;
		double ls = 0;

		for (int64_t j = 0; j < count; j++)
			l->eval_idx[j] = i + j;
		dt_source_gather(&r->eval, l->eval_idx, count, l->slot_x[0],
				 l->slot_y[0]);
		dt_model_use_slot(r->model, 0);
		st = move_live(r, 0, 0, 0, 0, count, err);
		if (st != DT_OK)
			break;
		dt_model_stage_forward(r->model, l->slot_x[0],
				       l->last_stage ? l->slot_y[0] : NULL,
				       count, false, &ls, &correct);
		if (l->last_stage && l->grid.tp == 0) {
			sums[0] += ls;
			sums[1] += (double)correct;
		}
		st = move_live(r, 1, 0, 1, 0, count, err);
		/* The next micro-batch overwrites the slot. */
		if (st == DT_OK)
			st = free_slot(l, 0, err);
	}
	dt_model_set_node_hook(r->model, NULL, NULL);
	if (st == DT_OK)
		st = dt_comm_wait_all(l->pipe_comm, err);
	l->slot_n_req[0] = 0;
	return st;
}
