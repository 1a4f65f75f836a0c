/* SPDX-License-Identifier: MIT */
/* comm_priv.h - the operations table behind struct dt_comm (comm.h):
 * what an implementation (comm_mpi.c, comm_self.c, hier.c) provides and
 * comm.c dispatches through. Internal to comm/. */
#ifndef DT_COMM_COMM_PRIV_H
#define DT_COMM_COMM_PRIV_H

#include "comm/comm.h"

/* The vtable behind struct dt_comm (comm.c dispatches through it). */
struct dt_comm_ops {
	enum dt_status (*allreduce)(struct dt_comm *c, void *buf, size_t n,
				    int type, int op, struct dt_error *err);
	enum dt_status (*bcast)(struct dt_comm *c, void *buf, size_t bytes,
				int root, struct dt_error *err);
	enum dt_status (*barrier)(struct dt_comm *c, struct dt_error *err);
	enum dt_status (*node_barrier)(struct dt_comm *c,
				       struct dt_error *err);
	void (*abort)(struct dt_comm *c, int code);
	void (*free)(struct dt_comm *c);
	enum dt_status (*split)(struct dt_comm *c, int color, int key,
				struct dt_comm **out, struct dt_error *err);
	/* Optional (NULL: no other rank to talk to). */
	enum dt_status (*isend)(struct dt_comm *c, const float *buf, int n,
				int dest, int tag, int *req,
				struct dt_error *err);
	enum dt_status (*recv)(struct dt_comm *c, float *buf, int n, int src,
			       int tag, struct dt_error *err);
	enum dt_status (*wait)(struct dt_comm *c, int req, int all,
			       struct dt_error *err);
	/* Optional (NULL: a world of one, where a sum is the identity). */
	enum dt_status (*iallreduce)(struct dt_comm *c, void *buf, size_t n,
				     int type, struct dt_error *err);
	enum dt_status (*coll_test)(struct dt_comm *c, int *all_done,
				    struct dt_error *err);
	enum dt_status (*coll_wait)(struct dt_comm *c, struct dt_error *err);
	/* Optional (NULL: coll_wait, which waits for all of them). */
	enum dt_status (*coll_wait_first)(struct dt_comm *c, int n_sums,
					  struct dt_error *err);
	/* Optional (NULL: the all-reduce, whose sum holds every part;
	 * comm.c): the reduce-scatter of comm.h over the cut of
	 * dt_comm_part, of floats or doubles (type), blocking (start 0)
	 * or started (1) as one of the pending sums. Called with more than
	 * one rank only; bytes are counted by comm.c. */
	enum dt_status (*reduce_scatter)(struct dt_comm *c, void *buf,
					 size_t n, int type, int start,
					 struct dt_error *err);
	/* Optional (NULL: a broadcast of each rank's part from it; comm.c):
	 * the all-gather of floats of comm.h, blocking or started, as
	 * reduce_scatter. */
	enum dt_status (*allgather)(struct dt_comm *c, float *buf, size_t n,
				    int start, struct dt_error *err);
	/* Optional (NULL: the double all-reduce, then the rounding): the
	 * rounded double sum started, the reduce-scatter of doubles, the
	 * rounding and the all-gather chained in one pending sum. Where it
	 * is set, comm.c's blocking rounded sum is reduce_scatter, the
	 * rounding and allgather. More than one rank; comm.c counts the
	 * bytes. */
	enum dt_status (*isum_round)(struct dt_comm *c, double *acc,
				     float *out, size_t n,
				     struct dt_error *err);
	/* Optional (NULL: the blocking bcast; comm.c): the broadcast
	 * started as one of the pending sums (comm.h, dt_comm_ibcast).
	 * More than one rank; counts the root's bytes itself. */
	enum dt_status (*ibcast)(struct dt_comm *c, void *buf, size_t bytes,
				 int root, struct dt_error *err);
};

enum { DT_COMM_F32, DT_COMM_F64, DT_COMM_INT, DT_COMM_BF16 };
enum { DT_COMM_SUM, DT_COMM_MAX };

/* The start of chunk i (0 <= i <= p) of n values cut into p:
 * floor(n i / p), without overflow. Chunk i is [lo(i), lo(i + 1)); the
 * ring of comm_mpi.c and dt_comm_part share it. */
size_t dt_comm_chunk_lo(size_t n, int p, int i);

#endif
