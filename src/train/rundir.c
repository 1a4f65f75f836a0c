/* SPDX-License-Identifier: MIT */
/* rundir.c - run-directory creation and atomic file writes. */
#include "train/rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"

enum dt_status
dt_rundir_path(char *buf, size_t size, const char *dir, const char *name,
	       struct dt_error *err)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= size)
		return dt_errorf(err, DT_ERR_IO, "%s/%s: path too long", dir,
				 name);
	return DT_OK;
}

static int
mkdir_p(const char *dir)
{
	char tmp[DT_JOB_PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, dir, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
		return -1;
	return 0;
}

enum dt_status
dt_rundir_prepare(const char *dir, struct dt_error *err)
{
	static const char *const results[] = { "summary.json",
					       "metrics.jsonl" };
	char path[DT_JOB_PATH_MAX + 32];
	struct stat st;

	for (size_t i = 0; i < sizeof results / sizeof results[0]; i++) {
		if (dt_rundir_path(path, sizeof path, dir, results[i], err))
			return DT_ERR_IO;
		/* An empty metrics.jsonl is a run that failed before its
		 * first logged step: no results to protect. */
		if (stat(path, &st) == 0 && (i == 0 || st.st_size > 0))
			return dt_errorf(err, DT_ERR_EXISTS,
					 "%s: run directory already holds "
					 "results (%s); choose another with "
					 "--run-dir DIR or --set name=NEW, or "
					 "remove it",
					 dir, results[i]);
	}
	if (mkdir_p(dir) != 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create run "
				 "directory: %s", dir, strerror(errno));
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return dt_errorf(err, DT_ERR_IO, "%s: not a directory", dir);
	return DT_OK;
}

void
dt_rundir_unmake(const char *dir)
{
	static const char *const made[] = { "job.yaml", "lock" };
	char path[DT_JOB_PATH_MAX + 16];

	for (size_t i = 0; i < sizeof made / sizeof *made; i++)
		if (snprintf(path, sizeof path, "%s/%s", dir, made[i]) <
		    (int)sizeof path)
			(void)unlink(path);
	(void)rmdir(dir);
}

enum dt_status
dt_rundir_write_atomic(const char *path,
		       enum dt_status (*fn)(FILE *out, void *ctx,
					    struct dt_error *err),
		       void *ctx, struct dt_error *err)
{
	return dt_file_write_atomic(path, fn, ctx, err);
}

enum dt_status
dt_rundir_lock(const char *dir, int *fd_out, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 16], holder[256], host[128] = "?";
	ssize_t n;
	int fd, len;

	*fd_out = -1;
	if (snprintf(path, sizeof path, "%s/lock", dir) >= (int)sizeof path)
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		n = e == EWOULDBLOCK ? pread(fd, holder, sizeof holder - 1, 0)
				     : -1;
		close(fd);
		if (e != EWOULDBLOCK)
			return dt_errorf(err, DT_ERR_IO, "%s: cannot lock: %s",
					 path, strerror(e));
		holder[n > 0 ? n : 0] = '\0';
		holder[strcspn(holder, "\n")] = '\0';
		return dt_errorf(err, DT_ERR_EXISTS, "%s is in use by another "
				 "dtrain (%s; %s): wait for it to end, or give "
				 "this run another --run-dir", dir,
				 holder[0] != '\0' ? holder : "holder unknown",
				 path);
	}
	gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	len = snprintf(holder, sizeof holder, "pid %ld on host %s\n",
		       (long)getpid(), host);
	if (ftruncate(fd, 0) != 0 || pwrite(fd, holder, (size_t)len, 0) != len) {
		int e = errno;

		close(fd);
		return dt_errorf(err, DT_ERR_IO, "%s: write failed: %s", path,
				 strerror(e));
	}
	*fd_out = fd;
	return DT_OK;
}
