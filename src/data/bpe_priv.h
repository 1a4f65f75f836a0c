/* SPDX-License-Identifier: MIT */
/* bpe_priv.h - what bpe.c (the tokenizer, its files, encoding) and
 * bpe_learn.c (learning one) share: a table of interned byte strings,
 * GPT-2's pre-tokenizer over PCRE2, and the tokenizer's constructor.
 * For src/data/ alone. */
#ifndef DT_DATA_BPE_PRIV_H
#define DT_DATA_BPE_PRIV_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "data/bpe.h"
#include "util/status.h"

/* Byte strings, each stored once, numbered in the order added. */
struct dt_bpe_strs {
	unsigned char *pool;	/* (len) every string's bytes, in order */
	size_t len, cap;
	int64_t *off;		/* (n + 1) string i is pool[off[i], off[i+1]) */
	int64_t n, off_cap;
	int64_t *slot;		/* (mask + 1) a string's index or -1 */
	size_t mask;
};

/* An empty table (the caller's storage); dt_bpe_strs_fini frees it. */
void dt_bpe_strs_init(struct dt_bpe_strs *t);
void dt_bpe_strs_fini(struct dt_bpe_strs *t);
/* The index of s[0..n), or -1. */
int64_t dt_bpe_strs_find(const struct dt_bpe_strs *t, const unsigned char *s,
			 size_t n);
/* The index of s[0..n), added at the end if it is new (*added says which
 * when added is not NULL). */
int64_t dt_bpe_strs_intern(struct dt_bpe_strs *t, const unsigned char *s,
			   size_t n, int *added);

/* GPT-2's pre-tokenizer: the pattern compiled once (JIT where PCRE2 has
 * it) and its match data. */
struct dt_bpe_split {
	pcre2_code *re;
	pcre2_match_data *md;
};

/* Compiles the pattern; aborts if PCRE2 refuses it or is out of memory
 * (the pattern is fixed, so either is a broken library). */
void dt_bpe_split_init(struct dt_bpe_split *s);
void dt_bpe_split_fini(struct dt_bpe_split *s);

/* Calls fn(ctx, word, length) for each word of text[0..n), in order; the
 * words cover the text exactly. DT_ERR_DATA "byte N: PCRE2: ..." when a
 * match fails for a reason other than no match. */
enum dt_status dt_bpe_split_run(struct dt_bpe_split *s,
				const unsigned char *text, size_t n,
				void (*fn)(void *ctx, const unsigned char *w,
					   size_t len),
				void *ctx, struct dt_error *err);

/* The 256 bytes in GPT-2's order (bytes_to_unicode: 33-126, 161-172,
 * 174-255, then the rest ascending): order[i] is the byte of learned id
 * i. */
void dt_bpe_byte_order(unsigned char order[256]);

/* A tokenizer with no tokens; the token and merge calls below fill it and
 * dt_bpe_ready makes it usable. */
struct dt_bpe *dt_bpe_new(void);
/* The tokens, id = index (for dt_bpe_new's filling). */
struct dt_bpe_strs *dt_bpe_tokens(struct dt_bpe *b);
/* Adds merge number dt_bpe_merges(b): tokens a and x become token t.
 * Returns -1, or the rank of the merge of the same pair already there
 * (then nothing is added). */
int64_t dt_bpe_merge_add(struct dt_bpe *b, int32_t a, int32_t x, int32_t t);
/* Finds the one-byte tokens: DT_ERR_FORMAT "no token for byte 0xNN"
 * (the caller adds the file's name) when one is missing. */
enum dt_status dt_bpe_ready(struct dt_bpe *b, struct dt_error *err);

#endif
