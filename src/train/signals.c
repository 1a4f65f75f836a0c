/* SPDX-License-Identifier: MIT */
/* signals.c - graceful stop on SIGINT/SIGTERM (see signals.h). */
#include "train/signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t pending;

static void
on_signal(int sig)
{
	if (pending != 0) {
		/* Second signal: stop now. Only async-signal-safe calls. */
		static const char msg[] = "dtrain: second signal, stopping "
					  "at once\n";
		ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);

		(void)w;
		_exit(128 + sig);
	}
	pending = sig;
}

void
dt_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void
dt_signals_restore(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

int
dt_signals_pending(void)
{
	return pending;
}
