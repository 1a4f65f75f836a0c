/* SPDX-License-Identifier: MIT */
/* seqpar_probe.c - sequence parallelism's row collectives of comm/comm.h
 * (dt_comm_row_share, dt_comm_reduce_scatter_rows_f32,
 * dt_comm_allgather_rows_f32) under mpirun, for
 * tests/integration/seq-par.sh:
 *
 *   seqpar_probe
 *
 * For rows of 0, 1, 2, 3, 5, 7 and 101 (fewer rows than ranks, and
 * counts no rank count divides, included) and rows of 1, 3 and 64
 * floats, every rank fills values it can compute for every rank and
 * checks, bit for bit:
 *   - its share is [floor(rows r / P), floor(rows (r + 1) / P)), worked
 *     out here;
 *   - after the reduce-scatter its share holds the float sum in the
 *     ring's order (x_(r+1), + x_(r+2), ..., + x_r) on values whose sums
 *     are not exact, and the rest of the buffer is as it was;
 *   - those same bytes as dt_comm_allreduce_sum_f32 (MPI_Allreduce) of
 *     the whole buffer gives in the share: on 1 and 2 ranks for any
 *     values; on more ranks for values whose sums are exact (multiples
 *     of 2^-8 below 2^12 in magnitude), and on the inexact ones it
 *     prints how many of the share's floats differ from MPI's order
 *     ("inexact: D of N differ from MPI_Allreduce");
 *   - after the all-gather every row holds its owner's values (the
 *     other rows start as NaN);
 *   - dt_comm_bytes_sent grows by 4 P ceil(rows / P) row_len a call
 *     (0 on one rank).
 * Prints "rank R of P: row collectives ok" and exits 0, or names the
 * first wrong value and exits 1. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

static const size_t n_rows[] = { 0, 1, 2, 3, 5, 7, 101 };
static const size_t row_lens[] = { 1, 3, 64 };

/* Rank r's float at element i: exact, a multiple of 2^-8 in (-2^12,
 * 2^12); else a float of 24 bits from about 2^-20 to 2^20, of either
 * sign, so the order of a sum shows in its bits. */
static float
value(int r, size_t i, int exact)
{
	uint64_t h = (uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)(i + 1) * 0xbf58476d1ce4e5b9ull;

	h ^= h >> 31;
	h *= 0xd6e9f8a2b1c2d3e5ull;
	h ^= h >> 29;
	if (exact)
		return (float)ldexp((double)(int64_t)(h % (1u << 20)) -
				    (double)(1u << 19), -8);
	return (float)((h & 1 ? -1 : 1) *
		       ldexp((double)((h >> 8) & 0xffffff),
			     -24 + (int)(h % 41) - 20));
}

static int
same(float a, float b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

struct probe {
	struct dt_comm *c;
	int rank, size, bad;
	long differ, compared;
};

static void
wrong(struct probe *p, const char *check, size_t rows, size_t len,
      size_t i, float got, float want)
{
	if (p->bad++ == 0)
		printf("rank %d: %s: rows %zu of %zu, element %zu: %.9g, "
		       "expected %.9g\n", p->rank, check, rows, len, i,
		       (double)got, (double)want);
}

static void
die(struct probe *p, const struct dt_error *err)
{
	fprintf(stderr, "seqpar_probe: %s\n", err->msg);
	dt_comm_abort(p->c, 1);
}

/* The sum of element i in the ring's order for rank r's share. */
static float
ring_sum(const struct probe *p, size_t i, int r, int exact)
{
	int first = (r + 1) % p->size;
	float s = value(first, i, exact);

	for (int j = 1; j < p->size; j++)
		s = value((first + j) % p->size, i, exact) + s;
	return s;
}

static uint64_t
counted(const struct probe *p, size_t rows, size_t len)
{
	size_t m = (rows + (size_t)p->size - 1) / (size_t)p->size;

	if (p->size == 1 || rows == 0)
		return 0;
	return 4u * (uint64_t)p->size * m * len;
}

static void
check_reduce_scatter(struct probe *p, size_t rows, size_t len, int exact)
{
	size_t n = rows * len, lo, hi;
	float *buf = malloc((n + 1) * sizeof *buf);
	float *all = malloc((n + 1) * sizeof *all);
	struct dt_error err = { 0 };
	uint64_t b0;

	for (size_t i = 0; i < n; i++)
		buf[i] = all[i] = value(p->rank, i, exact);
	dt_comm_row_share(rows, p->size, p->rank, &lo, &hi);
	b0 = dt_comm_bytes_sent(p->c);
	if (dt_comm_reduce_scatter_rows_f32(p->c, buf, rows, len, &err) !=
	    DT_OK)
		die(p, &err);
	if (dt_comm_bytes_sent(p->c) - b0 != counted(p, rows, len))
		wrong(p, "reduce-scatter bytes", rows, len, 0,
		      (float)(dt_comm_bytes_sent(p->c) - b0),
		      (float)counted(p, rows, len));
	if (dt_comm_allreduce_sum_f32(p->c, all, n, &err) != DT_OK)
		die(p, &err);
	for (size_t i = 0; i < n; i++) {
		int mine = i >= lo * len && i < hi * len;
		float want = mine ? ring_sum(p, i, p->rank, exact) :
				    value(p->rank, i, exact);

		if (!same(buf[i], want))
			wrong(p, mine ? "reduce-scatter ring order" :
					"reduce-scatter left a row alone",
			      rows, len, i, buf[i], want);
		if (!mine)
			continue;
		if (p->size <= 2 || exact) {
			if (!same(buf[i], all[i]))
				wrong(p, "reduce-scatter against the "
					 "all-reduce", rows, len, i, buf[i],
				      all[i]);
		} else {
			p->compared++;
			p->differ += !same(buf[i], all[i]);
		}
	}
	free(buf);
	free(all);
}

static void
check_allgather(struct probe *p, size_t rows, size_t len)
{
	size_t n = rows * len, lo, hi;
	float *buf = malloc((n + 1) * sizeof *buf);
	struct dt_error err = { 0 };
	uint64_t b0;

	dt_comm_row_share(rows, p->size, p->rank, &lo, &hi);
	for (size_t i = 0; i < n; i++)
		buf[i] = i >= lo * len && i < hi * len ?
			 value(p->rank, i, 0) : NAN;
	b0 = dt_comm_bytes_sent(p->c);
	if (dt_comm_allgather_rows_f32(p->c, buf, rows, len, &err) != DT_OK)
		die(p, &err);
	if (dt_comm_bytes_sent(p->c) - b0 != counted(p, rows, len))
		wrong(p, "all-gather bytes", rows, len, 0,
		      (float)(dt_comm_bytes_sent(p->c) - b0),
		      (float)counted(p, rows, len));
	for (int r = 0; r < p->size; r++) {
		size_t rlo = rows * (size_t)r / (size_t)p->size;
		size_t rhi = rows * (size_t)(r + 1) / (size_t)p->size;

		for (size_t i = rlo * len; i < rhi * len; i++)
			if (!same(buf[i], value(r, i, 0)))
				wrong(p, "all-gather", rows, len, i, buf[i],
				      value(r, i, 0));
	}
	free(buf);
}

int
main(void)
{
	struct dt_error err = { 0 };
	struct probe p = { 0 };

	if (dt_comm_mpi_new(&p.c, &err) != DT_OK) {
		fprintf(stderr, "seqpar_probe: %s\n", err.msg);
		return 1;
	}
	p.rank = dt_comm_rank(p.c);
	p.size = dt_comm_size(p.c);
	for (size_t a = 0; a < sizeof n_rows / sizeof *n_rows; a++)
		for (size_t b = 0; b < sizeof row_lens / sizeof *row_lens;
		     b++) {
			size_t rows = n_rows[a], len = row_lens[b], lo, hi;

			dt_comm_row_share(rows, p.size, p.rank, &lo, &hi);
			if (lo != rows * (size_t)p.rank / (size_t)p.size ||
			    hi != rows * (size_t)(p.rank + 1) /
				  (size_t)p.size)
				wrong(&p, "share", rows, len, 0, (float)lo,
				      (float)(rows * (size_t)p.rank /
					      (size_t)p.size));
			check_reduce_scatter(&p, rows, len, 0);
			check_reduce_scatter(&p, rows, len, 1);
			check_allgather(&p, rows, len);
		}
	if (p.size > 2)
		printf("rank %d of %d: inexact: %ld of %ld differ from "
		       "MPI_Allreduce\n", p.rank, p.size, p.differ,
		       p.compared);
	if (!p.bad)
		printf("rank %d of %d: row collectives ok\n", p.rank, p.size);
	fflush(stdout);
	dt_comm_free(p.c);
	return p.bad != 0;
}
