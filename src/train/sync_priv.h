/* SPDX-License-Identifier: MIT */
/* sync_priv.h - what the gradient-sync implementations share (sync.c,
 * sync_ps.c). Internal to train/sync*. */
#ifndef DT_TRAIN_SYNC_PRIV_H
#define DT_TRAIN_SYNC_PRIV_H

#include "comm/ps.h"
#include "optim/optim.h"
#include "plan/sync_plan.h"
#include "train/sync.h"
#include "train/tie_sum.h"

/* One implementation: the seam's calls (sync.h) in order of use. */
struct dt_grad_sync_ops {
	const char *name;
	/* What the implementation needs beyond the buckets (sync.c's
	 * setup_buckets), once, in dt_grad_sync_new; collective where it
	 * sets up communicators. */
	enum dt_status (*init)(struct dt_grad_sync *s, struct dt_error *err);
	void (*step_begin)(struct dt_grad_sync *s);
	void (*backward_begin)(struct dt_grad_sync *s);
	void (*backward_end)(struct dt_grad_sync *s);
	enum dt_status (*begin)(struct dt_grad_sync *s, int bucket,
				struct dt_error *err);
	enum dt_status (*finish)(struct dt_grad_sync *s, double step_loss,
				 struct dt_step_report *report,
				 struct dt_error *err);
	double (*norm2)(struct dt_grad_sync *s,
			const struct dt_step_report *report);
	void (*apply)(struct dt_grad_sync *s, float lr);
	/* The breadth-first schedule's calls; NULL: nothing to do. */
	void (*breadth_begin)(struct dt_grad_sync *s);
	void (*node_done)(struct dt_grad_sync *s, int node);
	/* Before node's forward and before its backward (the model's node
	 * hook, graph.h, inside a training step); NULL: nothing to do. */
	void (*node_forward_begin)(struct dt_grad_sync *s, int node);
	void (*node_backward_begin)(struct dt_grad_sync *s, int node);
	/* Every parameter whole on the rank, until the next step begins
	 * (dt_grad_sync_params_whole); NULL: they always are. */
	enum dt_status (*params_whole)(struct dt_grad_sync *s,
				       struct dt_error *err);
	/* After node's backward in a depth-first pass, and the gradient
	 * arena zeroed at the step's beginning; NULL: nothing, and
	 * dt_model_zero_grads. */
	void (*node_backward_end)(struct dt_grad_sync *s, int node);
	void (*zero_grads)(struct dt_grad_sync *s);
	/* Trained floats [lo, hi) on the rank, until the next step begins
	 * (dt_grad_sync_params_span) and handed back
	 * (dt_grad_sync_params_span_release), and the gathers of a forward the
	 * rank does not run (dt_grad_sync_forward_idle); NULL: every
	 * parameter is always on the rank. */
	enum dt_status (*params_span)(struct dt_grad_sync *s, size_t lo,
				      size_t hi, struct dt_error *err);
	void (*params_span_release)(struct dt_grad_sync *s, size_t lo,
				    size_t hi);
	void (*forward_idle)(struct dt_grad_sync *s);
};

/* What an implementation whose optimizer state lives elsewhere, or
 * whose ranks have a role beside training, does at the seam's state and
 * role calls (sync.h: dt_grad_sync_state_collect, _start, _release,
 * _serve, _log, _summary, and where not NULL dt_grad_sync_state,
 * _state_loaded and, from dt_grad_sync_free, fini: what init made
 * beyond the seam's); its init sets s->role. Without one (NULL) the rank
 * keeps its own state, only trains, and writes no lines of its own. */
struct dt_grad_sync_role {
	enum dt_status (*collect)(struct dt_grad_sync *s,
				  struct dt_error *err);
	enum dt_status (*start)(struct dt_grad_sync *s, struct dt_error *err);
	enum dt_status (*release)(struct dt_grad_sync *s,
				  struct dt_error *err);
	enum dt_status (*serve)(struct dt_grad_sync *s, struct dt_error *err);
	void (*log)(struct dt_grad_sync *s, struct json_object *line);
	void (*summary)(struct dt_grad_sync *s, struct json_object *summary);
	void (*state)(struct dt_grad_sync *s, struct dt_grad_sync_state *out);
	void (*loaded)(struct dt_grad_sync *s);
	void (*fini)(struct dt_grad_sync *s);
};

struct dt_grad_sync {
	const struct dt_grad_sync_ops *ops;
	const struct dt_grad_sync_role *role;	/* or NULL (above) */
	struct dt_grad_sync_cfg cfg;
	const struct dt_sync_plan *plan;	/* the plan's decision for
						 * this rank's stage */
	size_t n;			/* trained floats of the rank */
	size_t own_lo, own_hi;		/* the trained floats its optimizer
					 * updates (dt_plan_sync_own of its
					 * rank among the summing ranks) */
	struct dt_sync_zero *zero;	/* sync_zero.c's, else NULL */
	struct dt_sync_zero3 *zero3;	/* sync_zero3.c's, else NULL */
	int report_norms;		/* the tensors' squared norms travel
					 * in the step report (n_norms) */
	struct dt_optim *optim;		/* over trained floats [plan->own_lo,
					 * own_hi): apply updates with it;
					 * parameter servers keep in it the
					 * state checkpoints read and a
					 * resume hands back */
	int resumed;			/* dt_grad_sync_state_loaded ran */
	int serves;			/* this rank serves, never trains */
	int state_remote;		/* dt_grad_sync_state_remote */
	int no_norm;			/* norm2 is not the gradient's */
	double *acc;			/* exact: (n) the step's gradient */
	uint64_t bytes;			/* gradient bytes handed to MPI */
	struct dt_comm *workers;	/* the ranks that train */
	struct dt_ps *ps;		/* parameter servers, else NULL */
	int lazy;			/* asynchronous servers */
	double begin_s;			/* seconds inside begin, not yet
					 * taken (dt_grad_sync_take_begin) */
	struct dt_comm *hier;		/* the per-host sum in front of
					 * cfg.sum_comm (then cfg.sum_comm),
					 * or NULL */
	int hosts, max_per_host;	/* among the summing ranks */
	int overlap;			/* dt_grad_sync_overlap */
	int64_t tests_nodes;		/* dt_grad_sync_progress_count */
	int64_t tests_products;
	enum dt_grad_wire wire;		/* f32, or bf16 over > 1 rank */
	int n_buckets;
	struct dt_grad_bucket *buckets;	/* (n_buckets) */
	unsigned char *added;		/* exact: (n_buckets) this micro-
					 * batch's gradient is in acc */
	unsigned char *pending;		/* (n_buckets) started, unfinished */
	uint16_t *wire16;		/* bf16: (n) the gradient as sent */
	size_t *node_lo, *node_hi;	/* exact, grad_parts: (n_nodes)
					 * each node's
					 * trained floats [lo, hi) */
	int early_norms;		/* the tensors' squared norms are
					 * taken as each bucket's sum is done
					 * (overlap, where this rank needs
					 * them) */
	double *sq;			/* (n_tensors) this step's squared
					 * norm of each tensor, where
					 * sq_have */
	unsigned char *sq_have;		/* (n_tensors) */
	struct dt_tie_sum *tie;		/* tied weights, or NULL */
	float *tp_whole;		/* (the largest split tensor):
					 * tensor rank 0 with cfg.tp_norms,
					 * the tensor whose norm it takes */
	float *tp_blk;			/* (its largest block): one
					 * received block */
	uint64_t norm_bytes;		/* bytes split_norms has sent to
					 * the tensor group */
	uint64_t block_bytes;		/* zero 2/3 with slices: bytes
					 * block_whole (sync_zero.c) has
					 * sent data-parallel rank 0 */
};

/* The squared norm of the rank's own whole gradient (sync.c). */
double dt_sync_local_norm2(struct dt_grad_sync *s);

/* Sum of squares of g (n) in double, in eight lanes: a tensor's squared
 * norm as every implementation takes it (sync.c). */
double dt_sync_tensor_sq(const float *g, int64_t n);

/* Whether trained tensor t of the rank's model is split among the tensor
 * ranks that own their slices (cfg.tp_comm; a tied copy never is):
 * its block is the rank's own, its squared norm dt_sync_split_norm's
 * (sync.c). */
int dt_sync_tp_split(struct dt_grad_sync *s, int t);

/* The squared norm of split tensor t (dt_sync_tp_split) over the whole
 * tensor in flat order, dt_sync_tensor_sq's bits, from every tensor
 * rank's summed block (g: this rank's, the tensor's ti.size floats):
 * the lanes chained through the tensor ranks for a run of whole rows
 * (dt_plan_tp_norm_chained), else the blocks gathered on tensor rank 0.
 * *norm2 is set on the rank that adds it up (the last tensor rank, or
 * rank 0), 0 or left as it was on the others. Collective over
 * cfg.tp_comm, every tensor rank with the same t; the bytes it sends add
 * to s->norm_bytes (summary.json's tp_norm_bytes) (sync.c). DT_ERR_MPI
 * from the exchange. */
enum dt_status dt_sync_split_norm(struct dt_grad_sync *s, int t,
				  const float *g, double *norm2,
				  struct dt_error *err);

/* The exact mode's: adds bucket b of this micro-batch's float gradient
 * into the double accumulator s->acc, once a micro-batch (sync.c). */
void dt_sync_exact_add(struct dt_grad_sync *s, int b);

/* s->node_lo and node_hi (n_nodes each): every node's trained floats
 * [lo, hi), one range a node (sync.c; the exact mode's init sets them,
 * sync_zero.c's float grad_parts too). */
void dt_sync_node_ranges(struct dt_grad_sync *s);

/* The update of the optimizer's span [own_lo, own_hi) of the summed
 * gradient (sync.c). */
void dt_sync_optim_apply(struct dt_grad_sync *s, float lr);

/* The ops of implementation impl (sync.c's impls[]). */
const struct dt_grad_sync_ops *dt_sync_impl_ops(enum dt_sync_impl impl);

/* The parameter-server implementation (sync_ps.c); its init is
 * collective over s->cfg.world. */
extern const struct dt_grad_sync_ops dt_sync_ps_ops;

/* Sharded optimizer state and gradient sums, parallel.zero (sync_zero.c);
 * its init is collective over s->cfg.sum_comm. */
extern const struct dt_grad_sync_ops dt_sync_zero_ops;

/* parallel.zero: 3, the parameters sharded too (sync_zero3.c): level 2's
 * sums and state around node-by-node gathers of the parameters. */
extern const struct dt_grad_sync_ops dt_sync_zero3_ops;

#endif
