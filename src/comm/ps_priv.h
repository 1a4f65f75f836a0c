/* SPDX-License-Identifier: MIT */
/* ps_priv.h - private to ps.c, ps_server.c and ps_worker.c: the state of a
 * parameter-server rank and the wire format between workers and servers.
 *
 * Messages (on a duplicate of the world communicator, so no other traffic
 * can match them). A "shard message" is a struct ps_hdr followed by the
 * shard's floats, sent as MPI_BYTE:
 *   PS_TAG_PUSH     worker -> server  shard message {step k, version b}:
 *                                     the worker's step-k gradient,
 *                                     computed on version b
 *   PS_TAG_CTRL     worker -> server  struct ps_ctrl (PULL, DONE, CKPT,
 *                                     STATS)
 *   PS_TAG_REPLY    server -> worker  shard message {v, v}: parameters of
 *                                     version v, answering a PULL
 *   PS_TAG_STATE    both ways         shard message {v, v}: a checkpoint's
 *                                     parameters (CKPT, resume, final)
 *   PS_TAG_OPT      both ways         n floats of one optimizer state
 *                                     buffer's shard (MPI_FLOAT)
 *   PS_TAG_STATS    server -> worker  int64 array (enum ps_stat_field)
 * Pushes and pulls are non-blocking on both sides; checkpoint, final and
 * stats messages are blocking sends, each made only once its receiver is
 * known to be (or about to be) in the matching receive: every worker
 * receives from servers 0, 1, ... in order and every server sends to
 * workers 0, 1, ... in order, so no cycle of waits can form. */
#ifndef DT_COMM_PS_PRIV_H
#define DT_COMM_PS_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "comm/mpi_priv.h"
#include "comm/ps.h"
#include "optim/optim.h"

enum {
	PS_TAG_PUSH = 1,
	PS_TAG_CTRL,
	PS_TAG_REPLY,
	PS_TAG_STATE,
	PS_TAG_OPT,
	PS_TAG_STATS,
};

/* What a control message asks for; arg as noted. */
enum ps_ctrl_kind {
	PS_CTRL_PULL = 1,	/* arg: the oldest version the worker accepts */
	PS_CTRL_DONE,		/* arg: steps the worker pushed in all */
	PS_CTRL_CKPT,		/* arg: the step (= updates to wait for) */
	PS_CTRL_STATS,		/* worker 0 only; arg unused */
};

struct ps_hdr {
	int64_t step;		/* push: the step; otherwise the version */
	int64_t version;	/* the version (push: computed on) */
};

struct ps_ctrl {
	int64_t kind;		/* enum ps_ctrl_kind */
	int64_t arg;
};

#define PS_HDR_BYTES ((size_t)sizeof(struct ps_hdr))

/* A stats message: these fields, then the n_hist histogram counts. */
enum ps_stat_field {
	PS_STAT_APPLIED,	/* window: shard gradients applied */
	PS_STAT_SUM,		/* window: their staleness, summed */
	PS_STAT_MAX,		/* window: the largest staleness */
	PS_STAT_VERSION,	/* updates applied */
	PS_STAT_UPDATES,	/* updates applied by this run (for per step) */
	PS_STAT_BYTES,		/* pushes received + replies sent, bytes */
	PS_STAT_FIELDS
};

/* A server's state. Buffers hold one shard of len floats; "messages" have
 * a ps_hdr in front. */
struct ps_server {
	size_t off, len;	/* the shard */
	float *params;		/* (len) the master copy */
	struct dt_optim *optim;	/* over the shard */
	int64_t version;	/* updates applied */
	int64_t start;		/* version when serving began */
	bool have_state;	/* set by dt_ps_scatter_state */
	float *acc;		/* (len) one step's gradient sum */
	int n_slots;		/* bound + 1 receive slots per worker */
	char **slot;		/* [W * n_slots] push messages */
	bool *full;		/* [W * n_slots] received, not yet applied */
	int64_t *next_push;	/* [W] the step each worker pushes next */
	MPI_Request *req;	/* [W + 1] posted receives: each worker's next
				 * push, then the control message */
	struct ps_ctrl ctrl;	/* the control receive's buffer */
	char **reply;		/* [W] reply messages (one pull per worker) */
	MPI_Request *reply_req;	/* [W] their sends */
	int64_t *pull_need;	/* [W] a waiting pull's oldest version, or -1 */
	bool *done;		/* [W] said DONE */
	int64_t *done_steps;	/* [W] steps it said it pushed */
	int n_done;
	int64_t *ckpt_step;	/* [W] a waiting checkpoint request, or -1 */
	int n_ckpt;
	int64_t win[PS_STAT_FIELDS];	/* APPLIED, SUM, MAX used */
	uint64_t bytes;		/* pushes in + replies out */
};

/* A worker's link to one server. */
struct ps_link {
	int server;		/* world rank */
	size_t off, len;	/* its shard */
	char *push;		/* push message (hdr + len floats) */
	MPI_Request push_req;
	char *pull;		/* reply message being received */
	MPI_Request pull_req;	/* MPI_REQUEST_NULL: no pull outstanding */
	int64_t cur;		/* version of this shard in the caller's
				 * params */
};

struct ps_worker {
	struct ps_link *link;	/* [S] */
	int64_t next_step;
	bool done;
	int64_t *final;		/* [S * stats length] after dt_ps_done */
};

struct dt_ps {
	struct dt_comm *world;	/* not owned */
	struct dt_comm *workers;	/* owned; NULL on a server */
	MPI_Comm mc;		/* owned duplicate of world's */
	int rank, size;
	int n_servers, n_workers;
	bool server;
	int64_t bound;		/* s: 0 in sync */
	size_t n;		/* parameters */
	int n_bufs;		/* optimizer state buffers */
	long delay_ms;		/* test hook: sleep before each push */
	int n_hist;		/* bound + 2 */
	int64_t *hist;		/* [n_hist] server: its histogram; worker 0:
				 * the sum over servers (dt_ps_stats) */
	struct ps_server *srv;	/* on a server */
	struct ps_worker *wk;	/* on a worker */
};

/* Number of int64s in a stats message. */
int dt_ps_stats_len(const struct dt_ps *ps);

/* The world rank of server j. */
int dt_ps_server_rank(const struct dt_ps *ps, int j);

/* The blocking calls of this traffic, on ps->mc, as MPI_Send, MPI_Recv,
 * MPI_Wait and MPI_Waitany take them (the same return codes), each marked
 * for the watchdog of parallel.timeout_s (comm/watch.h) under that MPI
 * name: a server waits in dt_ps_waitany for the workers' next message and a
 * worker in dt_ps_wait for a pull, so a peer that stopped or was cut off is
 * named from either side. Point-to-point traffic that the communicator's
 * own calls do not see would otherwise hang the job unnoticed. */
int dt_ps_send(const struct dt_ps *ps, const void *buf, int count,
	       MPI_Datatype type, int dest, int tag);
int dt_ps_recv(const struct dt_ps *ps, void *buf, int count, MPI_Datatype type,
	       int src, int tag, MPI_Status *status);
int dt_ps_wait(const struct dt_ps *ps, MPI_Request *req, MPI_Status *status);
int dt_ps_waitany(const struct dt_ps *ps, int n, MPI_Request *reqs, int *idx,
		  MPI_Status *status);

/* dt_comm_mpi_check with this rank. */
enum dt_status dt_ps_mpi_check(const struct dt_ps *ps, int rc,
			       const char *call, struct dt_error *err);

/* Server side of dt_ps_scatter_state. */
enum dt_status dt_ps_server_scatter(struct dt_ps *ps, struct dt_error *err);

/* Worker side of dt_ps_scatter_state. */
enum dt_status dt_ps_worker_scatter(struct dt_ps *ps, float *params,
				    float *const *optim_bufs,
				    int64_t optim_steps, struct dt_error *err);

/* Allocation and release of the role's state (ps_server.c, ps_worker.c). */
void dt_ps_server_init(struct dt_ps *ps, const struct dt_ps_cfg *cfg);
void dt_ps_server_fini(struct dt_ps *ps);
void dt_ps_worker_init(struct dt_ps *ps);
void dt_ps_worker_fini(struct dt_ps *ps);

#endif
