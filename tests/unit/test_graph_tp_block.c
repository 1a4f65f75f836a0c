/* SPDX-License-Identifier: MIT */
/* test_graph_tp_block.c - Check suite for the blocks of tensor-parallel
 * slices (src/graph/tensor.c): dt_node_tp_block through
 * dt_model_tensor_tp_block for dense column and row layers (the layout
 * doc/DESIGN.md, "Tensor-parallel slices", gives, worked out by hand
 * here), dt_tp_block_take/put against element indices, and
 * dt_model_tp_own_slices leaving in each tensor the block of the whole
 * tensor an unsliced model of the same job holds. */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/layer.h"
#include "job/job.h"

/* d0 (20 -> 32, relu) pairs with d1 (32 -> 16) as column and row; d2
 * (16 -> 6) has no partner and stays whole. */
static const char mlp_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [20]\n"
	"  layers:\n"
	"    - {type: dense, name: d0, units: 32, activation: relu}\n"
	"    - {type: dense, name: d1, units: 16}\n"
	"    - {type: dense, name: d2, units: 6}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 3, steps: 10, lr: 0.1}\n";

/* No sums in these tests: the group's sum is never called. */
static void
no_allreduce(void *ctx, float *buf, size_t n)
{
	(void)ctx;
	(void)buf;
	(void)n;
	ck_abort_msg("a sum in a test without passes");
}

/* The job of mlp_text (freed with free), and its model split over tp. */
static struct dt_model *
build(int tp, struct dt_job **jobp)
{
	struct dt_job *job = calloc(1, sizeof *job);
	struct dt_model *m = NULL;
	struct dt_error err;

	ck_assert_msg(dt_job_parse("job.yaml", mlp_text, strlen(mlp_text),
				   NULL, 0, job, &err) == DT_OK, "%s",
		      err.msg);
	ck_assert_msg(dt_model_new(job, 3, &m, &err) == DT_OK, "%s",
		      err.msg);
	if (tp > 1)
		ck_assert_msg(dt_model_plan_tensor_parallel(m, job, tp, &err)
			      == DT_OK, "%s", err.msg);
	*jobp = job;
	return m;
}

/* The index of tensor node.name in m. */
static int
tensor_index(const struct dt_model *m, const char *node, const char *name)
{
	struct dt_tensor_info ti;

	for (int i = 0; i < dt_model_n_tensors(m); i++) {
		dt_model_tensor_info(m, i, &ti);
		if (strcmp(ti.node, node) == 0 && strcmp(ti.name, name) == 0)
			return i;
	}
	ck_abort_msg("no tensor %s.%s", node, name);
	return -1;
}

static void
check_block(const struct dt_tp_block *b, int64_t first_row, int64_t n_rows,
	    int64_t row_len, int64_t seg_col, int64_t seg_len)
{
	ck_assert_int_eq(b->first_row, first_row);
	ck_assert_int_eq(b->n_rows, n_rows);
	ck_assert_int_eq(b->row_len, row_len);
	ck_assert_int_eq(b->n_seg, 1);
	ck_assert_int_eq(b->seg_col[0], seg_col);
	ck_assert_int_eq(b->seg_len, seg_len);
	ck_assert_int_eq(dt_tp_block_floats(b), n_rows * seg_len);
}

/* The dense blocks at tp 2 and 4, every rank, and the replicated ones. */
START_TEST(test_dense_blocks)
{
	struct dt_job *job;
	int tp = _i == 0 ? 2 : 4;
	struct dt_model *m = build(tp, &job);
	struct dt_tp_block b;

	for (int r = 0; r < tp; r++) {
		int64_t c = 32 / tp;	/* d0's columns, d1's rows a rank */

		ck_assert(dt_model_tensor_tp_block(
			m, tensor_index(m, "d0", "weight"), r, &b));
		check_block(&b, 0, 20, 32, r * c, c);
		ck_assert(dt_model_tensor_tp_block(
			m, tensor_index(m, "d0", "bias"), r, &b));
		check_block(&b, 0, 1, 32, r * c, c);
		ck_assert(dt_model_tensor_tp_block(
			m, tensor_index(m, "d1", "weight"), r, &b));
		check_block(&b, r * c, c, 16, 0, 16);
		memset(&b, 0x5a, sizeof b);
		ck_assert(!dt_model_tensor_tp_block(
			m, tensor_index(m, "d1", "bias"), r, &b));
		ck_assert(!dt_model_tensor_tp_block(
			m, tensor_index(m, "d2", "weight"), r, &b));
		ck_assert(!dt_model_tensor_tp_block(
			m, tensor_index(m, "d2", "bias"), r, &b));
		ck_assert_int_eq(b.first_row, 0x5a5a5a5a5a5a5a5aLL);
	}
	dt_model_free(m);
	free(job);
}
END_TEST

/* Without a plan's split nothing is a block. */
START_TEST(test_no_split)
{
	struct dt_job *job;
	struct dt_model *m = build(1, &job);
	struct dt_tp_block b;

	for (int i = 0; i < dt_model_n_tensors(m); i++)
		ck_assert(!dt_model_tensor_tp_block(m, i, 0, &b));
	dt_model_free(m);
	free(job);
}
END_TEST

/* take and put on a block of three segments a row (the heads' shape):
 * each float of the block is the element of the whole its index names. */
START_TEST(test_take_put)
{
	struct dt_tp_block b = {
		.first_row = 1, .n_rows = 2, .row_len = 12, .n_seg = 3,
		.seg_col = {1, 5, 9}, .seg_len = 2,
	};
	float whole[4 * 12], blk[12], back[4 * 12];

	for (int i = 0; i < 4 * 12; i++)
		whole[i] = (float)i;
	ck_assert_int_eq(dt_tp_block_floats(&b), 12);
	dt_tp_block_take(&b, whole, blk);
	{
		/* rows 1 and 2; columns 1-2, 5-6, 9-10 */
		const float want[12] = {13, 14, 17, 18, 21, 22,
					25, 26, 29, 30, 33, 34};

		for (int i = 0; i < 12; i++)
			ck_assert_float_eq(blk[i], want[i]);
	}
	for (int i = 0; i < 4 * 12; i++)
		back[i] = -1.0f;
	dt_tp_block_put(&b, blk, back);
	for (int i = 0; i < 4 * 12; i++) {
		int row = i / 12, col = i % 12;
		bool in = row >= 1 && row <= 2 && col % 4 >= 1 &&
			  col % 4 <= 2;

		ck_assert_float_eq(back[i], in ? (float)i : -1.0f);
	}
}
END_TEST

/* Each rank's model after dt_model_tp_own_slices holds, for every tensor,
 * the block (or the whole tensor) of a model without tensor parallelism
 * built from the same job, at its new offset, and its tensor sizes are
 * the blocks'. */
START_TEST(test_own_slices_hold_blocks)
{
	struct dt_job *job0, *job;
	struct dt_model *whole = build(1, &job0);
	int tp = 2;

	for (int r = 0; r < tp; r++) {
		struct dt_model *m = build(tp, &job);
		size_t total = 0;

		dt_model_set_tensor_group(m, r, tp, no_allreduce, NULL);
		dt_model_tp_own_slices(m);
		for (int i = 0; i < dt_model_n_tensors(m); i++) {
			struct dt_tensor_info ti, wi;
			struct dt_tp_block b;
			const float *w;
			float *want;
			int64_t n;

			dt_model_tensor_info(m, i, &ti);
			dt_model_tensor_info(whole, i, &wi);
			w = dt_model_params(whole) + wi.offset;
			n = wi.size;
			want = malloc((size_t)n * sizeof *want);
			if (dt_model_tensor_tp_block(m, i, r, &b)) {
				n = dt_tp_block_floats(&b);
				dt_tp_block_take(&b, w, want);
			} else {
				memcpy(want, w, (size_t)n * sizeof *want);
			}
			ck_assert_int_eq(ti.size, n);
			ck_assert_int_eq(ti.offset, total);
			ck_assert_mem_eq(dt_model_params(m) + ti.offset, want,
					 (size_t)n * sizeof *want);
			total += (size_t)n;
			free(want);
		}
		/* 20*16 + 16 + 16*16 + 16 + 16*6 + 6 floats */
		ck_assert_int_eq(total, 320 + 16 + 256 + 16 + 96 + 6);
		ck_assert_int_eq(dt_model_n_params(m), total);
		dt_model_free(m);
		free(job);
	}
	dt_model_free(whole);
	free(job0);
}
END_TEST

static Suite *
graph_tp_block_suite(void)
{
	Suite *s = suite_create("graph_tp_block");
	TCase *tc = tcase_create("blocks");

	tcase_add_loop_test(tc, test_dense_blocks, 0, 2);
	tcase_add_test(tc, test_no_split);
	tcase_add_test(tc, test_take_put);
	tcase_add_test(tc, test_own_slices_hold_blocks);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(graph_tp_block_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
