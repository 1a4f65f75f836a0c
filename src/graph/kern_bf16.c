/* SPDX-License-Identifier: MIT */
/* kern_bf16.c - the kernel seam's products on oneDNN (kern.h): in
 * bfloat16 (dt_kern_set_bf16), the inputs rounded to bf16, the products
 * summed in float, and in f32 where parallel.kernels sends them
 * (dt_kern_onednn_sgemm, dt_kern_onednn_f32, which also keeps that
 * choice), on oneDNN's matmul primitive (Debian's libdnnl 2.6), which
 * picks its AVX512_BF16, AMX or AVX-512 kernel from CPUID. Each calling
 * thread keeps its own stream, primitives (one per shape, made on first
 * use) and bf16 copies of the operands, and runs oneDNN on itself alone
 * (OpenMP, one thread), so the thread pool's split of a product's rows
 * decides the work of each thread as it does for OpenBLAS. */
#include "graph/kern.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/cpu_features.h"

/* Primitives kept per thread: a model has a few shapes per layer. */
#define BF16_PRIMS 96

/* A primitive's key: the inputs' type (0 bf16, 1 f32), trans_a,
 * trans_b, m, n, k, lda and ldb (f32 only: the bf16 copies are packed),
 * ldc and beta 0/1. */
#define PRIM_KEY 10

struct bf16_prim {
	int64_t key[PRIM_KEY];
	float alpha;
	dnnl_primitive_t prim;
	dnnl_memory_t a, b, c;
};

struct bf16_thread {
	dnnl_stream_t stream;
	struct bf16_prim prim[BF16_PRIMS];
	int n_prim;		/* used entries; past BF16_PRIMS the oldest
				 * goes (round robin from next) */
	int next;
	uint16_t *buf;		/* bf16 copies of A then B */
	size_t cap;		/* in bf16 values */
	uint16_t *work;		/* dt_kern_bf16_work's area */
	size_t work_cap;	/* in bf16 values */
};

static int bf16_on;
static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static pthread_key_t self_key;	/* frees a thread's state as it ends */
static __thread struct bf16_thread *self;

static void
check(dnnl_status_t st, const char *what)
{
	if (st == dnnl_success)
		return;
	fprintf(stderr, "dtrain: oneDNN: %s failed (status %d)\n", what,
		(int)st);
	abort();
}

/* A thread's primitives, memories, stream and copies, as it ends. */
static void
thread_free(void *arg)
{
	struct bf16_thread *t = arg;

	for (int i = 0; i < t->n_prim; i++) {
		dnnl_primitive_destroy(t->prim[i].prim);
		dnnl_memory_destroy(t->prim[i].a);
		dnnl_memory_destroy(t->prim[i].b);
		dnnl_memory_destroy(t->prim[i].c);
	}
	dnnl_stream_destroy(t->stream);
	free(t->buf);
	free(t->work);
	free(t);
}

static void
engine_init(void)
{
	if (pthread_key_create(&self_key, thread_free) != 0)
		check(dnnl_runtime_error, "thread key");
	/* DTRAIN_CPU=avx512_bf16 on a CPU with AMX keeps oneDNN off AMX,
	 * so that the tests can run the AVX512_BF16 kernels there; and
	 * DTRAIN_CPU=avx2 keeps its f32 products on AVX2 kernels. */
	if (!dt_cpu_has(DT_CPU_AVX512F))
		dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2);
	else if (!dt_cpu_has(DT_CPU_AMX_BF16))
		dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx512_core_bf16);
	check(dnnl_engine_create(&engine, dnnl_cpu, 0), "engine");
}

const char *
dt_kern_bf16_missing(void)
{
	if (dt_cpu_has(DT_CPU_AVX512_BF16) || dt_cpu_has(DT_CPU_AMX_BF16))
		return NULL;
	return "AVX512_BF16 or AMX-BF16";
}

/* parallel.kernels and DTRAIN_KERNELS, in enum dt_kern_lib's order. */
static const char *const lib_names[] = { "auto", "openblas", "onednn" };
static enum dt_kern_lib lib_job;
static int lib_env = -1;	/* DTRAIN_KERNELS's choice; -1: none */
static const char *lib_bad;	/* DTRAIN_KERNELS when it names none */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void
env_read(void)
{
	const char *e = getenv("DTRAIN_KERNELS");

	if (e == NULL || *e == '\0')
		return;
	for (int i = 0; i < 3; i++)
		if (strcmp(e, lib_names[i]) == 0) {
			lib_env = i;
			return;
		}
	lib_bad = e;
}

void
dt_kern_set_lib(enum dt_kern_lib lib)
{
	lib_job = lib;
}

enum dt_kern_lib
dt_kern_lib(void)
{
	pthread_once(&env_once, env_read);
	return lib_env >= 0 ? (enum dt_kern_lib)lib_env : lib_job;
}

const char *
dt_kern_lib_name(enum dt_kern_lib lib)
{
	return (unsigned)lib < 3 ? lib_names[lib] : "?";
}

const char *
dt_kern_lib_env_bad(void)
{
	pthread_once(&env_once, env_read);
	return lib_bad;
}

int
dt_kern_f32_rule(enum dt_kern_lib lib, int conv, int avx512, int fma512,
		 int blas_avx512, int64_t m, int64_t n, int64_t k)
{
	switch (lib) {
	case DT_KERN_LIB_OPENBLAS:
		return 0;
	case DT_KERN_LIB_ONEDNN:
		return 1;
	default:
		break;
	}
	/* auto: measured, bench/README "Kernels" */
	if (!avx512)
		return 0;
	if (!conv)
		return fma512;
	if (!blas_avx512)
		return 1;
	return m >= DT_KERN_ONEDNN_MIN && n >= DT_KERN_ONEDNN_MIN &&
	       k >= DT_KERN_ONEDNN_MIN;
}

int
dt_kern_onednn_conv(void)
{
	switch (dt_kern_lib()) {
	case DT_KERN_LIB_OPENBLAS:
		return 0;
	case DT_KERN_LIB_ONEDNN:
		return 1;
	default:
		if (!dt_cpu_has(DT_CPU_AVX512F))
			return 0;
		return dt_kern_blas_avx512() ? 2 : 1;
	}
}

enum dt_kern_lib
dt_kern_lib_for(enum dt_kern_lib job)
{
	pthread_once(&env_once, env_read);
	return lib_env >= 0 ? (enum dt_kern_lib)lib_env : job;
}

int
dt_kern_onednn_dense_for(enum dt_kern_lib job)
{
	return dt_kern_f32_rule(dt_kern_lib_for(job), 0,
				dt_cpu_has(DT_CPU_AVX512F),
				dt_cpu_fma512_full(NULL, 0), 0, 0, 0, 0);
}

int
dt_kern_onednn_dense(void)
{
	return dt_kern_onednn_dense_for(lib_job);
}

int
dt_kern_onednn_f32(int conv, int64_t m, int64_t n, int64_t k)
{
	int avx512 = dt_cpu_has(DT_CPU_AVX512F);

	return dt_kern_f32_rule(dt_kern_lib(), conv, avx512,
				avx512 && dt_cpu_fma512_full(NULL, 0),
				avx512 && conv && dt_kern_blas_avx512(), m, n,
				k);
}

void
dt_kern_set_bf16(int on)
{
	bf16_on = on;
}

int
dt_kern_bf16(void)
{
	return bf16_on;
}

/* x rounded to the nearest bfloat16, ties to even, as vcvtneps2bf16
 * rounds: a NaN stays a quiet NaN, and a subnormal x (below 2^-126 in
 * magnitude) becomes a zero of its sign, as that instruction takes it
 * (Intel's BF16 specification, document 338302), so that the plain loop
 * and the vector one give the same bits whichever values each gets.
 * Written so that GCC vectorises it. */
static void
to_bf16_c(uint16_t *restrict out, const float *restrict in, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &in[i], sizeof u);
		uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
		uint32_t e = u & 0x7f800000u;

		r = e == 0 ? (u >> 16) & 0x8000u : r;
		out[i] = (u & 0x7fffffffu) > 0x7f800000u ?
			 (uint16_t)((u >> 16) | 0x40u) : (uint16_t)r;
	}
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

/* The same on AVX512_BF16, 16 values an instruction. */
__attribute__((target("avx512f,avx512bf16")))
static void
to_bf16_avx512(uint16_t *out, const float *in, int64_t n)
{
	int64_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));

		_mm256_storeu_si256((__m256i *)(void *)(out + i),
				    (__m256i)h);
	}
	to_bf16_c(out + i, in + i, n - i);
}

static void
to_bf16(uint16_t *out, const float *in, int64_t n)
{
	if (dt_cpu_has(DT_CPU_AVX512_BF16))
		to_bf16_avx512(out, in, n);
	else
		to_bf16_c(out, in, n);
}
#else
#define to_bf16 to_bf16_c
#endif

void
dt_kern_to_bf16(uint16_t *out, const float *in, int64_t rows, int64_t cols,
		int64_t ld)
{
	if (ld == cols) {
		to_bf16(out, in, rows * cols);
		return;
	}
	for (int64_t r = 0; r < rows; r++)
		to_bf16(out + r * cols, in + r * ld, cols);
}

static struct bf16_thread *
thread_state(void)
{
	if (self != NULL)
		return self;
	pthread_once(&engine_once, engine_init);
	self = dt_xcalloc(1, sizeof *self);
	check(dnnl_stream_create(&self->stream, engine,
				 dnnl_stream_default_flags), "stream");
	omp_set_num_threads(1);
	pthread_setspecific(self_key, self);
	return self;
}

/* A 2-D memory descriptor of rows x cols, element strides st. */
static void
desc(dnnl_memory_desc_t *md, int64_t rows, int64_t cols,
     dnnl_data_type_t t, int64_t st0, int64_t st1)
{
	dnnl_dims_t dims = { rows, cols }, strides = { st0, st1 };

	check(dnnl_memory_desc_init_by_strides(md, 2, dims, t, strides),
	      "memory descriptor");
}

/* The primitive for one shape: op(A) (m, k) and op(B) (k, n) in packed
 * bf16, or f32 at their row strides lda and ldb (a transposed operand as
 * stored, by its strides), C float at row stride ldc; alpha an output
 * scale, beta = 1 a sum post-op. */
static void
make(struct bf16_prim *p, const int64_t key[PRIM_KEY], float alpha)
{
	int64_t ta = key[1], tb = key[2], m = key[3], n = key[4], k = key[5];
	int64_t lda = key[0] ? key[6] : ta ? m : k;
	int64_t ldb = key[0] ? key[7] : tb ? k : n;
	dnnl_data_type_t in = key[0] ? dnnl_f32 : dnnl_bf16;
	dnnl_memory_desc_t ad, bd, cd;
	dnnl_matmul_desc_t md;
	dnnl_primitive_attr_t attr;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd;

	desc(&ad, m, k, in, ta ? 1 : lda, ta ? lda : 1);
	desc(&bd, k, n, in, tb ? 1 : ldb, tb ? ldb : 1);
	desc(&cd, m, n, dnnl_f32, key[8], 1);
	check(dnnl_matmul_desc_init(&md, &ad, &bd, NULL, &cd), "matmul");
	check(dnnl_primitive_attr_create(&attr), "attributes");
	if (alpha != 1.0f)
		check(dnnl_primitive_attr_set_output_scales(attr, 1, 0,
							    &alpha), "scale");
	if (key[9]) {
		check(dnnl_post_ops_create(&po), "post-ops");
		check(dnnl_post_ops_append_sum(po, 1.0f), "sum");
		check(dnnl_primitive_attr_set_post_ops(attr, po), "post-ops");
	}
	check(dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL),
	      "matmul descriptor");
	check(dnnl_primitive_create(&p->prim, pd), "matmul primitive");
	check(dnnl_memory_create(&p->a, &ad, engine, DNNL_MEMORY_NONE), "A");
	check(dnnl_memory_create(&p->b, &bd, engine, DNNL_MEMORY_NONE), "B");
	check(dnnl_memory_create(&p->c, &cd, engine, DNNL_MEMORY_NONE), "C");
	dnnl_primitive_desc_destroy(pd);
	dnnl_primitive_attr_destroy(attr);
	if (po != NULL)
		dnnl_post_ops_destroy(po);
	memcpy(p->key, key, sizeof p->key);
	p->alpha = alpha;
}

static struct bf16_prim *
lookup(struct bf16_thread *t, const int64_t key[PRIM_KEY], float alpha)
{
	struct bf16_prim *p;

	for (int i = 0; i < t->n_prim; i++)
		if (memcmp(t->prim[i].key, key, sizeof t->prim[i].key) == 0 &&
		    t->prim[i].alpha == alpha)
			return &t->prim[i];
	if (t->n_prim < BF16_PRIMS) {
		p = &t->prim[t->n_prim++];
	} else {
		p = &t->prim[t->next];
		t->next = (t->next + 1) % BF16_PRIMS;
		dnnl_primitive_destroy(p->prim);
		dnnl_memory_destroy(p->a);
		dnnl_memory_destroy(p->b);
		dnnl_memory_destroy(p->c);
	}
	make(p, key, alpha);
	return p;
}

/* One product on the calling thread: the primitive p on A, B and C. */
static void
run(struct bf16_thread *t, struct bf16_prim *p, const void *a,
    const void *b, float *c)
{
	dnnl_exec_arg_t args[3];

	check(dnnl_memory_set_data_handle(p->a, (void *)a), "A handle");
	check(dnnl_memory_set_data_handle(p->b, (void *)b), "B handle");
	check(dnnl_memory_set_data_handle(p->c, c), "C handle");
	args[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, p->a };
	args[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, p->b };
	args[2] = (dnnl_exec_arg_t){ DNNL_ARG_DST, p->c };
	check(dnnl_primitive_execute(p->prim, t->stream, 3, args), "matmul");
	check(dnnl_stream_wait(t->stream), "stream");
}

void
dt_kern_bf16_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
		   float alpha, const float *a, int64_t lda, const float *b,
		   int64_t ldb, float beta, float *c, int64_t ldc)
{
	struct bf16_thread *t = thread_state();
	size_t need = (size_t)(m * k + k * n);

	if (need > t->cap) {
		free(t->buf);
		t->cap = need;
		t->buf = dt_xmalloc(need, sizeof *t->buf);
	}
	dt_kern_to_bf16(t->buf, a, trans_a ? k : m, trans_a ? m : k, lda);
	dt_kern_to_bf16(t->buf + m * k, b, trans_b ? n : k, trans_b ? k : n,
			ldb);
	dt_kern_bf16_gemm(trans_a, trans_b, m, n, k, alpha, t->buf,
			  t->buf + m * k, beta, c, ldc);
}

void
dt_kern_bf16_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
		  float alpha, const uint16_t *a, const uint16_t *b,
		  float beta, float *c, int64_t ldc)
{
	struct bf16_thread *t = thread_state();
	int64_t key[PRIM_KEY] = { 0, trans_a != 0, trans_b != 0, m, n, k, 0,
				  0, ldc, beta != 0.0f };

	if (beta != 0.0f && beta != 1.0f) {
		/* No caller asks for it; scale C first, then add. */
		for (int64_t i = 0; i < m; i++)
			dt_kern_scale(c + i * ldc, n, beta);
		key[9] = 1;
	}
	run(t, lookup(t, key, alpha), a, b, c);
}

uint16_t *
dt_kern_bf16_work(size_t n)
{
	struct bf16_thread *t = thread_state();

	if (n > t->work_cap) {
		free(t->work);
		t->work_cap = n;
		t->work = dt_xmalloc(n, sizeof *t->work);
	}
	return t->work;
}

/* One oneDNN f32 matmul call (dt_kern_onednn_sgemm's contract). */
static void
onednn_call(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
	    float alpha, const float *a, int64_t lda, const float *b,
	    int64_t ldb, float beta, float *c, int64_t ldc)
{
	struct bf16_thread *t = thread_state();
	int64_t key[PRIM_KEY] = { 1, trans_a != 0, trans_b != 0, m, n, k,
				  lda, ldb, ldc, beta != 0.0f };

	if (beta != 0.0f && beta != 1.0f) {
		for (int64_t i = 0; i < m; i++)
			dt_kern_scale(c + i * ldc, n, beta);
		key[9] = 1;
	}
	run(t, lookup(t, key, alpha), a, b, c);
}

void
dt_kern_onednn_sgemm(int trans_a, int trans_b, int64_t m, int64_t n,
		     int64_t k, float alpha, const float *a, int64_t lda,
		     const float *b, int64_t ldb, float beta, float *c,
		     int64_t ldc)
{
	if (k <= DT_KERN_ONEDNN_KCHUNK) {
		onednn_call(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
			    beta, c, ldc);
		return;
	}
	/* many terms: in chunks of k, C accumulated in k's order */
	for (int64_t k0 = 0; k0 < k; k0 += DT_KERN_ONEDNN_KCHUNK) {
		int64_t kc = k - k0 < DT_KERN_ONEDNN_KCHUNK ?
			     k - k0 : DT_KERN_ONEDNN_KCHUNK;

		onednn_call(trans_a, trans_b, m, n, kc, alpha,
			    trans_a ? a + k0 * lda : a + k0, lda,
			    trans_b ? b + k0 : b + k0 * ldb, ldb,
			    k0 == 0 ? beta : 1.0f, c, ldc);
	}
}

/* One stored operand of a product: rows x cols floats at row stride ld. */
struct bf16_opnd {
	const float *p;
	int64_t rows, cols, ld;
};

/* Operand w (0 A, 1 B) of g as stored. */
static struct bf16_opnd
opnd(const struct dt_kern_gemm *g, int w)
{
	if (w == 0)
		return (struct bf16_opnd){ g->a, g->trans_a ? g->k : g->m,
					   g->trans_a ? g->m : g->k, g->lda };
	return (struct bf16_opnd){ g->b, g->trans_b ? g->n : g->k,
				   g->trans_b ? g->k : g->n, g->ldb };
}

static int
opnd_same(struct bf16_opnd x, struct bf16_opnd y)
{
	return x.p == y.p && x.rows == y.rows && x.cols == y.cols &&
	       x.ld == y.ld;
}

/* Product g on t->buf, its operand shared (0 A, 1 B) rounded at
 * t->buf already, its other one rounded after it. */
static void
pair_one(struct bf16_thread *t, const struct dt_kern_gemm *g, int shared,
	 int64_t s_len)
{
	struct bf16_opnd o = opnd(g, !shared);
	uint16_t *other = t->buf + s_len;

	dt_kern_to_bf16(other, o.p, o.rows, o.cols, o.ld);
	dt_kern_bf16_gemm(g->trans_a, g->trans_b, g->m, g->n, g->k, g->alpha,
			  shared == 0 ? t->buf : other,
			  shared == 0 ? other : t->buf, g->beta, g->c, g->ldc);
}

/* Which operands of g1 and g2 are the same stored matrix: s[0] of g1
 * and s[1] of g2 (0 A, 1 B); 0 where none is. */
static int
pair_shared(const struct dt_kern_gemm *g1, const struct dt_kern_gemm *g2,
	    int s[2])
{
	for (s[0] = 0; s[0] < 2; s[0]++)
		for (s[1] = 0; s[1] < 2; s[1]++)
			if (opnd_same(opnd(g1, s[0]), opnd(g2, s[1])))
				return 1;
	return 0;
}

static int64_t
opnd_len(struct bf16_opnd x)
{
	return x.rows * x.cols;
}

void
dt_kern_bf16_sgemm2(const struct dt_kern_gemm *g1,
		    const struct dt_kern_gemm *g2)
{
	struct bf16_thread *t = thread_state();
	int sh[2];

	if (!pair_shared(g1, g2, sh)) {
		dt_kern_bf16_sgemm(g1->trans_a, g1->trans_b, g1->m, g1->n,
				   g1->k, g1->alpha, g1->a, g1->lda, g1->b,
				   g1->ldb, g1->beta, g1->c, g1->ldc);
		dt_kern_bf16_sgemm(g2->trans_a, g2->trans_b, g2->m, g2->n,
				   g2->k, g2->alpha, g2->a, g2->lda, g2->b,
				   g2->ldb, g2->beta, g2->c, g2->ldc);
		return;
	}
	/* the shared copy, then either product's other operand: at most
	 * what the larger of the two products alone takes */
	const struct bf16_opnd s = opnd(g1, sh[0]);
	const int64_t o1 = opnd_len(opnd(g1, !sh[0]));
	const int64_t o2 = opnd_len(opnd(g2, !sh[1]));
	const size_t need = (size_t)(opnd_len(s) + (o1 > o2 ? o1 : o2));

	if (need > t->cap) {
		free(t->buf);
		t->cap = need;
		t->buf = dt_xmalloc(need, sizeof *t->buf);
	}
	dt_kern_to_bf16(t->buf, s.p, s.rows, s.cols, s.ld);
	pair_one(t, g1, sh[0], opnd_len(s));
	pair_one(t, g2, sh[1], opnd_len(s));
}
