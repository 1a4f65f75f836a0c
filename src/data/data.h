/* data.h - training data: IDX files (the MNIST family, LeCun et al.'s
 * format: magic 0x0000TTDD, big-endian dimensions, raw data), plain or gzip
 * (zlib reads both), the epoch shuffle and each rank's slice of a batch. */
#ifndef DT_DATA_DATA_H
#define DT_DATA_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

/* One IDX file read into memory. Element types 0x08 (u8), 0x09 (i8),
 * 0x0B (i16), 0x0C (i32), 0x0D (f32), 0x0E (f64) are all converted to the
 * type the caller asks for when the dataset is assembled. */
struct dt_idx {
	int type;		/* IDX type code */
	int n_dims;		/* 1..4 */
	int64_t dims[4];	/* dims[0] = records; unused ones 0 */
	void *data;		/* dims[0]*...*dims[n-1] elements of type, host order */
	size_t elem_size;
};

/* Reads path (plain or .gz). Checks the magic, the type code, the number of
 * dimensions (1..4), that every dimension is > 0 and the total size fits
 * in memory, and that the (decompressed) body holds exactly the promised
 * number of bytes; converts the elements from big-endian to host order.
 * Returns DT_ERR_IO if the file cannot be opened or read, DT_ERR_FORMAT with
 * "PATH: byte OFFSET: ..." naming what is wrong (OFFSET counts bytes of the
 * decompressed stream): "truncated: expected N bytes of data, found M",
 * "trailing data after N bytes", "truncated gzip stream", "corrupt gzip
 * stream", a bad magic, type or dimension. Memory grows with the data that
 * actually arrives, so a lying header cannot exhaust it. On success
 * idx->data is owned by idx (dt_idx_fini); on error *idx is left empty
 * (data NULL), and dt_idx_fini is still safe. */
enum dt_status dt_idx_read(const char *path, struct dt_idx *idx,
			   struct dt_error *err);
/* Frees idx->data and empties *idx; accepts NULL and an empty idx. */
void dt_idx_fini(struct dt_idx *idx);

/* A labelled dataset in memory: n samples of sample_size features. The
 * features are kept as bytes when the file holds u8 (a quarter of the
 * memory), as floats otherwise; dt_dataset_gather converts and scales. */
struct dt_dataset {
	int64_t n;
	int64_t sample_size;
	int64_t shape[3];	/* per-sample shape (rows, cols[, ch]) */
	int n_shape;
	uint8_t *x_u8;		/* (n, sample_size) or NULL */
	float *x_f32;		/* (n, sample_size) or NULL */
	int32_t *y;		/* (n) */
	float scale;		/* applied to features at gather time */
};

/* Loads images + labels, checks that the counts agree and every label is in
 * [0, n_classes) (DT_ERR_DATA naming the labels file, the record index and
 * the value). scale multiplies every feature. On success ds owns its
 * buffers (dt_dataset_fini).
 * images: 2 to 4 dimensions (records, then the sample shape), any IDX type;
 * float images must be finite. labels: 1 dimension, an integer type.
 * n_classes > 0 (a programmer error otherwise).
 * Errors: whatever dt_idx_read returns for either file; DT_ERR_FORMAT for
 * a wrong shape or label type; DT_ERR_DATA "IMAGES: images has N records,
 * labels has M (LABELS); ..." and "LABELS: record I: label V out of range
 * [0, C)", and for a NaN or infinite feature. On error *ds is left empty
 * (all pointers NULL) and dt_dataset_fini is still safe. */
enum dt_status dt_dataset_load_idx(const char *images, const char *labels,
				   int64_t n_classes, float scale,
				   struct dt_dataset *ds, struct dt_error *err);
/* Frees the buffers and empties *ds; accepts NULL. */
void dt_dataset_fini(struct dt_dataset *ds);

/* Copies the samples idx[0..count) into x (count, sample_size), scaled,
 * and their labels into y (count). Every idx[k] must be in [0, n); y may be
 * NULL when the labels are not wanted. x and y are the caller's. */
void dt_dataset_gather(const struct dt_dataset *ds, const int64_t *idx,
		       int64_t count, float *x, int32_t *y);

/* The epoch's order: perm[0..n) becomes a permutation of 0..n-1 that is a
 * pure function of (seed, epoch) (Fisher-Yates driven by util/rng.h), the
 * same on every rank and every world size. perm (n) is the caller's. */
void dt_shuffle(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm);

/* Which samples of a global batch one rank computes. Global batch `step`
 * of an epoch covers perm[step*global_batch, (step+1)*global_batch); the
 * data-parallel rank dp_rank of dp_size takes the contiguous slice of
 * global_batch/dp_size positions starting at dp_rank*global_batch/dp_size,
 * and micro-batch k of it the next micro_batch positions. Returns the offset
 * into perm of micro-batch k's first sample. */
/* The arithmetic must divide (global_batch = micro_batch * accumulation
 * steps * dp_size, 0 <= k < accumulation steps, as plan/ guarantees);
 * anything else is a programmer error and trips an assert. */
int64_t dt_shard_offset(int64_t step, int64_t global_batch, int dp_rank,
			int dp_size, int64_t micro_batch, int64_t k);

/* Global batches per epoch (the remainder of n is dropped, identically on
 * every rank) and the number of samples dropped (in *dropped unless it is
 * NULL). global_batch > 0. */
int64_t dt_steps_per_epoch(int64_t n, int64_t global_batch, int64_t *dropped);

#endif
