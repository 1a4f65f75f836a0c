/* SPDX-License-Identifier: MIT */
/* launch.h - the launcher of `dtrain run -n N` and `--max-restarts K`: it
 * starts mpirun (or one rank), supervises the job (a stop signal passed on
 * to the ranks, a guard that ends an mpirun left hanging after its ranks
 * ended), and restarts a failed job from its newest checkpoint, with
 * --elastic on the hosts of its hostfile still alive. The ranks it starts
 * talk back through small notes in the directory that DTRAIN_LAUNCH_DIR
 * names (dt_launch_note_pid, dt_launch_note_exit).
 *
 * Its messages go to stderr as it goes ("dtrain: restart 1: ..."), since a
 * launch lasts as long as the job; the functions return exit codes. */
#ifndef DT_LAUNCH_H
#define DT_LAUNCH_H

#include <stddef.h>

struct dt_job;

/* What to launch and how. Nothing in it is copied: it must outlive the
 * call that takes it. */
struct dt_launch_config {
	/* (n_rank_args) the ranks' command after the program: "run" or
	 * "resume", then its options and operand, the launcher's own (-n,
	 * --max-restarts, --elastic, --mpi-args) left out. */
	const char *const *rank_argv;
	int n_rank_args;
	int ranks;		/* mpirun -np ranks; 0: no mpirun, the one
				 * rank started directly */
	int max_restarts;	/* restarts after a failure; 0: none */
	int threads;		/* each rank's threads (its plan's BLAS
				 * threads): above 1, mpirun is told to
				 * give each rank that many cores
				 * (dt_launch_cmd_build) */
	int elastic;		/* --elastic MIN: a restart runs on the
				 * hosts still alive, >= MIN ranks; 0: off.
				 * Needs ranks and max_restarts. */
	const char *mpi_args;	/* more mpirun options, blank-separated;
				 * NULL: none */
	const char *run_dir;	/* the run directory, which a restart
				 * resumes (never NULL) */
	int quiet;		/* a restart's `resume` gets -q too */
	const struct dt_job *job;	/* its parallel.timeout_s sets the
					 * teardown grace, mpirun's keepalive
					 * and the elastic probe's timeout;
					 * an elastic restart's rank count
					 * must build its plan */
};

/* Before a launch with ranks > 0: whether the hostfile that mpi_args
 * names (--hostfile FILE and its kin), else the one that
 * OMPI_MCA_orte_default_hostfile names, can be read. Returns 0 (also
 * when none is named), or 1 after saying which file and why on stderr:
 * so a missing file ends the command before mpirun starts, rather than
 * in Open MPI's internal error (and again on every restart). */
int dt_launch_check_hostfile(const struct dt_launch_config *cfg);

/* Runs the job as cfg says and waits for it: mpirun -np ranks (or the
 * rank alone), a SIGINT, SIGTERM or SIGHUP to this process passed on to
 * the ranks (each finishes its step, checkpoints and exits 3), and up to
 * max_restarts restarts of a failed job as `resume RUN_DIR`. Installs its
 * own handlers for those three signals and sets DTRAIN_LAUNCH_DIR (and
 * DTRAIN_PROGRESS_TTY when stderr is a terminal, and Open MPI's keepalive
 * variables with the watchdog on) in this process's environment; a
 * directory of notes under $TMPDIR (else /tmp) lives as long as the call.
 * Returns the job's exit code: the ranks' own when they all agree on one
 * (3 after a stop), else mpirun's (128 + N when killed by signal N); 1
 * when it cannot start (said on stderr), 2 for an --elastic launch
 * without a usable hostfile. */
int dt_launch_run(const struct dt_launch_config *cfg);

/* Whether this process runs under dt_launch_run (DTRAIN_LAUNCH_DIR is
 * set): a rank that is, keeps a stop signal for the training loop from
 * the start. */
int dt_launch_supervised(void);

/* A rank's check of the mpirun that started it (one it knows by Open
 * MPI's variables; a singleton or srun's ranks have none): whether mpirun
 * would kill the ranks sooner after a cancel than DT_STOP_GRACE_S
 * (train/signals.h), as its odls_base_sigkill_timeout, from the
 * environment its --mca sets, says. Returns 1 with what to give mpirun
 * in msg (size bytes, no "dtrain: " and no newline), else 0. A value set
 * only in an MCA parameter file is not seen. */
int dt_launch_mpirun_grace_short(char *msg, size_t size);

/* A rank of a launched job tells the launcher what mpirun would not: its
 * pid, once it is running, and its exit code (0 to 255), once its work is
 * done and before MPI_Finalize. Each writes one note, atomically, into
 * $DTRAIN_LAUNCH_DIR; outside a launch they do nothing, and a note that
 * cannot be written only loses the launcher that service. */
void dt_launch_note_pid(int rank);
void dt_launch_note_exit(int rank, int code);

#endif
