/* SPDX-License-Identifier: MIT */
/* trace.h - a per-rank timeline of the step's passes and its MPI calls
 * and waits, written as Chrome trace JSON (the Trace Event Format's
 * complete events, ph "X": "name", "ts" and "dur" in microseconds from
 * the trace's start, "pid" the rank, "tid" the thread), for
 * chrome://tracing or https://ui.perfetto.dev.
 *
 * Off unless DTRAIN_TRACE is set to 1 (dt_trace_start); then every rank
 * keeps its events in memory (a few tens of bytes each, under a mutex:
 * the progress thread records too) and writes RUN_DIR/trace-rankR.json
 * at the run's end. Off, each hook is one load and a branch. Tracing
 * changes no value a run computes. */
#ifndef DT_UTIL_TRACE_H
#define DT_UTIL_TRACE_H

/* Nonzero while a trace is being recorded. */
extern int dt_trace_enabled;

/* Starts this rank's trace if the environment asks for it
 * (DTRAIN_TRACE=1): events are recorded until dt_trace_finish. */
void dt_trace_start(int rank);

/* The clock events are in: CLOCK_MONOTONIC, seconds. */
double dt_trace_clock(void);

/* Records an event name (a string literal or otherwise kept for the
 * process's life: not copied) from t0 to t1 (dt_trace_clock seconds) on
 * the calling thread, with one integer argument arg named arg_name
 * (NULL: none). Nothing when tracing is off. */
void dt_trace_event(const char *name, double t0, double t1,
		    const char *arg_name, long arg);

/* Writes the events to dir/trace-rankR.json ({"traceEvents": [...]}),
 * frees them and stops tracing. Nothing when tracing is off. A file
 * that cannot be written is said on stderr, naming it; the run goes
 * on (a trace is a diagnostic, not a result). */
void dt_trace_finish(const char *dir);

#endif
