/* SPDX-License-Identifier: MIT */
/* datafiles.c - the training data's single files in a checkpoint
 * (datafiles.h): each one's size and sha256, so that a resume over a file
 * with other bytes is refused as one over another shard list is. Token
 * windows are cut from the bytes and idx, npy or csv samples read by
 * index, so a changed file would silently change every sample after the
 * change. */
#include "train/datafiles.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/data.h"
#include "data/fetch.h"
#include "util/alloc.h"

/* The training sources are the first three of dt_job_source's order
 * (job.h). */
#define TRAIN_SOURCES 3

char *
dt_datafiles_record(const struct dt_job *job, struct dt_error *err)
{
	char *buf = NULL, hex[65];
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (f == NULL) {
		dt_errorf(err, DT_ERR_IO, "cannot build the data record: %s",
			  strerror(errno));
		return NULL;
	}
	for (int i = 0; i < TRAIN_SOURCES; i++) {
		const char *key;
		const struct dt_source *src = dt_job_source(job, i, &key);
		struct stat sb;

		if (src->path[0] == '\0' || dt_shards_is_pattern(src->path))
			continue;
		if (stat(src->path, &sb) != 0) {
			dt_errorf(err, DT_ERR_IO, "%s: %s", src->path,
				  strerror(errno));
			goto fail;
		}
		if (dt_fetch_digest(src->path, NULL, hex, err) != DT_OK)
			goto fail;
		fprintf(f, "%s\t%" PRId64 "\t%s\t%s\n", key,
			(int64_t)sb.st_size, hex, src->path);
	}
	if (fclose(f) == 0)
		return buf;
	dt_errorf(err, DT_ERR_IO, "cannot build the data record: %s",
		  strerror(errno));
	free(buf);
	return NULL;
fail:
	fclose(f);
	free(buf);
	return NULL;
}

/* One record line, split: key, bytes, digest, path (NUL-terminated in
 * their own buffers, cut short where they do not fit). */
struct line {
	char key[64];
	char bytes[32];
	char sha[72];
	char path[DT_JOB_PATH_MAX];
};

/* The field of text from *p to the next tab or end of line into buf
 * (size bytes); *p then past the tab. */
static void
field(const char **p, char *buf, size_t size)
{
	size_t len = strcspn(*p, "\t\n");

	snprintf(buf, size, "%.*s", (int)len, *p);
	*p += len;
	if (**p == '\t')
		(*p)++;
}

/* The line of record rec for key into *l; 0 when there is none. */
static int
find_line(const char *rec, const char *key, struct line *l)
{
	size_t klen = strlen(key);

	for (const char *p = rec; p != NULL && *p != '\0';) {
		const char *next = strchr(p, '\n');

		if (strncmp(p, key, klen) == 0 && p[klen] == '\t') {
			field(&p, l->key, sizeof l->key);
			field(&p, l->bytes, sizeof l->bytes);
			field(&p, l->sha, sizeof l->sha);
			field(&p, l->path, sizeof l->path);
			return 1;
		}
		p = next != NULL ? next + 1 : NULL;
	}
	return 0;
}

/* Whether the file under key is the same in both records (a file in
 * neither counts as the same); *w and *n are their lines, found (*hw,
 * *hn) or not. */
static int
same_file(const char *was, const char *now, const char *key, struct line *w,
	  int *hw, struct line *n, int *hn)
{
	*hw = find_line(was, key, w);
	*hn = find_line(now, key, n);
	if (*hw != *hn)
		return 0;
	return !*hw || (strcmp(w->bytes, n->bytes) == 0 &&
			strcmp(w->sha, n->sha) == 0);
}

/* The first key of record a whose file differs in record b (or is not in
 * it) into key (size bytes); 0 when there is none. */
static int
first_changed(const char *a, const char *b, char *key, size_t size)
{
	struct line w, n;
	int hw, hn;

	for (const char *p = a; *p != '\0';) {
		const char *next = strchr(p, '\n');

		field(&p, key, size);
		if (!same_file(a, b, key, &w, &hw, &n, &hn))
			return 1;
		if (next == NULL)
			break;
		p = next + 1;
	}
	return 0;
}

/* "N bytes, sha256 HEX" of line l into buf (size bytes), or "absent"
 * when have is 0. */
static void
describe(char *buf, size_t size, int have, const struct line *l)
{
	if (have)
		snprintf(buf, size, "%s bytes, sha256 %s", l->bytes, l->sha);
	else
		snprintf(buf, size, "absent");
}

enum dt_status
dt_datafiles_check(const char *ckpt, const char *was, const char *now,
		   struct dt_error *err)
{
	char key[64], was_s[160], now_s[160];
	struct line w, n;
	int hw, hn;

	if (was == NULL)
		return DT_OK;
	if (!first_changed(was, now, key, sizeof key) &&
	    !first_changed(now, was, key, sizeof key))
		return DT_OK;
	same_file(was, now, key, &w, &hw, &n, &hn);
	describe(was_s, sizeof was_s, hw, &w);
	describe(now_s, sizeof now_s, hn, &n);
	return dt_errorf(err, DT_ERR_DATA, "%s: the training data changed "
			 "since the checkpoint: %s (%s) was %s, is now %s; "
			 "resume with the data it was saved with", ckpt, key,
			 hn ? n.path : w.path, was_s, now_s);
}
