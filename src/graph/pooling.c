/* SPDX-License-Identifier: MIT */
/* pooling.c - 2-D max and average pooling over (C, H, W) samples, a (H, W)
 * input being one channel.
 *
 * Square window K, stride S (default K), padding P <= K/2 on every side,
 * each channel on its own: Hout = (H + 2P - K)/S + 1, likewise Wout.
 * Max pooling takes the largest value of the window's positions inside
 * the image (padding never wins) and stores where it was, as an index
 * into the sample's input, in the node's scratch; backward routes each
 * output gradient to that one input (the first maximal position wins a
 * tie). Without padding, a plane at a time with selects instead of
 * branches, and a 2x2 window at stride 2 vectorised over each output
 * row (kern.h's dt_kern_maxpool2). A 2x2 max pooling at stride 2 that
 * alone reads a convolution's relu runs inside the convolution's passes
 * instead (graph.c's fuse_activations); its node then does nothing. Every pass is split over the pass's thread pool by (sample, channel)
 * planes, which gives the same bits with any number of threads. Average
 * pooling divides the window's sum by K*K, padding counting
 * as zeros (PyTorch's count_include_pad); backward spreads dY/(K*K) over
 * the window.
 * FLOPs: K*K per output value (compares or adds), nominally. */
#include <float.h>
#include <limits.h>
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"
#include "util/threadpool.h"

struct pgeom {
	int64_t c, h, w, k, s, pad, oh, ow;
};

static void
pgeom_of(const struct dt_node *n, struct pgeom *g)
{
	dt_shape_chw(&n->in_shape[0], &g->c, &g->h, &g->w);
	g->k = n->spec.kernel;
	g->s = n->spec.stride > 0 ? n->spec.stride : n->spec.kernel;
	g->pad = n->spec.padding;
	g->oh = (g->h + 2 * g->pad - g->k) / g->s + 1;
	g->ow = (g->w + 2 * g->pad - g->k) / g->s + 1;
}

static enum dt_status
pool_infer(struct dt_node *n, const struct dt_job *job, struct dt_error *err)
{
	const struct dt_layer_spec *sp = &n->spec;
	int64_t c, h, w;
	struct pgeom g;
	char buf[96];

	if (!dt_shape_chw(&n->in_shape[0], &c, &h, &w))
		return dt_node_errorf(n, job, err,
				      "%s reads (channels, height, width) or "
				      "(height, width); %s gives %s", n->kind,
				      dt_node_input_name(n, 0),
				      dt_shape_format(&n->in_shape[0], buf,
						      sizeof buf));
	if (sp->kernel < 1 || sp->kernel > INT_MAX)
		return dt_node_errorf(n, job, err,
				      "kernel must be >= 1, found %lld",
				      (long long)sp->kernel);
	if (sp->stride < 0 || sp->stride > INT_MAX)
		return dt_node_errorf(n, job, err,
				      "stride must be >= 1, found %lld",
				      (long long)sp->stride);
	if (sp->padding < 0 || sp->padding > sp->kernel / 2)
		return dt_node_errorf(n, job, err,
				      "padding must be in [0, kernel/2] = "
				      "[0, %lld], found %lld",
				      (long long)sp->kernel / 2,
				      (long long)sp->padding);
	if (h + 2 * sp->padding < sp->kernel ||
	    w + 2 * sp->padding < sp->kernel)
		return dt_node_errorf(n, job, err,
				      "kernel %lld does not fit %s %s with "
				      "padding %lld", (long long)sp->kernel,
				      dt_node_input_name(n, 0),
				      dt_shape_format(&n->in_shape[0], buf,
						      sizeof buf),
				      (long long)sp->padding);
	pgeom_of(n, &g);
	n->out_shape.n_dims = 3;
	n->out_shape.dim[0] = g.c;
	n->out_shape.dim[1] = g.oh;
	n->out_shape.dim[2] = g.ow;
	return DT_OK;
}

/* The window of output (oh, ow) clipped to the image: rows [*h0, *h1),
 * columns [*w0, *w1). Never empty, as P <= K/2. */
static void
window(const struct pgeom *g, int64_t oh, int64_t ow, int64_t *h0,
       int64_t *h1, int64_t *w0, int64_t *w1)
{
	*h0 = oh * g->s - g->pad;
	*w0 = ow * g->s - g->pad;
	*h1 = *h0 + g->k < g->h ? *h0 + g->k : g->h;
	*w1 = *w0 + g->k < g->w ? *w0 + g->k : g->w;
	if (*h0 < 0)
		*h0 = 0;
	if (*w0 < 0)
		*w0 = 0;
}

/* Max pooling of one (H, W) plane when no window reaches the padding
 * (P = 0): no clipping, and the running maximum and its place are
 * selects rather than branches. at is the plane's offset in its sample,
 * for the argmax indices. */
static void
maxpool_plane(const struct pgeom *g, const float *restrict x,
	      float *restrict y, int32_t *restrict arg, int64_t at)
{
	for (int64_t oh = 0; oh < g->oh; oh++)
		for (int64_t ow = 0; ow < g->ow; ow++) {
			int64_t first = oh * g->s * g->w + ow * g->s;
			const float *win = x + first;
			int64_t best = 0;
			float v = win[0];

			for (int64_t kh = 0; kh < g->k; kh++)
				for (int64_t kw = 0; kw < g->k; kw++) {
					int64_t off = kh * g->w + kw;
					float u = win[off];
					bool more = u > v;

					v = more ? u : v;
					best = more ? off : best;
				}
			*y++ = v;
			*arg++ = (int32_t)(at + first + best);
		}
}

/* The passes split their work by (sample, channel) planes, t = b*C + c:
 * every output, argmax and input gradient of a plane belongs to it alone
 * (a window never leaves its channel), so any split over the pool gives
 * the same bits. */
struct pool_job {
	const struct dt_node *n;
	struct pgeom g;
	const float *x;		/* (B, C, H, W) */
	float *y;		/* (B, C, OH, OW) */
	int32_t *arg;		/* (B, C, OH, OW) */
	const float *dy;	/* (B, C, OH, OW) */
	float *dx;		/* (B, C, H, W) */
	bool add;
};

static void
maxpool_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct pool_job *j = ctx;
	const struct pgeom *g = &j->g;
	const int64_t plane = g->h * g->w, out_plane = g->oh * g->ow;

	for (int64_t t = lo; t < hi; t++) {
		const int64_t c = t % g->c;
		const float *x = j->x + t * plane;		/* (H, W) */
		float *y = j->y + t * out_plane;		/* (OH, OW) */
		int32_t *a = j->arg + t * out_plane;	/* (OH, OW) */

		if (g->pad == 0 && g->k == 2 && g->s == 2) {
			dt_kern_maxpool2(x, plane, y, a, 1, g->h, g->w,
					 (int32_t)(c * plane));
			continue;
		}
		if (g->pad == 0) {
			maxpool_plane(g, x, y, a, c * plane);
			continue;
		}
		x -= c * plane;		/* indices below are in the sample */
		for (int64_t oh = 0; oh < g->oh; oh++)
			for (int64_t ow = 0; ow < g->ow; ow++) {
				int64_t h0, h1, w0, w1;
				int64_t best = -1;
				float v = -FLT_MAX;

				window(g, oh, ow, &h0, &h1, &w0, &w1);
				for (int64_t ih = h0; ih < h1; ih++)
					for (int64_t iw = w0; iw < w1; iw++) {
						int64_t i = (c * g->h + ih) *
							    g->w + iw;

						if (best < 0 || x[i] > v) {
							v = x[i];
							best = i;
						}
					}
				*y++ = v;
				*a++ = (int32_t)best;
			}
	}
}

static void
maxpool_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	struct pool_job j = {
		.n = n, .x = in[0], .y = n->out,
		.arg = (int32_t *)n->scratch,
	};

	if (n->pool_fused)	/* done by the convolution before */
		return;
	pgeom_of(n, &j.g);
	dt_pool_for(p->pool, p->batch * j.g.c, 16, maxpool_part, &j);
}

static void
maxpool_back_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct pool_job *j = ctx;
	const struct pgeom *g = &j->g;
	const int64_t plane = g->h * g->w, out_plane = g->oh * g->ow;

	for (int64_t t = lo; t < hi; t++) {
		const int64_t b = t / g->c, c = t % g->c;
		const float *dy = j->dy + t * out_plane;	/* (OH, OW) */
		const int32_t *a = j->arg + t * out_plane;	/* (OH, OW) */
		float *dx = j->dx + b * g->c * plane;	/* the sample */

		if (!j->add)
			memset(dx + c * plane, 0, (size_t)plane * sizeof(float));
		for (int64_t i = 0; i < out_plane; i++)
			dx[a[i]] += dy[i];
	}
}

static void
maxpool_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
		 float *const *din, const bool *din_add)
{
	struct pool_job j = {
		.n = n, .arg = (int32_t *)n->scratch, .dy = n->dout,
		.dx = din[0], .add = din_add[0],
	};

	(void)in;
	if (din[0] == NULL || n->pool_fused)
		return;
	pgeom_of(n, &j.g);
	dt_pool_for(p->pool, p->batch * j.g.c, 16, maxpool_back_part, &j);
}

static void
avgpool_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct pool_job *j = ctx;
	const struct pgeom *g = &j->g;
	const float inv = 1.0f / (float)(g->k * g->k);
	const int64_t plane = g->h * g->w, out_plane = g->oh * g->ow;

	for (int64_t t = lo; t < hi; t++) {
		const float *x = j->x + t * plane;	/* (H, W) */
		float *y = j->y + t * out_plane;	/* (OH, OW) */

		for (int64_t oh = 0; oh < g->oh; oh++)
			for (int64_t ow = 0; ow < g->ow; ow++) {
				int64_t h0, h1, w0, w1;
				float sum = 0.0f;

				window(g, oh, ow, &h0, &h1, &w0, &w1);
				for (int64_t ih = h0; ih < h1; ih++)
					for (int64_t iw = w0; iw < w1; iw++)
						sum += x[ih * g->w + iw];
				*y++ = sum * inv;
			}
	}
}

static void
avgpool_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	struct pool_job j = { .n = n, .x = in[0], .y = n->out };

	pgeom_of(n, &j.g);
	dt_pool_for(p->pool, p->batch * j.g.c, 16, avgpool_part, &j);
}

static void
avgpool_back_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct pool_job *j = ctx;
	const struct pgeom *g = &j->g;
	const float inv = 1.0f / (float)(g->k * g->k);
	const int64_t plane = g->h * g->w, out_plane = g->oh * g->ow;

	for (int64_t t = lo; t < hi; t++) {
		const float *dy = j->dy + t * out_plane;	/* (OH, OW) */
		float *dx = j->dx + t * plane;		/* (H, W) */

		if (!j->add)
			memset(dx, 0, (size_t)plane * sizeof(float));
		for (int64_t oh = 0; oh < g->oh; oh++)
			for (int64_t ow = 0; ow < g->ow; ow++) {
				int64_t h0, h1, w0, w1;
				float d = *dy++ * inv;

				window(g, oh, ow, &h0, &h1, &w0, &w1);
				for (int64_t ih = h0; ih < h1; ih++)
					for (int64_t iw = w0; iw < w1; iw++)
						dx[ih * g->w + iw] += d;
			}
	}
}

static void
avgpool_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
		 float *const *din, const bool *din_add)
{
	struct pool_job j = {
		.n = n, .dy = n->dout, .dx = din[0], .add = din_add[0],
	};

	(void)in;
	if (din[0] == NULL)
		return;
	pgeom_of(n, &j.g);
	dt_pool_for(p->pool, p->batch * j.g.c, 16, avgpool_back_part, &j);
}

static double
pool_fwd_flops(const struct dt_node *n)
{
	return (double)(n->spec.kernel * n->spec.kernel) *
	       (double)n->out_size;
}

/* The argmax of every output, int32 indices stored in float-sized slots. */
static int64_t
maxpool_scratch_floats(const struct dt_node *n)
{
	_Static_assert(sizeof(int32_t) == sizeof(float),
		       "argmax indices share the float scratch");
	return n->out_size;
}

const struct dt_layer_ops dt_layer_maxpool2d = {
	.kind = "maxpool2d",
	.infer = pool_infer,
	.forward = maxpool_forward,
	.backward = maxpool_backward,
	.fwd_flops = pool_fwd_flops,
	.scratch_floats = maxpool_scratch_floats,
};

const struct dt_layer_ops dt_layer_avgpool2d = {
	.kind = "avgpool2d",
	.infer = pool_infer,
	.forward = avgpool_forward,
	.backward = avgpool_backward,
	.fwd_flops = pool_fwd_flops,
};
