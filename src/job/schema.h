/* SPDX-License-Identifier: MIT */
/* schema.h - job/ only: the tables (schema.c) of job keys, layer keys and
 * layer types. Above job.h only. */
#ifndef DT_JOB_SCHEMA_H
#define DT_JOB_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job/job.h"

/* Upper bounds of the integer keys (man/dtrain-job.5 lists them), chosen
 * so that the products plan/ and train/ form from job numbers fit int64_t
 * (< 2^63) with room to spare:
 *   global_batch x steps x values per sample <= 2^16 x 2^24 x 2^22 = 2^62;
 *   micro_batch x grad_accum_steps x data_parallel <= 2^16 x 2^16 x 2^16;
 *   units x units x micro_batch <= 2^20 x 2^20 x 2^16 = 2^56;
 *   vocab x dim <= 2^24 x 2^20 = 2^44, channels^2 x kernel^2 <= 2^52;
 *   repeat x layers of a block <= DT_JOB_MAX_LAYERS (checked as such);
 *   prefetch x grad_accum_steps x batch bytes stays in plan's memory sum.
 * Per sample, the input (the product of model.input_shape, or
 * data.context tokens) and a reshape hold at most DT_JOB_SAMPLE_MAX
 * values. */
#define DT_JOB_BATCH_MAX 65536		/* 2^16 samples or micro-batches */
#define DT_JOB_STEPS_MAX 16777216	/* 2^24 steps */
#define DT_JOB_EPOCHS_MAX 65536
#define DT_JOB_SAMPLE_MAX 4194304	/* 2^22 values in one sample */
#define DT_JOB_COLUMNS_MAX 1048576	/* csv label column */
#define DT_JOB_PREFETCH_MAX 64		/* batches prepared ahead */
#define DT_JOB_BYTES_MAX 1125899906842624.0	/* 2^50: 1 PiB */
#define DT_JOB_DEGREE_MAX 65536		/* a parallel degree, servers */
#define DT_JOB_KEEP_MAX 65536		/* checkpoints kept */
#define DT_JOB_UNITS_MAX 1048576	/* 2^20: dense units, vector dim */
#define DT_JOB_CHANNELS_MAX 65536
#define DT_JOB_KERNEL_MAX 1024		/* kernel, stride, padding */
#define DT_JOB_VOCAB_MAX 16777216	/* 2^24 token ids */
#define DT_JOB_HEADS_MAX 4096

enum dt_key_type {
	DT_KEY_SECTION,		/* a mapping of further keys */
	DT_KEY_INT,		/* int64_t */
	DT_KEY_UINT,		/* uint64_t (the seed) */
	DT_KEY_FLOAT,		/* double */
	DT_KEY_BOOL,		/* bool */
	DT_KEY_ENUM,		/* an enum stored as int, names[i] is value i */
	DT_KEY_NAME,		/* char[size]: letters, digits, . _ - */
	DT_KEY_PATH,		/* char[size]: a local path, resolved against
				 * the job's dir */
	DT_KEY_SOURCE,		/* struct dt_source: a path or URL, or a
				 * mapping {path, sha256, size} */
	DT_KEY_DEGREE,		/* int64_t in the key's range, or "auto"
				 * (DT_DEGREE_AUTO): the parallel degrees,
				 * parallel.tcp_eager_kb */
	DT_KEY_NAMES,		/* char[n_max][size] and an int count at
				 * off_n: a list of layer names */
	DT_KEY_SHAPE,		/* int64_t[n_max] and an int count at off_n:
				 * a list of integers >= 1 */
	DT_KEY_LAYERS,		/* model.layers: a list of layer mappings */
	DT_KEY_LAYER_TYPE,	/* a layer's type: names[] words, stored as
				 * kind (and activation) by dt_layer_types */
	DT_KEY_INIT,		/* struct dt_init_choice: a word of
				 * dt_job_init_words, or normal(STD) */
};

#define DT_KEYF_REQUIRED 0x01	/* with `when`: required when it applies */
#define DT_KEYF_MIN 0x02	/* value >= min */
#define DT_KEYF_MIN_OPEN 0x04	/* value > min (with DT_KEYF_MIN) */
#define DT_KEYF_MAX 0x08	/* value <= max */
#define DT_KEYF_MAX_OPEN 0x10	/* value < max (with DT_KEYF_MAX) */
#define DT_KEYF_NEG1 0x20	/* SHAPE: one item may be -1 */

/* One key of the job file. */
struct dt_key {
	const char *key;	/* full path; layer keys: the leaf ("units") */
	enum dt_key_type type;
	size_t off;		/* offset of the value in struct dt_job, or in
				 * struct dt_layer_spec for layer keys */
	size_t size;		/* NAME/PATH/NAMES: bytes of one name */
	const char *def;	/* default as YAML text, NULL: none (zero) */
	unsigned flags;		/* DT_KEYF_* */
	double min, max;
	const char *const *names;	/* ENUM, LAYER_TYPE: NULL-terminated */
	const int64_t *choices;	/* INT: the values allowed, 0-terminated */
	size_t off_n;		/* NAMES, SHAPE: offset of the int count */
	int n_max;		/* NAMES, SHAPE: most items */
	size_t mirror;		/* SOURCE: offset of a char[] that gets a copy
				 * of the path; 0: none */
	const char *when;	/* an ENUM key this key depends on, or NULL */
	unsigned when_mask;	/* the values of `when` (bit 1 << value) with
				 * which this key is used */
	const char *def_doc;	/* shown default when def is NULL */
	const char *doc;	/* one line for the man page and job-keys */
};

extern const struct dt_key dt_job_schema[];
extern const int dt_job_schema_len;
extern const struct dt_key dt_job_layer_schema[];	/* DT_JOB_LAYER_KEYS */

/* Rows of dt_job_layer_schema, as indexes of origin.layer[i]; also the
 * order in which messages list the keys a layer type takes. */
enum dt_layer_key {
	DT_LAYER_KEY_TYPE,
	DT_LAYER_KEY_UNITS,
	DT_LAYER_KEY_CHANNELS,
	DT_LAYER_KEY_KERNEL,
	DT_LAYER_KEY_STRIDE,
	DT_LAYER_KEY_PADDING,
	DT_LAYER_KEY_RATE,
	DT_LAYER_KEY_EPS,
	DT_LAYER_KEY_MOMENTUM,
	DT_LAYER_KEY_VOCAB,
	DT_LAYER_KEY_DIM,
	DT_LAYER_KEY_LENGTH,
	DT_LAYER_KEY_HEADS,
	DT_LAYER_KEY_CAUSAL,
	DT_LAYER_KEY_SHAPE,
	DT_LAYER_KEY_ACTIVATION,
	DT_LAYER_KEY_BIAS,
	DT_LAYER_KEY_INIT,
	DT_LAYER_KEY_NAME,
	DT_LAYER_KEY_INPUTS,
	DT_LAYER_KEY_TIE,
};

/* A word for `type:`, the kind it makes and the keys that kind takes. */
struct dt_layer_type {
	const char *name;		/* "conv2d", "relu" */
	enum dt_layer_kind kind;
	enum dt_activation act;		/* DT_LAYER_ACTIVATION: which */
	unsigned takes;			/* bits 1 << enum dt_layer_key */
	unsigned needs;			/* required keys, a subset */
	int min_inputs, max_inputs;	/* length of `inputs:` when given */
};

/* The words of model.init and a layer's init:, by enum dt_init_rule from
 * DT_INIT_RULE_AUTO on ("auto", "he", "xavier", "normal", "gpt2");
 * normal is written normal(STD). [DT_INIT_RULE_INHERIT] is NULL. */
extern const char *const dt_job_init_words[DT_INIT_RULE_GPT2 + 1];

extern const struct dt_layer_type dt_layer_types[];
extern const int dt_layer_types_len;

/* The keys of a repeat block, an entry {repeat: N, layers: [...]} of
 * model.layers; its name uses the layer row DT_LAYER_KEY_NAME. */
extern const struct dt_key dt_job_block_repeat, dt_job_block_layers;

#endif
