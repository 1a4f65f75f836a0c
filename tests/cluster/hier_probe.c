/* SPDX-License-Identifier: MIT */
/* hier_probe.c - dt_comm_hier_new under mpirun, for tests/cluster/hier.sh:
 *
 *   hier_probe auto|on|off|scatter|reduce
 *
 * (auto, on, off: that mode in the default form; scatter, reduce: on in
 * that form)
 * Every rank prints what it found, one line:
 *   "rank R: hosts H max_per_host M local L/S host K hier on|off"
 * (S ranks on this rank's host, L its place among them, K its host's
 * index), then sums through the chosen communicator (the hierarchical one,
 * or the world when there is none) and checks the result against the sum
 * worked out here: 1000 floats and 1000 doubles where rank r holds
 * (r + 1) x (i % 7 + 1) at i, whose sum over P ranks is exactly
 * P (P + 1) / 2 x (i % 7 + 1) in either type (small integers); then the
 * maximum of the ranks (P - 1), which goes to the flat communicator; and
 * the payload bytes counted (4000 + 8000 + 4). Prints "rank R: sums ok"
 * and exits 0, or names the first wrong value and exits 1. */
#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/hier.h"

#define N 1000

int
main(int argc, char **argv)
{
	static float f[N];
	static double d[N];
	struct dt_error err = { 0 };
	struct dt_comm *world, *h = NULL, *c;
	enum dt_hier_mode mode;
	enum dt_hier_form form;
	int rank, size, hosts = 0, per_host = 0, mx, bad = 0;
	uint64_t b0;

	if (argc != 2 || (strcmp(argv[1], "auto") != 0 &&
			  strcmp(argv[1], "on") != 0 &&
			  strcmp(argv[1], "off") != 0 &&
			  strcmp(argv[1], "scatter") != 0 &&
			  strcmp(argv[1], "reduce") != 0)) {
		fprintf(stderr, "usage: hier_probe "
			"auto|on|off|scatter|reduce\n");
		return 1;
	}
	mode = argv[1][0] == 'a' ? DT_HIER_AUTO :
	       argv[1][1] == 'f' ? DT_HIER_OFF : DT_HIER_ON;
	form = argv[1][0] == 's' ? DT_HIER_FORM_SCATTER :
	       argv[1][0] == 'r' ? DT_HIER_FORM_REDUCE : DT_HIER_FORM_DEFAULT;
	if (dt_comm_mpi_new(&world, &err) != DT_OK) {
		fprintf(stderr, "hier_probe: %s\n", err.msg);
		return 1;
	}
	rank = dt_comm_rank(world);
	size = dt_comm_size(world);
	if (dt_comm_hier_new_form(world, mode, form, &h, &hosts, &per_host,
				  &err) != DT_OK) {
		fprintf(stderr, "hier_probe: %s\n", err.msg);
		dt_comm_abort(world, 1);
	}
	c = h != NULL ? h : world;
	printf("rank %d: hosts %d max_per_host %d local %d/%d host %d "
	       "hier %s form %s\n", rank, hosts, per_host,
	       dt_comm_local_rank(c), dt_comm_local_size(c),
	       dt_comm_hier_host(c), h != NULL ? "on" : "off",
	       dt_comm_hier_form(c) == DT_HIER_FORM_SCATTER ? "scatter" :
							      "reduce");
	for (int i = 0; i < N; i++) {
		f[i] = (float)((rank + 1) * (i % 7 + 1));
		d[i] = (double)((rank + 1) * (i % 7 + 1));
	}
	mx = rank;
	b0 = dt_comm_bytes_sent(c);
	if (dt_comm_allreduce_sum_f32(c, f, N, &err) != DT_OK ||
	    dt_comm_allreduce_sum_f64(c, d, N, &err) != DT_OK ||
	    dt_comm_allreduce_max_int(c, &mx, 1, &err) != DT_OK) {
		fprintf(stderr, "hier_probe: %s\n", err.msg);
		dt_comm_abort(world, 1);
	}
	for (int i = 0; i < N && !bad; i++) {
		double want = size * (size + 1) / 2.0 * (i % 7 + 1);

		if (f[i] != (float)want || d[i] != want) {
			printf("rank %d: element %d: %.9g and %.17g, expected "
			       "%.17g\n", rank, i, f[i], d[i], want);
			bad = 1;
		}
	}
	if (!bad && mx != size - 1) {
		printf("rank %d: maximum %d, expected %d\n", rank, mx, size - 1);
		bad = 1;
	}
	if (!bad && dt_comm_bytes_sent(c) - b0 != N * 4 + N * 8 + 4) {
		printf("rank %d: %llu bytes counted, expected %d\n", rank,
		       (unsigned long long)(dt_comm_bytes_sent(c) - b0),
		       N * 4 + N * 8 + 4);
		bad = 1;
	}
	if (!bad)
		printf("rank %d: sums ok\n", rank);
	fflush(stdout);
	dt_comm_free(h);
	dt_comm_free(world);
	return bad;
}
