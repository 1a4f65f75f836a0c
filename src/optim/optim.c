/* SPDX-License-Identifier: MIT */
/* optim.c - SGD (plain, momentum, Nesterov), Adam and AdamW over a flat
 * parameter arena.
 *
 * The update rules follow PyTorch's torch.optim documentation, which is
 * what users compare against:
 *   SGD   g = grad + wd*p;  buf = mu*buf + g;  g = nesterov ? g + mu*buf : buf;
 *         p -= lr*g                       (Sutskever et al., ICML 2013,
 *                                          rewritten as PyTorch does)
 *   Adam  g = grad + wd*p;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;
 *         p -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps)
 *                                         (Kingma & Ba, ICLR 2015, Alg. 1:
 *                                          eps outside the square root)
 *   AdamW p -= lr*wd*p, then Adam without the wd term
 *                                         (Loshchilov & Hutter, ICLR 2019,
 *                                          with PyTorch's lr-scaled decay)
 * PyTorch starts the momentum buffer at the first gradient; starting it at
 * zero and applying buf = mu*buf + g gives the same first value. */
#include "optim/optim.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "util/alloc.h"
#include "util/threadpool.h"

struct dt_optim {
	enum dt_optim_kind kind;
	size_t n;		/* parameters */
	int64_t steps;		/* completed updates */
	float momentum, weight_decay;
	bool nesterov;
	float beta1, beta2, eps;
	int n_bufs;
	float *bufs[2];		/* sgd: momentum (n); adam: m (n), v (n) */
	struct dt_pool *pool;	/* not owned; NULL: one thread */
	struct dt_optim_span *decay;	/* (n_decay) in o's own coordinates,
					 * sorted; NULL: decay everything */
	size_t n_decay;
};

struct dt_optim *
dt_optim_new(const struct dt_job *job, size_t n)
{
	struct dt_optim *o = dt_xcalloc(1, sizeof *o);

	o->kind = job->train.optimizer;
	o->n = n;
	o->momentum = (float)job->train.momentum;
	o->nesterov = job->train.nesterov;
	o->weight_decay = (float)job->train.weight_decay;
	o->beta1 = (float)job->train.beta1;
	o->beta2 = (float)job->train.beta2;
	o->eps = (float)job->train.eps;
	switch (o->kind) {
	case DT_OPTIM_SGD:
		o->n_bufs = o->momentum != 0.0f ? 1 : 0;
		break;
	case DT_OPTIM_ADAM:
	case DT_OPTIM_ADAMW:
		o->n_bufs = 2;
		break;
	}
	for (int i = 0; i < o->n_bufs; i++)
		o->bufs[i] = dt_xalloc_floats(n);
	return o;
}

void
dt_optim_free(struct dt_optim *o)
{
	if (o == NULL)
		return;
	for (int i = 0; i < o->n_bufs; i++)
		free(o->bufs[i]);
	free(o->decay);
	free(o);
}

/* Runs body for each i in [0, n) (size_t i, declared here), in blocks of 8
 * with a constant inner trip count, then the rest one by one: GCC's -O2
 * vectoriser (the "very cheap" cost model) only takes loops whose trip
 * count is a known multiple of the vector width, so a plain loop over n
 * stays scalar (graph/layer.h's DT_VEC_LOOP; optim/ does not include
 * graph's headers). The kernels below take restrict pointers and scalars
 * only, and do the same arithmetic in both loops, so every parameter gets
 * the same bits whether it falls in a block or in the rest. */
#define BLOCK_LOOP(i, n, body)                                          \
	do {                                                            \
		size_t i##_blk_ = 0, i##_n_ = (n);                      \
		for (; i##_n_ - i##_blk_ >= 8; i##_blk_ += 8)           \
			for (int i##_j_ = 0; i##_j_ < 8; i##_j_++) {    \
				size_t i = i##_blk_ + (size_t)i##_j_;   \
				body                                    \
			}                                               \
		for (size_t i = i##_blk_; i < i##_n_; i++) {            \
			body                                            \
		}                                                       \
	} while (0)

/* x, or 0 where x is subnormal (|x| < FLT_MIN, the smallest normal
 * float). The optimizer's state decays geometrically wherever the
 * gradient is 0 (Adam's m by b1 each step, v by b2, SGD's momentum by
 * mu): a weight of an input that is always 0, like a Fashion-MNIST border
 * pixel, reaches the subnormal range after about 800 steps of Adam, and
 * arithmetic on subnormals runs through a microcode assist on x86, tens
 * of times slower (the MLP job's update grew from a fifth of its step to
 * more than half by step 2000). Flushing the state there changes no
 * parameter at a float's precision: the update it would have made is
 * below 1e-30 x lr. A compare and a mask; it vectorises. */
static inline float
flush_subnormal(float x)
{
	return fabsf(x) < FLT_MIN ? 0.0f : x;
}

static void
sgd_plain(size_t n, float *restrict p, const float *restrict g, float lr,
	  float wd)
{
	BLOCK_LOOP(i, n, { p[i] -= lr * (g[i] + wd * p[i]); });
}

static void
sgd_momentum(size_t n, float *restrict p, const float *restrict g,
	     float *restrict buf, float lr, float wd, float mu, bool nesterov)
{
	if (nesterov) {
		BLOCK_LOOP(i, n, {
			float d = g[i] + wd * p[i];

			buf[i] = flush_subnormal(mu * buf[i] + d);
			p[i] -= lr * (d + mu * buf[i]);
		});
	} else {
		BLOCK_LOOP(i, n, {
			buf[i] = flush_subnormal(mu * buf[i] +
						 (g[i] + wd * p[i]));
			p[i] -= lr * buf[i];
		});
	}
}

/* On x86-64 with glibc the Adam kernel also comes in an AVX2 clone, picked
 * once when the program loads (GCC's target_clones, an ifunc): with the
 * arrays in cache the update is bound by the divide and the square root,
 * which AVX2 does 8 at a time to the baseline's 4, halving its time. The
 * avx2 target has no FMA, so nothing is contracted and both clones round
 * every operation alike: the same bits on any machine. */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__GNUC__) && \
	!defined(__clang__)
#define ADAM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ADAM_CLONES
#endif

/* One Adam or AdamW update in a single pass over the four arrays (for
 * 535k parameters, 8.6 MB of p, g, m and v read once, p, m and v written
 * once). The bias corrections are folded into two scalars: step = lr /
 * (1 - b1^t) and rc = 1 / sqrt(1 - b2^t), so that lr * mhat / (sqrt(vhat)
 * + eps) = step * m / (sqrt(v) * rc + eps). keep is AdamW's decoupled
 * decay factor 1 - lr*wd, applied to p before the Adam step exactly as a
 * pass of its own would (1 for Adam: p * 1 is p); l2 is Adam's weight
 * decay added to the gradient (0 for AdamW). */
ADAM_CLONES static void
adam(size_t n, float *restrict p, const float *restrict g,
     float *restrict m, float *restrict v, float step, float rc, float b1,
     float b2, float eps, float l2, float keep)
{
	const float c1 = 1.0f - b1, c2 = 1.0f - b2;

	BLOCK_LOOP(i, n, {
		float q = p[i] * keep;
		float d = g[i] + l2 * q;
		float mi = flush_subnormal(b1 * m[i] + c1 * d);
		float vi = flush_subnormal(b2 * v[i] + c2 * d * d);

		m[i] = mi;
		v[i] = vi;
		p[i] = q - step * mi / (sqrtf(vi) * rc + eps);
	});
}

/* One update over a range of the arena, for the pool: the range's
 * parameters in chunks of DT_OPTIM_CHUNK floats (a multiple of the vector
 * blocks, so only the arena's last chunk has a scalar rest, wherever the
 * parts fall; the bits are the same either way). */
#define DT_OPTIM_CHUNK 2048

struct update {
	const struct dt_optim *o;
	float *params;
	const float *grads;
	float lr;
	float step, rc, l2, keep;	/* Adam's folded scalars */
};

/* The update of [a, a + len), decayed or not. */
static void
update_range(const struct update *u, size_t a, size_t len, int decayed)
{
	const struct dt_optim *o = u->o;
	float *p = u->params + a;
	const float *g = u->grads + a;
	float wd = decayed ? o->weight_decay : 0.0f;

	switch (o->kind) {
	case DT_OPTIM_SGD:
		if (o->n_bufs == 0)
			sgd_plain(len, p, g, u->lr, wd);
		else
			sgd_momentum(len, p, g, o->bufs[0] + a, u->lr, wd,
				     o->momentum, o->nesterov);
		break;
	case DT_OPTIM_ADAM:
	case DT_OPTIM_ADAMW:
		adam(len, p, g, o->bufs[0] + a, o->bufs[1] + a, u->step,
		     u->rc, o->beta1, o->beta2, o->eps,
		     decayed ? u->l2 : 0.0f, decayed ? u->keep : 1.0f);
		break;
	}
}

static void
update_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct update *u = ctx;
	const struct dt_optim *o = u->o;
	size_t a = (size_t)lo * DT_OPTIM_CHUNK;
	size_t b = (size_t)hi * DT_OPTIM_CHUNK < o->n
			   ? (size_t)hi * DT_OPTIM_CHUNK : o->n;

	if (o->decay == NULL) {
		update_range(u, a, b - a, 1);
		return;
	}
	/* Alternate undecayed gaps and decayed spans across [a, b). */
	for (size_t k = 0; k < o->n_decay && a < b; k++) {
		size_t s0 = o->decay[k].offset;
		size_t s1 = s0 + o->decay[k].len;

		if (s1 <= a)
			continue;
		if (s0 > a) {
			size_t e = s0 < b ? s0 : b;

			update_range(u, a, e - a, 0);
			a = e;
		}
		if (a < b && a >= s0) {
			size_t e = s1 < b ? s1 : b;

			update_range(u, a, e - a, 1);
			a = e;
		}
	}
	if (a < b)
		update_range(u, a, b - a, 0);
}

void
dt_optim_set_decay(struct dt_optim *o, const struct dt_optim_span *spans,
		   size_t n_spans, size_t base)
{
	free(o->decay);
	o->decay = dt_xcalloc(n_spans + 1, sizeof *o->decay);
	o->n_decay = 0;
	for (size_t k = 0; k < n_spans; k++) {
		size_t s0 = spans[k].offset, s1 = s0 + spans[k].len;

		s0 = s0 > base ? s0 - base : 0;
		s1 = s1 > base ? s1 - base : 0;
		if (s1 > o->n)
			s1 = o->n;
		if (s0 < s1) {
			o->decay[o->n_decay].offset = s0;
			o->decay[o->n_decay++].len = s1 - s0;
		}
	}
}

void
dt_optim_set_pool(struct dt_optim *o, struct dt_pool *pool)
{
	o->pool = pool;
}

void
dt_optim_step(struct dt_optim *o, float *params, const float *grads, float lr)
{
	struct update u = {
		.o = o, .params = params, .grads = grads, .lr = lr,
	};

	if (o->kind == DT_OPTIM_ADAM || o->kind == DT_OPTIM_ADAMW) {
		/* The corrections in double: 1 - b2^t is tiny for small t
		 * and b2 near 1, where float loses digits. */
		double t = (double)(o->steps + 1);
		double bc1 = 1.0 - pow(o->beta1, t);
		double bc2 = 1.0 - pow(o->beta2, t);

		u.step = (float)(lr / bc1);
		u.rc = (float)(1.0 / sqrt(bc2));
		u.l2 = o->kind == DT_OPTIM_ADAM ? o->weight_decay : 0.0f;
		u.keep = o->kind == DT_OPTIM_ADAMW
				 ? (float)(1.0 - (double)lr * o->weight_decay)
				 : 1.0f;
	}
	/* Each part gets at least 16 chunks: a thread's wake-up costs
	 * about what 32k parameters' update does. */
	dt_pool_for(o->pool,
		    (int64_t)((o->n + DT_OPTIM_CHUNK - 1) / DT_OPTIM_CHUNK), 16,
		    update_part, &u);
	o->steps++;
}

int64_t
dt_optim_steps(const struct dt_optim *o)
{
	return o->steps;
}

float **
dt_optim_state(struct dt_optim *o, int *n_bufs)
{
	*n_bufs = o->n_bufs;
	return o->bufs;
}

void
dt_optim_set_steps(struct dt_optim *o, int64_t steps)
{
	o->steps = steps;
}
