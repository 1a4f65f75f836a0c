/* SPDX-License-Identifier: MIT */
/* test_sync_optim.c - Check suite for the gradient-sync seam's ownership
 * of the optimizer (train/sync.h): on the single-process communicator,
 * the sync makes the optimizer over the plan's span of a small MLP's
 * trained floats, its update equals an AdamW made by hand over the same
 * arena with the decay on the weights only (spans worked out from the
 * layout below), its state is what checkpoints read (buffers, span,
 * steps), a restore's steps take, and the role calls of a rank that
 * keeps its own state and only trains change nothing. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "comm/comm.h"
#include "graph/graph.h"
#include "job/job.h"
#include "optim/optim.h"
#include "plan/plan.h"
#include "plan/sync_plan.h"
#include "train/sync.h"

/* Trained arena, a dense layer's weight (in x units) then its bias:
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
	"train: {micro_batch: 2, steps: 10, lr: 0.1, optimizer: adamw,\n"
	"        weight_decay: 0.5}\n";

enum { N = 59 };

struct rig {
	struct dt_job job;
	struct dt_plan plan;
	struct dt_model *model;
	struct dt_comm *self;
	struct dt_grad_sync *sync;
	int64_t step;
};

static void
rig_init(struct rig *g)
{
	struct dt_plan_host host = { 1, 1, NULL };
	struct dt_grad_sync_cfg cfg;
	struct dt_error err;

	memset(g, 0, sizeof *g);
	ck_assert_int_eq(dt_job_parse("job.yaml", mlp_text, strlen(mlp_text),
				      NULL, 0, &g->job, &err), DT_OK);
	ck_assert_msg(dt_plan_build(&g->job, 1, &host, NULL, &g->plan,
				    &err) == DT_OK, "%s", err.msg);
	ck_assert_int_eq(dt_model_new(&g->job, 2, &g->model, &err), DT_OK);
	ck_assert_uint_eq(dt_model_n_trained(g->model), N);
	g->self = dt_comm_self_new();
	memset(&cfg, 0, sizeof cfg);
	cfg.job = &g->job;
	cfg.plan = &g->plan;
	cfg.model = g->model;
	cfg.world = g->self;
	cfg.sum_comm = g->self;
	cfg.norm_owner = 1;
	cfg.n_tensors_all = dt_model_n_tensors(g->model);
	cfg.step = &g->step;
	ck_assert_msg(dt_grad_sync_new(&cfg, &g->sync, &err) == DT_OK, "%s",
		      err.msg);
}

static void
rig_fini(struct rig *g)
{
	dt_grad_sync_free(g->sync);
	dt_model_free(g->model);
	dt_comm_free(g->self);
	dt_plan_fini(&g->plan);
}

/* The plan gives the one rank every trained float; the sync's state
 * covers them with AdamW's two moments, at step 0, zero. */
START_TEST(state_span)
{
	struct rig g;
	struct dt_grad_sync_state os;

	rig_init(&g);
	ck_assert_int_eq(g.plan.sync[0].impl, DT_SYNC_IMPL_ALLREDUCE);
	ck_assert_int_eq(g.plan.sync[0].own_lo, 0);
	ck_assert_int_eq(g.plan.sync[0].own_hi, N);
	dt_grad_sync_state(g.sync, &os);
	ck_assert_int_eq(os.n_bufs, 2);
	ck_assert_uint_eq(os.lo, 0);
	ck_assert_uint_eq(os.hi, N);
	ck_assert_int_eq(os.steps, 0);
	for (int b = 0; b < 2; b++)
		for (int i = 0; i < N; i++)
			ck_assert_float_eq(os.bufs[b][i], 0.0f);
	rig_fini(&g);
}
END_TEST

/* apply is one AdamW step over the arena with the decay on the three
 * weights only, bit for bit, and the state moves with it. */
START_TEST(apply_is_the_update)
{
	static const struct dt_optim_span weights[] = {
		{ 0, 32 }, { 36, 12 }, { 51, 6 },
	};
	struct rig g;
	struct dt_grad_sync_state os;
	struct dt_optim *ref;
	float p[N], *params, *grads;
	float **rs;
	int n_rs;

	rig_init(&g);
	params = dt_model_params(g.model);
	grads = dt_model_grads(g.model);
	for (int i = 0; i < N; i++) {
		params[i] = 0.25f * (float)(i % 7) - 0.5f;
		grads[i] = 0.125f * (float)(i % 5) - 0.25f;
	}
	memcpy(p, params, sizeof p);
	ref = dt_optim_new(&g.job, N);
	dt_optim_set_decay(ref, weights, 3, 0);
	for (int k = 0; k < 2; k++) {
		dt_grad_sync_apply(g.sync, 0.1f);
		dt_optim_step(ref, p, grads, 0.1f);
	}
	ck_assert_int_eq(memcmp(p, params, sizeof p), 0);
	dt_grad_sync_state(g.sync, &os);
	ck_assert_int_eq(os.steps, 2);
	rs = dt_optim_state(ref, &n_rs);
	ck_assert_int_eq(n_rs, os.n_bufs);
	for (int b = 0; b < n_rs; b++)
		ck_assert_int_eq(memcmp(rs[b], os.bufs[b], N * sizeof(float)),
				 0);
	dt_optim_free(ref);
	rig_fini(&g);
}
END_TEST

/* The same update with the decay on every float differs on the biases:
 * the sync did restrict it (the test above can fail). */
START_TEST(decay_restricted)
{
	struct rig g;
	struct dt_optim *all;
	float p[N], *params, *grads;

	rig_init(&g);
	params = dt_model_params(g.model);
	grads = dt_model_grads(g.model);
	for (int i = 0; i < N; i++) {
		params[i] = 1.0f;
		grads[i] = 0.5f;
	}
	memcpy(p, params, sizeof p);
	all = dt_optim_new(&g.job, N);
	dt_grad_sync_apply(g.sync, 0.1f);
	dt_optim_step(all, p, grads, 0.1f);
	ck_assert_int_eq(memcmp(p, params, 32 * sizeof(float)), 0);
	ck_assert(p[32] != params[32]);		/* d0.bias */
	ck_assert(p[58] != params[58]);		/* d2.bias */
	ck_assert_int_eq(memcmp(p + 51, params + 51, 6 * sizeof(float)), 0);
	dt_optim_free(all);
	rig_fini(&g);
}
END_TEST

/* A restore: the buffers written through the state, then its steps;
 * the next update counts from there. A rank that keeps its own state
 * and only trains: the role calls change nothing. */
START_TEST(loaded_and_roles)
{
	struct rig g;
	struct dt_grad_sync_state os;
	struct dt_error err;
	float before[N];

	rig_init(&g);
	dt_grad_sync_state(g.sync, &os);
	for (int i = 0; i < N; i++) {
		os.bufs[0][i] = 0.25f * (float)i;
		os.bufs[1][i] = 0.125f * (float)i;
	}
	dt_grad_sync_state_loaded(g.sync, 7);
	dt_grad_sync_state(g.sync, &os);
	ck_assert_int_eq(os.steps, 7);
	ck_assert_float_eq(os.bufs[0][10], 2.5f);
	ck_assert_int_eq(dt_grad_sync_trains(g.sync), 1);
	ck_assert_int_eq(dt_grad_sync_state_remote(g.sync), 0);
	ck_assert_int_eq(dt_grad_sync_has_norm(g.sync), 1);
	ck_assert_ptr_eq(dt_grad_sync_workers(g.sync), g.self);
	memcpy(before, dt_model_params(g.model), sizeof before);
	ck_assert_int_eq(dt_grad_sync_state_collect(g.sync, &err), DT_OK);
	ck_assert_int_eq(dt_grad_sync_start(g.sync, &err), DT_OK);
	ck_assert_int_eq(dt_grad_sync_serve(g.sync, &err), DT_OK);
	ck_assert_int_eq(dt_grad_sync_release(g.sync, &err), DT_OK);
	ck_assert_int_eq(memcmp(before, dt_model_params(g.model),
				sizeof before), 0);
	dt_grad_sync_apply(g.sync, 0.1f);
	dt_grad_sync_state(g.sync, &os);
	ck_assert_int_eq(os.steps, 8);
	rig_fini(&g);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("sync_optim");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, state_span);
	tcase_add_test(tc, apply_is_the_update);
	tcase_add_test(tc, decay_restricted);
	tcase_add_test(tc, loaded_and_roles);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
