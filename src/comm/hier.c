/* SPDX-License-Identifier: MIT */
/* hier.c - the hierarchical (per-host) sum behind a dt_comm (hier.h).
 *
 * Across hosts the link is the slow part, and a flat all-reduce over H
 * hosts of L ranks each runs its ring (or its halving and doubling)
 * through every rank, so a host's link carries the data of all its
 * ranks' hops that leave the host. Summing the node's ranks first over
 * shared memory puts each byte of the gradient on a host's link once per
 * direction: 2(H-1)/H x N bytes in all (ring all-reduce volume, Patarasuk
 * and Yuan, JPDC 69(2), 2009). Two forms of the two-level scheme (the one
 * Open MPI's coll/han automates: Luo et al., "HAN: a hierarchical
 * autotuned collective communication framework", IEEE Cluster 2020):
 *   scatter  reduce-scatter over the node, all-reduce of each part among
 *            the node ranks that hold it on every host (L streams of N/L
 *            per host), all-gather over the node;
 *   reduce   reduce to the node's first rank, all-reduce among the first
 *            ranks (one stream of N per host), broadcast over the node.
 * The scatter form moves fewer bytes inside the node and spreads the
 * network part over the node's ranks; it needs every host to hold the
 * same number of ranks, and the reduce form serves the others. On 2
 * simulated hosts x 2 ranks the scatter form was faster than the reduce
 * form at 1 and 10 Gbit/s, f32 and f64 (bench/README), so it is the
 * default.
 *
 * The element order of the sum is fixed by the hosts and ranks (the
 * node's phase, then the all-reduce across hosts), so it is the same from
 * run to run, but it is not the flat all-reduce's order. */
#include "comm/hier.h"

#include "comm/comm_priv.h"
#include "comm/mpi_priv.h"

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/alloc.h"

struct hier_impl {
	struct dt_comm *flat;	/* borrowed: every call but the sums */
	MPI_Comm node;		/* flat's ranks on this host */
	MPI_Comm leaders;	/* the first rank of each host (MPI_COMM_NULL
				 * on the others) */
	MPI_Comm peers;		/* the ranks of this node rank on every host
				 * (made by every rank while the form is
				 * not yet known; the scatter form's) */
	int hosts, host;	/* hosts among flat's ranks; this one's index */
	enum dt_hier_form form;
	int *counts, *displs;	/* (local_size) the node's parts of a chunk */
	char *part;		/* (part_cap bytes) this rank's part */
	size_t part_cap;
};

static struct hier_impl *
impl_of(const struct dt_comm *c)
{
	return c->impl;
}

static struct dt_comm *
flat_of(const struct dt_comm *c)
{
	return impl_of(c)->flat;
}

static enum dt_status
check(struct dt_comm *c, int rc, const char *call, struct dt_error *err)
{
	return dt_comm_mpi_check(c->rank, rc, call, err);
}

/* One chunk (count <= INT_MAX elements of dt at p) through the three
 * phases. The node's first rank reduces in place; on the others the
 * reduce only reads p, and the broadcast overwrites it with the sum. */
static enum dt_status
hier_sum_chunk(struct dt_comm *c, void *p, int count, MPI_Datatype dt,
	       struct dt_error *err)
{
	struct hier_impl *h = impl_of(c);
	int lead = c->local_rank == 0;
	int rc = MPI_SUCCESS;

	if (c->local_size > 1) {
		rc = MPI_Reduce(lead ? MPI_IN_PLACE : p, lead ? p : NULL,
				count, dt, MPI_SUM, 0, h->node);
		if (rc != MPI_SUCCESS)
			return check(c, rc, "MPI_Reduce (node)", err);
	}
	if (lead && h->hosts > 1) {
		rc = MPI_Allreduce(MPI_IN_PLACE, p, count, dt, MPI_SUM,
				   h->leaders);
		if (rc != MPI_SUCCESS)
			return check(c, rc, "MPI_Allreduce (one rank per "
				     "host)", err);
	}
	if (c->local_size > 1) {
		rc = MPI_Bcast(p, count, dt, 0, h->node);
		if (rc != MPI_SUCCESS)
			return check(c, rc, "MPI_Bcast (node)", err);
	}
	return DT_OK;
}

/* The scatter form of one chunk: the node's ranks reduce-scatter the
 * chunk into one part each (part k: elements [k count / L, (k + 1) count /
 * L) of the node's L ranks), rank k of every host all-reduces part k with
 * the others' rank k, and the node all-gathers the parts. */
static enum dt_status
hier_scatter_chunk(struct dt_comm *c, void *p, int count, MPI_Datatype dt,
		   size_t elem, struct dt_error *err)
{
	struct hier_impl *h = impl_of(c);
	int L = c->local_size, k = c->local_rank, rc;
	size_t mine;

	for (int j = 0; j < L; j++) {
		h->displs[j] = (int)((int64_t)count * j / L);
		h->counts[j] = (int)((int64_t)count * (j + 1) / L) -
			       h->displs[j];
	}
	mine = (size_t)h->counts[k] * elem;
	if (mine > h->part_cap) {
		free(h->part);
		h->part = dt_xmalloc(mine, 1);
		h->part_cap = mine;
	}
	rc = MPI_Reduce_scatter(p, h->part, h->counts, dt, MPI_SUM, h->node);
	if (rc != MPI_SUCCESS)
		return check(c, rc, "MPI_Reduce_scatter (node)", err);
	if (h->hosts > 1) {
		rc = MPI_Allreduce(MPI_IN_PLACE, h->part, h->counts[k], dt,
				   MPI_SUM, h->peers);
		if (rc != MPI_SUCCESS)
			return check(c, rc, "MPI_Allreduce (one rank per "
				     "host and part)", err);
	}
	rc = MPI_Allgatherv(h->part, h->counts[k], dt, p, h->counts,
			    h->displs, dt, h->node);
	if (rc != MPI_SUCCESS)
		return check(c, rc, "MPI_Allgatherv (node)", err);
	return DT_OK;
}

static enum dt_status
hier_allreduce(struct dt_comm *c, void *buf, size_t n, int type, int op,
	       struct dt_error *err)
{
	struct dt_comm *flat = flat_of(c);
	MPI_Datatype dt = type == DT_COMM_F32 ? MPI_FLOAT : MPI_DOUBLE;
	size_t elem = type == DT_COMM_F32 ? sizeof(float) : sizeof(double);
	char *p = buf;

	if (op != DT_COMM_SUM || (type != DT_COMM_F32 && type != DT_COMM_F64)) {
		uint64_t b0 = flat->bytes_sent;
		enum dt_status st = flat->ops->allreduce(flat, buf, n, type, op,
							 err);

		c->bytes_sent += flat->bytes_sent - b0;
		return st;
	}
	/* MPI counts are int: go in chunks for very large buffers. */
	while (n > 0) {
		int count = n > (1u << 30) ? (1 << 30) : (int)n;
		enum dt_status st = impl_of(c)->form == DT_HIER_FORM_SCATTER ?
			hier_scatter_chunk(c, p, count, dt, elem, err) :
			hier_sum_chunk(c, p, count, dt, err);

		if (st != DT_OK)
			return st;
		/* The payload, as the flat sum counts it, on both. */
		c->bytes_sent += (uint64_t)count * elem;
		flat->bytes_sent += (uint64_t)count * elem;
		p += (size_t)count * elem;
		n -= (size_t)count;
	}
	return DT_OK;
}

static enum dt_status
hier_bcast(struct dt_comm *c, void *buf, size_t bytes, int root,
	   struct dt_error *err)
{
	struct dt_comm *flat = flat_of(c);
	uint64_t b0 = flat->bytes_sent;
	enum dt_status st = flat->ops->bcast(flat, buf, bytes, root, err);

	c->bytes_sent += flat->bytes_sent - b0;
	return st;
}

static enum dt_status
hier_barrier(struct dt_comm *c, struct dt_error *err)
{
	return flat_of(c)->ops->barrier(flat_of(c), err);
}

static enum dt_status
hier_node_barrier(struct dt_comm *c, struct dt_error *err)
{
	return check(c, MPI_Barrier(impl_of(c)->node), "MPI_Barrier (node)",
		     err);
}

static void
hier_abort(struct dt_comm *c, int code)
{
	flat_of(c)->ops->abort(flat_of(c), code);
	exit(code);
}

static void
hier_free(struct dt_comm *c)
{
	struct hier_impl *h = impl_of(c);

	if (h != NULL && h->leaders != MPI_COMM_NULL)
		MPI_Comm_free(&h->leaders);
	if (h != NULL && h->peers != MPI_COMM_NULL)
		MPI_Comm_free(&h->peers);
	if (h != NULL) {
		free(h->counts);
		free(h->displs);
		free(h->part);
	}
	if (h != NULL && h->node != MPI_COMM_NULL)
		MPI_Comm_free(&h->node);
	free(h);
	free(c);
}

static enum dt_status
hier_split(struct dt_comm *c, int color, int key, struct dt_comm **out,
	   struct dt_error *err)
{
	return flat_of(c)->ops->split(flat_of(c), color, key, out, err);
}

static enum dt_status
hier_isend(struct dt_comm *c, const float *buf, int n, int dest, int tag,
	   int *req, struct dt_error *err)
{
	return flat_of(c)->ops->isend(flat_of(c), buf, n, dest, tag, req,
				      err);
}

static enum dt_status
hier_recv(struct dt_comm *c, float *buf, int n, int src, int tag,
	  struct dt_error *err)
{
	return flat_of(c)->ops->recv(flat_of(c), buf, n, src, tag, err);
}

static enum dt_status
hier_wait(struct dt_comm *c, int req, int all, struct dt_error *err)
{
	return flat_of(c)->ops->wait(flat_of(c), req, all, err);
}

/* A non-blocking sum over the hierarchy is done at once: the start runs
 * the blocking host-first sum (hier_allreduce), so with
 * parallel.overlap each bucket is summed as it turns final in backward,
 * between the nodes, and test and wait find nothing in flight. Chained
 * MPI_Ireduce_scatter / MPI_Iallreduce / MPI_Iallgatherv would let the
 * three phases run behind compute too. */
static enum dt_status
hier_iallreduce(struct dt_comm *c, void *buf, size_t n, int type,
		struct dt_error *err)
{
	return hier_allreduce(c, buf, n, type, DT_COMM_SUM, err);
}

/* The reduce-scatter and the all-gather (comm.h) are flat's ring over
 * the same ranks in the same order, parts cut over all of them (no
 * host-first phase: a part is one rank's, not one host's). A started one
 * runs to its end before it returns, as the sums here do, so nothing is
 * left for test and wait. The payload is counted on flat too, as the
 * sums' (hier.h); comm.c counts it on c. */
static enum dt_status
hier_reduce_scatter(struct dt_comm *c, void *buf, size_t n, int type,
		    int start, struct dt_error *err)
{
	struct dt_comm *flat = flat_of(c);
	size_t elem = type == DT_COMM_F32 ? sizeof(float) : sizeof(double);
	enum dt_status st = flat->ops->reduce_scatter(flat, buf, n, type, 0,
						      err);

	(void)start;
	if (st == DT_OK)
		flat->bytes_sent += (uint64_t)n * elem;
	return st;
}

static enum dt_status
hier_allgather(struct dt_comm *c, float *buf, size_t n, int start,
	       struct dt_error *err)
{
	struct dt_comm *flat = flat_of(c);
	enum dt_status st = flat->ops->allgather(flat, buf, n, 0, err);

	(void)start;
	if (st == DT_OK)
		flat->bytes_sent += (uint64_t)n * sizeof *buf;
	return st;
}

/* Grouped as struct dt_comm_ops is (comm_priv.h), as mpi_ops. */
static const struct dt_comm_ops hier_ops = {
	.allreduce = hier_allreduce, .bcast = hier_bcast,
	.barrier = hier_barrier, .node_barrier = hier_node_barrier,
	.abort = hier_abort, .free = hier_free, .split = hier_split,
	/* point to point */
	.isend = hier_isend, .recv = hier_recv, .wait = hier_wait,
	/* the pending sums; coll_test, coll_wait: NULL, nothing is ever in
	 * flight (above) */
	.iallreduce = hier_iallreduce,
	/* the sharded collectives */
	.reduce_scatter = hier_reduce_scatter, .allgather = hier_allgather,
};

/* The node, leader and peer communicators of flat's MPI communicator fc
 * into h, and c's node rank and size; then the number of hosts, the
 * largest and smallest node and this host's index. Returns the first
 * failing MPI call's code and names it in *call. */
static int
hier_setup(struct dt_comm *c, MPI_Comm fc, struct hier_impl *h, int *max_l,
	   int *min_l, const char **call)
{
	int lead, rc, neg;

	*call = "MPI_Comm_split_type (MPI_COMM_TYPE_SHARED)";
	rc = MPI_Comm_split_type(fc, MPI_COMM_TYPE_SHARED, c->rank,
				 MPI_INFO_NULL, &h->node);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_set_errhandler(h->node, MPI_ERRORS_RETURN);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(h->node, &c->local_size);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_rank(h->node, &c->local_rank);
	if (rc != MPI_SUCCESS)
		return rc;
	lead = c->local_rank == 0;
	*call = "MPI_Comm_split (one rank per host)";
	rc = MPI_Comm_split(fc, lead ? 0 : MPI_UNDEFINED, c->rank,
			    &h->leaders);
	if (rc == MPI_SUCCESS && h->leaders != MPI_COMM_NULL)
		rc = MPI_Comm_set_errhandler(h->leaders, MPI_ERRORS_RETURN);
	if (rc == MPI_SUCCESS && lead)
		rc = MPI_Comm_rank(h->leaders, &h->host);
	if (rc != MPI_SUCCESS)
		return rc;
	*call = "MPI_Comm_split (one rank per host and node rank)";
	rc = MPI_Comm_split(fc, c->local_rank, c->rank, &h->peers);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_set_errhandler(h->peers, MPI_ERRORS_RETURN);
	if (rc != MPI_SUCCESS)
		return rc;
	*call = "MPI_Allreduce (hosts)";
	neg = -c->local_size;
	rc = MPI_Allreduce(&lead, &h->hosts, 1, MPI_INT, MPI_SUM, fc);
	if (rc == MPI_SUCCESS)
		rc = MPI_Allreduce(&c->local_size, max_l, 1, MPI_INT, MPI_MAX,
				   fc);
	if (rc == MPI_SUCCESS)
		rc = MPI_Allreduce(&neg, min_l, 1, MPI_INT, MPI_MAX, fc);
	if (rc != MPI_SUCCESS)
		return rc;
	*min_l = -*min_l;
	*call = "MPI_Bcast (host index)";
	return MPI_Bcast(&h->host, 1, MPI_INT, 0, h->node);
}

enum dt_status
dt_comm_hier_new(struct dt_comm *flat, enum dt_hier_mode mode,
		 struct dt_comm **out, int *hosts, int *max_per_host,
		 struct dt_error *err)
{
	return dt_comm_hier_new_form(flat, mode, DT_HIER_FORM_DEFAULT, out,
				     hosts, max_per_host, err);
}

enum dt_status
dt_comm_hier_new_form(struct dt_comm *flat, enum dt_hier_mode mode,
		      enum dt_hier_form form, struct dt_comm **out,
		      int *hosts, int *max_per_host, struct dt_error *err)
{
	MPI_Comm fc = dt_comm_mpi_handle(flat);
	struct dt_comm *c;
	struct hier_impl *h;
	const char *call = "";
	int max_l = 1, min_l = 1, on, rc;

	*out = NULL;
	if (hosts != NULL)
		*hosts = 1;
	if (max_per_host != NULL)
		*max_per_host = 1;
	if (fc == MPI_COMM_NULL || dt_comm_size(flat) == 1)
		return DT_OK;
	c = dt_xcalloc(1, sizeof *c);
	h = dt_xcalloc(1, sizeof *h);
	c->ops = &hier_ops;
	c->impl = h;
	c->rank = dt_comm_rank(flat);
	c->size = dt_comm_size(flat);
	c->watch = flat->watch;
	h->flat = flat;
	h->node = MPI_COMM_NULL;
	h->leaders = MPI_COMM_NULL;
	h->peers = MPI_COMM_NULL;
	rc = hier_setup(c, fc, h, &max_l, &min_l, &call);
	if (rc != MPI_SUCCESS) {
		enum dt_status st = check(c, rc, call, err);

		hier_free(c);
		return st;
	}
	if (hosts != NULL)
		*hosts = h->hosts;
	if (max_per_host != NULL)
		*max_per_host = max_l;
	/* With one rank per host the leaders are all of flat's ranks and
	 * the sum is the flat one: nothing to gain. */
	on = max_l > 1 && (mode == DT_HIER_ON ||
			   (mode == DT_HIER_AUTO && h->hosts > 1));
	if (!on) {
		hier_free(c);
		return DT_OK;
	}
	/* The parts line up across hosts only when every host holds as
	 * many of the ranks. */
	h->form = form == DT_HIER_FORM_SCATTER && min_l == max_l ?
		  DT_HIER_FORM_SCATTER : DT_HIER_FORM_REDUCE;
	h->counts = dt_xcalloc((size_t)c->local_size, sizeof *h->counts);
	h->displs = dt_xcalloc((size_t)c->local_size, sizeof *h->displs);
	*out = c;
	return DT_OK;
}

enum dt_hier_form
dt_comm_hier_form(const struct dt_comm *c)
{
	return c->ops == &hier_ops ? impl_of(c)->form : DT_HIER_FORM_REDUCE;
}

int
dt_comm_hier_hosts(const struct dt_comm *c)
{
	return c->ops == &hier_ops ? impl_of(c)->hosts : 1;
}

int
dt_comm_hier_host(const struct dt_comm *c)
{
	return c->ops == &hier_ops ? impl_of(c)->host : 0;
}
