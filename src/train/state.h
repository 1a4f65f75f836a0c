/* SPDX-License-Identifier: MIT */
/* state.h - what one run holds: the resumable position, the layout of
 * this rank (exec.h), the gradient sync (sync.h), the step report, and
 * the checkpoints of it all. Internal to train/. */
#ifndef DT_TRAIN_STATE_H
#define DT_TRAIN_STATE_H

#include <stdint.h>
#include <stdio.h>

#include "ckpt/ckpt.h"
#include "data/data.h"
#include "comm/comm.h"
#include "graph/graph.h"
#include "job/job.h"
#include "plan/plan.h"
#include "train/best.h"
#include "train/diverge.h"
#include "train/exec.h"
#include "train/loader.h"
#include "train/progress.h"
#include "train/step_report.h"
#include "train/source.h"
#include "train/sync.h"
#include "util/threadpool.h"
#include "util/status.h"
#include "util/tfevents.h"

/* Where a run stands: all that a checkpoint must restore besides the
 * parameters and the optimizer state. */
struct dt_position {
	int64_t step;		/* optimizer steps done */
	int64_t epoch;		/* epoch being consumed */
	int64_t epoch_off;	/* samples of it consumed, all ranks */
	double window_loss;	/* loss sum since the last log line, all ranks */
	int64_t window_steps;
	int64_t window_samples;
	int64_t skipped;	/* updates dropped as non-finite */
	int64_t samples;	/* trained: the samples of the updates applied
				 * over the whole run, at each step's global
				 * batch (summary.json's samples) */
};

/* Everything one run holds; allocated before the first step. */
struct dt_run {
	const struct dt_job *job;
	struct dt_job *data_job;	/* a copy with URLs turned into cached
					 * paths; job keeps the URLs */
	struct dt_comm *comm;		/* every rank */
	int rank;
	struct dt_plan plan;		/* the plan this run executes */
	int64_t tcp_eager;		/* dt_run_opts's: bytes, 0 Open
					 * MPI's own, -1 the environment's */
	char dir[DT_JOB_PATH_MAX];
	int dir_lock;			/* rank 0: the run directory's lock
					 * (dt_rundir_lock), else -1 */
	int dir_made;			/* rank 0: this run created dir (it
					 * did not exist before) */
	char ckpt_dir[DT_JOB_PATH_MAX];
	char run_id[DT_CKPT_RUN_ID_MAX];	/* rank 0: RUN_DIR/run-id, which
						 * every checkpoint names ("":
						 * not yet claimed) */
	char run_path[DT_CKPT_RUN_DIR_MAX];	/* rank 0: dir, absolute where
						 * it resolves, for messages */
	int ckpt_lock;			/* rank 0: ckpt_dir/owner, held
					 * (dt_rundir_claim_ckpt), else -1 */
	int ckpt_made;			/* rank 0: this run created ckpt_dir */
	int start_over;			/* resume --start-over */
	int vocab_changed;		/* rank 0, start_over: the text's
					 * vocabulary differs from the run
					 * directory's (run_data.c) */
	char *data_files;		/* rank 0: the training data's
					 * single files, sizes and digests
					 * (train/datafiles.h), made at the
					 * first use; NULL before */
	struct dt_batch_source train, eval;
	int have_eval;
	struct dt_vocab vocab;		/* data.format text */
	int64_t labels_per_sample;	/* what the mean loss divides by:
					 * labels per sample, 1 for mse */
	int64_t y_per_sample;		/* int32 labels, or float targets
					 * (mse), per sample in a batch's y */
	struct dt_norm norm;		/* data.normalize's statistics and
					 * the scale resolved (idx, npy,
					 * csv); the splits' ds.norm */
	struct dt_model *model;		/* the whole model, or this rank's
					 * stage of it */
	struct dt_pool *pool;		/* the rank's threads for the layers'
					 * and the optimizer's loops */
	struct dt_layout layout;	/* the executor's */
	struct dt_grad_sync *sync;	/* the gradient sync, which owns the
					 * optimizer and its state */
	struct dt_step_report *report;	/* (DT_STEP_REPORT_FIXED + n_norms
					 * doubles) */
	int n_norms;			/* dt_grad_sync_n_norms */

	struct dt_position position;
	struct dt_best best;		/* eval.keep_best, eval.patience */
	struct dt_diverge diverge;	/* train.on_divergence; its early
					 * sums travel in checkpoints */
	int64_t *perm;		/* (n_train) order of the epoch perm_epoch */
	int64_t perm_epoch;
	FILE *metrics;		/* rank 0 only */
	struct dt_loader *loader;	/* NULL: gather in the loop */
	struct dt_progress progress;
	double last_ckpt_time;
	int64_t last_ckpt_step;
	int64_t resumed_from;
	int64_t test_signal_step;	/* DTRAIN_TEST_SIGNAL_AT_STEP, or -1 */
	int64_t steps_counted;		/* training steps of the byte counts */
	double *rank_times;		/* (n_workers, DT_RANK_TIMES) the
					 * workers' time breakdowns as of
					 * the last logged step (loop.c) */
	int n_workers;
	double *peak_resident;		/* (n_workers) each worker's peak
					 * resident bytes (VmHWM) at the
					 * end, -1 where unreadable; NULL
					 * before (run.c) */
	struct dt_tfevents *tb;		/* rank 0, log.tensorboard: the
					 * events file; else NULL */
};

/* Writes a checkpoint of r at its current step (collective: rank 0 writes,
 * every rank returns the same status). */
enum dt_status dt_run_checkpoint(struct dt_run *r, struct dt_error *err);

/* dt_run_checkpoint into the checkpoint directory dir, keeping keep_last
 * there (0: all), without counting it as the run's last checkpoint (the
 * best one, best.h). */
enum dt_status dt_run_checkpoint_to(struct dt_run *r, const char *dir,
				    int64_t keep_last, struct dt_error *err);

/* Rank 0, once the run directory is locked: the run's id (drawn and
 * written to RUN_DIR/run-id when it has none) and the claim on its
 * checkpoint directory (dt_rundir_claim_ckpt; fresh when !resume);
 * start_over is resume --start-over (dt_run_restore). Errors as
 * dt_rundir_run_id and dt_rundir_claim_ckpt say; the held claim is then
 * in r->ckpt_lock for dt_run_release_ckpt. Other ranks: DT_OK. */
enum dt_status dt_run_claim(struct dt_run *r, int resume, int start_over,
			    struct dt_error *err);

/* Rank 0: lets go of the checkpoint directory's claim; with undo (a run
 * refused before its first step) first removes the owner file and the
 * directory when this run made it. Other ranks: nothing. */
void dt_run_release_ckpt(struct dt_run *r, int undo);

/* After a numeric abort at step position.step + 1 (train.on_divergence,
 * train.on_nonfinite): the state of position.step gave the rejected loss,
 * so its checkpoint, when the newest is of that step, is renamed
 * step-N.diverged (which no reader takes for a checkpoint) and err's
 * message says so; a resume then continues from the checkpoint before.
 * Rank 0 renames; every rank may call it. */
void dt_run_set_aside(struct dt_run *r, struct dt_error *err);

/* Restores r from the newest valid checkpoint in r->ckpt_dir (collective:
 * rank 0 finds and verifies it; from one written in shards each rank then
 * reads its own part, dt_run_load_own; from the gathered format rank 0
 * reads it and broadcasts). Sets r->resumed_from to its
 * step, or -1 when there is none (the run starts from the beginning).
 * Checkpoints that fail verification are named on stderr by rank 0. A
 * checkpoint of another run (its run id) is refused (DT_ERR_USAGE naming
 * both). A run that has trained (dt_metrics_history) and has no usable
 * checkpoint is refused (DT_ERR_USAGE, or DT_ERR_FORMAT when candidates
 * failed, each named on stderr) unless r->start_over; with start_over
 * and a usable checkpoint, DT_ERR_USAGE (the option is for a run with
 * none). */
enum dt_status dt_run_restore(struct dt_run *r, struct dt_error *err);

/* 1 when every rank can read its own part of a checkpoint written in
 * shards: the optimizer state is kept where it trains (not by parameter
 * servers) and the tensor ranks hold whole tensors (not plan.tp_sliced).
 * The same on every rank. */
int dt_run_own_parts(const struct dt_run *r);

/* Collective over r->comm: each rank reads its own part of the sharded
 * checkpoint at path (ckpt.h, dt_ckpt_load_part) straight into its
 * arenas, whatever layout wrote it: its stage's parameters (at
 * parallel.zero: 3 only the trained floats its optimizer owns, and the
 * stage's buffers; a tied copy from its embedding's table) and, with
 * optim, the part of the optimizer state its optimizer keeps
 * (dt_grad_sync_state_own). Every rank returns the same status, with
 * the message of the lowest rank that failed (naming the rank, the file
 * and what it needed). Only where dt_run_own_parts. */
enum dt_status dt_run_load_own(struct dt_run *r, const char *path,
			       int optim, struct dt_error *err);

/* A failure in the middle of training that the other ranks cannot know
 * of (they are inside a collective): reports it with the rank and ends
 * the job (run.c). */
void dt_run_die(struct dt_run *r, const struct dt_error *err);

#endif
