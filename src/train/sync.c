/* SPDX-License-Identifier: MIT */
/* sync.c - the gradient-sync seam (sync.h) and its all-reduce
 * implementations: float, exact (double), and both over pipeline stages.
 *
 * Float: the micro-batches' backward passes add into the float gradient
 * arena, and MPI_SUM all-reduces over the summing ranks add the ranks'
 * arenas, bucket by bucket (sync.h: started during the last backward
 * with parallel.overlap; one blocking sum of the whole arena without).
 * Exact (dt_plan_exact_accum): each micro-batch's float gradient is
 * added to a double accumulator, the accumulators are summed in double
 * and rounded to float once (over several ranks by comm/comm.h's ring:
 * a reduce-scatter of the doubles, each part rounded by the rank that
 * holds its whole sum, straight into the float gradient, and an
 * all-gather of the floats, 12 bytes a value where a double all-reduce
 * sends 16), so the
 * gradient does not depend on how the global batch is split; the last
 * micro-batch goes into the accumulator bucket by bucket, as each is
 * begun, so the double sums start as early as the float ones would. With
 * the bf16 wire (util/bf16.h) each bucket is packed into wire16 before
 * its sum and unpacked after.
 *
 * The squared norm for clipping is each tensor's sum of squares in
 * double, added in model order: a rank holding the whole model computes
 * it from its own gradient; a stage puts its tensors' squares at their
 * model indices in the step report (on its rank of data- and tensor-
 * parallel index 0, zeros elsewhere), the report's sum brings every
 * stage's, and the same model-order sum follows. Adding zeros and
 * reordering nothing, both give the same bits.
 *
 * The seam owns the optimizer (sync.h): made here over the plan's span
 * of the rank's trained floats for every implementation, stepped by
 * apply, its state shown to checkpoints by dt_grad_sync_state. */
#include "train/sync.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/hier.h"
#include "plan/sync_plan.h"
#include "graph/kern.h"
#include "graph/layer.h"
#include "train/decay.h"
#include "train/progress.h"
#include "train/sync_priv.h"
#include "util/alloc.h"
#include "util/bf16.h"
#include "util/trace.h"

_Static_assert((int)DT_HIER_AUTO == DT_HIERARCHICAL_AUTO &&
	       (int)DT_HIER_ON == DT_HIERARCHICAL_ON &&
	       (int)DT_HIER_OFF == DT_HIERARCHICAL_OFF,
	       "parallel.hierarchical's words are comm/hier.h's modes");

/* dt_sync_tensor_sq's eight lanes over n floats of g (n a multiple of
 * 8), added to lane (8): the part every tensor rank's run adds in turn
 * (split_norms). */
static void
sq_lanes(const float *g, int64_t n, double *lane)
{
	for (int64_t i = 0; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			lane[k] += (double)g[i + k] * g[i + k];
}

/* The lanes added up, in lane order. */
static double
sq_total(const double *lane)
{
	double total = 0;

	for (int k = 0; k < 8; k++)
		total += lane[k];
	return total;
}

double
dt_sync_tensor_sq(const float *g, int64_t n)
{
	double lane[8] = { 0 }, total;	/* lane: (8) */
	int64_t i = n - n % 8;

	sq_lanes(g, i, lane);
	total = sq_total(lane);
	for (; i < n; i++)
		total += (double)g[i] * g[i];
	return total;
}

/* The squared norm of tensor t (described by ti) of this step's final
 * gradient: taken when its bucket's sum was done (settle), or now. The
 * same function on the same floats either way, so the same bits. */
static double
norm_of(struct dt_grad_sync *s, int t, const struct dt_tensor_info *ti)
{
	if (s->sq_have != NULL && s->sq_have[t])
		return s->sq[t];
	return dt_sync_tensor_sq(dt_model_grads(s->cfg.model) + ti->offset,
				 ti->size);
}

/* Writes the squared norm of each of the model's trained tensors at
 * norm2[first + its index in the model]. */
static void
own_norms(struct dt_grad_sync *s, double *norm2, int first)
{
	struct dt_model *m = s->cfg.model;
	size_t n_trained = dt_model_n_trained(m);

	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset < n_trained && ti.tie_node == NULL)
			norm2[first + t] = norm_of(s, t, &ti);
	}
}

double
dt_sync_local_norm2(struct dt_grad_sync *s)
{
	struct dt_model *m = s->cfg.model;
	double total = 0;

	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		/* a tied copy is its table again (tie_sum.h) */
		if (ti.offset >= dt_model_n_trained(m) || ti.tie_node != NULL)
			continue;
		total += norm_of(s, t, &ti);
	}
	return total;
}

/* The squared norms of bucket b's tensors, whose sum is done, for
 * norm_of: taken while the later buckets still cross the wire. */
static void
bucket_norms(struct dt_grad_sync *s, int b)
{
	struct dt_model *m = s->cfg.model;
	const struct dt_grad_bucket *k = &s->buckets[b];
	const float *g = dt_model_grads(m);	/* (n) the rank's gradient */

	for (int t = k->t_lo; t < k->t_hi; t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset < k->lo || ti.offset >= k->hi ||
		    ti.offset >= dt_model_n_trained(m))
			continue;
		s->sq[t] = dt_sync_tensor_sq(g + ti.offset, ti.size);
		s->sq_have[t] = 1;
	}
}

static double
shared_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	double total = 0;

	for (int t = 0; t < s->cfg.n_tensors_all; t++)
		total += report->tensor_norm2[t];
	return total;
}

static void
no_op(struct dt_grad_sync *s)
{
	(void)s;
}

int
dt_grad_buckets_make(const struct dt_model *m, size_t cap_floats,
		     struct dt_grad_bucket *out)
{
	size_t n_trained = dt_model_n_trained(m);
	int n = 0, open = 0;

	if (cap_floats == 0)
		cap_floats = SIZE_MAX;
	for (int t = dt_model_n_tensors(m) - 1; t >= 0; t--) {
		struct dt_tensor_info ti;
		struct dt_grad_bucket *b = &out[n];

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset >= n_trained || ti.size == 0)
			continue;
		/* Arena order is tensor order; were a gap ever there, a bucket
		 * would still be one range. */
		if (open && ti.offset + (size_t)ti.size != b->lo) {
			n++;
			b = &out[n];
			open = 0;
		}
		if (!open) {
			b->hi = ti.offset + (size_t)ti.size;
			b->t_hi = t + 1;
			open = 1;
		}
		b->lo = ti.offset;
		b->t_lo = t;
		b->ready_node = ti.node_index;
		if (b->hi - b->lo >= cap_floats) {
			n++;
			open = 0;
		}
	}
	return n + open;
}

/* The rank's pool, over which the exact mode's passes are split (each
 * value as on one thread: the bits do not depend on it). */
static struct dt_pool *
pool_of(const struct dt_grad_sync *s)
{
	return dt_model_pool(s->cfg.model);
}

static void
exact_step_begin(struct dt_grad_sync *s)
{
	dt_kern_par_f64_zero(pool_of(s), s->acc, (int64_t)s->n);
}

/* Each micro-batch's gradient alone in the float arena. */
static void
exact_backward_begin(struct dt_grad_sync *s)
{
	dt_kern_par_copy(pool_of(s), NULL, dt_model_grads(s->cfg.model),
			 (int64_t)s->n);
	memset(s->added, 0, (size_t)s->n_buckets);
}

void
dt_sync_exact_add(struct dt_grad_sync *s, int b)
{
	const struct dt_grad_bucket *k = &s->buckets[b];

	if (s->added[b])
		return;
	dt_model_tp_prepare_grads_range(s->cfg.model, k->lo, k->hi);
	dt_kern_par_f64_add(pool_of(s), dt_model_grads(s->cfg.model) + k->lo,
			    s->acc + k->lo, (int64_t)(k->hi - k->lo), 0);
	s->added[b] = 1;
}

/* Breadth first: every bucket's micro-batches go into the accumulator
 * node by node (exact_node_done), none in begin. */
static void
exact_breadth_begin(struct dt_grad_sync *s)
{
	memset(s->added, 1, (size_t)s->n_buckets);
}

/* Breadth first: node's gradient of the micro-batch just run into the
 * accumulator, and its floats back to 0 for the next one. */
static void
exact_node_done(struct dt_grad_sync *s, int node)
{
	size_t lo = s->node_lo[node];

	dt_kern_par_f64_add(pool_of(s), dt_model_grads(s->cfg.model) + lo,
			    s->acc + lo, (int64_t)(s->node_hi[node] - lo), 1);
}

/* Each node's trained floats: its tensors are neighbours in the arena
 * (tensor order is node order), so one range. */
void
dt_sync_node_ranges(struct dt_grad_sync *s)
{
	struct dt_model *m = s->cfg.model;
	int nn = dt_model_n_layers(m);

	s->node_lo = dt_xcalloc((size_t)nn + 1, sizeof *s->node_lo);
	s->node_hi = dt_xcalloc((size_t)nn + 1, sizeof *s->node_hi);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		size_t *lo, *hi;	/* (1) each: the node's entry */

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset >= s->n || ti.size == 0)
			continue;
		lo = &s->node_lo[ti.node_index];
		hi = &s->node_hi[ti.node_index];
		if (*hi == 0)	/* the node's first tensor */
			*lo = *hi = ti.offset;
		assert(*hi == ti.offset);
		*hi = ti.offset + (size_t)ti.size;
	}
}

/* The buckets begin has not taken already (all of them but in the last
 * micro-batch with overlap). */
static void
exact_backward_end(struct dt_grad_sync *s)
{
	for (int b = 0; b < s->n_buckets; b++)
		dt_sync_exact_add(s, b);
}

/* After bucket b's sum has completed: the sum back into the float
 * gradient, from the wire's bf16 or the exact mode's doubles. */
static void
bucket_done(struct dt_grad_sync *s, int b)
{
	const struct dt_grad_bucket *k = &s->buckets[b];
	float *g = dt_model_grads(s->cfg.model);	/* (n) */

	if (s->wire == DT_GRAD_WIRE_BF16)
		dt_bf16_unpack(g + k->lo, s->wire16 + k->lo, k->hi - k->lo);
	else if (s->acc != NULL && dt_comm_size(s->cfg.sum_comm) == 1)
		dt_kern_par_f64_round(pool_of(s), s->acc + k->lo, g + k->lo,
				      (int64_t)(k->hi - k->lo));
}

/* Every sum of gradients over the summing ranks goes through here (one
 * place for another path, such as a per-host one, to slot in): bucket b
 * in the wire's type, started (overlap) or done. */
static enum dt_status
bucket_sum(struct dt_grad_sync *s, int b, struct dt_error *err)
{
	const struct dt_grad_bucket *k = &s->buckets[b];
	struct dt_comm *c = s->cfg.sum_comm;
	float *g = dt_model_grads(s->cfg.model) + k->lo;	/* (n) */
	size_t n = k->hi - k->lo;	/* the bucket's floats */
	uint64_t b0 = dt_comm_bytes_sent(c);
	double t0 = dt_trace_enabled ? dt_trace_clock() : 0;
	enum dt_status st;

	if (s->wire == DT_GRAD_WIRE_BF16) {
		uint16_t *w = s->wire16 + k->lo;	/* (n) */

		dt_bf16_pack(w, g, n);
		st = s->overlap ? dt_comm_iallreduce_sum_bf16(c, w, n, err) :
				  dt_comm_allreduce_sum_bf16(c, w, n, err);
	} else if (s->acc != NULL && dt_comm_size(c) > 1) {
		/* The double sum rounded into g by the ring (comm/comm.h:
		 * (p-1)/p x 12 bytes a value, 6 on 2 ranks where the
		 * double all-reduce sends 8), the same floats as rounding
		 * the double all-reduce's sum. */
		double *a = s->acc + k->lo;	/* (n) */

		st = s->overlap ?
		     dt_comm_iallreduce_sum_f64_f32(c, a, g, n, err) :
		     dt_comm_allreduce_sum_f64_f32(c, a, g, n, err);
	} else if (s->acc != NULL) {
		/* One rank: the accumulator is the sum (bucket_done
		 * rounds it). */
		st = DT_OK;
	} else {
		st = s->overlap ? dt_comm_iallreduce_sum_f32(c, g, n, err) :
				  dt_comm_allreduce_sum_f32(c, g, n, err);
	}
	s->bytes += dt_comm_bytes_sent(c) - b0;
	/* Its start under overlap, the whole sum without. */
	dt_trace_event("allreduce", t0, dt_trace_clock(), "bucket", b);
	if (st != DT_OK)
		return st;
	if (s->overlap)
		s->pending[b] = 1;
	else
		bucket_done(s, b);
	return DT_OK;
}

static enum dt_status
float_begin(struct dt_grad_sync *s, int bucket, struct dt_error *err)
{
	const struct dt_grad_bucket *k = &s->buckets[bucket];

	dt_model_tp_prepare_grads_range(s->cfg.model, k->lo, k->hi);
	return bucket_sum(s, bucket, err);
}

/* With the bf16 wire the accumulator is rounded to float once, here, and
 * the float goes out as bf16. */
static enum dt_status
exact_begin(struct dt_grad_sync *s, int bucket, struct dt_error *err)
{
	const struct dt_grad_bucket *k = &s->buckets[bucket];
	float *g = dt_model_grads(s->cfg.model);	/* (n) */

	dt_sync_exact_add(s, bucket);
	if (s->wire == DT_GRAD_WIRE_BF16)
		dt_kern_par_f64_round(pool_of(s), s->acc + k->lo, g + k->lo,
				      (int64_t)(k->hi - k->lo));
	return bucket_sum(s, bucket, err);
}

/* Waits for the buckets still in flight (none without overlap), one at
 * a time in the order they began (the order of their sums), and puts
 * each back into the float gradient, with its tensors' squared norms, as
 * soon as its own sum is done: that work then runs while the later
 * buckets are still on the wire, and only the last bucket's follows the
 * wait. Bucket begun k-th is sum k of sum_comm (one sum a bucket, begun
 * in order); where a test found every sum done, wait_first(k) returns at
 * once (comm/comm.h). A per-host sum is done when it starts, and its
 * wait is a no-op. */
static enum dt_status
settle(struct dt_grad_sync *s, struct dt_error *err)
{
	enum dt_status st = DT_OK;
	int k = 0;

	for (int b = 0; b < s->n_buckets; b++) {
		if (!s->pending[b])
			continue;
		s->pending[b] = 0;
		if (st != DT_OK)
			continue;
		st = dt_comm_coll_wait_first(s->cfg.sum_comm, ++k, err);
		if (st != DT_OK)
			continue;
		bucket_done(s, b);
		if (s->early_norms)
			bucket_norms(s, b);
	}
	return st;
}

static enum dt_status
whole_finish(struct dt_grad_sync *s, double step_loss,
	     struct dt_step_report *report, struct dt_error *err)
{
	enum dt_status st = settle(s, err);

	(void)step_loss;
	(void)report;
	if (st == DT_OK)
		st = dt_tie_sum_run(s->tie, s->sq_have, err);
	return st;
}

enum { TAG_TP_NORM = 31 };

/* The floats of the whole tensor ti: the product of its shape. */
static int64_t
whole_floats(const struct dt_tensor_info *ti)
{
	int64_t n = 1;

	for (int d = 0; d < ti->n_dims; d++)
		n *= ti->shape[d];
	return n;
}

/* Tensor rank 0's buffers for split_norms: the largest split trained
 * tensor whose blocks it gathers, whole, and the largest such block
 * (plan/sync_plan.c's tp_norm_floats counts the same). */
static void
split_norm_buffers(struct dt_grad_sync *s)
{
	struct dt_model *m = s->cfg.model;
	int size = dt_comm_size(s->cfg.tp_comm);
	int64_t whole = 0, blk = 0;

	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		struct dt_tp_block b;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset >= dt_model_n_trained(m) ||
		    !dt_model_tensor_tp_block(m, t, 0, &b) ||
		    dt_plan_tp_norm_chained(m, t, size))
			continue;
		if (whole_floats(&ti) > whole)
			whole = whole_floats(&ti);
		if (dt_plan_tp_block_max(m, t, size) > blk)
			blk = dt_plan_tp_block_max(m, t, size);
	}
	s->tp_whole = dt_xalloc_floats((size_t)whole + 1);
	s->tp_blk = dt_xalloc_floats((size_t)blk + 1);
}

/* A row block's norm (dt_plan_tp_norm_chained): its run follows the
 * previous tensor rank's in the flat order and starts at a multiple of
 * 8, so the eight lanes pass from rank to rank (64 bytes), each adding
 * its run, and the last adds them up into *norm2; tensor rank 0's slot
 * (its block's squares, from own_norms) becomes 0. */
static enum dt_status
chained_norm(struct dt_comm *c, const float *g, int64_t n, double *norm2,
	     struct dt_error *err)
{
	int me = dt_comm_rank(c), size = dt_comm_size(c);
	double lane[8] = { 0 };
	float wire[16];		/* the lanes' bytes */
	enum dt_status st = DT_OK;

	if (me > 0) {
		st = dt_comm_recv_f32(c, wire, 16, me - 1, TAG_TP_NORM, err);
		memcpy(lane, wire, sizeof lane);
	}
	if (st != DT_OK)
		return st;
	sq_lanes(g, n, lane);
	if (me == size - 1) {
		*norm2 = sq_total(lane);
		return DT_OK;
	}
	*norm2 = 0;
	memcpy(wire, lane, sizeof lane);
	return dt_comm_send_f32(c, wire, 16, me + 1, TAG_TP_NORM, err);
}

/* Any other block's norm: each tensor rank sends its block g (ti->size
 * floats) to tensor rank 0, which puts the blocks into the whole tensor
 * (dt_tp_block_put) and takes its squares into *norm2. */
static enum dt_status
gathered_norm(struct dt_grad_sync *s, int t, const struct dt_tensor_info *ti,
	      const float *g, double *norm2, struct dt_error *err)
{
	struct dt_model *m = s->cfg.model;
	struct dt_comm *c = s->cfg.tp_comm;
	int me = dt_comm_rank(c), size = dt_comm_size(c);
	enum dt_status st = DT_OK;
	struct dt_tp_block b;

	if (me != 0)
		return dt_comm_send_f32(c, g, (size_t)ti->size, 0, TAG_TP_NORM,
					err);
	if (s->tp_whole == NULL)
		split_norm_buffers(s);
	dt_model_tensor_tp_block(m, t, 0, &b);
	dt_tp_block_put(&b, g, s->tp_whole);
	for (int q = 1; q < size && st == DT_OK; q++) {
		dt_model_tensor_tp_block(m, t, q, &b);
		st = dt_comm_recv_f32(c, s->tp_blk,
				      (size_t)dt_tp_block_floats(&b), q,
				      TAG_TP_NORM, err);
		dt_tp_block_put(&b, s->tp_blk, s->tp_whole);
	}
	*norm2 = dt_sync_tensor_sq(s->tp_whole, whole_floats(ti));
	return st;
}

/* Where the tensor ranks own their slices (cfg.tp_comm), the squared
 * norms of the stage's split trained tensors into norm2[first + its
 * index], each taken as dt_sync_tensor_sq takes it over the whole tensor
 * in flat order (a block's squares alone add in another order): chained
 * through the tensor ranks for a row block, gathered on tensor rank 0
 * otherwise. One rank's bits; the report adds the slots up (zeros
 * elsewhere). Collective over the tensor group of the ranks with
 * cfg.tp_norms (data-parallel rank 0); the others do nothing. DT_ERR_MPI
 * from the exchange. */
static enum dt_status
split_norms(struct dt_grad_sync *s, double *norm2, int first,
	    struct dt_error *err)
{
	struct dt_model *m = s->cfg.model;
	struct dt_comm *c = s->cfg.tp_comm;
	enum dt_status st = DT_OK;

	if (c == NULL || !s->cfg.tp_norms)
		return DT_OK;
	for (int t = 0; t < dt_model_n_tensors(m) && st == DT_OK; t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		if (dt_sync_tp_split(s, t))
			st = dt_sync_split_norm(s, t, dt_model_grads(m) +
						ti.offset, &norm2[first + t],
						err);
	}
	return st;
}

int
dt_sync_tp_split(struct dt_grad_sync *s, int t)
{
	struct dt_model *m = s->cfg.model;
	struct dt_tensor_info ti;
	struct dt_tp_block b;

	if (s->cfg.tp_comm == NULL)
		return 0;
	dt_model_tensor_info(m, t, &ti);
	return ti.offset < dt_model_n_trained(m) && ti.tie_node == NULL &&
	       dt_model_tensor_tp_block(m, t, dt_comm_rank(s->cfg.tp_comm),
					&b);
}

enum dt_status
dt_sync_split_norm(struct dt_grad_sync *s, int t, const float *g,
		   double *norm2, struct dt_error *err)
{
	struct dt_model *m = s->cfg.model;
	struct dt_comm *c = s->cfg.tp_comm;
	struct dt_tensor_info ti;
	const uint64_t b0 = dt_comm_p2p_bytes_sent(c);
	enum dt_status st;

	dt_model_tensor_info(m, t, &ti);
	if (dt_plan_tp_norm_chained(m, t, dt_comm_size(c)))
		st = chained_norm(c, g, ti.size, norm2, err);
	else
		st = gathered_norm(s, t, &ti, g, norm2, err);
	/* counted here, so every level's norm (split_norms at zero 0/1,
	 * sync_zero.c's split_block_norms at 2/3) adds to tp_norm_bytes */
	s->norm_bytes += dt_comm_p2p_bytes_sent(c) - b0;
	return st;
}

static enum dt_status
stage_finish(struct dt_grad_sync *s, double step_loss,
	     struct dt_step_report *report, struct dt_error *err)
{
	enum dt_status st = settle(s, err);

	(void)step_loss;
	if (st == DT_OK)
		st = dt_tie_sum_run(s->tie, s->sq_have, err);
	if (st != DT_OK)
		return st;
	memset(report->tensor_norm2, 0,
	       (size_t)s->cfg.n_tensors_all * sizeof *report->tensor_norm2);
	if (s->cfg.norm_owner)
		own_norms(s, report->tensor_norm2, s->cfg.first_tensor);
	return split_norms(s, report->tensor_norm2, s->cfg.first_tensor,
			   err);
}

static double
whole_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	(void)report;
	return dt_sync_local_norm2(s);
}

void
dt_sync_optim_apply(struct dt_grad_sync *s, float lr)
{
	size_t lo = s->own_lo;

	dt_optim_step(s->optim, dt_model_params(s->cfg.model) + lo,
		      dt_model_grads(s->cfg.model) + lo, lr);
}

/* What every collective implementation sets up after its own: the
 * tensors' norms taken as buckets finish, and the per-host sum
 * (collective over sum_comm). */
static enum dt_status
collective_init(struct dt_grad_sync *s, struct dt_error *err)
{
	const struct dt_grad_sync_cfg *cfg = &s->cfg;
	int split = s->plan->base == DT_SYNC_IMPL_STAGES ||
		    s->plan->base == DT_SYNC_IMPL_STAGES_EXACT;
	enum dt_status st;

	assert(dt_comm_size(cfg->sum_comm) == s->plan->sum_ranks);
	/* Who reads the norms: a rank holding the whole model (whole_norm2)
	 * or its stage's owner (stage_finish). */
	s->early_norms = s->overlap && (!split || cfg->norm_owner);
	if (s->early_norms) {
		int nt = dt_model_n_tensors(cfg->model);

		s->sq = dt_xcalloc((size_t)nt + 1, sizeof *s->sq);
		s->sq_have = dt_xcalloc((size_t)nt + 1, 1);
	}
	st = dt_comm_hier_new(cfg->sum_comm, (enum dt_hier_mode)
			      cfg->job->parallel.hierarchical, &s->hier,
			      &s->hosts, &s->max_per_host, err);
	if (s->hier != NULL)
		s->cfg.sum_comm = s->hier;
	return st;
}

/* The exact mode's accumulator and node ranges, then the rest. */
static enum dt_status
exact_init(struct dt_grad_sync *s, struct dt_error *err)
{
	s->acc = dt_xcalloc(s->n + 1, sizeof *s->acc);	/* (n) */
	dt_sync_node_ranges(s);
	return collective_init(s, err);
}

static const struct dt_grad_sync_ops allreduce_ops = {
	"allreduce", collective_init, no_op, no_op, no_op, float_begin,
	whole_finish, whole_norm2, dt_sync_optim_apply, NULL, NULL, NULL, NULL,
	NULL, NULL, NULL, NULL, NULL, NULL,
};
static const struct dt_grad_sync_ops exact_ops = {
	"exact", exact_init, exact_step_begin, exact_backward_begin,
	exact_backward_end, exact_begin, whole_finish, whole_norm2,
	dt_sync_optim_apply, exact_breadth_begin, exact_node_done, NULL, NULL,
	NULL, NULL, NULL, NULL, NULL, NULL,
};
static const struct dt_grad_sync_ops stage_allreduce_ops = {
	"stages", collective_init, no_op, no_op, no_op, float_begin,
	stage_finish, shared_norm2, dt_sync_optim_apply, NULL, NULL, NULL,
	NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
static const struct dt_grad_sync_ops stage_exact_ops = {
	"stages-exact", exact_init, exact_step_begin, exact_backward_begin,
	exact_backward_end, exact_begin, stage_finish, shared_norm2,
	dt_sync_optim_apply, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	NULL, NULL,
};

/* The implementations, by the plan's choice (plan/sync_plan.h). */
static const struct dt_grad_sync_ops *const impls[] = {
	[DT_SYNC_IMPL_ALLREDUCE] = &allreduce_ops,
	[DT_SYNC_IMPL_EXACT] = &exact_ops,
	[DT_SYNC_IMPL_STAGES] = &stage_allreduce_ops,
	[DT_SYNC_IMPL_STAGES_EXACT] = &stage_exact_ops,
	[DT_SYNC_IMPL_SERVERS] = &dt_sync_ps_ops,
	[DT_SYNC_IMPL_ZERO] = &dt_sync_zero_ops,
};

const struct dt_grad_sync_ops *
dt_sync_impl_ops(enum dt_sync_impl impl)
{
	return impls[impl];
}

/* The buckets, the overlap and the wire of s, as the plan decided them:
 * buckets of its bucket_bytes (cut at whole tensors) with overlap, else
 * the one bucket of the whole gradient. */
static void
setup_buckets(struct dt_grad_sync *s)
{
	size_t cap = (size_t)(s->plan->bucket_bytes / (int64_t)sizeof(float));
	int nt = dt_model_n_tensors(s->cfg.model);

	s->overlap = s->plan->overlap;
	s->wire = s->plan->wire;
	s->buckets = dt_xcalloc((size_t)nt + 1, sizeof *s->buckets);
	s->n_buckets = dt_grad_buckets_make(s->cfg.model, cap > 0 ? cap : 1,
					    s->buckets);
	if (!s->overlap || s->n_buckets == 0) {
		/* The whole arena as one bucket, also for the parameter
		 * servers and a stage that trains nothing. */
		s->n_buckets = 1;
		s->buckets[0].lo = 0;
		s->buckets[0].hi = s->n;
		s->buckets[0].ready_node = 0;
		s->buckets[0].t_lo = 0;
		s->buckets[0].t_hi = nt;
	}
	s->added = dt_xcalloc((size_t)s->n_buckets, 1);
	s->pending = dt_xcalloc((size_t)s->n_buckets, 1);
	if (s->wire == DT_GRAD_WIRE_BF16)
		s->wire16 = dt_xcalloc(s->n + 1, sizeof *s->wire16);
}

/* The optimizer over the plan's span [own_lo, own_hi) of the trained
 * floats (dt_plan_sync_own of the rank's place among the summing ranks), with train.decay's spans in the arena's coordinates (the
 * span's first float is the optimizer's element 0). */
static void
setup_optim(struct dt_grad_sync *s)
{
	const struct dt_job *job = s->cfg.job;
	size_t lo = s->own_lo, hi = s->own_hi;

	assert(lo <= hi && hi <= s->n);
	s->optim = dt_optim_new(job, hi - lo);
	if (dt_decay_restricted(job)) {
		size_t n_spans;
		struct dt_optim_span *spans =
			dt_decay_spans(s->cfg.model, job->train.decay, &n_spans);

		dt_optim_set_decay(s->optim, spans, n_spans, lo);
		free(spans);
	}
	dt_optim_set_pool(s->optim, s->cfg.pool);
}

enum dt_status
dt_grad_sync_new(const struct dt_grad_sync_cfg *cfg,
		 struct dt_grad_sync **out, struct dt_error *err)
{
	struct dt_grad_sync *s = dt_xcalloc(1, sizeof *s);
	int64_t lo, hi;

	s->cfg = *cfg;
	s->plan = &cfg->plan->sync[cfg->stage];
	s->n = dt_model_n_trained(cfg->model);
	/* The plan counts the largest tensor rank's blocks; where the
	 * vocabulary's shares differ by a row (dt_tp_vocab_share) this rank
	 * may hold fewer floats. Its summing ranks are of the same tensor
	 * rank, so they cut this count alike (dt_plan_sync_own's cut, of
	 * the plan's count, where the two agree). */
	assert((int64_t)s->n <= s->plan->trained);
	s->workers = cfg->world;
	{
		size_t a, b;

		dt_comm_part(s->n, s->plan->shards,
			     dt_comm_rank(cfg->sum_comm), &a, &b);
		lo = (int64_t)a;
		hi = (int64_t)b;
	}
	s->own_lo = (size_t)lo;
	s->own_hi = (size_t)hi;
	*out = s;
	setup_buckets(s);
	setup_optim(s);
	s->ops = s->plan->zero >= 3 ? &dt_sync_zero3_ops :
		 impls[s->plan->impl];
	if (s->ops == &dt_sync_ps_ops && dt_model_n_ties(cfg->model) > 0)
		return dt_errorf(err, DT_ERR_JOB, "%s: parallel.sync: "
				 "parameter_server cannot keep tied weights "
				 "(a dense layer's tie:) equal; use allreduce",
				 cfg->job->path);
	s->tie = dt_tie_sum_new(cfg->model, cfg->pipe_comm);
	return s->ops->init(s, err);
}

void
dt_grad_sync_free(struct dt_grad_sync *s)
{
	if (s == NULL)
		return;
	if (s->role != NULL && s->role->fini != NULL)
		s->role->fini(s);
	dt_ps_free(s->ps);
	dt_optim_free(s->optim);
	dt_comm_free(s->hier);
	free(s->acc);
	free(s->buckets);
	free(s->added);
	free(s->pending);
	free(s->wire16);
	free(s->node_lo);
	free(s->node_hi);
	free(s->sq);
	free(s->sq_have);
	dt_tie_sum_free(s->tie);
	free(s->tp_whole);
	free(s->tp_blk);
	free(s);
}

int
dt_grad_sync_n_norms(const struct dt_grad_sync *s)
{
	return s->ops->finish == stage_finish || s->report_norms ?
	       s->cfg.n_tensors_all : 0;
}

int
dt_grad_sync_lazy(const struct dt_grad_sync *s)
{
	return s->lazy;
}

struct dt_comm *
dt_grad_sync_workers(const struct dt_grad_sync *s)
{
	return s->workers;
}

int
dt_grad_sync_trains(const struct dt_grad_sync *s)
{
	return !s->serves;
}

void
dt_grad_sync_state(struct dt_grad_sync *s, struct dt_grad_sync_state *out)
{
	if (s->role != NULL && s->role->state != NULL) {
		s->role->state(s, out);
		return;
	}
	out->bufs = dt_optim_state(s->optim, &out->n_bufs);
	out->lo = s->own_lo;
	out->hi = s->own_hi;
	out->steps = dt_optim_steps(s->optim);
}

void
dt_grad_sync_state_own(struct dt_grad_sync *s, struct dt_grad_sync_state *out)
{
	assert(!dt_grad_sync_state_remote(s));
	out->bufs = dt_optim_state(s->optim, &out->n_bufs);
	out->lo = s->own_lo;
	out->hi = s->own_hi;
	out->steps = dt_optim_steps(s->optim);
}

enum dt_status
dt_grad_sync_state_collect(struct dt_grad_sync *s, struct dt_error *err)
{
	return s->role != NULL ? s->role->collect(s, err) : DT_OK;
}

void
dt_grad_sync_state_loaded(struct dt_grad_sync *s, int64_t steps)
{
	dt_optim_set_steps(s->optim, steps);
	s->resumed = 1;
	if (s->role != NULL && s->role->loaded != NULL)
		s->role->loaded(s);
}

int
dt_grad_sync_state_remote(const struct dt_grad_sync *s)
{
	return s->state_remote;
}

enum dt_status
dt_grad_sync_start(struct dt_grad_sync *s, struct dt_error *err)
{
	return s->role != NULL ? s->role->start(s, err) : DT_OK;
}

enum dt_status
dt_grad_sync_release(struct dt_grad_sync *s, struct dt_error *err)
{
	return s->role != NULL ? s->role->release(s, err) : DT_OK;
}

enum dt_status
dt_grad_sync_serve(struct dt_grad_sync *s, struct dt_error *err)
{
	if (!s->serves)
		return DT_OK;
	return s->role->serve(s, err);
}

int
dt_grad_sync_has_norm(const struct dt_grad_sync *s)
{
	return !s->no_norm;
}

void
dt_grad_sync_log(struct dt_grad_sync *s, struct json_object *line)
{
	if (s->role != NULL)
		s->role->log(s, line);
}

void
dt_grad_sync_summary(struct dt_grad_sync *s, struct json_object *summary)
{
	if (s->role != NULL)
		s->role->summary(s, summary);
}

int
dt_grad_sync_hier(const struct dt_grad_sync *s, int *hosts, int *max_per_host)
{
	*hosts = s->hosts > 0 ? s->hosts : 1;
	*max_per_host = s->max_per_host > 0 ? s->max_per_host : 1;
	return s->hier != NULL;
}

uint64_t
dt_grad_sync_bytes(const struct dt_grad_sync *s)
{
	return s->bytes;
}

uint64_t
dt_grad_sync_norm_bytes(const struct dt_grad_sync *s)
{
	return s->norm_bytes;
}

uint64_t
dt_grad_sync_block_bytes(const struct dt_grad_sync *s)
{
	return s->block_bytes;
}

void
dt_grad_sync_step_begin(struct dt_grad_sync *s)
{
	if (s->ops->zero_grads != NULL)
		s->ops->zero_grads(s);
	else
		dt_model_zero_grads(s->cfg.model);
	if (s->sq_have != NULL)
		memset(s->sq_have, 0,
		       (size_t)dt_model_n_tensors(s->cfg.model));
	s->ops->step_begin(s);
}

void
dt_grad_sync_backward_begin(struct dt_grad_sync *s)
{
	s->ops->backward_begin(s);
}

void
dt_grad_sync_backward_end(struct dt_grad_sync *s)
{
	s->ops->backward_end(s);
}

void
dt_grad_sync_breadth_begin(struct dt_grad_sync *s)
{
	if (s->ops->breadth_begin != NULL)
		s->ops->breadth_begin(s);
}

void
dt_grad_sync_node_done(struct dt_grad_sync *s, int node)
{
	if (s->ops->node_done != NULL)
		s->ops->node_done(s, node);
}

void
dt_grad_sync_node_backward_end(struct dt_grad_sync *s, int node)
{
	if (s->ops->node_backward_end != NULL)
		s->ops->node_backward_end(s, node);
}

void
dt_grad_sync_clip(struct dt_grad_sync *s, float c)
{
	float *g = dt_model_grads(s->cfg.model);	/* (n) */

	for (size_t i = s->own_lo; i < s->own_hi; i++)
		g[i] *= c;
}

void
dt_grad_sync_node_forward_begin(struct dt_grad_sync *s, int node)
{
	if (s->ops->node_forward_begin != NULL)
		s->ops->node_forward_begin(s, node);
}

void
dt_grad_sync_node_backward_begin(struct dt_grad_sync *s, int node)
{
	if (s->ops->node_backward_begin != NULL)
		s->ops->node_backward_begin(s, node);
}

enum dt_status
dt_grad_sync_params_whole(struct dt_grad_sync *s, struct dt_error *err)
{
	if (s->ops->params_whole == NULL)
		return DT_OK;
	return s->ops->params_whole(s, err);
}

int
dt_grad_sync_params_parted(const struct dt_grad_sync *s)
{
	return s->ops->params_span != NULL;
}

enum dt_status
dt_grad_sync_params_span(struct dt_grad_sync *s, size_t lo, size_t hi,
			 struct dt_error *err)
{
	if (s->ops->params_span == NULL)
		return DT_OK;
	return s->ops->params_span(s, lo, hi, err);
}

void
dt_grad_sync_params_span_release(struct dt_grad_sync *s, size_t lo,
				 size_t hi)
{
	if (s->ops->params_span_release != NULL)
		s->ops->params_span_release(s, lo, hi);
}

void
dt_grad_sync_forward_idle(struct dt_grad_sync *s)
{
	if (s->ops->forward_idle != NULL)
		s->ops->forward_idle(s);
}

enum dt_status
dt_grad_sync_begin(struct dt_grad_sync *s, int bucket, struct dt_error *err)
{
	double t = dt_now();
	enum dt_status st = s->ops->begin(s, bucket, err);

	s->begin_s += dt_now() - t;
	return st;
}

double
dt_grad_sync_take_begin(struct dt_grad_sync *s)
{
	double t = s->begin_s;

	s->begin_s = 0;
	return t;
}

int
dt_grad_sync_n_buckets(const struct dt_grad_sync *s)
{
	return s->n_buckets;
}

int
dt_grad_sync_overlap(const struct dt_grad_sync *s)
{
	return s->overlap;
}

int64_t
dt_grad_sync_progress_us(const struct dt_grad_sync *s)
{
	return s->overlap ? s->cfg.sum_comm->progress_us : 0;
}

int
dt_grad_sync_begins_early(const struct dt_grad_sync *s)
{
	return s->overlap && s->ops->node_backward_end == NULL;
}

int
dt_grad_sync_bucket_node(const struct dt_grad_sync *s, int b)
{
	return s->buckets[b].ready_node;
}

enum dt_status
dt_grad_sync_progress(struct dt_grad_sync *s, struct dt_error *err)
{
	if (!s->overlap)
		return DT_OK;
	s->tests_nodes++;
	return dt_comm_coll_test(s->cfg.sum_comm, NULL, err);
}

enum dt_status
dt_grad_sync_progress_in_product(struct dt_grad_sync *s,
				 struct dt_error *err)
{
	if (!s->overlap)
		return DT_OK;
	s->tests_products++;
	return dt_comm_coll_test(s->cfg.sum_comm, NULL, err);
}

void
dt_grad_sync_progress_count(const struct dt_grad_sync *s,
			    int64_t *between_nodes, int64_t *in_products)
{
	*between_nodes = s->tests_nodes;
	*in_products = s->tests_products;
}

enum dt_status
dt_grad_sync_finish(struct dt_grad_sync *s, double step_loss,
		    struct dt_step_report *report, struct dt_error *err)
{
	return s->ops->finish(s, step_loss, report, err);
}

double
dt_grad_sync_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	return s->ops->norm2(s, report);
}

void
dt_grad_sync_apply(struct dt_grad_sync *s, float lr)
{
	s->ops->apply(s, lr);
}
