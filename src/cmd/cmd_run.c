/* SPDX-License-Identifier: MIT */
/* cmd_run.c - `dtrain run` and `dtrain resume`: their options, the checks
 * made before anything starts, and the rank's entry, which trains a job on
 * the ranks that mpirun/srun started. With -n N or --max-restarts K the
 * command is the launcher instead (launch/launch.h): it starts mpirun (or
 * one rank), supervises the job and restarts it from its newest checkpoint
 * when it dies, with --elastic MIN on the hosts of its hostfile still
 * alive.
 */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "comm/comm.h"
#include "graph/graph.h"
#include "job/job.h"
#include "launch/launch.h"
#include "optim/schedule.h"
#include "plan/plan.h"
#include "plan/sync_plan.h"
#include "train/rundir.h"
#include "train/signals.h"
#include "train/train.h"
#include "util/alloc.h"
#include "util/cpus.h"

struct run_args {
	int resume;		/* `resume`: arg is a run directory */
	int n_ranks;		/* 0: as launched */
	int max_restarts;
	int elastic;		/* --elastic MIN; 0: restart at -n ranks */
	int quiet;
	int start_over;		/* resume --start-over */
	const char *run_dir;
	const char *mpi_args;	/* more mpirun options for -n, blank-separated */
	const char **sets;
	int n_sets;
	const char *arg;	/* the job file, or the run directory */
	char job_path[DT_JOB_PATH_MAX + 16];
};

/* The options of run and resume: the same, but for --run-dir. */
#define RUN_OPT_QUIET                                                       \
	{ .name = "quiet", .short_name = 'q', .kind = DT_CMD_ARG_FLAG,       \
	  .offset = offsetof(struct run_args, quiet),                        \
	  .doc = "no progress output (the final line still shows)" }
#define RUN_OPT_RANKS                                                       \
	{ .name = "ranks", .short_name = 'n', .kind = DT_CMD_ARG_INT,        \
	  .arg = "ranks", .offset = offsetof(struct run_args, n_ranks),      \
	  .min = 1, .max = 1 << 20,                                          \
	  .doc = "check the job, then start mpirun -np ranks" }
#define RUN_OPT_RESTARTS                                                    \
	{ .name = "max-restarts", .kind = DT_CMD_ARG_INT, .arg = "k",        \
	  .offset = offsetof(struct run_args, max_restarts),                 \
	  .min = 0, .max = 1 << 20,                                          \
	  .doc = "resume a failed job up to k times" }
#define RUN_OPT_ELASTIC                                                     \
	{ .name = "elastic", .kind = DT_CMD_ARG_INT, .arg = "min",           \
	  .offset = offsetof(struct run_args, elastic),                      \
	  .min = 1, .max = 1 << 20,                                          \
	  .doc = "restart on the hosts still up, >= min ranks" }
#define RUN_OPT_MPI_ARGS                                                    \
	{ .name = "mpi-args", .kind = DT_CMD_ARG_STRING, .arg = "args",      \
	  .offset = offsetof(struct run_args, mpi_args),                     \
	  .doc = "more mpirun options for -n (split at blanks)" }

static const struct dt_cmd_opt run_opts[] = {
	RUN_OPT_QUIET,
	RUN_OPT_RANKS,
	RUN_OPT_RESTARTS,
	RUN_OPT_ELASTIC,
	RUN_OPT_MPI_ARGS,
	{ .name = "run-dir", .kind = DT_CMD_ARG_STRING, .arg = "dir",
	  .offset = offsetof(struct run_args, run_dir),
	  .flags = DT_CMD_OPT_PATH, .doc = "write the run to dir (default runs/NAME)" },
	DT_CMD_OPT_SET_ENTRY,
	{ .kind = DT_CMD_ARG_END },
};

static const struct dt_cmd_opt resume_opts[] = {
	RUN_OPT_QUIET,
	RUN_OPT_RANKS,
	RUN_OPT_RESTARTS,
	RUN_OPT_ELASTIC,
	RUN_OPT_MPI_ARGS,
	{ .name = "start-over", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct run_args, start_over),
	  .doc = "start over a run with no usable checkpoint" },
	DT_CMD_OPT_SET_ENTRY,
	{ .name = "run-dir", .kind = DT_CMD_ARG_REFUSED, .arg = "dir",
	  .doc = "the run directory is the argument" },
	{ .kind = DT_CMD_ARG_END },
};

static int
usage_error(const struct run_args *a, const char *fmt, const char *arg)
{
	return dt_cmd_usage_error(a->resume ? &dt_cmd_resume : &dt_cmd_run,
				  fmt, arg);
}

/* Fills a from the command line (cmd/opt.h). With *done set, the command
 * is over and the return value is its exit code (0 after --help, 2 after
 * a usage error, already printed) and nothing is left to free; else it
 * returns 0 and the caller owns a->sets. */
static int
parse_args(int argc, char **argv, struct run_args *a, int *done)
{
	struct dt_cmd_line line;
	int rc = dt_cmd_parse(a->resume ? &dt_cmd_resume : &dt_cmd_run, argc,
			      argv, a, &line);

	*done = rc >= 0;
	if (*done)
		return rc;
	a->sets = line.sets;
	a->n_sets = line.n_sets;
	a->arg = line.operand;
	if (a->resume) {
		snprintf(a->job_path, sizeof a->job_path, "%s/job.yaml",
			 a->arg);
		a->run_dir = a->arg;
	} else {
		snprintf(a->job_path, sizeof a->job_path, "%s", a->arg);
	}
	return 0;
}

/* Keys that make a resumed run meaningless if changed: the model, the
 * seed, the data and the optimizer (whose state is in the checkpoint). */
static int
check_resume_overrides(const struct run_args *a, struct dt_error *err)
{
	static const char *const fixed[] = { "model", "seed", "data",
					     "train.optimizer", "name" };

	for (int i = 0; i < a->n_sets; i++) {
		const char *key = a->sets[i];

		while (*key == ' ')
			key++;
		for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++) {
			size_t len = strlen(fixed[k]);

			if (strncmp(key, fixed[k], len) == 0 &&
			    (key[len] == '.' || key[len] == '=' ||
			     key[len] == ' '))
				return dt_errorf(err, DT_ERR_USAGE,
						 "--set %s: %s cannot change "
						 "on resume (the checkpoint "
						 "was made with the saved "
						 "value); start a new run "
						 "instead", a->sets[i],
						 fixed[k]);
		}
	}
	return DT_OK;
}

/* Whether s is an option `run -n` strips from the ranks' command line:
 * the number of words it spans (2 with its value apart, 1 with the value
 * glued on), or 0. */
static int
launcher_option(const char *s)
{
	static const char *const opts[] = { "--ranks", "--max-restarts",
					    "--mpi-args", "--elastic" };

	if (strcmp(s, "-n") == 0)
		return 2;
	if (s[0] == '-' && s[1] == 'n' && s[2] != '\0')
		return 1;
	for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
		size_t len = strlen(opts[i]);

		if (strncmp(s, opts[i], len) == 0) {
			if (s[len] == '\0')
				return 2;
			if (s[len] == '=')
				return 1;
		}
	}
	return 0;
}

/* The run directory: --run-dir (the argument of resume), else
 * runs/NAME, into dir (size bytes). */
static void
run_dir_of(const struct run_args *a, const struct dt_job *job, char *dir,
	   size_t size)
{
	if (a->run_dir != NULL)
		snprintf(dir, size, "%s", a->run_dir);
	else
		snprintf(dir, size, "runs/%s", job->name);
}

/* What can be refused before mpirun starts, so that a mistake costs no
 * MPI start-up and leaves nothing behind: with -n, everything the plan of
 * that many ranks refuses (dt_plan_build: the batch arithmetic, a
 * tensor-parallel degree that does not divide a split layer, pipeline
 * stages the model cannot take, a schedule that does not fit a run length
 * given in steps; the checks of plan --dry-run, in its words); without
 * it the model's shapes and that schedule; and (for a new run) a run
 * directory that already holds results. *threads: that plan's threads
 * per rank (1 without -n). */
static enum dt_status
precheck(const struct run_args *a, const struct dt_job *job, int *threads,
	 struct dt_error *err)
{
	char dir[DT_JOB_PATH_MAX + 32], path[DT_JOB_PATH_MAX + 64];
	struct dt_plan_host host = {
		.cores = dt_cpus_node_share(a->n_ranks),
		.local_ranks = a->n_ranks,
		.blas_env = getenv("OPENBLAS_NUM_THREADS"),
	};
	struct dt_plan plan;
	struct stat sb;
	enum dt_status st;

	memset(&plan, 0, sizeof plan);
	if (a->n_ranks > 0) {
		st = dt_plan_build(job, a->n_ranks, &host, NULL, &plan, err);
	} else {
		struct dt_model *model = NULL;
		struct dt_lr_schedule sched;

		st = dt_model_new(job, 0, &model, err);
		dt_model_free(model);
		if (st == DT_OK && job->train.steps > 0)
			st = dt_plan_schedule(job, job->train.steps, &sched,
					      err);
	}
	*threads = plan.blas_threads > 0 ? plan.blas_threads : 1;
	dt_plan_fini(&plan);
	if (st != DT_OK || a->resume)
		return st;
	run_dir_of(a, job, dir, sizeof dir);
	if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
		return dt_errorf(err, DT_ERR_USAGE, "%s: exists and is not a "
				 "directory; a run directory is one (made when "
				 "missing): give another --run-dir", dir);
	snprintf(path, sizeof path, "%s/summary.json", dir);
	if (stat(path, &sb) != 0) {
		snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
		if (stat(path, &sb) != 0 || sb.st_size == 0)
			return DT_OK;
	}
	/* The ranks would say the same through dt_rundir_prepare. */
	return dt_rundir_prepare(dir, err);
}
/* -n and --max-restarts start the ranks, so they cannot be given to a
 * process that is one already: -1 when they are not, else the exit code
 * after saying why. */
static int
check_launcher(const struct run_args *a)
{
	const char *launcher;
	char why[256];

	if (a->n_ranks == 0 && a->max_restarts == 0)
		return -1;
	launcher = dt_cmd_launcher();
	if (launcher == NULL)
		return -1;
	snprintf(why, sizeof why, "-n and --max-restarts start the job "
		 "themselves; this process is already one of the ranks that "
		 "%s started (leave out -n: the job runs on those ranks)",
		 launcher);
	return usage_error(a, "%s", why);
}

/* The ranks' command after the program: "run" or "resume", then argv's
 * words less the launcher's options (launcher_option), into *n words.
 * Heap (the caller frees it); its words point into argv. */
static const char **
rank_argv(int argc, char **argv, const struct run_args *a, int *n)
{
	const char **args = dt_xmalloc((size_t)argc + 1, sizeof *args);

	*n = 0;
	args[(*n)++] = a->resume ? "resume" : "run";
	for (int i = 1; i < argc; i++) {
		int skip = launcher_option(argv[i]);

		if (strcmp(argv[i], "--") == 0) {
			/* The rest are operands: pass them on as they are. */
			while (i < argc)
				args[(*n)++] = argv[i++];
			break;
		}
		if (skip > 0) {
			i += skip - 1;
			continue;
		}
		args[(*n)++] = argv[i];
	}
	return args;
}

/* -n N and/or --max-restarts K: a hostfile that cannot be read and what
 * the plan refuses end it here; then launch/launch.h starts the job and
 * supervises it. Returns the job's exit code. */
static int
launch(int argc, char **argv, const struct run_args *a,
       const struct dt_job *job)
{
	char dir[DT_JOB_PATH_MAX + 16];
	struct dt_launch_config cfg = {
		.ranks = a->n_ranks,
		.max_restarts = a->max_restarts,
		.elastic = a->elastic,
		.mpi_args = a->mpi_args,
		.run_dir = dir,
		.quiet = a->quiet,
		.job = job,
	};
	struct dt_error err;
	const char **args;
	int rc;

	if (a->n_ranks > 0 && dt_launch_check_hostfile(&cfg) != 0)
		return 1;
	if (precheck(a, job, &cfg.threads, &err) != DT_OK)
		return dt_cmd_fail(err.status, &err);
	run_dir_of(a, job, dir, sizeof dir);
	args = rank_argv(argc, argv, a, &cfg.n_rank_args);
	cfg.rank_argv = args;
	rc = dt_launch_run(&cfg);
	free(args);
	return rc;
}

/* The counts of the last line: the whole run's steps and samples, and
 * the time and rate of this session, said as such after a resume. */
static void
say_counts(const struct dt_job *job, const struct dt_train_result *res)
{
	if (res->resumed_from < 0) {
		printf("%s: %lld steps, %lld samples in %.1f s (%.0f "
		       "samples/s)", job->name, (long long)res->steps,
		       (long long)res->samples, res->wall_s,
		       res->samples_per_s);
		return;
	}
	printf("%s: %lld steps (%lld this session), %lld samples; this "
	       "session %lld samples in %.1f s (%.0f samples/s)", job->name,
	       (long long)res->steps, (long long)res->session_steps,
	       (long long)res->samples, (long long)res->session_samples,
	       res->wall_s, res->samples_per_s);
}

/* The last line of a run on rank 0's stdout. */
static void
say_result(const struct dt_job *job, const struct dt_train_result *res)
{
	if (res->already_done == 2) {
		/* A longer train.steps would not help: stderr said why. */
		printf("%s: stopped early at step %lld (eval.patience); "
		       "nothing to do\n", job->name, (long long)res->steps);
	} else if (res->already_done) {
		printf("%s: already complete at step %lld; nothing to do "
		       "(extend it with --set train.steps=N or --set "
		       "train.epochs=N)\n", job->name, (long long)res->steps);
	} else {
		say_counts(job, res);
		printf("; train loss %.4f", res->train_loss);
		if (res->eval_loss == res->eval_loss)
			printf("; eval loss %.4f", res->eval_loss);
		/* NaN for a regression (mse), which has no accuracy. */
		if (res->eval_loss == res->eval_loss &&
		    res->eval_accuracy == res->eval_accuracy)
			printf(", test accuracy %.4f", res->eval_accuracy);
		putchar('\n');
		fflush(stdout);
	}
}

/* Rank 0 under an mpirun that would kill the ranks before a cancel's
 * checkpoint is written says so, and what to give mpirun. */
static void
warn_mpirun_grace(int rank)
{
	char msg[512];

	if (rank == 0 && dt_launch_mpirun_grace_short(msg, sizeof msg))
		fprintf(stderr, "dtrain: warning: %s\n", msg);
}

/* Open MPI's TCP eager limit for job on the world mpirun started
 * (OMPI_COMM_WORLD_SIZE ranks; unset: one, which sums nothing), set
 * before MPI starts (dt_plan_tcp_eager, dt_comm_mpi_tcp_eager): the
 * bytes set, 0 for Open MPI's own, -1 for the environment's. A plan
 * that cannot be built sets nothing: the run refuses it later in its
 * own words. */
static int64_t
choose_tcp_eager(const struct dt_job *job)
{
	const char *size = getenv("OMPI_COMM_WORLD_SIZE");
	int ranks = size != NULL ? atoi(size) : 1;
	struct dt_plan_host host = { .cores = 1, .local_ranks = 1 };
	struct dt_plan plan;
	struct dt_error err;
	int64_t bytes = 0;

	dt_error_clear(&err);
	memset(&plan, 0, sizeof plan);
	if (ranks > 1 && job->parallel.tcp_eager_kb != 0 &&
	    dt_plan_build(job, ranks, &host, NULL, &plan, &err) == DT_OK) {
		bytes = dt_plan_tcp_eager(job, &plan, NULL);
		dt_plan_fini(&plan);
	}
	return dt_comm_mpi_tcp_eager(bytes);
}

/* The rank's entry: this process is one of the ranks mpirun, srun or the
 * launcher started (or the only one); trains the job on them. Returns
 * its exit code. */
static int
train_rank(const struct run_args *a, const struct dt_job *job)
{
	struct dt_comm *comm = NULL;
	struct dt_train_result res;
	struct dt_run_opts opts;
	struct dt_error err;
	enum dt_status st;

	dt_error_clear(&err);
	opts.tcp_eager = choose_tcp_eager(job);
	/* The progress thread only where sums start during backward. */
	st = dt_comm_mpi_new_watched(&comm, job->parallel.timeout_s,
				     job->parallel.sync == DT_SYNC_ALLREDUCE &&
				     job->parallel.overlap ?
				     job->parallel.progress_us : 0, &err);
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);
	/* The launcher passes a stop on once the pid note is there (one
	 * that came earlier is held for it): keep it for the loop (which
	 * stops after the set-up) rather than die of it while the data
	 * loads; so the handlers come first. */
	if (dt_launch_supervised())
		dt_signals_install();
	dt_launch_note_pid(dt_comm_rank(comm));
	warn_mpirun_grace(dt_comm_rank(comm));
	opts.run_dir = a->run_dir;
	opts.progress = !a->quiet;
	opts.resume = a->resume;
	opts.start_over = a->start_over;
	st = dt_train_run(job, &opts, comm, &res, &err);
	if (st == DT_OK && dt_comm_rank(comm) == 0)
		say_result(job, &res);
	if (st != DT_OK && dt_comm_rank(comm) == 0 && err.msg[0] != '\0')
		fprintf(stderr, "dtrain: %s\n", err.msg);
	/* Before MPI_Finalize, which waits for every rank: all have written
	 * theirs before the first exits and mpirun ends the rest. */
	dt_launch_note_exit(dt_comm_rank(comm), dt_status_exit_code(st));
	dt_comm_free(comm);
	return dt_status_exit_code(st);
}

/* Whether a's options go together, with the job loaded into *job: -1 when
 * they do, else the exit code after saying why. */
static int
check_args(const struct run_args *a, struct dt_job *job)
{
	struct dt_error err;
	enum dt_status st;

	dt_error_clear(&err);
	if (a->resume && access(a->job_path, F_OK) != 0) {
		dt_errorf(&err, DT_ERR_USAGE, "%s: not a run directory (no "
			  "job.yaml)", a->arg);
		return dt_cmd_fail(DT_ERR_USAGE, &err);
	}
	st = a->resume ? check_resume_overrides(a, &err) : DT_OK;
	/* The job is checked before MPI starts, so a bad file costs nothing
	 * and every rank refuses it the same way. */
	if (st == DT_OK)
		st = dt_cmd_load_job(a->job_path, a->sets, a->n_sets, job,
				     &err);
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);
	if (a->mpi_args != NULL && a->n_ranks == 0)
		return usage_error(a, "%s", "--mpi-args goes with -n (the "
				   "options are for the mpirun it starts)");
	if (a->elastic > 0 && (a->n_ranks == 0 || a->max_restarts == 0 ||
			       a->elastic > a->n_ranks))
		return usage_error(a, "%s", "--elastic MIN goes with -n N "
				   "(N >= MIN), --max-restarts and a hostfile "
				   "(a restart runs on the hosts still alive)");
	return check_launcher(a);
}

static int
train_cmd(int argc, char **argv, int resume)
{
	static struct dt_job job;	/* large: keep it off the stack */
	struct run_args a;
	int rc, done;

	memset(&a, 0, sizeof a);
	a.resume = resume;
	rc = parse_args(argc, argv, &a, &done);
	if (done)
		return rc;
	rc = check_args(&a, &job);
	if (rc < 0)
		rc = a.n_ranks > 0 || a.max_restarts > 0 ?
		     launch(argc, argv, &a, &job) : train_rank(&a, &job);
	free(a.sets);
	return rc;
}

static int
cmd_run(int argc, char **argv)
{
	return train_cmd(argc, argv, 0);
}

static int
cmd_resume(int argc, char **argv)
{
	return train_cmd(argc, argv, 1);
}

const struct dt_cmd dt_cmd_run = {
	.name = "run",
	.summary = "train a job on the ranks it is started on",
	.opts = run_opts,
	.operand = "job.yaml",
	.operand_noun = "job file",
	.operand_doc = "the job file",
	.run = cmd_run,
};

const struct dt_cmd dt_cmd_resume = {
	.name = "resume",
	.summary = "continue a run from its newest valid checkpoint",
	.opts = resume_opts,
	.operand = "run_dir",
	.operand_noun = "run directory",
	.operand_doc = "the run directory to continue",
	.run = cmd_resume,
};
