/* pipeline.h - the training step and evaluation of a model split over
 * pipeline stages and tensor-parallel groups (dt_run.mp). Internal to
 * train/. */
#ifndef DT_TRAIN_PIPELINE_H
#define DT_TRAIN_PIPELINE_H

#include "train/state.h"

struct dt_full;

/* Collective over r->comm: sets up the grid position, the stage layout,
 * the communicators, the stage model (r->model), and the slot buffers.
 * r->plan is resolved. DT_ERR_PLAN for a layout the model cannot take
 * (every rank reaches the same verdict), DT_ERR_MPI otherwise. */
enum dt_status dt_pipe_setup(struct dt_run *r, struct dt_error *err);

/* Frees what dt_pipe_setup made (not r->model). */
void dt_pipe_fini(struct dt_run *r);

/* Runs the forward and backward passes of one optimizer step's
 * micro-batches on this rank's stage, in the plan's schedule, leaving
 * the stage's gradient (not yet summed over data-parallel ranks) in the
 * model. *loss_sum gets this rank's share of the loss sum (the last
 * stage's tensor-parallel rank 0 only; 0 elsewhere). *data_wait grows by
 * the seconds spent gathering data. Errors: DT_ERR_MPI. */
enum dt_status dt_pipe_train_step(struct dt_run *r, float grad_scale,
				  double *loss_sum, double *data_wait,
				  struct dt_error *err);

/* Sums the stage's gradient over its data-parallel x tensor-parallel
 * ranks and fills norms (n_tensors_all doubles) with this rank's share of
 * the tensors' squared gradient norms: its stage's tensors at their model
 * indices on the rank of data-parallel and tensor-parallel index 0, 0
 * everywhere else, so that a sum over every rank gives each tensor's. */
enum dt_status dt_pipe_sync_grads(struct dt_run *r, double *norms,
				  struct dt_error *err);

/* The squared L2 norm of the gradient of the trained tensors, the same
 * bits for every layout of a job: each tensor's sum of squares in double,
 * added in model order. norms: the per-tensor values summed over the ranks
 * (model parallelism), or NULL to compute them from r's own whole
 * gradient. */
double dt_grad_norm2(struct dt_run *r, const double *norms);

/* Evaluation of micro-batch rows [lo, hi) of the eval set through the
 * pipeline: adds the loss sum and correct count to sums[0..1] (the last
 * stage's tensor-parallel rank 0 only). */
enum dt_status dt_pipe_eval(struct dt_run *r, int64_t lo, int64_t hi,
			    double *sums, struct dt_error *err);

/* The whole model as one rank holds it, for checkpoints: a shapes-only
 * model for the tensor names, shapes and one-rank offsets, the parameter
 * arena and the optimizer's state buffers. Each rank keeps only its
 * stage's share; the whole exists on rank 0 while a checkpoint is written
 * and on every rank while one is restored. */
struct dt_full {
	struct dt_model *shapes;
	float *params;		/* (n_params of shapes) */
	float *bufs[4];		/* (n_trained of shapes) each */
	int n_bufs;		/* as dt_optim_state gives */
};

/* Allocates f for r's job and optimizer, zeroed. DT_ERR_* from building
 * the shapes. */
enum dt_status dt_pipe_full_alloc(struct dt_run *r, struct dt_full *f,
				  struct dt_error *err);
void dt_pipe_full_free(struct dt_full *f);

/* Collective over r->comm: rank 0 allocates f and fills it with every
 * stage's parameters, buffers and optimizer state (sent by the stage's
 * rank of data-parallel and tensor-parallel index 0); the other ranks
 * leave f empty. A failure ends the job (the others wait inside the
 * exchange), so it returns DT_OK or the build error of rank 0's f. */
enum dt_status dt_pipe_full_gather(struct dt_run *r, struct dt_full *f,
				   struct dt_error *err);

/* Copies this rank's stage out of the whole arrays f (after a restore). */
void dt_pipe_full_scatter(struct dt_run *r, struct dt_full *f);

/* Exact gradient accumulation (dt_plan_exact_accum), for any layout:
 * dt_accum_start zeroes r->acc at the start of a step; around each
 * micro-batch's backward, dt_accum_before zeroes the float gradients the
 * rank trains and dt_accum_after adds them (after dt_model_tp_prepare_
 * grads) into r->acc; dt_accum_sum sums r->acc over c (NULL or one rank:
 * no sum), counts the bytes in r->bytes_grad, and rounds it into the
 * float gradients. No-ops when r->acc is NULL. */
void dt_accum_start(struct dt_run *r);
void dt_accum_before(struct dt_run *r);
void dt_accum_after(struct dt_run *r);
enum dt_status dt_accum_sum(struct dt_run *r, struct dt_comm *c,
			    struct dt_error *err);

#endif
