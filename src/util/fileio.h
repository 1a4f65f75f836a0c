/* SPDX-License-Identifier: MIT */
/* fileio.h - replacing a file so that a crash leaves the old file or the
 * new one, never a torn one: write a temporary name next to it, fsync,
 * rename over the file, fsync the directory (rename(2) is atomic within a
 * file system, POSIX.1-2017; the directory's fsync makes the rename
 * durable). The run directory, checkpoints, exported weights, the text
 * vocabulary and downloads all go this way. */
#ifndef DT_UTIL_FILEIO_H
#define DT_UTIL_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#include "util/status.h"

/* The longest path dt_file_write_atomic replaces (bytes, with the NUL),
 * as job.h's DT_JOB_PATH_MAX; its temporary name may be 64 bytes longer. */
#define DT_FILE_PATH_MAX 4096

/* "PATH.tmp.PID" into buf (size bytes): a temporary name next to path
 * that no other process uses. DT_ERR_IO "PATH: path too long" when it
 * does not fit (buf is then unspecified). */
enum dt_status dt_file_tmp_name(char *buf, size_t size, const char *path,
				struct dt_error *err);

/* Renames tmp over path. On failure removes tmp and returns DT_ERR_IO
 * "TMP: cannot rename to PATH: <strerror>". */
enum dt_status dt_file_rename(const char *tmp, const char *path,
			      struct dt_error *err);

/* Finishes the file open as fd, named name in messages: fsyncs it unless
 * st (how writing it went) is already a failure, then closes it, always.
 * A signal that interrupts fsync is waited out, and close's EINTR is no
 * failure (Linux has closed the descriptor then). Returns st when it is a
 * failure; else DT_ERR_IO "NAME: fsync failed: ..." or "NAME: close
 * failed: ...", or DT_OK. */
enum dt_status dt_file_sync_close(int fd, const char *name, enum dt_status st,
				  struct dt_error *err);

/* The directory holding path into buf (size bytes): "." for a bare name,
 * "/" for a name in the root, else path up to its last slash. Returns 0,
 * or -1 (buf untouched) when it does not fit. */
int dt_file_dir_of(char *buf, size_t size, const char *path);

/* fsyncs the directory dir, so that a rename in it survives a crash. A
 * file system that cannot fsync a directory (EINVAL) counts as done: its
 * renames are as durable as they get. DT_ERR_IO "DIR: cannot open
 * directory: ..." or "DIR: fsync failed: ...". */
enum dt_status dt_file_fsync_dir(const char *dir, struct dt_error *err);

/* Writes the file at path atomically: fn(out, ctx, err) fills a new
 * temporary file (dt_file_tmp_name), which is flushed, fsync'd, closed and
 * renamed over path; then the directory is fsync'd as far as it can be
 * (its failure is not an error: the file is in place). On failure nothing
 * is left at the temporary name and path is as it was; the status is fn's
 * or DT_ERR_IO "PATH: cannot create: ...", "TMP: write failed: ..." or
 * dt_file_rename's. A path that exists and is not a regular file (a
 * device, a FIFO, a directory, a symbolic link: lstat) is refused before
 * anything is written, DT_ERR_IO "PATH: exists and is not a regular file
 * (KIND); ...", and left as it is. */
enum dt_status dt_file_write_atomic(const char *path,
				    enum dt_status (*fn)(FILE *out, void *ctx,
							 struct dt_error *err),
				    void *ctx, struct dt_error *err);

#endif
