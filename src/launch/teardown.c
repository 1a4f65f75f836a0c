/* SPDX-License-Identifier: MIT */
/* teardown.c - what the ranks' notes say of a launched job (launch_priv.h):
 * its exit code, a failed rank, every rank done; and the teardown guard
 * that ends an mpirun which outlives its ranks.
 *
 * mpirun can wait for ever on a daemon whose host went down with a kill
 * order in flight to it (TCP keepalive probes only an idle link; the
 * unacknowledged order is retried for many minutes): seen in
 * tests/cluster/elastic-kill.sh, where a rank on the lost host was killed
 * just before its link went down. Likewise once every rank wrote an exit
 * note of 0 (its outputs are written; MPI_Finalize waits on every daemon,
 * so one frozen or cut off holds them there). The guard ends mpirun then,
 * a grace period later, saying so. */
#include "launch/launch_priv.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

double
dt_launch_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double
dt_launch_grace_s(double timeout_s)
{
	if (timeout_s <= 0)
		return 60;
	return 3 * timeout_s > 10 ? 3 * timeout_s : 10;
}

int
dt_launch_ranks_exit_code(const char *dir, int n_ranks, int rc)
{
	int agreed = -1;

	for (int r = 0; r < n_ranks; r++) {
		long code = -1;

		if (!dt_launch_note_code(dir, r, -1, &code))
			return rc;
		if (code < 0 || code > 255 || (agreed >= 0 && code != agreed))
			return rc;
		agreed = (int)code;
	}
	return agreed > 0 ? agreed : rc;
}

int
dt_launch_rank_failed(const char *dir, int n_ranks, const char *host,
		      int *rank, int *code)
{
	for (int r = 0; r < n_ranks; r++) {
		long v = 0;
		pid_t pid;
		int gone = 0;

		if (dt_launch_note_local_pid(dir, r, host, &pid))
			gone = kill(pid, 0) != 0 && errno == ESRCH;
		/* After the pid: a rank writes its note before it exits. */
		if (dt_launch_note_code(dir, r, 1, &v)) {
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

int
dt_launch_all_done(const char *dir, int n_ranks)
{
	for (int r = 0; r < n_ranks; r++) {
		long v = -1;

		if (!dt_launch_note_code(dir, r, -1, &v) || v != 0)
			return 0;
	}
	return n_ranks > 0;
}

void
dt_launch_guard_init(struct dt_launch_guard *g, double grace_s)
{
	g->grace_s = grace_s;
	g->t_check = 0;
	g->t_bad = 0;
	g->bad_rank = -1;
	g->bad_code = 0;
	g->ended = 0;
}

/* Says why the guard ends mpirun. */
static void
say_ending(const struct dt_launch_guard *g)
{
	if (g->bad_rank == DT_LAUNCH_DONE_RANKS)
		fprintf(stderr, "dtrain: every rank finished %.0f s ago and "
			"mpirun has not ended (a daemon on a host it cannot "
			"reach?); ending mpirun\n", g->grace_s);
	else if (g->bad_code >= 0)
		fprintf(stderr, "dtrain: rank %d failed (exit %d) %.0f s ago "
			"and mpirun has not ended the job (a daemon on a host "
			"it cannot reach?); ending mpirun\n", g->bad_rank,
			g->bad_code, g->grace_s);
	else
		fprintf(stderr, "dtrain: rank %d ended without an exit code "
			"%.0f s ago and mpirun has not ended the job (a daemon "
			"on a host it cannot reach?); ending mpirun\n",
			g->bad_rank, g->grace_s);
}

void
dt_launch_guard_step(struct dt_launch_guard *g, pid_t pid, int n_ranks,
		     const char *dir, const char *host)
{
	if (g->bad_rank == -1) {
		if (dt_launch_now() - g->t_check < 1)
			return;
		g->t_check = dt_launch_now();
		if (dt_launch_rank_failed(dir, n_ranks, host, &g->bad_rank,
					  &g->bad_code)) {
			g->t_bad = dt_launch_now();
		} else if (dt_launch_all_done(dir, n_ranks)) {
			g->bad_rank = DT_LAUNCH_DONE_RANKS;
			g->bad_code = 0;
			g->t_bad = dt_launch_now();
		}
		return;
	}
	if (g->ended == 0 && dt_launch_now() - g->t_bad >= g->grace_s) {
		say_ending(g);
		kill(-pid, SIGTERM);
		g->t_bad = dt_launch_now();
		g->ended = 1;
		return;
	}
	if (g->ended == 1 && dt_launch_now() - g->t_bad >= 5) {
		kill(-pid, SIGKILL);
		g->ended = 2;
	}
}

int
dt_launch_job_status(int status, int n_ranks, const char *dir,
		     const struct dt_launch_guard *g, int stopped)
{
	int rc;

	/* A stop (a scheduler's cancel) that came after every rank was
	 * done: mpirun's failure or signal is the stop's, the job's is
	 * none. */
	if (stopped && dt_launch_all_done(dir, n_ranks))
		return 0;

	if (WIFEXITED(status)) {
		rc = WEXITSTATUS(status);
		if (n_ranks > 0)
			rc = dt_launch_ranks_exit_code(dir, n_ranks, rc);
	} else {
		rc = 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	if (g != NULL && g->ended > 0)
		rc = g->bad_rank == DT_LAUNCH_DONE_RANKS ? 0 :
		     g->bad_code > 0 && g->bad_code < 256 ? g->bad_code : 1;
	return rc;
}
