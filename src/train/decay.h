/* SPDX-License-Identifier: MIT */
/* decay.h - which parameters weight decay applies to (train.decay).
 * Internal to train/. */
#ifndef DT_TRAIN_DECAY_H
#define DT_TRAIN_DECAY_H

#include <stddef.h>

#include "graph/graph.h"
#include "job/job.h"
#include "optim/optim.h"

/* The spans of m's trained parameter arena that weight decay applies to
 * under train.decay `set`: weights, every tensor of rank >= 2 (dense and
 * convolution kernels, embeddings), leaving out biases, layer- and
 * batch-norm gains and shifts and every other 1-D tensor, as nanoGPT and
 * most trainers do; all, the whole arena. Sorted by offset, touching
 * tensors merged into one span. Returns a new array of *n_spans spans
 * (at least one element allocated), owned by the caller (free). */
struct dt_optim_span *dt_decay_spans(const struct dt_model *m,
				     enum dt_decay_set set, size_t *n_spans);

/* Whether a run with this job restricts the decay (weight_decay > 0 and
 * train.decay weights). */
int dt_decay_restricted(const struct dt_job *job);

#endif
