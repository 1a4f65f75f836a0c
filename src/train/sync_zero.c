/* SPDX-License-Identifier: MIT */
/* sync_zero.c - sharded data parallelism, parallel.zero (Rajbhandari et
 * al., "ZeRO: memory optimizations toward training trillion parameter
 * models", SC 2020), over the summing ranks of a stage (its data- x
 * tensor-parallel ranks, whose gradients add up and who hold the same
 * trained floats).
 *
 * The trained floats are cut into one part a rank (dt_comm_part, the
 * plan's dt_plan_sync_own): each rank's optimizer is made over its part
 * only (sync.c, setup_optim) and updates it; then the parameters are
 * all-gathered, so every rank holds the whole, updated model again.
 *   level 1  the gradient is summed as level 0 sums it (the base
 *            implementation: float or exact, whole model or stages,
 *            buckets, overlap, either wire), and only the update and
 *            the all-gather differ;
 *   level 2  the gradient's sum is a reduce-scatter: each rank gets
 *            the sum of its own part only, in one piece after the last
 *            backward (no overlap, f32 wire: the plan refuses the
 *            others); in the exact mode the double accumulator is the
 *            rank's own part only, each micro-batch's float gradient
 *            summed into the parts by their owners (part_add), a few
 *            nodes at a time as their backward ends (the plan's
 *            grad_parts: the floats summed set to 0 and their pages
 *            handed back, so the float gradient is never whole on a
 *            rank; prefaulted in one call before a node's backward or
 *            the rounding writes them again), and the part rounded
 *            into the float gradient after the last; after the update
 *            the gradient pages outside the own part are handed back
 *            (madvise, as level 3 does). The squared norm is each
 *            tensor's sum of squares taken whole
 *            (dt_sync_tensor_sq) by the rank that owns the tensor's
 *            first float; a tensor cut by a part boundary first reaches
 *            its ranks whole by a sum over the summing ranks of its parts
 *            and zeros (x + 0 is x, so exactly its floats). The squares
 *            travel in the step report (zeros elsewhere) and add up in
 *            model order: the same bits as level 0's norm. Tied
 *            weights (a dense layer's `tie:`) get the sum of the two
 *            gradients before it, on the parts (dt_tie_sum_run_parted),
 *            as level 0 does on the whole.
 * The update of each float is the same arithmetic as on one rank, and
 * the sums are the same sums (each value's sum over the ranks in the
 * exact mode is in the order its all-reduce's ring has always added it,
 * the micro-batches' sums then added in turn, which equals level 0's
 * sum of the ranks' accumulators wherever the double sums are exact, as
 * level 0's equality with one rank needs; the float reduce-scatter is
 * used on two ranks only, where a + b does not depend on the order), so
 * each level gives level 0's bits.
 *
 * Gathered checkpoints read the whole optimizer state: collect gathers
 * the parts to the first of the summing ranks (the one that writes, or
 * hands its stage to world rank 0), dt_grad_sync_state shows a whole
 * copy (made where it is asked for, freed at the next update), and a
 * restore of the gathered format fills that copy, whose own part
 * _state_loaded hands to the optimizer; a restore from shards fills the
 * own part in place (dt_grad_sync_state_own) and makes no copy. A
 * checkpoint is thus the same at every level, and resumes at any
 * other. */
#include "train/sync.h"

#include <assert.h>
#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/kern.h"
#include "train/sync_priv.h"
#include "util/alloc.h"

enum { TAG_ZERO = 29, TAG_PART = 30, TAG_BLOCK = 32 };

#define NO_STRAD SIZE_MAX

struct dt_sync_zero {
	const struct dt_grad_sync_ops *base;	/* the sums level 0 runs */
	struct dt_comm *flat;	/* the summing ranks (cfg.sum_comm as
				 * given, not the per-host one) */
	int n_bufs;		/* the optimizer's buffers */
	float **whole;		/* (n_bufs) (n) the whole optimizer state
				 * around a checkpoint, else NULL */
	size_t n_strad;		/* level 2: floats of the tensors that a
				 * part boundary cuts */
	float *strad;		/* (n_strad) those tensors, whole */
	size_t *strad_at;	/* (n_tensors) a tensor's offset in strad,
				 * or NO_STRAD */
	int part_acc;		/* level 2 in the exact mode: s->acc is the
				 * rank's own part only (part_add) */
	size_t seg;		/* part_add: the most values sent in one
				 * message (the plan's part_seg) */
	int grad_parts;		/* level 2, depth first: the float
				 * gradient is summed node by node during
				 * backward and the pages of the floats
				 * summed and not owned handed back (flush);
				 * in the exact mode into the accumulator's
				 * parts, with float sums (part_acc 0, two
				 * ranks, one micro-batch) into the own
				 * floats */
	size_t pend_lo, pend_hi;	/* grad_parts: the floats of the nodes
					 * whose backward ran, not yet summed */
	size_t flushed;		/* grad_parts: floats summed in this
				 * micro-batch */
	double *sum;		/* (seg) sum_piece's sums (exact mode) */
	float *in;		/* (seg) the floats received */
	float *blk;		/* (the largest split tensor's block) level
				 * 2 with tensor slices, data-parallel rank
				 * 0: one summed block, whole */
};

/* The end of the part (dt_comm_part over the summing ranks) that holds
 * trained float i. */
static size_t
part_end(const struct dt_grad_sync *s, size_t i)
{
	int p = dt_comm_size(s->zero->flat);

	for (int q = 0; q < p; q++) {
		size_t lo, hi;

		dt_comm_part(s->n, p, q, &lo, &hi);
		if (lo <= i && i < hi)
			return hi;
	}
	return s->n;
}

/* Level 2: which trained tensors a part boundary cuts, and their places
 * in strad. */
static void
find_cut_tensors(struct dt_grad_sync *s)
{
	struct dt_sync_zero *z = s->zero;
	struct dt_model *m = s->cfg.model;
	int nt = dt_model_n_tensors(m);

	z->strad_at = dt_xcalloc((size_t)nt + 1, sizeof *z->strad_at);
	for (int t = 0; t < nt; t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		z->strad_at[t] = NO_STRAD;
		if (ti.offset >= s->n || ti.size == 0 ||
		    ti.offset + (size_t)ti.size <= part_end(s, ti.offset))
			continue;
		z->strad_at[t] = z->n_strad;
		z->n_strad += (size_t)ti.size;
	}
	z->strad = dt_xalloc_floats(z->n_strad + 1);
}

/* Every rank's part of the parameters, after each updated its own. A
 * failure here leaves the other ranks inside the all-gather: the job
 * ends. */
static void
gather_params(struct dt_grad_sync *s)
{
	struct dt_error err;

	if (dt_comm_allgather_f32(s->zero->flat, dt_model_params(s->cfg.model),
				  s->n, &err) == DT_OK)
		return;
	fprintf(stderr, "dtrain: rank %d: %s\n", dt_comm_rank(s->cfg.world),
		err.msg);
	dt_comm_abort(s->cfg.world, dt_status_exit_code(DT_ERR_MPI));
}

static void
drop_whole(struct dt_sync_zero *z)
{
	if (z->whole == NULL)
		return;
	for (int b = 0; b < z->n_bufs; b++)
		free(z->whole[b]);
	free(z->whole);
	z->whole = NULL;
}

/* The pages of the gradient arena g (n) outside the own part, handed
 * back after the update (clipping scales every float before it; the
 * next step writes them again). */
static void
release_unowned(struct dt_grad_sync *s, float *g)
{
	if (s->plan->grads_resident)
		return;
	dt_pages_release(g, 0, s->own_lo);
	dt_pages_release(g, s->own_hi, s->n);
}

static void
zero_apply(struct dt_grad_sync *s, float lr)
{
	drop_whole(s->zero);
	dt_sync_optim_apply(s, lr);
	/* Level 3 gathers node by node instead, and hands back its pages
	 * itself (sync_zero3.c). */
	if (s->plan->zero < 3)
		gather_params(s);
	if (s->plan->zero == 2)
		release_unowned(s, dt_model_grads(s->cfg.model));
}

/* Floats [*lo, *hi) of [a, b) in summing rank q's part. */
static void
part_in(const struct dt_grad_sync *s, int q, size_t a, size_t b, size_t *lo,
	size_t *hi)
{
	dt_comm_part(s->n, dt_comm_size(s->zero->flat), q, lo, hi);
	*lo = *lo > a ? *lo : a;
	*hi = *hi < b ? *hi : b;
	if (*hi < *lo)
		*hi = *lo;
}

/* Values [i, i + k) of the own part (k <= seg): every summing rank's
 * floats of them (received, this rank's own read in place) summed in
 * double in the ring's order for the part of rank me (comm/comm.h: x_(me
 * + 1) first, x_me last), the same partial sums the exact mode's ring
 * makes, and the sum added into the accumulator. */
static enum dt_status
sum_piece(struct dt_grad_sync *s, size_t i, size_t k, struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	int p = dt_comm_size(z->flat), me = dt_comm_rank(z->flat);
	const float *g = dt_model_grads(s->cfg.model) + i;	/* (k) */
	double *t = z->sum;		/* (k) */
	double *acc = s->acc + (i - s->own_lo);	/* (k) */

	for (int j = 1; j <= p; j++) {
		int q = (me + j) % p;
		const float *x = g;	/* (k) rank q's floats */

		if (q != me) {
			enum dt_status st = dt_comm_recv_f32(z->flat, z->in, k,
							     q, TAG_PART, err);

			if (st != DT_OK)
				return st;
			x = z->in;
		}
		if (j == 1)
			for (size_t v = 0; v < k; v++)
				t[v] = x[v];
		else
			for (size_t v = 0; v < k; v++)
				t[v] += x[v];
	}
	for (size_t v = 0; v < k; v++)
		acc[v] += t[v];
	return DT_OK;
}

/* Level 2 with float sums (two summing ranks, one micro-batch): values
 * [i, i + k) of the own part (k <= seg) become the sum of the two
 * ranks' floats, the other's received: one float addition a value, as
 * the reduce-scatter after backward made it (a + b does not depend on
 * the order), so the same bits. */
static enum dt_status
float_piece(struct dt_grad_sync *s, size_t i, size_t k, struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	float *g = dt_model_grads(s->cfg.model) + i;	/* (k) */
	enum dt_status st;

	st = dt_comm_recv_f32(z->flat, z->in, k, 1 - dt_comm_rank(z->flat),
			      TAG_PART, err);
	if (st != DT_OK)
		return st;
	for (size_t v = 0; v < k; v++)
		g[v] = z->in[v] + g[v];
	return DT_OK;
}

/* Level 2 in the exact mode: the sum over the summing ranks of this
 * micro-batch's float gradient [a, b), in double, added into each
 * rank's own part of the double accumulator (s->acc, own_hi - own_lo
 * doubles). Each rank sends its floats of the others' parts to their
 * owners (pieces of at most seg values), and each owner sums its part
 * in the order the exact mode's ring sums it (sum_piece): so each
 * value's sum over the ranks is level 0's, 4 bytes a value sent where
 * the ring's partial sums take 8, and the micro-batches' sums add up in
 * the accumulator in turn: with one micro-batch a rank the very sums of
 * level 0, with more the same value wherever the double sums are exact,
 * as level 0's equality with one rank already needs. The floats are
 * read, not changed. With float sums (grad_parts without part_acc) the
 * owner's floats of [a, b) become the sum instead (float_piece). */
static enum dt_status
part_add(struct dt_grad_sync *s, size_t a, size_t b, struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	const float *g = dt_model_grads(s->cfg.model);	/* (n) */
	int p = dt_comm_size(z->flat), me = dt_comm_rank(z->flat), req;
	size_t lo, hi;
	enum dt_status st = DT_OK;

	dt_model_tp_prepare_grads_range(s->cfg.model, a, b);
	for (int q = 0; q < p && st == DT_OK; q++) {
		part_in(s, q, a, b, &lo, &hi);
		for (size_t i = lo; q != me && i < hi && st == DT_OK;
		     i += z->seg)
			st = dt_comm_isend_f32(z->flat, g + i, hi - i < z->seg ?
					       hi - i : z->seg, q, TAG_PART,
					       &req, err);
	}
	part_in(s, me, a, b, &lo, &hi);
	for (size_t i = lo; i < hi && st == DT_OK; i += z->seg)
		st = (z->part_acc ? sum_piece : float_piece)(
			s, i, hi - i < z->seg ? hi - i : z->seg, err);
	if (st == DT_OK)
		st = dt_comm_wait_all(z->flat, err);
	/* 4 bytes a float of [a, b), as the plan counts them */
	s->bytes += (b - a) * sizeof(float);
	return st;
}

/* A failed part_add where no status can be returned leaves the other
 * ranks inside a collective: the job ends. */
static void
part_add_or_abort(struct dt_grad_sync *s, size_t a, size_t b)
{
	struct dt_error err;

	if (part_add(s, a, b, &err) == DT_OK)
		return;
	fprintf(stderr, "dtrain: rank %d: parallel.zero: %s\n",
		dt_comm_rank(s->cfg.world), err.msg);
	dt_comm_abort(s->cfg.world, dt_status_exit_code(DT_ERR_MPI));
}

/* Level 2: the gradient's sum, each rank's own part of it. */
static enum dt_status
zero2_begin(struct dt_grad_sync *s, int b, struct dt_error *err)
{
	struct dt_comm *c = s->zero->flat;
	float *g = dt_model_grads(s->cfg.model);	/* (n) */
	uint64_t b0 = dt_comm_bytes_sent(c);
	enum dt_status st;

	assert(b == 0 && s->n_buckets == 1 && s->buckets[0].hi == s->n);
	if (s->zero->part_acc) {
		/* backward_end has added every micro-batch (part_add) */
		if (!s->added[0])
			part_add_or_abort(s, 0, s->n);
		s->added[0] = 1;
		/* grad_parts handed the own floats' pages back too */
		if (s->zero->grad_parts && !s->plan->grads_resident)
			dt_pages_prefault(g, s->own_lo, s->own_hi);
		dt_kern_par_f64_round(dt_model_pool(s->cfg.model), s->acc,
				      g + s->own_lo,
				      (int64_t)(s->own_hi - s->own_lo));
		return DT_OK;
	}
	/* float sums with grad_parts: summed by the last backward's end */
	if (s->zero->grad_parts && s->added[0])
		return DT_OK;
	if (s->acc != NULL) {
		dt_sync_exact_add(s, b);
		st = dt_comm_reduce_scatter_sum_f64(c, s->acc, s->n, err);
		if (st == DT_OK)
			dt_kern_par_f64_round(dt_model_pool(s->cfg.model),
					      s->acc + s->own_lo,
					      g + s->own_lo,
					      (int64_t)(s->own_hi - s->own_lo));
	} else {
		dt_model_tp_prepare_grads_range(s->cfg.model, 0, s->n);
		st = dt_comm_reduce_scatter_sum_f32(c, g, s->n, err);
	}
	s->bytes += dt_comm_bytes_sent(c) - b0;
	return st;
}

/* Level 2: the cut tensors whole on every summing rank (this rank's
 * floats of them and zeros, summed). */
static enum dt_status
gather_cut(struct dt_grad_sync *s, struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	struct dt_model *m = s->cfg.model;
	const float *g = dt_model_grads(m);	/* (n) */

	if (z->n_strad == 0)
		return DT_OK;
	memset(z->strad, 0, z->n_strad * sizeof *z->strad);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;
		size_t lo, hi;

		if (z->strad_at[t] == NO_STRAD)
			continue;
		dt_model_tensor_info(m, t, &ti);
		lo = ti.offset > s->own_lo ? ti.offset : s->own_lo;
		hi = ti.offset + (size_t)ti.size;
		hi = hi < s->own_hi ? hi : s->own_hi;
		if (lo < hi)
			memcpy(z->strad + z->strad_at[t] + (lo - ti.offset),
			       g + lo, (hi - lo) * sizeof *g);
	}
	return dt_comm_allreduce_sum_f32(z->flat, z->strad, z->n_strad, err);
}

/* Level 2 with tensor slices: split tensor t's summed block (ti->size
 * floats) whole in z->blk on data-parallel rank 0, each rank of the sum
 * sending it its own part's floats of the block (TAG_BLOCK), counted in
 * s->block_bytes. */
static enum dt_status
block_whole(struct dt_grad_sync *s, const struct dt_tensor_info *ti,
	    struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	const float *g = dt_model_grads(s->cfg.model);	/* (n) */
	int p = dt_comm_size(z->flat), me = dt_comm_rank(z->flat);
	size_t a = ti->offset, b = ti->offset + (size_t)ti->size, lo, hi;
	enum dt_status st = DT_OK;

	if (me != 0) {
		uint64_t b0 = dt_comm_p2p_bytes_sent(z->flat);

		part_in(s, me, a, b, &lo, &hi);
		if (hi <= lo)
			return DT_OK;
		st = dt_comm_send_f32(z->flat, g + lo, hi - lo, 0, TAG_BLOCK,
				      err);
		/* summary.json's zero_block_bytes */
		s->block_bytes += dt_comm_p2p_bytes_sent(z->flat) - b0;
		return st;
	}
	if (z->blk == NULL) {
		int64_t most = 0;

		for (int t = 0; t < dt_model_n_tensors(s->cfg.model); t++) {
			struct dt_tensor_info u;

			dt_model_tensor_info(s->cfg.model, t, &u);
			if (dt_sync_tp_split(s, t) && u.size > most)
				most = u.size;
		}
		z->blk = dt_xalloc_floats((size_t)most + 1);
	}
	for (int q = 0; q < p && st == DT_OK; q++) {
		part_in(s, q, a, b, &lo, &hi);
		if (hi <= lo)
			continue;
		if (q == 0)
			memcpy(z->blk + (lo - a), g + lo,
			       (hi - lo) * sizeof *g);
		else
			st = dt_comm_recv_f32(z->flat, z->blk + (lo - a),
					      hi - lo, q, TAG_BLOCK, err);
	}
	return st;
}

/* Level 2 with tensor slices: the squared norm of every split tensor
 * over the whole tensor (dt_sync_split_norm, zero 0's bits with slices),
 * its summed block first made whole on data-parallel rank 0
 * (block_whole), whose tensor group then takes the norm. */
static enum dt_status
split_block_norms(struct dt_grad_sync *s, double *norm2, struct dt_error *err)
{
	struct dt_model *m = s->cfg.model;
	enum dt_status st = DT_OK;

	for (int t = 0; t < dt_model_n_tensors(m) && st == DT_OK; t++) {
		struct dt_tensor_info ti;

		if (!dt_sync_tp_split(s, t))
			continue;
		dt_model_tensor_info(m, t, &ti);
		st = block_whole(s, &ti, err);
		if (st == DT_OK && s->cfg.tp_norms)
			st = dt_sync_split_norm(s, t, s->zero->blk,
						&norm2[s->cfg.first_tensor + t],
						err);
	}
	return st;
}

/* Level 2: tied weights' gradients summed on the parts (as level 0's
 * finish does on the whole, tie_sum.h), then the squared norms of the
 * tensors whose first float this rank owns, at their model indices in
 * the report (zeros elsewhere; a tied copy, its table again, none, as
 * at level 0). With tensor slices the replicated tensors, alike on
 * every tensor rank, count on tensor rank 0 only, and the split ones
 * over the whole tensor (split_block_norms). */
static enum dt_status
zero2_finish(struct dt_grad_sync *s, double step_loss,
	     struct dt_step_report *report, struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	struct dt_model *m = s->cfg.model;
	const float *g = dt_model_grads(m);	/* (n) */
	double *norm2 = report->tensor_norm2;	/* (n_tensors_all) */
	int tp0 = s->cfg.tp_comm == NULL || dt_comm_rank(s->cfg.tp_comm) == 0;
	enum dt_status st;

	(void)step_loss;
	st = dt_tie_sum_run_parted(s->tie, z->flat, s->own_lo, s->own_hi,
				   err);
	if (st == DT_OK)
		st = gather_cut(s, err);
	if (st != DT_OK)
		return st;
	memset(norm2, 0, (size_t)s->cfg.n_tensors_all * sizeof *norm2);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset >= s->n || ti.size == 0 ||
		    ti.tie_node != NULL || !tp0 || dt_sync_tp_split(s, t) ||
		    ti.offset < s->own_lo || ti.offset >= s->own_hi)
			continue;
		norm2[s->cfg.first_tensor + t] = dt_sync_tensor_sq(
			z->strad_at[t] != NO_STRAD ? z->strad + z->strad_at[t] :
			g + ti.offset, ti.size);
	}
	return s->cfg.tp_comm != NULL ? split_block_norms(s, norm2, err) :
	       DT_OK;
}

/* Every tensor's squares, added in model order (zeros for those of other
 * stages' ranks add nothing). */
static double
zero2_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	double total = 0;

	for (int t = 0; t < s->cfg.n_tensors_all; t++)
		total += report->tensor_norm2[t];
	return total;
}

static void
zero_step_begin(struct dt_grad_sync *s)
{
	if (s->zero->part_acc)
		dt_kern_par_f64_zero(dt_model_pool(s->cfg.model), s->acc,
				     (int64_t)(s->own_hi - s->own_lo));
	else
		s->zero->base->step_begin(s);
}

/* grad_parts: floats [lo, hi) of the gradient g set to 0, their whole
 * pages handed back (they read as zeros until backward writes them)
 * unless the plan keeps the gradient resident. */
static void
zero_floats(const struct dt_grad_sync *s, float *g, size_t lo, size_t hi)
{
	memset(g + lo, 0, (hi - lo) * sizeof *g);
	if (!s->plan->grads_resident)
		dt_pages_release(g, lo, hi);
}

/* grad_parts: floats [lo, hi) summed: all of them 0 and handed back in
 * the exact mode (the sum is in the accumulator), those outside the own
 * part with float sums (the own floats hold the sum). */
static void
drop_summed(struct dt_grad_sync *s, size_t lo, size_t hi)
{
	float *g = dt_model_grads(s->cfg.model);	/* (n) */

	if (s->zero->part_acc) {
		zero_floats(s, g, lo, hi);
		return;
	}
	if (lo < s->own_lo)
		zero_floats(s, g, lo, hi < s->own_lo ? hi : s->own_lo);
	if (hi > s->own_hi)
		zero_floats(s, g, lo > s->own_hi ? lo : s->own_hi, hi);
}

/* grad_parts: the pending nodes' floats summed into the parts, then 0
 * and handed back (drop_summed). */
static void
flush(struct dt_grad_sync *s)
{
	struct dt_sync_zero *z = s->zero;

	if (z->pend_hi <= z->pend_lo)
		return;
	part_add_or_abort(s, z->pend_lo, z->pend_hi);
	drop_summed(s, z->pend_lo, z->pend_hi);
	z->flushed += z->pend_hi - z->pend_lo;
	z->pend_lo = z->pend_hi = 0;
}

/* grad_parts: node's floats, final for this micro-batch (a node's
 * gradient is written by its own backward only, and reverse node order
 * is reverse arena order), join the pending ones, which are summed once
 * they reach seg floats; so at most seg - 1 floats and a node are
 * resident beyond the own part. */
static void
zero_node_backward_end(struct dt_grad_sync *s, int node)
{
	struct dt_sync_zero *z = s->zero;
	size_t lo, hi;

	if (!z->grad_parts)
		return;
	lo = s->node_lo[node];
	hi = s->node_hi[node];
	if (hi <= lo)
		return;
	if (z->pend_hi > z->pend_lo && hi != z->pend_lo)
		flush(s);
	if (z->pend_hi <= z->pend_lo)
		z->pend_hi = hi;
	z->pend_lo = lo;
	if (z->pend_hi - z->pend_lo >= z->seg)
		flush(s);
}

/* grad_parts: before node's backward writes its gradient floats, whose
 * pages the step's beginning or the last flush handed back, those pages
 * made resident in one call (dt_pages_prefault) instead of a fault each
 * as the backward first writes them: the same pages, resident at the
 * same time (the node's floats are the next the plan's grad_parts
 * counts), each at about half the cost on a VM (bench/README, "zero 3's
 * page faults"). */
static void
zero_node_backward_begin(struct dt_grad_sync *s, int node)
{
	if (!s->zero->grad_parts || s->plan->grads_resident || node < 0 ||
	    node >= dt_model_n_layers(s->cfg.model))
		return;
	dt_pages_prefault(dt_model_grads(s->cfg.model), s->node_lo[node],
			  s->node_hi[node]);
}

/* grad_parts: the whole arena zero by handing its pages back (the floats
 * of a page not wholly inside it set to 0), so that a step begins with
 * no gradient page resident. */
static void
zero_grads(struct dt_grad_sync *s)
{
	struct dt_model *m = s->cfg.model;
	float *g = dt_model_grads(m);	/* (n_params) */
	size_t n = dt_model_n_params(m);
	size_t per = (size_t)sysconf(_SC_PAGESIZE) / sizeof *g;
	size_t w = n / per * per;

	if (!s->zero->grad_parts || s->plan->grads_resident) {
		dt_model_zero_grads(m);
		return;
	}
	/* the arena is page-aligned (dt_xalloc_pages): [0, w) whole pages */
	if (w > 0 && dt_pages_release(g, 0, w) == 0)
		memset(g, 0, w * sizeof *g);
	memset(g + w, 0, (n - w) * sizeof *g);
}

/* grad_parts: the arena is zero already (flush), so nothing to clear. */
static void
zero_backward_begin(struct dt_grad_sync *s)
{
	if (s->zero->grad_parts) {
		memset(s->added, 0, (size_t)s->n_buckets);
		return;
	}
	s->zero->base->backward_begin(s);
}

/* Level 2 in the exact mode: each micro-batch's gradient into the
 * accumulator's parts as its backward ends, or with grad_parts its last
 * pending nodes (the breadth-first schedule adds node by node instead,
 * zero_node_done); with float sums and grad_parts, the last pending
 * nodes. */
static void
zero_backward_end(struct dt_grad_sync *s)
{
	struct dt_sync_zero *z = s->zero;

	if (!z->part_acc && !z->grad_parts) {
		z->base->backward_end(s);
		return;
	}
	if (z->grad_parts) {
		flush(s);
		/* every trained float belongs to a node the hook saw */
		if (z->flushed != s->n) {
			fprintf(stderr, "dtrain: rank %d: parallel.zero: "
				"%zu of %zu gradient floats summed\n",
				dt_comm_rank(s->cfg.world), z->flushed, s->n);
			dt_comm_abort(s->cfg.world,
				      dt_status_exit_code(DT_ERR_MPI));
		}
		z->flushed = 0;
	} else if (!s->added[0]) {
		part_add_or_abort(s, 0, s->n);
	}
	s->added[0] = 1;
}

static void
zero_breadth_begin(struct dt_grad_sync *s)
{
	if (s->zero->base->breadth_begin != NULL)
		s->zero->base->breadth_begin(s);
}

static void
zero_node_done(struct dt_grad_sync *s, int node)
{
	if (s->zero->part_acc) {
		size_t lo = s->node_lo[node], hi = s->node_hi[node];

		part_add_or_abort(s, lo, hi);
		memset(dt_model_grads(s->cfg.model) + lo, 0,
		       (hi - lo) * sizeof(float));
		return;
	}
	if (s->zero->base->node_done != NULL)
		s->zero->base->node_done(s, node);
}

static enum dt_status
zero_begin(struct dt_grad_sync *s, int bucket, struct dt_error *err)
{
	if (s->plan->zero >= 2)
		return zero2_begin(s, bucket, err);
	return s->zero->base->begin(s, bucket, err);
}

static enum dt_status
zero_finish(struct dt_grad_sync *s, double step_loss,
	    struct dt_step_report *report, struct dt_error *err)
{
	if (s->plan->zero >= 2)
		return zero2_finish(s, step_loss, report, err);
	return s->zero->base->finish(s, step_loss, report, err);
}

static double
zero_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	if (s->plan->zero >= 2)
		return zero2_norm2(s, report);
	return s->zero->base->norm2(s, report);
}

/* The whole optimizer state, this rank's part filled in from its
 * optimizer (the rest zeros until a collect or a restore fills it). */
static void
make_whole(struct dt_grad_sync *s)
{
	struct dt_sync_zero *z = s->zero;
	float **own = dt_optim_state(s->optim, &z->n_bufs); /* (n_bufs) */
	size_t len = s->own_hi - s->own_lo;

	z->whole = dt_xcalloc((size_t)z->n_bufs + 1, sizeof *z->whole);
	for (int b = 0; b < z->n_bufs; b++) {
		z->whole[b] = dt_xcalloc(s->n + 1, sizeof(float));
		if (len > 0)
			memcpy(z->whole[b] + s->own_lo, own[b],
			       len * sizeof(float));
	}
}

/* The parts of the optimizer state to the first summing rank, into its
 * whole copy. */
static enum dt_status
zero_collect(struct dt_grad_sync *s, struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	struct dt_comm *c = z->flat;
	int p = dt_comm_size(c), me = dt_comm_rank(c), n_bufs;
	float **own = dt_optim_state(s->optim, &n_bufs);	/* (n_bufs) */
	size_t len = s->own_hi - s->own_lo;
	enum dt_status st = DT_OK;

	if (me != 0) {
		for (int b = 0; b < n_bufs && len > 0 && st == DT_OK; b++) {
			st = dt_comm_send_f32(c, own[b], len, 0, TAG_ZERO,
					      err);
		}
		return st;
	}
	drop_whole(z);
	make_whole(s);
	for (int q = 1; q < p && st == DT_OK; q++) {
		size_t lo, hi;

		dt_comm_part(s->n, p, q, &lo, &hi);
		for (int b = 0; b < n_bufs && hi > lo && st == DT_OK; b++)
			st = dt_comm_recv_f32(c, z->whole[b] + lo, hi - lo, q,
					      TAG_ZERO, err);
	}
	return st;
}

int
dt_grad_sync_state_parted(const struct dt_grad_sync *s)
{
	return s->zero != NULL && !s->state_remote;
}

enum dt_status
dt_grad_sync_state_span(struct dt_grad_sync *s, int b, size_t lo, size_t hi,
			float *dst, struct dt_error *err)
{
	struct dt_comm *c = s->zero->flat;
	int p = dt_comm_size(c), me = dt_comm_rank(c), n_bufs;
	float **own = dt_optim_state(s->optim, &n_bufs);	/* (n_bufs) */
	enum dt_status st = DT_OK;

	assert(b < n_bufs && lo <= hi && hi <= s->n);
	for (int q = 0; q < p && st == DT_OK; q++) {
		size_t a, e;

		dt_comm_part(s->n, p, q, &a, &e);
		a = a > lo ? a : lo;
		e = e < hi ? e : hi;
		if (a >= e || (me != 0 && me != q))
			continue;
		if (me == 0 && q == 0)
			memcpy(dst + (a - lo), own[b] + (a - s->own_lo),
			       (e - a) * sizeof(float));
		else if (me == 0)
			st = dt_comm_recv_f32(c, dst + (a - lo), e - a, q,
					      TAG_ZERO, err);
		else {
			st = dt_comm_send_f32(c, own[b] + (a - s->own_lo),
					      e - a, 0, TAG_ZERO, err);
		}
	}
	return st;
}

static void
zero_state(struct dt_grad_sync *s, struct dt_grad_sync_state *out)
{
	struct dt_sync_zero *z = s->zero;

	if (z->whole == NULL)
		make_whole(s);
	out->n_bufs = z->n_bufs;
	out->bufs = z->whole;
	out->lo = 0;
	out->hi = s->n;
	out->steps = dt_optim_steps(s->optim);
}

/* After a restore filled the whole copy: this rank's part to its
 * optimizer. */
static void
zero_loaded(struct dt_grad_sync *s)
{
	struct dt_sync_zero *z = s->zero;
	int n_bufs;
	float **own = dt_optim_state(s->optim, &n_bufs);	/* (n_bufs) */
	size_t len = s->own_hi - s->own_lo;

	if (z->whole == NULL)
		return;
	for (int b = 0; b < n_bufs && len > 0; b++)
		memcpy(own[b], z->whole[b] + s->own_lo, len * sizeof(float));
	drop_whole(z);
}

static enum dt_status
zero_nothing(struct dt_grad_sync *s, struct dt_error *err)
{
	(void)s;
	(void)err;
	return DT_OK;
}

static void
zero_log(struct dt_grad_sync *s, struct json_object *line)
{
	(void)s;
	(void)line;
}

/* summary.json's "zero": the level, the parts and world rank 0's. */
static void
zero_summary(struct dt_grad_sync *s, struct json_object *summary)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "level", json_object_new_int(s->plan->zero));
	json_object_object_add(o, "shards",
			       json_object_new_int(s->plan->shards));
	json_object_object_add(o, "optimizer_params", json_object_new_int64(
				       (int64_t)(s->own_hi - s->own_lo)));
	json_object_object_add(summary, "zero", o);
}

static void
zero_fini(struct dt_grad_sync *s)
{
	struct dt_sync_zero *z = s->zero;

	if (z == NULL)
		return;
	drop_whole(z);
	free(z->strad);
	free(z->strad_at);
	free(z->sum);
	free(z->in);
	free(z->blk);
	free(z);
	s->zero = NULL;
}

static const struct dt_grad_sync_role zero_role = {
	zero_collect, zero_nothing, zero_nothing, zero_nothing, zero_log,
	zero_summary, zero_state, zero_loaded, zero_fini,
};

/* The base implementation's set-up (collective over cfg.sum_comm), and
 * level 2's cut tensors. */
static enum dt_status
zero_init(struct dt_grad_sync *s, struct dt_error *err)
{
	struct dt_sync_zero *z = dt_xcalloc(1, sizeof *z);
	enum dt_sync_impl base = s->plan->base;
	enum dt_status st;

	z->base = dt_sync_impl_ops(base);
	z->flat = s->cfg.sum_comm;
	s->zero = z;
	s->role = &zero_role;
	assert(dt_comm_size(z->flat) == s->plan->shards);
	s->report_norms = s->plan->zero >= 2 ||
			  base == DT_SYNC_IMPL_STAGES ||
			  base == DT_SYNC_IMPL_STAGES_EXACT;
	if (s->plan->zero >= 2) {
		assert(!s->overlap && s->n_buckets == 1);
		find_cut_tensors(s);
	}
	st = z->base->init(s, err);
	if (st == DT_OK && s->plan->acc_seg > 0) {
		/* The base made the whole accumulator (untouched, so never
		 * resident): level 2 keeps the own part only. */
		assert(s->acc != NULL);
		free(s->acc);
		s->acc = dt_xcalloc(s->own_hi - s->own_lo + 1, sizeof *s->acc);
		z->part_acc = 1;
		z->grad_parts = s->plan->grad_parts;
		/* acc_seg, the plan's sum buffers' size, whatever the
		 * schedule: part_seg is 0 without grad_parts (breadth
		 * first), and a piece of 0 floats never ends the sum */
		z->seg = (size_t)s->plan->acc_seg;
		z->sum = dt_xcalloc(z->seg + 1, sizeof *z->sum);
		z->in = dt_xcalloc(z->seg + 1, sizeof *z->in);
	} else if (st == DT_OK && s->plan->grad_parts) {
		/* float sums: one micro-batch on two ranks (plan/
		 * pipeline.c, dt_plan_exact_accum) */
		assert(s->acc == NULL && dt_comm_size(z->flat) == 2);
		z->grad_parts = 1;
		z->seg = (size_t)s->plan->part_seg;
		z->in = dt_xcalloc(z->seg + 1, sizeof *z->in);
		if (s->node_lo == NULL)
			dt_sync_node_ranges(s);
	}
	return st;
}

const struct dt_grad_sync_ops dt_sync_zero_ops = {
	"zero", zero_init, zero_step_begin, zero_backward_begin,
	zero_backward_end, zero_begin, zero_finish, zero_norm2, zero_apply,
	zero_breadth_begin, zero_node_done, NULL, zero_node_backward_begin,
	NULL, zero_node_backward_end, zero_grads, NULL, NULL, NULL,
};
