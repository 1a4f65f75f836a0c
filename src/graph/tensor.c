/* SPDX-License-Identifier: MIT */
/* tensor.c - tensor parallelism over the model graph: which nodes split and
 * how (Megatron-LM's layout: Shoeybi et al., "Megatron-LM: Training
 * Multi-Billion Parameter Language Models Using Model Parallelism", 2019),
 * the tensor group the split nodes sum over, the gradients of replicated
 * tensors, and the floats the sums move. The split kernels themselves live
 * with their layers (dense.c, attention.c); layer.h says what each mode
 * computes. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "util/alloc.h"

/* Whether node n passes a split activation through unchanged in layout:
 * an elementwise node (activation, dropout) that a column/row pair may
 * have between its two dense layers. */
static bool
is_passthrough(const struct dt_node *n)
{
	return n->ops == &dt_layer_activation || n->ops == &dt_layer_dropout;
}

/* The one node reading node i (n_consumers == 1), or -1. */
static int
only_consumer(const struct dt_model *m, int i)
{
	if (m->nodes[i].n_consumers != 1)
		return -1;
	for (int j = i + 1; j < m->n_nodes; j++)
		for (int k = 0; k < m->nodes[j].n_inputs; k++)
			if (m->nodes[j].inputs[k] == i)
				return j;
	return -1;
}

/* The dense node that dense node i pairs with as its row half, or -1: the
 * end of a chain of activation and dropout nodes, each read by its next
 * node alone. */
static int
row_partner(const struct dt_model *m, int i)
{
	int j = only_consumer(m, i);

	while (j >= 0 && is_passthrough(&m->nodes[j]))
		j = only_consumer(m, j);
	if (j >= 0 && m->nodes[j].ops == &dt_layer_dense &&
	    m->nodes[j].tie_src == NULL)
		return j;
	return -1;
}

static void
reset_modes(struct dt_model *m)
{
	for (int i = 0; i < m->n_nodes; i++) {
		m->nodes[i].tp_mode = DT_TP_NONE;
		m->nodes[i].tp_size = 1;
	}
}

/* Sums the nodes' fwd_flops in node order, as dt_model_new does, so that
 * tp_size 1 gives back the same bits. */
static void
recount_flops(struct dt_model *m)
{
	m->fwd_flops = 0.0;
	for (int i = 0; i < m->n_nodes; i++)
		m->fwd_flops += m->nodes[i].ops->fwd_flops(&m->nodes[i]);
}

/* dt_node_errorf, as a plan error. */
static enum dt_status
refuse(struct dt_model *m, const struct dt_node *n, const struct dt_job *job,
       struct dt_error *err, const char *what, int64_t value, int tp_size)
{
	dt_node_errorf(n, job, err, "tensor_parallel %d does not divide %s "
		       "%lld", tp_size, what, (long long)value);
	if (err != NULL)
		err->status = DT_ERR_PLAN;
	reset_modes(m);
	recount_flops(m);
	return DT_ERR_PLAN;
}

enum dt_status
dt_model_plan_tensor_parallel(struct dt_model *m, const struct dt_job *job,
			      int tp_size, struct dt_error *err)
{
	reset_modes(m);
	if (tp_size < 1)
		return dt_errorf(err, DT_ERR_PLAN, "%s: parallel."
				 "tensor_parallel: must be >= 1, found %d",
				 job->path[0] ? job->path : "<job>", tp_size);
	if (tp_size == 1) {
		recount_flops(m);
		return DT_OK;
	}
	for (int i = 0; i < m->n_nodes; i++) {
		struct dt_node *n = &m->nodes[i];
		int j;

		if (n->ops == &dt_layer_attention) {
			if (n->spec.heads % tp_size != 0)
				return refuse(m, n, job, err, "heads",
					      n->spec.heads, tp_size);
			n->tp_mode = DT_TP_HEADS;
			n->tp_size = tp_size;
			continue;
		}
		/* A dense already made the row half of a pair is done; a
		 * tied one stays whole, as its embedding does. */
		if (n->ops != &dt_layer_dense || n->tp_mode != DT_TP_NONE ||
		    n->tie_src != NULL)
			continue;
		j = row_partner(m, i);
		if (j < 0)
			continue;
		if (n->spec.units % tp_size != 0)
			return refuse(m, n, job, err, "units", n->spec.units,
				      tp_size);
		if (m->nodes[j].tensor[0].shape[0] % tp_size != 0)
			return refuse(m, &m->nodes[j], job, err,
				      "input features",
				      m->nodes[j].tensor[0].shape[0], tp_size);
		n->tp_mode = DT_TP_COLUMN;
		n->tp_size = tp_size;
		m->nodes[j].tp_mode = DT_TP_ROW;
		m->nodes[j].tp_size = tp_size;
	}
	recount_flops(m);
	return DT_OK;
}

enum dt_status
dt_model_plan_vocab_parallel(struct dt_model *m, const struct dt_job *job,
			     int tp_size, bool split_tied,
			     struct dt_error *err)
{
	const int last = m->n_nodes - 1;
	struct dt_node *loss = &m->nodes[last], *head;

	(void)job;
	(void)err;
	if (tp_size <= 1)
		return DT_OK;
	for (int i = 0; i < m->n_nodes; i++) {
		struct dt_node *n = &m->nodes[i];

		if (n->ops != &dt_layer_embedding)
			continue;
		if (n->spec.vocab % tp_size != 0)
			continue;	/* whole: GPT-2's 50257 at any even s */
		n->tp_mode = DT_TP_VOCAB;
		n->tp_size = tp_size;
	}
	if (loss->ops != &dt_layer_softmax_xent ||
	    loss->inputs[0] == DT_NODE_INPUT)
		return DT_OK;
	head = &m->nodes[loss->inputs[0]];
	if (head->ops != &dt_layer_dense || head->tp_mode != DT_TP_NONE ||
	    head->n_consumers != 1 || head->fused_act != DT_ACT_NONE ||
	    head->spec.activation != DT_ACT_NONE ||
	    head->spec.units % tp_size != 0)
		return DT_OK;
	if (head->tie_src != NULL &&
	    (!split_tied || head->tie_src->tp_mode != DT_TP_VOCAB))
		return DT_OK;
	head->tp_mode = DT_TP_VOCAB;
	head->tp_size = tp_size;
	loss->tp_mode = DT_TP_VOCAB;
	loss->tp_size = tp_size;
	recount_flops(m);
	return DT_OK;
}

void
dt_model_set_tensor_group(struct dt_model *m, int tp_rank, int tp_size,
			  void (*allreduce)(void *ctx, float *buf, size_t n),
			  void *ctx)
{
	assert(tp_size >= 1 && tp_rank >= 0 && tp_rank < tp_size);
	assert(tp_size == 1 || allreduce != NULL);
	m->tp.rank = tp_rank;
	m->tp.size = tp_size;
	m->tp.allreduce = allreduce;
	m->tp.ctx = ctx;
}

bool
dt_node_tp_block(const struct dt_node *n, int k, int rank,
		 struct dt_tp_block *b)
{
	const struct dt_param_tensor *pt = &n->tensor[k];
	const int s = n->tp_size;
	/* a 1-D tensor is one row of shape[0] floats */
	const int64_t rows = pt->n_dims == 2 ? pt->shape[0] : 1;
	const int64_t cols = pt->n_dims == 2 ? pt->shape[1] : pt->shape[0];
	bool by_rows;

	if (s <= 1 || k >= n->n_tensors)
		return false;
	if (n->ops == &dt_layer_embedding && n->tp_mode == DT_TP_VOCAB)
		by_rows = true;		/* table (V, C): rows of the range */
	else if (n->ops != &dt_layer_dense)
		return false;
	else if (n->tp_mode == DT_TP_ROW)
		by_rows = k == 0 ? true : false;
	else if (n->tp_mode == DT_TP_COLUMN)
		by_rows = false;
	else if (n->tp_mode == DT_TP_VOCAB)
		/* a tied copy is (V, C): the classes are its rows */
		by_rows = n->tie_src != NULL && k == 0;
	else
		return false;
	if (n->tp_mode == DT_TP_ROW && k != 0)
		return false;		/* a row layer's bias: replicated */
	b->n_seg = 1;
	b->row_len = cols;
	if (by_rows) {
		b->first_row = rank * (rows / s);
		b->n_rows = rows / s;
		b->seg_col[0] = 0;
		b->seg_len = cols;
	} else {
		b->first_row = 0;
		b->n_rows = rows;
		b->seg_col[0] = rank * (cols / s);
		b->seg_len = cols / s;
	}
	return true;
}

/* Whether tensor k of node n is split when the node owns its slice. */
static bool
is_split(const struct dt_node *n, int k)
{
	struct dt_tp_block b;

	return dt_node_tp_block(n, k, 0, &b);
}

/* Copies the block of rank `rank` of tensor k of node n from whole (the
 * whole tensor) into blk, row by row and segment by segment
 * (dt_node_tp_block). */
static void
copy_block(const struct dt_node *n, int k, int rank, const float *whole,
	   float *blk)
{
	struct dt_tp_block b;

	if (!dt_node_tp_block(n, k, rank, &b))
		return;
	for (int64_t i = 0; i < b.n_rows; i++)
		for (int j = 0; j < b.n_seg; j++)
			memcpy(blk + (i * b.n_seg + j) * b.seg_len,
			       whole + (b.first_row + i) * b.row_len +
			       b.seg_col[j], (size_t)b.seg_len * sizeof(float));
}

/* Lays out the arenas again at the blocks' sizes (trained tensors, then
 * buffers, in node order, as graph.c's layout) and moves every tensor of
 * the stage there, a split one as its block. */
static void
relayout(struct dt_model *m)
{
	size_t at = 0, n_trained = 0;
	float *params, *grads;

	for (int pass = 0; pass < 2; pass++) {
		for (int i = m->first; i <= m->last; i++)
			for (int k = 0; k < m->nodes[i].n_tensors; k++) {
				const struct dt_param_tensor *pt =
					&m->nodes[i].tensor[k];

				if (pt->buffer != (pass == 1))
					continue;
				at += (size_t)(is_split(&m->nodes[i], k)
					       ? pt->size / m->tp.size
					       : pt->size);
			}
		if (pass == 0)
			n_trained = at;
	}
	params = dt_xalloc_pages(at);
	grads = dt_xalloc_pages(at);
	at = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int i = m->first; i <= m->last; i++)
			for (int k = 0; k < m->nodes[i].n_tensors; k++) {
				struct dt_node *n = &m->nodes[i];
				struct dt_param_tensor *pt = &n->tensor[k];

				if (pt->buffer != (pass == 1))
					continue;
				if (is_split(n, k)) {
					copy_block(n, k, m->tp.rank, pt->data,
						   params + at);
					copy_block(n, k, m->tp.rank, pt->grad,
						   grads + at);
					pt->size /= m->tp.size;
				} else {
					memcpy(params + at, pt->data,
					       (size_t)pt->size *
					       sizeof(float));
					memcpy(grads + at, pt->grad,
					       (size_t)pt->size *
					       sizeof(float));
				}
				pt->offset = at;
				pt->data = params + at;
				pt->grad = grads + at;
				at += (size_t)pt->size;
			}
	dt_free_pages(m->params, m->n_params);
	dt_free_pages(m->grads, m->n_params);
	m->params = params;
	m->grads = grads;
	m->n_params = at;
	m->n_trained = n_trained;
}

void
dt_model_tp_own_slices(struct dt_model *m)
{
	bool any = false;

	assert(m->params != NULL && m->grads != NULL);
	if (m->tp.size <= 1)
		return;
	for (int i = m->first; i <= m->last; i++)
		if (is_split(&m->nodes[i], 0) && !m->nodes[i].tp_own)
			any = true;
	if (!any)
		return;
	relayout(m);
	for (int i = m->first; i <= m->last; i++)
		if (is_split(&m->nodes[i], 0))
			m->nodes[i].tp_own = true;
}

/* Zeroes the gradient of tensor pt when it lies in the trained prefix,
 * inside floats [lo, hi). */
static void
zero_grad(const struct dt_model *m, const struct dt_param_tensor *pt,
	  size_t lo, size_t hi)
{
	if (pt->buffer || pt->grad == NULL || pt->offset >= m->n_trained ||
	    pt->offset < lo || pt->offset >= hi)
		return;
	memset(m->grads + pt->offset, 0, (size_t)pt->size * sizeof(float));
}

void
dt_model_tp_prepare_grads(struct dt_model *m)
{
	dt_model_tp_prepare_grads_range(m, 0, SIZE_MAX);
}

void
dt_model_tp_prepare_grads_range(struct dt_model *m, size_t lo, size_t hi)
{
	if (m->tp.size <= 1 || m->tp.rank == 0 || m->grads == NULL)
		return;
	for (int i = 0; i < m->n_nodes; i++) {
		const struct dt_node *n = &m->nodes[i];

		switch (n->tp_size > 1 ? n->tp_mode : DT_TP_NONE) {
		case DT_TP_NONE:
			for (int k = 0; k < n->n_tensors; k++)
				zero_grad(m, &n->tensor[k], lo, hi);
			break;
		case DT_TP_COLUMN:
		case DT_TP_VOCAB:	/* every tensor of the node is split */
			break;
		case DT_TP_ROW:		/* the bias, if any */
			if (n->n_tensors > 1)
				zero_grad(m, &n->tensor[1], lo, hi);
			break;
		case DT_TP_HEADS:	/* proj_bias, the last with bias */
			if (n->spec.bias)
				zero_grad(m, &n->tensor[n->n_tensors - 1], lo,
					  hi);
			break;
		}
	}
}

/* Marks in runs[] the nodes whose backward graph.c runs: those leading to
 * parameters (needs_grad) that are the loss or feed a node that runs and
 * so write its output gradient. */
static void
mark_backward(const struct dt_model *m, bool *runs)
{
	memset(runs, 0, (size_t)m->n_nodes * sizeof *runs);
	for (int i = m->n_nodes - 1; i >= 0; i--) {
		const struct dt_node *n = &m->nodes[i];

		if (!n->needs_grad || (i < m->n_nodes - 1 && !runs[i]))
			continue;
		runs[i] = true;
		for (int k = 0; k < n->n_inputs; k++)
			if (n->inputs[k] != DT_NODE_INPUT &&
			    m->nodes[n->inputs[k]].needs_grad)
				runs[n->inputs[k]] = true;
	}
}

int64_t
dt_model_tp_floats_per_sample(const struct dt_model *m, int first, int last)
{
	int64_t total = 0;
	bool *runs;

	assert(first >= 0 && last < m->n_nodes);
	runs = dt_xcalloc((size_t)m->n_nodes, sizeof *runs);
	mark_backward(m, runs);
	for (int i = first; i <= last; i++) {
		const struct dt_node *n = &m->nodes[i];
		int src = n->inputs[0];
		bool din = runs[i] && src != DT_NODE_INPUT &&
			   m->nodes[src].needs_grad;

		if (n->tp_size <= 1)
			continue;
		if (n->tp_mode == DT_TP_ROW || n->tp_mode == DT_TP_HEADS)
			total += n->out_size;
		if ((n->tp_mode == DT_TP_COLUMN ||
		     n->tp_mode == DT_TP_HEADS) && din)
			total += n->in_size[0];
		if (n->tp_mode != DT_TP_VOCAB)
			continue;
		if (n->ops == &dt_layer_embedding)
			total += n->out_size;	/* the looked-up rows */
		else if (n->ops == &dt_layer_dense && din)
			total += n->in_size[0];	/* dY W over the classes */
		else if (n->ops == &dt_layer_softmax_xent)
			/* per row: the maxima and the z[label], first-maximum
			 * pairs of every rank, and s running sums */
			total += 4 * (int64_t)n->tp_size *
				 (n->out_size / n->out_shape.dim[
					 n->out_shape.n_dims - 1]);
	}
	free(runs);
	return total;
}
