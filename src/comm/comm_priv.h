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
	/* Optional (NULL: the blocking double all-reduce, then the
	 * rounding): the rounded double sum, blocking and started; called
	 * with more than one rank only. */
	enum dt_status (*sum_round)(struct dt_comm *c, double *acc,
				    float *out, size_t n,
				    struct dt_error *err);
	enum dt_status (*isum_round)(struct dt_comm *c, double *acc,
				     float *out, size_t n,
				     struct dt_error *err);
};

enum { DT_COMM_F32, DT_COMM_F64, DT_COMM_INT, DT_COMM_BF16 };
enum { DT_COMM_SUM, DT_COMM_MAX };

#endif
