/* SPDX-License-Identifier: MIT */
/* graph.h - the model: a graph of layers built from job->model, with all
 * parameters in one arena and all gradients in another (llm.c's layout), so
 * gradient sync is one all-reduce and a checkpoint one write.
 *
 * Tensors are float32, row-major, batch first. Activations for one
 * micro-batch live in a per-model arena sized at build time: no allocation
 * happens in forward or backward.
 *
 * The graph is a DAG of named nodes (layer.h), kept in job order, which is
 * a topological order. Each job layer becomes one node of its type reading
 * the layers its `inputs:` names ("input" is the model input), or the
 * previous layer when it names none (the model input for the first); a
 * layer may be read by several others, and their gradients add up. A
 * layer's `activation:` becomes a separate activation node named
 * "<layer>.<activation>" right after it (not a fused epilogue: one more
 * pass over the layer's output, and one more buffer, buys activations that
 * are a layer of their own, checked alone, and usable after any node); a
 * name in `inputs:` means the layer's output after its activation. The
 * loss is a last node named "loss" reading the last layer: softmax
 * cross-entropy (its output is the probabilities) or mse (its output is a
 * copy of the prediction). Shapes are inferred and checked when the model
 * is built; an error names the layer, its job-file position and, for a
 * mismatch, the inputs and their shapes.
 *
 * Shapes (no batch dimension): images are (channels, height, width), a
 * 2-D (height, width) meaning one channel; sequences are (tokens,
 * features). A dense layer reading another layer's 2-D output (T, C) acts
 * on each of the T rows, giving (T, units); any other input (the model
 * input, a (C, H, W) map, a vector) is flattened to one vector, so
 * input_shape [28, 28] feeds a dense layer directly. Token inputs: an
 * embedding reads token ids stored as floats in x (exact below 2^24).
 *
 * FLOPs (each layer file gives its count): a multiply-add counts 2;
 * dense forward is 2*in*out + out per sample (the product and the bias;
 * times T for a (T, C) input), conv2d 2*K*K*Cin*Cout*Hout*Wout plus
 * Cout*Hout*Wout for the bias, a pool K*K per output, an activation or
 * dropout 1 per element, add 1 per element per input after the first, mse
 * 3 per element, flatten, reshape and concat 0, softmax and softmax
 * cross-entropy 5 per class (max, subtract, exp, sum, divide); backward is
 * counted as twice forward for every node, so a step is 3x forward. These
 * are nominal counts for plans and throughput, not measurements; the work
 * done is lower where a gradient nobody needs is skipped (the first dense
 * layer computes no input gradient: 2*in*out per sample fewer). */
#ifndef DT_GRAPH_GRAPH_H
#define DT_GRAPH_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job/job.h"
#include "util/status.h"

struct dt_model;
struct dt_pool;

/* Builds the model of job for micro-batches of at most max_batch samples.
 * Shapes are inferred from job->model.input_shape; a layer that cannot take
 * its input returns DT_ERR_JOB naming the layer's job-file position and
 * name ("job.yaml:7:5: model.layers.1 (dense1): units must be >= 1, found
 * 0"; "job.yaml:14:7: model.layers.5 (add5): input shapes differ:
 * block.0.attn (64, 128) vs dense3 (64, 256)"), as do an `inputs:` name
 * that no earlier layer has, a wrong number of inputs, an empty model or
 * a bad input shape. Parameters are initialised from job->seed (dense:
 * He-normal when followed by relu/gelu, Xavier-uniform otherwise; conv2d:
 * He-normal; biases, which dense and conv2d have unless `bias: false`,
 * zero; each layer file says) via util/rng.h, so the same seed gives the
 * same bits on any rank. Gradients start at zero.
 * max_batch == 0 builds the shapes only, without arenas (for plan/: every
 * query below works, dt_model_params/grads/probs return NULL, and
 * train_step, eval and zero_grads must not be called); max_batch < 0 or
 * above INT_MAX returns DT_ERR_PLAN. The model keeps no pointer into job.
 * On success *out is owned by the caller (dt_model_free); on error *out is
 * untouched. */
enum dt_status dt_model_new(const struct dt_job *job, int64_t max_batch,
			    struct dt_model **out, struct dt_error *err);
/* dt_model_new with activations in n_slots (>= 1) slots, one per micro-
 * batch whose activations are held at once (the breadth-first
 * accumulation schedule, plan.h: every micro-batch of the step); slot 0
 * is current (dt_model_use_slot). DT_ERR_PLAN as dt_model_new, also when
 * n_slots < 1 or the slots do not fit in memory.
 * A model for training (this and dt_model_new_stage; train/ builds its
 * models with them): a softmax cross-entropy loss that alone reads a
 * dense last layer works in place over that layer's output
 * (softmax_xent.c), which holds the logits, then the probabilities
 * after the loss's forward, then d(logits) after its backward: one
 * (batch, [T,] classes) buffer, not three. The same bits as
 * dt_model_new's model; only the logits are not kept, so eval, predict
 * and sample, which read them, build theirs with dt_model_new (and size
 * their batches by its activations). max_batch 0 builds the shapes of a
 * model for training, which plan/ counts. */
enum dt_status dt_model_new_slots(const struct dt_job *job, int64_t max_batch,
				  int n_slots, struct dt_model **out,
				  struct dt_error *err);
/* Frees m and its arenas; accepts NULL. */
void dt_model_free(struct dt_model *m);

/* Number of float parameters (= number of gradient floats). */
size_t dt_model_n_params(const struct dt_model *m);
/* Floats of the arena that training updates: the first n_trained of
 * n_params. The rest are buffers that layers update themselves in training
 * forward passes (batchnorm's running statistics): the optimizer, the
 * gradient sync and clipping cover only the first n_trained (weight decay
 * must not shrink running statistics), while checkpoints and exports carry
 * all n_params. */
size_t dt_model_n_trained(const struct dt_model *m);
/* The parameter and gradient arenas, n_params floats each, owned by m;
 * tensor i lies at dt_model_tensor_info(m, i)->offset in both. */
float *dt_model_params(struct dt_model *m);
float *dt_model_grads(struct dt_model *m);
/* Sets every gradient to zero (start of a global batch). */
void dt_model_zero_grads(struct dt_model *m);

/* Features per sample at the input (product of input_shape). Token ids
 * for an embedding are features too, stored as floats. */
int64_t dt_model_input_size(const struct dt_model *m);

/* What the loss compares against, per sample. Softmax cross-entropy:
 * labels_per_sample class ids (1 when the last layer gives (classes); T
 * when it gives (T, classes): one label per token), each in
 * [0, n_classes); targets_per_sample is 0. Mse: targets_per_sample floats
 * (the size of the last layer's output), and n_classes and
 * labels_per_sample are 0. */
int64_t dt_model_n_classes(const struct dt_model *m);
int64_t dt_model_labels_per_sample(const struct dt_model *m);
int64_t dt_model_targets_per_sample(const struct dt_model *m);

/* Where the next training micro-batches lie, for stochastic layers
 * (dropout), whose draws are keyed by (job seed, step, global sample
 * index, element) and so come out the same however a global batch is split
 * into ranks and micro-batches: step is the global optimizer step,
 * first_sample the global index of the micro-batch's first sample (row r
 * is first_sample + r), e.g. its offset in the epoch's permutation as
 * dt_shard_offset gives it. Kept until the next call; both start at 0.
 * Evaluation draws nothing. */
void dt_model_set_position(struct dt_model *m, uint64_t step,
			   int64_t first_sample);

/* The thread pool the layers split their loops over (util/threadpool.h), or
 * NULL for one thread (the default). Not owned: the caller keeps it alive
 * while the model runs and frees it after. The pool size never changes
 * the bits a pass computes (each loop is split by its outputs). */
void dt_model_set_pool(struct dt_model *m, struct dt_pool *pool);

/* The pool set by dt_model_set_pool, or NULL; not owned. */
struct dt_pool *dt_model_pool(const struct dt_model *m);

/* One micro-batch of training with softmax cross-entropy: x is (batch,
 * input_size), labels (batch, labels_per_sample) with values in
 * [0, n_classes) (the caller has checked them). Runs forward and backward
 * and ADDS grad_scale * d(loss_sum)/d(params) into the gradient arena, so
 * k micro-batches with grad_scale = 1/global_batch accumulate the gradient
 * of the mean per-sample loss of the global batch (for a per-token model,
 * 1/(global_batch * labels_per_sample) gives the mean per-token loss, as
 * PyTorch's cross_entropy does). Returns in *loss_sum the sum over the
 * batch and its tokens of the losses (nats), so loss_sum / (batch *
 * labels_per_sample) is nats per token, and in *n_correct the number of
 * tokens whose argmax is the label (either may be NULL). 1 <= batch <=
 * max_batch. Allocates nothing. */
void dt_model_train_step(struct dt_model *m, const float *x,
			 const int32_t *labels, int64_t batch, float grad_scale,
			 double *loss_sum, int64_t *n_correct);

/* Forward only (evaluation): same outputs as dt_model_train_step, no
 * gradient touched, dropout off. labels may be NULL to only predict (then
 * *loss_sum and *n_correct are 0); the probabilities are in
 * dt_model_probs. */
void dt_model_eval(struct dt_model *m, const float *x, const int32_t *labels,
		   int64_t batch, double *loss_sum, int64_t *n_correct);

/* As dt_model_train_step and dt_model_eval, for an mse model: targets is
 * (batch, targets_per_sample) floats; the loss of a sample is the mean
 * over its outputs of (prediction - target)^2 and *loss_sum their sum over
 * the batch (the gradient added is grad_scale * d(loss_sum)/d(params)).
 * dt_model_eval_targets takes targets NULL to only predict. */
void dt_model_train_step_targets(struct dt_model *m, const float *x,
				 const float *targets, int64_t batch,
				 float grad_scale, double *loss_sum);
void dt_model_eval_targets(struct dt_model *m, const float *x,
			   const float *targets, int64_t batch,
			   double *loss_sum);

/* The output of the last forward pass, owned by m and overwritten by the
 * next pass (and by a backward pass in a model for training, where it
 * then holds d(logits)); NULL without arenas. Softmax cross-entropy:
 * probabilities (batch, labels_per_sample, n_classes); mse: predictions
 * (batch, targets_per_sample). */
const float *dt_model_probs(const struct dt_model *m);

/* Forward plus backward FLOPs for one sample (multiply-add = 2 FLOPs;
 * counting rules at the top of this file), the recompute's included. */
double dt_model_flops_per_sample(const struct dt_model *m);

/* What job's model.recompute adds to the backward, FLOPs per sample
 * (0 for none): blocks, the forward of every node whose activations it
 * drops (a node of a repeat block's copy that nothing outside the copy
 * reads, on the model's stage layout); attention, each attention's
 * scores and softmax (2*T*T*C + 5*h*T*T, its tensor-parallel share);
 * model.attention: fused adds the same for each attention layer, whose
 * backward makes its tiles' probabilities again. */
double dt_model_recompute_flops_per_sample(const struct dt_model *m);

/* Floats per sample in the activation arena of the model as one stage:
 * every node's output, the output gradient of every node a gradient
 * flows back to (all but the loss in a plain MLP), and layer scratch;
 * under model.recompute the dropped nodes' buffers count once, as the
 * workspace the largest block copy needs (blocks), and attention keeps
 * 4*T*C of its scratch per sample with one shared 2*T*T (attention);
 * with model.attention: fused an attention keeps 5*T*C + (h+1)*T +
 * 128*C/h floats of scratch per sample and nothing (T, T); in a model
 * for training (dt_model_new_slots) the loss in place keeps neither its
 * own output nor its input's output gradient.
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
	int node_index;		/* its node's index (dt_model_layer_info) */
	/* A tied copy (a dense layer's `tie:`): the node of the embedding
	 * whose "<tie_node>.weight" it repeats, bit for bit; NULL for a
	 * tensor of its own. Checkpoints, exports and norms skip a copy;
	 * loaders fill it with dt_model_tie_fill. */
	const char *tie_node;
};
void dt_model_tensor_info(const struct dt_model *m, int i,
			  struct dt_tensor_info *info);

/* Tied weights (tied.c; a dense layer's `tie:`, dtrain-job(5)). The
 * dense layer holds a tied copy of its embedding's table, so a model with
 * ties has dt_model_n_tied(m) floats more in its arenas than parameters:
 * the parameter count is dt_model_n_params - dt_model_n_tied. Both count
 * the whole model's nodes (every stage). */
int64_t dt_model_n_tied(const struct dt_model *m);
/* The ties of the whole model, in node order of the copies; k in
 * [0, dt_model_n_ties). The offsets are m's arena offsets, SIZE_MAX and
 * the tensor index -1 where m (a stage) does not hold that tensor. */
int dt_model_n_ties(const struct dt_model *m);
struct dt_tie_info {
	int copy_node, src_node;	/* dt_model_layer_info indices */
	int copy_tensor, src_tensor;	/* dt_model_tensor_info, or -1 */
	size_t copy_offset, src_offset;	/* floats in the arenas */
	int64_t size;			/* floats: vocab * dim */
};
void dt_model_tie_info(const struct dt_model *m, int k,
		       struct dt_tie_info *out);
/* Copies each embedding table into its tied copy within params, an
 * arena laid out as m's (dt_model_params(m) or a copy of it), where m
 * holds both; after loading the saved tensors, which hold the table
 * once. */
void dt_model_tie_fill(const struct dt_model *m, float *params);

/* Pipeline stages (stage.c). A layout cuts the nodes (dt_model_n_layers,
 * the loss last) into n_stages contiguous runs: stage_of_node[i] is the
 * stage of node i, starting at 0, never decreasing, each stage holding at
 * least one node (dt_model_check_stages). Stage s's forward pass needs the
 * outputs of earlier nodes that nodes of stage s or later read (the live
 * set at the cut before s: with residual connections a cut carries more
 * than one tensor, and an output read two stages on passes through the
 * stage between); it sends the live set at the cut after it to stage s+1,
 * and in backward gets their gradients from s+1 and sends those of the
 * cut before it to s-1. The model input x is read by each stage from its
 * own data, never sent.
 *
 * A stage model (dt_model_new_stage) holds the parameters, gradients and
 * activations of its own stage only; the ranges of dt_model_stage_info
 * say where they lie in the one-rank arena. */
struct dt_stage_info {
	int first_node, last_node;	/* the stage's nodes [first, last] */
	double flops_per_sample;	/* forward + backward of its nodes */
	int64_t n_params;		/* floats of its tensors */
	size_t trained_lo, trained_hi;	/* its trained floats in the arena */
	size_t buffer_lo, buffer_hi;	/* its buffers (running statistics) */
	/* Floats per sample of one micro-batch's activations on the stage:
	 * its nodes' outputs, gradients and scratch, and the received live
	 * set's outputs and gradients. */
	int64_t act_floats;
	/* Floats per sample held once, whatever the micro-batches in
	 * flight: the workspace of model.recompute (0 for none). */
	int64_t act_work_floats;
	int64_t send_fwd_floats;	/* per sample, to stage + 1 */
	int64_t send_bwd_floats;	/* per sample, gradients to stage - 1 */
};

/* DT_ERR_PLAN unless stage_of_node (n_nodes entries) is a layout of m's
 * nodes into n_stages stages as above. */
enum dt_status dt_model_check_stages(const struct dt_model *m,
				     const int *stage_of_node, int n_stages,
				     struct dt_error *err);

/* What stage `stage` of a checked layout holds and moves, in a model
 * for training (dt_model_new_stage: the loss in place, as
 * dt_model_new_slots says); works on a shapes-only model. */
void dt_model_stage_info(const struct dt_model *m, const int *stage_of_node,
			 int n_stages, int stage, struct dt_stage_info *out);

/* Builds the model of job as dt_model_new does, for stage `stage` of the
 * layout stage_of_node only (checked as dt_model_check_stages does;
 * DT_ERR_PLAN if it is not one): activations for the stage's nodes and the
 * tensors it receives, in n_slots slots (one per micro-batch in flight,
 * dt_plan_in_flight), and parameter and gradient arenas holding only the
 * stage's tensors: its trained tensors, then its buffers, in one-rank
 * order, so that [0, n_trained) here is [trained_lo, trained_hi) of
 * dt_model_stage_info in the one-rank arena and [n_trained, n_params)
 * is [buffer_lo, buffer_hi). The tensors start with the bits they have
 * on one rank. n_params, n_trained, the tensor list and tensor offsets
 * describe the stage's arena. Only dt_model_stage_forward/backward below
 * run it (not train_step or eval, unless it has one stage). */
enum dt_status dt_model_new_stage(const struct dt_job *job, int64_t max_batch,
				  const int *stage_of_node, int n_stages,
				  int stage, int n_slots,
				  struct dt_model **out, struct dt_error *err);

/* Selects the activation slot (0 .. n_slots-1) that the passes, the
 * live-set buffers, dt_model_probs and dt_model_set_position use from now
 * on. Each slot keeps its own position. */
void dt_model_use_slot(struct dt_model *m, int slot);

/* Forward pass of the stage's nodes over the current slot: x is (batch,
 * input_size) (read only by nodes that take the model input), labels
 * (batch, labels_per_sample) for the last stage's loss (NULL elsewhere and
 * to only predict); for an mse model the same pointer carries the
 * targets, (batch, targets_per_sample) floats (here and in the stage
 * backward and breadth-first backward below). The received live set must be in place
 * (dt_model_live_buffers(m, 0, ...)). Loss outputs as dt_model_train_step
 * gives them, on the last stage; 0 elsewhere. training turns dropout on. */
void dt_model_stage_forward(struct dt_model *m, const float *x,
			    const int32_t *labels, int64_t batch,
			    bool training, double *loss_sum,
			    int64_t *n_correct);
/* Backward pass of the stage's nodes over the current slot, after its
 * forward, with the same x, labels and batch; the gradients of the live
 * set sent on must be in place (dt_model_live_buffers(m, 1, ...)); adds
 * grad_scale * d(loss)/d(params) into the stage's gradients and leaves
 * the gradients of the received live set, to send back, in their
 * buffers. */
void dt_model_stage_backward(struct dt_model *m, const float *x,
			     const int32_t *labels, int64_t batch,
			     float grad_scale);

/* The backward pass of n_micro (1 <= n_micro <= the slots) micro-batches
 * at once, breadth first: micro-batch k lies in slot k, whose forward has
 * run (dt_model_stage_forward) with x[k] ((batch, input_size)) and
 * labels[k] ((batch, labels_per_sample)); the nodes run from the last to
 * the first, each node over k = 0 .. n_micro - 1 in order, each pass as
 * dt_model_stage_backward runs it (its slot's position, grad_scale).
 * Every tensor belongs to one node, so each parameter's gradient adds its
 * micro-batches' terms in the order 0 .. n_micro - 1, as n_micro depth-
 * first passes add them: the same bits. hook (may be NULL) is called as
 * hook(ctx, i, k) after node i's pass over micro-batch k, also for a node
 * whose backward is skipped; once hook(ctx, i, n_micro - 1) has run, the
 * gradients of every tensor of nodes >= i are final for the step. The
 * hook may read and rewrite node i's gradients (an accumulation in
 * another precision) but not those of nodes < i, and cannot fail the
 * pass. The hook of dt_model_set_backward_hook is not called. For a
 * model without live sets (one stage of one; no pipeline, no tensor
 * parallelism). */
void dt_model_backward_breadth(struct dt_model *m, int n_micro,
			       const float *const *x,
			       const int32_t *const *labels, int64_t batch,
			       float grad_scale,
			       void (*hook)(void *ctx, int node, int micro),
			       void *ctx);

/* The live sets of m's stage: after = 0 the one received from the stage
 * before, 1 the one sent to the stage after. Returns how many tensors. */
int dt_model_n_live(const struct dt_model *m, int after);
/* Tensor j of a live set in the current slot: *out its output (batch,
 * *floats_per_sample) and *grad its gradient, or NULL when no gradient
 * flows back through it. Owned by m. */
void dt_model_live_buffers(struct dt_model *m, int after, int j, float **out,
			   float **grad, int64_t *floats_per_sample);

/* Tensor parallelism (layer.h says how each node is split; tensor.c).
 *
 * Marks the nodes of m to split over tp_size ranks: a dense layer whose
 * output reaches another dense layer through activation and dropout nodes
 * only (and is read by nothing else) splits by columns and that next layer
 * by rows (Megatron's MLP pair); attention splits by heads; every other
 * node, and a dense layer in no pair, is replicated (computed whole on
 * every rank). Works on a shapes-only model, so plan/ can call it; then
 * dt_model_layer_info's fwd_flops and dt_model_flops_per_sample count the
 * share of one rank. tp_size 1 unmarks every node. DT_ERR_PLAN naming the
 * layer's job-file position when tp_size does not divide a column layer's
 * units, a row layer's input features or an attention's heads ("job.yaml:
 * 12:9: model.layers.5 (fc): tensor_parallel 3 does not divide units
 * 512"). */
enum dt_status dt_model_plan_tensor_parallel(struct dt_model *m,
					     const struct dt_job *job,
					     int tp_size,
					     struct dt_error *err);

/* The vocabulary split (layer.h's DT_TP_VOCAB; doc/DESIGN.md,
 * "Tensor-parallel slices"), after dt_model_plan_tensor_parallel with the
 * same tp_size: marks every embedding of m to split its table (V, C) by
 * rows over the tp_size ranks, and, when the loss is softmax
 * cross-entropy, the dense layer it reads (not the row half of a pair)
 * to compute the logits of its share of the classes and the loss to run
 * across the group without gathering them; the shares are
 * dt_tp_vocab_share's (layer.h), V/tp_size each where tp_size divides V,
 * else one more for the first V mod tp_size ranks. That dense layer and
 * the loss stay whole when it has fewer units than tp_size, when
 * tp_size does not divide its units and they are not the vocab of a split
 * embedding of m (a classifier's few classes, whole as before the uneven
 * split), and when it is tied (`tie:`) unless split_tied: a split head's
 * input gradient is a sum over the group of partial products, not one
 * rank's bits, and the trainer keeps a tied model's tensor-parallel runs
 * at one rank's bits (tests/integration/tied.sh), so it passes false.
 * Works on a
 * shapes-only model. An embedding whose vocab is below tp_size stays
 * whole, computed on every rank as before (a rank would hold no row); one
 * whose vocab tp_size does not divide splits unevenly (GPT-2's 50257:
 * Megatron pads the vocabulary instead, which would change the table's
 * shape in checkpoints). Returns DT_OK (job and err are for refusals a
 * later split may need). A no-op for tp_size 1. */
enum dt_status dt_model_plan_vocab_parallel(struct dt_model *m,
					    const struct dt_job *job,
					    int tp_size, bool split_tied,
					    struct dt_error *err);

/* Sets the group the split nodes of m use for their sums: this rank's
 * place tp_rank in [0, tp_size) and allreduce(ctx, buf, n), an in-place
 * sum of n floats over the group (each rank calls it at the same points).
 * tp_size must be the one given to dt_model_plan_tensor_parallel. The
 * model keeps the pointers, not a copy of ctx. */
void dt_model_set_tensor_group(struct dt_model *m, int tp_rank, int tp_size,
			       void (*allreduce)(void *ctx, float *buf,
						 size_t n),
			       void *ctx);

/* Sets sequence parallelism's row collectives of the tensor group (struct
 * dt_tp in graph/layer.h: reduce_scatter and allgather over whole rows,
 * ctx the one of dt_model_set_tensor_group, called before this). Both
 * non-NULL; the model keeps the pointers. */
void dt_model_set_tensor_group_rows(struct dt_model *m,
				    void (*reduce_scatter)(void *ctx,
							   float *buf,
							   size_t rows,
							   size_t row_len),
				    void (*allgather)(void *ctx, float *buf,
						      size_t rows,
						      size_t row_len));

/* Sequence parallelism's nodes (doc/DESIGN.md, "Sequence parallelism";
 * rows.c): after dt_model_plan_tensor_parallel and
 * dt_model_plan_vocab_parallel, sets marks[i] (n_nodes entries) for each
 * node i of m that would hold only its tensor rank's rows (layer.h's
 * dt_node_rows): a node of a row-wise type (layernorm, dropout, add,
 * pos_embedding) left whole by the split, every input of which is such a
 * node or a split node whose output would be reduce-scattered over rows
 * (a dense row half, attention, a vocabulary-split embedding) and read by
 * such nodes only, and every reader of which is such a node or a split
 * node whose input would be gathered over rows (a dense column half,
 * attention, a vocabulary-split head). The largest such set: nodes that
 * break a rule are unmarked until none does, so a residual stream is
 * marked whole or not at all. Returns how many are marked (0 without
 * tensor parallelism). A query only: nothing of m changes, and no node
 * is marked to run so (parallel.sequence_parallel is refused). */
int dt_model_seq_rows_plan(const struct dt_model *m, bool *marks);

/* The activation floats that the nodes marks sets (as
 * dt_model_seq_rows_plan fills it; n_nodes entries) would not hold at
 * tensor rank `rank` of `size` in a slot of batch samples, where each
 * holds its share of the rows (layer.h's dt_node_rows_held) instead of
 * all batch * R: the sum over them of (batch * R - share) times their
 * output's, output gradient's and scratch's floats a row. The largest
 * share, and so the smallest saving, is the last rank's. For the plan;
 * a model whose marked nodes have seq_rows set lays out its slot that
 * much smaller than without (same stage, no model.recompute). */
int64_t dt_model_seq_rows_saved(const struct dt_model *m, const bool *marks,
				int64_t batch, int rank, int size);

/* Sets the hook a backward pass (dt_model_stage_backward and the
 * training passes) calls after each node of the model (or stage) has
 * finished: hook(ctx, i) for i from the stage's last node down to its
 * first, also for a node whose backward is skipped (nothing behind it
 * needs a gradient). Nodes run in reverse order and a node's backward is
 * the only writer of its own tensors' gradients, so once hook(ctx, i)
 * has been called, this pass has added all it adds to the gradient of
 * every tensor of nodes >= i (dt_tensor_info's node_index): the hook may
 * hand those floats to a non-blocking sum. The hook runs on the calling
 * thread between nodes, must not touch the gradients of nodes < i, and
 * cannot fail the pass (it keeps its own status in ctx). NULL hook
 * removes it. The model keeps the pointers, not a copy of ctx. */
void dt_model_set_backward_hook(struct dt_model *m,
				void (*hook)(void *ctx, int node), void *ctx);

/* Sets the hook a backward pass over one micro-batch (dt_model_stage_
 * backward and the training passes, not dt_model_backward_breadth)
 * calls from inside node i's backward where the layer can say so
 * (dt_pass_params_final: dense on a one-thread pool, between its weight
 * gradient and its input gradient): hook(ctx, i) then has the contract
 * of the backward hook's hook(ctx, i) for the tensors of nodes >= i,
 * before node i's backward has ended; the backward hook still follows
 * the node. Same thread, same rules; NULL hook removes it. */
void dt_model_set_params_hook(struct dt_model *m,
			      void (*hook)(void *ctx, int node), void *ctx);

/* Sets hook(ctx, i, backward) to be called on the calling thread just
 * before node i reads its parameters: before its forward (backward
 * false; a forward model.recompute runs again inside backward too) and
 * before its backward over each micro-batch (true), in every pass of
 * dt_model_stage_forward/_backward, dt_model_backward_breadth and the
 * whole-model passes. For parallel.zero: 3, which gathers a node's
 * parameters there (train/sync.h). The hook cannot fail the pass. NULL
 * removes it; the model keeps the pointers. */
void dt_model_set_node_hook(struct dt_model *m,
			    void (*hook)(void *ctx, int node, bool backward),
			    void *ctx);

/* Makes the dense column and row layers and the attention nodes of m
 * that the plan split (dt_model_plan_tensor_parallel; tensor group set
 * by dt_model_set_tensor_group) hold only this rank's block of their
 * split tensors (doc/DESIGN.md, "Tensor-parallel slices"; graph/layer.h's
 * dt_node_tp_block says where each block lies): a column layer's weight
 * columns [r*out/s, (r+1)*out/s) as a contiguous (in, out/s) block and
 * its bias's same columns, a row layer's weight rows [r*in/s,
 * (r+1)*in/s) (its bias stays whole); attention's qkv_weight as a
 * (C, 3C/s) block of its heads' q, k and v columns side by side, its
 * qkv_bias the same (3C/s), its proj_weight the heads' rows (C/s, C)
 * (proj_bias whole). The parameter and gradient arenas are laid out
 * again at the blocks' sizes, in the same order, and the blocks filled
 * from the whole tensors they held; dt_model_tensor_info then gives each
 * tensor's block size and new offset. The passes give the bits the whole
 * tensors gave (f32 and bf16). A DT_TP_VOCAB node holds its vocabulary
 * block too (the table's rows, the head's classes; a tied head's copy
 * must then be split alike: dt_model_tp_can_own_slices says no where it
 * is not). Every other node keeps its tensors whole.
 * The parameters are moved in place and the arena shrunk, and the
 * gradient arena is made anew, zero: call it before any backward (the
 * gradients are not kept). Nothing beside the whole arenas is allocated,
 * so the setup holds no more than the whole parameters.
 * m must have arenas (max_batch > 0) and tensor parallelism; a no-op for
 * tp_size 1 or when called again. train/ calls it where the plan says so
 * (dt_plan_tp_sliced) and then sums the gradient over the data-parallel
 * ranks of each tensor rank. */
void dt_model_tp_own_slices(struct dt_model *m);

/* Where the tensor ranks own their slices (dt_model_tp_own_slices
 * calls it for the trainer, the plan for its shapes with rank 0) and an
 * untied head is split by vocabulary with its softmax cross-entropy in
 * place over its output (a training model, stage_of as
 * dt_graph_loss_in_place reads it): makes the head's output, and so the
 * loss's buffer and its gradient, (B, [T,] len) with leading dimension
 * len + 1 (a padding float a row, which keeps oneDNN's products on the
 * path of the whole buffer's: tensor.c), rank's classes [lo, lo + len)
 * of dt_tp_vocab_share only, instead of (B, [T,] V) (doc/DESIGN.md,
 * "Tensor-parallel slices"). The
 * activation sizes (dt_node_act_floats, dt_model_stage_info) then count
 * that share; rank 0's is the largest. True when it did; false (nothing
 * changed) otherwise, or when called again. The caller lays out the
 * activations again where they exist. Same bits: only the storage
 * shrinks. */
bool dt_model_tp_slice_logits(struct dt_model *m, const int *stage_of,
			      int rank);

/* struct dt_tp_block: graph/layer.h, with dt_node_tp_block. */
struct dt_tp_block;

/* Floats of block b: n_rows * n_seg * seg_len. */
int64_t dt_tp_block_floats(const struct dt_tp_block *b);

/* Whether block b is one run of the whole tensor's flat order (whole
 * rows: a row block), whose floats follow the previous rank's. */
bool dt_tp_block_is_run(const struct dt_tp_block *b);

/* Copies block b of a whole tensor: dt_tp_block_take from whole (the whole
 * tensor's floats, row-major) into blk (dt_tp_block_floats(b) floats,
 * dense, in the block's order); dt_tp_block_put the other way, writing
 * only the block's floats of whole. */
void dt_tp_block_take(const struct dt_tp_block *b, const float *whole,
		      float *blk);
void dt_tp_block_put(const struct dt_tp_block *b, const float *blk,
		     float *whole);

/* dt_node_tp_block (layer.h) for tensor i of m in dt_model_tensor_info's
 * order, for the code outside graph/ (sums, norms, checkpoints): fills *b
 * with how tensor rank `rank`'s block of it lies in the whole tensor and
 * returns true when the plan splits it over the tensor group; false (b
 * untouched) when it is replicated. */
bool dt_model_tensor_tp_block(const struct dt_model *m, int i, int rank,
			      struct dt_tp_block *b);

/* Whether every node of m that the plan split (tp_size > 1) and that has
 * tensors describes its share as blocks of them (dt_node_tp_block true
 * for one: dense pairs, attention's heads, the vocabulary split), and
 * every tied copy is split as its table is, so that
 * dt_model_tp_own_slices gives each rank its whole share as blocks.
 * False for a tied head kept whole beside a table split by rows
 * (dt_model_plan_vocab_parallel without split_tied): dt_model_tie_fill
 * would copy the whole (V, C) out of the table's block. */
bool dt_model_tp_can_own_slices(const struct dt_model *m);

/* dt_model_tp_prepare_grads restricted to the tensors whose gradients lie
 * in floats [lo, hi) of the gradient arena (a tensor is inside or outside
 * as a whole: lo and hi fall on tensor boundaries), for a sum that starts
 * on part of the gradient (a bucket) while backward still runs. */
void dt_model_tp_prepare_grads_range(struct dt_model *m, size_t lo,
				     size_t hi);

/* Before the gradients of a step are summed over the data-parallel x
 * tensor-parallel ranks: on tensor-parallel ranks other than 0, sets to 0
 * the gradients of the first n_trained floats that belong to replicated
 * tensors (every rank of the group computed the same ones), so that the
 * sum counts them once; split tensors keep their share (0 outside it).
 * A no-op without tensor parallelism, and for a model whose split nodes
 * own their slices (dt_model_tp_own_slices): a block is then its rank's
 * alone and the sums run over the data-parallel group of the tensor rank
 * only, so the replicated gradients, alike on every tensor rank, must
 * stay (doc/DESIGN.md, "Gradient sums"). */
void dt_model_tp_prepare_grads(struct dt_model *m);

/* Floats per sample that the split nodes among nodes [first, last] of m
 * sum over the tensor-parallel group in one forward plus backward pass
 * (what each rank passes to allreduce; 0 without tensor parallelism), for
 * plans: row and attention nodes sum their output forward, column and
 * attention nodes their input gradient backward (none for a node whose
 * input gradient nobody needs). */
int64_t dt_model_tp_floats_per_sample(const struct dt_model *m, int first,
				      int last);

/* The distinct shapes of the products that the dense layers and the
 * attention projections among nodes [first, last] of m make through the
 * kernel seam (dt_kern_par_sgemm, products.c), for the plan's count of
 * oneDNN's primitives (doc/DESIGN.md, "oneDNN's own memory"): a forward
 * and backward pass at batches[0] samples and a forward pass at each of
 * batches[1..n_batches) (the evaluation's last, partial micro-batch;
 * a count <= 0 is skipped). A product's rows are cut over threads as the
 * pool cuts them, in blocks of align rows (dt_kern_gemm_align); with
 * chunked, its terms as dt_kern_onednn_sgemm cuts them (f32 on oneDNN;
 * the bf16 path takes them whole). A shape is (trans_a, trans_b, m, n, k,
 * beta != 0, the leading dimensions). With overlap, backward's one-
 * thread products also as a progress hook cuts them (parallel.overlap's
 * sums in flight; kern.c), on every node (the hook is set from the first
 * bucket's node on: an upper bound). Not counted: the attention's heads
 * (dtrain's own small-product kernel up to T of about 128, oneDNN past
 * it), the convolutions' products, a second consumer's beta of an input
 * gradient. Returns the count. */
int64_t dt_model_product_shapes(const struct dt_model *m, int first,
				int last, const int64_t *batches,
				int n_batches, int threads, int64_t align,
				int chunked, int overlap);

#endif
