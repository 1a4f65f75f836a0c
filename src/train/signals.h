/* SPDX-License-Identifier: MIT */
/* signals.h - SIGINT/SIGTERM: the first asks the run to stop after the
 * current step with a checkpoint (exit 3); one cancel that arrives several
 * times counts once; a second, separate one stops the process at once
 * (nothing is half-written: checkpoints are built under temporary names).
 *
 * The rule: after the first SIGINT or SIGTERM, a SIGTERM that comes
 * within DT_STOP_GRACE_S seconds of it, or a SIGINT within
 * DT_STOP_COPY_S seconds, is a copy of the same stop and is ignored; any
 * later one stops the process at once (exit 128 + the signal). A batch
 * scheduler's cancel sends SIGTERM to every process of the job at once,
 * and mpirun (odls_base_sigkill_timeout seconds later), srun and dtrain's
 * own launcher each pass theirs on too; a second Ctrl-C comes seconds
 * after the first. */
#ifndef DT_TRAIN_SIGNALS_H
#define DT_TRAIN_SIGNALS_H

/* The grace period of a stop, in seconds: the time a cancel may take to
 * finish the step in progress and write its checkpoint, which launchers
 * are asked to leave before they kill (Slurm's default KillWait). */
#define DT_STOP_GRACE_S 30

/* Seconds after the first stop signal within which a SIGINT is a copy of
 * it rather than a second Ctrl-C. */
#define DT_STOP_COPY_S 2

/* Installs the handlers (idempotent; a stop already asked for is kept). */
void dt_signals_install(void);
/* Restores the default dispositions, unless a stop was asked for (its
 * copies are then still ignored until the process ends). */
void dt_signals_restore(void);
/* The signal that asked for a stop, or 0. */
int dt_signals_pending(void);
/* Whether a stop signal sig, seconds after the first (which asked for the
 * stop), is a copy of that stop (1) or a second, separate one (0). */
int dt_signals_is_copy(int sig, double seconds);

#endif
