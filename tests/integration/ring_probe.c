/* SPDX-License-Identifier: MIT */
/* ring_probe.c - the exact gradient sum in 6 bytes a value
 * (dt_comm_allreduce_sum_f64_f32 and its non-blocking form) under
 * mpirun, for tests/integration/ring-sum.sh:
 *
 *   ring_probe US
 *
 * On the world (progress thread every US microseconds, 0: none) and on a
 * split of it into the even and the odd ranks, every rank fills doubles
 * whose value on each rank it can compute for all ranks (value()), so
 * each rank works out the expected floats itself: the sum over the
 * ranks in rank order, in double, rounded once. With more than 2 ranks
 * the values are multiples of 2^-8 below 2^12 in magnitude, whose
 * double sums are exact in any order; with 2 they are any doubles (a + b
 * does not depend on the order). Sizes 0, 1, 2, 3, 1000 and 2^18 + 5
 * (fewer values than ranks included): each summed blocking; then four
 * started back to back (a plain double all-reduce second among them),
 * tested 1 ms apart until done, the first checked after
 * dt_comm_coll_wait_first(1) before the rest are waited for. Every float
 * is compared bit for bit, and the plain sum's doubles too. Prints
 * "rank R of P: ring sums ok (progress_us U), split of S ok" and exits 0,
 * or names the first wrong value and exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"

#define MAXN ((1 << 18) + 5)

static const size_t sizes[] = { 0, 1, 2, 3, 1000, MAXN };
#define N_SIZES (sizeof sizes / sizeof sizes[0])

/* Rank r's value at i of the sum numbered k, on a communicator of size
 * ranks. */
static double
value(int r, size_t i, int k, int size)
{
	uint64_t h = (uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)(i + 1) * 0xbf58476d1ce4e5b9ull ^
		     (uint64_t)(k + 1) * 0x94d049bb133111ebull;

	h ^= h >> 31;
	h *= 0xd6e9f8a2b1c2d3e5ull;
	h ^= h >> 29;
	if (size > 2)	/* a multiple of 2^-8 in (-2^12, 2^12) */
		return ldexp((double)(int64_t)(h % (1u << 21)) -
			     (double)(1u << 20), -8);
	/* any double of 53 bits, from 2^-20 to 2^20 */
	return ldexp((double)(h >> 11), -53 + (int)(h % 41) - 20);
}

static void
fill(double *a, size_t n, int rank, int k, int size)
{
	for (size_t i = 0; i < n; i++)
		a[i] = value(rank, i, k, size);
}

/* The first float of out[0..n) other than the rounded rank-order sum,
 * printed; 0 when all are right. */
static int
check(const float *out, size_t n, int k, int rank, int size,
      const char *what)
{
	for (size_t i = 0; i < n; i++) {
		double sum = 0;
		float want;

		for (int r = 0; r < size; r++)
			sum += value(r, i, k, size);
		want = (float)sum;
		if (memcmp(&want, &out[i], sizeof want) != 0) {
			printf("rank %d: %s: sum %d, element %zu: %.9g, "
			       "expected %.9g\n", rank, what, k, i,
			       out[i], want);
			return 1;
		}
	}
	return 0;
}

static void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void
die(struct dt_comm *world, const struct dt_error *err)
{
	fprintf(stderr, "ring_probe: %s\n", err->msg);
	dt_comm_abort(world, 1);
}

/* Every check on c; returns the number of wrong sums. */
static int
probe(struct dt_comm *world, struct dt_comm *c, const char *what)
{
	static double acc[4][MAXN], plain[MAXN];
	static float out[4][MAXN];
	struct dt_error err = { 0 };
	int rank = dt_comm_rank(c), size = dt_comm_size(c), bad = 0;
	int done = 0, tests = 0;
	size_t n4[4] = { MAXN, 3, 1000, 1 };

	for (size_t j = 0; j < N_SIZES; j++) {
		size_t n = sizes[j];

		fill(acc[0], n, rank, (int)j, size);
		memset(out[0], 0xff, n * sizeof **out);
		if (dt_comm_allreduce_sum_f64_f32(c, acc[0], out[0], n,
						  &err) != DT_OK)
			die(world, &err);
		bad += check(out[0], n, (int)j, rank, size, what);
	}
	/* Four at once, a plain double sum among them. */
	for (int s = 0; s < 4; s++) {
		fill(acc[s], n4[s], rank, 10 + s, size);
		memset(out[s], 0xff, n4[s] * sizeof **out);
	}
	fill(plain, 1000, rank, 20, size);
	if (dt_comm_iallreduce_sum_f64_f32(c, acc[0], out[0], n4[0],
					   &err) != DT_OK ||
	    dt_comm_iallreduce_sum_f64(c, plain, 1000, &err) != DT_OK ||
	    dt_comm_iallreduce_sum_f64_f32(c, acc[1], out[1], n4[1],
					   &err) != DT_OK ||
	    dt_comm_iallreduce_sum_f64_f32(c, acc[2], out[2], n4[2],
					   &err) != DT_OK ||
	    dt_comm_coll_wait_first(c, 1, &err) != DT_OK)
		die(world, &err);
	bad += check(out[0], n4[0], 10, rank, size, "first of four");
	if (dt_comm_iallreduce_sum_f64_f32(c, acc[3], out[3], n4[3],
					   &err) != DT_OK)
		die(world, &err);
	while (!done && tests < 10000) {
		if (dt_comm_coll_test(c, &done, &err) != DT_OK)
			die(world, &err);
		tests++;
		if (!done)
			pause_ms(1);
	}
	if (dt_comm_coll_wait(c, &err) != DT_OK)
		die(world, &err);
	for (int s = 1; s < 4; s++)
		bad += check(out[s], n4[s], 10 + s, rank, size, what);
	for (size_t i = 0; i < 1000; i++) {
		double want = 0;

		for (int r = 0; r < size; r++)
			want += value(r, i, 20, size);
		/* The plain double sum: exact values (> 2 ranks) or a + b. */
		if (plain[i] != want) {
			printf("rank %d: %s: the plain sum, element %zu: "
			       "%.17g, expected %.17g\n", rank, what, i,
			       plain[i], want);
			bad++;
			break;
		}
	}
	return bad;
}

int
main(int argc, char **argv)
{
	struct dt_error err = { 0 };
	struct dt_comm *world, *half = NULL;
	int bad;
	long us;

	if (argc != 2 || (us = strtol(argv[1], NULL, 10)) < 0) {
		fprintf(stderr, "usage: ring_probe US\n");
		return 1;
	}
	if (dt_comm_mpi_new_watched(&world, 0, us, &err) != DT_OK) {
		fprintf(stderr, "ring_probe: %s\n", err.msg);
		return 1;
	}
	bad = probe(world, world, "world");
	if (dt_comm_split(world, dt_comm_rank(world) % 2,
			  dt_comm_rank(world), &half, &err) != DT_OK)
		die(world, &err);
	bad += probe(world, half, "split");
	if (!bad)
		printf("rank %d of %d: ring sums ok (progress_us %lld), split "
		       "of %d ok\n", dt_comm_rank(world), dt_comm_size(world),
		       (long long)world->progress_us, dt_comm_size(half));
	fflush(stdout);
	dt_comm_free(half);
	dt_comm_free(world);
	return bad != 0;
}
