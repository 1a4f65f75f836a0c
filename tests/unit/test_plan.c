/* test_plan.c - batch arithmetic, BLAS threads, the single-process
 * communicator's agreement and the run directory's refusal to overwrite. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dist/comm.h"
#include "plan/plan.h"
#include "train/rundir.h"

static struct dt_job job;

static void
set_batch(int64_t g, int64_t m, int64_t k)
{
	memset(&job, 0, sizeof job);
	strcpy(job.path, "job.yaml");
	job.train.global_batch = g;
	job.train.micro_batch = m;
	job.train.grad_accum_steps = k;
}

START_TEST(two_of_three_fix_the_third)
{
	struct dt_plan p;
	struct dt_error err;

	set_batch(96, 0, 2);		/* g, k -> m */
	ck_assert_int_eq(dt_plan_batch(&job, 3, &p, &err), DT_OK);
	ck_assert_int_eq(p.micro_batch, 16);
	ck_assert_int_eq(p.grad_accum_steps, 2);
	ck_assert_int_eq(p.dp_size, 3);
	ck_assert_int_eq(p.per_rank_batch, 32);

	set_batch(96, 12, 0);		/* g, m -> k */
	ck_assert_int_eq(dt_plan_batch(&job, 2, &p, &err), DT_OK);
	ck_assert_int_eq(p.grad_accum_steps, 4);

	set_batch(0, 8, 3);		/* m, k -> g */
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_OK);
	ck_assert_int_eq(p.global_batch, 96);

	set_batch(128, 0, 0);		/* g alone: k = 1 */
	ck_assert_int_eq(dt_plan_batch(&job, 2, &p, &err), DT_OK);
	ck_assert_int_eq(p.micro_batch, 64);
	ck_assert_int_eq(p.grad_accum_steps, 1);

	set_batch(0, 32, 0);		/* m alone: k = 1, g = m x dp */
	ck_assert_int_eq(dt_plan_batch(&job, 3, &p, &err), DT_OK);
	ck_assert_int_eq(p.global_batch, 96);

	set_batch(96, 16, 2);		/* all three, consistent */
	ck_assert_int_eq(dt_plan_batch(&job, 3, &p, &err), DT_OK);
}
END_TEST

START_TEST(contradictions_and_remainders)
{
	struct dt_plan p;
	struct dt_error err;

	set_batch(96, 16, 2);
	ck_assert_int_eq(dt_plan_batch(&job, 2, &p, &err), DT_ERR_PLAN);
	ck_assert_pstr_eq(err.msg, "job.yaml: train.global_batch: global batch "
			  "96 != micro_batch 16 x grad_accum_steps 2 x "
			  "data-parallel degree 2 = 64; give only two of the "
			  "three");
	set_batch(96, 0, 2);
	ck_assert_int_eq(dt_plan_batch(&job, 5, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "global batch 96 is not a multiple of "
			 "grad_accum_steps 2 x data-parallel degree 5 = 10"));
	set_batch(100, 8, 0);
	ck_assert_int_eq(dt_plan_batch(&job, 1, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "not a multiple of micro_batch 8"));
	set_batch(0, 0, 4);
	ck_assert_int_eq(dt_plan_batch(&job, 1, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "give train.global_batch or train.micro_batch"));
	set_batch(64, 0, 0);
	job.parallel.data_parallel = 4;
	ck_assert_int_eq(dt_plan_batch(&job, 2, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "data-parallel degree 4 does not match the 2 "
			 "data-parallel ranks of 2"));
	/* Parameter servers are not data-parallel ranks. */
	set_batch(96, 0, 2);
	job.parallel.sync = DT_SYNC_PARAMETER_SERVER;
	job.parallel.servers = 1;
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_OK);
	ck_assert_int_eq(p.dp_size, 3);
	ck_assert_int_eq(p.micro_batch, 16);
	job.parallel.servers = 4;
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "4 parameter servers leave no worker"));
	job.parallel.servers = 1;
	job.train.clip_norm = 1;
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "not supported with parameter servers"));
	/* Layouts the job file can describe but no rank can run yet. */
	job.train.clip_norm = 0;
	job.parallel.sync = DT_SYNC_ALLREDUCE;
	job.parallel.strategy = DT_STRATEGY_HYBRID;
	ck_assert_int_eq(dt_plan_batch(&job, 4, &p, &err), DT_ERR_PLAN);
	ck_assert(strstr(err.msg, "hybrid: pipeline and tensor parallelism are "
			 "not implemented"));
}
END_TEST

START_TEST(blas_threads)
{
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, NULL), 4);
	ck_assert_int_eq(dt_plan_blas_threads(2, 2, NULL), 1);
	ck_assert_int_eq(dt_plan_blas_threads(2, 3, NULL), 1);
	ck_assert_int_eq(dt_plan_blas_threads(2, 1, ""), 2);
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, "3"), 3);
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, "x"), 4);
	ck_assert_int_eq(dt_plan_blas_threads(16, 4, "0"), 4);
}
END_TEST

START_TEST(self_comm)
{
	struct dt_comm *c = dt_comm_self_new();
	struct dt_error err;
	float f[2] = { 1.5f, -2 };
	int v = 7;

	ck_assert_int_eq(dt_comm_rank(c), 0);
	ck_assert_int_eq(dt_comm_size(c), 1);
	ck_assert_int_eq(dt_comm_allreduce_sum_f32(c, f, 2, &err), DT_OK);
	ck_assert(f[0] == 1.5f && f[1] == -2);
	ck_assert_int_eq(dt_comm_allreduce_max_int(c, &v, 1, &err), DT_OK);
	ck_assert_int_eq(v, 7);
	dt_errorf(&err, DT_ERR_IO, "x: cannot open");
	ck_assert_int_eq(dt_comm_agree(c, DT_ERR_IO, &err), DT_ERR_IO);
	ck_assert_str_eq(err.msg, "x: cannot open");
	ck_assert_int_eq(dt_comm_agree(c, DT_OK, &err), DT_OK);
	dt_comm_free(c);
}
END_TEST

static enum dt_status
write_hello(FILE *out, void *ctx, struct dt_error *err)
{
	(void)err;
	fputs(ctx, out);
	return DT_OK;
}

static enum dt_status
write_fails(FILE *out, void *ctx, struct dt_error *err)
{
	(void)out; (void)ctx;
	return dt_errorf(err, DT_ERR_IO, "disk full");
}

START_TEST(rundir_refuses_results)
{
	char tmpl[] = "/tmp/dtrain-test-plan.XXXXXX", path[4200], buf[16];
	struct dt_error err;
	char *dir = mkdtemp(tmpl);
	FILE *f;

	ck_assert_ptr_nonnull(dir);
	snprintf(path, sizeof path, "%s/a/b", dir);
	ck_assert_int_eq(dt_rundir_prepare(path, &err), DT_OK);
	snprintf(path, sizeof path, "%s/a/b/summary.json", dir);
	ck_assert_int_eq(dt_rundir_write_atomic(path, write_hello, "hi", &err),
			 DT_OK);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof buf, f));
	fclose(f);
	ck_assert_str_eq(buf, "hi");
	/* A failed write leaves the old file and no temporary. */
	ck_assert_int_eq(dt_rundir_write_atomic(path, write_fails, NULL, &err),
			 DT_ERR_IO);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof path, "%s/a/b", dir);
	ck_assert_int_eq(dt_rundir_prepare(path, &err), DT_ERR_EXISTS);
	ck_assert(strstr(err.msg, "already holds results (summary.json)"));
	ck_assert(strstr(err.msg, "--run-dir"));
	snprintf(path, sizeof path, "rm -r %s", dir);
	ck_assert_int_eq(system(path), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, two_of_three_fix_the_third);
	tcase_add_test(tc, contradictions_and_remainders);
	tcase_add_test(tc, blas_threads);
	tcase_add_test(tc, self_comm);
	tcase_add_test(tc, rundir_refuses_results);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
