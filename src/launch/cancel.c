/* SPDX-License-Identifier: MIT */
/* cancel.c - how long mpirun waits before it kills the ranks, so that one
 * cancel (a batch scheduler's SIGTERM to every process of the job) ends
 * in a checkpoint (launch_priv.h, launch.h).
 *
 * Open MPI 4.1's mpirun, or its daemon on each node, signalled itself or
 * ending a job, sends each rank SIGCONT, waits odls_base_sigkill_timeout
 * seconds (1 by default), sends SIGTERM, waits as long again, then sends
 * SIGKILL. The ranks need DT_STOP_GRACE_S (train/signals.h) to finish
 * their step and checkpoint, so the timeout must be at least half that.
 * mpirun's own exit status after that signal is 1 whatever the ranks do
 * (clean_abort in orte/mca/ess/hnp/ess_hnp_module.c sets it first, and
 * ORTE_UPDATE_EXIT_STATUS keeps a status already set): only run -n, which
 * reads the ranks' notes, turns a cancel into exit 3. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700	/* nftw and its FTW_* flags */
#endif
#include "launch/launch_priv.h"

#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/signals.h"

_Static_assert(DT_STOP_GRACE_S == 2 * 15,
	       "DT_SIGKILL_TIMEOUT must be half of DT_STOP_GRACE_S");

int
dt_launch_sigkill_given(const char *mpi_args)
{
	if (getenv(DT_SIGKILL_TIMEOUT_ENV) != NULL)
		return 1;
	return mpi_args != NULL &&
	       strstr(mpi_args, DT_SIGKILL_TIMEOUT_PARAM) != NULL;
}

int
dt_launch_mpirun_grace_short(char *msg, size_t size)
{
	const char *v = getenv(DT_SIGKILL_TIMEOUT_ENV);
	long t = 1;	/* Open MPI's default */
	char *end = NULL;

	/* Only ranks that mpirun (or its daemon) started know its URI: not
	 * a singleton, not srun's ranks. */
	if (getenv("OMPI_MCA_orte_hnp_uri") == NULL)
		return 0;
	if (v != NULL) {
		t = strtol(v, &end, 10);
		if (end == v || *end != '\0')
			t = 1;
	}
	if (2 * t >= DT_STOP_GRACE_S)
		return 0;
	snprintf(msg, size, "mpirun kills the ranks %ld s after it is "
		 "signalled (SIGTERM after %s %ld, SIGKILL after as long "
		 "again), but a cancel needs up to %d s to finish the step "
		 "and write its checkpoint: give mpirun --mca %s %s (or set "
		 "%s=%s)", 2 * t, DT_SIGKILL_TIMEOUT_PARAM, t,
		 DT_STOP_GRACE_S, DT_SIGKILL_TIMEOUT_PARAM, DT_SIGKILL_TIMEOUT,
		 DT_SIGKILL_TIMEOUT_ENV, DT_SIGKILL_TIMEOUT);
	return 1;
}

/* nftw's callback: removes one entry, the deepest first. */
static int
remove_entry(const char *path, const struct stat *st, int flag,
	     struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void
dt_launch_mpirun_session_clean(pid_t mpirun)
{
	const char *tmpdir = getenv("TMPDIR");
	char pattern[PATH_MAX];
	glob_t g;

	snprintf(pattern, sizeof pattern, "%s/ompi.*.%ld/pid.%ld",
		 tmpdir != NULL && *tmpdir != '\0' ? tmpdir : "/tmp",
		 (long)getuid(), (long)mpirun);
	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char *slash;

		nftw(g.gl_pathv[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		slash = strrchr(g.gl_pathv[i], '/');
		*slash = '\0';
		rmdir(g.gl_pathv[i]);	/* only once empty */
	}
	globfree(&g);
}
