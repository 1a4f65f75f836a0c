/* SPDX-License-Identifier: MIT */
/* layer_types.h - the layer types, losses and activations of the job file,
 * each listed once (X-macros).
 *
 * Everything about a layer type outside its own file comes from its entry
 * in DT_LAYER_TYPES: its enum value (job.h), the words of `type:` and the
 * keys the type takes (job/schema.c), the graph type that implements it
 * (graph/layer.h, graph/registry.c), and the lists the tests walk (the
 * man-page test, the gradient-check registry test). Adding a layer type is
 * its own file in src/graph/ (defining `const struct dt_layer_ops
 * dt_layer_<word>`), one entry here, the file in src/graph/local.mk and an
 * entry under "Layer types" in man/dtrain-job.5.
 *
 * DT_LAYER_TYPES(X) calls, in the order of enum dt_layer_kind,
 *
 *   X(NAME, word, words, takes, needs, min_inputs, max_inputs)
 *
 *   NAME   the enum value is DT_LAYER_<NAME>
 *   word   the graph type is dt_layer_<word>; its ops->kind is "word"
 *   words  the words of `type:` that make the kind: DT_WORDS_SELF (word
 *          itself) or DT_WORDS_ACTIVATIONS (one word per activation in
 *          DT_ACTIVATIONS, which the layer stores in `activation`)
 *   takes  the layer keys the type takes besides type, name and inputs,
 *          as DT_TAKES(UNITS) | ..., or 0
 *   needs  the keys it requires (DT_TAKES(INPUTS): `inputs:` itself)
 *   min_inputs, max_inputs  the length of `inputs:` when it is given
 *
 * takes and needs name rows of job/'s private enum dt_layer_key
 * (job/schema.h), so only job/ expands those two columns; everyone else
 * ignores them. */
#ifndef DT_JOB_LAYER_TYPES_H
#define DT_JOB_LAYER_TYPES_H

#define DT_LAYER_TYPES(X)                                                   \
	X(DENSE, dense, DT_WORDS_SELF,                                      \
	  DT_TAKES(UNITS) | DT_TAKES(ACTIVATION) | DT_TAKES(BIAS) |         \
	  DT_TAKES(INIT) | DT_TAKES(TIE), DT_TAKES(UNITS), 1, 1)            \
	/* (C, H, W) or (H, W) input */                                     \
	X(CONV2D, conv2d, DT_WORDS_SELF,                                    \
	  DT_TAKES(CHANNELS) | DT_TAKES(KERNEL) | DT_TAKES(STRIDE) |        \
	  DT_TAKES(PADDING) | DT_TAKES(ACTIVATION) | DT_TAKES(BIAS) |       \
	  DT_TAKES(INIT), DT_TAKES(CHANNELS) | DT_TAKES(KERNEL), 1, 1)      \
	/* stride defaults to the kernel */                                 \
	X(MAXPOOL2D, maxpool2d, DT_WORDS_SELF,                              \
	  DT_TAKES(KERNEL) | DT_TAKES(STRIDE) | DT_TAKES(PADDING),          \
	  DT_TAKES(KERNEL), 1, 1)                                           \
	X(AVGPOOL2D, avgpool2d, DT_WORDS_SELF,                              \
	  DT_TAKES(KERNEL) | DT_TAKES(STRIDE) | DT_TAKES(PADDING),          \
	  DT_TAKES(KERNEL), 1, 1)                                           \
	X(FLATTEN, flatten, DT_WORDS_SELF, 0, 0, 1, 1)                      \
	X(RESHAPE, reshape, DT_WORDS_SELF, DT_TAKES(SHAPE),                 \
	  DT_TAKES(SHAPE), 1, 1)                                            \
	X(DROPOUT, dropout, DT_WORDS_SELF, DT_TAKES(RATE), DT_TAKES(RATE),  \
	  1, 1)                                                             \
	X(LAYERNORM, layernorm, DT_WORDS_SELF, DT_TAKES(EPS), 0, 1, 1)      \
	/* running statistics for evaluation */                             \
	X(BATCHNORM, batchnorm, DT_WORDS_SELF,                              \
	  DT_TAKES(EPS) | DT_TAKES(MOMENTUM), 0, 1, 1)                      \
	/* token ids (T) -> (T, dim) */                                     \
	X(EMBEDDING, embedding, DT_WORDS_SELF,                              \
	  DT_TAKES(VOCAB) | DT_TAKES(DIM) | DT_TAKES(INIT),                 \
	  DT_TAKES(VOCAB) | DT_TAKES(DIM), 1, 1)                            \
	/* adds a learned vector per position to (T, dim); dim left out is \
	 * the input's width, length the job's window (check.c) */          \
	X(POS_EMBEDDING, pos_embedding, DT_WORDS_SELF,                      \
	  DT_TAKES(LENGTH) | DT_TAKES(DIM) | DT_TAKES(INIT),                \
	  DT_TAKES(LENGTH), 1, 1)                                           \
	/* multi-head self-attention (T, C) -> (T, C) */                    \
	X(ATTENTION, attention, DT_WORDS_SELF,                              \
	  DT_TAKES(HEADS) | DT_TAKES(CAUSAL) | DT_TAKES(BIAS) |             \
	  DT_TAKES(INIT), DT_TAKES(HEADS), 1, 1)                            \
	/* `type: relu` etc.; the function is in `activation` */            \
	X(ACTIVATION, activation, DT_WORDS_ACTIVATIONS, 0, 0, 1, 1)         \
	/* over the last axis */                                            \
	X(SOFTMAX, softmax, DT_WORDS_SELF, 0, 0, 1, 1)                      \
	/* inputs of one shape */                                           \
	X(ADD, add, DT_WORDS_SELF, 0, DT_TAKES(INPUTS), 2,                  \
	  DT_LAYER_MAX_INPUTS)                                              \
	/* along the last axis */                                           \
	X(CONCAT, concat, DT_WORDS_SELF, 0, DT_TAKES(INPUTS), 2,            \
	  DT_LAYER_MAX_INPUTS)

/* DT_LOSS_TYPES(X) calls X(NAME, word, ops) in the order of enum
 * dt_loss_kind: the enum value DT_LOSS_<NAME>, the word of model.loss, and
 * the graph type dt_layer_<ops>. */
#define DT_LOSS_TYPES(X)                                                    \
	/* per sample, or per token for a (T, classes) output */            \
	X(SOFTMAX_CROSS_ENTROPY, softmax_cross_entropy, softmax_xent)       \
	/* regressions against float targets, mean over a sample's outputs */\
	X(MSE, mse, mse)                                                    \
	X(L1, l1, l1)                                                       \
	X(HUBER, huber, huber)

/* DT_ACTIVATIONS(X, ...) calls X(NAME, word, ...) for each activation
 * function, in the order of enum dt_activation after DT_ACT_NONE, passing
 * on any further arguments. */
#define DT_ACTIVATIONS(X, ...)                                              \
	X(RELU, relu, __VA_ARGS__)                                          \
	X(TANH, tanh, __VA_ARGS__)                                          \
	X(SIGMOID, sigmoid, __VA_ARGS__)                                    \
	X(GELU, gelu, __VA_ARGS__)

/* The `words` column: words(R, word, ...) calls R("text", ACT, ...) for
 * each word of `type:` that makes the kind, with the activation it stores
 * (DT_ACT_<ACT>); the further arguments are passed on. */
#define DT_WORDS_SELF(R, word, ...) R(#word, NONE, __VA_ARGS__)
#define DT_WORDS_ACTIVATIONS(R, word, ...)                                  \
	DT_ACTIVATIONS(DT_WORDS_ACT_, R, __VA_ARGS__)
#define DT_WORDS_ACT_(ACT, act, R, ...) R(#act, ACT, __VA_ARGS__)

/* A layer key in the takes and needs columns (job/ only). */
#define DT_TAKES(key) (1u << DT_LAYER_KEY_##key)

#endif
