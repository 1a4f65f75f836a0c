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

/* Asks the job to stop as a signal to this launcher asked: sig (SIGINT
 * for a Ctrl-C, else SIGTERM) to every rank that noted its pid on this
 * host in dir (each finishes its step, checkpoints and exits 3; copies
 * of one stop count once, a second, separate Ctrl-C stops it at once:
 * train/signals.h), or, with none noted yet (still starting: nothing to
 * save), SIGTERM to the child. mpirun itself is left alone: on a signal
 * of its own it kills the ranks after its odls_base_sigkill_timeout
 * (cancel.c). */
static void
forward_stop(pid_t child, int n_ranks, const char *dir, const char *host,
	     int sig)
{
	int sent = 0;

	for (int r = 0; r < n_ranks; r++) {
		pid_t pid;

		if (dt_launch_note_local_pid(dir, r, host, &pid) &&
		    kill(pid, sig) == 0)
			sent++;
	}
	if (sent == 0)
		kill(child, SIGTERM);
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

/* Waits for child pid, passing stops on, guarding the teardown (under
 * mpirun) and relaying stderr from *err_fd into b. Returns its wait
 * status. */
static int
supervise(pid_t pid, int n_ranks, const char *dir, const char *host,
	  struct dt_launch_guard *g, int *err_fd, struct dt_banner *b)
{
	int status, forwarded = 0, ended = 0;
	double last = 0, t_noted = 0;

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
				forward_stop(pid, n_ranks, dir, host,
					     stop_sig == SIGINT ? SIGINT :
					     SIGTERM);
			else
				kill(pid, stop_sig == SIGINT ? SIGINT :
				     SIGTERM);
		}
		if (n_ranks > 0 && forwarded > 0 && !ended)
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

int
dt_launch_child_run(const char *const *argv, int n_ranks, const char *dir,
		    double grace_s)
{
	char host[DT_HOST_NAME_MAX] = "";
	struct dt_launch_guard g;
	struct dt_banner b;
	int err_fd = -1, status, rc;
	pid_t pid;

	gethostname(host, sizeof host - 1);
	dt_launch_guard_init(&g, grace_s);
	dt_launch_notes_clean(dir, n_ranks, 0);
	pid = start_child(argv, n_ranks > 0, &err_fd);
	if (pid < 0)
		return 1;
	dt_banner_init(&b, stderr);
	status = supervise(pid, n_ranks, dir, host, &g, &err_fd, &b);
	rc = dt_launch_job_status(status, n_ranks, dir, &g);
	dt_banner_end(&b, n_ranks > 0 &&
		      dt_launch_ranks_exit_code(dir, n_ranks, -1) == 3);
	return rc;
}
