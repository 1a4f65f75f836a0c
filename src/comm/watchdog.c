/* SPDX-License-Identifier: MIT */
/* watchdog.c - finds a rank that stopped making progress (parallel.
 * timeout_s): a peer that was SIGSTOPped, whose host or link went down,
 * or that is stuck outside communication, and names it instead of
 * letting the others wait in a collective for ever.
 *
 * A heartbeat failure detector (Chandra and Toueg, "Unreliable failure
 * detectors for reliable distributed systems", JACM 43(2), 1996): each
 * rank's watchdog thread sends every other rank, each period, how many
 * communication calls its rank has finished and whether it is inside one,
 * on a duplicate of the world communicator; a peer is suspected after
 * timeout_s without a heartbeat, or without progress while not waiting.
 * Only a rank that is itself stuck in a call for timeout_s acts on a
 * suspicion, so a slow step never ends a job. Heartbeats cost
 * (ranks - 1) messages of 16 bytes per rank and period. */
#include "comm/mpi_priv.h"
#include "comm/watch.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/alloc.h"

#define HEARTBEAT_TAG 1
#define BYE 2			/* in[1] of a rank's last heartbeat */

struct peer {
	int64_t in[2];		/* (2) last heartbeat: calls done, and 1 in a
				 * call, 0 not, BYE gone for good */
	int64_t out[2];		/* (2) the heartbeat being sent to it */
	MPI_Request rreq, sreq;
	double heard;		/* s: when its last heartbeat came */
	double moved;		/* s: when it last made progress or waited */
	int64_t calls;		/* its count of finished calls then */
	int gone;		/* it said BYE: never suspected again */
};

struct dt_watch {
	MPI_Comm hb;		/* heartbeats only */
	int rank, size;
	double timeout_s, period_s;
	atomic_llong calls;	/* calls this rank has finished */
	atomic_llong since_ns;	/* start of the current call; 0: none */
	_Atomic(const char *) what;	/* the current call's name */
	atomic_int stop;
	int started;		/* the thread runs */
	pthread_t thread;
	struct peer *peers;	/* (size); this rank's entry unused */
	double reported;	/* s: when peers were named; 0: not yet */
};

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void
dt_watch_enter(struct dt_watch *w, const char *call)
{
	long long zero = 0;

	if (w == NULL)
		return;
	if (atomic_compare_exchange_strong(&w->since_ns, &zero,
					   (long long)(now_s() * 1e9)))
		atomic_store(&w->what, call);
}

void
dt_watch_leave(struct dt_watch *w)
{
	if (w == NULL)
		return;
	atomic_fetch_add(&w->calls, 1);
	atomic_store(&w->since_ns, 0);
}

/* Heartbeats in and out, one round. */
static void
beat(struct dt_watch *w, double now)
{
	int in_call = atomic_load(&w->since_ns) != 0;

	for (int p = 0; p < w->size; p++) {
		struct peer *q = &w->peers[p];
		int done = 0;

		if (p == w->rank)
			continue;
		MPI_Test(&q->rreq, &done, MPI_STATUS_IGNORE);
		if (done && q->in[1] == BYE) {
			q->gone = 1;
			q->rreq = MPI_REQUEST_NULL;
		} else if (done) {
			q->heard = now;
			if (q->in[0] != q->calls || q->in[1]) {
				q->calls = q->in[0];
				q->moved = now;
			}
			MPI_Irecv(q->in, 2, MPI_INT64_T, p, HEARTBEAT_TAG,
				  w->hb, &q->rreq);
		}
		done = 1;
		if (q->sreq != MPI_REQUEST_NULL)
			MPI_Test(&q->sreq, &done, MPI_STATUS_IGNORE);
		if (done) {
			q->out[0] = atomic_load(&w->calls);
			q->out[1] = in_call;
			MPI_Isend(q->out, 2, MPI_INT64_T, p, HEARTBEAT_TAG,
				  w->hb, &q->sreq);
		}
	}
}

/* Names the suspected peers on stderr; returns how many there are. */
static int
report(struct dt_watch *w, double now, double waited)
{
	char line[1024];
	size_t len;
	int n = 0;

	len = (size_t)snprintf(line, sizeof line, "dtrain: rank %d: waited "
			       "%.0f s in %s (parallel.timeout_s %g);",
			       w->rank, waited, atomic_load(&w->what),
			       w->timeout_s);
	for (int p = 0; p < w->size && len < sizeof line; p++) {
		const struct peer *q = &w->peers[p];

		if (p == w->rank || q->gone)
			continue;
		if (now - q->heard >= w->timeout_s)
			len += (size_t)snprintf(line + len, sizeof line - len,
						"%s rank %d silent for %.0f s "
						"(stopped, dead, or its host "
						"or link is down)",
						n ? "," : "", p,
						now - q->heard);
		else if (now - q->moved >= w->timeout_s)
			len += (size_t)snprintf(line + len, sizeof line - len,
						"%s rank %d alive but no "
						"progress for %.0f s",
						n ? "," : "", p,
						now - q->moved);
		else
			continue;
		n++;
	}
	if (n > 0)
		fprintf(stderr, "%s; the job ends in %.0f s unless its "
			"launcher ends it first\n", line, 2 * w->timeout_s);
	return n;
}

static void *
watch_main(void *arg)
{
	struct dt_watch *w = arg;
	struct timespec nap;

	nap.tv_sec = (time_t)w->period_s;
	nap.tv_nsec = (long)((w->period_s - (double)nap.tv_sec) * 1e9);
	while (!atomic_load(&w->stop)) {
		long long since;
		double now;

		while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
			;
		nap.tv_sec = (time_t)w->period_s;
		nap.tv_nsec = (long)((w->period_s - (double)nap.tv_sec) * 1e9);
		now = now_s();
		beat(w, now);
		since = atomic_load(&w->since_ns);
		if (since == 0 || now - (double)since * 1e-9 < w->timeout_s) {
			w->reported = 0;
			continue;
		}
		if (w->reported == 0) {
			if (report(w, now, now - (double)since * 1e-9) > 0)
				w->reported = now;
		} else if (now - w->reported >= 2 * w->timeout_s) {
			fprintf(stderr, "dtrain: rank %d: ending the job "
				"(MPI_Abort) after %.0f s without progress\n",
				w->rank, now - (double)since * 1e-9);
			MPI_Abort(w->hb, 1);
		}
	}
	return NULL;
}

enum dt_status
dt_watch_start(MPI_Comm world, double timeout_s, struct dt_watch **out,
	       struct dt_error *err)
{
	struct dt_watch *w = dt_xcalloc(1, sizeof *w);
	double t0;
	int rc;

	w->timeout_s = timeout_s;
	w->period_s = timeout_s / 5 < 1 ? timeout_s / 5 : 1;
	rc = MPI_Comm_dup(world, &w->hb);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_rank(w->hb, &w->rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(w->hb, &w->size);
	if (rc != MPI_SUCCESS) {
		free(w);
		return dt_comm_mpi_check(-1, rc, "MPI_Comm_dup (watchdog)",
					 err);
	}
	w->peers = dt_xcalloc((size_t)w->size, sizeof *w->peers);
	t0 = now_s();
	for (int p = 0; p < w->size; p++) {
		struct peer *q = &w->peers[p];

		q->heard = q->moved = t0;
		q->rreq = q->sreq = MPI_REQUEST_NULL;
		if (p != w->rank)
			MPI_Irecv(q->in, 2, MPI_INT64_T, p, HEARTBEAT_TAG,
				  w->hb, &q->rreq);
	}
	atomic_store(&w->what, "(none)");
	rc = pthread_create(&w->thread, NULL, watch_main, w);
	if (rc != 0) {
		dt_errorf(err, DT_ERR_MPI, "rank %d: cannot start the "
			  "watchdog thread: %s", w->rank, strerror(rc));
		dt_watch_stop(w);
		return DT_ERR_MPI;
	}
	w->started = 1;
	*out = w;
	return DT_OK;
}

void
dt_watch_stop(struct dt_watch *w)
{
	if (w == NULL)
		return;
	atomic_store(&w->stop, 1);
	if (w->started)
		pthread_join(w->thread, NULL);
	/* A last heartbeat says this rank is leaving, so that a peer still
	 * waiting in a call of its own does not count it silent; every
	 * rank's heartbeats are out before any receive goes. */
	for (int p = 0; p < w->size; p++) {
		struct peer *q = &w->peers[p];

		if (p == w->rank)
			continue;
		if (q->sreq != MPI_REQUEST_NULL)
			MPI_Wait(&q->sreq, MPI_STATUS_IGNORE);
		q->out[0] = atomic_load(&w->calls);
		q->out[1] = BYE;
		MPI_Send(q->out, 2, MPI_INT64_T, p, HEARTBEAT_TAG, w->hb);
	}
	MPI_Barrier(w->hb);
	for (int p = 0; p < w->size; p++)
		if (w->peers[p].rreq != MPI_REQUEST_NULL) {
			MPI_Cancel(&w->peers[p].rreq);
			MPI_Wait(&w->peers[p].rreq, MPI_STATUS_IGNORE);
		}
	MPI_Comm_free(&w->hb);
	free(w->peers);
	free(w);
}
