/* SPDX-License-Identifier: MIT */
/* fileio.c - atomic file replacement: temporary name, fsync, rename,
 * fsync of the directory (see fileio.h). */
#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum dt_status
dt_file_tmp_name(char *buf, size_t size, const char *path,
		 struct dt_error *err)
{
	int n = snprintf(buf, size, "%s.tmp.%ld", path, (long)getpid());

	if (n < 0 || (size_t)n >= size)
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", path);
	return DT_OK;
}

enum dt_status
dt_file_rename(const char *tmp, const char *path, struct dt_error *err)
{
	enum dt_status st;

	if (rename(tmp, path) == 0)
		return DT_OK;
	st = dt_errorf(err, DT_ERR_IO, "%s: cannot rename to %s: %s", tmp,
		       path, strerror(errno));
	unlink(tmp);
	return st;
}

enum dt_status
dt_file_sync_close(int fd, const char *name, enum dt_status st,
		   struct dt_error *err)
{
	while (st == DT_OK && fsync(fd) != 0) {
		if (errno != EINTR)
			st = dt_errorf(err, DT_ERR_IO, "%s: fsync failed: %s",
				       name, strerror(errno));
	}
	if (close(fd) != 0 && st == DT_OK && errno != EINTR)
		st = dt_errorf(err, DT_ERR_IO, "%s: close failed: %s", name,
			       strerror(errno));
	return st;
}

int
dt_file_dir_of(char *buf, size_t size, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;

	if (size < 2 || len >= size)
		return -1;
	if (slash == NULL)
		strcpy(buf, ".");
	else if (len == 0)
		strcpy(buf, "/");
	else {
		memcpy(buf, path, len);
		buf[len] = '\0';
	}
	return 0;
}

enum dt_status
dt_file_fsync_dir(const char *dir, struct dt_error *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open directory: "
				 "%s", dir, strerror(errno));
	do
		rc = fsync(fd);
	while (rc != 0 && errno == EINTR);
	if (rc != 0 && errno != EINVAL) {
		int e = errno;

		close(fd);
		return dt_errorf(err, DT_ERR_IO, "%s: fsync failed: %s", dir,
				 strerror(e));
	}
	close(fd);
	return DT_OK;
}

enum dt_status
dt_file_write_atomic(const char *path,
		     enum dt_status (*fn)(FILE *out, void *ctx,
					  struct dt_error *err),
		     void *ctx, struct dt_error *err)
{
	char tmp[DT_FILE_PATH_MAX + 64], dir[DT_FILE_PATH_MAX + 64];
	struct stat sb;
	enum dt_status st;
	FILE *out;

	if (dt_file_tmp_name(tmp, sizeof tmp, path, err) != DT_OK)
		return DT_ERR_IO;
	/* The rename would put a regular file where a device, a FIFO or a
	 * symbolic link was (dtrain export -o /dev/null, run as root,
	 * replaced /dev/null): refuse before writing anything. */
	if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
		return dt_errorf(err, DT_ERR_IO, "%s: exists and is not a "
				 "regular file (%s); dtrain writes an output "
				 "by replacing a regular file only: give "
				 "another path, or remove it", path,
				 S_ISLNK(sb.st_mode) ? "a symbolic link" :
				 S_ISDIR(sb.st_mode) ? "a directory" :
				 S_ISFIFO(sb.st_mode) ? "a FIFO" :
				 S_ISCHR(sb.st_mode) ||
				 S_ISBLK(sb.st_mode) ? "a device" :
				 "a special file");
	out = fopen(tmp, "w");
	if (out == NULL)	/* the path asked for: the name it knows */
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s", path,
				 strerror(errno));
	st = fn(out, ctx, err);
	if (st == DT_OK && (fflush(out) != 0 || fsync(fileno(out)) != 0))
		st = dt_errorf(err, DT_ERR_IO, "%s: write failed: %s", tmp,
			       strerror(errno));
	if (fclose(out) != 0 && st == DT_OK)
		st = dt_errorf(err, DT_ERR_IO, "%s: write failed: %s", tmp,
			       strerror(errno));
	if (st != DT_OK) {
		unlink(tmp);
		return st;
	}
	st = dt_file_rename(tmp, path, err);
	if (st != DT_OK)
		return st;
	/* The file is in place; a directory that cannot be synced only
	 * makes the rename less durable. */
	if (dt_file_dir_of(dir, sizeof dir, path) == 0)
		dt_file_fsync_dir(dir, NULL);
	return DT_OK;
}
