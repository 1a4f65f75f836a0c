/* SPDX-License-Identifier: MIT */
/* ckpt.c - checkpoint directories: atomic save (temporary directory, fsync
 * of every file, manifest last, read-back verification, rename, fsync of
 * the parent), verification and load through one reader that checks every
 * size and CRC-32, the newest-valid search, pruning and safetensors
 * export/import. The format is described in ckpt.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* renameat2 (Linux): replace a checkpoint atomically */
#endif
#include "ckpt/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt_priv.h"
#include "util/alloc.h"
#include "util/fileio.h"

#define STEP_PREFIX "step-"

static enum dt_status
join(char *buf, const char *dir, const char *name, struct dt_error *err)
{
	int n = snprintf(buf, DT_CK_PATH_MAX, "%s/%s", dir, name);

	if (n < 0 || n >= DT_CK_PATH_MAX)
		return dt_errorf(err, DT_ERR_IO, "%s/%s: path too long", dir,
				 name);
	return DT_OK;
}

/* Step of a directory named step-N in canonical form (the form dt_ckpt_path
 * writes), else -1. */
static int64_t
parse_step_name(const char *name)
{
	const char *digits = name + strlen(STEP_PREFIX);
	char canon[64];
	long long v;

	if (strncmp(name, STEP_PREFIX, strlen(STEP_PREFIX)) != 0 ||
	    strlen(digits) < 1 || strlen(digits) > 19 ||
	    strspn(digits, "0123456789") != strlen(digits))
		return -1;
	errno = 0;
	v = strtoll(digits, NULL, 10);
	if (errno != 0)
		return -1;
	snprintf(canon, sizeof canon, STEP_PREFIX "%09lld", v);
	return strcmp(canon, name) == 0 ? (int64_t)v : -1;
}

void
dt_ckpt_report_file(void *ctx, const char *line)
{
	fprintf(ctx, "dtrain: warning: %s\n", line);
	fflush(ctx);
}

static void
report(dt_ckpt_report_fn *fn, void *ctx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
report(dt_ckpt_report_fn *fn, void *ctx, const char *fmt, ...)
{
	char line[DT_CK_PATH_MAX + 256];
	va_list ap;

	if (fn == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fn(ctx, line);
}

enum dt_status
dt_ckpt_path(char *buf, size_t size, const char *ckpt_dir, int64_t step,
	     struct dt_error *err)
{
	int n = snprintf(buf, size, "%s/" STEP_PREFIX "%09" PRId64, ckpt_dir,
			 step);

	if (step < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: negative step %" PRId64,
				 ckpt_dir, step);
	if (n < 0 || (size_t)n >= size)
		return dt_errorf(err, DT_ERR_IO, "%s: checkpoint path too long",
				 ckpt_dir);
	return DT_OK;
}

/* ---- reading ------------------------------------------------------------ */

static const struct dt_ck_file *
listed(const struct dt_ck_manifest *man, const char *name)
{
	for (size_t i = 0; i < man->n; i++)
		if (strcmp(man->f[i].name, name) == 0)
			return &man->f[i];
	return NULL;
}

static enum dt_status
check_size(const struct dt_ck_rfile *r, const struct dt_ck_file *f,
	   struct dt_error *err)
{
	if (f == NULL || r->file_size == f->size)
		return DT_OK;
	return dt_errorf(err, DT_ERR_FORMAT, "%s: %lld bytes, %s lists %lld%s",
			 r->label, (long long)r->file_size, DT_CK_MANIFEST,
			 (long long)f->size,
			 r->file_size < f->size ? " (truncated)" : "");
}

static enum dt_status
check_crc(const struct dt_ck_rfile *r, const struct dt_ck_file *f,
	  struct dt_error *err)
{
	if (f == NULL || r->crc == f->crc)
		return DT_OK;
	return dt_errorf(err, DT_ERR_FORMAT, "%s: crc32 of the file is %08x, "
			 "%s lists %08x", r->label, (unsigned)r->crc,
			 DT_CK_MANIFEST, (unsigned)f->crc);
}

/* Reads a whole small file (at most DT_CK_JSON_MAX bytes) into a heap,
 * NUL-terminated *text, checked against its manifest entry f (or not). */
static enum dt_status
read_small(const char *path, const char *label, const struct dt_ck_file *f,
	   char **text, size_t *len, struct dt_error *err)
{
	struct dt_ck_rfile r;
	enum dt_status st;

	*text = NULL;
	st = dt_ck_ropen(&r, path, label, 0, err);
	if (st == DT_OK)
		st = check_size(&r, f, err);
	if (st == DT_OK && r.file_size > DT_CK_JSON_MAX)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: %lld bytes is too large "
			       "(limit %lld)", label, (long long)r.file_size,
			       (long long)DT_CK_JSON_MAX);
	if (st == DT_OK) {
		*len = (size_t)r.file_size;
		*text = dt_xmalloc(*len + 1, 1);
		st = dt_ck_read(&r, *text, *len, err);
	}
	if (st == DT_OK)
		st = dt_ck_rfinish(&r, err);
	if (st == DT_OK)
		st = check_crc(&r, f, err);
	dt_ck_rclose(&r);
	if (st != DT_OK) {
		free(*text);
		*text = NULL;
		return st;
	}
	(*text)[*len] = '\0';
	return DT_OK;
}

/* Checks a file that the manifest lists but dtrain does not read itself:
 * its size and CRC-32. */
static enum dt_status
check_other(const char *path, const struct dt_ck_file *f,
	    struct dt_error *err)
{
	unsigned char buf[1 << 16];
	struct dt_ck_rfile r;
	enum dt_status st;

	st = dt_ck_ropen(&r, path, f->name, 0, err);
	if (st == DT_OK)
		st = check_size(&r, f, err);
	for (int64_t left = r.file_size; st == DT_OK && left > 0;) {
		size_t k = left < (int64_t)sizeof buf ? (size_t)left :
			sizeof buf;

		st = dt_ck_read(&r, buf, k, err);
		left -= (int64_t)k;
	}
	if (st == DT_OK)
		st = dt_ck_rfinish(&r, err);
	if (st == DT_OK)
		st = check_crc(&r, f, err);
	dt_ck_rclose(&r);
	return st;
}

/* The common end of reading a safetensors file r whose header h was read
 * (st: the status so far): with st DT_OK, its data into dst (h->n
 * destinations, NULL entries skipped), its end and its CRC-32 checked
 * against manifest entry f; then dst, h and r are freed and closed
 * whatever st. Returns the first failure, or DT_OK. */
static enum dt_status
finish_tensors(struct dt_ck_rfile *r, struct dt_ck_header *h, float **dst,
	       const struct dt_ck_file *f, enum dt_status st,
	       struct dt_error *err)
{
	if (st == DT_OK)
		st = dt_ck_st_read_data(r, h, dst, err);
	if (st == DT_OK)
		st = dt_ck_rfinish(r, err);
	if (st == DT_OK)
		st = check_crc(r, f, err);
	free(dst);
	dt_ck_header_fini(h);
	dt_ck_rclose(r);
	return st;
}

/* Reads one safetensors file, checked against its manifest entry f (or
 * not). With match, the tensors go into targets t (n of them), which they
 * must equal in names and shapes; without, the data is only checked. */
static enum dt_status
read_tensor_file(const char *path, const char *label, int gz,
		 int require_crc, const struct dt_ck_file *f, int match,
		 const struct dt_ckpt_target *t, size_t n,
		 struct dt_error *err)
{
	struct dt_ck_rfile r;
	struct dt_ck_header h = { 0 };
	float **dst = NULL;
	enum dt_status st;

	st = dt_ck_ropen(&r, path, label, gz, err);
	if (st == DT_OK)
		st = check_size(&r, f, err);
	if (st == DT_OK)
		st = dt_ck_st_read_header(&r, require_crc, &h, err);
	if (st == DT_OK) {
		dst = dt_xcalloc(h.n ? h.n : 1, sizeof *dst);
		if (match)
			st = dt_ck_match(&h, label, t, n, dst, err);
	}
	return finish_tensors(&r, &h, dst, f, st, err);
}

struct want;
static enum dt_status read_sharded(const char *path, int64_t want_step,
				   const struct dt_ck_manifest *man,
				   struct want *w, struct dt_ckpt_meta *meta,
				   struct dt_error *err);

/* Reads and checks the checkpoint at path (see dt_ckpt_verify). want_step:
 * the step the directory must hold, or -1. With match, loads into the
 * targets; meta (may be NULL) receives the metadata. Messages are
 * "FILE: reason"; the caller adds the path. */
static enum dt_status
read_ckpt(const char *path, int64_t want_step, int match,
	  const struct dt_ckpt_target *params, size_t n_params,
	  const struct dt_ckpt_target *optim, size_t n_optim,
	  struct dt_ckpt_meta *meta, struct dt_error *err)
{
	struct dt_ck_manifest man;
	struct dt_ckpt_meta m = { 0 };
	const struct dt_ck_file *fp, *fo, *fo_gz, *fm;
	char file[DT_CK_PATH_MAX], *text;
	size_t len;
	enum dt_status st;

	if (join(file, path, DT_CK_MANIFEST, err))
		return DT_ERR_IO;
	if (access(file, F_OK) != 0 && errno == ENOENT)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: missing (the "
				 "checkpoint is incomplete)", DT_CK_MANIFEST);
	st = read_small(file, DT_CK_MANIFEST, NULL, &text, &len, err);
	if (st != DT_OK)
		return st;
	st = dt_ck_manifest_decode(text, len, &man, err);
	free(text);
	if (st != DT_OK)
		return st;
	fp = listed(&man, DT_CK_PARAMS);
	fo = listed(&man, DT_CK_OPTIM);
	fo_gz = listed(&man, DT_CK_OPTIM_GZ);
	fm = listed(&man, DT_CK_META);
	if (fo == NULL && fo_gz == NULL && man.n > 1) {
		if (match)
			return dt_errorf(err, DT_ERR_FORMAT, "written in "
					 "shards: read with dt_ckpt_load_flat");
		return read_sharded(path, want_step, &man, NULL, meta, err);
	}
	if (fp == NULL || fm == NULL || (fo == NULL) == (fo_gz == NULL))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: must list %s, %s and "
				 "one of %s and %s", DT_CK_MANIFEST,
				 DT_CK_PARAMS, DT_CK_META, DT_CK_OPTIM,
				 DT_CK_OPTIM_GZ);
	if (want_step >= 0 && man.step != want_step)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: step %" PRId64 ", but "
				 "the directory is named for step %" PRId64,
				 DT_CK_MANIFEST, man.step, want_step);

	if (join(file, path, DT_CK_META, err))
		return DT_ERR_IO;
	st = read_small(file, DT_CK_META, fm, &text, &len, err);
	if (st != DT_OK)
		return st;
	st = dt_ck_meta_decode(text, len, &m, err);
	free(text);
	if (st == DT_OK && m.step != man.step)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: step %" PRId64 ", %s "
			       "says %" PRId64, DT_CK_META, m.step,
			       DT_CK_MANIFEST, man.step);

	if (st == DT_OK)
		st = join(file, path, DT_CK_PARAMS, err);
	if (st == DT_OK)
		st = read_tensor_file(file, DT_CK_PARAMS, 0, 1, fp, match,
				      params, n_params, err);
	if (fo == NULL)
		fo = fo_gz;
	if (st == DT_OK)
		st = join(file, path, fo->name, err);
	if (st == DT_OK)
		st = read_tensor_file(file, fo->name, fo == fo_gz, 1, fo,
				      match, optim, n_optim, err);
	for (size_t i = 0; i < man.n && st == DT_OK; i++) {
		const struct dt_ck_file *f = &man.f[i];

		if (f == fp || f == fo || f == fm)
			continue;
		st = join(file, path, f->name, err);
		if (st == DT_OK)
			st = check_other(file, f, err);
	}
	if (st == DT_OK && meta != NULL)
		*meta = m;
	else
		dt_ckpt_meta_fini(&m);
	return st;
}

enum dt_status
dt_ckpt_verify(const char *path, struct dt_error *err)
{
	const char *base = strrchr(path, '/');
	enum dt_status st;

	st = read_ckpt(path, parse_step_name(base ? base + 1 : path), 0, NULL,
		       0, NULL, 0, NULL, err);
	if (st != DT_OK)
		dt_error_prefix(err, "%s: ", path);
	return st;
}

enum dt_status
dt_ckpt_load(const char *path, const struct dt_ckpt_target *params,
	     size_t n_params, const struct dt_ckpt_target *optim,
	     size_t n_optim, struct dt_ckpt_meta *meta, struct dt_error *err)
{
	const char *base = strrchr(path, '/');
	enum dt_status st;

	memset(meta, 0, sizeof *meta);
	st = read_ckpt(path, parse_step_name(base ? base + 1 : path), 1,
		       params, n_params, optim, n_optim, meta, err);
	if (st != DT_OK)
		dt_error_prefix(err, "%s: ", path);
	return st;
}

enum dt_status
dt_ckpt_read_meta(const char *path, struct dt_ckpt_meta *meta,
		  struct dt_error *err)
{
	char file[DT_CK_PATH_MAX], *text;
	size_t len;
	enum dt_status st;

	memset(meta, 0, sizeof *meta);
	if (join(file, path, DT_CK_META, err))
		return DT_ERR_IO;
	st = read_small(file, DT_CK_META, NULL, &text, &len, err);
	if (st == DT_OK) {
		st = dt_ck_meta_decode(text, len, meta, err);
		free(text);
	}
	if (st != DT_OK) {
		dt_ckpt_meta_fini(meta);
		dt_error_prefix(err, "%s: ", path);
	}
	return st;
}

enum dt_status
dt_ckpt_check_run(const char *path, const char *run_id, const char *run_dir,
		  struct dt_error *err)
{
	struct dt_ckpt_meta m;
	char file[DT_CK_PATH_MAX], *text;
	size_t len;
	enum dt_status st;

	if (run_id == NULL || run_id[0] == '\0')
		return DT_OK;
	if (join(file, path, DT_CK_META, err))
		return DT_ERR_IO;
	st = read_small(file, DT_CK_META, NULL, &text, &len, err);
	if (st == DT_OK) {
		st = dt_ck_meta_decode(text, len, &m, err);
		free(text);
	}
	if (st != DT_OK) {
		dt_error_prefix(err, "%s: ", path);
		return st;
	}
	if (m.run_id[0] != '\0' && strcmp(m.run_id, run_id) != 0)
		st = dt_errorf(err, DT_ERR_USAGE, "%s belongs to run %s (in "
			       "%s), not to run %s (in %s): two runs shared "
			       "the checkpoint directory; use that run's own "
			       "directory, or give each run its own "
			       "checkpoint.dir", path, m.run_id, m.run_dir,
			       run_id, run_dir);
	dt_ckpt_meta_fini(&m);
	return st;
}

/* ---- listing ------------------------------------------------------------ */

struct step_dir {
	int64_t step;
	char name[32];
	int not_dir;		/* a symbolic link or a file: never followed */
};

static int
cmp_steps_desc(const void *a, const void *b)
{
	const struct step_dir *x = a, *y = b;

	return (x->step < y->step) - (x->step > y->step);
}

/* The step-N entries of ckpt_dir, highest step first; those that are not
 * directories of their own are listed with not_dir set. A missing
 * ckpt_dir holds none. */
static enum dt_status
list_steps(const char *ckpt_dir, struct step_dir **out, size_t *n,
	   struct dt_error *err)
{
	DIR *d = opendir(ckpt_dir);
	struct dirent *e;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (d == NULL) {
		if (errno == ENOENT)
			return DT_OK;
		return dt_errorf(err, DT_ERR_IO, "%s: cannot list: %s",
				 ckpt_dir, strerror(errno));
	}
	while ((e = readdir(d)) != NULL) {
		int64_t step = parse_step_name(e->d_name);
		struct stat st;

		if (step < 0 || fstatat(dirfd(d), e->d_name, &st,
					AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			*out = dt_xrealloc(*out, cap, sizeof **out);
		}
		(*out)[*n].step = step;
		(*out)[*n].not_dir = !S_ISDIR(st.st_mode);
		snprintf((*out)[*n].name, sizeof (*out)[*n].name,
			 STEP_PREFIX "%09" PRId64, step);
		(*n)++;
	}
	closedir(d);
	if (*n > 1)
		qsort(*out, *n, sizeof **out, cmp_steps_desc);
	return DT_OK;
}

/* Why the step-N entry p, not a directory of its own, is no checkpoint. */
static void
not_dir_error(const char *p, struct dt_error *e)
{
	char target[DT_CK_PATH_MAX];
	ssize_t k = readlink(p, target, sizeof target - 1);

	if (k < 0) {
		dt_errorf(e, DT_ERR_FORMAT, "not a directory (a checkpoint is "
			  "a directory)");
		return;
	}
	target[k] = '\0';
	dt_errorf(e, DT_ERR_FORMAT, "a symbolic link (to %s), not followed: "
		  "a checkpoint is a directory of the run's own; move the "
		  "directory it names here instead of linking it", target);
}

enum dt_status
dt_ckpt_find_latest(const char *ckpt_dir, char *path, size_t path_size,
		    int64_t *step, dt_ckpt_report_fn *report_fn,
		    void *report_ctx, struct dt_error *err)
{
	struct step_dir *dirs;
	struct dt_error first, e;
	char p[DT_CK_PATH_MAX];
	size_t n;
	enum dt_status st;

	if (path_size > 0)
		path[0] = '\0';
	*step = -1;
	st = list_steps(ckpt_dir, &dirs, &n, err);
	if (st != DT_OK)
		return st;
	dt_error_clear(&first);
	for (size_t i = 0; i < n; i++) {
		st = join(p, ckpt_dir, dirs[i].name, err);
		if (st != DT_OK)
			break;
		dt_error_clear(&e);
		if (dirs[i].not_dir)
			not_dir_error(p, &e);
		else if (read_ckpt(p, dirs[i].step, 0, NULL, 0, NULL, 0, NULL,
				   &e) == DT_OK) {
			if (strlen(p) >= path_size) {
				st = dt_errorf(err, DT_ERR_IO, "%s: path too "
					       "long", p);
				break;
			}
			strcpy(path, p);
			*step = dirs[i].step;
			free(dirs);
			return DT_OK;
		}
		dt_error_prefix(&e, "%s: ", p);
		report(report_fn, report_ctx, "%s", e.msg);
		if (first.status == DT_OK)
			first = e;
	}
	free(dirs);
	if (st != DT_OK)
		return st;
	if (n == 0)
		return DT_OK;
	return dt_errorf(err, DT_ERR_FORMAT, "%s: none of the %zu "
			 "checkpoint%s is valid; the newest: %s", ckpt_dir, n,
			 n == 1 ? "" : "s", first.msg);
}

/* Removes the step directory p (named name in ckpt_dir): first renamed to
 * a temporary name, so a kill in the middle of the removal leaves no
 * half-deleted directory under a checkpoint's name, only a temporary one
 * that the next start removes (dt_ckpt_clean_temporaries). */
static void
remove_step(const char *ckpt_dir, const char *p, const char *name,
	    dt_ckpt_report_fn *report_fn, void *report_ctx)
{
	char tmp[DT_CK_PATH_MAX];
	int k;

	k = snprintf(tmp, sizeof tmp, "%s/.%s.tmp.prune.%ld", ckpt_dir, name,
		     (long)getpid());
	if (k < 0 || k >= (int)sizeof tmp || rename(p, tmp) != 0) {
		report(report_fn, report_ctx, "%s: cannot remove old "
		       "checkpoint: %s", p, k < 0 || k >= (int)sizeof tmp ?
		       "path too long" : strerror(errno));
		return;
	}
	if (dt_ck_rm_tree(tmp) != 0)
		report(report_fn, report_ctx, "%s: cannot remove old "
		       "checkpoint: %s", tmp, strerror(errno));
}

enum dt_status
dt_ckpt_prune(const char *ckpt_dir, int64_t newest_step, int64_t keep,
	      dt_ckpt_report_fn *report_fn, void *report_ctx,
	      struct dt_error *err)
{
	struct step_dir *dirs;
	char p[DT_CK_PATH_MAX], m[DT_CK_PATH_MAX];
	int64_t kept = 1;
	size_t n;
	enum dt_status st;

	if (keep <= 0)
		return DT_OK;
	st = list_steps(ckpt_dir, &dirs, &n, err);
	if (st != DT_OK)
		return st;
	for (size_t i = 0; i < n; i++) {
		if (dirs[i].step >= newest_step || dirs[i].not_dir ||
		    join(p, ckpt_dir, dirs[i].name, NULL) != DT_OK ||
		    join(m, p, DT_CK_MANIFEST, NULL) != DT_OK)
			continue;
		if (kept < keep && access(m, F_OK) == 0) {
			kept++;
			continue;
		}
		remove_step(ckpt_dir, p, dirs[i].name, report_fn, report_ctx);
	}
	free(dirs);
	return DT_OK;
}

/* ---- saving ------------------------------------------------------------- */

static enum dt_status
write_tensors(const char *path, int gz, const struct dt_ckpt_tensor *t,
	      size_t n, const struct dt_ck_fetch *src, struct dt_ck_file *f,
	      struct dt_error *err)
{
	struct dt_ck_wfile w;
	const char *slash = strrchr(path, '/');

	if (dt_ck_wopen(&w, path, gz, err))
		return DT_ERR_IO;
	if (dt_ck_st_write(&w, t, n, src, err)) {
		dt_ck_wabort(&w);
		return DT_ERR_IO;
	}
	if (dt_ck_wclose(&w, err))
		return DT_ERR_IO;
	snprintf(f->name, sizeof f->name, "%s", slash ? slash + 1 : path);
	f->size = w.size;
	f->crc = w.crc;
	return DT_OK;
}

/* Writes the four files of a checkpoint into the directory tmp. */
static enum dt_status
write_files(const char *tmp, const struct dt_ckpt_opts *opts,
	    const struct dt_ckpt_meta *meta,
	    const struct dt_ckpt_tensor *params, size_t n_params,
	    const struct dt_ckpt_tensor *optim, size_t n_optim,
	    struct dt_error *err)
{
	struct dt_ck_manifest man = { .step = meta->step, .n = 3 };
	struct dt_ck_file mf;
	char file[DT_CK_PATH_MAX], *text;
	int gz = opts != NULL && opts->compress_optim;
	struct dt_ck_fetch src[2];
	enum dt_status st;

	for (int k = 0; k < 2; k++) {
		src[k].fn = opts != NULL ? opts->fetch : NULL;
		src[k].ctx = opts != NULL ? opts->fetch_ctx : NULL;
		src[k].file = k;
	}
	if (join(file, tmp, DT_CK_PARAMS, err) ||
	    write_tensors(file, 0, params, n_params, &src[0], &man.f[0],
			  err) ||
	    join(file, tmp, gz ? DT_CK_OPTIM_GZ : DT_CK_OPTIM, err) ||
	    write_tensors(file, gz, optim, n_optim, &src[1], &man.f[1], err) ||
	    join(file, tmp, DT_CK_META, err))
		return DT_ERR_IO;
	text = dt_ck_meta_encode(meta);
	st = dt_ck_write_file(file, text, strlen(text), &man.f[2].size,
			      &man.f[2].crc, err);
	free(text);
	if (st != DT_OK)
		return st;
	strcpy(man.f[2].name, DT_CK_META);
	/* Last: a directory without a manifest is never a checkpoint. */
	if (join(file, tmp, DT_CK_MANIFEST, err))
		return DT_ERR_IO;
	text = dt_ck_manifest_encode(&man);
	st = dt_ck_write_file(file, text, strlen(text), &mf.size, &mf.crc,
			      err);
	free(text);
	if (st == DT_OK)
		st = dt_file_fsync_dir(tmp, err);
	return st;
}

/* Puts the finished temporary directory tmp at final. A checkpoint already
 * there is swapped out in one step where the file system can (renameat2
 * RENAME_EXCHANGE), else moved aside (to aside) first; either way it is
 * removed after. */
static enum dt_status
install(const char *ckpt_dir, const char *tmp, const char *final,
	const char *aside, const struct dt_ckpt_opts *opts,
	struct dt_error *err)
{
	dt_ckpt_report_fn *report_fn = opts ? opts->report : NULL;
	void *report_ctx = opts ? opts->report_ctx : NULL;
	struct stat sb;
	int moved = 0;

	if (lstat(final, &sb) == 0) {
#ifdef RENAME_EXCHANGE
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final,
			      RENAME_EXCHANGE) == 0) {
			if (dt_file_fsync_dir(ckpt_dir, err))
				return DT_ERR_IO;
			if (dt_ck_rm_tree(tmp) != 0)
				report(report_fn, report_ctx, "%s: cannot "
				       "remove the replaced checkpoint: %s",
				       tmp, strerror(errno));
			return DT_OK;
		}
#endif
		if (dt_ck_rm_tree(aside) != 0 || rename(final, aside) != 0)
			return dt_errorf(err, DT_ERR_IO, "%s: cannot move the "
					 "old checkpoint aside: %s", final,
					 strerror(errno));
		moved = 1;
	}
	if (rename(tmp, final) != 0) {
		int e = errno;

		if (moved)
			rename(aside, final);
		return dt_errorf(err, DT_ERR_IO, "%s: cannot rename to %s: %s",
				 tmp, final, strerror(e));
	}
	if (dt_file_fsync_dir(ckpt_dir, err))
		return DT_ERR_IO;
	if (moved && dt_ck_rm_tree(aside) != 0)
		report(report_fn, report_ctx, "%s: cannot remove the replaced "
		       "checkpoint: %s", aside, strerror(errno));
	return DT_OK;
}

static enum dt_status
make_ckpt_dir(const char *ckpt_dir, struct dt_error *err)
{
	char parent[DT_CK_PATH_MAX];
	struct stat sb;

	if (strlen(ckpt_dir) >= sizeof parent)
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", ckpt_dir);
	if (mkdir(ckpt_dir, 0777) == 0) {
		dt_file_dir_of(parent, sizeof parent, ckpt_dir);
		return dt_file_fsync_dir(parent, err);
	}
	if (errno != EEXIST)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create the "
				 "checkpoint directory: %s", ckpt_dir,
				 strerror(errno));
	if (stat(ckpt_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return dt_errorf(err, DT_ERR_IO, "%s: not a directory",
				 ckpt_dir);
	return DT_OK;
}

/* The end of a save, st its status so far: tmp read back through the
 * checker, renamed to final (install), older ones pruned (keep_last).
 * On any error tmp is removed and the status returned. */
static enum dt_status
install_verified(const char *ckpt_dir, const char *tmp, const char *final,
		 const char *aside, const struct dt_ckpt_opts *opts,
		 int64_t step, enum dt_status st, struct dt_error *err)
{
	struct dt_error e;

	if (st == DT_OK) {
		dt_error_clear(&e);
		if (read_ckpt(tmp, -1, 0, NULL, 0, NULL, 0, NULL, &e) != DT_OK)
			st = dt_errorf(err, DT_ERR_IO, "%s: the checkpoint "
				       "written does not read back: %s", tmp,
				       e.msg);
	}
	if (st == DT_OK)
		st = install(ckpt_dir, tmp, final, aside, opts, err);
	if (st != DT_OK) {
		dt_ck_rm_tree(tmp);
		return st;
	}
	if (opts != NULL && opts->keep_last > 0)
		dt_ckpt_prune(ckpt_dir, step, opts->keep_last, opts->report,
			      opts->report_ctx, NULL);
	return DT_OK;
}

enum dt_status
dt_ckpt_save(const char *ckpt_dir, const struct dt_ckpt_opts *opts,
	     const struct dt_ckpt_meta *meta,
	     const struct dt_ckpt_tensor *params, size_t n_params,
	     const struct dt_ckpt_tensor *optim, size_t n_optim,
	     struct dt_error *err)
{
	char final[DT_CK_PATH_MAX], tmp[DT_CK_PATH_MAX],
		aside[DT_CK_PATH_MAX], name[64];
	int fetched = opts != NULL && opts->fetch != NULL;
	enum dt_status st;

	if (dt_ck_check_tensors(params, n_params, 1, fetched, "parameters",
				err) ||
	    dt_ck_check_tensors(optim, n_optim, 0, fetched, "optimizer state",
				err) ||
	    dt_ck_meta_check(meta, err))
		return DT_ERR_FORMAT;
	if (make_ckpt_dir(ckpt_dir, err) ||
	    dt_ckpt_path(final, sizeof final, ckpt_dir, meta->step, err))
		return DT_ERR_IO;
	snprintf(name, sizeof name, "." STEP_PREFIX "%09" PRId64 ".tmp.%ld",
		 meta->step, (long)getpid());
	if (join(tmp, ckpt_dir, name, err))
		return DT_ERR_IO;
	snprintf(name, sizeof name, "." STEP_PREFIX "%09" PRId64 ".old.%ld",
		 meta->step, (long)getpid());
	if (join(aside, ckpt_dir, name, err))
		return DT_ERR_IO;
	/* A leftover of an earlier failed attempt by this very process. */
	dt_ck_rm_tree(tmp);
	if (mkdir(tmp, 0777) != 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s", tmp,
				 strerror(errno));
	st = write_files(tmp, opts, meta, params, n_params, optim, n_optim,
			 err);
	return install_verified(ckpt_dir, tmp, final, aside, opts, meta->step,
				st, err);
}

/* ---- single safetensors files ------------------------------------------ */

enum dt_status
dt_ckpt_export(const char *path, const struct dt_ckpt_tensor *tensors,
	       size_t n, struct dt_error *err)
{
	char tmp[DT_CK_PATH_MAX], dir[DT_CK_PATH_MAX];
	struct dt_ck_file f;
	struct dt_error e;
	enum dt_status st;

	if (dt_ck_check_tensors(tensors, n, 1, 0, path, err))
		return DT_ERR_FORMAT;
	if (dt_file_tmp_name(tmp, sizeof tmp, path, err))
		return DT_ERR_IO;
	unlink(tmp);
	st = write_tensors(tmp, 0, tensors, n, NULL, &f, err);
	dt_error_clear(&e);
	if (st == DT_OK &&
	    read_tensor_file(tmp, tmp, 0, 1, &f, 0, NULL, 0, &e) != DT_OK)
		st = dt_errorf(err, DT_ERR_IO, "the file written does not "
			       "read back: %s", e.msg);
	if (st != DT_OK) {
		unlink(tmp);
		return st;
	}
	if (dt_file_rename(tmp, path, err))
		return DT_ERR_IO;
	dt_file_dir_of(dir, sizeof dir, path);
	return dt_file_fsync_dir(dir, err);
}

enum dt_status
dt_ckpt_import(const char *path, const struct dt_ckpt_target *targets,
	       size_t n, struct dt_error *err)
{
	return read_tensor_file(path, path, 0, 0, NULL, 1, targets, n, err);
}

/* A step directory p without a manifest: renamed to p.no-manifest (or
 * p.no-manifest.K, K = 1..99, where that is taken: no step name, so
 * never read, pruned or written over), or removed when empty; said to
 * say (may be NULL) either way. */
static void
set_aside(const char *p, dt_ckpt_report_fn *say, void *report_ctx)
{
	char to[4096 + 300], line[2 * 4096 + 700];
	struct stat sb;
	int k = 0;

	snprintf(to, sizeof to, "%s.no-manifest", p);
	while (lstat(to, &sb) == 0 && ++k < 100)
		snprintf(to, sizeof to, "%s.no-manifest.%d", p, k);
	if (rmdir(p) == 0)
		snprintf(line, sizeof line, "%s: removed an empty step "
			 "directory (no %s)", p, DT_CK_MANIFEST);
	else if (k < 100 && rename(p, to) == 0)
		snprintf(line, sizeof line, "%s: no %s, so not a checkpoint; "
			 "its files set aside in %s (rename it back with its "
			 "manifest to use it, or remove it)", p,
			 DT_CK_MANIFEST, to);
	else
		snprintf(line, sizeof line, "%s: no %s, so not a checkpoint, "
			 "and cannot be set aside as %s: %s", p,
			 DT_CK_MANIFEST, to, strerror(errno));
	if (say != NULL)
		say(report_ctx, line);
}

enum dt_status
dt_ckpt_clean_temporaries(const char *ckpt_dir, dt_ckpt_report_fn *say,
			  void *report_ctx, struct dt_error *err)
{
	DIR *d = opendir(ckpt_dir);
	struct dirent *e;

	if (d == NULL) {
		if (errno == ENOENT)
			return DT_OK;
		return dt_errorf(err, DT_ERR_IO, "%s: cannot list: %s",
				 ckpt_dir, strerror(errno));
	}
	while ((e = readdir(d)) != NULL) {
		char p[4096 + 256], m[4096 + 320], line[4096 + 400];
		int temporary = strncmp(e->d_name, ".step-", 6) == 0 &&
				strstr(e->d_name, ".tmp.") != NULL;
		struct stat sb;

		if (snprintf(p, sizeof p, "%s/%s", ckpt_dir, e->d_name) >=
		    (int)sizeof p)
			continue;
		if (!temporary) {
			/* A checkpoint is renamed into place with its
			 * manifest, so a step directory without one is
			 * never a checkpoint: an older version's
			 * interrupted pruning, or a manifest lost or
			 * removed by hand. Its name must go (a new save
			 * of that step renames onto it), its files stay. */
			if (parse_step_name(e->d_name) < 0 ||
			    fstatat(dirfd(d), e->d_name, &sb,
				    AT_SYMLINK_NOFOLLOW) != 0 ||
			    !S_ISDIR(sb.st_mode) ||
			    snprintf(m, sizeof m, "%s/%s", p, DT_CK_MANIFEST) >=
			    (int)sizeof m || lstat(m, &sb) == 0)
				continue;
			set_aside(p, say, report_ctx);
			continue;
		}
		if (dt_ck_rm_tree(p) != 0 && say != NULL) {
			snprintf(line, sizeof line, "%s: cannot remove a "
				 "temporary checkpoint: %s", p,
				 strerror(errno));
			say(report_ctx, line);
		}
	}
	closedir(d);
	return DT_OK;
}

/* ---- sharded checkpoints ------------------------------------------------ */

/* What a sharded load fills: the flat arrays (optimizer state) and the
 * named tensors (parameters), each float and tensor marked once seen. */
struct want {
	const struct dt_ckpt_flat *arrays;
	size_t n_arrays;
	const struct dt_ckpt_target *targets;
	size_t n_targets;
	unsigned char **seen;	/* (n_arrays) (arrays[a].n) */
	unsigned char *seen_t;	/* (n_targets) */
};

/* Parses a span's name "ARRAY[LO:HI]" into the index of ARRAY in w's
 * arrays (-1: none) and [lo, hi). 0 when the name is not a span's. */
static int
parse_span(const char *name, const struct want *w, long *a, int64_t *lo,
	   int64_t *hi)
{
	size_t len;

	*a = -1;
	if (!dt_ck_span_parse(name, &len, lo, hi))
		return 0;
	for (size_t i = 0; w != NULL && i < w->n_arrays; i++)
		if (strlen(w->arrays[i].name) == len &&
		    strncmp(w->arrays[i].name, name, len) == 0)
			*a = (long)i;
	return 1;
}

/* One span entry e of file label: checked, marked, its destination. */
static enum dt_status
place_span(const char *label, const struct dt_ck_entry *e, struct want *w,
	   float **dst, struct dt_error *err)
{
	int64_t lo = 0, hi = 0;
	long a;

	parse_span(e->name, w, &a, &lo, &hi);
	if (e->n_dims != 1 || e->shape[0] != hi - lo)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: span %s: shape is "
				 "not (HI - LO)", label, e->name);
	if (w == NULL)
		return DT_OK;
	if (a < 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: span %s: no such "
				 "optimizer buffer here", label, e->name);
	if ((uint64_t)hi > w->arrays[a].n)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: span %s: past the "
				 "end of %s (%zu floats here); the checkpoint "
				 "is of another model", label, e->name,
				 w->arrays[a].name, w->arrays[a].n);
	for (int64_t k = lo; k < hi; k++) {
		if (w->seen[a][k])
			return dt_errorf(err, DT_ERR_FORMAT, "%s: span %s: "
					 "float %lld of %s is in two spans",
					 label, e->name, (long long)k,
					 w->arrays[a].name);
		w->seen[a][k] = 1;
	}
	*dst = w->arrays[a].data + lo;
	return DT_OK;
}

/* One named tensor entry e of file label: matched to w's targets. */
static enum dt_status
place_tensor(const char *label, const struct dt_ck_entry *e, struct want *w,
	     float **dst, struct dt_error *err)
{
	size_t j;
	enum dt_status st;

	if (w == NULL)
		return DT_OK;
	st = dt_ck_match_target(label, e, w->targets, w->n_targets, w->seen_t,
				&j, err);
	if (st == DT_OK)
		*dst = w->targets[j].data;
	return st;
}

/* A shard file shorter than the manifest says: the first tensor that lies
 * past its end, named with the file. */
static enum dt_status
truncated(const struct dt_ck_rfile *r, const struct dt_ck_header *h,
	  const struct dt_ck_file *f, struct dt_error *err)
{
	for (size_t i = 0; i < h->n; i++)
		if (r->pos + h->t[i].end > r->file_size)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: %lld bytes, "
					 "%s lists %lld (truncated): tensor "
					 "%s lies past its end", r->label,
					 (long long)r->file_size,
					 DT_CK_MANIFEST, (long long)f->size,
					 h->t[i].name);
	return check_size(r, f, err);
}

/* Reads one file of a sharded checkpoint, checked against its manifest
 * entry f; into w (NULL: only checked). */
static enum dt_status
read_shard(const char *path, const struct dt_ck_file *f, struct want *w,
	   struct dt_error *err)
{
	struct dt_ck_rfile r;
	struct dt_ck_header h = { 0 };
	float **dst = NULL;
	enum dt_status st;
	int64_t lo, hi;
	long a;

	st = dt_ck_ropen(&r, path, f->name, 0, err);
	if (st != DT_OK && access(path, F_OK) != 0 && errno == ENOENT) {
		/* A shard that never arrived or was removed: say what the
		 * manifest expected there. */
		dt_ck_rclose(&r);
		return dt_errorf(err, DT_ERR_FORMAT, "%s: missing; %s lists "
				 "it with %lld bytes, CRC-32 %08x (the "
				 "checkpoint is incomplete)", f->name,
				 DT_CK_MANIFEST, (long long)f->size,
				 (unsigned)f->crc);
	}
	if (st == DT_OK && r.file_size < 8)
		st = check_size(&r, f, err);
	if (st == DT_OK && dt_ck_st_read_header(&r, 1, &h, err) != DT_OK)
		st = r.file_size < f->size ? check_size(&r, f, err) :
			DT_ERR_FORMAT;
	if (st == DT_OK && r.file_size != f->size)
		st = truncated(&r, &h, f, err);
	if (st == DT_OK)
		dst = dt_xcalloc(h.n ? h.n : 1, sizeof *dst);
	for (size_t i = 0; st == DT_OK && i < h.n; i++)
		st = parse_span(h.t[i].name, NULL, &a, &lo, &hi) ?
			place_span(f->name, &h.t[i], w, &dst[i], err) :
			place_tensor(f->name, &h.t[i], w, &dst[i], err);
	return finish_tensors(&r, &h, dst, f, st, err);
}

/* Every float of every array and every tensor found (after every file
 * was read). */
static enum dt_status
check_covered(const struct want *w, struct dt_error *err)
{
	for (size_t a = 0; a < w->n_arrays; a++)
		for (size_t k = 0; k < w->arrays[a].n; k++)
			if (!w->seen[a][k])
				return dt_errorf(err, DT_ERR_FORMAT, "%s: "
						 "float %zu of %s is in no "
						 "file's span", DT_CK_MANIFEST,
						 k, w->arrays[a].name);
	for (size_t j = 0; j < w->n_targets; j++)
		if (!w->seen_t[j])
			return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s is "
					 "in no listed file", DT_CK_MANIFEST,
					 w->targets[j].name);
	return DT_OK;
}

/* meta.json of a sharded checkpoint, checked against its manifest. */
static enum dt_status
read_shard_meta(const char *path, int64_t want_step,
		const struct dt_ck_manifest *man, struct dt_ckpt_meta *m,
		struct dt_error *err)
{
	const struct dt_ck_file *fm = listed(man, DT_CK_META);
	char file[DT_CK_PATH_MAX], *text = NULL;
	size_t len;
	enum dt_status st;

	if (fm == NULL)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: must list %s and the "
				 "shard files", DT_CK_MANIFEST, DT_CK_META);
	if (want_step >= 0 && man->step != want_step)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: step %" PRId64 ", "
				 "but the directory is named for step %"
				 PRId64, DT_CK_MANIFEST, man->step, want_step);
	if (join(file, path, DT_CK_META, err))
		return DT_ERR_IO;
	st = read_small(file, DT_CK_META, fm, &text, &len, err);
	if (st == DT_OK)
		st = dt_ck_meta_decode(text, len, m, err);
	free(text);
	if (st == DT_OK && m->step != man->step)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: step %" PRId64 ", %s "
			       "says %" PRId64, DT_CK_META, m->step,
			       DT_CK_MANIFEST, man->step);
	return st;
}

static enum dt_status
read_sharded(const char *path, int64_t want_step,
	     const struct dt_ck_manifest *man, struct want *w,
	     struct dt_ckpt_meta *meta, struct dt_error *err)
{
	struct dt_ckpt_meta m = { 0 };
	char file[DT_CK_PATH_MAX];
	enum dt_status st;

	st = read_shard_meta(path, want_step, man, &m, err);
	for (size_t i = 0; i < man->n && st == DT_OK; i++) {
		const struct dt_ck_file *f = &man->f[i];

		if (strcmp(f->name, DT_CK_META) == 0)
			continue;
		st = join(file, path, f->name, err);
		if (st == DT_OK && dt_ck_ends_with(f->name, ".safetensors"))
			st = read_shard(file, f, w, err);
		else if (st == DT_OK)
			st = check_other(file, f, err);
	}
	if (st == DT_OK && w != NULL)
		st = check_covered(w, err);
	if (st == DT_OK && meta != NULL)
		*meta = m;
	else
		dt_ckpt_meta_fini(&m);
	return st;
}

enum dt_status
dt_ckpt_shard_begin(const char *ckpt_dir, int64_t step, char *tmp,
		    size_t size, struct dt_error *err)
{
	char name[80];

	if (make_ckpt_dir(ckpt_dir, err))
		return DT_ERR_IO;
	snprintf(name, sizeof name, "." STEP_PREFIX "%09" PRId64
		 ".tmp.shards.%ld", step, (long)getpid());
	if (snprintf(tmp, size, "%s/%s", ckpt_dir, name) >= (int)size)
		return dt_errorf(err, DT_ERR_IO, "%s: path too long",
				 ckpt_dir);
	dt_ck_rm_tree(tmp);
	if (mkdir(tmp, 0777) != 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s", tmp,
				 strerror(errno));
	return DT_OK;
}

enum dt_status
dt_ckpt_shard_write(const char *tmp, const char *name,
		    const struct dt_ckpt_tensor *t, size_t n,
		    struct dt_ckpt_shard_file *out, struct dt_error *err)
{
	char file[DT_CK_PATH_MAX];
	struct dt_ck_file f;
	struct dt_error e;

	if (strlen(name) >= sizeof out->name || strchr(name, '/') != NULL ||
	    !dt_ck_ends_with(name, ".safetensors") || strcmp(name, DT_CK_OPTIM) == 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: not a shard file's "
				 "name", name);
	if (dt_ck_check_tensors(t, n, 1, 0, name, err))
		return DT_ERR_FORMAT;
	if (join(file, tmp, name, err))
		return DT_ERR_IO;
	unlink(file);
	if (write_tensors(file, 0, t, n, NULL, &f, err))
		return DT_ERR_IO;
	dt_error_clear(&e);
	if (read_shard(file, &f, NULL, &e) != DT_OK)
		return dt_errorf(err, DT_ERR_IO, "%s: the shard written does "
				 "not read back: %s", file, e.msg);
	snprintf(out->name, sizeof out->name, "%s", f.name);
	out->size = f.size;
	out->crc = f.crc;
	return DT_OK;
}

void
dt_ckpt_shard_abort(const char *tmp)
{
	if (tmp != NULL && tmp[0] != '\0')
		dt_ck_rm_tree(tmp);
}

/* meta.json and, last, the manifest of a sharded checkpoint into tmp. */
static enum dt_status
write_shard_manifest(const char *tmp, const struct dt_ckpt_meta *meta,
		     const struct dt_ckpt_shard_file *files, size_t n_files,
		     struct dt_error *err)
{
	struct dt_ck_manifest *man = dt_xcalloc(1, sizeof *man);
	struct dt_ck_file mf;
	char file[DT_CK_PATH_MAX], *text;
	enum dt_status st;

	man->step = meta->step;
	for (size_t i = 0; i < n_files; i++) {
		snprintf(man->f[i].name, sizeof man->f[i].name, "%s",
			 files[i].name);
		man->f[i].size = files[i].size;
		man->f[i].crc = files[i].crc;
	}
	man->n = n_files + 1;
	strcpy(man->f[n_files].name, DT_CK_META);
	st = join(file, tmp, DT_CK_META, err);
	if (st == DT_OK) {
		text = dt_ck_meta_encode(meta);
		st = dt_ck_write_file(file, text, strlen(text),
				      &man->f[n_files].size,
				      &man->f[n_files].crc, err);
		free(text);
	}
	/* Last: a directory without a manifest is never a checkpoint. */
	if (st == DT_OK)
		st = join(file, tmp, DT_CK_MANIFEST, err);
	if (st == DT_OK) {
		text = dt_ck_manifest_encode(man);
		st = dt_ck_write_file(file, text, strlen(text), &mf.size,
				      &mf.crc, err);
		free(text);
	}
	free(man);
	if (st == DT_OK)
		st = dt_file_fsync_dir(tmp, err);
	return st;
}

enum dt_status
dt_ckpt_shard_finish(const char *ckpt_dir, const char *tmp,
		     const struct dt_ckpt_opts *opts,
		     const struct dt_ckpt_meta *meta,
		     const struct dt_ckpt_shard_file *files, size_t n_files,
		     struct dt_error *err)
{
	char final[DT_CK_PATH_MAX], aside[DT_CK_PATH_MAX], name[64];
	enum dt_status st = DT_OK;

	if (n_files < 1 || n_files > DT_CKPT_SHARD_FILES_MAX)
		st = dt_errorf(err, DT_ERR_FORMAT, "%zu shard files (1 to %d)",
			       n_files, DT_CKPT_SHARD_FILES_MAX);
	else if (dt_ck_meta_check(meta, err))
		st = DT_ERR_FORMAT;
	else if (dt_ckpt_path(final, sizeof final, ckpt_dir, meta->step, err))
		st = DT_ERR_IO;
	snprintf(name, sizeof name, "." STEP_PREFIX "%09" PRId64 ".old.%ld",
		 meta->step, (long)getpid());
	if (st == DT_OK && join(aside, ckpt_dir, name, err))
		st = DT_ERR_IO;
	if (st == DT_OK)
		st = write_shard_manifest(tmp, meta, files, n_files, err);
	return install_verified(ckpt_dir, tmp, final, aside, opts, meta->step,
				st, err);
}

/* The manifest of the checkpoint at path into a heap *man. */
enum dt_status
dt_ck_read_manifest(const char *path, struct dt_ck_manifest **man,
		    struct dt_error *err)
{
	char file[DT_CK_PATH_MAX], *text = NULL;
	size_t len;
	enum dt_status st;

	*man = dt_xcalloc(1, sizeof **man);
	st = join(file, path, DT_CK_MANIFEST, err);
	if (st == DT_OK)
		st = read_small(file, DT_CK_MANIFEST, NULL, &text, &len, err);
	if (st == DT_OK)
		st = dt_ck_manifest_decode(text, len, *man, err);
	free(text);
	return st;
}

int
dt_ckpt_is_sharded(const char *path)
{
	struct dt_ck_manifest *man;
	struct dt_error e;
	int sharded = 0;

	if (dt_ck_read_manifest(path, &man, &e) == DT_OK)
		sharded = man->n > 1 && listed(man, DT_CK_OPTIM) == NULL &&
			  listed(man, DT_CK_OPTIM_GZ) == NULL;
	free(man);
	return sharded;
}

enum dt_status
dt_ckpt_load_flat(const char *path, const struct dt_ckpt_target *params,
		  size_t n_params, const struct dt_ckpt_flat *arrays,
		  size_t n_arrays, struct dt_ckpt_meta *meta,
		  struct dt_error *err)
{
	const char *base = strrchr(path, '/');
	struct dt_ck_manifest *man;
	struct want w = { arrays, n_arrays, params, n_params, NULL, NULL };
	enum dt_status st;

	memset(meta, 0, sizeof *meta);
	w.seen = dt_xcalloc(n_arrays + 1, sizeof *w.seen);
	w.seen_t = dt_xcalloc(n_params + 1, 1);
	for (size_t a = 0; a < n_arrays; a++)
		w.seen[a] = dt_xcalloc(arrays[a].n + 1, 1);
	st = dt_ck_read_manifest(path, &man, err);
	if (st == DT_OK)
		st = read_sharded(path, parse_step_name(base ? base + 1 :
							 path), man, &w, meta,
				  err);
	free(man);
	for (size_t a = 0; a < n_arrays; a++)
		free(w.seen[a]);
	free(w.seen);
	free(w.seen_t);
	if (st != DT_OK)
		dt_error_prefix(err, "%s: ", path);
	return st;
}

static int
is_params_file(const char *name)
{
	return strncmp(name, "params", 6) == 0 &&
	       dt_ck_ends_with(name, ".safetensors");
}

enum dt_status
dt_ckpt_load_params(const char *path, const struct dt_ckpt_target *params,
		    size_t n_params, struct dt_error *err)
{
	struct dt_ck_manifest *man;
	struct want w = { NULL, 0, params, n_params, NULL, NULL };
	char file[DT_CK_PATH_MAX];
	enum dt_status st;

	w.seen_t = dt_xcalloc(n_params + 1, 1);
	st = dt_ck_read_manifest(path, &man, err);
	for (size_t i = 0; st == DT_OK && i < man->n; i++) {
		if (!is_params_file(man->f[i].name))
			continue;
		st = join(file, path, man->f[i].name, err);
		if (st == DT_OK)
			st = read_shard(file, &man->f[i], &w, err);
	}
	if (st == DT_OK)
		st = check_covered(&w, err);
	free(man);
	free(w.seen_t);
	if (st != DT_OK)
		dt_error_prefix(err, "%s: ", path);
	return st;
}

static int
cmp_file_names(const void *a, const void *b)
{
	const struct dt_ck_file *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

/* One parameter file being streamed into an export. */
struct src {
	struct dt_ck_rfile r;
	struct dt_ck_header h;
	const struct dt_ck_file *f;
};

/* Opens the checkpoint's parameter files (their headers read, sizes
 * checked), in name order (params.safetensors alone, or the stages in
 * order), into a heap array *out of *n. */
static enum dt_status
open_sources(const char *path, const struct dt_ck_manifest *man,
	     struct src **out, size_t *n, struct dt_error *err)
{
	const struct dt_ck_file **fs = dt_xcalloc(man->n + 1, sizeof *fs);
	struct src *s = dt_xcalloc(man->n + 1, sizeof *s);
	char file[DT_CK_PATH_MAX];
	enum dt_status st = DT_OK;
	size_t k = 0;

	for (size_t i = 0; i < man->n; i++)
		if (is_params_file(man->f[i].name))
			fs[k++] = &man->f[i];
	qsort(fs, k, sizeof *fs, cmp_file_names);
	for (*n = 0; *n < k && st == DT_OK; (*n)++) {
		s[*n].f = fs[*n];
		s[*n].r.fd = -1;
		st = join(file, path, fs[*n]->name, err);
		if (st == DT_OK)
			st = dt_ck_ropen(&s[*n].r, file, fs[*n]->name, 0, err);
		if (st == DT_OK)
			st = check_size(&s[*n].r, fs[*n], err);
		if (st == DT_OK)
			st = dt_ck_st_read_header(&s[*n].r, 1, &s[*n].h, err);
	}
	if (st == DT_OK && k == 0)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: lists no parameter "
			       "file", DT_CK_MANIFEST);
	free(fs);
	*out = s;
	return st;
}

static void
close_sources(struct src *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		dt_ck_header_fini(&s[i].h);
		dt_ck_rclose(&s[i].r);
	}
	free(s);
}

/* Copies one tensor e of source s to w in pieces, checking its CRC. */
static enum dt_status
stream_tensor(struct src *s, const struct dt_ck_entry *e,
	      struct dt_ck_wfile *w, unsigned char *buf, size_t size,
	      struct dt_error *err)
{
	size_t left = (size_t)(e->end - e->begin);
	uLong crc = 0;
	enum dt_status st = DT_OK;

	while (left > 0 && st == DT_OK) {
		size_t k = left < size ? left : size;

		st = dt_ck_read(&s->r, buf, k, err);
		if (st == DT_OK)
			st = dt_ck_write(w, buf, k, err);
		crc = crc32_z(crc, buf, k);
		left -= k;
	}
	if (st == DT_OK && (uint32_t)crc != e->crc)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: crc32 mismatch for %s",
			       s->f->name, e->name);
	return st;
}

/* 1 when source x holds a tensor named name. */
static int
holds(const struct src *x, const char *name)
{
	for (size_t b = 0; b < x->h.n; b++)
		if (strcmp(x->h.t[b].name, name) == 0)
			return 1;
	return 0;
}

/* Every tensor name in at most one of the n sources (the reader,
 * place_tensor, refuses the same): else the one header would list a
 * name twice and describe other bytes than the file holds. */
static enum dt_status
check_unique(const struct src *s, size_t n, struct dt_error *err)
{
	for (size_t i = 0; i < n; i++)
		for (size_t a = 0; a < s[i].h.n; a++)
			for (size_t j = i + 1; j < n; j++)
				if (holds(&s[j], s[i].h.t[a].name))
					return dt_errorf(err, DT_ERR_FORMAT,
							 "%s and %s: both "
							 "hold tensor %s",
							 s[i].f->name,
							 s[j].f->name,
							 s[i].h.t[a].name);
	return DT_OK;
}

/* The header and then every tensor of the sources, in order, into w. */
static enum dt_status
stream_export(struct src *s, size_t n, struct dt_ck_wfile *w,
	      struct dt_error *err)
{
	size_t total = 0, k = 0;
	struct dt_ck_entry *e;
	unsigned char *buf;
	enum dt_status st;

	st = check_unique(s, n, err);
	if (st != DT_OK)
		return st;
	for (size_t i = 0; i < n; i++)
		total += s[i].h.n;
	e = dt_xcalloc(total + 1, sizeof *e);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < s[i].h.n; j++)
			e[k++] = s[i].h.t[j];
	st = dt_ck_st_write_header(w, e, total, err);
	free(e);
	buf = dt_xmalloc(1 << 16, 1);
	for (size_t i = 0; i < n && st == DT_OK; i++) {
		for (size_t j = 0; j < s[i].h.n && st == DT_OK; j++)
			st = stream_tensor(&s[i], &s[i].h.t[j], w, buf,
					   1 << 16, err);
		if (st == DT_OK)
			st = dt_ck_rfinish(&s[i].r, err);
		if (st == DT_OK)
			st = check_crc(&s[i].r, s[i].f, err);
	}
	free(buf);
	return st;
}

enum dt_status
dt_ckpt_export_ckpt(const char *path, const char *out, struct dt_error *err)
{
	char tmp[DT_CK_PATH_MAX], dir[DT_CK_PATH_MAX];
	struct dt_ck_manifest *man;
	struct dt_ck_wfile w;
	struct src *s = NULL;
	size_t n = 0;
	enum dt_status st;

	st = dt_ck_read_manifest(path, &man, err);
	if (st == DT_OK)
		st = open_sources(path, man, &s, &n, err);
	if (st == DT_OK && dt_file_tmp_name(tmp, sizeof tmp, out, err))
		st = DT_ERR_IO;
	if (st == DT_OK) {
		unlink(tmp);
		st = dt_ck_wopen(&w, tmp, 0, err);
		if (st == DT_OK) {
			st = stream_export(s, n, &w, err);
			if (st != DT_OK)
				dt_ck_wabort(&w);
			else
				st = dt_ck_wclose(&w, err);
		}
		if (st == DT_OK)
			st = dt_file_rename(tmp, out, err);
		if (st != DT_OK)
			unlink(tmp);
	}
	close_sources(s, n);
	free(man);
	if (st != DT_OK) {
		dt_error_prefix(err, "%s: ", path);
		return st;
	}
	dt_file_dir_of(dir, sizeof dir, out);
	return dt_file_fsync_dir(dir, err);
}
