/* SPDX-License-Identifier: MIT */
/* agree.h - ranks prove they hold the same job, plan, data and build
 * before they train (issue 13): a rank started with another --set, a
 * node-local job file that differs, other data or another dtrain would
 * otherwise train something else, or hand collectives buffers of other
 * lengths. */
#ifndef DT_TRAIN_AGREE_H
#define DT_TRAIN_AGREE_H

#include <stddef.h>

#include "comm/comm.h"
#include "job/job.h"
#include "util/status.h"

/* Collective over comm, to call on every rank before any allocation that
 * depends on the job (at the start of a run, a resume and a restart).
 * Builds this rank's start-up record (dt_agree_record) and proves with
 * dt_comm_check_same that every rank's is rank 0's. Returns DT_OK on every
 * rank when they agree. When they differ, returns DT_ERR_JOB on every rank
 * with the same message, naming the lowest differing rank R and the first
 * key in which it differs from rank 0, found by R from rank 0's record and
 * job text (both broadcast with their lengths first):
 *   "ranks disagree before training: rank 1: train.lr is 0.002 (--set
 *   train.lr=0.002), rank 0 has 0.001"
 *   "... rank 2: data.train.images is 47040016 bytes, rank 0 has 47040008
 *   bytes". A failure to build the record on any rank is that rank's
 * status on every rank ("rank R failed" on the others); DT_ERR_MPI if a
 * call fails. */
enum dt_status dt_agree_check(const struct dt_job *job, struct dt_comm *comm,
			      struct dt_error *err);

/* The start-up record of job on world_size ranks, one "key<TAB>value"
 * line each, in the order the first difference is looked for: the build
 * (build.version, PACKAGE_VERSION), the world size, the job's fingerprint
 * (job.sha256, dt_job_fingerprint), each data source the job gives (its
 * key, and "N bytes" from stat, "missing: <strerror>" or "URL"; with the
 * job's sha256 where it gives one), and the plan's numbers (plan.*, from
 * dt_plan_batch, or "plan<TAB>refused" when the plan fails: the trainer
 * reports why). *out (caller frees, NUL-terminated) and *len. DT_ERR_IO if
 * the job text cannot be made. */
enum dt_status dt_agree_record(const struct dt_job *job, int world_size,
			       char **out, size_t *len, struct dt_error *err);

/* Collective over comm, to call once every data source of job is a local
 * file (after dt_source_fetch_all): proves that every rank reads the same
 * bytes, whether or not the job gives digests. Each rank's data record
 * (dt_agree_data_record without the paths: a downloaded file lies in
 * each host's own cache) is compared with rank 0's; the node's first rank
 * builds its record first, so each file is hashed once per node and
 * version (the digest cache, fetch.h's dt_fetch_digest) and the node's
 * other ranks hash only a file that differs on their side. When they
 * differ, returns DT_ERR_JOB on every rank with one message naming the
 * lowest differing rank, the source's key and both files' size and
 * digest:
 *   "ranks disagree before training: rank 1: data.train.images is
 *   3136 bytes, sha256 5d41... (job.yaml:8:15), rank 0 has 3136 bytes,
 *   sha256 2cf2...; every rank stops".
 * A rank that cannot read a file fails with its status on every rank;
 * DT_ERR_MPI if a call fails. */
enum dt_status dt_agree_data(const struct dt_job *job, struct dt_comm *comm,
			     struct dt_error *err);

/* The data record of job: one "KEY<TAB>PATH: N bytes, sha256 HEX" line
 * for each source the job gives (its path as this rank opens it), or
 * "KEY<TAB>PATH: missing: <strerror>". *out (caller frees, NUL-
 * terminated) and *len. DT_ERR_IO if a file cannot be read. */
enum dt_status dt_agree_data_record(const struct dt_job *job, char **out,
				    size_t *len, struct dt_error *err);

/* The first difference of mine (this rank's, rank `rank`) from theirs
 * (rank 0's), both texts of the same kind: records (dt_agree_record) or
 * job texts (dt_job_text), key by key in mine's order (then keys only
 * theirs has). Writes "rank R: KEY is V, rank 0 has V0" into buf (size
 * bytes; V or V0 "not set" for a key one side lacks), with the place the
 * value came from when job is not NULL and KEY is a job key
 * ("(--set train.lr=0.002)", "(job.yaml:12:7)"). Returns 1 when a
 * difference was found, 0 when the texts hold the same keys and values
 * (buf is then ""). */
int dt_agree_diff(const char *mine, const char *theirs, int rank,
		  const struct dt_job *job, char *buf, size_t size);

#endif
