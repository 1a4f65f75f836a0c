/* SPDX-License-Identifier: MIT */
/* stage.h - what graph.c and stage.c share about pipeline stages.
 * Internal to graph/. */
#ifndef DT_GRAPH_STAGE_H
#define DT_GRAPH_STAGE_H

#include <stdbool.h>
#include <stdint.h>

struct dt_model;
struct dt_node;

/* Whether node i is in the live set at the cut after stage `cut`: its
 * stage is <= cut and a node of a later stage reads it. */
bool dt_stage_live(const struct dt_model *m, const int *stage_of_node, int i,
		   int cut);

/* Floats per sample of node n's output buffer: out_size, or this
 * rank's classes of each row where the node holds them only
 * (struct dt_node's out_cols). */
int64_t dt_node_out_floats(const struct dt_node *n);

/* Lays m's activation slots out again and allocates them anew (their
 * contents are lost), after a node's output size changed (out_cols); a
 * no-op for a model without activations. */
void dt_model_relayout_acts(struct dt_model *m);

/* Activation floats per sample of node n on its own stage: output,
 * output gradient when one flows back, and the layer's scratch (in
 * *scratch). */
int64_t dt_node_act_floats(const struct dt_node *n, int64_t *scratch);

/* Floats per sample that the loss saves by working in place over its
 * input's buffer (struct dt_layer_ops's loss_in_place) in a training
 * model laid out by stage_of ((n_nodes) entries; NULL: one stage): its
 * own output and its input's output gradient; 0 where it cannot. It can
 * when its type allows, and its input is a node on the loss's stage
 * that the loss alone reads, of a type whose backward reads no output
 * (bwd_reads_no_out), with no activation fused into it. That node is
 * never transient under model.recompute: the loss, its reader, is in
 * no segment. Works on a shapes-only model. */
int64_t dt_graph_loss_in_place(const struct dt_model *m, const int *stage_of);

#endif
