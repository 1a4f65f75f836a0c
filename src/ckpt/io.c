/* SPDX-License-Identifier: MIT */
/* io.c - the file layer of checkpoints: writes that go straight to write(2)
 * while counting bytes and running zlib's CRC-32 over what reaches the
 * disk, optionally through a gzip stream (RFC 1952, zlib's deflate with a
 * gzip wrapper); reads that do the same in reverse; removal of a
 * directory tree without following symbolic links. */
#include "ckpt/ckpt_priv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/endian.h"
#include "util/fileio.h"

#define ZBUF_SIZE ((size_t)1 << 18)
/* Largest single read/write/crc/inflate call: fits uInt and ssize_t. */
#define IO_CHUNK ((size_t)1 << 30)

static uint32_t
crc_update(uint32_t crc, const void *p, size_t n)
{
	return (uint32_t)crc32_z(crc, p, n);
}

static void
die_oom(void)
{
	fprintf(stderr, "dtrain: out of memory in zlib\n");
	abort();
}

static void
copy_name(char *dst, size_t size, const char *src)
{
	size_t len = strlen(src);

	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* ---- writing ------------------------------------------------------------ */

enum dt_status
dt_ck_wopen(struct dt_ck_wfile *w, const char *path, int gz,
	    struct dt_error *err)
{
	memset(w, 0, sizeof *w);
	w->fd = -1;
	if (strlen(path) >= sizeof w->path)
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", path);
	copy_name(w->path, sizeof w->path, path);
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (w->fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s", path,
				 strerror(errno));
	if (gz) {
		/* Level 1: optimizer moments are close to random bits, so
		 * higher levels cost much time for little space. */
		int rc = deflateInit2(&w->z, Z_BEST_SPEED, Z_DEFLATED,
				      15 + 16, 8, Z_DEFAULT_STRATEGY);

		if (rc == Z_MEM_ERROR)
			die_oom();
		if (rc != Z_OK) {
			close(w->fd);
			w->fd = -1;
			return dt_errorf(err, DT_ERR_IO, "%s: cannot start "
					 "gzip compression", path);
		}
		w->gz = 1;
		w->zbuf = dt_xmalloc(ZBUF_SIZE, 1);
	}
	return DT_OK;
}

static enum dt_status
raw_write(struct dt_ck_wfile *w, const unsigned char *p, size_t n,
	  struct dt_error *err)
{
	while (n > 0) {
		ssize_t k = write(w->fd, p, n < IO_CHUNK ? n : IO_CHUNK);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return dt_errorf(err, DT_ERR_IO, "%s: write failed at "
					 "byte %lld: %s", w->path,
					 (long long)w->size,
					 k < 0 ? strerror(errno) :
					 "nothing written");
		w->crc = crc_update(w->crc, p, (size_t)k);
		w->size += k;
		p += k;
		n -= (size_t)k;
	}
	return DT_OK;
}

/* Runs deflate over what is in w->z with flush, writing every full or
 * final output buffer, until the input is used up (or the stream ends). */
static enum dt_status
deflate_out(struct dt_ck_wfile *w, int flush, struct dt_error *err)
{
	for (;;) {
		int rc;

		w->z.next_out = w->zbuf;
		w->z.avail_out = (uInt)ZBUF_SIZE;
		rc = deflate(&w->z, flush);
		if (rc == Z_STREAM_ERROR)
			return dt_errorf(err, DT_ERR_IO, "%s: gzip compression "
					 "failed", w->path);
		if (raw_write(w, w->zbuf, ZBUF_SIZE - w->z.avail_out, err))
			return DT_ERR_IO;
		if (flush == Z_FINISH ? rc == Z_STREAM_END :
		    (w->z.avail_in == 0 && w->z.avail_out > 0))
			return DT_OK;
	}
}

enum dt_status
dt_ck_write(struct dt_ck_wfile *w, const void *p, size_t n,
	    struct dt_error *err)
{
	const unsigned char *b = p;

	if (!w->gz)
		return raw_write(w, b, n, err);
	while (n > 0) {
		size_t k = n < IO_CHUNK ? n : IO_CHUNK;

		w->z.next_in = (Bytef *)(uintptr_t)b;
		w->z.avail_in = (uInt)k;
		if (deflate_out(w, Z_NO_FLUSH, err))
			return DT_ERR_IO;
		b += k;
		n -= k;
	}
	return DT_OK;
}

enum dt_status
dt_ck_write_f32(struct dt_ck_wfile *w, const float *p, size_t n,
		struct dt_error *err)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	unsigned char buf[4096];

	while (n > 0) {
		size_t k = n < sizeof buf / 4 ? n : sizeof buf / 4;

		dt_le_put_f32(buf, p, k);
		if (dt_ck_write(w, buf, 4 * k, err))
			return DT_ERR_IO;
		p += k;
		n -= k;
	}
	return DT_OK;
#else
	return dt_ck_write(w, p, n * sizeof(float), err);
#endif
}

/* Frees the deflate stream of a gzip writer, finished or not. */
static void
wfile_end_gz(struct dt_ck_wfile *w)
{
	if (!w->gz)
		return;
	deflateEnd(&w->z);
	free(w->zbuf);
	w->zbuf = NULL;
	w->gz = 0;
}

enum dt_status
dt_ck_wclose(struct dt_ck_wfile *w, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	if (w->gz) {
		w->z.next_in = NULL;
		w->z.avail_in = 0;
		st = deflate_out(w, Z_FINISH, err);
	}
	wfile_end_gz(w);
	st = dt_file_sync_close(w->fd, w->path, st, err);
	w->fd = -1;
	return st;
}

void
dt_ck_wabort(struct dt_ck_wfile *w)
{
	wfile_end_gz(w);
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

enum dt_status
dt_ck_write_file(const char *path, const void *data, size_t n,
		 int64_t *size, uint32_t *crc, struct dt_error *err)
{
	struct dt_ck_wfile w;

	if (dt_ck_wopen(&w, path, 0, err))
		return DT_ERR_IO;
	if (dt_ck_write(&w, data, n, err)) {
		dt_ck_wabort(&w);
		return DT_ERR_IO;
	}
	if (dt_ck_wclose(&w, err))
		return DT_ERR_IO;
	*size = w.size;
	*crc = w.crc;
	return DT_OK;
}

/* ---- reading ------------------------------------------------------------ */

/* What a file of mode m that is not a regular file is, in words. */
static const char *
file_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	return "of an unknown kind";
}

enum dt_status
dt_ck_ropen(struct dt_ck_rfile *r, const char *path, const char *label,
	    int gz, struct dt_error *err)
{
	struct stat st;
	int flags;

	memset(r, 0, sizeof *r);
	copy_name(r->label, sizeof r->label, label);
	/* A checkpoint directory is input like any other: a symbolic link
	 * in it would make verify report the size and CRC of any file we
	 * can read, and a FIFO would block open() and read() forever. So
	 * links are not followed, the open does not wait, and anything but
	 * a regular file is refused before a byte is read. */
	r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (r->fd < 0 && errno == ELOOP)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: is a symbolic link; "
				 "a checkpoint holds regular files only",
				 label);
	if (r->fd < 0)
		return dt_errorf(err, errno == ENOENT ? DT_ERR_FORMAT :
				 DT_ERR_IO, "%s: cannot open: %s", label,
				 strerror(errno));
	if (fstat(r->fd, &st) != 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot stat: %s", label,
				 strerror(errno));
	if (!S_ISREG(st.st_mode))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: %s, not a regular "
				 "file (a checkpoint holds regular files only)",
				 label, file_kind(st.st_mode));
	flags = fcntl(r->fd, F_GETFL);
	if (flags < 0 || fcntl(r->fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
		return dt_errorf(err, DT_ERR_IO, "%s: fcntl: %s", label,
				 strerror(errno));
	r->file_size = (int64_t)st.st_size;
	if (gz) {
		int rc = inflateInit2(&r->z, 15 + 16);

		if (rc == Z_MEM_ERROR)
			die_oom();
		if (rc != Z_OK)
			return dt_errorf(err, DT_ERR_IO, "%s: cannot start gzip "
					 "decompression", label);
		r->gz = 1;
		r->zbuf = dt_xmalloc(ZBUF_SIZE, 1);
	}
	return DT_OK;
}

/* Reads up to n bytes from the disk; *got < n only at the end of file. */
static enum dt_status
raw_read(struct dt_ck_rfile *r, unsigned char *p, size_t n, size_t *got,
	 struct dt_error *err)
{
	*got = 0;
	while (*got < n) {
		size_t want = n - *got;
		ssize_t k = read(r->fd, p + *got,
				 want < IO_CHUNK ? want : IO_CHUNK);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return dt_errorf(err, DT_ERR_IO, "%s: read failed at "
					 "byte %lld: %s", r->label,
					 (long long)r->raw_size,
					 strerror(errno));
		if (k == 0)
			break;
		r->crc = crc_update(r->crc, p + *got, (size_t)k);
		r->raw_size += k;
		*got += (size_t)k;
	}
	return DT_OK;
}

static enum dt_status
truncated(struct dt_ck_rfile *r, int64_t at, struct dt_error *err)
{
	return dt_errorf(err, DT_ERR_FORMAT, "%s: unexpected end of %s at "
			 "byte %lld (truncated?)", r->label,
			 r->gz ? "compressed data" : "file", (long long)at);
}

/* Inflates into p (n bytes, possibly 0 to only consume input) until p is
 * full or the stream ends; *got says how much was produced. */
static enum dt_status
inflate_some(struct dt_ck_rfile *r, unsigned char *p, size_t n, size_t *got,
	     struct dt_error *err)
{
	*got = 0;
	while (!r->z_done && *got < n) {
		size_t want = n - *got;
		int rc;

		if (r->z.avail_in == 0) {
			size_t k;

			if (raw_read(r, r->zbuf, ZBUF_SIZE, &k, err))
				return DT_ERR_IO;
			if (k == 0)
				return truncated(r, r->pos + (int64_t)*got,
						 err);
			r->z.next_in = r->zbuf;
			r->z.avail_in = (uInt)k;
		}
		r->z.next_out = p + *got;
		r->z.avail_out = (uInt)(want < IO_CHUNK ? want : IO_CHUNK);
		rc = inflate(&r->z, Z_NO_FLUSH);
		*got += (want < IO_CHUNK ? want : IO_CHUNK) - r->z.avail_out;
		if (rc == Z_STREAM_END)
			r->z_done = 1;
		else if (rc == Z_MEM_ERROR)
			die_oom();
		else if (rc != Z_OK && rc != Z_BUF_ERROR)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: corrupt gzip "
					 "data near byte %lld of the file: %s",
					 r->label,
					 (long long)(r->raw_size -
						     r->z.avail_in),
					 r->z.msg ? r->z.msg : "inflate failed");
	}
	return DT_OK;
}

enum dt_status
dt_ck_read(struct dt_ck_rfile *r, void *p, size_t n, struct dt_error *err)
{
	enum dt_status st;
	size_t got;

	st = r->gz ? inflate_some(r, p, n, &got, err) :
		raw_read(r, p, n, &got, err);
	if (st != DT_OK)
		return st;
	if (got < n)
		return truncated(r, r->pos + (int64_t)got, err);
	r->pos += (int64_t)n;
	return DT_OK;
}

enum dt_status
dt_ck_rfinish(struct dt_ck_rfile *r, struct dt_error *err)
{
	unsigned char probe[4096];
	enum dt_status st;
	size_t got;
	int64_t extra = 0;

	if (r->gz) {
		/* Content past the safetensors data, or a missing gzip
		 * trailer (which inflate checks against the CRC-32 and size
		 * of the content), shows up here. */
		st = inflate_some(r, probe, 1, &got, err);
		if (st != DT_OK)
			return st;
		if (got > 0)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: data follows "
					 "the last tensor at byte %lld",
					 r->label, (long long)r->pos);
		extra = r->z.avail_in;
		r->z.avail_in = 0;
	}
	do {
		if (raw_read(r, probe, sizeof probe, &got, err))
			return DT_ERR_IO;
		extra += (int64_t)got;
	} while (got > 0);
	if (extra > 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: %lld unexpected "
				 "bytes at the end of the file", r->label,
				 (long long)extra);
	if (r->raw_size != r->file_size)
		return dt_errorf(err, DT_ERR_IO, "%s: file changed while "
				 "being read (%lld bytes, then %lld)",
				 r->label, (long long)r->file_size,
				 (long long)r->raw_size);
	return DT_OK;
}

void
dt_ck_rclose(struct dt_ck_rfile *r)
{
	if (r->gz) {
		inflateEnd(&r->z);
		free(r->zbuf);
		r->zbuf = NULL;
		r->gz = 0;
	}
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/* ---- directories -------------------------------------------------------- */

static int
rm_at(int dirfd, const char *name, int depth)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	int fd, rc = 0, saved = 0;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 :
			-1;
	if (depth > 16) {
		errno = ELOOP;
		return -1;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (d == NULL) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (rm_at(fd, e->d_name, depth + 1) != 0 && rc == 0) {
			rc = -1;
			saved = errno;
		}
	}
	closedir(d);
	if (rc != 0) {
		errno = saved;
		return -1;
	}
	return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ?
		0 : -1;
}

int
dt_ck_rm_tree(const char *path)
{
	return rm_at(AT_FDCWD, path, 0);
}
