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

#include <math.h>
#include <stdlib.h>

#include "util/alloc.h"

struct dt_optim {
	enum dt_optim_kind kind;
	size_t n;		/* parameters */
	int64_t steps;		/* completed updates */
	float momentum, weight_decay;
	bool nesterov;
	float beta1, beta2, eps;
	int n_bufs;
	float *bufs[2];		/* sgd: momentum (n); adam: m (n), v (n) */
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
	free(o);
}

/* The loops below take restrict pointers and scalar arguments only, so
 * that the compiler vectorises them. */

static void
sgd_plain(size_t n, float *restrict p, const float *restrict g, float lr,
	  float wd)
{
	for (size_t i = 0; i < n; i++)
		p[i] -= lr * (g[i] + wd * p[i]);
}

static void
sgd_momentum(size_t n, float *restrict p, const float *restrict g,
	     float *restrict buf, float lr, float wd, float mu, bool nesterov)
{
	if (nesterov) {
		for (size_t i = 0; i < n; i++) {
			float d = g[i] + wd * p[i];

			buf[i] = mu * buf[i] + d;
			p[i] -= lr * (d + mu * buf[i]);
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			buf[i] = mu * buf[i] + (g[i] + wd * p[i]);
			p[i] -= lr * buf[i];
		}
	}
}

/* One Adam update with the bias corrections folded into two scalars:
 * step = lr / (1 - b1^t) and rc = 1 / sqrt(1 - b2^t), so that
 * lr * mhat / (sqrt(vhat) + eps) = step * m / (sqrt(v) * rc + eps). */
static void
adam(size_t n, float *restrict p, const float *restrict g,
     float *restrict m, float *restrict v, float step, float rc, float b1,
     float b2, float eps, float wd)
{
	for (size_t i = 0; i < n; i++) {
		float d = g[i] + wd * p[i];

		m[i] = b1 * m[i] + (1.0f - b1) * d;
		v[i] = b2 * v[i] + (1.0f - b2) * d * d;
		p[i] -= step * m[i] / (sqrtf(v[i]) * rc + eps);
	}
}

static void
decay(size_t n, float *restrict p, float factor)
{
	for (size_t i = 0; i < n; i++)
		p[i] *= factor;
}

void
dt_optim_step(struct dt_optim *o, float *params, const float *grads, float lr)
{
	double t, bc1, bc2;

	switch (o->kind) {
	case DT_OPTIM_SGD:
		if (o->n_bufs == 0)
			sgd_plain(o->n, params, grads, lr, o->weight_decay);
		else
			sgd_momentum(o->n, params, grads, o->bufs[0], lr,
				     o->weight_decay, o->momentum, o->nesterov);
		break;
	case DT_OPTIM_ADAM:
	case DT_OPTIM_ADAMW:
		/* The corrections in double: 1 - b2^t is tiny for small t
		 * and b2 near 1, where float loses digits. */
		t = (double)(o->steps + 1);
		bc1 = 1.0 - pow(o->beta1, t);
		bc2 = 1.0 - pow(o->beta2, t);
		if (o->kind == DT_OPTIM_ADAMW) {
			decay(o->n, params,
			      (float)(1.0 - (double)lr * o->weight_decay));
		}
		adam(o->n, params, grads, o->bufs[0], o->bufs[1],
		     (float)(lr / bc1), (float)(1.0 / sqrt(bc2)), o->beta1,
		     o->beta2, o->eps,
		     o->kind == DT_OPTIM_ADAM ? o->weight_decay : 0.0f);
		break;
	}
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
