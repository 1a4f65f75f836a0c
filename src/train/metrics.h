/* SPDX-License-Identifier: MIT */
/* metrics.h - what a run writes for people and programs to read: the
 * JSON lines of metrics.jsonl, summary.json and plan.json. Internal to
 * train/. */
#ifndef DT_TRAIN_METRICS_H
#define DT_TRAIN_METRICS_H

#include "train/state.h"
#include "train/train.h"

/* What a logged step reports (rank 0 writes it). */
struct dt_log_line {
	double loss;		/* mean over the log window */
	double lr;
	double samples_per_s;
	double data_wait_s;	/* since the last log line */
	double forward_s;	/* rank 0's breakdown compute_s split: its */
	double backward_s;	/* forward passes and the rest (backward) */
	double elapsed_s;	/* since this run (or resume) began training */
	double grad_norm;	/* the last step's, before clipping; NAN with
				 * parameter servers */
	double tokens_per_s;	/* a language model's; NAN for others */
};

/* Rank 0: one metrics.jsonl line for the step r is at, with the time
 * breakdowns of r->rank_times (rank 0's and the slowest worker's), and
 * with log.tensorboard its scalars in r->tb. Each write is checked:
 * DT_ERR_IO naming the file when one fails. */
enum dt_status dt_metrics_log(struct dt_run *r, const struct dt_log_line *line,
			      struct dt_error *err);

/* Rank 0: the metrics.jsonl line (and the scalars) of an evaluation,
 * with eval_perplexity, exp(loss), for a model with a label per token
 * (loss is then the mean token loss); errors as dt_metrics_log. */
enum dt_status dt_metrics_eval(struct dt_run *r, double loss, double accuracy,
			       struct dt_error *err);

/* Rank 0, with log.tensorboard: opens RUN_DIR/tb/events.out.tfevents.*
 * (a new file on each resume) into r->tb. Otherwise DT_OK. DT_ERR_IO
 * naming the directory or file. */
enum dt_status dt_metrics_open_tb(struct dt_run *r, struct dt_error *err);

/* What the run directory dir says was trained before: the highest step
 * of metrics.jsonl's lines into *last_step (-1: none), and whether
 * summary.json exists into *summary. Returns 1 when either shows a
 * trained step, else 0 (a missing or unreadable file shows none). */
int dt_metrics_history(const char *dir, int64_t *last_step, int *summary);

/* Rank 0: rewrites RUN_DIR/metrics.jsonl keeping only the lines of steps
 * <= step (all of them dropped for step < 0), then opens it for appending
 * into r->metrics. Other ranks: DT_OK. */
enum dt_status dt_metrics_reopen(struct dt_run *r, int64_t step,
				 struct dt_error *err);

/* Rank 0: RUN_DIR/plan.json, the plan this run executes (plan->desc, as
 * plan --dry-run --json prints it). Other ranks: DT_OK. */
enum dt_status dt_metrics_write_plan(struct dt_run *r, struct dt_error *err);

/* The per-step byte counts of one rank in summary.json's bytes_per_step:
 * point-to-point, gradient all-reduce, tensor-parallel, the norm's sends
 * to the tensor group, zero's blocks sent to data-parallel rank 0 for
 * the norm (p2p_bytes, grad_allreduce_bytes, tp_allreduce_bytes,
 * tp_norm_bytes, zero_block_bytes). */
#define DT_METRICS_BYTE_COUNTS 5

/* Rank 0: RUN_DIR/summary.json from res and bytes (world_size x
 * DT_METRICS_BYTE_COUNTS per-step byte counts, or NULL), with each
 * worker's peak resident memory (r->peak_resident) and
 * the plan's memory of its rank under "ranks". Other ranks: DT_OK. */
enum dt_status dt_metrics_write_summary(struct dt_run *r,
					const struct dt_train_result *res,
					const double *bytes,
					struct dt_error *err);

/* How far a rank's measured peak resident memory may exceed the plan's
 * figure for it before the run says so: 15%. */
#define DT_METRICS_PEAK_SLACK 0.15

/* Rank 0, at the end of a run: one line on out for each worker whose
 * peak resident memory (r->peak_resident) exceeds the plan's memory of
 * its rank (plan.json "ranks", "memory", "total") by more than
 * DT_METRICS_PEAK_SLACK, naming the rank, both figures in bytes and MiB
 * and their ratio. Nothing where every rank is within it, where either
 * figure is unknown, or on other ranks. */
void dt_metrics_memory_note(const struct dt_run *r, FILE *out);

#endif
