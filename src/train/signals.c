/* SPDX-License-Identifier: MIT */
/* signals.c - graceful stop on SIGINT/SIGTERM, copies of one stop counted
 * once (see signals.h for the rule). */
#include "train/signals.h"

#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t pending;
/* When the first stop signal came (CLOCK_MONOTONIC); written by the
 * handler before pending, read only by it (both signals are blocked
 * while it runs). */
static struct timespec first;

int
dt_signals_is_copy(int sig, double seconds)
{
	return seconds < (sig == SIGTERM ? DT_STOP_GRACE_S : DT_STOP_COPY_S);
}

static void
on_signal(int sig)
{
	static const char msg[] = "dtrain: second signal, stopping at once\n";
	struct timespec now;
	double since;
	ssize_t w;

	/* Only async-signal-safe calls (clock_gettime, write, _exit). */
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (pending == 0) {
		first = now;
		pending = sig;
		return;
	}
	since = (double)(now.tv_sec - first.tv_sec) +
		(double)(now.tv_nsec - first.tv_nsec) * 1e-9;
	if (dt_signals_is_copy(sig, since))
		return;
	w = write(STDERR_FILENO, msg, sizeof msg - 1);
	(void)w;
	_exit(128 + sig);
}

void
dt_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void
dt_signals_restore(void)
{
	/* After a stop, copies of it may still come while the process ends
	 * (MPI_Finalize waits for every rank): keep counting them as one. */
	if (pending != 0)
		return;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

int
dt_signals_pending(void)
{
	return pending;
}
