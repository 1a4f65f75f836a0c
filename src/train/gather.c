/* SPDX-License-Identifier: MIT */
/* gather.c - the whole model on one rank, for checkpoints of a model
 * cut into stages (gather.h): rank 0 collects every stage's parameters,
 * buffers and optimizer state (the gradient sync's, dt_grad_sync_state)
 * at their one-rank offsets, and a restore hands each rank its stage's
 * part of the whole. Where the tensor ranks own their slices
 * (plan.tp_sliced) it collects every tensor rank's blocks tensor by
 * tensor and puts each where it lies in the whole tensor
 * (dt_tp_block_put), and a restore takes each rank's blocks out of the
 * whole tensors (doc/DESIGN.md, "Tensor-parallel slices"). */
#include "train/gather.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/layer.h"
#include "util/alloc.h"

enum { TAG_GATHER = 13 };

enum dt_status
dt_full_alloc(struct dt_run *r, struct dt_full *f, struct dt_error *err)
{
	struct dt_grad_sync_state os;
	size_t n;
	enum dt_status st;

	memset(f, 0, sizeof *f);
	st = dt_model_new(r->job, 0, &f->shapes, err);
	/* the plan's split, for the blocks' places in the whole tensors */
	if (st == DT_OK && r->plan.tp_sliced)
		st = dt_plan_split_tensors(r->job, r->plan.tp_size,
					   f->shapes, err);
	if (st != DT_OK)
		return st;
	dt_grad_sync_state(r->sync, &os);
	n = dt_model_n_params(f->shapes);
	f->params = dt_xalloc_floats(n);
	f->n_bufs = os.n_bufs;
	for (int b = 0; b < os.n_bufs; b++)
		f->bufs[b] = dt_xalloc_floats(dt_model_n_trained(f->shapes));
	return DT_OK;
}

void
dt_full_free(struct dt_full *f)
{
	dt_model_free(f->shapes);
	free(f->params);
	for (int b = 0; b < f->n_bufs; b++)
		free(f->bufs[b]);
	memset(f, 0, sizeof *f);
}

/* One tensor between a rank's array and the whole one: to_full puts the
 * rank's floats (its block b when split, else n floats) into whole,
 * else takes them from there. */
static void
copy_tensor(const struct dt_tp_block *b, bool split, int64_t n,
	    float *local, float *whole, int to_full)
{
	if (split && to_full)
		dt_tp_block_put(b, local, whole);
	else if (split)
		dt_tp_block_take(b, whole, local);
	else if (to_full)
		memcpy(whole, local, (size_t)n * sizeof(float));
	else
		memcpy(local, whole, (size_t)n * sizeof(float));
}

/* copy_stage where the tensor ranks own their slices: tensor by tensor,
 * each of this rank's blocks at its place in the whole tensor. */
static void
copy_blocks(struct dt_run *r, struct dt_full *f, int to_full)
{
	struct dt_model *m = r->model;
	float *params = dt_model_params(m);	/* (n_params) */
	size_t nt = dt_model_n_trained(m);
	struct dt_grad_sync_state os;

	dt_grad_sync_state(r->sync, &os);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti, wi;
		struct dt_tp_block b = { 0 };
		bool split = dt_model_tensor_tp_block(m, t, r->layout.grid.tp,
						      &b);

		dt_model_tensor_info(m, t, &ti);
		dt_model_tensor_info(f->shapes, r->layout.first_tensor + t,
				     &wi);
		copy_tensor(&b, split, ti.size, params + ti.offset,
			    f->params + wi.offset, to_full);
		for (int k = 0; k < os.n_bufs && ti.offset < nt; k++)
			copy_tensor(&b, split, ti.size, os.bufs[k] + ti.offset,
				    f->bufs[k] + wi.offset, to_full);
	}
}

/* Copies between this rank's stage arrays and the whole ones: to_full
 * places the stage's parameters, buffers and optimizer state at their
 * one-rank ranges, else takes them from there. */
static void
copy_stage(struct dt_run *r, struct dt_full *f, const struct dt_stage_info *si,
	   int to_full)
{
	float *params = dt_model_params(r->model);	/* (n_params) */
	size_t nt = si->trained_hi - si->trained_lo;
	size_t nb = si->buffer_hi - si->buffer_lo;
	struct dt_grad_sync_state os;

	dt_grad_sync_state(r->sync, &os);
	int n_bufs = os.n_bufs;
	/* bufs: (n_bufs) (n_trained) */
	float **bufs = os.bufs;

#define COPY(local, whole, n) \
	memcpy(to_full ? (whole) : (local), to_full ? (local) : (whole), \
	       (n) * sizeof(float))
	COPY(params, f->params + si->trained_lo, nt);
	COPY(params + nt, f->params + si->buffer_lo, nb);
	for (int b = 0; b < n_bufs; b++)
		COPY(bufs[b], f->bufs[b] + si->trained_lo, nt);
#undef COPY
}

/* Stage s's part of one array, sent by src and placed by rank 0. */
static enum dt_status
move_part(struct dt_run *r, int src, float *local, float *whole, size_t n,
	  struct dt_error *err)
{
	if (n == 0)
		return DT_OK;
	if (r->rank == 0)
		return dt_comm_recv_f32(r->comm, whole, n, src, TAG_GATHER,
					err);
	return dt_comm_send_f32(r->comm, local, n, 0, TAG_GATHER, err);
}

/* Whether whole tensor wi (of f->shapes) belongs to stage si. */
static bool
in_stage(const struct dt_tensor_info *wi, const struct dt_stage_info *si)
{
	return (wi->offset >= si->trained_lo && wi->offset < si->trained_hi) ||
	       (wi->offset >= si->buffer_lo && wi->offset < si->buffer_hi);
}

/* Rank 0's side of send_blocks from world rank src, the tensor rank q of
 * stage si: each tensor's floats received into tmp (the largest tensor's
 * floats) and put at their place in f. */
static enum dt_status
recv_blocks(struct dt_run *r, struct dt_full *f, const struct dt_stage_info *si,
	    int src, int q, float *tmp, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	for (int t = 0; t < dt_model_n_tensors(f->shapes) && st == DT_OK;
	     t++) {
		struct dt_tensor_info wi;
		struct dt_tp_block b = { 0 };
		bool split;
		int64_t n;

		dt_model_tensor_info(f->shapes, t, &wi);
		if (!in_stage(&wi, si))
			continue;
		split = dt_model_tensor_tp_block(f->shapes, t, q, &b);
		n = split ? dt_tp_block_floats(&b) : wi.size;
		for (int k = -1; k < f->n_bufs && st == DT_OK; k++) {
			/* (wi.size): tensor t, of the parameters or of
			 * optimizer buffer k */
			float *whole = k < 0 ? f->params + wi.offset :
				       f->bufs[k] + wi.offset;

			if (k >= 0 && wi.offset >= si->trained_hi)
				break;	/* a buffer has no optimizer state */
			st = dt_comm_recv_f32(r->comm, tmp, (size_t)n, src,
					      TAG_GATHER, err);
			if (st == DT_OK)
				copy_tensor(&b, split, n, tmp, whole, 1);
		}
	}
	return st;
}

/* The sender's side of recv_blocks: this rank's tensors in order, each
 * its parameters' floats and then each optimizer buffer's. */
static enum dt_status
send_blocks(struct dt_run *r, struct dt_error *err)
{
	struct dt_model *m = r->model;
	float *params = dt_model_params(m);	/* (n_params) */
	size_t nt = dt_model_n_trained(m);
	struct dt_grad_sync_state os;
	enum dt_status st = DT_OK;

	dt_grad_sync_state(r->sync, &os);
	for (int t = 0; t < dt_model_n_tensors(m) && st == DT_OK; t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		for (int k = -1; k < os.n_bufs && st == DT_OK; k++) {
			if (k >= 0 && ti.offset >= nt)
				break;
			st = dt_comm_send_f32(r->comm, (k < 0 ? params :
					       os.bufs[k]) + ti.offset,
					      (size_t)ti.size, 0, TAG_GATHER,
					      err);
		}
	}
	return st;
}

/* dt_full_gather where the tensor ranks own their slices: rank 0 takes
 * every (stage, tensor rank)'s blocks from its rank of data-parallel
 * index 0, tensor by tensor. */
static enum dt_status
gather_blocks(struct dt_run *r, struct dt_full *f, struct dt_error *err)
{
	const struct dt_plan *p = &r->plan;
	enum dt_status st = DT_OK;
	float *tmp = NULL;	/* (the largest tensor + 1), rank 0's */

	if (r->rank == 0) {
		int64_t most = 0;

		st = dt_full_alloc(r, f, err);
		if (st != DT_OK)
			return st;
		copy_blocks(r, f, 1);
		for (int t = 0; t < dt_model_n_tensors(f->shapes); t++) {
			struct dt_tensor_info wi;

			dt_model_tensor_info(f->shapes, t, &wi);
			if (wi.size > most)
				most = wi.size;
		}
		tmp = dt_xalloc_floats((size_t)most + 1);
	}
	for (int s = 0; s < p->pp_size && st == DT_OK; s++)
		for (int q = 0; q < p->tp_size && st == DT_OK; q++) {
			int src = dt_plan_rank(p, 0, s, q);

			if (src == 0)
				continue;
			if (r->rank == 0)
				st = recv_blocks(r, f, &p->stages[s], src, q,
						 tmp, err);
			else if (r->rank == src)
				st = send_blocks(r, err);
		}
	free(tmp);
	return st;
}

enum dt_status
dt_full_gather(struct dt_run *r, struct dt_full *f, struct dt_error *err)
{
	float *params = dt_model_params(r->model);	/* (n_params) */
	struct dt_grad_sync_state os;
	enum dt_status st = DT_OK;

	dt_grad_sync_state(r->sync, &os);
	int n_bufs = os.n_bufs;
	/* bufs: (n_bufs) (n_trained) */
	float **bufs = os.bufs;

	memset(f, 0, sizeof *f);
	if (r->plan.tp_sliced) {
		st = gather_blocks(r, f, err);
	} else if (r->rank == 0) {
		st = dt_full_alloc(r, f, err);
		if (st == DT_OK)
			copy_stage(r, f, &r->plan.stages[0], 1);
	}
	for (int s = 1; !r->plan.tp_sliced && s < r->plan.pp_size &&
	     st == DT_OK; s++) {
		const struct dt_stage_info *si = &r->plan.stages[s];
		int src = dt_plan_rank(&r->plan, 0, s, 0);
		size_t nt = si->trained_hi - si->trained_lo;

		if (r->rank != 0 && r->rank != src)
			continue;
		st = move_part(r, src, params, f->params + (r->rank == 0 ?
			       si->trained_lo : 0), nt, err);
		if (st == DT_OK)
			st = move_part(r, src, params + nt, f->params +
				       (r->rank == 0 ? si->buffer_lo : 0),
				       si->buffer_hi - si->buffer_lo, err);
		for (int b = 0; b < n_bufs && st == DT_OK; b++)
			st = move_part(r, src, bufs[b], r->rank == 0 ?
				       f->bufs[b] + si->trained_lo : NULL, nt,
				       err);
	}
	if (st != DT_OK) {
		/* The other ranks are inside this exchange. */
		fprintf(stderr, "dtrain: rank %d: %s\n", r->rank, err->msg);
		dt_comm_abort(r->comm, dt_status_exit_code(st));
	}
	return DT_OK;
}

void
dt_full_scatter(struct dt_run *r, struct dt_full *f)
{
	if (r->plan.tp_sliced)
		copy_blocks(r, f, 0);
	else
		copy_stage(r, f, &r->layout.stage, 0);
}
