/* SPDX-License-Identifier: MIT */
/* test_diverge.c - the divergence guard (train/diverge.c): the loss
 * threshold 10 x max(early mean, ln(classes)), the gradient-norm
 * threshold 100 x the early mean norm (which no other test reaches: the
 * integration test diverge.sh trips the loss first), the 20-step window
 * that freezes the early sums, NAN as "not known", and the three
 * policies. Every threshold below is worked out by hand from the values
 * fed in; ln 10 = 2.302585. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/diverge.h"

/* The whole of f as a NUL-terminated heap string. */
static char *
slurp(FILE *f)
{
	long n;
	char *s;

	fflush(f);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	s = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(s);
	rewind(f);
	ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	return s;
}

START_TEST(grad_norm_trips)
{
	struct dt_diverge d;
	struct dt_error err;

	dt_diverge_init(&d, DT_DIVERGENCE_ABORT,
			DT_LOSS_SOFTMAX_CROSS_ENTROPY, 10);
	/* Norms 1, 2, 3: early mean 2, threshold 200. */
	ck_assert_int_eq(dt_diverge_check(&d, 1, 2.0, 1.0, NULL, &err), DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 2, 2.0, 2.0, NULL, &err), DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 3, 2.0, 3.0, NULL, &err), DT_OK);
	/* 200 is not above 200; the sums become 206 over 4: mean 51.5,
	 * threshold 5150. */
	ck_assert_int_eq(dt_diverge_check(&d, 4, 2.0, 200.0, NULL, &err),
			 DT_OK);
	ck_assert_int_eq(d.norm_n, 4);
	ck_assert_double_eq_tol(d.norm_sum, 206.0, 1e-12);
	ck_assert_int_eq(dt_diverge_check(&d, 5, 2.0, 5151.0, NULL, &err),
			 DT_ERR_NUMERIC);
	ck_assert_ptr_nonnull(strstr(err.msg, "step 5: gradient norm 5151 "
				     "above the divergence threshold 5150 "
				     "(100 x the early mean 51.5)"));
	/* The tripped step is not counted. */
	ck_assert_int_eq(d.norm_n, 4);
}
END_TEST

START_TEST(loss_floor_then_mean)
{
	struct dt_diverge d;
	struct dt_error err;

	dt_diverge_init(&d, DT_DIVERGENCE_ABORT,
			DT_LOSS_SOFTMAX_CROSS_ENTROPY, 10);
	/* Early mean 23 is above the floor: threshold 230. */
	ck_assert_int_eq(dt_diverge_check(&d, 1, 23.0, NAN, NULL, &err), DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 2, 229.0, NAN, NULL, &err),
			 DT_OK);
	dt_diverge_init(&d, DT_DIVERGENCE_ABORT,
			DT_LOSS_SOFTMAX_CROSS_ENTROPY, 10);
	ck_assert_int_eq(dt_diverge_check(&d, 1, 23.0, NAN, NULL, &err), DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 2, 231.0, NAN, NULL, &err),
			 DT_ERR_NUMERIC);
	ck_assert_ptr_nonnull(strstr(err.msg, "step 2: loss 231 above the "
				     "divergence threshold 230 (10 x max(early "
				     "mean 23, ln(classes) 2.30259))"));
	/* A NAN norm is neither checked nor counted. */
	ck_assert_int_eq(d.norm_n, 0);
	/* Early means 1, then 1.5, are below the floor: threshold
	 * 10 x 2.302585 = 23.02585. */
	dt_diverge_init(&d, DT_DIVERGENCE_ABORT,
			DT_LOSS_SOFTMAX_CROSS_ENTROPY, 10);
	ck_assert_int_eq(dt_diverge_check(&d, 1, 1.0, NAN, NULL, &err), DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 2, 2.0, NAN, NULL, &err), DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 3, 23.1, NAN, NULL, &err),
			 DT_ERR_NUMERIC);
	ck_assert_ptr_nonnull(strstr(err.msg, "step 3: loss 23.1 above the "
				     "divergence threshold 23.0259"));
}
END_TEST

/* The untrained model's loss, however high, is the reference, not a
 * verdict: the first checked step (of a new run: no early sums) is
 * counted and never judged, whatever it holds, loss or norm. */
START_TEST(first_step_sets_the_reference)
{
	struct dt_diverge d;
	struct dt_error err;

	dt_diverge_init(&d, DT_DIVERGENCE_ABORT,
			DT_LOSS_SOFTMAX_CROSS_ENTROPY, 10);
	err.msg[0] = '\0';
	ck_assert_int_eq(dt_diverge_check(&d, 1, 1000.0, 1e6, NULL, &err),
			 DT_OK);
	ck_assert_str_eq(err.msg, "");
	ck_assert_int_eq(d.loss_n, 1);
	ck_assert_double_eq_tol(d.loss_sum, 1000.0, 1e-12);
	/* Threshold 10 x max(1000, 2.302585) = 10000; then the mean of
	 * 1000 and 9999, 5499.5: threshold 54995. */
	ck_assert_int_eq(dt_diverge_check(&d, 2, 9999.0, 1.0, NULL, &err),
			 DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 3, 54996.0, 1.0, NULL, &err),
			 DT_ERR_NUMERIC);
	ck_assert_ptr_nonnull(strstr(err.msg, "step 3: loss 54996 above the "
				     "divergence threshold 54995 (10 x max("
				     "early mean 5499.5, ln(classes)"));
}
END_TEST

START_TEST(window_freezes_the_sums)
{
	struct dt_diverge d;
	struct dt_error err;
	int64_t s;

	dt_diverge_init(&d, DT_DIVERGENCE_ABORT,
			DT_LOSS_SOFTMAX_CROSS_ENTROPY, 10);
	for (s = 1; s <= 20; s++)
		ck_assert_int_eq(dt_diverge_check(&d, s, 0.5, 1.0, NULL, &err),
				 DT_OK);
	/* Steps past the 20th move nothing: norm 99 then 90 stay under
	 * 100 x 1 and leave the mean at 1. */
	ck_assert_int_eq(dt_diverge_check(&d, 21, 0.5, 99.0, NULL, &err),
			 DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 22, 0.5, 90.0, NULL, &err),
			 DT_OK);
	ck_assert_int_eq(d.norm_n, 20);
	ck_assert_double_eq_tol(d.norm_sum, 20.0, 1e-12);
	ck_assert_int_eq(d.loss_n, 20);
	ck_assert_int_eq(dt_diverge_check(&d, 23, 0.5, 101.0, NULL, &err),
			 DT_ERR_NUMERIC);
	ck_assert_ptr_nonnull(strstr(err.msg, "step 23: gradient norm 101"));
}
END_TEST

START_TEST(mse_has_no_floor)
{
	struct dt_diverge d;
	struct dt_error err;

	dt_diverge_init(&d, DT_DIVERGENCE_ABORT, DT_LOSS_MSE, 0);
	/* No reference before the first step: anything finite passes. */
	ck_assert_int_eq(dt_diverge_check(&d, 1, 1e30, NAN, NULL, &err),
			 DT_OK);
	dt_diverge_init(&d, DT_DIVERGENCE_ABORT, DT_LOSS_MSE, 0);
	ck_assert_int_eq(dt_diverge_check(&d, 1, 0.01, NAN, NULL, &err),
			 DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 2, 0.11, NAN, NULL, &err),
			 DT_ERR_NUMERIC);
	ck_assert_ptr_nonnull(strstr(err.msg, "(10 x the early mean 0.01)"));
}
END_TEST

START_TEST(warn_once_and_off)
{
	struct dt_diverge d;
	struct dt_error err;
	FILE *f = tmpfile();
	char *s, *first;

	ck_assert_ptr_nonnull(f);
	dt_diverge_init(&d, DT_DIVERGENCE_WARN,
			DT_LOSS_SOFTMAX_CROSS_ENTROPY, 10);
	ck_assert_int_eq(dt_diverge_check(&d, 1, 1.0, 1.0, f, &err), DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 2, 1.0, 1e6, f, &err), DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 3, 1e6, 1.0, f, &err), DT_OK);
	s = slurp(f);
	first = strstr(s, "step 2: gradient norm 1e+06 above the divergence "
		       "threshold 100");
	ck_assert_ptr_nonnull(first);
	/* One warning: no second "threshold" after the first line's. */
	first = strstr(first, "threshold") + strlen("threshold");
	ck_assert_ptr_null(strstr(first, "threshold"));
	free(s);
	fclose(f);
	dt_diverge_init(&d, DT_DIVERGENCE_OFF,
			DT_LOSS_SOFTMAX_CROSS_ENTROPY, 10);
	ck_assert_int_eq(dt_diverge_check(&d, 1, 1.0, 1.0, NULL, &err), DT_OK);
	ck_assert_int_eq(dt_diverge_check(&d, 2, 1e9, 1e9, NULL, &err), DT_OK);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("diverge");
	TCase *tc = tcase_create("diverge");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, grad_norm_trips);
	tcase_add_test(tc, loss_floor_then_mean);
	tcase_add_test(tc, first_step_sets_the_reference);
	tcase_add_test(tc, window_freezes_the_sums);
	tcase_add_test(tc, mse_has_no_floor);
	tcase_add_test(tc, warn_once_and_off);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
