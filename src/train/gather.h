/* SPDX-License-Identifier: MIT */
/* gather.h - the whole model of a run whose model is cut into stages,
 * assembled for checkpoints and taken apart on restore. Internal to
 * train/. */
#ifndef DT_TRAIN_GATHER_H
#define DT_TRAIN_GATHER_H

#include "train/state.h"

/* The whole model as one rank holds it, for checkpoints: a shapes-only
 * model for the tensor names, shapes and one-rank offsets, the parameter
 * arena and the optimizer's state buffers. Each rank keeps only its
 * stage's share; the whole exists on rank 0 while a checkpoint of the
 * gathered format is written and on every rank while one is restored
 * (checkpoints in shards need none of this: state.c). */
struct dt_full {
	struct dt_model *shapes;
	float *params;		/* (n_params of shapes) */
	float *bufs[4];		/* (n_trained of shapes) each */
	int n_bufs;		/* as dt_grad_sync_state gives */
};

/* Allocates f for r's job and its sync's optimizer state, zeroed.
 * DT_ERR_* from building the shapes. */
enum dt_status dt_full_alloc(struct dt_run *r, struct dt_full *f,
				  struct dt_error *err);
void dt_full_free(struct dt_full *f);

/* Collective over r->comm: rank 0 allocates f and fills it with every
 * stage's parameters, buffers and optimizer state (sent by the stage's
 * rank of data-parallel and tensor-parallel index 0); the other ranks
 * leave f empty. A failure ends the job (the others wait inside the
 * exchange), so it returns DT_OK or the build error of rank 0's f. */
enum dt_status dt_full_gather(struct dt_run *r, struct dt_full *f,
				   struct dt_error *err);

/* Copies this rank's stage out of the whole arrays f (after a restore). */
void dt_full_scatter(struct dt_run *r, struct dt_full *f);

#endif
