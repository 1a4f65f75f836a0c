/* SPDX-License-Identifier: MIT */
/* bpe.c - byte-level BPE (bpe.h): the tokenizer, GPT-2's pre-tokenizer
 * over PCRE2, encoding and decoding, and its files: GPT-2's encoder.json
 * and vocab.bpe (Radford et al., 2019, the encoder.py of openai/gpt-2)
 * and the BPE model of a Hugging Face tokenizer.json, read and written
 * through json-c. Learning is in bpe_learn.c. */
#include "data/bpe.h"

#include <assert.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bpe_priv.h"
#include "data/data_priv.h"
#include "util/alloc.h"
#include "util/fileio.h"

/* GPT-2's pattern (encoder.py), with PCRE2's Unicode properties. */
#define SPLIT_PATTERN \
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+" \
	"|\\s+(?!\\S)|\\s+"
/* Words up to this many bytes are remembered with their tokens. */
#define CACHE_WORD 24
#define CACHE_SLOTS 16384u
/* The byte-level alphabet's code points are below this. */
#define ALPHABET_END 324

struct cache_slot {
	uint8_t len;		/* 0: empty */
	uint8_t n_ids;
	unsigned char word[CACHE_WORD];
	int32_t ids[CACHE_WORD];
};

struct dt_bpe {
	struct dt_bpe_strs tok;	/* token id -> bytes */
	int32_t byte_id[256];	/* the one-byte tokens */
	int32_t *merge;		/* (n_merges, 3) first, second, result */
	int64_t n_merges, merge_cap;
	uint64_t *pair_key;	/* (pair_mask + 1) first << 32 | second,
				 * UINT64_MAX when free */
	int32_t *pair_rank;	/* (pair_mask + 1) */
	size_t pair_mask;
	char digest[65];
	struct dt_bpe_split split;
	/* one word's scratch, grown as needed */
	int32_t *sym, *prev, *next;	/* (word_cap) */
	uint64_t *heap;			/* (3 * word_cap) rank << 32 | pos */
	uint32_t *batch;		/* (word_cap) */
	size_t word_cap;
	struct cache_slot *cache;	/* (CACHE_SLOTS) */
	/* the encode call under way */
	int32_t *out;
	int64_t n_out;
};

/* ---- interned strings --------------------------------------------------- */

static uint64_t
hash_bytes(const unsigned char *s, size_t n)
{
	uint64_t h = 14695981039346656037ull;	/* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h ^ h >> 29;
}

void
dt_bpe_strs_init(struct dt_bpe_strs *t)
{
	memset(t, 0, sizeof *t);
	t->off_cap = 64;
	t->off = dt_xmalloc((size_t)t->off_cap, sizeof *t->off);
	t->off[0] = 0;
	t->mask = 63;
	t->slot = dt_xmalloc(t->mask + 1, sizeof *t->slot);
	memset(t->slot, 0xff, (t->mask + 1) * sizeof *t->slot);
}

void
dt_bpe_strs_fini(struct dt_bpe_strs *t)
{
	free(t->pool);
	free(t->off);
	free(t->slot);
	memset(t, 0, sizeof *t);
}

static size_t
strs_probe(const struct dt_bpe_strs *t, const unsigned char *s, size_t n)
{
	size_t i = (size_t)hash_bytes(s, n) & t->mask;

	for (;; i = (i + 1) & t->mask) {
		int64_t k = t->slot[i];

		if (k < 0 || ((size_t)(t->off[k + 1] - t->off[k]) == n &&
			      memcmp(t->pool + t->off[k], s, n) == 0))
			return i;
	}
}

int64_t
dt_bpe_strs_find(const struct dt_bpe_strs *t, const unsigned char *s,
		 size_t n)
{
	return t->slot[strs_probe(t, s, n)];
}

static void
strs_grow(struct dt_bpe_strs *t)
{
	t->mask = t->mask * 2 + 1;
	free(t->slot);
	t->slot = dt_xmalloc(t->mask + 1, sizeof *t->slot);
	memset(t->slot, 0xff, (t->mask + 1) * sizeof *t->slot);
	for (int64_t k = 0; k < t->n; k++)
		t->slot[strs_probe(t, t->pool + t->off[k],
				   (size_t)(t->off[k + 1] - t->off[k]))] = k;
}

int64_t
dt_bpe_strs_intern(struct dt_bpe_strs *t, const unsigned char *s, size_t n,
		   int *added)
{
	size_t i = strs_probe(t, s, n);

	if (added != NULL)
		*added = t->slot[i] < 0;
	if (t->slot[i] >= 0)
		return t->slot[i];
	if (t->len + n > t->cap) {
		t->cap = t->len + n > 2 * t->cap ? t->len + n : 2 * t->cap;
		t->pool = dt_xrealloc(t->pool, t->cap, 1);
	}
	if (n > 0)
		memcpy(t->pool + t->len, s, n);
	t->len += n;
	if (t->n + 2 > t->off_cap) {
		t->off_cap *= 2;
		t->off = dt_xrealloc(t->off, (size_t)t->off_cap, sizeof *t->off);
	}
	t->slot[i] = t->n;
	t->off[++t->n] = (int64_t)t->len;
	if ((size_t)t->n * 2 > t->mask)
		strs_grow(t);
	return t->n - 1;
}

/* ---- the pre-tokenizer -------------------------------------------------- */

void
dt_bpe_split_init(struct dt_bpe_split *s)
{
	int code;
	PCRE2_SIZE at;

	s->re = pcre2_compile((PCRE2_SPTR)SPLIT_PATTERN, PCRE2_ZERO_TERMINATED,
			      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
			      &code, &at, NULL);
	if (s->re == NULL) {
		fprintf(stderr, "dtrain: PCRE2 refuses the BPE pattern "
			"(error %d at %zu)\n", code, (size_t)at);
		abort();
	}
	/* Without a JIT (some platforms) the interpreter gives the same
	 * matches, only slower. */
	(void)pcre2_jit_compile(s->re, PCRE2_JIT_COMPLETE);
	s->md = pcre2_match_data_create_from_pattern(s->re, NULL);
	if (s->md == NULL) {
		fprintf(stderr, "dtrain: out of memory in PCRE2\n");
		abort();
	}
}

void
dt_bpe_split_fini(struct dt_bpe_split *s)
{
	pcre2_match_data_free(s->md);
	pcre2_code_free(s->re);
	memset(s, 0, sizeof *s);
}

enum dt_status
dt_bpe_split_run(struct dt_bpe_split *s, const unsigned char *text, size_t n,
		 void (*fn)(void *ctx, const unsigned char *w, size_t len),
		 void *ctx, struct dt_error *err)
{
	size_t at = 0;

	while (at < n) {
		int rc = pcre2_match(s->re, text, n, at, 0, s->md, NULL);
		PCRE2_SIZE *ov;
		size_t from, to;

		if (rc == PCRE2_ERROR_NOMATCH) {
			from = to = n;
		} else if (rc < 0) {
			PCRE2_UCHAR msg[120];

			pcre2_get_error_message(rc, msg, sizeof msg);
			return dt_errorf(err, DT_ERR_DATA, "byte %zu: PCRE2: %s",
					 at, (const char *)msg);
		} else {
			ov = pcre2_get_ovector_pointer(s->md);
			from = ov[0];
			to = ov[1];
			assert(to > from);	/* no empty match in the pattern */
		}
		/* Every valid character matches, so a gap is a run of bytes
		 * that are not UTF-8: a word of its own. */
		if (from > at)
			fn(ctx, text + at, from - at);
		if (to > from)
			fn(ctx, text + from, to - from);
		at = to;
	}
	return DT_OK;
}

/* ---- the byte-level alphabet -------------------------------------------- */

static int
printable(unsigned b)
{
	return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
}

void
dt_bpe_byte_order(unsigned char order[256])
{
	int k = 0;

	for (unsigned b = 0; b < 256; b++)
		if (printable(b))
			order[k++] = (unsigned char)b;
	for (unsigned b = 0; b < 256; b++)
		if (!printable(b))
			order[k++] = (unsigned char)b;
}

/* The code point GPT-2 writes byte b as. */
static unsigned
byte_cp(unsigned b)
{
	unsigned k = 0;

	if (printable(b))
		return b;
	for (unsigned c = 0; c < b; c++)
		k += !printable(c);
	return 256 + k;
}

/* The byte written as code point cp, or -1 when cp is not in the
 * alphabet. */
static int
cp_byte(uint32_t cp)
{
	static int table[ALPHABET_END];
	static int ready;

	if (!ready) {
		for (int i = 0; i < ALPHABET_END; i++)
			table[i] = -1;
		for (unsigned b = 0; b < 256; b++)
			table[byte_cp(b)] = (int)b;
		ready = 1;
	}
	return cp < ALPHABET_END ? table[cp] : -1;
}

/* Turns the written form s[0..n) (UTF-8 of alphabet code points) into
 * bytes in out (n bytes at most) and returns their count, or -1 with
 * *bad the offset in s of the first fault and why[] saying what. */
static long
unmap(const unsigned char *s, size_t n, unsigned char *out, size_t *bad,
      char *why, size_t whysz)
{
	size_t i = 0, k = 0;

	while (i < n) {
		unsigned c = s[i];
		uint32_t cp;
		size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 :
			     c >= 0xE0 && c <= 0xEF ? 3 :
			     c >= 0xF0 && c <= 0xF4 ? 4 : 0;
		int byte;

		if (len == 0 || i + len > n) {
			*bad = i;
			snprintf(why, whysz, "invalid UTF-8 (byte 0x%02X)", c);
			return -1;
		}
		cp = len == 1 ? c : c & (0x7Fu >> len);
		for (size_t j = 1; j < len; j++) {
			if ((s[i + j] & 0xC0) != 0x80) {
				*bad = i + j;
				snprintf(why, whysz, "invalid UTF-8 (byte "
					 "0x%02X)", s[i + j]);
				return -1;
			}
			cp = cp << 6 | (s[i + j] & 0x3F);
		}
		byte = cp_byte(cp);
		if (byte < 0) {
			*bad = i;
			snprintf(why, whysz, "character U+%04X is not in the "
				 "byte-level alphabet (is this a byte-level "
				 "BPE?)", (unsigned)cp);
			return -1;
		}
		out[k++] = (unsigned char)byte;
		i += len;
	}
	return (long)k;
}

/* Writes bytes s[0..n) in the alphabet's UTF-8 into out (2n + 1 bytes),
 * terminated. */
static void
map_bytes(const unsigned char *s, size_t n, char *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned cp = byte_cp(s[i]);

		if (cp < 0x80) {
			out[k++] = (char)cp;
		} else {
			out[k++] = (char)(0xC0 | cp >> 6);
			out[k++] = (char)(0x80 | (cp & 0x3F));
		}
	}
	out[k] = '\0';
}

/* ---- the tokenizer ------------------------------------------------------ */

struct dt_bpe *
dt_bpe_new(void)
{
	struct dt_bpe *b = dt_xcalloc(1, sizeof *b);

	dt_bpe_strs_init(&b->tok);
	b->pair_mask = 63;
	b->pair_key = dt_xmalloc(b->pair_mask + 1, sizeof *b->pair_key);
	memset(b->pair_key, 0xff, (b->pair_mask + 1) * sizeof *b->pair_key);
	b->pair_rank = dt_xmalloc(b->pair_mask + 1, sizeof *b->pair_rank);
	dt_bpe_split_init(&b->split);
	b->cache = dt_xcalloc(CACHE_SLOTS, sizeof *b->cache);
	return b;
}

struct dt_bpe_strs *
dt_bpe_tokens(struct dt_bpe *b)
{
	return &b->tok;
}

void
dt_bpe_free(struct dt_bpe *b)
{
	if (b == NULL)
		return;
	dt_bpe_strs_fini(&b->tok);
	free(b->merge);
	free(b->pair_key);
	free(b->pair_rank);
	dt_bpe_split_fini(&b->split);
	free(b->sym);
	free(b->prev);
	free(b->next);
	free(b->heap);
	free(b->batch);
	free(b->cache);
	free(b);
}

int64_t
dt_bpe_size(const struct dt_bpe *b)
{
	return b->tok.n;
}

int64_t
dt_bpe_merges(const struct dt_bpe *b)
{
	return b->n_merges;
}

const char *
dt_bpe_digest(const struct dt_bpe *b)
{
	return b->digest;
}

int64_t
dt_bpe_byte_id(const struct dt_bpe *b, uint8_t c)
{
	return b->byte_id[c];
}

size_t
dt_bpe_piece(const struct dt_bpe *b, int64_t id, const unsigned char **bytes)
{
	assert(id >= 0 && id < b->tok.n);
	*bytes = b->tok.pool + b->tok.off[id];
	return (size_t)(b->tok.off[id + 1] - b->tok.off[id]);
}

static size_t
pair_probe(const struct dt_bpe *b, uint64_t key)
{
	size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & b->pair_mask;

	while (b->pair_key[i] != UINT64_MAX && b->pair_key[i] != key)
		i = (i + 1) & b->pair_mask;
	return i;
}

/* The rank of the merge of a then x, or -1. */
static int32_t
pair_rank(const struct dt_bpe *b, int32_t a, int32_t x)
{
	size_t i = pair_probe(b, (uint64_t)(uint32_t)a << 32 | (uint32_t)x);

	return b->pair_key[i] == UINT64_MAX ? -1 : b->pair_rank[i];
}

int64_t
dt_bpe_merge_add(struct dt_bpe *b, int32_t a, int32_t x, int32_t t)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)x;
	size_t i = pair_probe(b, key);

	if (b->pair_key[i] != UINT64_MAX)
		return b->pair_rank[i];
	if (b->n_merges == b->merge_cap) {
		b->merge_cap = b->merge_cap ? 2 * b->merge_cap : 256;
		b->merge = dt_xrealloc(b->merge, (size_t)b->merge_cap * 3,
				       sizeof *b->merge);
	}
	b->merge[3 * b->n_merges] = a;
	b->merge[3 * b->n_merges + 1] = x;
	b->merge[3 * b->n_merges + 2] = t;
	b->pair_key[i] = key;
	b->pair_rank[i] = (int32_t)b->n_merges++;
	if ((size_t)b->n_merges * 2 > b->pair_mask) {
		uint64_t *keys = b->pair_key;
		int32_t *ranks = b->pair_rank;
		size_t old = b->pair_mask;

		b->pair_mask = old * 2 + 1;
		b->pair_key = dt_xmalloc(b->pair_mask + 1, sizeof *keys);
		memset(b->pair_key, 0xff, (b->pair_mask + 1) * sizeof *keys);
		b->pair_rank = dt_xmalloc(b->pair_mask + 1, sizeof *ranks);
		for (size_t k = 0; k <= old; k++) {
			if (keys[k] == UINT64_MAX)
				continue;
			i = pair_probe(b, keys[k]);
			b->pair_key[i] = keys[k];
			b->pair_rank[i] = ranks[k];
		}
		free(keys);
		free(ranks);
	}
	return -1;
}

enum dt_status
dt_bpe_ready(struct dt_bpe *b, struct dt_error *err)
{
	for (unsigned c = 0; c < 256; c++) {
		unsigned char byte = (unsigned char)c;

		b->byte_id[c] = (int32_t)dt_bpe_strs_find(&b->tok, &byte, 1);
		if (b->byte_id[c] < 0)
			return dt_errorf(err, DT_ERR_FORMAT, "no token for byte "
					 "0x%02X (\"\\u%04X\"): a byte-level "
					 "BPE needs one for each of the 256",
					 c, byte_cp(c));
	}
	memset(b->cache, 0, CACHE_SLOTS * sizeof *b->cache);
	return DT_OK;
}

/* ---- encoding ----------------------------------------------------------- */

static void
heap_push(uint64_t *h, size_t *n, uint64_t v)
{
	size_t i = (*n)++;

	while (i > 0 && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static uint64_t
heap_pop(uint64_t *h, size_t *n)
{
	uint64_t top = h[0], v = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = v;
	return top;
}

/* Pushes the pair that starts at pos, if it has a merge. */
static void
push_pair(struct dt_bpe *b, size_t *n_heap, int32_t pos)
{
	int32_t r;

	if (pos < 0 || b->next[pos] < 0)
		return;
	r = pair_rank(b, b->sym[pos], b->sym[b->next[pos]]);
	if (r >= 0)
		heap_push(b->heap, n_heap, (uint64_t)r << 32 | (uint32_t)pos);
}

/* One round of GPT-2's bpe(): every occurrence of the lowest-ranked pair,
 * left to right. The heap's order is (rank, position), so the round's
 * occurrences come off it together and in order; the pairs the merges
 * make are pushed only after the round, as bpe() looks for them only in
 * its next pass. */
static void
merge_round(struct dt_bpe *b, size_t *n_heap)
{
	uint32_t rank = (uint32_t)(b->heap[0] >> 32);
	const int32_t *m = b->merge + 3 * (size_t)rank;
	size_t n_batch = 0, n_done = 0;

	while (*n_heap > 0 && (uint32_t)(b->heap[0] >> 32) == rank)
		b->batch[n_batch++] = (uint32_t)heap_pop(b->heap, n_heap);
	for (size_t k = 0; k < n_batch; k++) {
		int32_t pos = (int32_t)b->batch[k], q = b->next[pos];

		/* gone, or taken by the occurrence on its left (a pushed
		 * twice is merged the first time) */
		if (b->sym[pos] != m[0] || q < 0 || b->sym[q] != m[1])
			continue;
		b->sym[pos] = m[2];
		b->sym[q] = -1;
		b->next[pos] = b->next[q];
		if (b->next[q] >= 0)
			b->prev[b->next[q]] = pos;
		b->batch[n_done++] = (uint32_t)pos;
	}
	for (size_t k = 0; k < n_done; k++) {
		int32_t pos = (int32_t)b->batch[k];

		push_pair(b, n_heap, b->prev[pos]);
		push_pair(b, n_heap, pos);
	}
}

/* Appends the tokens of word w[0..n) (n >= 2) to b->out. */
static void
encode_merge(struct dt_bpe *b, const unsigned char *w, size_t n)
{
	size_t n_heap = 0;

	if (n > b->word_cap) {
		b->word_cap = n > 2 * b->word_cap ? n : 2 * b->word_cap;
		b->sym = dt_xrealloc(b->sym, b->word_cap, sizeof *b->sym);
		b->prev = dt_xrealloc(b->prev, b->word_cap, sizeof *b->prev);
		b->next = dt_xrealloc(b->next, b->word_cap, sizeof *b->next);
		b->heap = dt_xrealloc(b->heap, 3 * b->word_cap,
				      sizeof *b->heap);
		b->batch = dt_xrealloc(b->batch, b->word_cap,
				       sizeof *b->batch);
	}
	for (size_t i = 0; i < n; i++) {
		b->sym[i] = b->byte_id[w[i]];
		b->prev[i] = (int32_t)i - 1;
		b->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
	}
	for (size_t i = 0; i + 1 < n; i++)
		push_pair(b, &n_heap, (int32_t)i);
	while (n_heap > 0)
		merge_round(b, &n_heap);
	for (int32_t i = 0; i >= 0; i = b->next[i])
		b->out[b->n_out++] = b->sym[i];
}

/* The word callback of dt_bpe_encode. */
static void
encode_word(void *ctx, const unsigned char *w, size_t n)
{
	struct dt_bpe *b = ctx;
	struct cache_slot *c;
	int64_t start;

	if (n == 1) {
		b->out[b->n_out++] = b->byte_id[w[0]];
		return;
	}
	if (n > CACHE_WORD || n > (size_t)INT32_MAX) {
		/* split words too long for int32 positions; never met in
		 * text, harmless for bytes */
		while (n > (size_t)INT32_MAX) {
			encode_merge(b, w, (size_t)INT32_MAX);
			w += INT32_MAX;
			n -= INT32_MAX;
		}
		if (n == 1)
			b->out[b->n_out++] = b->byte_id[w[0]];
		else
			encode_merge(b, w, n);
		return;
	}
	c = &b->cache[hash_bytes(w, n) & (CACHE_SLOTS - 1)];
	if (c->len == n && memcmp(c->word, w, n) == 0) {
		memcpy(b->out + b->n_out, c->ids, c->n_ids * sizeof *c->ids);
		b->n_out += c->n_ids;
		return;
	}
	start = b->n_out;
	encode_merge(b, w, n);
	c->len = (uint8_t)n;
	c->n_ids = (uint8_t)(b->n_out - start);
	memcpy(c->word, w, n);
	memcpy(c->ids, b->out + start, c->n_ids * sizeof *c->ids);
}

enum dt_status
dt_bpe_encode(struct dt_bpe *b, const unsigned char *text, size_t n,
	      int32_t *ids, int64_t *n_ids, struct dt_error *err)
{
	enum dt_status st;

	b->out = ids;
	b->n_out = 0;
	st = dt_bpe_split_run(&b->split, text, n, encode_word, b, err);
	*n_ids = b->n_out;
	b->out = NULL;
	return st;
}

/* ---- reading files ------------------------------------------------------ */

/* Line and column (1-based, bytes) of offset off in s. */
static void
line_col(const unsigned char *s, size_t off, size_t *line, size_t *col)
{
	size_t start = 0;

	*line = 1;
	for (size_t i = 0; i < off; i++) {
		if (s[i] == '\n') {
			(*line)++;
			start = i + 1;
		}
	}
	*col = off - start + 1;
}

static enum dt_status
parse_json(const char *path, const struct dt_blob *blob, json_object **out,
	   struct dt_error *err)
{
	json_tokener *tok = json_tokener_new();
	enum json_tokener_error jerr;
	size_t end, line, col;

	if (tok == NULL) {
		fprintf(stderr, "dtrain: out of memory in json-c\n");
		abort();
	}
	if (blob->n > INT32_MAX) {
		json_tokener_free(tok);
		return dt_errorf(err, DT_ERR_FORMAT, "%s: too large for a "
				 "tokenizer (%zu bytes)", path, blob->n);
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
			       JSON_TOKENER_VALIDATE_UTF8 |
			       JSON_TOKENER_ALLOW_TRAILING_CHARS);
	*out = json_tokener_parse_ex(tok, (const char *)blob->p,
				     (int)blob->n);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (*out == NULL || jerr != json_tokener_success) {
		json_object_put(*out);
		*out = NULL;
		line_col(blob->p, end, &line, &col);
		return dt_errorf(err, DT_ERR_FORMAT, "%s:%zu:%zu: invalid JSON: "
				 "%s", path, line, col,
				 jerr == json_tokener_continue ?
				 "the file ends inside the value" :
				 json_tokener_error_desc(jerr));
	}
	for (; end < blob->n; end++) {
		if (strchr(" \t\r\n", blob->p[end]) == NULL) {
			json_object_put(*out);
			*out = NULL;
			line_col(blob->p, end, &line, &col);
			return dt_errorf(err, DT_ERR_FORMAT, "%s:%zu:%zu: text "
					 "after the JSON value", path, line,
					 col);
		}
	}
	if (!json_object_is_type(*out, json_type_object)) {
		json_object_put(*out);
		*out = NULL;
		return dt_errorf(err, DT_ERR_FORMAT, "%s:1:1: expected a JSON "
				 "object", path);
	}
	return DT_OK;
}

/* Fills b's tokens from vocab, a JSON object of written form -> id, whose
 * place in the file is where ("model.vocab" or "" for encoder.json). */
static enum dt_status
read_vocab(struct dt_bpe *b, const char *path, const char *where,
	   json_object *vocab, struct dt_error *err)
{
	int n = json_object_object_length(vocab);
	const char **key = dt_xcalloc((size_t)n + 1, sizeof *key);
	unsigned char *bytes = NULL;
	enum dt_status st = DT_OK;
	const char *dot = where[0] != '\0' ? "." : "";

	json_object_object_foreach(vocab, k, v) {
		int64_t id = json_object_get_int64(v);

		if (!json_object_is_type(v, json_type_int) || id < 0 ||
		    id >= n) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: %s%s\"%s\": "
				       "expected an id from 0 to %d (the "
				       "vocabulary has %d tokens), found %s%s",
				       path, where, dot, k, n - 1, n,
				       json_object_to_json_string(v),
				       where[0] != '\0' ? "" : " (a file "
				       "without a \"model\" key is read as "
				       "GPT-2's encoder.json)");
			goto out;
		}
		if (key[id] != NULL) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: %s%s\"%s\": id "
				       "%lld is also the id of \"%s\"", path,
				       where, dot, k, (long long)id, key[id]);
			goto out;
		}
		key[id] = k;
	}
	for (int id = 0; id < n; id++) {
		size_t len, bad;
		long got;
		char why[120];

		if (key[id] == NULL) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: %s: no token has "
				       "id %d (ids must run from 0 to %d)",
				       path, where[0] ? where : "the top-level "
				       "object", id, n - 1);
			goto out;
		}
		len = strlen(key[id]);
		bytes = dt_xrealloc(bytes, len + 1, 1);
		got = unmap((const unsigned char *)key[id], len, bytes, &bad,
			    why, sizeof why);
		if (got <= 0) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: %s%s\"%s\": %s",
				       path, where, dot, key[id],
				       got == 0 ? "an empty token" : why);
			goto out;
		}
		(void)dt_bpe_strs_intern(&b->tok, bytes, (size_t)got, NULL);
	}
out:
	free(bytes);
	free(key);
	return st;
}

/* Adds the merge of written forms a[0..na) and x[0..nx). On failure
 * returns DT_ERR_FORMAT with err saying what, and *at the offset of the
 * fault in the line "A B" for the caller's place. */
static enum dt_status
add_merge(struct dt_bpe *b, const char *a, size_t na, const char *x,
	  size_t nx, size_t *at, struct dt_error *err)
{
	unsigned char *buf = dt_xmalloc(na + nx + 1, 1);
	int64_t id[3], dup;
	size_t bad;
	char why[120];
	long la, lx = 0;
	enum dt_status st = DT_OK;

	la = unmap((const unsigned char *)a, na, buf, &bad, why, sizeof why);
	*at = bad;
	if (la > 0) {
		lx = unmap((const unsigned char *)x, nx, buf + la, &bad, why,
			   sizeof why);
		*at = na + 1 + bad;
	}
	if (la <= 0 || lx <= 0) {
		st = dt_errorf(err, DT_ERR_FORMAT, "%s", why);
		goto out;
	}
	id[0] = dt_bpe_strs_find(&b->tok, buf, (size_t)la);
	id[1] = dt_bpe_strs_find(&b->tok, buf + la, (size_t)lx);
	id[2] = dt_bpe_strs_find(&b->tok, buf, (size_t)(la + lx));
	for (int k = 0; k < 3; k++) {
		if (id[k] >= 0)
			continue;
		*at = k == 1 ? na + 1 : 0;
		if (k < 2)
			st = dt_errorf(err, DT_ERR_FORMAT, "the merge names "
				       "\"%.*s\", which is not in the "
				       "vocabulary", (int)(k ? nx : na),
				       k ? x : a);
		else
			st = dt_errorf(err, DT_ERR_FORMAT, "the merge's result "
				       "\"%.*s%.*s\" is not in the vocabulary",
				       (int)na, a, (int)nx, x);
		goto out;
	}
	dup = dt_bpe_merge_add(b, (int32_t)id[0], (int32_t)id[1],
			       (int32_t)id[2]);
	if (dup >= 0) {
		*at = 0;
		st = dt_errorf(err, DT_ERR_FORMAT, "the merge \"%.*s %.*s\" is "
			       "already merge %lld", (int)na, a, (int)nx, x,
			       (long long)dup + 1);
	}
out:
	free(buf);
	return st;
}

/* Reads GPT-2's vocab.bpe: an optional "#version" line, then one merge
 * per line, "A B". */
static enum dt_status
read_merges_file(struct dt_bpe *b, const char *path, const struct dt_blob *m,
		 struct dt_error *err)
{
	const char *s = (const char *)m->p;
	size_t line = 0;

	for (size_t at = 0; at < m->n;) {
		const char *eol = memchr(s + at, '\n', m->n - at);
		size_t len = eol ? (size_t)(eol - (s + at)) : m->n - at;
		const char *l = s + at, *sp;
		size_t where;
		enum dt_status st;

		line++;
		at += len + 1;
		if (len > 0 && l[len - 1] == '\r')
			len--;
		if (len == 0 || (line == 1 && len >= 8 &&
				 memcmp(l, "#version", 8) == 0))
			continue;
		sp = memchr(l, ' ', len);
		if (sp == NULL || sp == l || sp + 1 == l + len ||
		    memchr(sp + 1, ' ', (size_t)(l + len - sp - 1)) != NULL)
			return dt_errorf(err, DT_ERR_FORMAT, "%s:%zu:%zu: "
					 "expected a merge: two tokens "
					 "separated by one space (is the file "
					 "truncated?)", path, line,
					 sp == NULL ? len + 1 :
					 (size_t)(sp - l) + 1);
		st = add_merge(b, l, (size_t)(sp - l), sp + 1,
			       (size_t)(l + len - sp - 1), &where, err);
		if (st != DT_OK) {
			dt_error_prefix(err, "%s:%zu:%zu: ", path, line,
					where + 1);
			return st;
		}
	}
	return DT_OK;
}

/* Reads model.merges of a tokenizer.json: "A B" strings or ["A", "B"]
 * pairs. */
static enum dt_status
read_merges_json(struct dt_bpe *b, const char *path, json_object *merges,
		 struct dt_error *err)
{
	size_t n = json_object_array_length(merges);

	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(merges, i);
		const char *a = NULL, *x = NULL, *sp;
		size_t na = 0, nx = 0, where;
		enum dt_status st;

		if (json_object_is_type(e, json_type_string)) {
			a = json_object_get_string(e);
			sp = strchr(a, ' ');
			if (sp != NULL && sp > a && sp[1] != '\0' &&
			    strchr(sp + 1, ' ') == NULL) {
				na = (size_t)(sp - a);
				x = sp + 1;
				nx = strlen(x);
			}
		} else if (json_object_is_type(e, json_type_array) &&
			   json_object_array_length(e) == 2 &&
			   json_object_is_type(json_object_array_get_idx(e, 0),
					       json_type_string) &&
			   json_object_is_type(json_object_array_get_idx(e, 1),
					       json_type_string)) {
			a = json_object_get_string(
				json_object_array_get_idx(e, 0));
			x = json_object_get_string(
				json_object_array_get_idx(e, 1));
			na = strlen(a);
			nx = strlen(x);
		}
		if (x == NULL || na == 0 || nx == 0)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: "
					 "model.merges[%zu]: expected \"A B\" "
					 "or [\"A\", \"B\"], found %s", path, i,
					 json_object_to_json_string(e));
		st = add_merge(b, a, na, x, nx, &where, err);
		if (st != DT_OK) {
			dt_error_prefix(err, "%s: model.merges[%zu]: ", path, i);
			return st;
		}
	}
	return DT_OK;
}

static void
set_digest(struct dt_bpe *b, const struct dt_blob *one,
	   const struct dt_blob *two)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[32];
	unsigned len = 0;

	if (ctx == NULL || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(ctx, one->p, one->n) ||
	    (two != NULL && !EVP_DigestUpdate(ctx, two->p, two->n)) ||
	    !EVP_DigestFinal_ex(ctx, md, &len) || len != 32) {
		fprintf(stderr, "dtrain: OpenSSL cannot compute a sha256\n");
		abort();
	}
	EVP_MD_CTX_free(ctx);
	for (int i = 0; i < 32; i++)
		snprintf(b->digest + 2 * i, 3, "%02x", md[i]);
}

/* encoder.json's vocab.bpe: the same directory. */
static enum dt_status
merges_path(const char *path, char *buf, size_t size, struct dt_error *err)
{
	const char *slash = strrchr(path, '/');
	int dir = slash ? (int)(slash - path + 1) : 0;
	int n = snprintf(buf, size, "%.*svocab.bpe", dir, path);

	if (n < 0 || (size_t)n >= size)
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", path);
	return DT_OK;
}

static enum dt_status
load_gpt2(struct dt_bpe *b, const char *path, json_object *root,
	  const struct dt_blob *enc, struct dt_error *err)
{
	char mpath[4096];
	struct dt_blob m;
	enum dt_status st;

	st = merges_path(path, mpath, sizeof mpath, err);
	if (st == DT_OK)
		st = read_vocab(b, path, "", root, err);
	if (st == DT_OK)
		st = dt_bpe_ready(b, err);
	if (st != DT_OK) {
		if (err->status == DT_ERR_FORMAT &&
		    strncmp(err->msg, path, strlen(path)) != 0)
			dt_error_prefix(err, "%s: ", path);
		return st;
	}
	st = dt_blob_read(mpath, 0, &m, err);
	if (st != DT_OK) {
		dt_error_prefix(err, "%s: GPT-2's merges, beside %s: ", mpath,
				path);
		return st;
	}
	st = read_merges_file(b, mpath, &m, err);
	if (st == DT_OK)
		set_digest(b, enc, &m);
	dt_blob_fini(&m);
	return st;
}

static enum dt_status
load_hf(struct dt_bpe *b, const char *path, json_object *root,
	const struct dt_blob *blob, struct dt_error *err)
{
	json_object *model, *type, *vocab, *merges;
	enum dt_status st;

	model = json_object_object_get(root, "model");
	if (!json_object_is_type(model, json_type_object))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: model: expected an "
				 "object", path);
	type = json_object_object_get(model, "type");
	if (type != NULL && (!json_object_is_type(type, json_type_string) ||
			     strcmp(json_object_get_string(type), "BPE") != 0))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: model.type: %s is "
				 "not a BPE model", path,
				 json_object_to_json_string(type));
	vocab = json_object_object_get(model, "vocab");
	merges = json_object_object_get(model, "merges");
	if (!json_object_is_type(vocab, json_type_object))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: model.vocab: expected "
				 "an object of token: id", path);
	if (!json_object_is_type(merges, json_type_array))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: model.merges: "
				 "expected an array", path);
	st = read_vocab(b, path, "model.vocab", vocab, err);
	if (st == DT_OK) {
		st = dt_bpe_ready(b, err);
		if (st != DT_OK)
			dt_error_prefix(err, "%s: model.vocab: ", path);
	}
	if (st == DT_OK)
		st = read_merges_json(b, path, merges, err);
	if (st == DT_OK)
		set_digest(b, blob, NULL);
	return st;
}

enum dt_status
dt_bpe_load(const char *path, struct dt_bpe **out, struct dt_error *err)
{
	struct dt_blob blob;
	json_object *root = NULL;
	struct dt_bpe *b;
	enum dt_status st;

	*out = NULL;
	st = dt_blob_read(path, 0, &blob, err);
	if (st != DT_OK)
		return st;
	st = parse_json(path, &blob, &root, err);
	if (st != DT_OK) {
		dt_blob_fini(&blob);
		return st;
	}
	b = dt_bpe_new();
	if (json_object_object_get_ex(root, "model", NULL))
		st = load_hf(b, path, root, &blob, err);
	else
		st = load_gpt2(b, path, root, &blob, err);
	json_object_put(root);
	dt_blob_fini(&blob);
	if (st != DT_OK) {
		dt_bpe_free(b);
		return st;
	}
	*out = b;
	return DT_OK;
}

/* ---- writing ------------------------------------------------------------ */

static json_object *
byte_level(int pre)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string("ByteLevel"));
	json_object_object_add(o, "add_prefix_space",
			       json_object_new_boolean(0));
	json_object_object_add(o, "trim_offsets", json_object_new_boolean(1));
	if (pre)
		json_object_object_add(o, "use_regex",
				       json_object_new_boolean(1));
	return o;
}

static json_object *
to_json(const struct dt_bpe *b)
{
	json_object *root = json_object_new_object();
	json_object *model = json_object_new_object();
	json_object *vocab = json_object_new_object();
	json_object *merges = json_object_new_array();
	char *buf = dt_xmalloc(2 * (size_t)b->tok.len + 4, 1);

	for (int64_t id = 0; id < b->tok.n; id++) {
		const unsigned char *p;
		size_t n = dt_bpe_piece(b, id, &p);

		map_bytes(p, n, buf);
		json_object_object_add(vocab, buf, json_object_new_int64(id));
	}
	for (int64_t r = 0; r < b->n_merges; r++) {
		const unsigned char *p;
		size_t n = dt_bpe_piece(b, b->merge[3 * r], &p), k;

		map_bytes(p, n, buf);
		k = strlen(buf);
		buf[k++] = ' ';
		n = dt_bpe_piece(b, b->merge[3 * r + 1], &p);
		map_bytes(p, n, buf + k);
		json_object_array_add(merges, json_object_new_string(buf));
	}
	free(buf);
	json_object_object_add(root, "version", json_object_new_string("1.0"));
	json_object_object_add(root, "added_tokens", json_object_new_array());
	json_object_object_add(root, "normalizer", NULL);
	json_object_object_add(root, "pre_tokenizer", byte_level(1));
	json_object_object_add(root, "post_processor", NULL);
	json_object_object_add(root, "decoder", byte_level(0));
	json_object_object_add(model, "type", json_object_new_string("BPE"));
	json_object_object_add(model, "dropout", NULL);
	json_object_object_add(model, "unk_token", NULL);
	json_object_object_add(model, "fuse_unk", json_object_new_boolean(0));
	json_object_object_add(model, "byte_fallback",
			       json_object_new_boolean(0));
	json_object_object_add(model, "vocab", vocab);
	json_object_object_add(model, "merges", merges);
	json_object_object_add(root, "model", model);
	return root;
}

static enum dt_status
write_json(FILE *out, void *ctx, struct dt_error *err)
{
	const char *text = json_object_to_json_string_ext(
		ctx, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	(void)err;
	fputs(text, out);
	fputc('\n', out);
	return DT_OK;
}

enum dt_status
dt_bpe_save(struct dt_bpe *b, const char *path, struct dt_error *err)
{
	json_object *root = to_json(b);
	const char *text = json_object_to_json_string_ext(
		root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(text);
	unsigned char *copy = dt_xmalloc(len + 1, 1);
	struct dt_blob blob = { 0 };
	enum dt_status st;

	memcpy(copy, text, len);
	copy[len] = '\n';
	st = dt_file_write_atomic(path, write_json, root, err);
	if (st == DT_OK) {
		blob.p = copy;
		blob.n = len + 1;
		set_digest(b, &blob, NULL);
	}
	free(copy);
	json_object_put(root);
	return st;
}
