/* SPDX-License-Identifier: MIT */
/* rsag_probe.c - the reduce-scatter and the all-gather of comm/comm.h
 * under mpirun, for tests/integration/rsag.sh:
 *
 *   rsag_probe US
 *
 * On the world (progress thread every US microseconds, 0: none) and on a
 * split of it into the even and the odd ranks, for n of 0, 1, 2, 3, 1000
 * and 2^18 + 5 (fewer values than ranks included), every rank fills
 * values it can compute for every rank (value()) and checks, bit for
 * bit:
 *   - its part from dt_comm_part is chunk (rank + 1) mod P of the cut
 *     [floor(n i / P), floor(n (i + 1) / P)), worked out here;
 *   - float and double reduce-scatters leave in its part the sum in the
 *     ring's order (x_c, + x_(c+1), ..., + x_(c-1) for chunk c), with
 *     values whose sums are not exact, so the order shows;
 *   - a float reduce-scatter then an all-gather equals the float all-
 *     reduce (dt_comm_allreduce_sum_f32, MPI_Allreduce) everywhere, and
 *     a double reduce-scatter, each rank rounding its part, then a float
 *     all-gather equals MPI_Allreduce of the doubles rounded once, and
 *     dt_comm_allreduce_sum_f64_f32; with more than 2 ranks on values
 *     whose sums are exact (multiples of 2^-8 below 2^12 in magnitude:
 *     MPI's order is its own), with 2 on any values (a + b does not
 *     depend on the order);
 *   - an all-gather brings every rank's part as its rank held it
 *     (the rest of the buffer starts as NaN);
 *   - the started forms, three at once with a plain double all-reduce
 *     among them, the first checked after dt_comm_coll_wait_first(1);
 *   - dt_comm_bytes_sent: 8 n for a double reduce-scatter, 4 n for an
 *     all-gather, 8 n for the rounded sum (0 on one rank).
 * Prints "rank R of P: reduce-scatter and all-gather ok (progress_us U),
 * split of S ok" and exits 0, or names the first wrong value and exits
 * 1. */
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

/* Rank r's value at i for the check numbered k: exact, a multiple of
 * 2^-8 in (-2^12, 2^12) (a float too); else any double of 53 bits from
 * 2^-20 to 2^20, of either sign. */
static double
value(int r, size_t i, int k, int exact)
{
	uint64_t h = (uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)(i + 1) * 0xbf58476d1ce4e5b9ull ^
		     (uint64_t)(k + 1) * 0x94d049bb133111ebull;

	h ^= h >> 31;
	h *= 0xd6e9f8a2b1c2d3e5ull;
	h ^= h >> 29;
	if (exact)
		return ldexp((double)(int64_t)(h % (1u << 21)) -
			     (double)(1u << 20), -8);
	return (h & 1 ? -1 : 1) *
	       ldexp((double)(h >> 11), -53 + (int)(h % 41) - 20);
}

struct probe {
	struct dt_comm *world, *c;
	const char *what;
	int rank, size, bad;
};

static void
die(struct probe *p, const struct dt_error *err)
{
	fprintf(stderr, "rsag_probe: %s\n", err->msg);
	dt_comm_abort(p->world, 1);
}

static void
wrong(struct probe *p, const char *check, size_t n, size_t i, double got,
      double want)
{
	if (p->bad++ == 0)
		printf("rank %d: %s: %s, n %zu, element %zu: %.17g, "
		       "expected %.17g\n", p->rank, p->what, check, n, i, got,
		       want);
}

/* The part of this rank as the cut says: chunk (rank + 1) mod P. */
static void
my_part(const struct probe *p, size_t n, size_t *lo, size_t *hi)
{
	size_t c = (size_t)((p->rank + 1) % p->size);

	*lo = n * c / (size_t)p->size;
	*hi = n * (c + 1) / (size_t)p->size;
}

/* The sum of element i over the ranks in the ring's order for chunk c,
 * in double and in float. */
static double
fold64(const struct probe *p, size_t i, int k, size_t c)
{
	double s = value((int)c, i, k, 0);

	for (int j = 1; j < p->size; j++) {
		int r = (int)((c + (size_t)j) % (size_t)p->size);

		s = value(r, i, k, 0) + s;
	}
	return s;
}

static float
fold32(const struct probe *p, size_t i, int k, size_t c)
{
	float s = (float)value((int)c, i, k, 0);

	for (int j = 1; j < p->size; j++) {
		int r = (int)((c + (size_t)j) % (size_t)p->size);

		s = (float)value(r, i, k, 0) + s;
	}
	return s;
}

static int
same32(float a, float b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

static int
same64(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

/* The cut, and the order of the reduce-scatters' sums (values that are
 * not exact). */
static void
check_order(struct probe *p, size_t n, int k, double *d, float *f)
{
	struct dt_error err = { 0 };
	size_t lo, hi, wlo, whi, c = (size_t)((p->rank + 1) % p->size);

	dt_comm_part(n, p->size, p->rank, &lo, &hi);
	my_part(p, n, &wlo, &whi);
	if (lo != wlo || hi != whi)
		wrong(p, "dt_comm_part", n, lo, (double)hi, (double)whi);
	for (size_t i = 0; i < n; i++) {
		d[i] = value(p->rank, i, k, 0);
		f[i] = (float)value(p->rank, i, k, 0);
	}
	if (dt_comm_reduce_scatter_sum_f64(p->c, d, n, &err) != DT_OK ||
	    dt_comm_reduce_scatter_sum_f32(p->c, f, n, &err) != DT_OK)
		die(p, &err);
	for (size_t i = wlo; i < whi; i++) {
		if (!same64(d[i], fold64(p, i, k, c)))
			wrong(p, "f64 reduce-scatter order", n, i, d[i],
			      fold64(p, i, k, c));
		if (!same32(f[i], fold32(p, i, k, c)))
			wrong(p, "f32 reduce-scatter order", n, i, f[i],
			      fold32(p, i, k, c));
	}
}

/* Reduce-scatter and all-gather against the all-reduce. */
static void
check_allreduce(struct probe *p, size_t n, int k, double *d, double *dref,
		float *f, float *fref, float *out)
{
	struct dt_error err = { 0 };
	int exact = p->size > 2;
	size_t lo, hi;

	dt_comm_part(n, p->size, p->rank, &lo, &hi);
	for (size_t i = 0; i < n; i++) {
		dref[i] = d[i] = value(p->rank, i, k, exact);
		fref[i] = f[i] = (float)value(p->rank, i, k + 1, exact);
		out[i] = NAN;
	}
	if (dt_comm_allreduce_sum_f32(p->c, fref, n, &err) != DT_OK ||
	    dt_comm_allreduce_sum_f64(p->c, dref, n, &err) != DT_OK ||
	    dt_comm_reduce_scatter_sum_f32(p->c, f, n, &err) != DT_OK ||
	    dt_comm_reduce_scatter_sum_f64(p->c, d, n, &err) != DT_OK)
		die(p, &err);
	for (size_t i = lo; i < hi; i++)
		out[i] = (float)d[i];
	if (dt_comm_allgather_f32(p->c, f, n, &err) != DT_OK ||
	    dt_comm_allgather_f32(p->c, out, n, &err) != DT_OK)
		die(p, &err);
	for (size_t i = 0; i < n; i++) {
		if (!same32(f[i], fref[i]))
			wrong(p, "f32 reduce-scatter + all-gather", n, i, f[i],
			      fref[i]);
		if (!same32(out[i], (float)dref[i]))
			wrong(p, "f64 reduce-scatter, rounding, f32 all-gather",
			      n, i, out[i], (float)dref[i]);
	}
	/* The exact sum is the same thing. */
	for (size_t i = 0; i < n; i++) {
		d[i] = value(p->rank, i, k, exact);
		out[i] = NAN;
	}
	if (dt_comm_allreduce_sum_f64_f32(p->c, d, out, n, &err) != DT_OK)
		die(p, &err);
	for (size_t i = 0; i < n; i++)
		if (!same32(out[i], (float)dref[i]))
			wrong(p, "dt_comm_allreduce_sum_f64_f32", n, i, out[i],
			      (float)dref[i]);
}

/* An all-gather brings each rank's part as it was: the value of rank
 * (c - 1) mod P at an element of chunk c. */
static void
check_gather(struct probe *p, size_t n, int k, float *f)
{
	struct dt_error err = { 0 };
	size_t lo, hi;

	dt_comm_part(n, p->size, p->rank, &lo, &hi);
	for (size_t i = 0; i < n; i++)
		f[i] = i >= lo && i < hi ? (float)value(p->rank, i, k, 0) :
		       NAN;
	if (dt_comm_allgather_f32(p->c, f, n, &err) != DT_OK)
		die(p, &err);
	for (int r = 0; r < p->size; r++) {
		size_t c = (size_t)((r + 1) % p->size);
		size_t a = n * c / (size_t)p->size;
		size_t b = n * (c + 1) / (size_t)p->size;

		for (size_t i = a; i < b; i++)
			if (!same32(f[i], (float)value(r, i, k, 0)))
				wrong(p, "all-gather", n, i, f[i],
				      (float)value(r, i, k, 0));
	}
}

static void
pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* The started forms: a double reduce-scatter, a plain double all-reduce,
 * an all-gather and a float reduce-scatter at once. */
static void
check_started(struct probe *p, double *d, double *plain, float *g, float *f)
{
	struct dt_error err = { 0 };
	size_t n = MAXN, m = 1000, lo, hi, mlo, mhi;
	int done = 0, tests = 0;

	dt_comm_part(n, p->size, p->rank, &lo, &hi);
	dt_comm_part(m, p->size, p->rank, &mlo, &mhi);
	for (size_t i = 0; i < n; i++) {
		d[i] = value(p->rank, i, 30, 0);
		g[i] = i >= lo && i < hi ? (float)value(p->rank, i, 31, 0) :
		       NAN;
	}
	for (size_t i = 0; i < m; i++) {
		plain[i] = value(p->rank, i, 32, 1);
		f[i] = (float)value(p->rank, i, 33, 0);
	}
	if (dt_comm_ireduce_scatter_sum_f64(p->c, d, n, &err) != DT_OK ||
	    dt_comm_iallreduce_sum_f64(p->c, plain, m, &err) != DT_OK ||
	    dt_comm_iallgather_f32(p->c, g, n, &err) != DT_OK ||
	    dt_comm_ireduce_scatter_sum_f32(p->c, f, m, &err) != DT_OK ||
	    dt_comm_coll_wait_first(p->c, 1, &err) != DT_OK)
		die(p, &err);
	for (size_t i = lo; i < hi; i++)
		if (!same64(d[i], fold64(p, i, 30, (size_t)((p->rank + 1) %
							    p->size))))
			wrong(p, "started f64 reduce-scatter", n, i, d[i],
			      fold64(p, i, 30, (size_t)((p->rank + 1) %
							p->size)));
	while (!done && tests < 10000) {
		if (dt_comm_coll_test(p->c, &done, &err) != DT_OK)
			die(p, &err);
		if (!done)
			pause_ms(1);
		tests++;
	}
	if (dt_comm_coll_wait(p->c, &err) != DT_OK)
		die(p, &err);
	for (int r = 0; r < p->size; r++) {
		size_t a, b;

		dt_comm_part(n, p->size, r, &a, &b);
		for (size_t i = a; i < b; i++)
			if (!same32(g[i], (float)value(r, i, 31, 0)))
				wrong(p, "started all-gather", n, i, g[i],
				      (float)value(r, i, 31, 0));
	}
	for (size_t i = mlo; i < mhi; i++)
		if (!same32(f[i], fold32(p, i, 33, (size_t)((p->rank + 1) %
							    p->size))))
			wrong(p, "started f32 reduce-scatter", m, i, f[i],
			      fold32(p, i, 33, (size_t)((p->rank + 1) %
							p->size)));
	for (size_t i = 0; i < m; i++) {
		double want = 0;

		for (int r = 0; r < p->size; r++)
			want += value(r, i, 32, 1);
		if (plain[i] != want)
			wrong(p, "the plain sum among them", m, i, plain[i],
			      want);
	}
}

/* What dt_comm_bytes_sent counts for each. */
static void
check_bytes(struct probe *p, double *d, float *f)
{
	struct dt_error err = { 0 };
	size_t n = 1000;
	uint64_t b0 = dt_comm_bytes_sent(p->c), b1, b2, b3;
	uint64_t one = p->size > 1;

	memset(d, 0, n * sizeof *d);
	memset(f, 0, n * sizeof *f);
	if (dt_comm_reduce_scatter_sum_f64(p->c, d, n, &err) != DT_OK)
		die(p, &err);
	b1 = dt_comm_bytes_sent(p->c);
	if (dt_comm_allgather_f32(p->c, f, n, &err) != DT_OK)
		die(p, &err);
	b2 = dt_comm_bytes_sent(p->c);
	if (dt_comm_allreduce_sum_f64_f32(p->c, d, f, n, &err) != DT_OK)
		die(p, &err);
	b3 = dt_comm_bytes_sent(p->c);
	if (b1 - b0 != one * 8 * n)
		wrong(p, "bytes of a reduce-scatter", n, 0, (double)(b1 - b0),
		      (double)(one * 8 * n));
	if (b2 - b1 != one * 4 * n)
		wrong(p, "bytes of an all-gather", n, 0, (double)(b2 - b1),
		      (double)(one * 4 * n));
	if (b3 - b2 != one * 8 * n)
		wrong(p, "bytes of the rounded sum", n, 0, (double)(b3 - b2),
		      (double)(one * 8 * n));
}

/* Every check on c; returns the number of wrong values. */
static int
probe(struct dt_comm *world, struct dt_comm *c, const char *what)
{
	static double d[MAXN], dref[MAXN];
	static float f[MAXN], fref[MAXN], out[MAXN];
	struct probe p = { world, c, what, dt_comm_rank(c), dt_comm_size(c),
			   0 };

	for (size_t j = 0; j < N_SIZES; j++) {
		check_order(&p, sizes[j], (int)j, d, f);
		check_allreduce(&p, sizes[j], 10 + 2 * (int)j, d, dref, f,
				fref, out);
		check_gather(&p, sizes[j], 30 + (int)j, f);
	}
	check_started(&p, d, dref, out, f);
	check_bytes(&p, d, f);
	return p.bad;
}

int
main(int argc, char **argv)
{
	struct dt_error err = { 0 };
	struct dt_comm *world, *half = NULL;
	int bad;
	long us;

	if (argc != 2 || (us = strtol(argv[1], NULL, 10)) < 0) {
		fprintf(stderr, "usage: rsag_probe US\n");
		return 1;
	}
	if (dt_comm_mpi_new_watched(&world, 0, us, &err) != DT_OK) {
		fprintf(stderr, "rsag_probe: %s\n", err.msg);
		return 1;
	}
	bad = probe(world, world, "world");
	if (dt_comm_split(world, dt_comm_rank(world) % 2,
			  dt_comm_rank(world), &half, &err) != DT_OK) {
		fprintf(stderr, "rsag_probe: %s\n", err.msg);
		dt_comm_abort(world, 1);
	}
	bad += probe(world, half, "split");
	if (!bad)
		printf("rank %d of %d: reduce-scatter and all-gather ok "
		       "(progress_us %lld), split of %d ok\n",
		       dt_comm_rank(world), dt_comm_size(world),
		       (long long)world->progress_us, dt_comm_size(half));
	fflush(stdout);
	dt_comm_free(half);
	dt_comm_free(world);
	return bad != 0;
}
