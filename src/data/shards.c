/* SPDX-License-Identifier: MIT */
/* shards.c - token data spread over many files, read where it lies: a
 * pattern expanded into the list of shards (brace ranges and lists as the
 * shell writes them, then glob(3)), llm.c's shard header (Karpathy's
 * llm.c, dev/data/data_common.py: 256 little-endian int32, magic 20240520,
 * version 1, the token count, then uint16 tokens) and nanoGPT's raw
 * uint16 files, each mapped read-only. Nothing is decoded whole: a sample
 * is one window of one shard, widened to int32 when it is gathered, so
 * the memory a run holds does not grow with the corpus; the page cache
 * keeps (and, under pressure, drops) the mapped bytes. */
#include "data/data.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "data/data_priv.h"
#include "data/fetch.h"
#include "util/alloc.h"

static long long
ll(int64_t v)
{
	return (long long)v;
}

/* ---- patterns ---------------------------------------------------------- */

struct names {
	char **v;
	int64_t n, cap;
};

static void
names_add(struct names *l, const char *s, size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = dt_xrealloc(l->v, (size_t)l->cap, sizeof *l->v);
	}
	l->v[l->n] = dt_xmalloc(len + 1, 1);
	memcpy(l->v[l->n], s, len);
	l->v[l->n][len] = '\0';
	l->n++;
}

void
dt_shards_names_free(char **names, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* Whether s is an http or https URL. */
static int
is_url(const char *s)
{
	return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

/* The part of path that names files, [*from, *from + *len): for a URL,
 * from the '/' after the host (an IPv6 host is in brackets) to the query
 * ('?', RFC 3986 section 3.4) or fragment ('#'); else the whole path. */
static void
naming_part(const char *path, const char **from, size_t *len)
{
	const char *p = path;

	if (is_url(path)) {
		p = strchr(path, ':') + 3;
		p += strcspn(p, "/?#");
		*from = p;
		*len = strcspn(p, "?#");
		return;
	}
	*from = p;
	*len = strlen(p);
}

/* The first of the characters in set within path's naming part, or
 * NULL. */
static const char *
naming_char(const char *path, const char *set)
{
	const char *from;
	size_t len, at;

	naming_part(path, &from, &len);
	at = strcspn(from, set);
	return at < len ? from + at : NULL;
}

const char *
dt_shards_url_wildcard(const char *url)
{
	return is_url(url) ? naming_char(url, "*[") : NULL;
}

int
dt_shards_is_pattern(const char *path)
{
	if (is_url(path))
		return naming_char(path, "{*[") != NULL;
	/* a file that is there is itself, whatever its name holds */
	return naming_char(path, "{*?[") != NULL && access(path, F_OK) != 0;
}

/* The '}' that closes the '{' at p (no nesting), or NULL. */
static const char *
closing(const char *p)
{
	for (p++; *p != '\0'; p++) {
		if (*p == '{')
			return NULL;
		if (*p == '}')
			return p;
	}
	return NULL;
}

static int
all_digits(const char *s, size_t n)
{
	if (n == 0 || n > 18)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static enum dt_status expand(const char *pat, const char *whole,
			     struct names *out, struct dt_error *err);

/* Expands prefix + alternative + the rest of the pattern for each
 * alternative of the brace group [open, close]. */
static enum dt_status
expand_group(const char *pat, const char *open, const char *close,
	     const char *whole, struct names *out, struct dt_error *err)
{
	size_t pre = (size_t)(open - pat), in = (size_t)(close - open - 1);
	const char *body = open + 1, *dots = strstr(body, "..");
	size_t room = strlen(pat) + 64;
	char *buf = dt_xmalloc(room, 1);
	enum dt_status st = DT_OK;

	memcpy(buf, pat, pre);
	if (dots != NULL && dots < close) {
		size_t la = (size_t)(dots - body), lb = in - la - 2;
		long long a, b;
		int width;

		if (!all_digits(body, la) || !all_digits(dots + 2, lb)) {
			free(buf);
			return dt_errorf(err, DT_ERR_DATA, "%s: byte %lld: a "
					 "range must be {FIRST..LAST} with "
					 "decimal numbers", whole,
					 ll(open - whole));
		}
		a = strtoll(body, NULL, 10);
		b = strtoll(dots + 2, NULL, 10);
		if (b < a || b - a >= DT_SHARDS_MAX) {
			free(buf);
			return dt_errorf(err, DT_ERR_DATA, "%s: byte %lld: "
					 "range {%lld..%lld} must go up and "
					 "hold at most %d numbers", whole,
					 ll(open - whole), a, b,
					 DT_SHARDS_MAX);
		}
		/* {000..127}: as wide as FIRST when it has a leading 0. */
		width = body[0] == '0' && la > 1 ? (int)la : 1;
		for (long long v = a; v <= b && st == DT_OK; v++) {
			int k = snprintf(buf + pre, 32, "%0*lld", width, v);

			snprintf(buf + pre + k, room - pre - (size_t)k, "%s",
				 close + 1);
			st = expand(buf, whole, out, err);
		}
		free(buf);
		return st;
	}
	if (memchr(body, ',', in) == NULL) {
		free(buf);
		return dt_errorf(err, DT_ERR_DATA, "%s: byte %lld: expected a "
				 "range {FIRST..LAST} or a list {a,b,...} "
				 "inside the braces", whole, ll(open - whole));
	}
	for (const char *a = body; a <= close && st == DT_OK;) {
		const char *e = a;

		while (e < close && *e != ',')
			e++;
		memcpy(buf + pre, a, (size_t)(e - a));
		snprintf(buf + pre + (size_t)(e - a),
			 room - pre - (size_t)(e - a), "%s", close + 1);
		st = expand(buf, whole, out, err);
		a = e + 1;
	}
	free(buf);
	return st;
}

/* Expands pat's first brace group, recursively; a pattern without braces
 * goes through glob(3) when it has a wildcard. */
static enum dt_status
expand(const char *pat, const char *whole, struct names *out,
       struct dt_error *err)
{
	const char *open = strchr(pat, '{'), *close;
	glob_t g;
	int rc;

	if (open != NULL) {
		close = closing(open);
		if (close == NULL)
			return dt_errorf(err, DT_ERR_DATA, "%s: byte %lld: "
					 "'{' without its '}' (braces do not "
					 "nest)", whole,
					 ll((int64_t)strlen(whole) -
					    (int64_t)strlen(pat) +
					    (open - pat)));
		return expand_group(pat, open, close, whole, out, err);
	}
	if (out->n >= DT_SHARDS_MAX)
		return dt_errorf(err, DT_ERR_DATA, "%s: expands to more than "
				 "%d files", whole, DT_SHARDS_MAX);
	if (is_url(whole)) {
		if (dt_shards_url_wildcard(pat) != NULL)
			return dt_errorf(err, DT_ERR_DATA, "%s: a URL pattern "
					 "takes brace ranges and lists only; "
					 "'*' and '[' cannot be listed over "
					 "HTTP", whole);
		names_add(out, pat, strlen(pat));
		return DT_OK;
	}
	if (strpbrk(pat, "*?[") == NULL) {
		names_add(out, pat, strlen(pat));
		return DT_OK;
	}
	rc = glob(pat, GLOB_ERR, NULL, &g);
	if (rc == GLOB_NOMATCH)
		return dt_errorf(err, DT_ERR_IO, "%s: no file matches %s",
				 whole, pat);
	if (rc != 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot list the files "
				 "of %s: %s", whole, pat, rc == GLOB_NOSPACE ?
				 "out of memory" : "read error");
	for (size_t i = 0; i < g.gl_pathc; i++)
		names_add(out, g.gl_pathv[i], strlen(g.gl_pathv[i]));
	globfree(&g);
	return DT_OK;
}

enum dt_status
dt_shards_expand(const char *pattern, char ***names, int64_t *n,
		 struct dt_error *err)
{
	struct names l = { 0 };
	enum dt_status st = expand(pattern, pattern, &l, err);

	if (st == DT_OK && l.n > DT_SHARDS_MAX)
		st = dt_errorf(err, DT_ERR_DATA, "%s: expands to %lld files, "
			       "more than %d", pattern, ll(l.n),
			       DT_SHARDS_MAX);
	if (st != DT_OK) {
		dt_shards_names_free(l.v, l.n);
		*names = NULL;
		*n = 0;
		return st;
	}
	*names = l.v;
	*n = l.n;
	return DT_OK;
}

/* ---- llm.c's header ---------------------------------------------------- */

static int64_t
le32(const unsigned char *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
			 (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

enum dt_status
dt_llmc_header_check(const char *path, const unsigned char *hdr,
		     int64_t file_bytes, int64_t *n_tokens,
		     struct dt_error *err)
{
	int64_t magic, version, count, body;

	if (file_bytes < DT_LLMC_HEADER_BYTES)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %lld: the file "
				 "ends inside the %d-byte llm.c header; is it "
				 "an llm.c token shard?", path,
				 ll(file_bytes), DT_LLMC_HEADER_BYTES);
	magic = le32(hdr);
	version = le32(hdr + 4);
	count = le32(hdr + 8);
	if (magic != DT_LLMC_MAGIC)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 0: header "
				 "field magic is %lld, expected %d (an llm.c "
				 "token shard)%s", path, ll(magic),
				 DT_LLMC_MAGIC, magic == 20240801 ?
				 "; 20240801 is llm.c's LLaMA-3 shard with "
				 "uint32 tokens, not read" : "");
	if (version != 1)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 4: header "
				 "field version is %lld, expected 1 (uint16 "
				 "tokens)", path, ll(version));
	body = (file_bytes - DT_LLMC_HEADER_BYTES) / 2;
	if (count < 0 || count != body ||
	    (file_bytes - DT_LLMC_HEADER_BYTES) % 2 != 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 8: header "
				 "field token count is %lld, but the file's "
				 "%lld bytes after the header hold %lld%s "
				 "uint16 tokens; is the file cut short?",
				 path, ll(count),
				 ll(file_bytes - DT_LLMC_HEADER_BYTES),
				 ll(body),
				 (file_bytes - DT_LLMC_HEADER_BYTES) % 2 ?
				 " and a half" : "");
	*n_tokens = count;
	return DT_OK;
}

/* ---- mapped shards ----------------------------------------------------- */

static unsigned
tok_at(const struct dt_token_shard *s, int elem_size, int64_t i)
{
	const unsigned char *p = s->tokens + i * elem_size;

	if (elem_size == 2)
		return (unsigned)p[0] | (unsigned)p[1] << 8;
	return (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 |
	       (unsigned)p[3] << 24;
}

/* Maps one shard and checks its header or length. */
static enum dt_status
map_shard(struct dt_token_shard *s, enum dt_token_file kind, int elem_size,
	  struct dt_error *err)
{
	struct stat sb;
	int64_t skip = kind == DT_TOKFILE_LLMC ? DT_LLMC_HEADER_BYTES : 0;
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	enum dt_status st = DT_OK;

	if (fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s",
				 s->path, strerror(errno));
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return dt_errorf(err, DT_ERR_IO, "%s: not a regular file",
				 s->path);
	}
	s->bytes = (int64_t)sb.st_size;
	if (s->bytes > 0) {
		s->map = mmap(NULL, (size_t)s->bytes, PROT_READ, MAP_PRIVATE,
			      fd, 0);
		if (s->map == MAP_FAILED) {
			s->map = NULL;
			st = dt_errorf(err, DT_ERR_IO, "%s: cannot map: %s",
				       s->path, strerror(errno));
		}
		s->map_len = (size_t)s->bytes;
	}
	close(fd);
	if (st != DT_OK)
		return st;
	if (s->bytes >= 2 && ((unsigned char *)s->map)[0] == 0x1f &&
	    ((unsigned char *)s->map)[1] == 0x8b && kind != DT_TOKFILE_LLMC)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 0: a gzip "
				 "file; shards are mapped as they are, so "
				 "gunzip it first", s->path);
	if (kind == DT_TOKFILE_LLMC)
		st = dt_llmc_header_check(s->path, s->map, s->bytes,
					  &s->n_tokens, err);
	else if (s->bytes == 0)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte 0: empty token "
			       "file", s->path);
	else if (s->bytes % elem_size != 0)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte %lld: the file "
			       "ends inside a token: %lld bytes is not a "
			       "multiple of %d (uint%d tokens)", s->path,
			       ll(s->bytes - s->bytes % elem_size),
			       ll(s->bytes), elem_size, 8 * elem_size);
	else
		s->n_tokens = s->bytes / elem_size;
	if (st == DT_OK)
		s->tokens = (const unsigned char *)s->map + skip;
	return st;
}

/* Every token of s below vocab (when vocab > 0) and INT32_MAX; *max is
 * the largest seen. Read in pieces, each dropped from this process's
 * mapping once read, so the scan of a large shard leaves no resident
 * trace beyond the page cache. */
static enum dt_status
scan_shard(const struct dt_token_shard *s, int elem_size, int64_t skip,
	   int64_t vocab, int64_t *max, struct dt_error *err)
{
	const int64_t piece = 1 << 20;	/* tokens */

	madvise(s->map, s->map_len, MADV_SEQUENTIAL);
	for (int64_t a = 0; a < s->n_tokens; a += piece) {
		int64_t b = a + piece < s->n_tokens ? a + piece : s->n_tokens;

		for (int64_t i = a; i < b; i++) {
			int64_t t = tok_at(s, elem_size, i);

			if ((vocab > 0 && t >= vocab) || t > INT32_MAX)
				return dt_errorf(err, DT_ERR_DATA, "%s: byte "
						 "%lld: token %lld (index "
						 "%lld) is not below %s %lld",
						 s->path,
						 ll(skip + i * elem_size),
						 ll(t), ll(i),
						 vocab > 0 ? "vocab_size" :
						 "the largest id dtrain "
						 "handles,",
						 ll(vocab > 0 ? vocab :
						    INT32_MAX));
			if (t > *max)
				*max = t;
		}
	}
	/* Whole pages only: the header page stays. */
	madvise(s->map, s->map_len, MADV_DONTNEED);
	madvise(s->map, s->map_len, MADV_RANDOM);
	return DT_OK;
}

/* A URL shard's header (llmc) or size, read with one ranged request. */
static enum dt_status
head_shard(struct dt_token_shard *s, enum dt_token_file kind, int elem_size,
	   struct dt_error *err)
{
	unsigned char hdr[DT_LLMC_HEADER_BYTES];
	size_t want = kind == DT_TOKFILE_LLMC ? sizeof hdr : 1, got = 0;
	enum dt_status st;

	s->remote = 1;
	st = dt_fetch_head(s->path, NULL, hdr, want, &got, &s->bytes, err);
	if (st != DT_OK)
		return st;
	if (kind == DT_TOKFILE_LLMC)
		return dt_llmc_header_check(s->path, hdr, s->bytes,
					    &s->n_tokens, err);
	if (s->bytes == 0 || s->bytes % elem_size != 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: the server gives "
				 "%lld bytes, not a whole number of uint%d "
				 "tokens", s->path, ll(s->bytes),
				 8 * elem_size);
	s->n_tokens = s->bytes / elem_size;
	return DT_OK;
}

static enum dt_status
open_any(char *const *paths, int64_t n_paths, enum dt_token_file kind,
	 int64_t vocab_size, int64_t context, int64_t stride, int remote,
	 struct dt_token_data *td, struct dt_error *err)
{
	int elem_size = kind == DT_TOKFILE_RAW32 ? 4 : 2;
	int64_t skip = kind == DT_TOKFILE_LLMC ? DT_LLMC_HEADER_BYTES : 0;
	int64_t max = -1;
	enum dt_status st = DT_OK;

	assert(n_paths >= 1 && context >= 1 && stride >= 0);
	memset(td, 0, sizeof *td);
	if (stride == 0)
		stride = context;
	td->elem_size = elem_size;
	td->context = context;
	td->stride = stride;
	td->shards = dt_xcalloc((size_t)n_paths, sizeof *td->shards);
	td->n_shards = n_paths;
	for (int64_t i = 0; i < n_paths && st == DT_OK; i++) {
		struct dt_token_shard *s = &td->shards[i];

		s->path = dt_xstrdup(paths[i]);
		st = remote ? head_shard(s, kind, elem_size, err) :
		     map_shard(s, kind, elem_size, err);
		if (st == DT_OK && !remote)
			st = scan_shard(s, elem_size, skip, vocab_size, &max,
					err);
		if (st != DT_OK)
			break;
		/* Windows stay inside their shard: a sample never spans
		 * two files, so each is one contiguous read. */
		s->first = td->n;
		s->n = s->n_tokens >= context + 1 ?
		       (s->n_tokens - context - 1) / stride + 1 : 0;
		td->n += s->n;
		td->n_tokens += s->n_tokens;
	}
	if (st == DT_OK && td->n == 0)
		st = dt_errorf(err, DT_ERR_DATA, "%s%s: %lld tokens in %lld "
			       "file%s, none long enough for one sample of "
			       "context %lld (needs %lld)", paths[0],
			       n_paths > 1 ? " and the rest" : "",
			       ll(td->n_tokens), ll(n_paths),
			       n_paths > 1 ? "s" : "", ll(context),
			       ll(context + 1));
	if (st != DT_OK) {
		dt_tokens_fini(td);
		return st;
	}
	td->vocab_size = vocab_size > 0 ? vocab_size : max + 1;
	td->file_kind = kind;
	return DT_OK;
}

enum dt_status
dt_tokens_open_shards(char *const *paths, int64_t n_paths,
		      enum dt_token_file kind, int64_t vocab_size,
		      int64_t context, int64_t stride,
		      struct dt_token_data *td, struct dt_error *err)
{
	return open_any(paths, n_paths, kind, vocab_size, context, stride, 0,
			td, err);
}

enum dt_status
dt_tokens_open_urls(char *const *urls, int64_t n_urls,
		    enum dt_token_file kind, int64_t vocab_size,
		    int64_t context, int64_t stride, int64_t cache_max,
		    struct dt_token_data *td, struct dt_error *err)
{
	enum dt_status st;
	int64_t big = 0;

	if (vocab_size <= 0)
		return dt_errorf(err, DT_ERR_DATA, "%s: shards over HTTP are "
				 "checked as they arrive, so the model must "
				 "give its vocab size", urls[0]);
	st = open_any(urls, n_urls, kind, vocab_size, context, stride, 1, td,
		      err);
	if (st != DT_OK)
		return st;
	td->cache_max = cache_max;
	td->rank = -1;
	/* A bound that cannot hold the largest shard can never download
	 * it: a setting of the job, refused as one. */
	for (int64_t i = 0; i < n_urls; i++)
		if (td->shards[i].bytes > td->shards[big].bytes)
			big = i;
	if (cache_max > 0 && td->shards[big].bytes > cache_max) {
		st = dt_errorf(err, DT_ERR_JOB, "%lld bytes cannot hold shard "
			       "%lld (%s) of %lld bytes; give at least %lld, "
			       "the largest shard, or 0 for no bound",
			       ll(cache_max), ll(big), td->shards[big].path,
			       ll(td->shards[big].bytes),
			       ll(td->shards[big].bytes));
		dt_tokens_fini(td);
		return st;
	}
	return DT_OK;
}

static void ahead_stop(struct dt_token_data *td);

void
dt_tokens_shards_fini(struct dt_token_data *td)
{
	ahead_stop(td);
	for (int64_t i = 0; i < td->n_shards; i++) {
		if (td->shards[i].map != NULL)
			munmap(td->shards[i].map, td->shards[i].map_len);
		free(td->shards[i].path);
		free(td->shards[i].local);
	}
	free(td->shards);
	td->shards = NULL;
	td->n_shards = 0;
}

/* ---- URL shards in the download cache ---------------------------------- */

/* The thread that fetches shards ahead of their reads (data.h,
 * dt_tokens_ahead_start): want is the list of shards to have in the
 * cache next, in the order of their first reads, gen counts the lists it
 * was given; n_stale counts (atomically) the shards it marked stale. */
#define AHEAD_NOW 256	/* shards kept for the reads under way, at most */
/* A shard fetched ahead is marked unread, for every process of the node,
 * by a modification time this far in the future; a read sets it to the
 * time of the read. An ahead thread deletes no unread file, a read's
 * eviction deletes them last; a mark left by a process that went away
 * lapses after this time. */
#define UNREAD_S 3600

struct dt_shard_ahead {
	struct dt_token_data *td;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t told;
	int64_t depth;
	int64_t *want;		/* (AHEAD_NOW + depth) shard indices */
	int64_t n_want;
	uint64_t gen;
	int stop;
	int n_stale;
};

/* A failure inside dt_tokens_gather, which returns nothing: said, with
 * the rank, the shard and what its header request gave, then the process
 * stops (data.h, dt_tokens_open_urls). */
static void
die(const struct dt_token_data *td, const struct dt_token_shard *s,
    const struct dt_error *e)
{
	char who[32] = "";

	if (td->rank >= 0)
		snprintf(who, sizeof who, "rank %d: ", td->rank);
	fprintf(stderr, "dtrain: %s%s (shard %lld of %lld, expected %lld "
		"bytes as the server gave when the run began)\n", who,
		e->msg, ll(s - td->shards), ll(td->n_shards), ll(s->bytes));
	abort();
}

/* The cache file of URL shard s into local (size bytes); *present says
 * whether it is there, *sb its stat. */
static int
cached(const struct dt_token_shard *s, char *local, size_t size,
       struct stat *sb)
{
	struct dt_fetch_source fs = { .url = s->path };
	struct dt_error e;
	int have = 0;

	if (dt_fetch_is_cached(&fs, NULL, local, size, &have, &e) != DT_OK)
		return 0;
	return have && stat(local, sb) == 0;
}

/* Takes the cache's shard lock (CACHE/shards.lock); the descriptor, or
 * -1 with err set. */
static int
lock_cache(struct dt_error *err)
{
	char dir[4096], lock[4200];
	int fd;

	if (dt_fetch_cache_dir(NULL, dir, sizeof dir, err) != DT_OK)
		return -1;
	snprintf(lock, sizeof lock, "%s/shards.lock", dir);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX) != 0) {
		dt_errorf(err, DT_ERR_IO, "%s: cannot lock: %s", lock,
			  strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int
listed(const int64_t *v, int64_t n, int64_t i)
{
	for (int64_t k = 0; k < n; k++)
		if (v[k] == i)
			return 1;
	return 0;
}

static void
unmap(struct dt_token_shard *s)
{
	__atomic_store_n(&s->held, 0, __ATOMIC_RELEASE);
	if (s->map != NULL)
		munmap(s->map, s->map_len);
	s->map = NULL;
	s->tokens = NULL;
	__atomic_store_n(&s->stale, 0, __ATOMIC_RELEASE);
}

/* Deletes the least recently used files of td's shards from the cache
 * until they and need fit in td->cache_max bytes; the shards in pins
 * (n_pins), about to be read here, and the files marked unread (by any
 * process, UNREAD_S) go last. For the reading thread (ahead 0) a deleted
 * shard this process maps is unmapped (another process's mapping stays
 * valid). For the ahead thread (ahead 1) pinned and unread shards stay
 * whatever it costs, and a deleted shard is marked stale for the reading
 * thread to unmap. Returns whether need fits now. The caller holds the
 * cache's shard lock. */
static int
evict(const struct dt_token_data *td, const struct dt_token_shard *need,
      const int64_t *pins, int64_t n_pins, int ahead)
{
	int64_t n = td->n_shards, held = 0, add = need->bytes;
	int64_t *when = dt_xcalloc((size_t)n, sizeof *when); /* (n) ns, -1 */
	const int64_t late = INT64_MAX / 2;
	time_t now = time(NULL);
	char local[4096];
	struct stat sb;

	for (int64_t i = 0; i < n; i++) {
		int keep;

		when[i] = -1;
		if (!cached(&td->shards[i], local, sizeof local, &sb))
			continue;
		held += (int64_t)sb.st_size;
		if (&td->shards[i] == need) {
			add = 0;
			continue;
		}
		keep = listed(pins, n_pins, i) || sb.st_mtim.tv_sec > now;
		if (keep && ahead)
			continue;
		when[i] = (int64_t)sb.st_mtim.tv_sec * 1000000000 +
			  sb.st_mtim.tv_nsec;
		if (keep)
			when[i] = late + when[i] % late;
	}
	while (held + add > td->cache_max) {
		int64_t old = -1;
		struct dt_token_shard *v;

		for (int64_t i = 0; i < n; i++)
			if (when[i] >= 0 && (old < 0 || when[i] < when[old]))
				old = i;
		if (old < 0)
			break;
		v = &td->shards[old];
		when[old] = -1;
		if (!cached(v, local, sizeof local, &sb) || unlink(local) != 0)
			continue;
		held -= (int64_t)sb.st_size;
		if (!ahead) {
			unmap(v);
			continue;
		}
		__atomic_store_n(&v->stale, 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&td->ahead->n_stale, 1, __ATOMIC_ACQ_REL);
	}
	free(when);
	return held + add <= td->cache_max;
}

/* Maps the downloaded file of URL shard s and checks it as a local shard
 * is checked, against what its header said when the run opened. */
static enum dt_status
map_arrived(const struct dt_token_data *td, struct dt_token_shard *s,
	    struct dt_error *err)
{
	char *url = s->path;
	int64_t count = s->n_tokens, max = -1;
	int64_t skip = td->file_kind == DT_TOKFILE_LLMC ?
		       DT_LLMC_HEADER_BYTES : 0;
	enum dt_status st;

	s->path = s->local;
	st = map_shard(s, (enum dt_token_file)td->file_kind, td->elem_size,
		       err);
	if (st == DT_OK)
		st = scan_shard(s, td->elem_size, skip, td->vocab_size, &max,
				err);
	s->path = url;
	if (st == DT_OK && s->n_tokens != count)
		st = dt_errorf(err, DT_ERR_DATA, "%s: holds %lld tokens now, "
			       "%lld when the run began; the shard changed",
			       url, ll(s->n_tokens), ll(count));
	if (st != DT_OK)
		dt_error_prefix(err, "%s: ", url);
	return st;
}

/* The shards the ahead thread is to fetch next, copied into pins (cap);
 * their count. */
static int64_t
pins_of(const struct dt_token_data *td, int64_t *pins, int64_t cap)
{
	struct dt_shard_ahead *a = td->ahead;
	int64_t n;

	if (a == NULL)
		return 0;
	pthread_mutex_lock(&a->mu);
	n = a->n_want < cap ? a->n_want : cap;
	memcpy(pins, a->want, (size_t)n * sizeof *pins);
	pthread_mutex_unlock(&a->mu);
	return n;
}

/* Makes URL shard s readable: touched when mapped already (and not
 * deleted by the ahead thread since), else mapped from the cache when it
 * is there, else fetched (the cache's lock held, room made first) and
 * mapped. */
static void
arrive(const struct dt_token_data *td, struct dt_token_shard *s)
{
	struct dt_fetch_source fs = { .url = s->path, .size = s->bytes,
				      .expect = DT_DATA_BINARY };
	int64_t pins[AHEAD_NOW + 64], n_pins;
	char local[4096];
	struct dt_error err;
	struct stat sb;
	enum dt_status st;
	int fd;

	if (s->map != NULL && __atomic_load_n(&s->stale, __ATOMIC_ACQUIRE))
		unmap(s);
	if (s->map != NULL) {
		utimensat(AT_FDCWD, s->local, NULL, 0);
		return;
	}
	/* Fetched ahead (or by another rank): mapped without the lock, which
	 * the ahead thread may hold through a download. A file deleted in
	 * between is fetched again below; one still there is bad. */
	if (cached(s, local, sizeof local, &sb)) {
		free(s->local);
		s->local = dt_xstrdup(local);
		__atomic_store_n(&s->stale, 0, __ATOMIC_RELEASE);
		st = map_arrived(td, s, &err);
		if (st == DT_OK) {
			utimensat(AT_FDCWD, local, NULL, 0);
			__atomic_store_n(&s->held, 1, __ATOMIC_RELEASE);
			return;
		}
		if (access(local, F_OK) == 0)
			die(td, s, &err);
	}
	fd = lock_cache(&err);
	if (fd < 0)
		die(td, s, &err);
	n_pins = pins_of(td, pins, AHEAD_NOW + 64);
	if (td->cache_max > 0)
		evict(td, s, pins, n_pins, 0);
	st = dt_fetch(&fs, NULL, local, sizeof local, &err);
	if (st == DT_OK) {
		free(s->local);
		s->local = dt_xstrdup(local);
		__atomic_store_n(&s->stale, 0, __ATOMIC_RELEASE);
		st = map_arrived(td, s, &err);
		utimensat(AT_FDCWD, local, NULL, 0);
		if (st == DT_OK)
			__atomic_store_n(&s->held, 1, __ATOMIC_RELEASE);
	}
	close(fd);
	if (st != DT_OK)
		die(td, s, &err);
}

/* The shard that holds window w: the last one whose first <= w (shards
 * without windows share their first with the next and are passed). */
static struct dt_token_shard *
shard_of(const struct dt_token_data *td, int64_t w)
{
	int64_t lo = 0, hi = td->n_shards - 1;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;

		if (td->shards[mid].first <= w)
			lo = mid;
		else
			hi = mid - 1;
	}
	return &td->shards[lo];
}

/* ---- fetching ahead ---------------------------------------------------- */

/* The ahead thread's work on shard i: room made without touching pins
 * or unread files, then the download, unless it is cached; either way
 * the file is marked unread. A failure is dropped: the read fetches
 * again and reports it. */
static void
fetch_one(struct dt_token_data *td, int64_t i, const int64_t *pins,
	  int64_t n_pins)
{
	struct dt_token_shard *s = &td->shards[i];
	struct dt_fetch_source fs = { .url = s->path, .size = s->bytes,
				      .expect = DT_DATA_BINARY };
	char local[4096];
	struct dt_error err;
	struct stat sb;
	struct timespec unread[2] = { { 0, UTIME_NOW },
				      { time(NULL) + UNREAD_S, 0 } };
	int fd = lock_cache(&err);

	if (fd < 0)
		return;
	if (cached(s, local, sizeof local, &sb)) {
		/* Mapped here: being read, or read already. */
		if (!__atomic_load_n(&s->held, __ATOMIC_ACQUIRE))
			utimensat(AT_FDCWD, local, unread, 0);
	} else if ((td->cache_max <= 0 || evict(td, s, pins, n_pins, 1)) &&
		   dt_fetch(&fs, NULL, local, sizeof local, &err) == DT_OK) {
		utimensat(AT_FDCWD, local, unread, 0);
	}
	close(fd);
}

static void *
ahead_run(void *arg)
{
	struct dt_shard_ahead *a = arg;
	int64_t *mine = dt_xcalloc((size_t)(a->depth + AHEAD_NOW),
				   sizeof *mine);
	uint64_t seen = 0;

	pthread_mutex_lock(&a->mu);
	for (;;) {
		int64_t n;

		while (!a->stop && a->gen == seen)
			pthread_cond_wait(&a->told, &a->mu);
		if (a->stop)
			break;
		seen = a->gen;
		n = a->n_want;
		memcpy(mine, a->want, (size_t)n * sizeof *mine);
		pthread_mutex_unlock(&a->mu);
		for (int64_t k = 0; k < n; k++)
			fetch_one(a->td, mine[k], mine, n);
		pthread_mutex_lock(&a->mu);
	}
	pthread_mutex_unlock(&a->mu);
	free(mine);
	return NULL;
}

int
dt_tokens_ahead_start(struct dt_token_data *td, int64_t depth, int rank)
{
	struct dt_shard_ahead *a;

	td->rank = rank;
	if (depth <= 0 || td->ahead != NULL || td->n_shards == 0 ||
	    !td->shards[0].remote)
		return 0;
	a = dt_xcalloc(1, sizeof *a);
	a->td = td;
	a->depth = depth;
	a->want = dt_xcalloc((size_t)(depth + AHEAD_NOW), sizeof *a->want);
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->told, NULL);
	td->ahead = a;
	if (pthread_create(&a->thread, NULL, ahead_run, a) == 0)
		return 0;
	td->ahead = NULL;
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->told);
	free(a->want);
	free(a);
	return -1;
}

void
dt_tokens_ahead(const struct dt_token_data *td, const int64_t *idx,
		int64_t n_now, int64_t count)
{
	struct dt_shard_ahead *a = td->ahead;
	int64_t now = 0;

	if (a == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	a->n_want = 0;
	for (int64_t k = 0; k < count && a->n_want - now < a->depth; k++) {
		int64_t i;

		assert(idx[k] >= 0 && idx[k] < td->n);
		if (k < n_now && now == AHEAD_NOW)
			continue;
		i = shard_of(td, idx[k]) - td->shards;
		if (listed(a->want, a->n_want, i))
			continue;
		a->want[a->n_want++] = i;
		if (k < n_now)
			now++;
	}
	a->gen++;
	pthread_cond_signal(&a->told);
	pthread_mutex_unlock(&a->mu);
}

/* Stops and joins the ahead thread (after the download it is in). */
static void
ahead_stop(struct dt_token_data *td)
{
	struct dt_shard_ahead *a = td->ahead;

	if (a == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = 1;
	pthread_cond_signal(&a->told);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thread, NULL);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->told);
	free(a->want);
	free(a);
	td->ahead = NULL;
}

/* Unmaps the shards the ahead thread deleted from the cache since the
 * last read: this is the reading thread, between reads. */
static void
sweep_stale(const struct dt_token_data *td)
{
	if (td->ahead == NULL ||
	    __atomic_exchange_n(&td->ahead->n_stale, 0, __ATOMIC_ACQ_REL) == 0)
		return;
	for (int64_t i = 0; i < td->n_shards; i++)
		if (__atomic_load_n(&td->shards[i].stale, __ATOMIC_ACQUIRE))
			unmap(&td->shards[i]);
}

void
dt_tokens_shards_gather(const struct dt_token_data *td, const int64_t *idx,
			int64_t count, int32_t *x, int32_t *y)
{
	const int64_t c = td->context;

	sweep_stale(td);
	for (int64_t k = 0; k < count; k++) {
		struct dt_token_shard *s;
		int64_t start;

		assert(idx[k] >= 0 && idx[k] < td->n);
		s = shard_of(td, idx[k]);
		if (s->remote)
			arrive(td, s);
		start = (idx[k] - s->first) * td->stride;
		for (int64_t j = 0; j < c; j++)
			x[k * c + j] = (int32_t)tok_at(s, td->elem_size,
						       start + j);
		if (y == NULL)
			continue;
		for (int64_t j = 0; j < c; j++)
			y[k * c + j] = (int32_t)tok_at(s, td->elem_size,
						       start + j + 1);
	}
}

char *
dt_tokens_shard_list(const struct dt_token_data *td)
{
	size_t cap = 1, len = 0;
	char *buf;

	for (int64_t i = 0; i < td->n_shards; i++)
		cap += strlen(td->shards[i].path) + 24;
	buf = dt_xmalloc(cap, 1);
	buf[0] = '\0';
	for (int64_t i = 0; i < td->n_shards; i++) {
		const char *base = strrchr(td->shards[i].path, '/');

		len += (size_t)snprintf(buf + len, cap - len, "%s\t%lld\n",
					base ? base + 1 : td->shards[i].path,
					ll(td->shards[i].bytes));
	}
	return buf;
}
