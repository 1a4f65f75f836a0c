/* fetch.c - `dtrain fetch`: make every data source of a job local (download
 * the URLs into the cache, check sizes and digests) without training, so a
 * cluster job can start from a warm cache and a bad URL or digest shows up
 * before any rank is scheduled. Prints where each source now lives. */
#include "cmd/cmd.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "data/fetch.h"
#include "job/job.h"
#include "train/source.h"
#include "util/alloc.h"

#define FETCH_USAGE "dtrain fetch [--set key=value ...] job.yaml"

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

static int
cmd_fetch(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "set", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct dt_job job;
	const char **sets = dt_xmalloc((size_t)argc + 1, sizeof *sets);
	struct dt_fetch_opts opts;
	struct dt_error err;
	enum dt_status st;
	int n_sets = 0, c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			sets[n_sets++] = optarg;
			break;
		case 'h':
			printf("usage: %s\n", FETCH_USAGE);
			free(sets);
			return 0;
		default:
			free(sets);
			return dt_cmd_usage_error("fetch", FETCH_USAGE,
						  "unknown option \"%s\"",
						  argv[optind - 1]);
		}
	}
	if (optind != argc - 1) {
		free(sets);
		return dt_cmd_usage_error("fetch", FETCH_USAGE, "%s",
					  "expected one job file");
	}
	st = dt_cmd_load_job(argv[optind], sets, n_sets, &job, &err);
	free(sets);
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);

	dt_fetch_opts_init(&opts);
	opts.progress = isatty(STDERR_FILENO);
	opts.max_bytes = job.data.max_bytes;
	{
		const struct {
			const char *key;
			const struct dt_source *src;
		} parts[] = {
			{ "data.train.images", &job.data.train.images_src },
			{ "data.train.labels", &job.data.train.labels_src },
			{ "data.train.file", &job.data.train.file },
			{ "data.eval.images", &job.data.eval.images_src },
			{ "data.eval.labels", &job.data.eval.labels_src },
			{ "data.eval.file", &job.data.eval.file },
		};

		for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
			st = fetch_source(&job, parts[i].key, parts[i].src,
					  &opts, &err);
			if (st != DT_OK)
				return dt_cmd_fail(st, &err);
		}
	}
	return 0;
}

const struct dt_cmd dt_cmd_fetch = {
	.name = "fetch",
	.usage = FETCH_USAGE,
	.summary = "download and verify a job's data into the cache",
	.run = cmd_fetch,
};
