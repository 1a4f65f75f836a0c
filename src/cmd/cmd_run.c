/* SPDX-License-Identifier: MIT */
/* cmd_run.c - `dtrain run` and `dtrain resume`: train a job on the ranks that
 * mpirun/srun started, or (-n N) start mpirun; with --max-restarts K,
 * supervise the job and restart it from its newest checkpoint when it dies,
 * with --elastic MIN on the hosts of its hostfile still alive.
 */
#include "cmd/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include "cmd/banner.h"
#include "cmd/hosts.h"
#include "config.h"
#include "comm/comm.h"
#include "job/job.h"
#include "plan/plan.h"
#include "graph/graph.h"
#include "optim/schedule.h"
#include "train/rundir.h"
#include "train/signals.h"
#include "train/train.h"
#include "util/alloc.h"

/* Where the ranks of `run -n` write their pid and exit code for the
 * launcher (launch_note), and the hint that rank 0's stderr ends on a
 * terminal although mpirun pipes it (train/progress.c reads it). */
#define DT_LAUNCH_DIR_ENV "DTRAIN_LAUNCH_DIR"
#define DT_PROGRESS_TTY_ENV "DTRAIN_PROGRESS_TTY"

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

/* Whether words[i] of an mpirun command line (n words) names a hostfile
 * (--hostfile, --machinefile, --default-hostfile, with one dash or two):
 * the number of words it spans, 2 for "--hostfile FILE" and 1 for
 * "--hostfile=FILE", with the file in *file; else 0. */
static int
hostfile_option(const char *const *words, int n, int i, const char **file)
{
	static const char *const opts[] = { "hostfile", "machinefile",
					    "default-hostfile" };
	const char *w = words[i];

	if (w[0] != '-')
		return 0;
	w += w[1] == '-' ? 2 : 1;
	for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
		size_t len = strlen(opts[k]);

		if (strncmp(w, opts[k], len) != 0)
			continue;
		if (w[len] == '=') {
			*file = w + len + 1;
			return 1;
		}
		if (w[len] == '\0' && i + 1 < n) {
			*file = words[i + 1];
			return 2;
		}
	}
	return 0;
}

/* --mpi-args split at blanks into words (room for strlen / 2 + 1 of
 * them, the caller's); the text they point into is returned (heap, the
 * caller frees it), NULL without --mpi-args. */
static char *
split_mpi_args(const struct run_args *a, const char **words, int *n)
{
	char *w, *save = NULL, *tok;

	*n = 0;
	if (a->mpi_args == NULL)
		return NULL;
	w = dt_xstrdup(a->mpi_args);
	for (tok = strtok_r(w, " \t\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\n", &save))
		words[(*n)++] = tok;
	return w;
}

/* Appends the words of --mpi-args to args at *n; with hostfile, the
 * words that name a hostfile are left out and "--hostfile HOSTFILE" put
 * in their place. Returns the text of the words (heap, the caller frees
 * it once args is done with). */
static char *
add_mpi_args(const struct run_args *a, const char *hostfile,
	     const char **args, int *n)
{
	size_t cap = a->mpi_args != NULL ? strlen(a->mpi_args) / 2 + 1 : 1;
	const char **words = dt_xmalloc(cap, sizeof *words);
	const char *file;
	int n_words;
	char *text = split_mpi_args(a, words, &n_words);

	for (int i = 0; i < n_words; i++) {
		int skip = hostfile != NULL ?
			   hostfile_option(words, n_words, i, &file) : 0;

		if (skip > 0)
			i += skip - 1;
		else
			args[(*n)++] = words[i];
	}
	if (hostfile != NULL) {
		args[(*n)++] = "--hostfile";
		args[(*n)++] = hostfile;
	}
	free(words);
	return text;
}

/* The command line of one launch: mpirun -np N [--oversubscribe] -x VAR...
 * [MPI_ARGS] SELF CMD ARGS, or SELF CMD ARGS; -n, --max-restarts,
 * --elastic and --mpi-args are not passed on. n_ranks is N (0: no
 * mpirun); with hostfile, that file replaces the one --mpi-args names.
 * After a failure the command becomes `resume RUN_DIR`. mpi_words (heap,
 * the caller frees it and the result) holds the split copy of
 * --mpi-args. */
static const char **
child_argv(int argc, char **argv, const struct run_args *a,
	   const char *self, int n_ranks, const char *hostfile, char *np,
	   size_t np_size, int as_resume, const char *run_dir,
	   char **mpi_words)
{
	size_t n_mpi = a->mpi_args != NULL ? strlen(a->mpi_args) / 2 + 1 : 0;
	const char **args = dt_xmalloc((size_t)argc + 22 + n_mpi,
				       sizeof *args);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int n = 0;

	*mpi_words = NULL;
	if (n_ranks > 0) {
		snprintf(np, np_size, "%d", n_ranks);
		args[n++] = DT_MPIRUN;
		args[n++] = "-np";
		args[n++] = np;
		if (cores > 0 && n_ranks > cores)
			args[n++] = "--oversubscribe";
		/* Open MPI passes the environment on to the ranks of this
		 * node only; -x takes these to every node. */
		args[n++] = "-x";
		args[n++] = DT_LAUNCH_DIR_ENV;
		if (getenv(DT_PROGRESS_TTY_ENV) != NULL) {
			args[n++] = "-x";
			args[n++] = DT_PROGRESS_TTY_ENV;
		}
		*mpi_words = add_mpi_args(a, hostfile, args, &n);
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
		int skip = launcher_option(argv[i]);

		if (strcmp(argv[i], "--") == 0) {
			/* The rest are operands: pass them on as they are. */
			while (i < argc)
				args[n++] = argv[i++];
			break;
		}
		if (skip > 0) {
			i += skip - 1;
			continue;
		}
		args[n++] = argv[i];
	}
	args[n] = NULL;
	return args;
}

/* The last SIGINT/SIGTERM the launcher caught, and how many. */
static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t stop_count;

static void
on_stop(int sig)
{
	stop_signal = sig;
	stop_count++;
}

/* Asks the job to stop as a signal to this launcher asked: SIGTERM to
 * every rank of this node that wrote its pid to launch_dir (each finishes
 * its step, checkpoints and exits 3; a second one stops it at once), or,
 * with none written yet (still starting: nothing to save), to the child,
 * mpirun or the one rank. mpirun itself is left alone: on a signal of its
 * own it would kill the ranks a second after SIGTERM (Open MPI's
 * odls_base_sigkill_timeout), before a long step and its checkpoint end. */
static void
forward_stop(pid_t child, int n_ranks, const char *launch_dir)
{
	char host[256] = "", path[PATH_MAX + 64], rhost[256];
	int sent = 0;

	if (n_ranks > 0) {
		gethostname(host, sizeof host - 1);
		for (int r = 0; r < n_ranks; r++) {
			FILE *f;
			long pid;

			snprintf(path, sizeof path, "%s/rank-%d.pid",
				 launch_dir, r);
			f = fopen(path, "r");
			if (f == NULL)
				continue;
			if (fscanf(f, "%ld %255s", &pid, rhost) == 2 &&
			    pid > 1 && strcmp(rhost, host) == 0 &&
			    kill((pid_t)pid, SIGTERM) == 0)
				sent++;
			fclose(f);
		}
	}
	if (sent == 0)
		kill(child, SIGTERM);
}

/* Reads rank r's exit note in launch_dir: 0 where it has none, else 1
 * with *code its value (unreadable, the caller's bad). */
static int
exit_note(const char *launch_dir, int r, long bad, long *code)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof path, "%s/rank-%d.exit", launch_dir, r);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%ld", code) != 1)
		*code = bad;
	fclose(f);
	return 1;
}

/* The exit code every rank recorded in launch_dir when all n_ranks did and
 * agree on one other than 0 (an interrupted job: 3 from each), else rc,
 * mpirun's own: ranks that all said 0 and still made mpirun fail went
 * wrong after (in MPI_Finalize, at exit), and that failure counts. */
static int
ranks_exit_code(const char *launch_dir, int n_ranks, int rc)
{
	int agreed = -1;

	for (int r = 0; r < n_ranks; r++) {
		long code = -1;

		if (!exit_note(launch_dir, r, -1, &code))
			return rc;
		if (code < 0 || code > 255 || (agreed >= 0 && code != agreed))
			return rc;
		agreed = (int)code;
	}
	return agreed > 0 ? agreed : rc;
}

/* Removes what the ranks wrote to launch_dir (before a launch and at the
 * end); with also_dir, the directory too. */
static void
clean_launch_dir(const char *launch_dir, int n_ranks, int also_dir)
{
	static const char *const kinds[] = { "pid", "exit" };
	char path[PATH_MAX + 64];

	for (int r = 0; r < (n_ranks > 0 ? n_ranks : 1); r++)
		for (size_t k = 0; k < 2; k++) {
			snprintf(path, sizeof path, "%s/rank-%d.%s",
				 launch_dir, r, kinds[k]);
			unlink(path);
		}
	if (also_dir)
		rmdir(launch_dir);
}

/* Whether a rank of the job has failed, as launch_dir tells: its exit
 * note holds a code other than 0, or it ran on this host (its pid note)
 * and is gone without a note (killed, or ended by MPI_Abort). Sets *rank
 * and *code (-1 for none written). Ranks on other hosts are seen through
 * their notes only, where the directory is shared. */
static int
rank_failed(const char *launch_dir, int n_ranks, int *rank, int *code)
{
	char host[256] = "", path[PATH_MAX + 64], rhost[256];

	gethostname(host, sizeof host - 1);
	for (int r = 0; r < n_ranks; r++) {
		long v = 0, pid = 0;
		int gone = 0;
		FILE *f;

		snprintf(path, sizeof path, "%s/rank-%d.pid", launch_dir, r);
		f = fopen(path, "r");
		if (f != NULL) {
			gone = fscanf(f, "%ld %255s", &pid, rhost) == 2 &&
			       pid > 1 && strcmp(rhost, host) == 0 &&
			       kill((pid_t)pid, 0) != 0 && errno == ESRCH;
			fclose(f);
		}
		/* After the pid: a rank writes its note before it exits. */
		if (exit_note(launch_dir, r, 1, &v)) {
			if (v == 0)
				continue;
			gone = 1;
		} else {
			v = -1;
		}
		if (gone) {
			*rank = r;
			*code = (int)v;
			return 1;
		}
	}
	return 0;
}

/* Whether every rank of the job wrote an exit note of 0 (each does so
 * after its outputs, before MPI_Finalize): the job's work is done. Ranks
 * on other hosts count only where the directory is shared, so without
 * it this is never true there. */
static int
all_ranks_done(const char *launch_dir, int n_ranks)
{
	for (int r = 0; r < n_ranks; r++) {
		long v = -1;

		if (!exit_note(launch_dir, r, -1, &v) || v != 0)
			return 0;
	}
	return n_ranks > 0;
}

/* Seconds on a monotonic clock. */
static double
mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* guard_teardown's *bad_rank once every rank finished (no rank failed). */
#define DONE_RANKS (-2)

/* One round of run_child's teardown guard for mpirun pid: the notes are
 * read once a second until a rank has failed (*bad_rank, *bad_code, from
 * *t_bad on) or every rank has finished (*bad_rank DONE_RANKS, *bad_code
 * 0); grace_s after that, mpirun's process group gets SIGTERM, and 5 s
 * later SIGKILL. Returns how far it went: 0 nothing sent, 1 SIGTERM
 * sent, 2 SIGKILL sent (ended, the value passed in, carries it between
 * rounds). */
static int
guard_teardown(pid_t pid, int n_ranks, const char *launch_dir,
	       double grace_s, double *t_check, double *t_bad, int *bad_rank,
	       int *bad_code, int ended)
{
	if (*bad_rank == -1) {
		if (mono_now() - *t_check < 1)
			return ended;
		*t_check = mono_now();
		if (rank_failed(launch_dir, n_ranks, bad_rank, bad_code)) {
			*t_bad = mono_now();
		} else if (all_ranks_done(launch_dir, n_ranks)) {
			*bad_rank = DONE_RANKS;
			*bad_code = 0;
			*t_bad = mono_now();
		}
		return ended;
	}
	if (ended == 0 && mono_now() - *t_bad >= grace_s) {
		if (*bad_rank == DONE_RANKS)
			fprintf(stderr, "dtrain: every rank finished %.0f s "
				"ago and mpirun has not ended (a daemon on a "
				"host it cannot reach?); ending mpirun\n",
				grace_s);
		else if (*bad_code >= 0)
			fprintf(stderr, "dtrain: rank %d failed (exit %d) "
				"%.0f s ago and mpirun has not ended the job "
				"(a daemon on a host it cannot reach?); "
				"ending mpirun\n", *bad_rank, *bad_code,
				grace_s);
		else
			fprintf(stderr, "dtrain: rank %d ended without an "
				"exit code %.0f s ago and mpirun has not "
				"ended the job (a daemon on a host it cannot "
				"reach?); ending mpirun\n", *bad_rank,
				grace_s);
		kill(-pid, SIGTERM);
		*t_bad = mono_now();
		return 1;
	}
	if (ended == 1 && mono_now() - *t_bad >= 5) {
		kill(-pid, SIGKILL);
		return 2;
	}
	return ended;
}

/* Seconds the teardown guard of run_child leaves mpirun to end a job
 * after one of its ranks failed: three watchdog timeouts (mpirun's
 * daemons give up on an idle link within two, dtrain run -n sets their
 * keepalive so), at least 10, or a minute without the watchdog. */
static double
teardown_grace_s(const struct dt_job *job)
{
	double t = job->parallel.timeout_s;

	if (t <= 0)
		return 60;
	return 3 * t > 10 ? 3 * t : 10;
}

/* Waits up to ms for mpirun's stderr (fd; -1: none, just sleeps) and
 * passes on what came through b. Returns 0 at the end of the stream (fd
 * is then closed and set to -1), 1 otherwise. */
static int
relay(int *fd, struct dt_banner *b, int ms, double *last)
{
	struct pollfd p = { .fd = *fd, .events = POLLIN };
	char buf[4096];
	ssize_t got;

	if (*fd < 0) {
		struct timespec nap = { 0, (long)ms * 1000 * 1000 };

		nanosleep(&nap, NULL);
		return 0;
	}
	if (poll(&p, 1, ms) <= 0) {
		/* A line of dashes that no block follows is not held long. */
		if (dt_banner_pending(b) && mono_now() - *last > 1.0)
			dt_banner_flush(b);
		return 1;
	}
	got = read(*fd, buf, sizeof buf);
	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (got <= 0) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	*last = mono_now();
	dt_banner_feed(b, buf, (size_t)got);
	return 1;
}

/* The child's side of run_child: its own process group, stdin from
 * /dev/null, stderr into err_fd when it is >= 0; then args. */
static _Noreturn void
exec_child(const char **args, int err_fd)
{
	int fd = open("/dev/null", O_RDONLY);

	setpgid(0, 0);
	/* Out of the terminal's process group, the job would outlive a
	 * launcher that is killed outright: let the kernel pass that on
	 * as a SIGTERM. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (fd >= 0 && fd != STDIN_FILENO) {
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	if (err_fd >= 0 && err_fd != STDERR_FILENO) {
		dup2(err_fd, STDERR_FILENO);
		close(err_fd);
	}
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	execv(args[0], (char *const *)args);
	fprintf(stderr, "dtrain: cannot start %s: %s\n", args[0],
		strerror(errno));
	_exit(1);
}

/* Runs args as a child in a process group of its own (so that a Ctrl-C
 * at the terminal reaches this launcher alone, which passes it on; see
 * forward_stop) with stdin from /dev/null, and returns its exit code (128
 * + signal when it was killed), the ranks' agreed one under mpirun.
 * Under mpirun (n_ranks > 0) its stderr comes through a pipe and
 * cmd/banner.h's filter: mpirun's failure banners are left out when every
 * rank exited 3 after a stop, shown otherwise.
 *
 * Under mpirun a guard also watches the ranks' notes: once a rank has
 * failed (rank_failed), mpirun gets grace_s seconds to end the job; after
 * that it is ended (SIGTERM to its process group, SIGKILL 5 s later),
 * saying so, and the failed rank's code (1 if it left none) is
 * returned. mpirun can wait for ever on a daemon whose host went down
 * with a kill order in flight to it (TCP keepalive probes only an idle
 * link; the unacknowledged order is retried for many minutes): seen in
 * tests/cluster/elastic-kill.sh, where a rank on the lost host was
 * killed just before its link went down. Likewise once every rank has
 * written an exit note of 0 (all_ranks_done: its outputs are written;
 * MPI_Finalize waits on every daemon, so one frozen or cut off holds
 * them there): mpirun is ended grace_s later, saying so, and 0 is
 * returned. */
static int
run_child(const char **args, int n_ranks, const char *launch_dir,
	  double grace_s)
{
	int status, forwarded = 0, pfd[2] = { -1, -1 }, rc;
	int bad_rank = -1, bad_code = 0, ended = 0;
	double last = 0, t_bad = 0, t_check = 0;
	struct dt_banner b;
	pid_t pid;

	clean_launch_dir(launch_dir, n_ranks, 0);
	if (n_ranks > 0 && pipe(pfd) != 0)
		pfd[0] = pfd[1] = -1;	/* stderr goes straight on then */
	if (pfd[0] >= 0) {
		/* Only the child's fd 2 may hold the write end. */
		fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
		fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "dtrain: fork: %s\n", strerror(errno));
		if (pfd[0] >= 0) {
			close(pfd[0]);
			close(pfd[1]);
		}
		return 1;
	}
	if (pid == 0)
		exec_child(args, pfd[1]);
	setpgid(pid, pid);	/* as the child does: whichever runs first */
	if (pfd[1] >= 0)
		close(pfd[1]);
	dt_banner_init(&b, stderr);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			status = 1 << 8;	/* as an exit 1 */
			break;
		}
		if (stop_count > forwarded) {
			forwarded = stop_count;
			if (n_ranks > 0)
				forward_stop(pid, n_ranks, launch_dir);
			else
				kill(pid, SIGTERM);
		}
		if (n_ranks > 0)
			ended = guard_teardown(pid, n_ranks, launch_dir,
					       grace_s, &t_check, &t_bad,
					       &bad_rank, &bad_code, ended);
		relay(&pfd[0], &b, 50, &last);
	}
	/* What mpirun wrote before it ended; a daemon it started may hold
	 * the pipe a little longer. */
	for (double until = mono_now() + 2.0; pfd[0] >= 0 &&
	     mono_now() < until;)
		relay(&pfd[0], &b, 100, &last);
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (WIFEXITED(status))
		rc = n_ranks > 0 ? ranks_exit_code(launch_dir, n_ranks,
						   WEXITSTATUS(status)) :
		     WEXITSTATUS(status);
	else
		rc = 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	if (ended > 0)
		rc = bad_rank == DONE_RANKS ? 0 :
		     bad_code > 0 && bad_code < 256 ? bad_code : 1;
	dt_banner_end(&b, n_ranks > 0 &&
		      ranks_exit_code(launch_dir, n_ranks, -1) == 3);
	return rc;
}

/* One launch of the job, attempt (0 for the first): the ranks' notes go
 * to a directory of its own, launch_dir/ATTEMPT, so that a rank left
 * over from an earlier attempt (cut off on a lost host, it can end long
 * after) cannot speak for this one; returns run_child's code. */
static int
run_attempt(const char **args, int n_ranks, const char *launch_dir,
	    int attempt, double grace_s)
{
	char notes[PATH_MAX + 16];
	int rc;

	snprintf(notes, sizeof notes, "%s/%d", launch_dir, attempt);
	if (mkdir(notes, 0700) != 0) {
		fprintf(stderr, "dtrain: cannot make %s: %s\n", notes,
			strerror(errno));
		return 1;
	}
	setenv(DT_LAUNCH_DIR_ENV, notes, 1);
	rc = run_child(args, n_ranks, notes, grace_s);
	clean_launch_dir(notes, n_ranks, 1);
	return rc;
}

/* Under `run -n`, a rank tells the launcher what it would not learn from
 * mpirun: its pid (what: "pid") and its exit code ("exit"), one line "VALUE
 * HOST" in $DTRAIN_LAUNCH_DIR/rank-R.WHAT. Does nothing outside `run -n`;
 * a failure to write only loses that service. */
static void
launch_note(int rank, const char *what, long value)
{
	const char *dir = getenv(DT_LAUNCH_DIR_ENV);
	char path[PATH_MAX + 64], tmp[PATH_MAX + 72], host[256] = "?";
	FILE *f;

	if (dir == NULL || *dir == '\0')
		return;
	gethostname(host, sizeof host - 1);
	snprintf(path, sizeof path, "%s/rank-%d.%s", dir, rank, what);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		return;
	fprintf(f, "%ld %s\n", value, host);
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
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

/* Seconds between a failed job and its restart: a host whose link
 * flapped, or whose daemons are still going down, gets that long to come
 * back before mpirun starts daemons on it again (a daemon started while
 * its host's link was still down never reached mpirun, and the restart
 * hung: tests/cluster/faults.sh). */
#define DT_RESTART_PAUSE_S 3

/* The pause before a restart; a stop signal cuts it short. */
static void
restart_pause(void)
{
	struct timespec nap = { 0, 100 * 1000 * 1000 };

	for (int i = 0; i < DT_RESTART_PAUSE_S * 10 && stop_count == 0; i++)
		nanosleep(&nap, NULL);
}

/* Waits (at most a minute) until no process holds the run directory's
 * lock (train/rundir.h): mpirun can return while the failed job's rank 0,
 * which holds it, is still finishing its step and checkpoint, and the
 * restarted job's rank 0 would then be refused. After the minute the
 * restart goes ahead and is refused with the holder named. */
static void
wait_rundir_free(const char *dir)
{
	char path[DT_JOB_PATH_MAX + 16];
	struct timespec nap = { 0, 100 * 1000 * 1000 };
	int fd;

	if (snprintf(path, sizeof path, "%s/lock", dir) >= (int)sizeof path)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;		/* never taken: nothing to wait for */
	for (int i = 0; i < 600 && stop_count == 0; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			flock(fd, LOCK_UN);
			break;
		}
		nanosleep(&nap, NULL);
	}
	close(fd);
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

/* The hostfile Open MPI's default hostfile variable names (the
 * orte_default_hostfile MCA parameter of Open MPI 4). */
#define DT_DEFAULT_HOSTFILE_ENV "OMPI_MCA_orte_default_hostfile"

/* What --elastic keeps between launches: the hosts of the user's
 * hostfile (alive or not after the last probe), the hostfile of the
 * alive ones that each launch gets, and how long a probe may take. */
struct elastic {
	struct dt_hosts hosts;
	char file[PATH_MAX + 16];	/* LAUNCH_DIR/hosts */
	double probe_s;
};

/* A host that answers takes mpirun a second or two to start a process on
 * (more on a loaded machine); one that does not answer never does. */
#define DT_ELASTIC_PROBE_MIN_S 10.0

/* The hostfile the mpirun of -n is given: the first that --mpi-args
 * names (--hostfile FILE and its kin), else the one the environment
 * names (DT_DEFAULT_HOSTFILE_ENV), into buf (size bytes); "" for none.
 * *from: "--mpi-args" or the variable's name. */
static void
named_hostfile(const struct run_args *a, char *buf, size_t size,
	       const char **from)
{
	size_t cap = a->mpi_args != NULL ? strlen(a->mpi_args) / 2 + 1 : 1;
	const char **words = dt_xmalloc(cap, sizeof *words);
	const char *file = NULL;
	int n_words;
	char *text = split_mpi_args(a, words, &n_words);

	for (int i = 0; i < n_words && file == NULL; i++)
		hostfile_option(words, n_words, i, &file);
	*from = "--mpi-args";
	if (file == NULL) {
		file = getenv(DT_DEFAULT_HOSTFILE_ENV);
		*from = DT_DEFAULT_HOSTFILE_ENV;
	}
	snprintf(buf, size, "%s", file != NULL ? file : "");
	free(text);
	free(words);
}

/* Before -n starts mpirun: a hostfile named that cannot be read ends
 * the command here, exit 1, rather than in Open MPI's internal error
 * after mpirun started (and again on every restart). Returns 0 or 1. */
static int
check_hostfile(const struct run_args *a)
{
	char file[PATH_MAX];
	const char *from;

	named_hostfile(a, file, sizeof file, &from);
	if (file[0] == '\0' || access(file, R_OK) == 0)
		return 0;
	fprintf(stderr, "dtrain: %s: cannot read the hostfile that %s "
		"names: %s\n", file, from, strerror(errno));
	return 1;
}

/* Reads the hostfile that --mpi-args (--hostfile FILE) or the
 * environment names into el, and writes its copy to LAUNCH_DIR/hosts,
 * which every launch then uses in its place (the variable is unset so
 * that Open MPI sees the one file). Returns 0, or the exit code after
 * saying why (2: no hostfile or a bad one). */
static int
elastic_init(const struct run_args *a, const struct dt_job *job,
	     const char *launch_dir, struct elastic *el)
{
	char file[PATH_MAX];
	const char *from;
	struct dt_error err;
	int rc = 0;

	named_hostfile(a, file, sizeof file, &from);
	el->probe_s = job->parallel.timeout_s > DT_ELASTIC_PROBE_MIN_S ?
		      job->parallel.timeout_s : DT_ELASTIC_PROBE_MIN_S;
	snprintf(el->file, sizeof el->file, "%s/hosts", launch_dir);
	memset(&el->hosts, 0, sizeof el->hosts);
	if (file[0] == '\0') {
		fprintf(stderr, "dtrain: --elastic needs a hostfile, to know "
			"the hosts: --mpi-args \"--hostfile FILE\" or %s=FILE\n",
			DT_DEFAULT_HOSTFILE_ENV);
		rc = 2;
	} else if (dt_hosts_read(file, &el->hosts, &err) != DT_OK ||
		   dt_hosts_write(&el->hosts, el->file, &err) != DT_OK) {
		fprintf(stderr, "dtrain: --elastic: %s\n", err.msg);
		rc = err.status == DT_ERR_IO ? 1 : 2;
	} else {
		unsetenv(DT_DEFAULT_HOSTFILE_ENV);
	}
	return rc;
}

/* The command line of a probe: mpirun -np 1 [MPI_ARGS without their
 * hostfile] --hostfile (set per host) SELF --version; the hostfile's
 * place in *host_arg. Heap, as child_argv's. */
static const char **
probe_argv(const struct run_args *a, const char *self, int *host_arg,
	   char **mpi_words)
{
	size_t n_mpi = a->mpi_args != NULL ? strlen(a->mpi_args) / 2 + 1 : 0;
	const char **args = dt_xmalloc(n_mpi + 10, sizeof *args);
	int n = 0;

	args[n++] = DT_MPIRUN;
	args[n++] = "-np";
	args[n++] = "1";
	*mpi_words = add_mpi_args(a, "", args, &n);
	*host_arg = n - 1;
	args[n++] = self;
	args[n++] = "--version";
	args[n] = NULL;
	return args;
}

/* Whether n ranks can run the job: its plan builds for them (with a fixed
 * global batch and micro-batch, n must divide global / micro). */
static int
plan_fits(const struct dt_job *job, int n)
{
	struct dt_plan_host host = { .cores = 1, .local_ranks = n };
	struct dt_plan plan;
	struct dt_error err;
	enum dt_status st;

	memset(&plan, 0, sizeof plan);
	st = dt_plan_build(job, n, &host, NULL, &plan, &err);
	dt_plan_fini(&plan);
	return st == DT_OK;
}

/* After a failed launch of *n ranks: probes every host of the hostfile,
 * and sets *n to the most ranks, up to -n, that the alive hosts' slots
 * hold (with -n above all the slots, -n times the share of the slots
 * left) and the job's plan takes, and writes their hostfile. Returns 0 to
 * restart, or (fewer than --elastic MIN ranks left, or no hostfile
 * written) the exit code fail_rc after naming the hosts lost. */
static int
elastic_resize(const struct run_args *a, const struct dt_job *job,
	       const char *self, const char *launch_dir, struct elastic *el,
	       int *n, int fail_rc)
{
	struct dt_hosts before = { .n = el->hosts.n };
	char lost[1024], where[1024];
	const char **args;
	char *mpi_words;
	struct dt_error err;
	int host_arg, slots, total = 0, cap, fit;

	before.h = dt_xmalloc((size_t)el->hosts.n, sizeof *before.h);
	memcpy(before.h, el->hosts.h, (size_t)el->hosts.n * sizeof *before.h);
	for (int i = 0; i < el->hosts.n; i++)
		el->hosts.h[i].alive = 1;	/* a lost host may be back */
	args = probe_argv(a, self, &host_arg, &mpi_words);
	dt_hosts_probe(&el->hosts, args, host_arg, launch_dir, el->probe_s);
	free(args);
	free(mpi_words);
	dt_hosts_lost(&el->hosts, &before, *n, el->probe_s, lost,
		      sizeof lost);
	free(before.h);
	slots = dt_hosts_slots(&el->hosts);
	for (int i = 0; i < el->hosts.n; i++)
		total += el->hosts.h[i].slots;
	/* -n beyond the slots (oversubscribed) keeps its ratio to them. */
	cap = a->n_ranks <= total ? slots :
	      (int)((long long)a->n_ranks * slots / total);
	fit = cap < a->n_ranks ? cap : a->n_ranks;
	while (fit >= a->elastic && !plan_fits(job, fit))
		fit--;
	if (fit < a->elastic) {
		char why[256];

		dt_hosts_placement(&el->hosts, slots, where, sizeof where);
		if (cap < a->elastic)
			snprintf(why, sizeof why, "fewer than --elastic %d",
				 a->elastic);
		else
			snprintf(why, sizeof why, "and the job's plan takes "
				 "no rank count from %d down to --elastic %d",
				 cap < a->n_ranks ? cap : a->n_ranks,
				 a->elastic);
		fprintf(stderr, "dtrain: --elastic %d: %s%s; the hosts that "
			"answered (%s) hold %d slot%s, %s; stopping (exit "
			"%d)\n", a->elastic,
			lost[0] != '\0' ? "lost " : "no host lost", lost,
			where[0] != '\0' ? where : "none", slots,
			slots == 1 ? "" : "s", why, fail_rc);
		return fail_rc;
	}
	if (dt_hosts_write(&el->hosts, el->file, &err) != DT_OK) {
		fprintf(stderr, "dtrain: --elastic: %s\n", err.msg);
		return fail_rc;
	}
	if (lost[0] != '\0')
		fprintf(stderr, "dtrain: --elastic: lost %s\n", lost);
	*n = fit;
	return 0;
}

/* The line that says where a launch of n ranks runs. */
static void
say_placement(const struct elastic *el, int n, int restart)
{
	char where[1024];
	int used = dt_hosts_placement(&el->hosts, n, where, sizeof where);

	if (restart > 0)
		fprintf(stderr, "dtrain: restart %d: %d rank%s on %d host%s: "
			"%s\n", restart, n, n == 1 ? "" : "s", used,
			used == 1 ? "" : "s", where);
	else
		fprintf(stderr, "dtrain: %d rank%s on %d host%s: %s\n", n,
			n == 1 ? "" : "s", used, used == 1 ? "" : "s", where);
}

/* -n N and/or --max-restarts K: check the job as N ranks would see it, then
 * start mpirun (or, with --max-restarts alone, one rank) and wait for it,
 * passing a SIGINT or SIGTERM on to the ranks (forward_stop) and restarting
 * a failed job from its newest checkpoint up to K times. Returns the job's
 * exit code: the ranks' own when they agree (3 when each checkpointed after
 * a stop), not mpirun's. */
static int
launch(int argc, char **argv, const struct run_args *a,
       const struct dt_job *job)
{
	char self[PATH_MAX], np[16], dir[DT_JOB_PATH_MAX + 16];
	char launch_dir[PATH_MAX];
	const char *tmpdir = getenv("TMPDIR");
	struct elastic el;
	int n = a->n_ranks;
	const char **args;
	char *mpi_words;
	struct dt_error err;
	struct sigaction sa;
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
	if (a->n_ranks > 0)
		set_keepalive(job);
	snprintf(launch_dir, sizeof launch_dir, "%s/dtrain-launch.XXXXXX",
		 tmpdir != NULL && *tmpdir != '\0' ? tmpdir : "/tmp");
	if (mkdtemp(launch_dir) == NULL) {
		fprintf(stderr, "dtrain: cannot make %s: %s\n", launch_dir,
			strerror(errno));
		return 1;
	}
	setenv(DT_LAUNCH_DIR_ENV, launch_dir, 1);
	memset(&el, 0, sizeof el);
	if (a->elastic > 0) {
		rc = elastic_init(a, job, launch_dir, &el);
		if (rc != 0) {
			unlink(el.file);
			clean_launch_dir(launch_dir, a->n_ranks, 1);
			return rc;
		}
		say_placement(&el, n, 0);
	}
	/* mpirun hands the ranks' stderr to a pipe: tell rank 0 that it ends
	 * on a terminal (train/progress.c). */
	if (isatty(STDERR_FILENO) && getenv(DT_PROGRESS_TTY_ENV) == NULL)
		setenv(DT_PROGRESS_TTY_ENV, "1", 1);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A closed terminal hangs up this process group only: stop the job
	 * cleanly then too. */
	sigaction(SIGHUP, &sa, NULL);
	args = child_argv(argc, argv, a, self, n, a->elastic > 0 ? el.file :
			  NULL, np, sizeof np, 0, dir, &mpi_words);
	for (int attempt = 0;; attempt++) {
		rc = run_attempt(args, n, launch_dir, attempt,
				 teardown_grace_s(job));
		free(args);
		free(mpi_words);
		/* Done, bad input, or stopped on request: nothing to retry. */
		if (rc == 0 || rc == 2 || rc == 3 || stop_count > 0)
			break;
		if (attempt >= a->max_restarts) {
			if (a->max_restarts > 0)
				fprintf(stderr, "dtrain: the job failed (exit "
					"%d) and used all %d restarts\n", rc,
					a->max_restarts);
			break;
		}
		if (a->elastic > 0 &&
		    elastic_resize(a, job, self, launch_dir, &el, &n, rc) != 0)
			break;
		fprintf(stderr, "dtrain: the job failed (exit %d); restarting "
			"from the newest checkpoint in %s (restart %d of %d)\n",
			rc, dir, attempt + 1, a->max_restarts);
		if (a->elastic > 0)
			say_placement(&el, n, attempt + 1);
		restart_pause();
		if (stop_count > 0)
			break;
		wait_rundir_free(dir);
		args = child_argv(argc, argv, a, self, n, a->elastic > 0 ?
				  el.file : NULL, np, sizeof np, 1, dir,
				  &mpi_words);
	}
	if (a->elastic > 0)
		unlink(el.file);
	clean_launch_dir(launch_dir, a->n_ranks, 1);
	dt_hosts_fini(&el.hosts);
	return rc;
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
	if (a.mpi_args != NULL && a.n_ranks == 0) {
		free(a.sets);
		return usage_error(&a, "%s", "--mpi-args goes with -n (the "
				   "options are for the mpirun it starts)");
	}
	if (a.elastic > 0 && (a.n_ranks == 0 || a.max_restarts == 0 ||
			      a.elastic > a.n_ranks)) {
		free(a.sets);
		return usage_error(&a, "%s", "--elastic MIN goes with -n N "
				   "(N >= MIN), --max-restarts and a hostfile "
				   "(a restart runs on the hosts still alive)");
	}
	if (a.n_ranks > 0 || a.max_restarts > 0) {
		const char *launcher = dt_cmd_launcher();

		if (launcher != NULL) {
			char why[256];

			free(a.sets);
			snprintf(why, sizeof why, "-n and --max-restarts start "
				 "the job themselves; this process is already "
				 "one of the ranks that %s started (leave out "
				 "-n: the job runs on those ranks)", launcher);
			return usage_error(&a, "%s", why);
		}
		rc = a.n_ranks > 0 ? check_hostfile(&a) : 0;
		if (rc == 0)
			rc = launch(argc, argv, &a, &job);
		free(a.sets);
		return rc;
	}
	/* The progress thread only where sums start during backward. */
	st = dt_comm_mpi_new_watched(&comm, job.parallel.timeout_s,
				     job.parallel.sync == DT_SYNC_ALLREDUCE &&
				     job.parallel.overlap ?
				     job.parallel.progress_us : 0, &err);
	if (st != DT_OK) {
		free(a.sets);
		return dt_cmd_fail(st, &err);
	}
	launch_note(dt_comm_rank(comm), "pid", (long)getpid());
	/* The launcher may pass a stop on from now: keep it for the loop
	 * (which stops after its first step) rather than die of it while
	 * the data loads. */
	if (getenv(DT_LAUNCH_DIR_ENV) != NULL)
		dt_signals_install();
	opts.run_dir = a.run_dir;
	opts.progress = !a.quiet;
	opts.resume = resume;
	opts.start_over = a.start_over;
	st = dt_train_run(&job, &opts, comm, &res, &err);
	if (st == DT_OK && res.already_done == 2) {
		/* A longer train.steps would not help: stderr said why. */
		if (dt_comm_rank(comm) == 0)
			printf("%s: stopped early at step %lld (eval.patience); "
			       "nothing to do\n", job.name,
			       (long long)res.steps);
	} else if (st == DT_OK && res.already_done) {
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
	/* Before MPI_Finalize, which waits for every rank: all have written
	 * theirs before the first exits and mpirun ends the rest. */
	launch_note(dt_comm_rank(comm), "exit", dt_status_exit_code(st));
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
