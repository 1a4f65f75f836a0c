/* SPDX-License-Identifier: MIT */
/* dropout.c - inverted dropout (Srivastava et al., "Dropout: A Simple Way
 * to Prevent Neural Networks from Overfitting", JMLR 2014).
 *
 * Training: each value is kept with probability 1 - rate and scaled by
 * 1/(1 - rate), or zeroed, so eval needs no rescaling; eval is the
 * identity. The masks come from the counter-based generator (util/rng.h),
 * never from hidden state: value j of global sample i, in a layer of N
 * values per sample, is element e = i*N + j, and its 32 random bits are
 * half of dt_rng_u64(layer key, DT_RNG_DROPOUT, step, e/2) (the low half
 * for even e), where the layer key is dt_rng_u64(seed, DT_RNG_DROPOUT,
 * UINT64_MAX, job layer index) keeps two dropout layers apart. The step
 * and i come from dt_model_set_position, so a sample gets the same mask
 * on any number of ranks and in any micro-batch. The mask (0 or
 * 1/(1-rate) per value) stays in the node's scratch for backward.
 * The values are split over the pass's thread pool in blocks (kern.h):
 * each value's draw depends on its global index alone, so the pool size
 * never changes the mask. Under sequence parallelism (struct dt_node's
 * seq_rows) the node holds its tensor rank's rows of the micro-batch
 * only, whose first value is element e of the whole as above, so each
 * value gets the mask it gets on one rank.
 * FLOPs: 1 per value (the multiply). */
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"
#include "util/threadpool.h"
#include "util/rng.h"

/* Draws made at a time, on the stack. */
#define DROPOUT_RUN 256

static enum dt_status
dropout_infer(struct dt_node *n, const struct dt_job *job,
	      struct dt_error *err)
{
	if (!(n->spec.rate >= 0.0 && n->spec.rate < 1.0))
		return dt_node_errorf(n, job, err,
				      "rate must be in [0, 1), found %g",
				      n->spec.rate);
	n->out_shape = n->in_shape[0];
	return DT_OK;
}

/* mask[2w], mask[2w + 1] from the low and high halves of bits[w], for w
 * in [0, nw): keep where the 32 bits are >= cut, else 0. No branch on
 * the bits (a fifth of them would be mispredicted). */
static void
fill_mask(const uint64_t *restrict bits, float *restrict mask, int64_t nw,
	  uint64_t cut, float keep)
{
	for (int64_t w = 0; w < nw; w++) {
		mask[2 * w] = keep * (float)((bits[w] & 0xffffffffu) >= cut);
		mask[2 * w + 1] = keep * (float)((bits[w] >> 32) >= cut);
	}
}

/* The mask of a micro-batch's values [lo, hi), the first of which is
 * global element e0 (dropout_forward's e0 + lo), into mask (hi - lo). */
struct mask_job {
	uint64_t key, step, cut, e0;
	float keep;
	const float *x;		/* (B, N) */
	float *y, *mask;	/* (B, N) */
	int64_t len;
};

static void
mask_range(const struct mask_job *j, int64_t lo, int64_t hi)
{
	const uint64_t key = j->key, cut = j->cut;
	const uint64_t e0 = j->e0 + (uint64_t)lo;
	const float keep = j->keep;
	const int64_t len = hi - lo;
	float *mask = j->mask + lo;
	uint64_t bits[DROPOUT_RUN];	/* the draws of a run of words */
	int64_t i = 0;

	/* An odd first element is the high half of its word. */
	if (len > 0 && (e0 & 1)) {
		uint64_t b = dt_rng_u64(key, DT_RNG_DROPOUT, j->step, e0 >> 1);

		mask[0] = keep * (float)((b >> 32) >= cut);
		i = 1;
	}
	/* Then whole words, low half first, DROPOUT_RUN at a time; a last
	 * lone element takes the low half of its word. */
	while (i < len) {
		const uint64_t w0 = (e0 + (uint64_t)i) >> 1;
		int64_t nw = (len - i + 1) / 2;

		if (nw > DROPOUT_RUN)
			nw = DROPOUT_RUN;
		dt_rng_u64_run(key, DT_RNG_DROPOUT, j->step, w0, nw, bits);
		if (i + 2 * nw > len) {
			/* the lone last element: its word is bits[nw - 1] */
			mask[len - 1] = keep * (float)((bits[nw - 1] &
							 0xffffffffu) >= cut);
			fill_mask(bits, mask + i, nw - 1, cut, keep);
			break;
		}
		fill_mask(bits, mask + i, nw, cut, keep);
		i += 2 * nw;
	}
}

/* Blocks [lo, hi) of DT_KERN_BLOCK values: their mask, then y. */
static void
mask_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct mask_job *j = ctx;
	int64_t a = lo * DT_KERN_BLOCK;
	int64_t b = hi * DT_KERN_BLOCK < j->len ? hi * DT_KERN_BLOCK : j->len;

	mask_range(j, a, b);
	dt_kern_mul(j->x + a, j->mask + a, j->y + a, b - a, 0);
}

/* The values node n computes in pass p (dt_node_rows' rows of the
 * row length), and in *e0 the global element of the first. */
static int64_t
dropout_len(const struct dt_node *n, const struct dt_pass *p, uint64_t *e0)
{
	int64_t first, rows;

	dt_node_rows(n, p, &first, &rows);
	*e0 = (uint64_t)p->first_sample * (uint64_t)n->out_size +
	      (uint64_t)(first * dt_node_row_len(n));
	return rows * dt_node_row_len(n);
}

static void
dropout_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	uint64_t e0;
	const int64_t len = dropout_len(n, p, &e0);

	if (!p->training || n->spec.rate == 0.0) {
		dt_kern_par_copy(p->pool, in[0], n->out, len);
		return;
	}
	/* Drop when the 32 bits fall below rate * 2^32. */
	struct mask_job j = {
		.key = dt_rng_u64(p->seed, DT_RNG_DROPOUT, UINT64_MAX,
				  (uint64_t)n->layer),
		.step = p->step,
		.cut = (uint64_t)(n->spec.rate * 4294967296.0),
		.keep = (float)(1.0 / (1.0 - n->spec.rate)),
		.e0 = e0,
		.x = in[0], .y = n->out, .mask = n->scratch, .len = len,
	};

	dt_pool_for(p->pool, (len + DT_KERN_BLOCK - 1) / DT_KERN_BLOCK, 2,
		    mask_part, &j);
}

static void
dropout_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
		 float *const *din, const bool *din_add)
{
	uint64_t e0;
	const int64_t len = dropout_len(n, p, &e0);
	const float *dy = n->dout;
	const float *mask = n->scratch;
	float *dx = din[0];

	(void)in;
	if (dx == NULL)
		return;
	if (n->spec.rate == 0.0) {
		if (din_add[0])
			dt_kern_par_acc(p->pool, dy, dx, len);
		else
			dt_kern_par_copy(p->pool, dy, dx, len);
		return;
	}
	dt_kern_par_mul(p->pool, dy, mask, dx, len, din_add[0]);
}

static double
dropout_fwd_flops(const struct dt_node *n)
{
	return (double)n->out_size;
}

static int64_t
dropout_scratch_floats(const struct dt_node *n)
{
	return n->out_size;
}

const struct dt_layer_ops dt_layer_dropout = {
	.kind = "dropout",
	.infer = dropout_infer,
	.forward = dropout_forward,
	.backward = dropout_backward,
	.fwd_flops = dropout_fwd_flops,
	.scratch_floats = dropout_scratch_floats,
	.row_shares = true,
};
