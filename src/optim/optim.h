/* SPDX-License-Identifier: MIT */
/* optim.h - optimizers over a flat parameter arena.
 *
 * SGD with momentum and Nesterov momentum (Sutskever et al., "On the
 * importance of initialization and momentum in deep learning", ICML 2013; in
 * PyTorch's formulation), Adam (Kingma & Ba, ICLR 2015) and AdamW (Loshchilov
 * & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019). Weight decay
 * is L2 added to the gradient for sgd and adam, decoupled for adamw.
 * Optimizer state lives in arenas of n floats each, exposed for checkpoints. */
#ifndef DT_OPTIM_OPTIM_H
#define DT_OPTIM_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "job/job.h"

struct dt_optim;
struct dt_pool;

/* An optimizer for n parameters, configured from job->train (optimizer,
 * momentum, nesterov, weight_decay, beta1, beta2, eps). State starts at zero
 * and step 0. Owned by the caller (dt_optim_free). The job's values are
 * taken as checked by job/; only the fields the optimizer uses are read, and
 * job is not kept. Never returns NULL (out of memory aborts). */
struct dt_optim *dt_optim_new(const struct dt_job *job, size_t n);
/* Frees o and its state; accepts NULL. */
void dt_optim_free(struct dt_optim *o);

/* Splits the updates over pool's threads from now on (NULL: one thread,
 * the default); not owned, kept alive by the caller while o runs. Every
 * parameter's update reads only its own elements, so the pool size never
 * changes the bits. */
void dt_optim_set_pool(struct dt_optim *o, struct dt_pool *pool);

/* A run [offset, offset + len) of parameters in an arena. */
struct dt_optim_span {
	size_t offset, len;
};

/* Restricts the weight decay (train.weight_decay: L2 for sgd and adam,
 * decoupled for adamw) to the parameters in spans[0..n_spans) (sorted by
 * offset, disjoint, in the coordinates of an arena whose element base is
 * o's first parameter): the others are updated as with weight_decay 0,
 * bit for bit. Spans or parts of spans outside [base, base + n) are
 * ignored. spans is copied. Without a call every parameter is decayed. */
void dt_optim_set_decay(struct dt_optim *o, const struct dt_optim_span *spans,
			size_t n_spans, size_t base);

/* Applies one update with learning rate lr to params (n floats) from grads
 * (n floats, the mean-loss gradient of the global batch; not modified).
 * Increments the step count used for Adam's bias correction. */
void dt_optim_step(struct dt_optim *o, float *params, const float *grads,
		   float lr);

/* Number of completed updates. */
int64_t dt_optim_steps(const struct dt_optim *o);

/* State buffers for checkpointing: *n_bufs arrays of n floats each (0 for
 * plain SGD, 1 for momentum, 2 for Adam's moments: [0] = first moment m,
 * [1] = second moment v, both uncorrected), owned by o. The caller may
 * write them to restore a checkpoint. */
float **dt_optim_state(struct dt_optim *o, int *n_bufs);
/* Sets the step count (after restoring state from a checkpoint). */
void dt_optim_set_steps(struct dt_optim *o, int64_t steps);

#endif
