/* mpi_priv.h - for src/dist/ only: the MPI communicator behind a dt_comm,
 * for the dist/ modules that speak point-to-point MPI themselves (the
 * parameter server). Includes mpi.h, so no header outside src/dist/ may
 * include this one. */
#ifndef DT_DIST_MPI_PRIV_H
#define DT_DIST_MPI_PRIV_H

#include <mpi.h>

#include "dist/comm.h"

/* The MPI communicator behind c, or MPI_COMM_NULL when c is not an MPI
 * communicator (dt_comm_self_new). Still owned by c: duplicate it
 * (MPI_Comm_dup) to keep traffic apart, never free it. */
MPI_Comm dt_comm_mpi_handle(const struct dt_comm *c);

/* DT_OK when rc is MPI_SUCCESS; otherwise fills err with DT_ERR_MPI and
 * "rank RANK: CALL: <MPI_Error_string>" and returns DT_ERR_MPI. */
enum dt_status dt_comm_mpi_check(int rank, int rc, const char *call,
				 struct dt_error *err);

#endif
