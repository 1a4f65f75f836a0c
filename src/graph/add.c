/* SPDX-License-Identifier: MIT */
/* add.c - elementwise sum of 2 to 4 inputs of one shape (residual
 * connections: `inputs: [block_in, attn]`).
 *
 * Shapes must match exactly (no broadcasting); a mismatch names both
 * inputs and their shapes. Backward hands dY to every input unchanged.
 * Both passes split the values over the pass's thread pool in blocks
 * (kern.h), which never changes a bit. Under sequence parallelism
 * (struct dt_node's seq_rows) the node adds its tensor rank's rows.
 * FLOPs: 1 per value per input after the first. */
#include <string.h>

#include "graph/kern.h"
#include "graph/layer.h"

static bool
same_shape(const struct dt_shape *a, const struct dt_shape *b)
{
	if (a->n_dims != b->n_dims)
		return false;
	for (int d = 0; d < a->n_dims; d++)
		if (a->dim[d] != b->dim[d])
			return false;
	return true;
}

static enum dt_status
add_infer(struct dt_node *n, const struct dt_job *job, struct dt_error *err)
{
	char a[96], b[96];

	for (int k = 1; k < n->n_inputs; k++)
		if (!same_shape(&n->in_shape[0], &n->in_shape[k]))
			return dt_node_errorf(n, job, err,
					      "input shapes differ: %s %s vs "
					      "%s %s",
					      dt_node_input_name(n, 0),
					      dt_shape_format(&n->in_shape[0],
							      a, sizeof a),
					      dt_node_input_name(n, k),
					      dt_shape_format(&n->in_shape[k],
							      b, sizeof b));
	n->out_shape = n->in_shape[0];
	return DT_OK;
}

/* The values node n adds in pass p: its rows (dt_node_rows) times the
 * row length. */
static int64_t
add_len(const struct dt_node *n, const struct dt_pass *p)
{
	int64_t first, rows;

	dt_node_rows(n, p, &first, &rows);
	return rows * dt_node_row_len(n);
}

static void
add_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	const int64_t len = add_len(n, p);
	float *y = n->out;

	dt_kern_par_add(p->pool, in[0], in[1], y, len);
	for (int k = 2; k < n->n_inputs; k++)
		dt_kern_par_acc(p->pool, in[k], y, len);
}

static void
add_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
	     float *const *din, const bool *din_add)
{
	const int64_t len = add_len(n, p);
	const float *dy = n->dout;

	(void)in;
	for (int k = 0; k < n->n_inputs; k++) {
		float *dx = din[k];

		if (dx == NULL)
			continue;
		if (din_add[k])
			dt_kern_par_acc(p->pool, dy, dx, len);
		else
			dt_kern_par_copy(p->pool, dy, dx, len);
	}
}

static double
add_fwd_flops(const struct dt_node *n)
{
	return (double)(n->n_inputs - 1) * (double)n->out_size;
}

const struct dt_layer_ops dt_layer_add = {
	.kind = "add",
	.min_inputs = 2,
	.max_inputs = DT_NODE_MAX_INPUTS,
	.infer = add_infer,
	.forward = add_forward,
	.backward = add_backward,
	.fwd_flops = add_fwd_flops,
	.row_shares = true,
};
