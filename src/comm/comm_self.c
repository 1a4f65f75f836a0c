/* SPDX-License-Identifier: MIT */
/* comm_self.c - a world of one rank without MPI, for unit tests. */
#include "comm/comm.h"
#include "comm/comm_priv.h"

#include <stdlib.h>

#include "util/alloc.h"

static enum dt_status
self_allreduce(struct dt_comm *c, void *buf, size_t n, int type, int op,
	       struct dt_error *err)
{
	(void)c; (void)buf; (void)n; (void)type; (void)op; (void)err;
	return DT_OK;
}

static enum dt_status
self_bcast(struct dt_comm *c, void *buf, size_t bytes, int root,
	   struct dt_error *err)
{
	(void)c; (void)buf; (void)bytes; (void)err;
	if (root != 0)
		return dt_errorf(err, DT_ERR_MPI, "bcast: root %d of 1 rank",
				 root);
	return DT_OK;
}

static enum dt_status
self_barrier(struct dt_comm *c, struct dt_error *err)
{
	(void)c; (void)err;
	return DT_OK;
}

static void
self_abort(struct dt_comm *c, int code)
{
	(void)c;
	exit(code);
}

static void
self_free(struct dt_comm *c)
{
	free(c);
}

static enum dt_status
self_split(struct dt_comm *c, int color, int key, struct dt_comm **out,
	   struct dt_error *err)
{
	(void)c; (void)key; (void)err;
	*out = color == DT_COMM_SPLIT_NONE ? NULL : dt_comm_self_new();
	return DT_OK;
}

/* Grouped as struct dt_comm_ops is (comm_priv.h), as mpi_ops. */
static const struct dt_comm_ops self_ops = {
	.allreduce = self_allreduce, .bcast = self_bcast,
	.barrier = self_barrier, .node_barrier = self_barrier,
	.abort = self_abort, .free = self_free, .split = self_split,
	/* One rank: the buffer is its own sum already and nothing is ever
	 * pending, as comm.c takes a NULL iallreduce, coll_test and
	 * coll_wait to mean. */
};

struct dt_comm *
dt_comm_self_new(void)
{
	struct dt_comm *c = dt_xcalloc(1, sizeof *c);

	c->ops = &self_ops;
	c->rank = 0;
	c->size = 1;
	c->local_size = 1;
	return c;
}
