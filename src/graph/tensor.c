/* SPDX-License-Identifier: MIT */
/* tensor.c - tensor parallelism over the model graph: which nodes split and
 * how (Megatron-LM's layout: Shoeybi et al., "Megatron-LM: Training
 * Multi-Billion Parameter Language Models Using Model Parallelism", 2019),
 * the tensor group the split nodes sum over, the gradients of replicated
 * tensors, the floats the sums move, and the blocks a rank owns when it
 * holds its slices only (dt_node_tp_block; doc/DESIGN.md, "Tensor-parallel
 * slices"). The split kernels themselves live with their layers
 * (dense.c, attention.c); layer.h says what each mode computes. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "graph/stage.h"
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

/* Whether units classes are a vocabulary: some embedding of m has vocab
 * units and is split over tp_size ranks. A head of that many classes
 * splits unevenly where tp_size does not divide them (a language model's
 * output layer, GPT-2's 50257); a classifier's few classes stay whole
 * there, as before the uneven split (splitting 3 classes 2 + 1 would
 * save a few floats for the group's sums of the head's input gradient and
 * the loss's 4 s floats a row). */
static bool
is_vocab_head(const struct dt_model *m, int64_t units, int tp_size)
{
	for (int i = 0; i < m->n_nodes; i++)
		if (m->nodes[i].ops == &dt_layer_embedding &&
		    m->nodes[i].tp_mode == DT_TP_VOCAB &&
		    m->nodes[i].tp_size == tp_size &&
		    m->nodes[i].spec.vocab == units)
			return true;
	return false;
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
		if (n->spec.vocab < tp_size)
			continue;	/* whole: a rank would hold no row */
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
	    head->spec.units < tp_size ||
	    (head->spec.units % tp_size != 0 &&
	     !is_vocab_head(m, head->spec.units, tp_size)))
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

void
dt_model_set_tensor_group_rows(struct dt_model *m,
			       void (*reduce_scatter)(void *ctx, float *buf,
						      size_t rows,
						      size_t row_len),
			       void (*allgather)(void *ctx, float *buf,
						 size_t rows, size_t row_len))
{
	assert(reduce_scatter != NULL && allgather != NULL);
	m->tp.reduce_scatter = reduce_scatter;
	m->tp.allgather = allgather;
}

/* Fills *b with the whole tensor pt as one block: all its rows, each one
 * whole segment (a 1-D tensor is one row). */
static void
whole_block(const struct dt_param_tensor *pt, struct dt_tp_block *b)
{
	memset(b, 0, sizeof *b);
	b->n_rows = pt->n_dims == 2 ? pt->shape[0] : 1;
	b->row_len = pt->shape[pt->n_dims - 1];
	b->n_seg = 1;
	b->seg_len = b->row_len;
}

/* Attention's blocks (DT_TP_HEADS): the tensors whose rows are 3C wide
 * (qkv_weight (C, 3C), qkv_bias (3C)) give the share's C/s columns of
 * each of q, k and v; proj_weight (C, C) its C/s rows; proj_bias (C) is
 * replicated. */
static bool
heads_block(const struct dt_node *n, const struct dt_param_tensor *pt,
	    int rank, struct dt_tp_block *b)
{
	const int64_t c = n->in_shape[0].dim[1], cl = c / n->tp_size;

	whole_block(pt, b);
	if (b->row_len == 3 * c) {
		b->n_seg = 3;
		b->seg_len = cl;
		for (int part = 0; part < 3; part++)
			b->seg_col[part] = part * c + rank * cl;
		return true;
	}
	if (pt->n_dims != 2)
		return false;
	b->n_rows = c / n->tp_size;
	b->first_row = rank * b->n_rows;
	return true;
}

void
dt_tp_vocab_share(int64_t vocab, int s, int rank, int64_t *lo, int64_t *len)
{
	const int64_t q = vocab / s, extra = vocab % s;

	assert(s >= 1 && vocab >= s && rank >= 0 && rank < s);
	*len = q + (rank < extra ? 1 : 0);
	*lo = rank * q + (rank < extra ? rank : extra);
}

int
dt_tp_vocab_owner(int64_t vocab, int s, int64_t c)
{
	const int64_t q = vocab / s, extra = vocab % s;

	assert(s >= 1 && vocab >= s && c >= 0 && c < vocab);
	/* the first extra ranks hold q + 1 each */
	if (c < extra * (q + 1))
		return (int)(c / (q + 1));
	return (int)(extra + (c - extra * (q + 1)) / q);
}

/* Fills *b with rank's share of the rows of a vocabulary tensor (the
 * table (V, C), a tied head's copy (V, C)). */
static void
vocab_rows(int64_t vocab, int s, int rank, struct dt_tp_block *b)
{
	dt_tp_vocab_share(vocab, s, rank, &b->first_row, &b->n_rows);
}

/* Fills *b with rank's share of the columns of an untied head's tensors
 * (weight (C, V), bias (V)): the classes' segment. */
static void
vocab_cols(int64_t vocab, int s, int rank, struct dt_tp_block *b)
{
	dt_tp_vocab_share(vocab, s, rank, &b->seg_col[0], &b->seg_len);
}

bool
dt_node_tp_block(const struct dt_node *n, int k, int rank,
		 struct dt_tp_block *b)
{
	const struct dt_param_tensor *pt;
	struct dt_tp_block blk;

	if (n->tp_size <= 1 || k < 0 || k >= n->n_tensors)
		return false;
	assert(rank >= 0 && rank < n->tp_size);
	pt = &n->tensor[k];
	whole_block(pt, &blk);
	if (n->ops == &dt_layer_attention && n->tp_mode == DT_TP_HEADS) {
		if (!heads_block(n, pt, rank, &blk))
			return false;
	} else if (n->ops == &dt_layer_dense && n->tp_mode == DT_TP_COLUMN) {
		blk.seg_len = blk.row_len / n->tp_size;
		blk.seg_col[0] = rank * blk.seg_len;
	} else if (n->ops == &dt_layer_dense && n->tp_mode == DT_TP_ROW &&
		   k == 0) {
		/* a row layer's weight: the rows of the range */
		blk.n_rows /= n->tp_size;
		blk.first_row = rank * blk.n_rows;
	} else if ((n->ops == &dt_layer_embedding &&
		    n->tp_mode == DT_TP_VOCAB) ||
		   (n->ops == &dt_layer_dense && n->tp_mode == DT_TP_VOCAB &&
		    n->tie_src != NULL && k == 0)) {
		/* the table (V, C) and a tied head's copy (V, C): the rows of
		 * the vocabulary share, uneven where s does not divide V */
		vocab_rows(blk.n_rows, n->tp_size, rank, &blk);
	} else if (n->ops == &dt_layer_dense && n->tp_mode == DT_TP_VOCAB) {
		/* an untied head (C, V), its bias (V) and a tied head's bias:
		 * the classes' columns */
		vocab_cols(blk.row_len, n->tp_size, rank, &blk);
	} else {
		return false;
	}
	*b = blk;
	return true;
}

int64_t
dt_tp_block_floats(const struct dt_tp_block *b)
{
	return b->n_rows * b->n_seg * b->seg_len;
}

bool
dt_tp_block_is_run(const struct dt_tp_block *b)
{
	return b->n_seg == 1 && b->seg_col[0] == 0 &&
	       b->seg_len == b->row_len;
}

/* Copies the block's floats between whole and blk: to_blk from the whole
 * tensor into the block, else back. */
static void
block_copy(const struct dt_tp_block *b, float *whole, float *blk,
	   bool to_blk)
{
	size_t len = (size_t)b->seg_len * sizeof(float);

	for (int64_t i = 0; i < b->n_rows; i++)
		for (int j = 0; j < b->n_seg; j++) {
			float *w = whole + (b->first_row + i) * b->row_len +
				   b->seg_col[j];
			float *k = blk + (i * b->n_seg + j) * b->seg_len;

			if (to_blk)
				memcpy(k, w, len);
			else
				memcpy(w, k, len);
		}
}

void
dt_tp_block_take(const struct dt_tp_block *b, const float *whole,
		 float *blk)
{
	block_copy(b, (float *)whole, blk, true);
}

void
dt_tp_block_put(const struct dt_tp_block *b, const float *blk, float *whole)
{
	block_copy(b, whole, (float *)blk, false);
}

bool
dt_model_tensor_tp_block(const struct dt_model *m, int i, int rank,
			 struct dt_tp_block *b)
{
	const struct dt_node *n;

	assert(i >= 0 && i < m->n_tensors);
	n = &m->nodes[m->tensor_node[i]];
	for (int k = 0; k < n->n_tensors; k++)
		if (&n->tensor[k] == m->tensors[i])
			return dt_node_tp_block(n, k, rank, b);
	assert(!"tensor not in its node");
	return false;
}

/* Whether tensor k of node n is split when the node owns its slice, and
 * if so the floats of its block in *floats. */
static bool
is_split(const struct dt_node *n, int k, int64_t *floats)
{
	struct dt_tp_block b;

	if (!dt_node_tp_block(n, k, 0, &b))
		return false;
	*floats = b.n_rows * b.n_seg * b.seg_len;
	return true;
}

/* dt_tp_block_take where blk lies inside the arena that holds whole, at
 * or below whole: row i's segment j goes to (i n_seg + j) seg_len, at or
 * below where it is read (the segments' columns rise by at least
 * seg_len) and below every segment read after it, so moving them in
 * order overwrites nothing still to be read. */
static void
take_down(const struct dt_tp_block *b, const float *whole, float *blk)
{
	size_t len = (size_t)b->seg_len * sizeof(float);

	for (int64_t i = 0; i < b->n_rows; i++)
		for (int j = 0; j < b->n_seg; j++)
			memmove(blk + (i * b->n_seg + j) * b->seg_len,
				whole + (b->first_row + i) * b->row_len +
				b->seg_col[j], len);
}

/* Lays out the parameter arena again at the blocks' sizes (trained
 * tensors, then buffers, in node order, as graph.c's layout) and moves
 * every tensor of the stage there, a split one as its block (a node that
 * owns its slice already keeps what it holds). In place: the order is
 * the arena's own, so every tensor moves to an offset at or below its
 * old one, and the pages past the new end go back to the kernel
 * (dt_pages_shrink). The gradient arena is made anew at the new size,
 * zero, the whole one freed first (its pages, never written before a
 * backward, were not resident). So the setup holds no more than the
 * whole parameters the model was built with. */
static void
relayout(struct dt_model *m)
{
	size_t at = 0, n_trained = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (int i = m->first; i <= m->last; i++)
			for (int k = 0; k < m->nodes[i].n_tensors; k++) {
				struct dt_node *n = &m->nodes[i];
				struct dt_param_tensor *pt = &n->tensor[k];
				float *params = m->params + at;
				struct dt_tp_block b;

				if (pt->buffer != (pass == 1))
					continue;
				assert(params <= pt->data);
				if (!n->tp_own &&
				    dt_node_tp_block(n, k, m->tp.rank, &b)) {
					take_down(&b, pt->data, params);
					pt->size = b.n_rows * b.n_seg *
						   b.seg_len;
				} else {
					memmove(params, pt->data,
						(size_t)pt->size *
						sizeof(float));
				}
				pt->offset = at;
				pt->data = params;
				at += (size_t)pt->size;
			}
		if (pass == 0)
			n_trained = at;
	}
	dt_pages_shrink(m->params, m->n_params, at);
	dt_free_pages(m->grads, m->n_params);
	m->grads = dt_xalloc_pages(at);
	for (int i = m->first; i <= m->last; i++)
		for (int k = 0; k < m->nodes[i].n_tensors; k++)
			m->nodes[i].tensor[k].grad =
				m->grads + m->nodes[i].tensor[k].offset;
	m->n_params = at;
	m->n_trained = n_trained;
}

bool
dt_model_tp_can_own_slices(const struct dt_model *m)
{
	for (int i = 0; i < m->n_nodes; i++) {
		const struct dt_node *n = &m->nodes[i];
		bool blocks = false;
		int64_t floats;

		for (int k = 0; k < n->n_tensors && !blocks; k++)
			blocks = is_split(n, k, &floats);
		/* a node without tensors (the loss) has nothing to hold */
		if (n->tp_size > 1 && n->n_tensors > 0 && !blocks)
			return false;
		/* a tied copy (V, C) held whole while its table is a block
		 * of rows: dt_model_tie_fill and the tie's sum copy and add
		 * the copy's floats, so the two must be split alike */
		if (n->tie_src != NULL && n->n_tensors > 0 &&
		    is_split(n->tie_src, 0, &floats) !=
		    is_split(n, 0, &floats))
			return false;
	}
	return true;
}

bool
dt_model_tp_slice_logits(struct dt_model *m, const int *stage_of, int rank)
{
	struct dt_node *loss = &m->nodes[m->n_nodes - 1];
	struct dt_node *head;
	int64_t classes, lo, len;

	if (!m->train_layout || loss->n_inputs != 1 ||
	    loss->inputs[0] == DT_NODE_INPUT ||
	    dt_graph_loss_in_place(m, stage_of) <= 0)
		return false;
	head = &m->nodes[loss->inputs[0]];
	if (head->tp_size <= 1 || head->tp_mode != DT_TP_VOCAB ||
	    loss->tp_size != head->tp_size ||
	    loss->tp_mode != DT_TP_VOCAB || head->tie_src != NULL ||
	    head->out_cols > 0)
		return false;
	classes = head->out_shape.dim[head->out_shape.n_dims - 1];
	assert(rank >= 0 && rank < head->tp_size);
	dt_tp_vocab_share(classes, head->tp_size, rank, &lo, &len);
	/* a row of len + 1 floats: with ld = len, oneDNN's f32 products
	 * (the kernels' auto choice on AVX-512 processors) took another
	 * path for a contiguous dY than for the whole buffer's (ld = V >
	 * len) and gave other bits in the head's backward (tp-ckpt.sh's
	 * MLP, from step 5); one float of padding a row keeps ld > len */
	head->out_cols = len + 1;
	loss->out_cols = len + 1;
	return true;
}

void
dt_model_tp_own_slices(struct dt_model *m)
{
	bool any = false;
	int64_t floats;

	assert(m->params != NULL && m->grads != NULL);
	if (m->tp.size <= 1)
		return;
	m->tp.own = true;
	for (int i = m->first; i <= m->last; i++)
		if (is_split(&m->nodes[i], 0, &floats) && !m->nodes[i].tp_own)
			any = true;
	if (!any)
		return;
	relayout(m);
	for (int i = m->first; i <= m->last; i++)
		if (is_split(&m->nodes[i], 0, &floats))
			m->nodes[i].tp_own = true;
	/* the head's classes only in its output, which the loss uses in
	 * place (this stage's, with its loss) */
	if (m->loss_in_place &&
	    dt_model_tp_slice_logits(m, m->stage_of, m->tp.rank)) {
		const struct dt_node *head =
			&m->nodes[m->nodes[m->n_nodes - 1].inputs[0]];

		m->act_floats -= head->out_size - dt_node_out_floats(head);
		dt_model_relayout_acts(m);
	}
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

/* Whether the ranks of m's tensor group hold their blocks only
 * (dt_model_tp_own_slices): then a block is this rank's alone and the
 * gradient sums run over the data-parallel group of the tensor rank, so
 * no replicated gradient may be zeroed (doc/DESIGN.md, "Gradient
 * sums"), on a pipeline stage without a split node too (its tensor
 * ranks hold the same replicated tensors, each summed on its own). */
static bool
owns_slices(const struct dt_model *m)
{
	if (m->tp.own)
		return true;
	for (int i = m->first; i <= m->last; i++)
		if (m->nodes[i].tp_own)
			return true;
	return false;
}

void
dt_model_tp_prepare_grads(struct dt_model *m)
{
	dt_model_tp_prepare_grads_range(m, 0, SIZE_MAX);
}

void
dt_model_tp_prepare_grads_range(struct dt_model *m, size_t lo, size_t hi)
{
	if (m->tp.size <= 1 || m->tp.rank == 0 || m->grads == NULL ||
	    owns_slices(m))
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
