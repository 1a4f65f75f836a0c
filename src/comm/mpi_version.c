/* SPDX-License-Identifier: MIT */
/* mpi_version.c - which MPI library dtrain runs on, for `dtrain --version`.
 * Here because only src/comm/ includes mpi.h. */
#include "comm/comm.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

void
dt_comm_mpi_version(char *buf, size_t size)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0, major = 0, minor = 0;
	char *nl;

	/* MPI-3.0 section 8.1.1: both may be called before MPI_Init. */
	if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS)
		snprintf(lib, sizeof lib, "unknown");
	lib[sizeof lib - 1] = '\0';
	nl = strchr(lib, '\n');
	if (nl != NULL)
		*nl = '\0';
	MPI_Get_version(&major, &minor);
	snprintf(buf, size, "%s (MPI %d.%d)", lib, major, minor);
}
