/* SPDX-License-Identifier: MIT */
/* comm_mpi.c - the Open MPI communicator; the one file that includes mpi.h.
 * Errors return (MPI_ERRORS_RETURN) and are reported with MPI_Error_string,
 * the call and the rank.
 *
 * The progress thread (parallel.progress_us): Open MPI moves a non-
 * blocking collective on only inside MPI calls of the process (its TCP
 * transport has no thread of its own), so a sum started in backward
 * advances only when the trainer calls in between layers, and a round of
 * the ring that finishes inside a long layer waits for the layer's end.
 * With an interval set and MPI at MPI_THREAD_MULTIPLE, each communicator
 * that starts a non-blocking sum gets a thread that, while any of its
 * sums is in flight, calls MPI_Testall on them every interval and sleeps
 * in between (nanosleep, so it takes no core while it waits); with none
 * in flight it sleeps on a condition variable. A mutex orders it with
 * the calling thread's starts, tests and waits of the same requests; the
 * caller's tests still call MPI_Testall (unless the thread is testing at
 * that moment), so the sums move on at least as often as without the
 * thread. The sums are the same MPI calls on the same buffers, so no bit
 * changes.
 *
 * The reduce-scatters, the all-gathers and the rounded double sums
 * (dt_comm_reduce_scatter_sum_*, dt_comm_allgather_f32 and
 * dt_comm_iallreduce_sum_f64_f32, the exact mode's gradient) are one
 * ring of dtrain's own over point-to-point messages on a duplicate of
 * the communicator (ring), one tag a collective: P - 1 reduce-scatter
 * steps of floats or doubles, after which each rank holds its part
 * (dt_comm_part) summed, then P - 1 all-gather steps of floats. A
 * reduce-scatter runs the first half alone, an all-gather the second,
 * and the rounded sum both, rounding its part of the doubles into the
 * floats in between. Each step is a receive from the left neighbour and
 * a send to the right one (a pair for every 2^30 values of a chunk: MPI
 * counts are int), in slots of colls; whoever tests or waits (the
 * caller or the thread) runs MPI_Testsome / MPI_Waitsome over every
 * pending request and moves each ring whose step has completed to its
 * next (drive). Where no ring is pending, the tests and waits are
 * MPI_Testall / MPI_Waitall as before. The rounding happens once per
 * value, on one rank, so every rank gets the same floats. */
#include "comm/comm.h"
#include "comm/comm_priv.h"
#include "comm/mpi_priv.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "util/alloc.h"
#include "util/bf16.h"
#include "util/trace.h"

/* The most values in one message of a ring step (MPI counts are int). */
#define RING_BLOCK ((size_t)1 << 30)

/* One ring collective in flight over the P ranks (see the top of the
 * file): steps [0, P-1) reduce-scatter buf, steps [P-1, 2P-2) all-gather
 * out. A reduce-scatter ends at P-1, an all-gather starts there, a
 * rounded double sum runs them all. */
struct ring_sum {
	void *buf;		/* (n) the reduce-scatter's floats or
				 * doubles (type), summed in place */
	int type;		/* DT_COMM_F32 or DT_COMM_F64: buf's */
	float *out;		/* (n) the all-gather's floats */
	size_t n;
	int step;		/* the step in flight */
	int end;		/* the step after its last: P-1 or 2P-2 */
	int round;		/* after the last reduce-scatter step, this
				 * rank's part of buf (doubles) rounded
				 * into out */
	int nq;			/* its requests: a receive and a send for
				 * each RING_BLOCK values of the largest
				 * chunk */
	int sum;		/* the index of its sum (sum_end) */
	int slot;		/* its requests: colls[slot, slot + nq) */
	int tag;
	double *tmp;		/* (tmp_cap) the chunk a reduce-scatter step
				 * receives, floats or doubles; kept for the
				 * next sums */
	size_t tmp_cap;		/* in doubles */
};

struct mpi_impl {
	MPI_Comm world;
	MPI_Comm node;		/* the ranks sharing this node's memory */
	int child;		/* made by dt_comm_split: free leaves MPI up */
	MPI_Request *reqs;	/* pending sends; handles index it */
	int n_reqs, cap_reqs;
	MPI_Request *colls;	/* (cap_colls) pending non-blocking sums */
	int n_colls, cap_colls;
	int *sum_end;		/* (cap_sums) n_colls after each sum's
				 * requests, in the order started */
	int n_sums, cap_sums;
	MPI_Op bf16_sum;	/* the bfloat16 sum; made by the world,
				 * shared with (not freed by) its splits */
	/* The rounded double sums (see the top of the file). */
	MPI_Comm ring;		/* a duplicate of world for their messages */
	int me, np;		/* rank and size in world (and ring) */
	int tag_ub;		/* MPI_TAG_UB of ring */
	unsigned ring_seq;	/* sums started on ring (the same count on
				 * every rank): each one's tag */
	struct ring_sum *rings;	/* (cap_rings) the ring sums since none was
				 * pending, in the order started */
	int n_rings, cap_rings;
	int *idx;		/* (cap_idx) MPI_Testsome's indices */
	int cap_idx;
	double *btmp;		/* (btmp_cap) the blocking ring's chunk */
	size_t btmp_cap;
	MPI_Request *bq;	/* (cap_bq) the blocking ring's requests */
	int cap_bq;
	/* The progress thread of colls (see the top of the file). */
	long progress_ns;	/* its interval; 0: none; splits inherit */
	int thread_on;		/* started (lock, wake, thread valid) */
	int stop;		/* under lock: the thread is to end */
	int thread_rc;		/* under lock: its failed MPI_Testall */
	pthread_mutex_t lock;	/* colls, n_colls, sums, stop, thread_rc */
	pthread_cond_t wake;	/* a sum started, or stop */
	pthread_t thread;
};

/* Forgets every pending sum (all done, or released after a failure). */
static void
colls_clear(struct mpi_impl *impl)
{
	impl->n_colls = 0;
	impl->n_sums = 0;
	impl->n_rings = 0;
}

/* Chunk i of n values cut into np: [chunk_lo(i), chunk_lo(i + 1)), the
 * cut of dt_comm_part. */
static size_t
chunk_lo(size_t n, int np, int i)
{
	return dt_comm_chunk_lo(n, np, i);
}

static size_t
chunk_len(size_t n, int np, int i)
{
	return chunk_lo(n, np, i + 1) - chunk_lo(n, np, i);
}

static int
ring_mod(int a, int np)
{
	return ((a % np) + np) % np;
}

/* The count of the message of block b (RING_BLOCK values from b x
 * RING_BLOCK) of a chunk of len values: 0 past its end. */
static int
block_count(size_t len, int b)
{
	size_t at = (size_t)b * RING_BLOCK;

	if (at >= len)
		return 0;
	return (int)(len - at < RING_BLOCK ? len - at : RING_BLOCK);
}

/* Posts step r->step of ring r: for each block b of RING_BLOCK values,
 * q[2b] its receive from the left neighbour and q[2b + 1] its send to
 * the right one (block 0 always, empty or not; the others only within
 * the chunk, MPI_REQUEST_NULL past it). Reduce-scatter step s sends this
 * rank's partial sum of chunk (me - s) and receives the left's of chunk
 * (me - s - 1) into tmp; all-gather step t sends chunk (me + 1 - t) of
 * out and receives chunk (me - t) straight into out. After step P - 2
 * this rank holds chunk (me + 1) summed: its part (dt_comm_part). Returns
 * the MPI rc. */
static int
ring_post(struct mpi_impl *impl, struct ring_sum *r, MPI_Request *q)
{
	int np = impl->np, me = impl->me;
	int left = ring_mod(me - 1, np), right = ring_mod(me + 1, np);
	int rs = r->step < np - 1;
	int t = rs ? r->step : r->step - (np - 1);
	int cs = ring_mod(me + !rs - t, np);
	int cr = ring_mod(me + !rs - t - 1, np);
	MPI_Datatype dt = rs && r->type == DT_COMM_F64 ? MPI_DOUBLE :
			  MPI_FLOAT;
	size_t elem = dt == MPI_DOUBLE ? sizeof(double) : sizeof(float);
	char *base = rs ? (char *)r->buf : (char *)r->out;
	char *rbuf = rs ? (char *)r->tmp : base + chunk_lo(r->n, np, cr) * elem;
	char *sbuf = base + chunk_lo(r->n, np, cs) * elem;
	size_t nr = chunk_len(r->n, np, cr), ns = chunk_len(r->n, np, cs);
	int rc = MPI_SUCCESS;

	for (int b = 0; b < r->nq / 2 && rc == MPI_SUCCESS; b++) {
		size_t at = (size_t)b * RING_BLOCK * elem;

		q[2 * b] = MPI_REQUEST_NULL;
		q[2 * b + 1] = MPI_REQUEST_NULL;
		if (b == 0 || block_count(nr, b) > 0)
			rc = MPI_Irecv(rbuf + at, block_count(nr, b), dt, left,
				       r->tag, impl->ring, &q[2 * b]);
		if (rc == MPI_SUCCESS && (b == 0 || block_count(ns, b) > 0))
			rc = MPI_Isend(sbuf + at, block_count(ns, b), dt,
				       right, r->tag, impl->ring,
				       &q[2 * b + 1]);
	}
	return rc;
}

/* Adds the chunk a reduce-scatter step received (tmp) into this rank's
 * partial sums of it, in the buffer's type; the last step of a rounded
 * sum then rounds the chunk, now summed over every rank, into out, once,
 * for every rank. */
static void
ring_add(struct ring_sum *r, int np, int cr, int last)
{
	size_t lo = chunk_lo(r->n, np, cr), k = chunk_len(r->n, np, cr);

	if (r->type == DT_COMM_F64) {
		double *a = (double *)r->buf + lo;	/* (k) */

		for (size_t i = 0; i < k; i++)
			a[i] += r->tmp[i];
		if (last && r->round)
			for (size_t i = 0; i < k; i++)
				r->out[lo + i] = (float)a[i];
	} else {
		float *a = (float *)r->buf + lo;	/* (k) */
		const float *b = (const float *)r->tmp;	/* (k) */

		for (size_t i = 0; i < k; i++)
			a[i] += b[i];
	}
}

/* After step r->step of r has completed (all its requests): a reduce-
 * scatter step adds the chunk received (ring_add); then the next step
 * is posted into q, unless r is done. Returns the MPI rc. */
static int
ring_next(struct mpi_impl *impl, struct ring_sum *r, MPI_Request *q)
{
	int np = impl->np;

	if (r->step < np - 1)
		ring_add(r, np, ring_mod(impl->me - r->step - 1, np),
			 r->step == np - 2);
	if (++r->step == r->end)
		return MPI_SUCCESS;
	return ring_post(impl, r, q);
}

/* Whether every request of a ring's step has completed. */
static int
ring_idle(const struct ring_sum *r, const MPI_Request *q)
{
	for (int i = 0; i < r->nq; i++)
		if (q[i] != MPI_REQUEST_NULL)
			return 0;
	return 1;
}

/* Whether the first k sums started are done: their requests completed
 * (MPI_REQUEST_NULL) and their ring sums at their last step. */
static int
sums_done(const struct mpi_impl *impl, int k)
{
	int end = k > 0 ? impl->sum_end[k - 1] : 0;

	for (int i = 0; i < end; i++)
		if (impl->colls[i] != MPI_REQUEST_NULL)
			return 0;
	for (int i = 0; i < impl->n_rings; i++)
		if (impl->rings[i].sum < k &&
		    impl->rings[i].step < impl->rings[i].end)
			return 0;
	return 1;
}

/* Each ring sum whose step in flight has completed moves to its next. */
static int
rings_step(struct mpi_impl *impl)
{
	for (int i = 0; i < impl->n_rings; i++) {
		struct ring_sum *r = &impl->rings[i];
		MPI_Request *q = impl->colls + r->slot;

		while (r->step < r->end && ring_idle(r, q)) {
			int rc = ring_next(impl, r, q);

			if (rc != MPI_SUCCESS)
				return rc;
		}
	}
	return MPI_SUCCESS;
}

/* Moves the sums in flight on once where ring sums are among them: one
 * MPI_Testsome over every pending request (or MPI_Waitsome, wait: until
 * one completes), then every ring sum whose step completed takes its
 * next. Where none is a ring sum, MPI_Testall / MPI_Waitall on them all
 * as before. *done: every sum started is done. Returns the MPI rc. */
static int
drive(struct mpi_impl *impl, int wait, int *done)
{
	int rc = MPI_SUCCESS, n_out = 0;

	if (impl->n_rings == 0) {
		*done = 1;
		if (impl->n_colls == 0)
			return MPI_SUCCESS;
		return wait ? MPI_Waitall(impl->n_colls, impl->colls,
					  MPI_STATUSES_IGNORE) :
			      MPI_Testall(impl->n_colls, impl->colls, done,
					  MPI_STATUSES_IGNORE);
	}
	if (impl->cap_idx < impl->n_colls) {
		impl->cap_idx = impl->cap_colls;
		impl->idx = dt_xrealloc(impl->idx, (size_t)impl->cap_idx,
					sizeof *impl->idx);
	}
	rc = rings_step(impl);
	if (rc == MPI_SUCCESS && !sums_done(impl, impl->n_sums))
		rc = wait ? MPI_Waitsome(impl->n_colls, impl->colls, &n_out,
					 impl->idx, MPI_STATUSES_IGNORE) :
			    MPI_Testsome(impl->n_colls, impl->colls, &n_out,
					 impl->idx, MPI_STATUSES_IGNORE);
	if (rc == MPI_SUCCESS)
		rc = rings_step(impl);
	*done = rc == MPI_SUCCESS && sums_done(impl, impl->n_sums);
	return rc;
}

/* The progress thread: drive (MPI_Testall, or MPI_Testsome and the ring
 * sums' next steps) on the sums in flight every progress_ns while there
 * are any; a failure is kept for the caller's
 * next test or wait, and the requests are dropped. */
static void *
progress_main(void *arg)
{
	struct mpi_impl *impl = arg;
	struct timespec ts = { impl->progress_ns / 1000000000L,
			       impl->progress_ns % 1000000000L };

	pthread_mutex_lock(&impl->lock);
	while (!impl->stop) {
		int flag = 0, rc;

		if (impl->n_colls == 0) {
			pthread_cond_wait(&impl->wake, &impl->lock);
			continue;
		}
		rc = drive(impl, 0, &flag);
		if (rc != MPI_SUCCESS)
			impl->thread_rc = rc;
		if (rc != MPI_SUCCESS || flag)
			colls_clear(impl);
		pthread_mutex_unlock(&impl->lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&impl->lock);
	}
	pthread_mutex_unlock(&impl->lock);
	return NULL;
}

/* Starts impl's progress thread once, where it has an interval and MPI
 * runs at MPI_THREAD_MULTIPLE; otherwise (or if the thread cannot be
 * made) the sums move on inside the caller's tests, as without one. */
static void
progress_start(struct dt_comm *c)
{
	struct mpi_impl *impl = c->impl;
	int level = MPI_THREAD_SINGLE;

	if (impl->thread_on || impl->progress_ns <= 0)
		return;
	/* dt_comm_mpi_new_watched set an interval only at this level;
	 * checked again as cheap insurance. */
	if (MPI_Query_thread(&level) != MPI_SUCCESS ||
	    level != MPI_THREAD_MULTIPLE) {
		impl->progress_ns = 0;
		c->progress_us = 0;
		return;
	}
	pthread_mutex_init(&impl->lock, NULL);
	pthread_cond_init(&impl->wake, NULL);
	if (pthread_create(&impl->thread, NULL, progress_main, impl) != 0) {
		pthread_cond_destroy(&impl->wake);
		pthread_mutex_destroy(&impl->lock);
		impl->progress_ns = 0;
		c->progress_us = 0;
		return;
	}
	impl->thread_on = 1;
}

static void
progress_stop(struct mpi_impl *impl)
{
	if (!impl->thread_on)
		return;
	pthread_mutex_lock(&impl->lock);
	impl->stop = 1;
	pthread_cond_signal(&impl->wake);
	pthread_mutex_unlock(&impl->lock);
	pthread_join(impl->thread, NULL);
	pthread_cond_destroy(&impl->wake);
	pthread_mutex_destroy(&impl->lock);
	impl->thread_on = 0;
}

/* Room for one more request in impl->colls (doubling; dt_xrealloc ends
 * the process when memory runs out). Call with the colls lock held. */
static void
colls_grow(struct mpi_impl *impl)
{
	if (impl->n_colls == impl->cap_colls) {
		impl->cap_colls = impl->cap_colls ? 2 * impl->cap_colls : 16;
		impl->colls = dt_xrealloc(impl->colls, (size_t)impl->cap_colls,
					  sizeof *impl->colls);
	}
}

static void
colls_lock(struct mpi_impl *impl)
{
	if (impl->thread_on)
		pthread_mutex_lock(&impl->lock);
}

static void
colls_unlock(struct mpi_impl *impl)
{
	if (impl->thread_on)
		pthread_mutex_unlock(&impl->lock);
}

/* The bfloat16 sum (MPI_Op_create, MPI-3.1 section 5.9.5): inout[i] =
 * bf16(float(in[i]) + float(inout[i])). Commutative: a + b and b + a
 * round alike. */
static void
bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
	const uint16_t *a = in;
	uint16_t *b = inout;

	(void)type;
	for (int i = 0; i < *len; i++)
		b[i] = dt_bf16_from_f32(dt_bf16_to_f32(a[i]) +
					dt_bf16_to_f32(b[i]));
}

static MPI_Datatype
type_of(int type)
{
	return type == DT_COMM_F32 ? MPI_FLOAT :
	       type == DT_COMM_F64 ? MPI_DOUBLE :
	       type == DT_COMM_BF16 ? MPI_UINT16_T : MPI_INT;
}

static size_t
size_of(int type)
{
	return type == DT_COMM_F32 ? sizeof(float) :
	       type == DT_COMM_F64 ? sizeof(double) :
	       type == DT_COMM_BF16 ? sizeof(uint16_t) : sizeof(int);
}

static enum dt_status
check(struct dt_comm *c, int rc, const char *call, struct dt_error *err)
{
	return dt_comm_mpi_check(c->rank, rc, call, err);
}

static MPI_Comm
world_of(struct dt_comm *c)
{
	return ((struct mpi_impl *)c->impl)->world;
}

static enum dt_status
mpi_allreduce(struct dt_comm *c, void *buf, size_t n, int type, int op,
	      struct dt_error *err)
{
	MPI_Datatype dt = type_of(type);
	size_t elem = size_of(type);
	MPI_Op mop = type == DT_COMM_BF16 ?
		     ((struct mpi_impl *)c->impl)->bf16_sum :
		     op == DT_COMM_SUM ? MPI_SUM : MPI_MAX;
	char *p = buf;

	if (c->size == 1)
		return DT_OK;
	/* MPI counts are int: go in chunks for very large buffers. */
	while (n > 0) {
		int count = n > (1u << 30) ? (1 << 30) : (int)n;
		double t0 = dt_trace_enabled ? dt_trace_clock() : 0;
		int rc = MPI_Allreduce(MPI_IN_PLACE, p, count, dt, mop,
				       world_of(c));

		dt_trace_event("MPI_Allreduce", t0, dt_trace_clock(), "bytes",
			       (long)((size_t)count * elem));

		if (rc != MPI_SUCCESS)
			return check(c, rc, "MPI_Allreduce", err);
		c->bytes_sent += (uint64_t)count * elem;
		p += (size_t)count * elem;
		n -= (size_t)count;
	}
	return DT_OK;
}

/* Ends the start of a sum whose requests are the last in colls: records
 * where they end, wakes the progress thread and unlocks. */
static void
sum_started(struct mpi_impl *impl)
{
	if (impl->n_sums == impl->cap_sums) {
		impl->cap_sums = impl->cap_sums ? 2 * impl->cap_sums : 16;
		impl->sum_end = dt_xrealloc(impl->sum_end,
					    (size_t)impl->cap_sums,
					    sizeof *impl->sum_end);
	}
	impl->sum_end[impl->n_sums++] = impl->n_colls;
	if (impl->thread_on)
		pthread_cond_signal(&impl->wake);
	colls_unlock(impl);
}

/* Starts the sum in chunks of at most 2^30 values (MPI counts are
 * int), each its own request. */
static enum dt_status
mpi_iallreduce(struct dt_comm *c, void *buf, size_t n, int type,
	       struct dt_error *err)
{
	struct mpi_impl *impl = c->impl;
	MPI_Datatype dt = type_of(type);
	MPI_Op mop = type == DT_COMM_BF16 ? impl->bf16_sum : MPI_SUM;
	size_t elem = size_of(type);
	char *p = buf;

	if (c->size == 1)
		return DT_OK;
	progress_start(c);
	colls_lock(impl);
	while (n > 0) {
		int count = n > (1u << 30) ? (1 << 30) : (int)n;
		int rc;

		colls_grow(impl);
		rc = MPI_Iallreduce(MPI_IN_PLACE, p, count, dt, mop,
				    impl->world, &impl->colls[impl->n_colls]);
		if (rc != MPI_SUCCESS) {
			colls_unlock(impl);
			return check(c, rc, "MPI_Iallreduce", err);
		}
		impl->n_colls++;
		c->bytes_sent += (uint64_t)count * elem;
		p += (size_t)count * elem;
		n -= (size_t)count;
	}
	sum_started(impl);
	return DT_OK;
}

/* Waits until the first k sums started are done (MPI_Waitall on their
 * requests; with ring sums among the pending, MPI_Waitsome until they
 * are). Returns the MPI rc. */
static int
wait_sums(struct mpi_impl *impl, int k)
{
	int done = 0, rc = MPI_SUCCESS;

	if (k <= 0 || impl->n_colls == 0)
		return MPI_SUCCESS;
	if (impl->n_rings == 0)
		return MPI_Waitall(impl->sum_end[k - 1], impl->colls,
				   MPI_STATUSES_IGNORE);
	while (rc == MPI_SUCCESS && !sums_done(impl, k))
		rc = drive(impl, 1, &done);
	return rc;
}

/* A chunk buffer of at least need doubles in *buf (of *cap): kept from
 * one step to the next, so it is allocated in the first step only. */
static void
chunk_buffer(double **buf, size_t *cap, size_t need)
{
	if (*cap >= need)
		return;
	free(*buf);
	*buf = dt_xcalloc(need, sizeof **buf);
	*cap = need;
}

/* The tag of the next ring: every rank starts the same collectives in
 * the same order, so the same count; the rings in flight at once are
 * far fewer than tag_ub. */
static int
ring_tag(struct mpi_impl *impl)
{
	return (int)(impl->ring_seq++ % (unsigned)impl->tag_ub);
}

/* Sets r up for steps [first, end) over n values (its buffers set by
 * the caller): its requests, its tag and, with a reduce-scatter step,
 * a chunk buffer as large as the largest chunk. */
static void
ring_init(struct mpi_impl *impl, struct ring_sum *r, size_t n, int first,
	  int end)
{
	/* The last chunk is the largest. */
	size_t big = chunk_len(n, impl->np, impl->np - 1);

	r->n = n;
	r->step = first;
	r->end = end;
	r->nq = 2 * (big > RING_BLOCK ? (int)((big + RING_BLOCK - 1) /
					       RING_BLOCK) : 1);
	r->tag = ring_tag(impl);
	if (first < impl->np - 1)
		chunk_buffer(&r->tmp, &r->tmp_cap, big + 1);
}

/* Starts a ring over n values, steps [first, end), as one pending sum
 * (its requests in colls). More than one rank. */
static enum dt_status
ring_start(struct dt_comm *c, const struct ring_sum *what, int first,
	   int end, const char *call, struct dt_error *err)
{
	struct mpi_impl *impl = c->impl;
	struct ring_sum *r;
	int rc;

	progress_start(c);
	colls_lock(impl);
	if (impl->n_rings == impl->cap_rings) {
		int old = impl->cap_rings;

		impl->cap_rings = old ? 2 * old : 16;
		impl->rings = dt_xrealloc(impl->rings, (size_t)impl->cap_rings,
					  sizeof *impl->rings);
		memset(impl->rings + old, 0, (size_t)(impl->cap_rings - old) *
		       sizeof *impl->rings);
	}
	r = &impl->rings[impl->n_rings++];
	r->buf = what->buf;
	r->type = what->type;
	r->out = what->out;
	r->round = what->round;
	ring_init(impl, r, what->n, first, end);
	while (impl->n_colls + r->nq > impl->cap_colls) {
		impl->cap_colls = impl->cap_colls ? 2 * impl->cap_colls : 16;
		impl->colls = dt_xrealloc(impl->colls, (size_t)impl->cap_colls,
					  sizeof *impl->colls);
	}
	r->sum = impl->n_sums;
	r->slot = impl->n_colls;
	impl->n_colls += r->nq;
	rc = ring_post(impl, r, impl->colls + r->slot);
	if (rc != MPI_SUCCESS) {
		colls_unlock(impl);
		return check(c, rc, call, err);
	}
	sum_started(impl);
	return DT_OK;
}

/* Runs a ring over n values, steps [first, end), step after step, apart
 * from the sums in flight (its own requests and tag). More than one
 * rank. */
static enum dt_status
ring_run(struct dt_comm *c, struct ring_sum *r, int first, int end,
	 const char *call, struct dt_error *err)
{
	struct mpi_impl *impl = c->impl;
	int rc;

	r->tmp = impl->btmp;
	r->tmp_cap = impl->btmp_cap;
	ring_init(impl, r, r->n, first, end);
	impl->btmp = r->tmp;
	impl->btmp_cap = r->tmp_cap;
	if (impl->cap_bq < r->nq) {
		impl->cap_bq = r->nq;
		impl->bq = dt_xrealloc(impl->bq, (size_t)impl->cap_bq,
				       sizeof *impl->bq);
	}
	rc = ring_post(impl, r, impl->bq);
	while (rc == MPI_SUCCESS && r->step < r->end) {
		rc = MPI_Waitall(r->nq, impl->bq, MPI_STATUSES_IGNORE);
		if (rc == MPI_SUCCESS)
			rc = ring_next(impl, r, impl->bq);
	}
	return check(c, rc, call, err);
}

/* The reduce-scatter: the ring's first P - 1 steps over buf. */
static enum dt_status
mpi_reduce_scatter(struct dt_comm *c, void *buf, size_t n, int type,
		   int start, struct dt_error *err)
{
	struct ring_sum r = { .buf = buf, .type = type, .n = n };
	int np = ((struct mpi_impl *)c->impl)->np;

	if (start)
		return ring_start(c, &r, 0, np - 1, "MPI_Isend (reduce-"
				  "scatter)", err);
	return ring_run(c, &r, 0, np - 1, "MPI_Waitall (reduce-scatter)",
			err);
}

/* The all-gather: the ring's last P - 1 steps over buf. */
static enum dt_status
mpi_allgather(struct dt_comm *c, float *buf, size_t n, int start,
	      struct dt_error *err)
{
	struct ring_sum r = { .out = buf, .type = DT_COMM_F32, .n = n };
	int np = ((struct mpi_impl *)c->impl)->np;

	if (start)
		return ring_start(c, &r, np - 1, 2 * (np - 1), "MPI_Isend "
				  "(all-gather)", err);
	return ring_run(c, &r, np - 1, 2 * (np - 1), "MPI_Waitall "
			"(all-gather)", err);
}

/* Starts the rounded double sum: the whole ring as one pending sum, the
 * rounding between its halves. (The blocking one is comm.c's: the
 * reduce-scatter, the rounding and the all-gather.) */
static enum dt_status
mpi_isum_round(struct dt_comm *c, double *acc, float *out, size_t n,
	       struct dt_error *err)
{
	struct ring_sum r = { .buf = acc, .type = DT_COMM_F64, .out = out,
			      .n = n, .round = 1 };
	int np = ((struct mpi_impl *)c->impl)->np;

	return ring_start(c, &r, 0, 2 * (np - 1), "MPI_Isend (ring sum)",
			  err);
}

static enum dt_status
mpi_coll_test(struct dt_comm *c, int *all_done, struct dt_error *err)
{
	struct mpi_impl *impl = c->impl;
	int flag = 1, rc = MPI_SUCCESS;

	/* The caller's tests move the sums on too, as without a thread: on
	 * a loaded machine the thread may wake late. One that finds the
	 * thread testing leaves it to the thread. */
	if (impl->thread_on && pthread_mutex_trylock(&impl->lock) != 0) {
		if (all_done != NULL)
			*all_done = 0;
		return DT_OK;
	}
	if (impl->thread_on && impl->thread_rc != MPI_SUCCESS)
		rc = impl->thread_rc;
	else if (impl->n_colls > 0)
		rc = drive(impl, 0, &flag);
	if (rc == MPI_SUCCESS && flag)
		colls_clear(impl);
	colls_unlock(impl);
	if (all_done != NULL)
		*all_done = rc == MPI_SUCCESS && flag;
	return check(c, rc, "MPI_Testall (sums)", err);
}

static enum dt_status
mpi_coll_wait(struct dt_comm *c, struct dt_error *err)
{
	struct mpi_impl *impl = c->impl;
	int rc = MPI_SUCCESS;
	double t0 = dt_trace_enabled ? dt_trace_clock() : 0, t1 = t0;

	/* Waiting with the lock held keeps the thread out (asleep on the
	 * mutex) until every sum is done. */
	colls_lock(impl);
	if (dt_trace_enabled)
		t1 = dt_trace_clock();
	if (impl->thread_on && impl->thread_rc != MPI_SUCCESS)
		rc = impl->thread_rc;
	else
		rc = wait_sums(impl, impl->n_sums);
	colls_clear(impl);
	if (impl->thread_on)
		impl->thread_rc = MPI_SUCCESS;
	colls_unlock(impl);
	dt_trace_event("colls_lock", t0, t1, NULL, 0);
	dt_trace_event("MPI_Waitall", t1, dt_trace_clock(), NULL, 0);
	return check(c, rc, "MPI_Waitall (sums)", err);
}

/* MPI_Waitall on the requests of the first n_sums sums (those already
 * done are MPI_REQUEST_NULL by then, which MPI_Waitall passes over);
 * all of them, or a failure, forget every sum as mpi_coll_wait does. */
static enum dt_status
mpi_coll_wait_first(struct dt_comm *c, int n_sums, struct dt_error *err)
{
	struct mpi_impl *impl = c->impl;
	int rc = MPI_SUCCESS;
	double t0 = dt_trace_enabled ? dt_trace_clock() : 0;

	colls_lock(impl);
	if (impl->thread_on && impl->thread_rc != MPI_SUCCESS) {
		rc = impl->thread_rc;
		impl->thread_rc = MPI_SUCCESS;
		colls_clear(impl);
	} else if (n_sums >= impl->n_sums) {
		rc = wait_sums(impl, impl->n_sums);
		colls_clear(impl);
	} else if (n_sums > 0) {
		rc = wait_sums(impl, n_sums);
		if (rc != MPI_SUCCESS)
			colls_clear(impl);
	}
	colls_unlock(impl);
	dt_trace_event("MPI_Waitall (first)", t0, dt_trace_clock(), "sums",
		       n_sums);
	return check(c, rc, "MPI_Waitall (sums)", err);
}

static enum dt_status
mpi_bcast(struct dt_comm *c, void *buf, size_t bytes, int root,
	  struct dt_error *err)
{
	char *p = buf;

	if (c->size == 1)
		return DT_OK;
	while (bytes > 0) {
		int count = bytes > (1u << 30) ? (1 << 30) : (int)bytes;
		int rc = MPI_Bcast(p, count, MPI_BYTE, root, world_of(c));

		if (rc != MPI_SUCCESS)
			return check(c, rc, "MPI_Bcast", err);
		if (c->rank == root)
			c->bytes_sent += (uint64_t)count;
		p += count;
		bytes -= (size_t)count;
	}
	return DT_OK;
}

/* The broadcast started, in chunks of at most 2^30 bytes, each its own
 * request among the pending sums, as mpi_iallreduce starts its. */
static enum dt_status
mpi_ibcast(struct dt_comm *c, void *buf, size_t bytes, int root,
	   struct dt_error *err)
{
	struct mpi_impl *impl = c->impl;
	char *p = buf;

	progress_start(c);
	colls_lock(impl);
	while (bytes > 0) {
		int count = bytes > (1u << 30) ? (1 << 30) : (int)bytes;
		int rc;

		colls_grow(impl);
		rc = MPI_Ibcast(p, count, MPI_BYTE, root, impl->world,
				&impl->colls[impl->n_colls]);
		if (rc != MPI_SUCCESS) {
			colls_unlock(impl);
			return check(c, rc, "MPI_Ibcast", err);
		}
		impl->n_colls++;
		if (c->rank == root)
			c->bytes_sent += (uint64_t)count;
		p += count;
		bytes -= (size_t)count;
	}
	sum_started(impl);
	return DT_OK;
}

static enum dt_status
mpi_barrier(struct dt_comm *c, struct dt_error *err)
{
	return check(c, MPI_Barrier(world_of(c)), "MPI_Barrier", err);
}

static enum dt_status
mpi_node_barrier(struct dt_comm *c, struct dt_error *err)
{
	return check(c, MPI_Barrier(((struct mpi_impl *)c->impl)->node),
		     "MPI_Barrier (node)", err);
}

static void
mpi_abort(struct dt_comm *c, int code)
{
	MPI_Abort(world_of(c), code);
	exit(code);
}

static void
mpi_free(struct dt_comm *c)
{
	struct mpi_impl *impl = c->impl;
	int finalized = 0;

	if (impl != NULL)
		progress_stop(impl);
	if (impl != NULL && !impl->child) {
		dt_watch_stop(c->watch);
		c->watch = NULL;
	}
	if (impl != NULL && impl->node != MPI_COMM_NULL)
		MPI_Comm_free(&impl->node);
	if (impl != NULL && !impl->child && impl->bf16_sum != MPI_OP_NULL)
		MPI_Op_free(&impl->bf16_sum);
	if (impl != NULL && impl->ring != MPI_COMM_NULL)
		MPI_Comm_free(&impl->ring);
	if (impl != NULL && impl->world != MPI_COMM_NULL)
		MPI_Comm_free(&impl->world);
	if (impl != NULL) {
		free(impl->reqs);
		free(impl->colls);
		free(impl->sum_end);
		for (int i = 0; i < impl->cap_rings; i++)
			free(impl->rings[i].tmp);
		free(impl->rings);
		free(impl->idx);
		free(impl->btmp);
		free(impl->bq);
	}
	if (impl == NULL || !impl->child) {
		MPI_Finalized(&finalized);
		if (!finalized)
			MPI_Finalize();
	}
	free(impl);
	free(c);
}

static enum dt_status mpi_split(struct dt_comm *c, int color, int key,
				struct dt_comm **out, struct dt_error *err);

static enum dt_status
mpi_isend(struct dt_comm *c, const float *buf, int n, int dest, int tag,
	  int *req, struct dt_error *err)
{
	struct mpi_impl *impl = c->impl;
	int rc;

	if (impl->n_reqs == impl->cap_reqs) {
		impl->cap_reqs = impl->cap_reqs ? 2 * impl->cap_reqs : 64;
		impl->reqs = dt_xrealloc(impl->reqs, (size_t)impl->cap_reqs,
					 sizeof *impl->reqs);
	}
	rc = MPI_Isend(buf, n, MPI_FLOAT, dest, tag, impl->world,
		       &impl->reqs[impl->n_reqs]);
	if (rc != MPI_SUCCESS)
		return check(c, rc, "MPI_Isend", err);
	*req = impl->n_reqs++;
	return DT_OK;
}

/* A message longer than n floats fails (MPI_ERR_TRUNCATE, nothing past
 * buf written); a shorter one would leave the tail of buf stale and pass
 * unnoticed, so the count received is checked too. */
static enum dt_status
mpi_recv(struct dt_comm *c, float *buf, int n, int src, int tag,
	 struct dt_error *err)
{
	MPI_Status status;
	int count = 0;
	enum dt_status st;

	st = check(c, MPI_Recv(buf, n, MPI_FLOAT, src, tag, world_of(c),
			       &status), "MPI_Recv", err);
	if (st != DT_OK)
		return st;
	st = check(c, MPI_Get_count(&status, MPI_FLOAT, &count),
		   "MPI_Get_count", err);
	if (st == DT_OK && count != n)
		st = dt_errorf(err, DT_ERR_MPI, "rank %d: MPI_Recv from rank "
			       "%d (tag %d): %d floats arrived, expected %d",
			       c->rank, src, tag, count, n);
	return st;
}

/* Waits for one pending send, or (all) for every one; then the handles
 * start again from 0. */
static enum dt_status
mpi_wait(struct dt_comm *c, int req, int all, struct dt_error *err)
{
	struct mpi_impl *impl = c->impl;
	int rc;

	if (all) {
		rc = MPI_Waitall(impl->n_reqs, impl->reqs,
				 MPI_STATUSES_IGNORE);
		impl->n_reqs = 0;
		return check(c, rc, "MPI_Waitall", err);
	}
	if (req < 0 || req >= impl->n_reqs)
		return DT_OK;
	return check(c, MPI_Wait(&impl->reqs[req], MPI_STATUS_IGNORE),
		     "MPI_Wait", err);
}

/* Grouped as struct dt_comm_ops is (comm_priv.h): what every
 * communicator has, then each optional part. */
static const struct dt_comm_ops mpi_ops = {
	.allreduce = mpi_allreduce, .bcast = mpi_bcast,
	.barrier = mpi_barrier, .node_barrier = mpi_node_barrier,
	.abort = mpi_abort, .free = mpi_free, .split = mpi_split,
	/* point to point */
	.isend = mpi_isend, .recv = mpi_recv, .wait = mpi_wait,
	/* the pending sums */
	.iallreduce = mpi_iallreduce, .coll_test = mpi_coll_test,
	.coll_wait = mpi_coll_wait, .coll_wait_first = mpi_coll_wait_first,
	/* the sharded collectives */
	.reduce_scatter = mpi_reduce_scatter, .allgather = mpi_allgather,
	.isum_round = mpi_isum_round, .ibcast = mpi_ibcast,
};

/* The rounded double sums' own duplicate of world (their point-to-
 * point messages then meet no other traffic) and its tag bound.
 * Collective over world. */
static int
ring_setup(struct dt_comm *c)
{
	struct mpi_impl *impl = c->impl;
	int *ub = NULL, flag = 0;
	int rc = MPI_Comm_dup(impl->world, &impl->ring);

	impl->me = c->rank;
	impl->np = c->size;
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_get_attr(impl->ring, MPI_TAG_UB, &ub, &flag);
	/* The standard's least bound where the attribute is missing. */
	impl->tag_ub = rc == MPI_SUCCESS && flag && *ub > 0 ? *ub : 32767;
	return rc;
}

/* Fills a split communicator's rank, size and node group from
 * impl->world (already set). */
static int
mpi_setup(struct dt_comm *c)
{
	struct mpi_impl *impl = c->impl;
	int rc = MPI_Comm_rank(impl->world, &c->rank);

	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(impl->world, &c->size);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_split_type(impl->world, MPI_COMM_TYPE_SHARED,
					 c->rank, MPI_INFO_NULL, &impl->node);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(impl->node, &c->local_size);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_rank(impl->node, &c->local_rank);
	if (rc == MPI_SUCCESS)
		rc = ring_setup(c);
	return rc;
}

static enum dt_status
mpi_split(struct dt_comm *c, int color, int key, struct dt_comm **out,
	  struct dt_error *err)
{
	struct dt_comm *n;
	struct mpi_impl *impl;
	MPI_Comm sub = MPI_COMM_NULL;
	int rc;

	rc = MPI_Comm_split(world_of(c),
			    color == DT_COMM_SPLIT_NONE ? MPI_UNDEFINED : color,
			    key, &sub);
	if (rc != MPI_SUCCESS)
		return check(c, rc, "MPI_Comm_split", err);
	if (sub == MPI_COMM_NULL) {
		*out = NULL;
		return DT_OK;
	}
	n = dt_xcalloc(1, sizeof *n);
	impl = dt_xcalloc(1, sizeof *impl);
	n->ops = &mpi_ops;
	n->impl = impl;
	impl->world = sub;
	impl->node = MPI_COMM_NULL;
	impl->ring = MPI_COMM_NULL;
	impl->child = 1;
	impl->bf16_sum = ((struct mpi_impl *)c->impl)->bf16_sum;
	impl->progress_ns = ((struct mpi_impl *)c->impl)->progress_ns;
	n->progress_us = c->progress_us;
	n->rank = c->rank;	/* for messages until mpi_setup knows better */
	n->watch = c->watch;
	rc = MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
	if (rc == MPI_SUCCESS)
		rc = mpi_setup(n);
	if (rc != MPI_SUCCESS) {
		enum dt_status st = check(n, rc, "MPI_Comm_split (setup)",
					  err);

		mpi_free(n);
		return st;
	}
	*out = n;
	return DT_OK;
}

MPI_Comm
dt_comm_mpi_handle(const struct dt_comm *c)
{
	if (c == NULL || c->ops != &mpi_ops)
		return MPI_COMM_NULL;
	return ((const struct mpi_impl *)c->impl)->world;
}

enum dt_status
dt_comm_mpi_check(int rank, int rc, const char *call, struct dt_error *err)
{
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (rc == MPI_SUCCESS)
		return DT_OK;
	if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof text, "MPI error %d", rc);
	return dt_errorf(err, DT_ERR_MPI, "rank %d: %s: %s", rank, call, text);
}

enum dt_status
dt_comm_mpi_new(struct dt_comm **out, struct dt_error *err)
{
	return dt_comm_mpi_new_watched(out, 0, 0, err);
}

/* Keeps the process's heap at its high-water mark. Open MPI mallocs a
 * temporary buffer the size of the message for each non-blocking sum
 * (libnbc) and for each large blocking one, and frees it when the sum is
 * done: 13 buffers of 0.5 MiB a step for jobs/char-gpt.yaml's double
 * sums on 2 ranks. With glibc's defaults the freed top of the heap goes
 * back to the kernel (and buffers above its moving mmap threshold are
 * mapped and unmapped), so every step faults the pages in again while
 * the sums receive into them, and each unmapping flushes the TLB of the
 * other cores where the process has threads. On the 2-vCPU VM of
 * bench/README a page fault costs 10 us; on 2 simulated hosts at the
 * balanced rate a char-GPT step took 1.9 ms less with this function
 * than without (the median of 8 alternating pairs, 7 of them faster;
 * the same settings as environment variables: 2.4 ms, 9 of 10). A
 * variable of the user's own (MALLOC_TRIM_THRESHOLD_,
 * MALLOC_MMAP_THRESHOLD_, MALLOC_TOP_PAD_) wins over the value here.
 * Not glibc: nothing. */
static void
keep_heap(void)
{
#ifdef __GLIBC__
	if (getenv("MALLOC_TRIM_THRESHOLD_") == NULL)
		mallopt(M_TRIM_THRESHOLD, 1 << 30);
	if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL)
		mallopt(M_MMAP_THRESHOLD, 32 << 20);	/* glibc's most */
	if (getenv("MALLOC_TOP_PAD_") == NULL)
		mallopt(M_TOP_PAD, 16 << 20);
#endif
}

static const char *const tcp_eager_vars[] = {
	"OMPI_MCA_btl_tcp_eager_limit",
	"OMPI_MCA_btl_tcp_rndv_eager_limit",
	"OMPI_MCA_btl_tcp_max_send_size",
};

int64_t
dt_comm_mpi_tcp_eager(int64_t bytes)
{
	char v[32];

	for (size_t i = 0; i < sizeof tcp_eager_vars / sizeof *tcp_eager_vars;
	     i++)
		if (getenv(tcp_eager_vars[i]) != NULL)
			return -1;
	if (bytes <= 0)
		return 0;
	snprintf(v, sizeof v, "%lld", (long long)bytes);
	/* The three together: the eager limit caps the first fragment,
	 * the rendezvous one the first of a long message, the send size
	 * every later one. */
	for (size_t i = 0; i < sizeof tcp_eager_vars / sizeof *tcp_eager_vars;
	     i++)
		setenv(tcp_eager_vars[i], v, 1);
	return bytes;
}

/* The libnbc all-reduce algorithm for a world of size (mpirun's
 * OMPI_COMM_WORLD_SIZE; NULL where unknown): "4" (recursive doubling) at
 * exactly 2 ranks, "1" (the ring) otherwise. */
static const char *
iallreduce_algorithm(const char *size)
{
	return size != NULL && strcmp(size, "2") == 0 ? "4" : "1";
}

enum dt_status
dt_comm_mpi_new_watched(struct dt_comm **out, double timeout_s,
			int64_t progress_us, struct dt_error *err)
{
	struct dt_comm *c;
	struct mpi_impl *impl;
	int want = timeout_s > 0 || progress_us > 0 ? MPI_THREAD_MULTIPLE :
		   MPI_THREAD_FUNNELED;
	int provided = 0, rc;

	/* The non-blocking gradient sums (parallel.overlap) by a ring, as
	 * the blocking ones of large messages: Open MPI's libnbc otherwise
	 * takes a binomial tree for fewer than 4 ranks, a reduce to rank 0
	 * and a broadcast back, which at 2 ranks moves the bytes one way
	 * after the other (measured on 2 simulated hosts at 1 Gbit/s: 4 MiB
	 * buckets of a 7.1 MiB gradient exposed 150 ms a step that way,
	 * 100 ms by the ring, the blocking sum 110). At exactly 2 ranks
	 * recursive doubling (4) instead: each rank sends its whole bucket
	 * once and adds the other's, one round where the ring takes two
	 * (bench/cluster.sh --ddp: the MLP job 3500 -> 5150 samples/s); a + b
	 * and b + a are the same float, so both ranks keep the ring's bits.
	 * The size is mpirun's OMPI_COMM_WORLD_SIZE (unset: the ring). A
	 * setting of the user's own wins (setenv does not overwrite). */
	setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm",
	       iallreduce_algorithm(getenv("OMPI_COMM_WORLD_SIZE")), 0);
	keep_heap();
	rc = MPI_Init_thread(NULL, NULL, want, &provided);
	if (rc != MPI_SUCCESS)
		return dt_errorf(err, DT_ERR_MPI, "MPI_Init_thread failed (%d)",
				 rc);
	if (timeout_s > 0 && provided < want) {
		MPI_Finalize();
		return dt_errorf(err, DT_ERR_MPI, "parallel.timeout_s: the "
				 "watchdog needs MPI_THREAD_MULTIPLE, which "
				 "this MPI does not provide; set "
				 "parallel.timeout_s to 0");
	}
	c = dt_xcalloc(1, sizeof *c);
	impl = dt_xcalloc(1, sizeof *impl);
	c->ops = &mpi_ops;
	c->impl = impl;
	impl->world = MPI_COMM_NULL;
	impl->node = MPI_COMM_NULL;
	impl->ring = MPI_COMM_NULL;
	impl->bf16_sum = MPI_OP_NULL;
	if (provided == MPI_THREAD_MULTIPLE && progress_us > 0 &&
	    progress_us <= 1000000) {
		c->progress_us = progress_us;
		impl->progress_ns = (long)progress_us * 1000;
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	rc = MPI_Op_create(bf16_sum_fn, 1, &impl->bf16_sum);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_dup(MPI_COMM_WORLD, &impl->world);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_rank(impl->world, &c->rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(impl->world, &c->size);
	if (rc == MPI_SUCCESS) {
		rc = MPI_Comm_split_type(impl->world, MPI_COMM_TYPE_SHARED,
					 c->rank, MPI_INFO_NULL, &impl->node);
		if (rc == MPI_SUCCESS)
			rc = MPI_Comm_size(impl->node, &c->local_size);
		if (rc == MPI_SUCCESS)
			rc = MPI_Comm_rank(impl->node, &c->local_rank);
	}
	if (rc == MPI_SUCCESS)
		rc = ring_setup(c);
	if (rc != MPI_SUCCESS) {
		enum dt_status st = check(c, rc, "MPI setup", err);

		mpi_free(c);
		return st;
	}
	if (timeout_s > 0 && c->size > 1) {
		enum dt_status st = dt_watch_start(impl->world, timeout_s,
						   &c->watch, err);

		if (st != DT_OK) {
			mpi_free(c);
			return st;
		}
	}
	*out = c;
	return DT_OK;
}
