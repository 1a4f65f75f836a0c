/* SPDX-License-Identifier: MIT */
/* ckpt.h - checkpoints: the on-disk format, atomic save, verification,
 * finding the newest good checkpoint, load, pruning, and safetensors export.
 *
 * A checkpoint is one directory under the run's checkpoint directory:
 *
 *   CKPT_DIR/step-000000120/
 *     params.safetensors       the parameters
 *     optim.safetensors        optimizer state (momentum, Adam moments, ...)
 *       or optim.safetensors.gz  the same file, gzip-compressed
 *     meta.json                step, epoch, data position, seed, layout,
 *                              extra scalars and the resolved job text
 *     MANIFEST.json            written last: every file above with its size
 *                              in bytes and the CRC-32 of its bytes on disk
 *
 * Tensor files follow the safetensors format
 * (https://github.com/huggingface/safetensors, "Format"): an 8-byte
 * little-endian unsigned header length N, N bytes of UTF-8 JSON padded with
 * spaces to a multiple of 8,
 *   {"NAME": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [b, e]},
 *    ..., "__metadata__": {"producer": "dtrain", "crc32:NAME": "1a2b3c4d"}}
 * then the tensors' raw little-endian bytes, data_offsets counted from the
 * first byte after the header, contiguous and in file order. dtrain adds one
 * metadata entry per tensor, "crc32:NAME", the zlib CRC-32 of its bytes as
 * 8 lowercase hex digits; other readers ignore it. numpy reads a file with
 * json.loads on the header and numpy.frombuffer(..., "<f4") on each range;
 * PyTorch with safetensors.torch.load_file. The compressed optimizer file is
 * a dtrain extension: a plain gzip stream (RFC 1952) whose content is a
 * safetensors file, so `gunzip` turns it into a standard one.
 *
 * A save builds the directory under a hidden temporary name
 * (.step-000000120.tmp.PID), fsyncs every file, writes MANIFEST.json last,
 * fsyncs it and the directory, reads the whole checkpoint back through the
 * verifier, renames the directory to its final name and fsyncs the parent.
 * A directory at a final name is therefore never partial; names starting
 * with '.' are ignored by every reader.
 *
 * Bit-exact resume needs, besides parameters and optimizer state, only what
 * struct dt_ckpt_meta holds: the random numbers are counter-based
 * (util/rng.h) and the learning-rate schedule is a function of the step. */
#ifndef DT_CKPT_CKPT_H
#define DT_CKPT_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

#define DT_CKPT_MAX_DIMS 4
#define DT_CKPT_NAME_MAX 256	/* tensor name, including the NUL */
#define DT_CKPT_KEY_MAX 64	/* extra-metadata key, including the NUL */
#define DT_CKPT_MAX_EXTRA 4096	/* extra-metadata entries */
#define DT_CKPT_RUN_ID_MAX 64	/* a run's id, including the NUL */
#define DT_CKPT_RUN_DIR_MAX 4096	/* its run directory, including the NUL */

/* A tensor to write: n_dims (0..4, 0 = a scalar) dimensions, row-major
 * float32. name: 1..DT_CKPT_NAME_MAX-1 bytes, no control characters, not
 * "__metadata__", unique within its list. Borrowed: nothing is kept. */
struct dt_ckpt_tensor {
	const char *name;
	const float *data;		/* (shape[0], ..., shape[n_dims-1]) */
	int n_dims;
	int64_t shape[DT_CKPT_MAX_DIMS];
};

/* A tensor to read into: the caller's expectation (name, shape) and the
 * buffer that receives shape[0] * ... * shape[n_dims-1] floats. */
struct dt_ckpt_target {
	const char *name;
	float *data;			/* (shape[0], ..., shape[n_dims-1]) */
	int n_dims;
	int64_t shape[DT_CKPT_MAX_DIMS];
};

enum dt_ckpt_scalar_type {
	DT_CKPT_INT64 = 1,
	DT_CKPT_DOUBLE = 2,
};

/* One extra metadata value, e.g. a metric-window accumulator. Doubles are
 * stored by their bits, so they come back identical (NaN payloads too). */
struct dt_ckpt_scalar {
	char key[DT_CKPT_KEY_MAX];	/* non-empty, printable ASCII, unique */
	enum dt_ckpt_scalar_type type;
	int64_t i;			/* when type == DT_CKPT_INT64 */
	double d;			/* when type == DT_CKPT_DOUBLE */
};

/* Everything but tensors that a bit-exact resume needs. dt_ckpt_save only
 * reads it (job_text and extra are borrowed); dt_ckpt_load fills it with
 * heap copies that the caller releases with dt_ckpt_meta_fini. */
struct dt_ckpt_meta {
	int64_t step;		/* optimizer steps completed, >= 0; names the dir */
	int64_t epoch;		/* epoch being consumed, 0-based, >= 0 */
	int64_t epoch_samples;	/* samples of that epoch consumed, all ranks
				 * together (the global data position), >= 0 */
	int64_t optim_steps;	/* dt_optim_steps(), >= 0 */
	uint64_t seed;		/* the job's seed */
	int32_t world_size;	/* ranks at save time, >= 1 */
	int32_t dp_size;	/* data-parallel degree at save time, >= 1 */
	int32_t pp_size;	/* pipeline stages, >= 1 */
	int32_t tp_size;	/* tensor-parallel degree, >= 1 */
	char *job_text;		/* the resolved job as YAML; NULL saves "" */
	char run_id[DT_CKPT_RUN_ID_MAX];	/* the run the checkpoint
						 * belongs to: 1 to 63 of
						 * [0-9A-Za-z_-], or "" (none:
						 * a checkpoint of an older
						 * dtrain) */
	char run_dir[DT_CKPT_RUN_DIR_MAX];	/* that run's directory, for
						 * messages ("" with no id) */
	char *data_shards;	/* the training data's shard list, one
				 * "NAME<TAB>BYTES" line per shard; NULL:
				 * none (not saved) */
	char *data_norm;	/* what the features go through before the
				 * model (data/data.h, dt_norm_text: the
				 * scale and data.normalize's statistics);
				 * NULL: none (not saved) */
	char *data_files;	/* the training data's single files, one
				 * "KEY<TAB>BYTES<TAB>SHA256<TAB>PATH" line
				 * each (train/datafiles.h); NULL: none (not
				 * saved) */
	struct dt_ckpt_scalar *extra;	/* n_extra entries */
	size_t n_extra;		/* <= DT_CKPT_MAX_EXTRA */
};

/* Frees what dt_ckpt_load put in *meta (job_text, data_shards,
 * data_norm, data_files, extra)
 * and zeroes it.
 * Accepts NULL and a zeroed struct. Never call it on a struct whose
 * pointers the caller owns itself. */
void dt_ckpt_meta_fini(struct dt_ckpt_meta *meta);

/* Receives one human-readable line (no newline) per problem found, e.g.
 * "ckpt/step-000000120: params.safetensors: crc32 mismatch for
 * dense0.weight". ctx is the caller's. */
typedef void dt_ckpt_report_fn(void *ctx, const char *line);

/* A dt_ckpt_report_fn that writes "dtrain: warning: LINE\n" to the FILE *
 * given as ctx (stderr, a log file). */
void dt_ckpt_report_file(void *ctx, const char *line);

/* The floats [lo, hi) of tensor j (its index in the list given) of a
 * checkpoint's file `file` (0 the parameters, 1 the optimizer state),
 * into buf (hi - lo floats, at most DT_CKPT_STREAM_FLOATS), for a save
 * whose tensor has no data (dt_ckpt_save, opts->fetch): so a writer
 * whose tensors are elsewhere (other ranks' parts) holds one piece at a
 * time. ctx is the caller's. DT_OK, or an error that ends the save. */
typedef enum dt_status dt_ckpt_fetch_fn(void *ctx, int file, size_t j,
					int64_t lo, int64_t hi, float *buf,
					struct dt_error *err);
#define DT_CKPT_STREAM_FLOATS ((int64_t)1 << 20)	/* a fetched piece */

struct dt_ckpt_opts {
	int64_t keep_last;	/* after a save, keep only this many newest
				 * checkpoints; 0 = keep all */
	bool compress_optim;	/* write optim.safetensors.gz (gzip level 1) */
	dt_ckpt_report_fn *report;	/* problems while pruning; may be NULL */
	void *report_ctx;
	dt_ckpt_fetch_fn *fetch;	/* the data of the tensors given with
					 * data NULL; NULL: every tensor has
					 * its data */
	void *fetch_ctx;
};

/* The path of the checkpoint for step (>= 0) into buf: CKPT_DIR/step-N,
 * N zero-padded to at least 9 digits (step-000000120).
 * DT_ERR_IO if it does not fit in size bytes. */
enum dt_status dt_ckpt_path(char *buf, size_t size, const char *ckpt_dir,
			    int64_t step, struct dt_error *err);

/* Saves a checkpoint for meta->step under ckpt_dir (created if missing; its
 * parent must exist), atomically as described at the top of this file.
 * params: n_params tensors (n_params >= 1); optim: n_optim tensors (0 for
 * plain SGD). opts may be NULL (keep all, uncompressed). A checkpoint that
 * already exists for the same step is replaced, the old one staying in
 * place until the new one is complete. Then, with opts->keep_last = K > 0,
 * removes the checkpoints older than the new one except the newest K - 1
 * that hold a MANIFEST.json; newer step directories (a run resumed from an
 * earlier checkpoint) are left alone. Pruning failures go to opts->report
 * and do not fail the save.
 *
 * With opts->fetch, a tensor given with data NULL is fetched piece by
 * piece (DT_CKPT_STREAM_FLOATS floats): for each file (parameters, then
 * optimizer state), each such tensor in list order for its CRC-32, then
 * again in the same order for its bytes; the bytes written are those of
 * the same tensors given whole. A failure stops the fetches: a caller
 * whose fetches are collective makes the rest itself.
 *
 * Returns DT_OK; DT_ERR_FORMAT for an invalid tensor list or meta (bad
 * name, shape, duplicate, negative field) before anything is written;
 * DT_ERR_IO naming the path for any failed mkdir, write (disk full, file
 * size limit), fsync, read-back or rename. On error the temporary directory
 * is removed and every existing checkpoint is left as it was. */
enum dt_status dt_ckpt_save(const char *ckpt_dir,
			    const struct dt_ckpt_opts *opts,
			    const struct dt_ckpt_meta *meta,
			    const struct dt_ckpt_tensor *params,
			    size_t n_params,
			    const struct dt_ckpt_tensor *optim,
			    size_t n_optim, struct dt_error *err);

/* Checks the checkpoint directory at path: MANIFEST.json parses and lists
 * params.safetensors, one optimizer file and meta.json; every file it lists
 * exists with the listed size and CRC-32; both tensor files have a valid
 * header and every tensor its CRC-32; meta.json is complete and agrees with the manifest's
 * step (and with the directory name when it is step-N). Reads every byte.
 * Returns DT_OK, DT_ERR_FORMAT (damage) or DT_ERR_IO (unreadable), with
 * err->msg "PATH: FILE: reason", e.g. "ckpt/step-000000120:
 * params.safetensors: crc32 mismatch for dense0.weight". */
enum dt_status dt_ckpt_verify(const char *path, struct dt_error *err);

/* Finds the newest valid checkpoint in ckpt_dir. Walks the step-N
 * entries from the highest step down, verifying each; for each one that
 * fails, report(report_ctx, msg) gets the verifier's message (report may
 * be NULL). A step-N entry that is not a directory of its own (a
 * symbolic link, a file) is never followed: it fails as a candidate,
 * named and said why. Names starting with '.' (temporaries) and other
 * names are ignored.
 *
 * Returns DT_OK with the checkpoint's path in path (path_size bytes) and
 * its step in *step; DT_OK with path "" and *step = -1 when there is no
 * checkpoint at all (ckpt_dir missing or holding no step-N entry);
 * DT_ERR_FORMAT when checkpoints exist but none verifies, the message
 * naming how many and the newest one's problem; DT_ERR_IO if ckpt_dir
 * cannot be read or the path does not fit. */
enum dt_status dt_ckpt_find_latest(const char *ckpt_dir, char *path,
				   size_t path_size, int64_t *step,
				   dt_ckpt_report_fn *report, void *report_ctx,
				   struct dt_error *err);

/* Checks that the checkpoint at path belongs to the run run_id (in
 * run_dir): its meta.json's run id is run_id. A checkpoint without one
 * (written by an older dtrain) and an empty run_id (a run directory of
 * an older dtrain) pass. Reads meta.json only (dt_ckpt_verify checks the
 * rest). Returns DT_OK; DT_ERR_USAGE "PATH belongs to run B (in DIR_B),
 * not to run A (in DIR_A)" with the remedy; DT_ERR_FORMAT or DT_ERR_IO
 * when meta.json cannot be read. */
enum dt_status dt_ckpt_check_run(const char *path, const char *run_id,
				 const char *run_dir, struct dt_error *err);

/* Reads the meta.json of the checkpoint at path (no other file, nothing
 * verified beyond it: dt_ckpt_verify checks the rest) into *meta, heap
 * copies to free with dt_ckpt_meta_fini. Returns DT_OK, DT_ERR_FORMAT or
 * DT_ERR_IO naming the checkpoint and meta.json; *meta is then zeroed. */
enum dt_status dt_ckpt_read_meta(const char *path, struct dt_ckpt_meta *meta,
				 struct dt_error *err);

/* Loads the checkpoint at path into the caller's buffers, checking as it
 * reads everything dt_ckpt_verify checks. params/optim list the tensors
 * the caller expects: the files must hold exactly these names (any order)
 * with these shapes, else DT_ERR_FORMAT naming the tensor and both shapes,
 * or the missing or unexpected name. On DT_OK *meta holds heap copies (free
 * with dt_ckpt_meta_fini) and every target buffer is filled. On error
 * *meta is zeroed, the target buffers hold unspecified values, and the
 * status is DT_ERR_FORMAT or DT_ERR_IO with err->msg as in dt_ckpt_verify. */
enum dt_status dt_ckpt_load(const char *path,
			    const struct dt_ckpt_target *params,
			    size_t n_params,
			    const struct dt_ckpt_target *optim, size_t n_optim,
			    struct dt_ckpt_meta *meta, struct dt_error *err);

/* Removes the checkpoints in ckpt_dir older than newest_step except the
 * newest keep - 1 of them that hold a MANIFEST.json (keep = 0: nothing is
 * removed). Never touches newest_step itself, newer steps or temporaries.
 * Each directory that cannot be removed goes to report (may be NULL).
 * Returns DT_OK, or DT_ERR_IO if ckpt_dir cannot be listed. */
enum dt_status dt_ckpt_prune(const char *ckpt_dir, int64_t newest_step,
			     int64_t keep, dt_ckpt_report_fn *report,
			     void *report_ctx, struct dt_error *err);

/* Removes the temporary directories (.step-N.tmp.PID, .step-N.tmp.prune.PID)
 * that a writer killed in the middle of a save, or a prune killed in the
 * middle of a removal, left in ckpt_dir, and sets aside step-N
 * directories without a manifest (never a checkpoint: an older version's
 * interrupted prune, or a manifest lost): renamed to step-N.no-manifest
 * (.K appended where that is taken),
 * their files kept (an empty one is removed), naming each of those to
 * report. Only for a caller that
 * knows no other process is saving there (a run starting or resuming).
 * Each directory that cannot be removed goes to report (may be NULL).
 * Returns DT_OK (also when ckpt_dir does not exist), or DT_ERR_IO if it
 * cannot be listed. */
enum dt_status dt_ckpt_clean_temporaries(const char *ckpt_dir,
					 dt_ckpt_report_fn *report,
					 void *report_ctx,
					 struct dt_error *err);

/* Writes n tensors (n >= 1) to one safetensors file at path, atomically
 * (temporary name in the same directory, fsync, rename, fsync of the
 * directory), with dtrain's crc32 metadata. Returns DT_OK, DT_ERR_FORMAT
 * for an invalid tensor list, DT_ERR_IO naming the path on any write
 * failure, leaving nothing at path or at the temporary name. */
enum dt_status dt_ckpt_export(const char *path,
			      const struct dt_ckpt_tensor *tensors, size_t n,
			      struct dt_error *err);

/* Reads a safetensors file (from dt_ckpt_export, or any writer using only
 * F32 tensors) into targets, matched by name and shape as in dt_ckpt_load.
 * CRC-32s are checked where the file carries them. Returns DT_OK,
 * DT_ERR_FORMAT naming the file and the problem, or DT_ERR_IO. */
enum dt_status dt_ckpt_import(const char *path,
			      const struct dt_ckpt_target *targets, size_t n,
			      struct dt_error *err);

/* ---- checkpoints written in shards -------------------------------------
 *
 * A sharded checkpoint's directory holds no optimizer file; instead:
 *   params.safetensors        the parameters, tensor by tensor as above,
 *                             when one stage holds the whole model
 *                             (pipeline_parallel 1), written by world
 *                             rank 0, which holds them anyway
 *   params-stage-SSS.safetensors  stage SSS's parameters (pipelines),
 *                             each by the stage's first rank
 *   params-tensor-JJJJJJ.safetensors  or params-stage-SSS-tensor-JJJJJJ:
 *                             at parallel.zero 3, where each rank holds
 *                             only its part of the parameters, every
 *                             rank's tensors (those wholly in its part
 *                             in one file, the one its part's end cuts
 *                             in another), JJJJJJ the index of the
 *                             file's first tensor in the stage, so that
 *                             the names sort in the model's order
 *   rank-RRRRR.safetensors    world rank RRRRR's part of the optimizer
 *                             state: spans of the flat buffers ("adam.m",
 *                             "adam.v", "sgd.momentum", the trained floats
 *                             at their one-rank offsets), each a 1-D F32
 *                             tensor named "ARRAY[LO:HI]" (floats LO to
 *                             HI-1); every float in exactly one span
 *   meta.json                 as above
 *   MANIFEST.json             every file above with its size and CRC-32,
 *                             written last by rank 0 once every rank's
 *                             files are durable
 * Each file carries a crc32 per tensor. Any layout reads any other: the
 * reader matches tensors by name and places each span at its offset. */
#define DT_CKPT_SHARD_FILES_MAX 1024	/* shard files at most */

/* One shard file as written: its name in the step directory, its size in
 * bytes and the CRC-32 of its bytes. */
struct dt_ckpt_shard_file {
	char name[64];
	int64_t size;
	uint32_t crc;
};

/* One flat array to read into: name ("adam.m", ...), the caller's buffer
 * of n floats. */
struct dt_ckpt_flat {
	const char *name;
	float *data;		/* (n) */
	size_t n;
};

/* Rank 0 of a sharded save: creates ckpt_dir if missing and the empty
 * temporary directory .step-N.tmp.shards.PID in it, whose path goes to tmp
 * (size bytes) for every rank to write into. DT_ERR_IO naming the path. */
enum dt_status dt_ckpt_shard_begin(const char *ckpt_dir, int64_t step,
				   char *tmp, size_t size,
				   struct dt_error *err);

/* Any rank: writes n >= 1 tensors (named tensors, or spans "ARRAY[LO:HI]"
 * as above) to tmp/name (a plain name ending in .safetensors), fsyncs it
 * and reads it back through the checker; *out gets its name, size and
 * CRC-32. DT_ERR_FORMAT for a bad name or tensor list, DT_ERR_IO naming
 * the file. */
enum dt_status dt_ckpt_shard_write(const char *tmp, const char *name,
				   const struct dt_ckpt_tensor *t, size_t n,
				   struct dt_ckpt_shard_file *out,
				   struct dt_error *err);

/* Rank 0, after every rank's dt_ckpt_shard_write succeeded: writes
 * meta.json and, last, MANIFEST.json listing files (n_files, at most
 * DT_CKPT_SHARD_FILES_MAX) and meta.json; fsyncs the directory, verifies
 * the whole checkpoint (sizes, every tensor's CRC), renames tmp to step-N
 * and prunes as dt_ckpt_save does. On error tmp is removed and
 * DT_ERR_FORMAT or DT_ERR_IO names the problem. */
enum dt_status dt_ckpt_shard_finish(const char *ckpt_dir, const char *tmp,
				    const struct dt_ckpt_opts *opts,
				    const struct dt_ckpt_meta *meta,
				    const struct dt_ckpt_shard_file *files,
				    size_t n_files, struct dt_error *err);

/* Removes the temporary directory of a failed sharded save. */
void dt_ckpt_shard_abort(const char *tmp);

/* 1 when the checkpoint at path has a manifest listing no optimizer file
 * (written in shards: read it with dt_ckpt_load_flat), 0 otherwise
 * (dt_ckpt_load). */
int dt_ckpt_is_sharded(const char *path);

/* Loads the sharded checkpoint at path, whatever layout wrote it: the
 * tensors params (n_params, matched by name and shape, each in exactly one
 * file) and the flat arrays (n_arrays, every float in exactly one span),
 * checking what dt_ckpt_verify checks. On DT_OK *meta holds heap copies
 * (dt_ckpt_meta_fini). Errors as dt_ckpt_load's, naming the file and the
 * tensor, e.g. "ckpt/step-000000004: rank-00001.safetensors: 1200 bytes,
 * MANIFEST.json lists 4168 (truncated): tensor adam.m[512:1024] lies past
 * its end". */
enum dt_status dt_ckpt_load_flat(const char *path,
				 const struct dt_ckpt_target *params,
				 size_t n_params,
				 const struct dt_ckpt_flat *arrays,
				 size_t n_arrays, struct dt_ckpt_meta *meta,
				 struct dt_error *err);

/* A range of one saved tensor to read: floats [lo, hi) of its row-major
 * data (0 and its size: all of it). */
struct dt_ckpt_part {
	const char *name;	/* as saved: "dense0.weight" */
	int n_dims;		/* its expected shape; -1: any shape with at
				 * least hi floats (a tied copy read from its
				 * embedding's table) */
	int64_t shape[DT_CKPT_MAX_DIMS];
	int64_t lo, hi;		/* 0 <= lo <= hi <= its floats */
	float *data;		/* (hi - lo), the caller's */
};

/* A range of one flat array to read: floats [lo, hi) of "adam.m", ... at
 * their one-rank offsets, from whichever spans hold them. */
struct dt_ckpt_span {
	const char *name;
	int64_t lo, hi;
	float *data;		/* (hi - lo), the caller's */
};

/* One rank's own part of the sharded checkpoint at path, whatever layout
 * wrote it (resharding on load): the tensors parts (n_parts, each in
 * exactly one parameter file, or a range of it) and the array ranges
 * spans (n_spans, each float from exactly one saved span, a saved span
 * read only where it meets the range). Reads every tensor file's header
 * and, of the data, only the bytes asked for, straight into the
 * caller's buffers: nothing else is held. A tensor or span read whole
 * has its CRC-32 checked; any file read from must have its manifest
 * size. rank (the caller's world rank) is named in messages. For a
 * checkpoint rank 0 verified (dt_ckpt_find_latest); meta.json is not
 * read (dt_ckpt_read_meta). Returns DT_OK; DT_ERR_FORMAT naming the
 * checkpoint, file, rank and what it needed, e.g. "ckpt/step-000000010:
 * rank 1 needs float 2390 of adam.m, which no readable file holds:
 * rank-00002.safetensors: missing; MANIFEST.json lists it with 9840
 * bytes", or "...: rank 0 needs float 0 of adam.m, which no readable
 * file holds: rank-00001.safetensors: 5000 bytes, MANIFEST.json lists
 * 9840 (truncated), its header unreadable";
 * DT_ERR_IO for a read that fails. The buffers then hold unspecified
 * values. */
enum dt_status dt_ckpt_load_part(const char *path, int rank,
				 const struct dt_ckpt_part *parts,
				 size_t n_parts,
				 const struct dt_ckpt_span *spans,
				 size_t n_spans, struct dt_error *err);

/* Checks, from the headers alone (no data read), that the parameter
 * files of the sharded checkpoint at path hold exactly the tensors params
 * (n_params; their data pointers are not used): each name in one file,
 * with its shape, none the model lacks. For a caller whose ranks then
 * read their parts (dt_ckpt_load_part). Errors as dt_ckpt_load_params'. */
enum dt_status dt_ckpt_check_params(const char *path,
				    const struct dt_ckpt_target *params,
				    size_t n_params, struct dt_error *err);

/* Loads only the parameters of the checkpoint at path (either format:
 * params.safetensors, or the stages' params-stage-SSS.safetensors) into
 * params (n_params), matched by name and shape, each tensor in exactly one
 * file; sizes and CRC-32s checked. For eval, predict and sample. Errors as
 * dt_ckpt_load's. */
enum dt_status dt_ckpt_load_params(const char *path,
				   const struct dt_ckpt_target *params,
				   size_t n_params, struct dt_error *err);

/* Writes the parameters of the checkpoint at path (either format) to the
 * one safetensors file out, atomically: the header first (from the
 * parameter files' headers, tensors in stage order, which is the one-rank
 * model's order), then each tensor streamed from its file in 64 KiB
 * pieces, its CRC-32 checked: never more than that in memory. The bytes
 * equal a one-rank checkpoint's params.safetensors. DT_ERR_FORMAT for a
 * damaged checkpoint (naming file and tensor), DT_ERR_IO naming the path;
 * nothing is left at out or its temporary on error. */
enum dt_status dt_ckpt_export_ckpt(const char *path, const char *out,
				   struct dt_error *err);

#endif
