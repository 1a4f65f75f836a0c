/* SPDX-License-Identifier: MIT */
/* kern.h - the kernel seam: every matrix product and every hot loop of the
 * layers goes through the functions declared here, so that another backend
 * (bf16 on AVX-512, a GPU) is one new file behind this header instead of
 * edits in every layer.
 *
 * Today's backend (kern.c) calls OpenBLAS for the products, except the
 * attention heads' small ones (kern_small.c) and those that
 * parallel.kernels sends to oneDNN (kern_bf16.c). Matrices are
 * float32 and row-major throughout, as everywhere in graph/. */
#ifndef DT_GRAPH_KERN_H
#define DT_GRAPH_KERN_H

#include <stddef.h>
#include <stdint.h>

/* C(m, n) = alpha * op(A) op(B) + beta * C, row-major, where op(A) is A
 * (m, k) or, with trans_a, A^T for A stored (k, m); likewise op(B) is B
 * (k, n) or B^T for B stored (n, k). lda/ldb/ldc are the row strides in
 * floats (>= the stored row length), which lets callers work on column or
 * row slices of a larger buffer without copies. beta = 0 overwrites C
 * (its old contents may be NaN); beta = 1 accumulates into it.
 * m, n, k, lda, ldb and ldc must fit in an int (the BLAS interface);
 * callers' shapes come from the plan, which bounds them. Nothing is
 * allocated; no error is possible. Reference: the BLAS sgemm contract
 * (Dongarra et al., "A set of level 3 basic linear algebra subprograms",
 * ACM TOMS 16(1), 1990). */
void dt_kern_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
		   float alpha, const float *a, int64_t lda, const float *b,
		   int64_t ldb, float beta, float *c, int64_t ldc);

/* train.precision: bf16 (kern_bf16.c). With on, every dt_kern_sgemm
 * (and so the dense, convolution and attention projections' products,
 * split over a pool as before, and the attention heads' products that
 * dt_kern_sgemm_small hands on; those it computes itself it takes in
 * bf16 on its own AVX512_BF16 kernel) rounds op(A) and op(B) to bfloat16,
 * nearest even (util/bf16.h), and sums the products in float on oneDNN's
 * matmul (its AVX512_BF16 or AMX kernel, picked by oneDNN from CPUID and
 * kept off AMX where DTRAIN_CPU takes AMX away), one call on one thread;
 * C, alpha and beta stay float. A row of C gets the same bits whichever
 * thread computes it and whichever rows share its call, for a given n
 * and k (measured on this build's kernels: tests/unit/
 * test_graph_kern.c); set once before any product (not thread-safe).
 * Each thread keeps a primitive per shape and bf16 copies of its
 * operands, freed as the thread ends (the main thread's are left to the
 * exit); an error of oneDNN's aborts (none is expected for valid
 * shapes). dt_kern_bf16 says whether it is on.
 * dt_kern_bf16_missing: NULL when the CPU (as DTRAIN_CPU leaves it) has
 * AVX512_BF16 or AMX-BF16, else the name of what is missing, for the
 * refusal of train.precision: bf16. dt_kern_bf16_sgemm: the bf16
 * product itself, dt_kern_sgemm's contract but for alpha = 0, whatever
 * the setting. Reference: Kalamkar et al., "A study of BFLOAT16 for deep
 * learning training", arXiv:1905.12322, 2019. */
void dt_kern_set_bf16(int on);
int dt_kern_bf16(void);
const char *dt_kern_bf16_missing(void);
void dt_kern_bf16_sgemm(int trans_a, int trans_b, int64_t m, int64_t n,
			int64_t k, float alpha, const float *a, int64_t lda,
			const float *b, int64_t ldb, float beta, float *c,
			int64_t ldc);

/* The bf16 product's parts, for a caller that makes its bf16 operands
 * once and uses them in several products (the convolution: its weights
 * once a pass, its columns made in bf16, its output gradient once for
 * two products). dt_kern_to_bf16: out (rows, cols) packed = in (rows,
 * cols) at row stride ld rounded as dt_kern_bf16_sgemm rounds them.
 * dt_kern_bf16_gemm: dt_kern_bf16_sgemm on operands already rounded, a
 * the stored A ((m, k), or (k, m) with trans_a) and b the stored B
 * ((k, n), or (n, k) with trans_b), both packed (row stride their row
 * length); given the copies dt_kern_to_bf16 makes of the same floats
 * it gives dt_kern_bf16_sgemm's bits. dt_kern_bf16_work: the calling
 * thread's own area of at least n bf16 values, which no product uses,
 * grown as asked (its contents then lost) and freed as the thread ends
 * (dt_kern_bf16_sgemm's rule). */
void dt_kern_to_bf16(uint16_t *out, const float *in, int64_t rows,
		     int64_t cols, int64_t ld);
void dt_kern_bf16_gemm(int trans_a, int trans_b, int64_t m, int64_t n,
		       int64_t k, float alpha, const uint16_t *a,
		       const uint16_t *b, float beta, float *c, int64_t ldc);
uint16_t *dt_kern_bf16_work(size_t n);

/* Which library takes the f32 products (parallel.kernels; kern_bf16.c).
 * DT_KERN_LIB_AUTO sends each class of product where it was measured
 * faster with the splits the layouts make keeping their bits (bench/
 * onednn_f32.c, bench/README "Kernels"): the dense and attention
 * projections' products to oneDNN's f32 matmul where the CPU executes
 * 512-bit FMAs at full width (dt_cpu_fma512_full, CPUID: Zen 5's server
 * and desktop parts, AMX Xeons; there oneDNN's AVX-512 kernels beat
 * OpenBLAS's AVX2 ones), to OpenBLAS elsewhere (where AVX-512 runs at
 * half width or DTRAIN_CPU takes it away, the two were measured level
 * and OpenBLAS kept); on a CPU with AVX-512 (as DTRAIN_CPU leaves it)
 * the convolution's products to oneDNN's f32 matmul, all of them where
 * OpenBLAS runs its AVX2 kernels, only those with m, n and k all >=
 * DT_KERN_ONEDNN_MIN where it runs its AVX-512 ones (dt_kern_blas_avx512:
 * there it beat oneDNN on the first layer's 9-term products); every other
 * product to OpenBLAS. DT_KERN_LIB_OPENBLAS and DT_KERN_LIB_ONEDNN send
 * every f32 product to that library (oneDNN kept to AVX2 kernels where
 * DTRAIN_CPU takes AVX-512 away). The environment variable
 * DTRAIN_KERNELS (auto, openblas or onednn; read once) wins over the
 * job's choice, so that tests can force either path; a value that names
 * none is ignored (dt_kern_lib_env_bad names it). bf16
 * (dt_kern_set_bf16) takes precedence over all of it.
 * dt_kern_set_lib: the job's choice, set once before any product (not
 * thread-safe). dt_kern_lib: the choice in force. dt_kern_onednn_conv:
 * where the convolutions go, 0 OpenBLAS, 1 oneDNN, 2 oneDNN for those
 * of DT_KERN_ONEDNN_MIN or more in every dimension. dt_kern_onednn_dense:
 * where the dense and attention projections go, 0 OpenBLAS, 1 oneDNN.
 * dt_kern_onednn_f32: whether a product (m, n, k) of class conv (1: a
 * convolution's, 0: any other) goes to oneDNN in f32.
 * dt_kern_f32_rule: the same as a pure function of the choice, the CPU
 * (avx512: AVX-512F allowed; fma512: dt_cpu_fma512_full; blas_avx512:
 * dt_kern_blas_avx512) and the shape, for tests. dt_kern_blas_avx512:
 * whether OpenBLAS runs its AVX-512 kernels (SkylakeX, Cooperlake,
 * SapphireRapids by openblas_get_corename). All thread-safe but
 * dt_kern_set_lib. */
#define DT_KERN_ONEDNN_MIN 32
#define DT_KERN_ONEDNN_KCHUNK 256

enum dt_kern_lib {
	DT_KERN_LIB_AUTO = 0,
	DT_KERN_LIB_OPENBLAS,
	DT_KERN_LIB_ONEDNN,
};
void dt_kern_set_lib(enum dt_kern_lib lib);
enum dt_kern_lib dt_kern_lib(void);
const char *dt_kern_lib_name(enum dt_kern_lib lib);
const char *dt_kern_lib_env_bad(void);
int dt_kern_onednn_conv(void);
int dt_kern_onednn_dense(void);
/* The same two for a job's choice job (parallel.kernels) before
 * dt_kern_set_lib, for plans: the choice in force (DTRAIN_KERNELS's
 * when set, else job), and where the dense and attention projections
 * go under it (0 OpenBLAS, 1 oneDNN), as a run with that choice sends
 * them. Thread-safe. */
enum dt_kern_lib dt_kern_lib_for(enum dt_kern_lib job);
int dt_kern_onednn_dense_for(enum dt_kern_lib job);
int dt_kern_onednn_f32(int conv, int64_t m, int64_t n, int64_t k);
int dt_kern_f32_rule(enum dt_kern_lib lib, int conv, int avx512, int fma512,
		     int blas_avx512, int64_t m, int64_t n, int64_t k);
int dt_kern_blas_avx512(void);

/* dt_kern_sgemm's contract on oneDNN's f32 matmul, whatever the
 * settings: one call on the calling thread (a primitive per shape and
 * strides kept per thread, as dt_kern_bf16_sgemm keeps them), A, B and C
 * used in place at their strides; a product of more than
 * DT_KERN_ONEDNN_KCHUNK terms as one call per DT_KERN_ONEDNN_KCHUNK of
 * them in k's order, each after the first adding to C (beta 1): at 512
 * terms and more oneDNN 2.6 sums a row of A^T B in an order that depends
 * on how many rows the call has (bench/README, "Kernels"), and of A B
 * (k 600) in one that depends on the leading dimensions
 * (test_graph_kern's test_sgemm_ld), at 256 and fewer neither was seen,
 * so the thread pool's cut of the rows and the tensor-parallel slices'
 * strides would change the bits. Its bits are its own
 * (another order of the sums than OpenBLAS's), the same run after run
 * for a CPU kind; a row of C gets the same bits computed alone or with
 * others for the shapes measured so (bench/onednn_f32.c; the layouts'
 * tests keep them). Reference: oneDNN's matmul
 * primitive (oneDNN 2.6 developer guide, "Matrix Multiplication"). */
void dt_kern_onednn_sgemm(int trans_a, int trans_b, int64_t m, int64_t n,
			  int64_t k, float alpha, const float *a, int64_t lda,
			  const float *b, int64_t ldb, float beta, float *c,
			  int64_t ldc);

/* dt_kern_sgemm for a convolution's products (conv2d.c): on oneDNN or
 * OpenBLAS as dt_kern_onednn_f32(1, m, n, k) says, else the same
 * contract. */
void dt_kern_conv_sgemm(int trans_a, int trans_b, int64_t m, int64_t n,
			int64_t k, float alpha, const float *a, int64_t lda,
			const float *b, int64_t ldb, float beta, float *c,
			int64_t ldc);

/* dt_kern_sgemm for the small products of one attention head (kern_small.c):
 * the same contract, computed by dtrain's own register-blocked kernel
 * without calling the BLAS when dt_kern_small_fits(n, k), by
 * dt_kern_sgemm otherwise. op(B) is packed into a panel on the stack (at
 * most 32 KiB); nothing is allocated and no lock is taken, so threads may
 * call it at once at no cost to each other. Each element of C is one sum
 * of its k terms in index order, then times alpha (plus beta times C):
 * fused multiply-adds on x86-64 processors with AVX2 and FMA (in a GCC
 * build), a multiply and an add on others and in other builds, so its
 * bits depend on the processor class and on the element's row of op(A)
 * and column of op(B), never on m, n or which rows or columns share a
 * call. With train.precision: bf16 (dt_kern_set_bf16) on a CPU with
 * AVX512_BF16 it rounds op(A) and op(B) to bfloat16 and sums pairs of
 * products in float (vdpbf16ps), each element still one chain over k in
 * index order, so the same holds (kern_small.c; 56 KiB more of stack;
 * kern_paths.h's dt_kern_small_bf16 says which). alpha = 0 and k = 0 go to dt_kern_sgemm, which then reads neither
 * A nor B. At the char-GPT job's shapes (16 x 64 x 32
 * and smaller) one call took 0.7x to 1.05x the time of OpenBLAS's on one
 * thread (2026-12-05, Haswell kernels); with two threads it spares them
 * OpenBLAS's allocator lock, which they otherwise meet thousands of times
 * a micro-batch. */
void dt_kern_sgemm_small(int trans_a, int trans_b, int64_t m, int64_t n,
			 int64_t k, float alpha, const float *a, int64_t lda,
			 const float *b, int64_t ldb, float beta, float *c,
			 int64_t ldc);

/* Whether dt_kern_sgemm_small computes a product with n columns and k
 * terms itself (its panel of op(B), n rounded up to 16 by k, fits 8192
 * floats), rather than handing it to dt_kern_sgemm. */
int dt_kern_small_fits(int64_t n, int64_t k);

/* With on, dt_kern_sgemm_small runs its plain C path (a multiply and an
 * add per term) even where AVX2 and FMA are present, so that the tests
 * check the path other processors take. For tests: not to be called
 * while any thread may be making a product. */
void dt_kern_small_set_generic(int on);

/* The same product for a grid of n_outer x n_inner independent matrices
 * of one shape, e.g. every (sample, head) of an attention layer: for o in
 * [0, n_outer) and i in [0, n_inner), the matrices are a + o*sa[0] +
 * i*sa[1], b + o*sb[0] + i*sb[1] and c + o*sc[0] + i*sc[1] (strides in
 * floats), each with the lda/ldb/ldc of dt_kern_sgemm. The products run in
 * grid order, each computing exactly what dt_kern_sgemm would alone, so a
 * backend may run them in any order or at once but must give those bits.
 * The C matrices must not overlap each other, nor any A or B. Nothing is
 * allocated. */
void dt_kern_sgemm_grid(int trans_a, int trans_b, int64_t m, int64_t n,
			int64_t k, float alpha, const float *a, int64_t lda,
			const int64_t sa[2], const float *b, int64_t ldb,
			const int64_t sb[2], float beta, float *c,
			int64_t ldc, const int64_t sc[2], int64_t n_outer,
			int64_t n_inner);

/* The hot loops of the transformer layers. Each is a plain C loop the
 * compiler turns into SIMD code, built twice on x86-64 with glibc (the
 * baseline and an AVX2 clone without FMA, picked when the program loads,
 * as optim.c's Adam): nothing is contracted into an FMA and every sum runs
 * in 8 fixed lanes added in a fixed order, so both clones, and any number
 * of ranks or threads, give the same bits. No function allocates or
 * fails; n >= 0 everywhere, and no input overlaps an output. */

/* x[i] = e^x[i] for i in [0, n), in place. The argument is
 * clamped to [-87, 87] (beyond it the result saturates at e^-87 = 1.6e-38
 * or e^87 = 6.1e37 instead of flushing to 0 or overflowing); NaN stays
 * NaN and +-inf give NaN. Error below 1.5 ulp over [-87, 87]: Cody-Waite
 * reduction x = n ln2 + r, |r| <= ln2/2, and the degree-7 polynomial of
 * Cephes' expf (S. L. Moshier, Cephes Math Library, 1992) for e^r. */
void dt_kern_exp(float *x, int64_t n);

/* The softmax of x (n > 0 values) in place: x = e^(x - max x) / sum.
 * Returns the sum of e^(x - max x) (>= 1) and sets *max (when not NULL)
 * to max x, from which log-sum-exp = max + log(sum). */
float dt_kern_softmax(float *x, int64_t n, float *max);

/* The largest of x[0..n), n > 0 (NaN values are passed over, as by
 * fmaxf). Exact: the same value in any order. */
float dt_kern_max(const float *x, int64_t n);

/* x[i] *= s over n values. */
void dt_kern_scale(float *x, int64_t n, float s);

/* The softmax's vector-Jacobian product in place, scaled: d = scale * y *
 * (d - sum(y * d)) over n values, y the softmax output and d its output
 * gradient on entry (y and d do not overlap). */
void dt_kern_softmax_grad(const float *y, float *d, int64_t n, float scale);

/* The sum of a[i] * b[i] over [0, n), in 8 lanes. */
float dt_kern_dot(const float *a, const float *b, int64_t n);

/* GELU in the tanh approximation (Hendrycks & Gimpel, "Gaussian Error
 * Linear Units (GELUs)", 2016), written as x * sigmoid(2u) =
 * x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3), which equals
 * x/2 (1 + tanh u) and needs one exp. y[i] = gelu(x[i]) over n values. */
void dt_kern_gelu(const float *x, float *y, int64_t n);

/* dx[i] = gelu'(x[i]) dy[i] over n values, or dx[i] += that with add,
 * the derivative of dt_kern_gelu's formula: s + 2 x s (1 - s) u' with s =
 * sigmoid(2u), u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2). */
void dt_kern_gelu_grad(const float *x, const float *dy, float *dx, int64_t n,
		       int add);

/* Layer normalisation of rows rows of c features (Ba et al., 2016):
 * y = gain * (x - mean) * rstd + bias per row, with the row's mean and
 * rstd = 1 / sqrt(var + eps) (biased variance, two passes) stored in
 * mean[r] and rstd[r]. x (rows, c), y (rows, c), gain and bias (c). */
void dt_kern_layernorm(const float *x, const float *gain, const float *bias,
		       float *y, float *mean, float *rstd, int64_t rows,
		       int64_t c, float eps);

/* Its gradient (llm.c's layernorm_backward), from the saved statistics:
 * dgain += sum over rows of dy * xhat, dbias += sum over rows of dy, and
 * when dx is not NULL dx = (or += with add) rstd * (gain * dy - mean(gain
 * * dy) - xhat * mean(gain * dy * xhat)), xhat = (x - mean) * rstd.
 * x, dy, dx (rows, c); gain, dgain, dbias (c); mean, rstd (rows). */
void dt_kern_layernorm_grad(const float *x, const float *dy,
			    const float *gain, const float *mean,
			    const float *rstd, float *dx, int add,
			    float *dgain, float *dbias, int64_t rows,
			    int64_t c);

/* y[i] = a[i] + b[i] over n values. */
void dt_kern_add(const float *a, const float *b, float *y, int64_t n);

/* y[i] += x[i] over n values. */
void dt_kern_acc(const float *x, float *y, int64_t n);

/* y[i] = x[i] * s[i] (or y[i] += that with add) over n values. */
void dt_kern_mul(const float *x, const float *s, float *y, int64_t n,
		 int add);

/* The convolution layer's loops (conv2d.c), one (C, H, W) sample at a
 * time. A square kernel K at stride S with zero padding P on every side:
 * oh = (h + 2P - K)/S + 1, likewise ow (the caller checks they are >= 1
 * and that the shapes fit in an int). */
struct dt_kern_conv {
	int64_t c, h, w;	/* input channels and size */
	int64_t k, s, pad;	/* kernel, stride, padding */
	int64_t oh, ow;		/* output size */
};

/* The columns of one sample (Chellapilla et al. 2006; Caffe's im2col):
 * col (C*K*K, oh*ow) at row stride ld >= oh*ow (so that the columns of
 * several samples can lie side by side), row r = (c, kh, kw), entry
 * (oh, ow) holding x[c, oh*S - P + kh, ow*S - P + kw], 0 in the padding;
 * x (C, H, W). Exact copies: every geometry gives the same values. */
void dt_kern_im2col(const struct dt_kern_conv *g, const float *x, float *col,
		    int64_t ld);

/* The inverse scatter: dx (C, H, W) = (or += with add) the columns col
 * (C*K*K, oh*ow), row stride ld, added back where im2col took them from,
 * the rows r in order for every element (padding entries are dropped).
 * col is scratch: its padding entries are set to 0 on the way. */
void dt_kern_col2im(const struct dt_kern_conv *g, float *col, int64_t ld,
		    float *dx, int add);

/* y (rows, n) in place: y[r][i] = y[r][i] + bias[r] (bias NULL: + 0),
 * then with relu max(0, that), a convolution's epilogue. */
void dt_kern_bias_act(float *y, const float *bias, int64_t rows, int64_t n,
		      int relu);

/* db[r] = (or += with add) the sum of row r of x (rows, n), in 8 lanes
 * as every sum of this header: a bias gradient. */
void dt_kern_row_sums(const float *x, float *db, int add, int64_t rows,
		      int64_t n);

/* One sample's output gradient dy (rows, n) into rows of t at row stride
 * ld >= n: t[r*ld + i] = dy[r*n + i], or with y (rows, n) not NULL, y > 0
 * ? dy : 0 (the relu gradient fused in). */
void dt_kern_gather_rows(const float *y, const float *dy, float *t,
			 int64_t ld, int64_t rows, int64_t n);

/* 2x2 max pooling at stride 2 without padding of planes planes (h, w),
 * plane p at x + p*xs: y (planes, h/2, w/2), and arg (planes, h/2, w/2)
 * the index of each maximum in its sample, at + p*h*w + its offset in
 * the plane (at: the first plane's place in the sample). The four
 * candidates are taken row by row, left to right, and the first maximum
 * wins (a later one must be greater), as pooling.c's general loop does. */
void dt_kern_maxpool2(const float *x, int64_t xs, float *y, int32_t *arg,
		      int64_t planes, int64_t h, int64_t w, int32_t at);

/* The gradient of max pooling after a relu, for one sample of planes
 * planes of plane inputs each: plane p of dx (at dx + p*ld, plane floats)
 * is 0 except at arg[i] - p*plane, which gets y[i] > 0 ? dy[i] + 0 : 0
 * (+ 0: a -0 gradient arrives as +0, as max pooling's 0 + dy gives), for
 * plane p's n_out/planes outputs i (y the pooled relu outputs, arg their
 * argmax in the sample, as dt_kern_maxpool2 gives them; windows do not
 * overlap, so no two i share an arg). */
void dt_kern_unpool_relu(const float *dy, const float *y, const int32_t *arg,
			 float *dx, int64_t ld, int64_t n_out, int64_t planes,
			 int64_t plane);

/* The same loops split over a thread pool (util/threadpool.h; NULL: the
 * calling thread alone), in parts fixed by n and the pool size. None of
 * them sums across elements (each output element gets exactly the
 * arithmetic of the serial loop above, in the same order), so every pool
 * size gives the bits of the serial loop. Elementwise loops go in blocks
 * of DT_KERN_BLOCK values; the row loops (layer normalisation) by rows;
 * the column sums and the layer-normalisation parameter gradients by
 * columns, each column summed over the rows in row order. Nothing is
 * allocated. */
#define DT_KERN_BLOCK 4096

struct dt_pool;

/* y[i] = a[i] + b[i] over n values (dt_kern_add). */
void dt_kern_par_add(struct dt_pool *pool, const float *a, const float *b,
		     float *y, int64_t n);

/* y[i] += x[i] over n values (dt_kern_acc). */
void dt_kern_par_acc(struct dt_pool *pool, const float *x, float *y,
		     int64_t n);

/* y[i] = x[i] * s[i], or += with add, over n values (dt_kern_mul). */
void dt_kern_par_mul(struct dt_pool *pool, const float *x, const float *s,
		     float *y, int64_t n, int add);

/* y[i] = x[i] over n values (memcpy), or y[i] = 0 when x is NULL. */
void dt_kern_par_copy(struct dt_pool *pool, const float *x, float *y,
		      int64_t n);

/* The passes of exact gradient accumulation (train/sync.c), split over
 * the pool in blocks of DT_KERN_BLOCK values; each value is computed as
 * on one thread, so every pool size gives the same bits.
 * dt_kern_par_f64_add: acc[i] += (double)g[i] over n values, and then
 * g[i] = 0 when zero_g. dt_kern_par_f64_round: g[i] = (float)acc[i]
 * (round to nearest). dt_kern_par_f64_zero: acc[i] = 0. g (n) floats,
 * acc (n) doubles, both the caller's. */
void dt_kern_par_f64_add(struct dt_pool *pool, float *g, double *acc,
			 int64_t n, int zero_g);
void dt_kern_par_f64_round(struct dt_pool *pool, const double *acc, float *g,
			   int64_t n);
void dt_kern_par_f64_zero(struct dt_pool *pool, double *acc, int64_t n);

/* The rows at whose multiples dt_kern_par_sgemm cuts a product: where
 * OpenBLAS's one-thread sgemm, as it runs on this processor
 * (openblas_get_corename), computes a row the same way whatever rows
 * share its call. OpenBLAS 0.3.21's Haswell kernels (Haswell, Zen) give
 * other bits for a 512-row product cut at row 256, 128 or 16, and the
 * same bits cut at any multiple of 12; its SkylakeX kernels (SkylakeX,
 * Cooperlake, also what it runs on Sapphire Rapids) at any multiple of
 * 16 (measured 2026-12-05). 12 or 16 for those, 48 (both) for any
 * other core. */
int64_t dt_kern_gemm_align(void);

/* Sets the hook that a product of dt_kern_par_sgemm on a NULL or one-
 * thread pool calls, as fn(ctx) on the calling thread, between the parts
 * it is then cut into: p = min(floor(m * n * k / 2^24), floor(m / 256))
 * parts (2^24 multiply-adds and 256 rows of C at least each, since each
 * part packs op(B) again; at most one per block of dt_kern_gemm_align()
 * rows), so it is called p - 1 times where p > 1. The parts are cut at
 * blocks, as the pool's threads cut it, so the bits are those of one
 * call. Where OpenBLAS runs on more than one thread of its own (it
 * splits a call's rows where its blocks need not fall) there is one
 * part and no call; the trainer gives it the pool's count. The
 * trainer uses it to move the gradient sums on during the long products
 * of backward (train/exec.c). fn must not call the kernels; NULL fn
 * removes the hook. One hook for the process: set and called on the
 * thread that runs the products. */
void dt_kern_set_progress(void (*fn)(void *ctx), void *ctx);

/* dt_kern_sgemm with the rows of C split over the pool: C's rows are cut
 * into blocks of dt_kern_gemm_align() rows (the last may be shorter),
 * and part t of the pool gets blocks [nb*t/p, nb*(t+1)/p) of the nb,
 * with p = min(threads, ceil(m / 32)); each part is one dt_kern_sgemm on
 * the matching rows of op(A), run on one BLAS thread (the BLAS thread
 * count is put back afterwards). Nothing is summed across parts: each
 * element of C is one BLAS dot product over all of k. That a row of C
 * gets the same bits whichever rows share its call is a property of the
 * BLAS, not of this split, and it holds only for calls cut where the
 * kernel's register block of rows starts again (dt_kern_gemm_align), so
 * every pool size gives the bits of one unsplit one-thread call
 * (tests/unit/test_graph_threads.c checks the shipped jobs' shapes). A
 * NULL or one-thread pool makes the one call, on the BLAS threads as
 * set. */
void dt_kern_par_sgemm(struct dt_pool *pool, int trans_a, int trans_b,
		       int64_t m, int64_t n, int64_t k, float alpha,
		       const float *a, int64_t lda, const float *b,
		       int64_t ldb, float beta, float *c, int64_t ldc);

/* One product of dt_kern_par_sgemm2, with dt_kern_sgemm's arguments. */
struct dt_kern_gemm {
	int trans_a, trans_b;
	int64_t m, n, k;
	float alpha;
	const float *a;
	int64_t lda;
	const float *b;
	int64_t ldb;
	float beta;
	float *c;
	int64_t ldc;
};

/* Two independent products at once, as a layer's backward makes its
 * weight gradient and its input gradient: neither's C may overlap the
 * other's A, B or C. The pool's threads are shared in proportion to the
 * products' multiply-adds (at least one each), and each product's rows
 * are cut among its threads at multiples of dt_kern_gemm_align() rows,
 * as dt_kern_par_sgemm cuts them (not always at the same rows), so every
 * element gets the bits dt_kern_par_sgemm(g1) then dt_kern_par_sgemm(g2)
 * give on one thread; on two threads each product is one unsplit call,
 * neither packs the other's operands, and the two run in one pass of
 * the pool. A NULL or one-thread pool runs them in turn (so there g2's
 * C may overlap g1's A or B), in bf16 through dt_kern_bf16_sgemm2 where
 * no progress hook cuts either. */
void dt_kern_par_sgemm2(struct dt_pool *pool, const struct dt_kern_gemm *g1,
			const struct dt_kern_gemm *g2);

/* g1 then g2 on the calling thread in bf16 (dt_kern_bf16_sgemm each),
 * an operand that both read (the same pointer, stored shape and row
 * stride: a dense layer's output gradient, the A or B of its weight
 * gradient and the A of its input gradient) rounded once for both, so
 * the bits are those of the two dt_kern_bf16_sgemm calls. Both products
 * have m, n, k > 0 and alpha != 0; g1's C overlaps no operand of g2
 * (g2's C may overlap g1's operands: g2 is rounded and run last).
 * The copies live in the thread's dt_kern_bf16_sgemm area, grown to the
 * shared operand plus the larger other one: no more than the larger
 * product alone takes. kern_bf16.c. */
void dt_kern_bf16_sgemm2(const struct dt_kern_gemm *g1,
			 const struct dt_kern_gemm *g2);

/* Row r of y (rows, n) = b (n), for every r: a bias broadcast. */
void dt_kern_par_broadcast(struct dt_pool *pool, const float *b, float *y,
			   int64_t rows, int64_t n);

/* db[j] += dy[r * ld + j], for r = 0, 1, ..., rows - 1 in that order,
 * for each of the cols columns: the column sums of dy (rows, cols) at
 * row stride ld, added to db (cols). */
void dt_kern_par_col_sums(struct dt_pool *pool, const float *dy, int64_t ld,
			  float *db, int64_t rows, int64_t cols);

/* dt_kern_layernorm split by rows. */
void dt_kern_par_layernorm(struct dt_pool *pool, const float *x,
			   const float *gain, const float *bias, float *y,
			   float *mean, float *rstd, int64_t rows, int64_t c,
			   float eps);

/* dt_kern_layernorm_grad in two loops: dx by rows, then dgain and dbias
 * by columns (each column's rows in order, as the serial kernel adds
 * them), which gives its bits. */
void dt_kern_par_layernorm_grad(struct dt_pool *pool, const float *x,
				const float *dy, const float *gain,
				const float *mean, const float *rstd,
				float *dx, int add, float *dgain,
				float *dbias, int64_t rows, int64_t c);

/* Sets the threads the BLAS runs the following products on (n >= 1) and
 * returns the count before, so that a caller that runs products inside
 * threads of its own can have each run on its calling thread alone and
 * then put the count back. One thread at a time may call it. */
int dt_kern_set_threads(int n);

#endif
