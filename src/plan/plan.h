/* SPDX-License-Identifier: MIT */
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
#include "optim/schedule.h"
#include "util/status.h"

struct dt_model;
struct dt_stage_info;
struct dt_pipe_op;
struct dt_sync_plan;
struct json_object;

/* The sizes of a job's data, as far as they are known: samples and their
 * in-memory bytes (the inputs, labels and epoch order), -1 for unknown
 * (a URL not yet fetched, a format whose count needs a full read). */
struct dt_plan_data {
	int64_t n_train, train_bytes;
	int64_t n_eval, eval_bytes;
};

/* The machine a rank runs on, for the BLAS threads: its cores, the ranks
 * that share it and OPENBLAS_NUM_THREADS (may be NULL). */
struct dt_plan_host {
	int cores;
	int local_ranks;
	const char *blas_env;
};

struct dt_plan {
	int world_size;
	int dp_size;			/* data-parallel degree */
	int pp_size;			/* pipeline stages (1: none) */
	int tp_size;			/* tensor-parallel degree (1: none) */
	enum dt_pipeline_schedule pipe_schedule;	/* gpipe, 1f1b */
	int64_t global_batch;		/* samples per optimizer step, all ranks */
	int64_t micro_batch;		/* samples per forward/backward */
	int64_t grad_accum_steps;	/* micro-batches per optimizer step */
	int64_t per_rank_batch;		/* micro_batch * grad_accum_steps */

	/* The rest is filled by dt_plan_build (dt_plan_batch leaves it
	 * zero) and owned by the plan (dt_plan_fini). */
	int blas_threads;		/* per rank */
	int exact_accum;		/* dt_plan_exact_accum */
	enum dt_accum_schedule accum_schedule;	/* dt_plan_accum_schedule:
						 * depth_first or
						 * breadth_first */
	int n_servers;			/* parameter servers (ranks past
					 * dp_size), 0 without */
	int tp_sliced;			/* dt_plan_tp_sliced */
	struct dt_model *shapes;	/* the whole model, shapes only, laid
					 * out (tensor-parallel nodes marked) */
	int n_nodes;
	int *stage_of_node;		/* (n_nodes) pipeline stage of each */
	struct dt_stage_info *stages;	/* (pp_size) what each stage holds */
	int64_t *in_flight;		/* (pp_size) dt_plan_in_flight */
	struct dt_pipe_op *ops;		/* (pp_size, 2 * grad_accum_steps)
					 * each stage's schedule of one step */
	struct dt_sync_plan *sync;	/* (pp_size) how each stage's
					 * gradient is summed and applied
					 * (plan/sync_plan.h) */
	struct dt_plan_data data;	/* as given; -1 fields unknown */
	int64_t steps_per_epoch;	/* -1 until the training samples are
					 * known */
	int64_t samples_dropped;	/* per epoch, -1 likewise */
	int64_t total_steps;		/* optimizer steps of the run, -1 until
					 * known (train.steps, or epochs x
					 * steps_per_epoch) */
	struct dt_lr_schedule lr_schedule;	/* over total_steps, once
						 * that is known */
	struct json_object *desc;	/* what plan --dry-run prints and the
					 * trainer writes to plan.json: memory
					 * and bytes per rank, FLOPs, ... */
};

/* The one plan constructor: everything a job will do on world_size
 * ranks, resolved once (plan, run -n and the trainer all call it, and
 * nothing downstream derives any of it again): the batch arithmetic and
 * the grid (dt_plan_batch), the BLAS threads (dt_plan_blas_threads on
 * host), exact accumulation, the stage of every node of the whole model
 * (dt_plan_layout on a shapes-only model that the plan keeps), each
 * stage's holdings, micro-batches in flight, schedule and gradient sync
 * (dt_plan_sync), and, with data
 * (NULL: sizes unknown), what dt_plan_set_data adds. With train.steps
 * the length and its learning-rate schedule are known without the data.
 * On error returns DT_ERR_PLAN (or DT_ERR_JOB for the schedule) naming
 * the keys, and leaves *plan empty (dt_plan_fini is harmless). */
enum dt_status dt_plan_build(const struct dt_job *job, int world_size,
			     const struct dt_plan_host *host,
			     const struct dt_plan_data *data,
			     struct dt_plan *plan, struct dt_error *err);

/* Completes a plan built before its data's sizes were known (the
 * trainer learns them by loading the data it needs the layout for):
 * steps per epoch and samples dropped (DT_ERR_PLAN naming
 * train.global_batch when the global batch exceeds the training
 * samples), the total steps and their learning-rate schedule
 * (DT_ERR_JOB as dt_plan_schedule), and the description (plan->desc,
 * replaced). data->n_train < 0 leaves the steps unknown. */
enum dt_status dt_plan_set_data(const struct dt_job *job,
				const struct dt_plan_data *data,
				struct dt_plan *plan, struct dt_error *err);

/* Frees what dt_plan_build made; the plan is then empty. */
void dt_plan_fini(struct dt_plan *plan);

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

/* The rank grid dp x pp x tp: rank = (dp * pp_size + stage) * tp_size +
 * tp, so a tensor-parallel group is tp_size neighbouring ranks (one node,
 * where the sums inside a layer are cheapest), a pipeline tp_size *
 * pp_size of them, and the data-parallel replicas repeat that block. With
 * parameter servers (pp = tp = 1) the servers are the ranks past
 * dp_size. */
struct dt_grid_pos {
	int dp, stage, tp;
};
void dt_plan_position(const struct dt_plan *plan, int rank,
		      struct dt_grid_pos *pos);
int dt_plan_rank(const struct dt_plan *plan, int dp, int stage, int tp);

/* Whether the ranks of a tensor group hold only their blocks of the
 * split tensors (doc/DESIGN.md, "Tensor-parallel slices";
 * dt_model_tp_own_slices): with tensor parallelism, collective sums,
 * parallel.zero 0 or 1 (2 and 3 where parallel.zero_slices asks), and
 * every split node of plan->shapes (laid out) able to
 * (dt_model_tp_can_own_slices: not a tied head). Else they hold whole
 * tensors and compute their share on them, as before the slices. With
 * slices the
 * gradient is summed over the data-parallel ranks of each tensor rank
 * only. */
int dt_plan_tp_sliced(const struct dt_job *job, const struct dt_plan *plan);

/* Whether the gradient of a global batch is summed in double precision:
 * each micro-batch's gradient (float, as the layers make it) is added to
 * a double accumulator, the data-parallel x tensor-parallel ranks sum the
 * accumulators (an MPI_DOUBLE all-reduce, 8 bytes a value), and the sum
 * is rounded to float once. The sum of a few floats in double is exact
 * or nearly, so the gradient does not depend on how the global batch is
 * split into ranks and micro-batches, nor on the order MPI adds in: every
 * layout of a job computes the same gradient as one rank with the same
 * micro-batch. Used when there is more than one micro-batch per rank or
 * more than two ranks in the sum (for two floats the float sum is already
 * the rounded exact sum, and the one-micro-batch, one- or two-rank case
 * keeps the float path and its half-size all-reduce); never with
 * parameter servers. */
int dt_plan_exact_accum(const struct dt_plan *plan);

/* The fraction of a pipeline step a stage idles, (pp - 1) / (m + pp - 1)
 * for m = grad_accum_steps micro-batches, the same for GPipe and 1F1B
 * (Huang et al., "GPipe", 2019; Narayanan et al., "PipeDream", SOSP
 * 2019). 0 without a pipeline. */
double dt_plan_bubble(const struct dt_plan *plan);

/* Bytes per rank of activations that parallel.accum_schedule: auto lets
 * breadth first hold beyond depth first's one micro-batch: 1 GiB. */
#define DT_PLAN_BREADTH_AUTO_BYTES (1024.0 * 1024.0 * 1024.0)

/* The accumulation schedule of job's steps on plan (dt_plan_batch's
 * grid): depth_first (F0 B0 F1 B1 ...: one micro-batch of activations)
 * or breadth_first (F0 .. F(m-1), then the backward node by node from the
 * last to the first, each node over micro-batches 0 .. m-1 in order:
 * Lamy-Poirier, "Breadth-First Pipeline Parallelism", MLSys 2023, on one
 * stage). Breadth-first holds the activations of all m micro-batches,
 * and a node's gradient is final after its pass over the last one, so
 * with parallel.overlap its bucket's sum starts while the backward of
 * every micro-batch still runs; each parameter still receives its
 * micro-batches' gradients in order 0 .. m-1, so both give the same
 * bits. auto is breadth_first where that pays: parallel.overlap on,
 * plain data parallelism (no pipeline, no tensor parallelism, no
 * parameter servers) over more than one rank, and more than one
 * micro-batch per step; depth_first otherwise (and the plan's layout
 * turns auto's breadth_first back to depth_first where it would hold
 * more than DT_PLAN_BREADTH_AUTO_BYTES of activations beyond depth
 * first's). Into *out (never DT_ACCUM_AUTO). DT_ERR_PLAN naming parallel.accum_schedule's place
 * and the reason when breadth_first is asked for with a pipeline,
 * tensor parallelism or parameter servers (*out then untouched). */
enum dt_status dt_plan_accum_schedule(const struct dt_job *job,
				      const struct dt_plan *plan,
				      enum dt_accum_schedule *out,
				      struct dt_error *err);

/* Micro-batches whose activations stage `stage` holds at once: m for
 * GPipe (every forward before any backward), min(m, pp - stage) for 1F1B
 * (its warmup plus one); without a pipeline m for the breadth-first
 * accumulation schedule (plan->accum_schedule), else 1. */
int64_t dt_plan_in_flight(const struct dt_plan *plan, int stage);

/* Why stage `stage` holds dt_plan_in_flight micro-batches, in words for
 * the plan ("1F1B: the forwards that fill the stages after this one,
 * plus the one whose backward comes next"); a static string. */
const char *dt_plan_in_flight_reason(const struct dt_plan *plan, int stage);

/* One step of a stage's pipeline schedule: the forward or the backward
 * pass of micro-batch `micro` (0 .. m-1). */
struct dt_pipe_op {
	int backward;
	int64_t micro;
};

/* Fills ops (2 * grad_accum_steps entries) with stage `stage`'s schedule
 * for one optimizer step. Without a pipeline: F0 B0 F1 B1 ..., or for
 * the breadth-first accumulation schedule F0 .. F(m-1) then B0 .. B(m-1)
 * (the executor runs those backwards as one pass, node by node). GPipe:
 * F0 .. F(m-1) then B0 .. B(m-1). 1F1B:
 * w = min(pp - stage - 1, m) forwards, then F(w+i) B(i) pairs, then the
 * remaining backwards. Micro-batches go forward and backward in
 * increasing order on every stage, so the messages between neighbours
 * match in order. */
void dt_plan_pipe_ops(const struct dt_plan *plan, int stage,
		      struct dt_pipe_op *ops);

struct dt_model;

/* Cuts model's nodes into pp contiguous pipeline stages into stage_of_node
 * (dt_model_n_layers(model) entries; graph.h describes a layout). With
 * parallel.stages given, stage s >= 1 starts at the first node of the
 * layer it names; otherwise the stages are balanced by job's
 * parallel.balance: forward+backward FLOPs per sample (the default) or
 * parameters per node, minimising the largest stage, then the largest of
 * the others, and so on (dt_plan_partition). The loss (the last node) is
 * always in the stage of the node before it, so no stage holds the loss
 * alone. Works on a shapes-only model. DT_ERR_PLAN naming parallel.
 * pipeline_parallel's place when pp exceeds the number of nodes less the
 * loss ("8 stages but the model has 6 nodes (dense0, dense0.relu, ...,
 * loss); ... use at most 5 stages"). */
enum dt_status dt_plan_stages(const struct dt_job *job,
			      const struct dt_model *model, int pp,
			      int *stage_of_node, struct dt_error *err);

/* The contiguous partition of n costs (>= 0) into k non-empty parts, k <=
 * n, that is lexicographically min-max: its largest part sum is the
 * smallest possible (the linear partition problem), and among those cuts
 * its second largest is smallest, then its third, and so on (the part
 * sums sorted largest first compare lexicographically). Solved exactly by
 * dynamic programming over prefix sums, O(k^2 n^2) at worst; ties go to
 * the partition whose earlier parts are longer, so the result is one
 * deterministic answer. part[i] is the part of item i, 0 .. k-1, never
 * decreasing. Returns the largest part sum. */
double dt_plan_partition(const double *cost, int n, int k, int *part);

/* The plan's tensor split of model over tp_size tensor ranks, as the
 * trainer, the plan and the checkpoints' whole-model shapes all mark it:
 * the dense pairs and attention heads (dt_model_plan_tensor_parallel),
 * then the vocabulary (dt_model_plan_vocab_parallel; a tied head stays
 * whole). A no-op for tp_size <= 1; DT_ERR_PLAN from either. */
enum dt_status dt_plan_split_tensors(const struct dt_job *job, int tp_size,
				     struct dt_model *model,
				     struct dt_error *err);

/* The layout of plan on model, as run and plan --dry-run both refuse or
 * make it: with tensor parallelism marks model's split nodes
 * (dt_model_plan_tensor_parallel, so its FLOPs become one tensor rank's
 * share), then cuts the stages into stage_of_node (dt_plan_stages; NULL
 * to only check them). DT_ERR_PLAN from either. */
enum dt_status dt_plan_layout(const struct dt_job *job,
			      const struct dt_plan *plan,
			      struct dt_model *model, int *stage_of_node,
			      struct dt_error *err);

/* BLAS threads for each of local_ranks ranks on a node of `cores` cores:
 * env_value (OPENBLAS_NUM_THREADS, may be NULL) when it is a positive
 * integer, else job_value (parallel.blas_threads) when it is positive,
 * else max(1, cores / local_ranks). */
int dt_plan_blas_threads(int cores, int local_ranks, int64_t job_value,
			 const char *env_value);

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

/* Resident memory of a rank before any tensor: the binary, the C
 * runtime, Open MPI, OpenBLAS (its code and the pages of its packing
 * buffers that products touch), oneDNN (libdnnl), libcurl, OpenSSL,
 * json-c and libyaml. Measured on Debian 12 (x86-64, Open MPI 4.1,
 * OpenBLAS 0.3.21, oneDNN 2) as the peak resident memory (VmHWM,
 * summary.json) of a do-nothing rank, a model of 2176 parameters, less
 * its plan's data and tensors (0.07 MiB): 29.6 MiB alone or under
 * mpirun -np 1, 29.9 on each of 2 ranks, 29.9 to 30.1 on each of 4
 * (2026-12-06; 25.4 and 25.9 before oneDNN was linked); a model whose
 * products fill OpenBLAS's packing buffers (jobs/char-gpt.yaml) touches
 * about 1.3 MiB more of them. The plan adds it so that its per-rank
 * total compares with the rank's measured peak. */
#define DT_PLAN_RUNTIME_BYTES ((int64_t)30 << 20)

/* oneDNN's own resident memory where a rank's products run on it (the
 * f32 dense products where kern.h's rule sends them there, or
 * train.precision bf16): the plan's "kernels_runtime", DT_PLAN_ONEDNN_BYTES
 * and DT_PLAN_ONEDNN_SHAPE_BYTES for each distinct shape of product
 * (dt_model_product_shapes; one matmul primitive each, with its JIT
 * code, kept for the run). Measured on this Zen 5 (Debian 12, oneDNN
 * 2.6.3, 2026-12-07; doc/DESIGN.md, "oneDNN's own memory") as the peak
 * resident memory of a run with DTRAIN_KERNELS=onednn less that of the
 * same run with DTRAIN_KERNELS=openblas, fitted over the shipped jobs'
 * layouts. */
#define DT_PLAN_ONEDNN_BYTES ((int64_t)2 << 20)
#define DT_PLAN_ONEDNN_SHAPE_BYTES ((int64_t)424 << 10)

/* What plan --dry-run reports, for plan (built by dt_plan_build, whose
 * desc it fills): the process grid, the batch arithmetic, per layer
 * (graph node) its output shape, parameters and forward/backward FLOPs
 * per sample, per rank the memory of parameters, gradients, optimizer
 * state, activations at the micro-batch and the dataset, and the bytes
 * each rank sends and receives per optimizer step (ring all-reduce:
 * 2 (p-1)/p of the gradient bytes each way, Patarasuk & Yuan, "Bandwidth
 * optimal all-reduce algorithms", 2009), steps per epoch and samples
 * dropped. Returns a new JSON object owned by the caller
 * (json_object_put); its keys are documented in dtrain(1). */
struct json_object *dt_plan_describe(const struct dt_job *job,
				     const struct dt_plan *plan);

/* Prints the description made by dt_plan_describe as text. */
void dt_plan_print(const struct json_object *desc, FILE *out);

/* A network link for plan --link: its rate and per-message latency. */
struct dt_plan_link {
	double bytes_per_s;	/* > 0 */
	double latency_s;	/* >= 0 */
};

/* Parses "RATE,LATENCY" (10gbit,50us; 1gbit,0.2ms; 125MB,1ms): RATE a
 * number > 0, an optional SI prefix k, m, g or t (powers of 1000, either
 * case) and bit(s), byte(s) or B, with an optional "/s"; LATENCY a number
 * >= 0 and s, ms, us or ns. DT_ERR_USAGE quoting text and the grammar;
 * *out is then unspecified. */
enum dt_status dt_plan_link_parse(const char *text, struct dt_plan_link *out,
				  struct dt_error *err);

/* Adds "link_estimate" to desc (made by dt_plan_describe): per optimizer
 * step on the busiest rank, the compute time at gflops GFLOP/s (> 0;
 * gflops_source says where the figure came from), its backward part, the
 * gradient sync's time on link (ring all-reduce, Patarasuk & Yuan 2009,
 * or the parameter servers' push and pull; link.c), the part of it that
 * overlap (1: the sync runs during backward; overlap_source says why it
 * is assumed or where it was read) hides, min(sync, backward), what stays
 * exposed, and the step time compute + exposed. Seconds throughout. */
void dt_plan_link_estimate(struct json_object *desc,
			   const struct dt_plan_link *link, double gflops,
			   const char *gflops_source, int overlap,
			   const char *overlap_source);

/* Prints desc's link_estimate as text (nothing when it has none). */
void dt_plan_link_print(const struct json_object *desc, FILE *out);

#endif
