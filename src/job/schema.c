/* SPDX-License-Identifier: MIT */
/* schema.c - the tables of job-file keys (after redis's config table and
 * tmux's options table): one row per key with its type, where it lives in
 * struct dt_job, its default, its range, the key it depends on and a line
 * of documentation; the keys of one layer; and the layer types with the
 * keys each takes. The tables drive parsing, defaults, range checks, --set,
 * dt_job_write and dt_job_each_key, and a unit test holds
 * man/dtrain-job.5 to them. */
#include "job/schema.h"

#include <stddef.h>

#define OFF(f) offsetof(struct dt_job, f)
#define SZ(f) sizeof(((struct dt_job *)0)->f)
#define LOFF(f) offsetof(struct dt_layer_spec, f)
#define LSZ(f) sizeof(((struct dt_layer_spec *)0)->f)

#define GE(x) .flags = DT_KEYF_MIN, .min = (x)
#define GT(x) .flags = DT_KEYF_MIN | DT_KEYF_MIN_OPEN, .min = (x)
/* lo <= value <= hi. */
#define IN(lo, hi) .flags = DT_KEYF_MIN | DT_KEYF_MAX, .min = (lo), \
	.max = (hi)
#define IN_REQ(lo, hi) .flags = DT_KEYF_REQUIRED | DT_KEYF_MIN | \
	DT_KEYF_MAX, .min = (lo), .max = (hi)
#define UNIT_OPEN .flags = DT_KEYF_MIN | DT_KEYF_MAX | DT_KEYF_MAX_OPEN, \
	.min = 0, .max = 1
#define UNIT_CLOSED .flags = DT_KEYF_MIN | DT_KEYF_MAX, .min = 0, .max = 1

/* Keys used only with some values of an enum key. */
#define FORMATS(m) .when = "data.format", .when_mask = (m)
#define FMT(f) (1u << DT_FORMAT_##f)
#define SCHEDULE(m) .when = "train.schedule.kind", .when_mask = (m)
#define PIPELINE .when = "parallel.strategy", \
	.when_mask = 1u << DT_STRATEGY_MODEL | 1u << DT_STRATEGY_HYBRID
#define SERVER .when = "parallel.sync", \
	.when_mask = 1u << DT_SYNC_PARAMETER_SERVER
#define ALLREDUCE .when = "parallel.sync", \
	.when_mask = 1u << DT_SYNC_ALLREDUCE

#define SOURCE(f, split) .type = DT_KEY_SOURCE, \
	.off = OFF(data.split.f), .size = SZ(data.split.f.path)

_Static_assert(sizeof(enum dt_activation) == sizeof(int) &&
	       sizeof(enum dt_layer_kind) == sizeof(int) &&
	       sizeof(enum dt_loss_kind) == sizeof(int) &&
	       sizeof(enum dt_optim_kind) == sizeof(int) &&
	       sizeof(enum dt_strategy) == sizeof(int) &&
	       sizeof(enum dt_data_format) == sizeof(int) &&
	       sizeof(enum dt_data_normalize) == sizeof(int) &&
	       sizeof(enum dt_job_text_unit) == sizeof(int) &&
	       sizeof(enum dt_schedule_kind) == sizeof(int) &&
	       sizeof(enum dt_on_nonfinite) == sizeof(int) &&
	       sizeof(enum dt_on_divergence) == sizeof(int) &&
	       sizeof(enum dt_decay_set) == sizeof(int) &&
	       sizeof(enum dt_pipeline_schedule) == sizeof(int) &&
	       sizeof(enum dt_stage_balance) == sizeof(int) &&
	       sizeof(enum dt_sync_kind) == sizeof(int) &&
	       sizeof(enum dt_ps_mode) == sizeof(int) &&
	       sizeof(enum dt_hierarchical) == sizeof(int) &&
	       sizeof(enum dt_grad_wire) == sizeof(int) &&
	       sizeof(enum dt_attention_impl) == sizeof(int) &&
	       sizeof(enum dt_precision) == sizeof(int) &&
	       sizeof(enum dt_kernels) == sizeof(int) &&
	       sizeof(enum dt_accum_schedule) == sizeof(int) &&
	       sizeof(enum dt_init_rule) == sizeof(int),
	       "enum keys are stored through int");

/* Each list is in the order of its enum. */
static const char *const format_names[] = {
	"idx", "csv", "npy", "tokens", "text", "llmc", "u16", NULL
};
static const char *const text_unit_names[] = {
	"bytes", "utf8", "bpe", NULL
};
/* model.loss: the words of DT_LOSS_TYPES; mse, l1 and huber take float
 * targets (csv columns, an npy array). */
static const char *const loss_names[] = {
#define LOSS_WORD(NAME, word, ops) #word,
	DT_LOSS_TYPES(LOSS_WORD)
#undef LOSS_WORD
	NULL
};
/* data.normalize, in the order of enum dt_data_normalize. */
static const char *const normalize_names[] = { "none", "standard", "minmax",
					       NULL };
/* model.recompute, in the order of enum dt_recompute. */
static const char *const recompute_names[] = { "none", "blocks", "attention",
					       NULL };
/* model.attention, in the order of enum dt_attention_impl. */
static const char *const attention_names[] = { "materialized", "fused",
					       NULL };
static const char *const optim_names[] = { "sgd", "adam", "adamw", NULL };
static const char *const nonfinite_names[] = { "abort", "skip_step", NULL };
static const char *const monitor_names[] = {
	"loss", "accuracy", "perplexity", NULL,
};
static const char *const divergence_names[] = {
	"abort", "warn", "off", NULL
};
static const char *const decay_names[] = { "weights", "all", NULL };
static const char *const schedule_names[] = {
	"constant", "step", "cosine", NULL
};
static const char *const strategy_names[] = {
	"data", "model", "hybrid", NULL
};
static const char *const pipe_names[] = { "gpipe", "1f1b", NULL };
static const char *const balance_names[] = { "flops", "params", NULL };
static const char *const sync_names[] = {
	"allreduce", "parameter_server", NULL
};
static const char *const mode_names[] = { "sync", "async", NULL };
static const char *const hier_names[] = { "auto", "on", "off", NULL };
static const char *const wire_names[] = { "f32", "bf16", NULL };
static const char *const precision_names[] = { "f32", "bf16", NULL };
static const char *const kernels_names[] = {
	"auto", "openblas", "onednn", NULL
};
static const char *const accum_names[] = {
	"auto", "depth_first", "breadth_first", NULL
};
#define ACT_WORD(NAME, word, ...) #word,
static const char *const act_names[] = {
	"none", DT_ACTIVATIONS(ACT_WORD) NULL
};
static const int64_t token_bytes_choices[] = { 2, 4, 0 };

const struct dt_key dt_job_schema[] = {
	{ .key = "name", .type = DT_KEY_NAME, .off = OFF(name),
	  .size = SZ(name),
	  .def_doc = "the job file's name without .yaml or .yml",
	  .doc = "name of the run: letters, digits, '.', '_' and '-'" },
	{ .key = "seed", .type = DT_KEY_UINT, .off = OFF(seed), .def = "0",
	  GE(0), .doc = "seed of every random draw (init, shuffle)" },

	{ .key = "data", .type = DT_KEY_SECTION,
	  .doc = "where the samples come from" },
	{ .key = "data.format", .type = DT_KEY_ENUM, .off = OFF(data.format),
	  .def = "idx", .names = format_names,
	  .doc = "file format of the data" },
	{ .key = "data.train", .type = DT_KEY_SECTION,
	  .doc = "the training split" },
	{ .key = "data.train.images", SOURCE(images_src, train),
	  .mirror = OFF(data.train.images), .flags = DT_KEYF_REQUIRED,
	  FORMATS(FMT(IDX) | FMT(NPY)),
	  .doc = "idx, npy: file of training images (features)" },
	{ .key = "data.train.labels", SOURCE(labels_src, train),
	  .mirror = OFF(data.train.labels), .flags = DT_KEYF_REQUIRED,
	  FORMATS(FMT(IDX) | FMT(NPY)),
	  .doc = "idx, npy: file of training labels" },
	{ .key = "data.train.file", SOURCE(file, train),
	  .flags = DT_KEYF_REQUIRED,
	  FORMATS(FMT(CSV) | FMT(TOKENS) | FMT(TEXT) | FMT(LLMC) |
		  FMT(U16)),
	  .doc = "csv, tokens, text: the training file; tokens, llmc, "
		 "u16: or a pattern of shards" },
	{ .key = "data.eval", .type = DT_KEY_SECTION,
	  .doc = "the evaluation split" },
	{ .key = "data.eval.images", SOURCE(images_src, eval),
	  .mirror = OFF(data.eval.images), FORMATS(FMT(IDX) | FMT(NPY)),
	  .def_doc = "no evaluation",
	  .doc = "idx, npy: file of evaluation images; give both or neither" },
	{ .key = "data.eval.labels", SOURCE(labels_src, eval),
	  .mirror = OFF(data.eval.labels), FORMATS(FMT(IDX) | FMT(NPY)),
	  .def_doc = "no evaluation",
	  .doc = "idx, npy: file of evaluation labels" },
	{ .key = "data.eval.file", SOURCE(file, eval),
	  FORMATS(FMT(CSV) | FMT(TOKENS) | FMT(TEXT) | FMT(LLMC) |
		  FMT(U16)),
	  .def_doc = "tokens, text, llmc, u16: the tail of the training "
		     "data; csv: no evaluation",
	  .doc = "csv, tokens, text: the evaluation file; tokens, llmc, "
		 "u16: or a pattern of shards" },
	{ .key = "data.scale", .type = DT_KEY_FLOAT, .off = OFF(data.scale),
	  GT(0), FORMATS(FMT(IDX) | FMT(NPY) | FMT(CSV)),
	  .def_doc = "1/255 for features stored as bytes (idx, npy uint8), "
		     "else 1",
	  .doc = "multiplier from a stored value to the network's input" },
	{ .key = "data.normalize", .type = DT_KEY_ENUM,
	  .off = OFF(data.normalize), .def = "none", .names = normalize_names,
	  FORMATS(FMT(IDX) | FMT(NPY) | FMT(CSV)),
	  .doc = "per-feature standard or minmax scaling, statistics of the "
		 "training split" },
	{ .key = "data.header", .type = DT_KEY_BOOL, .off = OFF(data.header),
	  .def = "false", FORMATS(FMT(CSV)),
	  .doc = "csv: the first row is a header" },
	{ .key = "data.label_column", .type = DT_KEY_INT,
	  .off = OFF(data.label_column), .def = "-1", IN(-1, DT_JOB_COLUMNS_MAX),
	  FORMATS(FMT(CSV)),
	  .doc = "csv: 0-based column of the label; -1: the last" },
	{ .key = "data.token_bytes", .type = DT_KEY_INT,
	  .off = OFF(data.token_bytes), .def = "2",
	  .choices = token_bytes_choices, FORMATS(FMT(TOKENS)),
	  .doc = "tokens: bytes per token id, little-endian" },
	{ .key = "data.context", .type = DT_KEY_INT, .off = OFF(data.context),
	  IN_REQ(1, DT_JOB_SAMPLE_MAX),
	  FORMATS(FMT(TOKENS) | FMT(TEXT) | FMT(LLMC) | FMT(U16)),
	  .doc = "tokens, text, llmc, u16: tokens in one sample" },
	{ .key = "data.text_unit", .type = DT_KEY_ENUM,
	  .off = OFF(data.text_unit), .def = "bytes",
	  .names = text_unit_names, FORMATS(FMT(TEXT)),
	  .doc = "text: a token is a byte, a UTF-8 character or BPE's" },
	{ .key = "data.tokenizer", .type = DT_KEY_PATH,
	  .off = OFF(data.tokenizer), .size = SZ(data.tokenizer),
	  FORMATS(FMT(TEXT)), .def_doc = "none",
	  .doc = "text, text_unit bpe: the tokenizer file" },
	{ .key = "data.eval_fraction", .type = DT_KEY_FLOAT,
	  .off = OFF(data.eval_fraction), .def = "0.1", UNIT_OPEN,
	  FORMATS(FMT(TOKENS) | FMT(TEXT) | FMT(LLMC) | FMT(U16)),
	  .doc = "tokens, text, llmc, u16: held-out tail when there is "
		 "no eval file" },
	{ .key = "data.prefetch", .type = DT_KEY_INT,
	  .off = OFF(data.prefetch), .def = "2", IN(0, DT_JOB_PREFETCH_MAX),
	  .doc = "batches the loader prepares ahead" },
	{ .key = "data.max_bytes", .type = DT_KEY_INT,
	  .off = OFF(data.max_bytes), .def = "4294967296", .flags = DT_KEYF_MIN | DT_KEYF_MIN_OPEN | DT_KEYF_MAX,
	  .min = 0, .max = DT_JOB_BYTES_MAX,
	  .doc = "largest file a URL may download" },
	{ .key = "data.cache_max_bytes", .type = DT_KEY_INT,
	  .off = OFF(data.cache_max_bytes), .def = "0",
	  .flags = DT_KEYF_MIN | DT_KEYF_MAX,
	  .min = 0, .max = DT_JOB_BYTES_MAX,
	  .doc = "bytes of URL shards the cache holds at once (0: no bound)" },
	{ .key = "data.prefetch_shards", .type = DT_KEY_INT,
	  .off = OFF(data.prefetch_shards), .def = "1",
	  IN(0, DT_JOB_PREFETCH_MAX),
	  .doc = "URL shards a rank downloads ahead of its reads" },

	{ .key = "model", .type = DT_KEY_SECTION, .doc = "the network" },
	{ .key = "model.input_shape", .type = DT_KEY_SHAPE,
	  .off = OFF(model.input_shape), .off_n = OFF(model.n_input_dims),
	  .n_max = DT_JOB_MAX_DIMS, .flags = DT_KEYF_REQUIRED,
	  .doc = "shape of one sample, without the batch dimension" },
	{ .key = "model.layers", .type = DT_KEY_LAYERS,
	  .off = OFF(model.layers), .flags = DT_KEYF_REQUIRED,
	  .doc = "the layers, input to output, and repeat blocks" },
	{ .key = "model.loss", .type = DT_KEY_ENUM, .off = OFF(model.loss),
	  .def = "softmax_cross_entropy", .names = loss_names,
	  .doc = "loss on the last layer's output" },
	{ .key = "model.huber_delta", .type = DT_KEY_FLOAT,
	  .off = OFF(model.huber_delta), .def = "1", GT(0),
	  .when = "model.loss", .when_mask = 1u << DT_LOSS_HUBER,
	  .doc = "huber: |error| past which the loss grows linearly" },
	{ .key = "model.recompute", .type = DT_KEY_ENUM,
	  .off = OFF(model.recompute), .def = "none",
	  .names = recompute_names,
	  .doc = "activations dropped after forward, recomputed in backward" },
	{ .key = "model.attention", .type = DT_KEY_ENUM,
	  .off = OFF(model.attention), .def = "materialized",
	  .names = attention_names,
	  .doc = "attention heads: materialized (T, T) probabilities, or "
		 "fused (tiled, online softmax)" },
	{ .key = "model.init", .type = DT_KEY_INIT, .off = OFF(model.init),
	  .def = "auto",
	  .doc = "how weights start: each type's own (auto), he, xavier, "
		 "normal(STD) or gpt2" },
	{ .key = "model.init_from", .type = DT_KEY_PATH,
	  .off = OFF(model.init_from), .size = SZ(model.init_from),
	  .def_doc = "random init",
	  .doc = "safetensors file (dtrain export) to start from" },

	{ .key = "train", .type = DT_KEY_SECTION,
	  .doc = "batches, length and optimizer" },
	{ .key = "train.global_batch", .type = DT_KEY_INT,
	  .off = OFF(train.global_batch), IN(1, DT_JOB_BATCH_MAX), .def_doc = "derived",
	  .doc = "samples per optimizer step, over all ranks" },
	{ .key = "train.micro_batch", .type = DT_KEY_INT,
	  .off = OFF(train.micro_batch), IN(1, DT_JOB_BATCH_MAX), .def_doc = "derived",
	  .doc = "samples per forward/backward pass on one rank" },
	{ .key = "train.grad_accum_steps", .type = DT_KEY_INT,
	  .off = OFF(train.grad_accum_steps), IN(1, DT_JOB_BATCH_MAX), .def_doc = "derived",
	  .doc = "micro-batches summed into one optimizer step" },
	{ .key = "train.epochs", .type = DT_KEY_INT, .off = OFF(train.epochs),
	  IN(1, DT_JOB_EPOCHS_MAX), .def_doc = "none; give epochs or steps",
	  .doc = "passes over the training split" },
	{ .key = "train.steps", .type = DT_KEY_INT, .off = OFF(train.steps),
	  IN(1, DT_JOB_STEPS_MAX), .def_doc = "none; give epochs or steps",
	  .doc = "optimizer steps to run" },
	{ .key = "train.optimizer", .type = DT_KEY_ENUM,
	  .off = OFF(train.optimizer), .def = "sgd", .names = optim_names,
	  .doc = "update rule" },
	{ .key = "train.lr", .type = DT_KEY_FLOAT, .off = OFF(train.lr),
	  .flags = DT_KEYF_REQUIRED | DT_KEYF_MIN | DT_KEYF_MIN_OPEN,
	  .min = 0, .doc = "learning rate (the peak, with a schedule)" },
	{ .key = "train.momentum", .type = DT_KEY_FLOAT,
	  .off = OFF(train.momentum), .def = "0", UNIT_OPEN,
	  .doc = "sgd: momentum coefficient" },
	{ .key = "train.nesterov", .type = DT_KEY_BOOL,
	  .off = OFF(train.nesterov), .def = "false",
	  .doc = "sgd: Nesterov momentum (needs momentum > 0)" },
	{ .key = "train.weight_decay", .type = DT_KEY_FLOAT,
	  .off = OFF(train.weight_decay), .def = "0", GE(0),
	  .doc = "L2 penalty (sgd, adam) or decoupled decay (adamw)" },
	{ .key = "train.decay", .type = DT_KEY_ENUM, .off = OFF(train.decay),
	  .def = "weights", .names = decay_names,
	  .doc = "which tensors weight_decay applies to: weights (rank >= 2) "
		 "or all" },
	{ .key = "train.precision", .type = DT_KEY_ENUM,
	  .off = OFF(train.precision), .def = "f32",
	  .names = precision_names,
	  .doc = "the products' inputs: f32, or bf16 (rounded to bfloat16, "
		 "float sums; needs AVX512_BF16 or AMX)" },
	{ .key = "train.beta1", .type = DT_KEY_FLOAT, .off = OFF(train.beta1),
	  .def = "0.9", UNIT_OPEN,
	  .doc = "adam, adamw: decay of the first moment" },
	{ .key = "train.beta2", .type = DT_KEY_FLOAT, .off = OFF(train.beta2),
	  .def = "0.999", UNIT_OPEN,
	  .doc = "adam, adamw: decay of the second moment" },
	{ .key = "train.eps", .type = DT_KEY_FLOAT, .off = OFF(train.eps),
	  .def = "1e-8", GT(0), .doc = "adam, adamw: added to the denominator" },
	{ .key = "train.clip_norm", .type = DT_KEY_FLOAT,
	  .off = OFF(train.clip_norm), .def = "0", GE(0),
	  .doc = "clip the global gradient norm to this; 0: no clipping" },
	{ .key = "train.on_nonfinite", .type = DT_KEY_ENUM,
	  .off = OFF(train.on_nonfinite), .def = "abort",
	  .names = nonfinite_names,
	  .doc = "what a NaN or infinite loss or gradient does" },
	{ .key = "train.on_divergence", .type = DT_KEY_ENUM,
	  .off = OFF(train.on_divergence), .def = "abort",
	  .names = divergence_names,
	  .doc = "what a loss or gradient norm far above its early level "
		 "does" },
	{ .key = "train.schedule", .type = DT_KEY_SECTION,
	  .doc = "how the learning rate changes over the steps" },
	{ .key = "train.schedule.kind", .type = DT_KEY_ENUM,
	  .off = OFF(train.schedule.kind), .def = "constant",
	  .names = schedule_names, .doc = "shape of the schedule" },
	{ .key = "train.schedule.warmup_steps", .type = DT_KEY_INT,
	  .off = OFF(train.schedule.warmup_steps), .def = "0", IN(0, DT_JOB_STEPS_MAX),
	  .doc = "steps of linear warmup up to train.lr" },
	{ .key = "train.schedule.step_size", .type = DT_KEY_INT,
	  .off = OFF(train.schedule.step_size),
	  IN_REQ(1, DT_JOB_STEPS_MAX),
	  SCHEDULE(1u << DT_SCHEDULE_STEP),
	  .doc = "step: multiply the rate by gamma every this many steps" },
	{ .key = "train.schedule.gamma", .type = DT_KEY_FLOAT,
	  .off = OFF(train.schedule.gamma), .def = "0.1",
	  .flags = DT_KEYF_MIN | DT_KEYF_MIN_OPEN | DT_KEYF_MAX, .min = 0,
	  .max = 1, SCHEDULE(1u << DT_SCHEDULE_STEP),
	  .doc = "step: the factor" },
	{ .key = "train.schedule.min_lr", .type = DT_KEY_FLOAT,
	  .off = OFF(train.schedule.min_lr), .def = "0", GE(0),
	  SCHEDULE(1u << DT_SCHEDULE_COSINE),
	  .doc = "cosine: the rate at the last step, <= train.lr" },

	{ .key = "parallel", .type = DT_KEY_SECTION,
	  .doc = "how ranks share the work" },
	{ .key = "parallel.strategy", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.strategy), .def = "data",
	  .names = strategy_names, .doc = "parallel strategy" },
	{ .key = "parallel.data_parallel", .type = DT_KEY_DEGREE,
	  .off = OFF(parallel.data_parallel), IN(1, DT_JOB_DEGREE_MAX), .def_doc = "derived",
	  .doc = "data-parallel degree: model replicas" },
	{ .key = "parallel.pipeline_parallel", .type = DT_KEY_DEGREE,
	  .off = OFF(parallel.pipeline_parallel), IN(1, DT_JOB_DEGREE_MAX), .def_doc = "derived",
	  .doc = "pipeline-parallel degree: stages of layers" },
	{ .key = "parallel.tensor_parallel", .type = DT_KEY_DEGREE,
	  .off = OFF(parallel.tensor_parallel), IN(1, DT_JOB_DEGREE_MAX), .def_doc = "derived",
	  .doc = "tensor-parallel degree: ranks that split each layer" },
	{ .key = "parallel.schedule", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.schedule), .def = "gpipe", .names = pipe_names,
	  PIPELINE, .doc = "order of the micro-batches in the pipeline" },
	{ .key = "parallel.micro_batches", .type = DT_KEY_INT,
	  .off = OFF(parallel.micro_batches), IN(1, DT_JOB_BATCH_MAX), .def_doc = "derived",
	  PIPELINE, .doc = "micro-batches in flight per pipeline step" },
	{ .key = "parallel.balance", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.balance), .def = "flops",
	  .names = balance_names, PIPELINE,
	  .doc = "what stages are balanced on when not given" },
	{ .key = "parallel.stages", .type = DT_KEY_NAMES,
	  .off = OFF(parallel.stages), .off_n = OFF(parallel.n_stages),
	  .size = SZ(parallel.stages[0]), .n_max = DT_JOB_MAX_LAYERS,
	  .def_doc = "balanced", PIPELINE,
	  .doc = "the first layer of pipeline stages 1, 2, ..." },
	{ .key = "parallel.sync", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.sync), .def = "allreduce", .names = sync_names,
	  .doc = "how data-parallel replicas combine gradients" },
	{ .key = "parallel.servers", .type = DT_KEY_INT,
	  .off = OFF(parallel.servers), .def = "1", IN(1, DT_JOB_DEGREE_MAX), SERVER,
	  .doc = "parameter_server: ranks that serve parameters" },
	{ .key = "parallel.mode", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.mode), .def = "sync", .names = mode_names,
	  SERVER, .doc = "parameter_server: wait for every worker or not" },
	{ .key = "parallel.max_staleness", .type = DT_KEY_INT,
	  .off = OFF(parallel.max_staleness), .def = "4", IN(0, DT_JOB_STEPS_MAX), SERVER,
	  .doc = "parameter_server async: most steps a worker may lag" },
	{ .key = "parallel.blas_threads", .type = DT_KEY_INT,
	  .off = OFF(parallel.blas_threads), .def = "0",
	  .flags = DT_KEYF_MIN | DT_KEYF_MAX, .min = 0, .max = 4096,
	  .doc = "OpenBLAS threads per rank; 0: the node's cores / its ranks" },
	{ .key = "parallel.kernels", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.kernels), .def = "auto",
	  .names = kernels_names,
	  .doc = "library of the f32 products: auto, openblas, onednn" },
	{ .key = "parallel.timeout_s", .type = DT_KEY_FLOAT,
	  .off = OFF(parallel.timeout_s), .def = "0", GE(0),
	  .doc = "watchdog: name a stalled peer after this long; 0: off" },
	{ .key = "parallel.hierarchical", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.hierarchical), .def = "auto",
	  .names = hier_names,
	  .doc = "sum gradients on each host first, then across hosts" },
	{ .key = "parallel.overlap", .type = DT_KEY_BOOL,
	  .off = OFF(parallel.overlap), .def = "true", ALLREDUCE,
	  .doc = "allreduce: sum gradient buckets during backward" },
	{ .key = "parallel.bucket_mb", .type = DT_KEY_FLOAT,
	  .off = OFF(parallel.bucket_mb), .def = "1",
	  .flags = DT_KEYF_MIN | DT_KEYF_MIN_OPEN | DT_KEYF_MAX, .min = 0,
	  .max = 1048576, ALLREDUCE,
	  .doc = "allreduce with overlap: MiB of gradient per bucket" },
	{ .key = "parallel.grad_wire", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.grad_wire), .def = "f32", .names = wire_names,
	  ALLREDUCE, .doc = "allreduce: gradient element type on the wire" },
	{ .key = "parallel.progress_us", .type = DT_KEY_INT,
	  .off = OFF(parallel.progress_us), .def = "0", IN(0, 1000000),
	  ALLREDUCE,
	  .doc = "with overlap: a thread drives the sums this often; 0: off" },
	{ .key = "parallel.tcp_eager_kb", .type = DT_KEY_DEGREE,
	  .off = OFF(parallel.tcp_eager_kb), .def = "auto", IN(0, 65536),
	  ALLREDUCE,
	  .doc = "Open MPI's TCP eager limit, KiB: auto (from the buckets), "
		 "0 (Open MPI's own) or a size" },
	{ .key = "parallel.zero", .type = DT_KEY_INT,
	  .off = OFF(parallel.zero), .def = "0", IN(0, 3), ALLREDUCE,
	  .doc = "shard over the summing ranks: 1 optimizer state, 2 also "
		 "gradients, 3 also parameters" },
	{ .key = "parallel.zero_slices", .type = DT_KEY_BOOL,
	  .off = OFF(parallel.zero_slices), .def = "false", ALLREDUCE,
	  .doc = "zero 2 and 3 with tensor_parallel: each tensor rank holds "
		 "its slices only (false: whole tensors)" },
	{ .key = "parallel.zero_resident_grads", .type = DT_KEY_BOOL,
	  .off = OFF(parallel.zero_resident_grads), .def = "false",
	  ALLREDUCE,
	  .doc = "zero 2 and 3: keep the whole float gradient resident "
		 "(faster, its unowned part's memory; false: handed back)" },
	{ .key = "parallel.tied_slices", .type = DT_KEY_BOOL,
	  .off = OFF(parallel.tied_slices), .def = "false", ALLREDUCE,
	  .doc = "tensor_parallel with slices: a tied head splits its "
		 "classes as its table's rows (false: tied models whole)" },
	{ .key = "parallel.gather_mb", .type = DT_KEY_FLOAT,
	  .off = OFF(parallel.gather_mb), .def = "0", IN(0, 1048576),
	  ALLREDUCE,
	  .doc = "zero 3: MiB of consecutive nodes' parameters gathered at "
		 "once; 0: node by node" },
	{ .key = "parallel.accum_schedule", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.accum_schedule), .def = "auto",
	  .names = accum_names,
	  .doc = "order of a step's passes over its micro-batches" },
	{ .key = "parallel.sequence_parallel", .type = DT_KEY_BOOL,
	  .off = OFF(parallel.sequence_parallel), .def = "false",
	  .doc = "divide the rows between split layers over the tensor "
		 "ranks (not supported yet: true is refused)" },

	{ .key = "checkpoint", .type = DT_KEY_SECTION,
	  .doc = "when and where to save the training state" },
	{ .key = "checkpoint.every_steps", .type = DT_KEY_INT,
	  .off = OFF(checkpoint.every_steps), .def = "0", IN(0, DT_JOB_STEPS_MAX),
	  .doc = "save every this many steps; 0: off" },
	{ .key = "checkpoint.every_seconds", .type = DT_KEY_FLOAT,
	  .off = OFF(checkpoint.every_seconds), .def = "0", GE(0),
	  .doc = "save every this many seconds; 0: off" },
	{ .key = "checkpoint.at_end", .type = DT_KEY_BOOL,
	  .off = OFF(checkpoint.at_end), .def = "true",
	  .doc = "save when training ends" },
	{ .key = "checkpoint.keep_last", .type = DT_KEY_INT,
	  .off = OFF(checkpoint.keep_last), .def = "3", IN(0, DT_JOB_KEEP_MAX),
	  .doc = "checkpoints kept; 0: keep all" },
	{ .key = "checkpoint.dir", .type = DT_KEY_PATH,
	  .off = OFF(checkpoint.dir), .size = SZ(checkpoint.dir),
	  .def_doc = "RUN_DIR/checkpoints", .doc = "where checkpoints go" },
	{ .key = "checkpoint.compress", .type = DT_KEY_BOOL,
	  .off = OFF(checkpoint.compress), .def = "false",
	  .doc = "compress the optimizer state with zlib" },

	{ .key = "eval", .type = DT_KEY_SECTION, .doc = "evaluation cadence" },
	{ .key = "eval.every_steps", .type = DT_KEY_INT,
	  .off = OFF(eval.every_steps), .def = "0", IN(0, DT_JOB_STEPS_MAX),
	  .doc = "evaluate every this many steps; 0: at the end only" },
	{ .key = "eval.keep_best", .type = DT_KEY_BOOL,
	  .off = OFF(eval.keep_best), .def = "false",
	  .doc = "keep the best evaluation's checkpoint in CKPT_DIR/best" },
	{ .key = "eval.patience", .type = DT_KEY_INT,
	  .off = OFF(eval.patience), .def = "0", IN(0, DT_JOB_STEPS_MAX),
	  .doc = "stop after this many evaluations without improvement; 0: off" },
	{ .key = "eval.monitor", .type = DT_KEY_ENUM, .off = OFF(eval.monitor),
	  .def = "loss", .names = monitor_names,
	  .doc = "what improves: lower loss, higher accuracy, lower perplexity" },
	{ .key = "eval.max_batches", .type = DT_KEY_INT,
	  .off = OFF(eval.max_batches), .def = "200", IN(0, DT_JOB_STEPS_MAX),
	  .doc = "score at most this many global batches of eval samples; "
		 "0: all" },

	{ .key = "log", .type = DT_KEY_SECTION, .doc = "logging cadence" },
	{ .key = "log.every_steps", .type = DT_KEY_INT,
	  .off = OFF(log.every_steps), .def = "10", IN(1, DT_JOB_STEPS_MAX),
	  .doc = "log a line every this many steps" },
	{ .key = "log.tensorboard", .type = DT_KEY_BOOL,
	  .off = OFF(log.tensorboard), .def = "false",
	  .doc = "also write the logged scalars as TensorBoard events" },
};
const int dt_job_schema_len = sizeof dt_job_schema / sizeof dt_job_schema[0];

_Static_assert(sizeof dt_job_schema / sizeof dt_job_schema[0] <=
	       DT_JOB_MAX_KEYS, "grow DT_JOB_MAX_KEYS in job.h");

/* The words of `type:` (every kind's DT_LAYER_TYPES words), in the order
 * of dt_layer_types. */
#define TYPE_WORD(text, ACT, ...) text,
#define KIND_WORDS(NAME, word, words, ...) words(TYPE_WORD, word)
static const char *const type_names[] = { DT_LAYER_TYPES(KIND_WORDS) NULL };

/* The keys of one model.layers entry, in the order of enum dt_layer_key. */
const struct dt_key dt_job_layer_schema[DT_JOB_LAYER_KEYS] = {
	{ .key = "type", .type = DT_KEY_LAYER_TYPE, .off = LOFF(kind),
	  .flags = DT_KEYF_REQUIRED, .names = type_names,
	  .doc = "layer type" },
	{ .key = "units", .type = DT_KEY_INT, .off = LOFF(units), IN(1, DT_JOB_UNITS_MAX),
	  .def_doc = "required for dense", .doc = "dense: output features" },
	{ .key = "channels", .type = DT_KEY_INT, .off = LOFF(channels), IN(1, DT_JOB_CHANNELS_MAX),
	  .def_doc = "required for conv2d",
	  .doc = "conv2d: output channels" },
	{ .key = "kernel", .type = DT_KEY_INT, .off = LOFF(kernel), IN(1, DT_JOB_KERNEL_MAX),
	  .def_doc = "required for conv2d and the pools",
	  .doc = "conv2d, pools: side of the square kernel" },
	{ .key = "stride", .type = DT_KEY_INT, .off = LOFF(stride), IN(1, DT_JOB_KERNEL_MAX),
	  .def_doc = "1 for conv2d; kernel for the pools",
	  .doc = "conv2d, pools: step between windows" },
	{ .key = "padding", .type = DT_KEY_INT, .off = LOFF(padding),
	  .def = "0", IN(0, DT_JOB_KERNEL_MAX), .doc = "conv2d, pools: zeros added on each side" },
	{ .key = "rate", .type = DT_KEY_FLOAT, .off = LOFF(rate), UNIT_OPEN,
	  .def_doc = "required for dropout",
	  .doc = "dropout: probability of dropping a value" },
	{ .key = "eps", .type = DT_KEY_FLOAT, .off = LOFF(eps), .def = "1e-5",
	  GT(0), .doc = "layernorm, batchnorm: added to the variance" },
	{ .key = "momentum", .type = DT_KEY_FLOAT, .off = LOFF(momentum),
	  .def = "0.1", UNIT_CLOSED,
	  .doc = "batchnorm: weight of a batch in the running statistics" },
	{ .key = "vocab", .type = DT_KEY_INT, .off = LOFF(vocab), IN(1, DT_JOB_VOCAB_MAX),
	  .def_doc = "required for embedding",
	  .doc = "embedding: number of token ids" },
	{ .key = "dim", .type = DT_KEY_INT, .off = LOFF(dim), IN(1, DT_JOB_UNITS_MAX),
	  .def_doc = "required for embedding; pos_embedding: the input's",
	  .doc = "embedding, pos_embedding: size of a vector" },
	{ .key = "length", .type = DT_KEY_INT, .off = LOFF(length), IN(1, DT_JOB_SAMPLE_MAX),
	  .def_doc = "the window length (data.context)",
	  .doc = "pos_embedding: most positions" },
	{ .key = "heads", .type = DT_KEY_INT, .off = LOFF(heads), IN(1, DT_JOB_HEADS_MAX),
	  .def_doc = "required for attention",
	  .doc = "attention: heads; they divide the width" },
	{ .key = "causal", .type = DT_KEY_BOOL, .off = LOFF(causal),
	  .def = "true",
	  .doc = "attention: a position sees only itself and earlier ones" },
	{ .key = "shape", .type = DT_KEY_SHAPE, .off = LOFF(shape),
	  .off_n = LOFF(n_shape), .n_max = DT_JOB_MAX_DIMS,
	  .flags = DT_KEYF_NEG1, .def_doc = "required for reshape",
	  .doc = "reshape: the new shape of a sample; one item may be -1" },
	{ .key = "activation", .type = DT_KEY_ENUM, .off = LOFF(activation),
	  .def = "none", .names = act_names,
	  .doc = "dense, conv2d: function applied to the output" },
	{ .key = "bias", .type = DT_KEY_BOOL, .off = LOFF(bias), .def = "true",
	  .doc = "dense, conv2d, attention: learn a bias" },
	{ .key = "init", .type = DT_KEY_INIT, .off = LOFF(init),
	  .def_doc = "model.init",
	  .doc = "dense, conv2d, embedding, pos_embedding, attention: how "
		 "the weights start" },
	{ .key = "name", .type = DT_KEY_NAME, .off = LOFF(name),
	  .size = LSZ(name), .def_doc = "type and index, as dense0",
	  .doc = "name of the layer, unique in the model" },
	{ .key = "inputs", .type = DT_KEY_NAMES, .off = LOFF(inputs),
	  .off_n = LOFF(n_inputs), .size = LSZ(inputs[0]),
	  .n_max = DT_LAYER_MAX_INPUTS, .def_doc = "the previous layer",
	  .doc = "layers whose outputs feed this one, or input" },
	{ .key = "tie", .type = DT_KEY_NAME, .off = LOFF(tie),
	  .size = LSZ(tie), .def_doc = "none: a weight of its own",
	  .doc = "dense: use this embedding's table, transposed, as the "
		 "weight (one tensor, gradients summed)" },
};

const char *const dt_job_init_words[DT_INIT_RULE_GPT2 + 1] = {
	[DT_INIT_RULE_AUTO] = "auto",
	[DT_INIT_RULE_HE] = "he",
	[DT_INIT_RULE_XAVIER] = "xavier",
	[DT_INIT_RULE_NORMAL] = "normal",
	[DT_INIT_RULE_GPT2] = "gpt2",
};

const struct dt_key dt_job_block_repeat = {
	.key = "repeat", .type = DT_KEY_INT,
	IN_REQ(1, DT_JOB_MAX_LAYERS),
	.doc = "repeat block: copies of its layers",
};

const struct dt_key dt_job_block_layers = {
	.key = "layers", .type = DT_KEY_LAYERS, .flags = DT_KEYF_REQUIRED,
	.doc = "repeat block: the layers of one copy",
};

/* One row per word of `type:`: every layer takes type, name and inputs. */
#define ANY (DT_TAKES(TYPE) | DT_TAKES(NAME) | DT_TAKES(INPUTS))
#define TYPE_ROW(text, ACT, NAME, takes, needs, lo, hi)                    \
	{ text, DT_LAYER_##NAME, DT_ACT_##ACT, ANY | (takes), (needs), lo, hi },
#define KIND_ROWS(NAME, word, words, takes, needs, lo, hi)                 \
	words(TYPE_ROW, word, NAME, takes, needs, lo, hi)

const struct dt_layer_type dt_layer_types[] = { DT_LAYER_TYPES(KIND_ROWS) };
const int dt_layer_types_len = sizeof dt_layer_types /
			       sizeof dt_layer_types[0];

_Static_assert(sizeof dt_layer_types / sizeof dt_layer_types[0] ==
	       sizeof type_names / sizeof type_names[0] - 1,
	       "one word of type_names per row of dt_layer_types");
_Static_assert(DT_LAYER_KEY_TIE + 1 == DT_JOB_LAYER_KEYS,
	       "DT_JOB_LAYER_KEYS in job.h counts enum dt_layer_key");
