/* SPDX-License-Identifier: MIT */
/* rundir.c - run-directory creation, its lock and run id, the claim on
 * the checkpoint directory, and atomic file writes. */
#include "train/rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/random.h>
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

/* Removes dir/tb (log.tensorboard) with the event files in it, which
 * this run made: rmdir alone leaves a folder that holds anything else. */
static void
unmake_tb(const char *dir)
{
	static const char prefix[] = "events.out.tfevents.";
	char path[DT_JOB_PATH_MAX + 300];
	struct dirent *e;
	DIR *d;

	if (snprintf(path, sizeof path, "%s/tb", dir) >= (int)sizeof path)
		return;
	d = opendir(path);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char file[sizeof path];

		if (strncmp(e->d_name, prefix, sizeof prefix - 1) == 0 &&
		    snprintf(file, sizeof file, "%s/%s", path, e->d_name) <
		    (int)sizeof file)
			(void)unlink(file);
	}
	closedir(d);
	(void)rmdir(path);
}

void
dt_rundir_unmake(const char *dir)
{
	static const char *const made[] = { "job.yaml", DT_RUNDIR_ID_FILE,
					    "checkpoints/" DT_RUNDIR_OWNER_FILE,
					    "plan.json", "metrics.jsonl",
					    "tokenizer.json", "vocab.bin",
					    "lock" };
	char path[DT_JOB_PATH_MAX + 16];

	for (size_t i = 0; i < sizeof made / sizeof *made; i++)
		if (snprintf(path, sizeof path, "%s/%s", dir, made[i]) <
		    (int)sizeof path)
			(void)unlink(path);
	if (snprintf(path, sizeof path, "%s/checkpoints", dir) <
	    (int)sizeof path)
		(void)rmdir(path);
	unmake_tb(dir);
	(void)rmdir(dir);
}

enum dt_status
dt_rundir_write_atomic(const char *path,
		       enum dt_status (*fn)(FILE *out, void *ctx,
					    struct dt_error *err),
		       void *ctx, struct dt_error *err)
{
	enum dt_status st = dt_file_write_atomic(path, fn, ctx, err);

	/* fn's own messages ("cannot write the job: ...") know no path. */
	if (st != DT_OK && err != NULL && strstr(err->msg, path) == NULL)
		dt_error_prefix(err, "%s: ", path);
	return st;
}

/* Opens path (made 0644 where absent, no link followed) and takes its
 * exclusive lock without waiting: DT_OK with the descriptor in *fd. Where
 * another process holds the lock, DT_ERR_EXISTS with no message, for the
 * caller to word: holder (size bytes) then has the first line its holder
 * wrote there, or "holder unknown". Any other failure is DT_ERR_IO naming
 * path. On error *fd is -1 and nothing stays open. */
static enum dt_status
lock_nowait(const char *path, int *fd, char *holder, size_t size,
	    struct dt_error *err)
{
	ssize_t n;
	int e;

	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (*fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return DT_OK;
	e = errno;
	n = e == EWOULDBLOCK ? pread(*fd, holder, size - 1, 0) : -1;
	close(*fd);
	*fd = -1;
	if (e != EWOULDBLOCK)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot lock: %s", path,
				 strerror(e));
	holder[n > 0 ? n : 0] = '\0';
	holder[strcspn(holder, "\n")] = '\0';
	if (holder[0] == '\0')
		snprintf(holder, size, "holder unknown");
	return DT_ERR_EXISTS;
}

enum dt_status
dt_rundir_lock(const char *dir, int *fd_out, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 16], holder[256], host[128] = "?";
	enum dt_status st;
	int fd, len;

	*fd_out = -1;
	if (snprintf(path, sizeof path, "%s/lock", dir) >= (int)sizeof path)
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", dir);
	st = lock_nowait(path, &fd, holder, sizeof holder, err);
	if (st == DT_ERR_EXISTS)
		return dt_errorf(err, DT_ERR_EXISTS, "%s is in use by another "
				 "dtrain (%s; %s): wait for it to end, or give "
				 "this run another --run-dir", dir, holder,
				 path);
	if (st != DT_OK)
		return st;
	gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	len = snprintf(holder, sizeof holder, "pid %ld on host %s\n",
		       (long)getpid(), host);
	if (ftruncate(fd, 0) != 0 || pwrite(fd, holder, (size_t)len, 0) != len) {
		/* Held all the same: the caller undoes what it made. */
		*fd_out = fd;
		return dt_errorf(err, DT_ERR_IO, "%s: write failed: %s", path,
				 errno != 0 ? strerror(errno) : "short write");
	}
	*fd_out = fd;
	return DT_OK;
}

/* A new run id: 32 hex digits from the kernel's random source. */
static enum dt_status
new_id(char *id, size_t size, struct dt_error *err)
{
	unsigned char b[16];
	size_t got = 0;

	while (got < sizeof b) {
		ssize_t k = getrandom(b + got, sizeof b - got, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return dt_errorf(err, DT_ERR_IO, "cannot draw a run id: "
					 "%s", strerror(errno));
		got += (size_t)k;
	}
	for (size_t i = 0; i < sizeof b && 2 * i + 2 < size; i++)
		snprintf(id + 2 * i, 3, "%02x", b[i]);
	return DT_OK;
}

static enum dt_status
write_id(FILE *out, void *ctx, struct dt_error *err)
{
	if (fprintf(out, "%s\n", (const char *)ctx) < 0)
		return dt_errorf(err, DT_ERR_IO, "write failed: %s",
				 strerror(errno));
	return DT_OK;
}

enum dt_status
dt_rundir_run_id(const char *dir, int make, char *id, size_t size,
		 struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 16], buf[128];
	FILE *f;
	size_t n;

	id[0] = '\0';
	if (dt_rundir_path(path, sizeof path, dir, DT_RUNDIR_ID_FILE, err))
		return DT_ERR_IO;
	f = fopen(path, "r");
	if (f == NULL && errno != ENOENT)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot read: %s", path,
				 strerror(errno));
	if (f != NULL) {
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		n = strspn(buf, "0123456789abcdefABCDEF");
		if (n < 1 || n >= size || n >= DT_RUNDIR_ID_MAX ||
		    (buf[n] != '\n' && buf[n] != '\0'))
			return dt_errorf(err, DT_ERR_FORMAT, "%s: expected the "
					 "run's id (hex digits and a newline)",
					 path);
		memcpy(id, buf, n);
		id[n] = '\0';
		return DT_OK;
	}
	if (!make)
		return DT_OK;	/* a run directory of an older dtrain */
	if (new_id(buf, sizeof buf, err))
		return DT_ERR_IO;
	if (strlen(buf) >= size)
		return dt_errorf(err, DT_ERR_IO, "run id buffer too small");
	if (dt_rundir_write_atomic(path, write_id, buf, err))
		return DT_ERR_IO;
	strcpy(id, buf);
	return DT_OK;
}

/* The run id of an owner line "run ID in DIR; pid P on host H" into id
 * (DT_RUNDIR_ID_MAX bytes), "" when the line is not one. */
static void
owner_id(const char *line, char *id)
{
	size_t n;

	id[0] = '\0';
	if (strncmp(line, "run ", 4) != 0)
		return;
	n = strspn(line + 4, "0123456789abcdefABCDEF");
	if (n >= 1 && n < DT_RUNDIR_ID_MAX && line[4 + n] == ' ') {
		memcpy(id, line + 4, n);
		id[n] = '\0';
	}
}

/* Whether ckpt_dir holds a step-N entry (a checkpoint, or what looks
 * like one). */
static int
holds_steps(const char *ckpt_dir)
{
	DIR *d = opendir(ckpt_dir);
	struct dirent *e;
	int found = 0;

	if (d == NULL)
		return 0;
	while (!found && (e = readdir(d)) != NULL)
		found = strncmp(e->d_name, "step-", 5) == 0;
	closedir(d);
	return found;
}

/* The ckpt_dir owner file open as fd is held (flock) by this process:
 * refuses another run's, else writes this run's line over it. */
static enum dt_status
own(int fd, const char *path, const char *ckpt_dir, const char *id,
    const char *run_dir, int fresh, struct dt_error *err)
{
	char line[DT_JOB_PATH_MAX + 512], had[DT_RUNDIR_ID_MAX],
		host[128] = "?";
	ssize_t n = pread(fd, line, sizeof line - 1, 0);
	int len;

	line[n > 0 ? n : 0] = '\0';
	line[strcspn(line, "\n")] = '\0';
	owner_id(line, had);
	if (had[0] != '\0' && strcmp(had, id) != 0)
		return dt_errorf(err, DT_ERR_EXISTS, "checkpoint directory %s "
				 "belongs to another run (%s; %s), not to this "
				 "run %s (in %s): two runs sharing one would "
				 "prune and replace each other's checkpoints; "
				 "give this run its own checkpoint.dir",
				 ckpt_dir, line, path, id, run_dir);
	if (had[0] == '\0' && fresh && holds_steps(ckpt_dir))
		return dt_errorf(err, DT_ERR_EXISTS, "checkpoint directory %s "
				 "already holds checkpoints of no known run "
				 "(no %s): give this run its own "
				 "checkpoint.dir, or empty it", ckpt_dir,
				 path);
	gethostname(host, sizeof host);
	host[sizeof host - 1] = '\0';
	len = snprintf(line, sizeof line, "run %s in %s; pid %ld on host %s\n",
		       id, run_dir, (long)getpid(), host);
	if (len < 0 || (size_t)len >= sizeof line)
		return dt_errorf(err, DT_ERR_IO, "%s: run directory path too "
				 "long", path);
	if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len)
		return dt_errorf(err, DT_ERR_IO, "%s: write failed: %s", path,
				 errno != 0 ? strerror(errno) : "short write");
	return DT_OK;
}

enum dt_status
dt_rundir_claim_ckpt(const char *ckpt_dir, const char *id,
		     const char *run_dir, int fresh, int *fd_out, int *made,
		     struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 16], holder[DT_JOB_PATH_MAX + 512];
	enum dt_status st;
	int fd;

	*fd_out = -1;
	*made = 0;
	if (mkdir(ckpt_dir, 0777) == 0)
		*made = 1;
	else if (errno != EEXIST)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create the "
				 "checkpoint directory: %s", ckpt_dir,
				 strerror(errno));
	if (dt_rundir_path(path, sizeof path, ckpt_dir, DT_RUNDIR_OWNER_FILE,
			   err))
		return DT_ERR_IO;
	st = lock_nowait(path, &fd, holder, sizeof holder, err);
	if (st == DT_ERR_EXISTS)
		return dt_errorf(err, DT_ERR_EXISTS, "checkpoint directory %s "
				 "is in use by another dtrain (%s; %s): give "
				 "this run its own checkpoint.dir", ckpt_dir,
				 holder, path);
	if (st != DT_OK)
		return st;
	*fd_out = fd;	/* held: the caller undoes what it made */
	st = own(fd, path, ckpt_dir, id, run_dir, fresh, err);
	return st;
}
