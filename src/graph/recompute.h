/* SPDX-License-Identifier: MIT */
/* recompute.h - what graph.c and stage.c share about activation
 * recompute (model.recompute; recompute.c says how it works). Internal
 * to graph/. */
#ifndef DT_GRAPH_RECOMPUTE_H
#define DT_GRAPH_RECOMPUTE_H

#include <stdbool.h>
#include <stdint.h>

struct dt_model;

/* The segments of m's nodes under m->recompute (blocks) for the stage
 * layout stage_of ((n_nodes) entries; NULL: one stage): seg_first[i] and
 * seg_last[i] the first and last node of node i's segment, -1 for a node
 * in none; transient[i] whether node i's buffers are dropped after
 * forward and computed again in backward. Each array has n_nodes
 * entries, written whole; all -1 and false unless m->recompute is
 * DT_RECOMPUTE_BLOCKS. Works on a shapes-only model. */
void dt_recompute_mark(const struct dt_model *m, const int *stage_of,
		       int *seg_first, int *seg_last, bool *transient);

/* Floats per sample of the workspace that the transient nodes among
 * [first, last] share: the largest segment's sum of their activation
 * floats (dt_node_act_floats). */
int64_t dt_recompute_seg_floats(const struct dt_model *m,
				const int *seg_first, const bool *transient,
				int first, int last);

/* Floats per sample of the work buffer the nodes among [first, last]
 * with n->recompute share: the largest ops->work_floats. */
int64_t dt_recompute_layer_floats(const struct dt_model *m, int first,
				  int last);

/* FLOPs per sample that recompute adds to the backward of nodes [first,
 * last]: the forward of the transient ones, the recompute_flops of those
 * with n->recompute (tensor-parallel shares as fwd_flops counts them). */
double dt_recompute_flops(const struct dt_model *m, const bool *transient,
			  int first, int last);

#endif
