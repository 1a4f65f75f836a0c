/* SPDX-License-Identifier: MIT */
/* bpe_learn.c - learning a byte-level BPE (bpe.h): Sennrich et al.'s
 * algorithm (2016, section 3.2) over the words of GPT-2's pre-tokenizer,
 * each distinct word counted once with its multiplicity. Every step merges
 * the most frequent neighbouring pair; the pair counts are kept up to
 * date word by word (only the words that hold the merged pair are
 * touched) and a heap with stale entries skipped finds the best pair. */
#include "data/bpe.h"

#include <stdlib.h>
#include <string.h>

#include "data/bpe_priv.h"
#include "util/alloc.h"

struct dt_bpe_trainer {
	struct dt_bpe_strs words;	/* the distinct words */
	int64_t *count;			/* (words.n) occurrences of each */
	int64_t count_cap;
	struct dt_bpe_split split;
};

/* A pair of neighbouring tokens and the words it occurs in. */
struct pair {
	int32_t a, b;
	int64_t count;		/* occurrences, with multiplicity */
	int32_t *words;		/* (n_words) may repeat; stale ones too */
	int64_t n_words, cap;
	int dirty;		/* count changed in this step */
	int done;		/* merged */
};

struct heap_entry {
	int64_t count;
	int32_t a, b;
	int64_t pair;
};

struct learn {
	struct pair *pairs;	/* (n_pairs) */
	int64_t n_pairs, pairs_cap;
	int64_t *slot;		/* (mask + 1) pair index or -1 */
	size_t mask;
	struct heap_entry *heap;	/* (n_heap) */
	int64_t n_heap, heap_cap;
	int64_t *dirty;		/* (n_dirty) pairs changed in this step */
	int64_t n_dirty, dirty_cap;
	int32_t *sym;		/* every word's tokens, word w from
				 * sym[start[w]], len[w] of them */
	int64_t *start;		/* (n_words) */
	int32_t *len;		/* (n_words) */
	int64_t *stamp;		/* (n_words) the last step that saw it */
};

struct dt_bpe_trainer *
dt_bpe_trainer_new(void)
{
	struct dt_bpe_trainer *t = dt_xcalloc(1, sizeof *t);

	dt_bpe_strs_init(&t->words);
	dt_bpe_split_init(&t->split);
	return t;
}

void
dt_bpe_trainer_free(struct dt_bpe_trainer *t)
{
	if (t == NULL)
		return;
	dt_bpe_strs_fini(&t->words);
	free(t->count);
	dt_bpe_split_fini(&t->split);
	free(t);
}

static void
count_word(void *ctx, const unsigned char *w, size_t n)
{
	struct dt_bpe_trainer *t = ctx;
	int added;
	int64_t k = dt_bpe_strs_intern(&t->words, w, n, &added);

	if (added && k >= t->count_cap) {
		t->count_cap = t->count_cap ? 2 * t->count_cap : 1024;
		t->count = dt_xrealloc(t->count, (size_t)t->count_cap,
				       sizeof *t->count);
	}
	if (added)
		t->count[k] = 0;
	t->count[k]++;
}

enum dt_status
dt_bpe_trainer_feed(struct dt_bpe_trainer *t, const unsigned char *text,
		    size_t n, struct dt_error *err)
{
	return dt_bpe_split_run(&t->split, text, n, count_word, t, err);
}

/* ---- the pairs and their heap ------------------------------------------- */

static size_t
pair_slot(const struct learn *l, int32_t a, int32_t b)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & l->mask;

	for (;; i = (i + 1) & l->mask) {
		int64_t p = l->slot[i];

		if (p < 0 || (l->pairs[p].a == a && l->pairs[p].b == b))
			return i;
	}
}

static int64_t
pair_get(struct learn *l, int32_t a, int32_t b)
{
	size_t i = pair_slot(l, a, b);
	struct pair *p;

	if (l->slot[i] >= 0)
		return l->slot[i];
	if (l->n_pairs == l->pairs_cap) {
		l->pairs_cap = l->pairs_cap ? 2 * l->pairs_cap : 1024;
		l->pairs = dt_xrealloc(l->pairs, (size_t)l->pairs_cap,
				       sizeof *l->pairs);
	}
	p = &l->pairs[l->n_pairs];
	memset(p, 0, sizeof *p);
	p->a = a;
	p->b = b;
	l->slot[i] = l->n_pairs++;
	if ((size_t)l->n_pairs * 2 > l->mask) {
		l->mask = l->mask * 2 + 1;
		free(l->slot);
		l->slot = dt_xmalloc(l->mask + 1, sizeof *l->slot);
		memset(l->slot, 0xff, (l->mask + 1) * sizeof *l->slot);
		for (int64_t k = 0; k < l->n_pairs; k++)
			l->slot[pair_slot(l, l->pairs[k].a, l->pairs[k].b)] = k;
	}
	return l->n_pairs - 1;
}

/* x comes off the heap before y: more occurrences, then the smaller
 * first id, then the smaller second. */
static int
before(const struct heap_entry *x, const struct heap_entry *y)
{
	if (x->count != y->count)
		return x->count > y->count;
	if (x->a != y->a)
		return x->a < y->a;
	return x->b < y->b;
}

static void
heap_push(struct learn *l, int64_t p)
{
	struct heap_entry e = {
		l->pairs[p].count, l->pairs[p].a, l->pairs[p].b, p
	};
	int64_t i;

	if (l->n_heap == l->heap_cap) {
		l->heap_cap = l->heap_cap ? 2 * l->heap_cap : 1024;
		l->heap = dt_xrealloc(l->heap, (size_t)l->heap_cap,
				      sizeof *l->heap);
	}
	for (i = l->n_heap++; i > 0 && before(&e, &l->heap[(i - 1) / 2]);
	     i = (i - 1) / 2)
		l->heap[i] = l->heap[(i - 1) / 2];
	l->heap[i] = e;
}

static struct heap_entry
heap_pop(struct learn *l)
{
	struct heap_entry top = l->heap[0], e = l->heap[--l->n_heap];
	int64_t i = 0;

	for (;;) {
		int64_t c = 2 * i + 1;

		if (c >= l->n_heap)
			break;
		if (c + 1 < l->n_heap && before(&l->heap[c + 1], &l->heap[c]))
			c++;
		if (!before(&l->heap[c], &e))
			break;
		l->heap[i] = l->heap[c];
		i = c;
	}
	if (l->n_heap > 0)
		l->heap[i] = e;
	return top;
}

/* Adds delta occurrences of (a, b), in word w. */
static void
pair_add(struct learn *l, int32_t a, int32_t b, int64_t delta, int32_t w)
{
	int64_t k = pair_get(l, a, b);
	struct pair *p = &l->pairs[k];

	p->count += delta;
	if (!p->dirty) {
		p->dirty = 1;
		if (l->n_dirty == l->dirty_cap) {
			l->dirty_cap = l->dirty_cap ? 2 * l->dirty_cap : 1024;
			l->dirty = dt_xrealloc(l->dirty, (size_t)l->dirty_cap,
					       sizeof *l->dirty);
		}
		l->dirty[l->n_dirty++] = k;
	}
	if (delta > 0 && (p->n_words == 0 || p->words[p->n_words - 1] != w)) {
		if (p->n_words == p->cap) {
			p->cap = p->cap ? 2 * p->cap : 4;
			p->words = dt_xrealloc(p->words, (size_t)p->cap,
					       sizeof *p->words);
		}
		p->words[p->n_words++] = w;
	}
}

/* Pushes every pair whose count changed, with its new count. */
static void
flush_dirty(struct learn *l)
{
	for (int64_t k = 0; k < l->n_dirty; k++) {
		struct pair *p = &l->pairs[l->dirty[k]];

		p->dirty = 0;
		if (p->count > 0 && !p->done)
			heap_push(l, l->dirty[k]);
	}
	l->n_dirty = 0;
}

/* Counts (or, with sign -1, uncounts) the pairs of word w. */
static void
word_pairs(struct learn *l, int32_t w, int64_t delta)
{
	const int32_t *s = l->sym + l->start[w];

	for (int32_t i = 0; i + 1 < l->len[w]; i++)
		pair_add(l, s[i], s[i + 1], delta, w);
}

/* Merges every (a, b) of word w, left to right, into t. Returns whether
 * the word held one. */
static int
merge_word(struct learn *l, int32_t w, int32_t a, int32_t b, int32_t t)
{
	int32_t *s = l->sym + l->start[w];
	int32_t k = 0, i = 0;

	while (i < l->len[w]) {
		if (i + 1 < l->len[w] && s[i] == a && s[i + 1] == b) {
			s[k++] = t;
			i += 2;
		} else {
			s[k++] = s[i++];
		}
	}
	if (k == l->len[w])
		return 0;
	l->len[w] = k;
	return 1;
}

/* One merge: pair p becomes token t in every word that holds it. */
static void
merge_step(struct learn *l, const struct dt_bpe_trainer *tr, int64_t p,
	   int32_t t)
{
	struct pair *pp = &l->pairs[p];
	int32_t a = pp->a, b = pp->b;
	int32_t *words = pp->words;
	int64_t n = pp->n_words;

	pp->words = NULL;
	pp->n_words = pp->cap = 0;
	pp->done = 1;
	for (int64_t k = 0; k < n; k++) {
		int32_t w = words[k];
		int64_t c = tr->count[w];

		if (l->stamp[w] == t)
			continue;
		l->stamp[w] = t;
		word_pairs(l, w, -c);
		(void)merge_word(l, w, a, b, t);
		word_pairs(l, w, c);
	}
	free(words);
	flush_dirty(l);
}

static void
learn_init(struct learn *l, const struct dt_bpe_trainer *tr,
	   const int32_t byte_id[256])
{
	int64_t n = tr->words.n;

	memset(l, 0, sizeof *l);
	l->mask = 1023;
	l->slot = dt_xmalloc(l->mask + 1, sizeof *l->slot);
	memset(l->slot, 0xff, (l->mask + 1) * sizeof *l->slot);
	l->sym = dt_xmalloc(tr->words.len + 1, sizeof *l->sym);
	l->start = dt_xmalloc((size_t)n + 1, sizeof *l->start);
	l->len = dt_xmalloc((size_t)n + 1, sizeof *l->len);
	l->stamp = dt_xmalloc((size_t)n + 1, sizeof *l->stamp);
	for (int64_t w = 0; w < n; w++) {
		int64_t o = tr->words.off[w], e = tr->words.off[w + 1];

		l->start[w] = o;
		l->len[w] = (int32_t)(e - o);
		l->stamp[w] = -1;
		for (int64_t i = o; i < e; i++)
			l->sym[i] = byte_id[tr->words.pool[i]];
		word_pairs(l, (int32_t)w, tr->count[w]);
	}
	flush_dirty(l);
}

static void
learn_fini(struct learn *l)
{
	for (int64_t k = 0; k < l->n_pairs; k++)
		free(l->pairs[k].words);
	free(l->pairs);
	free(l->slot);
	free(l->heap);
	free(l->dirty);
	free(l->sym);
	free(l->start);
	free(l->len);
	free(l->stamp);
}

enum dt_status
dt_bpe_trainer_finish(struct dt_bpe_trainer *tr, int64_t vocab_size,
		      struct dt_bpe **out, struct dt_error *err)
{
	struct dt_bpe *b;
	struct dt_bpe_strs *tok;
	unsigned char order[256], *buf = NULL;
	int32_t byte_id[256];
	struct learn l;
	size_t cap = 0;
	enum dt_status st;

	*out = NULL;
	if (vocab_size < 256 || vocab_size > INT32_MAX)
		return dt_errorf(err, DT_ERR_USAGE, "a vocabulary of %lld: a "
				 "byte-level BPE has 256 to %d tokens",
				 (long long)vocab_size, INT32_MAX);
	if (tr->words.len > INT32_MAX)
		return dt_errorf(err, DT_ERR_USAGE, "%zu bytes of distinct "
				 "words: too many to learn from (at most %d)",
				 tr->words.len, INT32_MAX);
	b = dt_bpe_new();
	tok = dt_bpe_tokens(b);
	dt_bpe_byte_order(order);
	for (int i = 0; i < 256; i++) {
		(void)dt_bpe_strs_intern(tok, &order[i], 1, NULL);
		byte_id[order[i]] = i;
	}
	learn_init(&l, tr, byte_id);
	while (tok->n < vocab_size && l.n_heap > 0) {
		struct heap_entry e = heap_pop(&l);
		struct pair *p = &l.pairs[e.pair];
		size_t na, nb;

		if (p->done || e.count != p->count)
			continue;	/* stale */
		na = (size_t)(tok->off[p->a + 1] - tok->off[p->a]);
		nb = (size_t)(tok->off[p->b + 1] - tok->off[p->b]);
		if (na + nb > cap) {
			cap = 2 * (na + nb);
			buf = dt_xrealloc(buf, cap, 1);
		}
		memcpy(buf, tok->pool + tok->off[p->a], na);
		memcpy(buf + na, tok->pool + tok->off[p->b], nb);
		/* a string already a token (two ways to build it) keeps
		 * its id; the merge still gets its rank */
		(void)dt_bpe_merge_add(b, p->a, p->b,
				       (int32_t)dt_bpe_strs_intern(tok, buf,
								   na + nb,
								   NULL));
		merge_step(&l, tr, e.pair,
			   (int32_t)dt_bpe_strs_find(tok, buf, na + nb));
	}
	learn_fini(&l);
	free(buf);
	st = dt_bpe_ready(b, err);
	if (st != DT_OK) {
		dt_bpe_free(b);
		return st;
	}
	*out = b;
	return DT_OK;
}
