/* SPDX-License-Identifier: MIT */
/* conv2d.c - 2-D convolution (cross-correlation, as in every framework)
 * over (C, H, W) samples, a (H, W) input being one channel.
 *
 * Square kernel K, stride S (default 1), zero padding P on every side,
 * `channels` = OC output maps: Hout = (H + 2P - K)/S + 1, likewise Wout.
 * Weight (OC, C, K, K) row-major, PyTorch's layout, read as a (OC, C*K*K)
 * matrix; bias (OC) unless `bias: false`. An activation comes as its own
 * node after this one (graph.h). Over the whole micro-batch of B samples,
 * with L = Hout*Wout:
 *   im2col    col(C*K*K, B*L): row (c, kh, kw), column (b, oh, ow) holds
 *             x[b, c, oh*S - P + kh, ow*S - P + kw], 0 in the padding
 *   forward   T(OC, B*L) = W(OC, CKK) col          one sgemm
 *             y[b, o, :] = T[o, b*L ...] + b[o]    (the bias on the way
 *                                                   back to batch first)
 *   backward  T = dY gathered to (OC, B*L), db += row sums of T,
 *             dW += T col^T                        one sgemm
 *             dcol = W^T T                         one sgemm
 *             then col2im adds dcol back into dX
 * (Chellapilla, Puri, Simard, "High Performance Convolutional Neural
 * Networks for Document Processing", 2006; Caffe's im2col; one product
 * over the batch rather than one per sample, as cuDNN's implicit GEMM
 * does, so that each product is large enough for the BLAS to reach its
 * peak and to split over its threads). The columns stay in the node's
 * scratch from forward to backward, and backward reuses them for dcol
 * once dW is done; T is the second half of the scratch. The copies
 * (im2col, the bias scatter, the gather with db, col2im) run on the
 * pass's thread pool, each split by its outputs, so the pool size never
 * changes the bits; the products' bits depend on the BLAS threads only.
 * FLOPs per sample: 2*K*K*C*OC*L for the product plus OC*L for the bias.
 * Init: He-normal with fan_in C*K*K (He et al., layer.h); bias zero. */
#include <limits.h>
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"
#include "util/pool.h"

struct geom {
	int64_t c, h, w;	/* input */
	int64_t k, s, pad;
	int64_t oc, oh, ow;	/* output */
	int64_t ckk, l;		/* rows of col, and its columns per sample */
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
}

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
	    mul3(g.oc, g.l, 1) > INT_MAX)
		return dt_node_errorf(n, job, err,
				      "conv2d of %s: more than 2^31 values "
				      "per sample in its columns or output",
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
	};
	n->tensor[1] = (struct dt_param_tensor){
		.name = "bias",
		.n_dims = 1,
		.shape = { g.oc },
		.init = DT_INIT_ZERO,
	};
	return DT_OK;
}

/* Output columns [*lo, *hi) whose input column ow*S - P + kw lies in
 * [0, W); the others read padding. */
static void
valid_cols(const struct geom *g, int64_t kw, int64_t *lo, int64_t *hi)
{
	int64_t first = g->pad - kw, last = g->w - 1 + g->pad - kw;

	*lo = first > 0 ? (first + g->s - 1) / g->s : 0;
	*hi = last < 0 ? 0 : last / g->s + 1;
	if (*hi > g->ow)
		*hi = g->ow;
	if (*lo > *hi)
		*lo = *hi;
}

/* Column row r = (c, kh, kw) reads input channel c shifted by (kh, kw):
 * entry (oh, ow) is x[c, oh*S - P + kh, ow*S - P + kw]. For output row oh
 * this sets *at so that entry ow (at stride S) is x[*at + ow*S] and
 * returns false when the input row is padding. Only the entries
 * valid_cols gives are read, so *at + ow*S stays in the sample even where
 * *at itself lies before the row. */
static bool
row_start(const struct geom *g, int64_t c, int64_t kh, int64_t kw,
	  int64_t oh, int64_t *at)
{
	int64_t ih = oh * g->s - g->pad + kh;

	if (ih < 0 || ih >= g->h)
		return false;
	*at = (c * g->h + ih) * g->w - g->pad + kw;
	return true;
}

/* How the micro-batch is cut, from the shapes alone (never from the
 * thread count, so the bits do not depend on it):
 *   chunk  nb samples whose columns and product, (C*K*K + OC) * nb*L
 *          floats, fit in about DT_CONV_CHUNK_BYTES (a core's L2), at
 *          least one sample: one im2col, one sgemm per product, all in
 *          cache; a thread does a whole chunk;
 *   group  gs samples (whole chunks, at least DT_CONV_GROUP): backward
 *          adds the dW and db of a group's chunks in order into one
 *          partial sum (group 0 straight into the gradients), and the
 *          partials are then added to the gradients in group order.
 * Scratch per sample: the columns (C*K*K, L), the product (OC, L), and a
 * 1/gs share of a group's partial (OC*C*K*K + OC), which covers the
 * partials of groups 1.. of any batch. */
#define DT_CONV_CHUNK_BYTES (256 * 1024)
#define DT_CONV_GROUP 8

struct cut {
	int64_t nb, gs;		/* samples per chunk and per group */
	int64_t part;		/* floats of one partial: OC*CKK + OC */
};

static void
cut_of(const struct geom *g, struct cut *k)
{
	int64_t per = (g->ckk + g->oc) * g->l * (int64_t)sizeof(float);

	k->nb = DT_CONV_CHUNK_BYTES / per;
	if (k->nb < 1)
		k->nb = 1;
	if (k->nb > INT_MAX / g->l)	/* nb*L is a BLAS int */
		k->nb = INT_MAX / g->l;
	k->gs = (DT_CONV_GROUP + k->nb - 1) / k->nb * k->nb;
	k->part = g->oc * g->ckk + g->oc;
}

/* One chunk's buffers and the pass around it. */
struct conv_job {
	const struct geom *g;
	struct cut k;
	int64_t batch;
	const float *x;		/* (B, C, H, W) */
	const float *wt;	/* (OC, C*K*K) */
	const float *bias;	/* (OC) or NULL */
	float *y;		/* (B, OC, L) */
	const float *dy;	/* (B, OC, L) */
	float *dw;		/* (OC, C*K*K) */
	float *db;		/* (OC) or NULL */
	float *dx;		/* (B, C, H, W) or NULL */
	bool dx_add;
	float *col;		/* (B, C*K*K, L): chunk b0 at b0*CKK*L, laid
				 * out (C*K*K, nb*L) */
	float *t;		/* (B, OC, L): chunk b0 at b0*OC*L, laid out
				 * (OC, nb*L) */
	float *partial;		/* (groups - 1, OC*CKK + OC) */
};

/* col(C*K*K, n*L) of samples x (n, C, H, W): row r = (c, kh, kw), column
 * (b, oh, ow) holds x[b, c, oh*S - P + kh, ow*S - P + kw], 0 in the
 * padding. */
static void
im2col(const struct geom *g, int64_t n, const float *x, float *col)
{
	const int64_t nl = n * g->l;

	for (int64_t r = 0; r < g->ckk; r++) {
		int64_t c = r / (g->k * g->k), kh = r / g->k % g->k;
		int64_t kw = r % g->k, lo, hi, at;

		valid_cols(g, kw, &lo, &hi);
		for (int64_t b = 0; b < n; b++) {
			const float *xb = x + b * g->c * g->h * g->w;
			float *dst = col + r * nl + b * g->l;

			for (int64_t oh = 0; oh < g->oh; oh++, dst += g->ow) {
				if (!row_start(g, c, kh, kw, oh, &at)) {
					memset(dst, 0,
					       (size_t)g->ow * sizeof(float));
					continue;
				}
				for (int64_t ow = 0; ow < lo; ow++)
					dst[ow] = 0.0f;
				if (g->s == 1)
					memcpy(dst + lo, xb + at + lo,
					       (size_t)(hi - lo) *
						       sizeof(float));
				else
					for (int64_t ow = lo; ow < hi; ow++)
						dst[ow] = xb[at + ow * g->s];
				for (int64_t ow = hi; ow < g->ow; ow++)
					dst[ow] = 0.0f;
			}
		}
	}
}

/* dx (n, C, H, W) (+)= the columns col (C*K*K, n*L) folded back onto the
 * images; padding is dropped. Each plane's rows r = (c, kh, kw) are
 * added in order. */
static void
col2im(const struct geom *g, int64_t n, const float *col, float *dx,
       bool add)
{
	const int64_t nl = n * g->l, plane = g->h * g->w;

	if (!add)
		memset(dx, 0, (size_t)(n * g->c * plane) * sizeof(float));
	for (int64_t r = 0; r < g->ckk; r++) {
		int64_t c = r / (g->k * g->k), kh = r / g->k % g->k;
		int64_t kw = r % g->k, lo, hi, at;

		valid_cols(g, kw, &lo, &hi);
		for (int64_t b = 0; b < n; b++) {
			const float *src = col + r * nl + b * g->l;
			float *db = dx + b * g->c * plane;

			for (int64_t oh = 0; oh < g->oh; oh++, src += g->ow) {
				if (!row_start(g, c, kh, kw, oh, &at))
					continue;
				for (int64_t ow = lo; ow < hi; ow++)
					db[at + ow * g->s] += src[ow];
			}
		}
	}
}

static void
add_bias_row(int64_t len, const float *restrict t, float *restrict y,
	     float v)
{
	DT_VEC_LOOP(i, len, y[i] = t[i] + v);
}

/* Sum of a row in 8 float lanes, added up in a fixed order. */
static float
row_sum(int64_t len, const float *restrict a)
{
	float lane[8] = { 0 };
	float s = 0.0f;
	int64_t i = 0;

	for (; i + 8 <= len; i += 8)
		for (int k = 0; k < 8; k++)
			lane[k] += a[i + k];
	for (; i < len; i++)
		lane[0] += a[i];
	for (int k = 0; k < 8; k++)
		s += lane[k];
	return s;
}

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Forward of chunks [lo, hi): columns, T(OC, n*L) = W col, then
 * y[b, o] = T[o, b*L ...] + bias[o]. */
static void
forward_chunks(void *ctx, int64_t lo, int64_t hi)
{
	const struct conv_job *j = ctx;
	const struct geom *g = j->g;

	for (int64_t c = lo; c < hi; c++) {
		const int64_t b0 = c * j->k.nb;
		const int64_t n = min64(j->k.nb, j->batch - b0), nl = n * g->l;
		float *col = j->col + b0 * g->ckk * g->l;
		float *t = j->t + b0 * g->oc * g->l;

		im2col(g, n, j->x + b0 * g->c * g->h * g->w, col);
		dt_kern_sgemm(0, 0, g->oc, nl, g->ckk, 1.0f, j->wt, g->ckk,
			      col, nl, 0.0f, t, nl);
		for (int64_t b = 0; b < n; b++)
			for (int64_t o = 0; o < g->oc; o++)
				add_bias_row(g->l, t + o * nl + b * g->l,
					     j->y + ((b0 + b) * g->oc + o) *
						     g->l,
					     j->bias != NULL ? j->bias[o]
							     : 0.0f);
	}
}

/* Backward of groups [lo, hi), chunk by chunk: T = dY gathered to
 * (OC, n*L); the group's dW += T col^T and db += row sums of T (group 0
 * into the gradients, the others into their partial); then the columns
 * are spent and dcol = W^T T takes their place, folded into dX. */
static void
backward_groups(void *ctx, int64_t lo, int64_t hi)
{
	const struct conv_job *j = ctx;
	const struct geom *g = j->g;

	for (int64_t grp = lo; grp < hi; grp++) {
		const int64_t s0 = grp * j->k.gs;
		const int64_t s1 = min64(s0 + j->k.gs, j->batch);
		float *dw = grp == 0 ? j->dw
				     : j->partial + (grp - 1) * j->k.part;
		float *db = grp == 0 ? j->db : dw + g->oc * g->ckk;

		for (int64_t b0 = s0; b0 < s1; b0 += j->k.nb) {
			const int64_t n = min64(j->k.nb, s1 - b0);
			const int64_t nl = n * g->l;
			const bool fresh = grp > 0 && b0 == s0;
			float *col = j->col + b0 * g->ckk * g->l;
			float *t = j->t + b0 * g->oc * g->l;

			for (int64_t o = 0; o < g->oc; o++) {
				for (int64_t b = 0; b < n; b++)
					memcpy(t + o * nl + b * g->l,
					       j->dy + ((b0 + b) * g->oc + o) *
							       g->l,
					       (size_t)g->l * sizeof(float));
				if (j->db != NULL) {
					float sum = row_sum(nl, t + o * nl);

					db[o] = fresh ? sum : db[o] + sum;
				}
			}
			dt_kern_sgemm(0, 1, g->oc, g->ckk, nl, 1.0f, t, nl, col,
				      nl, fresh ? 0.0f : 1.0f, dw, g->ckk);
			if (j->dx == NULL)
				continue;
			dt_kern_sgemm(1, 0, g->ckk, nl, g->oc, 1.0f, j->wt,
				      g->ckk, t, nl, 0.0f, col, nl);
			col2im(g, n, col, j->dx + b0 * g->c * g->h * g->w,
			       j->dx_add);
		}
	}
}

static void
add_part(int64_t len, float *restrict acc, const float *restrict p)
{
	DT_VEC_LOOP(i, len, acc[i] += p[i]);
}

/* dW and db += the partials of groups 1.. in group order, over the
 * gradient's elements [lo, hi) (of OC*CKK + OC: dW then db). */
static void
reduce_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct conv_job *j = ctx;
	const struct geom *g = j->g;
	const int64_t groups = (j->batch + j->k.gs - 1) / j->k.gs;
	const int64_t nw = g->oc * g->ckk;

	for (int64_t grp = 1; grp < groups; grp++) {
		const float *p = j->partial + (grp - 1) * j->k.part;

		if (lo < nw)
			add_part(min64(hi, nw) - lo, j->dw + lo, p + lo);
		if (hi > nw && j->db != NULL) {
			int64_t a = lo > nw ? lo : nw;

			add_part(hi - a, j->db + (a - nw), p + a);
		}
	}
}

/* The convolutions' products run inside the pool's threads, so OpenBLAS
 * runs them on the calling thread alone (its own threads would compete
 * for the same cores); the count goes back for the layers that follow.
 * Their bits therefore depend on neither the BLAS threads nor the pool. */
static void
conv_job_init(struct conv_job *j, const struct dt_node *n,
	      const struct geom *g, int64_t batch)
{
	memset(j, 0, sizeof *j);
	j->g = g;
	cut_of(g, &j->k);
	j->batch = batch;
	j->wt = n->tensor[0].data;
	j->col = n->scratch;
	j->t = n->scratch + batch * g->ckk * g->l;
	j->partial = j->t + batch * g->oc * g->l;
}

static void
conv2d_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	struct geom g;
	struct conv_job j;
	int blas;

	geom_of(n, &g);
	conv_job_init(&j, n, &g, p->batch);
	j.x = in[0];
	j.bias = n->n_tensors > 1 ? n->tensor[1].data : NULL;
	j.y = n->out;
	blas = dt_kern_set_threads(1);
	dt_pool_for(p->pool, (p->batch + j.k.nb - 1) / j.k.nb, 1,
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

	(void)in;
	geom_of(n, &g);
	conv_job_init(&j, n, &g, p->batch);
	j.dy = n->dout;
	j.dw = n->tensor[0].grad;
	j.db = n->n_tensors > 1 ? n->tensor[1].grad : NULL;
	j.dx = din[0];
	j.dx_add = din_add[0];
	blas = dt_kern_set_threads(1);
	dt_pool_for(p->pool, (p->batch + j.k.gs - 1) / j.k.gs, 1,
		    backward_groups, &j);
	dt_kern_set_threads(blas);
	if (p->batch > j.k.gs)
		dt_pool_for(p->pool, j.k.part, 4096, reduce_part, &j);
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
	struct cut k;

	geom_of(n, &g);
	cut_of(&g, &k);
	return g.ckk * g.l + g.oc * g.l + (k.part + k.gs - 1) / k.gs;
}

const struct dt_layer_ops dt_layer_conv2d = {
	.kind = "conv2d",
	.infer = conv2d_infer,
	.forward = conv2d_forward,
	.backward = conv2d_backward,
	.fwd_flops = conv2d_fwd_flops,
	.scratch_floats = conv2d_scratch_floats,
};
