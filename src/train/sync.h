/* SPDX-License-Identifier: MIT */
/* sync.h - the gradient-sync seam: how the gradient of one optimizer step
 * reaches every rank that updates with it, behind one interface chosen
 * once at setup (dt_grad_sync_new), so the loop and the executor never
 * ask which mode they run in. Internal to train/.
 *
 * The executor calls, per optimizer step:
 *   dt_grad_sync_step_begin                 once, first: it zeroes the
 *                                           gradients
 *   dt_grad_sync_backward_begin / _end      around each micro-batch's
 *                                           backward pass
 *   dt_grad_sync_node_backward_end(node)    after each node's backward
 *                                           in it (the backward hook)
 *   dt_grad_sync_begin(bucket)              when a bucket's gradient is
 *                                           final (its last backward ran)
 *   dt_grad_sync_progress                   between the nodes of the last
 *                                           backward (overlap)
 * or, with the breadth-first accumulation schedule (plan.h: no pipeline,
 * no tensor parallelism, no parameter servers), instead of the calls
 * around each micro-batch's backward:
 *   dt_grad_sync_breadth_begin              once, before the backward
 *   dt_grad_sync_node_done(node)            after each node's backward
 *                                           over each micro-batch
 *   dt_grad_sync_begin(bucket)              after the bucket's nodes'
 *                                           passes over the last one
 *   dt_grad_sync_progress                   between them (overlap)
 * and the loop, before the optimizer:
 *   dt_grad_sync_finish                     every bucket summed (waits),
 *                                           then tied weights' two
 *                                           gradients added (tie_sum.h)
 *   dt_grad_sync_norm2                      the squared gradient norm
 *   dt_grad_sync_apply                      the update
 *
 * Buckets (parallel.overlap, parallel.bucket_mb): the rank's trained
 * gradient floats are cut into buckets of whole tensors, in reverse
 * layer order (the order backward makes them final): bucket 0 holds the
 * last tensors of the arena. With overlap the executor calls begin(b)
 * from the backward pass of the step's last micro-batch as soon as node
 * dt_grad_sync_bucket_node(b) has run (dt_model_set_backward_hook), and
 * dt_grad_sync_progress between nodes; begin then only starts the sum
 * (MPI_Iallreduce) and finish waits for what is still in flight. Without
 * overlap (parallel.overlap: false, parameter servers, or a sum over one
 * rank) there is one bucket, begun after the last backward, whose begin
 * does the whole blocking sum, as before buckets existed. A reduce-
 * scatter of the gradient plus an all-gather of the updated parameters
 * (sharded optimizer state) would be one more implementation of
 * begin/finish/apply (below: which lines it needs).
 *
 * On the wire (parallel.grad_wire): f32 sends the float gradient (the
 * exact mode: its double accumulator, 8 bytes a value); bf16 sends each
 * value rounded to bfloat16 (2 bytes) and adds pairs in float, rounding
 * back (util/bf16.h); the exact mode then rounds its double accumulator
 * to float first, so its micro-batches still add up exactly on each rank.
 * A sum over one rank sends nothing, and bf16 then changes nothing.
 *
 * The plan chooses the implementation, overlap, wire and buckets of each
 * stage (plan/sync_plan.h, dt_plan_sync); the sync obeys plan->sync[stage]
 * and re-derives none of it.
 *
 * The sync owns the update. dt_grad_sync_new makes the optimizer over the
 * trained floats the plan gives this rank's optimizer (dt_plan_sync_own
 * of plan->sync[stage]: every one but at parallel.zero), apply steps it,
 * and its state
 * reaches checkpoints only through the seam: dt_grad_sync_state (what
 * this rank keeps, and which span it covers), _state_collect before a
 * save, _state_loaded after a load. Where a rank has a role beside
 * training, the implementation answers for it: _trains and _serve (the
 * parameter servers' ranks), _start and _release around the loop, and
 * its own lines in metrics.jsonl and summary.json (_log, _summary). The
 * rest of train/ asks the seam these questions and never which
 * implementation runs.
 *
 * A new implementation (a sharded optimizer, say) is its own file plus
 * these lines elsewhere:
 *   src/train/sync_<name>.c   its struct dt_grad_sync_ops (sync_priv.h:
 *                             init, then the seam's calls), exported as
 *                             const struct dt_grad_sync_ops
 *                             dt_sync_<name>_ops; its apply steps
 *                             s->optim (sync.c made it over the plan's
 *                             span); where its state lives elsewhere or
 *                             its ranks have a role beside training, a
 *                             struct dt_grad_sync_role its init sets in
 *                             s->role (checkpoints, run.c and metrics.c
 *                             then need no line);
 *   src/train/local.mk        the file, in libdtrain_la_SOURCES;
 *   src/train/sync_priv.h     extern const ... dt_sync_<name>_ops;
 *   src/train/sync.c          [DT_SYNC_IMPL_<NAME>] = &dt_sync_<name>_ops
 *                             in impls[];
 *   src/plan/sync_plan.h      DT_SYNC_IMPL_<NAME> in enum dt_sync_impl;
 *   src/plan/sync_plan.c      its name in impl_names[], the rule that
 *                             picks it in impl_of, and, where it differs,
 *                             its optimizer span (own_lo, own_hi) and
 *                             bytes per step in dt_plan_sync.
 * plan --dry-run then prints it with the rest of the stage's sync.
 *
 * Implementations (sync.c, sync_ps.c):
 *   allreduce        float gradients summed by MPI_SUM all-reduces
 *                    (one a bucket) over the data-parallel ranks, in
 *                    the wire's type; the norm from the
 *                    rank's own (whole) gradient
 *   exact            each micro-batch's gradient added to a double
 *                    accumulator, the accumulators summed in double and
 *                    rounded once (dt_plan_exact_accum)
 *   stages           either sum over the data- and tensor-parallel ranks
 *                    of a pipeline stage; the norm from every stage's
 *                    per-tensor squares, which travel in the step report
 *   parameter_server the gradient goes to the server ranks, which update
 *                    and send back the parameters; the local optimizer
 *                    only holds the state that checkpoints write and a
 *                    resume hands back to the servers
 *   zero             (sync_zero.c, parallel.zero) the optimizer over the
 *                    rank's part of the trained floats, the parameters
 *                    all-gathered after its update; the sums of one of
 *                    the above (level 1) or a reduce-scatter (level 2)
 */
#ifndef DT_TRAIN_SYNC_H
#define DT_TRAIN_SYNC_H

#include <stdint.h>

#include "comm/comm.h"
#include "graph/graph.h"
#include "job/job.h"
#include "plan/plan.h"
#include "train/step_report.h"
#include "util/status.h"

struct dt_grad_sync;
struct dt_pool;
struct json_object;

/* One bucket: gradient floats [lo, hi) of the rank's arena, whole
 * tensors, final in a backward pass once node ready_node has run (the
 * lowest node index among its tensors); they are among the model's
 * tensors [t_lo, t_hi) (with any untrained or empty ones in between). */
struct dt_grad_bucket {
	size_t lo, hi;
	int ready_node;
	int t_lo, t_hi;
};

/* Cuts the trained tensors of m (those below dt_model_n_trained) into
 * buckets in reverse arena order, which is reverse layer order: walking
 * from the last tensor down, a bucket takes tensors until it holds
 * cap_floats floats or more, then the next one starts; a tensor is never
 * split, so a tensor larger than cap_floats fills a bucket with what was
 * gathered before it (DDP's and Horovod's rule). cap_floats 0: one bucket
 * of every trained float. out needs room for dt_model_n_tensors(m)
 * buckets; out[0] is the one at the top of the arena (made final first).
 * Returns the number of buckets, 0 when m trains nothing. Pure. */
int dt_grad_buckets_make(const struct dt_model *m, size_t cap_floats,
			 struct dt_grad_bucket *out);

/* What an implementation needs; every pointer is borrowed and must
 * outlive the sync. */
struct dt_grad_sync_cfg {
	const struct dt_job *job;
	const struct dt_plan *plan;
	struct dt_model *model;		/* the rank's model (or stage) */
	struct dt_pool *pool;		/* the optimizer's threads, or NULL */
	struct dt_comm *world;		/* every rank */
	struct dt_comm *sum_comm;	/* the ranks whose gradients add up:
					 * the data-parallel x tensor-
					 * parallel ranks of the stage, or
					 * with tp_comm the data-parallel
					 * ones of the tensor rank */
	struct dt_comm *pipe_comm;	/* the stages of the rank's
					 * pipeline, for tied weights
					 * (tie_sum.h); may be NULL */
	int stage;			/* the rank's pipeline stage: the
					 * sync obeys plan->sync[stage] */
	int norm_owner;			/* this rank reports its stage's
					 * tensor norms (dp = tp = 0) */
	struct dt_comm *tp_comm;	/* where the tensor ranks own their
					 * slices, their group (its rank is
					 * the tensor rank); else NULL */
	int tp_norms;			/* with tp_comm: this rank's tensor
					 * group takes the split tensors'
					 * norms (dp = 0) */
	int first_tensor;		/* its first tensor's index in the
					 * whole model */
	int n_tensors_all;		/* tensors of the whole model */
	const int64_t *step;		/* (1) optimizer steps done (the
					 * loop's counter) */
};

/* Makes the implementation the plan chose for cfg->stage
 * (cfg->plan->sync[cfg->stage], plan/sync_plan.h), with its overlap,
 * wire and buckets, and the optimizer (job->train) over the plan's span
 * [own_lo, own_hi) of the trained floats, its weight decay restricted
 * as train.decay says, its loops on cfg->pool: collective over
 * cfg->sum_comm, or for parameter servers over cfg->world, servers and
 * workers alike. DT_ERR_MPI from the set-up's communicators; otherwise
 * DT_OK. *out is owned by the caller (dt_grad_sync_free, which frees the
 * optimizer too), also on error. */
enum dt_status dt_grad_sync_new(const struct dt_grad_sync_cfg *cfg,
				struct dt_grad_sync **out,
				struct dt_error *err);
void dt_grad_sync_free(struct dt_grad_sync *s);

/* Doubles of the step report's tensor_norm2 that this sync fills
 * (n_tensors_all for stages, else 0). */
int dt_grad_sync_n_norms(const struct dt_grad_sync *s);

/* 1 when the ranks need not meet every step (asynchronous parameter
 * servers): the loop then reduces its report only on the steps where
 * they meet anyway. */
int dt_grad_sync_lazy(const struct dt_grad_sync *s);

/* The communicator of the ranks that train (cfg->world, or the
 * parameter servers' workers; NULL on a rank that does not train). */
struct dt_comm *dt_grad_sync_workers(const struct dt_grad_sync *s);

/* 1 when this rank runs the training loop; 0 when its role is another
 * (a parameter server: it calls dt_grad_sync_serve instead). */
int dt_grad_sync_trains(const struct dt_grad_sync *s);

/* The optimizer state this rank keeps, as checkpoints read and write it:
 * n_bufs buffers (0 plain SGD, 1 momentum, 2 Adam/AdamW: m then v) of
 * the trained floats [lo, hi) of the rank's arena (every one today),
 * owned by the sync; a restore writes into them, then calls
 * dt_grad_sync_state_loaded. */
struct dt_grad_sync_state {
	int n_bufs;
	float **bufs;		/* (n_bufs) (hi - lo) each */
	size_t lo, hi;
	int64_t steps;		/* updates applied */
};
void dt_grad_sync_state(struct dt_grad_sync *s,
			struct dt_grad_sync_state *out);

/* The part of the optimizer state this rank's own optimizer updates,
 * in place, no copy: n_bufs buffers over the trained floats [lo, hi)
 * (dt_plan_sync_own's span: every one but at parallel.zero), owned by
 * the sync. What a checkpoint written in shards saves of this rank, so
 * that no rank holds the whole state for it, and what a restore from
 * shards fills in place before dt_grad_sync_state_loaded (without a
 * call to dt_grad_sync_state, whose whole copy would replace it). Not where the state lives
 * elsewhere (dt_grad_sync_state_remote). */
void dt_grad_sync_state_own(struct dt_grad_sync *s,
			    struct dt_grad_sync_state *out);

/* Before a checkpoint, collective over the training ranks (every one,
 * after the same step): brings the state of every update so far to
 * where dt_grad_sync_state and the model's parameters show it (the
 * parameter servers send their shards: the parameters to every worker,
 * the optimizer state and its steps to world rank 0). Nothing to do
 * where the rank holds its own. Errors: DT_ERR_MPI. */
enum dt_status dt_grad_sync_state_collect(struct dt_grad_sync *s,
					  struct dt_error *err);

/* After a restore filled dt_grad_sync_state's buffers and the model's
 * parameters: the optimizer continues from steps updates, and
 * dt_grad_sync_start / _serve hand the state on where it is kept
 * elsewhere. */
void dt_grad_sync_state_loaded(struct dt_grad_sync *s, int64_t steps);

/* 1 where the optimizer state is in parts over the summing ranks
 * (parallel.zero 1 to 3: each rank keeps its dt_grad_sync_state_own
 * part), 0 where each rank keeps all of it or it lives elsewhere. */
int dt_grad_sync_state_parted(const struct dt_grad_sync *s);

/* Collective over the summing ranks, which all pass the same b, lo and
 * hi, where the state is parted (dt_grad_sync_state_parted): floats
 * [lo, hi) (one-rank offsets of the trained floats) of optimizer buffer
 * b (dt_grad_sync_state's numbering), each sent by the rank whose part
 * holds it, into dst (hi - lo floats) on the first summing rank; dst is
 * not used elsewhere (may be NULL). For a checkpoint of the gathered
 * format written a piece at a time (train/state.c), so that no rank
 * holds the whole state. Errors: DT_ERR_MPI; the others are then inside
 * the exchange: end the job. */
enum dt_status dt_grad_sync_state_span(struct dt_grad_sync *s, int b,
				       size_t lo, size_t hi, float *dst,
				       struct dt_error *err);

/* 1 when the optimizer state lives on ranks that do not train until
 * dt_grad_sync_release (parameter servers): a final checkpoint must then
 * be written before the release. */
int dt_grad_sync_state_remote(const struct dt_grad_sync *s);

/* A training rank, before its first step, collective with the other
 * ranks' dt_grad_sync_start and _serve: after dt_grad_sync_state_loaded,
 * hands the restored state to the ranks that keep it (world rank 0 sends
 * the parameters and optimizer state to the parameter servers, the other
 * workers take its parameters). Errors: DT_ERR_MPI; the other ranks then
 * wait: end the job. */
enum dt_status dt_grad_sync_start(struct dt_grad_sync *s,
				  struct dt_error *err);

/* A training rank, after its last step: the ranks that do not train are
 * released (the parameter servers stop serving) and the final
 * parameters come back into the model. Errors: DT_ERR_MPI; end the job. */
enum dt_status dt_grad_sync_release(struct dt_grad_sync *s,
				    struct dt_error *err);

/* A rank that does not train (dt_grad_sync_trains 0): its whole run,
 * from the state loaded or the model's first parameters, with the
 * plan's learning-rate schedule, until every training rank has called
 * dt_grad_sync_release. Errors: DT_ERR_MPI; the training ranks then
 * wait: end the job. DT_OK at once on a training rank. */
enum dt_status dt_grad_sync_serve(struct dt_grad_sync *s,
				  struct dt_error *err);

/* 1 when dt_grad_sync_norm2 is the step's gradient norm; 0 where no rank
 * sees the whole gradient (parameter servers: grad_norm is null). */
int dt_grad_sync_has_norm(const struct dt_grad_sync *s);

/* World rank 0: the implementation's own keys of a metrics.jsonl line
 * (the parameter servers' staleness over the log window) into line, and
 * of summary.json (the servers, the mode, the staleness histogram and
 * bytes) into summary; nothing for the others. */
void dt_grad_sync_log(struct dt_grad_sync *s, struct json_object *line);
void dt_grad_sync_summary(struct dt_grad_sync *s,
			  struct json_object *summary);

/* The step's beginning: the gradient arena zeroed (dt_model_zero_grads,
 * or at parallel.zero 2 and 3 in the exact mode by handing its pages
 * back, which read as zeros), then the implementation's own. */
void dt_grad_sync_step_begin(struct dt_grad_sync *s);
void dt_grad_sync_backward_begin(struct dt_grad_sync *s);
void dt_grad_sync_backward_end(struct dt_grad_sync *s);
/* After node's backward in a micro-batch's depth-first pass (the
 * model's backward hook, graph.h): at parallel.zero 2 and 3 in the exact
 * mode the node's float gradient, final for the micro-batch, is summed
 * into the owners' parts of the double accumulator (a few nodes at a
 * time, at most the plan's accumulator_segment floats beyond one node)
 * and its pages handed back; nothing for the others. Collective over the
 * summing ranks, which run the same nodes in the same order; a failure
 * ends the job (dt_comm_abort), as the hook cannot fail the pass. node
 * is a dt_model_layer_info index. */
void dt_grad_sync_node_backward_end(struct dt_grad_sync *s, int node);

/* The breadth-first schedule's calls (see the top of this file). The
 * exact mode adds node's float gradient, which holds the one micro-batch
 * just run, to its double accumulator and sets those floats to 0 before
 * the node's backward of the next micro-batch adds into them, so each
 * double receives the same floats in the same order as depth first;
 * begin then finds each bucket accumulated already. The float mode lets
 * the micro-batches add up in the float gradient, in the same order per
 * parameter as depth first. node is a dt_model_layer_info index. */
void dt_grad_sync_breadth_begin(struct dt_grad_sync *s);
void dt_grad_sync_node_done(struct dt_grad_sync *s, int node);

/* Before node's forward (a recomputed forward too) and before each of
 * its backwards within a step (the model's node hook, graph.h): at
 * parallel.zero: 3 the node's parameters are gathered from their owners
 * into their places in the arena, and the last node's given back
 * (collective over the summing ranks, which run the same nodes in the
 * same order); nothing for the others. A failure of the gather ends the
 * job (dt_comm_abort), as the hook cannot fail the pass. node is a
 * dt_model_layer_info index. */
void dt_grad_sync_node_forward_begin(struct dt_grad_sync *s, int node);
void dt_grad_sync_node_backward_begin(struct dt_grad_sync *s, int node);

/* Collective over the summing ranks: every trained parameter whole on
 * this rank until the next step begins, for passes outside the step
 * (evaluation) that read them without the node hook; a no-op but at
 * parallel.zero: 3, which all-gathers them (transient: the next step
 * hands the unowned pages back). Errors: DT_ERR_MPI. */
enum dt_status dt_grad_sync_params_whole(struct dt_grad_sync *s,
					 struct dt_error *err);

/* 1 where the rank holds only its own part of the trained parameters
 * between their uses (parallel.zero: 3), 0 where it holds them all. */
int dt_grad_sync_params_parted(const struct dt_grad_sync *s);

/* Collective over the summing ranks, which all pass the same span:
 * trained floats [lo, hi) (0 <= lo <= hi <= the stage's trained floats)
 * gathered from their owners into their places in the arena, until the
 * next step begins (a checkpoint's tensors that a part boundary cuts,
 * train/state.c); a no-op where every parameter is on the rank. A
 * failure ends the job (dt_comm_abort), as the hooks' do; DT_OK. */
enum dt_status dt_grad_sync_params_span(struct dt_grad_sync *s, size_t lo,
					size_t hi, struct dt_error *err);

/* The floats of [lo, hi) that this rank does not own handed back (their
 * pages, dt_pages_release) after dt_grad_sync_params_span; not
 * collective; a no-op where every parameter is on the rank. */
void dt_grad_sync_params_span_release(struct dt_grad_sync *s, size_t lo,
				      size_t hi);

/* The gathers of one forward that this rank does not run (an
 * evaluation's micro-batch that another summing rank has and this one
 * has not), so that every summing rank makes the same collectives: at
 * parallel.zero: 3 every node's, in the forward's order, as the node
 * hook makes them; nothing for the others. */
void dt_grad_sync_forward_idle(struct dt_grad_sync *s);

/* The number of buckets begin takes (>= 1), numbered in the order their
 * gradients become final in backward. */
int dt_grad_sync_n_buckets(const struct dt_grad_sync *s);

/* 1 when the executor should begin buckets from inside the step's last
 * backward pass (overlap on, a sum over more than one rank, not
 * parameter servers); 0: begin them all after it. */
int dt_grad_sync_overlap(const struct dt_grad_sync *s);

/* With overlap, the interval in microseconds of the thread that drives
 * the sums in flight (parallel.progress_us, comm/comm.h), 0 when they
 * move on only in dt_grad_sync_progress; 0 without overlap. */
int64_t dt_grad_sync_progress_us(const struct dt_grad_sync *s);

/* 1 when a bucket may begin from inside its node's backward, as soon as
 * the node's own gradients are final (graph.h: dt_model_set_params_
 * hook): overlap on and nothing to do at a node's end
 * (dt_grad_sync_node_backward_end: parallel.zero has). */
int dt_grad_sync_begins_early(const struct dt_grad_sync *s);

/* The node (dt_model_layer_info index) after whose backward, in the
 * step's last micro-batch, bucket b (0 <= b < n_buckets) is final. */
int dt_grad_sync_bucket_node(const struct dt_grad_sync *s, int b);

/* Bucket b (0 <= b < dt_grad_sync_n_buckets, each once per step, after
 * the last backward has added into it) is final on this rank: prepares
 * its floats (the tensor-parallel zeroing, the exact mode's last
 * accumulation, the bf16 conversion) and starts its sum (overlap: non-
 * blocking; the floats then belong to MPI until finish) or does it
 * (blocking). Errors: DT_ERR_MPI. */
enum dt_status dt_grad_sync_begin(struct dt_grad_sync *s, int bucket,
				  struct dt_error *err);

/* Seconds this rank spent inside dt_grad_sync_begin since the last
 * call (and resets the count): communication the time breakdown counts
 * as exposed when begin blocks (a blocking sum), near 0 when it only
 * starts one. */
double dt_grad_sync_take_begin(struct dt_grad_sync *s);

/* Drives the begun, unfinished sums forward (MPI_Testall) without
 * waiting; for between the nodes of backward. Errors: DT_ERR_MPI. */
enum dt_status dt_grad_sync_progress(struct dt_grad_sync *s,
				     struct dt_error *err);

/* dt_grad_sync_progress from inside a long product of backward (the
 * kernels' progress hook, graph/kern.h), counted apart. */
enum dt_status dt_grad_sync_progress_in_product(struct dt_grad_sync *s,
						struct dt_error *err);

/* How often the sums in flight were driven with overlap since s was
 * made: *between_nodes by dt_grad_sync_progress, *in_products by
 * dt_grad_sync_progress_in_product (summary.json's progress_tests).
 * Both 0 without overlap. */
void dt_grad_sync_progress_count(const struct dt_grad_sync *s,
				 int64_t *between_nodes,
				 int64_t *in_products);

/* Completes every begun bucket (the one place that waits for gradient
 * traffic), so the float gradient holds the sum: with overlap bucket by
 * bucket in the order they began, each put back into the float gradient
 * and its tensors' squared norms taken (for dt_grad_sync_norm2, where
 * this rank reads them) while the later sums are still in flight; and
 * writes this rank's share of the per-tensor squared norms into
 * report->tensor_norm2 (stages). step_loss is this rank's loss sum of
 * the step (the parameter-server worker refuses a non-finite one, or a
 * non-finite gradient, with DT_ERR_NUMERIC naming the step and the rank,
 * since no rank sees the whole gradient). Errors: DT_ERR_MPI. */
enum dt_status dt_grad_sync_finish(struct dt_grad_sync *s, double step_loss,
				   struct dt_step_report *report,
				   struct dt_error *err);

/* The squared L2 norm of the step's whole gradient, the same bits for
 * every layout: each tensor's sum of squares in double, added in model
 * order (report: reduced over the ranks, for stages). 0 with parameter
 * servers (clip_norm is refused there). */
double dt_grad_sync_norm2(struct dt_grad_sync *s,
			  const struct dt_step_report *report);

/* 1 when the sums go host first (parallel.hierarchical, comm/hier.h),
 * else 0; *hosts and *max_per_host get the hosts among the summing ranks
 * and the most of them on one host (1 and 1 with parameter servers). */
int dt_grad_sync_hier(const struct dt_grad_sync *s, int *hosts,
		      int *max_per_host);

/* Gradient bytes this rank has handed to MPI in the sums (at the wire's
 * size: 8 a value for the exact f32 wire, 4 float, 2 bf16). */
uint64_t dt_grad_sync_bytes(const struct dt_grad_sync *s);

/* Bytes this rank has sent its tensor group for the gradient norm where
 * the tensor ranks own their slices (split_norms: a gathered block's
 * floats x 4 to tensor rank 0, 64 bytes of a chained norm's lanes to
 * the next tensor rank; data-parallel rank 0 only); 0 elsewhere.
 * dt_plan_tp_norm_bytes (plan/sync_plan.h) computes the same per step. */
uint64_t dt_grad_sync_norm_bytes(const struct dt_grad_sync *s);

/* Bytes this rank has sent data-parallel rank 0 of its tensor rank at
 * parallel.zero 2 and 3 where the tensor ranks own their slices: its
 * part's floats x 4 of each split tensor's summed block, made whole
 * there for the gradient norm (sync_zero.c, block_whole); 0 elsewhere
 * and on data-parallel rank 0. dt_plan_zero_block_bytes
 * (plan/sync_plan.h) computes the same per step. */
uint64_t dt_grad_sync_block_bytes(const struct dt_grad_sync *s);

/* Clipping: the floats of the summed gradient that the update reads
 * (the optimizer's span [own_lo, own_hi), the whole gradient but at
 * parallel.zero) multiplied by c. The others are not the step's sum at
 * zero, and not touching them keeps their pages handed back. */
void dt_grad_sync_clip(struct dt_grad_sync *s, float c);

/* The update with the summed gradient at learning rate lr: the sync's
 * optimizer over its span of the rank's parameters, or nothing where the
 * servers made it (finish brought the new parameters). */
void dt_grad_sync_apply(struct dt_grad_sync *s, float lr);

#endif
