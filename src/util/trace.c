/* SPDX-License-Identifier: MIT */
/* trace.c - the per-rank Chrome trace of the step (trace.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/alloc.h"
#include "util/trace.h"

struct trace_event {
	const char *name;	/* not owned */
	const char *arg_name;	/* not owned; NULL: no argument */
	double t0, t1;		/* dt_trace_clock seconds */
	long arg;
	int tid;
};

int dt_trace_enabled;

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static struct trace_event *events;
static size_t n_events, cap_events;
static double trace_t0;
static int trace_rank;
static int next_tid;
static _Thread_local int my_tid;	/* 0: not yet given one */

double
dt_trace_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void
dt_trace_start(int rank)
{
	const char *e = getenv("DTRAIN_TRACE");

	if (!e || strcmp(e, "1") != 0)
		return;
	trace_rank = rank;
	trace_t0 = dt_trace_clock();
	dt_trace_enabled = 1;
}

void
dt_trace_event(const char *name, double t0, double t1,
	       const char *arg_name, long arg)
{
	struct trace_event *ev;

	if (!dt_trace_enabled)
		return;
	pthread_mutex_lock(&trace_lock);
	if (!my_tid)
		my_tid = ++next_tid;
	if (n_events == cap_events) {
		cap_events = cap_events ? 2 * cap_events : 1024;
		events = dt_xrealloc(events, cap_events, sizeof *events);
	}
	ev = &events[n_events++];
	ev->name = name;
	ev->arg_name = arg_name;
	ev->t0 = t0;
	ev->t1 = t1;
	ev->arg = arg;
	ev->tid = my_tid;
	pthread_mutex_unlock(&trace_lock);
}

/* The events as JSON into f; nonzero on a write error. */
static int
write_events(FILE *f)
{
	fprintf(f, "{\"traceEvents\": [\n");
	for (size_t i = 0; i < n_events; i++) {
		const struct trace_event *ev = &events[i];

		fprintf(f, "{\"name\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, "
			"\"dur\": %.3f, \"pid\": %d, \"tid\": %d",
			ev->name, 1e6 * (ev->t0 - trace_t0),
			1e6 * (ev->t1 - ev->t0), trace_rank, ev->tid);
		if (ev->arg_name)
			fprintf(f, ", \"args\": {\"%s\": %ld}", ev->arg_name,
				ev->arg);
		fprintf(f, "}%s\n", i + 1 < n_events ? "," : "");
	}
	fprintf(f, "], \"displayTimeUnit\": \"ms\"}\n");
	return ferror(f);
}

void
dt_trace_finish(const char *dir)
{
	char path[4096];
	FILE *f;

	if (!dt_trace_enabled)
		return;
	pthread_mutex_lock(&trace_lock);
	dt_trace_enabled = 0;
	snprintf(path, sizeof path, "%s/trace-rank%d.json", dir, trace_rank);
	f = fopen(path, "w");
	if (!f || write_events(f) | fclose(f))
		fprintf(stderr, "dtrain: rank %d: cannot write the trace %s\n",
			trace_rank, path);
	free(events);
	events = NULL;
	n_events = cap_events = 0;
	pthread_mutex_unlock(&trace_lock);
}
