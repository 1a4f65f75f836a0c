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
 * parallel.data_parallel differs from world_size. */
enum dt_status dt_plan_batch(const struct dt_job *job, int world_size,
			     struct dt_plan *plan, struct dt_error *err);

/* BLAS threads for each of local_ranks ranks on a node of `cores` cores:
 * max(1, cores / local_ranks), unless env_value (OPENBLAS_NUM_THREADS, may
 * be NULL) is a positive integer, which wins. */
int dt_plan_blas_threads(int cores, int local_ranks, const char *env_value);

#endif
