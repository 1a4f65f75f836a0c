/* SPDX-License-Identifier: MIT */
/* cmd_tokenize.c - `dtrain tokenize`: learn a byte-level BPE tokenizer
 * from a text (--vocab-size), encode a text into a token file with a
 * tokenizer (-t: dtrain's own tokenizer.json, a Hugging Face
 * tokenizer.json or GPT-2's encoder.json with its vocab.bpe), or decode a
 * token file back into the text (--decode). The work is data/bpe.h's;
 * this file checks the options and says what was written. */
#include "cmd/cmd.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bpe.h"

struct tokenize_args {
	int vocab_size;		/* 0: not learning */
	const char *tokenizer;
	int decode;
	const char *output;
};

static const struct dt_cmd_opt tokenize_opts[] = {
	{ .name = "vocab-size", .kind = DT_CMD_ARG_INT, .arg = "n",
	  .offset = offsetof(struct tokenize_args, vocab_size),
	  .min = 256, .max = INT32_MAX,
	  .doc = "learn a tokenizer of n ids from the file" },
	{ .name = "tokenizer", .short_name = 't', .kind = DT_CMD_ARG_STRING,
	  .arg = "file", .flags = DT_CMD_OPT_PATH,
	  .offset = offsetof(struct tokenize_args, tokenizer),
	  .doc = "encode (or decode) with this tokenizer" },
	{ .name = "decode", .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct tokenize_args, decode),
	  .doc = "turn a token file back into its text" },
	{ .short_name = 'o', .kind = DT_CMD_ARG_STRING, .arg = "output",
	  .flags = DT_CMD_OPT_BARE | DT_CMD_OPT_PATH,
	  .offset = offsetof(struct tokenize_args, output),
	  .doc = "the tokenizer, token file or text written" },
	{ .kind = DT_CMD_ARG_END },
};

static enum dt_status
learn(const struct tokenize_args *a, const char *input, struct dt_error *err)
{
	struct dt_bpe_trainer *t = dt_bpe_trainer_new();
	struct dt_bpe *b = NULL;
	enum dt_status st;

	st = dt_bpe_trainer_feed_file(t, input, err);
	if (st == DT_OK)
		st = dt_bpe_trainer_finish(t, a->vocab_size, &b, err);
	dt_bpe_trainer_free(t);
	if (st == DT_OK)
		st = dt_bpe_save(b, a->output, err);
	if (st == DT_OK) {
		printf("%s: %lld tokens (256 bytes and %lld merges)\n",
		       a->output, (long long)dt_bpe_size(b),
		       (long long)dt_bpe_merges(b));
		if (dt_bpe_size(b) < a->vocab_size)
			fprintf(stderr, "dtrain tokenize: %s: %lld tokens, not "
				"the %d asked for: after %lld merges every word "
				"of the text is one token, so no pair is left "
				"to merge\n", input,
				(long long)dt_bpe_size(b), a->vocab_size,
				(long long)dt_bpe_merges(b));
	}
	dt_bpe_free(b);
	return st;
}

static enum dt_status
encode(struct dt_bpe *b, const char *input, const char *output,
       struct dt_error *err)
{
	int32_t *ids = NULL;
	int64_t n = 0;
	enum dt_status st = dt_bpe_encode_file(b, input, &ids, &n, err);

	if (st == DT_OK)
		st = dt_bpe_write_tokens(b, ids, n, output, err);
	if (st == DT_OK)
		printf("%s: %lld tokens (uint%d)\n", output, (long long)n,
		       8 * dt_bpe_token_width(b));
	free(ids);
	return st;
}

static int
cmd_tokenize(int argc, char **argv)
{
	struct tokenize_args a = { 0 };
	struct dt_cmd_line line;
	const char *inputs[3] = { NULL, NULL, NULL };	/* file, -t, end */
	struct dt_bpe *b = NULL;
	struct dt_error err;
	enum dt_status st;
	int rc = dt_cmd_parse(&dt_cmd_tokenize, argc, argv, &a, &line);

	if (rc >= 0)
		return rc;
	free(line.sets);
	if (a.output == NULL)
		return dt_cmd_usage_error(&dt_cmd_tokenize, "%s", "-o output "
					  "is required");
	if (a.decode && a.tokenizer == NULL)
		return dt_cmd_usage_error(&dt_cmd_tokenize, "%s", "--decode "
					  "needs -t, the tokenizer");
	if ((a.vocab_size > 0) == (a.tokenizer != NULL))
		return dt_cmd_usage_error(&dt_cmd_tokenize, "%s", "give "
					  "--vocab-size (to learn) or -t (to "
					  "encode or decode), one of them");
	dt_error_clear(&err);
	inputs[0] = line.operand;
	inputs[1] = a.tokenizer;
	if (dt_cmd_output_check(a.output, NULL, NULL, inputs, &err) != DT_OK)
		return dt_cmd_usage_error(&dt_cmd_tokenize, "%s", err.msg);
	if (a.vocab_size > 0) {
		st = learn(&a, line.operand, &err);
	} else {
		st = dt_bpe_load(a.tokenizer, &b, &err);
		if (st == DT_OK && a.decode)
			st = dt_bpe_decode_file(b, line.operand, a.output,
						&err);
		else if (st == DT_OK)
			st = encode(b, line.operand, a.output, &err);
		dt_bpe_free(b);
	}
	if (st == DT_OK && fflush(stdout) != 0)
		st = dt_errorf(&err, DT_ERR_IO, "writing to standard output "
			       "failed");
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);
	return 0;
}

const struct dt_cmd dt_cmd_tokenize = {
	.name = "tokenize",
	.summary = "learn a BPE tokenizer, or encode or decode a text",
	.opts = tokenize_opts,
	.operand = "file",
	.operand_noun = "input file",
	.operand_doc = "the text, or the tokens to decode",
	.run = cmd_tokenize,
};
