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
	uint64_t step;		/* dt_model_set_position */
	int64_t first_sample;

	int64_t max_batch;	/* 0: shapes only, no arenas */
	int64_t input_size;
	struct dt_shape input_shape;
	size_t n_params;
	size_t n_trained;	/* the first n_trained floats are trained;
				 * buffers (running statistics) follow */
	int64_t act_floats;	/* per sample */
	double fwd_flops;	/* per sample, all nodes */

	float *params;		/* (n_params) */
	float *grads;		/* (n_params) */
	float *acts;		/* (max_batch, act_floats) */
	bool *dout_written;	/* (n_nodes), scratch for backward */

	/* Tensor parallelism (tensor.c): the group the split nodes use,
	 * tp.size == 1 without. */
	struct dt_tp tp;
};

#endif
