/* SPDX-License-Identifier: MIT */
/* datafiles.h - what a checkpoint records of the training data's single
 * files, and the check of a resume against it. Internal to train/. */
#ifndef DT_TRAIN_DATAFILES_H
#define DT_TRAIN_DATAFILES_H

#include "job/job.h"
#include "util/status.h"

/* The record of job's training sources that are one local file each
 * (data.train.images, .labels, .file; a pattern of shards is left to the
 * shard list, state.c): one "KEY<TAB>BYTES<TAB>SHA256<TAB>PATH" line per
 * file, in schema order, the digest from the node's digest cache
 * (fetch.h, dt_fetch_digest: a file already hashed this session costs a
 * stat). Returns the text (caller frees; "" for none), or NULL with err
 * set (DT_ERR_IO naming the file) when a file cannot be read. */
char *dt_datafiles_record(const struct dt_job *job, struct dt_error *err);

/* Compares now (dt_datafiles_record of this session) with was (the
 * checkpoint's, NULL for one of an older dtrain: passes) by key, size and
 * digest; the paths may differ (a moved file with the same bytes is the
 * same data). On the first key whose file differs, is new or is gone,
 * returns DT_ERR_DATA:
 *   "CKPT: the training data changed since the checkpoint:
 *   data.train.labels (PATH) was 10008 bytes, sha256 X, is now 10008
 *   bytes, sha256 Y; resume with the data it was saved with"
 * (ckpt: the checkpoint's path, for the message). */
enum dt_status dt_datafiles_check(const char *ckpt, const char *was,
				  const char *now, struct dt_error *err);

#endif
