/* SPDX-License-Identifier: MIT */
/* launch_priv.h - the launcher's pieces, shared between its files and
 * with tests/unit/test_launch.c; nothing outside src/launch/ uses them. */
#ifndef DT_LAUNCH_PRIV_H
#define DT_LAUNCH_PRIV_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "launch/hosts.h"
#include "launch/launch.h"
#include "util/status.h"

/* Where the ranks write their notes (exit_note.c), and the hint that
 * rank 0's stderr ends on a terminal although mpirun pipes it
 * (train/progress.c reads it). */
#define DT_LAUNCH_DIR_ENV "DTRAIN_LAUNCH_DIR"
#define DT_PROGRESS_TTY_ENV "DTRAIN_PROGRESS_TTY"

/* The hostfile Open MPI's default hostfile variable names (the
 * orte_default_hostfile MCA parameter of Open MPI 4). */
#define DT_DEFAULT_HOSTFILE_ENV "OMPI_MCA_orte_default_hostfile"

/* ---- mpirun_cmd.c: the command lines the launcher runs ---- */

/* One command line and the storage it points into (besides the config's
 * strings): fill with dt_launch_cmd_build or _probe, release with
 * dt_launch_cmd_fini. The struct must not move while argv is used. */
struct dt_launch_cmd {
	const char **argv;	/* (argc + 1) heap, NULL last */
	int argc;
	char np[16];		/* mpirun's -np value */
	char pe[32];		/* mpirun's --map-by value */
	char *mpi_words;	/* heap: the split copy of mpi_args, or NULL */
};

/* The command line of one launch: DT_MPIRUN -np N [--oversubscribe]
 * [MAPPING] -x DTRAIN_LAUNCH_DIR [-x DTRAIN_PROGRESS_TTY] [MPI_ARGS] SELF
 * RANK_ARGV, or, with n_ranks 0, SELF RANK_ARGV; with as_resume the
 * rank's command is `resume [-q] RUN_DIR` instead. --oversubscribe when
 * n_ranks exceeds cores (> 0); the -x of DTRAIN_PROGRESS_TTY with
 * pass_tty. MAPPING, with cfg->threads T above 1 and no mapping or
 * binding the user chose (in mpi_args or Open MPI's variables):
 * "--map-by slot:PE=T --bind-to core" when N x T fit cores on this node,
 * else (or with any hostfile) "--bind-to none". With hostfile,
 * "--hostfile HOSTFILE" replaces every word of mpi_args that names one.
 * Never fails (out of memory aborts). */
void dt_launch_cmd_build(struct dt_launch_cmd *cmd,
			 const struct dt_launch_config *cfg, const char *self,
			 int n_ranks, const char *hostfile, int as_resume,
			 long cores, int pass_tty);

/* The command line of an elastic probe: DT_MPIRUN -np 1 [MPI_ARGS without
 * their hostfile] --hostfile "" SELF --version; *host_arg is the index
 * of the "" that dt_hosts_probe replaces with each host's file. */
void dt_launch_cmd_probe(struct dt_launch_cmd *cmd,
			 const struct dt_launch_config *cfg, const char *self,
			 int *host_arg);

/* Frees what cmd holds (NULL fields are fine) and empties it. */
void dt_launch_cmd_fini(struct dt_launch_cmd *cmd);

/* Whether words[i] of n names a hostfile (--hostfile, --machinefile,
 * --default-hostfile, one dash or two): the number of words it spans, 2
 * for "--hostfile FILE", 1 for "--hostfile=FILE", with the file in *file;
 * else 0 and *file untouched. */
int dt_launch_hostfile_option(const char *const *words, int n, int i,
			      const char **file);

/* The hostfile mpirun is given: the first that cfg->mpi_args names, else
 * the one in DT_DEFAULT_HOSTFILE_ENV, into buf (size bytes; "" for none).
 * *from is "--mpi-args" or that variable's name. */
void dt_launch_named_hostfile(const struct dt_launch_config *cfg, char *buf,
			      size_t size, const char **from);

/* ---- cancel.c: how long mpirun leaves the ranks after a signal ---- */

/* Open MPI's setting of the seconds between each step of its kill
 * sequence (SIGCONT, SIGTERM, SIGKILL), its variable, and the value a
 * launch passes: half of DT_STOP_GRACE_S (train/signals.h), so that
 * mpirun's SIGKILL comes no sooner than the grace period. */
#define DT_SIGKILL_TIMEOUT_PARAM "odls_base_sigkill_timeout"
#define DT_SIGKILL_TIMEOUT_ENV "OMPI_MCA_odls_base_sigkill_timeout"
#define DT_SIGKILL_TIMEOUT "15"

/* Whether the user set mpirun's kill timeout: in the environment, or in
 * mpi_args (NULL: none). A launch passes DT_SIGKILL_TIMEOUT otherwise. */
int dt_launch_sigkill_given(const char *mpi_args);

/* After mpirun (pid mpirun) was killed outright: removes the session
 * directory it would have removed itself, Open MPI 4.1's
 * $TMPDIR/ompi.HOST.UID/pid.MPIRUN (/tmp without TMPDIR), and the
 * directory above once empty. Quietly does nothing when none is there. */
void dt_launch_mpirun_session_clean(pid_t mpirun);

/* ---- exit_note.c: the notes a rank leaves for the launcher ---- */

/* A note is the file DIR/rank-R.pid or DIR/rank-R.exit holding one line,
 * "VALUE HOST\n": VALUE decimal digits, HOST this host's name (no blank
 * or control byte). The writer puts it in place whole (a rename), so a
 * note that is not exactly that line was torn or planted: rejected. */
enum dt_launch_note_what {
	DT_LAUNCH_NOTE_PID,	/* the rank's pid: 2 to INT_MAX */
	DT_LAUNCH_NOTE_EXIT,	/* the rank's exit code: 0 to 255 */
};

enum dt_launch_note_found {
	DT_LAUNCH_NOTE_NONE,	/* no such file */
	DT_LAUNCH_NOTE_OK,	/* *note holds it */
	DT_LAUNCH_NOTE_BAD,	/* there but rejected: not a regular file
				 * (a symlink, a FIFO), over
				 * DT_LAUNCH_NOTE_MAX bytes, not the one
				 * line, or a value out of range */
};

/* The longest note accepted, in bytes: 10 digits, a blank, a host name
 * of up to DT_HOST_NAME_MAX - 1 bytes and the newline. */
#define DT_LAUNCH_NOTE_MAX (10 + 1 + DT_HOST_NAME_MAX - 1 + 1)

struct dt_launch_note {
	long value;
	char host[DT_HOST_NAME_MAX];
};

/* Writes rank's note (value, host) to dir, through DIR/rank-R.WHAT.tmp
 * renamed into place. Returns DT_OK, or DT_ERR_IO "PATH: ..." with the
 * temporary file removed. */
enum dt_status dt_launch_note_write(const char *dir, int rank,
				    enum dt_launch_note_what what, long value,
				    const char *host, struct dt_error *err);

/* Reads rank's note from dir into *note (filled only with
 * DT_LAUNCH_NOTE_OK). Opens without following a symlink and without
 * blocking on a FIFO. */
enum dt_launch_note_found dt_launch_note_read(const char *dir, int rank,
					      enum dt_launch_note_what what,
					      struct dt_launch_note *note);

/* Rank's exit code as its note says: 0 without a note, else 1 with *code
 * its value, or bad for a note rejected. */
int dt_launch_note_code(const char *dir, int rank, long bad, long *code);

/* Whether rank's pid note is good and names host (this host, from
 * gethostname): 1 with *pid set, else 0. */
int dt_launch_note_local_pid(const char *dir, int rank, const char *host,
			     pid_t *pid);

/* Removes the ranks' notes (ranks 0 to n_ranks - 1, at least rank 0)
 * from dir; with also_dir, dir too (when empty). */
void dt_launch_notes_clean(const char *dir, int n_ranks, int also_dir);

/* ---- teardown.c: what the notes say of the job, and the guard ---- */

/* The exit code every rank noted in dir when all n_ranks did and agree on
 * one other than 0 (an interrupted job: 3 from each), else rc, mpirun's
 * own: ranks that all said 0 and still made mpirun fail went wrong after
 * (in MPI_Finalize, at exit), and that failure counts. */
int dt_launch_ranks_exit_code(const char *dir, int n_ranks, int rc);

/* Whether a rank has failed, as dir tells: its exit note holds a code
 * other than 0 (a rejected one counts as 1), or its pid note names this
 * host (host) and the pid is gone without an exit note (killed, or ended
 * by MPI_Abort). Sets *rank and *code (-1: none written). Ranks on other
 * hosts are seen through their exit notes only, where dir is shared. */
int dt_launch_rank_failed(const char *dir, int n_ranks, const char *host,
			  int *rank, int *code);

/* Whether every one of n_ranks (> 0) noted an exit code of 0. */
int dt_launch_all_done(const char *dir, int n_ranks);

/* bad_rank once every rank finished (none failed). */
#define DT_LAUNCH_DONE_RANKS (-2)

/* The teardown guard of one mpirun (see dt_launch_guard_step). */
struct dt_launch_guard {
	double grace_s;		/* s from a failure to ending mpirun */
	double t_check;		/* monotonic s of the last look */
	double t_bad;		/* ... when the failure (or the end) was
				 * seen, then when SIGTERM went */
	int bad_rank;		/* -1: none yet; DT_LAUNCH_DONE_RANKS */
	int bad_code;		/* its exit note, -1 for none */
	int ended;		/* 0 nothing sent, 1 SIGTERM, 2 SIGKILL */
};

void dt_launch_guard_init(struct dt_launch_guard *g, double grace_s);

/* One round of the guard of mpirun pid (a process group of its own): the
 * notes in dir are read once a second until a rank has failed or every
 * rank finished; grace_s after that, mpirun's group gets SIGTERM (said on
 * stderr), 5 s later SIGKILL. */
void dt_launch_guard_step(struct dt_launch_guard *g, pid_t pid, int n_ranks,
			  const char *dir, const char *host);

/* The exit code of a launch whose child (mpirun when n_ranks > 0) ended
 * with wait status status: its exit code, under mpirun the ranks' agreed
 * one (dt_launch_ranks_exit_code), 128 + N when killed by signal N; but
 * once the guard g (NULL: none) ended mpirun, 0 when every rank had
 * finished, else the failed rank's code (1 if it left none or one out of
 * range). With stopped (the launcher caught a stop and passed it on),
 * 0 whenever every rank noted 0 (dt_launch_all_done): the stop came after
 * the job was done, and whatever it did to mpirun is no failure. */
int dt_launch_job_status(int status, int n_ranks, const char *dir,
			 const struct dt_launch_guard *g, int stopped);

/* Seconds the guard leaves mpirun after a rank failed: three watchdog
 * timeouts (timeout_s; mpirun's daemons give up on an idle link within
 * two, as dt_launch_run sets their keepalive), at least 10, or 60 without
 * the watchdog (timeout_s <= 0). */
double dt_launch_grace_s(double timeout_s);

/* Seconds on a monotonic clock. */
double dt_launch_now(void);

/* ---- child.c: the supervised child and the stop signals ---- */

/* Catches SIGINT, SIGTERM and SIGHUP for dt_launch_stop_count. */
void dt_launch_signals_install(void);

/* How many of those signals came so far. */
int dt_launch_stop_count(void);

/* Runs argv as a child in a process group of its own (a Ctrl-C at the
 * terminal reaches this launcher alone, which passes it on) with stdin
 * from /dev/null, and returns dt_launch_job_status's code. With
 * n_ranks > 0 (argv is mpirun's) its stderr goes through cmd/banner.h's
 * filter (mpirun's failure banners left out when every rank exited 3
 * after a stop), a stop goes to the ranks that noted a pid on this host
 * in dir, also as their notes appear (else, after a while, to the
 * child), a launch stopped before any rank noted its pid exits 3 after
 * saying so, and the teardown guard watches dir. */
int dt_launch_child_run(const char *const *argv, int n_ranks,
			const char *dir, double grace_s);

/* ---- elastic.c: the hosts of --elastic, probed between launches ---- */

struct dt_launch_elastic {
	struct dt_hosts hosts;		/* the user's hostfile, each host
					 * alive or not at the last probe */
	char file[PATH_MAX + 16];	/* LAUNCH_DIR/hosts: the alive ones,
					 * every launch's hostfile */
	double probe_s;			/* how long a probe may take */
};

/* Reads the named hostfile (dt_launch_named_hostfile) into el and writes
 * its copy to launch_dir/hosts, which every launch uses instead (the
 * environment's variable is unset so that Open MPI sees that one).
 * Returns 0, or the exit code after saying why: 2 without a hostfile or
 * with a bad one, 1 when it cannot be read or written. el is then
 * dt_launch_elastic_fini's either way. */
int dt_launch_elastic_init(const struct dt_launch_config *cfg,
			   const char *launch_dir,
			   struct dt_launch_elastic *el);

/* After a failed launch of *n ranks: probes every host, sets *n to the
 * most ranks (up to cfg->ranks) that the alive hosts' slots hold and the
 * job's plan takes, and writes their hostfile. Returns 0 to restart, or
 * fail_rc after saying why (fewer than cfg->elastic ranks left, or the
 * hostfile not written). */
int dt_launch_elastic_resize(const struct dt_launch_config *cfg,
			     const char *self, const char *launch_dir,
			     struct dt_launch_elastic *el, int *n,
			     int fail_rc);

/* Says on stderr where a launch of n ranks runs (restart > 0: which). */
void dt_launch_elastic_say(const struct dt_launch_elastic *el, int n,
			   int restart);

/* Removes el's hostfile and frees its hosts. */
void dt_launch_elastic_fini(struct dt_launch_elastic *el);

/* ---- restart.c: the restart loop and its decisions ---- */

/* What follows a launch that ended with code rc. */
enum dt_launch_next {
	DT_LAUNCH_NEXT_STOP,	/* done, bad input, or stopped on request */
	DT_LAUNCH_NEXT_SPENT,	/* failed with every restart used */
	DT_LAUNCH_NEXT_RESTART,	/* failed, restarts left */
};

/* The decision after launch attempt (0 for the first) ended with rc,
 * with max_restarts allowed and stop_count stop signals seen: 0 (done),
 * 2 (bad input) and 3 (stopped, checkpointed) are never retried, nor is
 * anything after a stop signal. */
enum dt_launch_next dt_launch_next(int rc, int attempt, int max_restarts,
				   int stop_count);

/* The launches of cfg's job until one needs no restart, with self this
 * executable and launch_dir the notes' directory (each attempt's in a
 * directory of its own under it); el is NULL without --elastic. Returns
 * the last launch's code. */
int dt_launch_restarts(const struct dt_launch_config *cfg, const char *self,
		       const char *launch_dir, struct dt_launch_elastic *el);

#endif
