/* SPDX-License-Identifier: MIT */
/* conv2d.c - 2-D convolution (cross-correlation, as in every framework)
 * over (C, H, W) samples, a (H, W) input being one channel.
 *
 * Square kernel K, stride S (default 1), zero padding P on every side,
 * `channels` = OC output maps: Hout = (H + 2P - K)/S + 1, likewise Wout.
 * Weight (OC, C, K, K) row-major, PyTorch's layout, read as a (OC, C*K*K)
 * matrix; bias (OC) unless `bias: false`. An activation comes as its own
 * node after this one (graph.h), but a relu, and a 2x2 max pooling at
 * stride 2 that alone reads it, run inside this node's passes when the
 * graph fuses them (layer.h's fused_act and fused_pool). With L =
 * Hout*Wout, for a chunk of n samples (below) side by side:
 *   im2col    col(C*K*K, n*L): row (c, kh, kw), column (b, oh, ow) holds
 *             x[b, c, oh*S - P + kh, ow*S - P + kw], 0 in the padding
 *   forward   Y(OC, n*L) = W(OC, CKK) col          one sgemm
 *             Y += bias, relu (fused), in place;
 *             one sample: Y is the output y[b] itself; with the pooling
 *             fused, Y is scratch, pooled into the pooling's output and
 *             argmax while in cache (relu's and y's own buffers are then
 *             never written: nothing else reads them)
 *   backward  T = dY (one sample, in place), or dY masked by y > 0 (relu
 *             fused), or the pooling's gradient routed to its argmax and
 *             masked by the pooled output > 0 (pooling fused); db += row
 *             sums of T; the columns made again from x;
 *             dW += T col^T                        one sgemm
 *             dcol = W^T T                         one sgemm
 *             then col2im adds dcol back into dX
 * (Chellapilla, Puri, Simard, "High Performance Convolutional Neural
 * Networks for Document Processing", 2006; Caffe's im2col). A stride-1
 * convolution that keeps the size (2P = K - 1) takes kern.h's shifted
 * copy: one run per column row instead of one per output row. The
 * chunks run on the pass's thread pool, each part of it in the scratch
 * slots of its first chunk, so that the columns stay in the core's cache
 * (bench/README, "Where a CNN step goes"); the cuts come from the shapes
 * alone and the partial sums of dW are added in a fixed order, so the
 * pool size never changes the bits, and the products run on one BLAS
 * thread each, so neither do the BLAS threads.
 * FLOPs per sample: 2*K*K*C*OC*L for the product plus OC*L for the bias.
 * Init: He-normal with fan_in C*K*K (He et al., layer.h), unless the
 * job's init names another rule (graph/init.c); bias zero. */
#include <limits.h>
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"
#include "util/threadpool.h"

struct geom {
	int64_t c, h, w;	/* input */
	int64_t k, s, pad;
	int64_t oc, oh, ow;	/* output */
	int64_t ckk, l;		/* rows of col, and its columns per sample */
	struct dt_kern_conv kc;	/* the same, for the kernels */
};

static void
geom_of(const struct dt_node *n, struct geom *g)
{
	dt_shape_chw(&n->in_shape[0], &g->c, &g->h, &g->w);
	g->k = n->spec.kernel;
	g->s = n->spec.stride > 0 ? n->spec.stride : 1;
	g->pad = n->spec.padding;
	g->oc = n->spec.channels;
	g->oh = (g->h + 2 * g->pad - g->k) / g->s + 1;
	g->ow = (g->w + 2 * g->pad - g->k) / g->s + 1;
	g->ckk = g->c * g->k * g->k;
	g->l = g->oh * g->ow;
	g->kc = (struct dt_kern_conv){
		.c = g->c, .h = g->h, .w = g->w, .k = g->k, .s = g->s,
		.pad = g->pad, .oh = g->oh, .ow = g->ow,
	};
}

/* How the passes cut the micro-batch, from the shapes alone (never from
 * the thread count, so the bits do not depend on it):
 *   chunk  the DT_CONV_CHUNK samples of one product, side by side in
 *          scratch, (OC, n*L), whether or not the relu and pooling are
 *          fused (so that a pipeline stage boundary between them, which
 *          stops the fusion, does not change the sums); with the pooling
 *          fused the product is pooled from there, otherwise copied out
 *          to the batch-first output, and the output gradient gathered
 *          in (a one-sample chunk, the last of an odd batch, is written
 *          and read in place). On the CNN job chunks of 2 samples were
 *          the fastest of 1, 2, 4 and 8 (bench/README): the weights are
 *          packed once per product, and 8 samples of columns (2.3 MB for
 *          conv2) no longer fit a core's L2. A thread runs whole chunks;
 *   group  DT_CONV_GROUP samples (whole chunks): backward adds the dW and
 *          db of a group's chunks in order into one partial sum (group 0
 *          straight into the gradients), and the partials are then added
 *          to the gradients in group order. Forward sums nothing across
 *          samples.
 * Scratch per sample: the columns (C*K*K, L), the product or masked
 * output gradient (OC, L), and a 1/DT_CONV_GROUP share of a group's
 * partial (OC*C*K*K + OC), which covers the partials of groups 1.. of
 * any batch. A part of a pass uses the slots of its first chunk only,
 * one chunk at a time, so that they stay in the core's cache (a slot per
 * chunk, 29 MB of columns for conv2, made the step 12 ms slower);
 * backward makes the columns again from the input (a ninth of their size
 * for a 3x3 kernel) rather than keep them from forward. */
#define DT_CONV_CHUNK 2
#define DT_CONV_GROUP 8
_Static_assert(DT_CONV_GROUP % DT_CONV_CHUNK == 0,
	       "a group is whole chunks");

/* a * b * c, or INT64_MAX when it overflows. */
static int64_t
mul3(int64_t a, int64_t b, int64_t c)
{
	int64_t r;

	if (__builtin_mul_overflow(a, b, &r) ||
	    __builtin_mul_overflow(r, c, &r))
		return INT64_MAX;
	return r;
}

static enum dt_status
conv2d_infer(struct dt_node *n, const struct dt_job *job,
	     struct dt_error *err)
{
	const struct dt_layer_spec *sp = &n->spec;
	int64_t c, h, w;
	struct geom g;
	char buf[96];

	if (!dt_shape_chw(&n->in_shape[0], &c, &h, &w))
		return dt_node_errorf(n, job, err,
				      "conv2d reads (channels, height, width) "
				      "or (height, width); %s gives %s",
				      dt_node_input_name(n, 0),
				      dt_shape_format(&n->in_shape[0], buf,
						      sizeof buf));
	if (sp->channels < 1 || sp->channels > INT_MAX)
		return dt_node_errorf(n, job, err,
				      "channels must be in [1, %d], found %lld",
				      INT_MAX, (long long)sp->channels);
	if (sp->kernel < 1 || sp->kernel > INT_MAX)
		return dt_node_errorf(n, job, err,
				      "kernel must be >= 1, found %lld",
				      (long long)sp->kernel);
	if (sp->stride < 0 || sp->stride > INT_MAX)
		return dt_node_errorf(n, job, err,
				      "stride must be >= 1, found %lld",
				      (long long)sp->stride);
	if (sp->padding < 0 || sp->padding >= sp->kernel)
		return dt_node_errorf(n, job, err,
				      "padding must be in [0, kernel - 1] = "
				      "[0, %lld], found %lld",
				      (long long)sp->kernel - 1,
				      (long long)sp->padding);
	if (h + 2 * sp->padding < sp->kernel ||
	    w + 2 * sp->padding < sp->kernel)
		return dt_node_errorf(n, job, err,
				      "kernel %lld does not fit %s %s with "
				      "padding %lld",
				      (long long)sp->kernel,
				      dt_node_input_name(n, 0),
				      dt_shape_format(&n->in_shape[0], buf,
						      sizeof buf),
				      (long long)sp->padding);
	geom_of(n, &g);
	if (mul3(g.ckk, g.l, 1) > INT_MAX || mul3(c, g.k, g.k) > INT_MAX ||
	    mul3(g.oc, g.l, 1) > INT_MAX ||
	    mul3(g.l, DT_CONV_CHUNK, 1) > INT_MAX)
		return dt_node_errorf(n, job, err,
				      "conv2d of %s: more than 2^31 values "
				      "per sample in its columns or output "
				      "(or 2^30 output positions)",
				      dt_node_input_name(n, 0));
	n->out_shape.n_dims = 3;
	n->out_shape.dim[0] = g.oc;
	n->out_shape.dim[1] = g.oh;
	n->out_shape.dim[2] = g.ow;

	n->n_tensors = sp->bias ? 2 : 1;
	n->tensor[0] = (struct dt_param_tensor){
		.name = "weight",
		.n_dims = 4,
		.shape = { g.oc, c, g.k, g.k },
		.init = DT_INIT_HE_NORMAL,
		.fan_in = g.ckk,
		.fan_out = g.oc * g.k * g.k,
		.out_proj = true,
	};
	n->tensor[1] = (struct dt_param_tensor){
		.name = "bias",
		.n_dims = 1,
		.shape = { g.oc },
		.init = DT_INIT_ZERO,
	};
	return DT_OK;
}


/* One pass's buffers. */
struct conv_job {
	const struct geom *g;
	int64_t batch;
	int64_t part;		/* floats of one partial: OC*CKK + OC */
	bool relu;		/* the node applies its relu (fused_act) */
	const float *x;		/* (B, C, H, W) */
	const float *wt;	/* (OC, C*K*K) */
	const float *bias;	/* (OC) or NULL */
	float *y;		/* (B, OC, L) */
	const float *dy;	/* (B, OC, L) */
	float *dw;		/* (OC, C*K*K) */
	float *db;		/* (OC) or NULL */
	float *dx;		/* (B, C, H, W) or NULL */
	bool dx_add;
	/* the fused 2x2 max pooling (fused_pool), or NULL: */
	float *py;		/* (B, OC, OH/2, OW/2) */
	int32_t *parg;		/* (B, OC, OH/2, OW/2): argmax in the sample */
	const float *pdy;	/* (B, OC, OH/2, OW/2) */
	int64_t pout;		/* OC * (OH/2) * (OW/2) */
	float *col;		/* (B, C*K*K, L): a chunk's columns, (C*K*K,
				 * n*L), in the slot of its part's first
				 * sample b, at b*CKK*L */
	float *t;		/* (B, OC, L): likewise a chunk's product or
				 * output gradient, (OC, n*L), at b*OC*L */
	float *partial;		/* (groups - 1, OC*CKK + OC) */
	bool bf16;		/* train.precision: bf16 (kern.h) */
};

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* The columns of samples [b0, b0 + n) side by side, col (C*K*K, n*L). */
static void
chunk_im2col(const struct conv_job *j, int64_t b0, int64_t n, float *col)
{
	const struct geom *g = j->g;

	for (int64_t b = 0; b < n; b++)
		dt_kern_im2col(&g->kc, j->x + (b0 + b) * g->c * g->h * g->w,
			       col + b * g->l, n * g->l);
}

/* The bf16 operands of a part of a pass on one thread, in its
 * dt_kern_bf16_work area: the weights W (OC, C*K*K), a chunk's columns
 * (C*K*K, n*L) and its output gradient T (OC, n*L). */
struct conv_bf16 {
	uint16_t *w, *col, *t;
};

/* The part's area, with W rounded once for all its chunks. */
static void
bf16_init(const struct conv_job *j, struct conv_bf16 *h)
{
	const struct geom *g = j->g;
	const int64_t nl = DT_CONV_CHUNK * g->l;

	h->w = dt_kern_bf16_work((size_t)(g->oc * g->ckk + g->ckk * nl +
					  g->oc * nl));
	h->col = h->w + g->oc * g->ckk;
	h->t = h->col + g->ckk * nl;
	dt_kern_to_bf16(h->w, j->wt, g->oc, g->ckk, g->ckk);
}

/* chunk_im2col in bf16: the columns of samples [b0, b0 + n) into colh
 * (C*K*K, n*L) packed, one channel's K*K rows at a time through tmp
 * (K*K, n*L) floats, so that the float columns stay in the core's first
 * cache. The same values as chunk_im2col's columns rounded after. */
static void
chunk_im2col_bf16(const struct conv_job *j, int64_t b0, int64_t n,
		  float *tmp, uint16_t *colh)
{
	const struct geom *g = j->g;
	const int64_t kk = g->k * g->k, nl = n * g->l, plane = g->h * g->w;
	struct dt_kern_conv one = g->kc;

	one.c = 1;
	for (int64_t c = 0; c < g->c; c++) {
		for (int64_t b = 0; b < n; b++)
			dt_kern_im2col(&one, j->x + ((b0 + b) * g->c + c) *
						   plane,
				       tmp + b * g->l, nl);
		dt_kern_to_bf16(colh + c * kk * nl, tmp, kk, nl, nl);
	}
}

/* y[b0 + b] (OC, L) = the chunk's product Y (OC, n*L), sample b's
 * columns of every row. */
static void
chunk_scatter(const struct conv_job *j, int64_t b0, int64_t n,
	      const float *y)
{
	const struct geom *g = j->g;

	for (int64_t b = 0; b < n; b++)
		for (int64_t o = 0; o < g->oc; o++)
			memcpy(j->y + ((b0 + b) * g->oc + o) * g->l,
			       y + o * n * g->l + b * g->l,
			       (size_t)g->l * sizeof(float));
}

/* Forward of chunks [lo, hi): the columns, the product (OC, n*L) = W
 * col, then bias and relu in place; with the pooling fused the product
 * is the part's slot of t and is pooled from there while in cache,
 * otherwise it is copied out to the output (a one-sample product is
 * written there directly). */
static void
forward_chunks(void *ctx, int64_t lo, int64_t hi)
{
	const struct conv_job *j = ctx;
	const struct geom *g = j->g;
	float *col = j->col + lo * DT_CONV_CHUNK * g->ckk * g->l;
	float *t = j->t + lo * DT_CONV_CHUNK * g->oc * g->l;
	struct conv_bf16 h = { 0 };

	if (j->bf16)
		bf16_init(j, &h);
	for (int64_t c = lo; c < hi; c++) {
		const int64_t b0 = c * DT_CONV_CHUNK;
		const int64_t n = min64(DT_CONV_CHUNK, j->batch - b0);
		const int64_t nl = n * g->l;
		const bool direct = j->py == NULL && n == 1;
		float *y = direct ? j->y + b0 * g->oc * g->l : t;

		if (j->bf16) {
			chunk_im2col_bf16(j, b0, n, col, h.col);
			dt_kern_bf16_gemm(0, 0, g->oc, nl, g->ckk, 1.0f, h.w,
					  h.col, 0.0f, y, nl);
		} else {
			chunk_im2col(j, b0, n, col);
			dt_kern_conv_sgemm(0, 0, g->oc, nl, g->ckk, 1.0f,
					   j->wt, g->ckk, col, nl, 0.0f, y,
					   nl);
		}
		dt_kern_bias_act(y, j->bias, g->oc, nl, j->relu);
		if (direct)
			continue;
		if (j->py == NULL) {
			chunk_scatter(j, b0, n, y);
			continue;
		}
		for (int64_t b = 0; b < n; b++)
			dt_kern_maxpool2(y + b * g->l, nl,
					 j->py + (b0 + b) * j->pout,
					 j->parg + (b0 + b) * j->pout, g->oc,
					 g->oh, g->ow, 0);
	}
}

/* The output gradient of chunk [b0, b0 + n) as the products take it, T
 * (OC, n*L), with db (+)= its row sums: from the fused pooling's gradient
 * (routed to the argmax, masked by the relu) into the slot t; or dY
 * gathered into t, masked by y > 0 with the relu fused; or, for one
 * sample without a mask, dY itself. */
static const float *
chunk_grad(const struct conv_job *j, int64_t b0, int64_t n, float *t,
	   float *db, bool fresh)
{
	const struct geom *g = j->g;
	const int64_t nl = n * g->l;
	float *sums = j->db != NULL ? db : NULL;

	if (j->py != NULL) {
		for (int64_t b = 0; b < n; b++)
			dt_kern_unpool_relu(j->pdy + (b0 + b) * j->pout,
					    j->py + (b0 + b) * j->pout,
					    j->parg + (b0 + b) * j->pout,
					    t + b * g->l, nl, j->pout, g->oc,
					    g->l);
	} else if (n == 1 && !j->relu) {
		if (sums != NULL)
			dt_kern_row_sums(j->dy + b0 * g->oc * g->l, sums,
					 !fresh, g->oc, g->l);
		return j->dy + b0 * g->oc * g->l;
	} else {
		for (int64_t b = 0; b < n; b++) {
			const int64_t at = (b0 + b) * g->oc * g->l;

			dt_kern_gather_rows(j->relu ? j->y + at : NULL,
					    j->dy + at, t + b * g->l, nl,
					    g->oc, g->l);
		}
	}
	if (sums != NULL)
		dt_kern_row_sums(t, sums, !fresh, g->oc, nl);
	return t;
}

/* The backward products of chunk [b0, b0 + n) with output gradient tb
 * (OC, n*L): dW (+)= T col^T with the columns made again into col
 * (C*K*K, n*L), then, when dX is wanted, dcol = W^T T into col. */
static void
chunk_products(const struct conv_job *j, int64_t b0, int64_t n,
	       const float *tb, float *col, float *dw, bool fresh)
{
	const struct geom *g = j->g;
	const int64_t nl = n * g->l;

	chunk_im2col(j, b0, n, col);
	dt_kern_conv_sgemm(0, 1, g->oc, g->ckk, nl, 1.0f, tb, nl, col, nl,
			   fresh ? 0.0f : 1.0f, dw, g->ckk);
	if (j->dx != NULL)
		dt_kern_conv_sgemm(1, 0, g->ckk, nl, g->oc, 1.0f, j->wt,
				   g->ckk, tb, nl, 0.0f, col, nl);
}

/* The same in bf16: T rounded once for both products, the columns made
 * in bf16 (col, as float, their staging area and then dcol's place). */
static void
chunk_products_bf16(const struct conv_job *j, int64_t b0, int64_t n,
		    const float *tb, float *col, const struct conv_bf16 *h,
		    float *dw, bool fresh)
{
	const struct geom *g = j->g;
	const int64_t nl = n * g->l;

	dt_kern_to_bf16(h->t, tb, g->oc, nl, nl);
	chunk_im2col_bf16(j, b0, n, col, h->col);
	dt_kern_bf16_gemm(0, 1, g->oc, g->ckk, nl, 1.0f, h->t, h->col,
			  fresh ? 0.0f : 1.0f, dw, g->ckk);
	if (j->dx != NULL)
		dt_kern_bf16_gemm(1, 0, g->ckk, nl, g->oc, 1.0f, h->w, h->t,
				  0.0f, col, nl);
}

/* Backward of groups [lo, hi), chunk by chunk: T = the chunk's output
 * gradient, the group's db += row sums of T and dW += T col^T with the
 * chunk's columns made again (group 0 into the gradients, the others
 * into their partial); then dcol = W^T T takes the columns' place and is
 * folded into dX. */
static void
backward_groups(void *ctx, int64_t lo, int64_t hi)
{
	const struct conv_job *j = ctx;
	const struct geom *g = j->g;
	const int64_t nb = DT_CONV_CHUNK, first = lo * DT_CONV_GROUP;
	float *col = j->col + first * g->ckk * g->l;	/* (C*K*K, n*L) */
	float *t = j->t + first * g->oc * g->l;		/* (OC, n*L) */
	struct conv_bf16 h = { 0 };

	if (j->bf16)
		bf16_init(j, &h);
	for (int64_t grp = lo; grp < hi; grp++) {
		const int64_t s0 = grp * DT_CONV_GROUP;
		const int64_t s1 = min64(s0 + DT_CONV_GROUP, j->batch);
		float *dw = grp == 0 ? j->dw
				     : j->partial + (grp - 1) * j->part;
		float *db = grp == 0 ? j->db : dw + g->oc * g->ckk;

		for (int64_t b0 = s0; b0 < s1; b0 += nb) {
			const int64_t n = min64(nb, s1 - b0), nl = n * g->l;
			const bool fresh = grp > 0 && b0 == s0;
			const float *tb = chunk_grad(j, b0, n, t, db, fresh);

			if (j->bf16)
				chunk_products_bf16(j, b0, n, tb, col, &h, dw,
						    fresh);
			else
				chunk_products(j, b0, n, tb, col, dw, fresh);
			if (j->dx == NULL)
				continue;
			for (int64_t b = 0; b < n; b++)
				dt_kern_col2im(&g->kc, col + b * g->l, nl,
					       j->dx + (b0 + b) * g->c * g->h *
						       g->w,
					       j->dx_add);
		}
	}
}

/* dW and db += the partials of groups 1.. in group order, over the
 * gradient's elements [lo, hi) (of OC*CKK + OC: dW then db). */
static void
reduce_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct conv_job *j = ctx;
	const struct geom *g = j->g;
	const int64_t groups = (j->batch + DT_CONV_GROUP - 1) / DT_CONV_GROUP;
	const int64_t nw = g->oc * g->ckk;

	for (int64_t grp = 1; grp < groups; grp++) {
		const float *p = j->partial + (grp - 1) * j->part;

		if (lo < nw)
			dt_kern_acc(p + lo, j->dw + lo, min64(hi, nw) - lo);
		if (hi > nw && j->db != NULL) {
			int64_t a = lo > nw ? lo : nw;

			dt_kern_acc(p + a, j->db + (a - nw), hi - a);
		}
	}
}

/* The convolutions' products run inside the pool's threads, so OpenBLAS
 * runs them on the calling thread alone (its own threads would compete
 * for the same cores); the count goes back for the layers that follow.
 * Their bits therefore depend on neither the BLAS threads nor the pool. */
static void
conv_job_init(struct conv_job *j, const struct dt_node *n,
	      const struct geom *g, int64_t batch, const float *x)
{
	memset(j, 0, sizeof *j);
	j->g = g;
	j->batch = batch;
	j->part = g->oc * g->ckk + g->oc;
	j->relu = n->fused_act == DT_ACT_RELU;
	if (n->fused_pool != NULL) {
		j->py = n->fused_pool->out;
		j->parg = (int32_t *)n->fused_pool->scratch;
		j->pdy = n->fused_pool->dout;
		j->pout = n->fused_pool->out_size;
	}
	j->x = x;
	j->wt = n->tensor[0].data;
	j->y = n->out;
	j->col = n->scratch;
	j->t = n->scratch + batch * g->ckk * g->l;
	j->partial = j->t + batch * g->oc * g->l;
	j->bf16 = dt_kern_bf16();
}

static void
conv2d_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	struct geom g;
	struct conv_job j;
	int blas;

	geom_of(n, &g);
	conv_job_init(&j, n, &g, p->batch, in[0]);
	j.bias = n->n_tensors > 1 ? n->tensor[1].data : NULL;
	blas = dt_kern_set_threads(1);
	dt_pool_for(p->pool, (p->batch + DT_CONV_CHUNK - 1) / DT_CONV_CHUNK, 1,
		    forward_chunks, &j);
	dt_kern_set_threads(blas);
}

static void
conv2d_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
		float *const *din, const bool *din_add)
{
	struct geom g;
	struct conv_job j;
	int blas;

	geom_of(n, &g);
	conv_job_init(&j, n, &g, p->batch, in[0]);
	j.dy = n->dout;
	j.dw = n->tensor[0].grad;
	j.db = n->n_tensors > 1 ? n->tensor[1].grad : NULL;
	j.dx = din[0];
	j.dx_add = din_add[0];
	blas = dt_kern_set_threads(1);
	dt_pool_for(p->pool, (p->batch + DT_CONV_GROUP - 1) / DT_CONV_GROUP,
		    1, backward_groups, &j);
	dt_kern_set_threads(blas);
	if (p->batch > DT_CONV_GROUP)
		dt_pool_for(p->pool, j.part, 4096, reduce_part, &j);
}

static double
conv2d_fwd_flops(const struct dt_node *n)
{
	struct geom g;

	geom_of(n, &g);
	return 2.0 * (double)g.ckk * (double)g.oc * (double)g.l +
	       (n->n_tensors > 1 ? (double)g.oc * (double)g.l : 0.0);
}

static int64_t
conv2d_scratch_floats(const struct dt_node *n)
{
	struct geom g;

	geom_of(n, &g);
	return g.ckk * g.l + g.oc * g.l +
	       (g.oc * g.ckk + g.oc + DT_CONV_GROUP - 1) / DT_CONV_GROUP;
}

const struct dt_layer_ops dt_layer_conv2d = {
	.kind = "conv2d",
	.infer = conv2d_infer,
	.forward = conv2d_forward,
	.backward = conv2d_backward,
	.fwd_flops = conv2d_fwd_flops,
	.scratch_floats = conv2d_scratch_floats,
	.fuses_relu = true,
	.fuses_pool = true,
};
