/* SPDX-License-Identifier: MIT */
/* test_job_utf8.c - every string dt_job_write puts into job.yaml reads
 * back to the same bytes, and a path that is not valid UTF-8 (which
 * libyaml could not read back) is refused at load, naming the key, the
 * place and the byte offset of the bad byte. */
#include <stdio.h>
#include <stdlib.h>
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

START_TEST(test_non_utf8_dir_refused)
{
	/* A relative path resolved against a directory named with byte
	 * 0xff: the resolved path would go into job.yaml raw. */
	ck_assert_int_eq(parse_as("/jobs/\xff/job.yaml", min_job, NULL, 0),
			 DT_ERR_JOB);
	ck_assert_str_eq(first_line(), "/jobs/\xff/job.yaml:2:19: "
			 "data.train.images: expected a path that is valid "
			 "UTF-8 once resolved, found byte 0xff at byte offset "
			 "6 of \"/jobs/\\xff/a.idx\" (from the directory it is "
			 "resolved against); job.yaml keeps the path and must "
			 "read back: rename the directory or give an absolute "
			 "path");
	/* A truncated sequence (0xc3 without its second byte) too. */
	ck_assert_int_eq(parse_as("/d\xc3/job.yaml", min_job, NULL, 0),
			 DT_ERR_JOB);
	ck_assert_ptr_nonnull(strstr(err.msg, "found byte 0xc3 at byte "
				     "offset 2 of \"/d\\xc3/a.idx\""));
	/* The same directory spelled in UTF-8 (U+00FF) is fine. */
	ck_assert_msg(parse_as("/jobs/\xc3\xbf/job.yaml", min_job, NULL, 0) ==
		      DT_OK, "%s", err.msg);
	ck_assert_str_eq(job.data.train.images, "/jobs/\xc3\xbf/a.idx");
}
END_TEST

START_TEST(test_set_non_utf8_refused)
{
	const char *sets[] = { "checkpoint.dir=/c/\xff" };

	/* libyaml refuses the value itself, with its byte offset. */
	ck_assert_int_eq(parse_as("job.yaml", min_job, sets, 1), DT_ERR_JOB);
	ck_assert_ptr_nonnull(strstr(err.msg, "checkpoint.dir: value is not "
				     "valid YAML"));
	ck_assert_ptr_nonnull(strstr(err.msg, "(byte offset 3)"));
}
END_TEST

START_TEST(test_strings_round_trip)
{
	static struct dt_job first;
	/* YAML escapes for U+00FF ("\xff" in YAML is the character, which
	 * libyaml stores as c3 bf), control characters, DEL, C1 controls
	 * (U+0080, NEL U+0085), a BOM, and quote, backslash, tab. */
	const char *text =
		"data:\n"
		"  train: {images: \"/d/\\xff\\x01\\x7f\\u0080\\u0085\\ufeff\","
		" labels: \"/d/q\\\"b\\\\t\\tz\"}\n"
		"model:\n"
		"  input_shape: [4]\n"
		"  layers: [{type: dense, units: 3}]\n"
		"train: {micro_batch: 8, steps: 10, lr: 0.1}\n"
		"checkpoint: {dir: \"/c/\\u00e9\\U0001F600\"}\n";
	char *a, *b;

	ck_assert_msg(parse_as("/jobs/job.yaml", text, NULL, 0) == DT_OK, "%s",
		      err.msg);
	ck_assert_str_eq(job.data.train.images, "/d/\xc3\xbf\x01\x7f\xc2\x80"
			 "\xc2\x85\xef\xbb\xbf");
	ck_assert_str_eq(job.data.train.labels, "/d/q\"b\\t\tz");
	ck_assert_str_eq(job.checkpoint.dir, "/c/\xc3\xa9\xf0\x9f\x98\x80");
	first = job;
	a = write_text(&first);
	/* Raw in the file only what libyaml takes raw. */
	ck_assert_ptr_null(strchr(a, '\x01'));
	ck_assert_ptr_null(strstr(a, "\xc2\x85"));
	ck_assert_ptr_null(strstr(a, "\xef\xbb\xbf"));
	ck_assert_msg(parse_as("/elsewhere/copy.yaml", a, NULL, 0) == DT_OK,
		      "%s\n%s", err.msg, a);
	ck_assert_str_eq(job.data.train.images, first.data.train.images);
	ck_assert_str_eq(job.data.train.labels, first.data.train.labels);
	ck_assert_str_eq(job.checkpoint.dir, first.checkpoint.dir);
	b = write_text(&job);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
}
END_TEST

TCase *
job_utf8_tcase(void)
{
	TCase *tc = tcase_create("utf8");

	tcase_add_test(tc, test_non_utf8_dir_refused);
	tcase_add_test(tc, test_set_non_utf8_refused);
	tcase_add_test(tc, test_strings_round_trip);
	return tc;
}
