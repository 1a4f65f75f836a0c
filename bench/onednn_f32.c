/* SPDX-License-Identifier: MIT */
/* onednn_f32.c - OpenBLAS's sgemm against oneDNN's f32 matmul at the
 * shipped jobs' and GPT-2's product shapes, in the three cases the layers
 * call (forward A B, dX A B^T, dW A^T B), with the bit checks that decide
 * whether oneDNN may take a product (issue 28; bench/README, kernels).
 *
 *   onednn_f32 [SECONDS [WORD]]
 *
 * (WORD: only the shapes whose description holds it, e.g. CNN.)
 * For each shape and case it prints the GFLOP/s (2 m n k a call, best of
 * 3 timings of about SECONDS each of CPU time, default 0.15) of each
 * library on 1 thread, and on 2 threads as dtrain splits a product (the
 * rows of C cut in two at a multiple of 48, each part one one-thread
 * call on its own thread; the sum of the two threads' rates, each over
 * its own CPU time, as the machine is shared); then, for OpenBLAS and for oneDNN, whether
 * the rows of C come out with the same bits when computed alone (cut at
 * 12, 16, 48, 96 rows and at the half, as the thread pool cuts them,
 * with beta 0 and 1), whether a column slice of B and C (the half, at the
 * full row strides, as tensor parallelism's column share computes it)
 * does, whether two halves of k summed give the unsplit product (the row
 * share), and whether two runs agree. A third library, "dt", is dtrain's
 * own oneDNN path (kern.h, dt_kern_onednn_sgemm: the same matmul, A^T B
 * of more than 256 terms in chunks of 256). The libraries' timings
 * alternate (each of the 3 repeats runs every library in turn), as the
 * machine may be shared. A benchmark: it asserts nothing. */
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/kern.h"

struct shape {
	int64_t m, n, k;	/* forward: (m, k) by (k, n) */
	const char *what;
};

static const struct shape shapes[] = {
	{ 96, 512, 784, "MLP dense1, batch 96" },
	{ 96, 256, 512, "MLP dense2, batch 96" },
	{ 128, 128, 3136, "CNN fc1, batch 128" },
	{ 32, 1568, 9, "CNN conv1 (oc x 2 samples' cols)" },
	{ 64, 392, 288, "CNN conv2 (oc x 2 samples' cols)" },
	{ 512, 384, 128, "char-GPT qkv, 8 x 64 rows" },
	{ 512, 512, 128, "char-GPT fc" },
	{ 512, 128, 512, "char-GPT proj" },
	{ 64, 3072, 768, "GPT-2 fc, 64 rows" },
	{ 256, 2304, 768, "GPT-2 qkv, 256 rows" },
	{ 256, 768, 3072, "GPT-2 proj, 256 rows" },
	{ 1024, 3072, 768, "GPT-2 fc, 1024 rows" },
	{ 1024, 768, 768, "GPT-2 attn proj, 1024 rows" },
	{ 1024, 1024, 1024, "square 1024^3 (issue 28's figure)" },
};

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static void
check(dnnl_status_t st, const char *what)
{
	if (st != dnnl_success) {
		fprintf(stderr, "onednn_f32: %s failed (%d)\n", what, (int)st);
		exit(1);
	}
}

/* The calling thread's CPU time: the machine is shared, and a thread's
 * CPU time counts only what it ran. */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One product C (m, n) = op(A) op(B) (+ C with beta 1), row-major, in
 * either library; oneDNN's primitive is made for the call (kept for the
 * timing loop by struct dnn below). */
struct dnn {
	dnnl_primitive_t prim;
	dnnl_memory_t a, b, c;
	dnnl_stream_t stream;
};

static void
md2(dnnl_memory_desc_t *md, int64_t r, int64_t c, int64_t s0, int64_t s1)
{
	dnnl_dims_t d = { r, c }, s = { s0, s1 };

	check(dnnl_memory_desc_init_by_strides(md, 2, d, dnnl_f32, s), "md");
}

static void
dnn_make(struct dnn *p, int ta, int tb, int64_t m, int64_t n, int64_t k,
	 int64_t lda, int64_t ldb, int64_t ldc, float beta)
{
	dnnl_memory_desc_t ad, bd, cd;
	dnnl_matmul_desc_t mm;
	dnnl_primitive_attr_t attr;
	dnnl_post_ops_t po;
	dnnl_primitive_desc_t pd;

	md2(&ad, m, k, ta ? 1 : lda, ta ? lda : 1);
	md2(&bd, k, n, tb ? 1 : ldb, tb ? ldb : 1);
	md2(&cd, m, n, ldc, 1);
	check(dnnl_matmul_desc_init(&mm, &ad, &bd, NULL, &cd), "matmul");
	check(dnnl_primitive_attr_create(&attr), "attr");
	if (beta != 0.0f) {
		check(dnnl_post_ops_create(&po), "po");
		check(dnnl_post_ops_append_sum(po, 1.0f), "sum");
		check(dnnl_primitive_attr_set_post_ops(attr, po), "po");
		dnnl_post_ops_destroy(po);
	}
	check(dnnl_primitive_desc_create(&pd, &mm, attr, engine, NULL), "pd");
	check(dnnl_primitive_create(&p->prim, pd), "prim");
	check(dnnl_memory_create(&p->a, &ad, engine, DNNL_MEMORY_NONE), "a");
	check(dnnl_memory_create(&p->b, &bd, engine, DNNL_MEMORY_NONE), "b");
	check(dnnl_memory_create(&p->c, &cd, engine, DNNL_MEMORY_NONE), "c");
	check(dnnl_stream_create(&p->stream, engine, dnnl_stream_default_flags),
	      "stream");
	dnnl_primitive_desc_destroy(pd);
	dnnl_primitive_attr_destroy(attr);
}

static void
dnn_run(struct dnn *p, const float *a, const float *b, float *c)
{
	dnnl_exec_arg_t args[3];

	check(dnnl_memory_set_data_handle(p->a, (void *)a), "a");
	check(dnnl_memory_set_data_handle(p->b, (void *)b), "b");
	check(dnnl_memory_set_data_handle(p->c, c), "c");
	args[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, p->a };
	args[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, p->b };
	args[2] = (dnnl_exec_arg_t){ DNNL_ARG_DST, p->c };
	check(dnnl_primitive_execute(p->prim, p->stream, 3, args), "exec");
	check(dnnl_stream_wait(p->stream), "wait");
}

static void
dnn_free(struct dnn *p)
{
	dnnl_primitive_destroy(p->prim);
	dnnl_memory_destroy(p->a);
	dnnl_memory_destroy(p->b);
	dnnl_memory_destroy(p->c);
	dnnl_stream_destroy(p->stream);
}

/* A product in a library (lib 1: oneDNN), made and run once. */
static void
gemm(int lib, int ta, int tb, int64_t m, int64_t n, int64_t k,
     const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
     float *c, int64_t ldc)
{
	struct dnn p;

	if (lib == 2) {
		dt_kern_onednn_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb,
				     beta, c, ldc);
		return;
	}
	if (lib == 0) {
		cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
			    tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
			    (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, c,
			    (int)ldc);
		return;
	}
	dnn_make(&p, ta, tb, m, n, k, lda, ldb, ldc, beta);
	dnn_run(&p, a, b, c);
	dnn_free(&p);
}

/* One timed part: rows [r0, r1) of a product, called until secs of the
 * thread's CPU time pass; gflops its rate over that time. */
struct part {
	int lib, ta, tb;
	int64_t m, n, k, r0, r1;
	const float *a, *b;
	float *c;
	double secs, gflops;
};

static void *
part_run(void *arg)
{
	struct part *p = arg;
	int64_t lda = p->ta ? p->m : p->k, ldb = p->tb ? p->k : p->n;
	const float *a = p->a + (p->ta ? p->r0 : p->r0 * lda);
	int64_t rows = p->r1 - p->r0;
	struct dnn d;
	double t0, t;
	long calls = 0;

	omp_set_num_threads(1);
	if (p->lib == 1)
		dnn_make(&d, p->ta, p->tb, rows, p->n, p->k, lda, ldb, p->n,
			 0.0f);
	t0 = now();
	do {
		if (p->lib == 2)
			dt_kern_onednn_sgemm(p->ta, p->tb, rows, p->n, p->k,
					     1.0f, a, lda, p->b, ldb, 0.0f,
					     p->c + p->r0 * p->n, p->n);
		else if (p->lib)
			dnn_run(&d, a, p->b, p->c + p->r0 * p->n);
		else
			cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans :
				    CblasNoTrans, p->tb ? CblasTrans :
				    CblasNoTrans, (int)rows, (int)p->n,
				    (int)p->k, 1.0f, a, (int)lda, p->b,
				    (int)ldb, 0.0f, p->c + p->r0 * p->n,
				    (int)p->n);
		calls++;
	} while ((t = now() - t0) < p->secs);
	p->gflops = 2e-9 * (double)rows * (double)p->n * (double)p->k *
		    (double)calls / t;
	if (p->lib == 1)
		dnn_free(&d);
	return NULL;
}

/* GFLOP/s of the product on threads threads (1 or 2; with 2 the sum of
 * both threads' rates over their CPU time), one timing. */
static double
rate(int lib, int ta, int tb, int64_t m, int64_t n, int64_t k,
     const float *a, const float *b, float *c, int threads, double secs)
{
	int64_t cut = (m / 2 + 47) / 48 * 48;
	struct part p[2];
	pthread_t th;

	if (threads == 2 && (cut >= m || cut == 0))
		cut = m / 2;
	for (int i = 0; i < 2; i++)
		p[i] = (struct part){ lib, ta, tb, m, n, k, i == 0 ? 0 : cut,
				      i == 0 && threads == 2 ? cut : m, a, b,
				      c, secs, 0.0 };
	if (threads == 2) {
		pthread_create(&th, NULL, part_run, &p[1]);
		part_run(&p[0]);
		pthread_join(th, NULL);
	} else {
		part_run(&p[0]);
	}
	return p[0].gflops + (threads == 2 ? p[1].gflops : 0.0);
}

static void
fill(float *x, int64_t n, unsigned seed)
{
	for (int64_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
	}
}

static int
same(const float *x, const float *y, int64_t rows, int64_t cols,
     int64_t ldx, int64_t ldy)
{
	for (int64_t r = 0; r < rows; r++)
		if (memcmp(x + r * ldx, y + r * ldy,
			   (size_t)cols * sizeof(float)) != 0)
			return 0;
	return 1;
}

/* Whether rows [0, r) and [r, m) in calls of their own (beta as given,
 * C starting from the same values) give the unsplit call's bits. */
static int
rows_alone(int lib, int ta, int tb, int64_t m, int64_t n, int64_t k,
	   const float *a, const float *b, float beta, float *c, float *d,
	   int64_t r)
{
	int64_t lda = ta ? m : k, ldb = tb ? k : n;

	fill(c, m * n, 9);
	memcpy(d, c, (size_t)(m * n) * sizeof *d);
	gemm(lib, ta, tb, m, n, k, a, lda, b, ldb, beta, c, n);
	gemm(lib, ta, tb, r, n, k, a, lda, b, ldb, beta, d, n);
	gemm(lib, ta, tb, m - r, n, k, a + (ta ? r : r * lda), lda, b, ldb,
	     beta, d + r * n, n);
	return same(c, d, m, n, n, n);
}

/* The bit checks of one library on one case, as a string: for the rows
 * cut at 12, 16, 48, 96 and at half of m rounded down to 48 (where
 * those fall inside), with beta 0 then with beta 1, '+' where the rows
 * computed alone give the unsplit bits, '-' where not, '.' where the cut
 * is not inside; then N (a half of the columns at the full strides), K
 * (k halves summed), D (run to run), '-' where they differ. */
static void
bits(int lib, int ta, int tb, int64_t m, int64_t n, int64_t k,
     const float *a, const float *b, float *c, float *d, char *out)
{
	int64_t lda = ta ? m : k, ldb = tb ? k : n;
	const int64_t cuts[] = { 12, 16, 48, 96, m / 2 / 48 * 48 };
	char *o = out;

	omp_set_num_threads(1);
	for (int beta = 0; beta < 2; beta++) {
		for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++)
			*o++ = cuts[i] <= 0 || cuts[i] >= m ? '.' :
			       rows_alone(lib, ta, tb, m, n, k, a, b,
					  (float)beta, c, d, cuts[i]) ?
			       '+' : '-';
		*o++ = ' ';
	}
	gemm(lib, ta, tb, m, n, k, a, lda, b, ldb, 0.0f, c, n);
	{
		int64_t h = n / 2;

		gemm(lib, ta, tb, m, h, k, a, lda, b, ldb, 0.0f, d, n);
		gemm(lib, ta, tb, m, n - h, k, a, lda, b + (tb ? h * ldb : h),
		     ldb, 0.0f, d + h, n);
		*o++ = same(c, d, m, n, n, n) ? 'N' : '-';
	}
	{
		int64_t h = k / 2;
		float *e = malloc((size_t)(m * n) * sizeof *e);

		gemm(lib, ta, tb, m, n, h, a, lda, b, ldb, 0.0f, d, n);
		gemm(lib, ta, tb, m, n, k - h, a + (ta ? h * lda : h), lda,
		     b + (tb ? h : h * ldb), ldb, 0.0f, e, n);
		for (int64_t i = 0; i < m * n; i++)
			d[i] += e[i];
		*o++ = same(c, d, m, n, n, n) ? 'K' : '-';
		free(e);
	}
	gemm(lib, ta, tb, m, n, k, a, lda, b, ldb, 0.0f, d, n);
	*o++ = same(c, d, m, n, n, n) ? 'D' : '-';
	*o = '\0';
}

int
main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.15;
	const char *word = argc > 2 ? argv[2] : "";
	static const char *cases[] = { "fwd", "dX", "dW" };

	openblas_set_num_threads(1);
	omp_set_num_threads(1);
	check(dnnl_engine_create(&engine, dnnl_cpu, 0), "engine");
	check(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags),
	      "stream");
	printf("OpenBLAS %s; oneDNN %d.%d.%d (ISA %d); GFLOP/s best of 3, %.2f s "
	       "each; bits: rows alone cut at 12 16 48 96 m/2 (beta 0, then "
	       "beta 1), N column half, K k halves summed, D run to run\n",
	       openblas_get_corename(), dnnl_version()->major,
	       dnnl_version()->minor, dnnl_version()->patch,
	       (int)dnnl_get_effective_cpu_isa(), secs);
	printf("%-34s %-4s %5s %5s %5s | %7s %7s %7s | %7s %7s %7s | %-16s "
	       "%-16s %s\n", "shape", "case", "m", "n", "k", "blas1", "dnnl1",
	       "dt1", "blas2", "dnnl2", "dt2", "bits OpenBLAS", "bits oneDNN",
	       "bits dt");
	for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
		if (strstr(shapes[s].what, word) == NULL)
			continue;
		for (int cs = 0; cs < 3; cs++) {
			const struct shape *sh = &shapes[s];
			/* fwd: (m,k)(k,n); dX: dY (m,n) W^T -> (m,k), W
			 * stored (k,n) = B^T stored (n,k); dW: X^T dY ->
			 * (k,n), X stored (m,k) = A^T stored */
			int64_t m = cs == 2 ? sh->k : sh->m;
			int64_t n = cs == 1 ? sh->k : sh->n;
			int64_t k = cs == 0 ? sh->k : cs == 1 ? sh->n : sh->m;
			int ta = cs == 2, tb = cs == 1;
			float *a = malloc((size_t)(m * k) * sizeof *a);
			float *b = malloc((size_t)(k * n) * sizeof *b);
			float *c = malloc((size_t)(m * n) * sizeof *c);
			float *d = malloc((size_t)(m * n) * sizeof *d);
			double r[6] = { 0 };
			char bo[24], bd[24], bt[24];

			fill(a, m * k, 1);
			fill(b, k * n, 2);
			/* best of 3, the libraries in turn */
			for (int rep = 0; rep < 3; rep++)
				for (int t = 1; t <= 2; t++)
					for (int lib = 0; lib < 3; lib++) {
						double f = rate(lib, ta, tb,
								m, n, k, a,
								b, c, t,
								secs);
						double *x = &r[(t - 1) * 3 +
							       lib];

						*x = f > *x ? f : *x;
					}
			bits(0, ta, tb, m, n, k, a, b, c, d, bo);
			bits(1, ta, tb, m, n, k, a, b, c, d, bd);
			bits(2, ta, tb, m, n, k, a, b, c, d, bt);
			printf("%-34s %-4s %5lld %5lld %5lld | %7.1f %7.1f "
			       "%7.1f | %7.1f %7.1f %7.1f | %-16s %-16s %s\n",
			       sh->what, cases[cs], (long long)m,
			       (long long)n, (long long)k, r[0], r[1], r[2],
			       r[3], r[4], r[5], bo, bd, bt);
			fflush(stdout);
			free(a);
			free(b);
			free(c);
			free(d);
		}
	}
	dnnl_stream_destroy(stream);
	dnnl_engine_destroy(engine);
	return 0;
}
