/* SPDX-License-Identifier: MIT */
/* data.h - training data: IDX files (the MNIST family, LeCun et al.'s
 * format: magic 0x0000TTDD, big-endian dimensions, raw data), CSV, NPY,
 * raw token files and text, plain or gzip (zlib reads both), the epoch
 * shuffle and each rank's slice of a batch. Downloads are in fetch.h. */
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

/* Reads only the header of path: type, dimensions and element size, with
 * the same checks as dt_idx_read; idx->data stays NULL. For plans, which
 * must not read the data. Errors as dt_idx_read. */
enum dt_status dt_idx_peek(const char *path, struct dt_idx *idx,
			   struct dt_error *err);

/* A labelled dataset in memory: n samples of sample_size features. The
 * features are kept as bytes when the file holds u8 (a quarter of the
 * memory), as floats otherwise; dt_dataset_gather converts and scales. */
struct dt_norm;

struct dt_dataset {
	int64_t n;
	int64_t sample_size;
	int64_t shape[3];	/* per-sample shape (rows, cols[, ch]) */
	int n_shape;
	uint8_t *x_u8;		/* (n, sample_size) or NULL */
	float *x_f32;		/* (n, sample_size) or NULL */
	int32_t *y;		/* (n) class labels, or NULL (targets, or
				 * inputs without labels) */
	float *t;		/* (n, n_targets) regression targets, or NULL */
	int64_t n_targets;	/* floats per sample in t; 0 without */
	float scale;		/* applied to features at gather time */
	const struct dt_norm *norm;	/* applied after the scale, or NULL;
					 * borrowed */
};

/* The scale a dataset gets when the job gives none (data.scale unset):
 * 1/255 for features stored as bytes (IDX or NPY uint8: pixels), 1 for
 * anything else (floats, wider integers, CSV text). */
float dt_dataset_auto_scale(const struct dt_dataset *ds);

/* data.normalize: a per-feature affine map after the scale,
 * x' = (x - shift[j]) * mul[j] in float32 (shift and mul rounded to
 * float32 from the doubles below), with statistics of the training
 * split. Standard: shift the mean, mul 1/std (population standard
 * deviation); minmax: shift the minimum, mul 1/(max - min); a feature
 * that never varies gets mul 1. The numbers must come out the same on
 * every rank and every run over the same data: dt_norm_fit sums in
 * double, sample by sample in file order. */
#define DT_NORM_NONE 0
#define DT_NORM_STANDARD 1
#define DT_NORM_MINMAX 2

struct dt_norm {
	int kind;		/* DT_NORM_* */
	double scale;		/* the data's scale, as resolved */
	int64_t n;		/* features; 0 with DT_NORM_NONE */
	double *shift, *mul;	/* (n) each, heap */
	float *fshift, *fmul;	/* (n) each: the same as float32 */
};

/* Fits norm (kind DT_NORM_*) to the features of ds as dt_dataset_gather
 * gives them before any normalisation (each times ds->scale, in
 * float32), summing in double: two passes for the standard deviation.
 * norm->scale becomes ds->scale. norm is the caller's; its arrays are
 * heap (dt_norm_fini). */
void dt_norm_fit(struct dt_norm *norm, int kind, const struct dt_dataset *ds);
/* Frees the arrays and empties *norm; accepts NULL. */
void dt_norm_fini(struct dt_norm *norm);
/* The kind's word: "none", "standard", "minmax". */
const char *dt_norm_kind_name(int kind);
/* Applies norm to count samples of norm->n features in x (in place);
 * nothing for DT_NORM_NONE. */
void dt_norm_apply(const struct dt_norm *norm, float *x, int64_t count);
/* norm as text, for a checkpoint's meta.json: "scale S\nnormalize KIND
 * N\n" then N lines "SHIFT MUL", the doubles in %.17g (read back to the
 * same bits). Heap. */
char *dt_norm_text(const struct dt_norm *norm);
/* Parses dt_norm_text's text into norm (emptied first). DT_ERR_FORMAT
 * naming `where` and the line on anything else; norm then empty. */
enum dt_status dt_norm_parse(const char *text, const char *where,
			     struct dt_norm *norm, struct dt_error *err);

/* Loads images + labels, checks that the counts agree and every label is in
 * [0, n_classes) (DT_ERR_DATA naming the labels file, the record index and
 * the value). scale multiplies every feature (0: dt_dataset_auto_scale).
 * On success ds owns its
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

/* Copies the samples idx[0..count) into x (count, sample_size), scaled
 * and, with ds->norm, normalised, and their labels into y (count). Every
 * idx[k] must be in [0, n); y may be NULL when the labels are not wanted
 * (it is not written either when ds->y is NULL). x and y are the
 * caller's. Targets: dt_dataset_gather_targets. */
void dt_dataset_gather(const struct dt_dataset *ds, const int64_t *idx,
		       int64_t count, float *x, int32_t *y);

/* The targets of samples idx[0..count) into t (count, n_targets); ds->t
 * must be there. t is the caller's. */
void dt_dataset_gather_targets(const struct dt_dataset *ds,
			       const int64_t *idx, int64_t count, float *t);

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

/* ---- more formats (csv.c, npy.c, tokens.c, text.c) --------------------- *
 * Each reader takes plain or gzip files alike (zlib) and fails with
 * DT_ERR_IO when a file cannot be opened or read, DT_ERR_FORMAT for a
 * malformed file and DT_ERR_DATA for well-formed values that cannot be
 * used. Binary readers name "PATH: byte OFFSET: ..." (offsets count bytes
 * of the decompressed stream), the CSV reader "PATH: line L, column C:
 * ..." (both 1-based). On error the output struct is left empty and its
 * _fini is still safe. */

/* How to read a CSV file: numeric cells, one row per sample, one column of
 * integer class labels or n_targets columns of float targets (or, for
 * predict, possibly none). Cells may be quoted ("1.5"); blank lines and a
 * UTF-8 byte-order mark are skipped; numbers are read as strtod does in
 * the C locale. */
#define DT_CSV_HEADER_DETECT (-1)
struct dt_csv_opts {
	int header;		/* 1: line 1 names the columns; 0: it is data;
				 * DT_CSV_HEADER_DETECT: a header when one
				 * of its cells is not a number */
	int label_col;		/* 0-based; negative counts from the end
				 * (-1 = the last column) */
	char delimiter;		/* 0 means ',' */
	int64_t n_classes;	/* labels must be in [0, n_classes); > 0
				 * unless n_targets > 0 */
	int64_t n_targets;	/* > 0: that many float target columns
				 * starting at label_col (-1: the last
				 * n_targets columns), no class label */
	int64_t n_features;	/* > 0 (predict): rows of n_features
				 * columns have no label or targets, rows of
				 * n_features + the label's columns have them
				 * (read and dropped); the first data row
				 * decides, any other width is refused naming
				 * its line and column */
	float scale;		/* multiplies every feature; 0 means 1 */
};

/* Loads a CSV file into ds: every column but the label (or targets) is a
 * feature (ds->x_f32, shape (n_columns - label columns)), the label
 * column gives ds->y, target columns ds->t. The first data row fixes
 * the number of columns; a header has as many, or (rows without the
 * label, for predict) as many and the label's. Errors: DT_ERR_FORMAT
 * "PATH: line L, column C: 3 columns, expected 5 (as on line 2)" (C the
 * first column missing or extra, line 2 the first data row), "PATH: line
 * 1: the header has 6 columns, the first data row 4 (line 2)", "PATH:
 * line L, column C: expected a
 * number, found \"abc\"", an empty cell, an unterminated quote, fewer
 * than 2 columns; DT_ERR_DATA for a non-finite or out-of-float32-range
 * number, a label that is not an integer in [0, n_classes), a label
 * column past the last one, or a file without data rows. On success ds
 * owns its buffers. */
enum dt_status dt_dataset_load_csv(const char *path,
				   const struct dt_csv_opts *opts,
				   struct dt_dataset *ds, struct dt_error *err);

/* NPY element types dtrain reads (little-endian in the file). */
enum dt_npy_dtype {
	DT_NPY_U8 = 1,		/* '|u1' */
	DT_NPY_I32 = 2,		/* '<i4' */
	DT_NPY_I64 = 3,		/* '<i8' */
	DT_NPY_F32 = 4,		/* '<f4' */
	DT_NPY_F64 = 5,		/* '<f8' */
};

/* One .npy array in memory (NumPy's format, numpy/lib/format.py:
 * "\x93NUMPY", major, minor, a u16 (v1) or u32 (v2, v3) little-endian
 * header length, a Python dict literal with 'descr', 'fortran_order' and
 * 'shape', then the elements in C order). */
struct dt_npy {
	enum dt_npy_dtype dtype;
	char descr[8];		/* as in the file, for messages */
	int n_dims;		/* 0..8 (0 = a scalar) */
	int64_t dims[8];
	size_t elem_size;
	void *data;		/* prod(dims) elements, host order */
	int64_t descr_off;	/* byte offsets of the descr and shape
				 * values, for messages */
	int64_t shape_off;
};

/* Reads path (.npy, plain or gzip). Checks the magic, the version (1, 2
 * or 3), the header dict (exactly the three keys, fortran_order False,
 * one of the five dtypes, at most 8 dimensions, a size this machine can
 * address) and that the body holds exactly the promised bytes:
 * DT_ERR_FORMAT "PATH: byte OFFSET: truncated: expected N bytes of data,
 * found M ...", "... fortran_order is True ...", "... dtype '>f4' is not
 * supported ...". On success arr->data is owned by arr (dt_npy_fini). */
enum dt_status dt_npy_read(const char *path, struct dt_npy *arr,
			   struct dt_error *err);
/* Frees arr->data and empties *arr; accepts NULL. */
void dt_npy_fini(struct dt_npy *arr);

/* Loads a features .npy (2 to 4 dimensions: records, then each sample's
 * shape; any of the five dtypes, uint8 kept as bytes, the rest converted
 * to float32 and checked finite) and a labels .npy (1 dimension, uint8,
 * int32 or int64, every value in [0, n_classes)). n_classes 0: the
 * labels file holds regression targets instead, (records) or (records,
 * K) of any dtype, into ds->t as float32 (checked finite). labels NULL
 * (predict): features only. scale 0: dt_dataset_auto_scale. Messages as
 * for dt_dataset_load_idx. On success ds owns its buffers. */
enum dt_status dt_dataset_load_npy(const char *features, const char *labels,
				   int64_t n_classes, float scale,
				   struct dt_dataset *ds, struct dt_error *err);

/* A stream of token ids for a language model, cut into samples: sample s
 * is the window of `context` tokens starting at s * stride, and its
 * targets are the same window shifted by one (each position's next
 * token). Tokens are kept as the file has them, uint16 or uint32, so a
 * plain file is mapped, not copied. */
struct dt_token_data {
	int64_t n_tokens;
	int elem_size;		/* 2 (uint16) or 4 (uint32) */
	const void *tokens;	/* (n_tokens), host order */
	int64_t vocab_size;	/* every token is < vocab_size */
	int64_t context;	/* tokens per sample, >= 1 */
	int64_t stride;		/* tokens between sample starts, >= 1 */
	int64_t n;		/* samples:
				 * (n_tokens - context - 1) / stride + 1 */
	/* private: how tokens is held */
	void *owned;		/* malloc'd or mapped block */
	size_t owned_len;	/* its length, for munmap */
	int mapped;
	/* Sharded data (dt_tokens_open_shards): tokens is NULL and the
	 * windows are numbered across the shards in order. */
	int64_t n_shards;
	struct dt_token_shard *shards;	/* (n_shards) */
	/* Shards named by URL: the bytes of them the download cache may
	 * hold at once (0: no bound), and how their files hold ids. */
	int64_t cache_max;
	int file_kind;		/* enum dt_token_file */
	/* The thread that downloads URL shards ahead of their reads
	 * (dt_tokens_ahead_start), or NULL; the rank a failure names, -1
	 * when unknown. */
	struct dt_shard_ahead *ahead;
	int rank;
};

/* ---- token shards (shards.c) ------------------------------------------- */

/* The most files one pattern or list may name. */
#define DT_SHARDS_MAX 1000000
/* llm.c's token shards (dev/data/data_common.py): 256 little-endian int32,
 * [0] the magic, [1] the version (1: uint16 tokens), [2] the token count,
 * the rest unused; then the tokens. */
#define DT_LLMC_MAGIC 20240520
#define DT_LLMC_HEADER_BYTES 1024

/* How the files of a token source hold their ids (little-endian). */
enum dt_token_file {
	DT_TOKFILE_RAW16 = 1,	/* uint16, no header (nanoGPT's train.bin) */
	DT_TOKFILE_RAW32 = 2,	/* uint32, no header */
	DT_TOKFILE_LLMC = 3,	/* llm.c's header, then uint16 */
};

/* One mapped shard of a token source. */
struct dt_token_shard {
	char *path;			/* owned */
	const unsigned char *tokens;	/* (n_tokens) ids, little-endian,
					 * inside map */
	int64_t n_tokens;
	int64_t bytes;			/* the file's size */
	int64_t first;			/* global index of its first window */
	int64_t n;			/* its windows (0 when too short) */
	void *map;			/* the whole file, read-only */
	size_t map_len;
	/* A URL (path is the URL): map is NULL until the first window of
	 * the shard is gathered, when it is downloaded into the cache
	 * (local, owned) and mapped; an eviction unmaps it again. */
	int remote;
	char *local;
	/* Set (atomically) by the ahead thread when it deleted the cache
	 * file of a shard this process maps: the reading thread unmaps it
	 * before its next read, and fetches it again if it needs it; held
	 * (atomic) says whether this process maps it. */
	int stale;
	int held;
};

/* Whether path is a pattern (has '{', '*', '?' or '[') rather than one
 * file's name: a local file of that very name that exists is that file
 * (access(2)), so data/train[1].csv reads as itself. In an http or https
 * URL only the path after the host
 * counts, up to its query or fragment, and '?' starts the query: a URL
 * such as https://host/train.npy?token=abc is one file. */
int dt_shards_is_pattern(const char *path);

/* The first '*' or '[' in the path of the http or https URL url (after
 * the host, before a query or fragment), which no server can list; NULL
 * when there is none or url is not a URL. */
const char *dt_shards_url_wildcard(const char *url);

/* Expands pattern into the files it names: each brace group, left to
 * right, is a list {a,b,c} or a range {FIRST..LAST} of decimal numbers
 * (zero-padded to FIRST's width when FIRST has a leading 0, as bash
 * does: {000..127} gives 000 to 127); braces do not nest; then each name
 * with '*', '?' or '[' is expanded by glob(3), sorted, and must match at
 * least one file. A name without wildcards is kept whether or not the
 * file exists (opening it says). *names (n strings; free with
 * dt_shards_names_free) and *n. Errors: DT_ERR_DATA "PATTERN: byte N:
 * '{' without its '}'", a range that is not {FIRST..LAST} of decimal
 * numbers or goes down, braces with neither, more than DT_SHARDS_MAX
 * names; DT_ERR_IO "PATTERN: no file matches GLOB". On error *names is
 * NULL and *n 0. */
enum dt_status dt_shards_expand(const char *pattern, char ***names,
				int64_t *n, struct dt_error *err);
/* Frees n names and the array; accepts NULL. */
void dt_shards_names_free(char **names, int64_t n);

/* Checks the llm.c header hdr (DT_LLMC_HEADER_BYTES bytes, or fewer when
 * file_bytes is smaller) of the file path of file_bytes bytes, and sets
 * *n_tokens to its token count. Errors, DT_ERR_FORMAT naming the file,
 * the field and its byte offset: "PATH: byte 1000: the file ends inside
 * the 1024-byte llm.c header", "PATH: byte 0: header field magic is M,
 * expected 20240520", "PATH: byte 4: header field version is V,
 * expected 1", "PATH: byte 8: header field token count is N, but the
 * file's B bytes after the header hold M uint16 tokens". */
enum dt_status dt_llmc_header_check(const char *path,
				    const unsigned char *hdr,
				    int64_t file_bytes, int64_t *n_tokens,
				    struct dt_error *err);

/* Opens the token files paths[0..n_paths) (n_paths >= 1) as one source
 * without reading them into memory: each is mapped read-only and its
 * header (llmc) or length checked; each shard is cut into its own
 * windows of context tokens, stride apart (0: context), numbered across
 * the shards in order, so td->n is the sum of every shard's windows. The
 * tokens are scanned once (every id below vocab_size when it is > 0,
 * else td->vocab_size becomes the largest + 1), a piece at a time, and
 * the pages are dropped from the mapping after. Gzip files are refused.
 * Errors: DT_ERR_IO "PATH: cannot open: ..."; DT_ERR_FORMAT as
 * dt_llmc_header_check, "PATH: byte N: the file ends inside a token",
 * "PATH: byte 0: empty token file" or a gzip file; DT_ERR_DATA "PATH:
 * byte B: token T (index I) is not below vocab_size V" or no shard long
 * enough for one sample. On success td owns the mappings (dt_tokens_fini);
 * on error td is empty. */
enum dt_status dt_tokens_open_shards(char *const *paths, int64_t n_paths,
				     enum dt_token_file kind,
				     int64_t vocab_size, int64_t context,
				     int64_t stride, struct dt_token_data *td,
				     struct dt_error *err);
/* dt_tokens_open_shards for http(s) URLs: each shard's header (llmc) or
 * size is read with one ranged request (dt_fetch_head) and checked; no
 * shard is downloaded here. A shard is downloaded into the cache when its
 * first window is gathered, with a lock (CACHE/shards.lock) held across
 * the node's processes; before it is, the least recently used files of
 * this list in the cache (by modification time, touched on every gather)
 * are deleted until the list's files there plus the new shard fit in
 * cache_max bytes (0: no bound). vocab_size must be given (> 0): a
 * shard's tokens are checked against it when it arrives. Errors as
 * dt_tokens_open_shards, and DT_ERR_NET (dt_fetch_head), DT_ERR_DATA when
 * vocab_size is 0, DT_ERR_JOB when the largest shard is larger than
 * cache_max ("N bytes cannot hold shard I (URL) of M bytes; give at least
 * M, ...": the caller puts the place of its setting in front). A download or
 * check that fails once training runs cannot be returned through
 * dt_tokens_gather: the message, naming the rank (dt_tokens_ahead_start),
 * the URL, the shard and the size expected, goes to stderr and the
 * process aborts. */
enum dt_status dt_tokens_open_urls(char *const *urls, int64_t n_urls,
				   enum dt_token_file kind,
				   int64_t vocab_size, int64_t context,
				   int64_t stride, int64_t cache_max,
				   struct dt_token_data *td,
				   struct dt_error *err);
/* Starts a thread that downloads td's URL shards into the cache ahead of
 * their reads, as dt_tokens_ahead names them, each unless it is cached
 * already. The cache's bound holds: room is made by deleting the least
 * recently read shards, never one that dt_tokens_ahead named last (a
 * shard of this process's mapped and deleted is unmapped before the next
 * read); when there is no such room the shard is left for its read to
 * fetch. A download that fails here is not an error: the read fetches
 * the shard again and aborts with the failure (dt_tokens_open_urls),
 * naming rank (-1: none). Does nothing (and returns 0) when td has no URL
 * shards or depth <= 0; -1 when the thread cannot be created (reads then
 * fetch on demand, as without it). dt_tokens_fini stops it. Only one
 * thread may gather from td while it runs. */
int dt_tokens_ahead_start(struct dt_token_data *td, int64_t depth,
			  int rank);
/* The windows (global indices into td, count >= n_now >= 0) this process
 * reads next, in order: idx[0, n_now) now, the rest after them. The
 * ahead thread drops the list it had and keeps the shards of the first
 * n_now (at most 256 of them), then fetches the first `depth` other
 * distinct shards of the rest. Does not wait; nothing when no thread
 * runs. */
void dt_tokens_ahead(const struct dt_token_data *td, const int64_t *idx,
		     int64_t n_now, int64_t count);
/* The shard list's fingerprint: one "NAME<TAB>BYTES" line per shard, in
 * order, NAME the file's last path component. Caller frees. */
char *dt_tokens_shard_list(const struct dt_token_data *td);

/* Reads a flat file of little-endian token ids (uint16 when elem_size is
 * 2, uint32 when 4; no header; plain files are mmap'd read-only, .gz
 * files inflated into memory). vocab_size > 0 makes every token < it a
 * requirement; 0 takes the largest token + 1. context >= 1; stride 0
 * means context (windows that do not overlap).
 * Errors: DT_ERR_FORMAT "PATH: byte N: the file ends inside a token ..."
 * or an empty file; DT_ERR_DATA "PATH: byte B: token T (index I) is not
 * below vocab_size V", a token above INT32_MAX, or "PATH: N tokens, too
 * few for one sample of context C (needs C + 1)". On success td owns its
 * memory (dt_tokens_fini). */
enum dt_status dt_tokens_load(const char *path, int elem_size,
			      int64_t vocab_size, int64_t context,
			      int64_t stride, struct dt_token_data *td,
			      struct dt_error *err);
/* Cuts td's tokens (as a loader left them) again into windows of inputs
 * only, for a prediction: context tokens each (context >= 1), stride
 * apart (0: context), with no next-token label after the last, so N
 * tokens give (N - context) / stride + 1 windows, where training's need
 * one token more. Sets td->context, stride and n; dt_tokens_gather's y
 * must then be NULL. Errors: DT_ERR_DATA "PATH: N tokens, too few for
 * one input of context C", td as it was. */
enum dt_status dt_tokens_window_inputs(struct dt_token_data *td,
				       const char *path, int64_t context,
				       int64_t stride, struct dt_error *err);
/* Releases td's memory and empties *td; accepts NULL. */
void dt_tokens_fini(struct dt_token_data *td);
/* For each idx[k] (in [0, td->n)) writes sample idx[k]'s input tokens to
 * x (count, context) and its next-token targets to y (count, context);
 * y may be NULL. x and y are the caller's. */
void dt_tokens_gather(const struct dt_token_data *td, const int64_t *idx,
		      int64_t count, int32_t *x, int32_t *y);

/* What a text's tokens are. */
enum dt_text_unit {
	DT_TEXT_BYTES = 1,	/* each byte */
	DT_TEXT_CHARS = 2,	/* each Unicode code point of UTF-8 text */
	DT_TEXT_BPE = 3,	/* byte-level BPE tokens (data/bpe.h) */
};

struct dt_bpe;

/* A character-level vocabulary: token id i stands for units[i]. Sorted
 * ascending, so the same text always gives the same ids. Or, with unit
 * DT_TEXT_BPE, a BPE tokenizer's ids (units NULL, bpe set). */
struct dt_vocab {
	enum dt_text_unit unit;
	int64_t size;
	uint32_t *units;	/* (size) bytes or code points, ascending */
	struct dt_bpe *bpe;	/* DT_TEXT_BPE: the tokenizer, owned */
};

/* Builds the vocabulary of the text at path (plain or gzip): every
 * distinct byte, or every distinct code point (the text must be valid
 * UTF-8: DT_ERR_FORMAT "PATH: byte N: invalid UTF-8: ..."), sorted. An
 * empty text is DT_ERR_DATA. On success v owns units (dt_vocab_fini). */
enum dt_status dt_vocab_build(const char *path, enum dt_text_unit unit,
			      struct dt_vocab *v, struct dt_error *err);
/* Writes v to path, through PATH.tmp, fsync and rename. The file:
 *   byte 0   "DTVOCAB\0"            byte 16  u32 unit (1 bytes, 2 chars)
 *   byte 8   u32 version (1)        byte 20  u32 zero
 *   byte 12  u32 header size (32)   byte 24  i64 count
 *   then count u32 units, then a u32 CRC-32 (zlib's) of all bytes before
 *   it; every field little-endian. Returns DT_ERR_IO on failure (no file
 * is left at path or PATH.tmp). */
enum dt_status dt_vocab_save(const struct dt_vocab *v, const char *path,
			     struct dt_error *err);
/* Reads a file written by dt_vocab_save, checking every field, the order
 * of the units and the CRC ("PATH: byte N: ..." with DT_ERR_FORMAT). On
 * success v owns units. */
enum dt_status dt_vocab_load(const char *path, struct dt_vocab *v,
			     struct dt_error *err);
/* Frees v->units (and v->bpe) and empties *v; accepts NULL. */
void dt_vocab_fini(struct dt_vocab *v);
/* Reads a BPE tokenizer (dt_bpe_load: a tokenizer.json, or GPT-2's
 * encoder.json with vocab.bpe beside it) into v: unit DT_TEXT_BPE, size
 * its ids. Errors as dt_bpe_load's. dt_vocab_save of such a v writes the
 * tokenizer as a tokenizer.json. */
enum dt_status dt_vocab_load_bpe(const char *path, struct dt_vocab *v,
				 struct dt_error *err);
/* The id of a byte or code point (for BPE: of the one-byte token of a
 * byte), or -1 if v lacks it. */
int64_t dt_vocab_id(const struct dt_vocab *v, uint32_t unit);
/* Writes the text of token id (in [0, v->size)) to out: one byte, or the
 * code point's UTF-8 (1 to 4 bytes). Returns the length; out is not
 * terminated. */
size_t dt_vocab_piece(const struct dt_vocab *v, int64_t id, char out[4]);

/* Turns the text at path into token ids with vocabulary v and cuts them
 * into samples as dt_tokens_load does (td->vocab_size = v->size; ids are
 * uint16 when v->size <= 65536). A BPE vocabulary encodes once: the ids
 * are kept in the download cache keyed by the tokenizer's and the text's
 * sha256 (dt_bpe_text_encode) and mapped from there the next time. Errors: as dt_vocab_build, and
 * DT_ERR_DATA "PATH: byte N: character U+00E9 is not in the vocabulary"
 * and too few tokens for one sample. On success td owns its memory. */
enum dt_status dt_text_encode(const char *path, const struct dt_vocab *v,
			      int64_t context, int64_t stride,
			      struct dt_token_data *td, struct dt_error *err);

/* What a plan needs to know of a token or text file without holding it:
 * its (decompressed) bytes, the UTF-8 characters among them (lead bytes)
 * and how many distinct code points those are (the vocabulary's size for
 * text_unit utf8). */
struct dt_text_count {
	int64_t bytes;
	int64_t chars;
	int64_t distinct_chars;
};

/* Reads path (plain or gzip) once, in 1 MiB pieces, and fills *c. Does
 * not check that the text is valid UTF-8 (the loader does). Errors:
 * DT_ERR_IO "PATH: cannot open: ..."; DT_ERR_FORMAT "PATH: byte N: ..." for
 * a gzip stream that is corrupt or cut. */
enum dt_status dt_text_count(const char *path, struct dt_text_count *c,
			     struct dt_error *err);

#endif
