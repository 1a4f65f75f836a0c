/* SPDX-License-Identifier: MIT */
/* test_job_bounds.c - the upper bounds of the integer keys: a value at
 * the bound is taken, one past it is refused with the bound and the
 * number as written (also numbers that do not fit 32 bits, which used to
 * be shown truncated), and the product of a shape's items is bounded. */
#include <stdio.h>
#include <string.h>

#include "job_test.h"

/* The first line of the last error message (a static buffer). */
static const char *
first_line(void)
{
	static char line[sizeof err.msg];
	size_t n = strcspn(err.msg, "\n");

	memcpy(line, err.msg, n);
	line[n] = '\0';
	return line;
}

/* min_job with --set key=value: must parse and store want at *field. */
static void
expect_taken(const char *set, const int64_t *field, int64_t want)
{
	const char *sets[] = { set };

	ck_assert_msg(parse_as("job.yaml", min_job, sets, 1) == DT_OK,
		      "%s: %s", set, err.msg);
	ck_assert_int_eq(*field, want);
}

/* min_job with --set key=value: must be refused with msg after the
 * "--set key=value: " prefix. */
static void
expect_refused(const char *set, const char *msg)
{
	const char *sets[] = { set };
	char full[1024];

	snprintf(full, sizeof full, "--set %s: %s", set, msg);
	expect_error(min_job, sets, 1, full);
}

START_TEST(test_bounds_at_and_past)
{
	expect_taken("train.steps=16777216", &job.train.steps, 16777216);
	expect_refused("train.steps=16777217", "train.steps: must be in "
		       "[1, 16777216], found 16777217");
	expect_taken("train.micro_batch=65536", &job.train.micro_batch,
		     65536);
	expect_refused("train.micro_batch=65537", "train.micro_batch: must "
		       "be in [1, 65536], found 65537");
	expect_taken("model.layers.0.units=1048576",
		     &job.model.layers[0].units, 1048576);
	expect_refused("model.layers.0.units=1048577", "model.layers.0.units: "
		       "must be in [1, 1048576], found 1048577");
	expect_taken("data.prefetch=64", &job.data.prefetch, 64);
	expect_refused("data.prefetch=65", "data.prefetch: must be in [0, "
		       "64], found 65");
	expect_taken("data.max_bytes=1125899906842624", &job.data.max_bytes,
		     1125899906842624LL);
	expect_refused("data.max_bytes=1125899906842625", "data.max_bytes: "
		       "must be in (0, 1125899906842624], found "
		       "1125899906842625");
	expect_taken("train.epochs=65536", &job.train.epochs, 65536);
	expect_refused("parallel.data_parallel=65537", "parallel.data_parallel: "
		       "must be in [1, 65536], found 65537");
	/* A number past 2^32 is shown as written, not as its low bits. */
	expect_refused("train.steps=4294967297", "train.steps: must be in "
		       "[1, 16777216], found 4294967297");
	expect_refused("train.steps=0x100000001", "train.steps: must be in "
		       "[1, 16777216], found 0x100000001");
	expect_refused("checkpoint.keep_last=9223372036854775807",
		       "checkpoint.keep_last: must be in [0, 65536], found "
		       "9223372036854775807");
}
END_TEST

START_TEST(test_repeat_past_bound)
{
	/* Was refused as "expected at most 256 layers ..., found 3". */
	ck_assert_int_eq(parse_as("job.yaml", layers_job("    - {repeat: "
				  "4294967297, layers: [{type: relu}]}\n"),
				  NULL, 0), DT_ERR_JOB);
	ck_assert_str_eq(first_line(), "job.yaml:6:16: model.layers.0.repeat: "
			 "must be in [1, 256], found 4294967297");
	ck_assert_int_eq(parse_as("job.yaml", layers_job("    - {repeat: 257, "
				  "layers: [{type: relu}]}\n"), NULL, 0),
			 DT_ERR_JOB);
	ck_assert_str_eq(first_line(), "job.yaml:6:16: model.layers.0.repeat: "
			 "must be in [1, 256], found 257");
	ck_assert_int_eq(parse_as("job.yaml", layers_job("    - {repeat: 256, "
				  "layers: [{type: relu}]}\n"), NULL, 0), DT_OK);
	ck_assert_int_eq(job.model.n_layers, 256);
	/* In range, but too many layers once expanded: the count. */
	ck_assert_int_eq(parse_as("job.yaml", layers_job("    - {repeat: 200, "
				  "layers: [{type: relu}, {type: relu}]}\n"),
				  NULL, 0), DT_ERR_JOB);
	ck_assert_str_eq(first_line(), "job.yaml:6:16: model.layers: expected "
			 "at most 256 layers once repeat blocks are expanded, "
			 "found 400");
}
END_TEST

START_TEST(test_shape_product)
{
	const char *ok[] = { "model.input_shape=[2048, 2048]" };
	const char *big[] = { "model.input_shape=[2048, 2048, 2]" };
	const char *item[] = { "model.input_shape=[4194305]" };

	ck_assert_msg(parse_as("job.yaml", min_job, ok, 1) == DT_OK, "%s",
		      err.msg);
	ck_assert_int_eq(job.model.input_shape[1], 2048);
	expect_error(min_job, big, 1, "--set model.input_shape=[2048, 2048, "
		     "2]: model.input_shape: expected at most 4194304 values "
		     "in one sample (the product of the items), found more "
		     "at item 2 (2)");
	expect_error(min_job, item, 1, "--set model.input_shape=[4194305]: "
		     "model.input_shape.0: must be in [1, 4194304], found "
		     "4194305");
}
END_TEST

TCase *
job_bound_tcase(void)
{
	TCase *tc = tcase_create("bounds");

	tcase_add_test(tc, test_bounds_at_and_past);
	tcase_add_test(tc, test_repeat_past_bound);
	tcase_add_test(tc, test_shape_product);
	return tc;
}
