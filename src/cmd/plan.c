/* plan.c - `dtrain plan --dry-run`: what a job would do on N ranks, without
 * allocating the model or reading the data (only the data files' headers,
 * for the sample counts). */
#include "cmd/cmd.h"

#include <errno.h>
#include <getopt.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/data.h"
#include "graph/graph.h"
#include "job/job.h"
#include "plan/plan.h"
#include "util/alloc.h"

#define PLAN_USAGE \
	"dtrain plan --dry-run [-n ranks] [--json] [--set key=value ...] job.yaml"

/* Samples and in-memory bytes of an IDX split, from the headers alone. */
static enum dt_status
peek_split(const struct dt_data_split *s, int64_t *n, int64_t *bytes,
	   struct dt_error *err)
{
	struct dt_idx img, lab;
	enum dt_status st;
	int64_t per = 1;

	*n = -1;
	*bytes = 0;
	if (s->images[0] == '\0')
		return DT_OK;
	st = dt_idx_peek(s->images, &img, err);
	if (st == DT_OK)
		st = dt_idx_peek(s->labels, &lab, err);
	if (st != DT_OK)
		return st;
	if (img.dims[0] != lab.dims[0])
		return dt_errorf(err, DT_ERR_DATA, "%s: images has %lld "
				 "records, labels has %lld (%s)", s->images,
				 (long long)img.dims[0],
				 (long long)lab.dims[0], s->labels);
	for (int i = 1; i < img.n_dims; i++)
		per *= img.dims[i];
	*n = img.dims[0];
	/* u8 images stay bytes, others become floats; labels int32; the
	 * epoch order int64 per sample. */
	*bytes = *n * per * (img.type == 0x08 ? 1 : 4) + *n * 4;
	return DT_OK;
}

static int
cmd_plan(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dry-run", no_argument, NULL, 'D' },
		{ "json", no_argument, NULL, 'j' },
		{ "ranks", required_argument, NULL, 'n' },
		{ "set", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct dt_job job;
	const char **sets = dt_xmalloc((size_t)argc + 1, sizeof *sets);
	struct dt_model *model = NULL;
	struct json_object *desc;
	struct dt_plan plan;
	struct dt_error err;
	enum dt_status st;
	int n_sets = 0, ranks = 1, json = 0, c, threads;
	int64_t n_train, train_bytes, n_eval, eval_bytes;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "n:h", longopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'D':
			break;	/* plan never runs anything */
		case 'j':
			json = 1;
			break;
		case 'n':
			errno = 0;
			ranks = (int)strtol(optarg, &end, 10);
			if (errno || *end || ranks < 1) {
				fprintf(stderr, "dtrain plan: -n: expected a "
					"number of ranks >= 1, found \"%s\"\n"
					"usage: %s\n", optarg, PLAN_USAGE);
				free(sets);
				return 2;
			}
			break;
		case 's':
			sets[n_sets++] = optarg;
			break;
		case 'h':
			printf("usage: %s\n", PLAN_USAGE);
			free(sets);
			return 0;
		default:
			fprintf(stderr, "dtrain plan: unknown option \"%s\"\n"
				"usage: %s\n", argv[optind - 1], PLAN_USAGE);
			free(sets);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "dtrain plan: expected one job file\nusage: "
			"%s\n", PLAN_USAGE);
		free(sets);
		return 2;
	}
	st = dt_job_load(argv[optind], sets, n_sets, &job, &err);
	free(sets);
	if (st == DT_ERR_IO)
		st = DT_ERR_USAGE;
	if (st == DT_OK)
		st = dt_plan_batch(&job, ranks, &plan, &err);
	if (st == DT_OK)
		st = dt_model_new(&job, 0, &model, &err);
	if (st == DT_OK)
		st = peek_split(&job.data.train, &n_train, &train_bytes, &err);
	if (st == DT_OK)
		st = peek_split(&job.data.eval, &n_eval, &eval_bytes, &err);
	if (st == DT_OK && n_train >= 0 && n_train < plan.global_batch)
		st = dt_errorf(&err, DT_ERR_PLAN, "%s: global batch %lld is "
			       "larger than the %lld training samples",
			       job.path, (long long)plan.global_batch,
			       (long long)n_train);
	if (st != DT_OK) {
		dt_model_free(model);
		return dt_cmd_fail(st, &err);
	}
	threads = dt_plan_blas_threads(cores > 0 ? (int)cores : 1, ranks,
				       getenv("OPENBLAS_NUM_THREADS"));
	desc = dt_plan_describe(&job, &plan, model, threads, n_train,
				train_bytes + (n_train > 0 ? n_train * 8 : 0),
				n_eval, eval_bytes);
	if (json)
		printf("%s\n", json_object_to_json_string_ext(
			       desc, JSON_C_TO_STRING_PRETTY |
			       JSON_C_TO_STRING_SPACED));
	else
		dt_plan_print(desc, stdout);
	json_object_put(desc);
	dt_model_free(model);
	return 0;
}

const struct dt_cmd dt_cmd_plan = {
	.name = "plan",
	.usage = PLAN_USAGE,
	.summary = "show what a job would run where, before anything runs",
	.run = cmd_plan,
};
