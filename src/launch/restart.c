/* SPDX-License-Identifier: MIT */
/* restart.c - the restart loop of a launch (launch_priv.h): each attempt
 * in a notes directory of its own, the decision after it, and the pauses
 * before a restart (for a flapping host, for the failed job's rank 0 to
 * let go of the run directory). */
#include "launch/launch_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "job/job.h"
#include "util/cpus.h"

/* Seconds between a failed job and its restart: a host whose link
 * flapped, or whose daemons are still going down, gets that long to come
 * back before mpirun starts daemons on it again (a daemon started while
 * its host's link was still down never reached mpirun, and the restart
 * hung: tests/cluster/faults.sh). */
#define DT_RESTART_PAUSE_S 3

enum dt_launch_next
dt_launch_next(int rc, int attempt, int max_restarts, int stop_count)
{
	if (rc == 0 || rc == 2 || rc == 3 || stop_count > 0)
		return DT_LAUNCH_NEXT_STOP;
	if (attempt >= max_restarts)
		return max_restarts > 0 ? DT_LAUNCH_NEXT_SPENT :
		       DT_LAUNCH_NEXT_STOP;
	return DT_LAUNCH_NEXT_RESTART;
}

/* The pause before a restart; a stop signal cuts it short. */
static void
restart_pause(void)
{
	struct timespec nap = { 0, 100 * 1000 * 1000 };

	for (int i = 0; i < DT_RESTART_PAUSE_S * 10 &&
	     dt_launch_stop_count() == 0; i++)
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
	for (int i = 0; i < 600 && dt_launch_stop_count() == 0; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			flock(fd, LOCK_UN);
			break;
		}
		nanosleep(&nap, NULL);
	}
	close(fd);
}

/* One launch of the job, attempt (0 for the first): the ranks' notes go
 * to a directory of its own, launch_dir/ATTEMPT, so that a rank left
 * over from an earlier attempt (cut off on a lost host, it can end long
 * after) cannot speak for this one; returns dt_launch_child_run's code. */
static int
run_attempt(const struct dt_launch_cmd *cmd, int n_ranks,
	    const char *launch_dir, int attempt, double grace_s)
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
	rc = dt_launch_child_run(cmd->argv, n_ranks, notes, grace_s);
	dt_launch_notes_clean(notes, n_ranks, 1);
	return rc;
}

/* The command line of a launch of n ranks; with as_resume, of a restart. */
static void
build_cmd(struct dt_launch_cmd *cmd, const struct dt_launch_config *cfg,
	  const char *self, int n, const struct dt_launch_elastic *el,
	  int as_resume)
{
	dt_launch_cmd_build(cmd, cfg, self, n, el != NULL ? el->file : NULL,
			    as_resume, dt_cpus_allowed(),
			    getenv(DT_PROGRESS_TTY_ENV) != NULL);
}

/* After attempt failed with rc: what restarts it, said on stderr (the
 * elastic probe and its new size; the pause). Returns 1 to restart with
 * *n ranks, 0 to stop with rc. */
static int
prepare_restart(const struct dt_launch_config *cfg, const char *self,
		const char *launch_dir, struct dt_launch_elastic *el,
		int attempt, int rc, int *n)
{
	if (el != NULL &&
	    dt_launch_elastic_resize(cfg, self, launch_dir, el, n, rc) != 0)
		return 0;
	fprintf(stderr, "dtrain: the job failed (exit %d); restarting from the "
		"newest checkpoint in %s (restart %d of %d)\n", rc,
		cfg->run_dir, attempt + 1, cfg->max_restarts);
	if (el != NULL)
		dt_launch_elastic_say(el, *n, attempt + 1);
	restart_pause();
	if (dt_launch_stop_count() > 0)
		return 0;
	wait_rundir_free(cfg->run_dir);
	return 1;
}

int
dt_launch_restarts(const struct dt_launch_config *cfg, const char *self,
		   const char *launch_dir, struct dt_launch_elastic *el)
{
	double grace_s = dt_launch_grace_s(cfg->job->parallel.timeout_s);
	struct dt_launch_cmd cmd;
	int n = cfg->ranks, rc;

	/* With the kill delay this launch gives mpirun, mpirun takes up to
	 * twice it to end a job whose rank failed (SIGTERM after one delay,
	 * SIGKILL after another): the guard waits that out first, so it
	 * ends only an mpirun that will not end the job itself. */
	if (!dt_launch_sigkill_given(cfg->mpi_args) &&
	    grace_s < 2 * atof(DT_SIGKILL_TIMEOUT) + 5)
		grace_s = 2 * atof(DT_SIGKILL_TIMEOUT) + 5;

	build_cmd(&cmd, cfg, self, n, el, 0);
	for (int attempt = 0;; attempt++) {
		enum dt_launch_next next;

		rc = run_attempt(&cmd, n, launch_dir, attempt, grace_s);
		dt_launch_cmd_fini(&cmd);
		next = dt_launch_next(rc, attempt, cfg->max_restarts,
				      dt_launch_stop_count());
		if (next == DT_LAUNCH_NEXT_SPENT)
			fprintf(stderr, "dtrain: the job failed (exit %d) and "
				"used all %d restarts\n", rc,
				cfg->max_restarts);
		if (next != DT_LAUNCH_NEXT_RESTART ||
		    !prepare_restart(cfg, self, launch_dir, el, attempt, rc,
				     &n))
			break;
		build_cmd(&cmd, cfg, self, n, el, 1);
	}
	return rc;
}
