/* SPDX-License-Identifier: MIT */
/* test_ps.c - Check suite for the parts of src/comm/ps.h that need no
 * mpirun: the shard layout, the layout checks, the plan's byte counts and
 * dt_comm_split on a single-process communicator. The protocol itself runs
 * under mpirun in tests/ps/ps_toy.c (tests/integration/ps-toy.sh). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/ps.h"
#include "util/alloc.h"

START_TEST(test_shard_example)
{
	size_t off, len;

	/* 10 = 4 + 3 + 3: the first 10 % 3 shards are one longer. */
	dt_ps_shard(10, 3, 0, &off, &len);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(len, 4);
	dt_ps_shard(10, 3, 1, &off, &len);
	ck_assert_uint_eq(off, 4);
	ck_assert_uint_eq(len, 3);
	dt_ps_shard(10, 3, 2, &off, &len);
	ck_assert_uint_eq(off, 7);
	ck_assert_uint_eq(len, 3);
}
END_TEST

START_TEST(test_shard_cover)
{
	/* Contiguous, in order, covering, lengths within one of each other. */
	for (size_t n = 1; n < 70; n++) {
		for (int s = 1; s <= (int)n && s < 9; s++) {
			size_t next = 0, lo = n, hi = 0;

			for (int j = 0; j < s; j++) {
				size_t off, len;

				dt_ps_shard(n, s, j, &off, &len);
				ck_assert_uint_eq(off, next);
				ck_assert_uint_ge(len, 1);
				next = off + len;
				lo = len < lo ? len : lo;
				hi = len > hi ? len : hi;
			}
			ck_assert_uint_eq(next, n);
			ck_assert_uint_le(hi - lo, 1);
		}
	}
}
END_TEST

START_TEST(test_check_ok)
{
	struct dt_error err;

	ck_assert_int_eq(dt_ps_check(2, 1, 1, &err), DT_OK);
	ck_assert_int_eq(dt_ps_check(8, 3, 1000, &err), DT_OK);
	ck_assert_int_eq(dt_ps_check(4, 3, 3, &err), DT_OK);
}
END_TEST

START_TEST(test_check_no_workers)
{
	struct dt_error err;

	ck_assert_int_eq(dt_ps_check(2, 2, 100, &err), DT_ERR_PLAN);
	ck_assert_ptr_nonnull(strstr(err.msg, "no worker"));
	ck_assert_ptr_nonnull(strstr(err.msg, "at least 3 ranks"));
	ck_assert_int_eq(dt_ps_check(1, 1, 100, &err), DT_ERR_PLAN);
	ck_assert_int_eq(dt_ps_check(3, 5, 100, &err), DT_ERR_PLAN);
}
END_TEST

START_TEST(test_check_no_servers)
{
	struct dt_error err;

	ck_assert_int_eq(dt_ps_check(4, 0, 100, &err), DT_ERR_PLAN);
	ck_assert_ptr_nonnull(strstr(err.msg, ">= 1"));
}
END_TEST

START_TEST(test_check_too_many_servers)
{
	struct dt_error err;

	ck_assert_int_eq(dt_ps_check(8, 4, 3, &err), DT_ERR_PLAN);
	ck_assert_ptr_nonnull(strstr(err.msg, "without a shard"));
	ck_assert_ptr_nonnull(strstr(err.msg, "at most 3"));
}
END_TEST

START_TEST(test_check_huge_shard)
{
	struct dt_error err;
	size_t n = (size_t)1 << 30;	/* 4 GiB of floats */

	ck_assert_int_eq(dt_ps_check(4, 1, n, &err), DT_ERR_PLAN);
	ck_assert_ptr_nonnull(strstr(err.msg, "at least 3 servers"));
	ck_assert_int_eq(dt_ps_check(4, 2, n, &err), DT_ERR_PLAN);
	ck_assert_int_eq(dt_ps_check(4, 3, n, &err), DT_OK);
}
END_TEST

START_TEST(test_bytes)
{
	/* Shard 0 of 10 over 3 is 4 floats: messages of 16 + 16 bytes; two
	 * workers push one and get one reply each per update. */
	ck_assert_uint_eq(dt_ps_server_step_bytes(10, 3, 2), 2 * 2 * 32);
	/* params + sum + 2 Adam buffers (4 * 16), slots 2 * (3 + 1) and
	 * replies 2, each 32 bytes. */
	ck_assert_uint_eq(dt_ps_server_bytes(10, 3, 2, 3, 2),
			  4 * 16 + 8 * 32 + 2 * 32);
}
END_TEST

START_TEST(test_split_self)
{
	struct dt_comm *c = dt_comm_self_new(), *sub = NULL;
	struct dt_error err;

	ck_assert_int_eq(dt_comm_split(c, 0, 0, &sub, &err), DT_OK);
	ck_assert_ptr_nonnull(sub);
	ck_assert_int_eq(dt_comm_size(sub), 1);
	ck_assert_int_eq(dt_comm_rank(sub), 0);
	dt_comm_free(sub);
	sub = c;
	ck_assert_int_eq(dt_comm_split(c, DT_COMM_SPLIT_NONE, 0, &sub, &err),
			 DT_OK);
	ck_assert_ptr_null(sub);
	dt_comm_free(c);
}
END_TEST

START_TEST(test_new_self_world)
{
	/* One rank cannot be both a server and a worker. */
	struct dt_comm *c = dt_comm_self_new();
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_ps_cfg cfg = { 1, false, 0, 10, job, NULL, 0 };
	struct dt_ps *ps = NULL;
	struct dt_error err;

	ck_assert_int_eq(dt_ps_new(c, &cfg, &ps, &err), DT_ERR_PLAN);
	ck_assert_ptr_null(ps);
	free(job);
	dt_comm_free(c);
}
END_TEST

static Suite *
ps_suite(void)
{
	Suite *s = suite_create("ps");
	TCase *tc = tcase_create("layout");

	tcase_add_test(tc, test_shard_example);
	tcase_add_test(tc, test_shard_cover);
	tcase_add_test(tc, test_check_ok);
	tcase_add_test(tc, test_check_no_workers);
	tcase_add_test(tc, test_check_no_servers);
	tcase_add_test(tc, test_check_too_many_servers);
	tcase_add_test(tc, test_check_huge_shard);
	tcase_add_test(tc, test_bytes);
	tcase_add_test(tc, test_split_self);
	tcase_add_test(tc, test_new_self_world);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ps_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
