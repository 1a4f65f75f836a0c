/* SPDX-License-Identifier: MIT */
/* test_comm.c - Check suite for the sharded collectives of comm/comm.h
 * that need no mpirun: the cut of dt_comm_part (n divisible by the ranks
 * or not, fewer values than ranks, none, sizes near SIZE_MAX) and the
 * one-rank reduce-scatter, all-gather and rounded sum on the single-
 * process communicator. The ring itself runs under mpirun in
 * tests/integration/rsag_probe.c (rsag.sh). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

static void
part_is(size_t n, int p, int rank, size_t lo, size_t hi)
{
	size_t a = 7, b = 7;

	dt_comm_part(n, p, rank, &a, &b);
	ck_assert_msg(a == lo && b == hi, "dt_comm_part(%zu, %d, %d): "
		      "[%zu, %zu), expected [%zu, %zu)", n, p, rank, a, b, lo,
		      hi);
}

START_TEST(test_part_examples)
{
	/* 10 over 3: chunks [0, 3), [3, 6), [6, 10); rank r holds chunk
	 * (r + 1) mod 3. */
	part_is(10, 3, 0, 3, 6);
	part_is(10, 3, 1, 6, 10);
	part_is(10, 3, 2, 0, 3);
	/* 11 over 4: chunks [0, 2), [2, 5), [5, 8), [8, 11). */
	part_is(11, 4, 0, 2, 5);
	part_is(11, 4, 1, 5, 8);
	part_is(11, 4, 2, 8, 11);
	part_is(11, 4, 3, 0, 2);
	/* 2 over 3 (fewer than ranks): chunks [0, 0), [0, 1), [1, 2). */
	part_is(2, 3, 0, 0, 1);
	part_is(2, 3, 1, 1, 2);
	part_is(2, 3, 2, 0, 0);
	/* 1 over 2: chunks [0, 0), [0, 1). */
	part_is(1, 2, 0, 0, 1);
	part_is(1, 2, 1, 0, 0);
	/* None. */
	for (int r = 0; r < 4; r++)
		part_is(0, 4, r, 0, 0);
	/* One rank holds it all. */
	part_is(0, 1, 0, 0, 0);
	part_is(12345, 1, 0, 0, 12345);
}
END_TEST

START_TEST(test_part_tiles)
{
	/* The parts of ranks P-1, 0, 1, ..., P-2 follow each other from 0
	 * to n, each floor(n / P) or one more, the last (rank P-2's)
	 * ceil(n / P): the ring's chunk buffer is sized by it. */
	for (size_t n = 0; n < 90; n++) {
		for (int p = 1; p <= 11; p++) {
			size_t next = 0;

			for (int j = 0; j < p; j++) {
				int r = (j + p - 1) % p;
				size_t lo, hi;

				dt_comm_part(n, p, r, &lo, &hi);
				ck_assert_uint_eq(lo, next);
				ck_assert(hi >= lo);
				ck_assert(hi - lo == n / (size_t)p ||
					  hi - lo == n / (size_t)p + 1);
				next = hi;
				if (j == p - 1)
					ck_assert_uint_eq(hi - lo,
							  (n + (size_t)p - 1) /
							  (size_t)p);
			}
			ck_assert_uint_eq(next, n);
		}
	}
}
END_TEST

START_TEST(test_part_huge)
{
	/* n * i would overflow: the cut must still tile [0, n) with
	 * r = n mod p chunks one longer than the others. */
	size_t n = SIZE_MAX - 2;
	int p = 7;
	size_t q = n / 7, next = 0;
	int longer = 0;

	for (int j = 0; j < p; j++) {
		size_t lo, hi;

		dt_comm_part(n, p, (j + p - 1) % p, &lo, &hi);
		ck_assert(lo == next);
		ck_assert(hi - lo == q || hi - lo == q + 1);
		longer += hi - lo == q + 1;
		next = hi;
	}
	ck_assert(next == n);
	ck_assert_int_eq(longer, (int)(n % 7));
}
END_TEST

/* Values a wrong copy or sum would change: signed zero, a subnormal, a
 * NaN with a payload, infinities, and ordinary numbers. */
static void
fill32(float *f, size_t n)
{
	uint32_t nan = 0x7fc12345u;

	for (size_t i = 0; i < n; i++)
		f[i] = (float)i * 0.37f - 5.0f;
	f[0] = -0.0f;
	f[1] = 1e-40f;
	memcpy(&f[2], &nan, sizeof nan);
	f[3] = -INFINITY;
}

START_TEST(test_self_identity)
{
	struct dt_comm *c = dt_comm_self_new();
	struct dt_error err = { 0 };
	float f[16], f0[16];
	double d[16], d0[16];
	int done = 0;

	fill32(f0, 16);
	for (size_t i = 0; i < 16; i++)
		d0[i] = (double)f0[i] + ldexp(1.0, -40);
	d0[0] = -0.0;
	memcpy(f, f0, sizeof f);
	memcpy(d, d0, sizeof d);
	ck_assert_int_eq(dt_comm_reduce_scatter_sum_f32(c, f, 16, &err),
			 DT_OK);
	ck_assert_int_eq(dt_comm_reduce_scatter_sum_f64(c, d, 16, &err),
			 DT_OK);
	ck_assert_int_eq(dt_comm_allgather_f32(c, f, 16, &err), DT_OK);
	ck_assert(memcmp(f, f0, sizeof f) == 0);
	ck_assert(memcmp(d, d0, sizeof d) == 0);
	ck_assert_int_eq(dt_comm_ireduce_scatter_sum_f32(c, f, 16, &err),
			 DT_OK);
	ck_assert_int_eq(dt_comm_ireduce_scatter_sum_f64(c, d, 16, &err),
			 DT_OK);
	ck_assert_int_eq(dt_comm_iallgather_f32(c, f, 16, &err), DT_OK);
	ck_assert_int_eq(dt_comm_coll_test(c, &done, &err), DT_OK);
	ck_assert_int_eq(done, 1);
	ck_assert_int_eq(dt_comm_coll_wait(c, &err), DT_OK);
	ck_assert(memcmp(f, f0, sizeof f) == 0);
	ck_assert(memcmp(d, d0, sizeof d) == 0);
	/* Empty buffers are fine. */
	ck_assert_int_eq(dt_comm_reduce_scatter_sum_f32(c, f, 0, &err),
			 DT_OK);
	ck_assert_int_eq(dt_comm_allgather_f32(c, f, 0, &err), DT_OK);
	/* One rank sends nothing. */
	ck_assert_uint_eq(dt_comm_bytes_sent(c), 0);
	dt_comm_free(c);
}
END_TEST

START_TEST(test_self_round)
{
	/* One rank: the rounded sum is the rounding of its own doubles. */
	struct dt_comm *c = dt_comm_self_new();
	struct dt_error err = { 0 };
	double acc[4] = { 1.0 + ldexp(1.0, -30), 0.1, -3.0 - ldexp(1.0, -23),
			  -1e-50 };
	float out[4] = { 0 };

	ck_assert_int_eq(dt_comm_allreduce_sum_f64_f32(c, acc, out, 4, &err),
			 DT_OK);
	ck_assert(out[0] == 1.0f);
	ck_assert(out[1] == 0.1f);
	/* -3 - 2^-23 is halfway between -3 and -3 - 2^-22: to even, -3. */
	ck_assert(out[2] == -3.0f);
	/* Below the least subnormal: a zero that keeps its sign. */
	ck_assert(out[3] == 0.0f && signbit(out[3]));
	ck_assert_uint_eq(dt_comm_bytes_sent(c), 0);
	dt_comm_free(c);
}
END_TEST

static Suite *
comm_suite(void)
{
	Suite *s = suite_create("comm");
	TCase *tc = tcase_create("sharded");

	tcase_add_test(tc, test_part_examples);
	tcase_add_test(tc, test_part_tiles);
	tcase_add_test(tc, test_part_huge);
	tcase_add_test(tc, test_self_identity);
	tcase_add_test(tc, test_self_round);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(comm_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
