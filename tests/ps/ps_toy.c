/* SPDX-License-Identifier: MIT */
/* ps_toy.c - the parameter server (src/comm/ps.h) on a toy problem, under
 * mpirun (tests/integration/ps-toy.sh runs it).
 *
 * The problem: least squares on a fixed random linear model,
 *   loss(theta) = mean over the global batch of (x . theta - y)^2 / 2,
 *   y = x . theta_star + 0.01 * noise,   D = 37 parameters,
 * with 8 fresh samples per worker per step, drawn by the counter-based RNG
 * from (step, global sample index), so every run sees the same data. Each
 * worker's gradient is scaled by 1/global_batch, as the training loop does.
 *
 *   ps_toy equiv S        S servers, the other ranks workers. For plain SGD,
 *                         SGD with Nesterov momentum and Adam, over 30 steps:
 *                         sync PS equals the all-reduce formulation
 *                         (allreduce of the workers' gradients, one
 *                         optimizer step) to 1e-6 relative at every step;
 *                         async with max_staleness 0 equals sync bit for
 *                         bit; a checkpoint at step 15 (dt_ps_gather_state)
 *                         holds the reference's parameters and optimizer
 *                         state, and a fresh PS resumed from it
 *                         (dt_ps_scatter_state) ends where the reference
 *                         does; the staleness stats are all 0 and the
 *                         bytes per update what dt_ps_server_step_bytes
 *                         says.
 *   ps_toy stale S B T    async with max_staleness B for T steps, normally
 *                         with DTRAIN_TEST_DELAY_MS/RANK making one worker
 *                         slow: no applied gradient is staler than B (the
 *                         histogram's overflow bucket stays 0, the windows'
 *                         max <= B), the histogram has gradients at B (the
 *                         fast workers ran ahead), the fast workers had made
 *                         more steps than the slow one by the time it was
 *                         half way, B at most (checked for B >= 2;
 *                         wall-clock stamps; CLOCK_MONOTONIC is
 *                         shared by the ranks of one node, so run on one),
 *                         all workers end with the same parameters and the
 *                         loss fell.
 * Any failed check prints "FAIL: ..." and aborts the job (exit 1). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"
#include "comm/ps.h"
#include "optim/optim.h"
#include "util/alloc.h"
#include "util/rng.h"

#define D 37		/* parameters (odd, so two shards differ) */
#define B 8		/* samples per worker per step */
#define SEED 20240611u
#define REL 1e-6	/* "to 1e-6 relative": max |a - b| <= REL * max |b| */

static struct dt_comm *g_world;

static void
fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL: rank %d: ", dt_comm_rank(g_world));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	dt_comm_abort(g_world, 1);
}

static void
ok(enum dt_status st, const struct dt_error *err, const char *what)
{
	if (st != DT_OK)
		fail("%s: %s", what, err->msg);
}

/* Feature d of global sample g, and the model it is fitted to. */
static float
feature(int64_t g, int d)
{
	return dt_rng_normal(SEED, DT_RNG_SAMPLE, (uint64_t)g, (uint64_t)d);
}

static float
target(int64_t g)
{
	double y = 0;

	for (int d = 0; d < D; d++)
		y += feature(g, d) *
		     (dt_rng_uniform(SEED, DT_RNG_INIT, 1, (uint64_t)d) - 0.5);
	return (float)(y + 0.01 * dt_rng_normal(SEED, DT_RNG_DROPOUT,
						(uint64_t)g, 0));
}

/* Worker w's gradient at step k (its 8 samples of the W * 8 in the global
 * batch), scaled by 1/global_batch; returns its part of the summed loss. */
static double
grad(const float *theta, int w, int n_workers, int64_t k, float *g)
{
	int64_t gb = (int64_t)n_workers * B;
	double loss = 0;

	memset(g, 0, D * sizeof *g);
	for (int i = 0; i < B; i++) {
		int64_t s = k * gb + (int64_t)w * B + i;
		float x[D], r = -target(s);

		for (int d = 0; d < D; d++) {
			x[d] = feature(s, d);
			r += x[d] * theta[d];
		}
		loss += 0.5 * (double)r * r;
		for (int d = 0; d < D; d++)
			g[d] += r * x[d] / (float)gb;
	}
	return loss;
}

/* Mean loss on 256 held-out samples. */
static double
eval_loss(const float *theta)
{
	double sum = 0;

	for (int i = 0; i < 256; i++) {
		int64_t s = -1 - i;	/* never a training sample */
		double r = -target(s);

		for (int d = 0; d < D; d++)
			r += feature(s, d) * theta[d];
		sum += 0.5 * r * r;
	}
	return sum / 256;
}

static void
init_theta(float *theta)
{
	for (int d = 0; d < D; d++)
		theta[d] = 0.1f * dt_rng_normal(SEED, DT_RNG_INIT, 2,
						(uint64_t)d);
}

/* A schedule that changes every step, so a wrong step number shows. */
struct sched {
	double lr;
	int64_t total;
};

static double
lr_at(int64_t step, void *ctx)
{
	const struct sched *s = ctx;

	return s->lr * (1.0 - 0.5 * (double)step / (double)s->total);
}

static double
max_abs_diff(const float *a, const float *b, size_t n, double *scale)
{
	double m = 0, s = 0;

	for (size_t i = 0; i < n; i++) {
		if (fabs((double)a[i] - b[i]) > m)
			m = fabs((double)a[i] - b[i]);
		if (fabs((double)b[i]) > s)
			s = fabs((double)b[i]);
	}
	*scale = s;
	return m;
}

static void
expect_close(const float *got, const float *want, size_t n, const char *what,
	     int64_t step)
{
	double scale, diff = max_abs_diff(got, want, n, &scale);

	if (diff > REL * scale)
		fail("%s, step %lld: max |diff| %.3g > %g * %.3g", what,
		     (long long)step, diff, REL, scale);
}

/* ---- equiv ------------------------------------------------------------- */

struct optcase {
	const char *name;
	enum dt_optim_kind kind;
	double lr, momentum;
	bool nesterov;
};

#define STEPS 30
#define CKPT 15

/* One optimizer's reference, kept on every worker: the parameters after
 * each step and the optimizer state after step CKPT. */
struct reference {
	float theta[STEPS + 1][D];
	float state[2][D];
	int n_bufs;
};

static void
run_reference(struct dt_comm *workers, const struct dt_job *job,
	      const struct sched *sc, struct reference *ref)
{
	struct dt_optim *o = dt_optim_new(job, D);
	int w = dt_comm_rank(workers), nw = dt_comm_size(workers);
	float theta[D], g[D];
	struct dt_error err;

	init_theta(theta);
	memcpy(ref->theta[0], theta, sizeof theta);
	for (int64_t k = 0; k < STEPS; k++) {
		grad(theta, w, nw, k, g);
		ok(dt_comm_allreduce_sum_f32(workers, g, D, &err), &err,
		   "allreduce");
		dt_optim_step(o, theta, g, (float)lr_at(k, (void *)sc));
		memcpy(ref->theta[k + 1], theta, sizeof theta);
		if (k + 1 == CKPT) {
			float **bufs = dt_optim_state(o, &ref->n_bufs);

			for (int b = 0; b < ref->n_bufs; b++)
				memcpy(ref->state[b], bufs[b], sizeof theta);
		}
	}
	dt_optim_free(o);
}

/* A PS run from step `from` (0, or CKPT after a resume) to STEPS; the
 * workers record their parameters after each step in trace. At CKPT (when
 * from is 0) worker 0 gathers the state into ck_theta / ck_state. */
static void
run_ps(struct dt_comm *world, const struct dt_job *job, int n_servers,
       bool async, const struct sched *sc, int64_t from,
       float (*trace)[D], float *ck_theta, float (*ck_state)[D],
       int *bufs_out)
{
	struct dt_ps_cfg cfg = { n_servers, async, 0, D, job, NULL, 0 };
	struct dt_ps *ps;
	struct dt_error err;
	float theta[D], g[D];

	ok(dt_ps_new(world, &cfg, &ps, &err), &err, "dt_ps_new");
	*bufs_out = dt_ps_optim_bufs(ps);
	if (from > 0) {
		float *bufs[2] = { ck_state[0], ck_state[1] };

		memcpy(theta, ck_theta, sizeof theta);
		ok(dt_ps_scatter_state(ps, theta, bufs, from, &err), &err,
		   "dt_ps_scatter_state");
		if (!dt_ps_is_server(ps))
			expect_close(theta, ck_theta, D, "scattered params",
				     from);
	}
	if (dt_ps_is_server(ps)) {
		init_theta(theta);
		ok(dt_ps_serve(ps, from > 0 ? NULL : theta, lr_at, (void *)sc,
			       &err), &err, "dt_ps_serve");
		dt_ps_free(ps);
		return;
	}
	struct dt_comm *workers = dt_ps_workers(ps);
	int w = dt_comm_rank(workers), nw = dt_comm_size(workers);

	if (from == 0)
		init_theta(theta);
	for (int64_t k = from; k < STEPS; k++) {
		grad(theta, w, nw, k, g);
		ok(dt_ps_step(ps, g, theta, k, &err), &err, "dt_ps_step");
		memcpy(trace[k + 1], theta, sizeof theta);
		if (k + 1 == CKPT && from == 0) {
			float *bufs[2] = { ck_state[0], ck_state[1] };
			int64_t steps = -1;

			ok(dt_ps_gather_state(ps, theta, w == 0 ? bufs : NULL,
					      w == 0 ? &steps : NULL, &err),
			   &err, "dt_ps_gather_state");
			/* Every worker holds the checkpoint's parameters. */
			memcpy(ck_theta, theta, sizeof theta);
			if (w == 0 && steps != CKPT)
				fail("checkpoint step %lld, expected %d",
				     (long long)steps, CKPT);
		}
		if (w == 0 && k + 1 == 10) {
			struct dt_ps_stats s;

			ok(dt_ps_stats(ps, &s, &err), &err, "dt_ps_stats");
			if (s.staleness_max != 0 || s.version != 10 ||
			    s.applied != 10LL * nw * n_servers)
				fail("sync stats at step 10: max %lld version "
				     "%lld applied %lld",
				     (long long)s.staleness_max,
				     (long long)s.version,
				     (long long)s.applied);
		}
	}
	ok(dt_ps_done(ps, theta, &err), &err, "dt_ps_done");
	expect_close(theta, trace[STEPS], D, "final params", STEPS);
	if (w == 0) {
		struct dt_ps_stats s;
		double want = (double)dt_ps_server_step_bytes(D, n_servers, nw);

		ok(dt_ps_stats(ps, &s, &err), &err, "dt_ps_stats (final)");
		if (s.hist[s.n_hist - 1] != 0 || s.hist[0] !=
		    (STEPS - from) * nw * n_servers || s.version != STEPS)
			fail("final stats: hist[0] %lld overflow %lld version "
			     "%lld", (long long)s.hist[0],
			     (long long)s.hist[s.n_hist - 1],
			     (long long)s.version);
		/* Plus one reply per worker at the end (its last pull). */
		if (s.server_bytes_per_step < want ||
		    s.server_bytes_per_step > want * 1.1)
			fail("server bytes per step %.1f, plan says %.0f",
			     s.server_bytes_per_step, want);
	}
	dt_ps_free(ps);
}

static void
equiv(struct dt_comm *world, int n_servers)
{
	static const struct optcase cases[] = {
		{ "sgd", DT_OPTIM_SGD, 0.05, 0, false },
		{ "sgd-nesterov", DT_OPTIM_SGD, 0.02, 0.9, true },
		{ "adam", DT_OPTIM_ADAM, 0.01, 0, false },
	};
	bool server = dt_comm_rank(world) >= dt_comm_size(world) - n_servers;
	struct dt_comm *workers;
	struct dt_error err;

	/* The reference runs among the workers alone. */
	ok(dt_comm_split(world, server ? DT_COMM_SPLIT_NONE : 0,
			 dt_comm_rank(world), &workers, &err), &err,
	   "dt_comm_split");
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const struct optcase *oc = &cases[c];
		struct dt_job *job = dt_xcalloc(1, sizeof *job);
		struct sched sc = { oc->lr, STEPS };
		struct reference *ref = dt_xcalloc(1, sizeof *ref);
		float (*sync)[D] = dt_xcalloc(STEPS + 1, sizeof *sync);
		float (*async0)[D] = dt_xcalloc(STEPS + 1, sizeof *async0);
		float (*resumed)[D] = dt_xcalloc(STEPS + 1, sizeof *resumed);
		float ck_theta[D], ck_state[2][D], ck2_theta[D],
		      ck2_state[2][D];
		int n_bufs = 0;

		job->train.optimizer = oc->kind;
		job->train.momentum = oc->momentum;
		job->train.nesterov = oc->nesterov;
		job->train.beta1 = 0.9;
		job->train.beta2 = 0.999;
		job->train.eps = 1e-8;
		if (!server)
			run_reference(workers, job, &sc, ref);
		run_ps(world, job, n_servers, false, &sc, 0, sync, ck_theta,
		       ck_state, &n_bufs);
		run_ps(world, job, n_servers, true, &sc, 0, async0, ck2_theta,
		       ck2_state, &n_bufs);
		if (!server) {
			for (int k = 1; k <= STEPS; k++) {
				expect_close(sync[k], ref->theta[k], D,
					     "sync PS vs allreduce", k);
				if (memcmp(async0[k], sync[k],
					   sizeof sync[k]) != 0)
					fail("%s: async (max_staleness 0) "
					     "differs from sync at step %d",
					     oc->name, k);
			}
		}
		if (!server)
			expect_close(ck_theta, ref->theta[CKPT], D,
				     "checkpoint params", CKPT);
		if (dt_comm_rank(world) == 0) {
			if (n_bufs != ref->n_bufs)
				fail("%d optimizer buffers, reference has %d",
				     n_bufs, ref->n_bufs);
			for (int b = 0; b < n_bufs; b++)
				expect_close(ck_state[b], ref->state[b], D,
					     "checkpoint optimizer state",
					     CKPT);
		}
		/* Resume from worker 0's checkpoint in a fresh PS. */
		run_ps(world, job, n_servers, false, &sc, CKPT, resumed,
		       ck_theta, ck_state, &n_bufs);
		if (!server)
			for (int k = CKPT + 1; k <= STEPS; k++)
				expect_close(resumed[k], ref->theta[k], D,
					     "resumed PS vs allreduce", k);
		if (dt_comm_rank(world) == 0)
			printf("%s: %d servers, %d workers: sync = allreduce "
			       "(1e-6), async(0) = sync, checkpoint and "
			       "resume agree; final loss %.4g (from %.4g)\n",
			       oc->name, n_servers,
			       dt_comm_size(world) - n_servers,
			       eval_loss(ref->theta[STEPS]),
			       eval_loss(ref->theta[0]));
		free(resumed);
		free(async0);
		free(sync);
		free(ref);
		free(job);
	}
	dt_comm_free(workers);
}

/* ---- stale ------------------------------------------------------------- */

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void
stale(struct dt_comm *world, int n_servers, int64_t bound, int64_t steps)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_ps_cfg cfg = { n_servers, true, bound, D, job, NULL, 0 };
	struct sched sc = { 0.05, steps };
	const char *slow_env = getenv("DTRAIN_TEST_DELAY_RANK");
	int slow = slow_env != NULL ? atoi(slow_env) : -1;
	struct dt_ps *ps;
	struct dt_error err;
	float theta[D], g[D];

	job->train.optimizer = DT_OPTIM_SGD;
	ok(dt_ps_new(world, &cfg, &ps, &err), &err, "dt_ps_new");
	init_theta(theta);
	if (dt_ps_is_server(ps)) {
		ok(dt_ps_serve(ps, theta, lr_at, &sc, &err), &err,
		   "dt_ps_serve");
		dt_ps_free(ps);
		free(job);
		return;
	}

	struct dt_comm *workers = dt_ps_workers(ps);
	int w = dt_comm_rank(workers), nw = dt_comm_size(workers);
	size_t nt = (size_t)nw * (size_t)steps;
	double *stamp = dt_xcalloc(nt, sizeof *stamp);
	double loss0 = eval_loss(theta), wmax = 0;
	float *final0 = dt_xcalloc(D, sizeof *final0);
	struct dt_ps_stats s;

	for (int64_t k = 0; k < steps; k++) {
		grad(theta, w, nw, k, g);
		ok(dt_ps_step(ps, g, theta, k, &err), &err, "dt_ps_step");
		stamp[(size_t)w * (size_t)steps + (size_t)k] = now_s();
		if (w == 0 && (k + 1) % 5 == 0) {
			ok(dt_ps_stats(ps, &s, &err), &err, "dt_ps_stats");
			if (s.staleness_max > bound)
				fail("window to step %lld: staleness max %lld "
				     "> %lld", (long long)k + 1,
				     (long long)s.staleness_max,
				     (long long)bound);
			if ((double)s.staleness_max > wmax)
				wmax = (double)s.staleness_max;
		}
	}
	ok(dt_ps_done(ps, theta, &err), &err, "dt_ps_done");
	/* Every worker ends with the same parameters. */
	memcpy(final0, theta, sizeof theta);
	ok(dt_comm_bcast(workers, final0, sizeof theta, 0, &err), &err,
	   "bcast");
	if (memcmp(final0, theta, sizeof theta) != 0)
		fail("final parameters differ from worker 0's");
	ok(dt_comm_allreduce_sum_f64(workers, stamp, nt, &err), &err,
	   "allreduce stamps");
	if (w == 0) {
		int64_t half = steps / 2;
		double t_half;

		ok(dt_ps_stats(ps, &s, &err), &err, "dt_ps_stats (final)");
		printf("async, max_staleness %lld, %d workers, %d servers, "
		       "slow worker %d: staleness histogram", (long long)bound,
		       nw, n_servers, slow);
		for (int i = 0; i < s.n_hist; i++)
			printf(i + 1 < s.n_hist ? " %lld" : " | over %lld",
			       (long long)s.hist[i]);
		printf("; windows' max %.0f; loss %.4g -> %.4g\n", wmax,
		       loss0, eval_loss(theta));
		if (s.hist[s.n_hist - 1] != 0)
			fail("%lld gradients staler than %lld",
			     (long long)s.hist[s.n_hist - 1],
			     (long long)bound);
		if (s.version != steps)
			fail("%lld updates, expected %lld",
			     (long long)s.version, (long long)steps);
		if (!(eval_loss(theta) < 0.5 * loss0))
			fail("loss did not fall: %.4g -> %.4g", loss0,
			     eval_loss(theta));
		/* With a bound of 1 the fast workers may be only one step
		 * ahead of the applied version, which can equal the slow
		 * worker's count; from 2 on they must be strictly ahead. */
		if (slow >= 0 && slow < nw && bound >= 2) {
			if (bound > 0 && s.hist[bound] == 0)
				fail("no gradient at staleness %lld although "
				     "worker %d is slow", (long long)bound,
				     slow);
			t_half = stamp[(size_t)slow * (size_t)steps +
				       (size_t)(half - 1)];
			for (int v = 0; v < nw; v++) {
				int64_t made = 0;

				if (v == slow)
					continue;
				for (int64_t k = 0; k < steps; k++)
					if (stamp[(size_t)v * (size_t)steps +
						  (size_t)k] <= t_half)
						made++;
				printf("when slow worker %d had made %lld "
				       "steps, worker %d had made %lld\n",
				       slow, (long long)half, v,
				       (long long)made);
				if (made <= half)
					fail("worker %d made %lld steps while "
					     "the slow one made %lld", v,
					     (long long)made,
					     (long long)half);
				if (made > half + bound)
					fail("worker %d ran %lld steps ahead, "
					     "more than the bound %lld", v,
					     (long long)(made - half),
					     (long long)bound);
			}
		}
	}
	free(final0);
	free(stamp);
	dt_ps_free(ps);
	free(job);
}

int
main(int argc, char **argv)
{
	struct dt_error err;

	if (dt_comm_mpi_new(&g_world, &err) != DT_OK) {
		fprintf(stderr, "ps_toy: %s\n", err.msg);
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "equiv") == 0) {
		equiv(g_world, atoi(argv[2]));
	} else if (argc == 5 && strcmp(argv[1], "stale") == 0) {
		stale(g_world, atoi(argv[2]), atoll(argv[3]), atoll(argv[4]));
	} else {
		fprintf(stderr, "usage: ps_toy equiv SERVERS | "
			"ps_toy stale SERVERS MAX_STALENESS STEPS\n");
		dt_comm_free(g_world);
		return 2;
	}
	dt_comm_free(g_world);
	return 0;
}
