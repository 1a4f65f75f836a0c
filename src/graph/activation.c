/* SPDX-License-Identifier: MIT */
/* activation.c - elementwise activations: relu, tanh, sigmoid, gelu.
 *
 * relu(x) = max(0, x); tanh; sigmoid(x) = 1 / (1 + e^-x); gelu in the tanh
 * approximation of Hendrycks & Gimpel, "Gaussian Error Linear Units
 * (GELUs)", 2016: gelu(x) = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 * Backward uses the output where it suffices (relu, tanh, sigmoid) and the
 * input for gelu. Each pass is one loop over batch * size values: relu's
 * passes and the tanh and sigmoid backward passes are kernels GCC
 * vectorises at -O2 (DT_VEC_LOOP); gelu's go through the kernel seam
 * (kern.h: x / (1 + e^(-2u)), the same function with one vectorised exp
 * instead of libm's tanhf, which cost 20 ns a value and half of a
 * char-GPT step); tanh and sigmoid forward call libm per value. The
 * loop is split over the pass's thread pool, which never changes a bit.
 * A relu that is a convolution's `activation:` runs inside the
 * convolution's passes (graph.c's fuse_activations, layer.h's
 * act_fused); its node then does nothing.
 * FLOPs: counted as 1 per element (nominal; libm calls are not counted). */
#include <assert.h>
#include <math.h>

#include "graph/kern.h"
#include "graph/layer.h"
#include "util/threadpool.h"

const char *
dt_activation_name(enum dt_activation act)
{
	switch (act) {
	case DT_ACT_NONE: return "none";
	case DT_ACT_RELU: return "relu";
	case DT_ACT_TANH: return "tanh";
	case DT_ACT_SIGMOID: return "sigmoid";
	case DT_ACT_GELU: return "gelu";
	}
	return "unknown";
}

/* y = max(0, x) over len values. */
static void
relu_forward(const float *restrict x, float *restrict y, int64_t len)
{
	DT_VEC_LOOP(i, len, y[i] = x[i] > 0.0f ? x[i] : 0.0f);
}

static enum dt_status
activation_infer(struct dt_node *n, const struct dt_job *job,
		 struct dt_error *err)
{
	switch (n->spec.activation) {
	case DT_ACT_RELU:
	case DT_ACT_TANH:
	case DT_ACT_SIGMOID:
	case DT_ACT_GELU:
		break;
	case DT_ACT_NONE:
		return dt_node_errorf(n, job, err,
				      "an activation layer needs `activation:` "
				      "relu, tanh, sigmoid or gelu");
	default:
		return dt_node_errorf(n, job, err,
				      "activation %d is not known to the "
				      "model builder",
				      (int)n->spec.activation);
	}
	n->kind = dt_activation_name(n->spec.activation);
	n->out_shape = n->in_shape[0];
	return DT_OK;
}

/* y = f(x) over len values. */
static void
forward_range(const struct dt_node *n, const float *x, float *y, int64_t len)
{
	switch (n->spec.activation) {
	case DT_ACT_RELU:
		relu_forward(x, y, len);
		break;
	case DT_ACT_TANH:
		for (int64_t i = 0; i < len; i++)
			y[i] = tanhf(x[i]);
		break;
	case DT_ACT_SIGMOID:
		/* expf(-x) overflows to inf for x < -88, giving exactly 0:
		 * no NaN, so no branch on the sign is needed. */
		for (int64_t i = 0; i < len; i++)
			y[i] = 1.0f / (1.0f + expf(-x[i]));
		break;
	case DT_ACT_GELU:
		dt_kern_gelu(x, y, len);
		break;
	default:
		assert(!"activation_infer let an unknown activation through");
	}
}

/* d = g(i) for i in [0, len), or d += g(i) when add: two loops rather
 * than a branch inside one. Each runs through DT_VEC_LOOP, so it becomes
 * SIMD code when g is plain arithmetic on restrict parameters of the
 * calling kernel (relu, tanh, sigmoid). */
#define EMIT(d, add, len, g)                                    \
	do {                                                    \
		if (add)                                        \
			DT_VEC_LOOP(i, len, (d)[i] += (g));     \
		else                                            \
			DT_VEC_LOOP(i, len, (d)[i] = (g));      \
	} while (0)

/* dy where relu passed its input, else 0; a function so that both loads
 * happen unconditionally and the loop vectorises. */
static inline float
relu_grad(float y, float dy)
{
	return y > 0.0f ? dy : 0.0f;
}

/* dx = (or +=) f'(x) dy over len values, from the output y = f(x) for
 * relu, tanh and sigmoid. */
static void
relu_backward(const float *restrict y, const float *restrict dy,
	      float *restrict dx, int64_t len, bool add)
{
	EMIT(dx, add, len, relu_grad(y[i], dy[i]));
}

static void
tanh_backward(const float *restrict y, const float *restrict dy,
	      float *restrict dx, int64_t len, bool add)
{
	EMIT(dx, add, len, dy[i] * (1.0f - y[i] * y[i]));
}

static void
sigmoid_backward(const float *restrict y, const float *restrict dy,
		 float *restrict dx, int64_t len, bool add)
{
	EMIT(dx, add, len, dy[i] * y[i] * (1.0f - y[i]));
}

/* dx = (or +=) f'(x) dy over len values. */
static void
backward_range(const struct dt_node *n, const float *x, const float *y,
	       const float *dy, float *dx, int64_t len, bool add)
{
	switch (n->spec.activation) {
	case DT_ACT_RELU:
		relu_backward(y, dy, dx, len, add);
		break;
	case DT_ACT_TANH:
		tanh_backward(y, dy, dx, len, add);
		break;
	case DT_ACT_SIGMOID:
		sigmoid_backward(y, dy, dx, len, add);
		break;
	case DT_ACT_GELU:
		dt_kern_gelu_grad(x, dy, dx, len, add);
		break;
	default:
		assert(!"activation_infer let an unknown activation through");
	}
}

/* The passes split the values over the pass's thread pool in blocks of
 * DT_ACT_BLOCK (a multiple of the vector loops' 8, so every value gets
 * the arithmetic of a block wherever the parts fall): elementwise, so the
 * pool size never changes the bits. */
#define DT_ACT_BLOCK 4096

struct act_job {
	const struct dt_node *n;
	int64_t len;
	const float *x;		/* (B, size) */
	const float *y;		/* (B, size) */
	float *out;		/* (B, size): forward's y */
	const float *dy;	/* (B, size) */
	float *dx;		/* (B, size) */
	bool add;
};

static void
act_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct act_job *j = ctx;
	int64_t a = lo * DT_ACT_BLOCK;
	int64_t b = hi * DT_ACT_BLOCK < j->len ? hi * DT_ACT_BLOCK : j->len;

	if (j->out != NULL)
		forward_range(j->n, j->x + a, j->out + a, b - a);
	else
		backward_range(j->n, j->x + a, j->y + a, j->dy + a, j->dx + a,
			       b - a, j->add);
}

static void
activation_forward(struct dt_node *n, struct dt_pass *p,
		   const float *const *in)
{
	struct act_job j = {
		.n = n, .len = p->batch * n->out_size, .x = in[0],
		.out = n->out,
	};

	if (n->act_fused)	/* done by the layer before, in place */
		return;
	dt_pool_for(p->pool, (j.len + DT_ACT_BLOCK - 1) / DT_ACT_BLOCK, 4,
		    act_part, &j);
}

static void
activation_backward(struct dt_node *n, struct dt_pass *p,
		    const float *const *in, float *const *din,
		    const bool *din_add)
{
	struct act_job j = {
		.n = n, .len = p->batch * n->out_size, .x = in[0],
		.y = n->out, .dy = n->dout, .dx = din[0], .add = din_add[0],
	};

	if (din[0] == NULL || n->act_fused)
		return;
	dt_pool_for(p->pool, (j.len + DT_ACT_BLOCK - 1) / DT_ACT_BLOCK, 4,
		    act_part, &j);
}

static double
activation_fwd_flops(const struct dt_node *n)
{
	return (double)n->out_size;
}

const struct dt_layer_ops dt_layer_activation = {
	.kind = "activation",
	.infer = activation_infer,
	.forward = activation_forward,
	.backward = activation_backward,
	.fwd_flops = activation_fwd_flops,
};
