/* SPDX-License-Identifier: MIT */
/* recompute.c - activation recompute (model.recompute; Chen et al.,
 * "Training Deep Nets with Sublinear Memory Cost", 2016): which nodes a
 * model drops the activations of after forward and computes again in
 * backward, the room they take, and the FLOPs they add.
 *
 * blocks: a segment is one copy of a repeat block on one pipeline stage,
 * the run of consecutive nodes whose job layers are named
 * "<block>.<copy>.<layer>" with the same "<block>.<copy>." (the names the
 * expansion of `repeat:` gives them, job/layers.c, which the saved job
 * keeps; the loss is in none). A node of a segment that a node outside
 * the segment reads (the next copy, the layers after the block, the next
 * stage) is kept: its buffers lie in every micro-batch's slot as without
 * recompute. Every other node of the segment is transient: its output,
 * output gradient and scratch lie in one workspace that every segment
 * and every slot share. In a transformer a slot then holds each block's
 * output (the next block's input) and nothing else of the block. The
 * backward pass, on reaching a segment's last node, runs the forward of
 * its transient nodes again in order (graph.c) with the same pass: the
 * same micro-batch position, so dropout draws the same mask (its draws
 * are keyed by step, sample and element, never by a stream), and the
 * same kernels on the same inputs, so the same bits.
 * attention: each attention node keeps q, k, v and y in its scratch and
 * computes the (T, T) probabilities of a head again in backward, into a
 * work buffer that every attention node and slot share (attention.c).
 *
 * FLOPs: blocks adds the forward of the transient nodes, attention the
 * layer's recompute_flops (scores and softmax). */
#include <ctype.h>
#include <string.h>

#include "graph/layer.h"
#include "graph/model.h"
#include "graph/recompute.h"
#include "graph/stage.h"

/* Length of the "<block>.<copy>." prefix of a layer name, 0 if none. */
static size_t
block_prefix(const char *name)
{
	const char *dot = strchr(name, '.'), *p;

	if (dot == NULL || dot == name || !isdigit((unsigned char)dot[1]))
		return 0;
	for (p = dot + 1; isdigit((unsigned char)*p); p++)
		;
	if (*p != '.' || p[1] == '\0')
		return 0;
	return (size_t)(p + 1 - name);
}

static bool
same_copy(const struct dt_node *a, const struct dt_node *b)
{
	size_t len = block_prefix(a->spec.name);

	return len > 0 && len == block_prefix(b->spec.name) &&
	       strncmp(a->spec.name, b->spec.name, len) == 0;
}

void
dt_recompute_mark(const struct dt_model *m, const int *stage_of,
		  int *seg_first, int *seg_last, bool *transient)
{
	const int n = m->n_nodes;

	for (int i = 0; i < n; i++) {
		seg_first[i] = seg_last[i] = -1;
		transient[i] = false;
	}
	if (m->recompute != DT_RECOMPUTE_BLOCKS)
		return;
	for (int i = 0, j; i < n - 1; i = j + 1) {
		j = i;
		if (block_prefix(m->nodes[i].spec.name) == 0)
			continue;
		while (j + 1 < n - 1 &&
		       (stage_of == NULL || stage_of[j + 1] == stage_of[i]) &&
		       same_copy(&m->nodes[i], &m->nodes[j + 1]))
			j++;
		for (int k = i; k <= j; k++) {
			seg_first[k] = i;
			seg_last[k] = j;
		}
	}
	for (int i = 0; i < n; i++) {
		if (seg_first[i] < 0)
			continue;
		transient[i] = true;
		for (int j = seg_last[i] + 1; j < n && transient[i]; j++)
			for (int k = 0; k < m->nodes[j].n_inputs; k++)
				if (m->nodes[j].inputs[k] == i)
					transient[i] = false;
	}
}

int64_t
dt_recompute_seg_floats(const struct dt_model *m, const int *seg_first,
			const bool *transient, int first, int last)
{
	int64_t most = 0, sum = 0, scratch;
	int seg = -1;

	for (int i = first; i <= last; i++) {
		if (!transient[i])
			continue;
		if (seg_first[i] != seg)
			sum = 0;
		seg = seg_first[i];
		sum += dt_node_act_floats(&m->nodes[i], &scratch);
		if (sum > most)
			most = sum;
	}
	return most;
}

int64_t
dt_recompute_layer_floats(const struct dt_model *m, int first, int last)
{
	int64_t most = 0;

	for (int i = first; i <= last; i++) {
		const struct dt_node *n = &m->nodes[i];
		int64_t w;

		if (!n->recompute)
			continue;
		w = n->ops->work_floats(n);
		if (w > most)
			most = w;
	}
	return most;
}

double
dt_recompute_flops(const struct dt_model *m, const bool *transient,
		   int first, int last)
{
	double f = 0;

	for (int i = first; i <= last; i++) {
		const struct dt_node *n = &m->nodes[i];

		if (transient[i])
			f += n->ops->fwd_flops(n);
		if (n->recompute || n->attn_fused)
			f += n->ops->recompute_flops(n);
	}
	return f;
}
