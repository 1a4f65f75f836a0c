/* SPDX-License-Identifier: MIT */
/* ps_server.c - the server side of the parameter server (ps.h): one loop
 * that waits on every worker's next push and on control messages, applies
 * update k once all W step-k gradients of its shard are in (summed in
 * worker-rank order), answers pulls with the newest version, and serves
 * checkpoint, stats and final requests. Li et al., OSDI 2014, Algorithm 1
 * (the server aggregates an iteration's gradients, then updates) with
 * their bounded-delay consistency, which is Ho et al.'s stale synchronous
 * parallel model (NIPS 2013). */
#include "comm/ps.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ps_priv.h"
#include "util/alloc.h"

/* Bytes of a shard message: the header, then len floats. */
static size_t
msg_bytes(const struct ps_server *v)
{
	return PS_HDR_BYTES + v->len * sizeof(float);
}

/* A shard message buffer, 64-byte aligned (the header is 4 floats long, so
 * the floats after it stay aligned). */
static char *
msg_new(size_t len)
{
	return (char *)dt_xalloc_floats(PS_HDR_BYTES / sizeof(float) + len);
}

static float *
msg_floats(char *m)
{
	return (float *)(void *)(m + PS_HDR_BYTES);
}

/* The receive slot of worker w's step-k push. */
static size_t
slot_of(const struct ps_server *v, int w, int64_t k)
{
	return (size_t)w * (size_t)v->n_slots + (size_t)(k % v->n_slots);
}

static enum dt_status
protocol(const struct dt_ps *ps, struct dt_error *err, const char *what,
	 int w, long long a, long long b)
{
	return dt_errorf(err, DT_ERR_MPI,
			 "rank %d: parameter server: worker %d broke the "
			 "protocol: %s (%lld, %lld)", ps->rank, w, what, a, b);
}

void
dt_ps_server_init(struct dt_ps *ps, const struct dt_ps_cfg *cfg)
{
	const struct dt_job *job = cfg->job;
	struct ps_server *v = dt_xcalloc(1, sizeof *v);
	size_t w_count = (size_t)ps->n_workers, n_slot;

	dt_ps_shard(ps->n, ps->n_servers, ps->rank - ps->n_workers, &v->off,
		    &v->len);
	v->params = dt_xalloc_floats(v->len);
	v->optim = dt_optim_new(job, v->len);
	if (cfg->decay != NULL)
		dt_optim_set_decay(v->optim, cfg->decay, cfg->n_decay, v->off);
	v->acc = dt_xalloc_floats(v->len);
	v->n_slots = (int)ps->bound + 1;
	n_slot = w_count * (size_t)v->n_slots;
	v->slot = dt_xcalloc(n_slot, sizeof *v->slot);
	for (size_t i = 0; i < n_slot; i++)
		v->slot[i] = msg_new(v->len);
	v->full = dt_xcalloc(n_slot, sizeof *v->full);
	v->next_push = dt_xcalloc(w_count, sizeof *v->next_push);
	v->req = dt_xmalloc(w_count + 1, sizeof *v->req);
	for (size_t i = 0; i <= w_count; i++)
		v->req[i] = MPI_REQUEST_NULL;
	v->reply = dt_xcalloc(w_count, sizeof *v->reply);
	v->reply_req = dt_xmalloc(w_count, sizeof *v->reply_req);
	v->pull_need = dt_xmalloc(w_count, sizeof *v->pull_need);
	v->done = dt_xcalloc(w_count, sizeof *v->done);
	v->done_steps = dt_xcalloc(w_count, sizeof *v->done_steps);
	v->ckpt_step = dt_xmalloc(w_count, sizeof *v->ckpt_step);
	for (size_t i = 0; i < w_count; i++) {
		v->reply[i] = msg_new(v->len);
		v->reply_req[i] = MPI_REQUEST_NULL;
		v->pull_need[i] = -1;
		v->ckpt_step[i] = -1;
	}
	ps->srv = v;
}

void
dt_ps_server_fini(struct dt_ps *ps)
{
	struct ps_server *v = ps->srv;
	int w_count = ps->n_workers;

	/* Normally nothing is pending here; after an error the job is being
	 * aborted, and a send that has not completed keeps its buffer. */
	for (int i = 0; i <= w_count; i++) {
		if (v->req[i] != MPI_REQUEST_NULL) {
			MPI_Cancel(&v->req[i]);
			MPI_Request_free(&v->req[i]);
		}
	}
	for (int i = 0; i < w_count; i++) {
		int flag = 1;

		if (v->reply_req[i] != MPI_REQUEST_NULL)
			MPI_Test(&v->reply_req[i], &flag, MPI_STATUS_IGNORE);
		if (flag)
			free(v->reply[i]);
		else
			MPI_Request_free(&v->reply_req[i]);
	}
	for (size_t i = 0; i < (size_t)w_count * (size_t)v->n_slots; i++)
		free(v->slot[i]);
	void *own[] = {
		v->slot, v->full, v->next_push, v->req, v->reply, v->reply_req,
		v->pull_need, v->done, v->done_steps, v->ckpt_step, v->acc,
	};

	dt_free_each(own, sizeof own / sizeof *own);
	dt_optim_free(v->optim);
	free(v->params);
	free(v);
	ps->srv = NULL;
}

/* Posts the receive for worker w's next push, unless one is posted, the
 * worker has said it pushed no more, or the slot still holds an update
 * not yet applied (then try_apply posts it once it is). */
static enum dt_status
post_push(struct dt_ps *ps, int w, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	int64_t k = v->next_push[w];
	size_t si = slot_of(v, w, k);

	if (v->req[w] != MPI_REQUEST_NULL || v->full[si] ||
	    (v->done[w] && k >= v->done_steps[w]))
		return DT_OK;
	return dt_ps_mpi_check(ps, MPI_Irecv(v->slot[si], (int)msg_bytes(v),
					     MPI_BYTE, w, PS_TAG_PUSH, ps->mc,
					     &v->req[w]), "MPI_Irecv (push)",
			       err);
}

static enum dt_status
post_all(struct dt_ps *ps, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	for (int w = 0; w < ps->n_workers && st == DT_OK; w++)
		st = post_push(ps, w, err);
	return st;
}

/* Copies the shard at its version into worker w's reply buffer (once the
 * previous reply from it has gone). */
static enum dt_status
fill_reply(struct dt_ps *ps, int w, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	struct ps_hdr h = { v->version, v->version };
	enum dt_status st;

	st = dt_ps_mpi_check(ps, dt_ps_wait(ps, &v->reply_req[w],
					    MPI_STATUS_IGNORE),
			     "MPI_Wait (reply)", err);
	if (st != DT_OK)
		return st;
	memcpy(v->reply[w], &h, sizeof h);
	memcpy(msg_floats(v->reply[w]), v->params, v->len * sizeof(float));
	return DT_OK;
}

/* Answers worker w's waiting pull with the newest version. */
static enum dt_status
send_reply(struct dt_ps *ps, int w, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	enum dt_status st = fill_reply(ps, w, err);

	if (st != DT_OK)
		return st;
	st = dt_ps_mpi_check(ps, MPI_Isend(v->reply[w], (int)msg_bytes(v),
					   MPI_BYTE, w, PS_TAG_REPLY, ps->mc,
					   &v->reply_req[w]),
			     "MPI_Isend (reply)", err);
	v->pull_need[w] = -1;
	v->bytes += msg_bytes(v);
	ps->world->bytes_sent += msg_bytes(v);
	return st;
}

/* Sends the shard (tag PS_TAG_STATE) to worker w, and to worker 0 the
 * optimizer state too: a checkpoint's or the final state. */
static enum dt_status
send_state(struct dt_ps *ps, int w, bool with_optim, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	enum dt_status st = fill_reply(ps, w, err);
	float **bufs;
	int n_bufs = 0;

	if (st != DT_OK)
		return st;
	st = dt_ps_mpi_check(ps, dt_ps_send(ps, v->reply[w], (int)msg_bytes(v),
					    MPI_BYTE, w, PS_TAG_STATE),
			     "MPI_Send (state)", err);
	ps->world->bytes_sent += msg_bytes(v);
	if (st != DT_OK || !with_optim)
		return st;
	bufs = dt_optim_state(v->optim, &n_bufs);
	for (int b = 0; b < n_bufs && st == DT_OK; b++) {
		st = dt_ps_mpi_check(ps, dt_ps_send(ps, bufs[b], (int)v->len,
						    MPI_FLOAT, w, PS_TAG_OPT),
				     "MPI_Send (optimizer state)", err);
		ps->world->bytes_sent += v->len * sizeof(float);
	}
	return st;
}

/* Sends this server's stats message to worker w. */
static enum dt_status
send_stats(struct dt_ps *ps, int w, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	int len = dt_ps_stats_len(ps);
	int64_t *m = dt_xmalloc((size_t)len, sizeof *m);
	enum dt_status st;

	memcpy(m, v->win, sizeof v->win);
	m[PS_STAT_VERSION] = v->version;
	m[PS_STAT_UPDATES] = v->version - v->start;
	m[PS_STAT_BYTES] = (int64_t)v->bytes;
	memcpy(m + PS_STAT_FIELDS, ps->hist,
	       (size_t)ps->n_hist * sizeof *ps->hist);
	st = dt_ps_mpi_check(ps, dt_ps_send(ps, m, len, MPI_INT64_T, w,
					    PS_TAG_STATS), "MPI_Send (stats)",
			     err);
	free(m);
	return st;
}

/* Answers every waiting pull the current version satisfies (and a done
 * worker's, whatever it asked for: nothing newer is coming for it). */
static enum dt_status
answer_pulls(struct dt_ps *ps, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	enum dt_status st = DT_OK;

	for (int w = 0; w < ps->n_workers && st == DT_OK; w++)
		if (v->pull_need[w] >= 0 &&
		    (v->pull_need[w] <= v->version || v->done[w]))
			st = send_reply(ps, w, err);
	return st;
}

/* Once every worker has asked for a checkpoint at step t and update t - 1
 * is applied, sends the state; earlier, waits (the pushes are on their
 * way). */
static enum dt_status
check_ckpt(struct dt_ps *ps, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	int64_t t = v->ckpt_step[0];
	enum dt_status st = DT_OK;

	if (v->n_ckpt < ps->n_workers)
		return DT_OK;
	for (int w = 1; w < ps->n_workers; w++)
		if (v->ckpt_step[w] != t)
			return protocol(ps, err, "checkpoint at another step "
					"than worker 0", w,
					(long long)v->ckpt_step[w],
					(long long)t);
	if (v->version < t)
		return DT_OK;
	if (v->version > t)
		return protocol(ps, err, "checkpoint of a step already passed",
				0, (long long)t, (long long)v->version);
	for (int w = 0; w < ps->n_workers && st == DT_OK; w++) {
		st = send_state(ps, w, w == 0, err);
		v->ckpt_step[w] = -1;
	}
	v->n_ckpt = 0;
	return st;
}

/* Applies every update whose gradients are all in. */
static enum dt_status
try_apply(struct dt_ps *ps, dt_ps_lr_fn lr_fn, void *ctx,
	  struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	bool any = false;
	enum dt_status st;

	for (;;) {
		int64_t k = v->version;
		int w;

		for (w = 0; w < ps->n_workers; w++)
			if (!v->full[slot_of(v, w, k)])
				break;
		if (w < ps->n_workers)
			break;
		for (w = 0; w < ps->n_workers; w++) {
			size_t si = slot_of(v, w, k);
			const float *g = msg_floats(v->slot[si]);
			struct ps_hdr h;
			int64_t stale;

			memcpy(&h, v->slot[si], sizeof h);
			stale = k - h.version;
			if (w == 0) {
				memcpy(v->acc, g, v->len * sizeof(float));
			} else {
				for (size_t i = 0; i < v->len; i++)
					v->acc[i] += g[i];
			}
			v->win[PS_STAT_APPLIED]++;
			v->win[PS_STAT_SUM] += stale;
			if (stale > v->win[PS_STAT_MAX])
				v->win[PS_STAT_MAX] = stale;
			ps->hist[stale <= ps->bound ? stale : ps->bound + 1]++;
			v->full[si] = false;
		}
		dt_optim_step(v->optim, v->params, v->acc,
			      (float)lr_fn(k, ctx));
		v->version++;
		any = true;
	}
	if (!any)
		return DT_OK;
	st = answer_pulls(ps, err);
	if (st == DT_OK)
		st = check_ckpt(ps, err);
	if (st == DT_OK)
		st = post_all(ps, err);
	return st;
}

static enum dt_status
on_push(struct dt_ps *ps, int w, MPI_Status *status, dt_ps_lr_fn lr_fn,
	void *ctx, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	int64_t k = v->next_push[w];
	size_t si = slot_of(v, w, k);
	struct ps_hdr h;
	int count = 0;

	MPI_Get_count(status, MPI_BYTE, &count);
	memcpy(&h, v->slot[si], sizeof h);
	if ((size_t)count != msg_bytes(v))
		return protocol(ps, err, "push of the wrong size", w,
				(long long)count, (long long)msg_bytes(v));
	if (h.step != k)
		return protocol(ps, err, "push out of sequence", w,
				(long long)h.step, (long long)k);
	/* The version is older than the step by the bound at most (the
	 * worker waits for that) and never newer than the step (update k
	 * needs this very gradient). */
	if (h.version > k || h.version < 0)
		return protocol(ps, err, "push computed on an impossible "
				"version", w, (long long)h.version,
				(long long)k);
	v->full[si] = true;
	v->next_push[w] = k + 1;
	v->bytes += (uint64_t)count;
	return try_apply(ps, lr_fn, ctx, err);
}

static enum dt_status
on_ctrl(struct dt_ps *ps, MPI_Status *status, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	struct ps_ctrl c = v->ctrl;
	int w = status->MPI_SOURCE, count = 0;
	enum dt_status st;

	MPI_Get_count(status, MPI_BYTE, &count);
	/* Listen for the next one before answering this one. */
	st = dt_ps_mpi_check(ps, MPI_Irecv(&v->ctrl, (int)sizeof v->ctrl,
					   MPI_BYTE, MPI_ANY_SOURCE,
					   PS_TAG_CTRL, ps->mc,
					   &v->req[ps->n_workers]),
			     "MPI_Irecv (control)", err);
	if (st != DT_OK)
		return st;
	if (w < 0 || w >= ps->n_workers || count != (int)sizeof c)
		return dt_errorf(err, DT_ERR_MPI,
				 "rank %d: parameter server: a control "
				 "message of %d bytes from rank %d, which is "
				 "not a worker", ps->rank, count, w);
	switch (c.kind) {
	case PS_CTRL_PULL:
		if (v->pull_need[w] >= 0 || v->done[w])
			return protocol(ps, err, "a second pull", w,
					(long long)v->pull_need[w],
					(long long)c.arg);
		v->pull_need[w] = c.arg;
		if (c.arg <= v->version)
			return send_reply(ps, w, err);
		return DT_OK;
	case PS_CTRL_DONE:
		if (v->done[w] || c.arg < v->next_push[w])
			return protocol(ps, err, "done twice or after fewer "
					"steps than it pushed", w,
					(long long)c.arg,
					(long long)v->next_push[w]);
		v->done[w] = true;
		v->done_steps[w] = c.arg;
		v->n_done++;
		return answer_pulls(ps, err);
	case PS_CTRL_CKPT:
		if (v->ckpt_step[w] >= 0 || c.arg < 0)
			return protocol(ps, err, "a second checkpoint request",
					w, (long long)v->ckpt_step[w],
					(long long)c.arg);
		v->ckpt_step[w] = c.arg;
		v->n_ckpt++;
		return check_ckpt(ps, err);
	case PS_CTRL_STATS:
		if (w != 0)
			return protocol(ps, err, "stats asked by a worker "
					"other than 0", w, 0, 0);
		st = send_stats(ps, 0, err);
		memset(v->win, 0, sizeof v->win);
		return st;
	default:
		return protocol(ps, err, "unknown control message", w,
				(long long)c.kind, 0);
	}
}

/* Whether every worker is done and all their pushes are applied; a
 * mismatch in their step counts is an error. */
static enum dt_status
all_done(struct dt_ps *ps, bool *finished, struct dt_error *err)
{
	struct ps_server *v = ps->srv;

	*finished = false;
	if (v->n_done < ps->n_workers)
		return DT_OK;
	for (int w = 0; w < ps->n_workers; w++)
		if (v->next_push[w] < v->done_steps[w])
			return DT_OK;
	for (int w = 1; w < ps->n_workers; w++)
		if (v->done_steps[w] != v->done_steps[0])
			return protocol(ps, err, "stopped after another number "
					"of steps than worker 0", w,
					(long long)v->done_steps[w],
					(long long)v->done_steps[0]);
	if (v->version != v->done_steps[0] || v->n_ckpt > 0)
		return protocol(ps, err, "done with updates or a checkpoint "
				"still pending", 0, (long long)v->version,
				(long long)v->done_steps[0]);
	*finished = true;
	return DT_OK;
}

/* Every worker is done: the final shard and stats to each, then the
 * receives still posted are withdrawn and the replies waited for. */
static enum dt_status
finish(struct dt_ps *ps, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	enum dt_status st = DT_OK;

	for (int w = 0; w < ps->n_workers && st == DT_OK; w++) {
		st = send_state(ps, w, false, err);
		if (st == DT_OK)
			st = send_stats(ps, w, err);
	}
	memset(v->win, 0, sizeof v->win);
	for (int i = 0; i <= ps->n_workers && st == DT_OK; i++) {
		if (v->req[i] == MPI_REQUEST_NULL)
			continue;
		st = dt_ps_mpi_check(ps, MPI_Cancel(&v->req[i]), "MPI_Cancel",
				     err);
		if (st == DT_OK)
			st = dt_ps_mpi_check(ps, MPI_Wait(&v->req[i],
							  MPI_STATUS_IGNORE),
					     "MPI_Wait (cancelled receive)",
					     err);
	}
	for (int w = 0; w < ps->n_workers && st == DT_OK; w++)
		st = dt_ps_mpi_check(ps, dt_ps_wait(ps, &v->reply_req[w],
						    MPI_STATUS_IGNORE),
				     "MPI_Wait (reply)", err);
	return st;
}

enum dt_status
dt_ps_serve(struct dt_ps *ps, const float *init_params, dt_ps_lr_fn lr_fn,
	    void *ctx, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	int w_count = ps->n_workers;
	bool finished = false;
	enum dt_status st;

	assert(ps->server && v != NULL);
	if (!v->have_state) {
		if (init_params == NULL)
			return dt_errorf(err, DT_ERR_MPI,
					 "rank %d: parameter server: no "
					 "parameters to serve (init_params "
					 "is NULL and no state was scattered)",
					 ps->rank);
		memcpy(v->params, init_params + v->off,
		       v->len * sizeof(float));
	}
	v->start = v->version;
	for (int w = 0; w < w_count; w++)
		v->next_push[w] = v->version;
	st = dt_ps_mpi_check(ps, MPI_Irecv(&v->ctrl, (int)sizeof v->ctrl,
					   MPI_BYTE, MPI_ANY_SOURCE,
					   PS_TAG_CTRL, ps->mc,
					   &v->req[w_count]),
			     "MPI_Irecv (control)", err);
	if (st == DT_OK)
		st = post_all(ps, err);
	while (st == DT_OK && !finished) {
		MPI_Status status;
		int idx = MPI_UNDEFINED;

		st = dt_ps_mpi_check(ps, dt_ps_waitany(ps, w_count + 1, v->req,
						       &idx, &status),
				     "MPI_Waitany", err);
		if (st != DT_OK)
			break;
		if (idx == MPI_UNDEFINED)
			st = dt_errorf(err, DT_ERR_MPI,
				       "rank %d: parameter server: nothing "
				       "left to wait for", ps->rank);
		else if (idx < w_count)
			st = on_push(ps, idx, &status, lr_fn, ctx, err);
		else
			st = on_ctrl(ps, &status, err);
		if (st == DT_OK)
			st = all_done(ps, &finished, err);
	}
	if (st == DT_OK)
		st = finish(ps, err);
	return st;
}

enum dt_status
dt_ps_server_scatter(struct dt_ps *ps, struct dt_error *err)
{
	struct ps_server *v = ps->srv;
	struct ps_hdr h;
	MPI_Status status;
	float **bufs;
	int n_bufs = 0, count = 0;
	enum dt_status st;

	/* The reply buffer of worker 0 is free before serving starts. */
	st = dt_ps_mpi_check(ps, dt_ps_recv(ps, v->reply[0], (int)msg_bytes(v),
					    MPI_BYTE, 0, PS_TAG_STATE, &status),
			     "MPI_Recv (resumed state)", err);
	if (st != DT_OK)
		return st;
	MPI_Get_count(&status, MPI_BYTE, &count);
	memcpy(&h, v->reply[0], sizeof h);
	if ((size_t)count != msg_bytes(v) || h.version < 0)
		return protocol(ps, err, "resumed state of the wrong size or "
				"step", 0, (long long)count,
				(long long)h.version);
	memcpy(v->params, msg_floats(v->reply[0]), v->len * sizeof(float));
	bufs = dt_optim_state(v->optim, &n_bufs);
	for (int b = 0; b < n_bufs && st == DT_OK; b++)
		st = dt_ps_mpi_check(ps, dt_ps_recv(ps, bufs[b], (int)v->len,
						    MPI_FLOAT, 0, PS_TAG_OPT,
						    MPI_STATUS_IGNORE),
				     "MPI_Recv (resumed optimizer state)", err);
	if (st != DT_OK)
		return st;
	dt_optim_set_steps(v->optim, h.version);
	v->version = h.version;
	v->have_state = true;
	return DT_OK;
}
