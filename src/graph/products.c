/* SPDX-License-Identifier: MIT */
/* products.c - the distinct shapes of the products that the dense and
 * attention layers of some nodes send through the kernel seam
 * (graph.h's dt_model_product_shapes), for the plan's count of oneDNN's
 * own memory: oneDNN makes one matmul primitive, with its JIT code, per
 * shape (kern_bf16.c), and keeps it for the run. Each layer's calls
 * below mirror dense.c's and attention.c's passes; the split of a
 * product's rows over the pool mirrors kern.c's dt_kern_par_sgemm, and
 * the cut of many terms into DT_KERN_ONEDNN_KCHUNK mirrors
 * dt_kern_onednn_sgemm. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/kern.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "util/alloc.h"

/* A product's key: trans_a, trans_b, m, n, k, beta != 0, lda, ldb, ldc
 * (oneDNN's primitive is made for the operands' strides too). */
#define SHAPE_KEY 9

struct shape_set {
	int64_t (*key)[SHAPE_KEY];
	int64_t n, cap;
	int threads;		/* the pool's */
	int64_t align;		/* rows of the pool's blocks */
	int chunked;		/* f32 on oneDNN: k cut at KCHUNK */
	int hook;		/* backward under a progress hook */
};

static void
put(struct shape_set *s, const int64_t key[SHAPE_KEY])
{
	for (int64_t i = 0; i < s->n; i++)
		if (memcmp(s->key[i], key, sizeof s->key[i]) == 0)
			return;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->key = dt_xrealloc(s->key, (size_t)s->cap, sizeof *s->key);
	}
	memcpy(s->key[s->n++], key, sizeof s->key[0]);
}

/* Leading dimensions of a product's A, B and C. */
struct lds {
	int64_t a, b, c;
};

/* One call of the seam on one thread: in chunks of k where f32. */
static void
call(struct shape_set *s, int ta, int tb, int64_t m, int64_t n, int64_t k,
     int beta, struct lds ld)
{
	int64_t key[SHAPE_KEY] = { ta, tb, m, n, k, beta, ld.a, ld.b, ld.c };

	if (m <= 0 || n <= 0 || k <= 0)
		return;
	if (!s->chunked || k <= DT_KERN_ONEDNN_KCHUNK) {
		put(s, key);
		return;
	}
	for (int64_t k0 = 0; k0 < k; k0 += DT_KERN_ONEDNN_KCHUNK) {
		key[4] = k - k0 < DT_KERN_ONEDNN_KCHUNK ? k - k0 :
			 DT_KERN_ONEDNN_KCHUNK;
		key[5] = k0 == 0 ? beta : 1;
		put(s, key);
	}
}

/* A product's m rows cut into parts blocks of align rows, part t of p
 * taking blocks [b*t/p, b*(t+1)/p) (the pool's cut, dt_pool_for). */
static void
parts_of(struct shape_set *s, int ta, int tb, int64_t m, int64_t n, int64_t k,
	 int beta, struct lds ld, int64_t p)
{
	int64_t blocks = (m + s->align - 1) / s->align;

	for (int64_t t = 0; t < p; t++) {
		int64_t r0 = blocks * t / p * s->align;
		int64_t r1 = blocks * (t + 1) / p * s->align;

		if (r1 > r0)
			call(s, ta, tb, (r1 < m ? r1 : m) - r0, n, k, beta,
			     ld);
	}
}

/* Where a progress hook waits (parallel.overlap's sums in flight during
 * backward), a one-thread product is cut into one call per 2^24
 * multiply-adds and per 256 rows, whichever gives fewer, at most one a
 * block (kern.c's gemm_chunk_count). */
static void
hooked(struct shape_set *s, int ta, int tb, int64_t m, int64_t n, int64_t k,
       int beta, struct lds ld)
{
	int64_t c = (int64_t)((double)m * (double)n * (double)k /
			      (double)((int64_t)1 << 24));
	int64_t blocks = (m + s->align - 1) / s->align;

	if (c > m / 256)
		c = m / 256;
	if (c > blocks)
		c = blocks;
	if (c > 1)
		parts_of(s, ta, tb, m, n, k, beta, ld, c);
}

/* dt_kern_par_sgemm: at most ceil(m / 32) parts, as many blocks to each
 * as can be. */
static void
product(struct shape_set *s, int ta, int tb, int64_t m, int64_t n, int64_t k,
	int beta, int64_t lda, int64_t ldb, int64_t ldc)
{
	const struct lds ld = { lda, ldb, ldc };
	int64_t blocks = (m + s->align - 1) / s->align;
	int64_t parts = (m + 31) / 32, grain, p;

	if (m <= 0)
		return;
	if (s->threads <= 1) {
		call(s, ta, tb, m, n, k, beta, ld);
		if (s->hook)
			hooked(s, ta, tb, m, n, k, beta, ld);
		return;
	}
	if (parts > s->threads)
		parts = s->threads;
	grain = (blocks + parts - 1) / parts;
	p = (blocks + grain - 1) / grain;
	parts_of(s, ta, tb, m, n, k, beta, ld, p < s->threads ? p : s->threads);
}

/* A weight gradient (1, 0, mw, nw, r) and an input gradient (0, tbx, r,
 * nx, kx) side by side (dt_kern_par_sgemm2): one after the other on one
 * thread, else the threads shared in proportion to their multiply-adds,
 * at least one each. */
static void
pair(struct shape_set *s, int64_t mw, int64_t nw, int64_t r, struct lds lw,
     int tbx, int64_t nx, int64_t kx, struct lds lx)
{
	double f0 = (double)mw * (double)nw * (double)r;
	double f1 = (double)r * (double)nx * (double)kx;
	int64_t p[2], m[2] = { mw, r };

	if (s->threads <= 1 || mw <= 0 || r <= 0) {
		product(s, 1, 0, mw, nw, r, 1, lw.a, lw.b, lw.c);
		product(s, 0, tbx, r, nx, kx, 0, lx.a, lx.b, lx.c);
		return;
	}
	p[0] = (int64_t)(s->threads * f0 / (f0 + f1) + 0.5);
	if (p[0] < 1)
		p[0] = 1;
	if (p[0] > s->threads - 1)
		p[0] = s->threads - 1;
	p[1] = s->threads - p[0];
	for (int w = 0; w < 2; w++) {
		int64_t most = (m[w] + 31) / 32;
		int64_t blocks = (m[w] + s->align - 1) / s->align;

		if (p[w] > most)
			p[w] = most;
		if (p[w] > blocks)
			p[w] = blocks;
	}
	parts_of(s, 1, 0, mw, nw, r, 1, lw, p[0]);
	parts_of(s, 0, tbx, r, nx, kx, 0, lx, p[1]);
}

/* Whether backward computes the input gradient of node i. */
static int
has_din(const struct dt_model *m, const struct dt_node *n)
{
	return n->inputs[0] != DT_NODE_INPUT &&
	       m->nodes[n->inputs[0]].needs_grad;
}

/* A dense layer's products at batch samples (dense.c): its forward pass,
 * or with back its backward pass (the weight and input gradients). */
static void
dense(struct shape_set *s, const struct dt_model *m, const struct dt_node *n,
      int64_t batch, int back)
{
	const int tie = n->tie_src != NULL;
	const int64_t in = n->tensor[0].shape[tie ? 1 : 0];
	const int64_t out = n->spec.units;
	const int bias = n->n_tensors > 1;
	const int din = has_din(m, n);
	const int64_t per = n->in_shape[0].n_dims == 2 &&
			    n->inputs[0] != DT_NODE_INPUT ?
			    n->in_shape[0].dim[0] : 1;
	const int64_t r = batch * per;
	int64_t len;

	/* whole tensors (the trainer does not own slices): a share reads
	 * its columns or rows in place, at the whole tensor's strides */
	switch (n->tp_size > 1 ? n->tp_mode : DT_TP_NONE) {
	case DT_TP_ROW:
		len = in / n->tp_size;
		if (!back) {
			product(s, 0, 0, r, out, len, 0, in, out, out);
			return;
		}
		product(s, 1, 0, len, out, r, 1, in, out, out);
		if (din)
			product(s, 0, 1, r, len, out, 0, out, out, in);
		return;
	case DT_TP_VOCAB:
		if (tie) {
			len = out / n->tp_size;
			if (!back) {
				product(s, 0, 1, r, len, in, bias, in, in, out);
				return;
			}
			product(s, 1, 0, len, in, r, 1, out, in, in);
			if (din)
				product(s, 0, 0, r, in, len, 0, out, in, in);
			return;
		}
		/* fall through */
	case DT_TP_COLUMN:
		len = out / n->tp_size;
		if (!back) {
			product(s, 0, 0, r, len, in, bias, in, out, out);
			return;
		}
		product(s, 1, 0, in, len, r, 1, in, out, out);
		if (din)
			product(s, 0, 1, r, in, len, 0, out, out, in);
		return;
	default:
		break;
	}
	if (!back) {
		product(s, 0, tie, r, out, in, bias, in, tie ? in : out, out);
		return;
	}
	const struct lds lw = tie ? (struct lds){ out, in, in } :
			      (struct lds){ in, out, out };
	const struct lds lx = { out, tie ? in : out, in };

	if (din)
		pair(s, tie ? out : in, tie ? in : out, r, lw, !tie, in, out,
		     lx);
	else
		product(s, 1, 0, tie ? out : in, tie ? in : out, r, 1, lw.a,
			lw.b, lw.c);
}

/* An attention layer's projections at batch samples (attention.c), its
 * forward pass or with back its backward pass; its heads run on dtrain's
 * small-product kernel. */
static void
attention(struct shape_set *s, const struct dt_model *m,
	  const struct dt_node *n, int64_t batch, int back)
{
	const int64_t t = n->in_shape[0].dim[0], c = n->in_shape[0].dim[1];
	const int64_t r = batch * t;
	const int bias = n->spec.bias ? 1 : 0;
	const int din = has_din(m, n);

	if (n->tp_size <= 1) {
		if (!back) {
			product(s, 0, 0, r, 3 * c, c, bias, c, 3 * c, 3 * c);
			product(s, 0, 0, r, c, c, bias, c, c, c);
			return;
		}
		product(s, 1, 0, c, c, r, 1, c, c, c);
		product(s, 0, 1, r, c, c, 0, c, c, c);
		if (din)
			pair(s, c, 3 * c, r, (struct lds){ c, 3 * c, 3 * c },
			     1, c, 3 * c, (struct lds){ 3 * c, 3 * c, c });
		else
			product(s, 1, 0, c, 3 * c, r, 1, c, 3 * c, 3 * c);
		return;
	}
	/* this rank's heads' columns cl of each third of the whole qkv
	 * weight, and rows of the projection's */
	const int64_t cl = c / n->tp_size;

	if (!back) {
		product(s, 0, 0, r, cl, c, bias, c, 3 * c, 3 * c);
		product(s, 0, 0, r, c, cl, 0, c, c, c);
		return;
	}
	product(s, 1, 0, cl, c, r, 1, c, c, c);
	product(s, 0, 1, r, cl, c, 0, c, c, c);
	product(s, 1, 0, c, cl, r, 1, c, 3 * c, 3 * c);
	if (din)
		for (int part = 0; part < 3; part++)
			product(s, 0, 1, r, c, cl, part > 0, 3 * c, 3 * c, c);
}

int64_t
dt_model_product_shapes(const struct dt_model *m, int first, int last,
			const int64_t *batches, int n_batches, int threads,
			int64_t align, int chunked, int overlap)
{
	struct shape_set s = { .threads = threads, .align = align,
			       .chunked = chunked };

	if (s.align < 1)
		s.align = 1;
	for (int b = 0; b < n_batches; b++) {
		if (batches[b] <= 0)
			continue;
		for (int i = first; i <= last && i < m->n_nodes; i++) {
			const struct dt_node *n = &m->nodes[i];

			s.hook = 0;
			if (strcmp(n->ops->kind, "dense") == 0)
				dense(&s, m, n, batches[b], 0);
			else if (strcmp(n->ops->kind, "attention") == 0)
				attention(&s, m, n, batches[b], 0);
			if (b > 0)
				continue;
			/* backward, and its cuts where a hook waits */
			s.hook = overlap;
			if (strcmp(n->ops->kind, "dense") == 0)
				dense(&s, m, n, batches[b], 1);
			else if (strcmp(n->ops->kind, "attention") == 0)
				attention(&s, m, n, batches[b], 1);
		}
	}
	free(s.key);
	return s.n;
}
