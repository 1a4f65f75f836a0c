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
 * a page that also holds an owned float, or a float of another unit, is
 * kept) after the update and after each unit's use, and made resident
 * again in one call (dt_pages_prefault) just before a gather writes
 * them. The nodes with trained floats make gather units
 * (dt_plan_gather_units: consecutive
 * nodes together at most parallel.gather_mb, so small nodes share one
 * collective instead of costing every rank one each; at 0, the default,
 * each node is a unit), and a unit's floats are gathered from their
 * owners into the same addresses just before the forward of its first
 * node and again before the backward of its last (the model's node
 * hook, graph.h, set by train/exec.c around the step). The unit before
 * is given back when the next one begins.
 * The gather is one broadcast per owner whose part meets the unit's
 * span, so every float arrives as its owner holds it: the bits are level
 * 0's by construction. The next unit's gather is prefetched: started
 * (dt_comm_ibcast) as a unit begins, for the unit that comes next in
 * its direction (the next one in forward, the one before in backward;
 * the first unit's at the step's beginning), and waited for when that
 * unit begins; a wrong guess (recompute, a pipeline's interleaving) is
 * given back and the unit gathered blocking. So at most two units are
 * resident beside the own part. Open MPI moves a started
 * broadcast on inside MPI calls (and the progress thread,
 * parallel.progress_us), so how much of it hides behind compute depends
 * on those; on the host-first communicator it is blocking.
 *
 * The gradient is summed as at level 2 (in the exact mode into the
 * parts during backward, its pages handed back as it goes and
 * prefaulted before each node's backward writes them); after the
 * update the gradient pages the rank does not own are handed back too
 * (the next step writes them again). Outside a step an evaluation's
 * forward gathers unit by unit through the same node hook (train/exec.c;
 * a rank with fewer micro-batches than another makes the gathers of
 * the forwards it lacks, zero3_forward_idle), and a checkpoint in shards
 * has each rank write the tensors that begin in its part, only the
 * tensors a part boundary cuts gathered (dt_grad_sync_params_span, held
 * until the next step begins). Only the gathered format
 * (dt_grad_sync_state_collect: rank 0 writes the whole model) still
 * all-gathers the whole parameters, transiently. */
#include "train/sync.h"

#include <json.h>
#include <stdio.h>
#include <stdlib.h>

#include "train/sync_priv.h"
#include "util/alloc.h"

struct dt_sync_zero3 {
	const struct dt_grad_sync_role *base_role;	/* sync_zero.c's */
	int n_nodes;
	int *unit_of;			/* (n_nodes) each node's gather unit
					 * (dt_plan_gather_units), -1: none */
	int n_units;
	int64_t *unit_lo, *unit_hi;	/* (n_units) each unit's trained
					 * floats [lo, hi) */
	size_t largest;			/* the most trained floats of a
					 * unit */
	int cur;			/* the unit gathered now, or -1 */
	int next;			/* the unit whose gather is in flight
					 * (prefetched), or -1 */
	int kept;			/* the unit the next step gathers
					 * first, its pages kept (not handed
					 * back) since the update, or -1 */
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
 * has landed, but those of unit keep (-1: none), the one the next step
 * gathers first: its gather writes the same addresses again, and a page
 * handed back costs a fault when written again (the page zeroed and,
 * under a hypervisor's shadow page tables, an exit: 24 to 27 us a page
 * on the shared test machine's VM, about half that when prefaulted,
 * gather_span; bench/README, "zero 3's page faults"). Keeping it holds
 * no more than the step does (the unit in use and the one
 * prefetched). */
static void
release_params(struct dt_grad_sync *s, int keep)
{
	struct dt_sync_zero3 *z = s->zero3;
	float *params = dt_model_params(s->cfg.model);	/* (n) */

	drain(s);
	z->next = -1;
	if (keep < 0) {
		release_span(s, params, 0, s->n);
	} else {
		release_span(s, params, 0, (size_t)z->unit_lo[keep]);
		release_span(s, params, (size_t)z->unit_hi[keep], s->n);
	}
	z->kept = keep;
	z->cur = -1;
	z->whole = 0;
}

/* Trained floats [a, b) from their owners: one broadcast per owner whose
 * part (dt_comm_part) meets the span; started (dt_comm_ibcast, done at
 * the next drain) or blocking. */
static void
gather_span(struct dt_grad_sync *s, size_t a, size_t b, int start)
{
	struct dt_sync_zero3 *z = s->zero3;
	struct dt_comm *c = s->cfg.sum_comm;
	float *params = dt_model_params(s->cfg.model);	/* (n) */
	int p = dt_comm_size(c), me = dt_comm_rank(c);
	struct dt_error err;

	for (int q = 0; q < p; q++) {
		size_t lo, hi;

		dt_comm_part(s->n, p, q, &lo, &hi);
		lo = lo > a ? lo : a;
		hi = hi < b ? hi : b;
		if (lo >= hi)
			continue;
		/* the pages handed back, made resident in one call rather
		 * than a fault each as the broadcast lands */
		if (q != me)
			dt_pages_prefault(params, lo, hi);
		if ((start ? dt_comm_ibcast : dt_comm_bcast)(
			    c, params + lo, (hi - lo) * sizeof(float), q,
			    &err) != DT_OK)
			gather_failed(s, &err);
		if (q != me)
			z->gathered += (hi - lo) * sizeof(float);
	}
}

/* Unit u's trained floats from their owners (gather_span). */
static void
gather_unit(struct dt_grad_sync *s, int u, int start)
{
	gather_span(s, (size_t)s->zero3->unit_lo[u],
		    (size_t)s->zero3->unit_hi[u], start);
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

/* The unit whose parameters are read after unit u's: the next one in
 * forward order, the one before in backward (-1 at either end). Every
 * summing rank runs the same nodes, so every one predicts the same. */
static int
predict(const struct dt_sync_zero3 *z, int u, int backward)
{
	int next = backward ? u - 1 : u + 1;

	return next >= 0 && next < z->n_units ? next : -1;
}

static void
release_unit(struct dt_grad_sync *s, int u)
{
	release_span(s, dt_model_params(s->cfg.model),
		     (size_t)s->zero3->unit_lo[u],
		     (size_t)s->zero3->unit_hi[u]);
}

/* Starts the gather of the unit predicted after unit u, if any. */
static void
start_ahead(struct dt_grad_sync *s, int u, int backward)
{
	struct dt_sync_zero3 *z = s->zero3;
	int ahead = predict(z, u, backward);

	if (ahead < 0)
		return;
	gather_unit(s, ahead, 1);
	z->next = ahead;
	z->prefetched++;
}

/* Before node's use: its unit's floats here (prefetched or gathered
 * now), the unit before given back, and the gather of the unit
 * predicted next started, so that it crosses the wire during this
 * unit's compute (also when the unit is used again, its backward after
 * its forward, or its next node, with nothing in flight). */
static void
zero3_node_begin(struct dt_grad_sync *s, int node, int backward)
{
	struct dt_sync_zero3 *z = s->zero3;
	int u;

	if (z->whole || node < 0 || node >= z->n_nodes ||
	    (u = z->unit_of[node]) < 0)
		return;
	if (u == z->cur) {
		if (z->next < 0)
			start_ahead(s, u, backward);
		return;
	}
	drain(s);
	/* the unit kept since the update, if another is used first */
	if (z->kept >= 0 && z->kept != u && z->kept != z->next)
		release_unit(s, z->kept);
	z->kept = -1;
	if (z->next == u)
		z->used++;
	else {
		if (z->next >= 0)
			release_unit(s, z->next);
		gather_unit(s, u, 0);
	}
	if (z->cur >= 0)
		release_unit(s, z->cur);
	z->cur = u;
	z->next = -1;
	start_ahead(s, u, backward);
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
	dt_sync_zero_ops.node_backward_begin(s, node);
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

/* A span outside the step (a checkpoint's cut tensors, train/state.c):
 * any gather in flight landed (and its unit given back), then the span
 * gathered blocking; handed back when the next step begins. */
static enum dt_status
zero3_params_span(struct dt_grad_sync *s, size_t lo, size_t hi,
		  struct dt_error *err)
{
	struct dt_sync_zero3 *z = s->zero3;

	(void)err;
	if (z->whole || lo >= hi)
		return DT_OK;
	drain(s);
	if (z->next >= 0 && z->next != z->cur)
		release_unit(s, z->next);
	if (z->kept >= 0 && z->kept != z->cur && z->kept != z->next)
		release_unit(s, z->kept);
	z->next = -1;
	z->kept = -1;
	gather_span(s, lo, hi, 0);
	return DT_OK;
}

/* A span's unowned floats handed back; a unit they met is gathered
 * again at its next use. */
static void
zero3_params_span_release(struct dt_grad_sync *s, size_t lo, size_t hi)
{
	if (s->zero3->whole || lo >= hi)
		return;
	release_span(s, dt_model_params(s->cfg.model), lo, hi);
	s->zero3->cur = -1;
}

/* A forward this rank does not run: every node's gather as the node
 * hook would make it (the units in the forward's order). */
static void
zero3_forward_idle(struct dt_grad_sync *s)
{
	for (int i = 0; i < s->zero3->n_nodes; i++)
		zero3_node_begin(s, i, 0);
}

/* The unit gathered first in a step (forward order), or -1. */
static int
first_unit(const struct dt_sync_zero3 *z)
{
	return predict(z, -1, 0);
}

/* The step starts from the own part and the first unit's pages only,
 * and that unit's gather is started at once. */
static void
zero3_step_begin(struct dt_grad_sync *s)
{
	release_params(s, first_unit(s->zero3));
	dt_sync_zero_ops.step_begin(s);
	start_ahead(s, -1, 0);
}

/* Level 2's update of the own part (no all-gather at level 3), then the
 * unowned parameter pages handed back but the first unit's (the next
 * step's first gather writes them again), and the unowned gradient
 * pages unless the plan keeps them (parallel.zero_resident_grads). */
static void
zero3_apply(struct dt_grad_sync *s, float lr)
{
	dt_sync_zero_ops.apply(s, lr);
	release_params(s, first_unit(s->zero3));
	if (!s->plan->grads_resident)
		release_span(s, dt_model_grads(s->cfg.model), 0, s->n);
}

/* Each node's span of trained floats, the gather units they make (the
 * plan's rule, dt_plan_gather_units), each unit's span, and the
 * largest. */
static void
find_units(struct dt_grad_sync *s)
{
	struct dt_sync_zero3 *z = s->zero3;
	struct dt_model *m = s->cfg.model;
	int64_t *lo, *hi;	/* (n_nodes) each node's floats, empty: none */

	z->n_nodes = dt_model_n_layers(m);
	lo = dt_xcalloc((size_t)z->n_nodes + 1, sizeof *lo);
	hi = dt_xcalloc((size_t)z->n_nodes + 1, sizeof *hi);
	z->unit_of = dt_xcalloc((size_t)z->n_nodes + 1, sizeof *z->unit_of);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		int i;

		dt_model_tensor_info(m, t, &ti);
		i = ti.node_index;
		if (ti.offset >= s->n || ti.size == 0)
			continue;
		if (hi[i] == 0)
			lo[i] = (int64_t)ti.offset;
		hi[i] = (int64_t)ti.offset + ti.size;
	}
	z->n_units = dt_plan_gather_units(z->n_nodes, lo, hi,
					  dt_plan_gather_cap(s->cfg.job),
					  z->unit_of);
	z->unit_lo = dt_xcalloc((size_t)z->n_units + 1, sizeof *z->unit_lo);
	z->unit_hi = dt_xcalloc((size_t)z->n_units + 1, sizeof *z->unit_hi);
	for (int i = z->n_nodes - 1; i >= 0; i--)
		if (z->unit_of[i] >= 0)
			z->unit_lo[z->unit_of[i]] = lo[i];
	for (int i = 0; i < z->n_nodes; i++)
		if (z->unit_of[i] >= 0)
			z->unit_hi[z->unit_of[i]] = hi[i];
	for (int u = 0; u < z->n_units; u++)
		if ((size_t)(z->unit_hi[u] - z->unit_lo[u]) > z->largest)
			z->largest = (size_t)(z->unit_hi[u] - z->unit_lo[u]);
	free(lo);
	free(hi);
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
	free(z->unit_of);
	free(z->unit_lo);
	free(z->unit_hi);
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
	z->kept = -1;
	st = dt_sync_zero_ops.init(s, err);
	z->base_role = s->role;
	s->role = &zero3_role;
	find_units(s);
	release_params(s, -1);
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
	.params_span = zero3_params_span,
	.params_span_release = zero3_params_span_release,
	.forward_idle = zero3_forward_idle,
	.node_backward_end = zero3_node_backward_end,
	.zero_grads = zero3_zero_grads,
};
