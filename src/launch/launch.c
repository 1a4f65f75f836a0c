/* SPDX-License-Identifier: MIT */
/* launch.c - dt_launch_run (launch.h): the set-up of a launch (this
 * executable, the notes directory, the environment the ranks get, the
 * elastic hosts, the stop signals), the restart loop (restart.c), and
 * what is left behind: nothing. */
#include "launch/launch_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job/job.h"

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

/* This executable's path into self (size bytes). Returns 0, or 1 after
 * saying why. */
static int
find_self(char *self, size_t size)
{
	ssize_t len = readlink("/proc/self/exe", self, size - 1);

	if (len < 0) {
		fprintf(stderr, "dtrain: cannot find own executable: %s\n",
			strerror(errno));
		return 1;
	}
	self[len] = '\0';
	return 0;
}

/* Makes the launch's notes directory, $TMPDIR/dtrain-launch.XXXXXX (else
 * under /tmp), into dir (size bytes) and names it in the environment.
 * Returns 0, or 1 after saying why. */
static int
make_launch_dir(char *dir, size_t size)
{
	const char *tmpdir = getenv("TMPDIR");

	snprintf(dir, size, "%s/dtrain-launch.XXXXXX",
		 tmpdir != NULL && *tmpdir != '\0' ? tmpdir : "/tmp");
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "dtrain: cannot make %s: %s\n", dir,
			strerror(errno));
		return 1;
	}
	setenv(DT_LAUNCH_DIR_ENV, dir, 1);
	return 0;
}

int
dt_launch_run(const struct dt_launch_config *cfg)
{
	char self[PATH_MAX], launch_dir[PATH_MAX];
	struct dt_launch_elastic el;
	int rc;

	if (find_self(self, sizeof self) != 0)
		return 1;
	if (cfg->ranks > 0)
		set_keepalive(cfg->job);
	if (make_launch_dir(launch_dir, sizeof launch_dir) != 0)
		return 1;
	memset(&el, 0, sizeof el);
	if (cfg->elastic > 0) {
		rc = dt_launch_elastic_init(cfg, launch_dir, &el);
		if (rc != 0) {
			dt_launch_elastic_fini(&el);
			dt_launch_notes_clean(launch_dir, cfg->ranks, 1);
			return rc;
		}
		dt_launch_elastic_say(&el, cfg->ranks, 0);
	}
	/* mpirun hands the ranks' stderr to a pipe: tell rank 0 that it ends
	 * on a terminal (train/progress.c). */
	if (isatty(STDERR_FILENO) && getenv(DT_PROGRESS_TTY_ENV) == NULL)
		setenv(DT_PROGRESS_TTY_ENV, "1", 1);
	dt_launch_signals_install();
	rc = dt_launch_restarts(cfg, self, launch_dir,
				cfg->elastic > 0 ? &el : NULL);
	dt_launch_elastic_fini(&el);
	dt_launch_notes_clean(launch_dir, cfg->ranks, 1);
	return rc;
}
