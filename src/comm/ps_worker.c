/* SPDX-License-Identifier: MIT */
/* ps_worker.c - the worker side of the parameter server (ps.h): push each
 * shard of a step's gradient (MPI_Isend from a copy, so the caller's
 * arena is free at once), keep one pull per server in flight (MPI_Irecv),
 * take whatever newer version has arrived, and wait only when the held
 * version is older than the staleness bound allows (Ho et al., NIPS 2013:
 * a worker at clock c must see every update before c - s). */
#include "comm/ps.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/ps_priv.h"
#include "util/alloc.h"

static size_t
msg_bytes(const struct ps_link *l)
{
	return PS_HDR_BYTES + l->len * sizeof(float);
}

static float *
msg_floats(char *m)
{
	return (float *)(void *)(m + PS_HDR_BYTES);
}

void
dt_ps_worker_init(struct dt_ps *ps)
{
	struct ps_worker *wk = dt_xcalloc(1, sizeof *wk);

	wk->link = dt_xcalloc((size_t)ps->n_servers, sizeof *wk->link);
	for (int j = 0; j < ps->n_servers; j++) {
		struct ps_link *l = &wk->link[j];

		dt_ps_shard(ps->n, ps->n_servers, j, &l->off, &l->len);
		l->server = dt_ps_server_rank(ps, j);
		/* Header (4 floats) + shard, 64-byte aligned. */
		l->push = (char *)dt_xalloc_floats(PS_HDR_BYTES /
						   sizeof(float) + l->len);
		l->pull = (char *)dt_xalloc_floats(PS_HDR_BYTES /
						   sizeof(float) + l->len);
		l->push_req = MPI_REQUEST_NULL;
		l->pull_req = MPI_REQUEST_NULL;
	}
	wk->final = dt_xcalloc((size_t)ps->n_servers *
			       (size_t)dt_ps_stats_len(ps), sizeof *wk->final);
	ps->wk = wk;
}

void
dt_ps_worker_fini(struct dt_ps *ps)
{
	struct ps_worker *wk = ps->wk;

	/* Nothing is pending after dt_ps_done; after an error the job is
	 * being aborted, and a request not yet complete keeps its buffer. */
	for (int j = 0; j < ps->n_servers; j++) {
		struct ps_link *l = &wk->link[j];
		int flag = 1;

		if (l->pull_req != MPI_REQUEST_NULL) {
			MPI_Cancel(&l->pull_req);
			MPI_Request_free(&l->pull_req);
			flag = 0;
		}
		if (flag)
			free(l->pull);
		flag = 1;
		if (l->push_req != MPI_REQUEST_NULL)
			MPI_Test(&l->push_req, &flag, MPI_STATUS_IGNORE);
		if (flag)
			free(l->push);
		else
			MPI_Request_free(&l->push_req);
	}
	free(wk->link);
	free(wk->final);
	free(wk);
	ps->wk = NULL;
}

/* The test hook's sleep (ps.h). */
static void
sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

/* Sends a control message to server j. */
static enum dt_status
send_ctrl(struct dt_ps *ps, int j, int64_t kind, int64_t arg,
	  struct dt_error *err)
{
	struct ps_ctrl c = { kind, arg };

	return dt_ps_mpi_check(ps, dt_ps_send(ps, &c, (int)sizeof c, MPI_BYTE,
					      ps->wk->link[j].server,
					      PS_TAG_CTRL),
			       "MPI_Send (control)", err);
}

/* Checks a received shard message and, when it is newer than what params
 * holds (and params is not NULL), copies it in. An older one - a pull
 * answered before a checkpoint brought something newer - is dropped. */
static enum dt_status
absorb(struct dt_ps *ps, struct ps_link *l, char *m, MPI_Status *status,
       float *params, struct dt_error *err)
{
	struct ps_hdr h;
	int count = 0;

	MPI_Get_count(status, MPI_BYTE, &count);
	memcpy(&h, m, sizeof h);
	if ((size_t)count != msg_bytes(l) || h.version < 0)
		return dt_errorf(err, DT_ERR_MPI,
				 "rank %d: parameter server: rank %d sent a "
				 "shard of %d bytes at version %lld, "
				 "expected %zu bytes", ps->rank, l->server,
				 count, (long long)h.version, msg_bytes(l));
	if (h.version > l->cur && params != NULL) {
		memcpy(params + l->off, msg_floats(m),
		       l->len * sizeof(float));
		l->cur = h.version;
	}
	return DT_OK;
}

/* Asks server j for a version >= need, to arrive in l->pull. */
static enum dt_status
post_pull(struct dt_ps *ps, int j, int64_t need, struct dt_error *err)
{
	struct ps_link *l = &ps->wk->link[j];
	enum dt_status st;

	st = dt_ps_mpi_check(ps, MPI_Irecv(l->pull, (int)msg_bytes(l), MPI_BYTE,
					   l->server, PS_TAG_REPLY, ps->mc,
					   &l->pull_req), "MPI_Irecv (pull)",
			     err);
	if (st == DT_OK)
		st = send_ctrl(ps, j, PS_CTRL_PULL, need, err);
	return st;
}

/* Waits for server j's pull to arrive and takes it. */
static enum dt_status
wait_pull(struct dt_ps *ps, int j, float *params, struct dt_error *err)
{
	struct ps_link *l = &ps->wk->link[j];
	MPI_Status status;
	enum dt_status st;

	st = dt_ps_mpi_check(ps, dt_ps_wait(ps, &l->pull_req, &status),
			     "MPI_Wait (pull)", err);
	if (st == DT_OK)
		st = absorb(ps, l, l->pull, &status, params, err);
	return st;
}

/* Takes server j's pull if it has arrived; does not wait. */
static enum dt_status
poll_pull(struct dt_ps *ps, int j, float *params, struct dt_error *err)
{
	struct ps_link *l = &ps->wk->link[j];
	MPI_Status status;
	int flag = 0;
	enum dt_status st;

	if (l->pull_req == MPI_REQUEST_NULL)
		return DT_OK;
	st = dt_ps_mpi_check(ps, MPI_Test(&l->pull_req, &flag, &status),
			     "MPI_Test (pull)", err);
	if (st == DT_OK && flag)
		st = absorb(ps, l, l->pull, &status, params, err);
	return st;
}

/* Pushes shard j of grads as step `step`, computed on the held version. */
static enum dt_status
push(struct dt_ps *ps, int j, const float *grads, int64_t step,
     struct dt_error *err)
{
	struct ps_link *l = &ps->wk->link[j];
	struct ps_hdr h = { step, l->cur };
	enum dt_status st;

	/* The previous push's buffer: the server keeps a receive posted for
	 * it (its slot is free by the bound), so this does not wait long. */
	st = dt_ps_mpi_check(ps, dt_ps_wait(ps, &l->push_req,
					    MPI_STATUS_IGNORE),
			     "MPI_Wait (push)", err);
	if (st != DT_OK)
		return st;
	memcpy(l->push, &h, sizeof h);
	memcpy(msg_floats(l->push), grads + l->off, l->len * sizeof(float));
	ps->world->bytes_sent += msg_bytes(l);
	return dt_ps_mpi_check(ps, MPI_Isend(l->push, (int)msg_bytes(l),
					     MPI_BYTE, l->server, PS_TAG_PUSH,
					     ps->mc, &l->push_req),
			       "MPI_Isend (push)", err);
}

enum dt_status
dt_ps_step(struct dt_ps *ps, const float *grads, float *params, int64_t step,
	   struct dt_error *err)
{
	struct ps_worker *wk = ps->wk;
	int64_t need = step + 1 - ps->bound;
	enum dt_status st = DT_OK;

	assert(!ps->server && wk != NULL && !wk->done);
	if (step != wk->next_step)
		return dt_errorf(err, DT_ERR_MPI,
				 "rank %d: parameter server: step %lld out of "
				 "sequence, expected step %lld", ps->rank,
				 (long long)step, (long long)wk->next_step);
	if (ps->delay_ms > 0)
		sleep_ms(ps->delay_ms);
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++)
		st = push(ps, j, grads, step, err);
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++)
		st = poll_pull(ps, j, params, err);
	/* The bound: the next step must compute on version >= need. */
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++) {
		struct ps_link *l = &wk->link[j];

		while (st == DT_OK && l->cur < need) {
			if (l->pull_req == MPI_REQUEST_NULL)
				st = post_pull(ps, j, need, err);
			if (st == DT_OK)
				st = wait_pull(ps, j, params, err);
		}
	}
	/* Ask for the next version now, so it is likely here at the next
	 * step (in sync this is the one the next step waits for). */
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++)
		if (wk->link[j].pull_req == MPI_REQUEST_NULL)
			st = post_pull(ps, j, wk->link[j].cur + 1, err);
	if (st == DT_OK)
		wk->next_step = step + 1;
	return st;
}

/* Waits for every push in flight. */
static enum dt_status
flush_pushes(struct dt_ps *ps, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	for (int j = 0; j < ps->n_servers && st == DT_OK; j++)
		st = dt_ps_mpi_check(ps, dt_ps_wait(ps,
						    &ps->wk->link[j].push_req,
						    MPI_STATUS_IGNORE),
				     "MPI_Wait (push)", err);
	return st;
}

/* Receives server j's shard state message (tag PS_TAG_STATE) into the free
 * push buffer and from there into params (if not NULL); *version gets its
 * version. */
static enum dt_status
recv_state(struct dt_ps *ps, int j, float *params, int64_t *version,
	   struct dt_error *err)
{
	struct ps_link *l = &ps->wk->link[j];
	struct ps_hdr h;
	MPI_Status status;
	int count = 0;
	enum dt_status st;

	st = dt_ps_mpi_check(ps, dt_ps_recv(ps, l->push, (int)msg_bytes(l),
					    MPI_BYTE, l->server, PS_TAG_STATE,
					    &status), "MPI_Recv (state)", err);
	if (st != DT_OK)
		return st;
	MPI_Get_count(&status, MPI_BYTE, &count);
	memcpy(&h, l->push, sizeof h);
	if ((size_t)count != msg_bytes(l) || h.version < 0)
		return dt_errorf(err, DT_ERR_MPI,
				 "rank %d: parameter server: rank %d sent a "
				 "state of %d bytes at version %lld, "
				 "expected %zu bytes", ps->rank, l->server,
				 count, (long long)h.version, msg_bytes(l));
	if (params != NULL)
		memcpy(params + l->off, msg_floats(l->push),
		       l->len * sizeof(float));
	l->cur = h.version;
	*version = h.version;
	return DT_OK;
}

enum dt_status
dt_ps_done(struct dt_ps *ps, float *params, struct dt_error *err)
{
	struct ps_worker *wk = ps->wk;
	int len = dt_ps_stats_len(ps);
	enum dt_status st;

	assert(!ps->server && wk != NULL && !wk->done);
	st = flush_pushes(ps, err);
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++)
		st = send_ctrl(ps, j, PS_CTRL_DONE, wk->next_step, err);
	/* A server answers a done worker's pull at once. */
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++)
		if (wk->link[j].pull_req != MPI_REQUEST_NULL)
			st = wait_pull(ps, j, params, err);
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++) {
		int64_t version;

		st = recv_state(ps, j, params, &version, err);
		if (st == DT_OK)
			st = dt_ps_mpi_check(ps, dt_ps_recv(ps, wk->final +
					(size_t)j * (size_t)len, len,
					MPI_INT64_T, wk->link[j].server,
					PS_TAG_STATS, MPI_STATUS_IGNORE),
					     "MPI_Recv (final stats)", err);
	}
	if (st == DT_OK)
		wk->done = true;
	return st;
}

enum dt_status
dt_ps_gather_state(struct dt_ps *ps, float *params, float **optim_bufs,
		   int64_t *optim_steps, struct dt_error *err)
{
	struct ps_worker *wk = ps->wk;
	enum dt_status st;

	assert(!ps->server && wk != NULL && !wk->done);
	st = flush_pushes(ps, err);
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++)
		st = send_ctrl(ps, j, PS_CTRL_CKPT, wk->next_step, err);
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++) {
		struct ps_link *l = &wk->link[j];
		int64_t version;

		st = recv_state(ps, j, params, &version, err);
		if (st == DT_OK && version != wk->next_step)
			st = dt_errorf(err, DT_ERR_MPI,
				       "rank %d: parameter server: rank %d "
				       "sent the checkpoint of step %lld for "
				       "step %lld", ps->rank, l->server,
				       (long long)version,
				       (long long)wk->next_step);
		for (int b = 0; b < ps->n_bufs && st == DT_OK && ps->rank == 0;
		     b++)
			st = dt_ps_mpi_check(ps, dt_ps_recv(ps,
					optim_bufs[b] + l->off, (int)l->len,
					MPI_FLOAT, l->server, PS_TAG_OPT,
							    MPI_STATUS_IGNORE),
					     "MPI_Recv (optimizer state)", err);
	}
	if (st == DT_OK && ps->rank == 0 && optim_steps != NULL)
		*optim_steps = wk->next_step;
	return st;
}

enum dt_status
dt_ps_worker_scatter(struct dt_ps *ps, float *params, float *const *optim_bufs,
		     int64_t optim_steps, struct dt_error *err)
{
	struct ps_worker *wk = ps->wk;
	enum dt_status st = DT_OK;

	assert(wk->next_step == 0 && wk->link[0].push_req == MPI_REQUEST_NULL);
	if (ps->rank == 0) {
		if (optim_steps < 0)
			return dt_errorf(err, DT_ERR_MPI,
					 "rank 0: parameter server: cannot "
					 "resume at step %lld",
					 (long long)optim_steps);
		for (int j = 0; j < ps->n_servers && st == DT_OK; j++) {
			struct ps_link *l = &wk->link[j];
			struct ps_hdr h = { optim_steps, optim_steps };

			memcpy(l->push, &h, sizeof h);
			memcpy(msg_floats(l->push), params + l->off,
			       l->len * sizeof(float));
			st = dt_ps_mpi_check(ps, dt_ps_send(ps, l->push,
							    (int)msg_bytes(l),
							    MPI_BYTE, l->server,
							    PS_TAG_STATE),
					     "MPI_Send (resumed state)", err);
			for (int b = 0; b < ps->n_bufs && st == DT_OK; b++)
				st = dt_ps_mpi_check(ps, dt_ps_send(ps,
						optim_bufs[b] + l->off,
						(int)l->len, MPI_FLOAT,
						l->server, PS_TAG_OPT),
						"MPI_Send (resumed optimizer "
						"state)", err);
		}
	}
	/* The other workers learn the step and the parameters from worker 0
	 * (had its sends failed, they wait here until the job is aborted). */
	if (st == DT_OK)
		st = dt_comm_bcast(ps->workers, &optim_steps,
				   sizeof optim_steps, 0, err);
	if (st == DT_OK)
		st = dt_comm_bcast(ps->workers, params,
				   ps->n * sizeof(float), 0, err);
	if (st != DT_OK)
		return st;
	for (int j = 0; j < ps->n_servers; j++)
		wk->link[j].cur = optim_steps;
	wk->next_step = optim_steps;
	return DT_OK;
}
