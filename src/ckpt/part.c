/* SPDX-License-Identifier: MIT */
/* part.c - one rank's own part of a checkpoint written in shards
 * (ckpt.h, dt_ckpt_load_part): the tensors, or ranges of them, and the
 * spans of the optimizer's flat arrays that the rank asks for, each read
 * by byte range from whichever file of the checkpoint holds it, so that
 * no rank reads or holds more than it keeps. Every file's header is read
 * (a few hundred bytes each) to learn what it holds; the data only where
 * asked. A tensor read whole has its CRC-32 checked; a range of one
 * cannot be (the CRC covers the whole tensor), but a file shorter or
 * longer than its manifest entry is refused before any byte of it is
 * used, naming the file, the rank and what it needed there. */
#include "ckpt/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "ckpt/ckpt_priv.h"
#include "util/alloc.h"
#include "util/endian.h"

/* One tensor file the manifest lists: its header, or why it has none. */
struct pfile {
	const struct dt_ck_file *f;	/* its manifest entry */
	char *path;			/* heap */
	struct dt_ck_header h;
	int64_t data_at;		/* the file offset of its data */
	int64_t file_size;		/* bytes on disk */
	int ok;				/* header read */
	char why[600];			/* what is wrong with it (is_bad) */
};

/* Floats [lo, hi) of a requested span that one saved span gave. */
struct hit {
	int64_t lo, hi;
};

/* Reads the header of the manifest's tensor file f in dir into p. A
 * file that is missing, is not a regular file, whose header does not
 * read or whose size is not its entry's is noted in p->why, with the
 * size and CRC-32 the manifest lists: it fails the load only if the rank
 * needs something from it (a file of the wrong size whose header reads
 * still tells what it holds, so that a rank needing none of it goes
 * on). */
static void
open_file(const char *dir, const struct dt_ck_file *f, struct pfile *p)
{
	struct dt_ck_rfile r;
	struct dt_error e;
	size_t len = strlen(dir) + strlen(f->name) + 2;
	int opened;

	memset(p, 0, sizeof *p);
	p->f = f;
	p->path = dt_xmalloc(len, 1);
	snprintf(p->path, len, "%s/%s", dir, f->name);
	dt_error_clear(&e);
	if (access(p->path, F_OK) != 0 && errno == ENOENT) {
		snprintf(p->why, sizeof p->why, "%s: missing; %s lists it with "
			 "%lld bytes, CRC-32 %08x", f->name, DT_CK_MANIFEST,
			 (long long)f->size, (unsigned)f->crc);
		return;
	}
	/* Only a regular file opens (dt_ck_ropen): anything else (a
	 * directory, a FIFO) has no size to compare, and its message says
	 * what it is. */
	opened = dt_ck_ropen(&r, p->path, f->name, 0, &e) == DT_OK;
	if (opened && dt_ck_st_read_header(&r, 1, &p->h, &e) == DT_OK) {
		p->ok = 1;
		p->data_at = r.pos;
		p->file_size = r.file_size;
		if (r.file_size != f->size)
			snprintf(p->why, sizeof p->why, "%s: %lld bytes, %s "
				 "lists %lld%s with CRC-32 %08x", f->name,
				 (long long)r.file_size, DT_CK_MANIFEST,
				 (long long)f->size, r.file_size < f->size ?
				 " (truncated)" : "", (unsigned)f->crc);
	} else if (opened && r.file_size != f->size) {
		snprintf(p->why, sizeof p->why, "%s: %lld bytes, %s lists "
			 "%lld%s with CRC-32 %08x, its header unreadable",
			 f->name, (long long)r.file_size, DT_CK_MANIFEST,
			 (long long)f->size, r.file_size < f->size ?
			 " (truncated)" : "", (unsigned)f->crc);
	} else {
		snprintf(p->why, sizeof p->why, "%.400s; %s lists it with "
			 "%lld bytes, CRC-32 %08x", e.msg, DT_CK_MANIFEST,
			 (long long)f->size, (unsigned)f->crc);
	}
	dt_ck_rclose(&r);
}

/* Whether file p is damaged (p->why says how): its header unreadable,
 * or its size not the one its manifest entry lists. */
static int
is_bad(const struct pfile *p)
{
	return !p->ok || p->file_size != p->f->size;
}

/* Room left in a message for the prefixes its callers add (the
 * checkpoint's path, model.init_from's place: dt_error_prefix takes 255
 * bytes at most) and the count of files not described. */
#define ROOM_AFTER 600

/* Appends to err's message, after sep, every damaged file of pf (n)
 * other than skip (NULL: none), each with what is wrong with it and the
 * size and CRC-32 the manifest lists, as many as the message holds; the
 * rest by name, then how many were not even named: one error tells all
 * there is to repair. Returns how many files it counted. */
static size_t
name_bad(const struct pfile *pf, size_t n, const struct pfile *skip,
	 const char *sep, struct dt_error *err)
{
	const size_t cap = sizeof err->msg - ROOM_AFTER;
	size_t len = strlen(err->msg), count = 0, by_name = 0, untold = 0;

	for (size_t i = 0; i < n; i++) {
		const char *name = pf[i].f->name;

		if (!is_bad(&pf[i]) || &pf[i] == skip)
			continue;
		if (by_name == 0 && len + strlen(sep) + strlen(pf[i].why) + 2 <
		    cap)
			len += (size_t)snprintf(err->msg + len,
						sizeof err->msg - len, "%s%s",
						count ? "; " : sep, pf[i].why);
		else if (len + strlen(name) + 32 < cap)
			len += (size_t)snprintf(err->msg + len,
						sizeof err->msg - len, "%s%s",
						by_name++ ? ", " : count ?
						"; damaged too: " : sep, name);
		else
			untold++;
		count++;
	}
	if (untold > 0)
		snprintf(err->msg + len, sizeof err->msg - len, " and %zu more",
			 untold);
	return count;
}

/* Exactly n bytes at offset off of the file at path into p. */
static enum dt_status
read_at(const char *path, const char *label, int64_t off, void *p, size_t n,
	int rank, struct dt_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	size_t got = 0;

	if (fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open (rank %d "
				 "needs it): %s", label, rank, strerror(errno));
	while (got < n) {
		ssize_t k = pread(fd, (char *)p + got, n - got,
				  (off_t)(off + (int64_t)got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = errno;

			close(fd);
			if (k == 0)
				return dt_errorf(err, DT_ERR_FORMAT, "%s: ends "
						 "at byte %lld, rank %d needs "
						 "bytes up to %lld "
						 "(truncated)", label,
						 (long long)(off +
							     (int64_t)got),
						 rank, (long long)(off +
								   (int64_t)n));
			return dt_errorf(err, DT_ERR_IO, "%s: cannot read at "
					 "byte %lld (rank %d): %s", label,
					 (long long)(off + (int64_t)got), rank,
					 strerror(e));
		}
		got += (size_t)k;
	}
	close(fd);
	return DT_OK;
}

/* Floats [a, b) of entry e of file p into dst, as host floats; the
 * tensor's CRC-32 checked when [a, b) is all of it. The file must have
 * the size its manifest entry gives. what names the request (the tensor
 * or span the rank asked for) in messages. On error *about is p: the
 * file the message speaks of; on success *about is left as it was (a
 * file read well is no failed file: an error found later, as
 * not_found's, names the damaged files itself). */
static enum dt_status
read_range(const struct pfile *p, const struct dt_ck_entry *e, int64_t a,
	   int64_t b, float *dst, const char *what, int rank,
	   const struct pfile **about, struct dt_error *err)
{
	int64_t size = (e->end - e->begin) / 4;
	int64_t off = p->data_at + e->begin + 4 * a;
	enum dt_status st = DT_OK;

	if (is_bad(p))
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: rank %d needs %s "
			       "from it (%s floats [%lld, %lld))", p->why,
			       rank, what, e->name, (long long)a,
			       (long long)b);
	else if (b > a)
		st = read_at(p->path, p->f->name, off, dst,
			     (size_t)(b - a) * 4, rank, err);
	if (st == DT_OK && b > a && a == 0 && b == size && e->has_crc &&
	    (uint32_t)crc32_z(0, (const Bytef *)dst, (size_t)size * 4) !=
	    e->crc)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: crc32 mismatch for "
			       "%s (rank %d read it)", p->f->name, e->name,
			       rank);
	if (st != DT_OK) {
		*about = p;
		return st;
	}
	if (b > a)
		dt_le_to_host(dst, 4, (size_t)(b - a));
	return DT_OK;
}

/* Nothing readable holds what the rank asked for: the files whose
 * header could not be read are the likely cause, and every damaged file
 * is named. */
static enum dt_status
not_found(const struct pfile *pf, size_t n, const char *what, int rank,
	  struct dt_error *err)
{
	for (size_t i = 0; i < n; i++)
		if (!pf[i].ok) {
			dt_errorf(err, DT_ERR_FORMAT, "rank %d needs %s, which "
				  "no readable file holds", rank, what);
			name_bad(pf, n, NULL, ": ", err);
			return DT_ERR_FORMAT;
		}
	return dt_errorf(err, DT_ERR_FORMAT, "%s: rank %d needs %s, which "
			 "no listed file holds", DT_CK_MANIFEST, rank, what);
}

static int64_t
entry_floats(const struct dt_ck_entry *e)
{
	return (e->end - e->begin) / 4;
}

/* The saved tensor t->name (in exactly one file) into t's buffer: its
 * shape checked, floats [t->lo, t->hi) read. *about as read_range
 * sets it. */
static enum dt_status
load_tensor(const struct pfile *pf, size_t n, const struct dt_ckpt_part *t,
	    int rank, const struct pfile **about, struct dt_error *err)
{
	const struct pfile *at = NULL;
	const struct dt_ck_entry *e = NULL;
	char what[DT_CKPT_NAME_MAX + 16];

	snprintf(what, sizeof what, "tensor %s", t->name);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; pf[i].ok && j < pf[i].h.n; j++) {
			if (strcmp(pf[i].h.t[j].name, t->name) != 0)
				continue;
			if (e != NULL)
				return dt_errorf(err, DT_ERR_FORMAT, "%s: "
						 "tensor %s is also in %s",
						 pf[i].f->name, t->name,
						 at->f->name);
			at = &pf[i];
			e = &pf[i].h.t[j];
		}
	if (e == NULL)
		return not_found(pf, n, what, rank, err);
	if (t->n_dims >= 0 &&
	    (t->n_dims != e->n_dims ||
	     memcmp(t->shape, e->shape,
		    (size_t)e->n_dims * sizeof e->shape[0]) != 0))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s has "
				 "another shape than the model's", at->f->name,
				 t->name);
	if (t->lo < 0 || t->hi < t->lo || t->hi > entry_floats(e))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s has %lld "
				 "floats, rank %d needs [%lld, %lld)",
				 at->f->name, t->name,
				 (long long)entry_floats(e), rank,
				 (long long)t->lo, (long long)t->hi);
	return read_range(at, e, t->lo, t->hi, t->data, what, rank, about,
			  err);
}

/* 1 when e is a span "NAME[LO:HI]" of the array name, its [lo, hi). */
static int
span_of(const struct dt_ck_entry *e, const char *name, int64_t *lo,
	int64_t *hi)
{
	size_t len;

	return dt_ck_span_parse(e->name, &len, lo, hi) &&
	       len == strlen(name) && strncmp(e->name, name, len) == 0 &&
	       e->n_dims == 1 && e->shape[0] == *hi - *lo;
}

static int
cmp_hits(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The hits (n of them) cover [lo, hi) exactly once: DT_OK, else the
 * first gap or doubly covered float into *gap. */
static int
tiled(struct hit *h, size_t n, int64_t lo, int64_t hi, int64_t *gap,
      int *twice)
{
	int64_t at = lo;

	if (n > 1)	/* h may be NULL when n is 0 */
		qsort(h, n, sizeof *h, cmp_hits);
	for (size_t i = 0; i < n; i++) {
		if (h[i].lo != at) {
			*gap = h[i].lo < at ? h[i].lo : at;
			*twice = h[i].lo < at;
			return 0;
		}
		at = h[i].hi;
	}
	*gap = at;
	*twice = 0;
	return at == hi;
}

/* Floats [s->lo, s->hi) of the flat array s->name, from every saved span
 * that meets them, into s's buffer; each float exactly once. *about as
 * read_range sets it. */
static enum dt_status
load_span(const struct pfile *pf, size_t n, const struct dt_ckpt_span *s,
	  int rank, const struct pfile **about, struct dt_error *err)
{
	struct hit *hits = NULL;
	size_t nh = 0, cap = 0;
	char what[DT_CKPT_NAME_MAX + 64];
	enum dt_status st = DT_OK;
	int64_t gap;
	int twice;

	snprintf(what, sizeof what, "%s[%lld:%lld]", s->name,
		 (long long)s->lo, (long long)s->hi);
	for (size_t i = 0; i < n && st == DT_OK; i++)
		for (size_t j = 0; pf[i].ok && j < pf[i].h.n && st == DT_OK;
		     j++) {
			const struct dt_ck_entry *e = &pf[i].h.t[j];
			int64_t a, b, lo, hi;

			if (!span_of(e, s->name, &a, &b))
				continue;
			lo = a > s->lo ? a : s->lo;
			hi = b < s->hi ? b : s->hi;
			if (lo >= hi)
				continue;
			if (nh == cap) {
				cap = cap ? 2 * cap : 8;
				hits = dt_xrealloc(hits, cap, sizeof *hits);
			}
			hits[nh].lo = lo;
			hits[nh++].hi = hi;
			st = read_range(&pf[i], e, lo - a, hi - a,
					s->data + (lo - s->lo), what, rank,
					about, err);
		}
	if (st == DT_OK && s->hi > s->lo &&
	    !tiled(hits, nh, s->lo, s->hi, &gap, &twice)) {
		snprintf(what, sizeof what, "float %lld of %s", (long long)gap,
			 s->name);
		st = twice ? dt_errorf(err, DT_ERR_FORMAT, "%s: %s is in two "
				       "spans", DT_CK_MANIFEST, what) :
			not_found(pf, n, what, rank, err);
	}
	free(hits);
	return st;
}

/* The tensor files of manifest man (of the checkpoint at path) whose
 * names start with prefix ("" for all), each open_file'd, into a heap
 * array of *n; close_files frees it. */
static struct pfile *
open_files(const char *path, const struct dt_ck_manifest *man,
	   const char *prefix, size_t *n)
{
	struct pfile *pf = dt_xcalloc(man->n + 1, sizeof *pf);

	*n = 0;
	for (size_t i = 0; i < man->n; i++)
		if (strncmp(man->f[i].name, prefix, strlen(prefix)) == 0 &&
		    dt_ck_ends_with(man->f[i].name, ".safetensors"))
			open_file(path, &man->f[i], &pf[(*n)++]);
	return pf;
}

static void
close_files(struct pfile *pf, size_t n)
{
	for (size_t i = 0; pf != NULL && i < n; i++) {
		free(pf[i].path);
		dt_ck_header_fini(&pf[i].h);
	}
	free(pf);
}

enum dt_status
dt_ckpt_load_part(const char *path, int rank,
		  const struct dt_ckpt_part *parts, size_t n_parts,
		  const struct dt_ckpt_span *spans, size_t n_spans,
		  struct dt_error *err)
{
	struct dt_ck_manifest *man;
	struct pfile *pf = NULL;
	const struct pfile *about = NULL;
	size_t n = 0;
	enum dt_status st;

	st = dt_ck_read_manifest(path, &man, err);
	if (st == DT_OK)
		pf = open_files(path, man, "", &n);
	for (size_t i = 0; st == DT_OK && i < n_parts; i++)
		st = load_tensor(pf, n, &parts[i], rank, &about, err);
	for (size_t i = 0; st == DT_OK && i < n_spans; i++)
		st = load_span(pf, n, &spans[i], rank, &about, err);
	/* A file that failed a read: the other damaged ones with it. */
	if (st != DT_OK && about != NULL)
		name_bad(pf, n, about, "; damaged too: ", err);
	close_files(pf, n);
	free(man);
	if (st != DT_OK)
		dt_error_prefix(err, "%s: ", path);
	return st;
}

enum dt_status
dt_ckpt_check_params(const char *path, const struct dt_ckpt_target *params,
		     size_t n_params, struct dt_error *err)
{
	struct dt_ck_manifest *man;
	unsigned char *seen = dt_xcalloc(n_params + 1, 1);
	struct pfile *pf = NULL;
	size_t n = 0;
	enum dt_status st;

	st = dt_ck_read_manifest(path, &man, err);
	if (st == DT_OK)
		pf = open_files(path, man, "params", &n);
	/* Every parameter file's header is needed: all that do not read
	 * are named, with any other damaged file, in one message. */
	for (size_t i = 0; st == DT_OK && i < n; i++)
		if (!pf[i].ok) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s", "");
			name_bad(pf, n, NULL, "", err);
		}
	for (size_t i = 0; st == DT_OK && i < n; i++)
		for (size_t j = 0; st == DT_OK && j < pf[i].h.n; j++) {
			size_t k;

			st = dt_ck_match_target(pf[i].f->name, &pf[i].h.t[j],
						params, n_params, seen, &k,
						err);
		}
	for (size_t j = 0; st == DT_OK && j < n_params; j++)
		if (!seen[j])
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s is "
				       "in no listed file", DT_CK_MANIFEST,
				       params[j].name);
	close_files(pf, n);
	free(seen);
	free(man);
	if (st != DT_OK)
		dt_error_prefix(err, "%s: ", path);
	return st;
}
