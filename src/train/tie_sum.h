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

/* dt_tie_sum_run where the summed gradient is in parts (parallel.zero 2
 * and 3, train/sync_zero.c): this rank holds the sum of arena floats
 * [own_lo, own_hi) only, the other summing ranks over sum (borrowed)
 * the rest. Each rank puts its own floats of the table and the copy,
 * and -0 for every float it does not own, into one buffer of the tie's
 * size, g_table + g_copy where it owns both; the sum over sum and then
 * over pipe adds at most two terms that are not -0 (x + -0 is x, a + b
 * is b + a), so every float is g_table + g_copy, the bits of
 * dt_tie_sum_run at parallel.zero 0, and the rank writes it into its
 * own floats of both tensors. Collective over sum and pipe (every rank
 * calls it each step, t NULL on none). Errors: DT_ERR_MPI. */
enum dt_status dt_tie_sum_run_parted(struct dt_tie_sum *t,
				     struct dt_comm *sum, size_t own_lo,
				     size_t own_hi, struct dt_error *err);

#endif
