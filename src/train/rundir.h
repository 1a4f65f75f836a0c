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

/* The run's id, DIR/run-id: 32 hex digits and a newline, drawn at the
 * run's start; every checkpoint names it (ckpt.h, run_id). */
#define DT_RUNDIR_ID_FILE "run-id"
#define DT_RUNDIR_ID_MAX 64	/* bytes of an id, with the NUL */
/* The claim on a checkpoint directory, CKPT_DIR/owner: "run ID in DIR;
 * pid P on host H", flock'ed while the run goes. */
#define DT_RUNDIR_OWNER_FILE "owner"

/* Undoes a run refused before its first step in a directory it made:
 * removes dir/job.yaml, dir/run-id, dir/checkpoints/owner, dir/plan.json,
 * dir/metrics.jsonl (empty before the first step), the text's
 * vocabulary dir/tokenizer.json or dir/vocab.bin, dir/lock and the
 * event files in dir/tb (log.tensorboard), then dir/checkpoints, dir/tb
 * and dir itself if nothing else is in them (rmdir;
 * a directory holding anything else stays). Best effort: errors are
 * ignored, as the run is failing with an error of its own. */
void dt_rundir_unmake(const char *dir);

/* Takes the run directory dir (which must exist) for this process: an
 * exclusive flock(2) on dir/lock, held until *fd_out is closed (or the
 * process ends, however it ends), into which "pid PID on host HOST" is
 * written for whoever finds it taken. Two runs or resumes into one
 * directory would otherwise both succeed and interleave their files.
 * On success *fd_out is the open lock file (the caller closes it).
 * Errors: DT_ERR_EXISTS "DIR is in use by another dtrain (pid P on host
 * H; DIR/lock): ..." when another process holds it, at once (no wait);
 * DT_ERR_IO naming the path. *fd_out is then -1, except after a failed
 * write of the holder (a full disk): the lock is taken, *fd_out is the
 * open file, so the caller can undo what it made (dt_rundir_unmake). */
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

/* The run id of the run directory dir (DT_RUNDIR_ID_FILE) into id (size
 * bytes, at least DT_RUNDIR_ID_MAX). A directory without one: with make,
 * a new id is drawn and written there atomically; without, id is ""
 * (a run of an older dtrain). Errors: DT_ERR_FORMAT naming the file when
 * it holds no id; DT_ERR_IO naming the path. */
enum dt_status dt_rundir_run_id(const char *dir, int make, char *id,
				size_t size, struct dt_error *err);

/* Claims the checkpoint directory ckpt_dir for the run id (in run_dir),
 * as dt_rundir_lock claims a run directory: makes ckpt_dir if missing
 * (its parent must exist; *made 1), takes an flock on ckpt_dir/owner,
 * held until *fd_out is closed, and writes "run ID in RUN_DIR; pid P on
 * host H" there. Two runs given one checkpoint.dir would otherwise prune
 * and replace each other's checkpoints. Refused with DT_ERR_EXISTS:
 * another process holds it ("... is in use by another dtrain (HOLDER;
 * PATH)"), at once; the owner file names another run ("... belongs to
 * another run (LINE; PATH), not to this run ID (in DIR)"); fresh (a new
 * run) and ckpt_dir holds step-N entries with no owner. DT_ERR_IO naming
 * the path. Once the flock is taken *fd_out is the open file, also on
 * those errors (the caller closes it and undoes what it made); else -1. */
enum dt_status dt_rundir_claim_ckpt(const char *ckpt_dir, const char *id,
				    const char *run_dir, int fresh,
				    int *fd_out, int *made,
				    struct dt_error *err);

/* Convenience: path = dir + "/" + name into buf (DT_ERR_IO if too long). */
enum dt_status dt_rundir_path(char *buf, size_t size, const char *dir,
			      const char *name, struct dt_error *err);

#endif
