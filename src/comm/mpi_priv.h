/* SPDX-License-Identifier: MIT */
/* mpi_priv.h - for src/comm/ only: the MPI communicator behind a dt_comm,
 * for the comm/ modules that speak point-to-point MPI themselves (the
 * parameter server). Includes mpi.h, so no header outside src/comm/ may
 * include this one. */
#ifndef DT_COMM_MPI_PRIV_H
#define DT_COMM_MPI_PRIV_H

#include <mpi.h>

#include "comm/comm.h"

/* The MPI communicator behind c, or MPI_COMM_NULL when c is not an MPI
 * communicator (dt_comm_self_new). Still owned by c: duplicate it
 * (MPI_Comm_dup) to keep traffic apart, never free it. */
MPI_Comm dt_comm_mpi_handle(const struct dt_comm *c);

/* DT_OK when rc is MPI_SUCCESS; otherwise fills err with DT_ERR_MPI and
 * "rank RANK: CALL: <MPI_Error_string>" and returns DT_ERR_MPI. */
enum dt_status dt_comm_mpi_check(int rank, int rc, const char *call,
				 struct dt_error *err);

struct dt_watch;

/* Collective over world (every rank, the same timeout_s > 0): starts this
 * rank's watchdog thread, which sends a heartbeat to every other rank each
 * second (or timeout_s / 5 when shorter) on its own duplicate of world.
 * When this rank has waited in one call (dt_watch_enter) for timeout_s and
 * a peer has been silent, or made no progress outside a call, for as long,
 * it names those peers on stderr ("rank R: ... rank P silent for S s"),
 * and if it still waits 2 x timeout_s later, ends the job with MPI_Abort
 * (exit 1), leaving the launcher that long to end it first. MPI must run
 * at MPI_THREAD_MULTIPLE. On success *out is owned by the caller (stop it
 * with dt_watch_stop); on error returns DT_ERR_MPI and leaves *out
 * untouched. */
enum dt_status dt_watch_start(MPI_Comm world, double timeout_s,
			      struct dt_watch **out, struct dt_error *err);

/* Collective over the world given to dt_watch_start: stops the thread,
 * completes its last heartbeats and frees w. NULL is accepted. */
void dt_watch_stop(struct dt_watch *w);

#endif
