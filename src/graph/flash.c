/* SPDX-License-Identifier: MIT */
/* flash.c - one attention head computed in tiles with an online softmax,
 * never forming its (T, T) scores (model.attention: fused), after
 * FlashAttention-2 (Dao, "FlashAttention-2: Faster Attention with Better
 * Parallelism and Work Partitioning", 2023, algorithms 1 and 2; the
 * online softmax of Milakov & Gimelshein, "Online normalizer calculation
 * for softmax", 2018).
 *
 * Forward, for each tile of DT_FLASH_ROWS query rows, over the key tiles
 * of DT_FLASH_TILE columns that the causal mask leaves (the tiles wholly
 * above the diagonal are never computed, nor a diagonal tile's columns
 * after the row tile's last row): s = scale q k^T on the tile, then per
 * row the running maximum m and sum l of e^(s - m): with m' = max(m,
 * max s), the row's output so far is rescaled by e^(m - m') and
 * p = e^(s - m') v added to it, l = l e^(m - m') + sum p. At the end
 * y = y / l and lse = m + log l, the row's log-sum-exp, which is all the
 * backward keeps besides q, k, v and y: T floats a head instead of T*T.
 *
 * Backward, per key tile j (outer) and the query tiles i that see it
 * (inner; the same columns as forward): p = e^(scale q_i k_j^T - lse)
 * recomputed, dv_j += p^T dy_i, dp = dy_i v_j^T, ds = p (dp - D_i)
 * scale with D_i = rowsum(dy_i * y_i) (formed once before the loop;
 * algorithm 2's D), dq_i += ds k_j, dk_j += ds^T q_i. dk_j and dv_j live
 * in a tile buffer until the inner loop ends and then replace k_j and
 * v_j, which no later tile reads; dq sums in y (dead once D is formed)
 * and replaces q at the end.
 *
 * Products go through dt_kern_sgemm_small (kern.h), whose element bits
 * do not depend on which rows or columns share a call (in bf16 under
 * train.precision: bf16 on a CPU with AVX512_BF16: the tile's q, k, v,
 * p, dy and ds rounded to bf16, the sums and the softmax in float); the
 * exponentials through dt_kern_exp. A head's bits depend only on its own q, k, v (and
 * y, dy), so every split of the heads over tensor-parallel ranks and of
 * the samples over ranks and threads gives the same bits. They differ
 * from the materialized path's (another order of the softmax's sums). */
#include <math.h>
#include <string.h>

#include "graph/flash.h"
#include "graph/kern.h"
#include "graph/layer.h"

/* x[i] -= m over n values. */
static void
sub_scalar(float *restrict x, int64_t n, float m)
{
	DT_VEC_LOOP(i, n, x[i] -= m);
}

/* The sum of x[0..n) in 8 lanes added in a fixed order. */
static float
sum_lanes(const float *restrict x, int64_t n)
{
	float lane[8] = { 0 }, s = 0.0f;
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++)
			lane[j] += x[i + j];
	for (int j = 0; j < 8; j++)
		s += lane[j];
	for (; i < n; i++)
		s += x[i];
	return s;
}

/* dp[i] = p[i] (dp[i] - d) scale over n values: the score gradient. */
static void
score_grad(const float *restrict p, float *restrict dp, int64_t n, float d,
	   float scale)
{
	DT_VEC_LOOP(i, n, dp[i] = p[i] * (dp[i] - d) * scale);
}

/* The key columns [j0, j0 + nc) that row i sees: how many from j0. */
static int
row_valid(int i, int j0, int nc, bool causal)
{
	int v = causal ? i + 1 - j0 : nc;

	return v < nc ? v : nc;
}

/* One row of a score tile s (nc) turned into e^(s - m) over its first
 * valid entries and 0 after them. */
static void
row_exp(float *s, int valid, int nc, float m)
{
	sub_scalar(s, valid, m);
	dt_kern_exp(s, valid);
	memset(s + valid, 0, (size_t)(nc - valid) * sizeof(float));
}

/* The query rows [i0, i1) of dt_flash_head_forward. */
static void
forward_rows(const float *q, const float *k, const float *v, float *y,
	     float *lse, int i0, int i1, int t, int hs, int ldq, int ldy,
	     float scale, bool causal)
{
	float s[DT_FLASH_ROWS * DT_FLASH_TILE];	/* (rows, cols) of a tile */
	float m[DT_FLASH_ROWS], l[DT_FLASH_ROWS];
	const int nr = i1 - i0, jend = causal ? i1 : t;

	for (int j0 = 0; j0 < jend; j0 += DT_FLASH_TILE) {
		const int j1 = j0 + DT_FLASH_TILE < jend ? j0 + DT_FLASH_TILE
							 : jend;
		const int nc = j1 - j0;

		dt_kern_sgemm_small(0, 1, nr, nc, hs, scale,
				    q + (size_t)i0 * ldq, ldq,
				    k + (size_t)j0 * ldq, ldq, 0.0f, s,
				    DT_FLASH_TILE);
		for (int r = 0; r < nr; r++) {
			float *row = s + r * DT_FLASH_TILE;
			const int valid = row_valid(i0 + r, j0, nc, causal);
			float mx, mnew;

			if (valid <= 0) {	/* masked: adds nothing */
				memset(row, 0, (size_t)nc * sizeof(float));
				continue;
			}
			mx = dt_kern_max(row, valid);
			mnew = j0 == 0 ? mx : fmaxf(m[r], mx);
			row_exp(row, valid, nc, mnew);
			if (j0 == 0) {
				l[r] = sum_lanes(row, valid);
			} else {
				const float alpha = expf(m[r] - mnew);

				l[r] = l[r] * alpha + sum_lanes(row, valid);
				dt_kern_scale(y + (size_t)(i0 + r) * ldy, hs,
					      alpha);
			}
			m[r] = mnew;
		}
		dt_kern_sgemm_small(0, 0, nr, hs, nc, 1.0f, s, DT_FLASH_TILE,
				    v + (size_t)j0 * ldq, ldq,
				    j0 == 0 ? 0.0f : 1.0f,
				    y + (size_t)i0 * ldy, ldy);
	}
	for (int r = 0; r < nr; r++) {
		dt_kern_scale(y + (size_t)(i0 + r) * ldy, hs, 1.0f / l[r]);
		lse[i0 + r] = m[r] + logf(l[r]);
	}
}

void
dt_flash_head_forward(const float *q, const float *k, const float *v,
		      float *y, float *lse, int t, int hs, int ldq, int ldy,
		      float scale, bool causal)
{
	for (int i0 = 0; i0 < t; i0 += DT_FLASH_ROWS)
		forward_rows(q, k, v, y, lse, i0,
			     i0 + DT_FLASH_ROWS < t ? i0 + DT_FLASH_ROWS : t, t,
			     hs, ldq, ldy, scale, causal);
}

/* What the backward's inner loop shares. */
struct flash_bwd {
	const float *q, *k, *v, *dy, *lse, *d;
	float *dq;			/* (T, hs) at ldy */
	float *dk, *dv;			/* (DT_FLASH_TILE, hs) at hs */
	int t, hs, ldq, ldy;
	float scale;
	bool causal;
};

/* Query tile [i0, i1) against key tile [j0, j0 + nc): adds to dv, dk (of
 * the key tile) and dq (of the query rows). */
static void
backward_tile(const struct flash_bwd *b, int i0, int i1, int j0, int nc)
{
	float s[DT_FLASH_ROWS * DT_FLASH_TILE];	/* p, (rows, cols) */
	float dp[DT_FLASH_ROWS * DT_FLASH_TILE];	/* dp, then ds */
	const int nr = i1 - i0;
	const float *qi = b->q + (size_t)i0 * b->ldq;
	const float *dyi = b->dy + (size_t)i0 * b->ldy;

	dt_kern_sgemm_small(0, 1, nr, nc, b->hs, b->scale, qi, b->ldq,
			    b->k + (size_t)j0 * b->ldq, b->ldq, 0.0f, s,
			    DT_FLASH_TILE);
	for (int r = 0; r < nr; r++) {
		const int i = i0 + r;
		int valid = row_valid(i, j0, nc, b->causal);

		row_exp(s + r * DT_FLASH_TILE, valid > 0 ? valid : 0, nc,
			b->lse[i]);
	}
	dt_kern_sgemm_small(1, 0, nc, b->hs, nr, 1.0f, s, DT_FLASH_TILE, dyi,
			    b->ldy, 1.0f, b->dv, b->hs);
	dt_kern_sgemm_small(0, 1, nr, nc, b->hs, 1.0f, dyi, b->ldy,
			    b->v + (size_t)j0 * b->ldq, b->ldq, 0.0f, dp,
			    DT_FLASH_TILE);
	for (int r = 0; r < nr; r++)
		score_grad(s + r * DT_FLASH_TILE, dp + r * DT_FLASH_TILE, nc,
			   b->d[i0 + r], b->scale);
	dt_kern_sgemm_small(0, 0, nr, b->hs, nc, 1.0f, dp, DT_FLASH_TILE,
			    b->k + (size_t)j0 * b->ldq, b->ldq, 1.0f,
			    b->dq + (size_t)i0 * b->ldy, b->ldy);
	dt_kern_sgemm_small(1, 0, nc, b->hs, nr, 1.0f, dp, DT_FLASH_TILE, qi,
			    b->ldq, 1.0f, b->dk, b->hs);
}

void
dt_flash_head_backward(float *q, float *k, float *v, float *y,
		       const float *dy, const float *lse, float *d,
		       float *tile, int t, int hs, int ldq, int ldy,
		       float scale, bool causal)
{
	const size_t row = (size_t)hs * sizeof(float);
	struct flash_bwd b = {
		.q = q, .k = k, .v = v, .dy = dy, .lse = lse, .d = d,
		.dq = y, .dk = tile, .dv = tile + DT_FLASH_TILE * hs,
		.t = t, .hs = hs, .ldq = ldq, .ldy = ldy, .scale = scale,
		.causal = causal,
	};

	for (int i = 0; i < t; i++) {
		d[i] = dt_kern_dot(dy + (size_t)i * ldy, y + (size_t)i * ldy,
				   hs);
		memset(y + (size_t)i * ldy, 0, row);
	}
	for (int j0 = 0; j0 < t; j0 += DT_FLASH_TILE) {
		const int nc = j0 + DT_FLASH_TILE < t ? DT_FLASH_TILE
						      : t - j0;

		memset(b.dk, 0, (size_t)nc * row);
		memset(b.dv, 0, (size_t)nc * row);
		/* under the mask the query tiles before j0 see none of it,
		 * and a row tile on the diagonal only its columns < i1 */
		for (int i0 = causal ? j0 : 0; i0 < t; i0 += DT_FLASH_ROWS) {
			const int i1 = i0 + DT_FLASH_ROWS < t
				       ? i0 + DT_FLASH_ROWS : t;

			backward_tile(&b, i0, i1, j0,
				      causal && i1 - j0 < nc ? i1 - j0 : nc);
		}
		for (int r = 0; r < nc; r++) {
			memcpy(k + (size_t)(j0 + r) * ldq, b.dk + r * hs, row);
			memcpy(v + (size_t)(j0 + r) * ldq, b.dv + r * hs, row);
		}
	}
	for (int i = 0; i < t; i++)
		memcpy(q + (size_t)i * ldq, y + (size_t)i * ldy, row);
}
