/* SPDX-License-Identifier: MIT */
/* watch.h - for src/comm/ only: the marks the communicator puts around
 * every blocking call for the watchdog of parallel.timeout_s
 * (watchdog.c). No MPI types here, so comm.c can use it. */
#ifndef DT_COMM_WATCH_H
#define DT_COMM_WATCH_H

struct dt_watch;

/* This rank enters a blocking communication call named `call` (a static
 * string, e.g. "MPI_Allreduce"); the watchdog times it from now. Calls do
 * not nest: an inner enter keeps the outer start. NULL w: no-op. Safe
 * against the watchdog thread (atomics). */
void dt_watch_enter(struct dt_watch *w, const char *call);

/* The call entered last has returned: one more unit of progress that the
 * heartbeats report to the other ranks. NULL w: no-op. */
void dt_watch_leave(struct dt_watch *w);

#endif
