/* SPDX-License-Identifier: MIT */
/* test_sync.c - Check suite for the pieces of the bucketed gradient sync:
 * the bucket assignment (train/sync.c, dt_grad_buckets_make) against
 * buckets worked out by hand for a small MLP, the backward hook of
 * graph/graph.c (every node reported once, last to first), and the
 * bfloat16 conversions (util/bf16.c) against bit patterns worked out by
 * hand from IEEE 754 round-to-nearest-even. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "graph/graph.h"
#include "job/job.h"
#include "plan/sync_plan.h"
#include "train/sync.h"
#include "util/bf16.h"

/* Nodes d0 (8 -> 4), d1 (4 -> 3), d2 (3 -> 2) and the loss. Trained
 * arena, a dense layer's weight (in x units) then its bias:
 *   d0.weight [0, 32)  d0.bias [32, 36)
 *   d1.weight [36, 48) d1.bias [48, 51)
 *   d2.weight [51, 57) d2.bias [57, 59)  */
static const char mlp_text[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: dense, name: d0, units: 4}\n"
	"    - {type: dense, name: d1, units: 3}\n"
	"    - {type: dense, name: d2, units: 2}\n"
	"  loss: softmax_cross_entropy\n"
	"train: {micro_batch: 2, steps: 10, lr: 0.1}\n";

static struct dt_job job;

static struct dt_model *
build(void)
{
	struct dt_model *m = NULL;
	struct dt_error err;
	enum dt_status st;

	st = dt_job_parse("job.yaml", mlp_text, strlen(mlp_text), NULL, 0,
			  &job, &err);
	ck_assert_msg(st == DT_OK, "%s", err.msg);
	st = dt_model_new(&job, 2, &m, &err);
	ck_assert_msg(st == DT_OK, "%s", err.msg);
	ck_assert_uint_eq(dt_model_n_trained(m), 59);
	return m;
}

static const char *
node_name(const struct dt_model *m, int node)
{
	struct dt_layer_info li;

	dt_model_layer_info(m, node, &li);
	return li.name;
}

static void
expect_bucket(const struct dt_model *m, const struct dt_grad_bucket *b,
	      size_t lo, size_t hi, const char *ready)
{
	struct dt_tensor_info first, last;

	ck_assert_uint_eq(b->lo, lo);
	ck_assert_uint_eq(b->hi, hi);
	ck_assert_str_eq(node_name(m, b->ready_node), ready);
	/* Its tensor range: the first starts at lo, the last ends at hi
	 * (this model has no empty or untrained tensor). */
	ck_assert_int_lt(b->t_lo, b->t_hi);
	dt_model_tensor_info(m, b->t_lo, &first);
	dt_model_tensor_info(m, b->t_hi - 1, &last);
	ck_assert_uint_eq(first.offset, lo);
	ck_assert_uint_eq(last.offset + (size_t)last.size, hi);
}

START_TEST(buckets_reverse_order)
{
	struct dt_model *m = build();
	struct dt_grad_bucket b[8];
	int n;

	/* 10 floats: d2.bias + d2.weight (8) + d1.bias (3) reach 11;
	 * d1.weight (12) alone is past 10; d0.bias (4) then d0.weight (32),
	 * a tensor larger than a bucket, closes the last one. */
	n = dt_grad_buckets_make(m, 10, b);
	ck_assert_int_eq(n, 3);
	expect_bucket(m, &b[0], 48, 59, "d1");
	expect_bucket(m, &b[1], 36, 48, "d1");
	expect_bucket(m, &b[2], 0, 36, "d0");

	/* One float: every tensor its own bucket, from the top down. */
	n = dt_grad_buckets_make(m, 1, b);
	ck_assert_int_eq(n, 6);
	expect_bucket(m, &b[0], 57, 59, "d2");
	expect_bucket(m, &b[1], 51, 57, "d2");
	expect_bucket(m, &b[2], 48, 51, "d1");
	expect_bucket(m, &b[3], 36, 48, "d1");
	expect_bucket(m, &b[4], 32, 36, "d0");
	expect_bucket(m, &b[5], 0, 32, "d0");

	/* 12 floats: d2 (8) + d1.bias (3) = 11 stay open, d1.weight makes
	 * 23; then d0's two. */
	n = dt_grad_buckets_make(m, 12, b);
	ck_assert_int_eq(n, 2);
	expect_bucket(m, &b[0], 36, 59, "d1");
	expect_bucket(m, &b[1], 0, 36, "d0");

	/* Larger than the model, and 0: one bucket of everything. */
	n = dt_grad_buckets_make(m, 1000, b);
	ck_assert_int_eq(n, 1);
	expect_bucket(m, &b[0], 0, 59, "d0");
	n = dt_grad_buckets_make(m, 0, b);
	ck_assert_int_eq(n, 1);
	expect_bucket(m, &b[0], 0, 59, "d0");
	dt_model_free(m);
}
END_TEST

/* The plan's largest bucket (plan/sync_plan.h, dt_plan_bucket_max, which
 * the TCP eager limit is chosen from) follows the trainer's rule: the
 * values worked out above (cap 10: 36 floats, d0's bucket; 1: d0.weight's
 * 32; 12: 36; 1000 and 0: all 59), and at every cap from 1 to 64 the
 * largest of dt_grad_buckets_make's buckets. */
START_TEST(plan_bucket_max_agrees)
{
	struct dt_model *m = build();
	struct dt_grad_bucket b[8];

	ck_assert_int_eq(dt_plan_bucket_max(m, 10), 36);
	ck_assert_int_eq(dt_plan_bucket_max(m, 1), 32);
	ck_assert_int_eq(dt_plan_bucket_max(m, 12), 36);
	ck_assert_int_eq(dt_plan_bucket_max(m, 1000), 59);
	ck_assert_int_eq(dt_plan_bucket_max(m, 0), 59);
	ck_assert_int_eq(dt_plan_bucket_max(NULL, 10), 0);
	for (int cap = 1; cap <= 64; cap++) {
		int n = dt_grad_buckets_make(m, (size_t)cap, b);
		size_t most = 0;

		for (int i = 0; i < n; i++)
			if (b[i].hi - b[i].lo > most)
				most = b[i].hi - b[i].lo;
		ck_assert_msg(dt_plan_bucket_max(m, cap) == (int64_t)most,
			      "cap %d: plan %lld, trainer %zu", cap,
			      (long long)dt_plan_bucket_max(m, cap), most);
	}
	dt_model_free(m);
}
END_TEST

struct hook_log {
	int n;
	int node[16];
	float d2_bias_grad;	/* d2.bias's gradient when d2 reported */
	const float *grads;
};

static void
log_node(void *ctx, int node)
{
	struct hook_log *h = ctx;

	if (h->n < 16)
		h->node[h->n] = node;
	h->n++;
	if (node == 2)
		h->d2_bias_grad = h->grads[57] + h->grads[58];
}

START_TEST(backward_hook_order)
{
	struct dt_model *m = build();
	float x[16];
	int32_t y[2] = { 0, 1 };
	struct hook_log h = { 0 };
	double loss;

	for (int i = 0; i < 16; i++)
		x[i] = (float)(i % 5) * 0.25f - 0.5f;
	h.grads = dt_model_grads(m);
	dt_model_set_backward_hook(m, log_node, &h);
	dt_model_zero_grads(m);
	dt_model_train_step(m, x, y, 2, 1.0f, &loss, NULL);
	/* The loss (3), d2, d1, d0, each once. */
	ck_assert_int_eq(h.n, 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(h.node[i], 3 - i);
	/* d2's bias gradient was there when d2 reported: the softmax
	 * gradient summed over classes is 0 per row, so compare with the
	 * final value instead of a number. */
	ck_assert(h.d2_bias_grad == h.grads[57] + h.grads[58]);
	ck_assert(h.grads[57] != 0.0f);
	dt_model_set_backward_hook(m, NULL, NULL);
	h.n = 0;
	dt_model_train_step(m, x, y, 2, 1.0f, &loss, NULL);
	ck_assert_int_eq(h.n, 0);
	dt_model_free(m);
}
END_TEST

static uint32_t
bits(float x)
{
	uint32_t u;

	memcpy(&u, &x, sizeof u);
	return u;
}

static float
from_bits(uint32_t u)
{
	float x;

	memcpy(&x, &u, sizeof x);
	return x;
}

START_TEST(bf16_round_trip)
{
	/* (float bits, bf16 bits): exact, below / at / above one half of
	 * the dropped 16 bits, ties to even both ways, overflow to
	 * infinity, specials, subnormals. */
	static const uint32_t cases[][2] = {
		{ 0x3f800000u, 0x3f80u },	/* 1 */
		{ 0xc0200000u, 0xc020u },	/* -2.5 */
		{ 0x40490fdbu, 0x4049u },	/* pi -> 3.140625 */
		{ 0x3f808000u, 0x3f80u },	/* 1 + 2^-8: tie, even below */
		{ 0x3f818000u, 0x3f82u },	/* 1 + 3*2^-8: tie, even above */
		{ 0x3f808001u, 0x3f81u },	/* just above the tie */
		{ 0x3f807fffu, 0x3f80u },	/* just below it */
		{ 0x3fffc000u, 0x4000u },	/* carry into the exponent */
		{ 0x7f7fffffu, 0x7f80u },	/* FLT_MAX -> +inf */
		{ 0x7f7f7fffu, 0x7f7fu },	/* stays the largest finite */
		{ 0x7f800000u, 0x7f80u },	/* +inf */
		{ 0xff800000u, 0xff80u },	/* -inf */
		{ 0x7fc00000u, 0x7fc0u },	/* quiet NaN */
		{ 0x7f800001u, 0x7fc0u },	/* NaN in the low bits only */
		{ 0x80000000u, 0x8000u },	/* -0 */
		{ 0x00008000u, 0x0000u },	/* subnormal tie to even 0 */
		{ 0x00018000u, 0x0002u },	/* subnormal tie to even 2 */
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint16_t h = dt_bf16_from_f32(from_bits(cases[i][0]));

		ck_assert_msg(h == cases[i][1], "0x%08x -> 0x%04x, expected "
			      "0x%04x", cases[i][0], h, cases[i][1]);
		ck_assert_uint_eq(bits(dt_bf16_to_f32(h)),
				  (uint32_t)cases[i][1] << 16);
	}
	ck_assert(dt_bf16_to_f32(0x4049u) == 3.140625f);
	ck_assert(dt_bf16_to_f32(0x3f81u) == 1.0078125f);

	/* The wire's sum of two values, as the MPI operation makes it:
	 * widen, add in float, round: 1 + 2^-8 rounds (tie) to 1, and
	 * 1.0078125 + 2^-8 to 1.015625 (tie, even above). */
	float one = dt_bf16_to_f32(0x3f80u), eps = dt_bf16_to_f32(0x3b80u);
	ck_assert_uint_eq(dt_bf16_from_f32(one + eps), 0x3f80u);
	ck_assert_uint_eq(dt_bf16_from_f32(dt_bf16_to_f32(0x3f81u) + eps),
			  0x3f82u);

	float in[3] = { 1.0f, -2.5f, from_bits(0x3f808001u) }, out[3];
	uint16_t w[3];

	dt_bf16_pack(w, in, 3);
	dt_bf16_unpack(out, w, 3);
	ck_assert(out[0] == 1.0f && out[1] == -2.5f &&
		  out[2] == 1.0078125f);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("sync");
	TCase *tc = tcase_create("sync");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, buckets_reverse_order);
	tcase_add_test(tc, plan_bucket_max_agrees);
	tcase_add_test(tc, backward_hook_order);
	tcase_add_test(tc, bf16_round_trip);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
