/* SPDX-License-Identifier: MIT */
/* concat.c - joins 2 to 4 inputs along their last axis: (T, a) and (T, b)
 * give (T, a + b); vectors (a) and (b) give (a + b).
 *
 * Every dimension but the last must agree; a mismatch names both inputs
 * and their shapes. Forward copies each input's rows into its slice of
 * the output rows; backward copies (or adds) the slices back.
 * FLOPs: 0. */
#include <string.h>

#include "graph/layer.h"

static enum dt_status
concat_infer(struct dt_node *n, const struct dt_job *job,
	     struct dt_error *err)
{
	const struct dt_shape *s0 = &n->in_shape[0];
	int64_t last = 0;
	char a[96], b[96];

	for (int k = 0; k < n->n_inputs; k++) {
		const struct dt_shape *s = &n->in_shape[k];
		bool ok = s->n_dims == s0->n_dims && s->n_dims > 0;

		for (int d = 0; ok && d < s->n_dims - 1; d++)
			ok = s->dim[d] == s0->dim[d];
		if (!ok)
			return dt_node_errorf(n, job, err,
					      "input shapes differ before the "
					      "last axis: %s %s vs %s %s",
					      dt_node_input_name(n, 0),
					      dt_shape_format(s0, a, sizeof a),
					      dt_node_input_name(n, k),
					      dt_shape_format(s, b, sizeof b));
		last += s->dim[s->n_dims - 1];
	}
	n->out_shape = *s0;
	n->out_shape.dim[s0->n_dims - 1] = last;
	return DT_OK;
}

/* Rows per sample and the width of input k's slice. */
static int64_t
rows_of(const struct dt_node *n)
{
	return n->out_size / n->out_shape.dim[n->out_shape.n_dims - 1];
}

static int64_t
width_of(const struct dt_node *n, int k)
{
	return n->in_shape[k].dim[n->in_shape[k].n_dims - 1];
}

static void
concat_forward(struct dt_node *n, struct dt_pass *p, const float *const *in)
{
	const int64_t rows = p->batch * rows_of(n);
	const int64_t out_w = n->out_shape.dim[n->out_shape.n_dims - 1];
	int64_t at = 0;

	for (int k = 0; k < n->n_inputs; k++) {
		const int64_t w = width_of(n, k);

		for (int64_t r = 0; r < rows; r++)
			memcpy(n->out + r * out_w + at, in[k] + r * w,
			       (size_t)w * sizeof(float));
		at += w;
	}
}

static void
concat_backward(struct dt_node *n, struct dt_pass *p, const float *const *in,
		float *const *din, const bool *din_add)
{
	const int64_t rows = p->batch * rows_of(n);
	const int64_t out_w = n->out_shape.dim[n->out_shape.n_dims - 1];
	int64_t at = 0;

	(void)in;
	for (int k = 0; k < n->n_inputs; k++) {
		const int64_t w = width_of(n, k);

		if (din[k] != NULL)
			for (int64_t r = 0; r < rows; r++) {
				const float *dy = n->dout + r * out_w + at;
				float *dx = din[k] + r * w;

				if (din_add[k])
					for (int64_t j = 0; j < w; j++)
						dx[j] += dy[j];
				else
					memcpy(dx, dy,
					       (size_t)w * sizeof(float));
			}
		at += w;
	}
}

static double
concat_fwd_flops(const struct dt_node *n)
{
	(void)n;
	return 0.0;
}

const struct dt_layer_ops dt_layer_concat = {
	.kind = "concat",
	.min_inputs = 2,
	.max_inputs = DT_NODE_MAX_INPUTS,
	.infer = concat_infer,
	.forward = concat_forward,
	.backward = concat_backward,
	.fwd_flops = concat_fwd_flops,
};
