/* SPDX-License-Identifier: MIT */
/* ps.c - parameter-server data parallelism: layout, roles, set-up, the
 * statistics request and the dispatch of resume to either role. The server
 * loop is in ps_server.c, the worker's steps in ps_worker.c; ps.h explains
 * the protocol (Li et al., OSDI 2014; Ho et al., NIPS 2013). */
#include "comm/ps.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ps_priv.h"
#include "comm/watch.h"
#include "util/alloc.h"

void
dt_ps_shard(size_t n_params, int n_servers, int j, size_t *off, size_t *len)
{
	size_t s = (size_t)n_servers, q = n_params / s, r = n_params % s;
	size_t u = (size_t)j;

	assert(n_servers >= 1 && j >= 0 && j < n_servers);
	*off = u * q + (u < r ? u : r);
	*len = q + (u < r ? 1 : 0);
}

enum dt_status
dt_ps_check(int world_size, int n_servers, size_t n_params,
	    struct dt_error *err)
{
	size_t off, len;

	if (n_servers < 1)
		return dt_errorf(err, DT_ERR_PLAN,
				 "parameter server: parallel.servers must be "
				 ">= 1, found %d", n_servers);
	if (n_servers >= world_size)
		return dt_errorf(err, DT_ERR_PLAN,
				 "parameter server: %d server rank%s of a "
				 "world of %d leave%s no worker; run on at "
				 "least %d ranks or lower parallel.servers",
				 n_servers, n_servers == 1 ? "" : "s",
				 world_size, n_servers == 1 ? "s" : "",
				 n_servers + 1);
	if ((size_t)n_servers > n_params)
		return dt_errorf(err, DT_ERR_PLAN,
				 "parameter server: %d servers for %zu "
				 "parameter elements leave a server without "
				 "a shard; set parallel.servers to at most %zu",
				 n_servers, n_params, n_params);
	dt_ps_shard(n_params, n_servers, 0, &off, &len);
	if (len > ((size_t)INT_MAX - PS_HDR_BYTES) / sizeof(float))
		return dt_errorf(err, DT_ERR_PLAN,
				 "parameter server: a shard of %zu floats "
				 "does not fit one MPI message (2 GiB); use "
				 "at least %zu servers", len,
				 n_params / (((size_t)INT_MAX - PS_HDR_BYTES) /
					     sizeof(float)) + 1);
	return DT_OK;
}

uint64_t
dt_ps_server_bytes(size_t n_params, int n_servers, int n_workers,
		   int64_t max_staleness, int n_optim_bufs)
{
	size_t off, len;
	uint64_t shard, msg, w = (uint64_t)n_workers;

	dt_ps_shard(n_params, n_servers, 0, &off, &len);
	shard = (uint64_t)len * sizeof(float);
	msg = PS_HDR_BYTES + shard;
	/* params + state + sum, then the slots and the reply copies */
	return shard * (2 + (uint64_t)n_optim_bufs) +
	       msg * w * ((uint64_t)max_staleness + 1) + msg * w;
}

uint64_t
dt_ps_server_step_bytes(size_t n_params, int n_servers, int n_workers)
{
	size_t off, len;

	dt_ps_shard(n_params, n_servers, 0, &off, &len);
	return 2 * (uint64_t)n_workers *
	       (PS_HDR_BYTES + (uint64_t)len * sizeof(float));
}

int
dt_ps_stats_len(const struct dt_ps *ps)
{
	return PS_STAT_FIELDS + ps->n_hist;
}

int
dt_ps_n_servers(const struct dt_ps *ps)
{
	return ps->n_servers;
}

int
dt_ps_server_rank(const struct dt_ps *ps, int j)
{
	return ps->n_workers + j;
}

enum dt_status
dt_ps_mpi_check(const struct dt_ps *ps, int rc, const char *call,
		struct dt_error *err)
{
	return dt_comm_mpi_check(ps->rank, rc, call, err);
}

int
dt_ps_send(const struct dt_ps *ps, const void *buf, int count,
	   MPI_Datatype type, int dest, int tag)
{
	int rc;

	dt_watch_enter(ps->world->watch, "MPI_Send");
	rc = MPI_Send(buf, count, type, dest, tag, ps->mc);
	dt_watch_leave(ps->world->watch);
	return rc;
}

int
dt_ps_recv(const struct dt_ps *ps, void *buf, int count, MPI_Datatype type,
	   int src, int tag, MPI_Status *status)
{
	int rc;

	dt_watch_enter(ps->world->watch, "MPI_Recv");
	rc = MPI_Recv(buf, count, type, src, tag, ps->mc, status);
	dt_watch_leave(ps->world->watch);
	return rc;
}

int
dt_ps_wait(const struct dt_ps *ps, MPI_Request *req, MPI_Status *status)
{
	int rc;

	dt_watch_enter(ps->world->watch, "MPI_Wait");
	rc = MPI_Wait(req, status);
	dt_watch_leave(ps->world->watch);
	return rc;
}

int
dt_ps_waitany(const struct dt_ps *ps, int n, MPI_Request *reqs, int *idx,
	      MPI_Status *status)
{
	int rc;

	dt_watch_enter(ps->world->watch, "MPI_Waitany");
	rc = MPI_Waitany(n, reqs, idx, status);
	dt_watch_leave(ps->world->watch);
	return rc;
}

/* Reads a whole decimal number in [lo, hi] from environment variable name;
 * DT_ERR_USAGE otherwise. */
static enum dt_status
env_long(const char *name, const char *text, long lo, long hi, long *out,
	 struct dt_error *err)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
		return dt_errorf(err, DT_ERR_USAGE,
				 "%s: expected a whole number from %ld to "
				 "%ld, found \"%s\"", name, lo, hi, text);
	*out = v;
	return DT_OK;
}

/* The slow-worker test hook (ps.h): sets ps->delay_ms on the chosen rank. */
static enum dt_status
read_delay_hook(struct dt_ps *ps, struct dt_error *err)
{
	const char *ms = getenv("DTRAIN_TEST_DELAY_MS");
	const char *rank = getenv("DTRAIN_TEST_DELAY_RANK");
	long v_ms, v_rank;
	enum dt_status st;

	if (ms == NULL && rank == NULL)
		return DT_OK;
	if (ms == NULL || rank == NULL)
		return dt_errorf(err, DT_ERR_USAGE,
				 "DTRAIN_TEST_DELAY_MS and "
				 "DTRAIN_TEST_DELAY_RANK go together; set "
				 "both or neither");
	st = env_long("DTRAIN_TEST_DELAY_MS", ms, 0, 600000, &v_ms, err);
	if (st == DT_OK)
		st = env_long("DTRAIN_TEST_DELAY_RANK", rank, 0,
			      ps->n_workers - 1, &v_rank, err);
	if (st != DT_OK)
		return st;
	if (v_rank == ps->rank)
		ps->delay_ms = v_ms;
	return DT_OK;
}

enum dt_status
dt_ps_new(struct dt_comm *world, const struct dt_ps_cfg *cfg,
	  struct dt_ps **out, struct dt_error *err)
{
	struct dt_ps *ps;
	MPI_Comm handle = dt_comm_mpi_handle(world);
	enum dt_status st;
	struct dt_optim *probe;
	int rc;

	st = dt_ps_check(dt_comm_size(world), cfg->n_servers, cfg->n_params,
			 err);
	if (st != DT_OK)
		return st;
	if (handle == MPI_COMM_NULL)
		return dt_errorf(err, DT_ERR_MPI,
				 "parameter server: needs an MPI "
				 "communicator");
	if (cfg->async && cfg->max_staleness < 0)
		return dt_errorf(err, DT_ERR_PLAN,
				 "parameter server: max_staleness must be "
				 ">= 0, found %lld",
				 (long long)cfg->max_staleness);
	if (cfg->async && cfg->max_staleness > INT_MAX / 2)
		return dt_errorf(err, DT_ERR_PLAN,
				 "parameter server: max_staleness %lld is "
				 "more than anyone can buffer",
				 (long long)cfg->max_staleness);

	ps = dt_xcalloc(1, sizeof *ps);
	ps->world = world;
	ps->mc = MPI_COMM_NULL;
	ps->rank = dt_comm_rank(world);
	ps->size = dt_comm_size(world);
	ps->n_servers = cfg->n_servers;
	ps->n_workers = ps->size - cfg->n_servers;
	ps->server = ps->rank >= ps->n_workers;
	ps->bound = cfg->async ? cfg->max_staleness : 0;
	ps->n = cfg->n_params;
	ps->n_hist = (int)ps->bound + 2;
	ps->hist = dt_xcalloc((size_t)ps->n_hist, sizeof *ps->hist);
	probe = dt_optim_new(cfg->job, 1);
	dt_optim_state(probe, &ps->n_bufs);
	dt_optim_free(probe);

	/* The collectives first, so that no rank skips them on a local
	 * error and leaves the others waiting. */
	rc = MPI_Comm_dup(handle, &ps->mc);
	st = dt_ps_mpi_check(ps, rc, "MPI_Comm_dup", err);
	if (st == DT_OK)
		st = dt_comm_split(world,
				   ps->server ? DT_COMM_SPLIT_NONE : 0,
				   ps->rank, &ps->workers, err);
	if (st == DT_OK)
		st = dt_ps_mpi_check(ps, MPI_Comm_set_errhandler(
				ps->mc, MPI_ERRORS_RETURN),
				"MPI_Comm_set_errhandler", err);
	if (st == DT_OK)
		st = read_delay_hook(ps, err);
	if (st != DT_OK) {
		dt_ps_free(ps);
		return st;
	}
	if (ps->server)
		dt_ps_server_init(ps, cfg);
	else
		dt_ps_worker_init(ps);
	*out = ps;
	return DT_OK;
}

void
dt_ps_free(struct dt_ps *ps)
{
	if (ps == NULL)
		return;
	if (ps->srv != NULL)
		dt_ps_server_fini(ps);
	if (ps->wk != NULL)
		dt_ps_worker_fini(ps);
	dt_comm_free(ps->workers);
	if (ps->mc != MPI_COMM_NULL)
		MPI_Comm_free(&ps->mc);
	free(ps->hist);
	free(ps);
}

bool
dt_ps_is_server(const struct dt_ps *ps)
{
	return ps->server;
}

struct dt_comm *
dt_ps_workers(const struct dt_ps *ps)
{
	return ps->workers;
}

int
dt_ps_n_workers(const struct dt_ps *ps)
{
	return ps->n_workers;
}

/* Folds the servers' stats messages (S rows of dt_ps_stats_len) into *s. */
static void
fold_stats(struct dt_ps *ps, const int64_t *rows, struct dt_ps_stats *s)
{
	int len = dt_ps_stats_len(ps);
	int64_t applied = 0, sum = 0, max = 0, version = INT64_MAX;
	uint64_t busiest = 0;
	int64_t busiest_updates = 0;

	memset(ps->hist, 0, (size_t)ps->n_hist * sizeof *ps->hist);
	for (int j = 0; j < ps->n_servers; j++) {
		const int64_t *r = rows + (size_t)j * (size_t)len;

		applied += r[PS_STAT_APPLIED];
		sum += r[PS_STAT_SUM];
		if (r[PS_STAT_MAX] > max)
			max = r[PS_STAT_MAX];
		if (r[PS_STAT_VERSION] < version)
			version = r[PS_STAT_VERSION];
		if ((uint64_t)r[PS_STAT_BYTES] >= busiest) {
			busiest = (uint64_t)r[PS_STAT_BYTES];
			busiest_updates = r[PS_STAT_UPDATES];
		}
		for (int i = 0; i < ps->n_hist; i++)
			ps->hist[i] += r[PS_STAT_FIELDS + i];
	}
	s->applied = applied;
	s->staleness_mean = applied > 0 ? (double)sum / (double)applied : 0;
	s->staleness_max = max;
	s->version = version;
	s->n_hist = ps->n_hist;
	s->hist = ps->hist;
	s->server_bytes_max = busiest;
	s->server_bytes_per_step = busiest_updates > 0 ?
				   (double)busiest / (double)busiest_updates :
				   0;
}

enum dt_status
dt_ps_stats(struct dt_ps *ps, struct dt_ps_stats *s, struct dt_error *err)
{
	int len = dt_ps_stats_len(ps);
	size_t all = (size_t)ps->n_servers * (size_t)len;
	int64_t *rows;
	enum dt_status st = DT_OK;

	assert(!ps->server && ps->rank == 0);
	if (ps->wk->done) {
		/* The servers are gone; the final numbers stand, with the
		 * window emptied by each read. */
		fold_stats(ps, ps->wk->final, s);
		for (int j = 0; j < ps->n_servers; j++) {
			int64_t *r = ps->wk->final + (size_t)j * (size_t)len;

			r[PS_STAT_APPLIED] = 0;
			r[PS_STAT_SUM] = 0;
			r[PS_STAT_MAX] = 0;
		}
		return DT_OK;
	}
	rows = dt_xmalloc(all, sizeof *rows);
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++) {
		struct ps_ctrl c = { PS_CTRL_STATS, 0 };

		st = dt_ps_mpi_check(ps, dt_ps_send(ps, &c, (int)sizeof c,
						    MPI_BYTE,
						    dt_ps_server_rank(ps, j),
						    PS_TAG_CTRL),
				     "MPI_Send (stats request)", err);
	}
	for (int j = 0; j < ps->n_servers && st == DT_OK; j++)
		st = dt_ps_mpi_check(ps, dt_ps_recv(ps, rows +
				(size_t)j * (size_t)len, len, MPI_INT64_T,
				dt_ps_server_rank(ps, j), PS_TAG_STATS,
				MPI_STATUS_IGNORE),
				     "MPI_Recv (stats)", err);
	if (st == DT_OK)
		fold_stats(ps, rows, s);
	free(rows);
	return st;
}

int
dt_ps_optim_bufs(const struct dt_ps *ps)
{
	return ps->n_bufs;
}

enum dt_status
dt_ps_scatter_state(struct dt_ps *ps, float *params,
		    float *const *optim_bufs, int64_t optim_steps,
		    struct dt_error *err)
{
	if (ps->server)
		return dt_ps_server_scatter(ps, err);
	return dt_ps_worker_scatter(ps, params, optim_bufs, optim_steps, err);
}
