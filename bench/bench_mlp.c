/* bench_mlp.c - training throughput of a job's model against the OpenBLAS
 * sgemm peak measured in the same process on the same thread count.
 *
 *   bench_mlp JOB.yaml [STEPS]
 *
 * Prints samples/s for forward+backward+optimizer steps on one rank (the
 * job's micro-batch; real data from the job), the model FLOP/s
 * (samples/s x FLOPs per sample as graph/ counts them), the sgemm GFLOP/s
 * on square 1024 matrices and on the model's own largest layer shape, and
 * the ratio (model FLOPs utilisation). A benchmark: it asserts nothing. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data.h"
#include "graph/graph.h"
#include "job/job.h"
#include "optim/optim.h"
#include "train/progress.h"
#include "util/alloc.h"

static double
sgemm_gflops(int m, int n, int k, double min_s)
{
	float *a = dt_xalloc_floats((size_t)m * k);
	float *b = dt_xalloc_floats((size_t)k * n);
	float *c = dt_xalloc_floats((size_t)m * n);
	double t0, t;
	long reps = 0;

	for (size_t i = 0; i < (size_t)m * k; i++)
		a[i] = (float)(i % 7) * 0.1f;
	for (size_t i = 0; i < (size_t)k * n; i++)
		b[i] = (float)(i % 5) * 0.1f;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
		    a, k, b, n, 0.0f, c, n);	/* warm up */
	t0 = dt_now();
	do {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k,
			    1.0f, a, k, b, n, 0.0f, c, n);
		reps++;
		t = dt_now() - t0;
	} while (t < min_s);
	free(a);
	free(b);
	free(c);
	return 2.0 * m * n * k * (double)reps / t * 1e-9;
}

int
main(int argc, char **argv)
{
	static struct dt_job job;
	struct dt_error err;
	struct dt_dataset ds;
	struct dt_model *m;
	struct dt_optim *o;
	int64_t steps = argc > 2 ? atoll(argv[2]) : 300, mb, in;
	int64_t *idx;
	float *x;
	int32_t *y;
	double t0 = 0, t, rate, flops, peak, layer_peak;
	int threads = openblas_get_num_threads();

	if (argc < 2) {
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
	in = dt_model_input_size(m);
	idx = dt_xmalloc((size_t)mb, sizeof *idx);
	x = dt_xalloc_floats((size_t)(mb * in));
	y = dt_xmalloc((size_t)mb, sizeof *y);

	/* The model's largest dense shape: (micro-batch x in) . (in x out). */
	int64_t best = 0, lk = in, ln = 1;
	for (int i = 0, prev = (int)in; i < dt_model_n_layers(m); i++) {
		struct dt_layer_info li;

		dt_model_layer_info(m, i, &li);
		if (strcmp(li.kind, "dense") == 0) {
			if (li.n_params > best) {
				best = li.n_params;
				lk = prev;
				ln = li.out_shape[0];
			}
			prev = (int)li.out_shape[0];
		}
	}
	peak = sgemm_gflops(1024, 1024, 1024, 1.0);
	layer_peak = sgemm_gflops((int)mb, (int)ln, (int)lk, 1.0);

	for (int64_t s = 0; s < steps + 10; s++) {
		if (s == 10)
			t0 = dt_now();	/* the first steps warm caches */
		for (int64_t j = 0; j < mb; j++)
			idx[j] = (s * mb + j) % ds.n;
		dt_dataset_gather(&ds, idx, mb, x, y);
		dt_model_zero_grads(m);
		dt_model_train_step(m, x, y, mb, 1.0f / (float)mb, NULL, NULL);
		dt_optim_step(o, dt_model_params(m), dt_model_grads(m),
			      (float)job.train.lr);
	}
	t = dt_now() - t0;
	rate = (double)(steps * mb) / t;
	flops = rate * dt_model_flops_per_sample(m) * 1e-9;
	printf("job             %s\n", argv[1]);
	printf("blas threads    %d\n", threads);
	printf("micro-batch     %lld\n", (long long)mb);
	printf("parameters      %zu\n", dt_model_n_params(m));
	printf("flops/sample    %.0f (forward + backward)\n",
	       dt_model_flops_per_sample(m));
	printf("train           %.0f samples/s, %.2f GFLOP/s (%lld steps)\n",
	       rate, flops, (long long)steps);
	printf("sgemm 1024^3    %.2f GFLOP/s\n", peak);
	printf("sgemm layer     %.2f GFLOP/s (%lld x %lld x %lld)\n",
	       layer_peak, (long long)mb, (long long)ln, (long long)lk);
	printf("MFU             %.1f%% of sgemm 1024^3, %.1f%% of layer sgemm\n",
	       100.0 * flops / peak, 100.0 * flops / layer_peak);
	dt_optim_free(o);
	dt_model_free(m);
	dt_dataset_fini(&ds);
	free(idx);
	free(x);
	free(y);
	return 0;
}
