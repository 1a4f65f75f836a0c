/* SPDX-License-Identifier: MIT */
/* rows.c - sequence parallelism's row shares of a node (layer.h's
 * dt_node_rows; doc/DESIGN.md, "Sequence parallelism").
 *
 * A node's output (B, ..., C) is read as rows of C floats, its last axis:
 * R = out_size / C rows a sample, n = B * R in a pass of B samples. A
 * node marked seq_rows, in a tensor group of s > 1 ranks, holds and
 * computes only rank r's rows [floor(n r / s), floor(n (r + 1) / s)) of
 * the n (util/share.h's cut, the one comm/comm.h's dt_comm_row_share
 * and so the row collectives use), in its output, output gradient and
 * scratch alike; every other node holds the n rows. */
#include "graph/graph.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "graph/stage.h"
#include "util/share.h"

int64_t
dt_node_row_len(const struct dt_node *n)
{
	if (n->out_shape.n_dims < 1)
		return n->out_size;
	return n->out_shape.dim[n->out_shape.n_dims - 1];
}

void
dt_rows_share(int64_t n, int s, int rank, int64_t *first, int64_t *count)
{
	size_t lo = dt_share_lo((size_t)n, s, rank);

	*first = (int64_t)lo;
	*count = (int64_t)(dt_share_lo((size_t)n, s, rank + 1) - lo);
}

int64_t
dt_node_rows_held(const struct dt_node *n, int64_t batch, int rank, int size)
{
	const int64_t all = batch * (n->out_size / dt_node_row_len(n));
	int64_t first, count;

	if (!n->seq_rows)
		return all;
	dt_rows_share(all, size, rank, &first, &count);
	return count;
}

void
dt_node_rows(const struct dt_node *n, const struct dt_pass *p,
	     int64_t *first, int64_t *count)
{
	const int64_t all = p->batch * (n->out_size / dt_node_row_len(n));

	if (!n->seq_rows || p->tp == NULL)
		dt_rows_share(all, 1, 0, first, count);
	else
		dt_rows_share(all, p->tp->size, p->tp->rank, first, count);
}

/* A split node whose output sequence parallelism would reduce-scatter
 * over rows instead of summing whole: a dense row half, attention, a
 * vocabulary-split embedding. */
static bool
row_producer(const struct dt_node *n)
{
	return n->tp_size > 1 &&
	       (n->tp_mode == DT_TP_ROW || n->tp_mode == DT_TP_HEADS ||
		(n->tp_mode == DT_TP_VOCAB && n->ops == &dt_layer_embedding));
}

/* A split node whose input sequence parallelism would gather over rows
 * before its forward: a dense column half, attention, a vocabulary-split
 * head. */
static bool
row_gatherer(const struct dt_node *n)
{
	return n->tp_size > 1 &&
	       (n->tp_mode == DT_TP_COLUMN || n->tp_mode == DT_TP_HEADS ||
		(n->tp_mode == DT_TP_VOCAB && n->ops == &dt_layer_dense));
}

/* Whether marked node i may stay marked: each input a marked node or a
 * row producer all of whose readers are marked, each reader a marked
 * node or a gatherer. */
static bool
seq_rows_keeps(const struct dt_model *m, const bool *marks, int i)
{
	const struct dt_node *n = &m->nodes[i];

	for (int k = 0; k < n->n_inputs; k++) {
		int src = n->inputs[k];

		if (src == DT_NODE_INPUT ||
		    (!marks[src] && !row_producer(&m->nodes[src])))
			return false;
		for (int j = src + 1; !marks[src] && j < m->n_nodes; j++)
			for (int q = 0; q < m->nodes[j].n_inputs; q++)
				if (m->nodes[j].inputs[q] == src && !marks[j])
					return false;
	}
	for (int j = i + 1; j < m->n_nodes; j++)
		for (int q = 0; q < m->nodes[j].n_inputs; q++)
			if (m->nodes[j].inputs[q] == i && !marks[j] &&
			    !row_gatherer(&m->nodes[j]))
				return false;
	return n->n_consumers > 0;
}

int
dt_model_seq_rows_plan(const struct dt_model *m, bool *marks)
{
	bool changed = true;
	int count = 0;

	for (int i = 0; i < m->n_nodes; i++)
		marks[i] = m->nodes[i].ops->row_shares &&
			   m->nodes[i].tp_mode == DT_TP_NONE;
	while (changed) {
		changed = false;
		for (int i = 0; i < m->n_nodes; i++)
			if (marks[i] && !seq_rows_keeps(m, marks, i)) {
				marks[i] = false;
				changed = true;
			}
	}
	for (int i = 0; i < m->n_nodes; i++)
		count += marks[i];
	return count;
}

int64_t
dt_model_seq_rows_saved(const struct dt_model *m, const bool *marks,
			int64_t batch, int rank, int size)
{
	int64_t saved = 0, scratch, first, held;

	for (int i = 0; i < m->n_nodes; i++) {
		const struct dt_node *n = &m->nodes[i];
		int64_t rows, per_row;

		if (!marks[i])
			continue;
		rows = n->out_size / dt_node_row_len(n);
		per_row = dt_node_act_floats(n, &scratch) / rows;
		dt_rows_share(batch * rows, size, rank, &first, &held);
		saved += (batch * rows - held) * per_row;
	}
	return saved;
}
