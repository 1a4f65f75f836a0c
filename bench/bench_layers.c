/* SPDX-License-Identifier: MIT */
/* bench_layers.c - where a training step's time goes: the forward and
 * backward time of every node of a job's model, against the sgemm peak
 * measured in the same process.
 *
 *   bench_layers JOB.yaml [ITERS [KEY=VALUE...]]
 *
 * KEY=VALUE pairs are --set overrides of the job (train.micro_batch=128:
 * the micro-batch a rank of a data-parallel run gets).
 * Builds the job's model for one micro-batch (train.micro_batch, else the
 * global batch) through the graph API and runs ITERS (default 50)
 * training passes on synthetic inputs (token ids below the vocabulary for
 * a model that starts with an embedding, small values otherwise; labels
 * below the class count). Each iteration times two things:
 *   - one whole step as the trainer runs it: zero the gradients,
 *     dt_model_train_step, the job's optimizer step;
 *   - the same pass node by node: every node's forward, then every
 *     node's backward, each timed alone. The walk is graph.c's
 *     forward() and backward() (the same order, the same skip rules for
 *     nodes that need no gradient), written again here with a clock
 *     around each hook;
 * and every 8th iteration a 1024^3 sgemm through dt_kern_sgemm, the peak
 * (in bfloat16 under train.precision: bf16, which it sets as dtrain run
 * does, with parallel.kernels).
 * It prints, per node, the medians of its forward and backward times in
 * ms, their GFLOP/s (forward: the node's fwd_flops x batch; backward: 2x
 * that, graph.h's convention), the node's share of the summed pass and
 * the share of the node's time spent in loops of the rank's thread pool
 * (util/threadpool.h: the loops that split over the threads; the rest runs on
 * one thread whatever the thread count, the serial fraction of Amdahl's
 * law); then a line per layer kind; then the whole step's share in the
 * pool and its pool loops, samples/s, model GFLOP/s (graph.h's 3x
 * forward count) and that as a share of the peak, and as a share of the
 * f32 limit: the rate of the widest float32 multiply-add loop on
 * registers alone on as many threads, with the same clock (fma_peak.h),
 * measured after the passes. The model gets a pool
 * of as many threads as OpenBLAS has (OPENBLAS_NUM_THREADS), as dtrain
 * run gives it.
 * With one BLAS thread times are the thread's CPU time, so that time spent
 * waiting for a core on a shared machine does not count (bench_mlp.c does
 * the same); otherwise wall clock, or with BENCH_CLOCK=cpu the calling
 * thread's CPU time: its own part of every split loop and its waits for
 * the other threads while it holds a core, which estimates the step on
 * a machine where every thread has a core of its own (the 1024^3 sgemm,
 * on OpenBLAS's threads, is then not a peak). A benchmark: it asserts
 * nothing.
 *
 * It reads the model's insides (graph/model.h), as graph/'s tests do. */
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fma_peak.h"
#include "graph/graph.h"
#include "graph/kern.h"
#include "graph/model.h"
#include "job/job.h"
#include "optim/optim.h"
#include "util/alloc.h"
#include "util/threadpool.h"

#define WARMUP_ITERS 5
#define PEAK_N 1024
#define PEAK_EVERY 8

static double
clock_now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n), n >= 1; sorts v. */
static double
median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The input buffers of node n, as graph.c's gather_inputs. */
static void
inputs_of(const struct dt_model *m, const struct dt_node *n, const float *x,
	  const float **in)
{
	for (int k = 0; k < n->n_inputs; k++)
		in[k] = n->inputs[k] == DT_NODE_INPUT ? x
						      : m->nodes[n->inputs[k]].out;
}

/* One training pass over m node by node, graph.c's forward() then
 * backward(), with node i's forward time added into tf[i] and its
 * backward time into tb[i] (seconds; nodes that do not run get 0). */
static void
timed_pass(struct dt_model *m, struct dt_pass *p, const float *x,
	   clockid_t clk, double *tf, double *tb, double *pooled)
{
	const float *in[DT_NODE_MAX_INPUTS];
	float *din[DT_NODE_MAX_INPUTS];
	bool din_add[DT_NODE_MAX_INPUTS];

	for (int i = 0; i < m->n_nodes; i++) {
		struct dt_node *n = &m->nodes[i];
		double t0;

		inputs_of(m, n, x, in);
		pooled[i] -= dt_pool_time(p->pool, NULL);
		t0 = clock_now(clk);
		n->ops->forward(n, p, in);
		tf[i] = clock_now(clk) - t0;
		pooled[i] += dt_pool_time(p->pool, NULL);
		tb[i] = 0.0;
	}
	memset(m->dout_written, 0, (size_t)m->n_nodes * sizeof(bool));
	for (int i = m->n_nodes - 1; i >= 0; i--) {
		struct dt_node *n = &m->nodes[i];
		double t0;

		if (!n->needs_grad || (i < m->n_nodes - 1 && !m->dout_written[i]))
			continue;
		inputs_of(m, n, x, in);
		for (int k = 0; k < n->n_inputs; k++) {
			int src = n->inputs[k];

			din[k] = NULL;
			din_add[k] = false;
			if (src == DT_NODE_INPUT || !m->nodes[src].needs_grad)
				continue;
			din[k] = m->nodes[src].dout;
			din_add[k] = m->dout_written[src];
			m->dout_written[src] = true;
		}
		pooled[i] -= dt_pool_time(p->pool, NULL);
		t0 = clock_now(clk);
		n->ops->backward(n, p, in, din, din_add);
		tb[i] = clock_now(clk) - t0;
		pooled[i] += dt_pool_time(p->pool, NULL);
	}
}

/* The smallest embedding vocabulary of m, or classes when it has none. */
static int64_t
id_bound(const struct dt_model *m, int64_t classes)
{
	int64_t v = 0;

	for (int i = 0; i < m->n_nodes; i++)
		if (strcmp(m->nodes[i].ops->kind, "embedding") == 0 &&
		    (v == 0 || m->nodes[i].spec.vocab < v))
			v = m->nodes[i].spec.vocab;
	return v > 0 ? v : classes;
}

/* Per layer kind: summed medians of the nodes of that kind. */
struct kind_sum {
	const char *kind;
	double fwd, bwd, flops;	/* seconds, seconds, forward FLOPs */
	double pooled, spent;	/* seconds in the pool, in all, summed */
	int nodes;
};

int
main(int argc, char **argv)
{
	static struct dt_job job;
	struct dt_error err;
	struct dt_model *m;
	struct dt_optim *o;
	struct dt_pool *pool;
	struct dt_pass p;
	int64_t iters = argc > 2 ? atoll(argv[2]) : 50, mb, in, per, classes;
	int64_t n_peak = 0, bound;
	int threads = openblas_get_num_threads();
	const char *want = getenv("BENCH_CLOCK");
	bool cpu = threads == 1 || (want != NULL && strcmp(want, "cpu") == 0);
	clockid_t clk = cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
	float *x, *pa, *pb, *pc;
	int32_t *labels;
	double **tf, **tb, *rf, *rb, *fmed, *bmed, *step, *peak, total = 0.0;
	/* The pool's time inside each node and in the whole steps, and the
	 * nodes' and steps' summed times, over the timed iterations: */
	double *pooled, *spent, step_pooled = 0.0, step_sum = 0.0;
	int64_t step_loops = 0;
	struct kind_sum *ks;
	int n_kinds = 0, nn;

	if (argc < 2 || iters < 1) {
		fprintf(stderr, "usage: bench_layers JOB.yaml [ITERS "
			"[KEY=VALUE...]]\n");
		return 2;
	}
	if (dt_job_load(argv[1], argc > 3 ? (const char *const *)argv + 3
					  : NULL,
			argc > 3 ? argc - 3 : 0, &job, &err) != DT_OK) {
		fprintf(stderr, "bench_layers: %s\n", err.msg);
		return 2;
	}
	/* The job's precision and kernels, as dtrain run sets them. */
	dt_kern_set_bf16(job.train.precision == DT_PRECISION_BF16);
	dt_kern_set_lib((enum dt_kern_lib)job.parallel.kernels);
	mb = job.train.micro_batch ? job.train.micro_batch
				   : job.train.global_batch;
	if (dt_model_new(&job, mb, &m, &err) != DT_OK) {
		fprintf(stderr, "bench_layers: %s\n", err.msg);
		return 2;
	}
	if (m->loss != DT_LOSS_SOFTMAX_CROSS_ENTROPY) {
		fprintf(stderr, "bench_layers: needs a softmax cross-entropy "
			"model\n");
		return 2;
	}
	nn = m->n_nodes;
	o = dt_optim_new(&job, dt_model_n_trained(m));
	/* The rank's own threads, as dtrain run gives them. */
	pool = dt_pool_new(threads);
	dt_model_set_pool(m, pool);
	dt_optim_set_pool(o, pool);
	dt_pool_set_timing(pool, 1);
	in = dt_model_input_size(m);
	per = dt_model_labels_per_sample(m);
	classes = dt_model_n_classes(m);
	bound = id_bound(m, classes);
	x = dt_xalloc_floats((size_t)(mb * in));	/* (B, in) */
	labels = dt_xmalloc((size_t)(mb * per), sizeof *labels); /* (B, per) */
	for (int64_t i = 0; i < mb * in; i++)
		x[i] = (float)((i * 7 + 3) % bound);
	for (int64_t i = 0; i < mb * per; i++)
		labels[i] = (int32_t)((i * 5 + 1) % classes);
	tf = dt_xmalloc((size_t)nn, sizeof *tf);
	tb = dt_xmalloc((size_t)nn, sizeof *tb);
	for (int i = 0; i < nn; i++) {
		tf[i] = dt_xmalloc((size_t)iters, sizeof **tf);
		tb[i] = dt_xmalloc((size_t)iters, sizeof **tb);
	}
	pooled = dt_xcalloc((size_t)nn, sizeof *pooled);
	spent = dt_xcalloc((size_t)nn, sizeof *spent);
	rf = dt_xmalloc((size_t)nn, sizeof *rf);
	rb = dt_xmalloc((size_t)nn, sizeof *rb);
	fmed = dt_xmalloc((size_t)nn, sizeof *fmed);
	bmed = dt_xmalloc((size_t)nn, sizeof *bmed);
	step = dt_xmalloc((size_t)iters, sizeof *step);
	peak = dt_xmalloc((size_t)iters, sizeof *peak);
	pa = dt_xalloc_floats((size_t)PEAK_N * PEAK_N);
	pb = dt_xalloc_floats((size_t)PEAK_N * PEAK_N);
	pc = dt_xalloc_floats((size_t)PEAK_N * PEAK_N);
	for (size_t i = 0; i < (size_t)PEAK_N * PEAK_N; i++) {
		pa[i] = (float)(i % 7) * 0.01f - 0.03f;
		pb[i] = (float)(i % 5) * 0.01f - 0.02f;
	}

	memset(&p, 0, sizeof p);
	p.batch = mb;
	p.training = true;
	p.labels = labels;
	p.grad_scale = 1.0f / (float)mb;
	p.seed = m->seed;
	p.pool = pool;
	for (int64_t s = 0; s < iters + WARMUP_ITERS; s++) {
		int64_t k = s - WARMUP_ITERS;
		double t0, t1;

		/* The whole step, as the trainer runs it (a small learning
		 * rate keeps the weights near their start). */
		dt_model_set_position(m, (uint64_t)s, 0);
		int64_t loops0, loops1;
		double pool0 = dt_pool_time(pool, &loops0);
		t0 = clock_now(clk);
		dt_model_zero_grads(m);
		dt_model_train_step(m, x, labels, mb, 1.0f / (float)mb, NULL,
				    NULL);
		dt_optim_step(o, dt_model_params(m), dt_model_grads(m),
			      (float)job.train.lr * 1e-3f);
		t1 = clock_now(clk);
		if (k >= 0) {
			step_pooled += dt_pool_time(pool, &loops1) - pool0;
			step_sum += t1 - t0;
			step_loops += loops1 - loops0;
		}
		/* The same pass node by node. */
		dt_model_zero_grads(m);
		p.step = (uint64_t)s;
		p.loss_sum = 0.0;
		p.n_correct = 0;
		if (k < 0) {
			double *junk = dt_xcalloc((size_t)nn, sizeof *junk);

			timed_pass(m, &p, x, clk, rf, rb, junk);
			free(junk);
			continue;
		}
		timed_pass(m, &p, x, clk, rf, rb, pooled);
		step[k] = t1 - t0;
		for (int i = 0; i < nn; i++) {
			tf[i][k] = rf[i];
			tb[i][k] = rb[i];
			spent[i] += rf[i] + rb[i];
		}
		if (k % PEAK_EVERY == 0) {
			t0 = clock_now(clk);
			dt_kern_sgemm(0, 0, PEAK_N, PEAK_N, PEAK_N, 1.0f, pa,
				      PEAK_N, pb, PEAK_N, 0.0f, pc, PEAK_N);
			peak[n_peak++] = clock_now(clk) - t0;
		}
	}

	double step_med = median(step, (size_t)iters);
	double peak_gf = 2.0 * PEAK_N * PEAK_N * PEAK_N /
			 median(peak, (size_t)n_peak) * 1e-9;
	double rate = (double)mb / step_med;
	double model_gf = rate * dt_model_flops_per_sample(m) * 1e-9;
	enum dt_bench_fma lim = dt_bench_fma_f32();
	double lim_gf = dt_bench_fma_gflops(lim, threads, 5, cpu);

	for (int i = 0; i < nn; i++) {
		fmed[i] = median(tf[i], (size_t)iters);
		bmed[i] = median(tb[i], (size_t)iters);
		total += fmed[i] + bmed[i];
	}
	printf("job             %s\n", argv[1]);
	printf("blas threads    %d (times: %s)\n", threads,
	       !cpu ? "wall clock" : threads == 1 ? "the thread's CPU time"
	       : "the calling thread's CPU time: the critical path when "
		 "every thread has a core");
	printf("micro-batch     %lld, %lld iterations, medians\n",
	       (long long)mb, (long long)iters);
	printf("\n%-22s %-22s %8s %8s %8s %8s %6s %5s\n", "node", "kind",
	       "fwd ms", "GFLOP/s", "bwd ms", "GFLOP/s", "share", "pool");
	ks = dt_xcalloc((size_t)nn, sizeof *ks);
	for (int i = 0; i < nn; i++) {
		const struct dt_node *n = &m->nodes[i];
		double f = n->ops->fwd_flops(n) * (double)mb;
		int j;

		printf("%-22s %-22s %8.3f %8.2f %8.3f %8.2f %5.1f%% %4.0f%%\n",
		       n->name, n->kind, 1e3 * fmed[i],
		       fmed[i] > 0 ? f / fmed[i] * 1e-9 : 0.0, 1e3 * bmed[i],
		       bmed[i] > 0 ? 2.0 * f / bmed[i] * 1e-9 : 0.0,
		       100.0 * (fmed[i] + bmed[i]) / total,
		       spent[i] > 0 ? 100.0 * pooled[i] / spent[i] : 0.0);
		for (j = 0; j < n_kinds; j++)
			if (strcmp(ks[j].kind, n->kind) == 0)
				break;
		if (j == n_kinds)
			ks[n_kinds++].kind = n->kind;
		ks[j].fwd += fmed[i];
		ks[j].bwd += bmed[i];
		ks[j].pooled += pooled[i];
		ks[j].spent += spent[i];
		ks[j].flops += f;
		ks[j].nodes++;
	}
	printf("\n%-22s %5s %8s %8s %8s %8s %6s %5s\n", "kind", "nodes",
	       "fwd ms", "GFLOP/s", "bwd ms", "GFLOP/s", "share", "pool");
	for (int j = 0; j < n_kinds; j++)
		printf("%-22s %5d %8.3f %8.2f %8.3f %8.2f %5.1f%% %4.0f%%\n",
		       ks[j].kind, ks[j].nodes, 1e3 * ks[j].fwd,
		       ks[j].fwd > 0 ? ks[j].flops / ks[j].fwd * 1e-9 : 0.0,
		       1e3 * ks[j].bwd,
		       ks[j].bwd > 0 ? 2.0 * ks[j].flops / ks[j].bwd * 1e-9
				     : 0.0,
		       100.0 * (ks[j].fwd + ks[j].bwd) / total,
		       ks[j].spent > 0 ? 100.0 * ks[j].pooled / ks[j].spent
				       : 0.0);
	printf("\nnodes summed    %.3f ms per micro-batch\n", 1e3 * total);
	{
		double fw = 0, bw = 0;

		for (int i = 0; i < nn; i++) {
			fw += fmed[i];
			bw += bmed[i];
		}
		printf("pass            forward %.3f ms, backward %.3f ms per "
		       "micro-batch\n", 1e3 * fw, 1e3 * bw);
	}
	printf("step            %.3f ms (zero grads, forward+backward, "
	       "optimizer)\n", 1e3 * step_med);
	printf("in the pool     %.1f%% of the step, %lld loops (split over "
	       "the rank's threads, products included; the rest runs on "
	       "one thread)\n",
	       step_sum > 0 ? 100.0 * step_pooled / step_sum : 0.0,
	       (long long)(step_loops / iters));
	printf("train           %.1f samples/s, %.2f GFLOP/s model "
	       "(%.1f MFLOP/sample)\n", rate, model_gf,
	       dt_model_flops_per_sample(m) * 1e-6);
	printf("sgemm %d^3    %.2f GFLOP/s (median of %lld calls)\n", PEAK_N,
	       peak_gf, (long long)n_peak);
	printf("MFU             %.1f%% of sgemm %d^3 (model FLOPs)\n",
	       100.0 * model_gf / peak_gf, PEAK_N);
	printf("f32 limit       %.2f GFLOP/s (%s multiply-adds on "
	       "registers, %d thread%s, best of 5; bench/peak)\n", lim_gf,
	       dt_bench_fma_name(lim), threads, threads == 1 ? "" : "s");
	printf("MFU             %.1f%% of the f32 limit (model FLOPs)\n",
	       lim_gf > 0.0 ? 100.0 * model_gf / lim_gf : 0.0);

	for (int i = 0; i < nn; i++) {
		free(tf[i]);
		free(tb[i]);
	}
	free(tf);
	free(tb);
	free(rf);
	free(rb);
	free(pooled);
	free(spent);
	free(fmed);
	free(bmed);
	free(step);
	free(peak);
	free(ks);
	free(pa);
	free(pb);
	free(pc);
	free(x);
	free(labels);
	dt_optim_free(o);
	dt_model_free(m);
	dt_pool_free(pool);
	return 0;
}
