/* conv2d.c - 2-D convolution (cross-correlation, as in every framework)
 * over (C, H, W) samples, a (H, W) input being one channel.
 *
 * Square kernel K, stride S (default 1), zero padding P on every side,
 * `channels` = OC output maps: Hout = (H + 2P - K)/S + 1, likewise Wout.
 * Weight (OC, C, K, K) row-major, PyTorch's layout, read as a (OC, C*K*K)
 * matrix; bias (OC) unless `bias: false`. An activation comes as its own
 * node after this one (graph.h). Per sample, with L = Hout*Wout:
 *   im2col    col(C*K*K, L): row (c, kh, kw), column (oh, ow) holds
 *             x[c, oh*S - P + kh, ow*S - P + kw], 0 in the padding
 *   forward   Y(OC, L) = W(OC, CKK) col + b       one cblas_sgemm
 *   backward  dW += dY col^T, db += row sums of dY,
 *             dcol = W^T dY, then col2im adds dcol back into dX
 * (Chellapilla, Puri, Simard, "High Performance Convolutional Neural
 * Networks for Document Processing", 2006; Caffe's im2col). The columns of
 * every sample stay in the node's scratch from forward to backward, and
 * backward reuses them for dcol once dW is done. A 1x1 kernel with stride
 * 1 and no padding needs no columns: col is the input itself.
 * FLOPs per sample: 2*K*K*C*OC*L for the product plus OC*L for the bias.
 * Init: He-normal with fan_in C*K*K (He et al., layer.h); bias zero. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "graph/layer.h"

struct geom {
	int64_t c, h, w;	/* input */
	int64_t k, s, pad;
	int64_t oc, oh, ow;	/* output */
	int64_t ckk, l;		/* rows and columns of col */
	bool direct;		/* 1x1, stride 1, no padding: col = x */
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
	g->direct = g->k == 1 && g->s == 1 && g->pad == 0;
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

static void
im2col(const struct geom *g, const float *x, float *col)
{
	/* x (C, H, W), col (C*K*K, L) */
	for (int64_t r = 0; r < g->ckk; r++) {
		int64_t c = r / (g->k * g->k), kh = r / g->k % g->k;
		int64_t kw = r % g->k, lo, hi, at;

		valid_cols(g, kw, &lo, &hi);
		for (int64_t oh = 0; oh < g->oh; oh++) {
			float *dst = col + r * g->l + oh * g->ow;

			if (!row_start(g, c, kh, kw, oh, &at)) {
				memset(dst, 0, (size_t)g->ow * sizeof(float));
				continue;
			}
			for (int64_t ow = 0; ow < lo; ow++)
				dst[ow] = 0.0f;
			if (g->s == 1 && hi > lo)
				memcpy(dst + lo, x + at + lo,
				       (size_t)(hi - lo) * sizeof(float));
			else
				for (int64_t ow = lo; ow < hi; ow++)
					dst[ow] = x[at + ow * g->s];
			for (int64_t ow = hi; ow < g->ow; ow++)
				dst[ow] = 0.0f;
		}
	}
}

/* dx += the columns folded back onto the image; padding is dropped. */
static void
col2im(const struct geom *g, const float *col, float *dx)
{
	/* col (C*K*K, L), dx (C, H, W) */
	for (int64_t r = 0; r < g->ckk; r++) {
		int64_t c = r / (g->k * g->k), kh = r / g->k % g->k;
		int64_t kw = r % g->k, lo, hi, at;

		valid_cols(g, kw, &lo, &hi);
		for (int64_t oh = 0; oh < g->oh; oh++) {
			const float *src = col + r * g->l + oh * g->ow;

			if (!row_start(g, c, kh, kw, oh, &at))
				continue;
			for (int64_t ow = lo; ow < hi; ow++)
				dx[at + ow * g->s] += src[ow];
		}
	}
}

static void
conv2d_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	struct geom g;
	const float *wt = n->tensor[0].data;	/* (OC, C*K*K) */
	const bool bias = n->n_tensors > 1;

	geom_of(n, &g);
	for (int64_t b = 0; b < p->batch; b++) {
		const float *x = in[0] + b * n->in_size[0];	/* (C, H, W) */
		float *y = n->out + b * n->out_size;		/* (OC, L) */
		const float *col = x;				/* (CKK, L) */

		if (!g.direct) {
			float *c = n->scratch + b * g.ckk * g.l;

			im2col(&g, x, c);
			col = c;
		}
		if (bias)
			for (int64_t o = 0; o < g.oc; o++) {
				float v = n->tensor[1].data[o];
				float *yo = y + o * g.l;

				for (int64_t j = 0; j < g.l; j++)
					yo[j] = v;
			}
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
			    (int)g.oc, (int)g.l, (int)g.ckk, 1.0f, wt,
			    (int)g.ckk, col, (int)g.l, bias ? 1.0f : 0.0f, y,
			    (int)g.l);
	}
}

static void
conv2d_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
		float *const *din, const bool *din_add)
{
	struct geom g;
	const float *wt = n->tensor[0].data;	/* (OC, C*K*K) */
	float *dw = n->tensor[0].grad;		/* (OC, C*K*K) */

	geom_of(n, &g);
	for (int64_t b = 0; b < p->batch; b++) {
		const float *dy = n->dout + b * n->out_size;	/* (OC, L) */
		float *dx = din[0] != NULL ? din[0] + b * n->in_size[0]
					   : NULL;		/* (C, H, W) */
		const float *col = g.direct ? in[0] + b * n->in_size[0]
					    : n->scratch + b * g.ckk * g.l;

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
			    (int)g.oc, (int)g.ckk, (int)g.l, 1.0f, dy,
			    (int)g.l, col, (int)g.l, 1.0f, dw, (int)g.ckk);
		if (n->n_tensors > 1) {
			float *db = n->tensor[1].grad;	/* (OC) */

			for (int64_t o = 0; o < g.oc; o++) {
				const float *dyo = dy + o * g.l;
				float s = 0.0f;

				for (int64_t j = 0; j < g.l; j++)
					s += dyo[j];
				db[o] += s;
			}
		}
		if (dx == NULL)
			continue;
		if (g.direct) {
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans,
				    (int)g.ckk, (int)g.l, (int)g.oc, 1.0f, wt,
				    (int)g.ckk, dy, (int)g.l,
				    din_add[0] ? 1.0f : 0.0f, dx, (int)g.l);
			continue;
		}
		/* The columns are spent: dcol takes their place. */
		float *dcol = n->scratch + b * g.ckk * g.l;	/* (CKK, L) */

		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans,
			    (int)g.ckk, (int)g.l, (int)g.oc, 1.0f, wt,
			    (int)g.ckk, dy, (int)g.l, 0.0f, dcol, (int)g.l);
		if (!din_add[0])
			memset(dx, 0, (size_t)n->in_size[0] * sizeof(float));
		col2im(&g, dcol, dx);
	}
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
	return g.direct ? 0 : g.ckk * g.l;
}

const struct dt_layer_ops dt_layer_conv2d = {
	.kind = "conv2d",
	.infer = conv2d_infer,
	.forward = conv2d_forward,
	.backward = conv2d_backward,
	.fwd_flops = conv2d_fwd_flops,
	.scratch_floats = conv2d_scratch_floats,
};
