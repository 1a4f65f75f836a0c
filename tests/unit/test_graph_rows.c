/* SPDX-License-Identifier: MIT */
/* test_graph_rows.c - Check suite for sequence parallelism's row shares
 * of a node (src/graph/rows.c, layer.h's dt_node_rows; doc/DESIGN.md,
 * "Sequence parallelism"): the shares worked out by hand, uneven ones
 * included; layernorm, dropout, add and pos_embedding run on each tensor
 * rank's share of the rows (struct dt_node's seq_rows) giving that share
 * of the whole pass's output and input gradient bit for bit (dropout's
 * mask keyed by the global row), their parameter gradients summed over
 * the ranks equal to the whole pass's within float rounding; and the
 * graph's activation slot shrunk by the marked nodes' rows held, against
 * a figure worked out by hand; and dt_model_seq_rows_plan's nodes of a
 * small GPT, listed by hand, with dt_model_seq_rows_saved's floats
 * against a hand count and the slot laid out with them. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "graph/graph.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "graph/stage.h"
#include "job/job.h"
#include "util/threadpool.h"

/* Every rig: 3 samples of (T, C) = (5, 4): n = 15 rows of 4 floats. */
#define RIG_B 3
#define RIG_T 5
#define RIG_C 4

START_TEST(test_rows_share)
{
	/* [floor(n r / s), floor(n (r + 1) / s)) by hand */
	static const struct {
		int64_t n;
		int s, rank;
		int64_t first, count;
	} c[] = {
		{ 15, 1, 0, 0, 15 }, { 15, 2, 0, 0, 7 }, { 15, 2, 1, 7, 8 },
		{ 15, 3, 0, 0, 5 }, { 15, 3, 1, 5, 5 }, { 15, 3, 2, 10, 5 },
		{ 7, 3, 0, 0, 2 }, { 7, 3, 1, 2, 2 }, { 7, 3, 2, 4, 3 },
		{ 2, 3, 0, 0, 0 }, { 2, 3, 1, 0, 1 }, { 2, 3, 2, 1, 1 },
	};

	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		int64_t first, count;

		dt_rows_share(c[i].n, c[i].s, c[i].rank, &first, &count);
		ck_assert_msg(first == c[i].first && count == c[i].count,
			      "n %lld s %d rank %d: [%lld, +%lld)",
			      (long long)c[i].n, c[i].s, c[i].rank,
			      (long long)first, (long long)count);
	}
}
END_TEST

/* The row-wise types, with their specs. */
struct rows_case {
	const struct dt_layer_ops *ops;
	int n_in;
	double rate, eps;
	int64_t length;
};

static const struct rows_case rows_cases[] = {
	{ &dt_layer_layernorm, 1, 0.0, 1e-5, 0 },
	{ &dt_layer_dropout, 1, 0.5, 0.0, 0 },
	{ &dt_layer_add, 2, 0.0, 0.0, 0 },
	{ &dt_layer_add, 3, 0.0, 0.0, 0 },
	{ &dt_layer_pos_embedding, 1, 0.0, 0.0, RIG_T },
};

/* Builds r (gc_init): one node of rc's layer type with rc->n_in inputs
 * of (RIG_T, RIG_C) floats a sample, in a pass of RIG_B samples. */
static void
rig_make(struct gc_rig *r, const struct rows_case *rc)
{
	struct dt_layer_spec spec = { .rate = rc->rate, .eps = rc->eps,
				      .length = rc->length };
	struct dt_shape in[DT_NODE_MAX_INPUTS];

	for (int k = 0; k < rc->n_in; k++)
		in[k] = (struct dt_shape){ .n_dims = 2,
					   .dim = { RIG_T, RIG_C } };
	gc_init(r, &gc_node_inputs, rc->ops, &spec, rc->n_in, in, RIG_B);
}

/* Forward then backward of r's node with pass p (gradients zeroed
 * first, input gradients written). */
static void
rig_passes(struct gc_rig *r, struct dt_pass *p)
{
	const float *in[DT_NODE_MAX_INPUTS];
	float *din[DT_NODE_MAX_INPUTS];
	bool din_add[DT_NODE_MAX_INPUTS] = { false };

	memset(r->grads, 0, (size_t)r->n.n_params * sizeof(float));
	for (int k = 0; k < r->n.n_inputs; k++) {
		in[k] = r->x[k];
		din[k] = r->dx[k];
	}
	r->n.ops->forward(&r->n, p, in);
	r->n.ops->backward(&r->n, p, in, din, din_add);
}

/* Rank `rank` of s runs its share of w's rows, its loops split over
 * pool: its inputs and upstream gradient are those rows of w's, its
 * output and input gradients must be those rows of w's bit for bit; its
 * parameter gradients are added to sum. */
static void
run_share(const struct rows_case *rc, const struct gc_rig *w, int rank,
	  int s, struct dt_pool *pool, double *sum)
{
	struct dt_tp tp = { .rank = rank, .size = s };
	struct gc_rig r;
	struct dt_pass p;
	int64_t first, rows, len;

	rig_make(&r, rc);
	r.n.seq_rows = true;
	r.pool = pool;
	p = gc_pass(&r);
	p.tp = &tp;
	dt_node_rows(&r.n, &p, &first, &rows);
	dt_rows_share(RIG_B * RIG_T, s, rank, &first, &len);
	ck_assert_int_eq(rows, len);
	len = rows * RIG_C;
	for (int k = 0; k < r.n.n_inputs; k++)
		memmove(r.x[k], r.x[k] + first * RIG_C,
			(size_t)len * sizeof(float));
	memmove(r.g, r.g + first * RIG_C, (size_t)len * sizeof(float));
	rig_passes(&r, &p);
	ck_assert_msg(memcmp(r.n.out, w->n.out + first * RIG_C,
			     (size_t)len * sizeof(float)) == 0,
		      "%s: rank %d of %d: output rows differ", rc->ops->kind,
		      rank, s);
	for (int k = 0; k < r.n.n_inputs; k++)
		ck_assert_msg(memcmp(r.dx[k], w->dx[k] + first * RIG_C,
				     (size_t)len * sizeof(float)) == 0,
			      "%s: rank %d of %d: d(input %d) rows differ",
			      rc->ops->kind, rank, s, k);
	for (int64_t i = 0; i < r.n.n_params; i++)
		sum[i] += r.grads[i];
	gc_free(&r);
}

START_TEST(test_rows_layers)
{
	const struct rows_case *rc = &rows_cases[_i];
	struct gc_rig w;
	struct dt_pass p;
	int64_t zeros = 0;

	rig_make(&w, rc);
	ck_assert(rc->ops->row_shares);
	p = gc_pass(&w);
	rig_passes(&w, &p);
	for (int64_t i = 0; i < RIG_B * RIG_T * RIG_C; i++)
		zeros += w.n.out[i] == 0.0f;
	/* dropout at 0.5 drops about half (a mask that is not all ones) */
	ck_assert(rc->rate == 0.0 ? zeros == 0 : zeros > 10);
	for (int s = 2; s <= 4; s++) {
		double *sum = calloc((size_t)w.n.n_params + 1, sizeof *sum);
		/* the whole pass on one thread, the shares on s - 1 */
		struct dt_pool *pool = s > 2 ? dt_pool_new(s - 1) : NULL;

		for (int rank = 0; rank < s; rank++)
			run_share(rc, &w, rank, s, pool, sum);
		dt_pool_free(pool);
		for (int64_t i = 0; i < w.n.n_params; i++)
			ck_assert_msg(fabs(sum[i] - w.grads[i]) <=
				      1e-6 + 1e-5 * fabs(w.grads[i]),
				      "%s at %d ranks: grad %lld: %g vs %g",
				      rc->ops->kind, s, (long long)i, sum[i],
				      (double)w.grads[i]);
		free(sum);
	}
	gc_free(&w);
}
END_TEST

/* ln, pos, drop, res between input (5, 4) and a dense; the four are the
 * row-wise types. */
static const char rows_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [5, 4]\n"
	"  layers:\n"
	"    - {type: layernorm, name: ln}\n"
	"    - {type: pos_embedding, name: pos, length: 5, dim: 4}\n"
	"    - {type: dropout, name: drop, rate: 0.1}\n"
	"    - {type: add, name: res, inputs: [pos, drop]}\n"
	"    - {type: dense, name: out, units: 4}\n"
	"  loss: mse\n"
	"train: {micro_batch: 3, steps: 10, lr: 0.1}\n";

/* The tensor group's all-reduce where the test runs no pass: never
 * called (the test fails if it is). */
static void
no_allreduce(void *ctx, float *buf, size_t n)
{
	(void)ctx;
	(void)buf;
	(void)n;
	ck_abort_msg("a sum in a test without passes");
}

/* The slot of a model whose four row-wise nodes hold their share: per
 * row, ln's output, gradient and mean and rstd (4 + 4 + 2), pos's
 * output and gradient (4 + 4), drop's and its mask (4 + 4 + 4), res's
 * (4 + 4): 38 floats a row, 5 rows a sample. At 3 samples (15 rows) the
 * whole model holds 3 * 5 * 38 = 570 floats of them; on 2 ranks rank 0
 * holds 7 rows (266 floats), rank 1 8 (304); on 3, 5 rows each (190).
 * The other nodes (the dense and the loss) keep theirs. */
START_TEST(test_rows_layout)
{
	static const struct {
		int s, rank;
		int64_t held;
	} c[] = { { 2, 0, 266 }, { 2, 1, 304 }, { 3, 2, 190 } };
	struct dt_job *job = calloc(1, sizeof *job);
	struct dt_error err;

	ck_assert_msg(dt_job_parse("job.yaml", rows_text, strlen(rows_text),
				   NULL, 0, job, &err) == DT_OK, "%s",
		      err.msg);
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct dt_model *m = NULL;
		size_t whole;
		int marked = 0;

		ck_assert_msg(dt_model_new(job, RIG_B, &m, &err) == DT_OK,
			      "%s", err.msg);
		bool marks[16];

		whole = m->slot_floats;
		dt_model_set_tensor_group(m, c[i].rank, c[i].s, no_allreduce,
					  NULL);
		ck_assert_int_le(m->n_nodes, 16);
		for (int k = 0; k < m->n_nodes; k++) {
			marks[k] = m->nodes[k].ops->row_shares;
			m->nodes[k].seq_rows = marks[k];
			marked += marks[k];
		}
		ck_assert_int_eq(marked, 4);
		ck_assert_int_eq(dt_model_seq_rows_saved(m, marks, RIG_B,
							 c[i].rank, c[i].s),
				 570 - c[i].held);
		dt_model_relayout_acts(m);
		ck_assert_int_eq((int64_t)m->slot_floats,
				 (int64_t)whole - 570 + c[i].held);
		/* the buffers are laid out back to back at their shares */
		ck_assert_int_eq(m->nodes[1].out - m->nodes[0].out,
				 (c[i].held / 38) * 10);
		dt_model_free(m);
	}
	free(job);
}
END_TEST

/* char-gpt's shape (jobs/char-gpt.yaml), smaller: two blocks. */
static const char gpt_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [6]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 10, dim: 8}\n"
	"    - {type: pos_embedding, name: pos, length: 6, dim: 8}\n"
	"    - repeat: 2\n"
	"      name: block\n"
	"      layers:\n"
	"        - {type: layernorm, name: ln1}\n"
	"        - {type: attention, name: attn, heads: 2, causal: true}\n"
	"        - {type: dropout, name: attn_drop, rate: 0.2}\n"
	"        - {type: add, name: res1, inputs: [block_input, "
	"attn_drop]}\n"
	"        - {type: layernorm, name: ln2}\n"
	"        - {type: dense, name: fc, units: 32, activation: gelu}\n"
	"        - {type: dense, name: proj, units: 8}\n"
	"        - {type: dropout, name: mlp_drop, rate: 0.2}\n"
	"        - {type: add, name: res2, inputs: [res1, mlp_drop]}\n"
	"    - {type: layernorm, name: ln_f}\n"
	"    - {type: dense, name: head, units: 10%s}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

/* What gpt_marks measures beside the names: the floats the marked nodes
 * would not hold at 2 samples on the last tensor rank
 * (dt_model_seq_rows_saved), and how much smaller the slot is laid out
 * with seq_rows set on them. */
struct gpt_saved {
	int64_t saved, slot_less;
};

/* The nodes marked in gpt_text at tensor_parallel tp, with the
 * vocabulary split when vocab, the head tied to tok when tied, into
 * names (a space before each), in a model of 2 samples. */
static int
gpt_marks(int tp, bool vocab, bool tied, char *names, size_t size,
	  struct gpt_saved *sv)
{
	char text[sizeof gpt_text + 16];
	struct dt_job *job = calloc(1, sizeof *job);
	struct dt_model *m = NULL;
	struct dt_error err;
	bool marks[64];
	int n;

	snprintf(text, sizeof text, gpt_text, tied ? ", tie: tok" : "");
	ck_assert_msg(dt_job_parse("job.yaml", text, strlen(text), NULL, 0,
				   job, &err) == DT_OK, "%s", err.msg);
	ck_assert_msg(dt_model_new(job, 2, &m, &err) == DT_OK, "%s",
		      err.msg);
	ck_assert_int_le(m->n_nodes, 64);
	sv->slot_less = (int64_t)m->slot_floats;
	ck_assert_msg(dt_model_plan_tensor_parallel(m, job, tp, &err) ==
		      DT_OK, "%s", err.msg);
	if (vocab)
		ck_assert_msg(dt_model_plan_vocab_parallel(m, job, tp, false,
							   &err) == DT_OK,
			      "%s", err.msg);
	n = dt_model_seq_rows_plan(m, marks);
	names[0] = '\0';
	for (int i = 0; i < m->n_nodes; i++)
		if (marks[i])
			snprintf(names + strlen(names), size - strlen(names),
				 " %s", m->nodes[i].name);
	sv->saved = dt_model_seq_rows_saved(m, marks, 2, tp - 1, tp);
	dt_model_set_tensor_group(m, tp - 1, tp, no_allreduce, NULL);
	for (int i = 0; i < m->n_nodes; i++)
		m->nodes[i].seq_rows = marks[i];
	dt_model_relayout_acts(m);
	sv->slot_less -= (int64_t)m->slot_floats;
	dt_model_free(m);
	free(job);
	return n;
}

/* At tp 2 with the vocabulary split: pos, each block's two norms, two
 * dropouts and two residual adds, and ln_f, by hand; nothing without
 * tensor parallelism, without the vocabulary split (the embedding's
 * output and the head's input are whole, so the residual stream is) or
 * with a tied head (kept whole). What they save at 2 samples of 6 rows
 * of 8 on rank 1 of 2 (6 rows held of 12), by hand: floats a row of
 * output, gradient and scratch, pos 8 + 8, a layernorm 8 + 8 + 2, a
 * dropout 8 + 8 + 8, an add 8 + 8: 16 + 2 * (18 + 24 + 16 + 18 + 24 +
 * 16) + 18 = 266 a row, 6 * 266 = 1596; the slot laid out with the
 * marks is that much smaller. */
START_TEST(test_rows_plan)
{
	struct gpt_saved sv;
	char names[1024];
	const char *want = " pos"
		" block.0.ln1 block.0.attn_drop block.0.res1 block.0.ln2"
		" block.0.mlp_drop block.0.res2"
		" block.1.ln1 block.1.attn_drop block.1.res1 block.1.ln2"
		" block.1.mlp_drop block.1.res2 ln_f";

	ck_assert_int_eq(gpt_marks(2, true, false, names, sizeof names, &sv),
			 14);
	ck_assert_str_eq(names, want);
	ck_assert_int_eq(sv.saved, 1596);
	ck_assert_int_eq(sv.slot_less, 1596);
	ck_assert_int_eq(gpt_marks(1, true, false, names, sizeof names, &sv),
			 0);
	ck_assert_int_eq(gpt_marks(2, false, false, names, sizeof names,
				   &sv), 0);
	ck_assert_str_eq(names, "");
	ck_assert_int_eq(sv.saved, 0);
	ck_assert_int_eq(sv.slot_less, 0);
	ck_assert_int_eq(gpt_marks(2, true, true, names, sizeof names, &sv),
			 0);
}
END_TEST

static Suite *
graph_rows_suite(void)
{
	Suite *s = suite_create("graph_rows");
	TCase *tc = tcase_create("rows");

	tcase_add_test(tc, test_rows_share);
	tcase_add_loop_test(tc, test_rows_layers, 0,
			    sizeof rows_cases / sizeof rows_cases[0]);
	tcase_add_test(tc, test_rows_layout);
	tcase_add_test(tc, test_rows_plan);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(graph_rows_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
