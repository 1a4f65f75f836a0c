/* plan.h - what a job will do on a given world size, derived purely from
 * struct dt_job (no data read, nothing allocated beyond the struct): the
 * data-parallel degree, the batch arithmetic and the BLAS threads per rank.
 *
 * Batch arithmetic (the usual data-parallel definition, e.g. Goyal et al.,
 * "Accurate, Large Minibatch SGD", 2017):
 *   global_batch = micro_batch * grad_accum_steps * data_parallel_degree.
 * Any two of the three batch keys fix the third; all three must agree. */
#ifndef DT_PLAN_PLAN_H
#define DT_PLAN_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "job/job.h"
#include "util/status.h"

struct dt_plan {
	int world_size;
	int dp_size;			/* data-parallel degree */
	int64_t global_batch;		/* samples per optimizer step, all ranks */
	int64_t micro_batch;		/* samples per forward/backward */
	int64_t grad_accum_steps;	/* micro-batches per optimizer step */
	int64_t per_rank_batch;		/* micro_batch * grad_accum_steps */
};

/* Resolves the batch arithmetic of job on world_size ranks into *plan.
 * DT_ERR_PLAN (exit code 2) naming the keys and their job-file positions
 * when the three batch keys contradict, when a division leaves a remainder,
 * when neither global_batch nor micro_batch is given, or when
 * parallel.data_parallel differs from the data-parallel degree. With
 * parallel.sync: parameter_server the last parallel.servers ranks are
 * servers and the data-parallel degree is world_size minus them (at least
 * one worker must remain; clip_norm and on_nonfinite: skip_step, which need
 * the whole gradient on one rank, are refused). */
enum dt_status dt_plan_batch(const struct dt_job *job, int world_size,
			     struct dt_plan *plan, struct dt_error *err);

/* BLAS threads for each of local_ranks ranks on a node of `cores` cores:
 * max(1, cores / local_ranks), unless env_value (OPENBLAS_NUM_THREADS, may
 * be NULL) is a positive integer, which wins. */
int dt_plan_blas_threads(int cores, int local_ranks, const char *env_value);

struct dt_lr_schedule;

/* The learning-rate schedule of job over total_steps optimizer steps into
 * *s (see optim/schedule.h). DT_ERR_JOB naming train.schedule's place when
 * the schedule cannot work over that many steps (a cosine decay shorter
 * than its warmup, say). plan --dry-run and run both call it, so they
 * refuse the same jobs. */
enum dt_status dt_plan_schedule(const struct dt_job *job, int64_t total_steps,
				struct dt_lr_schedule *s,
				struct dt_error *err);

struct json_object;
struct dt_model;

/* Resident memory of a rank before any tensor: the C runtime, Open MPI,
 * OpenBLAS (its code and thread buffers), libcurl, OpenSSL, json-c and
 * libyaml. Measured on Debian 12 (x86-64, Open MPI 4.1, OpenBLAS 0.3.21)
 * as the peak RSS of a run with a model of a few thousand parameters less
 * its data, 23-24 MiB with 1 or 2 BLAS threads; the plan adds it so that
 * its per-rank total compares with what `time -v` reports. */
#define DT_PLAN_RUNTIME_BYTES ((int64_t)24 << 20)

/* What plan --dry-run reports, for world_size ranks: the process grid, the
 * batch arithmetic, per layer (graph node) its output shape, parameters
 * and forward/backward FLOPs per sample, per rank the memory of parameters,
 * gradients, optimizer state, activations at the micro-batch and the
 * dataset, and the bytes each rank sends and receives per optimizer step
 * (ring all-reduce: 2 (p-1)/p of the gradient bytes each way, Patarasuk &
 * Yuan, "Bandwidth optimal all-reduce algorithms", 2009), steps per epoch
 * and samples dropped. model is built shapes-only (max_batch 0).
 * n_train / n_eval are the dataset sizes (-1: unknown) and train_bytes /
 * eval_bytes their in-memory sizes. Returns a new JSON object owned by the
 * caller (json_object_put); its keys are documented in dtrain(1). */
struct json_object *dt_plan_describe(const struct dt_job *job,
				     const struct dt_plan *plan,
				     const struct dt_model *model,
				     int blas_threads, int64_t n_train,
				     int64_t train_bytes, int64_t n_eval,
				     int64_t eval_bytes);

/* Prints the description made by dt_plan_describe as text. */
void dt_plan_print(const struct json_object *desc, FILE *out);

#endif
