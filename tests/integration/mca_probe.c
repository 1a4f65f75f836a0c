/* SPDX-License-Identifier: MIT */
/* mca_probe.c - the Open MPI settings a rank makes for itself before
 * MPI_Init (dt_comm_mpi_new, src/comm/comm_mpi.c), as Open MPI sees
 * them, for tests/integration/mca-env.sh:
 *
 *   mpirun -np P mca_probe NAME...
 *
 * Opens the communicator as the trainer does, then reads each named
 * control variable of Open MPI through the MPI tool interface (MPI_T,
 * MPI-3.1 chapter 14) and prints, on rank 0 only, one line of
 * "NAME VALUE" pairs separated by single spaces, with "missing" for a
 * variable this Open MPI does not have. Exits 1 on an MPI or
 * tool-interface error or a variable of a type it does not print.
 *
 * With MCA_PROBE_TCP_EAGER=BYTES in the environment it first calls
 * dt_comm_mpi_tcp_eager(BYTES), as dtrain run does before MPI starts,
 * and the line begins with "set R" (R: what that returned). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

/* Prints "NAME VALUE" for the control variable NAME, or "NAME missing",
 * after a space unless FIRST; 1 on a tool-interface error. */
static int
put_cvar(const char *name, int first)
{
	int idx, n = 0, rc, verbosity, bind, scope;
	char vname[256], desc[1024];
	int vname_len = sizeof vname, desc_len = sizeof desc;
	MPI_Datatype dt;
	MPI_T_enum et;
	MPI_T_cvar_handle h;
	union {
		int i;
		unsigned u;
		unsigned long ul;
		unsigned long long ull;
		char pad[64];
	} v;

	if (!first)
		putchar(' ');
	rc = MPI_T_cvar_get_index(name, &idx);
	if (rc == MPI_T_ERR_INVALID_NAME) {
		printf("%s missing", name);
		return 0;
	}
	if (rc != MPI_SUCCESS ||
	    MPI_T_cvar_get_info(idx, vname, &vname_len, &verbosity, &dt, &et,
				desc, &desc_len, &bind, &scope) != MPI_SUCCESS ||
	    MPI_T_cvar_handle_alloc(idx, NULL, &h, &n) != MPI_SUCCESS || n != 1)
		return 1;
	memset(&v, 0, sizeof v);
	rc = MPI_T_cvar_read(h, &v);
	MPI_T_cvar_handle_free(&h);
	if (rc != MPI_SUCCESS)
		return 1;
	if (dt == MPI_INT)
		printf("%s %d", name, v.i);
	else if (dt == MPI_UNSIGNED)
		printf("%s %u", name, v.u);
	else if (dt == MPI_UNSIGNED_LONG)
		printf("%s %lu", name, v.ul);
	else if (dt == MPI_UNSIGNED_LONG_LONG)
		printf("%s %llu", name, v.ull);
	else
		return 1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct dt_error err = { 0 };
	struct dt_comm *world;
	const char *eager = getenv("MCA_PROBE_TCP_EAGER");
	long long set = 0;
	int provided, bad = 0;

	if (eager != NULL)
		set = (long long)dt_comm_mpi_tcp_eager(atoll(eager));
	if (dt_comm_mpi_new(&world, &err) != DT_OK) {
		fprintf(stderr, "mca_probe: %s\n", err.msg);
		return 1;
	}
	if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
		fprintf(stderr, "mca_probe: MPI_T_init_thread failed\n");
		dt_comm_free(world);
		return 1;
	}
	if (dt_comm_rank(world) == 0) {
		if (eager != NULL)
			printf("set %lld ", set);
		for (int i = 1; i < argc; i++)
			bad |= put_cvar(argv[i], i == 1);
		printf("\n");
	}
	MPI_T_finalize();
	dt_comm_free(world);
	if (bad)
		fprintf(stderr, "mca_probe: a control variable could not be "
			"read\n");
	return bad;
}
