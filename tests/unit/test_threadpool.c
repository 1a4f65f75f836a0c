/* SPDX-License-Identifier: MIT */
/* test_threadpool.c - Check suite for src/util/threadpool.c: every index of a loop
 * runs exactly once, in the parts threadpool.h promises, on any pool size and
 * grain; a NULL pool and nested loops run on the calling thread; many
 * loops in a row on the same pool. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/threadpool.h"

struct count {
	int64_t n;
	atomic_int *hits;	/* (n) */
	atomic_int calls;
	int64_t lo[8], hi[8];	/* the parts seen, by call order */
	pthread_t caller;
	atomic_int on_caller;	/* parts run by the calling thread */
};

static void
count_part(void *ctx, int64_t lo, int64_t hi)
{
	struct count *c = ctx;
	int k = atomic_fetch_add(&c->calls, 1);

	if (k < 8) {
		c->lo[k] = lo;
		c->hi[k] = hi;
	}
	if (pthread_equal(pthread_self(), c->caller))
		atomic_fetch_add(&c->on_caller, 1);
	for (int64_t i = lo; i < hi; i++)
		atomic_fetch_add(&c->hits[i], 1);
}

static void
run_count(struct dt_pool *pool, int64_t n, int64_t grain, int want_parts)
{
	struct count c;

	memset(&c, 0, sizeof c);
	c.n = n;
	c.hits = dt_xcalloc((size_t)n + 1, sizeof *c.hits);
	c.caller = pthread_self();
	dt_pool_for(pool, n, grain, count_part, &c);
	for (int64_t i = 0; i < n; i++)
		ck_assert_int_eq(atomic_load(&c.hits[i]), 1);
	ck_assert_int_eq(atomic_load(&c.calls), want_parts);
	ck_assert_int_ge(atomic_load(&c.on_caller), 1);
	/* part t of p is [n*t/p, n*(t+1)/p): the parts' lengths differ by
	 * at most one and they cover [0, n) */
	for (int k = 0; k < want_parts && k < 8; k++) {
		int64_t len = c.hi[k] - c.lo[k];

		ck_assert_int_ge(len, n / want_parts);
		ck_assert_int_le(len, n / want_parts + 1);
	}
	free(c.hits);
}

START_TEST(test_pool_parts)
{
	for (int threads = 1; threads <= 4; threads++) {
		struct dt_pool *pool = dt_pool_new(threads);

		ck_assert_int_eq(dt_pool_threads(pool), threads);
		run_count(pool, 1000, 1, threads);
		run_count(pool, 7, 1, threads < 7 ? threads : 7);
		run_count(pool, 1, 1, 1);
		/* grain 300: ceil(1000 / 300) = 4 parts at most */
		run_count(pool, 1000, 300, threads < 4 ? threads : 4);
		run_count(pool, 1000, 5000, 1);
		for (int rep = 0; rep < 200; rep++)
			run_count(pool, 37 + rep, 1,
				  threads < 37 + rep ? threads : 37 + rep);
		dt_pool_free(pool);
	}
	ck_assert_int_eq(dt_pool_threads(NULL), 1);
	run_count(NULL, 100, 1, 1);
	dt_pool_free(NULL);
}
END_TEST

struct nested {
	struct dt_pool *pool;
	atomic_int inner_calls;
};

static void
inner_part(void *ctx, int64_t lo, int64_t hi)
{
	struct nested *c = ctx;

	ck_assert_int_eq(lo, 0);
	ck_assert_int_eq(hi, 50);
	atomic_fetch_add(&c->inner_calls, 1);
}

static void
outer_part(void *ctx, int64_t lo, int64_t hi)
{
	struct nested *c = ctx;

	for (int64_t i = lo; i < hi; i++)
		dt_pool_for(c->pool, 50, 1, inner_part, c);
}

/* A loop inside a loop of the same pool runs whole on its thread. */
START_TEST(test_pool_nested)
{
	struct nested c;

	c.pool = dt_pool_new(3);
	atomic_init(&c.inner_calls, 0);
	dt_pool_for(c.pool, 6, 1, outer_part, &c);
	ck_assert_int_eq(atomic_load(&c.inner_calls), 6);
	dt_pool_free(c.pool);
}
END_TEST

static Suite *
pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("pool");

	tcase_add_test(tc, test_pool_parts);
	tcase_add_test(tc, test_pool_nested);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(pool_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
