/* SPDX-License-Identifier: MIT */
/* cmd_fetch.c - `dtrain fetch`: make every data source of a job local (download
 * the URLs into the cache, check sizes and digests) without training, so a
 * cluster job can start from a warm cache and a bad URL or digest shows up
 * before any rank is scheduled. Prints where each source now lives.
 * --refresh downloads every URL again (a cache that must be renewed) and
 * hashes every file again instead of trusting the digest cache. */
#include "cmd/cmd.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "data/fetch.h"
#include "job/job.h"
#include "train/source.h"

/* A local pattern of token shards (data.h, dt_shards_expand): each file
 * it names must be there; prints "KEY[I] PATH" for each. */
static enum dt_status
fetch_pattern(const struct dt_job *job, const char *key,
	      const struct dt_source *src, const struct dt_fetch_opts *opts,
	      struct dt_error *err)
{
	char local[DT_JOB_PATH_MAX];
	char where[DT_JOB_PATH_MAX + 128];
	char **names = NULL;
	int64_t n = 0;
	enum dt_status st;

	st = dt_shards_expand(src->path, &names, &n, err);
	for (int64_t i = 0; i < n && st == DT_OK; i++) {
		struct dt_fetch_source fs = {
			.url = names[i],
			.sha256 = "",
			.expect = dt_source_expect(job, src),
		};

		st = dt_fetch(&fs, opts, local, sizeof local, err);
		if (st == DT_OK)
			printf("%s[%lld] %s\n", key, (long long)i, local);
	}
	dt_shards_names_free(names, n);
	if (st != DT_OK) {
		dt_job_where(job, key, where, sizeof where);
		dt_error_prefix(err, "%s", where);
	}
	fflush(stdout);
	return st;
}

/* Fetches the source named key ("data.train.images") of job, if it is
 * given, and prints "KEY PATH". On failure err says where the key is in the
 * job and what went wrong with the URL or file. */
static enum dt_status
fetch_source(const struct dt_job *job, const char *key,
	     const struct dt_source *src, const struct dt_fetch_opts *opts,
	     struct dt_error *err)
{
	struct dt_fetch_source fs = {
		.url = src->path,
		.sha256 = src->sha256,
		.size = src->size,
		.expect = dt_source_expect(job, src),
	};
	char local[DT_JOB_PATH_MAX];
	char where[DT_JOB_PATH_MAX + 128];
	enum dt_status st;

	if (src->path[0] == '\0')
		return DT_OK;
	if (dt_shards_is_pattern(src->path))
		return fetch_pattern(job, key, src, opts, err);
	st = dt_fetch(&fs, opts, local, sizeof local, err);
	if (st != DT_OK) {
		dt_job_where(job, key, where, sizeof where);
		dt_error_prefix(err, "%s", where);
		return st;
	}
	printf("%s %s\n", key, local);
	fflush(stdout);
	return DT_OK;
}

struct fetch_args {
	int refresh;
};

static const struct dt_cmd_opt fetch_opts[] = {
	{ .name = "refresh", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct fetch_args, refresh),
	  .doc = "download every URL again and hash every file again" },
	DT_CMD_OPT_SET_ENTRY,
	{ .kind = DT_CMD_ARG_END },
};

static int
cmd_fetch(int argc, char **argv)
{
	static struct dt_job job;
	struct dt_cmd_line line;
	struct fetch_args a = { 0 };
	struct dt_fetch_opts opts;
	struct dt_error err;
	enum dt_status st;
	int rc = dt_cmd_parse(&dt_cmd_fetch, argc, argv, &a, &line);

	if (rc >= 0)
		return rc;
	st = dt_cmd_load_job(line.operand, line.sets, line.n_sets, &job, &err);
	free(line.sets);
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);

	dt_fetch_opts_init(&opts);
	opts.progress = isatty(STDERR_FILENO);
	opts.max_bytes = job.data.max_bytes;
	opts.refresh = a.refresh;
	for (int i = 0; i < DT_JOB_SOURCES; i++) {
		const char *key;
		const struct dt_source *src = dt_job_source(&job, i, &key);

		st = fetch_source(&job, key, src, &opts, &err);
		if (st != DT_OK)
			return dt_cmd_fail(st, &err);
	}
	return 0;
}

const struct dt_cmd dt_cmd_fetch = {
	.name = "fetch",
	.summary = "download and verify a job's data into the cache",
	.opts = fetch_opts,
	.operand = "job.yaml",
	.operand_noun = "job file",
	.operand_doc = "the job file",
	.run = cmd_fetch,
};
