/* SPDX-License-Identifier: MIT */
/* model.h - the inside of struct dt_model, for graph/ files that work on
 * the whole model (graph.c, stage.c, tensor.c) and graph/'s tests. The
 * rest of dtrain sees only graph.h. */
#ifndef DT_GRAPH_MODEL_H
#define DT_GRAPH_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/layer.h"

struct dt_model {
	int n_nodes;
	struct dt_node *nodes;	/* topological order; the loss is last */
	int n_tensors;
	struct dt_param_tensor **tensors;	/* into nodes[].tensor, arena order */
	int *tensor_node;	/* (n_tensors): index of each tensor's node */
	uint64_t seed;
	enum dt_loss_kind loss;

	int64_t max_batch;	/* 0: shapes only, no arenas */
	int64_t input_size;
	struct dt_shape input_shape;
	size_t n_params;
	size_t n_trained;	/* the first n_trained floats are trained;
				 * buffers (running statistics) follow */
	int64_t act_floats;	/* per sample */
	/* Built for training (dt_model_new_slots, dt_model_new_stage):
	 * the loss may work in place over its input's buffer
	 * (dt_graph_loss_in_place); loss_in_place says it does on this
	 * model's stage. */
	bool train_layout, loss_in_place;
	double fwd_flops;	/* per sample, all nodes */

	float *params;		/* (n_params) */
	float *grads;		/* (n_params) */
	float *acts;		/* (max_batch, act_floats) */
	bool *dout_written;	/* (n_nodes), scratch for backward */

	/* Pipeline stages (stage.c): this model runs nodes [first, last]
	 * of stage `stage` of n_stages (0, 0..n_nodes-1 of 1 without a
	 * pipeline). present[i]: node i has buffers here (its own nodes
	 * and the live set received from the stage before). Activations
	 * come in n_slots slots, one per micro-batch in flight, each
	 * slot_floats floats; node i's buffers lie at out_off[i],
	 * dout_off[i] and scratch_off[i] (-1: none) in every slot. */
	int n_stages, stage, first, last;
	int *stage_of;		/* (n_nodes) */
	bool *present;		/* (n_nodes) */
	int n_recv, n_send;
	int *recv, *send;	/* node indices of the live sets before/after */
	int n_slots, slot;
	size_t slot_floats;
	int64_t *out_off, *dout_off, *scratch_off;	/* (n_nodes) */
	uint64_t *slot_step;	/* (n_slots) dt_model_set_position per slot */
	int64_t *slot_first;

	/* model.recompute (recompute.c): seg_first[i], seg_last[i] node i's
	 * segment on this stage (-1: none); transient[i]: its buffers lie
	 * in the workspace and backward computes them again. seg_runs and
	 * seg_din_add: the breadth-first backward's node_runs answers for
	 * a segment, (n_nodes) and (n_nodes, DT_NODE_MAX_INPUTS). The
	 * workspace, work_floats floats after the n_slots slots, holds the
	 * transient buffers of one segment at offsets out_off[i] etc., then
	 * the layer work (n->work) at layer_work_off. */
	enum dt_recompute recompute;
	int *seg_first, *seg_last;
	bool *transient;
	bool *seg_runs, *seg_din_add;
	size_t work_floats, layer_work_off;

	/* Tensor parallelism (tensor.c): the group the split nodes use,
	 * tp.size == 1 without. */
	struct dt_tp tp;

	struct dt_pool *pool;	/* dt_model_set_pool; not owned, may be NULL */

	/* dt_model_set_backward_hook: called after each node of a backward
	 * pass; NULL: none. ctx is not owned. */
	void (*bwd_hook)(void *ctx, int node);
	void *bwd_ctx;
	/* dt_model_set_params_hook: from inside a node's backward; NULL:
	 * none. ctx is not owned. */
	void (*params_hook)(void *ctx, int node);
	void *params_ctx;
	/* dt_model_set_node_hook: called before each node's forward
	 * (recomputed ones too) and backward; NULL: none. */
	void (*node_hook)(void *ctx, int node, bool backward);
	void *node_ctx;
};

/* tied.c: points dense node `node` (made from job layer `layer`; last[j]
 * is the node of job layer j) at the embedding its `tie:` names, an
 * earlier embedding layer; DT_ERR_JOB through dt_node_errorf otherwise.
 * Whether another layer ties to it already is dt_graph_check_tie's. */
enum dt_status dt_graph_resolve_tie(struct dt_model *m,
				    const struct dt_job *job, int node,
				    int layer, const int *last,
				    struct dt_error *err);
/* tied.c: after node's shape inference has checked its weight's shape
 * against the table (dense.c), fails with DT_ERR_JOB when an earlier node
 * ties to the same embedding: one layer a table. The shape first, so a
 * layer that cannot take the table is named as the problem. */
enum dt_status dt_graph_check_tie(const struct dt_model *m,
				  const struct dt_job *job, int node,
				  struct dt_error *err);
/* tied.c: fills node n's tied copy (its tensor 0) with the draws of the
 * embedding it is tied to: that node's init hook, or init_tensor (the
 * graph's rule for a declared dt_init), keyed by the embedding's tensor
 * index, so any stage holding the copy gets the embedding's bits. */
void dt_graph_init_tied(const struct dt_model *m, struct dt_node *n,
			void (*init_tensor)(struct dt_param_tensor *pt,
					    uint64_t seed, uint64_t index));

#endif
