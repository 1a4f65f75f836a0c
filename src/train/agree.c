/* SPDX-License-Identifier: MIT */
/* agree.c - before training, every rank proves it holds rank 0's job,
 * plan, data and build: a record of each (dt_agree_record) is compared
 * byte for byte (dt_comm_check_same, lengths first), and on a mismatch the
 * lowest differing rank finds the first differing key from rank 0's record
 * and job text and tells every rank, so all stop with one message. */
#include "train/agree.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/data.h"
#include "data/fetch.h"
#include "plan/plan.h"
#include "util/alloc.h"

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "dev"
#endif

/* ---- the record ---- */

/* The files of src: its path, or each file its pattern of shards names
 * (data.h, dt_shards_expand), as "KEY[I]" keys; a pattern that does not
 * expand is one line saying why. Calls fn(f, key, path) for each. */
static void
each_file(FILE *f, const char *key, const struct dt_source *src,
	  void (*fn)(FILE *f, const char *key, const char *path, void *ctx),
	  void *ctx)
{
	struct dt_error e;
	char k[64], **names;
	int64_t n;

	if (!dt_shards_is_pattern(src->path)) {
		fn(f, key, src->path, ctx);
		return;
	}
	if (dt_shards_expand(src->path, &names, &n, &e) != DT_OK) {
		fprintf(f, "%s\t%s\n", key, e.msg);
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		snprintf(k, sizeof k, "%s[%" PRId64 "]", key, i);
		fn(f, k, names[i], ctx);
	}
	dt_shards_names_free(names, n);
}

static void
put_size(FILE *f, const char *key, const char *path, void *ctx)
{
	const struct dt_source *src = ctx;
	struct stat sb;

	fprintf(f, "%s\t", key);
	if (strncmp(path, "http://", 7) == 0 ||
	    strncmp(path, "https://", 8) == 0)
		fputs("URL", f);
	else if (stat(path, &sb) != 0)
		fprintf(f, "missing: %s", strerror(errno));
	else
		fprintf(f, "%" PRId64 " bytes", (int64_t)sb.st_size);
	if (src->sha256[0] != '\0')
		fprintf(f, ", sha256 %s", src->sha256);
	fputc('\n', f);
}

static void
put_source(FILE *f, const char *key, const struct dt_source *src)
{
	if (src->path[0] != '\0')
		each_file(f, key, src, put_size, (void *)src);
}

enum dt_status
dt_agree_record(const struct dt_job *job, int world_size, char **out,
		size_t *len, struct dt_error *err)
{
	unsigned char md[32];
	char hex[65], *buf = NULL;
	struct dt_error perr;
	struct dt_plan plan;
	enum dt_status st;
	size_t n = 0;
	FILE *f;

	*out = NULL;
	*len = 0;
	st = dt_job_fingerprint(job, md, hex, err);
	if (st != DT_OK)
		return st;
	f = open_memstream(&buf, &n);
	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "cannot build the start-up "
				 "record: %s", strerror(errno));
	fprintf(f, "build.version\t%s\n", PACKAGE_VERSION);
	fprintf(f, "world.size\t%d\n", world_size);
	fprintf(f, "job.sha256\t%s\n", hex);
	for (int i = 0; i < DT_JOB_SOURCES; i++) {
		const char *key;
		const struct dt_source *src = dt_job_source(job, i, &key);

		put_source(f, key, src);
	}
	if (dt_plan_batch(job, world_size, &plan, &perr) != DT_OK) {
		fputs("plan\trefused\n", f);
	} else {
		fprintf(f, "plan.data_parallel\t%d\n", plan.dp_size);
		fprintf(f, "plan.pipeline_parallel\t%d\n", plan.pp_size);
		fprintf(f, "plan.tensor_parallel\t%d\n", plan.tp_size);
		fprintf(f, "plan.global_batch\t%" PRId64 "\n",
			plan.global_batch);
		fprintf(f, "plan.micro_batch\t%" PRId64 "\n", plan.micro_batch);
		fprintf(f, "plan.grad_accum_steps\t%" PRId64 "\n",
			plan.grad_accum_steps);
	}
	if (fclose(f) != 0) {
		free(buf);
		return dt_errorf(err, DT_ERR_IO, "cannot build the start-up "
				 "record: %s", strerror(errno));
	}
	*out = buf;
	*len = n;
	return DT_OK;
}

/* ---- key by key ---- */

struct kv {
	char key[512];
	char *val;		/* owned */
};

struct kvs {
	struct kv *v;
	int n, cap;
};

static void
kvs_add(struct kvs *l, const char *key, const char *val, size_t val_len)
{
	struct kv *e;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = dt_xrealloc(l->v, (size_t)l->cap, sizeof *l->v);
	}
	e = &l->v[l->n++];
	snprintf(e->key, sizeof e->key, "%s", key);
	e->val = dt_xmalloc(val_len + 1, 1);
	memcpy(e->val, val, val_len);
	e->val[val_len] = '\0';
}

static void
kvs_free(struct kvs *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].val);
	free(l->v);
}

/* The items of a flow mapping "{a: 1, b: [x, y], c: \"s, t\"}" (s..e, the
 * text inside the braces), each as key prefix.a. */
static void
add_flow(struct kvs *l, const char *prefix, const char *s, const char *e)
{
	const char *item = s, *p;
	int depth = 0, inq = 0;
	char key[512];

	for (p = s; p <= e; p++) {
		if (p < e && inq) {
			if (*p == '\\' && p + 1 < e)
				p++;
			else if (*p == '"')
				inq = 0;
			continue;
		}
		if (p < e && *p == '"')
			inq = 1;
		else if (p < e && (*p == '[' || *p == '{'))
			depth++;
		else if (p < e && (*p == ']' || *p == '}'))
			depth--;
		if (p == e || (*p == ',' && depth == 0)) {
			const char *colon;

			while (item < p && *item == ' ')
				item++;
			colon = memchr(item, ':', (size_t)(p - item));
			if (colon != NULL) {
				const char *v = colon + 1;

				while (v < p && *v == ' ')
					v++;
				snprintf(key, sizeof key, "%s.%.*s", prefix,
					 (int)(colon - item), item);
				kvs_add(l, key, v, (size_t)(p - v));
			}
			item = p + 1;
		}
	}
}

/* Reads a record ("key\tvalue" lines) or a job text (dt_job_write's YAML:
 * two spaces an indent, sections as "leaf:", layers as "- {...}" lines)
 * into keys and values. */
static void
parse_keys(const char *text, struct kvs *l)
{
	char stack[8][64], key[256];
	int depth_n = 0, item = 0;
	const char *line = text;

	while (*line != '\0') {
		const char *end = strchr(line, '\n'), *s = line, *tab, *colon;
		int indent, depth, i;
		size_t o;

		if (end == NULL)
			end = line + strlen(line);
		tab = memchr(line, '\t', (size_t)(end - line));
		for (indent = 0; s < end && *s == ' '; s++)
			indent++;
		depth = indent / 2;
		if (tab != NULL) {
			snprintf(key, sizeof key, "%.*s", (int)(tab - line),
				 line);
			kvs_add(l, key, tab + 1, (size_t)(end - tab - 1));
		} else if (s < end && *s != '#') {
			if (depth > depth_n)
				depth = depth_n;
			o = 0;
			key[0] = '\0';
			for (i = 0; i < depth && o < sizeof key; i++)
				o += (size_t)snprintf(key + o, sizeof key - o,
						      "%s%s", i ? "." : "",
						      stack[i]);
			if (end - s > 3 && strncmp(s, "- {", 3) == 0) {
				char prefix[300];

				snprintf(prefix, sizeof prefix, "%s.%d", key,
					 item++);
				add_flow(l, prefix, s + 3, end - 1);
			} else if ((colon = memchr(s, ':',
						   (size_t)(end - s))) != NULL) {
				const char *v = colon + 1;
				char full[320];

				while (v < end && *v == ' ')
					v++;
				snprintf(full, sizeof full, "%s%s%.*s", key,
					 key[0] ? "." : "", (int)(colon - s), s);
				if (v == end && depth < 8) {
					snprintf(stack[depth], sizeof stack[0],
						 "%.*s", (int)(colon - s), s);
					depth_n = depth + 1;
					item = 0;
				} else {
					kvs_add(l, full, v, (size_t)(end - v));
					depth_n = depth;
				}
			}
		}
		line = *end ? end + 1 : end;
	}
}

static const char *
find_val(const struct kvs *l, const char *key)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i].key, key) == 0)
			return l->v[i].val;
	return NULL;
}

/* " (where)" for a job key: dt_job_where's text without its ": key: "
 * tail, "its default" for a value that was not given. */
static void
where_text(const struct dt_job *job, const char *key, char *buf,
	   size_t size)
{
	char w[1024], tail[600];
	size_t n, t;
	int k;

	buf[0] = '\0';
	if (job == NULL || strncmp(key, "build.", 6) == 0 ||
	    strncmp(key, "world.", 6) == 0 || strncmp(key, "plan", 4) == 0 ||
	    strcmp(key, "job.sha256") == 0)
		return;
	dt_job_where(job, key, w, sizeof w);
	k = snprintf(tail, sizeof tail, ": %s: ", key);
	if (k < 0 || (size_t)k >= sizeof tail)
		return;		/* no key is that long (the schema's) */
	n = strlen(w);
	t = strlen(tail);
	if (n >= t && strcmp(w + n - t, tail) == 0)
		w[n - t] = '\0';
	if (strcmp(w, job->path) == 0)
		snprintf(buf, size, " (its default)");
	else
		snprintf(buf, size, " (%s)", w);
}

int
dt_agree_diff(const char *mine, const char *theirs, int rank,
	      const struct dt_job *job, char *buf, size_t size)
{
	struct kvs a = { 0 }, b = { 0 };
	const char *key = NULL, *va = NULL, *vb = NULL;
	char where[1100];
	int i;

	parse_keys(mine, &a);
	parse_keys(theirs, &b);
	for (i = 0; i < a.n && key == NULL; i++) {
		vb = find_val(&b, a.v[i].key);
		if (vb == NULL || strcmp(vb, a.v[i].val) != 0) {
			key = a.v[i].key;
			va = a.v[i].val;
		}
	}
	for (i = 0; i < b.n && key == NULL; i++)
		if (find_val(&a, b.v[i].key) == NULL) {
			key = b.v[i].key;
			vb = b.v[i].val;
		}
	if (key != NULL) {
		where_text(va != NULL ? job : NULL, key, where, sizeof where);
		snprintf(buf, size, "rank %d: %s is %s%s, rank 0 has %s", rank,
			 key, va ? va : "not set", where, vb ? vb : "not set");
	} else if (size > 0) {
		buf[0] = '\0';
	}
	kvs_free(&a);
	kvs_free(&b);
	return key != NULL;
}

/* ---- the check ---- */

/* On the differing rank: the first differing key, from rank 0's record
 * and, when the jobs differ, rank 0's job text. */
static void
describe(const struct dt_job *job, int rank, const char *rec,
	 const char *rec0, const char *text0, char *buf, size_t size)
{
	struct dt_error e;
	size_t len;
	char *text;
	char line[1400];

	if (!dt_agree_diff(rec, rec0, rank, job, line, sizeof line)) {
		snprintf(buf, size, "rank %d: the start-up record differs "
			 "from rank 0's", rank);
		return;
	}
	if (strstr(line, ": job.sha256 is ") != NULL &&
	    dt_job_text(job, &text, &len, &e) == DT_OK) {
		if (!dt_agree_diff(text, text0, rank, job, buf, size))
			snprintf(buf, size, "%s", line);
		free(text);
		return;
	}
	snprintf(buf, size, "%s", line);
}

/* Collective: compares every rank's record (cmp, cmp_n; what names it)
 * with rank 0's and, when they differ, has the lowest differing rank name
 * the first differing key of the records shown (rec, rec_n: cmp or a
 * fuller form of it, line for line), from rank 0's job text too when text
 * is not NULL on every rank. Frees nothing of the caller's. */
static enum dt_status
check_records(const struct dt_job *job, struct dt_comm *comm,
	      const char *what, const char *cmp, size_t cmp_n,
	      const char *rec, size_t rec_n, const char *text, size_t text_n,
	      struct dt_error *err)
{
	char *rec0 = NULL, *text0 = NULL, *why = NULL;
	size_t n0, why_n;
	char desc[1800];
	enum dt_status st;
	int bad = -1;

	st = dt_comm_check_same(comm, what, cmp, cmp_n, &bad, err);
	if (st != DT_ERR_JOB)
		return st;
	/* They differ: rank 0's record and job text to every rank (their
	 * lengths travel first), and the lowest differing rank's finding
	 * back to all. */
	st = dt_comm_bcast_blob(comm, 0, rec, rec_n, &rec0, &n0, err);
	if (st == DT_OK && text != NULL)
		st = dt_comm_bcast_blob(comm, 0, text, text_n, &text0, &n0, err);
	if (st != DT_OK)
		goto out;
	desc[0] = '\0';
	if (dt_comm_rank(comm) == bad)
		describe(job, bad, rec, rec0, text0 != NULL ? text0 : "",
			 desc, sizeof desc);
	st = dt_comm_bcast_blob(comm, bad, desc, strlen(desc), &why, &why_n,
				err);
	if (st == DT_OK)
		st = dt_errorf(err, DT_ERR_JOB, "ranks disagree before "
			       "training: %s; every rank stops", why);
out:
	free(rec0);
	free(text0);
	free(why);
	return st;
}

enum dt_status
dt_agree_check(const struct dt_job *job, struct dt_comm *comm,
	       struct dt_error *err)
{
	char *rec = NULL, *text = NULL;
	size_t rec_n = 0, text_n = 0;
	enum dt_status st;

	st = dt_agree_record(job, dt_comm_size(comm), &rec, &rec_n, err);
	if (st == DT_OK)
		st = dt_job_text(job, &text, &text_n, err);
	st = dt_comm_agree(comm, st, err);
	if (st == DT_OK)
		st = check_records(job, comm, "the start-up record", rec, rec_n,
				   rec, rec_n, text, text_n, err);
	free(rec);
	free(text);
	return st;
}

/* put_digest's state: the first failure stops the hashing. */
struct digest_rec {
	enum dt_status st;
	struct dt_error *err;
	int with_path;		/* 0: the bytes alone, as ranks compare them */
};

static void
put_digest(FILE *f, const char *key, const char *path, void *ctx)
{
	struct digest_rec *dr = ctx;
	struct stat sb;
	char hex[65];

	if (dr->st != DT_OK)
		return;
	if (dr->with_path)
		fprintf(f, "%s\t%s: ", key, path);
	else
		fprintf(f, "%s\t", key);
	if (stat(path, &sb) != 0) {
		fprintf(f, "missing: %s\n", strerror(errno));
		return;
	}
	dr->st = dt_fetch_digest(path, NULL, hex, dr->err);
	if (dr->st == DT_OK)
		fprintf(f, "%" PRId64 " bytes, sha256 %s\n",
			(int64_t)sb.st_size, hex);
}

/* dt_agree_data_record, with or without each file's path. */
static enum dt_status
data_record(const struct dt_job *job, int with_path, char **out, size_t *len,
	    struct dt_error *err)
{
	char *buf = NULL;
	struct digest_rec dr = { DT_OK, err, with_path };
	enum dt_status st;
	size_t n = 0, i;
	FILE *f;

	*out = NULL;
	*len = 0;
	f = open_memstream(&buf, &n);
	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "cannot build the data "
				 "record: %s", strerror(errno));
	for (i = 0; i < DT_JOB_SOURCES; i++) {
		const char *key;
		const struct dt_source *src = dt_job_source(job, (int)i, &key);

		if (src->path[0] != '\0')
			each_file(f, key, src, put_digest, &dr);
	}
	st = dr.st;
	if (fclose(f) != 0 && st == DT_OK)
		st = dt_errorf(err, DT_ERR_IO, "cannot build the data record: "
			       "%s", strerror(errno));
	if (st != DT_OK) {
		free(buf);
		return st;
	}
	*out = buf;
	*len = n;
	return DT_OK;
}

enum dt_status
dt_agree_data_record(const struct dt_job *job, char **out, size_t *len,
		     struct dt_error *err)
{
	return data_record(job, 1, out, len, err);
}

enum dt_status
dt_agree_data(const struct dt_job *job, struct dt_comm *comm,
	      struct dt_error *err)
{
	int first = dt_comm_local_rank(comm) == 0;
	enum dt_status st = DT_OK;
	char *rec = NULL;
	size_t rec_n = 0;

	/* The node's first rank hashes and fills the digest cache; the
	 * others then find each unchanged file's digest there, and hash
	 * only a file that is another version on their side. The ranks
	 * compare the bytes alone: a downloaded source lies in each host's
	 * own cache, at a path of its own. */
	if (first)
		st = data_record(job, 0, &rec, &rec_n, err);
	if (dt_comm_node_barrier(comm, NULL) != DT_OK && st == DT_OK)
		st = dt_errorf(err, DT_ERR_MPI, "node barrier failed");
	if (!first)
		st = data_record(job, 0, &rec, &rec_n, err);
	st = dt_comm_agree(comm, st, err);
	if (st == DT_OK)
		st = check_records(job, comm, "the data record", rec, rec_n,
				   rec, rec_n, NULL, 0, err);
	free(rec);
	return st;
}
