/* SPDX-License-Identifier: MIT */
/* test_job_sections.c - the data formats and their keys, data sources (paths,
 * URLs, sha256 and size), train.clip_norm/on_nonfinite/schedule, the
 * parallel layout and checkpoint: values, defaults, positions and the
 * exact message of each error. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "job_test.h"

static const char upper_sha[] =
	"9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";
static const char lower_sha[] =
	"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/* The idx training split most tests below need, on line 6. */
static const char idx_train[] = "  train: {images: a, labels: b}\n";

/* "job.yaml:L:C: head" then line and a caret under column col. */
static const char *
at(int line_no, int col, const char *head, const char *line)
{
	static char buf[2048];

	snprintf(buf, sizeof buf, "job.yaml:%d:%d: %s\n%s\n%*s^", line_no,
		 col, head, line, col - 1, "");
	return buf;
}

/* Expects head at line:col of data_job(data, tail), whose line 6 is the
 * first of data. */
static void
expect_data_error(const char *data, const char *tail, int line_no, int col,
		  const char *head)
{
	char text[8192], line[512];
	const char *p;
	int i;

	snprintf(text, sizeof text, "%s", data_job(data, tail));
	p = text;
	for (i = 1; i < line_no && p != NULL; i++) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	ck_assert_ptr_nonnull(p);
	snprintf(line, sizeof line, "%.*s", (int)strcspn(p, "\n"), p);
	expect_error(text, NULL, 0, at(line_no, col, head, line));
}

START_TEST(test_data_formats)
{
	ck_assert_int_eq(parse(min_job), DT_OK);
	ck_assert_int_eq(job.data.format, DT_FORMAT_IDX);
	ck_assert(!job.data.header);
	ck_assert_int_eq(job.data.label_column, -1);
	ck_assert_int_eq(job.data.token_bytes, 2);
	ck_assert_int_eq(job.data.context, 0);
	ck_assert_int_eq(job.data.text_unit, DT_JOB_TEXT_BYTES);
	ck_assert(job.data.eval_fraction == 0.1);
	ck_assert_int_eq(job.data.prefetch, 2);
	ck_assert_int_eq(job.data.max_bytes, 4294967296LL);
	ck_assert_str_eq(job.data.train.images_src.path, "/jobs/a.idx");
	ck_assert_str_eq(job.data.train.file.path, "");

	ck_assert_int_eq(parse(data_job("  format: csv\n  train: {file: t.csv}\n"
					"  eval: {file: e.csv}\n"
					"  header: true\n  label_column: 0\n"
					"  scale: 1\n  prefetch: 0\n", "")),
			 DT_OK);
	ck_assert_int_eq(job.data.format, DT_FORMAT_CSV);
	ck_assert_str_eq(job.data.train.file.path, "/jobs/t.csv");
	ck_assert_str_eq(job.data.eval.file.path, "/jobs/e.csv");
	ck_assert_str_eq(job.data.train.images, "");
	ck_assert(job.data.header && job.data.scale == 1.0);
	ck_assert_int_eq(job.data.label_column, 0);
	ck_assert_int_eq(job.data.prefetch, 0);

	ck_assert_int_eq(parse(data_job("  format: npy\n  train: {images: x.npy, "
					"labels: y.npy}\n", "")), DT_OK);
	ck_assert_int_eq(job.data.format, DT_FORMAT_NPY);
	ck_assert_str_eq(job.data.train.labels, "/jobs/y.npy");

	ck_assert_int_eq(parse(data_job("  format: tokens\n  train: {file: t.bin}\n"
					"  token_bytes: 4\n  context: 4\n"
					"  eval_fraction: 0\n  max_bytes: 1024\n",
					"")), DT_OK);
	ck_assert_int_eq(job.data.format, DT_FORMAT_TOKENS);
	ck_assert_int_eq(job.data.token_bytes, 4);
	ck_assert_int_eq(job.data.context, 4);
	ck_assert(job.data.eval_fraction == 0.0);
	ck_assert_int_eq(job.data.max_bytes, 1024);

	ck_assert_int_eq(parse(data_job("  format: text\n  train: {file: t.txt}\n"
					"  context: 4\n  text_unit: utf8\n",
					"")), DT_OK);
	ck_assert_int_eq(job.data.format, DT_FORMAT_TEXT);
	ck_assert_int_eq(job.data.text_unit, DT_JOB_TEXT_UTF8);
	ck_assert_int_eq(job.data.context, 4);
}
END_TEST

START_TEST(test_sources)
{
	char data[1024], buf[256], cwd[4096], want[4200];
	struct dt_pos pos;

	snprintf(data, sizeof data,
		 "  train:\n"
		 "    images: https://example.org/train-images.gz\n"
		 "    labels: {path: labels.gz, sha256: %s, size: 1234}\n"
		 "  eval:\n"
		 "    images: HTTP://Mirror.example.org/t10k.gz\n"
		 "    labels: ./t10k-labels.gz\n", upper_sha);
	ck_assert_int_eq(parse(data_job(data, "")), DT_OK);
	/* URLs are never paths; the char arrays follow the sources. */
	ck_assert_str_eq(job.data.train.images,
			 "https://example.org/train-images.gz");
	ck_assert_str_eq(job.data.train.images_src.path,
			 "https://example.org/train-images.gz");
	ck_assert_str_eq(job.data.train.images_src.sha256, "");
	ck_assert_int_eq(job.data.train.images_src.size, 0);
	ck_assert_str_eq(job.data.train.labels, "/jobs/labels.gz");
	ck_assert_str_eq(job.data.train.labels_src.path, "/jobs/labels.gz");
	ck_assert_str_eq(job.data.train.labels_src.sha256, lower_sha);
	ck_assert_int_eq(job.data.train.labels_src.size, 1234);
	ck_assert_str_eq(job.data.eval.images,
			 "HTTP://Mirror.example.org/t10k.gz");
	ck_assert_str_eq(job.data.eval.labels, "/jobs/t10k-labels.gz");

	pos = dt_job_pos(&job, "data.train.labels");
	ck_assert_int_eq(pos.line, 8);
	ck_assert_int_eq(pos.col, 13);
	pos = dt_job_pos(&job, "data.train.labels.sha256");
	ck_assert_int_eq(pos.line, 8);
	ck_assert_int_eq(pos.col, 39);
	pos = dt_job_pos(&job, "data.train.labels.size");
	ck_assert_int_eq(pos.col, 111);
	ck_assert_int_eq(dt_job_pos(&job, "data.train.images.sha256").line, 0);
	dt_job_where(&job, "data.train.labels.sha256", buf, sizeof buf);
	ck_assert_str_eq(buf, "/jobs/job.yaml:8:39: data.train.labels.sha256: ");

	/* --set: a part at a time, or a new source that drops the old
	 * digest; relative to the current directory. */
	{
		char sha[128];
		const char *sets[] = { sha, "data.train.images.size=5",
				       "data.train.labels=other.gz" };

		snprintf(sha, sizeof sha, "data.train.images.sha256=%s",
			 upper_sha);
		ck_assert_int_eq(parse_as("/jobs/job.yaml", data_job(data, ""),
					  sets, 3), DT_OK);
	}
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	snprintf(want, sizeof want, "%s/other.gz", cwd);
	ck_assert_str_eq(job.data.train.labels, want);
	ck_assert_str_eq(job.data.train.labels_src.sha256, "");
	ck_assert_int_eq(job.data.train.labels_src.size, 0);
	ck_assert_str_eq(job.data.train.images,
			 "https://example.org/train-images.gz");
	ck_assert_str_eq(job.data.train.images_src.sha256, lower_sha);
	ck_assert_int_eq(job.data.train.images_src.size, 5);
	ck_assert_int_eq(dt_job_pos(&job, "data.train.images.size").from_set,
			 2);
}
END_TEST

/* dt_job_source: the six sources in schema order, each with its key and
 * the job's own storage, the ones not given with an empty path. */
START_TEST(test_source_list)
{
	const struct dt_source *want[DT_JOB_SOURCES] = {
		&job.data.train.images_src, &job.data.train.labels_src,
		&job.data.train.file, &job.data.eval.images_src,
		&job.data.eval.labels_src, &job.data.eval.file,
	};
	static const char *const keys[DT_JOB_SOURCES] = {
		"data.train.images", "data.train.labels", "data.train.file",
		"data.eval.images", "data.eval.labels", "data.eval.file",
	};

	ck_assert_int_eq(parse(data_job("  train:\n"
					"    images: https://example.org/i.gz\n"
					"    labels: l.gz\n"
					"  eval: {images: e.gz, labels: f.gz}\n",
					"")), DT_OK);
	for (int i = 0; i < DT_JOB_SOURCES; i++) {
		const char *key = NULL;

		ck_assert_ptr_eq(dt_job_source(&job, i, &key), want[i]);
		ck_assert_str_eq(key, keys[i]);
	}
	ck_assert_str_eq(job.data.train.images_src.path,
			 "https://example.org/i.gz");
	ck_assert_str_eq(job.data.eval.labels_src.path, "/jobs/f.gz");
	ck_assert_str_eq(job.data.train.file.path, "");
	ck_assert_str_eq(job.data.eval.file.path, "");
}
END_TEST

START_TEST(test_data_errors)
{
	char line[256];

	expect_data_error("  format: csv\n  train: {images: a.idx, labels: "
			  "b.idx}\n", "", 7, 19, "data.train.images: not used "
			  "when data.format is csv (only idx, npy)");
	expect_data_error("  format: csv\n", "", 6, 3, "data.train.file: "
			  "required key missing (data.format is csv); expected "
			  "a path or URL");
	expect_data_error(idx_train, "  header: true\n", 7, 11,
			  "data.header: not used when data.format is idx (only "
			  "csv)");
	/* data_job's input_shape [4] says the window: data.context is
	 * derived from it, and a different one is refused naming both. */
	ck_assert_int_eq(parse(data_job("  format: tokens\n  train: {file: "
					"t}\n", "")), DT_OK);
	ck_assert_int_eq(job.data.context, 4);
	expect_data_error("  format: tokens\n  train: {file: t}\n  context: "
			  "5\n", "", 2, 17, "model.input_shape.0: expected 5, "
			  "the window length data.context gives (job.yaml:8:12), "
			  "found 4; give it in one place and leave the other "
			  "out");
	expect_data_error("  format: tokens\n  train: {file: t}\n"
			  "  context: 8\n  token_bytes: 3\n", "", 9, 16,
			  "data.token_bytes: must be in {2, 4}, found 3");
	expect_data_error("  format: text\n  train: {file: t}\n"
			  "  context: 8\n  token_bytes: 2\n", "", 9, 16,
			  "data.token_bytes: not used when data.format is text "
			  "(only tokens)");
	expect_data_error("  format: text\n  train: {file: t}\n"
			  "  context: 8\n  text_unit: utf16\n", "", 9, 14,
			  "data.text_unit: expected one of bytes, utf8, bpe, "
			  "found \"utf16\"");
	expect_data_error("  format: text\n  train: {file: t}\n  context: 8\n"
			  "  eval: {file: e}\n  eval_fraction: 0.2\n", "", 10,
			  18, "data.eval_fraction: not used when "
			  "data.eval.file is given");
	expect_data_error("  format: text\n  train: {file: t}\n  context: 8\n"
			  "  eval_fraction: 1\n", "", 9, 18,
			  "data.eval_fraction: must be in [0, 1), found 1");
	expect_data_error("  format: csv\n  train: {file: t}\n"
			  "  label_column: -2\n", "", 8, 17,
			  "data.label_column: must be in [-1, 1048576], found -2");
	expect_data_error(idx_train, "  max_bytes: 0\n", 7, 14,
			  "data.max_bytes: must be in (0, 1125899906842624], found 0");
	expect_data_error(idx_train, "  prefetch: -1\n", 7, 13,
			  "data.prefetch: must be in [0, 64], found -1");
	expect_data_error("  format: parquet\n", "", 6, 11,
			  "data.format: expected one of idx, csv, npy, tokens, "
			  "text, llmc, u16, found \"parquet\"");

	/* Sources. */
	expect_data_error("  train: {images: {path: a, sha256: abc}, labels: "
			  "b}\n", "", 6, 37, "data.train.images.sha256: "
			  "expected 64 hex digits, found \"abc\"");
	snprintf(line, sizeof line, "  train: {images: {path: a, sha256: "
		 "%.63sg}, labels: b}\n", lower_sha);
	expect_data_error(line, "", 6, 37, "data.train.images.sha256: "
			  "expected 64 hex digits, found \"9f86d081884c7d659a2"
			  "feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f0...\"");
	expect_data_error("  train: {images: {size: 10}, labels: b}\n", "", 6,
			  19, "data.train.images.path: required key missing; "
			  "expected a path or URL");
	expect_data_error("  train: {images: {path: a, sha: abc}, labels: b}\n",
			  "", 6, 29, "data.train.images.sha: unknown key; "
			  "data.train.images takes path, sha256, size");
	expect_data_error("  train: {images: {path: a, szie: 3}, labels: b}\n",
			  "", 6, 29, "data.train.images.szie: unknown key; did "
			  "you mean 'data.train.images.size'?");
	expect_data_error("  train: {images: {path: a, size: 0}, labels: b}\n",
			  "", 6, 35, "data.train.images.size: must be in [1, 4611686018427387904], "
			  "found 0");
	expect_data_error("  train: {images: ftp://x.org/a, labels: b}\n", "",
			  6, 19, "data.train.images: expected a path or an "
			  "http:// or https:// URL, found \"ftp://x.org/a\"");
	expect_data_error("  train: {images: [a], labels: b}\n", "", 6, 19,
			  "data.train.images: expected a path or URL, or a "
			  "mapping {path, sha256, size}, found a list");
	expect_data_error("  train: {images: a, labels: {path: \"\"}}\n", "",
			  6, 37, "data.train.labels.path: expected a path or "
			  "URL, found a quoted string \"\"");
	{
		const char *s1[] = { "data.format=csv" };
		const char *s2[] = { "data.train.images.sha256=xyz" };
		const char *s3[] = { "data.eval.file.size=10" };
		const char *s4[] = { "data.train.images.sah256=1" };

		/* An override that makes the file wrong is to blame. */
		expect_error(min_job, s1, 1, "--set data.format=csv: "
			     "data.train.images: not used when data.format is "
			     "csv (only idx, npy)");
		expect_error(min_job, s2, 1, "--set data.train.images.sha256=xyz: "
			     "data.train.images.sha256: expected 64 hex digits, "
			     "found \"xyz\"");
		expect_error(data_job("  format: tokens\n  train: {file: t}\n"
				      "  context: 8\n", ""), s3, 1,
			     "--set data.eval.file.size=10: data.eval.file.path: "
			     "required key missing; expected a path or URL");
		expect_error(min_job, s4, 1, "--set data.train.images.sah256=1: "
			     "data.train.images.sah256: unknown key; did you mean "
			     "'data.train.images.sha256'?");
	}
}
END_TEST

START_TEST(test_train_keys)
{
	const char *sets[] = { "train.schedule.kind=step",
			       "train.schedule.step_size=100" };

	ck_assert_int_eq(parse(min_job), DT_OK);
	ck_assert(job.train.clip_norm == 0.0);
	ck_assert_int_eq(job.train.on_nonfinite, DT_NONFINITE_ABORT);
	ck_assert_int_eq(job.train.schedule.kind, DT_SCHEDULE_CONSTANT);
	ck_assert_int_eq(job.train.schedule.warmup_steps, 0);
	ck_assert_int_eq(job.train.schedule.step_size, 0);
	ck_assert(job.train.schedule.gamma == 0.1);
	ck_assert(job.train.schedule.min_lr == 0.0);

	ck_assert_int_eq(parse(min_with("  clip_norm: 1.5\n"
					"  on_nonfinite: skip_step\n"
					"  schedule:\n    kind: cosine\n"
					"    warmup_steps: 50\n"
					"    min_lr: 0.1\n")), DT_OK);
	ck_assert(job.train.clip_norm == 1.5);
	ck_assert_int_eq(job.train.on_nonfinite, DT_NONFINITE_SKIP_STEP);
	ck_assert_int_eq(job.train.schedule.kind, DT_SCHEDULE_COSINE);
	ck_assert_int_eq(job.train.schedule.warmup_steps, 50);
	ck_assert(job.train.schedule.min_lr == 0.1);	/* == lr is fine */
	ck_assert_int_eq(dt_job_pos(&job, "train.schedule.min_lr").line, 16);

	ck_assert_int_eq(parse_as("j.yaml", min_with("  schedule: {gamma: "
						     "0.5}\n"), sets, 2),
			 DT_OK);
	ck_assert_int_eq(job.train.schedule.kind, DT_SCHEDULE_STEP);
	ck_assert_int_eq(job.train.schedule.step_size, 100);
	ck_assert(job.train.schedule.gamma == 0.5);
}
END_TEST

START_TEST(test_train_errors)
{
	const char *s1[] = { "train.lr=0.01" };

	expect_error(min_with("  schedule: {kind: step}\n"), NULL, 0,
		     at(11, 13, "train.schedule.step_size: required key missing "
			"(train.schedule.kind is step); expected an integer in "
			"[1, 16777216]",
			"  schedule: {kind: step}"));
	expect_error(min_with("  schedule: {kind: step, step_size: 10, gamma: "
			      "0}\n"), NULL, 0,
		     at(11, 48, "train.schedule.gamma: must be in (0, 1], found "
			"0", "  schedule: {kind: step, step_size: 10, gamma: 0}"));
	expect_error(min_with("  schedule: {kind: step, step_size: 10, min_lr: "
			      "0.01}\n"), NULL, 0,
		     at(11, 49, "train.schedule.min_lr: not used when "
			"train.schedule.kind is step (only cosine)",
			"  schedule: {kind: step, step_size: 10, min_lr: 0.01}"));
	expect_error(min_with("  schedule: {step_size: 10}\n"), NULL, 0,
		     at(11, 25, "train.schedule.step_size: not used when "
			"train.schedule.kind is constant (only step)",
			"  schedule: {step_size: 10}"));
	expect_error(min_with("  schedule: {kind: cosine, min_lr: 0.5}\n"), NULL,
		     0, at(11, 36, "train.schedule.min_lr: must be <= train.lr "
			   "(0.1), found 0.5",
			   "  schedule: {kind: cosine, min_lr: 0.5}"));
	expect_error(min_with("  schedule: {kind: cosine, min_lr: 0.05}\n"), s1,
		     1, "--set train.lr=0.01: train.schedule.min_lr: must be <= "
		     "train.lr (0.01), found 0.05");
	expect_error(min_with("  schedule: {warmup_steps: -1}\n"), NULL, 0,
		     at(11, 28, "train.schedule.warmup_steps: must be in [0, 16777216], "
			"found -1", "  schedule: {warmup_steps: -1}"));
	expect_error(min_with("  schedule: {kind: linear}\n"), NULL, 0,
		     at(11, 20, "train.schedule.kind: expected one of constant, "
			"step, cosine, found \"linear\"",
			"  schedule: {kind: linear}"));
	expect_error(min_with("  clip_norm: -1\n"), NULL, 0,
		     at(11, 14, "train.clip_norm: must be >= 0, found -1",
			"  clip_norm: -1"));
	expect_error(min_with("  on_nonfinite: skip\n"), NULL, 0,
		     at(11, 17, "train.on_nonfinite: expected one of abort, "
			"skip_step, found \"skip\"", "  on_nonfinite: skip"));
}
END_TEST

START_TEST(test_parallel)
{
	ck_assert_int_eq(parse(min_job), DT_OK);
	ck_assert_int_eq(job.parallel.strategy, DT_STRATEGY_DATA);
	ck_assert_int_eq(job.parallel.data_parallel, 0);
	ck_assert_int_eq(job.parallel.pipeline_parallel, 0);
	ck_assert_int_eq(job.parallel.tensor_parallel, 0);
	ck_assert_int_eq(job.parallel.schedule, DT_PIPE_GPIPE);
	ck_assert_int_eq(job.parallel.micro_batches, 0);
	ck_assert_int_eq(job.parallel.balance, DT_BALANCE_FLOPS);
	ck_assert_int_eq(job.parallel.n_stages, 0);
	ck_assert_int_eq(job.parallel.sync, DT_SYNC_ALLREDUCE);
	ck_assert_int_eq(job.parallel.servers, 1);
	ck_assert_int_eq(job.parallel.mode, DT_PS_SYNC);
	ck_assert_int_eq(job.parallel.max_staleness, 4);

	ck_assert_int_eq(parse(data_job(idx_train,
		"parallel:\n  strategy: hybrid\n  data_parallel: auto\n"
		"  pipeline_parallel: 3\n  tensor_parallel: 2\n"
		"  schedule: 1f1b\n  micro_batches: 8\n  balance: params\n"
		"  stages: [b, c]\n")), DT_OK);
	ck_assert_int_eq(job.parallel.strategy, DT_STRATEGY_HYBRID);
	ck_assert_int_eq(job.parallel.data_parallel, DT_DEGREE_AUTO);
	ck_assert_int_eq(job.parallel.pipeline_parallel, 3);
	ck_assert_int_eq(job.parallel.tensor_parallel, 2);
	ck_assert_int_eq(job.parallel.schedule, DT_PIPE_1F1B);
	ck_assert_int_eq(job.parallel.micro_batches, 8);
	ck_assert_int_eq(job.parallel.balance, DT_BALANCE_PARAMS);
	ck_assert_int_eq(job.parallel.n_stages, 2);
	ck_assert_str_eq(job.parallel.stages[0], "b");
	ck_assert_str_eq(job.parallel.stages[1], "c");
	ck_assert_int_eq(dt_job_pos(&job, "parallel.stages.1").line, 15);
	ck_assert_int_eq(dt_job_pos(&job, "parallel.stages.1").col, 15);
	ck_assert_int_eq(dt_job_pos(&job, "parallel.stages.2").line, 0);

	ck_assert_int_eq(parse(data_job(idx_train, "parallel: {sync: "
					"parameter_server, servers: 2, mode: "
					"async, max_staleness: 0}\n")), DT_OK);
	ck_assert_int_eq(job.parallel.sync, DT_SYNC_PARAMETER_SERVER);
	ck_assert_int_eq(job.parallel.servers, 2);
	ck_assert_int_eq(job.parallel.mode, DT_PS_ASYNC);
	ck_assert_int_eq(job.parallel.max_staleness, 0);
	/* Degree 1 is fine with strategy data. */
	ck_assert_int_eq(parse(data_job(idx_train, "parallel: {tensor_parallel: "
					"1, pipeline_parallel: 1}\n")), DT_OK);
}
END_TEST

START_TEST(test_parallel_errors)
{
	const char *s1[] = { "parallel.sync=allreduce" };
	const char *s2[] = { "parallel.strategy=data" };

	expect_data_error(idx_train, "parallel: {data_parallel: 0}\n", 7, 27,
			  "parallel.data_parallel: must be in [1, 65536], found 0");
	expect_data_error(idx_train, "parallel: {data_parallel: many}\n", 7, 27,
			  "parallel.data_parallel: expected auto or an integer, "
			  "found \"many\"");
	expect_data_error(idx_train, "parallel: {pipeline_parallel: 2}\n", 7,
			  31, "parallel.pipeline_parallel: must be 1 with "
			  "strategy data, found 2; use strategy hybrid or model");
	expect_data_error(idx_train, "parallel: {tensor_parallel: auto}\n", 7,
			  29, "parallel.tensor_parallel: must be 1 with strategy "
			  "data, found auto; use strategy hybrid or model");
	expect_data_error(idx_train, "parallel: {strategy: model, "
			  "pipeline_parallel: auto, tensor_parallel: auto}\n", 7,
			  71, "parallel.tensor_parallel: expected at most one "
			  "degree set to auto, found parallel.pipeline_parallel "
			  "auto too");
	expect_data_error(idx_train, "parallel: {schedule: 1f1b}\n", 7, 22,
			  "parallel.schedule: not used when parallel.strategy is "
			  "data (only model, hybrid)");
	expect_data_error(idx_train, "parallel: {strategy: hybrid, "
			  "pipeline_parallel: 3, stages: [b]}\n", 7, 60,
			  "parallel.stages: expected 2 names (the first layers "
			  "of stages 1 to 2 with pipeline_parallel 3), found 1");
	expect_data_error(idx_train, "parallel: {strategy: model, stages: [c, "
			  "b]}\n", 7, 41, "parallel.stages.1: expected a layer "
			  "after \"c\" (model.layers.2), found \"b\" "
			  "(model.layers.1)");
	expect_data_error(idx_train, "parallel: {strategy: model, stages: "
			  "[a]}\n", 7, 38, "parallel.stages.0: expected a layer "
			  "after the first, found \"a\" (model.layers.0), which "
			  "starts stage 0 anyway");
	expect_data_error(idx_train, "parallel: {strategy: model, stages: "
			  "[bb]}\n", 7, 38, "parallel.stages.0: expected the "
			  "name of a layer, found \"bb\"; did you mean 'b'?");
	expect_data_error(idx_train, "parallel: {strategy: model, stages: "
			  "[d]}\n", 7, 38, "parallel.stages.0: expected the "
			  "name of a layer, found \"d\"");
	expect_data_error(idx_train, "parallel: {strategy: model, stages: "
			  "[]}\n", 7, 37, "parallel.stages: expected a list of "
			  "1 to 256 layer names, found an empty list");
	expect_data_error(idx_train, "parallel: {strategy: model, "
			  "micro_batches: 0}\n", 7, 44, "parallel.micro_batches: "
			  "must be in [1, 65536], found 0");
	expect_data_error(idx_train, "parallel: {strategy: model, balance: "
			  "time}\n", 7, 38, "parallel.balance: expected one of "
			  "flops, params, found \"time\"");
	expect_data_error(idx_train, "parallel: {strategy: pipeline}\n", 7, 22,
			  "parallel.strategy: expected one of data, model, "
			  "hybrid, found \"pipeline\"");
	expect_data_error(idx_train, "parallel: {servers: 2}\n", 7, 21,
			  "parallel.servers: not used when parallel.sync is "
			  "allreduce (only parameter_server)");
	expect_data_error(idx_train, "parallel:\n  sync: allreduce\n"
			  "  max_staleness: 2\n", 9, 18, "parallel.max_staleness: "
			  "not used when parallel.sync is allreduce (only "
			  "parameter_server)");
	expect_data_error(idx_train, "parallel: {sync: parameter_server, "
			  "servers: 0}\n", 7, 45, "parallel.servers: must be in "
			  "[1, 65536], found 0");
	expect_error(data_job(idx_train, "parallel: {sync: parameter_server, "
			      "mode: async}\n"), s1, 1,
		     "--set parallel.sync=allreduce: parallel.mode: not used "
		     "when parallel.sync is allreduce (only parameter_server)");
	expect_error(data_job(idx_train, "parallel: {strategy: hybrid, "
			      "tensor_parallel: 4}\n"), s2, 1,
		     "--set parallel.strategy=data: parallel.tensor_parallel: "
		     "must be 1 with strategy data, found 4; use strategy hybrid "
		     "or model");
}
END_TEST

START_TEST(test_checkpoint)
{
	const char *sets[] = { "checkpoint.dir=ck" };
	char cwd[4096], want[4200];

	ck_assert_int_eq(parse(min_job), DT_OK);
	ck_assert_int_eq(job.checkpoint.every_steps, 0);
	ck_assert(job.checkpoint.every_seconds == 0.0);
	ck_assert(job.checkpoint.at_end);
	ck_assert_int_eq(job.checkpoint.keep_last, 3);
	ck_assert_str_eq(job.checkpoint.dir, "");
	ck_assert(!job.checkpoint.compress);

	ck_assert_int_eq(parse(data_job(idx_train, "checkpoint:\n"
		"  every_steps: 100\n  every_seconds: 1800\n  at_end: false\n"
		"  keep_last: 0\n  dir: ./ckpt\n  compress: true\n")), DT_OK);
	ck_assert_int_eq(job.checkpoint.every_steps, 100);
	ck_assert(job.checkpoint.every_seconds == 1800.0);
	ck_assert(!job.checkpoint.at_end);
	ck_assert_int_eq(job.checkpoint.keep_last, 0);
	ck_assert_str_eq(job.checkpoint.dir, "/jobs/ckpt");
	ck_assert(job.checkpoint.compress);

	ck_assert_int_eq(parse_as("/jobs/j.yaml", min_job, sets, 1), DT_OK);
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	snprintf(want, sizeof want, "%s/ck", cwd);
	ck_assert_str_eq(job.checkpoint.dir, want);

	expect_data_error(idx_train, "checkpoint: {dir: https://x.org/c}\n", 7,
			  19, "checkpoint.dir: expected a local path, found the "
			  "URL \"https://x.org/c\"");
	expect_data_error(idx_train, "checkpoint: {keep_last: -1}\n", 7, 25,
			  "checkpoint.keep_last: must be in [0, 65536], found -1");
	expect_data_error(idx_train, "checkpoint: {every_seconds: -0.5}\n", 7,
			  29, "checkpoint.every_seconds: must be >= 0, found "
			  "-0.5");
	expect_data_error(idx_train, "checkpoint: {at_end: no}\n", 7, 22,
			  "checkpoint.at_end: expected true or false, found "
			  "\"no\"");
	expect_data_error(idx_train, "checkpoint: {every: 5}\n", 7, 14,
			  "checkpoint.every: unknown key; checkpoint takes "
			  "every_steps, every_seconds, at_end, keep_last, dir, "
			  "compress");
}
END_TEST

TCase *
job_section_tcase(void)
{
	TCase *tc = tcase_create("sections");

	tcase_add_test(tc, test_data_formats);
	tcase_add_test(tc, test_sources);
	tcase_add_test(tc, test_source_list);
	tcase_add_test(tc, test_data_errors);
	tcase_add_test(tc, test_train_keys);
	tcase_add_test(tc, test_train_errors);
	tcase_add_test(tc, test_parallel);
	tcase_add_test(tc, test_parallel_errors);
	tcase_add_test(tc, test_checkpoint);
	return tc;
}
