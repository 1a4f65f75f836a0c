/* SPDX-License-Identifier: MIT */
/* gradcheck.h - the finite-difference gradient rig that every layer test
 * shares (test_graph.c, test_graph_layers.c, test_graph_nlp.c), and the
 * record of which layer types have passed a check, which
 * test_layer_registry.c holds against the list of layer types.
 *
 * A rig is one node of a layer type on its own, driven through its vtable
 * (graph/layer.h), with its parameters, inputs, upstream gradient, labels
 * and targets on the heap, filled with reproducible values. gc_check
 * compares backward with float central differences of a scalar objective:
 * the loss (times the rig's grad_scale) for a loss node, otherwise
 * sum(g * Y), so that dL/dY = g. gc_model_check does the same for every
 * parameter of a whole model through graph.h. */
#ifndef DT_TEST_GRADCHECK_H
#define DT_TEST_GRADCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "graph/layer.h"
#include "util/threadpool.h"
#include "util/status.h"

/* The grad_scale of a rig's passes: loss gradients are checked scaled. */
#define GC_SCALE 0.37f

struct gc_rig {
	struct dt_node n;
	int64_t batch;
	bool training;			/* default true */
	uint64_t step;			/* of the passes, default 3 */
	int64_t first_sample;		/* default 5 */
	float *params, *grads;		/* (n_params) */
	float *x[DT_NODE_MAX_INPUTS];	/* (B, in_size[k]) */
	float *dx[DT_NODE_MAX_INPUTS];	/* (B, in_size[k]) */
	float *g;			/* (B, out_size): upstream gradient,
					 * n.dout */
	int32_t *labels;		/* (B, out_size / last axis): class ids
					 * for softmax cross-entropy */
	float *targets;			/* (B, out_size): for mse, l1,
					 * huber */
	struct dt_pool *pool;		/* the passes' threads; NULL: none
					 * (the caller owns it) */
};

/* Where a rig's inputs come from and which values it draws; each suite
 * keeps the layout its checks were tuned on. */
struct gc_layout {
	bool model_input;	/* input 0 is the model input (DT_NODE_INPUT);
				 * otherwise the inputs are nodes 0, 1, ...
				 * named "a", "b", ... */
	uint64_t dout_key;	/* gc_fill_uniform key of the upstream
				 * gradient */
};

/* The job a rig's node belongs to, for infer and its messages
 * ("rig.yaml: model.layers.0: ..."). */
extern const struct dt_job gc_job;

extern const struct gc_layout gc_node_inputs;	/* nodes, key 9 */
extern const struct gc_layout gc_model_input;	/* model input, key 3 */

/* Tolerances of gc_check: a gradient passes when |a - n| <= atol + rtol *
 * max(|a|, |n|) against the central difference at step eps, and, when
 * max_err > 0, the largest |a - n| is below max_err. no_input: the input
 * gradient is not checked (token ids have none). */
struct gc_tol {
	double eps, atol, rtol, max_err;
	bool no_input;
};

/* Reproducible test data in [-1, 1), keyed apart from the model's init:
 * a[i] from dt_rng_uniform(1234, DT_RNG_SAMPLE, key, i). */
void gc_fill_uniform(float *a, int64_t n, uint64_t key);

/* |analytic - numeric| <= atol + rtol * max(|analytic|, |numeric|). */
bool gc_close_enough(double analytic, double numeric, double atol,
		     double rtol);

/* Builds r: a node of ops with spec (its name: spec->name, or "n" when
 * empty) reading n_in inputs of the given shapes as lay says, runs infer;
 * on success lays out the tensors back to back and fills parameters (key
 * 1), inputs (key 2 + k), upstream gradient (lay->dout_key), targets (key
 * 10) and labels ((i * 7 + 1) mod the last axis). Returns infer's status
 * with err filled; r owns its buffers either way (gc_free). */
enum dt_status gc_try(struct gc_rig *r, const struct gc_layout *lay,
		      const struct dt_layer_ops *ops,
		      const struct dt_layer_spec *spec, int n_in,
		      const struct dt_shape *shapes, int64_t batch,
		      struct dt_error *err);
/* gc_try that must succeed (a failed Check assertion with the message). */
void gc_init(struct gc_rig *r, const struct gc_layout *lay,
	     const struct dt_layer_ops *ops, const struct dt_layer_spec *spec,
	     int n_in, const struct dt_shape *shapes, int64_t batch);
/* Frees r's buffers (r itself is the caller's). */
void gc_free(struct gc_rig *r);

/* The pass the rig runs: r's batch, training, step and first sample, seed
 * 77, grad_scale GC_SCALE, labels for softmax cross-entropy and targets for
 * mse, l1 and huber. */
struct dt_pass gc_pass(const struct gc_rig *r);
/* Forward of r's node over r->x with p. */
void gc_forward(struct gc_rig *r, struct dt_pass *p);
/* The scalar the rig checks, after a forward pass. */
double gc_objective(struct gc_rig *r);
/* Forward then backward: parameter gradients into r->grads (zeroed first),
 * input gradients into r->dx[k] (added to what is there when add), or
 * none asked for when !with_dx. */
void gc_backward(struct gc_rig *r, bool with_dx, bool add);
/* d(objective)/d(*v) by central differences at step eps; *v is restored. */
double gc_central_difference(struct gc_rig *r, float *v, double eps);

/* Checks every trained parameter (buffers must keep a zero gradient) and,
 * unless tol->no_input, every input value of r against central
 * differences, then that din_add adds (to 1e-6). Fails the running Check
 * test on a mismatch, printing the first five; on success records r's
 * type (n.kind) for the registry test. */
void gc_check(struct gc_rig *r, const struct gc_tol *tol);

/* What gc_model_check compares. */
struct gc_model_tol {
	double eps, atol, rtol;
	size_t stride;		/* every stride-th parameter; 0 or 1: all */
	bool sum;		/* the gradient of the summed loss (grad_scale
				 * 1) rather than of the mean over the batch */
	bool kinks;		/* see gc_model_check */
};

/* Checks the parameter gradients of m from one dt_model_train_step (or
 * _targets when targets is not NULL) with grads zeroed first, against
 * central differences of the loss from dt_model_eval (_targets). Returns
 * the number of mismatches (the first five printed).
 *
 * relu and max pooling are not smooth: where a step of eps moves an input
 * of relu across 0, or changes the winner of a pooling window, the
 * central difference straddles a kink and mixes the slopes of both sides.
 * With tol->kinks, a gradient that misses the central difference but
 * matches one of the one-sided differences (the side without the kink)
 * passes, and *skipped (when not NULL) counts those. */
int gc_model_check(struct dt_model *m, const float *x, const int32_t *labels,
		   const float *targets, int64_t batch,
		   const struct gc_model_tol *tol, int *skipped);

/* The record of checked types. A test program calls gc_record_to(name)
 * once in main, before it runs its suite: the file
 * $top_builddir/tests/unit/NAME.gradcheck is emptied, and every passing
 * gc_check appends its type's word to it (from each forked test).
 * Returns false (after saying why on stderr) when the file cannot be
 * written; without a call nothing is recorded. */
bool gc_record_to(const char *name);
/* The file gc_record_to(name) writes, into buf. */
void gc_record_path(const char *name, char *buf, size_t size);

#endif
