/* SPDX-License-Identifier: MIT */
/* digest.c - the sha256 of a data file, hashed once per file version and
 * node (see fetch.h, dt_fetch_digest).
 *
 * A large file (tens of GB of tokens) takes minutes to hash, and every run
 * must know what each rank read. The digest is therefore kept in
 * CACHE/sha256/, one small file per file version, named by the sha256 of a
 * key that identifies the version on this node: the host name, the path,
 * the device and inode, the size, and the modification and change times
 * to the nanosecond. Any write to the file moves its change time (which no
 * program can set back), so a stale entry is never found; a file that
 * changes while it is hashed is not recorded. Entries are replaced
 * atomically (util/fileio.h), and one that cannot be read or written only
 * costs a hash. */
#include "data/fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "data/data_priv.h"
#include "util/fileio.h"

/* The first line of an entry: its format. */
#define DIGEST_MAGIC "dtrain-digest 1"

/* The key of path's current version into key (size bytes); -1 when path
 * cannot be looked at (then it is hashed and not cached). */
static int
version_key(const char *path, const struct stat *sb, char *key, size_t size)
{
	char host[256] = "", real[PATH_MAX];
	int n;

	if (gethostname(host, sizeof host - 1) != 0)
		host[0] = '\0';
	if (realpath(path, real) == NULL)
		return -1;
	n = snprintf(key, size, "%s\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64
		     "\t%lld.%09ld\t%lld.%09ld", host, real,
		     (uint64_t)sb->st_dev, (uint64_t)sb->st_ino,
		     (int64_t)sb->st_size, (long long)sb->st_mtim.tv_sec,
		     sb->st_mtim.tv_nsec, (long long)sb->st_ctim.tv_sec,
		     sb->st_ctim.tv_nsec);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* CACHE/sha256/NAME for key into file (size bytes), the directory made;
 * -1 when there is no usable cache directory. */
static int
entry_path(const char *key, const struct dt_fetch_opts *o, char *file,
	   size_t size)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char dir[PATH_MAX], name[33];
	struct dt_error e;
	int n;

	if (dt_fetch_cache_path(o, dir, sizeof dir, &e) != DT_OK)
		return -1;
	if (strlen(dir) + 8 >= sizeof dir)
		return -1;
	strcat(dir, "/sha256");
	if (dt_fetch_make_dirs(dir, &e) != DT_OK)
		return -1;
	if (EVP_Digest(key, strlen(key), md, &len, EVP_sha256(), NULL) != 1)
		return -1;
	for (int i = 0; i < 16; i++) {
		name[2 * i] = digits[md[i] >> 4];
		name[2 * i + 1] = digits[md[i] & 15];
	}
	name[32] = '\0';
	n = snprintf(file, size, "%s/%s", dir, name);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The digest recorded in entry file for key, into hex; -1 if there is
 * none (no file, another key, a malformed entry). */
static int
entry_read(const char *file, const char *key, char hex[65])
{
	char buf[8192];
	size_t klen = strlen(key), mlen = strlen(DIGEST_MAGIC);
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0 || (size_t)n != mlen + klen + 64 + 3)
		return -1;
	buf[n] = '\0';
	if (memcmp(buf, DIGEST_MAGIC "\n", mlen + 1) != 0 ||
	    memcmp(buf + mlen + 1, key, klen) != 0 ||
	    buf[mlen + 1 + klen] != '\n' || buf[n - 1] != '\n')
		return -1;
	for (int i = 0; i < 64; i++) {
		char c = buf[mlen + klen + 2 + i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -1;
		hex[i] = c;
	}
	hex[64] = '\0';
	return 0;
}

struct entry {
	const char *key;
	const char *hex;
};

static enum dt_status
entry_fill(FILE *out, void *ctx, struct dt_error *err)
{
	const struct entry *e = ctx;

	(void)err;
	fprintf(out, "%s\n%s\n%s\n", DIGEST_MAGIC, e->key, e->hex);
	return DT_OK;
}

static int
same_version(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

enum dt_status
dt_fetch_digest(const char *path, const struct dt_fetch_opts *opts,
		char hex[65], struct dt_error *err)
{
	struct dt_fetch_opts defaults;
	struct stat before, after;
	char key[PATH_MAX + 512], file[PATH_MAX + 64], got[65];
	struct entry e = { key, got };
	struct dt_error ignored;
	enum dt_status st;
	int cacheable;

	if (opts == NULL) {
		dt_fetch_opts_init(&defaults);
		opts = &defaults;
	}
	if (stat(path, &before) != 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot stat: %s", path,
				 strerror(errno));
	cacheable = S_ISREG(before.st_mode) &&
		    version_key(path, &before, key, sizeof key) == 0 &&
		    entry_path(key, opts, file, sizeof file) == 0;
	if (cacheable && !opts->refresh && entry_read(file, key, got) == 0) {
		memcpy(hex, got, 65);
		return DT_OK;
	}
	st = dt_sha256_file(path, got, err);
	if (st != DT_OK)
		return st;
	/* Recorded only for the version that was hashed from end to end. */
	if (cacheable && stat(path, &after) == 0 &&
	    same_version(&before, &after))
		(void)dt_file_write_atomic(file, entry_fill, &e, &ignored);
	memcpy(hex, got, 65);
	return DT_OK;
}
