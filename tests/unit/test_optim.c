/* SPDX-License-Identifier: MIT */
/* test_optim.c - Check suite for src/optim: the first updates of every
 * optimizer and the learning-rate schedules, against values worked out by
 * hand (the arithmetic is in the comments; numbers rounded to 7 digits). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "optim/optim.h"
#include "optim/schedule.h"
#include "train/decay.h"
#include "util/alloc.h"
#include "util/threadpool.h"

#define TOL 2e-6f

/* A job with only the optimizer settings filled in. */
static struct dt_job *
job_with(enum dt_optim_kind kind, double momentum, bool nesterov,
	 double weight_decay, double beta1, double beta2, double eps)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);

	job->train.optimizer = kind;
	job->train.momentum = momentum;
	job->train.nesterov = nesterov;
	job->train.weight_decay = weight_decay;
	job->train.beta1 = beta1;
	job->train.beta2 = beta2;
	job->train.eps = eps;
	return job;
}

static void
expect2(const float *p, double a, double b)
{
	ck_assert_float_eq_tol(p[0], (float)a, TOL);
	ck_assert_float_eq_tol(p[1], (float)b, TOL);
}

/* ---- SGD ----------------------------------------------------------------- */

START_TEST(test_sgd_plain)
{
	struct dt_job *job = job_with(DT_OPTIM_SGD, 0, false, 0, 0, 0, 0);
	struct dt_optim *o = dt_optim_new(job, 2);
	float p[2] = { 1.0f, -2.0f };
	const float g[2] = { 0.5f, 1.0f };
	int n_bufs = -1;

	dt_optim_state(o, &n_bufs);
	ck_assert_int_eq(n_bufs, 0);
	/* p -= 0.1 * g: (1 - 0.05, -2 - 0.1) = (0.95, -2.1) */
	dt_optim_step(o, p, g, 0.1f);
	expect2(p, 0.95, -2.1);
	/* (0.95 - 0.05, -2.1 - 0.1) = (0.9, -2.2) */
	dt_optim_step(o, p, g, 0.1f);
	expect2(p, 0.9, -2.2);
	ck_assert_int_eq(dt_optim_steps(o), 2);
	dt_optim_free(o);
	free(job);
}
END_TEST

START_TEST(test_sgd_momentum)
{
	struct dt_job *job = job_with(DT_OPTIM_SGD, 0.9, false, 0, 0, 0, 0);
	struct dt_optim *o = dt_optim_new(job, 2);
	float p[2] = { 1.0f, 1.0f };
	const float g[2] = { 1.0f, -2.0f };
	float **state;
	int n_bufs = -1;

	state = dt_optim_state(o, &n_bufs);
	ck_assert_int_eq(n_bufs, 1);
	/* mu = 0.9, lr = 0.1, g = (1, -2) every step.
	 * 1: buf = 0.9*0 + g = (1, -2);  p = (1 - 0.1, 1 + 0.2) = (0.9, 1.2) */
	dt_optim_step(o, p, g, 0.1f);
	expect2(p, 0.9, 1.2);
	expect2(state[0], 1.0, -2.0);
	/* 2: buf = 0.9*(1, -2) + (1, -2) = (1.9, -3.8);
	 *    p = (0.9 - 0.19, 1.2 + 0.38) = (0.71, 1.58) */
	dt_optim_step(o, p, g, 0.1f);
	expect2(p, 0.71, 1.58);
	/* 3: buf = 0.9*(1.9, -3.8) + (1, -2) = (2.71, -5.42);
	 *    p = (0.71 - 0.271, 1.58 + 0.542) = (0.439, 2.122) */
	dt_optim_step(o, p, g, 0.1f);
	expect2(p, 0.439, 2.122);
	expect2(state[0], 2.71, -5.42);
	dt_optim_free(o);
	free(job);
}
END_TEST

START_TEST(test_sgd_nesterov)
{
	struct dt_job *job = job_with(DT_OPTIM_SGD, 0.9, true, 0, 0, 0, 0);
	struct dt_optim *o = dt_optim_new(job, 2);
	float p[2] = { 1.0f, 1.0f };
	const float g[2] = { 1.0f, -2.0f };

	/* PyTorch's Nesterov: buf = mu*buf + g; p -= lr*(g + mu*buf).
	 * 1: buf = (1, -2); d = (1, -2) + 0.9*(1, -2) = (1.9, -3.8);
	 *    p = (1 - 0.19, 1 + 0.38) = (0.81, 1.38) */
	dt_optim_step(o, p, g, 0.1f);
	expect2(p, 0.81, 1.38);
	/* 2: buf = (1.9, -3.8); d = (1 + 1.71, -2 - 3.42) = (2.71, -5.42);
	 *    p = (0.81 - 0.271, 1.38 + 0.542) = (0.539, 1.922) */
	dt_optim_step(o, p, g, 0.1f);
	expect2(p, 0.539, 1.922);
	/* 3: buf = (2.71, -5.42); d = (1 + 2.439, -2 - 4.878)
	 *    = (3.439, -6.878); p = (0.539 - 0.3439, 1.922 + 0.6878)
	 *    = (0.1951, 2.6098) */
	dt_optim_step(o, p, g, 0.1f);
	expect2(p, 0.1951, 2.6098);
	dt_optim_free(o);
	free(job);
}
END_TEST

START_TEST(test_sgd_weight_decay)
{
	struct dt_job *job = job_with(DT_OPTIM_SGD, 0, false, 0.1, 0, 0, 0);
	struct dt_optim *o = dt_optim_new(job, 2);
	float p[2] = { 2.0f, -4.0f }, q[1] = { 2.0f };
	const float g[2] = { 0.0f, 1.0f }, zero[1] = { 0.0f };

	/* L2: g' = g + 0.1*p; lr = 0.5.
	 * 1: g' = (0 + 0.2, 1 - 0.4) = (0.2, 0.6);
	 *    p = (2 - 0.1, -4 - 0.3) = (1.9, -4.3) */
	dt_optim_step(o, p, g, 0.5f);
	expect2(p, 1.9, -4.3);
	/* 2: g' = (0.19, 1 - 0.43) = (0.19, 0.57);
	 *    p = (1.9 - 0.095, -4.3 - 0.285) = (1.805, -4.585) */
	dt_optim_step(o, p, g, 0.5f);
	expect2(p, 1.805, -4.585);
	dt_optim_free(o);
	free(job);

	/* With momentum 0.5 the decay term goes through the buffer too.
	 * 1: g' = 0 + 0.1*2 = 0.2; buf = 0.2; p = 2 - 0.5*0.2 = 1.9
	 * 2: g' = 0.19; buf = 0.5*0.2 + 0.19 = 0.29; p = 1.9 - 0.145 = 1.755 */
	job = job_with(DT_OPTIM_SGD, 0.5, false, 0.1, 0, 0, 0);
	o = dt_optim_new(job, 1);
	dt_optim_step(o, q, zero, 0.5f);
	ck_assert_float_eq_tol(q[0], 1.9f, TOL);
	dt_optim_step(o, q, zero, 0.5f);
	ck_assert_float_eq_tol(q[0], 1.755f, TOL);
	dt_optim_free(o);
	free(job);
}
END_TEST

/* ---- Adam and AdamW ------------------------------------------------------ */

/* All Adam cases below use lr = 0.5, beta1 = 0.5, beta2 = 0.75, eps = 0.25
 * (round numbers, and an eps big enough to tell "outside the square root"
 * from "inside"), p0 = (1, 2), g1 = (2, -1), g2 = (1, 3). Bias corrections:
 * t = 1: 1 - 0.5 = 0.5 and 1 - 0.75 = 0.25;
 * t = 2: 1 - 0.25 = 0.75 and 1 - 0.5625 = 0.4375. */
static const float g1[2] = { 2.0f, -1.0f }, g2[2] = { 1.0f, 3.0f };

/* The state of a parameter whose gradient stays 0 decays towards 0; where
 * it would turn subnormal (|x| < FLT_MIN = 1.1754944e-38) it is 0, for
 * Adam's m and v and for SGD's momentum, while a normal value decays as
 * before. m = 2e-38: b1 m = 1.8e-38 is normal and kept; next 1.62e-38,
 * then 1.458e-38, 1.3122e-38, 1.18098e-38 (normal), then 1.062882e-38
 * (subnormal): 0 at the sixth step. */
START_TEST(test_state_flush_subnormal)
{
	struct dt_job *job = job_with(DT_OPTIM_ADAM, 0, false, 0, 0.9, 0.999,
				      1e-8);
	struct dt_optim *o = dt_optim_new(job, 2);
	float p[2] = { 1.0f, 1.0f };
	const float zero[2] = { 0.0f, 0.0f };
	float **state;
	float want = 2e-38f;
	int n_bufs = -1;

	state = dt_optim_state(o, &n_bufs);
	state[0][0] = 2e-38f;		/* m */
	state[1][0] = 1e-3f;		/* v, so the step is defined */
	state[0][1] = 0.5f;
	state[1][1] = 1e-3f;
	for (int t = 1; t <= 5; t++) {
		dt_optim_step(o, p, zero, 1e-3f);
		want = 0.9f * want;
		ck_assert_float_eq(state[0][0], want);
		ck_assert(isnormal(state[0][0]));
	}
	dt_optim_step(o, p, zero, 1e-3f);
	ck_assert(0.9f * want < FLT_MIN);
	ck_assert_float_eq(state[0][0], 0.0f);
	ck_assert(isnormal(state[0][1]));	/* 0.5 x 0.9^6 */
	dt_optim_free(o);
	free(job);

	/* SGD momentum: buf = 0.5 buf + 0 from 3e-38: 1.5e-38, then 0. */
	job = job_with(DT_OPTIM_SGD, 0.5, false, 0, 0, 0, 0);
	o = dt_optim_new(job, 2);
	state = dt_optim_state(o, &n_bufs);
	ck_assert_int_eq(n_bufs, 1);
	state[0][0] = 3e-38f;
	dt_optim_step(o, p, zero, 0.1f);
	ck_assert_float_eq(state[0][0], 1.5e-38f);
	dt_optim_step(o, p, zero, 0.1f);
	ck_assert_float_eq(state[0][0], 0.0f);
	dt_optim_free(o);
	free(job);
}
END_TEST

START_TEST(test_adam)
{
	struct dt_job *job = job_with(DT_OPTIM_ADAM, 0, false, 0, 0.5, 0.75,
				      0.25);
	struct dt_optim *o = dt_optim_new(job, 2);
	float p[2] = { 1.0f, 2.0f };
	float **state;
	int n_bufs = -1;

	state = dt_optim_state(o, &n_bufs);
	ck_assert_int_eq(n_bufs, 2);
	/* 1: m = 0.5*g1 = (1, -0.5); v = 0.25*g1^2 = (1, 0.25);
	 *    mhat = m/0.5 = (2, -1); vhat = v/0.25 = (4, 1);
	 *    step = 0.5*mhat/(sqrt(vhat) + 0.25) = (0.5*2/2.25, 0.5*-1/1.25)
	 *         = (0.4444444, -0.4);
	 *    p = (0.5555556, 2.4). (eps inside the root would give
	 *    0.5*2/sqrt(4.25) = 0.4850713 instead.) */
	dt_optim_step(o, p, g1, 0.5f);
	expect2(p, 0.5555556, 2.4);
	expect2(state[0], 1.0, -0.5);
	expect2(state[1], 1.0, 0.25);
	/* 2: m = 0.5*(1, -0.5) + 0.5*(1, 3) = (1, 1.25);
	 *    v = 0.75*(1, 0.25) + 0.25*(1, 9) = (1, 2.4375);
	 *    mhat = m/0.75 = (1.3333333, 1.6666667);
	 *    vhat = v/0.4375 = (2.2857143, 5.5714286);
	 *    sqrt(vhat) + 0.25 = (1.5118579 + 0.25, 2.3603874 + 0.25)
	 *                      = (1.7618579, 2.6103874);
	 *    step = 0.5*mhat/that = (0.3783884, 0.3192374);
	 *    p = (0.5555556 - 0.3783884, 2.4 - 0.3192374)
	 *      = (0.1771671, 2.0807626) */
	dt_optim_step(o, p, g2, 0.5f);
	expect2(p, 0.1771671, 2.0807626);
	ck_assert_int_eq(dt_optim_steps(o), 2);
	dt_optim_free(o);
	free(job);
}
END_TEST

START_TEST(test_adam_bias_correction)
{
	/* With a constant gradient the corrected moments are exactly g and
	 * g^2 at every step, so each update is lr*g/(|g| + eps): with the
	 * usual b1 = 0.9, b2 = 0.999, eps = 1e-8, lr = 1e-3, g = 0.1:
	 * 1: m = 0.01, v = 1e-5; mhat = 0.01/0.1 = 0.1;
	 *    vhat = 1e-5/0.001 = 0.01; step = 1e-3*0.1/(0.1 + 1e-8) = 1e-3
	 *    (uncorrected it would be 1e-3*0.01/sqrt(1e-5) = 3.16e-3).
	 * 2: m = 0.009 + 0.01 = 0.019, mhat = 0.019/0.19 = 0.1;
	 *    v = 0.999e-5 + 1e-5 = 1.999e-5, vhat = 1.999e-5/0.001999 = 0.01;
	 *    step = 1e-3 again. */
	struct dt_job *job = job_with(DT_OPTIM_ADAM, 0, false, 0, 0.9, 0.999,
				      1e-8);
	struct dt_optim *o = dt_optim_new(job, 1);
	float p[1] = { 1.0f };
	const float g[1] = { 0.1f };

	dt_optim_step(o, p, g, 1e-3f);
	ck_assert_float_eq_tol(p[0], 0.999f, 1e-6f);
	dt_optim_step(o, p, g, 1e-3f);
	ck_assert_float_eq_tol(p[0], 0.998f, 1e-6f);
	dt_optim_free(o);
	free(job);
}
END_TEST

START_TEST(test_adam_l2)
{
	struct dt_job *job = job_with(DT_OPTIM_ADAM, 0, false, 0.5, 0.5, 0.75,
				      0.25);
	struct dt_optim *o = dt_optim_new(job, 2);
	float p[2] = { 1.0f, 2.0f };

	/* L2 into the gradient: d = g + 0.5*p.
	 * 1: d = (2 + 0.5, -1 + 1) = (2.5, 0); m = (1.25, 0);
	 *    v = (0.25*6.25, 0) = (1.5625, 0); mhat = (2.5, 0);
	 *    vhat = (6.25, 0); step = (0.5*2.5/(2.5 + 0.25), 0)
	 *    = (0.4545455, 0); p = (0.5454545, 2) */
	dt_optim_step(o, p, g1, 0.5f);
	expect2(p, 0.5454545, 2.0);
	/* 2: d = (1 + 0.2727273, 3 + 1) = (1.2727273, 4);
	 *    m = 0.5*(1.25, 0) + 0.5*d = (1.2613636, 2);
	 *    v = 0.75*(1.5625, 0) + 0.25*(1.6198347, 16) = (1.5768337, 4);
	 *    mhat = m/0.75 = (1.6818182, 2.6666667);
	 *    vhat = v/0.4375 = (3.6041913, 9.1428571);
	 *    sqrt(vhat) + 0.25 = (2.1484708, 3.2737158);
	 *    step = 0.5*mhat/that = (0.3913989, 0.4072844);
	 *    p = (0.1540556, 1.5927156) */
	dt_optim_step(o, p, g2, 0.5f);
	expect2(p, 0.1540556, 1.5927156);
	dt_optim_free(o);
	free(job);
}
END_TEST

START_TEST(test_adamw)
{
	struct dt_job *job = job_with(DT_OPTIM_ADAMW, 0, false, 0.5, 0.5, 0.75,
				      0.25);
	struct dt_optim *o = dt_optim_new(job, 2);
	float p[2] = { 1.0f, 2.0f };
	float **state;
	int n_bufs;

	/* Decoupled: p *= 1 - lr*wd = 1 - 0.25 = 0.75 first, then the plain
	 * Adam step of test_adam, whose moments never see the decay.
	 * 1: p = (0.75, 1.5) - (0.4444444, -0.4) = (0.3055556, 1.9) */
	dt_optim_step(o, p, g1, 0.5f);
	expect2(p, 0.3055556, 1.9);
	state = dt_optim_state(o, &n_bufs);
	expect2(state[0], 1.0, -0.5);	/* as plain Adam's */
	expect2(state[1], 1.0, 0.25);
	/* 2: p = (0.2291667, 1.425) - (0.3783884, 0.3192374)
	 *      = (-0.1492218, 1.1057626) */
	dt_optim_step(o, p, g2, 0.5f);
	expect2(p, -0.1492218, 1.1057626);
	dt_optim_free(o);
	free(job);
}
END_TEST

START_TEST(test_adam_resume)
{
	/* Restoring the moments and the step count (as a checkpoint does)
	 * continues the run bit for bit. */
	struct dt_job *job = job_with(DT_OPTIM_ADAM, 0, false, 0.01, 0.9,
				      0.999, 1e-8);
	struct dt_optim *a = dt_optim_new(job, 2), *b = dt_optim_new(job, 2);
	float pa[2] = { 1.0f, 2.0f }, pb[2];
	float **sa, **sb;
	int na, nb;

	dt_optim_step(a, pa, g1, 0.01f);
	dt_optim_step(a, pa, g2, 0.01f);
	sa = dt_optim_state(a, &na);
	sb = dt_optim_state(b, &nb);
	ck_assert_int_eq(na, nb);
	for (int i = 0; i < na; i++)
		memcpy(sb[i], sa[i], 2 * sizeof(float));
	dt_optim_set_steps(b, dt_optim_steps(a));
	memcpy(pb, pa, sizeof pb);
	dt_optim_step(a, pa, g1, 0.01f);
	dt_optim_step(b, pb, g1, 0.01f);
	ck_assert_int_eq(memcmp(pa, pb, sizeof pa), 0);
	ck_assert_int_eq(dt_optim_steps(b), 3);
	dt_optim_free(a);
	dt_optim_free(b);
	dt_optim_free(NULL);
	free(job);
}
END_TEST

START_TEST(test_optim_empty)
{
	struct dt_job *job = job_with(DT_OPTIM_ADAMW, 0, false, 0.1, 0.9,
				      0.999, 1e-8);
	struct dt_optim *o = dt_optim_new(job, 0);

	dt_optim_step(o, NULL, NULL, 0.1f);
	ck_assert_int_eq(dt_optim_steps(o), 1);
	dt_optim_free(o);
	free(job);
}
END_TEST

/* Every optimizer on pools of 2 and 3 threads gives the one-thread bits:
 * 100003 parameters make 49 chunks of 2048, three parts on three threads
 * (the last with the scalar rest), and the updates read no neighbour. */
START_TEST(test_optim_pool)
{
	static const struct {
		enum dt_optim_kind kind;
		double momentum;
		bool nesterov;
		double wd;
	} kinds[] = {
		{ DT_OPTIM_SGD, 0, false, 0.01 },
		{ DT_OPTIM_SGD, 0.9, true, 0.01 },
		{ DT_OPTIM_ADAM, 0, false, 0.01 },
		{ DT_OPTIM_ADAMW, 0, false, 0.1 },
	};
	const size_t n = 100003;
	float *p1 = dt_xalloc_floats(n), *pt = dt_xalloc_floats(n);
	float *g = dt_xalloc_floats(n);

	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
		for (int threads = 2; threads <= 3; threads++) {
			struct dt_job *job = job_with(kinds[k].kind,
						      kinds[k].momentum,
						      kinds[k].nesterov,
						      kinds[k].wd, 0.9, 0.999,
						      1e-8);
			struct dt_optim *a = dt_optim_new(job, n);
			struct dt_optim *b = dt_optim_new(job, n);
			struct dt_pool *pool = dt_pool_new(threads);
			float **sa, **sb;
			int na, nb;

			dt_optim_set_pool(b, pool);
			for (size_t i = 0; i < n; i++) {
				p1[i] = pt[i] = (float)((i * 37) % 101) / 50.0f -
						1.0f;
			}
			for (int step = 0; step < 3; step++) {
				for (size_t i = 0; i < n; i++)
					g[i] = (float)((i * 13 + (size_t)step) %
						       29) / 14.0f - 1.0f;
				dt_optim_step(a, p1, g, 0.01f);
				dt_optim_step(b, pt, g, 0.01f);
			}
			ck_assert_int_eq(memcmp(p1, pt, n * sizeof(float)), 0);
			/* and the parameters moved */
			ck_assert_float_ne(p1[5], (float)((5 * 37) % 101) /
							  50.0f - 1.0f);
			sa = dt_optim_state(a, &na);
			sb = dt_optim_state(b, &nb);
			ck_assert_int_eq(na, nb);
			for (int i = 0; i < na; i++)
				ck_assert_int_eq(memcmp(sa[i], sb[i],
							n * sizeof(float)), 0);
			dt_optim_free(a);
			dt_optim_free(b);
			dt_pool_free(pool);
			free(job);
		}
	free(p1);
	free(pt);
	free(g);
}
END_TEST

/* ---- schedules ----------------------------------------------------------- */

#define LR_TOL 1e-12

START_TEST(test_sched_constant)
{
	struct dt_lr_schedule s = { .kind = DT_SCHED_CONSTANT, .lr = 0.1 };

	ck_assert_int_eq(dt_lr_schedule_check(&s, NULL), DT_OK);
	ck_assert_double_eq_tol(dt_lr_at(&s, 0), 0.1, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 123456), 0.1, LR_TOL);
	/* Warmup over 4 steps: 0.1 * (step + 1) / 4. */
	s.warmup_steps = 4;
	ck_assert_double_eq_tol(dt_lr_at(&s, 0), 0.025, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 1), 0.05, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 2), 0.075, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 3), 0.1, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 4), 0.1, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 1000), 0.1, LR_TOL);
}
END_TEST

START_TEST(test_sched_step)
{
	struct dt_lr_schedule s = { .kind = DT_SCHED_STEP, .lr = 1.0,
				    .step_size = 10, .gamma = 0.5 };

	ck_assert_int_eq(dt_lr_schedule_check(&s, NULL), DT_OK);
	/* 1.0 * 0.5^floor(step/10) */
	ck_assert_double_eq_tol(dt_lr_at(&s, 0), 1.0, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 9), 1.0, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 10), 0.5, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 25), 0.25, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 39), 0.125, LR_TOL);
	/* Warmup 5: 0.2, 0.4, ... 1.0 at step 4; the decay clock starts at
	 * step 5 (t = 0), so the first drop is at step 15. */
	s.warmup_steps = 5;
	ck_assert_double_eq_tol(dt_lr_at(&s, 0), 0.2, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 2), 0.6, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 4), 1.0, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 5), 1.0, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 14), 1.0, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 15), 0.5, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 35), 0.125, LR_TOL);
}
END_TEST

START_TEST(test_sched_cosine)
{
	struct dt_lr_schedule s = { .kind = DT_SCHED_COSINE, .lr = 1.0,
				    .total_steps = 100, .min_lr = 0.1 };

	ck_assert_int_eq(dt_lr_schedule_check(&s, NULL), DT_OK);
	/* 0.1 + 0.9 * (1 + cos(pi * step/100)) / 2 */
	ck_assert_double_eq_tol(dt_lr_at(&s, 0), 1.0, LR_TOL);
	/* cos(pi/4) = 0.7071068: 0.1 + 0.45 * 1.7071068 = 0.8681981 */
	ck_assert_double_eq_tol(dt_lr_at(&s, 25), 0.8681980515339464, LR_TOL);
	/* cos(pi/2) = 0: 0.1 + 0.45 = 0.55 */
	ck_assert_double_eq_tol(dt_lr_at(&s, 50), 0.55, LR_TOL);
	/* cos(3pi/4) = -0.7071068: 0.1 + 0.45 * 0.2928932 = 0.2318019 */
	ck_assert_double_eq_tol(dt_lr_at(&s, 75), 0.23180194846605365,
				LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 100), 0.1, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 150), 0.1, LR_TOL);
	/* Warmup 10 of 110 total: 0.1, 0.2, ... 1.0 at step 9; then the
	 * same curve over the remaining 100 steps, shifted by 10. */
	s.warmup_steps = 10;
	s.total_steps = 110;
	ck_assert_double_eq_tol(dt_lr_at(&s, 0), 0.1, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 4), 0.5, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 9), 1.0, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 10), 1.0, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 60), 0.55, LR_TOL);
	ck_assert_double_eq_tol(dt_lr_at(&s, 110), 0.1, LR_TOL);
	/* min_lr 0: halfway is half the rate. */
	s.min_lr = 0.0;
	ck_assert_double_eq_tol(dt_lr_at(&s, 60), 0.5, LR_TOL);
}
END_TEST

START_TEST(test_sched_check)
{
	struct dt_lr_schedule s = { .kind = DT_SCHED_STEP, .lr = 0.1,
				    .step_size = 0, .gamma = 0.5 };
	struct dt_error err = { 0 };

	ck_assert_int_eq(dt_lr_schedule_check(&s, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "lr schedule: step_size: must be > 0 for a "
			 "step schedule, found 0");
	s.step_size = 10;
	s.gamma = 1.5;
	ck_assert_int_eq(dt_lr_schedule_check(&s, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "lr schedule: gamma: must be in (0, 1] for "
			 "a step schedule, found 1.5");
	s.gamma = 0.5;
	s.lr = -0.1;
	ck_assert_int_eq(dt_lr_schedule_check(&s, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "lr schedule: lr: must be a finite number "
			 "> 0, found -0.1");
	s.lr = 0.1;
	s.warmup_steps = -1;
	ck_assert_int_eq(dt_lr_schedule_check(&s, &err), DT_ERR_JOB);

	s = (struct dt_lr_schedule){ .kind = DT_SCHED_COSINE, .lr = 0.1,
				     .warmup_steps = 10, .total_steps = 10 };
	ck_assert_int_eq(dt_lr_schedule_check(&s, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "lr schedule: total_steps: must be greater "
			 "than warmup_steps (10) for a cosine schedule, "
			 "found 10");
	s.total_steps = 20;
	s.min_lr = 0.2;
	ck_assert_int_eq(dt_lr_schedule_check(&s, &err), DT_ERR_JOB);
	ck_assert_str_eq(err.msg, "lr schedule: min_lr: must be in [0, lr] = "
			 "[0, 0.1], found 0.2");
	s.min_lr = 0.01;
	ck_assert_int_eq(dt_lr_schedule_check(&s, &err), DT_OK);
}
END_TEST

/* ---- train.decay ------------------------------------------------------ */

/* One AdamW step on a dense layer, 2 inputs x 2 units with a bias (lr 0.1,
 * weight_decay 0.1, betas 0.9 and 0.999), every parameter 1 and the
 * gradient +0.5 or -1 on the weight, +0.25 on the bias. At step 1 the
 * bias corrections make mhat = g and vhat = g^2, so the Adam step is
 * lr g / (|g| + eps) = 0.1 sign(g) (to 2e-8), after the decoupled decay
 * p (1 - lr wd) = 0.99 where it applies:
 *   weight g = +0.5: 0.99 - 0.1 = 0.89;  g = -1: 0.99 + 0.1 = 1.09
 *   bias, decay weights (rank 1, not decayed): 1 - 0.1 = 0.9
 *   bias, decay all: 0.99 - 0.1 = 0.89 */
static void
adamw_dense_step(enum dt_decay_set set, double bias_expect)
{
	struct dt_job *job = job_with(DT_OPTIM_ADAMW, 0, false, 0.1, 0.9,
				      0.999, 1e-8);
	struct dt_model *m = NULL;
	struct dt_error err;
	struct dt_optim_span *spans;
	struct dt_optim *o;
	size_t n, n_spans;
	float *p, *g;
	int seen = 0;

	snprintf(job->path, sizeof job->path, "job.yaml");
	job->train.decay = set;
	job->model.n_input_dims = 1;
	job->model.input_shape[0] = 2;
	job->model.n_layers = 1;
	job->model.loss = DT_LOSS_SOFTMAX_CROSS_ENTROPY;
	job->model.layers[0].kind = DT_LAYER_DENSE;
	snprintf(job->model.layers[0].name, sizeof job->model.layers[0].name,
		 "dense0");
	job->model.layers[0].units = 2;
	job->model.layers[0].bias = true;
	ck_assert_int_eq(dt_model_new(job, 1, &m, &err), DT_OK);
	n = dt_model_n_trained(m);
	ck_assert_uint_eq(n, 6);
	p = dt_xalloc_floats(n);
	g = dt_xalloc_floats(n);
	for (size_t i = 0; i < n; i++)
		p[i] = 1.0f;
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		for (int64_t i = 0; i < ti.size; i++)
			g[ti.offset + (size_t)i] = ti.n_dims == 1 ? 0.25f :
						   i % 2 == 0 ? 0.5f : -1.0f;
	}
	o = dt_optim_new(job, n);
	spans = dt_decay_spans(m, set, &n_spans);
	ck_assert_uint_eq(n_spans, 1);
	dt_optim_set_decay(o, spans, n_spans, 0);
	free(spans);
	dt_optim_step(o, p, g, 0.1f);
	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		for (int64_t i = 0; i < ti.size; i++) {
			float v = p[ti.offset + (size_t)i];

			if (ti.n_dims == 1)
				ck_assert_float_eq_tol(v, (float)bias_expect,
						       TOL);
			else
				ck_assert_float_eq_tol(v, i % 2 == 0 ? 0.89f :
						       1.09f, TOL);
			seen++;
		}
	}
	ck_assert_int_eq(seen, 6);
	dt_optim_free(o);
	free(p);
	free(g);
	dt_model_free(m);
	free(job);
}

START_TEST(test_adamw_decay_weights)
{
	adamw_dense_step(DT_DECAY_WEIGHTS, 0.9);
}
END_TEST

START_TEST(test_adamw_decay_all)
{
	adamw_dense_step(DT_DECAY_ALL, 0.89);
}
END_TEST

/* Spans cut the arena into decayed and undecayed runs, also across the
 * pool's chunks (2048 floats): SGD with wd 0.5, lr 1, g 0, p 1 leaves
 * p = 0.5 inside a span and 1 outside, at every element. */
START_TEST(test_decay_spans_chunks)
{
	struct dt_job *job = job_with(DT_OPTIM_SGD, 0, false, 0.5, 0, 0, 0);
	enum { N = 5000 };
	const struct dt_optim_span spans[] = {
		{ 10, 20 }, { 2040, 20 }, { 4096, 1000 },
	};
	struct dt_pool *pool = dt_pool_new(2);
	struct dt_optim *o = dt_optim_new(job, N - 100);
	float *p = dt_xalloc_floats(N), *g = dt_xalloc_floats(N);

	for (size_t i = 0; i < N; i++)
		p[i] = 1.0f;
	/* Arena base 100: this optimizer holds elements [100, 5000). */
	dt_optim_set_pool(o, pool);
	dt_optim_set_decay(o, spans, 3, 100);
	dt_optim_step(o, p, g, 1.0f);
	for (size_t i = 0; i < N - 100; i++) {
		size_t a = i + 100;
		int in = (a >= 2040 && a < 2060) || a >= 4096;

		ck_assert_msg(p[i] == (in ? 0.5f : 1.0f), "element %zu: %g",
			      i, (double)p[i]);
	}
	dt_optim_free(o);
	dt_pool_free(pool);
	free(p);
	free(g);
	free(job);
}
END_TEST

static Suite *
optim_suite(void)
{
	Suite *s = suite_create("optim");
	TCase *tc = tcase_create("optimizers");

	tcase_add_test(tc, test_sgd_plain);
	tcase_add_test(tc, test_sgd_momentum);
	tcase_add_test(tc, test_sgd_nesterov);
	tcase_add_test(tc, test_sgd_weight_decay);
	tcase_add_test(tc, test_adam);
	tcase_add_test(tc, test_state_flush_subnormal);
	tcase_add_test(tc, test_adam_bias_correction);
	tcase_add_test(tc, test_adam_l2);
	tcase_add_test(tc, test_adamw);
	tcase_add_test(tc, test_adam_resume);
	tcase_add_test(tc, test_optim_empty);
	tcase_add_test(tc, test_optim_pool);
	tcase_add_test(tc, test_adamw_decay_weights);
	tcase_add_test(tc, test_adamw_decay_all);
	tcase_add_test(tc, test_decay_spans_chunks);
	suite_add_tcase(s, tc);

	tc = tcase_create("schedules");
	tcase_add_test(tc, test_sched_constant);
	tcase_add_test(tc, test_sched_step);
	tcase_add_test(tc, test_sched_cosine);
	tcase_add_test(tc, test_sched_check);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(optim_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
