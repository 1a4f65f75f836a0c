/* SPDX-License-Identifier: MIT */
/* shape.c - flatten and reshape: the same values per sample under another
 * shape.
 *
 * flatten gives one dimension, reshape the job's `shape:` (one dimension
 * may be -1: whatever the others leave). Row-major order is kept, so both
 * are a copy forward (the graph gives every node its own output buffer)
 * and a copy, or an add, backward, split over the pass's thread pool in
 * blocks (kern.h).
 * FLOPs: 0. */
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"

static enum dt_status
flatten_infer(struct dt_node *n, const struct dt_job *job,
	      struct dt_error *err)
{
	(void)job;
	(void)err;
	n->out_shape.n_dims = 1;
	n->out_shape.dim[0] = n->in_size[0];
	return DT_OK;
}

static enum dt_status
reshape_infer(struct dt_node *n, const struct dt_job *job,
	      struct dt_error *err)
{
	const struct dt_layer_spec *sp = &n->spec;
	int64_t known = 1;
	int free_dim = -1;
	char buf[96], want[96];

	if (sp->n_shape < 1 || sp->n_shape > DT_SHAPE_MAX_DIMS)
		return dt_node_errorf(n, job, err,
				      "shape needs 1 to %d dimensions, found "
				      "%d", DT_SHAPE_MAX_DIMS, sp->n_shape);
	n->out_shape.n_dims = sp->n_shape;
	for (int i = 0; i < sp->n_shape; i++)
		n->out_shape.dim[i] = sp->shape[i];
	for (int i = 0; i < sp->n_shape; i++) {
		if (sp->shape[i] == -1 && free_dim < 0) {
			free_dim = i;
			continue;
		}
		if (sp->shape[i] == -1)
			return dt_node_errorf(n, job, err,
					      "shape: only one dimension may "
					      "be -1");
		if (sp->shape[i] < 1 || sp->shape[i] > n->in_size[0])
			return dt_node_errorf(n, job, err,
					      "shape.%d: must be -1 or in "
					      "[1, %lld], found %lld", i,
					      (long long)n->in_size[0],
					      (long long)sp->shape[i]);
		/* Both factors are at most in_size < 2^31: no overflow. */
		known *= sp->shape[i];
		if (known > n->in_size[0])
			break;
	}
	if (free_dim >= 0 && known <= n->in_size[0] &&
	    n->in_size[0] % known == 0)
		n->out_shape.dim[free_dim] = n->in_size[0] / known;
	else if (free_dim >= 0 || known != n->in_size[0])
		return dt_node_errorf(n, job, err,
				      "shape %s does not hold the %lld values "
				      "of %s %s",
				      dt_shape_format(&n->out_shape, want,
						      sizeof want),
				      (long long)n->in_size[0],
				      dt_node_input_name(n, 0),
				      dt_shape_format(&n->in_shape[0], buf,
						      sizeof buf));
	return DT_OK;
}

static void
copy_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	dt_kern_par_copy(p->pool, in[0], n->out, p->batch * n->out_size);
}

static void
copy_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
	      float *const *din, const bool *din_add)
{
	const int64_t len = p->batch * n->out_size;
	const float *dy = n->dout;

	(void)in;
	if (din[0] == NULL)
		return;
	if (!din_add[0])
		dt_kern_par_copy(p->pool, dy, din[0], len);
	else
		dt_kern_par_acc(p->pool, dy, din[0], len);
}

static double
no_flops(const struct dt_node *n)
{
	(void)n;
	return 0.0;
}

const struct dt_layer_ops dt_layer_flatten = {
	.kind = "flatten",
	.infer = flatten_infer,
	.forward = copy_forward,
	.backward = copy_backward,
	.fwd_flops = no_flops,
};

const struct dt_layer_ops dt_layer_reshape = {
	.kind = "reshape",
	.infer = reshape_infer,
	.forward = copy_forward,
	.backward = copy_backward,
	.fwd_flops = no_flops,
};
