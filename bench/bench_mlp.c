/* SPDX-License-Identifier: MIT */
/* bench_mlp.c - training throughput of a job's model against the OpenBLAS
 * sgemm peak measured in the same process on the same thread count.
 *
 *   bench_mlp JOB.yaml [STEPS]
 *
 * Runs STEPS forward+backward+optimizer steps on one rank (the job's
 * micro-batch, real data from the job; 10 steps before them warm the
 * caches) and prints:
 *   - samples/s and the model GFLOP/s: samples/s x FLOPs per sample as
 *     graph/ counts them (3x forward, which includes the first layer's
 *     input gradient although no step computes it);
 *   - the step and its phases: the data gather, zeroing the gradients,
 *     forward+backward, the optimizer;
 *   - the time of the step's sgemm calls, replayed after every step on
 *     buffers of the model's dense shapes (dense.c's calls, with the same
 *     transposes and betas), and so the split of the step between sgemm
 *     and the rest (elementwise passes, loss, optimizer, data, zeroing);
 *   - sgemm GFLOP/s on square 1024 matrices, and the ratios (model FLOPs
 *     utilisation): the model FLOPs over the 1024 peak, which can pass
 *     100% since they count a product no step computes, and the sgemm
 *     FLOPs a step computes over the 1024 peak and over the replay's.
 * Times are medians of per-step (per-call) times, and with one BLAS thread
 * CPU times, so that on a shared machine the time a step waited for a core
 * does not count; the mean step is printed too. Only dense layers are
 * replayed: for other models the split counts their products as "the
 * rest". A benchmark: it asserts nothing. */
#include <cblas.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/data.h"
#include "graph/graph.h"
#include "job/job.h"
#include "optim/optim.h"
#include "util/alloc.h"
#include "util/threadpool.h"

#define WARMUP_STEPS 10

/* The phases of a step, timed one by one. */
enum phase {
	PH_DATA, PH_ZERO, PH_PASS, PH_OPTIM,	/* the step's phases */
	PH_STEP,	/* the four together */
	PH_GEMM,	/* the replayed sgemm calls */
	PH_PEAK,	/* the reference product */
	N_PH
};

/* The sgemm calls of one dense layer, on buffers of its shapes. */
struct product {
	int rows, in, out;	/* rows = micro-batch x rows per sample */
	bool bias;		/* forward adds onto a broadcast bias */
	bool dx;		/* backward computes the input gradient */
	float *x;		/* (rows, in) */
	float *w;		/* (in, out) */
	float *y;		/* (rows, out) */
	float *dy;		/* (rows, out) */
	float *dw;		/* (in, out) */
	float *dxbuf;		/* (rows, in) */
};

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Seconds on clk. With one BLAS thread everything runs on the calling
 * thread, and its CPU time leaves out the time the thread waited for a
 * core, which on a shared machine is most of the noise; BLAS threads of
 * their own (which spin while they wait for work) need the wall clock. */
static double
clock_now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The median of v[0..n), n >= 1; sorts v. */
static double
median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* n floats of small values, so that no product overflows. */
static float *
filled(size_t n)
{
	float *p = dt_xalloc_floats(n);

	for (size_t i = 0; i < n; i++)
		p[i] = (float)(i % 7) * 0.01f - 0.03f;
	return p;
}

/* The reference product: square PEAK_N matrices, timed once every
 * PEAK_EVERY steps, so that it shares the steps' conditions on a shared
 * machine. */
#define PEAK_N 1024
#define PEAK_EVERY 8

static void
peak_run(const float *a, const float *b, float *c)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, PEAK_N, PEAK_N,
		    PEAK_N, 1.0f, a, PEAK_N, b, PEAK_N, 0.0f, c, PEAK_N);
}

/* The dense layers of m as products for a micro-batch of mb; returns their
 * number (*out owned by the caller: products_free). The first node reads
 * the model input, whose gradient nobody needs, so dense.c skips its dX. */
static int
products_new(struct dt_model *m, int64_t mb, struct product **out)
{
	int n = 0;
	struct product *p = dt_xcalloc((size_t)dt_model_n_layers(m) + 1,
				       sizeof *p);

	for (int i = 0; i < dt_model_n_layers(m); i++) {
		struct dt_layer_info li;
		struct product *q = &p[n];

		dt_model_layer_info(m, i, &li);
		if (strcmp(li.kind, "dense") != 0)
			continue;
		for (int t = 0; t < dt_model_n_tensors(m); t++) {
			struct dt_tensor_info ti;

			dt_model_tensor_info(m, t, &ti);
			if (strcmp(ti.node, li.name) != 0)
				continue;
			if (strcmp(ti.name, "weight") == 0) {
				q->in = (int)ti.shape[0];
				q->out = (int)ti.shape[1];
			} else if (strcmp(ti.name, "bias") == 0) {
				q->bias = true;
			}
		}
		q->rows = (int)(mb * (li.n_dims == 2 ? li.out_shape[0] : 1));
		q->dx = i > 0;
		q->x = filled((size_t)q->rows * q->in);
		q->w = filled((size_t)q->in * q->out);
		q->y = filled((size_t)q->rows * q->out);
		q->dy = filled((size_t)q->rows * q->out);
		q->dw = filled((size_t)q->in * q->out);
		q->dxbuf = filled((size_t)q->rows * q->in);
		n++;
	}
	*out = p;
	return n;
}

static void
products_free(struct product *p, int n)
{
	for (int i = 0; i < n; i++) {
		free(p[i].x);
		free(p[i].w);
		free(p[i].y);
		free(p[i].dy);
		free(p[i].dw);
		free(p[i].dxbuf);
	}
	free(p);
}

/* FLOPs of one replay: 2 per multiply-add, forward, dW and dX; *calls
 * is set to the number of sgemm calls. */
static double
products_flops(const struct product *p, int n, int *calls)
{
	double f = 0;

	*calls = 0;
	for (int i = 0; i < n; i++) {
		f += 2.0 * p[i].rows * p[i].in * p[i].out * (p[i].dx ? 3 : 2);
		*calls += p[i].dx ? 3 : 2;
	}
	return f;
}

/* Zeroes the dW buffers, as dt_model_zero_grads does before a step (which
 * leaves them in cache for the sgemm calls that add to them). */
static void
products_zero(struct product *p, int n)
{
	for (int i = 0; i < n; i++)
		memset(p[i].dw, 0, (size_t)p[i].in * p[i].out * sizeof(float));
}

/* The sgemm calls of a step in the order a step makes them: forward layer
 * by layer, then backward in reverse, dW then dX (dense.c). */
static void
products_run(struct product *p, int n)
{
	for (int i = 0; i < n; i++) {
		struct product *q = &p[i];

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, q->rows,
			    q->out, q->in, 1.0f, q->x, q->in, q->w, q->out,
			    q->bias ? 1.0f : 0.0f, q->y, q->out);
	}
	for (int i = n - 1; i >= 0; i--) {
		struct product *q = &p[i];

		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, q->in,
			    q->out, q->rows, 1.0f, q->x, q->in, q->dy, q->out,
			    1.0f, q->dw, q->out);
		if (q->dx)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
				    q->rows, q->in, q->out, 1.0f, q->dy, q->out,
				    q->w, q->out, 0.0f, q->dxbuf, q->in);
	}
}

int
main(int argc, char **argv)
{
	static struct dt_job job;
	struct dt_error err;
	struct dt_dataset ds;
	struct dt_model *m;
	struct dt_optim *o;
	struct product *prod;
	int64_t steps = argc > 2 ? atoll(argv[2]) : 300, mb, in, n_peak = 0;
	int64_t *idx;
	float *x, *pa, *pb, *pc;
	int32_t *y;
	double *ph[N_PH], med[N_PH], mean_step = 0, gemm_flops;
	int threads = openblas_get_num_threads(), n_prod, n_calls;
	struct dt_pool *pool;
	clockid_t clk = threads == 1 ? CLOCK_THREAD_CPUTIME_ID
				     : CLOCK_MONOTONIC;

	if (argc < 2 || steps < 1) {
		fprintf(stderr, "usage: bench_mlp JOB.yaml [STEPS]\n");
		return 2;
	}
	if (dt_job_load(argv[1], NULL, 0, &job, &err) != DT_OK) {
		fprintf(stderr, "bench_mlp: %s\n", err.msg);
		return 2;
	}
	mb = job.train.micro_batch ? job.train.micro_batch :
	     job.train.global_batch;
	if (dt_model_new(&job, mb, &m, &err) != DT_OK) {
		fprintf(stderr, "bench_mlp: %s\n", err.msg);
		return 2;
	}
	if (dt_dataset_load_idx(job.data.train.images, job.data.train.labels,
				dt_model_n_classes(m), (float)job.data.scale,
				&ds, &err) != DT_OK) {
		fprintf(stderr, "bench_mlp: %s\n", err.msg);
		return 1;
	}
	o = dt_optim_new(&job, dt_model_n_trained(m));
	/* The rank's own threads, as dtrain run gives them. */
	pool = dt_pool_new(threads);
	dt_model_set_pool(m, pool);
	dt_optim_set_pool(o, pool);
	in = dt_model_input_size(m);
	idx = dt_xmalloc((size_t)mb, sizeof *idx);
	x = dt_xalloc_floats((size_t)(mb * in));
	y = dt_xmalloc((size_t)mb, sizeof *y);
	for (int k = 0; k < N_PH; k++)
		ph[k] = dt_xmalloc((size_t)steps, sizeof *ph[k]);
	n_prod = products_new(m, mb, &prod);
	gemm_flops = products_flops(prod, n_prod, &n_calls);
	pa = filled((size_t)PEAK_N * PEAK_N);
	pb = filled((size_t)PEAK_N * PEAK_N);
	pc = filled((size_t)PEAK_N * PEAK_N);

	/* Each step, phase by phase, is followed by the replay of its sgemm
	 * calls, and every PEAK_EVERY-th by the reference product: on a
	 * shared machine all three then see the same load, and the medians
	 * drop the samples a preemption or the reference product's cache
	 * sweep spoiled. The replay finds the caches much as the step's own
	 * calls do: after the optimizer's sweep over the parameters,
	 * gradients and moments, and a zeroing of the gradients. */
	for (int64_t s = 0; s < steps + WARMUP_STEPS; s++) {
		int64_t k = s - WARMUP_STEPS;
		double t[6];

		for (int64_t j = 0; j < mb; j++)
			idx[j] = (s * mb + j) % ds.n;
		t[0] = clock_now(clk);
		dt_dataset_gather(&ds, idx, mb, x, y);
		t[1] = clock_now(clk);
		dt_model_zero_grads(m);
		t[2] = clock_now(clk);
		dt_model_train_step(m, x, y, mb, 1.0f / (float)mb, NULL, NULL);
		t[3] = clock_now(clk);
		dt_optim_step(o, dt_model_params(m), dt_model_grads(m),
			      (float)job.train.lr);
		t[4] = clock_now(clk);
		products_zero(prod, n_prod);
		t[5] = clock_now(clk);
		products_run(prod, n_prod);
		if (k < 0)
			continue;
		ph[PH_GEMM][k] = clock_now(clk) - t[5];
		for (int p = 0; p < 4; p++)
			ph[p][k] = t[p + 1] - t[p];
		ph[PH_STEP][k] = t[4] - t[0];
		mean_step += ph[PH_STEP][k] / (double)steps;
		if (k % PEAK_EVERY == 0) {
			t[0] = clock_now(clk);
			peak_run(pa, pb, pc);
			ph[PH_PEAK][n_peak++] = clock_now(clk) - t[0];
		}
	}
	for (int k = 0; k < N_PH; k++)
		med[k] = median(ph[k], k == PH_PEAK ? (size_t)n_peak
						    : (size_t)steps);

	double rate = (double)mb / med[PH_STEP];
	double flops = rate * dt_model_flops_per_sample(m) * 1e-9;
	double peak = 2.0 * PEAK_N * PEAK_N * PEAK_N / med[PH_PEAK] * 1e-9;
	double share = med[PH_GEMM] / med[PH_STEP];

	printf("job             %s\n", argv[1]);
	printf("blas threads    %d (times: %s)\n", threads,
	       threads == 1 ? "the thread's CPU time" : "wall clock");
	printf("micro-batch     %lld\n", (long long)mb);
	printf("parameters      %zu\n", dt_model_n_params(m));
	printf("flops/sample    %.0f (forward + backward, 3x forward)\n",
	       dt_model_flops_per_sample(m));
	printf("train           %.0f samples/s, %.2f GFLOP/s (median of %lld "
	       "steps; the mean step gives %.0f samples/s)\n", rate, flops,
	       (long long)steps, (double)mb / mean_step);
	printf("step            %.3f ms: data %.3f, zero grads %.3f, "
	       "forward+backward %.3f, optimizer %.3f\n", 1e3 * med[PH_STEP],
	       1e3 * med[PH_DATA], 1e3 * med[PH_ZERO], 1e3 * med[PH_PASS],
	       1e3 * med[PH_OPTIM]);
	if (n_prod > 0) {
		printf("sgemm calls     %.3f ms, %.2f GFLOP/s (the step's %d "
		       "dense products, %.1f MFLOP, replayed)\n",
		       1e3 * med[PH_GEMM], gemm_flops / med[PH_GEMM] * 1e-9,
		       n_calls, gemm_flops * 1e-6);
		printf("time split      %.1f%% sgemm, %.1f%% the rest "
		       "(%.3f ms)\n", 100.0 * share, 100.0 * (1.0 - share),
		       1e3 * (med[PH_STEP] - med[PH_GEMM]));
	}
	printf("sgemm %d^3    %.2f GFLOP/s (median of %lld calls)\n", PEAK_N,
	       peak, (long long)n_peak);
	printf("MFU             %.1f%% of sgemm %d^3 (model FLOPs)\n",
	       100.0 * flops / peak, PEAK_N);
	if (n_prod > 0)
		printf("                %.1f%% of sgemm %d^3, %.1f%% of sgemm on "
		       "the model's shapes (sgemm FLOPs computed)\n",
		       100.0 * gemm_flops / med[PH_STEP] * 1e-9 / peak, PEAK_N,
		       100.0 * share);
	for (int k = 0; k < N_PH; k++)
		free(ph[k]);
	free(pa);
	free(pb);
	free(pc);
	products_free(prod, n_prod);
	dt_optim_free(o);
	dt_model_free(m);
	dt_pool_free(pool);
	dt_dataset_fini(&ds);
	free(idx);
	free(x);
	free(y);
	return 0;
}
