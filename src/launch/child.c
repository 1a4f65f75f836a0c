/* SPDX-License-Identifier: MIT */
/* child.c - the supervised child of a launch (launch_priv.h): mpirun, or
 * the one rank, in a process group of its own; the stop signals this
 * launcher catches and passes on; mpirun's stderr relayed through the
 * banner filter; the teardown guard run while it waits. */
#include "launch/launch_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch/banner.h"
#include "util/alloc.h"

/* How many SIGINT/SIGTERM/SIGHUP the launcher caught, and the last of
 * them: set by the handler, so process-wide by nature. */
static volatile sig_atomic_t stop_count;
static volatile sig_atomic_t stop_sig;

/* Seconds from the moment every rank of a stopped job noted its exit
 * code to ending what is left of it: mpirun, signalled itself by a
 * scheduler, waits out its kill timeout (cancel.c) with the ranks held in
 * MPI_Finalize, and would outlive the scheduler's grace period. */
#define DT_STOP_END_S 2

static void
on_stop(int sig)
{
	stop_sig = sig;
	stop_count++;
}

void
dt_launch_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A closed terminal hangs up this process group only: stop the job
	 * cleanly then too. */
	sigaction(SIGHUP, &sa, NULL);
}

int
dt_launch_stop_count(void)
{
	return stop_count;
}

/* Seconds a stop that came before any rank noted its pid is held for
 * the ranks (still starting: passed on to each as its note appears)
 * before mpirun gets SIGTERM instead. */
#define DT_STOP_START_S 10

/* A stop being passed on to the ranks of one launch. */
struct pass_on {
	int given;		/* stops caught when last passed on */
	int sig;		/* SIGINT for a Ctrl-C, else SIGTERM */
	int *told;		/* (n_ranks) stops each rank was sent */
	double t_first;		/* monotonic s of the first; 0 before */
	int child_told;		/* 1 once the child got SIGTERM */
	int held;		/* 1 once "held for the ranks" was said */
};

/* Sends p->sig to each rank that noted its pid on this host in dir and
 * was not sent the latest stop yet (a rank that notes its pid has its
 * handlers in place: train/signals.h). Returns how many ranks were ever
 * sent one; *noted: whether any rank, of any host, noted its pid. */
static int
tell_ranks(struct pass_on *p, int n_ranks, const char *dir,
	   const char *host, int *noted)
{
	struct dt_launch_note note;
	int told = 0;

	*noted = 0;
	for (int r = 0; r < n_ranks; r++) {
		pid_t pid;

		if (dt_launch_note_read(dir, r, DT_LAUNCH_NOTE_PID, &note) !=
		    DT_LAUNCH_NOTE_NONE)
			*noted = 1;
		if (p->told[r] < p->given &&
		    dt_launch_note_local_pid(dir, r, host, &pid) &&
		    kill(pid, p->sig) == 0)
			p->told[r] = p->given;
		told += p->told[r] > 0;
	}
	return told;
}

/* Passes the stops this launcher caught on to the job as they asked:
 * each to every rank that noted its pid on this host in dir (each
 * finishes its step, checkpoints and exits 3; copies of one stop count
 * once, a second, separate Ctrl-C stops it at once: train/signals.h),
 * also to a rank whose note appears later. mpirun itself is left alone
 * (signalled, it kills the ranks after its odls_base_sigkill_timeout,
 * cancel.c) unless no rank of this host can be told: then SIGTERM to the
 * child once ranks of other hosts noted theirs, on a second stop, or
 * DT_STOP_START_S after the first with no rank started. */
static void
pass_stop_on(struct pass_on *p, pid_t child, int n_ranks, const char *dir,
	     const char *host)
{
	int told, noted;

	if (stop_count > p->given) {
		p->given = stop_count;
		p->sig = stop_sig == SIGINT ? SIGINT : SIGTERM;
		if (p->t_first == 0)
			p->t_first = dt_launch_now();
	}
	if (p->given == 0 || p->child_told)
		return;
	told = tell_ranks(p, n_ranks, dir, host, &noted);
	if (told > 0)
		return;
	if (noted || p->given > 1 ||
	    dt_launch_now() - p->t_first >= DT_STOP_START_S) {
		kill(child, SIGTERM);
		p->child_told = 1;
	} else if (!p->held) {
		fprintf(stderr, "dtrain: stop received while the ranks start; "
			"passing it on to each as it starts\n");
		p->held = 1;
	}
}

/* After a stop was passed on: once every rank has noted its exit code
 * (*t_noted: when that was first seen, 0 before), DT_STOP_END_S later,
 * SIGKILL to mpirun's process group and to the ranks of this host still
 * there (their work is done). Returns 1 once it has. */
static int
end_stopped(pid_t child, int n_ranks, const char *dir, const char *host,
	    double *t_noted)
{
	for (int r = 0; r < n_ranks; r++) {
		long code;

		if (!dt_launch_note_code(dir, r, 1, &code))
			return 0;
	}
	if (*t_noted == 0)
		*t_noted = dt_launch_now();
	if (dt_launch_now() - *t_noted < DT_STOP_END_S)
		return 0;
	fprintf(stderr, "dtrain: every rank wrote its checkpoint and its exit "
		"status; ending mpirun, which holds them (signalled too, it "
		"waits out its odls_base_sigkill_timeout, their last messages "
		"with it)\n");
	kill(-child, SIGKILL);
	dt_launch_mpirun_session_clean(child);
	for (int r = 0; r < n_ranks; r++) {
		pid_t pid;

		if (dt_launch_note_local_pid(dir, r, host, &pid))
			kill(pid, SIGKILL);
	}
	return 1;
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
		if (dt_banner_pending(b) && dt_launch_now() - *last > 1.0)
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
	*last = dt_launch_now();
	dt_banner_feed(b, buf, (size_t)got);
	return 1;
}

/* The child's side: its own process group, stdin from /dev/null, stderr
 * into err_fd when it is >= 0; then argv. */
static _Noreturn void
exec_child(const char *const *argv, int err_fd)
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
	execv(argv[0], (char *const *)argv);
	fprintf(stderr, "dtrain: cannot start %s: %s\n", argv[0],
		strerror(errno));
	_exit(1);
}

/* Forks the child running argv, with its stderr into a pipe whose read
 * end goes to *err_fd when want_pipe (-1 when none could be made: stderr
 * goes straight on then). Returns its pid, or -1 after saying why. */
static pid_t
start_child(const char *const *argv, int want_pipe, int *err_fd)
{
	int pfd[2] = { -1, -1 };
	pid_t pid;

	if (want_pipe && pipe(pfd) != 0)
		pfd[0] = pfd[1] = -1;
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
		return -1;
	}
	if (pid == 0)
		exec_child(argv, pfd[1]);
	setpgid(pid, pid);	/* as the child does: whichever runs first */
	if (pfd[1] >= 0)
		close(pfd[1]);
	*err_fd = pfd[0];
	return pid;
}

/* Waits for child pid, passing stops on (p), guarding the teardown (under
 * mpirun) and relaying stderr from *err_fd into b. Returns its wait
 * status. */
static int
supervise(pid_t pid, int n_ranks, const char *dir, const char *host,
	  struct dt_launch_guard *g, struct pass_on *p, int *err_fd,
	  struct dt_banner *b)
{
	int status, ended = 0;
	double last = 0, t_noted = 0;

	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			status = 1 << 8;	/* as an exit 1 */
			break;
		}
		if (n_ranks > 0) {
			pass_stop_on(p, pid, n_ranks, dir, host);
		} else if (stop_count > p->given) {
			p->given = stop_count;
			kill(pid, stop_sig == SIGINT ? SIGINT : SIGTERM);
		}
		if (n_ranks > 0 && p->given > 0 && !ended)
			ended = end_stopped(pid, n_ranks, dir, host, &t_noted);
		if (n_ranks > 0)
			dt_launch_guard_step(g, pid, n_ranks, dir, host);
		relay(err_fd, b, 50, &last);
	}
	/* Ended here after the ranks noted their codes: those say how the
	 * job went (dt_launch_job_status), not the SIGKILL. */
	if (ended && WIFSIGNALED(status))
		status = 1 << 8;
	/* What mpirun wrote before it ended; a daemon it started may hold
	 * the pipe a little longer. */
	for (double until = dt_launch_now() + 2.0; *err_fd >= 0 &&
	     dt_launch_now() < until;)
		relay(err_fd, b, 100, &last);
	if (*err_fd >= 0)
		close(*err_fd);
	*err_fd = -1;
	return status;
}

/* Whether a launch of n_ranks (> 0) that p stopped ended before any
 * rank noted its pid in dir: then it says so on stderr. */
static int
stopped_unstarted(const struct pass_on *p, int n_ranks, const char *dir)
{
	struct dt_launch_note note;

	if (p->given == 0)
		return 0;
	for (int r = 0; r < n_ranks; r++)
		if (dt_launch_note_read(dir, r, DT_LAUNCH_NOTE_PID, &note) !=
		    DT_LAUNCH_NOTE_NONE)
			return 0;
	fprintf(stderr, "dtrain: stopped before the ranks started; nothing was "
		"trained or kept: run the job again\n");
	return 1;
}

int
dt_launch_child_run(const char *const *argv, int n_ranks, const char *dir,
		    double grace_s)
{
	char host[DT_HOST_NAME_MAX] = "";
	struct dt_launch_guard g;
	struct pass_on p = { 0 };
	struct dt_banner b;
	int err_fd = -1, status, rc;
	pid_t pid;

	gethostname(host, sizeof host - 1);
	dt_launch_guard_init(&g, grace_s);
	dt_launch_notes_clean(dir, n_ranks, 0);
	pid = start_child(argv, n_ranks > 0, &err_fd);
	if (pid < 0)
		return 1;
	if (n_ranks > 0)
		p.told = dt_xcalloc((size_t)n_ranks, sizeof *p.told);
	dt_banner_init(&b, stderr);
	status = supervise(pid, n_ranks, dir, host, &g, &p, &err_fd, &b);
	rc = dt_launch_job_status(status, n_ranks, dir, &g, p.given > 0);
	/* The ranks say how a stop left them; before they started, no
	 * rank can: an interrupted job all the same. */
	if (n_ranks > 0 && stopped_unstarted(&p, n_ranks, dir))
		rc = 3;
	dt_banner_end(&b, n_ranks > 0 &&
		      dt_launch_ranks_exit_code(dir, n_ranks, -1) == 3);
	free(p.told);
	return rc;
}
