/* SPDX-License-Identifier: MIT */
/* model_io.h - a trained run's model, ready to run: its saved job, the
 * model built from it, the parameters of one checkpoint and, for a text
 * model, its vocabulary. Shared by `dtrain eval`, `predict` and `export`. */
#ifndef DT_CMD_MODEL_IO_H
#define DT_CMD_MODEL_IO_H

#include <stddef.h>
#include <stdint.h>

#include "data/data.h"
#include "job/job.h"
#include "util/status.h"

struct dt_model;

struct dt_cmd_model {
	struct dt_job *job;	/* heap: the run's job.yaml with the --set
				 * overrides applied */
	struct dt_model *model;	/* built for batches of max_batch */
	struct dt_vocab vocab;	/* data.format text only; else empty */
	struct dt_norm norm;	/* the inputs' scale and data.normalize
				 * statistics the model was trained with
				 * (the checkpoint's meta.json); */
	int has_norm;		/* 0: the checkpoint has none (token data,
				 * an older dtrain): the job's scale */
	int64_t step;		/* the checkpoint's step */
	char ckpt[DT_JOB_PATH_MAX + 64];	/* the checkpoint directory */
};

/* The checkpoint --checkpoint names: the newest valid one (no option),
 * the kept best one (CKPT_DIR/best, written with eval.keep_best) or that
 * of a step (>= 0). */
#define DT_CMD_CKPT_NEWEST ((int64_t)-1)
#define DT_CMD_CKPT_BEST ((int64_t)-2)

/* The --checkpoint option of eval, predict and export, one table entry
 * (the value a const char * at offset off of the argument struct). */
#define DT_CMD_OPT_CHECKPOINT_ENTRY(off)                                     \
	{ .name = "checkpoint", .kind = DT_CMD_ARG_STRING,                   \
	  .arg = "step|best", .offset = (off), .words = "best",              \
	  .doc = "that step's checkpoint, or best (default: newest)" }

/* --checkpoint's value s (NULL: the option was not given) as a step
 * number or DT_CMD_CKPT_NEWEST / DT_CMD_CKPT_BEST into *step. Returns 0,
 * or -1 (*step untouched) when s is neither "best" nor a decimal whole
 * number from 0 to 2^63-1. */
int dt_cmd_checkpoint_arg(const char *s, int64_t *step);

/* The checkpoint directory of the run in dir that step names (a step,
 * DT_CMD_CKPT_NEWEST or DT_CMD_CKPT_BEST) into path (size bytes), its
 * step into *found, the one asked for verified first (a step missing
 * from CKPT_DIR is looked for in CKPT_DIR/best). DT_ERR_USAGE when
 * dir is no run, has no checkpoint, none of that step, or, for best,
 * no CKPT_DIR/best (naming the run, the directory and eval.keep_best,
 * the key that keeps one); the verifier's errors for a damaged one;
 * dt_cmd_ckpt_of_run's for a checkpoint of another run. */
enum dt_status dt_cmd_find_checkpoint(const char *dir, int64_t step,
				      char *path, size_t size,
				      int64_t *found, struct dt_error *err);

/* Whether the checkpoint at path belongs to the run in dir (its run id,
 * RUN_DIR/run-id, against the checkpoint's): dt_ckpt_check_run's
 * DT_ERR_USAGE naming both runs when not, DT_OK for a run or a
 * checkpoint of an older dtrain (no id). dt_cmd_find_checkpoint checks
 * this too. */
enum dt_status dt_cmd_ckpt_of_run(const char *dir, const char *path,
				  struct dt_error *err);

/* Opens the run in dir: loads dir/job.yaml with sets[0..n_sets) applied,
 * builds the model for batches of 1 <= max_batch samples, and loads the
 * parameters of the checkpoint step names (dt_cmd_find_checkpoint), and
 * vocab.bin for a text job. max_batch 0 builds the model's shapes only
 * (no arenas, no parameters loaded: graph.h's dt_model_new with 0), for
 * a command that sizes its batch first (dt_cmd_batch_fit) and then calls
 * dt_cmd_model_load.
 * Returns DT_OK with *cm owned by the caller (dt_cmd_model_close);
 * DT_ERR_USAGE when dir is no run, has no such checkpoint or no
 * checkpoint at all; the job's, the checkpoint's or the vocabulary's
 * errors otherwise (naming the file). On error *cm is closed (empty). */
enum dt_status dt_cmd_model_open(const char *dir, const char *const *sets,
				 int n_sets, int64_t step, int64_t max_batch,
				 struct dt_cmd_model *cm,
				 struct dt_error *err);

/* Builds the arenas of cm's model (opened with max_batch 0) for batches
 * of 1 <= max_batch samples and loads the checkpoint's parameters into
 * them. Errors as dt_cmd_model_open's; cm is then closed (empty). */
enum dt_status dt_cmd_model_load(struct dt_cmd_model *cm, int64_t max_batch,
				 struct dt_error *err);

/* What a batch of eval or predict costs, in bytes, besides the model's
 * parameter and gradient arenas and its activations (max_batch times
 * dt_model_act_floats_per_sample floats), which dt_cmd_batch_fit counts
 * itself from cm's (shapes-only) model. */
struct dt_cmd_batch_cost {
	const char *cmd;	/* "eval", "predict": named in messages */
	int64_t asked;		/* --batch, or 0 when not given */
	int64_t dflt;		/* the batch without --batch and a limit */
	int64_t fixed;		/* bytes whatever the batch (outputs) */
	int64_t per_sample;	/* bytes a sample besides activations */
	int local_ranks;	/* processes of the command on this node,
				 * which share its memory (0 counts as 1) */
};

/* The batch for c (above) within the memory this process may still take
 * (util/sysmem.h, as `dtrain run` checks it, train/memcheck.h: the
 * node's MemAvailable, or the cgroup's limit less its usage where that
 * is less, shared by c->local_ranks), counting what is resident already
 * as taken: c->asked when
 * it fits, else DT_ERR_PLAN naming the bytes needed and available and the
 * largest batch that fits; without c->asked the largest batch up to
 * c->dflt that fits, said on stderr when below c->dflt; DT_ERR_PLAN
 * (exit status 2) with both figures when even a batch of 1 does not fit.
 * Where no figure can be read, c->asked or c->dflt. Into *batch; on
 * error *batch is untouched. Allocates nothing. */
enum dt_status dt_cmd_batch_fit(const struct dt_cmd_model *cm,
				const struct dt_cmd_batch_cost *c,
				int64_t *batch, struct dt_error *err);

/* The inputs as the model was trained on them: ds (a split opened from
 * cm's job, or the inputs of predict) gets the checkpoint's scale and
 * normalisation when it has them (borrowed from cm), else keeps the
 * scale its reader resolved from the job. */
void dt_cmd_model_inputs(const struct dt_cmd_model *cm,
			 struct dt_dataset *ds);

/* Frees what cm holds and empties it; an empty cm is fine. */
void dt_cmd_model_close(struct dt_cmd_model *cm);

/* After a forward pass of batch samples (dt_model_eval): the output of
 * the model's last layer, the input of the loss (logits for softmax
 * cross-entropy, predictions for mse), (batch, *out_size) floats owned
 * by the model and overwritten by the next pass. graph.h gives only the
 * loss's output (probabilities), so this reads graph/model.h. */
const float *dt_cmd_model_logits(const struct dt_cmd_model *cm,
				 int64_t *out_size);

/* The shape of one sample's logits (no batch): *n_dims dims into
 * dims[0..4). */
void dt_cmd_model_logits_shape(const struct dt_cmd_model *cm, int *n_dims,
			       int64_t dims[4]);

/* Loads the parameters in CKPT/params.safetensors (a checkpoint
 * directory) into m, tensor by tensor under their "node.tensor" names and
 * shapes (the checkpoint's optimizer state is not needed). Errors as
 * dt_ckpt_import's: DT_ERR_FORMAT naming the tensor and both shapes,
 * DT_ERR_IO naming the file; m's parameters are then partly loaded. */
struct dt_model;
enum dt_status dt_cmd_import_params(struct dt_model *m, const char *ckpt,
				    struct dt_error *err);

/* The communicator for a command that may run on many ranks: MPI when
 * the process was started by a launcher (mpirun, srun), else a single
 * process without MPI. Never NULL on DT_OK. */
struct dt_comm;
enum dt_status dt_cmd_comm_new(struct dt_comm **out, struct dt_error *err);

struct dt_progress;
/* Starts p (train/progress.h) for eval and predict: on launch rank 0's
 * stderr, a terminal by dt_progress_tty (DTRAIN_PROGRESS_TTY, else
 * isatty), where a task that takes more than a moment draws its line;
 * nothing elsewhere. comm may be NULL (no output then). End it with
 * dt_progress_end. */
void dt_cmd_progress_init(struct dt_progress *p, struct dt_comm *comm);

/* The end of eval and predict: a failure on one of several ranks is
 * printed with the rank and ends the job with MPI_Abort (the others may
 * be inside a collective); then comm is freed (NULL is fine) and the
 * command's exit code returned: 0, or dt_cmd_fail's for st and err. */
int dt_cmd_comm_finish(struct dt_comm *comm, enum dt_status st,
		       struct dt_error *err);

#endif
