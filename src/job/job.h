/* SPDX-License-Identifier: MIT */
/* job.h - the job file: YAML (read with libyaml) -> struct dt_job.
 *
 * A schema table (job/schema.c) lists every scalar key with its type,
 * default, range and documentation; it drives parsing, defaults, range
 * checks, --set and the key list of man/dtrain-job.5. Every value keeps the
 * line and column it came from, so later stages (plan/, data/) can report
 * errors at the right place with dt_job_pos().
 *
 * Inside job/, each file has a header that declares what it gives the
 * files above it and includes only the headers below it, so the files
 * form a tree, bottom first:
 *
 *   yaml.c     libyaml -> a node tree with positions, YAML 1.2 scalars
 *   schema.c   the tables: job keys, layer keys, layer types
 *   keys.c     key lookup, type and range texts, "did you mean"
 *   error.c    positions and every message (dt_job_failf, dt_job_pos)
 *   value.c    one value of a key, checked and stored
 *   layers.c   model.layers: layer mappings, repeat blocks, layer checks
 *   apply.c    a node tree -> the job, section by section
 *   tree.c     vars: and $NAME, --set of a var or a block's layer
 *   check.c    the checks that need the whole job
 *   job.c      dt_job_parse, dt_job_load: defaults, file, --set
 *   write.c    dt_job_write (above keys.c only)
 *   fingerprint.c  dt_job_text, dt_job_fingerprint (above write.c) */
#ifndef DT_JOB_JOB_H
#define DT_JOB_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "job/layer_types.h"
#include "util/status.h"

#define DT_JOB_MAX_LAYERS 256
#define DT_JOB_MAX_DIMS 4
#define DT_JOB_NAME_MAX 128
#define DT_JOB_PATH_MAX 4096
#define DT_JOB_MAX_KEYS 128	/* room in the position table, >= schema size */
#define DT_JOB_LAYER_KEYS 21	/* type, units, ..., name, inputs, tie */
#define DT_JOB_SOURCES 6	/* data.{train,eval}.{images,labels,file} */
#define DT_JOB_MAX_SETS 64	/* --set overrides remembered for messages */
#define DT_JOB_SET_MAX 512	/* bytes kept of each --set text */

/* A place in a file; line and col are 1-based, 0 when the value was not in
 * the file (a default, or a value from --set: then from_set names the
 * option by its 1-based index among the overrides). */
struct dt_pos {
	int line, col;
	int from_set;		/* 1-based index of the --set option, or 0 */
};

/* The values and words come from job/layer_types.h. */
enum dt_activation {
	DT_ACT_NONE = 0,
#define DT_ACT_ENUM_(NAME, word, ...) DT_ACT_##NAME,
	DT_ACTIVATIONS(DT_ACT_ENUM_)
#undef DT_ACT_ENUM_
};

/* One per entry of DT_LAYER_TYPES (job/layer_types.h), in its order. */
enum dt_layer_kind {
#define DT_LAYER_ENUM_(NAME, ...) DT_LAYER_##NAME,
	DT_LAYER_TYPES(DT_LAYER_ENUM_)
#undef DT_LAYER_ENUM_
};

/* One per entry of DT_LOSS_TYPES (job/layer_types.h), in its order. */
enum dt_loss_kind {
#define DT_LOSS_ENUM_(NAME, ...) DT_LOSS_##NAME,
	DT_LOSS_TYPES(DT_LOSS_ENUM_)
#undef DT_LOSS_ENUM_
};

/* Whether a loss kind is a regression against float targets (mse, l1,
 * huber) rather than a classifier against class labels. */
static inline bool
dt_loss_is_regression(enum dt_loss_kind kind)
{
	return kind != DT_LOSS_SOFTMAX_CROSS_ENTROPY;
}

/* model.recompute: which activations a training pass drops after its
 * forward and computes again in its backward (graph.h). */
enum dt_recompute {
	DT_RECOMPUTE_NONE = 0,
	DT_RECOMPUTE_BLOCKS,	/* the inside of each repeat block's copy */
	DT_RECOMPUTE_ATTENTION,	/* the attention's (T, T) probabilities */
};

/* model.attention: how the attention layers compute their heads
 * (graph/attention.c, graph/flash.c). */
enum dt_attention_impl {
	DT_ATTENTION_MATERIALIZED = 0,	/* the (T, T) probabilities kept */
	DT_ATTENTION_FUSED,		/* tiled, online softmax, O(T C) */
};

/* How the weights of a layer start: model.init, or a layer's `init:`
 * (graph/init.c applies it; dtrain-job(5) gives the formulas). Biases
 * always start at 0 and norm gains at 1. */
enum dt_init_rule {
	/* A layer's init: not given: model.init's. As model.init (a job
	 * built in code without one): as AUTO. */
	DT_INIT_RULE_INHERIT = 0,
	DT_INIT_RULE_AUTO,	/* each layer type's own (the default) */
	DT_INIT_RULE_HE,	/* N(0, 2/fan_in) */
	/* U(-a, a), a = sqrt(6/(fan_in + fan_out)) */
	DT_INIT_RULE_XAVIER,
	DT_INIT_RULE_NORMAL,	/* N(0, std^2) */
	/* N(0, 0.02^2), residual projections scaled */
	DT_INIT_RULE_GPT2,
};

/* A value of model.init or of a layer's init: "auto", "he", "xavier",
 * "gpt2" or "normal(STD)". */
struct dt_init_choice {
	enum dt_init_rule rule;
	double std;	/* DT_INIT_RULE_NORMAL: >= 0, finite; else 0 */
};

enum dt_schedule_kind {
	DT_SCHEDULE_CONSTANT = 0,
	DT_SCHEDULE_STEP,
	DT_SCHEDULE_COSINE,
};

enum dt_on_nonfinite {
	DT_NONFINITE_ABORT = 0,
	DT_NONFINITE_SKIP_STEP,
};

/* eval.monitor: what "better" means for eval.keep_best and eval.patience:
 * a lower eval loss, a higher eval accuracy, a lower perplexity
 * (exp(loss)). */
enum dt_eval_monitor {
	DT_MONITOR_LOSS = 0,
	DT_MONITOR_ACCURACY,
	DT_MONITOR_PERPLEXITY,
};

enum dt_on_divergence {
	DT_DIVERGENCE_ABORT = 0,
	DT_DIVERGENCE_WARN,
	DT_DIVERGENCE_OFF,
};

enum dt_decay_set {
	DT_DECAY_WEIGHTS = 0,	/* tensors of rank >= 2 only */
	DT_DECAY_ALL,
};

enum dt_optim_kind {
	DT_OPTIM_SGD = 0,
	DT_OPTIM_ADAM,
	DT_OPTIM_ADAMW,
};

enum dt_strategy {
	DT_STRATEGY_DATA = 0,
	DT_STRATEGY_MODEL,
	DT_STRATEGY_HYBRID,
};

enum dt_pipeline_schedule {
	DT_PIPE_GPIPE = 0,
	DT_PIPE_1F1B,
};

enum dt_stage_balance {
	DT_BALANCE_FLOPS = 0,
	DT_BALANCE_PARAMS,
};

enum dt_sync_kind {
	DT_SYNC_ALLREDUCE = 0,
	DT_SYNC_PARAMETER_SERVER,
};

enum dt_ps_mode {
	DT_PS_SYNC = 0,
	DT_PS_ASYNC,
};

/* parallel.hierarchical: the per-host gradient sum; in the order of
 * comm/hier.h's enum dt_hier_mode (train/sync.c casts one to the other). */
enum dt_hierarchical {
	DT_HIERARCHICAL_AUTO = 0,	/* on across hosts with > 1 rank on one */
	DT_HIERARCHICAL_ON,
	DT_HIERARCHICAL_OFF,
};

/* train.precision: the element type of the products' inputs
 * (graph/kern.h, dt_kern_set_bf16); weights, gradients, the optimizer
 * and every sum stay float. */
enum dt_precision {
	DT_PRECISION_F32 = 0,
	DT_PRECISION_BF16,
};

/* parallel.kernels: which library takes the f32 products; in graph/
 * kern.h's enum dt_kern_lib's order (train/run.c casts one to the
 * other). */
enum dt_kernels {
	DT_KERNELS_AUTO = 0,	/* each class where measured faster */
	DT_KERNELS_OPENBLAS,
	DT_KERNELS_ONEDNN,
};

/* parallel.grad_wire: the gradient's element type on the wire. */
enum dt_grad_wire {
	DT_GRAD_WIRE_F32 = 0,
	DT_GRAD_WIRE_BF16,
};

/* parallel.accum_schedule: the order of a step's forward and backward
 * passes over its micro-batches (plan.h, dt_plan_accum_schedule). */
enum dt_accum_schedule {
	DT_ACCUM_AUTO = 0,
	DT_ACCUM_DEPTH_FIRST,		/* F0 B0 F1 B1 ... */
	DT_ACCUM_BREADTH_FIRST,		/* F0 .. F(m-1), then the backward
					 * node by node over all of them */
};

/* data.normalize: in the order of data/data.h's DT_NORM_* (train/
 * passes one as the other). */
enum dt_data_normalize {
	DT_NORMALIZE_NONE = 0,
	DT_NORMALIZE_STANDARD,	/* (x - mean) / std, per feature */
	DT_NORMALIZE_MINMAX,	/* (x - min) / (max - min), per feature */
};

enum dt_data_format {
	DT_FORMAT_IDX = 0,	/* images + labels */
	DT_FORMAT_CSV,		/* file; label_column; header */
	DT_FORMAT_NPY,		/* images (features) + labels */
	DT_FORMAT_TOKENS,	/* file of token ids; context */
	DT_FORMAT_TEXT,		/* file of text; context; text_unit */
	DT_FORMAT_LLMC,		/* llm.c token shards; context */
	DT_FORMAT_U16,		/* raw uint16 token files; context */
};

/* Whether format f is a file (or shards) of token ids: tokens, llmc or
 * u16. */
bool dt_job_format_token_ids(enum dt_data_format f);

enum dt_job_text_unit {
	DT_JOB_TEXT_BYTES = 0,
	DT_JOB_TEXT_UTF8,
	DT_JOB_TEXT_BPE,	/* data.tokenizer's byte-level BPE */
};

/* "auto" for a parallel degree. */
#define DT_DEGREE_AUTO (-1)

#define DT_LAYER_NAME_MAX 64
#define DT_LAYER_MAX_INPUTS 4

/* One entry of model.layers (after `repeat:` blocks are expanded: a block
 * of N copies becomes N runs of its layers named "<block>.<copy>.<layer>",
 * each copy with its own parameters; an `inputs:` name inside the block
 * refers to the same copy's node). Fields a kind does not use stay 0. */
struct dt_layer_spec {
	enum dt_layer_kind kind;
	char name[DT_LAYER_NAME_MAX];	/* `name:` or "<type><index>" ("dense0") */
	int64_t units;		/* dense: output features */
	enum dt_activation activation;	/* dense/conv2d: applied after;
					 * activation layer: which one */
	int64_t channels;	/* conv2d: output channels */
	int64_t kernel;		/* conv2d, pools: square kernel size */
	int64_t stride;		/* conv2d (default 1), pools (default kernel) */
	int64_t padding;	/* conv2d, pools: zero padding each side */
	double rate;		/* dropout: probability of dropping */
	double eps;		/* layernorm, batchnorm (default 1e-5) */
	double momentum;	/* batchnorm running statistics (default 0.1) */
	int64_t vocab;		/* embedding: number of token ids */
	int64_t dim;		/* embedding, pos_embedding: vector size */
	int64_t length;		/* pos_embedding: max positions */
	int64_t heads;		/* attention: heads (divides the width) */
	bool causal;		/* attention: mask future positions (default
				 * true) */
	bool bias;		/* dense, conv2d, attention: with bias
				 * (default true) */
	/* dense, conv2d, embedding, pos_embedding, attention: how the
	 * weights start (default: model.init's) */
	struct dt_init_choice init;
	int n_shape;		/* reshape: target shape, one dim may be -1 */
	int64_t shape[DT_JOB_MAX_DIMS];
	int n_inputs;		/* 0: the previous layer (the model input for
				 * the first) */
	char inputs[DT_LAYER_MAX_INPUTS][DT_LAYER_NAME_MAX];	/* names;
				 * "input" is the model input */
	/* dense: the name of an earlier embedding layer whose table
	 * (vocab, dim) is this layer's weight, transposed; "" for none */
	char tie[DT_LAYER_NAME_MAX];
	struct dt_pos pos;	/* of the list entry */
};

/* A data source: a path (resolved against the job's dir) or an http(s)
 * URL, with an optional expected sha256 (64 hex digits, lower case) and
 * size in bytes (0 = not given). YAML: a string, or a mapping
 * {path: ..., sha256: ..., size: ...}. */
struct dt_source {
	char path[DT_JOB_PATH_MAX];	/* "" = not given */
	char sha256[65];
	int64_t size;
};

/* A data split. idx and npy: images (features) + labels; csv, tokens and
 * text: file. */
struct dt_data_split {
	char images[DT_JOB_PATH_MAX];	/* == images_src.path */
	char labels[DT_JOB_PATH_MAX];	/* == labels_src.path */
	struct dt_source images_src, labels_src, file;
};

struct dt_job {
	char path[DT_JOB_PATH_MAX];	/* the job file as given */
	char name[DT_JOB_NAME_MAX];	/* default: file's basename sans .yaml */
	uint64_t seed;			/* default 0 */

	struct {
		enum dt_data_format format;	/* data.format, default idx */
		struct dt_data_split train;	/* data.train.{images,labels} */
		struct dt_data_split eval;	/* data.eval.*; eval.images[0]==0 if none */
		double scale;		/* data.scale: feature multiplier; 0
					 * (unset): 1/255 for features stored
					 * as bytes, 1 otherwise */
		enum dt_data_normalize normalize;	/* default none */
		bool header;		/* csv: first row is a header (default
					 * false) */
		int64_t label_column;	/* csv: 0-based, -1 = last (default) */
		int64_t token_bytes;	/* tokens: 2 (uint16) or 4 (uint32) */
		int64_t context;	/* tokens, text: window length */
		enum dt_job_text_unit text_unit;	/* text: bytes (default), utf8
						 * or bpe */
		char tokenizer[DT_JOB_PATH_MAX];	/* text_unit bpe: the
							 * tokenizer file */
		double eval_fraction;	/* tokens, text without an eval file:
					 * held-out tail of the file (default
					 * 0.1) */
		int64_t prefetch;	/* batches the loader prepares ahead
					 * (default 2) */
		int64_t max_bytes;	/* largest download (default 4 GiB) */
		int64_t cache_max_bytes; /* URL shards kept on disk at once;
					  * 0 = no bound (default 0) */
		int64_t prefetch_shards; /* URL shards a rank downloads ahead
					  * of its reads (default 1) */
	} data;

	struct {
		int n_input_dims;
		int64_t input_shape[DT_JOB_MAX_DIMS];	/* per sample, no batch dim */
		int n_layers;
		struct dt_layer_spec layers[DT_JOB_MAX_LAYERS];
		enum dt_loss_kind loss;
		double huber_delta;	/* huber: where the loss turns from
					 * quadratic to linear (default 1) */
		enum dt_recompute recompute;	/* default none */
		enum dt_attention_impl attention; /* default materialized */
		struct dt_init_choice init;	/* default auto */
		char init_from[DT_JOB_PATH_MAX];	/* "" = random init; else
						 * a safetensors file to
						 * start from */
	} model;

	struct {
		/* 0 = not given; plan/ resolves the missing one:
		 * global_batch = micro_batch * grad_accum_steps * dp degree. */
		int64_t global_batch;
		int64_t micro_batch;
		int64_t grad_accum_steps;
		int64_t epochs;		/* exactly one of epochs / steps given */
		int64_t steps;
		enum dt_optim_kind optimizer;
		double lr;
		double momentum;	/* sgd */
		bool nesterov;		/* sgd, needs momentum > 0 */
		double weight_decay;	/* L2 for sgd/adam, decoupled for adamw */
		double beta1, beta2, eps;	/* adam/adamw */
		double clip_norm;	/* global-norm clipping, 0 = off */
		enum dt_on_nonfinite on_nonfinite;	/* default abort */
		enum dt_on_divergence on_divergence;	/* default abort */
		enum dt_decay_set decay;	/* default weights */
		enum dt_precision precision;	/* default f32 */
		struct {
			enum dt_schedule_kind kind;	/* default constant */
			int64_t warmup_steps;	/* linear from lr/warmup */
			int64_t step_size;	/* step: decay every N steps */
			double gamma;		/* step: factor (default 0.1) */
			double min_lr;		/* cosine: floor (default 0) */
		} schedule;		/* train.schedule.* */
	} train;

	struct {
		enum dt_strategy strategy;
		/* Degrees; 0 = not given, DT_DEGREE_AUTO = "auto". Their
		 * product (with the servers) is the world size. */
		int64_t data_parallel;
		int64_t pipeline_parallel;
		int64_t tensor_parallel;
		enum dt_pipeline_schedule schedule;	/* gpipe (default), 1f1b */
		int64_t micro_batches;	/* per pipeline step; 0 = derived */
		enum dt_stage_balance balance;	/* flops (default), params */
		int n_stages;		/* parallel.stages given: the first
					 * layer of stages 1.. by name */
		char stages[DT_JOB_MAX_LAYERS][DT_LAYER_NAME_MAX];
		enum dt_sync_kind sync;	/* allreduce (default), parameter_server */
		int64_t servers;	/* parameter-server ranks (default 1) */
		enum dt_ps_mode mode;	/* sync (default), async */
		int64_t max_staleness;	/* async bound (default 4) */
		int64_t blas_threads;	/* per rank; 0 = cores / ranks */
		enum dt_kernels kernels;	/* auto (default) */
		double timeout_s;	/* watchdog; 0 = off */
		enum dt_hierarchical hierarchical;	/* auto (default) */
		bool overlap;		/* bucketed sums during backward
					 * (default true) */
		double bucket_mb;	/* bucket size, MiB (> 0) */
		enum dt_grad_wire grad_wire;	/* f32 (default), bf16 */
		enum dt_accum_schedule accum_schedule;	/* auto (default) */
		int64_t progress_us;	/* the sums' progress thread's
					 * interval; 0 = none */
		int64_t tcp_eager_kb;	/* Open MPI's TCP eager limit set
					 * before MPI starts, KiB:
					 * DT_DEGREE_AUTO (default) the
					 * plan's (dt_plan_tcp_eager), 0
					 * Open MPI's own */
		int64_t zero;		/* sharding over the summing ranks:
					 * 0 (default) none, 1 optimizer
					 * state, 2 and the gradient's sum */
		bool zero_slices;	/* zero 2 and 3 with tensor
					 * parallelism: the tensor ranks own
					 * their slices (dt_plan_tp_sliced);
					 * false (default): whole tensors */
		bool zero_resident_grads;	/* zero 2 and 3: the float
					 * gradient kept whole and its pages
					 * resident (dt_plan_sync's
					 * grads_resident); false (default):
					 * the unowned pages handed back */
		bool tied_slices;	/* tensor parallelism with slices: a
					 * tied head split as its table
					 * (dt_model_plan_vocab_parallel's
					 * split_tied); false (default): a
					 * tied model keeps whole tensors */
		double gather_mb;	/* zero 3: MiB of consecutive nodes'
					 * parameters gathered as one unit;
					 * 0 (default): node by node */
		bool sequence_parallel;	/* divide the rows between split
					 * layers over the tensor group;
					 * default false (true is refused:
					 * not built yet) */
	} parallel;

	struct {
		int64_t every_steps;	/* 0 = off */
		double every_seconds;	/* 0 = off */
		bool at_end;		/* default true */
		int64_t keep_last;	/* default 3; 0 = keep all */
		char dir[DT_JOB_PATH_MAX];	/* "" = RUN_DIR/checkpoints */
		bool compress;		/* zlib the optimizer state (default
					 * false) */
	} checkpoint;

	struct {
		int64_t every_steps;	/* 0 = only at the end */
		bool keep_best;		/* keep the best evaluation's checkpoint
					 * in CKPT_DIR/best (default false) */
		int64_t patience;	/* stop after this many evaluations
					 * without improvement; 0 = off */
		enum dt_eval_monitor monitor;	/* default loss */
		int64_t max_batches;	/* an evaluation scores at most this
					 * many global batches of samples;
					 * 0 = the whole split (default 200) */
	} eval;

	struct {
		int64_t every_steps;	/* default 10 */
		bool tensorboard;	/* RUN_DIR/tb/events.out.tfevents.* */
	} log;

	/* Private to job/ (read it through dt_job_pos and dt_job_where):
	 * where each value came from, and the --set texts those positions
	 * refer to. Fixed arrays like the rest, so the job still copies and
	 * broadcasts as plain bytes. */
	struct {
		struct dt_pos root;			/* the top mapping */
		struct dt_pos key[DT_JOB_MAX_KEYS];	/* by schema index */
		struct dt_pos shape[DT_JOB_MAX_DIMS];	/* input_shape items */
		struct dt_pos layer[DT_JOB_MAX_LAYERS][DT_JOB_LAYER_KEYS];
		struct dt_pos input[DT_JOB_MAX_LAYERS][DT_LAYER_MAX_INPUTS];
		struct dt_pos layer_shape[DT_JOB_MAX_LAYERS][DT_JOB_MAX_DIMS];
		struct dt_pos stage[DT_JOB_MAX_LAYERS];	/* parallel.stages */
		struct dt_pos source[DT_JOB_SOURCES][3];	/* path, sha256,
							 * size */
		int n_sets;
		char sets[DT_JOB_MAX_SETS][DT_JOB_SET_MAX];
	} origin;
};

/* Reads the job file at path, applies the overrides ("key.path=value", n of
 * them, in order; a later one wins) and checks every key, type and range.
 * Relative data paths are resolved against the job file's directory (a
 * relative path in an override against the current directory) and stored
 * absolute; URLs are kept as given. Returns DT_OK and fills *job
 * (caller-owned storage; no pointers into path, overrides or err are kept),
 * or DT_ERR_JOB with err->msg in the form
 * "FILE:LINE:COL: key.path: expected ..., found ..." followed by a newline,
 * the source line, a newline and a caret under the column (for an override:
 * "--set key.path=value: key.path: ...", one line); DT_ERR_IO if the file
 * cannot be read. At most DT_JOB_MAX_SETS overrides. Writes no file. On
 * error *job is unspecified. */
enum dt_status dt_job_load(const char *path, const char *const *overrides,
			   int n_overrides, struct dt_job *job,
			   struct dt_error *err);

/* As dt_job_load, from text (len bytes, need not end in NUL) in memory.
 * name stands for the file: it appears in messages, is stored in job->path,
 * gives the default job name and the directory for relative data paths.
 * Never returns DT_ERR_IO. */
enum dt_status dt_job_parse(const char *name, const char *text, size_t len,
			    const char *const *overrides, int n_overrides,
			    struct dt_job *job, struct dt_error *err);

/* Where the value of key came from; {0,0,0} for a default or an unknown
 * key. key is a schema key ("train.lr"), a section ("train": where its
 * mapping starts), "model.layers.N" (the list entry), "model.layers.N.units",
 * "model.layers.N.inputs.J", "model.layers.N.shape.J",
 * "model.input_shape.N", "parallel.stages.J" or a part of a data source
 * ("data.train.images.sha256"). Layers count after repeat blocks are
 * expanded; an expanded layer's positions are those of its entry in the
 * block. */
struct dt_pos dt_job_pos(const struct dt_job *job, const char *key);

/* Formats "FILE:LINE:COL: key: " (or "--set key=value: key: " for a value
 * from an override, or "FILE: key: " for a default) into buf (size bytes,
 * always NUL-terminated when size > 0), for plan/ and data/ errors about a
 * key; FILE is job->path. */
void dt_job_where(const struct dt_job *job, const char *key, char *buf,
		  size_t size);

/* Writes the resolved job (every key, defaults included, overrides applied,
 * absolute data paths; keys whose 0 means "not given", such as
 * train.global_batch, are left out while 0) as YAML that dt_job_load reads
 * back to an equal job, wherever the copy is stored. Returns DT_OK, or
 * DT_ERR_IO on a write error. */
enum dt_status dt_job_write(const struct dt_job *job, FILE *out,
			    struct dt_error *err);

/* The text dt_job_write writes, in memory: *text (caller frees, NUL-
 * terminated) and its length *len. Returns DT_OK, or DT_ERR_IO when the
 * memory stream cannot be opened; on error *text is NULL. */
enum dt_status dt_job_text(const struct dt_job *job, char **text,
			   size_t *len, struct dt_error *err);

/* The job's fingerprint: SHA-256 (FIPS 180-4, through OpenSSL's EVP) of
 * its canonical resolved text (dt_job_text), into out (32 bytes), and as
 * 64 lower-case hex digits into hex when hex is not NULL. Two jobs that
 * resolve to the same keys and values have the same fingerprint whatever
 * the file, the --set options or their order; the job file's own path
 * and the positions are not part of it. DT_ERR_IO if the text cannot be
 * made or hashed; out is then unspecified. */
enum dt_status dt_job_fingerprint(const struct dt_job *job,
				  unsigned char out[32], char hex[65],
				  struct dt_error *err);

/* The i-th data source of job (0 <= i < DT_JOB_SOURCES), in schema
 * order: data.train.images, data.train.labels, data.train.file, then the
 * same of data.eval. Its key ("data.train.images", static storage) goes
 * to *key. A source the job does not give has path[0] == '\0'. The one
 * list of the sources for the code that goes through all of them (fetch,
 * the start-up agreement). */
const struct dt_source *dt_job_source(const struct dt_job *job, int i,
				      const char **key);

/* Calls fn, in schema order, for every key that takes a value: scalars,
 * model.input_shape, model.layers and the keys of one layer, spelled
 * "model.layers.N.units". type reads "a number > 0", "one of sgd, adam,
 * adamw"; def is the default as YAML text, "required", or words such as
 * "derived"; doc is one line. The strings live only during the call. Used
 * by the man-page test and `dtrain job-keys`. */
void dt_job_each_key(void (*fn)(const char *key, const char *type,
				const char *def, const char *doc, void *ctx),
		     void *ctx);

#endif
