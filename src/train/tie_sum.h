/* SPDX-License-Identifier: MIT */
/* tie_sum.h - the gradient sum of tied weights (graph/graph.h's ties: a
 * dense layer's `tie:`) that the gradient sync runs once the step's
 * gradient is summed over the data- and tensor-parallel ranks. Internal
 * to train/. */
#ifndef DT_TRAIN_TIE_SUM_H
#define DT_TRAIN_TIE_SUM_H

#include "comm/comm.h"
#include "graph/graph.h"
#include "util/status.h"

struct dt_tie_sum;

/* The sum for model m (the rank's model or stage) over pipe, the stages
 * of the rank's pipeline (NULL or a communicator of one rank without a
 * pipeline); NULL when the whole model has no ties. Borrows both; the
 * caller frees the result with dt_tie_sum_free (which accepts NULL). */
struct dt_tie_sum *dt_tie_sum_new(struct dt_model *m, struct dt_comm *pipe);
void dt_tie_sum_free(struct dt_tie_sum *t);

/* For each tie, gives the embedding's table and its tied copy the sum of
 * their two gradients, g = g_table + g_copy, in float, wherever the
 * rank holds them: on one rank directly, across pipeline stages by a sum
 * over pipe (Megatron's sum of the first and last stage's embedding
 * gradients), where the stages that hold neither add -0 (which changes
 * no bit), so every layout gets the bits of one rank. Collective over
 * pipe (every stage calls it each step, t NULL on none). Clears
 * sq_have[t] (may be NULL) of the tensors whose gradient it changed, so
 * their squared norms are taken again. Errors: DT_ERR_MPI. */
enum dt_status dt_tie_sum_run(struct dt_tie_sum *t, unsigned char *sq_have,
			      struct dt_error *err);

#endif
