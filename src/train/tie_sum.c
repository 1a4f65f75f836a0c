/* SPDX-License-Identifier: MIT */
/* tie_sum.c - the gradient sum of tied weights (tie_sum.h).
 *
 * A tied copy (graph/tied.c) and its embedding's table get their
 * gradients from two different layers; the model's one tensor has their
 * sum. The sync runs this after the step's sum over the data- and
 * tensor-parallel ranks, so both tensors hold the whole sum before the
 * norm, clipping and the optimizer, which then update both alike. When a
 * pipeline puts the embedding on its first stage and the head on its
 * last, the stages' pipeline communicator adds the two (Megatron-LM's
 * embedding group does the same between its first and last stage). */
#include "train/tie_sum.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

struct dt_tie_sum {
	struct dt_model *m;
	struct dt_comm *pipe;	/* NULL: one stage */
	float *buf;		/* (largest tie) the sum in transit */
};

struct dt_tie_sum *
dt_tie_sum_new(struct dt_model *m, struct dt_comm *pipe)
{
	struct dt_tie_sum *t;
	int64_t most = 0;

	if (dt_model_n_ties(m) == 0)
		return NULL;
	t = dt_xcalloc(1, sizeof *t);
	t->m = m;
	t->pipe = pipe != NULL && dt_comm_size(pipe) > 1 ? pipe : NULL;
	for (int k = 0; k < dt_model_n_ties(m); k++) {
		struct dt_tie_info ti;

		dt_model_tie_info(m, k, &ti);
		if (ti.size > most)
			most = ti.size;
	}
	t->buf = dt_xalloc_floats((size_t)most + 1);
	return t;
}

void
dt_tie_sum_free(struct dt_tie_sum *t)
{
	if (t == NULL)
		return;
	free(t->buf);
	free(t);
}

/* buf(n) = g_table + g_copy over what the rank holds, -0 for a missing
 * term (x + -0 is x for every x, -0 included). */
static void
local_sum(float *restrict buf, const float *restrict src,
	  const float *restrict copy, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		buf[i] = (src != NULL ? src[i] : -0.0f) +
			 (copy != NULL ? copy[i] : -0.0f);
}

enum dt_status
dt_tie_sum_run(struct dt_tie_sum *t, unsigned char *sq_have,
	       struct dt_error *err)
{
	if (t == NULL)
		return DT_OK;
	float *g = dt_model_grads(t->m);	/* (n_params) */

	for (int k = 0; k < dt_model_n_ties(t->m); k++) {
		struct dt_tie_info ti;
		float *src, *copy;	/* (vocab, dim) each, or NULL */
		enum dt_status st;

		dt_model_tie_info(t->m, k, &ti);
		src = ti.src_tensor >= 0 ? g + ti.src_offset : NULL;
		copy = ti.copy_tensor >= 0 ? g + ti.copy_offset : NULL;
		local_sum(t->buf, src, copy, ti.size);
		if (t->pipe != NULL) {
			st = dt_comm_allreduce_sum_f32(t->pipe, t->buf,
						       (size_t)ti.size, err);
			if (st != DT_OK)
				return st;
		}
		size_t bytes = (size_t)ti.size * sizeof(float);

		if (src != NULL)
			memcpy(src, t->buf, bytes);
		if (copy != NULL)
			memcpy(copy, t->buf, bytes);
		if (sq_have != NULL && ti.src_tensor >= 0)
			sq_have[ti.src_tensor] = 0;
		if (sq_have != NULL && ti.copy_tensor >= 0)
			sq_have[ti.copy_tensor] = 0;
	}
	return DT_OK;
}

/* The arena index of float i of the tensor at offset off (tensor -1:
 * not on this rank's model) where it lies in [lo, hi), the floats the
 * rank owns; else NOT_OWN. */
#define NOT_OWN SIZE_MAX
static size_t
own_at(int tensor, size_t off, int64_t i, size_t lo, size_t hi)
{
	size_t a = off + (size_t)i;

	return tensor >= 0 && a >= lo && a < hi ? a : NOT_OWN;
}

/* buf(ti's size) = the rank's own floats of ti's table and copy in g
 * summed, -0 for each one it does not own or hold. */
static void
own_sum(float *restrict buf, const float *g, const struct dt_tie_info *ti,
	size_t lo, size_t hi)
{
	for (int64_t i = 0; i < ti->size; i++) {
		size_t a = own_at(ti->src_tensor, ti->src_offset, i, lo, hi);
		size_t b = own_at(ti->copy_tensor, ti->copy_offset, i, lo, hi);

		buf[i] = (a != NOT_OWN ? g[a] : -0.0f) +
			 (b != NOT_OWN ? g[b] : -0.0f);
	}
}

/* The rank's own floats of ti's table and copy in g become buf's. */
static void
own_store(float *g, const float *restrict buf, const struct dt_tie_info *ti,
	  size_t lo, size_t hi)
{
	for (int64_t i = 0; i < ti->size; i++) {
		size_t a = own_at(ti->src_tensor, ti->src_offset, i, lo, hi);
		size_t b = own_at(ti->copy_tensor, ti->copy_offset, i, lo, hi);

		if (a != NOT_OWN)
			g[a] = buf[i];
		if (b != NOT_OWN)
			g[b] = buf[i];
	}
}

enum dt_status
dt_tie_sum_run_parted(struct dt_tie_sum *t, struct dt_comm *sum,
		      size_t own_lo, size_t own_hi, struct dt_error *err)
{
	if (t == NULL)
		return DT_OK;
	float *g = dt_model_grads(t->m);	/* (n_params) */

	for (int k = 0; k < dt_model_n_ties(t->m); k++) {
		struct dt_tie_info ti;
		enum dt_status st = DT_OK;

		dt_model_tie_info(t->m, k, &ti);
		own_sum(t->buf, g, &ti, own_lo, own_hi);
		if (dt_comm_size(sum) > 1)
			st = dt_comm_allreduce_sum_f32(sum, t->buf,
						       (size_t)ti.size, err);
		if (st == DT_OK && t->pipe != NULL)
			st = dt_comm_allreduce_sum_f32(t->pipe, t->buf,
						       (size_t)ti.size, err);
		if (st != DT_OK)
			return st;
		own_store(g, t->buf, &ti, own_lo, own_hi);
	}
	return DT_OK;
}
