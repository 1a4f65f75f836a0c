/* SPDX-License-Identifier: MIT */
/* test_agree.c - Check suite for the start-up agreement (src/train/agree.c,
 * dt_comm_check_same and friends in src/comm/comm.c) and the job
 * fingerprint (src/job/fingerprint.c), on the single-process
 * communicator; tests/integration/agree.sh runs the same under mpirun with
 * a rank that differs. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/agree.h"
#include "comm/comm.h"
#include "job/job.h"

static char dir[64];		/* scratch directory of the test */
static char images[128];	/* a 1234-byte file in it */
static struct dt_job job_a, job_b;
static struct dt_error err;

static void
setup(void)
{
	FILE *f;
	int i;

	snprintf(dir, sizeof dir, "/tmp/dtrain-agree.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(images, sizeof images, "%s/images.idx", dir);
	f = fopen(images, "wb");
	ck_assert_ptr_nonnull(f);
	for (i = 0; i < 1234; i++)
		fputc(i & 0xff, f);
	fclose(f);
}

static void
teardown(void)
{
	char path[160];

	snprintf(path, sizeof path, "%s/images.idx", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/text.yaml", dir);
	unlink(path);
	rmdir(dir);
}

/* Parses a small job (its images in the scratch file) with the overrides
 * into *job. */
static void
load(struct dt_job *job, const char *const *sets, int n_sets)
{
	char text[1024], name[128];

	snprintf(text, sizeof text,
		 "seed: 7\n"
		 "data:\n"
		 "  train: {images: %s, labels: %s/labels.idx}\n"
		 "model:\n"
		 "  input_shape: [4]\n"
		 "  layers:\n"
		 "    - {type: dense, units: 32, activation: relu}\n"
		 "    - {type: dense, units: 3}\n"
		 "train: {micro_batch: 8, steps: 10, lr: 0.001}\n",
		 images, dir);
	snprintf(name, sizeof name, "%s/job.yaml", dir);
	memset(&err, 0, sizeof err);
	ck_assert_msg(dt_job_parse(name, text, strlen(text), sets, n_sets, job,
				   &err) == DT_OK, "%s", err.msg);
}

/* The sha256 of text by coreutils' sha256sum, as 64 hex digits. */
static void
sha256sum(const char *text, size_t len, char hex[65])
{
	char path[160], cmd[200];
	FILE *f;

	snprintf(path, sizeof path, "%s/text.yaml", dir);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	fclose(f);
	snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%64s", hex), 1);
	pclose(f);
}

START_TEST(test_fingerprint)
{
	const char *lr[] = { "train.lr=0.002" };
	const char *same[] = { "train.lr=0.002", "train.lr=0.001" };
	unsigned char md_a[32], md_b[32];
	char hex_a[65], hex_b[65], want[65];
	size_t len;
	char *text;

	load(&job_a, NULL, 0);
	ck_assert_int_eq(dt_job_fingerprint(&job_a, md_a, hex_a, &err), DT_OK);
	ck_assert_int_eq(dt_job_text(&job_a, &text, &len, &err), DT_OK);
	ck_assert_uint_eq(strlen(text), len);
	sha256sum(text, len, want);
	free(text);
	ck_assert_str_eq(hex_a, want);
	ck_assert_uint_eq(md_a[0], strtoul((char[3]){ want[0], want[1], 0 },
					   NULL, 16));
	/* The same resolved job by another route: same fingerprint. */
	load(&job_b, same, 2);
	ck_assert_int_eq(dt_job_fingerprint(&job_b, md_b, hex_b, &err), DT_OK);
	ck_assert_str_eq(hex_b, hex_a);
	ck_assert_int_eq(memcmp(md_a, md_b, 32), 0);
	/* Another lr: another fingerprint. */
	load(&job_b, lr, 1);
	ck_assert_int_eq(dt_job_fingerprint(&job_b, md_b, NULL, &err), DT_OK);
	ck_assert_int_ne(memcmp(md_a, md_b, 32), 0);
}
END_TEST

/* The first difference of job_b (as rank 1) from job_a (rank 0). */
static const char *
job_diff(const char *const *sets, int n)
{
	static char buf[1024];
	char *ta, *tb;
	size_t la, lb;

	load(&job_a, NULL, 0);
	load(&job_b, sets, n);
	ck_assert_int_eq(dt_job_text(&job_a, &ta, &la, &err), DT_OK);
	ck_assert_int_eq(dt_job_text(&job_b, &tb, &lb, &err), DT_OK);
	if (!dt_agree_diff(tb, ta, 1, &job_b, buf, sizeof buf))
		buf[0] = '\0';
	free(ta);
	free(tb);
	return buf;
}

START_TEST(test_job_diff)
{
	const char *lr[] = { "train.lr=0.002" };
	const char *width[] = { "model.layers.0.units=64" };
	const char *seed[] = { "seed=8" };
	const char *act[] = { "model.layers.1.activation=tanh" };
	const char *mom[] = { "train.momentum=0.5" };
	const char *none[] = { "train.lr=0.001" };

	ck_assert_str_eq(job_diff(lr, 1), "rank 1: train.lr is 0.002 (--set "
			 "train.lr=0.002), rank 0 has 0.001");
	ck_assert_str_eq(job_diff(width, 1), "rank 1: model.layers.0.units is "
			 "64 (--set model.layers.0.units=64), rank 0 has 32");
	ck_assert_str_eq(job_diff(seed, 1), "rank 1: seed is 8 (--set seed=8), "
			 "rank 0 has 7");
	ck_assert_str_eq(job_diff(act, 1), "rank 1: model.layers.1.activation "
			 "is tanh (--set model.layers.1.activation=tanh), rank 0 "
			 "has none");
	ck_assert_str_eq(job_diff(mom, 1), "rank 1: train.momentum is 0.5 "
			 "(--set train.momentum=0.5), rank 0 has 0");
	ck_assert_str_eq(job_diff(none, 1), "");
}
END_TEST

START_TEST(test_record)
{
	char *rec, *other, buf[512], want[256];
	size_t len;

	load(&job_a, NULL, 0);
	ck_assert_int_eq(dt_agree_record(&job_a, 1, &rec, &len, &err), DT_OK);
	ck_assert_uint_eq(strlen(rec), len);
	ck_assert_ptr_nonnull(strstr(rec, "world.size\t1\n"));
	snprintf(want, sizeof want, "data.train.images\t1234 bytes\n");
	ck_assert_ptr_nonnull(strstr(rec, want));
	ck_assert_ptr_nonnull(strstr(rec, "data.train.labels\tmissing: No "
				     "such file or directory\n"));
	ck_assert_ptr_nonnull(strstr(rec, "plan.micro_batch\t8\n"));
	ck_assert_ptr_nonnull(strstr(rec, "plan.global_batch\t8\n"));
	ck_assert_ptr_nonnull(strstr(rec, "plan.data_parallel\t1\n"));
	ck_assert(strncmp(rec, "build.version\t", 14) == 0);
	ck_assert(!dt_agree_diff(rec, rec, 1, &job_a, buf, sizeof buf));

	/* The same job on two ranks, the data file grown on this one. */
	ck_assert_int_eq(dt_agree_record(&job_a, 2, &other, &len, &err), DT_OK);
	ck_assert_ptr_nonnull(strstr(other, "plan.micro_batch\t8\n"));
	ck_assert_ptr_nonnull(strstr(other, "plan.global_batch\t16\n"));
	ck_assert(dt_agree_diff(rec, other, 3, &job_a, buf, sizeof buf));
	ck_assert_str_eq(buf, "rank 3: world.size is 1, rank 0 has 2");
	free(other);
	{
		FILE *f = fopen(images, "ab");

		ck_assert_ptr_nonnull(f);
		fputs("xyz", f);
		fclose(f);
	}
	ck_assert_int_eq(dt_agree_record(&job_a, 1, &other, &len, &err), DT_OK);
	ck_assert(dt_agree_diff(other, rec, 2, &job_a, buf, sizeof buf));
	snprintf(want, sizeof want, "rank 2: data.train.images is 1237 bytes "
		 "(%s/job.yaml:3:19), rank 0 has 1234 bytes", dir);
	ck_assert_str_eq(buf, want);
	free(other);
	free(rec);
}
END_TEST

/* The data record: each source's path, size and sha256 (hashed here,
 * worked out with Python's hashlib), and the difference a file with other
 * bytes makes, named with the rank. The digest cache lives in a scratch
 * directory of its own. */
START_TEST(test_data_record)
{
	char cache[64] = "/tmp/dtrain-agree-cache.XXXXXX", cmd[128];
	char *rec, *other, buf[1024], want[1024];
	size_t len;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(cache));
	setenv("DTRAIN_CACHE", cache, 1);
	load(&job_a, NULL, 0);
	ck_assert_int_eq(dt_agree_data_record(&job_a, &rec, &len, &err),
			 DT_OK);
	ck_assert_uint_eq(strlen(rec), len);
	snprintf(want, sizeof want, "data.train.images\t%s: 1234 bytes, "
		 "sha256 870c9585bb23bc5902a7da6b506efbe0"
		 "a54befcff934ae663348c88a57c857e2\n", images);
	ck_assert_ptr_nonnull(strstr(rec, want));
	ck_assert_ptr_nonnull(strstr(rec, "data.train.labels\t"));
	ck_assert_ptr_nonnull(strstr(rec, ": missing: No such file or "
				     "directory\n"));

	f = fopen(images, "ab");
	ck_assert_ptr_nonnull(f);
	fputs("xyz", f);
	fclose(f);
	ck_assert_int_eq(dt_agree_data_record(&job_a, &other, &len, &err),
			 DT_OK);
	ck_assert(dt_agree_diff(other, rec, 1, &job_a, buf, sizeof buf));
	snprintf(want, sizeof want, "rank 1: data.train.images is %s: 1237 "
		 "bytes, sha256 0df4e2a389486cfe39c8512bc88e63db"
		 "6078081c5a1a084eaf35f7f020c18fc7 (%s/job.yaml:3:19), rank 0 "
		 "has %s: 1234 bytes, sha256 870c9585bb23bc5902a7da6b506efbe0"
		 "a54befcff934ae663348c88a57c857e2", images, dir, images);
	ck_assert_str_eq(buf, want);
	free(other);
	free(rec);
	unsetenv("DTRAIN_CACHE");
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_self_comm)
{
	struct dt_comm *c = dt_comm_self_new();
	const char bytes[] = "abc";
	size_t n = 0;
	char *out;
	int bad = 7;

	ck_assert_int_eq(dt_comm_agree_length(c, "x", 12, &err), DT_OK);
	ck_assert_int_eq(dt_comm_check_same(c, "x", bytes, 3, &bad, &err),
			 DT_OK);
	ck_assert_int_eq(bad, -1);
	ck_assert_int_eq(dt_comm_check_same(c, "x", bytes, 0, &bad, &err),
			 DT_OK);
	ck_assert_int_eq(dt_comm_bcast_blob(c, 0, bytes, 3, &out, &n, &err),
			 DT_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(out, "abc");
	ck_assert_ptr_ne(out, bytes);
	free(out);
	load(&job_a, NULL, 0);
	ck_assert_int_eq(dt_agree_check(&job_a, c, &err), DT_OK);
	dt_comm_free(c);
}
END_TEST

static Suite *
agree_suite(void)
{
	Suite *s = suite_create("agree");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_fingerprint);
	tcase_add_test(tc, test_job_diff);
	tcase_add_test(tc, test_record);
	tcase_add_test(tc, test_data_record);
	tcase_add_test(tc, test_self_comm);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(agree_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
