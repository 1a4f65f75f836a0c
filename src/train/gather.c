/* SPDX-License-Identifier: MIT */
/* gather.c - the whole model on one rank, for checkpoints of a model
 * cut into stages (gather.h): rank 0 collects every stage's parameters,
 * buffers and optimizer state (the gradient sync's, dt_grad_sync_state)
 * at their one-rank offsets, and a restore hands each rank its stage's
 * part of the whole. */
#include "train/gather.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	int req;
	enum dt_status st;

	if (n == 0)
		return DT_OK;
	if (r->rank == 0)
		return dt_comm_recv_f32(r->comm, whole, n, src, TAG_GATHER,
					err);
	st = dt_comm_isend_f32(r->comm, local, n, 0, TAG_GATHER, &req, err);
	if (st == DT_OK)
		st = dt_comm_wait(r->comm, req, err);
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
	if (r->rank == 0) {
		st = dt_full_alloc(r, f, err);
		if (st == DT_OK)
			copy_stage(r, f, &r->plan.stages[0], 1);
	}
	for (int s = 1; s < r->plan.pp_size && st == DT_OK; s++) {
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
	copy_stage(r, f, &r->layout.stage, 0);
}
