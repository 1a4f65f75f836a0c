/* SPDX-License-Identifier: MIT */
/* comm.h - the communicator: every byte between ranks goes through here.
 *
 * Two implementations sit behind one small vtable (as ggml puts backends
 * behind one): Open MPI (comm_mpi.c, the only file in dtrain that includes
 * mpi.h) and a single-process one (comm_self.c) that lets unit tests run the
 * training code without mpirun. Every call returns a status; an MPI failure
 * is DT_ERR_MPI with MPI_Error_string, the call and the rank. */
#ifndef DT_COMM_COMM_H
#define DT_COMM_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

struct dt_comm;

/* Starts MPI (MPI_Init_thread; works as a singleton without mpirun), with
 * MPI_ERRORS_RETURN on the world communicator. *out is owned by the caller
 * (dt_comm_free finalises MPI). DT_ERR_MPI if MPI cannot start. Before
 * MPI starts it sets, for the whole process and each only where the
 * environment does not: OMPI_MCA_coll_libnbc_iallreduce_algorithm to 1
 * (the ring; 4, recursive doubling, where OMPI_COMM_WORLD_SIZE is 2),
 * and glibc's heap to stay at its high-water mark (trim threshold 1 GiB,
 * mmap threshold 32 MiB, top pad 16 MiB; comm_mpi.c says why). */
enum dt_status dt_comm_mpi_new(struct dt_comm **out, struct dt_error *err);

/* As dt_comm_mpi_new, and with timeout_s > 0 (parallel.timeout_s, the
 * same on every rank) MPI runs at MPI_THREAD_MULTIPLE and a watchdog
 * thread names any peer that has been silent or stuck for timeout_s while
 * this rank waited that long in a call of this communicator or one split
 * from it, then ends the job (comm/watchdog.c). With progress_us in
 * [1, 1000000] (parallel.progress_us) MPI runs at MPI_THREAD_MULTIPLE
 * too, and each communicator (this one or a split) that starts a non-
 * blocking sum (dt_comm_iallreduce_*) gets a thread that drives its sums
 * in flight every progress_us microseconds, sleeping in between
 * (comm_mpi.c); where the MPI does not provide MPI_THREAD_MULTIPLE the
 * sums move on inside dt_comm_coll_test as without it. timeout_s 0 and
 * progress_us 0: exactly dt_comm_mpi_new. */
enum dt_status dt_comm_mpi_new_watched(struct dt_comm **out, double timeout_s,
				       int64_t progress_us,
				       struct dt_error *err);

/* Open MPI's TCP eager limit for this process, set before MPI starts
 * (call it before dt_comm_mpi_new*): with bytes > 0 and none of
 * OMPI_MCA_btl_tcp_eager_limit, OMPI_MCA_btl_tcp_rndv_eager_limit and
 * OMPI_MCA_btl_tcp_max_send_size in the environment (where mpirun puts
 * -x and --mca settings), sets all three to bytes and returns bytes; a
 * message up to that size then leaves in one fragment, without the
 * rendezvous that waits for the receiver's next MPI call. Returns -1
 * (and sets nothing) where the environment has any of the three, 0
 * where bytes <= 0. Settings in Open MPI's parameter files are not
 * seen: the environment's value wins over them. The bits of a sum do
 * not depend on it. */
int64_t dt_comm_mpi_tcp_eager(int64_t bytes);

/* A world of one rank with no MPI at all; collectives are identities. */
struct dt_comm *dt_comm_self_new(void);

/* Finalises (MPI) and frees; NULL is accepted. */
void dt_comm_free(struct dt_comm *c);

int dt_comm_rank(const struct dt_comm *c);
int dt_comm_size(const struct dt_comm *c);
/* Ranks of this job on this node (shared-memory group), >= 1, and this
 * rank's place among them (0 = the node's first rank). */
int dt_comm_local_size(const struct dt_comm *c);
int dt_comm_local_rank(const struct dt_comm *c);

/* In-place sum over all ranks of n floats / doubles / int64s. */
enum dt_status dt_comm_allreduce_sum_f32(struct dt_comm *c, float *buf,
					 size_t n, struct dt_error *err);
enum dt_status dt_comm_allreduce_sum_f64(struct dt_comm *c, double *buf,
					 size_t n, struct dt_error *err);
/* In-place sum over all ranks of n bfloat16 values (util/bf16.h): each
 * pair of partial sums is widened to float, added in float and rounded
 * back to bfloat16 (to nearest even) by a user-defined MPI operation, so
 * 2 bytes a value cross the wire. Errors as for the other sums. */
enum dt_status dt_comm_allreduce_sum_bf16(struct dt_comm *c, uint16_t *buf,
					  size_t n, struct dt_error *err);
/* Non-blocking in-place sums (MPI_Iallreduce): start the sum of n floats
 * / doubles / bfloat16 values of buf over all ranks and return at once.
 * buf belongs to MPI until dt_comm_coll_wait returns, or a
 * dt_comm_coll_wait_first that covers this sum: neither read nor write
 * it before. Every rank starts the same sums in the same order.
 * The bytes are counted in dt_comm_bytes_sent when the sum starts. On a
 * single-process communicator (or a world of one rank) buf already holds
 * the sum and nothing is pending. Errors: DT_ERR_MPI naming the call and
 * the rank; nothing is pending for this buffer then. */
enum dt_status dt_comm_iallreduce_sum_f32(struct dt_comm *c, float *buf,
					  size_t n, struct dt_error *err);
enum dt_status dt_comm_iallreduce_sum_f64(struct dt_comm *c, double *buf,
					  size_t n, struct dt_error *err);
enum dt_status dt_comm_iallreduce_sum_bf16(struct dt_comm *c, uint16_t *buf,
					   size_t n, struct dt_error *err);
/* The exact gradient sum in three quarters of the double all-reduce's
 * bytes (6 a value instead of 8 on 2 ranks): out[i] =
 * (float)(sum over the ranks of acc[i]), the same floats on every rank,
 * for acc and out of n values (the batch dimension already summed into
 * acc). It is dt_comm_reduce_scatter_sum_f64 of acc, each rank rounding
 * its part (dt_comm_part) into out once, then dt_comm_allgather_f32 of
 * out: the ring of dtrain's own over Open MPI (above), each rank sending
 * (P - 1) / P x 12 n bytes where the double all-reduce sends
 * (P - 1) / P x 16 n. The value is that of dt_comm_allreduce_sum_f64
 * and a rounding whenever the double sums are exact (sums of floats of
 * nearby exponents, as the gradients' accumulators are), and on 2 ranks
 * always: a + b in double does not depend on the order. acc is
 * clobbered (partial sums); out is written. dt_comm_bytes_sent counts
 * the 8 n bytes handed in, as for the double all-reduce. Without the
 * ring (one rank, the host-first communicator of comm/hier.h, whose
 * host-first double sum is its point): the double all-reduce and the
 * rounding. The non-blocking form starts the sum as
 * dt_comm_iallreduce_sum_f64 does (the same rules: acc and out belong
 * to the sum until a wait covers it; it is one sum for
 * dt_comm_coll_wait_first; tests and the progress thread move its steps
 * on, the all-gather's first as soon as the reduce-scatter's last is
 * done and rounded). Errors: DT_ERR_MPI naming the call and the rank. */
enum dt_status dt_comm_allreduce_sum_f64_f32(struct dt_comm *c, double *acc,
					     float *out, size_t n,
					     struct dt_error *err);
enum dt_status dt_comm_iallreduce_sum_f64_f32(struct dt_comm *c, double *acc,
					      float *out, size_t n,
					      struct dt_error *err);
/* The sharded collectives (for ZeRO-style sharding: Rajbhandari et al.,
 * "ZeRO: memory optimizations toward training trillion parameter
 * models", SC 2020). A buffer of n values is cut into P parts, one a
 * rank: a reduce-scatter leaves each rank the sum over the ranks of its
 * own part only, an all-gather gives every rank every rank's part. One
 * after the other they are an all-reduce (Rabenseifner's composition;
 * Thakur, Rabenseifner and Gropp, "Optimization of collective
 * communication operations in MPICH", IJHPCA 19(1), 2005), and
 * dt_comm_allreduce_sum_f64_f32 is exactly that.
 *
 * The cut: dt_comm_part gives rank `rank` of p its part [*lo, *hi) of n
 * values. Chunk i of n is [floor(n i / p), floor(n (i + 1) / p)) (sizes
 * differ by at most one, the last is ceil(n / p)), and rank r holds chunk
 * (r + 1) mod p: the chunk where the ring's sum ends (below), so that
 * the exact mode keeps the bits it has always had. With n < p some parts
 * are empty (n = 0: all). p >= 1 and 0 <= rank < p; the same on every
 * communicator and every implementation. */
void dt_comm_part(size_t n, int p, int rank, size_t *lo, size_t *hi);

/* Reduce-scatter, in place: buf holds this rank's n floats / doubles
 * (every rank passes the same n); on return buf[lo, hi) (dt_comm_part
 * of n, dt_comm_size, dt_comm_rank) holds the sum over the ranks of
 * those values and the rest of buf is clobbered (partial sums). Over
 * Open MPI a ring of dtrain's own on a duplicate of the communicator
 * (Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for
 * clusters of workstations", JPDC 69(2), 2009): P - 1 steps, in each of
 * which every rank sends one chunk to its right neighbour and adds the
 * one its left sends, (P - 1) / P x n values sent a rank, half an
 * all-reduce's. Chunk i is summed in the order x_i, then + x_(i+1), ...,
 * + x_(i-1) (rank indices mod P, each addition in the buffer's type),
 * fixed by the ranks, so the same from run to run; on 2 ranks and
 * wherever the sums are exact it equals the all-reduce's value. The
 * host-first communicator (comm/hier.h) runs its flat communicator's
 * ring; one rank: buf is already the result. dt_comm_bytes_sent counts
 * the n values handed in (as an all-reduce would); on one rank
 * nothing. The non-blocking form starts it as dt_comm_iallreduce_sum_f32
 * does (buf belongs to it until a wait covers it; it is one sum for
 * dt_comm_coll_wait_first; tests and the progress thread move its steps
 * on); on the host-first communicator it is done when it returns.
 * Errors: DT_ERR_MPI naming the call and the rank. */
enum dt_status dt_comm_reduce_scatter_sum_f32(struct dt_comm *c, float *buf,
					      size_t n, struct dt_error *err);
enum dt_status dt_comm_reduce_scatter_sum_f64(struct dt_comm *c,
					      double *buf, size_t n,
					      struct dt_error *err);
enum dt_status dt_comm_ireduce_scatter_sum_f32(struct dt_comm *c,
					       float *buf, size_t n,
					       struct dt_error *err);
enum dt_status dt_comm_ireduce_scatter_sum_f64(struct dt_comm *c,
					       double *buf, size_t n,
					       struct dt_error *err);
/* All-gather, in place: buf[lo, hi) (dt_comm_part, as above) holds this
 * rank's part of n floats; on return all of buf holds every rank's part,
 * bit for bit as its rank held it (nothing is added; the rest of buf
 * was ignored). Over Open MPI the second half of the same ring: P - 1
 * steps, each passing on to the right the part received from the left
 * (Patarasuk and Yuan, above), (P - 1) / P x 4 n bytes sent a rank. The
 * host-first communicator runs its flat communicator's; one rank:
 * nothing to do. dt_comm_bytes_sent counts the 4 n bytes of buf (on
 * one rank nothing). The non-blocking form: as for the reduce-scatter.
 * Errors: DT_ERR_MPI naming the call and the rank. */
enum dt_status dt_comm_allgather_f32(struct dt_comm *c, float *buf, size_t n,
				     struct dt_error *err);
enum dt_status dt_comm_iallgather_f32(struct dt_comm *c, float *buf, size_t n,
				      struct dt_error *err);
/* Sequence parallelism's row collectives (Korthikanti et al., "Reducing
 * Activation Recomputation in Large Transformer Models", 2022): a buffer
 * of `rows` rows of row_len floats (row-major, batch x tokens first) is
 * cut by whole rows in rank order: dt_comm_row_share gives rank `rank`
 * of p the rows [*lo, *hi) = [floor(rows rank / p), floor(rows (rank +
 * 1) / p)), dt_comm_part's chunk sizes (they differ by at most one) but
 * chunk r for rank r. p >= 1, 0 <= rank < p; rows < p leaves some
 * shares empty.
 *
 * dt_comm_reduce_scatter_rows_f32: every rank passes its whole buffer
 * (the same rows and row_len); on return this rank's share of rows
 * holds the sum over the ranks of those rows, the rest of buf is left
 * as it was. dt_comm_allgather_rows_f32: this rank's share of rows in
 * buf holds its values; on return every row of buf holds its owner's,
 * bit for bit. Both run the communicator's ring (dt_comm_reduce_
 * scatter_sum_f32, dt_comm_allgather_f32) on a staging buffer of
 * p ceil(rows / p) rows (every share padded with zero rows to the
 * largest, placed at the chunk of the ring's cut its rank ends on), so
 * each sum is in the ring's order: on 2 ranks the float all-reduce's
 * bits, on more the same wherever the sums are exact, otherwise the
 * ring's fixed order (x_(r+1), + x_(r+2), ..., + x_r for rank r's
 * rows) where MPI_Allreduce has its own. dt_comm_bytes_sent counts the
 * staged p ceil(rows / p) row_len floats (4 bytes each). One rank: buf
 * is already the result, nothing is counted. Errors: DT_ERR_MPI naming
 * the call and the rank (buf's share then undefined). */
void dt_comm_row_share(size_t rows, int p, int rank, size_t *lo,
		       size_t *hi);
enum dt_status dt_comm_reduce_scatter_rows_f32(struct dt_comm *c, float *buf,
					       size_t rows, size_t row_len,
					       struct dt_error *err);
enum dt_status dt_comm_allgather_rows_f32(struct dt_comm *c, float *buf,
					  size_t rows, size_t row_len,
					  struct dt_error *err);
/* Drives the pending non-blocking sums of c forward without waiting
 * (MPI_Testall, or MPI_Testsome and the next steps of the ring sums of
 * dt_comm_iallreduce_sum_f64_f32 where those are pending: Open MPI
 * moves a non-blocking collective on only inside MPI calls). *all_done
 * (may be NULL) is 1 when none is pending any more. The started reduce-
 * scatters and all-gathers are pending sums as well, here and below.
 * Errors: DT_ERR_MPI. */
enum dt_status dt_comm_coll_test(struct dt_comm *c, int *all_done,
				 struct dt_error *err);
/* Waits until every pending non-blocking sum of c has completed; their
 * buffers then hold the sums and are the caller's again. A no-op when
 * none is pending. Errors: DT_ERR_MPI (the requests are released all the
 * same). */
enum dt_status dt_comm_coll_wait(struct dt_comm *c, struct dt_error *err);
/* Waits until the first n_sums (>= 1) of the non-blocking sums started on
 * c since none was pending (in the order they were started) have
 * completed; their buffers then hold the sums and are the caller's
 * again, while the later ones stay in flight. n_sums equal to the number
 * pending is dt_comm_coll_wait. For taking each sum as it is done while
 * the rest still cross the wire (MPI_Waitall on the first ones'
 * requests, or MPI_Waitsome until they are done where ring sums are
 * pending). The count starts again once a test or wait has found every
 * started sum done (then nothing is pending, and any n_sums returns at
 * once), so the k-th sum a caller started is always among the first k.
 * Errors: DT_ERR_MPI (every pending request is released then,
 * as by dt_comm_coll_wait). */
enum dt_status dt_comm_coll_wait_first(struct dt_comm *c, int n_sums,
				       struct dt_error *err);
/* In-place maximum over all ranks of n ints (used to agree on a status). */
enum dt_status dt_comm_allreduce_max_int(struct dt_comm *c, int *buf,
					 size_t n, struct dt_error *err);
/* Copies bytes from root's buf into every rank's buf. */
enum dt_status dt_comm_bcast(struct dt_comm *c, void *buf, size_t bytes,
			     int root, struct dt_error *err);
/* dt_comm_bcast started (MPI_Ibcast) as one of c's pending sums: buf
 * belongs to it until dt_comm_coll_wait (or a wait_first that covers
 * it) returns; Open MPI moves it on inside MPI calls and the progress
 * thread. Where the communicator has none (one rank, comm_self, the
 * host-first hier.c) it is the blocking broadcast, done on return.
 * Errors: DT_ERR_MPI naming the call and the rank. */
enum dt_status dt_comm_ibcast(struct dt_comm *c, void *buf, size_t bytes,
			      int root, struct dt_error *err);
enum dt_status dt_comm_barrier(struct dt_comm *c, struct dt_error *err);
/* A barrier among the ranks of this node only (MPI's shared-memory
 * communicator): for work done once per node, such as a download. */
enum dt_status dt_comm_node_barrier(struct dt_comm *c, struct dt_error *err);

/* Ends the whole job now with exit code `code` (MPI_Abort on every rank);
 * for failures that other ranks cannot know of and would otherwise wait on
 * in a collective. Does not return. */
void dt_comm_abort(struct dt_comm *c, int code) __attribute__((noreturn));

/* Collective: every rank passes its local status; returns the worst
 * (largest) status of any rank, so all ranks take the same branch. The
 * rank(s) that failed keep their own message in err; the others get
 * "rank R failed" filled in for the lowest failing rank R. */
enum dt_status dt_comm_agree(struct dt_comm *c, enum dt_status local,
			     struct dt_error *err);

/* Collective: proves that every rank passes the same n (the length of a
 * buffer it is about to hand to a collective, which MPI would otherwise
 * truncate or overrun when the lengths differ). Rank 0's n is broadcast
 * (a fixed 8 bytes), each rank compares its own, and a max all-reduce
 * finds the lowest rank whose n differs. Returns DT_OK on every rank when
 * all agree; otherwise DT_ERR_MPI on every rank with the same message
 * "rank R: WHAT: N, rank 0 has M" (R the lowest differing rank, N its n,
 * also broadcast). A failed MPI call is DT_ERR_MPI too. */
enum dt_status dt_comm_agree_length(struct dt_comm *c, const char *what,
				    uint64_t n, struct dt_error *err);

/* Collective: whether every rank holds the same n bytes at bytes (read
 * only). The lengths are agreed first (as in dt_comm_agree_length), so
 * ranks with different n are caught without a truncated message; then
 * rank 0's bytes are broadcast (into a temporary buffer of n bytes on each
 * rank) and compared. *first_bad_rank (may be NULL) is -1 when all agree,
 * else the lowest rank whose bytes or length differ from rank 0's, the
 * same on every rank. Returns DT_OK when all agree; DT_ERR_JOB when they
 * differ, with "rank R: WHAT differs from rank 0's" (and both lengths when
 * those differ) on every rank; DT_ERR_MPI if an MPI call fails. */
enum dt_status dt_comm_check_same(struct dt_comm *c, const char *what,
				  const void *bytes, size_t n,
				  int *first_bad_rank, struct dt_error *err);

/* Collective: root's bytes on every rank, whatever their length. Root
 * passes its bytes and n; the others pass anything (ignored). The length
 * travels first as a fixed 8 bytes, so the receivers size their buffer
 * from it and no rank's local length reaches the message. On DT_OK *out
 * (caller frees, with a NUL after the bytes) and *out_n hold root's bytes
 * on every rank (root too: a copy). DT_ERR_MPI if a call fails, with *out
 * NULL. */
enum dt_status dt_comm_bcast_blob(struct dt_comm *c, int root,
				  const void *bytes, size_t n, char **out,
				  size_t *out_n, struct dt_error *err);

/* Bytes this rank has handed to collectives so far (the payload of each
 * all-reduce, the buffer of each broadcast it roots; for summaries). */
uint64_t dt_comm_bytes_sent(const struct dt_comm *c);

/* Point-to-point, for pipeline stages. dt_comm_isend_f32 starts sending n
 * floats of buf to rank dest with tag and returns at once; buf must stay
 * untouched until dt_comm_wait on *req (or dt_comm_wait_all) returns.
 * dt_comm_recv_f32 receives exactly n floats from src with tag into buf
 * and returns when they are there; messages between two ranks with one
 * tag arrive in the order they were sent. n <= INT_MAX. Errors:
 * DT_ERR_MPI naming the call and the rank; on a single-process
 * communicator, which has no other rank, DT_ERR_MPI too. The floats sent
 * are counted in dt_comm_p2p_bytes_sent. */
enum dt_status dt_comm_isend_f32(struct dt_comm *c, const float *buf, size_t n,
				 int dest, int tag, int *req,
				 struct dt_error *err);
enum dt_status dt_comm_recv_f32(struct dt_comm *c, float *buf, size_t n,
				int src, int tag, struct dt_error *err);
/* Sends n floats of buf to rank dest with tag and returns when buf may
 * be reused: dt_comm_isend_f32 followed by dt_comm_wait on its request
 * (which also waits for every earlier pending send of c). Errors:
 * those of dt_comm_isend_f32 and dt_comm_wait. Counted in
 * dt_comm_p2p_bytes_sent. */
enum dt_status dt_comm_send_f32(struct dt_comm *c, const float *buf, size_t n,
				int dest, int tag, struct dt_error *err);
/* Waits for the send *req started (no-op for a request already waited
 * for), and for every pending send of c. */
enum dt_status dt_comm_wait(struct dt_comm *c, int req, struct dt_error *err);
enum dt_status dt_comm_wait_all(struct dt_comm *c, struct dt_error *err);
/* Bytes this rank has sent point-to-point so far. */
uint64_t dt_comm_p2p_bytes_sent(const struct dt_comm *c);

/* Passed as color to dt_comm_split by a rank that wants no new
 * communicator (MPI_UNDEFINED). */
#define DT_COMM_SPLIT_NONE (-1)

/* Collective over c (MPI_Comm_split): the ranks that pass the same color
 * (>= 0) form a new communicator, ordered by key and then by their rank in
 * c. On success *out is the new communicator, owned by the caller and freed
 * with dt_comm_free (which then leaves MPI running; free it before c); a
 * rank that passed DT_COMM_SPLIT_NONE gets *out = NULL. Bytes it sends are
 * counted in its own dt_comm_bytes_sent, not in c's. On a single-process
 * communicator the new one is another world of one rank. On error returns
 * DT_ERR_MPI and leaves *out untouched. */
enum dt_status dt_comm_split(struct dt_comm *c, int color, int key,
			     struct dt_comm **out, struct dt_error *err);

struct dt_comm_ops;	/* the implementation's table: comm/comm_priv.h */

struct dt_comm {
	const struct dt_comm_ops *ops;
	int rank, size, local_size, local_rank;
	uint64_t bytes_sent;
	uint64_t p2p_bytes_sent;
	struct dt_watch *watch;	/* NULL: no watchdog; shared with splits */
	int64_t progress_us;	/* the interval of the thread that drives
				 * its non-blocking sums (MPI at
				 * MPI_THREAD_MULTIPLE), 0: none; splits
				 * inherit it */
	void *impl;
};

/* The MPI library's own one-line name and version, and the standard it
 * implements ("Open MPI v4.1.4, ... (MPI 3.1)"), into buf (NUL-terminated,
 * truncated to size). Needs no MPI_Init (MPI-3.0 section 8.1.1). */
void dt_comm_mpi_version(char *buf, size_t size);

#endif
