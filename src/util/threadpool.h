/* SPDX-License-Identifier: MIT */
/* threadpool.h - a small deterministic thread pool for the loops inside a rank.
 *
 * dt_pool_for splits an index range [0, n) into at most `threads`
 * contiguous parts, fixed by n, the grain and the pool size alone: part t
 * of p is [n*t/p, n*(t+1)/p). The caller runs part 0 and the workers the
 * others; there is no work stealing and nothing is reduced across parts.
 * A loop whose body writes only the outputs of its own indices, in an
 * order fixed by the index, therefore gives the same bits with any number
 * of threads; that is how every user of the pool is written (each says
 * what it partitions). The pool does not call BLAS; OpenBLAS's own threads
 * run the products in between (see dtrain-job(5), parallel.blas_threads).
 *
 * Between loops a worker polls for the next one for a few tens of
 * microseconds, yielding the core every few microseconds (so that
 * OpenBLAS's threads get it during a product), and then sleeps on a
 * condition variable; the caller waits for the workers the same way. */
#ifndef DT_UTIL_POOL_H
#define DT_UTIL_POOL_H

#include <stdint.h>

struct dt_pool;

/* The body of a loop: runs indices [lo, hi) with the caller's context. */
typedef void dt_pool_fn(void *ctx, int64_t lo, int64_t hi);

/* A pool that runs loops on `threads` threads: the caller of dt_pool_for
 * and threads - 1 workers started here (none for threads <= 1). Owned by
 * the caller (dt_pool_free). Aborts, as out of memory does, when the
 * system refuses a thread. */
struct dt_pool *dt_pool_new(int threads);

/* Stops and joins the workers and frees the pool; NULL is ignored. No
 * dt_pool_for may be running. */
void dt_pool_free(struct dt_pool *pool);

/* The threads dt_pool_for uses: 1 for NULL. */
int dt_pool_threads(const struct dt_pool *pool);

/* Runs fn over [0, n) split as above into min(threads, ceil(n / grain))
 * parts (grain >= 1: the fewest indices worth a thread of their own), and
 * returns once every part is done. With a NULL pool, one part, or when
 * called from inside another dt_pool_for of the same pool, fn(ctx, 0, n)
 * runs on the calling thread. One thread at a time may drive a pool. */
void dt_pool_for(struct dt_pool *pool, int64_t n, int64_t grain,
		 dt_pool_fn *fn, void *ctx);

/* Timing for benchmarks (bench/bench_layers): with on, every loop the
 * pool's driving thread runs (a loop inside a loop counts as part of the
 * outer one) adds that thread's CPU time over the whole loop, its own
 * part and its wait for the workers, to a sum; dt_pool_time returns the
 * sum in seconds and the number of loops since timing was last switched
 * on. Off (the default) costs nothing. NULL is ignored (0 for time). */
void dt_pool_set_timing(struct dt_pool *pool, int on);
double dt_pool_time(const struct dt_pool *pool, int64_t *loops);

#endif
