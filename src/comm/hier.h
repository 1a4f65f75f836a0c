/* SPDX-License-Identifier: MIT */
/* hier.h - the hierarchical (per-host) gradient sum: a communicator in
 * front of another whose float and double sums go over the node's ranks
 * first (shared memory), then across the hosts over the network, then
 * back over the node; every other call is the flat communicator's own
 * (parallel.hierarchical in dtrain-job(5)). */
#ifndef DT_COMM_HIER_H
#define DT_COMM_HIER_H

#include "comm/comm.h"
#include "util/status.h"

/* parallel.hierarchical, in the order of the job key's words. */
enum dt_hier_mode {
	DT_HIER_AUTO = 0,	/* on when > 1 host and some host has > 1 rank */
	DT_HIER_ON,		/* on whenever some host has > 1 rank */
	DT_HIER_OFF,		/* never: the flat all-reduce */
};

/* How the sum crosses the hosts. */
enum dt_hier_form {
	/* MPI_Reduce over the node to its first rank, MPI_Allreduce among
	 * the first ranks, MPI_Bcast over the node. */
	DT_HIER_FORM_REDUCE = 0,
	/* MPI_Reduce_scatter over the node (part k of L to node rank k),
	 * MPI_Allreduce of part k among the node ranks k of every host,
	 * MPI_Allgatherv over the node; only when every host holds the same
	 * number of ranks (else the reduce form). */
	DT_HIER_FORM_SCATTER,
};
/* The form dt_comm_hier_new uses (bench/README has the measurement). */
#define DT_HIER_FORM_DEFAULT DT_HIER_FORM_SCATTER

/* Collective over flat (every one of its ranks, the same mode): finds the
 * hosts among flat's ranks (MPI_Comm_split_type MPI_COMM_TYPE_SHARED on
 * flat's MPI communicator) and decides by mode. When the hierarchical sum
 * applies, *out is a new communicator over the same ranks, in the same
 * order, that borrows flat (flat must outlive it; free *out first, with
 * dt_comm_free, which leaves flat and MPI up): its all-reduce of floats or
 * doubles with DT_COMM_SUM goes host first in DT_HIER_FORM_DEFAULT's form
 * (dt_comm_hier_new_form for the other), and everything else (maximum,
 * broadcast, barrier, split, point-to-point, and the reduce-scatter and
 * all-gather of comm.h: flat's ring, run to its end even when started)
 * goes to flat unchanged;
 * the payload of each sum is counted in both *out's and flat's
 * dt_comm_bytes_sent, as the flat sum counts it. The scatter form keeps
 * a buffer of its part (about n / ranks-per-host elements), grown on
 * demand and freed with *out.
 * Otherwise (mode off, a single-process flat, every host with one rank,
 * or auto on one host) *out is NULL and the caller keeps flat. *hosts
 * (may be NULL) is the number of hosts among flat's ranks and
 * *max_per_host the largest number of flat's ranks on one host (1 and 1
 * for a single-process flat), whatever the decision. The sum's element
 * order is node first, so its bits can differ from the flat all-reduce's;
 * it is the same from run to run for the same hosts and ranks. On error
 * returns DT_ERR_MPI (naming the call and the rank) and leaves *out NULL. */
enum dt_status dt_comm_hier_new(struct dt_comm *flat, enum dt_hier_mode mode,
				struct dt_comm **out, int *hosts,
				int *max_per_host, struct dt_error *err);

/* As dt_comm_hier_new, with the form of the sum given (for the
 * benchmark that chose the default, bench/allreduce_raw). */
enum dt_status dt_comm_hier_new_form(struct dt_comm *flat,
				     enum dt_hier_mode mode,
				     enum dt_hier_form form,
				     struct dt_comm **out, int *hosts,
				     int *max_per_host, struct dt_error *err);

/* The form a communicator made by dt_comm_hier_new_form sums in
 * (DT_HIER_FORM_REDUCE for any other communicator). */
enum dt_hier_form dt_comm_hier_form(const struct dt_comm *c);

/* Hosts among the ranks of a communicator made by dt_comm_hier_new, and
 * this rank's host's index among them (0 = the host of rank 0; the
 * hosts are numbered by their first rank). */
int dt_comm_hier_hosts(const struct dt_comm *c);
int dt_comm_hier_host(const struct dt_comm *c);

#endif
