/* SPDX-License-Identifier: MIT */
/* rundir.h - the run directory: refuse to overwrite results, write files
 * atomically (temporary name, fsync, rename, fsync of the directory). */
#ifndef DT_TRAIN_RUNDIR_H
#define DT_TRAIN_RUNDIR_H

#include <stdio.h>

#include "job/job.h"
#include "util/status.h"

/* Creates dir (and its parents) unless it already holds results
 * (summary.json, or a metrics.jsonl that is not empty): then DT_ERR_EXISTS with a message saying
 * how to choose another. DT_ERR_IO naming the path if it cannot be made. */
enum dt_status dt_rundir_prepare(const char *dir, struct dt_error *err);

/* Undoes a run refused before its first step in a directory it made:
 * removes dir/job.yaml and dir/lock, then dir itself if nothing else is
 * in it (rmdir; a directory holding anything else stays). Best effort:
 * errors are ignored, as the run is failing with an error of its own. */
void dt_rundir_unmake(const char *dir);

/* Takes the run directory dir (which must exist) for this process: an
 * exclusive flock(2) on dir/lock, held until *fd_out is closed (or the
 * process ends, however it ends), into which "pid PID on host HOST" is
 * written for whoever finds it taken. Two runs or resumes into one
 * directory would otherwise both succeed and interleave their files.
 * On success *fd_out is the open lock file (the caller closes it).
 * Errors: DT_ERR_EXISTS "DIR is in use by another dtrain (pid P on host
 * H; DIR/lock): ..." when another process holds it, at once (no wait);
 * DT_ERR_IO naming the path. *fd_out is then -1. */
enum dt_status dt_rundir_lock(const char *dir, int *fd_out,
			      struct dt_error *err);

/* Writes a file atomically: fn(out, ctx) fills a temporary file next to
 * path, which is fsync'd and renamed over path, then the directory is
 * fsync'd. Nothing is left at path (or at the temporary name) on failure. */
enum dt_status dt_rundir_write_atomic(const char *path,
				      enum dt_status (*fn)(FILE *out,
							   void *ctx,
							   struct dt_error *err),
				      void *ctx, struct dt_error *err);

/* Convenience: path = dir + "/" + name into buf (DT_ERR_IO if too long). */
enum dt_status dt_rundir_path(char *buf, size_t size, const char *dir,
			      const char *name, struct dt_error *err);

#endif
