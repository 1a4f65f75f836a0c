/* SPDX-License-Identifier: MIT */
/* tied.c - tied weights: a dense layer whose weight is an embedding's
 * table, transposed (`tie:`; Press & Wolf, "Using the Output Embedding to
 * Improve Language Models", EACL 2017, as GPT-2's lm_head is wte).
 *
 * The dense layer keeps a tied copy of the table (layer.h's struct
 * dt_param_tensor, tied) in its own floats of the arenas, so that it
 * works the same whether the embedding lies on its rank or on another
 * pipeline stage. What keeps the two equal: the copy starts with the
 * embedding's draws (dt_graph_init_tied), the sync gives both the sum of
 * the two gradients (train/tie_sum.c), so the optimizer makes the same
 * update to both, and loaders fill the copy from the one saved tensor
 * (dt_model_tie_fill). This file resolves the names and answers the
 * model's questions about its ties. */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/model.h"

enum dt_status
dt_graph_resolve_tie(struct dt_model *m, const struct dt_job *job, int node,
		     int layer, const int *last, struct dt_error *err)
{
	struct dt_node *n = &m->nodes[node];
	const char *want = n->spec.tie;

	for (int j = 0; j < layer; j++) {
		const struct dt_layer_spec *e = &job->model.layers[j];

		if (strcmp(e->name, want) != 0)
			continue;
		if (e->kind != DT_LAYER_EMBEDDING)
			return dt_node_errorf(n, job, err, "tie: \"%s\" is "
					      "model.layers.%d, not an "
					      "embedding", want, j);
		n->tie_node = last[j];
		n->tie_src = &m->nodes[last[j]];
		return DT_OK;
	}
	return dt_node_errorf(n, job, err, "tie: no layer named \"%s\" before "
			      "this one (it names an embedding layer)", want);
}

enum dt_status
dt_graph_check_tie(const struct dt_model *m, const struct dt_job *job,
		   int node, struct dt_error *err)
{
	const struct dt_node *n = &m->nodes[node];

	for (int i = 0; i < node; i++)
		if (m->nodes[i].tie_node == n->tie_node)
			return dt_node_errorf(n, job, err, "tie: \"%s\" is "
					      "tied to %s already; one layer a "
					      "table", n->spec.tie,
					      m->nodes[i].name);
	return DT_OK;
}

/* The index in model order (every stage's nodes) of node i's first
 * tensor: the rng key of its draws. */
static uint64_t
first_tensor_index(const struct dt_model *m, int i)
{
	uint64_t index = 0;

	for (int j = 0; j < i; j++)
		index += (uint64_t)m->nodes[j].n_tensors;
	return index;
}

void
dt_graph_init_tied(const struct dt_model *m, struct dt_node *n,
		   void (*init_tensor)(struct dt_param_tensor *pt,
				       uint64_t seed, uint64_t index))
{
	struct dt_node src = *n->tie_src;
	uint64_t index = first_tensor_index(m, n->tie_node);

	/* The embedding's own rule (graph/init.c chose it), drawing into
	 * the copy's floats with the embedding's keys: the same bits on
	 * whichever stage. */
	src.tensor[0].data = n->tensor[0].data;
	init_tensor(&src.tensor[0], m->seed, index);
}

int64_t
dt_model_n_tied(const struct dt_model *m)
{
	int64_t n = 0;

	for (int i = 0; i < m->n_nodes; i++)
		for (int t = 0; t < m->nodes[i].n_tensors; t++)
			if (m->nodes[i].tensor[t].tied)
				n += m->nodes[i].tensor[t].size;
	return n;
}

int
dt_model_n_ties(const struct dt_model *m)
{
	int n = 0;

	for (int i = 0; i < m->n_nodes; i++)
		n += m->nodes[i].tie_src != NULL;
	return n;
}

/* m's tensor-list index of tensor k of node i, or -1 when m does not
 * hold it (another stage's). */
static int
list_index(const struct dt_model *m, int i, int k)
{
	for (int t = 0; t < m->n_tensors; t++)
		if (m->tensors[t] == &m->nodes[i].tensor[k])
			return t;
	return -1;
}

void
dt_model_tie_info(const struct dt_model *m, int k, struct dt_tie_info *out)
{
	int i = 0;

	for (;; i++) {
		assert(i < m->n_nodes);
		if (m->nodes[i].tie_src != NULL && k-- == 0)
			break;
	}
	const struct dt_node *n = &m->nodes[i];

	memset(out, 0, sizeof *out);
	out->copy_node = i;
	out->src_node = n->tie_node;
	out->size = n->tensor[0].size;
	out->copy_tensor = list_index(m, i, 0);
	out->src_tensor = list_index(m, n->tie_node, 0);
	out->copy_offset = out->copy_tensor < 0 ? SIZE_MAX
						: n->tensor[0].offset;
	out->src_offset = out->src_tensor < 0 ? SIZE_MAX
					      : n->tie_src->tensor[0].offset;
}

void
dt_model_tie_fill(const struct dt_model *m, float *params)
{
	for (int k = 0; k < dt_model_n_ties(m); k++) {
		struct dt_tie_info ti;

		dt_model_tie_info(m, k, &ti);
		if (ti.copy_tensor >= 0 && ti.src_tensor >= 0)
			memcpy(params + ti.copy_offset,
			       params + ti.src_offset,
			       (size_t)ti.size * sizeof(float));
	}
}
