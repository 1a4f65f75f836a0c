/* run.c - `dtrain run`: train a job, on the ranks mpirun/srun started, or
 * with -n N start mpirun itself. */
#include "cmd/cmd.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "dist/comm.h"
#include "job/job.h"
#include "plan/plan.h"
#include "train/train.h"
#include "util/alloc.h"

#define RUN_USAGE \
	"dtrain run [-q] [-n ranks] [--run-dir dir] [--set key=value ...] job.yaml"

struct run_args {
	int n_ranks;		/* 0: as launched */
	int quiet;
	const char *run_dir;
	const char **sets;
	int n_sets;
	const char *job_path;
};

static int
usage_error(const char *fmt, const char *arg)
{
	if (dt_cmd_launch_rank() == 0) {
		fputs("dtrain run: ", stderr);
		fprintf(stderr, fmt, arg);
		fprintf(stderr, "\nusage: %s\n", RUN_USAGE);
	}
	return 2;
}

static int
parse_args(int argc, char **argv, struct run_args *a)
{
	static const struct option longopts[] = {
		{ "ranks", required_argument, NULL, 'n' },
		{ "run-dir", required_argument, NULL, 'd' },
		{ "set", required_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof *a);
	a->sets = dt_xmalloc((size_t)argc + 1, sizeof *a->sets);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "n:qh", longopts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case 'n':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 1 || v > 1 << 20)
				return usage_error("-n: expected a number of "
						   "ranks >= 1, found \"%s\"",
						   optarg);
			a->n_ranks = (int)v;
			break;
		case 'd':
			a->run_dir = optarg;
			break;
		case 's':
			if (strchr(optarg, '=') == NULL)
				return usage_error("--set: expected "
						   "key.path=value, found "
						   "\"%s\"", optarg);
			a->sets[a->n_sets++] = optarg;
			break;
		case 'q':
			a->quiet = 1;
			break;
		case 'h':
			printf("usage: %s\n", RUN_USAGE);
			exit(0);
		default:
			return usage_error("unknown option \"%s\"",
					   argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return usage_error("%s", optind >= argc ?
				   "expected a job file" :
				   "expected exactly one job file");
	a->job_path = argv[optind];
	return 0;
}

/* -n N: check the job as N ranks would, then become mpirun with the same
 * arguments minus -n. Oversubscribes only when N exceeds the cores. */
static int
launch(int argc, char **argv, const struct run_args *a,
       const struct dt_job *job)
{
	struct dt_plan plan;
	struct dt_error err;
	char self[PATH_MAX], np[16];
	const char **args;
	int n = 0;
	ssize_t len;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	if (getenv("OMPI_COMM_WORLD_SIZE") != NULL)
		return usage_error("%s", "-n is for starting a job; this "
				   "process is already one of an MPI job's "
				   "ranks");
	if (dt_plan_batch(job, a->n_ranks, &plan, &err) != DT_OK)
		return dt_cmd_fail(err.status, &err);
	len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len < 0) {
		fprintf(stderr, "dtrain run: cannot find own executable: %s\n",
			strerror(errno));
		return 1;
	}
	self[len] = '\0';
	snprintf(np, sizeof np, "%d", a->n_ranks);
	args = dt_xmalloc((size_t)argc + 8, sizeof *args);
	args[n++] = DT_MPIRUN;
	args[n++] = "-np";
	args[n++] = np;
	if (cores > 0 && a->n_ranks > cores)
		args[n++] = "--oversubscribe";
	args[n++] = self;
	args[n++] = "run";
	/* Forward everything but -n and its value. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "--ranks") == 0) {
			i++;
			continue;
		}
		if (strncmp(argv[i], "-n", 2) == 0 ||
		    strncmp(argv[i], "--ranks=", 8) == 0)
			continue;
		args[n++] = argv[i];
	}
	args[n] = NULL;
	fflush(NULL);
	execv(DT_MPIRUN, (char *const *)args);
	fprintf(stderr, "dtrain run: cannot start %s: %s\n", DT_MPIRUN,
		strerror(errno));
	return 1;
}

static int
cmd_run(int argc, char **argv)
{
	static struct dt_job job;	/* large: keep it off the stack */
	struct run_args a;
	struct dt_comm *comm = NULL;
	struct dt_train_result res;
	struct dt_run_opts opts;
	struct dt_error err;
	enum dt_status st;
	int rc;

	dt_error_clear(&err);
	rc = parse_args(argc, argv, &a);
	if (rc != 0)
		return rc;
	/* The job is checked before MPI starts, so a bad file costs nothing
	 * and every rank refuses it the same way. */
	st = dt_job_load(a.job_path, a.sets, a.n_sets, &job, &err);
	if (st == DT_ERR_IO)
		st = DT_ERR_USAGE;	/* the job file named is the user's input */
	if (st != DT_OK) {
		free(a.sets);
		return dt_cmd_fail(st, &err);
	}
	if (a.n_ranks > 0) {
		rc = launch(argc, argv, &a, &job);
		free(a.sets);
		return rc;
	}
	st = dt_comm_mpi_new(&comm, &err);
	if (st != DT_OK) {
		free(a.sets);
		return dt_cmd_fail(st, &err);
	}
	opts.run_dir = a.run_dir;
	opts.progress = !a.quiet;
	st = dt_train_run(&job, &opts, comm, &res, &err);
	if (st == DT_OK && dt_comm_rank(comm) == 0) {
		printf("%s: %lld steps, %lld samples in %.1f s (%.0f "
		       "samples/s); train loss %.4f", job.name,
		       (long long)res.steps, (long long)res.samples, res.wall_s,
		       res.samples_per_s, res.train_loss);
		if (res.eval_loss == res.eval_loss)
			printf("; eval loss %.4f, test accuracy %.4f",
			       res.eval_loss, res.eval_accuracy);
		putchar('\n');
		fflush(stdout);
	}
	if (st != DT_OK && dt_comm_rank(comm) == 0 && err.msg[0] != '\0')
		fprintf(stderr, "dtrain: %s\n", err.msg);
	dt_comm_free(comm);
	free(a.sets);
	return dt_status_exit_code(st);
}

const struct dt_cmd dt_cmd_run = {
	.name = "run",
	.usage = RUN_USAGE,
	.summary = "train a job on the ranks it is started on",
	.run = cmd_run,
};
