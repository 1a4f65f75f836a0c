/* run.c - `dtrain run` and `dtrain resume`: train a job on the ranks that
 * mpirun/srun started, or (-n N) start mpirun; with --max-restarts K,
 * supervise the job and restart it from its newest checkpoint when it dies.
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include "config.h"
#include "dist/comm.h"
#include "job/job.h"
#include "plan/plan.h"
#include "graph/graph.h"
#include "optim/schedule.h"
#include "train/rundir.h"
#include "train/train.h"
#include "util/alloc.h"

struct run_args {
	int resume;		/* `resume`: arg is a run directory */
	int n_ranks;		/* 0: as launched */
	int max_restarts;
	int quiet;
	const char *run_dir;
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

static const struct dt_cmd_opt run_opts[] = {
	RUN_OPT_QUIET,
	RUN_OPT_RANKS,
	RUN_OPT_RESTARTS,
	{ .name = "run-dir", .kind = DT_CMD_ARG_STRING, .arg = "dir",
	  .offset = offsetof(struct run_args, run_dir),
	  .doc = "write the run to dir (default runs/NAME)" },
	DT_CMD_OPT_SET_ENTRY,
	{ .kind = DT_CMD_ARG_END },
};

static const struct dt_cmd_opt resume_opts[] = {
	RUN_OPT_QUIET,
	RUN_OPT_RANKS,
	RUN_OPT_RESTARTS,
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

/* The command line of one launch: mpirun -np N [--oversubscribe] SELF CMD
 * ARGS, or SELF CMD ARGS; -n and --max-restarts are not passed on. After a
 * failure the command becomes `resume RUN_DIR`. */
static const char **
child_argv(int argc, char **argv, const struct run_args *a,
	   const char *self, char *np, size_t np_size, int as_resume,
	   const char *run_dir)
{
	const char **args = dt_xmalloc((size_t)argc + 12, sizeof *args);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int n = 0;

	if (a->n_ranks > 0) {
		snprintf(np, np_size, "%d", a->n_ranks);
		args[n++] = DT_MPIRUN;
		args[n++] = "-np";
		args[n++] = np;
		if (cores > 0 && a->n_ranks > cores)
			args[n++] = "--oversubscribe";
	}
	args[n++] = self;
	if (as_resume) {
		args[n++] = "resume";
		if (a->quiet)
			args[n++] = "-q";
		args[n++] = run_dir;
		args[n] = NULL;
		return args;
	}
	args[n++] = a->resume ? "resume" : "run";
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];

		if (strcmp(s, "-n") == 0 || strcmp(s, "--ranks") == 0 ||
		    strcmp(s, "--max-restarts") == 0) {
			i++;
			continue;
		}
		if ((strncmp(s, "-n", 2) == 0 && s[2] != '\0') ||
		    strncmp(s, "--ranks=", 8) == 0 ||
		    strncmp(s, "--max-restarts=", 15) == 0)
			continue;
		args[n++] = s;
	}
	args[n] = NULL;
	return args;
}

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t stop_asked;

static void
forward_signal(int sig)
{
	stop_asked = 1;
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

/* Runs args as a child and returns its exit code (128 + signal when it
 * was killed). */
static int
run_child(const char **args)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "dtrain: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execv(args[0], (char *const *)args);
		fprintf(stderr, "dtrain: cannot start %s: %s\n", args[0],
			strerror(errno));
		_exit(1);
	}
	child_pid = pid;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	child_pid = 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* What can be refused before mpirun starts, so that a mistake costs no
 * MPI start-up and leaves nothing behind: with -n, everything the plan of
 * that many ranks refuses (dt_plan_build: the batch arithmetic, a
 * tensor-parallel degree that does not divide a split layer, pipeline
 * stages the model cannot take, a schedule that does not fit a run length
 * given in steps; the checks of plan --dry-run, in its words); without
 * it the model's shapes and that schedule; and (for a new run) a run
 * directory that already holds results. */
static enum dt_status
precheck(const struct run_args *a, const struct dt_job *job,
	 struct dt_error *err)
{
	char dir[DT_JOB_PATH_MAX + 32], path[DT_JOB_PATH_MAX + 64];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	struct dt_plan_host host = {
		.cores = cores > 0 ? (int)cores : 1,
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
	dt_plan_fini(&plan);
	if (st != DT_OK || a->resume)
		return st;
	if (a->run_dir != NULL)
		snprintf(dir, sizeof dir, "%s", a->run_dir);
	else
		snprintf(dir, sizeof dir, "runs/%s", job->name);
	snprintf(path, sizeof path, "%s/summary.json", dir);
	if (stat(path, &sb) != 0) {
		snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
		if (stat(path, &sb) != 0 || sb.st_size == 0)
			return DT_OK;
	}
	/* The ranks would say the same through dt_rundir_prepare. */
	return dt_rundir_prepare(dir, err);
}

/* With the watchdog on (parallel.timeout_s T), Open MPI's daemons probe
 * their idle TCP links every T/2 s and give up after three unanswered
 * probes, so that mpirun ends a job whose host went away within (1.5T,
 * 2T] (18 to 21 s for T = 10 in tests/cluster/faults.sh): after the
 * watchdog has named the lost ranks (at T) and before it would end the
 * job itself (at 3T), which it could not do while mpirun waits on the
 * lost daemon with the kill order unacknowledged. Values already set in
 * the environment win. */
static void
set_keepalive(const struct dt_job *job)
{
	char v[32];
	double half = job->parallel.timeout_s / 2;

	if (job->parallel.timeout_s <= 0)
		return;
	snprintf(v, sizeof v, "%.0f", half < 1 ? 1 : half);
	setenv("OMPI_MCA_oob_tcp_keepalive_time", v, 0);
	setenv("OMPI_MCA_oob_tcp_keepalive_intvl", v, 0);
	setenv("OMPI_MCA_oob_tcp_keepalive_probes", "3", 0);
}

/* -n N and/or --max-restarts K: check the job as N ranks would see it, then
 * become mpirun (no restarts) or supervise it. */
static int
launch(int argc, char **argv, const struct run_args *a,
       const struct dt_job *job)
{
	char self[PATH_MAX], np[16], dir[DT_JOB_PATH_MAX + 16];
	const char **args;
	struct dt_error err;
	ssize_t len;
	int rc;

	if (precheck(a, job, &err) != DT_OK)
		return dt_cmd_fail(err.status, &err);
	len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len < 0) {
		fprintf(stderr, "dtrain: cannot find own executable: %s\n",
			strerror(errno));
		return 1;
	}
	self[len] = '\0';
	if (a->run_dir != NULL)
		snprintf(dir, sizeof dir, "%s", a->run_dir);
	else
		snprintf(dir, sizeof dir, "runs/%s", job->name);
	args = child_argv(argc, argv, a, self, np, sizeof np, 0, dir);
	if (a->n_ranks > 0)
		set_keepalive(job);
	if (a->max_restarts == 0) {
		fflush(NULL);
		execv(args[0], (char *const *)args);
		fprintf(stderr, "dtrain: cannot start %s: %s\n", args[0],
			strerror(errno));
		free(args);
		return 1;
	}
	signal(SIGINT, forward_signal);
	signal(SIGTERM, forward_signal);
	for (int attempt = 0;; attempt++) {
		rc = run_child(args);
		free(args);
		/* Done, bad input, or stopped on request: nothing to retry. */
		if (rc == 0 || rc == 2 || rc == 3 || stop_asked)
			return rc;
		if (attempt >= a->max_restarts) {
			fprintf(stderr, "dtrain: the job failed (exit %d) and "
				"used all %d restarts\n", rc, a->max_restarts);
			return rc;
		}
		fprintf(stderr, "dtrain: the job failed (exit %d); restarting "
			"from the newest checkpoint in %s (restart %d of %d)\n",
			rc, dir, attempt + 1, a->max_restarts);
		args = child_argv(argc, argv, a, self, np, sizeof np, 1, dir);
	}
}

static int
train_cmd(int argc, char **argv, int resume)
{
	static struct dt_job job;	/* large: keep it off the stack */
	struct run_args a;
	struct dt_comm *comm = NULL;
	struct dt_train_result res;
	struct dt_run_opts opts;
	struct dt_error err;
	enum dt_status st;
	int rc, done;

	memset(&a, 0, sizeof a);
	a.resume = resume;
	dt_error_clear(&err);
	rc = parse_args(argc, argv, &a, &done);
	if (done)
		return rc;
	if (resume && access(a.job_path, F_OK) != 0) {
		dt_errorf(&err, DT_ERR_USAGE, "%s: not a run directory (no "
			  "job.yaml)", a.arg);
		free(a.sets);
		return dt_cmd_fail(DT_ERR_USAGE, &err);
	}
	st = resume ? check_resume_overrides(&a, &err) : DT_OK;
	/* The job is checked before MPI starts, so a bad file costs nothing
	 * and every rank refuses it the same way. */
	if (st == DT_OK)
		st = dt_cmd_load_job(a.job_path, a.sets, a.n_sets, &job,
				     &err);
	if (st != DT_OK) {
		free(a.sets);
		return dt_cmd_fail(st, &err);
	}
	if (a.n_ranks > 0 || a.max_restarts > 0) {
		if (getenv("OMPI_COMM_WORLD_SIZE") != NULL) {
			free(a.sets);
			return usage_error(&a, "%s", "-n and --max-restarts "
					   "start the job themselves; this "
					   "process is already one of an MPI "
					   "job's ranks");
		}
		rc = launch(argc, argv, &a, &job);
		free(a.sets);
		return rc;
	}
	st = dt_comm_mpi_new_watched(&comm, job.parallel.timeout_s, &err);
	if (st != DT_OK) {
		free(a.sets);
		return dt_cmd_fail(st, &err);
	}
	opts.run_dir = a.run_dir;
	opts.progress = !a.quiet;
	opts.resume = resume;
	st = dt_train_run(&job, &opts, comm, &res, &err);
	if (st == DT_OK && res.already_done) {
		if (dt_comm_rank(comm) == 0)
			printf("%s: already complete at step %lld; nothing to "
			       "do (extend it with --set train.steps=N or "
			       "--set train.epochs=N)\n", job.name,
			       (long long)res.steps);
	} else if (st == DT_OK && dt_comm_rank(comm) == 0) {
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
