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

/* Activation floats per sample of node n on its own stage: output,
 * output gradient when one flows back, and the layer's scratch (in
 * *scratch). */
int64_t dt_node_act_floats(const struct dt_node *n, int64_t *scratch);

#endif
