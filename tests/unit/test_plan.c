/* SPDX-License-Identifier: MIT */
/* test_plan.c - batch arithmetic, the rank grid and its refusals, the
 * pipeline schedules, stage partitions, the plan's per-rank figures, BLAS
 * threads, the single-process communicator's agreement and the run
 * directory's refusal to overwrite. */
#include <check.h>
#include <json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm.h"
#include "graph/graph.h"
#include "plan/plan.h"
#include "plan/sync_plan.h"
#include "train/rundir.h"

static struct dt_job job;

static void
set_batch(int64_t g, int64_t m, int64_t k)
{
	memset(&job, 0, sizeof job);
	strcpy(job.path, "job.yaml");
	job.train.global_batch = g;
	job.train.micro_batch = m;
	job.train.grad_accum_steps = k;
}

START_TEST(two_of_three_fix_the_third)
{
	struct dt_plan p;
	struct dt_error err;

	set_batch(96, 0, 2);		/* g, k -> m */
	ck_assert_int_eq(dt_plan_batch(&job, 3, &p, &err), DT_OK);
	ck_assert_int_eq(p.micro_batch, 16);
	ck_assert_int_eq(p.grad_accum_steps, 2);
	ck_assert_int_eq(p.dp_size, 3);
	ck_assert_int_eq(p.per_rank_batch, 32);

	set_batch(96, 12, 0);		/* g, m -> k */
	ck_assert_int_eq(dt_plan_batch(&job, 2, &p, &err), DT_OK);
	ck_assert_int_eq(p.grad_accum_steps, 4);

	set_batch(0, 8, 3);		/* m, k -> g */
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_OK);
	ck_assert_int_eq(p.global_batch, 96);

	set_batch(128, 0, 0);		/* g alone: k = 1 */
	ck_assert_int_eq(dt_plan_batch(&job, 2, &p, &err), DT_OK);
	ck_assert_int_eq(p.micro_batch, 64);
	ck_assert_int_eq(p.grad_accum_steps, 1);

	set_batch(0, 32, 0);		/* m alone: k = 1, g = m x dp */
	ck_assert_int_eq(dt_plan_batch(&job, 3, &p, &err), DT_OK);
	ck_assert_int_eq(p.global_batch, 96);

	set_batch(96, 16, 2);		/* all three, consistent */
	ck_assert_int_eq(dt_plan_batch(&job, 3, &p, &err), DT_OK);
}
END_TEST

START_TEST(contradictions_and_remainders)
{
	struct dt_plan p;
	struct dt_error err;

	set_batch(96, 16, 2);
	ck_assert_int_eq(dt_plan_batch(&job, 2, &p, &err), DT_ERR_PLAN);
	ck_assert_pstr_eq(err.msg, "job.yaml: train.global_batch: global batch "
			  "96 != micro_batch 16 x grad_accum_steps 2 x "
			  "data-parallel degree 2 = 64; give only two of the "
			  "three");
	set_batch(96, 0, 2);
	ck_assert_int_eq(dt_plan_batch(&job, 5, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "global batch 96 is not a multiple of "
			 "grad_accum_steps 2 x data-parallel degree 5 = 10"));
	set_batch(100, 8, 0);
	ck_assert_int_eq(dt_plan_batch(&job, 1, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "not a multiple of micro_batch 8"));
	set_batch(0, 0, 4);
	ck_assert_int_eq(dt_plan_batch(&job, 1, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "give train.global_batch or train.micro_batch"));
	set_batch(64, 0, 0);
	job.parallel.data_parallel = 4;
	ck_assert_int_eq(dt_plan_batch(&job, 2, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "data-parallel degree 4 does not match the 2 "
			 "data-parallel ranks of 2"));
	/* Parameter servers are not data-parallel ranks. */
	set_batch(96, 0, 2);
	job.parallel.sync = DT_SYNC_PARAMETER_SERVER;
	job.parallel.servers = 1;
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_OK);
	ck_assert_int_eq(p.dp_size, 3);
	ck_assert_int_eq(p.micro_batch, 16);
	job.parallel.servers = 4;
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "4 parameter servers leave no worker"));
	job.parallel.servers = 1;
	job.train.clip_norm = 1;
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "not supported with parameter servers"));
	/* Strategy data: no pipeline, no tensor split. */
	job.train.clip_norm = 0;
	job.parallel.sync = DT_SYNC_ALLREDUCE;
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_OK);
	ck_assert_int_eq(p.dp_size, 4);
	ck_assert_int_eq(p.pp_size, 1);
	ck_assert_int_eq(p.tp_size, 1);
	ck_assert_int_eq(p.micro_batch, 12);
}
END_TEST

/* ---- the rank grid, from job texts (positions are checked) ---------- */

static struct dt_error perr;

/* A three-dense-layer job with `train` (a flow mapping) on line 9 and the
 * lines of `parallel` from line 11 on:
 *    1 data:
 *    2   train: {images: a.idx, labels: b.idx}
 *    3 model:
 *    4   input_shape: [4]
 *    5   layers:
 *    6     - {type: dense, units: 8, activation: relu, name: d0}
 *    7     - {type: dense, units: 8, name: d1}
 *    8     - {type: dense, units: 3, name: d2}
 *    9 train: TRAIN
 *   10 parallel:
 *   11 PARALLEL...                                                    */
static void
load(const char *train, const char *parallel)
{
	char text[2048];

	snprintf(text, sizeof text,
		 "data:\n"
		 "  train: {images: a.idx, labels: b.idx}\n"
		 "model:\n"
		 "  input_shape: [4]\n"
		 "  layers:\n"
		 "    - {type: dense, units: 8, activation: relu, name: d0}\n"
		 "    - {type: dense, units: 8, name: d1}\n"
		 "    - {type: dense, units: 3, name: d2}\n"
		 "train: %s\n"
		 "parallel:\n"
		 "%s", train, parallel);
	memset(&job, 0, sizeof job);
	if (dt_job_parse("job.yaml", text, strlen(text), NULL, 0, &job,
			 &perr) != DT_OK)
		ck_abort_msg("job does not parse: %s", perr.msg);
}

#define TRAIN32 "{global_batch: 32, steps: 10, lr: 0.1}"

/* Resolves the loaded job on n ranks; expects it to work. */
static struct dt_plan
grid_ok(int n)
{
	struct dt_plan p;

	if (dt_plan_batch(&job, n, &p, &perr) != DT_OK)
		ck_abort_msg("%d ranks: %s", n, perr.msg);
	ck_assert_int_eq(p.world_size, n);
	ck_assert_int_eq(p.dp_size * p.pp_size * p.tp_size +
			 (job.parallel.sync == DT_SYNC_PARAMETER_SERVER ?
			  job.parallel.servers : 0), n);
	return p;
}

/* Expects the loaded job on n ranks to be refused with a message that
 * contains each of the (up to three) texts. */
static void
grid_fails(int n, const char *a, const char *b, const char *c)
{
	struct dt_plan p;

	ck_assert_int_eq(dt_plan_batch(&job, n, &p, &perr), DT_ERR_PLAN);
	if (!strstr(perr.msg, a) || (b && !strstr(perr.msg, b)) ||
	    (c && !strstr(perr.msg, c)))
		ck_abort_msg("message \"%s\" lacks \"%s\" / \"%s\" / \"%s\"",
			     perr.msg, a, b ? b : "", c ? c : "");
}

/* The description of the loaded job's plan on n ranks (one BLAS thread),
 * as dt_plan_build makes it; owned by the caller. */
static struct json_object *
describe(int n)
{
	struct dt_plan_host host = { 1, 1, NULL };
	struct dt_plan p;
	struct json_object *d;

	if (dt_plan_build(&job, n, &host, NULL, &p, &perr) != DT_OK)
		ck_abort_msg("%d ranks: %s", n, perr.msg);
	d = json_object_get(p.desc);
	dt_plan_fini(&p);
	return d;
}

START_TEST(grid_model)
{
	struct dt_plan p;

	/* model, no degree: a pipeline over every rank. */
	load(TRAIN32, "  strategy: model\n");
	p = grid_ok(4);
	ck_assert_int_eq(p.dp_size, 1);
	ck_assert_int_eq(p.pp_size, 4);
	ck_assert_int_eq(p.tp_size, 1);
	ck_assert_int_eq(p.micro_batch, 32);
	ck_assert_int_eq(p.global_batch, 32);	/* dp only */
	ck_assert_int_eq(p.pipe_schedule, DT_PIPE_GPIPE);
	/* model, tensor only: pp defaults to 1. */
	load(TRAIN32, "  strategy: model\n  tensor_parallel: 2\n");
	p = grid_ok(2);
	ck_assert_int_eq(p.pp_size, 1);
	ck_assert_int_eq(p.tp_size, 2);
	ck_assert_int_eq(p.micro_batch, 32);
	/* model, pp auto beside tp. */
	load(TRAIN32, "  strategy: model\n  pipeline_parallel: auto\n"
	     "  tensor_parallel: 2\n  schedule: 1f1b\n");
	p = grid_ok(8);
	ck_assert_int_eq(p.pp_size, 4);
	ck_assert_int_eq(p.tp_size, 2);
	ck_assert_int_eq(p.dp_size, 1);
	ck_assert_int_eq(p.pipe_schedule, DT_PIPE_1F1B);
	/* model keeps one copy. */
	load(TRAIN32, "  strategy: model\n  data_parallel: 2\n");
	grid_fails(4, "job.yaml:12:18: parallel.data_parallel: must be 1 "
		   "with strategy model", "found 2", "strategy hybrid");
	load(TRAIN32, "  strategy: model\n  data_parallel: auto\n");
	grid_fails(4, "job.yaml:12:18: parallel.data_parallel:", "found auto",
		   NULL);
	/* A product that is not the world. */
	load(TRAIN32, "  strategy: model\n  pipeline_parallel: 2\n"
	     "  tensor_parallel: 2\n");
	grid_fails(6, "job.yaml:13:20: parallel.tensor_parallel: data_parallel "
		   "1 (default) x pipeline_parallel 2 x tensor_parallel 2 = 4 "
		   "ranks, but 6 are given", "run with -n 4", NULL);
	grid_ok(4);
}
END_TEST

START_TEST(grid_hybrid)
{
	struct dt_plan p;

	/* No degree: replicas of the whole model. */
	load(TRAIN32, "  strategy: hybrid\n");
	p = grid_ok(4);
	ck_assert_int_eq(p.dp_size, 4);
	ck_assert_int_eq(p.pp_size, 1);
	ck_assert_int_eq(p.micro_batch, 8);
	/* dp x pp: the batch splits over dp only. */
	load(TRAIN32, "  strategy: hybrid\n  data_parallel: 2\n"
	     "  pipeline_parallel: 2\n");
	p = grid_ok(4);
	ck_assert_int_eq(p.dp_size, 2);
	ck_assert_int_eq(p.pp_size, 2);
	ck_assert_int_eq(p.tp_size, 1);
	ck_assert_int_eq(p.micro_batch, 16);
	ck_assert_int_eq(p.grad_accum_steps, 1);
	ck_assert_int_eq(p.per_rank_batch, 16);
	grid_fails(3, "job.yaml:13:22: parallel.pipeline_parallel: "
		   "data_parallel 2 x pipeline_parallel 2 x tensor_parallel 1 "
		   "(default) = 4 ranks, but 3 are given", "-n 4", NULL);
	/* auto takes the rest, and must divide. */
	load(TRAIN32, "  strategy: hybrid\n  data_parallel: auto\n"
	     "  pipeline_parallel: 2\n  tensor_parallel: 2\n");
	p = grid_ok(8);
	ck_assert_int_eq(p.dp_size, 2);
	ck_assert_int_eq(p.micro_batch, 16);
	grid_fails(6, "job.yaml:12:18: parallel.data_parallel: auto: 6 ranks "
		   "are not a multiple of pipeline_parallel 2 x "
		   "tensor_parallel 2 = 4", "-n a multiple of 4", NULL);
	/* The global batch splits over dp = 4 here: 32 / 4. */
	load(TRAIN32, "  strategy: hybrid\n  pipeline_parallel: auto\n");
	p = grid_ok(4);
	ck_assert_int_eq(p.pp_size, 4);
	ck_assert_int_eq(p.dp_size, 1);
	ck_assert_int_eq(p.micro_batch, 32);
	/* A global batch that does not split over dp: micro-batches named. */
	load("{global_batch: 30, micro_batch: 5, steps: 10, lr: 0.1}",
	     "  strategy: hybrid\n  data_parallel: 4\n"
	     "  pipeline_parallel: 2\n");
	grid_fails(8, "job.yaml:9:23: train.global_batch: global batch 30 is "
		   "not a multiple of micro_batch 5 x data-parallel degree 4 "
		   "= 20", "micro-batches", NULL);
}
END_TEST

START_TEST(grid_micro_batches)
{
	struct dt_plan p;

	/* micro_batches is grad_accum_steps with a pipeline. */
	load(TRAIN32, "  strategy: model\n  micro_batches: 8\n");
	p = grid_ok(4);
	ck_assert_int_eq(p.grad_accum_steps, 8);
	ck_assert_int_eq(p.micro_batch, 4);
	ck_assert_int_eq(p.global_batch, 32);
	ck_assert(fabs(dt_plan_bubble(&p) - 3.0 / 11) < 1e-12);
	load("{micro_batch: 4, steps: 10, lr: 0.1}",
	     "  strategy: hybrid\n  data_parallel: 2\n"
	     "  pipeline_parallel: 2\n  micro_batches: 3\n");
	p = grid_ok(4);
	ck_assert_int_eq(p.grad_accum_steps, 3);
	ck_assert_int_eq(p.global_batch, 24);
	/* Against an explicit train.grad_accum_steps. */
	load("{global_batch: 32, grad_accum_steps: 4, steps: 10, lr: 0.1}",
	     "  strategy: model\n  micro_batches: 8\n");
	grid_fails(4, "job.yaml:12:18: parallel.micro_batches: 8 micro-batches "
		   "per pipeline step, but train.grad_accum_steps is 4 "
		   "(job.yaml:9:45)", "give only one", NULL);
	/* Against the one global_batch and micro_batch make. */
	load("{global_batch: 32, micro_batch: 8, steps: 10, lr: 0.1}",
	     "  strategy: model\n  micro_batches: 8\n");
	grid_fails(2, "job.yaml:12:18: parallel.micro_batches: 8 "
		   "micro-batches per pipeline step, but train.global_batch "
		   "32 (job.yaml:9:23)", "makes grad_accum_steps 4", NULL);
	/* Equal is fine, and no pipeline ignores it. */
	load("{global_batch: 32, micro_batch: 4, steps: 10, lr: 0.1}",
	     "  strategy: model\n  micro_batches: 8\n");
	p = grid_ok(2);
	ck_assert_int_eq(p.grad_accum_steps, 8);
	load("{global_batch: 32, micro_batch: 8, steps: 10, lr: 0.1}",
	     "  strategy: model\n  tensor_parallel: 2\n"
	     "  micro_batches: 8\n");
	p = grid_ok(2);
	ck_assert_int_eq(p.grad_accum_steps, 4);
	/* 32 samples in 3 micro-batches: no. */
	load(TRAIN32, "  strategy: model\n  micro_batches: 3\n");
	grid_fails(2, "job.yaml:9:23: train.global_batch: global batch 32 is "
		   "not a multiple of grad_accum_steps 3", "micro-batches",
		   NULL);
}
END_TEST

START_TEST(grid_parameter_servers)
{
	struct dt_plan p;

	/* Servers are not in the grid; with pp or tp > 1 they are refused. */
	load("{global_batch: 32, steps: 10, lr: 0.1}",
	     "  strategy: model\n  pipeline_parallel: 2\n"
	     "  sync: parameter_server\n");
	grid_fails(3, "job.yaml:13:9: parallel.sync: parameter servers work "
		   "with data parallelism only, found pipeline_parallel 2",
		   NULL, NULL);
	load("{global_batch: 30, steps: 10, lr: 0.1}",
	     "  strategy: hybrid\n  sync: parameter_server\n  servers: 2\n");
	p = grid_ok(5);
	ck_assert_int_eq(p.dp_size, 3);
	ck_assert_int_eq(p.pp_size, 1);
	load("{global_batch: 32, steps: 10, lr: 0.1}",
	     "  strategy: hybrid\n  data_parallel: 2\n"
	     "  sync: parameter_server\n");
	p = grid_ok(3);
	ck_assert_int_eq(p.dp_size, 2);
	ck_assert_int_eq(p.micro_batch, 16);
	grid_fails(4, "job.yaml:12:18: parallel.data_parallel: data_parallel 2 x "
		   "pipeline_parallel 1 (default) x tensor_parallel 1 "
		   "(default) = 2 ranks, but 3 workers", "run with -n 3",
		   NULL);
}
END_TEST

/* ---- pipeline schedules --------------------------------------------- */

static void
expect_ops(const struct dt_plan *p, int stage, const char *want)
{
	struct dt_pipe_op ops[64];
	char got[512];
	size_t len = 0;

	dt_plan_pipe_ops(p, stage, ops);
	got[0] = '\0';
	for (int64_t i = 0; i < 2 * p->grad_accum_steps; i++)
		len += (size_t)snprintf(got + len, sizeof got - len, "%s%c%lld",
					i ? " " : "", ops[i].backward ? 'B' :
					'F', (long long)ops[i].micro);
	ck_assert_str_eq(got, want);
}

START_TEST(pipeline_schedules)
{
	struct dt_plan p = { .world_size = 4, .dp_size = 1, .pp_size = 4,
			     .tp_size = 1, .pipe_schedule = DT_PIPE_1F1B,
			     .grad_accum_steps = 8 };

	expect_ops(&p, 0, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
	expect_ops(&p, 2, "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
	expect_ops(&p, 3, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
	ck_assert_int_eq(dt_plan_in_flight(&p, 0), 4);
	ck_assert_int_eq(dt_plan_in_flight(&p, 1), 3);
	ck_assert_int_eq(dt_plan_in_flight(&p, 3), 1);
	ck_assert(fabs(dt_plan_bubble(&p) - 3.0 / 11) < 1e-12);
	/* Fewer micro-batches than stages: the warm-up is cut short. */
	p.grad_accum_steps = 2;
	expect_ops(&p, 0, "F0 F1 B0 B1");
	ck_assert_int_eq(dt_plan_in_flight(&p, 0), 2);
	ck_assert(fabs(dt_plan_bubble(&p) - 3.0 / 5) < 1e-12);
	p.pipe_schedule = DT_PIPE_GPIPE;
	p.grad_accum_steps = 3;
	expect_ops(&p, 1, "F0 F1 F2 B0 B1 B2");
	ck_assert_int_eq(dt_plan_in_flight(&p, 3), 3);
	ck_assert(fabs(dt_plan_bubble(&p) - 0.5) < 1e-12);
	p.pp_size = 1;
	ck_assert(dt_plan_bubble(&p) == 0);
	/* The grid: rank = (dp * pp + stage) * tp + tp_rank. */
	p = (struct dt_plan){ .world_size = 12, .dp_size = 3, .pp_size = 2,
			      .tp_size = 2 };
	for (int r = 0; r < 12; r++) {
		struct dt_grid_pos pos;

		dt_plan_position(&p, r, &pos);
		ck_assert_int_eq(pos.tp, r % 2);
		ck_assert_int_eq(pos.stage, r / 2 % 2);
		ck_assert_int_eq(pos.dp, r / 4);
		ck_assert_int_eq(dt_plan_rank(&p, pos.dp, pos.stage, pos.tp), r);
	}
}
END_TEST

/* ---- stage partitions ------------------------------------------------ */

/* The smallest largest part over every cut of cost[0 .. n) into k parts,
 * by enumeration: parts [from, e], then the rest. */
static double
brute(const double *cost, int from, int n, int k)
{
	double best = INFINITY, sum = 0;

	if (k == 1) {
		for (int i = from; i < n; i++)
			sum += cost[i];
		return sum;
	}
	for (int e = from; n - e - 1 >= k - 1; e++) {
		double rest;

		sum += cost[e];
		rest = brute(cost, e + 1, n, k - 1);
		if ((sum > rest ? sum : rest) < best)
			best = sum > rest ? sum : rest;
	}
	return best;
}

/* The lexicographic min-max cut of cost[0 .. n) into k parts by
 * enumeration: every cut, its part sums sorted largest first, the smallest
 * in lexicographic order; cuts come in increasing order of their part
 * ends, so on a tie the one with the longer earlier parts is kept. ends[p]
 * is the last item of part p of the cut being built. */
struct lex_search {
	const double *cost;
	int n, k;
	int ends[8], best_ends[8];
	double best[8];		/* sorted largest first; best[0] < 0: none */
};

static int
by_size_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

static void
lex_brute(struct lex_search *ls, int p, int from)
{
	if (p == ls->k - 1) {
		double sums[8] = { 0 };
		int i = 0, cmp = 0;

		ls->ends[p] = ls->n - 1;
		for (int q = 0; q < ls->k; q++)
			for (; i <= ls->ends[q]; i++)
				sums[q] += ls->cost[i];
		qsort(sums, (size_t)ls->k, sizeof sums[0], by_size_desc);
		for (int q = 0; q < ls->k && cmp == 0; q++)
			cmp = sums[q] < ls->best[q] ? -1 :
			      sums[q] > ls->best[q] ? 1 : 0;
		if (ls->best[0] < 0 || cmp <= 0) {
			memcpy(ls->best, sums, sizeof sums);
			memcpy(ls->best_ends, ls->ends, sizeof ls->ends);
		}
		return;
	}
	for (int e = from; ls->n - e - 1 >= ls->k - p - 1; e++) {
		ls->ends[p] = e;
		lex_brute(ls, p + 1, e + 1);
	}
}

START_TEST(partition_property)
{
	unsigned seed = 12345;
	double cost[64];
	int part[64];

	for (int n = 1; n <= 64; n++) {
		for (int k = 1; k <= 8 && k <= n; k++) {
			double sums[8] = { 0 }, largest = 0, got;

			for (int i = 0; i < n; i++) {
				seed = seed * 1103515245u + 12345u;
				/* A quarter zeros, the rest integers 1..99
				 * (exact sums, so the optimum compares
				 * exactly). */
				cost[i] = (seed >> 16) % 4 == 0 ? 0 :
					  (double)((seed >> 8) % 99 + 1);
			}
			got = dt_plan_partition(cost, n, k, part);
			ck_assert_int_eq(part[0], 0);
			ck_assert_int_eq(part[n - 1], k - 1);
			for (int i = 0; i < n; i++) {
				ck_assert(part[i] >= 0 && part[i] < k);
				if (i > 0)	/* in order, none skipped */
					ck_assert(part[i] - part[i - 1] == 0 ||
						  part[i] - part[i - 1] == 1);
				sums[part[i]] += cost[i];
			}
			for (int j = 0; j < k; j++)
				if (sums[j] > largest)
					largest = sums[j];
			ck_assert(got == largest);
			if (n <= 14)
				ck_assert_msg(got == brute(cost, 0, n, k),
					      "n %d k %d: %g, best %g", n, k,
					      got, brute(cost, 0, n, k));
			/* Below the largest part too: the very cut of the
			 * enumeration, ties and all. */
			if (n <= 11) {
				struct lex_search ls = {
					.cost = cost, .n = n, .k = k,
					.best = { -1 } };
				int p = 0;

				lex_brute(&ls, 0, 0);
				for (int i = 0; i < n; i++) {
					ck_assert_msg(part[i] == p,
						      "n %d k %d: item %d in "
						      "part %d, not %d", n, k,
						      i, part[i], p);
					if (i == ls.best_ends[p])
						p++;
				}
			}
		}
	}
	/* Hand-worked: the earlier parts take the most on ties. */
	{
		const double c[] = { 1, 1, 1, 1 }, z[] = { 0, 0, 0, 0, 0 };
		const double w[] = { 5, 1, 1, 1, 1, 1, 5 };

		ck_assert(dt_plan_partition(c, 4, 3, part) == 2);
		ck_assert_int_eq(part[0], 0);
		ck_assert_int_eq(part[1], 0);
		ck_assert_int_eq(part[2], 1);
		ck_assert_int_eq(part[3], 2);
		ck_assert(dt_plan_partition(z, 5, 3, part) == 0);
		ck_assert_int_eq(part[2], 0);
		ck_assert_int_eq(part[3], 1);
		ck_assert_int_eq(part[4], 2);
		ck_assert(dt_plan_partition(w, 7, 2, part) == 8);
		ck_assert_int_eq(part[3], 0);	/* 5+1+1+1 | 1+1+5 */
		ck_assert_int_eq(part[4], 1);
	}
	/* The bottleneck in the middle: 10 is a part of its own (10 + 1 >
	 * 10), and the six ones on either side take two parts each, 3 + 3
	 * (the largest-first cut would leave 6 | 10 | 4 | 1 | 1). */
	{
		const double m[] = { 1, 1, 1, 1, 1, 1, 10, 1, 1, 1, 1, 1, 1 };
		static const int want[] = { 0, 0, 0, 1, 1, 1, 2, 3, 3, 3, 4, 4,
					    4 };

		ck_assert(dt_plan_partition(m, 13, 5, part) == 10);
		for (int i = 0; i < 13; i++)
			ck_assert_int_eq(part[i], want[i]);
	}
	/* 9 is alone (9 + 2 > 9) and 7 before it too (7 + 9 > 9); the
	 * twos even out after it: 7 | 9 | 2 2 2 | 2 2 2, sums (9, 7, 6, 6),
	 * where the largest-first cut 7 | 9 | 2 2 2 2 | 2 2 gives (9, 8,
	 * 7, 4). */
	{
		const double f[] = { 7, 9, 2, 2, 2, 2, 2, 2 };
		static const int want[] = { 0, 1, 2, 2, 2, 3, 3, 3 };

		ck_assert(dt_plan_partition(f, 8, 4, part) == 9);
		for (int i = 0; i < 8; i++)
			ck_assert_int_eq(part[i], want[i]);
	}
}
END_TEST

/* A small GPT block and head: 14 nodes with a residual across each. */
static const char gpt_text[] =
	"data:\n"
	"  format: text\n"
	"  train: {file: a.txt}\n"
	"  context: 8\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 16, dim: 8}\n"
	"    - {type: pos_embedding, name: pos, length: 8, dim: 8}\n"
	"    - repeat: 2\n"
	"      name: blk\n"
	"      layers:\n"
	"        - {type: layernorm, name: ln1}\n"
	"        - {type: attention, name: attn, heads: 2, causal: true}\n"
	"        - {type: add, name: res1, inputs: [block_input, attn]}\n"
	"        - {type: dense, name: fc, units: 16, activation: gelu}\n"
	"        - {type: dense, name: proj, units: 8}\n"
	"        - {type: add, name: res2, inputs: [res1, proj]}\n"
	"    - {type: dense, name: head, units: 16}\n"
	"train: {global_batch: 8, steps: 10, lr: 0.1}\n"
	"parallel:\n";

static struct dt_model *
gpt_model(const char *parallel)
{
	char text[4096];
	struct dt_model *m = NULL;

	snprintf(text, sizeof text, "%s%s", gpt_text, parallel);
	memset(&job, 0, sizeof job);
	if (dt_job_parse("gpt.yaml", text, strlen(text), NULL, 0, &job,
			 &perr) != DT_OK)
		ck_abort_msg("job does not parse: %s", perr.msg);
	/* the plan's shapes: a model for training (the loss in place) */
	if (dt_model_new_slots(&job, 0, 1, &m, &perr) != DT_OK)
		ck_abort_msg("model: %s", perr.msg);
	return m;
}

START_TEST(stages_of_a_model)
{
	struct dt_model *m = gpt_model("  strategy: model\n");
	int n = dt_model_n_layers(m), stage_of_node[64], total_nodes;
	double whole = dt_model_flops_per_sample(m);

	ck_assert_int_eq(n, 18);	/* tok pos 2x(7) head loss */
	for (int pp = 1; pp <= 8; pp++) {
		double sum = 0;
		int64_t params = 0;
		size_t trained = 0;

		total_nodes = 0;
		ck_assert_int_eq(dt_plan_stages(&job, m, pp, stage_of_node,
						&perr), DT_OK);
		for (int s = 0; s < pp; s++) {
			struct dt_stage_info si;

			dt_model_stage_info(m, stage_of_node, pp, s, &si);
			ck_assert_int_le(si.first_node, si.last_node);
			total_nodes += si.last_node - si.first_node + 1;
			for (int i = si.first_node; i <= si.last_node; i++)
				ck_assert_int_eq(stage_of_node[i], s);
			sum += si.flops_per_sample;
			params += si.n_params;
			trained += si.trained_hi - si.trained_lo;
			if (pp == 1) {
				/* One stage is the whole model. */
				ck_assert_int_eq(si.act_floats,
						 dt_model_act_floats_per_sample(m));
				ck_assert_int_eq(si.send_fwd_floats, 0);
				ck_assert_int_eq(si.send_bwd_floats, 0);
				ck_assert_uint_eq(si.trained_lo, 0);
			}
		}
		ck_assert_int_eq(total_nodes, n);
		ck_assert_msg(fabs(sum - whole) <= 1e-9 * whole,
			      "pp %d: stages %.1f, whole %.1f", pp, sum, whole);
		ck_assert_int_eq(params, (int64_t)dt_model_n_params(m));
		ck_assert_uint_eq(trained, dt_model_n_trained(m));
	}
	/* More stages than nodes, naming the count and the nodes. */
	ck_assert_int_eq(dt_plan_stages(&job, m, 19, stage_of_node, &perr),
			 DT_ERR_PLAN);
	ck_assert_msg(strstr(perr.msg, "parallel.pipeline_parallel: 19 stages "
			     "but the model has 18 nodes (tok, pos, blk.0.ln1, "
			     "..., head, loss)") != NULL, "%s", perr.msg);
	/* The loss goes with head, so 18 nodes make at most 17 stages. */
	ck_assert_int_eq(dt_plan_stages(&job, m, 18, stage_of_node, &perr),
			 DT_ERR_PLAN);
	ck_assert_msg(strstr(perr.msg, "the loss goes with the node before "
			     "it: use at most 17 stages") != NULL, "%s",
		      perr.msg);
	ck_assert_int_eq(dt_plan_stages(&job, m, 17, stage_of_node, &perr),
			 DT_OK);
	for (int i = 0; i < 17; i++)
		ck_assert_int_eq(stage_of_node[i], i);
	ck_assert_int_eq(stage_of_node[17], 16);
	dt_model_free(m);

	/* Named stages start at the first node of the layer. */
	m = gpt_model("  strategy: model\n  pipeline_parallel: 3\n"
		      "  stages: [blk.0.fc, blk.1.ln1]\n");
	ck_assert_int_eq(dt_plan_stages(&job, m, 3, stage_of_node, &perr),
			 DT_OK);
	{
		static const int want[18] = { 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2,
					      2, 2, 2, 2, 2, 2, 2 };

		for (int i = 0; i < 18; i++)
			ck_assert_int_eq(stage_of_node[i], want[i]);
	}
	/* The names make 3 stages; a pipeline of 2 cannot take them. */
	ck_assert_int_eq(dt_plan_stages(&job, m, 2, stage_of_node, &perr),
			 DT_ERR_PLAN);
	ck_assert_msg(strstr(perr.msg, "gpt.yaml:24:11: parallel.stages: 2 "
			     "names make 3 stages, but the pipeline has 2") !=
		      NULL, "%s", perr.msg);
	dt_model_free(m);

	/* Balance by parameters: the embeddings and attention weigh. */
	m = gpt_model("  strategy: model\n  balance: params\n");
	ck_assert_int_eq(dt_plan_stages(&job, m, 2, stage_of_node, &perr),
			 DT_OK);
	{
		double cost[64], part_sum[2] = { 0, 0 };
		int part[64];

		for (int i = 0; i < n; i++) {
			struct dt_layer_info li;

			dt_model_layer_info(m, i, &li);
			cost[i] = (double)li.n_params;
			part_sum[stage_of_node[i]] += cost[i];
		}
		ck_assert(dt_plan_partition(cost, n, 2, part) ==
			  fmax(part_sum[0], part_sum[1]));
		for (int i = 0; i < n; i++)
			ck_assert_int_eq(part[i], stage_of_node[i]);
	}
	dt_model_free(m);
}
END_TEST

/* 30 dense layers of 32 units on a 28 x 28 input, a ReLU after each but
 * the last: 60 nodes, l.j.dense0 at 2j, its ReLU at 2j + 1 (j = 0 .. 28),
 * out at 58, the loss at 59. Forward FLOPs per sample: the first dense
 * 2 x 784 x 32 + 32 = 50208, the others 2 x 32 x 32 + 32 = 2080, a ReLU
 * 32, the softmax cross-entropy over 32 outputs 160; a stage costs 3x
 * (forward and backward). */
static struct dt_model *
deep_model(const char *balance)
{
	char text[1024];
	struct dt_model *m = NULL;

	snprintf(text, sizeof text,
		 "data:\n"
		 "  train: {images: a.idx, labels: b.idx}\n"
		 "model:\n"
		 "  input_shape: [28, 28]\n"
		 "  layers:\n"
		 "    - repeat: 29\n"
		 "      name: l\n"
		 "      layers:\n"
		 "        - {type: dense, units: 32, activation: relu}\n"
		 "    - {type: dense, name: out, units: 32}\n"
		 "train: {global_batch: 64, steps: 10, lr: 0.1}\n"
		 "parallel:\n"
		 "  strategy: model\n"
		 "  pipeline_parallel: 4\n"
		 "  balance: %s\n", balance);
	memset(&job, 0, sizeof job);
	if (dt_job_parse("deep.yaml", text, strlen(text), NULL, 0, &job,
			 &perr) != DT_OK)
		ck_abort_msg("job does not parse: %s", perr.msg);
	if (dt_model_new(&job, 0, &m, &perr) != DT_OK)
		ck_abort_msg("model: %s", perr.msg);
	ck_assert_int_eq(dt_model_n_layers(m), 60);
	return m;
}

/* Expects stage_of_node to be 4 runs of the given lengths. */
static void
expect_runs(const int *stage_of_node, const int *runs, int n_stages)
{
	int i = 0;

	for (int s = 0; s < n_stages; s++)
		for (int j = 0; j < runs[s]; j++, i++)
			ck_assert_msg(stage_of_node[i] == s,
				      "node %d in stage %d, not %d", i,
				      stage_of_node[i], s);
}

START_TEST(stages_below_the_bottleneck)
{
	struct dt_model *m = deep_model("flops");
	int stage_of_node[60];
	struct json_object *d;
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	/* The first dense (150624) is the bottleneck, alone. The other 59
	 * nodes (184224) had gone 47 + 11 + 1: the loss alone on the last
	 * stage. Now: the ReLU at 1 with 9 dense-ReLU pairs and the dense
	 * at 20 make 96 + 9 x 6336 + 6240 = 63360, nodes 21-40 the same,
	 * and 41-59 (a ReLU, 8 pairs, out and the loss) 96 + 8 x 6336 +
	 * 6240 + 480 = 57504. No cut keeps all three under 63360 (the first
	 * would be at most 57120 and the last 57504, leaving 69600), and
	 * with the first at 63360 the last cannot pass 57504 without
	 * passing 63360. */
	{
		static const int runs[] = { 1, 20, 20, 19 };
		static const double flops[] = { 150624, 63360, 63360, 57504 };

		ck_assert_int_eq(dt_plan_stages(&job, m, 4, stage_of_node,
						&perr), DT_OK);
		expect_runs(stage_of_node, runs, 4);
		for (int s = 0; s < 4; s++) {
			struct dt_stage_info si;

			dt_model_stage_info(m, stage_of_node, 4, s, &si);
			ck_assert_msg(si.flops_per_sample == flops[s],
				      "stage %d: %g FLOP", s,
				      si.flops_per_sample);
		}
	}
	/* plan shows each stage's share: 63360 / 334848 = 18.92%. */
	d = describe(4);
	{
		struct json_object *st, *x;

		ck_assert(json_object_object_get_ex(d, "stages", &st));
		ck_assert(json_object_object_get_ex(
			json_object_array_get_idx(st, 1), "share", &x));
		ck_assert(fabs(json_object_get_double(x) - 63360.0 / 334848) <
			  1e-12);
		ck_assert(json_object_object_get_ex(
			json_object_array_get_idx(st, 3), "share", &x));
		ck_assert(fabs(json_object_get_double(x) - 57504.0 / 334848) <
			  1e-12);
	}
	out = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(out);
	dt_plan_print(d, out);
	fclose(out);
	ck_assert_msg(strstr(text, "150624 FLOP per sample, 25120 parameters, "
			     "45.0% of the FLOPs\n") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "57504 FLOP per sample, 9504 parameters, "
			     "17.2% of the FLOPs\n") != NULL, "%s", text);
	free(text);
	json_object_put(d);
	dt_model_free(m);

	/* By parameters: 25120 for the first dense, 1056 for each other,
	 * none for a ReLU or the loss. The 29 others go 10 + 10 + 9, each
	 * stage taking its trailing ReLU (the earlier stages the longer on
	 * a tie): nodes 0-1, 2-21, 22-41, 42-59. */
	m = deep_model("params");
	{
		static const int runs[] = { 2, 20, 20, 18 };

		ck_assert_int_eq(dt_plan_stages(&job, m, 4, stage_of_node,
						&perr), DT_OK);
		expect_runs(stage_of_node, runs, 4);
	}
	d = describe(4);
	text = NULL;
	out = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(out);
	dt_plan_print(d, out);
	fclose(out);
	/* 10560 of 25120 + 29 x 1056 = 55744 parameters. */
	ck_assert_msg(strstr(text, "10560 parameters, 18.9% of the "
			     "parameters\n") != NULL, "%s", text);
	free(text);
	json_object_put(d);
	dt_model_free(m);
}
END_TEST

START_TEST(loss_never_alone)
{
	struct dt_model *m = NULL;
	int stage_of_node[8];

	/* d0 (40 parameters), d0.relu (0), d1 (72), d2 (27), loss (0): by
	 * parameters in 4 stages the best cut of the 5 nodes, the earlier
	 * stages longest, would be d0 relu | d1 | d2 | loss; the loss goes
	 * with d2, so each of the other nodes is a stage. */
	load(TRAIN32, "  strategy: model\n  balance: params\n");
	ck_assert_int_eq(dt_model_new(&job, 0, &m, &perr), DT_OK);
	ck_assert_int_eq(dt_plan_stages(&job, m, 4, stage_of_node, &perr),
			 DT_OK);
	{
		static const int want[] = { 0, 1, 2, 3, 3 };

		for (int i = 0; i < 5; i++)
			ck_assert_int_eq(stage_of_node[i], want[i]);
	}
	/* By parameters in 3: 40 | 72 | 27 with the zeros on the earlier
	 * stage. */
	ck_assert_int_eq(dt_plan_stages(&job, m, 3, stage_of_node, &perr),
			 DT_OK);
	{
		static const int want[] = { 0, 0, 1, 2, 2 };

		for (int i = 0; i < 5; i++)
			ck_assert_int_eq(stage_of_node[i], want[i]);
	}
	ck_assert_int_eq(dt_plan_stages(&job, m, 5, stage_of_node, &perr),
			 DT_ERR_PLAN);
	ck_assert_msg(strstr(perr.msg, "job.yaml: parallel.pipeline_parallel"
			     ": 5 stages but the model has 5 nodes (d0, "
			     "d0.relu, d1, d2, loss); a stage needs at least "
			     "one and the loss goes with the node before it: "
			     "use at most 4 stages") != NULL, "%s", perr.msg);
	dt_model_free(m);
}
END_TEST

/* ---- what the plan reports per rank ---------------------------------- */

static int64_t
jget(struct json_object *o, const char *path)
{
	char buf[256], *save = NULL;
	struct json_object *x = o;

	snprintf(buf, sizeof buf, "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k != NULL;
	     k = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(x, json_type_array))
			x = json_object_array_get_idx(x, (size_t)atoi(k));
		else if (!json_object_object_get_ex(x, k, &x))
			ck_abort_msg("no %s in the plan", path);
	}
	return json_object_get_int64(x);
}

/* 1 when the plan has path (jget's form), 0 when it does not. */
/* The value at path (as jget) itself, borrowed from o. */
static struct json_object *
jobj(struct json_object *o, const char *path)
{
	char buf[256], *save = NULL;
	struct json_object *x = o;

	snprintf(buf, sizeof buf, "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k != NULL;
	     k = strtok_r(NULL, ".", &save))
		if (!json_object_object_get_ex(x, k, &x))
			ck_abort_msg("no %s in the plan", path);
	return x;
}

static int
jhas(struct json_object *o, const char *path)
{
	char buf[256], *save = NULL;
	struct json_object *x = o;

	snprintf(buf, sizeof buf, "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k != NULL;
	     k = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(x, json_type_array))
			x = json_object_array_get_idx(x, (size_t)atoi(k));
		else if (!json_object_object_get_ex(x, k, &x))
			return 0;
	}
	return 1;
}

/* The plan's checkpoint.format. */
static const char *
ckpt_format(struct json_object *d)
{
	struct json_object *c, *f;

	if (!json_object_object_get_ex(d, "checkpoint", &c) ||
	    !json_object_object_get_ex(c, "format", &f))
		ck_abort_msg("no checkpoint.format in the plan");
	return json_object_get_string(f);
}

START_TEST(describe_bytes_per_step)
{
	struct dt_model *m = NULL;
	struct json_object *d;

	/* 4 -> d0 (8) relu -> d1 (8) -> d2 (3) -> loss: 5 nodes. Stages:
	 * [d0, relu, d1] [d2, loss], cut by hand below with stages. */
	load("{micro_batch: 2, steps: 10, lr: 0.1, optimizer: adam}",
	     "  strategy: hybrid\n  data_parallel: 2\n"
	     "  pipeline_parallel: 2\n  micro_batches: 3\n"
	     "  stages: [d2]\n");
	(void)grid_ok(4);
	ck_assert_int_eq(dt_model_new(&job, 0, &m, &perr), DT_OK);
	d = describe(4);
	ck_assert_int_eq(jget(d, "grid.micro_batches"), 3);
	ck_assert_int_eq(jget(d, "stages.0.first_node"), 0);
	ck_assert_int_eq(jget(d, "stages.0.last_node"), 2);
	ck_assert_int_eq(jget(d, "stages.1.first_node"), 3);
	ck_assert_int_eq(jget(d, "layers.3.stage"), 1);
	/* Stage 0 sends d1's 8 outputs forward; stage 1 sends their 8
	 * gradients back; x 4 bytes x 2 samples x 3 micro-batches. */
	ck_assert_int_eq(jget(d, "ranks.0.bytes_per_step.p2p_bytes"),
			 8 * 4 * 2 * 3);
	ck_assert_int_eq(jget(d, "ranks.1.bytes_per_step.p2p_bytes"),
			 8 * 4 * 2 * 3);
	/* Stage 0 trains d0 and d1 (4*8+8 + 8*8+8 floats), stage 1 d2;
	 * with 3 micro-batches a step they are summed in double (8 bytes
	 * a value, dt_plan_exact_accum), accumulated in as many doubles. */
	ck_assert_int_eq(jget(d, "ranks.2.stage"), 0);
	ck_assert_int_eq(jget(d, "ranks.2.dp"), 1);
	ck_assert_int_eq(jget(d, "ranks.2.bytes_per_step.grad_allreduce_bytes"),
			 (40 + 72) * 8);
	ck_assert_int_eq(jget(d, "ranks.3.bytes_per_step.grad_allreduce_bytes"),
			 27 * 8);
	ck_assert_int_eq(jget(d, "ranks.3.memory.grad_accumulator"), 27 * 8);
	/* The exact sum's ring over the stage's 2 data-parallel ranks
	 * receives half of its doubles (and one) into a buffer. */
	ck_assert_int_eq(jget(d, "ranks.2.memory.sum_buffers"),
			 (112 / 2 + 1) * 8);
	ck_assert_int_eq(jget(d, "ranks.3.memory.sum_buffers"),
			 (27 / 2 + 1) * 8);
	ck_assert_int_eq(jget(d, "ranks.3.bytes_per_step.tp_allreduce_bytes"),
			 0);
	/* A rank holds its stage's tensors: d2's 27 floats on stage 1.
	 * Checkpoints are written in shards: each stage's first rank its
	 * parameters, every rank a 1/2 part of its stage's Adam moments
	 * (stage 0: 112 floats, 56 a rank, 2 buffers of 4 bytes), so rank
	 * 0 holds what rank 2 holds, no gathered copy. */
	ck_assert_int_eq(jget(d, "ranks.3.memory.params"), 27 * 4);
	ck_assert_int_eq(jget(d, "ranks.3.memory.grads"), 27 * 4);
	ck_assert_int_eq(jget(d, "ranks.2.memory.params"), (40 + 72) * 4);
	ck_assert_str_eq(ckpt_format(d), "shards");
	ck_assert_int_eq(jget(d, "checkpoint.param_files"), 2);
	ck_assert_int_eq(jget(d, "checkpoint.optimizer_files"), 4);
	ck_assert_int_eq(jget(d, "checkpoint.optimizer_part_bytes_max"),
			 56 * 2 * 4);
	ck_assert(!jhas(d, "ranks.0.memory.checkpoint_gather"));
	ck_assert_int_eq(jget(d, "ranks.0.memory.total"),
			 jget(d, "ranks.2.memory.total"));
	/* GPipe: 3 micro-batches of activations held on each stage. */
	ck_assert_int_eq(jget(d, "stages.1.micro_batches_in_flight"), 3);
	json_object_put(d);
	/* checkpoint.compress keeps the gathered format: rank 0 also
	 * gathers the whole model (139 floats and Adam's two moments of
	 * them) while it writes a checkpoint. */
	job.checkpoint.compress = true;
	d = describe(4);
	ck_assert_str_eq(ckpt_format(d), "gathered");
	ck_assert_int_eq(jget(d, "ranks.0.memory.checkpoint_gather"),
			 (40 + 72 + 27) * 4 * 3);
	ck_assert_int_eq(jget(d, "ranks.0.memory.total"),
			 jget(d, "ranks.2.memory.total") +
			 (40 + 72 + 27) * 4 * 3);
	job.checkpoint.compress = false;
	json_object_put(d);
	dt_model_free(m);

	/* Tensor parallel 2 on one stage: d0 by columns, d1 by rows, d2
	 * whole. Forward d1 sums its 8 outputs; backward d0 would sum its
	 * input gradient, which nobody needs. Every split node is a dense
	 * pair, so the tensor ranks own their slices (dt_plan_tp_sliced;
	 * doc/DESIGN.md, "Tensor-parallel slices"). Worked out by hand:
	 * d0 W (4, 8) -> its 4 columns (4, 4) = 16, b 8 -> 4; d1 W (8, 8)
	 * -> its 4 rows (4, 8) = 32, b 8 replicated; d2 (8*3 + 3 = 27)
	 * replicated: 20 + 40 + 27 = 87 floats a rank, not 139. */
	load("{micro_batch: 2, steps: 10, lr: 0.1}",
	     "  strategy: hybrid\n  tensor_parallel: 2\n  data_parallel: 1\n");
	(void)grid_ok(2);
	ck_assert_int_eq(dt_model_new(&job, 0, &m, &perr), DT_OK);
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, &job, 2, &perr),
			 DT_OK);
	d = describe(2);
	ck_assert_int_eq(jget(d, "ranks.1.tp"), 1);
	ck_assert_int_eq(jget(d, "ranks.1.bytes_per_step.tp_allreduce_bytes"),
			 8 * 4 * 2 * 1);
	/* The gradient is summed over the data-parallel ranks of each
	 * tensor rank: one here, so nothing goes on the wire (the whole-
	 * tensor plan summed all 139 floats over the 2 tensor ranks). */
	ck_assert_int_eq(jget(d, "ranks.1.bytes_per_step.grad_allreduce_bytes"),
			 0);
	ck_assert_int_eq(jget(d, "ranks.1.bytes_per_step.p2p_bytes"), 0);
	ck_assert_int_eq(jget(d, "ranks.0.memory.params"), 87 * 4);
	ck_assert_int_eq(jget(d, "ranks.1.memory.params"), 87 * 4);
	ck_assert_int_eq(jget(d, "ranks.1.memory.grads"), 87 * 4);
	ck_assert_int_eq(jget(d, "tensor_split.slices"), 1);
	ck_assert_int_eq(json_object_array_length(
				 jobj(d, "tensor_split.split")), 3);
	ck_assert_int_eq(json_object_array_length(
				 jobj(d, "tensor_split.replicated")), 3);
	/* Float sums: no ring buffer of doubles; the gradient norm's
	 * buffers for the split tensors that are not one run of 8k floats
	 * (d0's weight whole, 32 floats, and its 16-float block; d1's
	 * 32-float row block chains its lanes instead). */
	ck_assert_int_eq(jget(d, "ranks.1.memory.sum_buffers"), (32 + 16) * 4);
	/* Checkpoints gathered (the shards' ranges of a block are not
	 * built): rank 0 gathers a copy of the whole model (139 floats; SGD
	 * keeps no state) to write one, as a pipeline's does. */
	ck_assert_str_eq(ckpt_format(d), "gathered");
	ck_assert_int_eq(jget(d, "ranks.0.memory.checkpoint_gather"),
			 139 * 4);
	ck_assert_int_eq(jget(d, "ranks.0.memory.total"),
			 jget(d, "ranks.1.memory.total") + 139 * 4);
	ck_assert_int_eq(jget(d, "memory_per_rank.total"),
			 jget(d, "ranks.0.memory.total"));
	json_object_put(d);
	/* 3 does not divide 8 units. */
	ck_assert_int_eq(dt_model_plan_tensor_parallel(m, &job, 3, &perr),
			 DT_ERR_PLAN);
	dt_model_free(m);

	/* Data parallel: as before this change. */
	load("{micro_batch: 2, steps: 10, lr: 0.1}", "  strategy: data\n");
	(void)grid_ok(2);
	ck_assert_int_eq(dt_model_new_slots(&job, 0, 1, &m, &perr), DT_OK);
	d = describe(2);
	ck_assert_int_eq(jget(d, "communication_per_rank.gradient_bytes"),
			 139 * 4);
	ck_assert_int_eq(jget(d, "communication_per_rank.sent_per_step"),
			 139 * 4);
	ck_assert_int_eq(jget(d, "ranks.1.bytes_per_step.grad_allreduce_bytes"),
			 139 * 4);
	ck_assert_int_eq(jget(d, "memory_per_rank.activations"),
			 (dt_model_act_floats_per_sample(m) + 4) * 2 * 4);
	ck_assert_int_eq(jget(d, "memory_per_rank.grad_accumulator"), 0);
	json_object_put(d);
	/* Four ranks sum in double: the payload twice float's, on the
	 * wire a double reduce-scatter and a float all-gather, 3/4 x 12
	 * bytes a value. */
	(void)grid_ok(4);
	d = describe(4);
	ck_assert_int_eq(jget(d, "ranks.3.bytes_per_step.grad_allreduce_bytes"),
			 139 * 8);
	ck_assert_int_eq(jget(d, "communication_per_rank.sent_per_step"),
			 3 * 139 * 12 / 4);
	ck_assert_int_eq(jget(d, "ranks.3.bytes_per_step.p2p_bytes"), 0);
	json_object_put(d);
	dt_model_free(m);
}
END_TEST

/* The tensor-parallel memory of the job below at tensor_parallel 8 on
 * data_parallel dp ranks, parallel.zero zero with slices: 4 -> d0
 * (4096) relu -> d1 (4096) -> d2 (3), SGD (no optimizer state), one
 * sample a step; checkpoints compressed, so in the gathered format
 * (rank 0 gathers the whole model) whatever the sharded format comes
 * to hold. */
static struct json_object *
describe_setup(int dp, int zero)
{
	char text[1024];

	snprintf(text, sizeof text,
		 "data:\n"
		 "  train: {images: a.idx, labels: b.idx}\n"
		 "model:\n"
		 "  input_shape: [4]\n"
		 "  layers:\n"
		 "    - {type: dense, units: 4096, activation: relu, "
		 "name: d0}\n"
		 "    - {type: dense, units: 4096, name: d1}\n"
		 "    - {type: dense, units: 3, name: d2}\n"
		 "train: {global_batch: %d, steps: 2, lr: 0.1}\n"
		 "parallel: {strategy: hybrid, tensor_parallel: 8, "
		 "data_parallel: %d, zero: %d, zero_slices: true, "
		 "overlap: false}\n"
		 "checkpoint: {compress: true}\n", dp, dp, zero);
	memset(&job, 0, sizeof job);
	if (dt_job_parse("job.yaml", text, strlen(text), NULL, 0, &job,
			 &perr) != DT_OK)
		ck_abort_msg("job does not parse: %s", perr.msg);
	return describe(8 * dp);
}

/* The memory of rank r of d at setup, worked out by hand: the whole
 * parameters, d0 (4 x 4096 + 4096), d1 (4096 x 4096 + 4096) and d2
 * (4096 x 3 + 3), 16814083 floats, beside the dataset and the runtime
 * (doc/DESIGN.md, "Tensor-parallel slices"). */
static int64_t
setup_bytes(struct json_object *d, int r)
{
	char k[2][64];

	snprintf(k[0], sizeof k[0], "ranks.%d.memory.dataset", r);
	snprintf(k[1], sizeof k[1], "ranks.%d.memory.runtime", r);
	return (int64_t)(4 * 4096 + 4096 + 4096 * 4096 + 4096 + 4096 * 3 +
			 3) * 4 +
	       jget(d, k[0]) + jget(d, k[1]);
}

/* Where the whole parameters at setup exceed a step (params_setup), a
 * rank's total is the larger of its step's total, with rank 0's
 * checkpoint gather, less the norm buffers a rank lacks, and the setup
 * figure, which has neither (before, the gather was added to and the
 * buffers taken from the setup figure). A rank's blocks at tp 8: d0 (4,
 * 512) + 512, d1 (512, 4096) + 4096, d2 whole: 2116099 floats. */
START_TEST(tp_setup_total)
{
	struct json_object *d = describe_setup(1, 0);
	int64_t step;

	ck_assert_int_eq(jget(d, "tensor_split.slices"), 1);
	ck_assert_int_eq(jget(d, "ranks.1.memory.params"), 2116099 * 4);
	/* no gather on rank 1: its step is below the setup's figure */
	ck_assert_int_gt(jget(d, "ranks.1.memory.params_setup"), 0);
	ck_assert_int_eq(jget(d, "ranks.1.memory.total"), setup_bytes(d, 1));
	/* rank 0 gathers the whole model (16814083 floats) for a checkpoint:
	 * its step's total is then over the setup's */
	step = jget(d, "ranks.1.memory.total") -
	       jget(d, "ranks.1.memory.params_setup");
	ck_assert_int_eq(jget(d, "ranks.0.memory.checkpoint_gather"),
			 16814083 * 4);
	ck_assert_int_gt(step + 16814083 * 4, setup_bytes(d, 0));
	ck_assert_int_eq(jget(d, "ranks.0.memory.total"), step + 16814083 * 4);
	ck_assert(!jhas(d, "ranks.0.memory.params_setup"));
	json_object_put(d);

	/* zero 2 over slices on 2 data-parallel ranks: data-parallel rank 1
	 * (ranks 8 to 15) lacks the block made whole for the norm, which
	 * the setup never held: its total is still the setup's figure */
	d = describe_setup(2, 2);
	ck_assert_int_eq(jget(d, "ranks.9.dp"), 1);
	ck_assert_int_eq(jget(d, "ranks.9.tp"), 1);
	ck_assert_int_lt(jget(d, "ranks.9.memory.sum_buffers"),
			 jget(d, "ranks.1.memory.sum_buffers"));
	ck_assert_int_gt(jget(d, "ranks.9.memory.params_setup"), 0);
	ck_assert_int_eq(jget(d, "ranks.9.memory.total"), setup_bytes(d, 9));
	ck_assert_int_eq(jget(d, "ranks.1.memory.total"), setup_bytes(d, 1));
	json_object_put(d);
}
END_TEST

/* zero 3's gather units (dt_plan_gather_units), worked out by hand:
 * nodes of 10, none, 3, 4, 20 and 2 floats, all adjacent but the last
 * (a gap before it). Cap 0: each node with floats alone (5 units); cap
 * 17: 10 + 3 + 4 = 17 one unit, 20 (over the cap) alone, 2 alone after
 * the gap (3 units); cap 16: {10, 3}, then {4} (4 + 20 > 16), {20},
 * {2} (4 units). */
START_TEST(gather_units)
{
	const int64_t lo[6] = { 0, 10, 10, 13, 17, 40 };
	const int64_t hi[6] = { 10, 10, 13, 17, 37, 42 };
	int unit[6];
	const int cap0[6] = { 0, -1, 1, 2, 3, 4 };
	const int cap17[6] = { 0, -1, 0, 0, 1, 2 };
	const int cap16[6] = { 0, -1, 0, 1, 2, 3 };

	ck_assert_int_eq(dt_plan_gather_units(6, lo, hi, 0, unit), 5);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(unit[i], cap0[i]);
	ck_assert_int_eq(dt_plan_gather_units(6, lo, hi, 17, unit), 3);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(unit[i], cap17[i]);
	ck_assert_int_eq(dt_plan_gather_units(6, lo, hi, 16, unit), 4);
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(unit[i], cap16[i]);
}
END_TEST

/* The plan decides each stage's sync once (plan/sync_plan.h), and the
 * description prints it: over one rank nothing crosses the wire, so no
 * overlap, no bf16 and one bucket, whatever the job says (the old
 * description said overlap and bf16 there, unlike the trainer); over
 * two, the job's overlap, bf16 wire (2 bytes a value of the 139 trained
 * floats) and buckets of 0.5 MiB; Adam's two buffers over every trained
 * float. */
START_TEST(sync_plan_rule)
{
	struct json_object *d;

	load("{micro_batch: 2, steps: 10, lr: 0.1, optimizer: adam}",
	     "  strategy: data\n  overlap: true\n  grad_wire: bf16\n"
	     "  bucket_mb: 0.5\n");
	d = describe(1);
	ck_assert_int_eq(jget(d, "stages.0.sync.overlap"), 0);
	ck_assert_int_eq(jget(d, "communication_per_rank.overlap"), 0);
	ck_assert_int_eq(jget(d, "stages.0.sync.wire_bytes_per_value"), 4);
	ck_assert_int_eq(jget(d, "stages.0.sync.bucket_bytes"), 0);
	ck_assert_int_eq(jget(d, "stages.0.sync.sum_ranks"), 1);
	ck_assert_int_eq(jget(d, "stages.0.sync.bytes_per_step"), 0);
	json_object_put(d);
	d = describe(2);
	ck_assert_int_eq(jget(d, "stages.0.sync.overlap"), 1);
	ck_assert_int_eq(jget(d, "stages.0.sync.wire_bytes_per_value"), 2);
	ck_assert_int_eq(jget(d, "stages.0.sync.bucket_bytes"), 524288);
	ck_assert_int_eq(jget(d, "stages.0.sync.sum_ranks"), 2);
	ck_assert_int_eq(jget(d, "stages.0.sync.bytes_per_step"), 139 * 2);
	ck_assert_int_eq(jget(d, "stages.0.sync.optimizer_offset"), 0);
	ck_assert_int_eq(jget(d, "stages.0.sync.optimizer_params"), 139);
	ck_assert_int_eq(jget(d, "stages.0.sync.optimizer_buffers"), 2);
	ck_assert_int_eq(jget(d, "memory_per_rank.optimizer_state"),
			 2 * 139 * 4);
	json_object_put(d);
}
END_TEST

/* parallel.tcp_eager_kb's choice on ranks ranks of the MLP 784-UNITS
 * (dense layers, then a head of 10) with the parallel section's extra
 * lines; *largest receives the largest bucket's bytes. */
static int64_t
tcp_eager_of(const char *units, const char *parallel, int ranks,
	     int64_t *largest)
{
	struct dt_plan_host host = { .cores = 1, .local_ranks = 1 };
	struct dt_plan p;
	char text[1024], layers[512] = "";
	const char *u = units;
	int64_t bytes;

	while (*u != '\0') {
		size_t len = strlen(layers);

		snprintf(layers + len, sizeof layers - len,
			 "    - {type: dense, units: %d, activation: relu}\n",
			 atoi(u));
		u += strcspn(u, ",");
		u += *u == ',';
	}
	snprintf(text, sizeof text,
		 "data:\n"
		 "  train: {images: a.idx, labels: b.idx}\n"
		 "model:\n"
		 "  input_shape: [28, 28]\n"
		 "  layers:\n%s"
		 "    - {type: dense, units: 10}\n"
		 "train: {global_batch: 256, steps: 10, lr: 0.1}\n"
		 "parallel: {%s}\n", layers, parallel);
	memset(&job, 0, sizeof job);
	if (dt_job_parse("job.yaml", text, strlen(text), NULL, 0, &job,
			 &perr) != DT_OK)
		ck_abort_msg("job does not parse: %s", perr.msg);
	if (dt_plan_build(&job, ranks, &host, NULL, &p, &perr) != DT_OK)
		ck_abort_msg("%d ranks: %s", ranks, perr.msg);
	bytes = dt_plan_tcp_eager(&job, &p, largest);
	dt_plan_fini(&p);
	return bytes;
}

/* The TCP eager limit from the plan's buckets (dt_plan_tcp_eager), the
 * bucket sizes worked out by hand (floats, a dense layer's weight then
 * its bias; buckets of 1 MiB = 262144 floats from the head down):
 *   784-512-256-10 (jobs/fashion-mnist-mlp.yaml): 2560 + 10, 131072 +
 *   256, 401408 + 512 = 535818 floats in one bucket, 2143272 bytes: the
 *   power of two above it plus 4 KiB is 4 MiB.
 *   784-1024-1024-10 (bench/mlp-1m.yaml): the head's 10250 and the second
 *   layer's 1049600 close the first bucket at 1059850 floats, 4239400
 *   bytes: 8 MiB. In bf16 (2 bytes a value) 2119700 bytes: 4 MiB.
 *   Without overlap one bucket of all 1863690 floats, 7454760 bytes:
 *   8 MiB. Buckets of 0.001 MiB (262 floats): the second layer's weight
 *   alone, 1048576 floats, 4194304 bytes, plus 4 KiB: 8 MiB.
 *   784-2048-2048-10: the head's 20490 and 2048 x 2048 + 2048 make
 *   4216842 floats, 16867368 bytes, over 8 MiB less 4 KiB: Open MPI's
 *   own (0).
 *   784-16-10: 12544 + 16 + 160 + 10 = 12730 floats, 50920 bytes, under
 *   Open MPI's 64 KiB already: 0.
 * One rank sums nothing (0, no largest); a number is the job's KiB. */
START_TEST(tcp_eager_from_buckets)
{
	int64_t big;

	ck_assert_int_eq(tcp_eager_of("512,256", "", 2, &big), 4194304);
	ck_assert_int_eq(big, 2143272);
	/* 4 ranks sum in the exact mode (doubles, its own ring): 0. */
	ck_assert_int_eq(tcp_eager_of("512,256", "", 4, &big), 0);
	ck_assert_int_eq(tcp_eager_of("512,256", "", 1, &big), 0);
	ck_assert_int_eq(big, 0);
	ck_assert_int_eq(tcp_eager_of("1024,1024", "", 2, &big), 8388608);
	ck_assert_int_eq(big, 4239400);
	ck_assert_int_eq(tcp_eager_of("1024,1024", "grad_wire: bf16", 2,
				      &big), 4194304);
	ck_assert_int_eq(big, 2119700);
	ck_assert_int_eq(tcp_eager_of("1024,1024", "overlap: false", 2, &big),
			 8388608);
	ck_assert_int_eq(big, 7454760);
	ck_assert_int_eq(tcp_eager_of("1024,1024", "bucket_mb: 0.001", 2,
				      &big), 8388608);
	ck_assert_int_eq(big, 4194304);
	ck_assert_int_eq(tcp_eager_of("2048,2048", "", 2, &big), 0);
	ck_assert_int_eq(big, 16867368);
	ck_assert_int_eq(tcp_eager_of("16", "", 2, &big), 0);
	ck_assert_int_eq(big, 50920);
	ck_assert_int_eq(tcp_eager_of("512,256", "tcp_eager_kb: 0", 2, &big),
			 0);
	ck_assert_int_eq(tcp_eager_of("16", "tcp_eager_kb: 512", 2, &big),
			 524288);
	ck_assert_int_eq(tcp_eager_of("512,256", "tcp_eager_kb: auto", 2,
				      NULL), 4194304);
	/* Sharded sums are not the whole model's float sums. */
	ck_assert_int_eq(tcp_eager_of("512,256", "zero: 1", 2, &big), 0);
}
END_TEST

/* dt_plan_build fills every number a run executes, once: with the data's
 * size the steps, and each stage's schedule and slots as the plan's own
 * functions give them. */
START_TEST(build_is_complete)
{
	struct dt_plan_host host = { 8, 4, NULL };
	struct dt_plan_data data = { 100, 4000, 10, 400 };
	struct dt_pipe_op ops[6];
	struct dt_plan p;

	/* dp 2 x pp 2, 3 micro-batches of 2: a global batch of 12; 100
	 * samples give 8 steps per epoch, 4 dropped, 3 epochs 24 steps. */
	load("{micro_batch: 2, epochs: 3, lr: 0.1, optimizer: adam}",
	     "  strategy: hybrid\n  data_parallel: 2\n"
	     "  pipeline_parallel: 2\n  micro_batches: 3\n"
	     "  stages: [d2]\n  schedule: 1f1b\n");
	ck_assert_int_eq(dt_plan_build(&job, 4, &host, &data, &p, &perr),
			 DT_OK);
	ck_assert_int_eq(p.global_batch, 12);
	ck_assert_int_eq(p.blas_threads, 2);	/* 8 cores / 4 ranks */
	ck_assert_int_eq(p.exact_accum, 1);
	ck_assert_int_eq(p.n_servers, 0);
	ck_assert_int_eq(p.steps_per_epoch, 8);
	ck_assert_int_eq(p.samples_dropped, 4);
	ck_assert_int_eq(p.total_steps, 24);
	ck_assert_int_eq(p.lr_schedule.total_steps, 24);
	ck_assert_int_eq(p.n_nodes, 5);	/* d0, d0.relu, d1, d2, loss */
	ck_assert_int_eq(p.stage_of_node[2], 0);
	ck_assert_int_eq(p.stage_of_node[3], 1);
	ck_assert_int_eq(p.stages[1].first_node, 3);
	/* 1F1B: stage 0 holds 2 micro-batches, stage 1 one. */
	ck_assert_int_eq(p.in_flight[0], 2);
	ck_assert_int_eq(p.in_flight[1], 1);
	for (int s = 0; s < 2; s++) {
		dt_plan_pipe_ops(&p, s, ops);
		for (int i = 0; i < 6; i++) {
			ck_assert_int_eq(p.ops[s * 6 + i].backward,
					 ops[i].backward);
			ck_assert_int_eq(p.ops[s * 6 + i].micro, ops[i].micro);
		}
	}
	ck_assert_int_eq(jget(p.desc, "batch.total_steps"), 24);
	ck_assert_int_eq(jget(p.desc, "data.train_samples"), 100);
	/* Fewer samples than a global batch: refused naming the key. */
	data.n_train = 10;
	ck_assert_int_eq(dt_plan_set_data(&job, &data, &p, &perr),
			 DT_ERR_PLAN);
	ck_assert_ptr_nonnull(strstr(perr.msg, "train.global_batch"));
	dt_plan_fini(&p);
	ck_assert_ptr_null(p.desc);

	/* Without the data, train.steps alone fixes the length. */
	load("{micro_batch: 2, steps: 10, lr: 0.1}", "  strategy: data\n");
	ck_assert_int_eq(dt_plan_build(&job, 2, &host, NULL, &p, &perr),
			 DT_OK);
	ck_assert_int_eq(p.steps_per_epoch, -1);
	ck_assert_int_eq(p.total_steps, 10);
	ck_assert_int_eq(p.exact_accum, 0);
	dt_plan_fini(&p);
	/* A plan that cannot be made leaves nothing behind. */
	ck_assert_int_eq(dt_plan_build(&job, 0, &host, NULL, &p, &perr),
			 DT_ERR_PLAN);
	ck_assert_ptr_null(p.shapes);
}
END_TEST

START_TEST(blas_threads)
{
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, 0, NULL), 4);
	ck_assert_int_eq(dt_plan_blas_threads(2, 2, 0, NULL), 1);
	ck_assert_int_eq(dt_plan_blas_threads(2, 3, 0, NULL), 1);
	ck_assert_int_eq(dt_plan_blas_threads(2, 1, 0, ""), 2);
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, 0, "3"), 3);
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, 0, "x"), 4);
	/* parallel.blas_threads beats the cores, the environment beats it. */
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, 1, NULL), 1);
	ck_assert_int_eq(dt_plan_blas_threads(2, 1, 1, ""), 1);
	ck_assert_int_eq(dt_plan_blas_threads(2, 4, 3, NULL), 3);
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, 1, "2"), 2);
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, 0, "0"), 4);
}
END_TEST

START_TEST(self_comm)
{
	struct dt_comm *c = dt_comm_self_new();
	struct dt_error err;
	float f[2] = { 1.5f, -2 };
	int v = 7;

	ck_assert_int_eq(dt_comm_rank(c), 0);
	ck_assert_int_eq(dt_comm_size(c), 1);
	ck_assert_int_eq(dt_comm_allreduce_sum_f32(c, f, 2, &err), DT_OK);
	ck_assert(f[0] == 1.5f && f[1] == -2);
	ck_assert_int_eq(dt_comm_allreduce_max_int(c, &v, 1, &err), DT_OK);
	ck_assert_int_eq(v, 7);
	dt_errorf(&err, DT_ERR_IO, "x: cannot open");
	ck_assert_int_eq(dt_comm_agree(c, DT_ERR_IO, &err), DT_ERR_IO);
	ck_assert_str_eq(err.msg, "x: cannot open");
	ck_assert_int_eq(dt_comm_agree(c, DT_OK, &err), DT_OK);
	dt_comm_free(c);
}
END_TEST

static enum dt_status
write_hello(FILE *out, void *ctx, struct dt_error *err)
{
	(void)err;
	fputs(ctx, out);
	return DT_OK;
}

static enum dt_status
write_fails(FILE *out, void *ctx, struct dt_error *err)
{
	(void)out; (void)ctx;
	return dt_errorf(err, DT_ERR_IO, "disk full");
}

START_TEST(rundir_refuses_results)
{
	char tmpl[] = "/tmp/dtrain-test-plan.XXXXXX", path[4200], buf[16];
	struct dt_error err;
	char *dir = mkdtemp(tmpl);
	FILE *f;

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof path, "%s/a/b", dir);
	ck_assert_int_eq(dt_rundir_prepare(path, &err), DT_OK);
	snprintf(path, sizeof path, "%s/a/b/summary.json", dir);
	ck_assert_int_eq(dt_rundir_write_atomic(path, write_hello, "hi", &err),
			 DT_OK);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
	fclose(f);
	ck_assert_str_eq(buf, "hi");
	/* A failed write leaves the old file and no temporary. */
	ck_assert_int_eq(dt_rundir_write_atomic(path, write_fails, NULL, &err),
			 DT_ERR_IO);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof path, "%s/a/b", dir);
	ck_assert_int_eq(dt_rundir_prepare(path, &err), DT_ERR_EXISTS);
	ck_assert(strstr(err.msg, "already holds results (summary.json)"));
	ck_assert(strstr(err.msg, "--run-dir"));
	snprintf(path, sizeof path, "rm -r %s", dir);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, two_of_three_fix_the_third);
	tcase_add_test(tc, contradictions_and_remainders);
	tcase_add_test(tc, grid_model);
	tcase_add_test(tc, grid_hybrid);
	tcase_add_test(tc, grid_micro_batches);
	tcase_add_test(tc, grid_parameter_servers);
	tcase_add_test(tc, pipeline_schedules);
	tcase_add_test(tc, partition_property);
	tcase_add_test(tc, stages_of_a_model);
	tcase_add_test(tc, stages_below_the_bottleneck);
	tcase_add_test(tc, loss_never_alone);
	tcase_add_test(tc, describe_bytes_per_step);
	tcase_add_test(tc, build_is_complete);
	tcase_add_test(tc, blas_threads);
	tcase_add_test(tc, self_comm);
	tcase_add_test(tc, rundir_refuses_results);
	tcase_add_test(tc, sync_plan_rule);
	tcase_add_test(tc, gather_units);
	tcase_add_test(tc, tp_setup_total);
	tcase_add_test(tc, tcp_eager_from_buckets);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
