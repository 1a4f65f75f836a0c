/* graph.h - the model: a graph of layers built from job->model, with all
 * parameters in one arena and all gradients in another (llm.c's layout), so
 * gradient sync is one all-reduce and a checkpoint one write.
 *
 * Tensors are float32, row-major, batch first. Activations for one
 * micro-batch live in a per-model arena sized at build time: no allocation
 * happens in forward or backward.
 *
 * The graph is a list of named nodes (layer.h). Each job layer becomes one
 * node of its type; a layer's `activation:` becomes a separate activation
 * node named "<layer>.<activation>" right after it (not a fused epilogue:
 * one more pass over the layer's output, and one more (batch, units)
 * buffer, buys activations that are a layer of their own, checked alone,
 * and usable after any node); the loss is a last node named "loss" whose
 * output is the softmax probabilities.
 *
 * FLOPs: a multiply-add counts 2; dense forward is 2*in*out + out per
 * sample (the product and the bias), an activation 1 per element, softmax
 * cross-entropy 5 per class (max, subtract, exp, sum, divide); backward is
 * counted as twice forward for every node, so a step is 3x forward. These
 * are nominal counts for plans and throughput, not measurements; the work
 * done is lower where a gradient nobody needs is skipped (the first dense
 * layer computes no input gradient: 2*in*out per sample fewer). */
#ifndef DT_GRAPH_GRAPH_H
#define DT_GRAPH_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "job/job.h"
#include "util/status.h"

struct dt_model;

/* Builds the model of job for micro-batches of at most max_batch samples.
 * Shapes are inferred from job->model.input_shape; a layer that cannot take
 * its input returns DT_ERR_JOB naming the layer's job-file position
 * ("job.yaml:7:5: model.layers.1: units must be >= 1, found 0"), as does an
 * empty model or a bad input shape. Parameters are initialised from
 * job->seed (He-normal for layers followed by relu/gelu, Xavier-uniform
 * otherwise; biases zero) via util/rng.h, so the same seed gives the same
 * bits on any rank. Gradients start at zero.
 * max_batch == 0 builds the shapes only, without arenas (for plan/: every
 * query below works, dt_model_params/grads/probs return NULL, and
 * train_step, eval and zero_grads must not be called); max_batch < 0 or
 * above INT_MAX returns DT_ERR_PLAN. The model keeps no pointer into job.
 * On success *out is owned by the caller (dt_model_free); on error *out is
 * untouched. */
enum dt_status dt_model_new(const struct dt_job *job, int64_t max_batch,
			    struct dt_model **out, struct dt_error *err);
/* Frees m and its arenas; accepts NULL. */
void dt_model_free(struct dt_model *m);

/* Number of float parameters (= number of gradient floats). */
size_t dt_model_n_params(const struct dt_model *m);
/* The parameter and gradient arenas, n_params floats each, owned by m;
 * tensor i lies at dt_model_tensor_info(m, i)->offset in both. */
float *dt_model_params(struct dt_model *m);
float *dt_model_grads(struct dt_model *m);
/* Sets every gradient to zero (start of a global batch). */
void dt_model_zero_grads(struct dt_model *m);

/* Features per sample at the input (product of input_shape) and classes at
 * the output (units of the last layer). */
int64_t dt_model_input_size(const struct dt_model *m);
int64_t dt_model_n_classes(const struct dt_model *m);

/* One micro-batch of training: x is (batch, input_size), labels (batch)
 * with values in [0, n_classes) (the caller has checked them). Runs forward
 * and backward and ADDS grad_scale * d(sum of per-sample losses)/d(params)
 * into the gradient arena, so k micro-batches with grad_scale =
 * 1/global_batch accumulate the mean-loss gradient of the global batch.
 * Returns the sum over the batch of per-sample losses (nats) in *loss_sum
 * and the number of correct argmax predictions in *n_correct (either may be
 * NULL). 1 <= batch <= max_batch. Allocates nothing. */
void dt_model_train_step(struct dt_model *m, const float *x,
			 const int32_t *labels, int64_t batch, float grad_scale,
			 double *loss_sum, int64_t *n_correct);

/* Forward only (evaluation): same outputs as dt_model_train_step, no
 * gradient touched. labels may be NULL to only predict (then *loss_sum and
 * *n_correct are 0); the probabilities are in dt_model_probs. */
void dt_model_eval(struct dt_model *m, const float *x, const int32_t *labels,
		   int64_t batch, double *loss_sum, int64_t *n_correct);

/* The softmax probabilities of the last forward pass, (batch, n_classes),
 * owned by m and overwritten by the next pass; NULL without arenas. */
const float *dt_model_probs(const struct dt_model *m);

/* Forward plus backward FLOPs for one sample (multiply-add = 2 FLOPs;
 * counting rules at the top of this file). */
double dt_model_flops_per_sample(const struct dt_model *m);

/* Floats per sample in the activation arena: every node's output, the
 * output gradient of every node a gradient flows back to (all but the loss
 * in a plain MLP), and layer scratch.
 * The arena holds max_batch times this. */
int64_t dt_model_act_floats_per_sample(const struct dt_model *m);

/* A per-node description for plans and logs: name, kind, output shape
 * (no batch), parameter count, forward FLOPs per sample. "Layers" here are
 * the graph's nodes, in order: a dense with an activation is two of them
 * ("dense0" then "dense0.relu") and the loss is the last ("loss");
 * job_layer maps each back to its index in job->model.layers (the loss to
 * the last layer). Returns the number of nodes; i in [0, n). The strings
 * are owned by m. */
int dt_model_n_layers(const struct dt_model *m);
struct dt_layer_info {
	const char *name;
	const char *kind;
	int n_dims;
	int64_t out_shape[4];
	int64_t n_params;
	double fwd_flops;	/* per sample */
	int job_layer;		/* index in job->model.layers */
};
void dt_model_layer_info(const struct dt_model *m, int i,
			 struct dt_layer_info *info);

/* One parameter tensor, for checkpoints and export: name
 * ("dense0.weight", "dense0.bias"), shape (dense weight: (in, out)
 * row-major), and where it lies in the parameter and gradient arenas.
 * Tensors are in arena order, back to back. Returns the number of tensors;
 * i in [0, n). The name is owned by m. */
int dt_model_n_tensors(const struct dt_model *m);
struct dt_tensor_info {
	const char *node;	/* "dense0" */
	const char *name;	/* "weight" */
	int n_dims;
	int64_t shape[4];
	size_t offset;		/* floats from the start of the arenas */
	int64_t size;		/* floats */
};
void dt_model_tensor_info(const struct dt_model *m, int i,
			  struct dt_tensor_info *info);

#endif
