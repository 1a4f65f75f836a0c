/* SPDX-License-Identifier: MIT */
/* signals.h - SIGINT/SIGTERM: the first asks the run to stop after the
 * current step with a checkpoint; a second one stops the process at once
 * (nothing is half-written: checkpoints are built under temporary names). */
#ifndef DT_TRAIN_SIGNALS_H
#define DT_TRAIN_SIGNALS_H

/* Installs the handlers (idempotent). */
void dt_signals_install(void);
/* Restores the default dispositions. */
void dt_signals_restore(void);
/* The signal that asked for a stop, or 0. */
int dt_signals_pending(void);

#endif
