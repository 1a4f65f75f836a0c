/* SPDX-License-Identifier: MIT */
/* stage.c - pipeline stages of a model: layouts, what a stage holds and
 * sends (graph.h), and the live sets graph.c binds buffers for.
 *
 * The live set at the cut after stage s is every node i of a stage <= s
 * that a node of a stage > s reads; stage s + 1 receives it, and sends on
 * those members that a later stage still reads together with its own
 * nodes' outputs that later stages read. */
#include "graph/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/layer.h"
#include "graph/model.h"
#include "graph/recompute.h"
#include "graph/stage.h"
#include "util/alloc.h"

enum dt_status
dt_model_check_stages(const struct dt_model *m, const int *stage_of_node,
		      int n_stages, struct dt_error *err)
{
	if (n_stages < 1 || n_stages > m->n_nodes)
		return dt_errorf(err, DT_ERR_PLAN,
				 "%d pipeline stages for a model of %d nodes: "
				 "need 1 to %d", n_stages, m->n_nodes,
				 m->n_nodes);
	if (stage_of_node[0] != 0)
		return dt_errorf(err, DT_ERR_PLAN,
				 "pipeline layout: node 0 (%s) is in stage %d, "
				 "not 0", m->nodes[0].name, stage_of_node[0]);
	for (int i = 1; i < m->n_nodes; i++) {
		int d = stage_of_node[i] - stage_of_node[i - 1];

		if (d != 0 && d != 1)
			return dt_errorf(err, DT_ERR_PLAN,
					 "pipeline layout: node %d (%s) is in "
					 "stage %d after stage %d; stages must "
					 "follow the nodes in order, none "
					 "empty", i, m->nodes[i].name,
					 stage_of_node[i], stage_of_node[i - 1]);
	}
	if (stage_of_node[m->n_nodes - 1] != n_stages - 1)
		return dt_errorf(err, DT_ERR_PLAN,
				 "pipeline layout: the last node is in stage "
				 "%d of %d", stage_of_node[m->n_nodes - 1],
				 n_stages);
	return DT_OK;
}

bool
dt_stage_live(const struct dt_model *m, const int *stage_of_node, int i,
	      int cut)
{
	if (stage_of_node[i] > cut)
		return false;
	for (int j = i + 1; j < m->n_nodes; j++) {
		const struct dt_node *n = &m->nodes[j];

		if (stage_of_node[j] <= cut)
			continue;
		for (int k = 0; k < n->n_inputs; k++)
			if (n->inputs[k] == i)
				return true;
	}
	return false;
}

/* Activation floats per sample of node i on a stage that receives it
 * from the one before: its output, and its gradient when one flows. */
static int64_t
received_floats(const struct dt_node *n)
{
	return n->out_size * (n->needs_grad ? 2 : 1);
}

/* The recompute part of dt_model_stage_info: the stage's dropped nodes
 * out of act_floats, the workspace into act_work_floats, the recompute's
 * FLOPs into flops_per_sample. */
static void
stage_recompute(const struct dt_model *m, const int *stage_of_node,
		struct dt_stage_info *out)
{
	int *seg_first = dt_xcalloc((size_t)m->n_nodes, sizeof *seg_first);
	int *seg_last = dt_xcalloc((size_t)m->n_nodes, sizeof *seg_last);
	bool *transient = dt_xcalloc((size_t)m->n_nodes, sizeof *transient);
	int first = out->first_node, last = out->last_node;
	int64_t scratch;

	dt_recompute_mark(m, stage_of_node, seg_first, seg_last, transient);
	for (int i = first; i <= last; i++)
		if (transient[i])
			out->act_floats -= dt_node_act_floats(&m->nodes[i],
							      &scratch);
	out->act_work_floats =
		dt_recompute_seg_floats(m, seg_first, transient, first, last) +
		dt_recompute_layer_floats(m, first, last);
	out->flops_per_sample += dt_recompute_flops(m, transient, first, last);
	free(seg_first);
	free(seg_last);
	free(transient);
}

void
dt_model_stage_info(const struct dt_model *m, const int *stage_of_node,
		    int n_stages, int stage, struct dt_stage_info *out)
{
	bool lo_set = false, blo_set = false;

	memset(out, 0, sizeof *out);
	out->first_node = -1;
	for (int i = 0; i < m->n_nodes; i++) {
		const struct dt_node *n = &m->nodes[i];
		int64_t scratch;

		if (stage > 0 && dt_stage_live(m, stage_of_node, i, stage - 1)) {
			out->act_floats += received_floats(n);
			if (n->needs_grad)
				out->send_bwd_floats += n->out_size;
		}
		if (stage + 1 < n_stages &&
		    dt_stage_live(m, stage_of_node, i, stage))
			out->send_fwd_floats += n->out_size;
		if (stage_of_node[i] != stage)
			continue;
		if (out->first_node < 0)
			out->first_node = i;
		out->last_node = i;
		out->flops_per_sample += 3.0 * n->ops->fwd_flops(n);
		out->n_params += n->n_params;
		out->act_floats += dt_node_act_floats(n, &scratch);
		for (int t = 0; t < n->n_tensors; t++) {
			const struct dt_param_tensor *pt = &n->tensor[t];
			size_t a = pt->offset, b = pt->offset + (size_t)pt->size;

			if (pt->buffer) {
				if (!blo_set)
					out->buffer_lo = a;
				blo_set = true;
				out->buffer_hi = b;
			} else {
				if (!lo_set)
					out->trained_lo = a;
				lo_set = true;
				out->trained_hi = b;
			}
		}
	}
	/* the layout of a training model: the loss in place */
	if (stage_of_node[m->n_nodes - 1] == stage)
		out->act_floats -= dt_graph_loss_in_place(m, stage_of_node);
	stage_recompute(m, stage_of_node, out);
	/* A stage without tensors: empty ranges where its tensors would
	 * have started. */
	if (!lo_set) {
		size_t at = 0;

		for (int i = 0; i < m->n_nodes && stage_of_node[i] < stage; i++)
			for (int t = 0; t < m->nodes[i].n_tensors; t++)
				if (!m->nodes[i].tensor[t].buffer)
					at = m->nodes[i].tensor[t].offset +
					     (size_t)m->nodes[i].tensor[t].size;
		out->trained_lo = out->trained_hi = at;
	}
	if (!blo_set) {
		size_t at = m->n_trained;

		for (int i = 0; i < m->n_nodes && stage_of_node[i] < stage; i++)
			for (int t = 0; t < m->nodes[i].n_tensors; t++)
				if (m->nodes[i].tensor[t].buffer)
					at = m->nodes[i].tensor[t].offset +
					     (size_t)m->nodes[i].tensor[t].size;
		out->buffer_lo = out->buffer_hi = at;
	}
}
