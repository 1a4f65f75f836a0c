/* SPDX-License-Identifier: MIT */
/* agree_probe.c - dt_agree_check under mpirun, for
 * tests/integration/agree.sh: every rank loads JOB with the overrides
 * given to it and checks that all ranks agree.
 *
 *   agree_probe JOB [SET...]
 *   agree_probe --lengths
 *
 * A SET "key=value" applies on every rank; "R:key=value" on rank R only
 * (the rank that differs). Prints "rank R: agree" and exits 0 when the
 * ranks agree; otherwise prints the message on stderr and exits with the
 * status's exit code (2 for a mismatch), on every rank alike.
 * --lengths: rank 1 passes 11 where the others pass 10 to
 * dt_comm_agree_length and dt_comm_check_same, then equal lengths with
 * its last byte changed to dt_comm_check_same; then rank 0 sends 3
 * floats where rank 1 receives 4; prints each verdict. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/agree.h"
#include "comm/comm.h"
#include "job/job.h"

int
main(int argc, char **argv)
{
	static struct dt_job job;
	const char *sets[DT_JOB_MAX_SETS];
	struct dt_error err = { 0 };
	struct dt_comm *comm;
	enum dt_status st;
	int i, n = 0, rank;

	if (argc < 2) {
		fprintf(stderr, "usage: agree_probe JOB [[R:]key=value...]\n");
		return 1;
	}
	if (dt_comm_mpi_new(&comm, &err) != DT_OK) {
		fprintf(stderr, "agree_probe: %s\n", err.msg);
		return 1;
	}
	rank = dt_comm_rank(comm);
	if (strcmp(argv[1], "--lengths") == 0) {
		char bytes[11] = "0123456789";
		int bad = -1;

		st = dt_comm_agree_length(comm, "the test buffer",
					  rank == 1 ? 11 : 10, &err);
		printf("rank %d: length: %d %s\n", rank, st, err.msg);
		st = dt_comm_check_same(comm, "the test bytes", bytes,
					rank == 1 ? 11 : 10, &bad, &err);
		printf("rank %d: same-length: %d %d %s\n", rank, st, bad,
		       err.msg);
		if (rank == 1)
			bytes[9] = 'x';
		st = dt_comm_check_same(comm, "the test bytes", bytes, 10,
					&bad, &err);
		printf("rank %d: same-bytes: %d %d %s\n", rank, st, bad,
		       err.msg);
		/* A point-to-point message shorter than the receiver
		 * expects is an error, not a stale tail. */
		if (rank == 0) {
			float f[3] = { 1, 2, 3 };
			int req;

			st = dt_comm_isend_f32(comm, f, 3, 1, 5, &req, &err);
			if (st == DT_OK)
				st = dt_comm_wait(comm, req, &err);
			printf("rank 0: short-send: %d\n", st);
		} else if (rank == 1) {
			float f[4] = { 0 };

			st = dt_comm_recv_f32(comm, f, 4, 0, 5, &err);
			printf("rank 1: short: %d %s\n", st, err.msg);
		}
		dt_comm_free(comm);
		return 0;
	}
	for (i = 2; i < argc && n < DT_JOB_MAX_SETS; i++) {
		const char *colon = strchr(argv[i], ':');
		const char *eq = strchr(argv[i], '=');

		if (colon != NULL && (eq == NULL || colon < eq)) {
			if (atoi(argv[i]) == rank)
				sets[n++] = colon + 1;
		} else {
			sets[n++] = argv[i];
		}
	}
	st = dt_job_load(argv[1], sets, n, &job, &err);
	/* A job one rank cannot load is that rank's failure on all. */
	st = dt_comm_agree(comm, st, &err);
	if (st == DT_OK)
		st = dt_agree_check(&job, comm, &err);
	if (st == DT_OK)
		printf("rank %d: agree\n", rank);
	else
		fprintf(stderr, "agree_probe: rank %d: %s\n", rank, err.msg);
	dt_comm_free(comm);
	return dt_status_exit_code(st);
}
