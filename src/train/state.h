/* state.h - the training loop's resumable state and its checkpoints.
 * Internal to train/. */
#ifndef DT_TRAIN_STATE_H
#define DT_TRAIN_STATE_H

#include <stdint.h>
#include <stdio.h>

#include "data/data.h"
#include "dist/comm.h"
#include "dist/ps.h"
#include "graph/graph.h"
#include "job/job.h"
#include "optim/optim.h"
#include "optim/schedule.h"
#include "plan/plan.h"
#include "train/progress.h"
#include "train/loader.h"
#include "train/source.h"
#include "util/status.h"

/* Everything one run holds; allocated before the first step. */
struct dt_run {
	const struct dt_job *job;
	struct dt_comm *comm;		/* every rank */
	struct dt_comm *wcomm;		/* the data-parallel workers: comm,
					 * or the parameter servers' workers */
	struct dt_ps *ps;		/* parameter_server sync, else NULL */
	struct dt_pool *pool;		/* the rank's threads for the layers'
					 * and the optimizer's loops */
	int ps_async;
	struct dt_plan plan;
	int rank;
	char dir[DT_JOB_PATH_MAX];
	char ckpt_dir[DT_JOB_PATH_MAX];
	struct dt_job *data_job;	/* a copy with URLs turned into cached
					 * paths; r->job keeps the URLs */
	struct dt_batch_source train, eval;
	int have_eval;
	struct dt_vocab vocab;		/* data.format text */
	int64_t lps;			/* labels per sample */
	struct dt_model *model;
	struct dt_optim *optim;
	struct dt_lr_schedule sched;

	/* The position, all that a checkpoint must restore besides the
	 * parameters and the optimizer state. */
	int64_t step;		/* optimizer steps done */
	int64_t epoch;		/* epoch being consumed */
	int64_t epoch_off;	/* samples of it consumed, all ranks */
	double window_loss;	/* loss sum since the last log line, all ranks */
	int64_t window_steps;
	int64_t window_samples;
	int64_t skipped;	/* updates dropped as non-finite */

	int64_t steps_per_epoch, dropped, total_steps;
	int64_t *perm;		/* (n_train) order of the epoch perm_epoch */
	int64_t perm_epoch;
	int64_t *eval_idx;	/* (micro_batch) scratch indices */
	float *x;		/* (micro_batch, input_size) */
	int32_t *y;		/* (micro_batch, lps) */
	FILE *metrics;		/* rank 0 only */
	struct dt_loader *loader;	/* NULL: gather in the loop */
	struct dt_progress progress;
	double last_ckpt_time;
	int64_t last_ckpt_step;
	int64_t resumed_from;
	int64_t test_signal_step;	/* DTRAIN_TEST_SIGNAL_AT_STEP, or -1 */

	/* Model parallelism (pipeline.c); mp is 0 for plain data
	 * parallelism, where none of the rest is used. */
	int mp;
	struct dt_grid_pos pos;		/* this rank in the grid */
	int *stage_of;			/* (nodes) the pipeline layout */
	struct dt_stage_info sinfo;	/* this rank's stage */
	struct dt_stage_info *sinfos;	/* (pp) every stage, one-rank ranges */
	struct dt_comm *grad_comm;	/* the dp x tp ranks of the stage */
	struct dt_comm *pipe_comm;	/* the stages of one pipeline; rank
					 * in it = stage */
	struct dt_comm *tp_comm;	/* the tensor-parallel group */
	struct dt_pipe_op *ops;		/* (2 * grad_accum_steps) schedule */
	int n_slots;
	float **slot_x;			/* (n_slots) (micro_batch, input) */
	int32_t **slot_y;		/* (n_slots) (micro_batch, lps) */
	int *slot_req;			/* (n_slots, max_req) pending sends */
	int *slot_n_req, max_req;
	/* Bytes this rank moved in training steps: pipeline sends, the
	 * gradient all-reduce and the tensor-parallel sums (payloads). */
	uint64_t bytes_p2p, bytes_grad, bytes_tp;
	int64_t bytes_steps;		/* steps they were counted over */
	/* dt_plan_exact_accum: the step's gradient in double, n_trained
	 * values (NULL: float path). */
	double *acc;
	/* The per-step reduction (n_stats doubles): [0] loss, [1] stop, [2]
	 * checkpoint due, then with model parallelism the squared gradient
	 * norm of each of the model's n_tensors_all tensors, those of this
	 * rank's stage from first_tensor on. */
	double *stats;
	int n_stats, n_tensors_all, first_tensor;
};

/* Writes a checkpoint of r at its current step (collective: rank 0 writes,
 * every rank returns the same status). */
enum dt_status dt_run_checkpoint(struct dt_run *r, struct dt_error *err);

/* Restores r from the newest valid checkpoint in r->ckpt_dir (collective:
 * rank 0 reads and verifies, then broadcasts). Sets r->resumed_from to its
 * step, or -1 when there is none (the run starts from the beginning).
 * Checkpoints that fail verification are named on stderr by rank 0. */
enum dt_status dt_run_restore(struct dt_run *r, struct dt_error *err);

/* Rank 0: rewrites RUN_DIR/metrics.jsonl keeping only the lines of steps
 * <= step (all of them dropped for step < 0), then opens it for appending
 * into r->metrics. */
enum dt_status dt_run_reopen_metrics(struct dt_run *r, int64_t step,
				     struct dt_error *err);

#endif
