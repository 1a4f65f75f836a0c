/* SPDX-License-Identifier: MIT */
/* sync_zero3.c - parallel.zero: 3, the parameters sharded too
 * (Rajbhandari et al., "ZeRO: memory optimizations toward training
 * trillion parameter models", SC 2020, stage 3 "P_os+g+p"; the idea of
 * PyTorch's FSDP, learnt from, not copied): level 2's sums, update and
 * checkpointed state (sync_zero.c) with the trained parameters resident
 * only in the rank's own part [own_lo, own_hi) between their uses.
 *
 * The parameter arena stays where it is (every pointer of the graph
 * into it stays valid) and is its own anonymous mapping (graph.c,
 * dt_xalloc_pages): the pages of the floats the rank does not own are
 * handed back to the kernel (madvise MADV_DONTNEED, dt_pages_release;
 * a page that also holds an owned float, or a float of another node, is
 * kept) after the update and after each node's use, and a node's floats
 * are gathered from their owners into the same addresses just before
 * its forward and again before its backward (the model's node hook,
 * graph.h, set by train/exec.c around the step). The node before is
 * given back when the next one begins.
 * The gather is one broadcast per owner whose part meets the node's
 * span, so every float arrives as its owner holds it: the bits are level
 * 0's by construction. The next node's gather is prefetched: started
 * (dt_comm_ibcast) as a node begins, for the node that comes next in
 * its direction (the next one with parameters in forward, the one before
 * in backward; the first node's at the step's beginning), and waited for
 * when that node begins; a wrong guess (recompute, a pipeline's
 * interleaving) is given back and the node gathered blocking. So at most
 * two nodes are resident beside the own part. Open MPI moves a started
 * broadcast on inside MPI calls (and the progress thread,
 * parallel.progress_us), so how much of it hides behind compute depends
 * on those; on the host-first communicator it is blocking.
 *
 * The gradient is summed as at level 2 (in the exact mode into the
 * parts during backward, its pages handed back as it goes); after the
 * update the gradient pages the rank does not own are handed back too
 * (the next step writes them again). Whole parameters outside a step: a checkpoint
 * (collect) and an evaluation (dt_grad_sync_params_whole) all-gather them
 * first, transiently, until the next step begins; the checkpoint is thus
 * the same as at every other level. */
#include "train/sync.h"

#include <json.h>
#include <stdio.h>
#include <stdlib.h>

#include "train/sync_priv.h"
#include "util/alloc.h"

struct dt_sync_zero3 {
	const struct dt_grad_sync_role *base_role;	/* sync_zero.c's */
	int n_nodes;
	size_t *node_lo, *node_hi;	/* (n_nodes) each node's trained
					 * floats [lo, hi), empty: none */
	size_t largest;			/* the most trained floats of a node */
	int cur;			/* the node gathered now, or -1 */
	int next;			/* the node whose gather is in flight
					 * (prefetched), or -1 */
	int whole;			/* every parameter is on the rank */
	uint64_t gathered;		/* bytes received by the gathers */
	uint64_t released;		/* bytes handed back */
	int64_t prefetched, used;	/* gathers started ahead, and those
					 * whose node came next */
};

/* A failed gather leaves the other ranks inside a collective: the job
 * ends. */
static void
gather_failed(struct dt_grad_sync *s, const struct dt_error *err)
{
	fprintf(stderr, "dtrain: rank %d: parallel.zero 3: %s\n",
		dt_comm_rank(s->cfg.world), err->msg);
	dt_comm_abort(s->cfg.world, dt_status_exit_code(DT_ERR_MPI));
}

/* Hands back the pages of parameter (and gradient) floats [lo, hi) that
 * this rank does not own. */
static void
release_span(struct dt_grad_sync *s, float *arena, size_t lo, size_t hi)
{
	size_t a = s->own_lo < hi ? s->own_lo : hi;
	size_t b = s->own_hi > lo ? s->own_hi : lo;

	s->zero3->released += dt_pages_release(arena, lo, a > lo ? a : lo);
	s->zero3->released += dt_pages_release(arena, b < hi ? b : hi, hi);
}

static void drain(struct dt_grad_sync *s);

/* Every unowned parameter page handed back, after any gather in flight
 * has landed. */
static void
release_params(struct dt_grad_sync *s)
{
	drain(s);
	s->zero3->next = -1;
	release_span(s, dt_model_params(s->cfg.model), 0, s->n);
	s->zero3->cur = -1;
	s->zero3->whole = 0;
}

/* Node's trained floats from their owners: one broadcast per owner whose
 * part (dt_comm_part) meets the node's span; started (dt_comm_ibcast,
 * done at the next drain) or blocking. */
static void
gather_node(struct dt_grad_sync *s, int node, int start)
{
	struct dt_sync_zero3 *z = s->zero3;
	struct dt_comm *c = s->cfg.sum_comm;
	float *params = dt_model_params(s->cfg.model);	/* (n) */
	size_t a = z->node_lo[node], b = z->node_hi[node];
	int p = dt_comm_size(c), me = dt_comm_rank(c);
	struct dt_error err;

	for (int q = 0; q < p; q++) {
		size_t lo, hi;

		dt_comm_part(s->n, p, q, &lo, &hi);
		lo = lo > a ? lo : a;
		hi = hi < b ? hi : b;
		if (lo >= hi)
			continue;
		if ((start ? dt_comm_ibcast : dt_comm_bcast)(
			    c, params + lo, (hi - lo) * sizeof(float), q,
			    &err) != DT_OK)
			gather_failed(s, &err);
		if (q != me)
			z->gathered += (hi - lo) * sizeof(float);
	}
}

/* Waits for the prefetched gather, if one is in flight. */
static void
drain(struct dt_grad_sync *s)
{
	struct dt_error err;

	if (s->zero3->next < 0)
		return;
	if (dt_comm_coll_wait(s->cfg.sum_comm, &err) != DT_OK)
		gather_failed(s, &err);
}

static int
has_span(const struct dt_sync_zero3 *z, int node)
{
	return node >= 0 && node < z->n_nodes &&
	       z->node_hi[node] > z->node_lo[node];
}

/* The node whose parameters are read after node's: the next one with
 * trained floats in forward order, the one before in backward. Every
 * summing rank runs the same nodes, so every one predicts the same. */
static int
predict(const struct dt_sync_zero3 *z, int node, int backward)
{
	int step = backward ? -1 : 1;

	for (int i = node + step; i >= 0 && i < z->n_nodes; i += step)
		if (has_span(z, i))
			return i;
	return -1;
}

static void
release_node(struct dt_grad_sync *s, int node)
{
	release_span(s, dt_model_params(s->cfg.model),
		     s->zero3->node_lo[node], s->zero3->node_hi[node]);
}

/* Starts the gather of the node predicted after node, if any. */
static void
start_ahead(struct dt_grad_sync *s, int node, int backward)
{
	struct dt_sync_zero3 *z = s->zero3;
	int ahead = predict(z, node, backward);

	if (ahead < 0)
		return;
	gather_node(s, ahead, 1);
	z->next = ahead;
	z->prefetched++;
}

/* Before node's use: its floats here (prefetched or gathered now), the
 * node before given back, and the gather of the node predicted next
 * started, so that it crosses the wire during this node's compute (also
 * when the node is used again, its backward after its forward, with
 * nothing in flight). */
static void
zero3_node_begin(struct dt_grad_sync *s, int node, int backward)
{
	struct dt_sync_zero3 *z = s->zero3;

	if (z->whole || !has_span(z, node))
		return;
	if (node == z->cur) {
		if (z->next < 0)
			start_ahead(s, node, backward);
		return;
	}
	drain(s);
	if (z->next == node)
		z->used++;
	else {
		if (z->next >= 0)
			release_node(s, z->next);
		gather_node(s, node, 0);
	}
	if (z->cur >= 0)
		release_node(s, z->cur);
	z->cur = node;
	z->next = -1;
	start_ahead(s, node, backward);
}

static void
zero3_node_forward_begin(struct dt_grad_sync *s, int node)
{
	zero3_node_begin(s, node, 0);
}

static void
zero3_node_backward_begin(struct dt_grad_sync *s, int node)
{
	zero3_node_begin(s, node, 1);
}

static enum dt_status
zero3_params_whole(struct dt_grad_sync *s, struct dt_error *err)
{
	enum dt_status st;

	if (s->zero3->whole)
		return DT_OK;
	drain(s);
	s->zero3->next = -1;
	st = dt_comm_allgather_f32(s->cfg.sum_comm,
				   dt_model_params(s->cfg.model), s->n, err);
	if (st == DT_OK) {
		s->zero3->whole = 1;
		s->zero3->cur = -1;
	}
	return st;
}

/* The step starts from the own part only, and the first node's gather
 * is started at once. */
static void
zero3_step_begin(struct dt_grad_sync *s)
{
	release_params(s);
	dt_sync_zero_ops.step_begin(s);
	start_ahead(s, -1, 0);
}

/* Level 2's update of the own part (no all-gather at level 3), then the
 * unowned parameter and gradient pages handed back. */
static void
zero3_apply(struct dt_grad_sync *s, float lr)
{
	dt_sync_zero_ops.apply(s, lr);
	release_params(s);
	release_span(s, dt_model_grads(s->cfg.model), 0, s->n);
}

/* Each node's span of trained floats, and the largest. */
static void
find_node_spans(struct dt_grad_sync *s)
{
	struct dt_sync_zero3 *z = s->zero3;
	struct dt_model *m = s->cfg.model;

	z->n_nodes = dt_model_n_layers(m);
	z->node_lo = dt_xcalloc((size_t)z->n_nodes + 1, sizeof *z->node_lo);
	z->node_hi = dt_xcalloc((size_t)z->n_nodes + 1, sizeof *z->node_hi);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		int i;

		dt_model_tensor_info(m, t, &ti);
		i = ti.node_index;
		if (ti.offset >= s->n || ti.size == 0)
			continue;
		if (z->node_hi[i] == 0)
			z->node_lo[i] = ti.offset;
		z->node_hi[i] = ti.offset + (size_t)ti.size;
	}
	for (int i = 0; i < z->n_nodes; i++)
		if (z->node_hi[i] - z->node_lo[i] > z->largest)
			z->largest = z->node_hi[i] - z->node_lo[i];
}

/* A checkpoint reads the whole parameters: gathered first (until the
 * next step), then the optimizer state as level 2 collects it. */
static enum dt_status
zero3_collect(struct dt_grad_sync *s, struct dt_error *err)
{
	enum dt_status st = zero3_params_whole(s, err);

	if (st != DT_OK)
		return st;
	return s->zero3->base_role->collect(s, err);
}

static enum dt_status
zero3_start(struct dt_grad_sync *s, struct dt_error *err)
{
	return s->zero3->base_role->start(s, err);
}

static enum dt_status
zero3_release(struct dt_grad_sync *s, struct dt_error *err)
{
	return s->zero3->base_role->release(s, err);
}

static enum dt_status
zero3_serve(struct dt_grad_sync *s, struct dt_error *err)
{
	return s->zero3->base_role->serve(s, err);
}

static void
zero3_log(struct dt_grad_sync *s, struct json_object *line)
{
	s->zero3->base_role->log(s, line);
}

/* summary.json's "zero" gains what level 3 moved: the largest node
 * gathered (floats), the bytes gathered and handed back. */
static void
zero3_summary(struct dt_grad_sync *s, struct json_object *summary)
{
	struct dt_sync_zero3 *z = s->zero3;
	struct json_object *o;

	z->base_role->summary(s, summary);
	if (!json_object_object_get_ex(summary, "zero", &o))
		return;
	json_object_object_add(o, "largest_gather_params",
			       json_object_new_int64((int64_t)z->largest));
	json_object_object_add(o, "gathered_bytes",
			       json_object_new_int64((int64_t)z->gathered));
	json_object_object_add(o, "released_bytes",
			       json_object_new_int64((int64_t)z->released));
	json_object_object_add(o, "prefetched_gathers",
			       json_object_new_int64(z->prefetched));
	json_object_object_add(o, "prefetched_used",
			       json_object_new_int64(z->used));
}

static void
zero3_state(struct dt_grad_sync *s, struct dt_grad_sync_state *out)
{
	s->zero3->base_role->state(s, out);
}

static void
zero3_loaded(struct dt_grad_sync *s)
{
	s->zero3->base_role->loaded(s);
}

static void
zero3_fini(struct dt_grad_sync *s)
{
	struct dt_sync_zero3 *z = s->zero3;

	if (z == NULL)
		return;
	z->base_role->fini(s);
	free(z->node_lo);
	free(z->node_hi);
	free(z);
	s->zero3 = NULL;
}

static const struct dt_grad_sync_role zero3_role = {
	zero3_collect, zero3_start, zero3_release, zero3_serve, zero3_log,
	zero3_summary, zero3_state, zero3_loaded, zero3_fini,
};

/* Level 2's set-up (collective over cfg.sum_comm), its role wrapped, the
 * nodes' spans, and the unowned pages handed back at once. */
static enum dt_status
zero3_init(struct dt_grad_sync *s, struct dt_error *err)
{
	struct dt_sync_zero3 *z = dt_xcalloc(1, sizeof *z);
	enum dt_status st;

	s->zero3 = z;
	z->cur = -1;
	z->next = -1;
	st = dt_sync_zero_ops.init(s, err);
	z->base_role = s->role;
	s->role = &zero3_role;
	find_node_spans(s);
	release_params(s);
	return st;
}

/* The rest is level 2's, as sync_zero.c runs it. */
static void
zero3_backward_begin(struct dt_grad_sync *s)
{
	dt_sync_zero_ops.backward_begin(s);
}

static void
zero3_backward_end(struct dt_grad_sync *s)
{
	dt_sync_zero_ops.backward_end(s);
}

static enum dt_status
zero3_begin(struct dt_grad_sync *s, int bucket, struct dt_error *err)
{
	drain(s);
	return dt_sync_zero_ops.begin(s, bucket, err);
}

static enum dt_status
zero3_finish(struct dt_grad_sync *s, double step_loss,
	     struct dt_step_report *report, struct dt_error *err)
{
	return dt_sync_zero_ops.finish(s, step_loss, report, err);
}

static double
zero3_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	return dt_sync_zero_ops.norm2(s, report);
}

static void
zero3_breadth_begin(struct dt_grad_sync *s)
{
	dt_sync_zero_ops.breadth_begin(s);
}

static void
zero3_node_backward_end(struct dt_grad_sync *s, int node)
{
	dt_sync_zero_ops.node_backward_end(s, node);
}

static void
zero3_zero_grads(struct dt_grad_sync *s)
{
	dt_sync_zero_ops.zero_grads(s);
}

static void
zero3_node_done(struct dt_grad_sync *s, int node)
{
	dt_sync_zero_ops.node_done(s, node);
}

const struct dt_grad_sync_ops dt_sync_zero3_ops = {
	.name = "zero3",
	.init = zero3_init,
	.step_begin = zero3_step_begin,
	.backward_begin = zero3_backward_begin,
	.backward_end = zero3_backward_end,
	.begin = zero3_begin,
	.finish = zero3_finish,
	.norm2 = zero3_norm2,
	.apply = zero3_apply,
	.breadth_begin = zero3_breadth_begin,
	.node_done = zero3_node_done,
	.node_forward_begin = zero3_node_forward_begin,
	.node_backward_begin = zero3_node_backward_begin,
	.params_whole = zero3_params_whole,
	.node_backward_end = zero3_node_backward_end,
	.zero_grads = zero3_zero_grads,
};
