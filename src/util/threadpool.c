/* SPDX-License-Identifier: MIT */
/* threadpool.c - the deterministic thread pool of threadpool.h: POSIX threads, one
 * mutex and two condition variables; a loop is published as a
 * generation number the workers wait for.
 *
 * Waking a sleeping thread costs tens of microseconds, about what a
 * layer's elementwise loop takes, and a step runs a few hundred loops
 * back to back. So a worker that finishes its part, and the caller
 * waiting for the workers, first poll for a while (DT_POOL_SPIN_NS) and
 * only then sleep. For the first DT_POOL_PAUSE_NS a poll is a CPU
 * pause; after that every poll yields the core, so that a runnable
 * thread (OpenBLAS's, another rank's, the partner this thread waits for
 * on an oversubscribed node) is not kept from it. Yielding from the
 * first poll, as this file first did, cost a system call per poll: in a
 * virtual machine 15% of a 2-thread char-GPT step went to sched_yield
 * and the hypervisor's interrupt handling (perf, 2026-12-05). Pausing
 * alone for longer (yielding every 5 us) slowed 2 threads on a loaded
 * machine to the one-thread rate.
 *
 * The fast path takes no lock: the caller publishes a loop by storing
 * its fields and then incrementing gen, and a worker that sees the new
 * gen reads them. Every worker, with a part or without, counts down
 * pending once per loop, so the caller never rewrites the fields while
 * a worker may still read them. The condition variables are signalled
 * only when a thread sleeps on them (sleepers, caller_waits): each side
 * stores its own flag and then loads the other's, sequentially
 * consistent, and the sleeper checks again under the mutex, so a
 * wake-up cannot be lost. */
#include "util/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/alloc.h"

/* How long a worker polls for the next loop, and the caller for the
 * workers' parts, before sleeping: about the gap between two loops of a
 * layer, or between the loops of consecutive layers (nanoseconds). */
#define DT_POOL_SPIN_NS 60000
/* How long of that a thread polls without yielding its core
 * (nanoseconds): most waits of a thread whose partner runs on a core of
 * its own end sooner. */
#define DT_POOL_PAUSE_NS 4000

struct dt_pool;

struct worker {
	struct dt_pool *pool;
	int id;			/* 1 .. threads - 1 */
	pthread_t thread;
};

struct dt_pool {
	int threads;
	struct worker *workers;	/* (threads - 1) */
	pthread_mutex_t mu;
	pthread_cond_t wake;	/* a new generation or stop */
	pthread_cond_t done;	/* pending reached 0 */
	/* The loop of the current generation, written under mu (gen and stop
	 * are also polled without it): */
	atomic_uint_fast64_t gen;
	atomic_bool stop;
	int parts;
	int64_t n;
	dt_pool_fn *fn;
	void *ctx;
	atomic_int pending;	/* workers yet to finish this loop */
	atomic_int sleepers;	/* workers asleep on wake, or going to */
	atomic_bool caller_waits; /* the caller asleep on done, or going to */
	atomic_bool busy;	/* a dt_pool_for is running */
	/* dt_pool_set_timing, written by the driving thread only: */
	bool timing;
	int64_t loop_ns, loops;
};

static void
part_range(int64_t n, int parts, int t, int64_t *lo, int64_t *hi)
{
	/* n * t fits: n is an index count below 2^62 in practice, and
	 * parts <= threads <= 4096 (job/ bounds it). */
	*lo = n * t / parts;
	*hi = n * (t + 1) / parts;
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One poll's pause: lets the other hardware thread of a core run and
 * saves power while spinning. */
static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Polls until ready(p, arg) or DT_POOL_SPIN_NS pass; true when ready.
 * For the first DT_POOL_PAUSE_NS a poll is a CPU pause, then a yield of
 * the core. */
static bool
spin_until(struct dt_pool *p, bool (*ready)(struct dt_pool *, uint64_t),
	   uint64_t arg)
{
	int64_t start = 0;
	bool yielding = false;

	for (int i = 0;; i++) {
		if (ready(p, arg))
			return true;
		if (yielding || (i & 63) == 0) {
			int64_t t = now_ns();

			if (start == 0)
				start = t;
			else if (t - start >= DT_POOL_SPIN_NS)
				return false;
			else if (t - start >= DT_POOL_PAUSE_NS)
				yielding = true;
		}
		if (yielding)
			sched_yield();
		else
			cpu_relax();
	}
}

/* A new generation after seen, or stop. */
static bool
next_loop(struct dt_pool *p, uint64_t seen)
{
	return atomic_load(&p->gen) != seen || atomic_load(&p->stop);
}

static bool
parts_done(struct dt_pool *p, uint64_t unused)
{
	(void)unused;
	return atomic_load(&p->pending) == 0;
}

/* Sleeps until a generation after seen, or stop (after spin_until gave
 * up). */
static void
worker_sleep(struct dt_pool *p, uint64_t seen)
{
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add(&p->sleepers, 1);
	while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop))
		pthread_cond_wait(&p->wake, &p->mu);
	atomic_fetch_sub(&p->sleepers, 1);
	pthread_mutex_unlock(&p->mu);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct dt_pool *p = w->pool;
	uint64_t seen = 0;

	for (;;) {
		if (!spin_until(p, next_loop, seen))
			worker_sleep(p, seen);
		if (atomic_load(&p->stop))
			return NULL;
		/* The fields were stored before gen; they stay until this
		 * worker counts down pending below. */
		seen = atomic_load(&p->gen);
		if (w->id < p->parts) {
			int64_t lo, hi;

			part_range(p->n, p->parts, w->id, &lo, &hi);
			p->fn(p->ctx, lo, hi);
		}
		if (atomic_fetch_sub(&p->pending, 1) == 1 &&
		    atomic_load(&p->caller_waits)) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
	}
}

struct dt_pool *
dt_pool_new(int threads)
{
	struct dt_pool *p = dt_xcalloc(1, sizeof *p);

	p->threads = threads > 1 ? threads : 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	atomic_init(&p->pending, 0);
	atomic_init(&p->sleepers, 0);
	atomic_init(&p->caller_waits, false);
	atomic_init(&p->busy, false);
	atomic_init(&p->gen, 0);
	atomic_init(&p->stop, false);
	if (p->threads > 1)
		p->workers = dt_xcalloc((size_t)p->threads - 1,
					sizeof *p->workers);
	for (int i = 0; i + 1 < p->threads; i++) {
		struct worker *w = &p->workers[i];
		int rc;

		w->pool = p;
		w->id = i + 1;
		rc = pthread_create(&w->thread, NULL, worker_main, w);
		if (rc != 0) {
			fprintf(stderr, "dtrain: cannot start thread %d of "
				"%d: %s\n", i + 1, p->threads, strerror(rc));
			abort();
		}
	}
	return p;
}

void
dt_pool_free(struct dt_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->stop, true);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i + 1 < p->threads; i++)
		pthread_join(p->workers[i].thread, NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->mu);
	free(p->workers);
	free(p);
}

int
dt_pool_threads(const struct dt_pool *p)
{
	return p != NULL ? p->threads : 1;
}

static int64_t
cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
dt_pool_set_timing(struct dt_pool *p, int on)
{
	if (p == NULL)
		return;
	p->timing = on != 0;
	p->loop_ns = 0;
	p->loops = 0;
}

double
dt_pool_time(const struct dt_pool *p, int64_t *loops)
{
	if (loops != NULL)
		*loops = p != NULL ? p->loops : 0;
	return p != NULL ? (double)p->loop_ns * 1e-9 : 0.0;
}

/* The loop of dt_pool_for in parts (parts >= 2), from the thread that
 * holds p->busy. */
static void
run_parts(struct dt_pool *p, int64_t n, int parts, dt_pool_fn *fn, void *ctx)
{
	int64_t lo, hi;

	p->parts = parts;
	p->n = n;
	p->fn = fn;
	p->ctx = ctx;
	atomic_store(&p->pending, p->threads - 1);
	atomic_fetch_add(&p->gen, 1);
	if (atomic_load(&p->sleepers) > 0) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->wake);
		pthread_mutex_unlock(&p->mu);
	}

	part_range(n, parts, 0, &lo, &hi);
	fn(ctx, lo, hi);

	if (!spin_until(p, parts_done, 0)) {
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->caller_waits, true);
		while (atomic_load(&p->pending) > 0)
			pthread_cond_wait(&p->done, &p->mu);
		atomic_store(&p->caller_waits, false);
		pthread_mutex_unlock(&p->mu);
	}
}

void
dt_pool_for(struct dt_pool *p, int64_t n, int64_t grain, dt_pool_fn *fn,
	    void *ctx)
{
	int64_t parts, t0 = 0;
	bool idle = false;

	if (n <= 0)
		return;
	if (grain < 1)
		grain = 1;
	parts = (n + grain - 1) / grain;
	if (p == NULL || p->threads < parts)
		parts = p != NULL ? p->threads : 1;
	/* Not p, or a loop inside a loop of p (on any of its threads):
	 * inline, and timed as part of the outer loop. */
	if (p == NULL ||
	    !atomic_compare_exchange_strong(&p->busy, &idle, true)) {
		fn(ctx, 0, n);
		return;
	}
	if (p->timing)
		t0 = cpu_ns();
	if (parts <= 1)
		fn(ctx, 0, n);
	else
		run_parts(p, n, (int)parts, fn, ctx);
	if (p->timing) {
		p->loop_ns += cpu_ns() - t0;
		p->loops++;
	}
	atomic_store(&p->busy, false);
}
