/* SPDX-License-Identifier: MIT */
/* ps.h - data parallelism through parameter-server ranks.
 *
 * Follows Li et al., "Scaling Distributed Machine Learning with the
 * Parameter Server", OSDI 2014 (sharded servers; workers push gradients and
 * pull parameters; the server aggregates one iteration's gradients and
 * updates, their Algorithm 1; "bounded delay" consistency), with the
 * staleness bound of Ho et al., "More Effective Distributed ML via a Stale
 * Synchronous Parallel Parameter Server", NIPS 2013.
 *
 * Roles. Of a world of P ranks the last S are servers and the first
 * W = P - S are workers (worker w is world rank w). The parameters, one flat
 * arena of n floats, are cut into S contiguous shards balanced by bytes
 * (dt_ps_shard). Server j keeps shard j's master copy and its own dt_optim
 * over the shard; the optimizers are elementwise, so S shard updates are one
 * full update.
 *
 * One protocol serves both modes. Updates are numbered by the step
 * k = 0, 1, ... they belong to; a shard's version is the number of updates
 * applied to it. At step k a worker computes its gradient on parameters of
 * version b (per shard), pushes each shard of it tagged (k, b), and before
 * step k + 1 must hold parameters of version >= k + 1 - s, s being the
 * staleness bound: it blocks only when what it holds is older. A server
 * applies update k once every worker's step-k gradient for its shard is in:
 * the W gradients are summed in worker-rank order (so the sum does not
 * depend on arrival order), the optimizer takes one step with lr_fn(k), the
 * version becomes k + 1, and waiting pulls are answered with the new shard.
 * A gradient's staleness is k - b, the updates applied to its shard between
 * the version it was computed on and its own update; the bound makes it
 * <= s, and every applied gradient's staleness goes in a histogram.
 *
 *  - sync: s = 0. Every worker waits for update k before step k + 1, and
 *    the result is the all-reduce formulation's (sum of the workers'
 *    gradients, one optimizer step) up to the order of the float sum.
 *  - async: s = max_staleness. A worker runs up to s steps ahead of the
 *    slowest one, on parameters up to s updates old. Pushes and pulls are
 *    MPI_Isend/MPI_Irecv; a worker asks for the next version as soon as it
 *    has one, so a fresher copy is usually waiting at its next step, and it
 *    waits only when the bound says so. With s = 0 it is sync, bit for bit.
 *
 * Gradient scaling. In both modes a worker sends its local gradient scaled
 * so that the SUM over workers is the mean-loss gradient of the global batch
 * (grad_scale = 1/global_batch, as the all-reduce loop does), and a server
 * applies the sum of one step's W gradients as ONE optimizer update, with no
 * further scaling - also in async mode, where the gradients of a step are
 * added as they arrive but applied together. Why not one optimizer update
 * per arriving gradient: that makes W updates per global batch, so the same
 * job would need another learning rate per mode and world size (with the
 * gradient as sent, SGD moves as far per round but Adam normalises the 1/W
 * away and moves W times as far; rescaled by W, SGD moves W times as far),
 * Adam's moments and bias correction and the schedule would count worker
 * pushes instead of global batches, a checkpoint's step would mean
 * something else than in sync, and with s = 0 it could not equal sync.
 * Summing per step keeps lr, schedule, optimizer state and step counts
 * meaning the same in every mode; the asynchrony is in which parameters a
 * gradient was computed on, which is what the bound limits.
 *
 * Calls and who makes them:
 *   every rank:  dt_ps_new, [dt_ps_scatter_state], dt_ps_free
 *   servers:     dt_ps_serve (returns when every worker is done)
 *   workers:     dt_ps_step per step, [dt_ps_gather_state] at checkpoint
 *                steps (all workers), dt_ps_done at the end
 *   worker 0:    dt_ps_stats whenever it logs (and after dt_ps_done,
 *                for the summary)
 * While the servers are in dt_ps_serve they take part in no collective:
 * the workers' checkpoint and stats requests are answered inside it. A
 * server that returns an error from dt_ps_serve leaves the workers
 * waiting: end the job with dt_comm_abort.
 *
 * Memory on the busiest server (dt_ps_server_bytes): the shard, its
 * optimizer state, one sum, W*(s+1) receive slots (so a worker s steps
 * ahead never has to wait for a buffer) and W reply copies. A worker keeps
 * one copy of the gradient arena (pushes in flight) and one of the
 * parameters (pulls in flight).
 *
 * Bytes. What a rank sends here (pushes, replies, checkpoint and final
 * states) is added to the world communicator's dt_comm_bytes_sent, so a
 * summary counts it; dt_ps_stats reports the busiest server's pushes in and
 * replies out per update, to compare with dt_ps_server_step_bytes.
 *
 * Test hook: DTRAIN_TEST_DELAY_MS=M and DTRAIN_TEST_DELAY_RANK=R make world
 * rank R (a worker) sleep M ms in dt_ps_step before each push, to make a
 * slow worker on purpose. Both must be given; bad values are DT_ERR_USAGE
 * from dt_ps_new. */
#ifndef DT_COMM_PS_H
#define DT_COMM_PS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "job/job.h"
#include "optim/optim.h"
#include "util/status.h"

struct dt_ps;

struct dt_ps_cfg {
	int n_servers;		/* the last n_servers world ranks, >= 1 */
	bool async;		/* false: sync (the bound is 0) */
	int64_t max_staleness;	/* async: the bound s, >= 0; unused in sync */
	size_t n_params;	/* floats in the parameter arena */
	const struct dt_job *job;	/* optimizer settings for dt_optim_new;
					 * read in dt_ps_new, not kept */
	struct dt_optim_span *decay;	/* (n_decay) the arena's decayed
					 * spans (dt_optim_set_decay), NULL:
					 * all; read in dt_ps_new, not kept */
	size_t n_decay;
};

/* Statistics; see dt_ps_stats. */
struct dt_ps_stats {
	/* Since the previous dt_ps_stats call (the logging window): */
	int64_t applied;	/* shard gradients applied, all servers (a
				 * worker's gradient counts once per server) */
	double staleness_mean;	/* over those; 0 when applied == 0 */
	int64_t staleness_max;	/* 0 when applied == 0 */
	/* Since dt_ps_new (or the resumed step): */
	int64_t version;	/* updates applied by the slowest server */
	int n_hist;		/* max_staleness + 2 (sync: 2) */
	const int64_t *hist;	/* [n_hist], owned by the ps, valid until the
				 * next dt_ps_stats or dt_ps_free: hist[i] =
				 * shard gradients applied i updates stale for
				 * i <= max_staleness; hist[n_hist - 1] = those
				 * staler than the bound (stays 0 unless the
				 * bound is broken) */
	uint64_t server_bytes_max;	/* the busiest server's bytes received
					 * plus sent (headers included) */
	double server_bytes_per_step;	/* that server's bytes per update */
};

/* The shard of server j (0 <= j < n_servers <= n_params): elements
 * [*off, *off + *len) of the arena. Contiguous, in server order, lengths
 * differ by at most one (the first n_params % n_servers are longer), so
 * bytes are balanced. Pure. */
void dt_ps_shard(size_t n_params, int n_servers, int j, size_t *off,
		 size_t *len);

/* Checks a layout before anything is allocated: n_servers >= 1, at least
 * one worker left (n_servers < world_size), no more servers than parameter
 * elements (each shard needs one), and a shard small enough for one MPI
 * message (< 2^31 bytes). Returns DT_OK, or DT_ERR_PLAN with the reason and
 * the fix in err. Pure: every rank gets the same answer. */
enum dt_status dt_ps_check(int world_size, int n_servers, size_t n_params,
			   struct dt_error *err);

/* Bytes the busiest server keeps for a layout (shard, optimizer state of
 * n_optim_bufs arenas, the sum, receive slots and reply copies, as above);
 * max_staleness 0 for sync. Pure, for the plan. */
uint64_t dt_ps_server_bytes(size_t n_params, int n_servers, int n_workers,
			    int64_t max_staleness, int n_optim_bufs);

/* Bytes through the busiest server per update: every worker's push of its
 * shard in and one pull reply per worker out, headers included. Pure, for
 * the plan (dt_ps_stats measures the same). */
uint64_t dt_ps_server_step_bytes(size_t n_params, int n_servers,
				 int n_workers);

/* Collective over world (an MPI communicator): checks the layout
 * (dt_ps_check), assigns roles, duplicates world for the parameter traffic,
 * splits off the workers' communicator and, on a server, allocates its
 * shard and optimizer. The workers start at version 0 holding what they
 * pass to their first dt_ps_step; dt_ps_scatter_state changes that. On
 * success *out is owned by the caller (dt_ps_free, before world is freed).
 * Errors: DT_ERR_PLAN (layout), DT_ERR_USAGE (bad test-hook variables),
 * DT_ERR_MPI (world is not an MPI communicator, or a call failed); *out is
 * left untouched. cfg->job is not kept. */
enum dt_status dt_ps_new(struct dt_comm *world, const struct dt_ps_cfg *cfg,
			 struct dt_ps **out, struct dt_error *err);

/* Frees ps, its communicators and buffers; NULL is accepted. Call after
 * dt_ps_serve / dt_ps_done have returned; on an error path (the job is
 * being aborted) pending requests are cancelled or abandoned. */
void dt_ps_free(struct dt_ps *ps);

/* Whether this rank is a server. */
bool dt_ps_is_server(const struct dt_ps *ps);

/* The workers' communicator (ranks 0..W-1 of it are worker 0..W-1), for
 * loss and eval reductions among workers; NULL on a server. Owned by ps. */
struct dt_comm *dt_ps_workers(const struct dt_ps *ps);

/* Number of workers W and of servers S. */
int dt_ps_n_workers(const struct dt_ps *ps);
int dt_ps_n_servers(const struct dt_ps *ps);

/* Optimizer state arenas the job's optimizer keeps (0 for plain SGD, 1 for
 * momentum, 2 for Adam/AdamW), as dt_optim_state reports them: the number
 * of buffers dt_ps_gather_state / dt_ps_scatter_state move. */
int dt_ps_optim_bufs(const struct dt_ps *ps);

/* The learning rate for update `step` (from 0), e.g. dt_lr_at. */
typedef double (*dt_ps_lr_fn)(int64_t step, void *ctx);

/* Server only: serves until every worker has called dt_ps_done, then
 * returns DT_OK. init_params is the full arena at version 0 (n floats,
 * identical on all ranks; only this server's shard is read), or NULL after
 * dt_ps_scatter_state (the shard, optimizer state and version come from
 * there; a non-NULL init_params is then ignored). lr_fn(k, ctx) is called
 * once per update k. Answers the workers' pulls, checkpoint requests
 * (dt_ps_gather_state) and stats requests (dt_ps_stats) meanwhile.
 * Errors: DT_ERR_MPI (an MPI call failed, or a worker broke the protocol:
 * workers stopping after different numbers of steps, a checkpoint at
 * different steps); the workers are then left waiting (dt_comm_abort). */
enum dt_status dt_ps_serve(struct dt_ps *ps, const float *init_params,
			   dt_ps_lr_fn lr_fn, void *ctx, struct dt_error *err);

/* Worker only: step `step` (0 for the first, then one more each call; the
 * resumed step after dt_ps_scatter_state). grads (n floats, this worker's
 * gradient scaled so that the sum over workers is the mean-loss gradient,
 * computed on params as the previous call left them; not modified, free
 * for reuse on return) is pushed shard by shard; params (n floats) is
 * overwritten, shard by shard, with the newest version that has arrived,
 * which is at least step + 1 - s: in sync, the parameters after update
 * `step`; in async, possibly older (and a mix of shard versions), but
 * never by more than the bound allows. Blocks only for that. Errors:
 * DT_ERR_MPI (a call failed, or step out of sequence); params may then hold
 * a mix of versions. */
enum dt_status dt_ps_step(struct dt_ps *ps, const float *grads,
			  float *params, int64_t step, struct dt_error *err);

/* Worker only, after its last dt_ps_step: tells the servers this worker is
 * done and waits until every worker is; then, if params is not NULL,
 * writes the final parameters (every update applied, identical on every
 * worker) into it (n floats). Fetches the final statistics too, so
 * dt_ps_stats still works afterwards without the servers. Errors:
 * DT_ERR_MPI. */
enum dt_status dt_ps_done(struct dt_ps *ps, float *params,
			  struct dt_error *err);

/* Worker 0 only: fills *s (see struct dt_ps_stats) by asking every server
 * (answered inside dt_ps_serve; after dt_ps_done, from the final numbers)
 * and starts a new window. Not collective: the other workers do not call
 * it and the servers never leave dt_ps_serve for it. Errors: DT_ERR_MPI;
 * *s is then untouched. */
enum dt_status dt_ps_stats(struct dt_ps *ps, struct dt_ps_stats *s,
			   struct dt_error *err);

/* Collective over the WORKERS (every worker, after the same dt_ps_step;
 * the servers answer inside dt_ps_serve): the state after every update up
 * to the current step. Each server waits until it has applied them all
 * (the workers' last pushes), then sends its shard to every worker and its
 * optimizer state to worker 0. Afterwards:
 *   every worker: params (n floats) holds that version, on every shard,
 *                 so all workers go on from the same parameters (as a run
 *                 resumed from this checkpoint would);
 *   worker 0:     optim_bufs[b] (dt_ps_optim_bufs arrays of n floats) the
 *                 optimizer state, *optim_steps the step (= updates
 *                 applied); the other workers may pass NULL for both.
 * Errors: DT_ERR_MPI. */
enum dt_status dt_ps_gather_state(struct dt_ps *ps, float *params,
				  float **optim_bufs, int64_t *optim_steps,
				  struct dt_error *err);

/* Collective over the WORLD, after dt_ps_new and before dt_ps_serve and the
 * first dt_ps_step: resume from a checkpoint. Worker 0 passes the full
 * params (n floats), optim_bufs (dt_ps_optim_bufs arrays of n floats) and
 * optim_steps (updates applied); only worker 0's values are read. Each
 * server receives its shard of them and continues from version optim_steps
 * (call dt_ps_serve with init_params NULL; params and optim_bufs may be
 * NULL there); the other workers receive worker 0's parameters into their
 * params (n floats) and may pass NULL for optim_bufs. Every worker's next
 * dt_ps_step is step optim_steps. Errors: DT_ERR_MPI (if worker 0 fails,
 * the others wait: abort the job). */
enum dt_status dt_ps_scatter_state(struct dt_ps *ps, float *params,
				   float *const *optim_bufs,
				   int64_t optim_steps, struct dt_error *err);

#endif
