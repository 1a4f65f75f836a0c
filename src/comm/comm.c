/* SPDX-License-Identifier: MIT */
/* comm.c - type-safe front of the communicator vtable. */
#include "comm/comm.h"
#include "comm/comm_priv.h"
#include "comm/watch.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/share.h"

/* Every blocking call is marked for the watchdog (parallel.timeout_s). */
#define WATCHED(c, call, expr) \
	do { \
		enum dt_status st_; \
		dt_watch_enter((c)->watch, (call)); \
		st_ = (expr); \
		dt_watch_leave((c)->watch); \
		return st_; \
	} while (0)

static enum dt_status
ok_or(struct dt_comm *c, void *buf, size_t n, int type, int op,
      struct dt_error *err)
{
	WATCHED(c, "MPI_Allreduce",
		c->ops->allreduce(c, buf, n, type, op, err));
}

int
dt_comm_rank(const struct dt_comm *c)
{
	return c->rank;
}

int
dt_comm_size(const struct dt_comm *c)
{
	return c->size;
}

int
dt_comm_local_size(const struct dt_comm *c)
{
	return c->local_size;
}

int
dt_comm_local_rank(const struct dt_comm *c)
{
	return c->local_rank;
}

enum dt_status
dt_comm_node_barrier(struct dt_comm *c, struct dt_error *err)
{
	WATCHED(c, "MPI_Barrier (node)", c->ops->node_barrier(c, err));
}

uint64_t
dt_comm_bytes_sent(const struct dt_comm *c)
{
	return c->bytes_sent;
}

static enum dt_status
no_p2p(struct dt_comm *c, const char *call, struct dt_error *err)
{
	return dt_errorf(err, DT_ERR_MPI, "rank %d: %s: a single-process "
			 "communicator has no other rank", c->rank, call);
}

enum dt_status
dt_comm_isend_f32(struct dt_comm *c, const float *buf, size_t n, int dest,
		  int tag, int *req, struct dt_error *err)
{
	enum dt_status st;

	if (c->ops->isend == NULL)
		return no_p2p(c, "send", err);
	if (n > INT_MAX)
		return dt_errorf(err, DT_ERR_MPI, "rank %d: send of %zu floats: "
				 "more than %d", c->rank, n, INT_MAX);
	st = c->ops->isend(c, buf, (int)n, dest, tag, req, err);
	if (st == DT_OK)
		c->p2p_bytes_sent += (uint64_t)n * sizeof(float);
	return st;
}

enum dt_status
dt_comm_send_f32(struct dt_comm *c, const float *buf, size_t n, int dest,
		 int tag, struct dt_error *err)
{
	int req;
	enum dt_status st = dt_comm_isend_f32(c, buf, n, dest, tag, &req, err);

	return st == DT_OK ? dt_comm_wait(c, req, err) : st;
}

enum dt_status
dt_comm_recv_f32(struct dt_comm *c, float *buf, size_t n, int src, int tag,
		 struct dt_error *err)
{
	if (c->ops->recv == NULL)
		return no_p2p(c, "receive", err);
	if (n > INT_MAX)
		return dt_errorf(err, DT_ERR_MPI, "rank %d: receive of %zu "
				 "floats: more than %d", c->rank, n, INT_MAX);
	WATCHED(c, "MPI_Recv", c->ops->recv(c, buf, (int)n, src, tag, err));
}

enum dt_status
dt_comm_wait(struct dt_comm *c, int req, struct dt_error *err)
{
	if (c->ops->wait == NULL)
		return DT_OK;
	WATCHED(c, "MPI_Wait", c->ops->wait(c, req, 0, err));
}

enum dt_status
dt_comm_wait_all(struct dt_comm *c, struct dt_error *err)
{
	if (c->ops->wait == NULL)
		return DT_OK;
	WATCHED(c, "MPI_Waitall", c->ops->wait(c, -1, 1, err));
}

uint64_t
dt_comm_p2p_bytes_sent(const struct dt_comm *c)
{
	return c->p2p_bytes_sent;
}

enum dt_status
dt_comm_allreduce_sum_f32(struct dt_comm *c, float *buf, size_t n,
			  struct dt_error *err)
{
	return ok_or(c, buf, n, DT_COMM_F32, DT_COMM_SUM, err);
}

enum dt_status
dt_comm_allreduce_sum_f64(struct dt_comm *c, double *buf, size_t n,
			  struct dt_error *err)
{
	return ok_or(c, buf, n, DT_COMM_F64, DT_COMM_SUM, err);
}

enum dt_status
dt_comm_allreduce_sum_bf16(struct dt_comm *c, uint16_t *buf, size_t n,
			   struct dt_error *err)
{
	return ok_or(c, buf, n, DT_COMM_BF16, DT_COMM_SUM, err);
}

/* Starting a non-blocking sum does not wait: not watched. */
static enum dt_status
istart(struct dt_comm *c, void *buf, size_t n, int type, struct dt_error *err)
{
	if (c->ops->iallreduce == NULL)
		return DT_OK;
	return c->ops->iallreduce(c, buf, n, type, err);
}

enum dt_status
dt_comm_iallreduce_sum_f32(struct dt_comm *c, float *buf, size_t n,
			   struct dt_error *err)
{
	return istart(c, buf, n, DT_COMM_F32, err);
}

enum dt_status
dt_comm_iallreduce_sum_f64(struct dt_comm *c, double *buf, size_t n,
			   struct dt_error *err)
{
	return istart(c, buf, n, DT_COMM_F64, err);
}

enum dt_status
dt_comm_iallreduce_sum_bf16(struct dt_comm *c, uint16_t *buf, size_t n,
			    struct dt_error *err)
{
	return istart(c, buf, n, DT_COMM_BF16, err);
}

size_t
dt_comm_chunk_lo(size_t n, int p, int i)
{
	return dt_share_lo(n, p, i);
}

void
dt_comm_part(size_t n, int p, int rank, size_t *lo, size_t *hi)
{
	int i = (rank + 1) % p;	/* where the ring's sum of a chunk ends */

	*lo = dt_comm_chunk_lo(n, p, i);
	*hi = dt_comm_chunk_lo(n, p, i + 1);
}

/* The reduce-scatter of n values of type, blocking or started. Without
 * an implementation of its own, the all-reduce: its sum holds every
 * part. The payload is counted as an all-reduce's, whatever ran. */
static enum dt_status
reduce_scatter(struct dt_comm *c, void *buf, size_t n, int type, int start,
	       struct dt_error *err)
{
	size_t elem = type == DT_COMM_F32 ? sizeof(float) : sizeof(double);
	uint64_t b0 = c->bytes_sent;
	enum dt_status st;

	if (c->size == 1)
		return DT_OK;
	if (c->ops->reduce_scatter == NULL)
		st = start ? istart(c, buf, n, type, err) :
			     ok_or(c, buf, n, type, DT_COMM_SUM, err);
	else if (start)	/* starting does not wait: not watched */
		st = c->ops->reduce_scatter(c, buf, n, type, 1, err);
	else {
		dt_watch_enter(c->watch, "MPI_Waitall (reduce-scatter)");
		st = c->ops->reduce_scatter(c, buf, n, type, 0, err);
		dt_watch_leave(c->watch);
	}
	if (st == DT_OK)
		c->bytes_sent = b0 + (uint64_t)n * elem;
	return st;
}

enum dt_status
dt_comm_reduce_scatter_sum_f32(struct dt_comm *c, float *buf, size_t n,
			       struct dt_error *err)
{
	return reduce_scatter(c, buf, n, DT_COMM_F32, 0, err);
}

enum dt_status
dt_comm_reduce_scatter_sum_f64(struct dt_comm *c, double *buf, size_t n,
			       struct dt_error *err)
{
	return reduce_scatter(c, buf, n, DT_COMM_F64, 0, err);
}

enum dt_status
dt_comm_ireduce_scatter_sum_f32(struct dt_comm *c, float *buf, size_t n,
				struct dt_error *err)
{
	return reduce_scatter(c, buf, n, DT_COMM_F32, 1, err);
}

enum dt_status
dt_comm_ireduce_scatter_sum_f64(struct dt_comm *c, double *buf, size_t n,
				struct dt_error *err)
{
	return reduce_scatter(c, buf, n, DT_COMM_F64, 1, err);
}

/* Without an all-gather of its own: each rank's part broadcast from it
 * (copies only, so the same bits). */
static enum dt_status
allgather_bcast(struct dt_comm *c, float *buf, size_t n, struct dt_error *err)
{
	for (int r = 0; r < c->size; r++) {
		size_t lo, hi;
		enum dt_status st;

		dt_comm_part(n, c->size, r, &lo, &hi);
		if (hi == lo)
			continue;
		st = dt_comm_bcast(c, buf + lo, (hi - lo) * sizeof *buf, r,
				   err);
		if (st != DT_OK)
			return st;
	}
	return DT_OK;
}

static enum dt_status
allgather(struct dt_comm *c, float *buf, size_t n, int start,
	  struct dt_error *err)
{
	uint64_t b0 = c->bytes_sent;
	enum dt_status st;

	if (c->size == 1)
		return DT_OK;
	if (c->ops->allgather == NULL)
		st = allgather_bcast(c, buf, n, err);
	else if (start)
		st = c->ops->allgather(c, buf, n, 1, err);
	else {
		dt_watch_enter(c->watch, "MPI_Waitall (all-gather)");
		st = c->ops->allgather(c, buf, n, 0, err);
		dt_watch_leave(c->watch);
	}
	if (st == DT_OK)
		c->bytes_sent = b0 + (uint64_t)n * sizeof *buf;
	return st;
}

enum dt_status
dt_comm_allgather_f32(struct dt_comm *c, float *buf, size_t n,
		      struct dt_error *err)
{
	return allgather(c, buf, n, 0, err);
}

enum dt_status
dt_comm_iallgather_f32(struct dt_comm *c, float *buf, size_t n,
		       struct dt_error *err)
{
	return allgather(c, buf, n, 1, err);
}

void
dt_comm_row_share(size_t rows, int p, int rank, size_t *lo, size_t *hi)
{
	*lo = dt_comm_chunk_lo(rows, p, rank);
	*hi = dt_comm_chunk_lo(rows, p, rank + 1);
}

/* The staging of the row collectives: rank k's share of rows, padded to
 * m rows, lies at the ring's chunk (k + 1) mod p of p m rows, the chunk
 * dt_comm_part gives rank k. Copies the shares of buf (every share with
 * all_shares, else only this rank's) in and zeroes the padding. */
static void
rows_stage(const struct dt_comm *c, float *stage, const float *buf,
	   size_t rows, size_t row_len, size_t m, int all_shares)
{
	int p = c->size;

	for (int k = 0; k < p; k++) {
		size_t lo, hi;
		float *slot = stage + (size_t)((k + 1) % p) * m * row_len;

		dt_comm_row_share(rows, p, k, &lo, &hi);
		if (!all_shares && k != c->rank)
			hi = lo;
		if (hi > lo)
			memcpy(slot, buf + lo * row_len,
			       (hi - lo) * row_len * sizeof *buf);
		memset(slot + (hi - lo) * row_len, 0,
		       (m - (hi - lo)) * row_len * sizeof *buf);
	}
}

/* Copies rank k's share back out of the staging buffer into buf. */
static void
rows_unstage(const struct dt_comm *c, float *buf, const float *stage,
	     size_t rows, size_t row_len, size_t m, int k)
{
	size_t lo, hi;

	dt_comm_row_share(rows, c->size, k, &lo, &hi);
	if (hi > lo)
		memcpy(buf + lo * row_len,
		       stage + (size_t)((k + 1) % c->size) * m * row_len,
		       (hi - lo) * row_len * sizeof *buf);
}

enum dt_status
dt_comm_reduce_scatter_rows_f32(struct dt_comm *c, float *buf, size_t rows,
				size_t row_len, struct dt_error *err)
{
	size_t p = (size_t)c->size, m = (rows + p - 1) / p;
	float *stage;
	enum dt_status st;

	if (c->size == 1 || rows == 0 || row_len == 0)
		return DT_OK;
	stage = dt_xalloc_floats(p * m * row_len);
	rows_stage(c, stage, buf, rows, row_len, m, 1);
	st = dt_comm_reduce_scatter_sum_f32(c, stage, p * m * row_len, err);
	if (st == DT_OK)
		rows_unstage(c, buf, stage, rows, row_len, m, c->rank);
	free(stage);
	return st;
}

enum dt_status
dt_comm_allgather_rows_f32(struct dt_comm *c, float *buf, size_t rows,
			   size_t row_len, struct dt_error *err)
{
	size_t p = (size_t)c->size, m = (rows + p - 1) / p;
	float *stage;
	enum dt_status st;

	if (c->size == 1 || rows == 0 || row_len == 0)
		return DT_OK;
	stage = dt_xalloc_floats(p * m * row_len);
	rows_stage(c, stage, buf, rows, row_len, m, 0);
	st = dt_comm_allgather_f32(c, stage, p * m * row_len, err);
	if (st == DT_OK)
		for (int k = 0; k < c->size; k++)
			rows_unstage(c, buf, stage, rows, row_len, m, k);
	free(stage);
	return st;
}

/* The double all-reduce, then the rounding: where there is no ring. */
static enum dt_status
sum_then_round(struct dt_comm *c, double *acc, float *out, size_t n,
	       struct dt_error *err)
{
	enum dt_status st = dt_comm_allreduce_sum_f64(c, acc, n, err);

	if (st != DT_OK)
		return st;
	for (size_t i = 0; i < n; i++)
		out[i] = (float)acc[i];
	return DT_OK;
}

enum dt_status
dt_comm_allreduce_sum_f64_f32(struct dt_comm *c, double *acc, float *out,
			      size_t n, struct dt_error *err)
{
	uint64_t b0 = c->bytes_sent;
	size_t lo, hi;
	enum dt_status st;

	if (c->ops->isum_round == NULL || c->size == 1)
		return sum_then_round(c, acc, out, n, err);
	dt_comm_part(n, c->size, c->rank, &lo, &hi);
	st = dt_comm_reduce_scatter_sum_f64(c, acc, n, err);
	if (st != DT_OK)
		return st;
	for (size_t i = lo; i < hi; i++)
		out[i] = (float)acc[i];
	st = dt_comm_allgather_f32(c, out, n, err);
	/* Counted as the double all-reduce it stands for. */
	c->bytes_sent = b0 + (st == DT_OK ? (uint64_t)n * sizeof *acc : 0);
	return st;
}

/* Starting does not wait: not watched. */
enum dt_status
dt_comm_iallreduce_sum_f64_f32(struct dt_comm *c, double *acc, float *out,
			       size_t n, struct dt_error *err)
{
	enum dt_status st;

	if (c->ops->isum_round == NULL || c->size == 1)
		return dt_comm_allreduce_sum_f64_f32(c, acc, out, n, err);
	st = c->ops->isum_round(c, acc, out, n, err);
	if (st == DT_OK)
		c->bytes_sent += (uint64_t)n * sizeof *acc;
	return st;
}

enum dt_status
dt_comm_coll_test(struct dt_comm *c, int *all_done, struct dt_error *err)
{
	if (c->ops->coll_test == NULL) {
		if (all_done != NULL)
			*all_done = 1;
		return DT_OK;
	}
	return c->ops->coll_test(c, all_done, err);
}

enum dt_status
dt_comm_coll_wait(struct dt_comm *c, struct dt_error *err)
{
	if (c->ops->coll_wait == NULL)
		return DT_OK;
	WATCHED(c, "MPI_Waitall", c->ops->coll_wait(c, err));
}

enum dt_status
dt_comm_coll_wait_first(struct dt_comm *c, int n_sums, struct dt_error *err)
{
	if (c->ops->coll_wait_first == NULL)
		return dt_comm_coll_wait(c, err);
	WATCHED(c, "MPI_Waitall", c->ops->coll_wait_first(c, n_sums, err));
}

enum dt_status
dt_comm_allreduce_max_int(struct dt_comm *c, int *buf, size_t n,
			  struct dt_error *err)
{
	return ok_or(c, buf, n, DT_COMM_INT, DT_COMM_MAX, err);
}

enum dt_status
dt_comm_bcast(struct dt_comm *c, void *buf, size_t bytes, int root,
	      struct dt_error *err)
{
	WATCHED(c, "MPI_Bcast", c->ops->bcast(c, buf, bytes, root, err));
}

/* Starting does not wait: not watched (the wait that covers it is). */
enum dt_status
dt_comm_ibcast(struct dt_comm *c, void *buf, size_t bytes, int root,
	       struct dt_error *err)
{
	if (c->ops->ibcast == NULL || dt_comm_size(c) == 1)
		return dt_comm_bcast(c, buf, bytes, root, err);
	return c->ops->ibcast(c, buf, bytes, root, err);
}

enum dt_status
dt_comm_barrier(struct dt_comm *c, struct dt_error *err)
{
	WATCHED(c, "MPI_Barrier", c->ops->barrier(c, err));
}

enum dt_status
dt_comm_split(struct dt_comm *c, int color, int key, struct dt_comm **out,
	      struct dt_error *err)
{
	WATCHED(c, "MPI_Comm_split", c->ops->split(c, color, key, out, err));
}

void
dt_comm_abort(struct dt_comm *c, int code)
{
	c->ops->abort(c, code);
	abort();	/* the implementation must not return */
}

void
dt_comm_free(struct dt_comm *c)
{
	if (c != NULL)
		c->ops->free(c);
}

enum dt_status
dt_comm_agree(struct dt_comm *c, enum dt_status local, struct dt_error *err)
{
	/* Two values per rank: the status, and the rank if it failed (else
	 * INT_MAX negated so MAX picks the lowest failing rank). */
	int v[2] = { (int)local, local != DT_OK ? -c->rank : -c->size };
	struct dt_error e;
	enum dt_status st = dt_comm_allreduce_max_int(c, v, 2, &e);

	if (st != DT_OK) {
		if (err != NULL)
			*err = e;
		return st;
	}
	if (v[0] != DT_OK && local == DT_OK)
		dt_errorf(err, (enum dt_status)v[0], "rank %d failed (its message is above); every rank stops", -v[1]);
	return (enum dt_status)v[0];
}

/* Collective: the lowest rank for which bad holds, or -1 (a max
 * all-reduce of -rank, or -size for a rank that is fine). */
static enum dt_status
lowest_bad(struct dt_comm *c, int bad, int *rank, struct dt_error *err)
{
	int v = bad ? -c->rank : -c->size;
	enum dt_status st = dt_comm_allreduce_max_int(c, &v, 1, err);

	if (st == DT_OK)
		*rank = -v == c->size ? -1 : -v;
	return st;
}

/* Collective: whether every rank's n equals rank 0's; *bad is the lowest
 * rank whose n differs (-1: none), *n0 rank 0's n and *nbad rank *bad's. */
static enum dt_status
compare_lengths(struct dt_comm *c, uint64_t n, int *bad, uint64_t *n0,
		uint64_t *nbad, struct dt_error *err)
{
	enum dt_status st;

	*n0 = n;
	st = dt_comm_bcast(c, n0, sizeof *n0, 0, err);
	if (st == DT_OK)
		st = lowest_bad(c, n != *n0, bad, err);
	if (st != DT_OK || *bad < 0)
		return st;
	*nbad = n;
	return dt_comm_bcast(c, nbad, sizeof *nbad, *bad, err);
}

enum dt_status
dt_comm_agree_length(struct dt_comm *c, const char *what, uint64_t n,
		     struct dt_error *err)
{
	uint64_t n0 = 0, nbad = 0;
	int bad = -1;
	enum dt_status st = compare_lengths(c, n, &bad, &n0, &nbad, err);

	if (st != DT_OK || bad < 0)
		return st;
	return dt_errorf(err, DT_ERR_MPI, "rank %d: %s: %" PRIu64 ", rank 0 "
			 "has %" PRIu64, bad, what, nbad, n0);
}

enum dt_status
dt_comm_check_same(struct dt_comm *c, const char *what, const void *bytes,
		   size_t n, int *first_bad_rank, struct dt_error *err)
{
	uint64_t n0 = 0, nbad = 0;
	int bad = -1;
	enum dt_status st;
	char *theirs;

	if (first_bad_rank != NULL)
		*first_bad_rank = -1;
	st = compare_lengths(c, n, &bad, &n0, &nbad, err);
	if (st != DT_OK)
		return st;
	if (bad >= 0) {
		if (first_bad_rank != NULL)
			*first_bad_rank = bad;
		return dt_errorf(err, DT_ERR_JOB, "rank %d: %s differs from "
				 "rank 0's (%" PRIu64 " bytes, rank 0 has %"
				 PRIu64 ")", bad, what, nbad, n0);
	}
	/* Every rank now has n == n0: the broadcast below cannot truncate. */
	theirs = dt_xmalloc(n > 0 ? n : 1, 1);
	if (n > 0)
		memcpy(theirs, bytes, n);
	st = n > 0 ? dt_comm_bcast(c, theirs, n, 0, err) : DT_OK;
	if (st == DT_OK)
		st = lowest_bad(c, n > 0 && memcmp(theirs, bytes, n) != 0,
				&bad, err);
	free(theirs);
	if (st != DT_OK || bad < 0)
		return st;
	if (first_bad_rank != NULL)
		*first_bad_rank = bad;
	return dt_errorf(err, DT_ERR_JOB, "rank %d: %s differs from rank 0's",
			 bad, what);
}

enum dt_status
dt_comm_bcast_blob(struct dt_comm *c, int root, const void *bytes, size_t n,
		   char **out, size_t *out_n, struct dt_error *err)
{
	uint64_t n0 = c->rank == root ? (uint64_t)n : 0;
	enum dt_status st;
	char *buf;

	*out = NULL;
	*out_n = 0;
	st = dt_comm_bcast(c, &n0, sizeof n0, root, err);
	if (st != DT_OK)
		return st;
	if (n0 >= SIZE_MAX)
		return dt_errorf(err, DT_ERR_MPI, "rank %d: a broadcast of %"
				 PRIu64 " bytes does not fit memory", c->rank,
				 n0);
	buf = dt_xmalloc((size_t)n0 + 1, 1);
	if (c->rank == root && n0 > 0)
		memcpy(buf, bytes, (size_t)n0);
	st = n0 > 0 ? dt_comm_bcast(c, buf, (size_t)n0, root, err) : DT_OK;
	if (st != DT_OK) {
		free(buf);
		return st;
	}
	buf[n0] = '\0';
	*out = buf;
	*out_n = (size_t)n0;
	return DT_OK;
}
