/* SPDX-License-Identifier: MIT */
/* blob.c - a whole file in memory, for the readers that want one (NPY,
 * CSV, tokens, text): inflated through zlib when it is gzip, mapped
 * read-only when the caller can use the file's bytes as they are, read
 * otherwise. As in idx.c, memory grows with the data that arrives, and
 * zlib's error state is checked after every short read, because a cut or
 * corrupt gzip stream shows there and not in the byte count. */
#include "data/data_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/alloc.h"
#include "util/gz.h"
#include "util/meter.h"
#include "util/sysmem.h"

/* Bytes asked of gzread at once (it takes an unsigned count). */
#define READ_CHUNK ((size_t)1 << 20)
/* What a corrupt stream's message advises. */
#define FIX "fetch the file again"

/* Reads all of fd (which it takes over) through zlib; hint: the file's
 * size + 1, the bytes of progress (compressed ones for gzip). */
static enum dt_status
read_gz(int fd, const char *path, size_t hint, struct dt_blob *b,
	struct dt_error *err)
{
	gzFile f;
	size_t cap = hint < 4096 ? 4096 : hint;
	unsigned char *buf;
	enum dt_status st = DT_OK;
	const char *bound = "node";
	int64_t avail = INT64_MAX;

	/* What a gzip stream inflates to is the sender's choice (a few MB
	 * can expand a thousandfold): stop at the memory there is, with a
	 * message, instead of an abort when an allocation fails. */
	if (dt_sysmem_available(&avail, &bound) != 0)
		avail = INT64_MAX;

	if (cap > ((size_t)64 << 20))
		cap = (size_t)64 << 20;
	errno = 0;
	f = gzdopen(fd, "rb");
	if (f == NULL) {
		close(fd);
		dt_gz_oom(path);
	}
	gzbuffer(f, 1 << 17);
	buf = dt_xmalloc(cap, 1);
	dt_meter_begin("read", path, (int64_t)hint - 1);
	for (;;) {
		size_t want = cap - b->n;
		int got;

		if (want == 0) {
			if ((int64_t)cap > avail / 2) {
				st = dt_errorf(err, DT_ERR_DATA, "%s: inflates "
					       "to more than %zu bytes, past "
					       "the %lld bytes of memory this "
					       "%s has free (a gzip bomb, or "
					       "data too large for this "
					       "machine)", path, b->n,
					       (long long)avail, bound);
				break;
			}
			cap *= 2;
			buf = dt_xrealloc(buf, cap, 1);
			want = cap - b->n;
		}
		if (want > READ_CHUNK)
			want = READ_CHUNK;
		got = gzread(f, buf + b->n, (unsigned)want);
		if (got < 0) {
			st = dt_gz_read_status(f, path, (int64_t)b->n, errno,
					       FIX, err);
			break;
		}
		b->n += (size_t)got;
		dt_meter_update((int64_t)gzoffset(f));
		if ((size_t)got < want) {
			st = dt_gz_read_status(f, path, (int64_t)b->n, errno,
					       FIX, err);
			if (st != DT_OK || got == 0)
				break;
		}
	}
	dt_meter_end();
	st = dt_gz_close(f, path, st, err);
	if (st != DT_OK) {
		free(buf);
		memset(b, 0, sizeof *b);
		return st;
	}
	if (b->n == 0) {
		free(buf);
		buf = NULL;
	}
	b->p = buf;
	return DT_OK;
}

enum dt_status
dt_blob_read(const char *path, int may_map, struct dt_blob *b,
	     struct dt_error *err)
{
	unsigned char magic[2];
	struct stat sb;
	ssize_t got;
	int fd;

	memset(b, 0, sizeof *b);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	if (fstat(fd, &sb) != 0) {
		int e = errno;

		close(fd);
		return dt_errorf(err, DT_ERR_IO, "%s: cannot stat: %s", path,
				 strerror(e));
	}
	if (S_ISDIR(sb.st_mode)) {
		close(fd);
		return dt_errorf(err, DT_ERR_IO, "%s: is a directory, expected "
				 "a file", path);
	}
	got = S_ISREG(sb.st_mode) ? pread(fd, magic, 2, 0) : 0;
	if (got < 0) {
		int e = errno;

		close(fd);
		return dt_errorf(err, DT_ERR_IO, "%s: byte 0: read failed: %s",
				 path, strerror(e));
	}
	if (!may_map || !S_ISREG(sb.st_mode) || sb.st_size == 0 ||
	    (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b))
		return read_gz(fd, path, (size_t)sb.st_size + 1, b, err);

	b->p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (b->p == MAP_FAILED) {
		/* Some filesystems cannot map; reading still works. */
		b->p = NULL;
		return read_gz(fd, path, (size_t)sb.st_size + 1, b, err);
	}
	close(fd);
	b->n = (size_t)sb.st_size;
	b->mapped = 1;
	return DT_OK;
}

void
dt_blob_fini(struct dt_blob *b)
{
	if (b->mapped)
		munmap(b->p, b->n);
	else
		free(b->p);
	memset(b, 0, sizeof *b);
}

unsigned char *
dt_blob_take(struct dt_blob *b)
{
	unsigned char *p = b->p;

	memset(b, 0, sizeof *b);
	return p;
}
