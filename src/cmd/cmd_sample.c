/* SPDX-License-Identifier: MIT */
/* cmd_sample.c - `dtrain sample`: text from a trained character model.
 *
 * Loads a run's saved job, its vocabulary (vocab.bin, written by the run
 * of a data.format: text job) and the parameters of its newest valid
 * checkpoint, then extends a prompt one token at a time (autoregressive
 * sampling, as in Radford et al., "Language Models are Unsupervised
 * Multitask Learners", 2019, and Karpathy's char-rnn): the last `context`
 * tokens go through the model, and the next token is drawn from the
 * predicted distribution at the last of them, sharpened or flattened by a
 * temperature.
 *
 * Until the window is full, the tokens sit at the start of the model's
 * input and the rest is padding; with causal attention (the only kind
 * sampling accepts) no position sees a later one, so the padding changes
 * nothing at the positions read. Each step runs the whole window again:
 * no key/value cache, which at character-model sizes costs milliseconds
 * per token.
 *
 * The draws are counter-based (util/rng.h, DT_RNG_SAMPLE keyed by the seed
 * and the index of the generated token), so a seed gives the same text on
 * any machine with the same parameters and BLAS. */
#include "cmd/cmd.h"
#include "cmd/model_io.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "data/bpe.h"
#include "data/data.h"
#include "graph/graph.h"
#include "job/job.h"
#include "util/alloc.h"
#include "util/rng.h"

#define SAMPLE_DEFAULT_CHARS 200
#define SAMPLE_MAX_CHARS 100000000

struct sample_args {
	const char *dir;
	const char *prompt;	/* NULL: start after a newline */
	int n_chars;
	double temperature;	/* 0: the most likely token every time */
	uint64_t seed;
};

static const struct dt_cmd_opt sample_opts[] = {
	{ .short_name = 'n', .kind = DT_CMD_ARG_INT, .arg = "chars",
	  .offset = offsetof(struct sample_args, n_chars),
	  .min = 0, .max = SAMPLE_MAX_CHARS,
	  .doc = "characters to generate (default 200)" },
	{ .name = "prompt", .kind = DT_CMD_ARG_STRING, .arg = "text",
	  .offset = offsetof(struct sample_args, prompt),
	  .doc = "the text to continue (default: a new line)" },
	{ .name = "temperature", .kind = DT_CMD_ARG_NUMBER, .arg = "t",
	  .offset = offsetof(struct sample_args, temperature), .min = 0,
	  .doc = "sharpen (< 1) or flatten (> 1); 0: argmax" },
	{ .name = "seed", .kind = DT_CMD_ARG_U64, .arg = "seed",
	  .offset = offsetof(struct sample_args, seed),
	  .doc = "the draws' seed, 0 to 2^64-1 (default 0)" },
	{ .kind = DT_CMD_ARG_END },
};

/* Returns -1 to go on, else the exit code. */
static int
parse_args(int argc, char **argv, struct sample_args *a)
{
	struct dt_cmd_line line;
	int rc;

	memset(a, 0, sizeof *a);
	a->n_chars = SAMPLE_DEFAULT_CHARS;
	a->temperature = 1.0;
	rc = dt_cmd_parse(&dt_cmd_sample, argc, argv, a, &line);
	if (rc >= 0)
		return rc;
	free(line.sets);
	a->dir = line.operand;
	return -1;
}

/* Decodes the UTF-8 sequence at s[i] (n bytes in all) into *cp; returns
 * its length, or 0 if it is not valid UTF-8 (overlong forms, surrogates
 * and code points above U+10FFFF included). */
static size_t
utf8_decode(const unsigned char *s, size_t n, size_t i, uint32_t *cp)
{
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	unsigned char b = s[i];
	size_t len;
	uint32_t c;

	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if ((b & 0xE0) == 0xC0) {
		len = 2;
		c = b & 0x1F;
	} else if ((b & 0xF0) == 0xE0) {
		len = 3;
		c = b & 0x0F;
	} else if ((b & 0xF8) == 0xF0) {
		len = 4;
		c = b & 0x07;
	} else {
		return 0;
	}
	if (n - i < len)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((s[i + k] & 0xC0) != 0x80)
			return 0;
		c = c << 6 | (s[i + k] & 0x3F);
	}
	if (c < min[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

/* encode_prompt for a BPE: every prompt has an encoding. out (strlen
 * (prompt) + 1) becomes *ids. */
static enum dt_status
encode_prompt_bpe(const struct dt_vocab *v, const char *prompt, int64_t *out,
		  int64_t **ids, int64_t *n_ids, struct dt_error *err)
{
	size_t n = strlen(prompt);
	int32_t *tok = dt_xmalloc(n + 1, sizeof *tok);
	enum dt_status st = dt_bpe_encode(v->bpe, (const unsigned char *)prompt,
					  n, tok, n_ids, err);

	for (int64_t i = 0; st == DT_OK && i < *n_ids; i++)
		out[i] = tok[i];
	free(tok);
	if (st != DT_OK) {
		free(out);
		return st;
	}
	*ids = out;
	return DT_OK;
}

/* The prompt's token ids into *ids (heap, *n_ids of them; the caller
 * frees it). DT_ERR_USAGE naming the byte offset of invalid UTF-8, or the
 * first character that the vocabulary lacks. */
static enum dt_status
encode_prompt(const struct dt_vocab *v, const char *prompt, const char *dir,
	      int64_t **ids, int64_t *n_ids, struct dt_error *err)
{
	const unsigned char *s = (const unsigned char *)prompt;
	size_t n = strlen(prompt), i = 0;
	int64_t *out = dt_xmalloc(n + 1, sizeof *out), k = 0;

	if (v->unit == DT_TEXT_BPE)
		return encode_prompt_bpe(v, prompt, out, ids, n_ids, err);
	while (i < n) {
		uint32_t cp = s[i];
		size_t len = 1;
		int64_t id;

		if (v->unit == DT_TEXT_CHARS) {
			len = utf8_decode(s, n, i, &cp);
			if (len == 0) {
				free(out);
				return dt_errorf(err, DT_ERR_USAGE, "--prompt: "
						 "byte %zu: invalid UTF-8 (the "
						 "model's text_unit is utf8)",
						 i);
			}
		}
		id = dt_vocab_id(v, cp);
		if (id < 0) {
			char shown[16];
			uint32_t whole;
			size_t wlen = utf8_decode(s, n, i, &whole);

			/* The character as typed where it prints: in a
			 * byte vocabulary, the one this byte starts. */
			if (cp >= 0x20 && cp < 0x7F)
				snprintf(shown, sizeof shown, "'%c' ", (int)cp);
			else if (wlen > 1 && whole >= 0xA0)
				snprintf(shown, sizeof shown, "'%.*s' ",
					 (int)wlen, prompt + i);
			else
				shown[0] = '\0';
			free(out);
			if (v->unit == DT_TEXT_BYTES)
				return dt_errorf(err, DT_ERR_USAGE, "--prompt: "
						 "byte %zu: character %s(byte "
						 "0x%02X) is not in the "
						 "vocabulary of %s "
						 "(%lld characters, those of its "
						 "training text)", i, shown,
						 (unsigned)cp, dir,
						 (long long)v->size);
			return dt_errorf(err, DT_ERR_USAGE, "--prompt: byte %zu: "
					 "character %s(U+%04X) is not in the "
					 "vocabulary of %s (%lld characters, "
					 "those of its training text)", i,
					 shown, (unsigned)cp, dir,
					 (long long)v->size);
		}
		out[k++] = id;
		i += len;
	}
	*ids = out;
	*n_ids = k;
	return DT_OK;
}

/* Checks that the run's model reads a window of `context` token ids and
 * predicts every position: an embedding model whose loss is softmax
 * cross-entropy per token over at least the vocabulary, with causal
 * attention only. */
static enum dt_status
check_model(const struct dt_job *job, struct dt_model *m,
	    const struct dt_vocab *v, const char *dir, struct dt_error *err)
{
	int64_t ctx = job->data.context;

	if (job->model.loss != DT_LOSS_SOFTMAX_CROSS_ENTROPY ||
	    dt_model_labels_per_sample(m) != ctx ||
	    dt_model_input_size(m) != ctx)
		return dt_errorf(err, DT_ERR_USAGE, "%s: the model does not "
				 "predict a token at each of its %lld input "
				 "positions (sampling needs a language model: "
				 "model.input_shape [%lld], a per-token softmax "
				 "cross-entropy loss)", dir, (long long)ctx,
				 (long long)ctx);
	if (dt_model_n_classes(m) < v->size)
		return dt_errorf(err, DT_ERR_USAGE, "%s: the model predicts "
				 "%lld classes but the vocabulary has %lld "
				 "characters", dir,
				 (long long)dt_model_n_classes(m),
				 (long long)v->size);
	for (int i = 0; i < job->model.n_layers; i++) {
		const struct dt_layer_spec *l = &job->model.layers[i];

		if (l->kind == DT_LAYER_ATTENTION && !l->causal)
			return dt_errorf(err, DT_ERR_USAGE, "%s: layer %s has "
					 "causal: false; a model that sees the "
					 "tokens it predicts cannot generate "
					 "text", dir, l->name);
	}
	return DT_OK;
}

/* Loads the parameters of the newest valid checkpoint of the run into m.
 * DT_ERR_USAGE when the run has none. */
static enum dt_status
load_params(const char *dir, struct dt_model *m, int64_t *step,
	    struct dt_error *err)
{
	char ckpt_dir[DT_JOB_PATH_MAX], latest[DT_JOB_PATH_MAX + 64];
	enum dt_status st;

	st = dt_cmd_ckpt_dir(dir, ckpt_dir, sizeof ckpt_dir, err);
	if (st == DT_OK)
		st = dt_ckpt_find_latest(ckpt_dir, latest, sizeof latest, step,
					 dt_ckpt_report_file, stderr, err);
	if (st == DT_OK && *step < 0)
		st = dt_errorf(err, DT_ERR_USAGE, "%s: no checkpoint in %s; "
			       "train the run to its end (checkpoint.at_end "
			       "is on by default) or set checkpoint."
			       "every_steps, and `dtrain resume %s` to finish "
			       "an interrupted run", dir, ckpt_dir, dir);
	if (st == DT_OK)
		st = dt_cmd_ckpt_of_run(dir, latest, err);
	if (st != DT_OK)
		return st;
	/* The checkpoint's own loader wants the optimizer state listed too;
	 * the parameters file alone is a plain safetensors file. */
	return dt_cmd_import_params(m, latest, err);
}

/* The next token from probs (n values, n >= 1): the argmax at temperature
 * 0 (the lowest id on a tie), else a draw from probs^(1/temperature)
 * renormalised, with the uniform u in [0, 1). */
static int64_t
pick(const float *probs, int64_t n, double temperature, double u)
{
	int64_t best = 0;
	double total = 0, cum = 0, target, lmax;

	for (int64_t i = 1; i < n; i++)
		if (probs[i] > probs[best])
			best = i;
	if (temperature == 0 || probs[best] <= 0)
		return best;
	/* p^(1/t) = exp((log p - log p_max) / t) * p_max^(1/t); the constant
	 * factor cancels, and the subtraction keeps exp() in range. */
	lmax = log(probs[best]);
	for (int64_t i = 0; i < n; i++)
		if (probs[i] > 0)
			total += exp((log(probs[i]) - lmax) / temperature);
	target = u * total;
	for (int64_t i = 0; i < n; i++) {
		if (probs[i] <= 0)
			continue;
		cum += exp((log(probs[i]) - lmax) / temperature);
		if (cum > target)
			return i;
	}
	return best;	/* rounding left target at the very top */
}

static int
put_token(const struct dt_vocab *v, int64_t id)
{
	char piece[4];
	const unsigned char *bytes = (const unsigned char *)piece;
	size_t len = v->unit == DT_TEXT_BPE ? dt_bpe_piece(v->bpe, id, &bytes) :
		     dt_vocab_piece(v, id, piece);

	return fwrite(bytes, 1, len, stdout) == len ? 0 : -1;
}

/* Generates a->n_chars tokens after the prompt ids (n_ids >= 1) and
 * writes them to stdout as they come. */
static enum dt_status
generate(struct dt_model *m, const struct dt_vocab *v, int64_t ctx,
	 const int64_t *ids, int64_t n_ids, const struct sample_args *a,
	 struct dt_error *err)
{
	int64_t n_classes = dt_model_n_classes(m), len;
	float *x = dt_xalloc_floats((size_t)ctx);	/* (1, ctx) */
	enum dt_status st = DT_OK;

	/* The window: the last ctx tokens, from x[0], then padding (id 0). */
	len = n_ids < ctx ? n_ids : ctx;
	for (int64_t i = 0; i < ctx; i++)
		x[i] = i < len ? (float)ids[n_ids - len + i] : 0.0f;
	for (int64_t k = 0; k < a->n_chars; k++) {
		double loss;
		int64_t correct, next;
		const float *probs;

		dt_model_eval(m, x, NULL, 1, &loss, &correct);
		/* (1, ctx, n_classes): the row of the last real position;
		 * classes past the vocabulary never occur in the text. */
		probs = dt_model_probs(m) + (len - 1) * n_classes;
		next = pick(probs, v->size, a->temperature,
			    dt_rng_uniform(a->seed, DT_RNG_SAMPLE, 0,
					   (uint64_t)k));
		if (put_token(v, next) != 0 || fflush(stdout) != 0) {
			st = dt_errorf(err, DT_ERR_IO, "writing to standard "
				       "output: %s", strerror(errno));
			break;
		}
		if (len == ctx) {
			memmove(x, x + 1, (size_t)(ctx - 1) * sizeof *x);
			len--;
		}
		x[len++] = (float)next;
	}
	free(x);
	return st;
}

static int
cmd_sample(int argc, char **argv)
{
	struct sample_args a;
	struct dt_job *job = NULL;
	struct dt_model *m = NULL;
	struct dt_vocab v = { 0 };
	struct dt_error err;
	char path[DT_JOB_PATH_MAX + 16];
	int64_t *ids = NULL, n_ids = 0, step = -1;
	enum dt_status st;
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	dt_error_clear(&err);
	snprintf(path, sizeof path, "%s/job.yaml", a.dir);
	job = dt_xcalloc(1, sizeof *job);
	if (access(path, F_OK) != 0)
		st = dt_errorf(&err, DT_ERR_USAGE, "%s: not a run directory "
			       "(no job.yaml)", a.dir);
	else
		st = dt_job_load(path, NULL, 0, job, &err);
	if (st == DT_OK && job->data.format != DT_FORMAT_TEXT)
		st = dt_errorf(&err, DT_ERR_USAGE, "%s: not the run of a text "
			       "model (its job has no data.format: text)",
			       a.dir);
	if (st == DT_OK) {
		int bpe = job->data.text_unit == DT_JOB_TEXT_BPE;
		const char *name = bpe ? "tokenizer.json" : "vocab.bin";

		snprintf(path, sizeof path, "%s/%s", a.dir, name);
		if (access(path, F_OK) != 0)
			st = dt_errorf(&err, DT_ERR_USAGE, "%s: no %s (the run "
				       "stopped before reading its data; run "
				       "it again)", a.dir, name);
		else if (bpe)
			st = dt_vocab_load_bpe(path, &v, &err);
		else
			st = dt_vocab_load(path, &v, &err);
	}
	if (st == DT_OK)
		st = dt_model_new(job, 1, &m, &err);
	if (st == DT_OK)
		st = check_model(job, m, &v, a.dir, &err);
	if (st == DT_OK) {
		if (a.prompt != NULL && a.prompt[0] != '\0')
			st = encode_prompt(&v, a.prompt, a.dir, &ids, &n_ids,
					   &err);
		else if (dt_vocab_id(&v, '\n') < 0)
			st = dt_errorf(&err, DT_ERR_USAGE, "%s: the vocabulary "
				       "has no newline to start from; give "
				       "--prompt", a.dir);
		else {
			/* No prompt: start as a new line of the text does,
			 * without printing that newline. */
			ids = dt_xmalloc(1, sizeof *ids);
			ids[0] = dt_vocab_id(&v, '\n');
			n_ids = 1;
		}
	}
	if (st == DT_OK)
		st = load_params(a.dir, m, &step, &err);
	if (st == DT_OK && a.prompt != NULL &&
	    fputs(a.prompt, stdout) == EOF)
		st = dt_errorf(&err, DT_ERR_IO, "writing to standard output: "
			       "%s", strerror(errno));
	if (st == DT_OK)
		st = generate(m, &v, job->data.context, ids, n_ids, &a, &err);
	if (st == DT_OK && (putchar('\n') == EOF || fflush(stdout) != 0))
		st = dt_errorf(&err, DT_ERR_IO, "writing to standard output: "
			       "%s", strerror(errno));
	free(ids);
	dt_model_free(m);
	dt_vocab_fini(&v);
	free(job);
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);
	return 0;
}

const struct dt_cmd dt_cmd_sample = {
	.name = "sample",
	.summary = "generate text from a trained character model",
	.opts = sample_opts,
	.operand = "run_dir",
	.operand_noun = "run directory",
	.operand_doc = "the run of a text model",
	.run = cmd_sample,
};
