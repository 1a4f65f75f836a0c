/* SPDX-License-Identifier: MIT */
/* attention.c - multi-head self-attention with its input and output
 * projections (Vaswani et al., "Attention Is All You Need", NIPS 2017), in
 * GPT-2's layout (Radford et al., 2019; llm.c's attention_forward and
 * attention_backward follow the same steps).
 *
 * The input is (T, C) per sample; heads h divides C, hs = C / h. Weights
 * are (in, out) row-major as in dense.c:
 *   qkv_weight (C, 3C), qkv_bias (3C)    columns [q | k | v], each C wide,
 *                                        head j in columns j*hs..(j+1)*hs-1
 *   proj_weight (C, C), proj_bias (C)    the biases only with spec.bias
 * Forward, for a micro-batch of B samples:
 *   qkv (B*T, 3C) = x (B*T, C) qkv_weight + qkv_bias        one sgemm
 *   per (sample, head):
 *     s (T, T)    = q k^T / sqrt(hs)                         sgemm
 *     s[i][j]     = -inf for j > i when spec.causal (a future position)
 *     att (T, T)  = softmax of each row of s
 *     y_h (T, hs) = att v, written into y (T, C) at columns of head j
 *   out (B*T, C) = y proj_weight + proj_bias                 one sgemm
 * Backward runs the same steps in reverse, all products through sgemm:
 *   dproj_weight += y^T dout, dy = dout proj_weight^T; per (sample, head)
 *   datt = dy_h v^T, dv = att^T dy_h, ds = att * (datt - rowsum(att *
 *   datt)) / sqrt(hs) (the softmax Jacobian; masked entries have att = 0
 *   and get no gradient), dq = ds k, dk = ds^T q; then dqkv_weight +=
 *   x^T dqkv and dx = dqkv qkv_weight^T.
 * The products go through the kernel seam (kern.h): the projections
 * through dt_kern_par_sgemm (OpenBLAS or oneDNN, split by rows over the
 * pool), the per-head ones through dt_kern_sgemm_small (dtrain's own
 * kernel, no library call for each of a micro-batch's thousands of
 * small products);
 * the softmax and its Jacobian product through its vectorised loops. Under the causal mask
 * the per-head products run in tiles of ATTN_TILE rows (or, for dv and
 * dk, columns) that leave out the blocks above the diagonal: at T = 64,
 * 10 of the 16 blocks of 16 x 16. Every head is computed alone and the
 * same way under any split of the heads or the batch, so the bits do not
 * depend on the layout.
 *
 * Scratch, floats per sample (all saved by forward for backward, or used by
 * backward in place):
 *   qkv  3*T*C   q, k, v; backward overwrites them with dq, dk, dv
 *   att  h*T*T   the attention probabilities, usually the largest part
 *                (GPT-2 small at T = 1024: 12.6M floats per sample)
 *   y    T*C     the heads concatenated; backward reuses it for dy and dq
 *   ds   T*T     backward's score gradient for one head at a time
 * in all 4*T*C + (h+1)*T*T, besides the output and its gradient.
 * With model.recompute: attention (n->recompute) the scratch keeps qkv
 * and y only, 4*T*C, and att and ds move to n->work, one head's (T, T)
 * each per sample, shared by every attention node and micro-batch:
 * forward makes each head's probabilities there for y alone, and
 * backward makes them again, head by head, just before that head's
 * backward, through the same tile_probs on the same q and k, so the
 * bits are those without recompute. That adds the scores and softmax,
 * 2*T*T*C + 5*h*T*T FLOPs per sample (recompute_flops).
 * With model.attention: fused (n->attn_fused) the heads run in flash.c's
 * tiles with an online softmax and the scratch per sample holds qkv,
 * y, dy (backward's gradient of y, beside y, which the fused backward
 * reads), lse (h, T), each row's log-sum-exp, D (T) and a tile buffer
 * of 2*DT_FLASH_TILE*hs: 5*T*C + (h+1)*T + 2*DT_FLASH_TILE*hs, no T*T
 * term; model.recompute: attention then changes nothing, and backward
 * adds the same recompute_flops as it (FlashAttention-2, flash.c).
 *
 * FLOPs per sample, nominal: the full T x T matrices even with the causal
 * mask (the tiles compute 10/16 of them at T = 64), so plans and
 * throughput figures count the same work as before the tiles:
 *   projections 2*T*C*3C + 2*T*C*C, biases 3*T*C + T*C (with bias),
 *   scores 2*T*T*C, softmax 5*h*T*T (max, subtract, exp, sum, divide, as
 *   softmax_xent.c counts), weighted sum 2*T*T*C.
 * Init: weights N(0, 0.02^2) and biases 0, as GPT-2; model.init: gpt2
 * also scales proj_weight by 1/sqrt(2 * blocks) when the output is added
 * into a residual stream (graph/init.c), and the job's init may name
 * another rule for both weights.
 *
 * Tensor parallelism by heads (DT_TP_HEADS, layer.h; Megatron-LM's
 * attention): rank r of s runs heads [r*h/s, (r+1)*h/s), whose q, k and v
 * are the columns [r*C/s, (r+1)*C/s) of each third of qkv and whose part of
 * y meets the same rows of proj_weight. Forward computes only those qkv
 * columns (three sgemms on slices of qkv_weight), the heads, and a partial
 * y[:, share] proj_weight[share, :], summed over the group before the
 * (replicated) proj_bias is added; backward gives dproj_weight's rows and
 * dqkv_weight's and dqkv_bias's columns of the share, the whole
 * dproj_bias, and a partial dx summed over the group. The other columns
 * of the scratch are left as they are and never read. FLOPs count one
 * rank's share: everything but the proj bias over s.
 * With the node's tp_own (dt_model_tp_own_slices; dt_node_tp_block gives
 * the blocks) the split tensors are this rank's blocks: qkv_weight a
 * (C, 3C/s) block [q_r | k_r | v_r], each third cl = C/s wide, read with
 * ld 3cl at column part*cl (whole: ld 3C at part*C + c0), qkv_bias the
 * same (3C/s), proj_weight the share's rows as a (C/s, C) block at 0
 * (whole: at row c0); proj_bias stays whole. The scratch keeps its whole
 * layout (qkv (T, 3C), y (T, C), the share's columns used), so the heads
 * run as before, and the projections are the same products with other
 * leading dimensions and offsets, whose bits do not depend on them
 * (test_graph_kern.c, test_sgemm_ld; tests/unit/test_graph_tp.c holds
 * the blocks to the whole tensors' bits, f32 and bf16). */
#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/flash.h"
#include "graph/kern.h"
#include "graph/layer.h"
#include "util/alloc.h"
#include "util/threadpool.h"

#define ATTENTION_INIT_STD 0.02f

/* The node's tensors by role; the biases are NULL without spec.bias. */
struct attn_params {
	struct dt_param_tensor *w_qkv, *b_qkv, *w_proj, *b_proj;
};

static struct attn_params
attn_params(struct dt_node *n)
{
	struct attn_params a;

	if (n->spec.bias) {
		a.w_qkv = &n->tensor[0];
		a.b_qkv = &n->tensor[1];
		a.w_proj = &n->tensor[2];
		a.b_proj = &n->tensor[3];
	} else {
		a.w_qkv = &n->tensor[0];
		a.b_qkv = NULL;
		a.w_proj = &n->tensor[1];
		a.b_proj = NULL;
	}
	return a;
}

static int64_t
attn_scratch(int64_t t, int64_t c, int64_t heads, bool recompute,
	     bool fused)
{
	if (fused)
		return 5 * t * c + (heads + 1) * t +
		       2 * DT_FLASH_TILE * (c / heads);
	return recompute ? 4 * t * c : 4 * t * c + (heads + 1) * t * t;
}

static enum dt_status
attention_infer(struct dt_node *n, const struct dt_job *job,
		struct dt_error *err)
{
	const struct dt_shape *in = &n->in_shape[0];
	int64_t t, c, heads = n->spec.heads, tt, big;
	int k = 0;

	if (in->n_dims != 2)
		return dt_node_errorf(n, job, err,
				      "attention needs a (T, C) input, found "
				      "%d axes", in->n_dims);
	t = in->dim[0];
	c = in->dim[1];
	if (heads < 1 || heads > c || c % heads != 0)
		return dt_node_errorf(n, job, err,
				      "heads must be >= 1 and divide the "
				      "input width %lld, found %lld",
				      (long long)c, (long long)heads);
	/* BLAS sizes are int: the widest matrix is qkv (3C columns); the
	 * per-sample scratch must stay countable. */
	if (c > INT_MAX / 3 ||
	    __builtin_mul_overflow(t, t, &tt) ||
	    __builtin_mul_overflow(tt, heads + 1, &big) ||
	    big > INT64_MAX / 4 - 4 * t * c)
		return dt_node_errorf(n, job, err,
				      "attention over %lld positions of width "
				      "%lld is too large", (long long)t,
				      (long long)c);
	n->out_shape = *in;
	n->tensor[k++] = (struct dt_param_tensor){
		.name = "qkv_weight", .n_dims = 2, .shape = { c, 3 * c },
		.init = DT_INIT_NORMAL, .std = ATTENTION_INIT_STD,
		.fan_in = c, .fan_out = 3 * c,
	};
	if (n->spec.bias)
		n->tensor[k++] = (struct dt_param_tensor){
			.name = "qkv_bias", .n_dims = 1, .shape = { 3 * c },
			.init = DT_INIT_ZERO,
		};
	n->tensor[k++] = (struct dt_param_tensor){
		.name = "proj_weight", .n_dims = 2, .shape = { c, c },
		.init = DT_INIT_NORMAL, .std = ATTENTION_INIT_STD,
		.fan_in = c, .fan_out = c, .out_proj = true,
	};
	if (n->spec.bias)
		n->tensor[k++] = (struct dt_param_tensor){
			.name = "proj_bias", .n_dims = 1, .shape = { c },
			.init = DT_INIT_ZERO,
		};
	n->n_tensors = k;
	return DT_OK;
}

/* The tensor group n runs its share of heads in, or NULL when it runs
 * whole. */
static const struct dt_tp *
attn_group(const struct dt_node *n, const struct dt_pass *p)
{
	if (p->tp == NULL || n->tp_size <= 1 || n->tp_mode != DT_TP_HEADS) {
		assert(!n->tp_own);	/* a block cannot run whole */
		return NULL;
	}
	assert(p->tp->size == n->tp_size && n->spec.heads % n->tp_size == 0);
	return p->tp;
}

/* Where the share's columns of third `part` (0 q, 1 k, 2 v) start in
 * qkv_weight's rows and in qkv_bias: at part*C + c0 of the whole tensors,
 * at part*cl of the node's own block (tp_own, [q_r | k_r | v_r]). */
static size_t
qkv_at(const struct dt_node *n, int part, int c, int c0, int cl)
{
	return n->tp_own ? (size_t)part * (size_t)cl
			 : (size_t)part * (size_t)c + (size_t)c0;
}

/* qkv_weight's row stride: 3C whole, 3cl as the node's own block. */
static int
qkv_ld(const struct dt_node *n, int c, int cl)
{
	return n->tp_own ? 3 * cl : 3 * c;
}

/* Where the share's rows [c0, c0 + cl) of proj_weight start: c0 rows of C
 * into the whole tensor, 0 into the node's own block. */
static size_t
proj_at(const struct dt_node *n, int c, int c0)
{
	return n->tp_own ? 0 : (size_t)c0 * (size_t)c;
}

/* Y (rows, cols) = X (rows, inner) W (inner, cols) + b, b may be NULL;
 * the bias broadcast on the pool. */
static void
affine(struct dt_pool *pool, const float *x, const float *w, const float *b,
       float *y, int rows, int inner, int cols)
{
	if (b != NULL)
		dt_kern_par_broadcast(pool, b, y, rows, cols);
	dt_kern_par_sgemm(pool, 0, 0, rows, cols,
		    inner, 1.0f, x, inner, w, cols, b != NULL ? 1.0f : 0.0f, y,
		    cols);
}

/* db (cols) += column sums of dy (rows, cols), rows ld floats apart. */
static void
add_column_sums(const float *dy, int64_t ld, float *db, int64_t rows,
		int64_t cols)
{
	for (int64_t r = 0; r < rows; r++)
		for (int64_t j = 0; j < cols; j++)
			db[j] += dy[r * ld + j];
}

/* The qkv columns of heads [h0, h0 + cl/hs) of x (rows, C): for each of q,
 * k, v, the cl columns from its third's offset c0 of qkv (rows, 3C), as
 * affine does for all 3C; the weight's and bias's columns where qkv_at
 * puts them. */
static void
share_qkv_forward(struct dt_pool *pool, const struct dt_node *n,
		  const struct attn_params *w, const float *x, float *qkv,
		  int rows, int c, int c0, int cl)
{
	const int ldw = qkv_ld(n, c, cl);

	for (int part = 0; part < 3; part++) {
		const int o = part * c + c0;
		const size_t at = qkv_at(n, part, c, c0, cl);

		if (w->b_qkv != NULL)
			for (int r = 0; r < rows; r++)
				memcpy(qkv + (size_t)r * 3 * c + o,
				       w->b_qkv->data + at,
				       (size_t)cl * sizeof(float));
		dt_kern_par_sgemm(pool, 0, 0, rows,
			    cl, c, 1.0f, x, c, w->w_qkv->data + at, ldw,
			    w->b_qkv != NULL ? 1.0f : 0.0f, qkv + o, 3 * c);
	}
}

/* out (rows, C) = the sum over the group of y[:, c0..c0+cl)
 * proj_weight[c0..c0+cl, :], then + proj_bias. */
static void
share_proj_forward(struct dt_pool *pool, const struct dt_node *n,
		   const struct attn_params *w, const struct dt_tp *tp,
		   const float *y, float *out, int rows, int c, int c0, int cl)
{
	dt_kern_par_sgemm(pool, 0, 0, rows, c, cl,
		    1.0f, y + c0, c, w->w_proj->data + proj_at(n, c, c0), c,
		    0.0f, out, c);
	tp->allreduce(tp->ctx, out, (size_t)rows * (size_t)c);
	if (w->b_proj != NULL)
		for (int r = 0; r < rows; r++)
			for (int j = 0; j < c; j++)
				out[(size_t)r * c + j] += w->b_proj->data[j];
}

/* Rows per tile of the score matrix under the causal mask: a tile of
 * rows [i0, i1) needs the key columns [0, i1) only, so the products skip
 * the blocks above the diagonal (at T = 64, 10 of 16 blocks are computed
 * instead of 16). Without the mask one tile covers all rows. */
#define ATTN_TILE 16

/* The columns row tile [i0, i1) of a T-position head computes: [0, i1)
 * under the mask, else [0, t). */
static int
tile_width(int i1, int t, bool causal)
{
	return causal ? i1 : t;
}

/* Rows [i0, i1) of one head's probabilities a (T, T) from q and k
 * (T, hs) at row stride ldq: row i holds the softmax of its first i+1
 * scores (all T without the mask), 0 after them. head_forward and the
 * recompute of model.recompute: attention both make them here, so they
 * are the same bits. */
static void
tile_probs(const float *q, const float *k, float *a, int i0, int i1, int t,
	   int hs, int ldq, float scale, bool causal)
{
	const int w = tile_width(i1, t, causal);

	/* s = q k^T / sqrt(hs) over the tile's rows and columns */
	dt_kern_sgemm_small(0, 1, i1 - i0, w, hs, scale, q + (size_t)i0 * ldq,
			    ldq, k, ldq, 0.0f, a + (size_t)i0 * t, t);
	for (int i = i0; i < i1; i++) {
		float *row = a + (size_t)i * t;	/* (T) */
		const int valid = causal ? i + 1 : t;

		dt_kern_softmax(row, valid, NULL);
		memset(row + valid, 0, (size_t)(t - valid) * sizeof(float));
	}
}

/* One head's probabilities a (T, T) alone, tile by tile as head_forward
 * makes them. */
static void
head_probs(const float *q, const float *k, float *a, int t, int hs, int ldq,
	   float scale, bool causal)
{
	const int tile = causal ? ATTN_TILE : t;

	for (int i0 = 0; i0 < t; i0 += tile)
		tile_probs(q, k, a, i0, i0 + tile < t ? i0 + tile : t, t, hs,
			   ldq, scale, causal);
}

/* One head of one sample, forward: q, k, v (T, hs) at row stride ldq (3C),
 * a (T, T) the probabilities (tile_probs), y (T, hs) at row stride ldy
 * (C). */
static void
head_forward(const float *q, const float *k, const float *v, float *a,
	     float *y, int t, int hs, int ldq, int ldy, float scale,
	     bool causal)
{
	const int tile = causal ? ATTN_TILE : t;

	for (int i0 = 0; i0 < t; i0 += tile) {
		const int i1 = i0 + tile < t ? i0 + tile : t;
		const int w = tile_width(i1, t, causal);
		float *ar = a + (size_t)i0 * t;		/* (i1-i0, T) */

		tile_probs(q, k, a, i0, i1, t, hs, ldq, scale, causal);
		/* y_h = att v over the same block */
		dt_kern_sgemm_small(0, 0, i1 - i0, hs, w, 1.0f, ar, t, v,
				    ldq, 0.0f, y + (size_t)i0 * ldy, ldy);
	}
}

/* One head of one sample, backward. On entry q, k, v as forward left
 * them, a the probabilities, dyh (T, hs) at row stride ldy the gradient
 * of y_h; d (T, T) is scratch. On return q, k and v hold dq, dk and dv,
 * and dyh is clobbered. Under the mask only the blocks forward computed
 * are formed: datt and dq by row tiles over the columns [0, i1), dv and
 * dk by column tiles [j0, j1) over the rows [j0, T) (a and ds are 0
 * above the diagonal inside a tile). */
static void
head_backward(float *q, float *k, float *v, const float *a, float *dyh,
	      float *d, int t, int hs, int ldq, int ldy, float scale,
	      bool causal)
{
	const int tile = causal ? ATTN_TILE : t;

	/* datt = dy_h v^T, then ds = the softmax Jacobian times it, row by
	 * row over the valid entries (0 after them up to the tile's
	 * width, where later products read). */
	for (int i0 = 0; i0 < t; i0 += tile) {
		const int i1 = i0 + tile < t ? i0 + tile : t;
		const int w = tile_width(i1, t, causal);

		dt_kern_sgemm_small(0, 1, i1 - i0, w, hs, 1.0f,
				    dyh + (size_t)i0 * ldy, ldy, v, ldq, 0.0f,
				    d + (size_t)i0 * t, t);
		for (int i = i0; i < i1; i++) {
			const int valid = causal ? i + 1 : t;
			float *dr = d + (size_t)i * t;	/* (T) */

			dt_kern_softmax_grad(a + (size_t)i * t, dr, valid,
					     scale);
			memset(dr + valid, 0,
			       (size_t)(w - valid) * sizeof(float));
		}
	}
	/* v is dead: dv = att^T dy_h, column tile by column tile. */
	for (int j0 = 0; j0 < t; j0 += tile) {
		const int j1 = j0 + tile < t ? j0 + tile : t;
		const int r0 = causal ? j0 : 0;

		dt_kern_sgemm_small(1, 0, j1 - j0, hs, t - r0, 1.0f,
				    a + (size_t)r0 * t + j0, t,
				    dyh + (size_t)r0 * ldy, ldy, 0.0f,
				    v + (size_t)j0 * ldq, ldq);
	}
	/* dq = ds k into dy_h (dead now), then dk = ds^T q into k (dead
	 * once dq is made), then dq to q. Writing k while reading q shares
	 * rows of qkv but no element, which BLAS allows. */
	for (int i0 = 0; i0 < t; i0 += tile) {
		const int i1 = i0 + tile < t ? i0 + tile : t;
		const int w = tile_width(i1, t, causal);

		dt_kern_sgemm_small(0, 0, i1 - i0, hs, w, 1.0f,
				    d + (size_t)i0 * t, t, k, ldq, 0.0f,
				    dyh + (size_t)i0 * ldy, ldy);
	}
	for (int j0 = 0; j0 < t; j0 += tile) {
		const int j1 = j0 + tile < t ? j0 + tile : t;
		const int r0 = causal ? j0 : 0;

		dt_kern_sgemm_small(1, 0, j1 - j0, hs, t - r0, 1.0f,
				    d + (size_t)r0 * t + j0, t,
				    q + (size_t)r0 * ldq, ldq, 0.0f,
				    k + (size_t)j0 * ldq, ldq);
	}
	for (int i = 0; i < t; i++)
		memcpy(q + (size_t)i * ldq, dyh + (size_t)i * ldy,
		       (size_t)hs * sizeof(float));
}

/* The heads of a micro-batch, forward or backward, split over the pass's
 * thread pool by samples: a part takes whole samples, each of whose heads
 * [h0, h1) runs as head_forward or head_backward does alone, on one BLAS
 * thread (its own threads would compete for the same cores; the count
 * goes back afterwards) where a product is too large for
 * dt_kern_sgemm_small's panel. Every head reads and writes only its
 * sample's rows of qkv, att, y and (backward) ds, so the pool size
 * changes no bit; nor do the BLAS threads, as long as OpenBLAS would have
 * run the larger per-head products on one thread anyway (below its
 * threading threshold; dtrain-job(5)). The fused heads split finer:
 * heads_part_fused. */
struct heads_job {
	const struct dt_node *n;
	int64_t batch;
	int h0, h1;
	bool backward;
};

/* The fused heads (model.attention: fused; flash.c), split over the
 * pass's pool by (sample, head) pairs rather than by samples, so that a
 * micro-batch of one sample (GPT-2 at context 1024) still runs its heads
 * on every thread: pair i is sample i / (h1 - h0), head h0 + i % (h1 -
 * h0). A head reads and writes only its own columns of its sample's qkv,
 * y and dy and its own lse row, and computes them alone, so any split
 * gives the same bits. The backward's D (T) and tile buffer
 * (2 * DT_FLASH_TILE * hs), which a head fills before reading, are
 * shared by the heads of a part one after another: the scratch's first
 * ones when the part is the whole loop, else the part's own (T + 2 *
 * DT_FLASH_TILE * hs floats a thread, outside the plan's activation
 * bytes). The scratch per sample (attn_scratch): qkv (T, 3C), y (T, C),
 * dy (T, C), lse (h, T), D (T) and the tile buffer, each as a (B, ...)
 * block after the one before. */
static void
heads_part_fused(void *ctx, int64_t lo, int64_t hi)
{
	const struct heads_job *j = ctx;
	const struct dt_node *n = j->n;
	const int64_t t = n->in_shape[0].dim[0];
	const int64_t c = n->in_shape[0].dim[1];
	const int64_t heads = n->spec.heads, hs = c / heads, bt = j->batch;
	const int64_t hn = j->h1 - j->h0;
	const float scale = 1.0f / sqrtf((float)hs);
	float *qkv = n->scratch;			/* (B, T, 3C) */
	float *y = qkv + bt * t * 3 * c;		/* (B, T, C) */
	float *dy = y + bt * t * c;			/* (B, T, C) */
	float *lse = dy + bt * t * c;			/* (B, h, T) */
	float *d = lse + bt * heads * t;		/* (B, T) */
	float *tile = d + bt * t;		/* (B, 2 * TILE * hs) */
	float *own = NULL;		/* (T + 2 * TILE * hs), a part's */

	if (j->backward && (lo > 0 || hi < bt * hn)) {
		own = dt_xmalloc((size_t)(t + 2 * DT_FLASH_TILE * hs),
				 sizeof *own);
		d = own;
		tile = own + t;
	}
	for (int64_t i = lo; i < hi; i++) {
		const int64_t b = i / hn, h = j->h0 + i % hn;
		float *q = qkv + b * t * 3 * c + h * hs;
		float *k = q + c, *v = q + 2 * c;	/* ld 3C */
		float *yh = y + b * t * c + h * hs;	/* ld C */
		float *lh = lse + (b * heads + h) * t;	/* (T) */

		if (j->backward)
			dt_flash_head_backward(q, k, v, yh,
					       dy + b * t * c + h * hs, lh, d,
					       tile, (int)t, (int)hs,
					       (int)(3 * c), (int)c, scale,
					       n->spec.causal);
		else
			dt_flash_head_forward(q, k, v, yh, lh, (int)t,
					      (int)hs, (int)(3 * c), (int)c,
					      scale, n->spec.causal);
	}
	free(own);
}

static void
heads_part(void *ctx, int64_t lo, int64_t hi)
{
	const struct heads_job *j = ctx;
	const struct dt_node *n = j->n;
	const int t = (int)n->in_shape[0].dim[0];
	const int c = (int)n->in_shape[0].dim[1];
	const int heads = (int)n->spec.heads, hs = c / heads;
	const float scale = 1.0f / sqrtf((float)hs);
	float *qkv = n->scratch;			/* (B, T, 3C) */
	/* Without recompute: the probabilities of every head (B, h, T, T)
	 * and ds (B, T, T) in scratch; with it, y follows qkv and n->work
	 * holds one head's probabilities and ds per sample (B, 2, T, T). */
	const int64_t hk = n->recompute ? 1 : heads;	/* heads kept */
	float *att = n->recompute ? n->work				/* (B, hk, T, T) */
				  : qkv + j->batch * t * 3 * c;
	float *y = n->recompute ? qkv + j->batch * t * 3 * c	/* (B, T, C) */
				: att + j->batch * heads * t * t;
	float *ds = n->recompute ? att + t * t : y + j->batch * t * c;
	const int64_t ds_stride = n->recompute ? 2 * t * t : t * t;

	for (int64_t b = lo; b < hi; b++) {
		for (int h = j->h0; h < j->h1; h++) {
			float *q = qkv + b * t * 3 * c + h * hs;
			float *k = q + c, *v = q + 2 * c;	/* ld 3C */
			float *a = n->recompute			/* (T, T) */
				   ? att + b * 2 * t * t
				   : att + (b * hk + h) * t * t;
			float *yh = y + b * t * c + h * hs;	/* ld C */

			if (j->backward && n->recompute)
				head_probs(q, k, a, t, hs, 3 * c, scale,
					   n->spec.causal);
			if (j->backward)
				head_backward(q, k, v, a, yh, ds + b * ds_stride,
					      t, hs, 3 * c, c, scale,
					      n->spec.causal);
			else
				head_forward(q, k, v, a, yh, t, hs, 3 * c, c,
					     scale, n->spec.causal);
		}
	}
}

static void
heads_run(const struct dt_node *n, const struct dt_pass *p, int h0, int h1,
	  bool backward)
{
	struct heads_job j = {
		.n = n, .batch = p->batch, .h0 = h0, .h1 = h1,
		.backward = backward,
	};
	int blas = dt_kern_set_threads(1);

	if (n->attn_fused)
		dt_pool_for(p->pool, p->batch * (h1 - h0), 1,
			    heads_part_fused, &j);
	else
		dt_pool_for(p->pool, p->batch, 1, heads_part, &j);
	dt_kern_set_threads(blas);
}

/* Where y lies in the scratch of a pass over batch samples: after qkv
 * and, without recompute or fusion, the probabilities (heads_part). */
static float *
attn_y(const struct dt_node *n, int64_t batch)
{
	const int64_t t = n->in_shape[0].dim[0], c = n->in_shape[0].dim[1];

	return n->scratch + batch * t * 3 * c +
	       (n->recompute || n->attn_fused ? 0
					      : batch * n->spec.heads * t * t);
}

static void
attention_forward(struct dt_node *n, struct dt_pass *p,
		  const float *const *in)
{
	const struct attn_params w = attn_params(n);
	const int64_t batch = p->batch;
	const int t = (int)n->in_shape[0].dim[0];
	const int c = (int)n->in_shape[0].dim[1];
	const int heads = (int)n->spec.heads, hs = c / heads;
	float *qkv = n->scratch;			/* (B, T, 3C) */
	float *y = attn_y(n, batch);			/* (B, T, C) */
	const struct dt_tp *tp = attn_group(n, p);
	/* this rank's heads [h0, h1) and their columns [c0, c0 + cl) */
	const int h1 = tp ? (tp->rank + 1) * (heads / tp->size) : heads;
	const int h0 = tp ? h1 - heads / tp->size : 0;
	const int c0 = h0 * hs, cl = (h1 - h0) * hs;

	assert(batch * t <= INT_MAX);
	if (tp == NULL)
		affine(p->pool, in[0], w.w_qkv->data, w.b_qkv ? w.b_qkv->data : NULL,
		       qkv, (int)(batch * t), c, 3 * c);
	else
		share_qkv_forward(p->pool, n, &w, in[0], qkv,
				  (int)(batch * t), c, c0, cl);
	heads_run(n, p, h0, h1, false);
	if (tp == NULL)
		affine(p->pool, y, w.w_proj->data, w.b_proj ? w.b_proj->data : NULL,
		       n->out, (int)(batch * t), c, c);
	else
		share_proj_forward(p->pool, n, &w, tp, y, n->out,
				   (int)(batch * t), c, c0, cl);
}

/* The input projection of the share, qkv holding dqkv in its columns:
 * dqkv_weight and dqkv_bias of those columns, and dx (when din is not
 * NULL) summed over the group. With din_add, rank 0 adds its part to what
 * din holds and the others overwrite it, so the sum counts that once. */
static void
share_qkv_backward(struct dt_pool *pool, const struct dt_node *n,
		   const struct attn_params *w, const struct dt_tp *tp,
		   const float *x, const float *qkv, float *din, bool din_add,
		   int rows, int c, int c0, int cl)
{
	const int ldw = qkv_ld(n, c, cl);

	for (int part = 0; part < 3; part++) {
		const int o = part * c + c0;
		const size_t at = qkv_at(n, part, c, c0, cl);

		dt_kern_par_sgemm(pool, 1, 0, c, cl,
			    rows, 1.0f, x, c, qkv + o, 3 * c, 1.0f,
			    w->w_qkv->grad + at, ldw);
		if (w->b_qkv != NULL)
			add_column_sums(qkv + o, 3 * c, w->b_qkv->grad + at,
					rows, cl);
	}
	if (din == NULL)
		return;
	for (int part = 0; part < 3; part++) {
		const int o = part * c + c0;
		float beta = part > 0 || (din_add && tp->rank == 0) ? 1.0f
								    : 0.0f;

		dt_kern_par_sgemm(pool, 0, 1, rows, c,
			    cl, 1.0f, qkv + o, 3 * c,
			    w->w_qkv->data + qkv_at(n, part, c, c0, cl), ldw,
			    beta, din, c);
	}
	tp->allreduce(tp->ctx, din, (size_t)rows * (size_t)c);
}

/* The output projection's backward (this rank's cl rows of it, from
 * the heads' output y, its columns from c0): its weight gradient from
 * y^T dout, its bias gradient, and dy = dout w_proj^T, which may be y
 * itself. On one thread the two products go to dt_kern_par_sgemm2,
 * which runs them in turn (dy written last) and in bf16 rounds dout
 * once for both. */
static void
proj_backward(struct dt_node *n, struct dt_pass *p,
	      const struct attn_params *w, const float *y, float *dy, int c0,
	      int cl)
{
	const int c = (int)n->in_shape[0].dim[1];
	const int rows = (int)(p->batch * n->in_shape[0].dim[0]);
	const struct dt_kern_gemm gw = {
		.trans_a = 1, .m = cl, .n = c, .k = rows, .alpha = 1.0f,
		.a = y + c0, .lda = c, .b = n->dout, .ldb = c, .beta = 1.0f,
		.c = w->w_proj->grad + proj_at(n, c, c0), .ldc = c,
	};
	const struct dt_kern_gemm gx = {
		.trans_b = 1, .m = rows, .n = cl, .k = c, .alpha = 1.0f,
		.a = n->dout, .lda = c,
		.b = w->w_proj->data + proj_at(n, c, c0), .ldb = c,
		.beta = 0.0f, .c = dy + c0, .ldc = c,
	};

	if (w->b_proj != NULL)
		dt_kern_par_col_sums(p->pool, n->dout, c, w->b_proj->grad,
				     rows, c);
	if (dt_pool_threads(p->pool) <= 1) {
		dt_kern_par_sgemm2(p->pool, &gw, &gx);
		return;
	}
	dt_kern_par_sgemm(p->pool, 1, 0, gw.m, gw.n, gw.k, 1.0f, gw.a,
			  gw.lda, gw.b, gw.ldb, 1.0f, gw.c, gw.ldc);
	dt_kern_par_sgemm(p->pool, 0, 1, gx.m, gx.n, gx.k, 1.0f, gx.a,
			  gx.lda, gx.b, gx.ldb, 0.0f, gx.c, gx.ldc);
}

static void
attention_backward(struct dt_node *n, struct dt_pass *p,
		   const float *const *in, float *const *din,
		   const bool *din_add)
{
	const struct attn_params w = attn_params(n);
	const int64_t batch = p->batch;
	const int t = (int)n->in_shape[0].dim[0];
	const int c = (int)n->in_shape[0].dim[1];
	const int heads = (int)n->spec.heads, hs = c / heads;
	const int rows = (int)(batch * t);
	float *qkv = n->scratch;			/* (B, T, 3C) */
	float *y = attn_y(n, batch);			/* (B, T, C) */
	/* fused: dy has its own block after y, which the heads still read */
	float *dy = n->attn_fused ? y + batch * t * c : y;	/* (B, T, C) */
	const struct dt_tp *tp = attn_group(n, p);
	const int h1 = tp ? (tp->rank + 1) * (heads / tp->size) : heads;
	const int h0 = tp ? h1 - heads / tp->size : 0;
	const int c0 = h0 * hs, cl = (h1 - h0) * hs;

	/* The output projection (this rank's rows of it); y is dead
	 * afterwards (but to the fused heads) and takes dy. */
	proj_backward(n, p, &w, y, dy, c0, cl);

	heads_run(n, p, h0, h1, true);

	/* qkv now holds dqkv: the input projection. */
	if (tp == NULL) {
		const struct dt_kern_gemm gw = {
			.trans_a = 1, .m = c, .n = 3 * c, .k = rows,
			.alpha = 1.0f, .a = in[0], .lda = c, .b = qkv,
			.ldb = 3 * c, .beta = 1.0f, .c = w.w_qkv->grad,
			.ldc = 3 * c,
		};

		if (w.b_qkv != NULL)
			dt_kern_par_col_sums(p->pool, qkv, 3 * c,
					     w.b_qkv->grad, rows, 3 * c);
		if (din[0] == NULL) {
			dt_kern_par_sgemm(p->pool, 1, 0, gw.m, gw.n, gw.k,
					  1.0f, gw.a, gw.lda, gw.b, gw.ldb,
					  1.0f, gw.c, gw.ldc);
			return;
		}
		const struct dt_kern_gemm gx = {
			.trans_b = 1, .m = rows, .n = c, .k = 3 * c,
			.alpha = 1.0f, .a = qkv, .lda = 3 * c,
			.b = w.w_qkv->data, .ldb = 3 * c,
			.beta = din_add[0] ? 1.0f : 0.0f, .c = din[0],
			.ldc = c,
		};

		/* dqkv_weight = x^T dqkv and dx = dqkv qkv_weight^T side
		 * by side */
		dt_kern_par_sgemm2(p->pool, &gw, &gx);
		return;
	}
	share_qkv_backward(p->pool, n, &w, tp, in[0], qkv, din[0], din_add[0],
			   rows, c, c0, cl);
}

static double
attention_fwd_flops(const struct dt_node *n)
{
	const double t = (double)n->in_shape[0].dim[0];
	const double c = (double)n->in_shape[0].dim[1];
	const double h = (double)n->spec.heads;
	const double share = n->tp_size > 1 && n->tp_mode == DT_TP_HEADS
			     ? (double)n->tp_size : 1.0;
	double f = 2.0 * t * c * 3.0 * c + 2.0 * t * c * c	/* projections */
		 + 2.0 * t * t * c				/* scores */
		 + 5.0 * h * t * t				/* softmax */
		 + 2.0 * t * t * c;				/* weighted sum */

	if (share > 1.0) {
		f /= share;
		if (n->spec.bias)
			f += 3.0 * t * c / share + t * c;
		return f;
	}
	if (n->spec.bias)
		f += 3.0 * t * c + t * c;
	return f;
}

static int64_t
attention_scratch_floats(const struct dt_node *n)
{
	return attn_scratch(n->in_shape[0].dim[0], n->in_shape[0].dim[1],
			    n->spec.heads, n->recompute, n->attn_fused);
}

/* model.recompute: attention: one head's probabilities and ds. */
static int64_t
attention_work_floats(const struct dt_node *n)
{
	return 2 * n->in_shape[0].dim[0] * n->in_shape[0].dim[0];
}

/* The scores and softmax of the heads of one rank, made again: by
 * model.recompute: attention, or by the fused backward (the same count:
 * its p = e^(s - lse) is one subtraction and one exp where the softmax
 * counts five, but the mask's skipped tiles are counted as the
 * nominal forward counts them). */
static double
attention_recompute_flops(const struct dt_node *n)
{
	const double t = (double)n->in_shape[0].dim[0];
	const double c = (double)n->in_shape[0].dim[1];
	const double h = (double)n->spec.heads;
	const double share = n->tp_size > 1 && n->tp_mode == DT_TP_HEADS
			     ? (double)n->tp_size : 1.0;

	return (2.0 * t * t * c + 5.0 * h * t * t) / share;
}

const struct dt_layer_ops dt_layer_attention = {
	.kind = "attention",
	.infer = attention_infer,
	.forward = attention_forward,
	.backward = attention_backward,
	.fwd_flops = attention_fwd_flops,
	.scratch_floats = attention_scratch_floats,
	.work_floats = attention_work_floats,
	.recompute_flops = attention_recompute_flops,
};
