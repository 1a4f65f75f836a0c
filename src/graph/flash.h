/* SPDX-License-Identifier: MIT */
/* flash.h - one attention head's fused forward and backward
 * (model.attention: fused; flash.c says how), for attention.c. Internal
 * to graph/. */
#ifndef DT_GRAPH_FLASH_H
#define DT_GRAPH_FLASH_H

#include <stdbool.h>
#include <stdint.h>

/* Key columns per tile of the fused head (DT_FLASH_TILE), and query rows
 * (DT_FLASH_ROWS, which divides it, so that under the causal mask only
 * the row tiles on the diagonal compute masked entries). */
#define DT_FLASH_TILE 64
#define DT_FLASH_ROWS 16

/* One head of one sample, forward. q, k, v (T, hs) at row stride ldq
 * (attention's qkv, 3C); y (T, hs) at row stride ldy (C) receives
 * softmax(scale q k^T, causal mask when causal) v; lse (T) receives each
 * row's log-sum-exp of its scaled, unmasked scores, which the backward
 * needs. Nothing else is written; no (T, T) matrix is formed. No error is
 * possible. */
void dt_flash_head_forward(const float *q, const float *k, const float *v,
			   float *y, float *lse, int t, int hs, int ldq,
			   int ldy, float scale, bool causal);

/* One head of one sample, backward, from what the forward saved. On
 * entry q, k, v as forward read them, y (T, hs) at row stride ldy its
 * output, dy (T, hs) at row stride ldy the gradient of y, lse (T) the
 * forward's log-sum-exp. d (T) and tile (2 * DT_FLASH_TILE * hs) are
 * scratch. On return q, k and v hold dq, dk and dv; y is clobbered, dy
 * and lse are left as they were. */
void dt_flash_head_backward(float *q, float *k, float *v, float *y,
			    const float *dy, const float *lse, float *d,
			    float *tile, int t, int hs, int ldq, int ldy,
			    float scale, bool causal);

#endif
