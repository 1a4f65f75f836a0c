/* SPDX-License-Identifier: MIT */
/* layer.h - the inside of the model graph: nodes and the layer vtable.
 *
 * A model is a list of named nodes in topological order. Each node has a
 * layer type (struct dt_layer_ops, one type per file: dense.c,
 * activation.c, softmax_xent.c, ...), up to DT_NODE_MAX_INPUTS input nodes,
 * an output shape, the parameter tensors it declares, and pointers into the
 * model's three arenas (parameters, gradients, activations). registry.c
 * maps the job's layer and loss kinds to types. The types are listed once,
 * in DT_LAYER_TYPES and DT_LOSS_TYPES (job/layer_types.h): adding a layer
 * type is its own file, one entry there, local.mk and its man entry.
 *
 * Only graph/ and its tests include this header; the rest of dtrain uses
 * graph.h. Shapes exclude the batch dimension; buffers are float32,
 * row-major, batch first. */
#ifndef DT_GRAPH_LAYER_H
#define DT_GRAPH_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job/job.h"
#include "util/status.h"

#define DT_NODE_MAX_INPUTS 4
#define DT_NODE_MAX_TENSORS 4
#define DT_SHAPE_MAX_DIMS 4
/* An input index that means the model's input x rather than a node. */
#define DT_NODE_INPUT (-1)

/* A per-sample shape (no batch dimension). */
struct dt_shape {
	int n_dims;
	int64_t dim[DT_SHAPE_MAX_DIMS];
};

/* Product of the dimensions (1 for n_dims == 0). The caller has checked
 * that it fits in int64_t (dt_model_new keeps every size below INT_MAX). */
int64_t dt_shape_size(const struct dt_shape *s);

/* How a parameter tensor starts. Keys of the draws: (job->seed,
 * DT_RNG_INIT, tensor index in model order, element index), so every rank
 * draws the same bits without communicating. A layer's infer declares
 * its own rule for each tensor (ZERO for biases, ONE for norm gains, one
 * of the others for weights); init.c then replaces the rule of each
 * weight by the job's choice (model.init, the layer's init:). */
enum dt_init {
	DT_INIT_ZERO = 0,
	DT_INIT_ONE,
	/* N(0, 2/fan_in): He et al., "Delving Deep into Rectifiers", ICCV
	 * 2015; for weights followed by relu-like activations. */
	DT_INIT_HE_NORMAL,
	/* U(-a, a), a = sqrt(6/(fan_in+fan_out)): Glorot & Bengio,
	 * "Understanding the difficulty of training deep feedforward neural
	 * networks", AISTATS 2010. */
	DT_INIT_XAVIER_UNIFORM,
	/* N(0, std^2), std the tensor's: GPT-2's 0.02 for embeddings and
	 * attention (Radford et al., "Language Models are Unsupervised
	 * Multitask Learners", 2019), or the job's normal(STD). */
	DT_INIT_NORMAL,
};

/* A parameter tensor a layer declares in infer(); the graph lays the
 * tensors of all nodes out back to back in the parameter arena, in node
 * order then declaration order, and fills the last four fields. */
struct dt_param_tensor {
	const char *name;	/* "weight", "bias"; full name "<node>.<name>" */
	int n_dims;
	int64_t shape[DT_SHAPE_MAX_DIMS];
	enum dt_init init;
	int64_t fan_in, fan_out;	/* for the He and Xavier rules; 0 for
					 * a looked-up table (embeddings) */
	float std;		/* DT_INIT_NORMAL: the standard deviation */
	/* The matrix whose product is the layer's output (dense's and
	 * conv2d's weight, attention's proj_weight): the one GPT-2's init
	 * scales when the output is added into a residual stream. */
	bool out_proj;
	/* A buffer is state the layer updates itself in training forward
	 * passes (batchnorm's running statistics), not a trained parameter.
	 * It lies in the parameter arena like the others, so checkpoints and
	 * exports carry it; backward never writes its gradient, which stays
	 * 0, and the optimizer must leave it alone (no weight decay). */
	bool buffer;
	/* A tied copy (a dense layer's `tie:`): this tensor holds the same
	 * bits as tensor 0 of the embedding node tie_src names (struct
	 * dt_node) and is no parameter of its own. It has its own floats in
	 * both arenas so that the node may live on another pipeline stage
	 * than the embedding: after each step's gradient sum, the sync adds
	 * the two gradients and gives both tensors the sum
	 * (train/tie.c), so the optimizer updates both alike; the norm,
	 * checkpoints, exports and the parameter count take the
	 * embedding's tensor only, and loaders fill the copy from it. */
	bool tied;
	/* set by the graph: */
	int64_t size;		/* product of shape; with the node's tp_own,
				 * the floats of this rank's block */
	size_t offset;		/* floats from the start of the arenas */
	float *data;		/* size floats in the parameter arena */
	float *grad;		/* size floats in the gradient arena */
};

/* Fills pt->data (pt->size floats) with std times standard normal draws
 * keyed as enum dt_init says: the He rule (std = sqrt(2/fan_in)) and
 * DT_INIT_NORMAL. */
void dt_param_init_normal(struct dt_param_tensor *pt, float std,
			  uint64_t seed, uint64_t tensor_index);

/* Tensor parallelism (Megatron-LM: Shoeybi et al., "Megatron-LM: Training
 * Multi-Billion Parameter Language Models Using Model Parallelism", 2019).
 * Every rank of a tensor-parallel group holds the whole parameter arena
 * (identical bits on each) unless the model owns its slices
 * (dt_model_tp_own_slices: then each split tensor is the rank's block,
 * dt_node_tp_block); a split node computes only its rank's share:
 *   DT_TP_COLUMN  a dense layer's output columns [rank*out/size, ...):
 *                 forward writes those columns of n->out (the others 0),
 *                 backward adds dW and db of those columns only and its
 *                 partial dX, which it sums over the group (allreduce);
 *   DT_TP_ROW     a dense layer that reads a DT_TP_COLUMN layer (through
 *                 activations and dropout): input rows (features) of its
 *                 share; forward sums the partial products over the group
 *                 (allreduce) and then adds the bias, backward adds dW of
 *                 its rows and writes dX of its columns (the others 0);
 *                 the bias is replicated;
 *   DT_TP_HEADS   attention: the heads of its share, the qkv columns and
 *                 the proj rows that belong to them; forward sums the
 *                 partial outputs over the group, backward the partial dX;
 *   DT_TP_VOCAB   the vocabulary split (dt_model_plan_vocab_parallel): an
 *                 embedding looks up the tokens of its rows (the share
 *                 dt_tp_vocab_share gives, about V/s of them) and writes
 *                 zeros for the others, summed over the group; the head
 *                 the loss reads computes the classes of its share; the
 *                 softmax cross-entropy runs across the group without
 *                 gathering the logits (doc/DESIGN.md, "Vocabulary split").
 * A gradient a rank does not own stays 0, and replicated tensors have the
 * same gradient on every rank, so dt_model_tp_prepare_grads plus one sum
 * over the data-parallel x tensor-parallel ranks gives every rank the
 * whole gradient. With tp_own (struct dt_node) a split node holds its
 * blocks only (dt_node_tp_block, below), and the
 * same products run on them through leading dimensions and offsets. */
enum dt_tp_mode {
	DT_TP_NONE = 0,
	DT_TP_COLUMN,
	DT_TP_ROW,
	DT_TP_HEADS,
	DT_TP_VOCAB,
};

struct dt_tp {
	int rank, size;		/* in the tensor-parallel group */
	/* dt_model_tp_own_slices was called: the gradient sums run over
	 * the data-parallel ranks of each tensor rank, so no replicated
	 * gradient may be zeroed, even on a pipeline stage with no split
	 * node of its own. */
	bool own;
	/* In-place sum of n floats over the group; every rank of the group
	 * calls it at the same point with the same n. */
	void (*allreduce)(void *ctx, float *buf, size_t n);
	/* Sequence parallelism's collectives over the group (set by
	 * dt_model_set_tensor_group_rows; NULL until then), on buf of rows
	 * rows of row_len floats cut by whole rows in rank order (rank r:
	 * rows [floor(rows r / size), floor(rows (r + 1) / size)),
	 * comm/comm.h's dt_comm_row_share): reduce_scatter leaves this
	 * rank's rows holding the sum over the group, allgather fills every
	 * rank's rows from their owner. Every rank of the group calls them
	 * at the same point with the same rows and row_len. */
	void (*reduce_scatter)(void *ctx, float *buf, size_t rows,
			       size_t row_len);
	void (*allgather)(void *ctx, float *buf, size_t rows, size_t row_len);
	void *ctx;
};

/* How rank `rank`'s block of tensor k of node n lies in the whole tensor
 * (row-major; a 1-D tensor is one row): the rows [first_row, first_row +
 * n_rows) of the whole, each of row_len floats, and in each row n_seg
 * segments of seg_len floats starting at columns seg_col[0..n_seg-1]. The
 * block holds them row by row, segment by segment, densely: its floats
 * are n_rows * n_seg * seg_len. */
struct dt_tp_block {
	int64_t first_row, n_rows, row_len;
	int n_seg;
	int64_t seg_col[3], seg_len;
};

struct dt_node;

/* Fills *b for tensor k of node n at tensor rank `rank` and returns true
 * when the tensor is split over the node's tensor group; returns false
 * (b untouched) when it is replicated (held whole on every rank). */
bool dt_node_tp_block(const struct dt_node *n, int k, int rank,
		      struct dt_tp_block *b);

/* The vocabulary split's share of tensor rank `rank` in a group of s over
 * V rows (an embedding's table) or classes (a head's logits), 1 <= s <= V:
 * [*lo, *lo + *len). The first V mod s ranks hold ceil(V/s), the others
 * floor(V/s), in rank order (r*V/s and V/s when s divides V), so no rank
 * is empty and rank 0's share is the largest (doc/DESIGN.md, "Vocabulary
 * split"). */
void dt_tp_vocab_share(int64_t vocab, int s, int rank, int64_t *lo,
		       int64_t *len);

/* The tensor rank whose share (dt_tp_vocab_share) holds row or class c of
 * V, 0 <= c < V, 1 <= s <= V. */
int dt_tp_vocab_owner(int64_t vocab, int s, int64_t c);

struct dt_pool;

/* What one forward or backward pass is about; filled by graph.c. */
struct dt_pass {
	int64_t batch;		/* rows in every buffer, <= max_batch */
	bool training;		/* false in dt_model_eval */
	/* For loss nodes, at most one of these is set; neither: no loss. */
	const int32_t *labels;	/* (batch, tokens): class ids, tokens = 1
				 * for a (classes) output */
	const float *targets;	/* (batch, out_size): regression targets */
	float grad_scale;	/* loss backward multiplies its gradient by this */
	uint64_t seed;		/* job->seed, for stochastic layers */
	/* Where the micro-batch lies in training, for stochastic layers
	 * whose draws must not depend on how a global batch is split
	 * (dt_model_set_position): */
	uint64_t step;		/* global optimizer step */
	int64_t first_sample;	/* global index of row 0 of the batch */
	/* The tensor-parallel group, or NULL (no split nodes run split). */
	const struct dt_tp *tp;
	/* The rank's thread pool for the loops of a layer (util/threadpool.h), or
	 * NULL: one thread. A layer splits a loop by its outputs only, so
	 * the pool size never changes the bits. */
	struct dt_pool *pool;
	/* A forward pass that computes again, inside a backward pass, what a
	 * forward pass of the same micro-batch computed before (graph.h,
	 * model.recompute: blocks): its outputs are the same bits and it
	 * must leave every other state alone (batchnorm's running
	 * statistics are not updated twice). */
	bool recompute;
	/* In backward: dt_model_set_params_hook's hook and the node running
	 * (dt_pass_params_final). */
	void (*params_hook)(void *ctx, int node);
	void *params_ctx;
	int node;
	/* outputs of loss nodes: */
	double loss_sum;	/* sum over the batch (and tokens) of losses */
	int64_t n_correct;	/* argmax == label, counted per token */
};

/* Called by a layer's backward once the gradients of its node's own
 * tensors are final for this pass and before the rest of its work (the
 * input gradient): runs the params hook (dt_model_set_params_hook), if
 * any, on the calling thread. A layer may never call it. */
void dt_pass_params_final(const struct dt_pass *p);

struct dt_layer_ops;

struct dt_node {
	const struct dt_layer_ops *ops;
	char name[80];		/* "dense0", "dense0.relu", "loss" */
	const char *kind;	/* for plans: ops->kind, or e.g. "relu" */
	/* The job entry the node was made from, for its settings and for
	 * error positions; an activation node made from a dense's
	 * `activation:` shares the dense's entry, and the loss node the
	 * entry of the last layer (whose output it takes). layer is the
	 * entry's index in job->model.layers. */
	int layer;
	struct dt_layer_spec spec;

	int n_inputs;
	int inputs[DT_NODE_MAX_INPUTS];	/* node indices or DT_NODE_INPUT */
	/* What the job calls input k, for messages: "input" (the model
	 * input) or the layer's name; NULL reads as "input". */
	const char *in_name[DT_NODE_MAX_INPUTS];
	struct dt_shape in_shape[DT_NODE_MAX_INPUTS];
	int64_t in_size[DT_NODE_MAX_INPUTS];	/* dt_shape_size(in_shape) */

	/* set by ops->infer: */
	struct dt_shape out_shape;
	int n_tensors;
	struct dt_param_tensor tensor[DT_NODE_MAX_TENSORS];

	/* set by dt_model_plan_tensor_parallel and, for DT_TP_VOCAB,
	 * dt_model_plan_vocab_parallel (tensor.c): how the node is
	 * split over tp_size ranks; DT_TP_NONE and 1 otherwise. fwd_flops
	 * counts the share of one rank when tp_size > 1. */
	enum dt_tp_mode tp_mode;
	int tp_size;
	/* set by dt_model_tp_own_slices: the node's split tensors hold this
	 * rank's block only (doc/DESIGN.md, "Tensor-parallel slices"; a
	 * tensor's size is then its block's floats, its shape the whole
	 * tensor's); false: whole tensors, the share read in place. */
	bool tp_own;
	/* set by dt_model_tp_slice_logits (tensor.c) on an untied
	 * vocabulary-split head and its loss in place: their output holds
	 * this rank's classes only, (B, [T,] len) with leading dimension
	 * out_cols = len + 1 (dt_tp_vocab_share's len, and a padding
	 * float: tensor.c); 0: the whole output, the share at its
	 * columns. dt_node_out_floats (stage.h) gives the floats a
	 * sample. */
	int64_t out_cols;
	/* Sequence parallelism (doc/DESIGN.md, "Sequence parallelism"):
	 * the node holds and computes only its tensor rank's share of the
	 * pass's rows (dt_node_rows, below): its output, output gradient
	 * and scratch are sized to the share by the graph. Only for a type
	 * with ops->row_shares; false everywhere unless set. */
	bool seq_rows;

	/* set by the graph: */
	int64_t out_size;	/* dt_shape_size(out_shape) */
	int64_t n_params;	/* sum of tensor sizes */
	int n_consumers;	/* nodes that read this one's output */
	bool needs_grad;	/* has parameters or reads a node that needs_grad */
	float *out;		/* (max_batch, out_size) */
	float *dout;		/* (max_batch, out_size); NULL when no gradient
				 * flows back through the node */
	float *scratch;		/* (max_batch, ops->scratch_floats), or NULL */
	/* model.recompute: attention, for a type with ops->work_floats: the
	 * layer keeps in scratch only what backward cannot recompute
	 * cheaply, and computes the rest again in backward into work. */
	bool recompute;
	/* model.attention: fused, for an attention node: its heads run
	 * tiled with an online softmax (flash.c), keeping each row's
	 * log-sum-exp instead of the probabilities, and recompute them in
	 * backward; recompute is then false. */
	bool attn_fused;
	float *work;		/* (max_batch, ops->work_floats) when
				 * recompute, shared by every such node of
				 * the model and every slot; else NULL */
	/* Set by the graph when a layer applies the activation node that
	 * follows it (ops->fuses_relu; graph.c's fuse_activations): the
	 * layer's fused_act is DT_ACT_RELU and its forward writes relu(out),
	 * its backward takes dout as the relu's output gradient and masks it
	 * by out > 0 itself; the activation node's act_fused is true, its
	 * out and dout are the layer's, and its passes do nothing. */
	enum dt_activation fused_act;
	bool act_fused;
	/* Set by the graph when the relu so fused feeds only a 2x2 max
	 * pooling at stride 2 without padding, and the layer has
	 * ops->fuses_pool: the layer's fused_pool is that pooling node, whose
	 * output and argmax (its scratch) the layer's forward writes and
	 * whose dout its backward reads; the pooling node's pool_fused is
	 * true and its passes do nothing. The layer's own output and the
	 * relu's are then not written at all (nothing else reads them). */
	struct dt_node *fused_pool;
	bool pool_fused;
	/* Set by the graph before infer for a dense layer with `tie:`: the
	 * embedding node it names (an earlier node; its spec gives vocab
	 * and dim), else NULL. The dense's weight is then a tied copy
	 * (struct dt_param_tensor) of shape (units, in) = (vocab, dim). */
	const struct dt_node *tie_src;
	int tie_node;		/* tie_src's index, -1 without */
	/* The huber loss's delta (model.huber_delta), set by its infer;
	 * 0 for every other node. */
	float huber_delta;
};

/* A layer type. Hooks marked optional may be NULL.
 *
 * Forward reads in[k] ((batch, in_size[k]) each) and writes n->out
 * (batch, out_size); it may also write n->scratch for its backward.
 * Backward reads in[k], n->out and n->dout and ADDS to the gradients of
 * its tensors (tensor[i].grad), so gradients accumulate across
 * micro-batches until the optimizer zeroes them. din[k] is the gradient of
 * input k, (batch, in_size[k]), or NULL when nothing upstream needs it (the
 * model input, or a part of the graph without parameters); the layer writes
 * it when din_add[k] is false and adds to it when true (the input feeds
 * several nodes and another has written it already). One node may read the
 * same input twice (`inputs: [a, a]`): then din[0] and din[1] are the same
 * buffer with din_add[1] true, so a layer handles its inputs in order, each
 * completely before the next. Backward always follows the forward of the
 * same micro-batch and may overwrite n->scratch. Neither hook allocates. */
struct dt_layer_ops {
	const char *kind;	/* "dense": the word used in plans and files */
	/* How many inputs the type takes; 0 and 0 mean exactly one. The
	 * graph refuses other counts before infer runs. */
	int min_inputs, max_inputs;

	/* Checks that the node can take its inputs (n->in_shape, n->spec)
	 * and sets n->out_shape and the declared parameter tensors. On a
	 * bad input returns DT_ERR_JOB through dt_node_errorf. */
	enum dt_status (*infer)(struct dt_node *n, const struct dt_job *job,
				struct dt_error *err);
	void (*forward)(struct dt_node *n, struct dt_pass *p,
			const float *const *in);
	void (*backward)(struct dt_node *n, struct dt_pass *p,
			 const float *const *in, float *const *din,
			 const bool *din_add);
	/* Forward FLOPs for one sample (multiply-add = 2); backward is
	 * counted as twice this for every type (graph.h). */
	double (*fwd_flops)(const struct dt_node *n);
	/* Optional: floats per sample of n->scratch, activation storage
	 * beyond the output and output gradient (which the graph sizes). */
	int64_t (*scratch_floats)(const struct dt_node *n);
	/* Optional, for model.recompute: attention (n->recompute set):
	 * floats per sample of n->work, which holds nothing from a forward
	 * pass to its backward, and the FLOPs per sample the backward adds
	 * to compute again what forward left out of scratch. */
	int64_t (*work_floats)(const struct dt_node *n);
	double (*recompute_flops)(const struct dt_node *n);
	/* The type can apply a relu that follows it inside its own passes
	 * (struct dt_node's fused_act), which saves the relu's two passes
	 * over the output. */
	bool fuses_relu;
	/* And a 2x2 max pooling after that relu (struct dt_node's
	 * fused_pool), which saves the round trip of the output through
	 * memory. */
	bool fuses_pool;
	/* Backward reads its inputs and n->dout, never n->out (dense
	 * without a fused activation): once its forward has run, the
	 * output's values are only for the nodes that read it, so a loss
	 * that alone reads it may overwrite it (loss_in_place below). */
	bool bwd_reads_no_out;
	/* A loss type that can work in place over its input's buffer when
	 * it alone reads that input, in a training model (graph.c's
	 * dt_graph_loss_in_place): its output is then that buffer, which
	 * its forward overwrites, and its backward writes d(input) over
	 * it too. */
	bool loss_in_place;
	/* The type works row by row over its output's last axis, so that
	 * a node of it may hold a share of the rows (struct dt_node's
	 * seq_rows): its passes take their rows from dt_node_rows, its
	 * scratch_floats is a whole number of floats a row, and a value's
	 * draws, if any, are keyed by its global row. */
	bool row_shares;
};

/* Sequence parallelism's row shares (rows.c). A node's output (B, ...,
 * C) is read as rows of C = dt_node_row_len floats, its last axis (its
 * out_size for a 0-axis output): out_size / C rows a sample, n = B times
 * that in a pass of B samples.
 *
 * dt_rows_share: rank `rank`'s share of n rows over s >= 1 ranks, rows
 * [*first, *first + *count) = [floor(n rank / s), floor(n (rank + 1) /
 * s)), comm/comm.h's dt_comm_row_share (whose collectives move them).
 * dt_node_rows: the rows node n computes in pass p, its tensor rank's
 * share where n->seq_rows and p->tp is set, else all n from 0; its
 * buffers hold the share from their start. dt_node_rows_held: how many
 * rows n's buffers hold in a pass of batch samples at tensor rank `rank`
 * of `size` (n for a node without seq_rows), which the graph sizes
 * them by. */
int64_t dt_node_row_len(const struct dt_node *n);
void dt_rows_share(int64_t n, int s, int rank, int64_t *first,
		   int64_t *count);
void dt_node_rows(const struct dt_node *n, const struct dt_pass *p,
		  int64_t *first, int64_t *count);
int64_t dt_node_rows_held(const struct dt_node *n, int64_t batch, int rank,
			  int size);

/* Runs stmt for each i in [0, len) (int64_t i, declared by the macro), in
 * blocks of 8 with a constant inner trip count, then the rest one by one.
 * GCC's -O2 vectoriser (the "very cheap" cost model) only takes loops
 * whose trip count is a known multiple of the vector width, so a plain
 * loop over len stays scalar while this one runs in SIMD registers. For
 * that, the pointers stmt uses must be restrict-qualified parameters of
 * the function (GCC 12 does not trust restrict on local pointers here: a
 * small static kernel taking the buffers does it) and every load in stmt
 * unconditional: `y[i] > 0 ? dy[i] : 0` is a branch, `relu_grad(y[i],
 * dy[i])` is not. */
#define DT_VEC_LOOP(i, len, stmt)                                       \
	do {                                                            \
		int64_t i##_blk_ = 0, i##_len_ = (len);                 \
		for (; i##_blk_ + 8 <= i##_len_; i##_blk_ += 8)         \
			for (int i##_j_ = 0; i##_j_ < 8; i##_j_++) {    \
				int64_t i = i##_blk_ + i##_j_;          \
				stmt;                                   \
			}                                               \
		for (int64_t i = i##_blk_; i < i##_len_; i++)           \
			stmt;                                           \
	} while (0)

/* The layer types, one file each: dt_layer_<word> for every entry of
 * DT_LAYER_TYPES and dt_layer_<ops> for every entry of DT_LOSS_TYPES
 * (job/layer_types.h). */
#define DT_LAYER_OPS_DECL_(NAME, word, ...) \
	extern const struct dt_layer_ops dt_layer_##word;
DT_LAYER_TYPES(DT_LAYER_OPS_DECL_)
#undef DT_LAYER_OPS_DECL_
#define DT_LOSS_OPS_DECL_(NAME, word, ops) \
	extern const struct dt_layer_ops dt_layer_##ops;
DT_LOSS_TYPES(DT_LOSS_OPS_DECL_)
#undef DT_LOSS_OPS_DECL_

/* registry.c: the type implementing a job layer kind / loss kind, or NULL
 * for a value outside the enum. */
const struct dt_layer_ops *dt_layer_for_kind(enum dt_layer_kind kind);
const struct dt_layer_ops *dt_layer_for_loss(enum dt_loss_kind kind);

/* Name of an activation ("relu"), "none" for DT_ACT_NONE. */
const char *dt_activation_name(enum dt_activation act);

/* Fills err with DT_ERR_JOB and the message prefixed by the node's place in
 * the job file, "FILE:LINE:COL: model.layers.N (NAME): " ("FILE:
 * model.layers.N (NAME): " when the entry has no position; NAME is the
 * job layer's name, " (NAME)" is left out when it is empty), and returns
 * DT_ERR_JOB. */
enum dt_status dt_node_errorf(const struct dt_node *n, const struct dt_job *job,
			      struct dt_error *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Writes s as "(64, 128)" into buf (size bytes, always NUL-terminated when
 * size > 0) and returns buf, for messages. */
char *dt_shape_format(const struct dt_shape *s, char *buf, size_t size);

/* The name of input k of n for messages: n->in_name[k], or "input". */
const char *dt_node_input_name(const struct dt_node *n, int k);

/* For layers over images: reads a per-sample shape (channels, height,
 * width), or (height, width) as one channel, into *c, *h, *w; returns false
 * for any other number of dimensions. */
bool dt_shape_chw(const struct dt_shape *s, int64_t *c, int64_t *h,
		  int64_t *w);

#endif
