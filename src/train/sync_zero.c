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
 *            reduce-scattered into it as its backward ends (part_add),
 *            and the part rounded into the float gradient after the
 *            last; after the update the gradient pages outside the own
 *            part are handed back (madvise, as level 3 does). The
 *            squared norm is each tensor's sum of squares taken whole
 *            (dt_sync_tensor_sq) by the rank that owns the tensor's
 *            first float; a tensor cut by a part boundary first reaches
 *            its ranks whole by a sum over the summing ranks of its parts
 *            and zeros (x + 0 is x, so exactly its floats). The squares
 *            travel in the step report (zeros elsewhere) and add up in
 *            model order: the same bits as level 0's norm.
 * The update of each float is the same arithmetic as on one rank, and
 * the sums are the same sums (the exact mode's reduce-scatter is the one
 * its all-reduce has always run; the float reduce-scatter is used on two
 * ranks only, where a + b does not depend on the order), so each level
 * gives level 0's bits.
 *
 * Checkpoints read the whole optimizer state, as before: collect gathers
 * the parts to the first of the summing ranks (the one that writes, or
 * hands its stage to world rank 0), dt_grad_sync_state shows a whole
 * copy (made where it is asked for, freed at the next update), and a
 * restore fills that copy, whose own part _state_loaded hands to the
 * optimizer. A checkpoint is thus the same at every level, and resumes
 * at any other. */
#include "train/sync.h"

#include <assert.h>
#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/kern.h"
#include "train/sync_priv.h"
#include "util/alloc.h"

enum { TAG_ZERO = 29 };

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
	size_t seg;		/* part_add: the values of a part summed
				 * in one reduce-scatter */
	double *ring;		/* (P, seg) part_add's doubles, chunk
				 * (q + 1) mod P rank q's segment */
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

/* One reduce-scatter of part_add: values [off, off + k) of each rank's
 * floats of [a, b) (zeros past their end) as doubles, rank q's in chunk
 * (q + 1) mod P of z->ring, where dt_comm_part of P k values puts the
 * chunk rank q receives summed; that sum added into the own part of
 * the accumulator. */
static enum dt_status
part_add_seg(struct dt_grad_sync *s, size_t a, size_t b, size_t off,
	     size_t k, struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	const float *g = dt_model_grads(s->cfg.model);	/* (n) */
	int p = dt_comm_size(z->flat), me = dt_comm_rank(z->flat);
	double *mine = z->ring + (size_t)((me + 1) % p) * k;	/* (k) */
	size_t lo, hi;
	enum dt_status st;

	for (int q = 0; q < p; q++) {
		double *c = z->ring + (size_t)((q + 1) % p) * k;	/* (k) */

		part_in(s, q, a, b, &lo, &hi);
		for (size_t i = 0; i < k; i++)
			c[i] = lo + off + i < hi ? (double)g[lo + off + i] : 0;
	}
	st = dt_comm_reduce_scatter_sum_f64(z->flat, z->ring, (size_t)p * k,
					    err);
	if (st != DT_OK)
		return st;
	part_in(s, me, a, b, &lo, &hi);
	for (size_t i = 0; i < k && lo + off + i < hi; i++)
		s->acc[lo + off + i - s->own_lo] += mine[i];
	return DT_OK;
}

/* Level 2 in the exact mode: the sum over the summing ranks of this
 * micro-batch's float gradient [a, b), in double, added into each
 * rank's own part of the double accumulator (s->acc, own_hi - own_lo
 * doubles), by reduce-scatters of at most the plan's acc_seg values a
 * part. Each value's sum over the ranks is the ring's order of the
 * exact mode's all-reduce (comm/comm.h: x_(q+1), ..., x_q for rank q's
 * part), and the micro-batches' sums add up in the accumulator in turn:
 * with one micro-batch a rank the sums of level 0, and with more the
 * same value wherever the double sums are exact, as level 0's equality
 * with one rank already needs. The floats are read, not changed. */
static enum dt_status
part_add(struct dt_grad_sync *s, size_t a, size_t b, struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	int p = dt_comm_size(z->flat);
	size_t most = 0, lo, hi;
	enum dt_status st = DT_OK;

	dt_model_tp_prepare_grads_range(s->cfg.model, a, b);
	/* the same count on every rank: the longest part of [a, b) */
	for (int q = 0; q < p; q++) {
		part_in(s, q, a, b, &lo, &hi);
		most = hi - lo > most ? hi - lo : most;
	}
	for (size_t off = 0; off < most && st == DT_OK; off += z->seg)
		st = part_add_seg(s, a, b, off, most - off < z->seg ?
				  most - off : z->seg, err);
	/* The values handed in, padding aside: 8 bytes a float of [a, b),
	 * as the plan counts them (dt_comm_bytes_sent counts the padding
	 * too). */
	s->bytes += (b - a) * sizeof(double);
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
		dt_kern_par_f64_round(dt_model_pool(s->cfg.model), s->acc,
				      g + s->own_lo,
				      (int64_t)(s->own_hi - s->own_lo));
		return DT_OK;
	}
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

/* Level 2: the squared norms of the tensors whose first float this rank
 * owns, at their model indices in the report (zeros elsewhere). */
static enum dt_status
zero2_finish(struct dt_grad_sync *s, double step_loss,
	     struct dt_step_report *report, struct dt_error *err)
{
	struct dt_sync_zero *z = s->zero;
	struct dt_model *m = s->cfg.model;
	const float *g = dt_model_grads(m);	/* (n) */
	double *norm2 = report->tensor_norm2;	/* (n_tensors_all) */
	enum dt_status st = gather_cut(s, err);

	(void)step_loss;
	if (st != DT_OK)
		return st;
	memset(norm2, 0, (size_t)s->cfg.n_tensors_all * sizeof *norm2);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset >= s->n || ti.size == 0 ||
		    ti.offset < s->own_lo || ti.offset >= s->own_hi)
			continue;
		norm2[s->cfg.first_tensor + t] = dt_sync_tensor_sq(
			z->strad_at[t] != NO_STRAD ? z->strad + z->strad_at[t] :
			g + ti.offset, ti.size);
	}
	return DT_OK;
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

static void
zero_backward_begin(struct dt_grad_sync *s)
{
	s->zero->base->backward_begin(s);
}

/* Level 2 in the exact mode: each micro-batch's gradient into the
 * accumulator's parts as its backward ends (the breadth-first schedule
 * adds node by node instead, zero_node_done). */
static void
zero_backward_end(struct dt_grad_sync *s)
{
	if (!s->zero->part_acc) {
		s->zero->base->backward_end(s);
		return;
	}
	if (!s->added[0])
		part_add_or_abort(s, 0, s->n);
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
	int p = dt_comm_size(c), me = dt_comm_rank(c), n_bufs, req;
	float **own = dt_optim_state(s->optim, &n_bufs);	/* (n_bufs) */
	size_t len = s->own_hi - s->own_lo;
	enum dt_status st = DT_OK;

	if (me != 0) {
		for (int b = 0; b < n_bufs && len > 0 && st == DT_OK; b++) {
			st = dt_comm_isend_f32(c, own[b], len, 0, TAG_ZERO,
					       &req, err);
			if (st == DT_OK)
				st = dt_comm_wait(c, req, err);
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
	free(z->ring);
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
		z->seg = (size_t)s->plan->acc_seg;
		z->ring = dt_xcalloc((size_t)dt_comm_size(z->flat) * z->seg + 1,
				     sizeof *z->ring);
	}
	return st;
}

const struct dt_grad_sync_ops dt_sync_zero_ops = {
	"zero", zero_init, zero_step_begin, zero_backward_begin,
	zero_backward_end, zero_begin, zero_finish, zero_norm2, zero_apply,
	zero_breadth_begin, zero_node_done, NULL, NULL, NULL,
};
