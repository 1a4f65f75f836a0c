/* priv.h - what the files of src/job/ share with each other; nothing
 * outside src/job/ includes it.
 *
 *   yaml.c    libyaml events -> a small node tree with 1-based positions,
 *             YAML 1.2 scalar rules (null, bool, numbers)
 *   schema.c  the table of keys, key lookup, "did you mean"
 *   apply.c   node tree -> struct dt_job, one key at a time, with checks
 *   job.c     dt_job_parse / dt_job_load: defaults, file, --set, final checks
 *   write.c   dt_job_write, dt_job_pos, dt_job_where, error messages */
#ifndef DT_JOB_PRIV_H
#define DT_JOB_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job/job.h"
#include "util/status.h"

/* ---- yaml.c ---- */

enum dt_ynode_kind {
	DT_YNODE_SCALAR,
	DT_YNODE_MAP,
	DT_YNODE_SEQ,
};

/* One node of a parsed document. A mapping's kids alternate key, value. */
struct dt_ynode {
	enum dt_ynode_kind kind;
	int line, col;			/* 1-based start of the node */
	char *text;			/* scalar: NUL-terminated UTF-8 */
	size_t len;			/* scalar: bytes in text */
	bool quoted;			/* scalar: any style but plain */
	struct dt_ynode **kids;
	int n_kids;
};

/* A parse failure: 1-based place (line 0 when libyaml gave none) and the
 * problem in words. */
struct dt_yaml_error {
	int line, col;
	char msg[512];
};

/* Parses one YAML document from text (len bytes, need not end in NUL).
 * Returns true and sets *root to the tree (NULL for a stream with no
 * document: empty or only comments), which the caller frees with
 * dt_yaml_free. Returns false and fills *ye on a syntax error, on a second
 * document, on aliases, tags, NUL characters or nesting deeper than 64;
 * *root is then NULL. A tab used as indentation is reported as such rather
 * than as libyaml's scanner error. */
bool dt_yaml_parse(const char *text, size_t len, struct dt_ynode **root,
		   struct dt_yaml_error *ye);

/* Frees a tree from dt_yaml_parse; NULL is fine. */
void dt_yaml_free(struct dt_ynode *n);

/* True for a plain scalar YAML 1.2 reads as null: empty, ~, null. */
bool dt_yaml_is_null(const struct dt_ynode *n);

enum dt_ynum_kind {
	DT_YNUM_NOT = 0,	/* not a number */
	DT_YNUM_INT,		/* 12, -3, 0x1f, 0o17 */
	DT_YNUM_FLOAT,		/* 1.5, .5, 1e-3, 2. */
	DT_YNUM_SPECIAL,	/* .inf, -.inf, .nan */
};

/* What a plain scalar's text means as a YAML 1.2 (core schema) number. */
struct dt_ynum {
	enum dt_ynum_kind kind;
	bool neg;		/* INT: a leading minus */
	bool overflow;		/* INT: magnitude does not fit 64 bits */
	uint64_t mag;		/* INT: magnitude */
	double value;		/* every kind: the value as a double */
};

/* Classifies text (NUL-terminated) as a number; fills *num, returns its
 * kind (DT_YNUM_NOT when text is not one). */
enum dt_ynum_kind dt_yaml_number(const char *text, struct dt_ynum *num);

/* Describes a node for "found ..." in messages: "fast" in double quotes for
 * a plain scalar, a quoted string "0.1", nothing, null, a mapping, a list. */
void dt_yaml_describe(const struct dt_ynode *n, char *buf, size_t size);

/* The 1-based line `line` of text: sets *n to its length without the line
 * break; returns NULL when text has fewer lines. */
const char *dt_yaml_line(const char *text, size_t len, int line, size_t *n);

/* ---- schema.c ---- */

enum dt_key_type {
	DT_KEY_SECTION,		/* a mapping of further keys */
	DT_KEY_INT,		/* int64_t */
	DT_KEY_UINT,		/* uint64_t (the seed) */
	DT_KEY_FLOAT,		/* double */
	DT_KEY_BOOL,		/* bool */
	DT_KEY_ENUM,		/* an enum stored as int, names[i] is value i */
	DT_KEY_NAME,		/* char[size]: letters, digits, . _ - */
	DT_KEY_PATH,		/* char[size]: resolved against the job's dir */
	DT_KEY_SHAPE,		/* model.input_shape: a list of ints */
	DT_KEY_LAYERS,		/* model.layers: a list of layer mappings */
};

#define DT_KEYF_REQUIRED 0x01
#define DT_KEYF_MIN 0x02	/* value >= min */
#define DT_KEYF_MIN_OPEN 0x04	/* value > min (with DT_KEYF_MIN) */
#define DT_KEYF_MAX 0x08	/* value <= max */
#define DT_KEYF_MAX_OPEN 0x10	/* value < max (with DT_KEYF_MAX) */

/* One key of the job file. */
struct dt_key {
	const char *key;	/* full path; layer keys: the leaf ("units") */
	enum dt_key_type type;
	size_t off;		/* offset of the value in struct dt_job, or in
				 * struct dt_layer_spec for layer keys */
	size_t size;		/* NAME/PATH: capacity in bytes */
	const char *def;	/* default as YAML text, NULL: none (zero) */
	unsigned flags;		/* DT_KEYF_* */
	double min, max;
	const char *const *names;	/* ENUM: NULL-terminated */
	const char *def_doc;	/* shown default when def is NULL */
	const char *doc;	/* one line for the man page and job-keys */
};

extern const struct dt_key dt_job_schema[];
extern const int dt_job_schema_len;
extern const struct dt_key dt_job_layer_schema[];	/* DT_JOB_LAYER_KEYS */

/* Rows of dt_job_layer_schema, as indexes of origin.layer[i]. */
enum dt_layer_key {
	DT_LAYER_KEY_TYPE,
	DT_LAYER_KEY_UNITS,
	DT_LAYER_KEY_ACTIVATION,
	DT_LAYER_KEY_NAME,
};

/* Index of key in dt_job_schema (sections included), or -1. */
int dt_job_schema_find(const char *key);
/* Index of leaf ("units") in dt_job_layer_schema, or -1. */
int dt_job_layer_key_find(const char *leaf);
/* Writes the known key closest to the unknown key into buf ("" when none is
 * close enough). Layer keys are matched with key's own layer index. */
void dt_job_suggest(const char *key, char *buf, size_t size);
/* The keys directly under prefix ("train", "" for the top, or
 * "model.layers.N"), comma-separated, into buf. */
void dt_job_section_keys(const char *prefix, char *buf, size_t size);
/* "a number", "an integer", "one of sgd, adam, adamw", ... */
void dt_job_type_text(const struct dt_key *k, char *buf, size_t size);
/* "> 0", ">= 1", "in [0, 1)"; "" when k has no range. */
void dt_job_range_text(const struct dt_key *k, char *buf, size_t size);

/* ---- job.c ---- */

/* Reads an index from "LIST.N" or "LIST.N.rest" (list is "model.layers" or
 * "model.input_shape"; N decimal, no leading zeros): returns N and points
 * *rest at "" or ".rest"; returns -1 when key is not of that form. */
int dt_job_list_index(const char *key, const char *list, const char **rest);

/* ---- apply.c ---- */

/* What applying values needs to know: the job, where errors go and which
 * source the values come from. */
struct dt_job_ctx {
	struct dt_job *job;
	struct dt_error *err;
	const char *name;	/* the job file, as named in messages */
	const char *text;	/* its contents, for the source line */
	size_t len;
	const char *dir;	/* base for relative paths in this source */
	int set;		/* 1-based --set being applied, 0: the file */
};

/* Applies node v to the schema key at index ki (path is its full name):
 * checks its type and range and stores value and position. Sections merge
 * into what is there; lists replace it. */
enum dt_status dt_job_apply_key(struct dt_job_ctx *c, int ki,
				const char *path, const struct dt_ynode *v);
/* Applies every key of mapping map, whose path is prefix ("" for the top). */
enum dt_status dt_job_apply_section(struct dt_job_ctx *c, const char *prefix,
				    const struct dt_ynode *map);
/* Applies mapping map to layer i (which exists). */
enum dt_status dt_job_apply_layer(struct dt_job_ctx *c, int i,
				  const struct dt_ynode *map);
/* Applies one layer field, shape item i (which exists), each with path. */
enum dt_status dt_job_apply_layer_key(struct dt_job_ctx *c, int i, int k,
				      const char *path,
				      const struct dt_ynode *v);
enum dt_status dt_job_apply_shape_item(struct dt_job_ctx *c, int i,
				       const char *path,
				       const struct dt_ynode *v);
/* Fails with "unknown key", suggesting the closest key or listing the
 * keys of the section. */
enum dt_status dt_job_unknown_key(const struct dt_job_ctx *c, struct dt_pos pos,
				  const char *path);
/* Puts layer i back to its defaults with no position. */
void dt_job_layer_reset(struct dt_job *job, int i);
/* Stores the schema default of key k into dst (a field of the job). */
void dt_job_store_default(const struct dt_key *k, void *dst);

/* ---- write.c ---- */

/* Fills c->err with DT_ERR_JOB and the message for pos: "FILE:L:C: key: "
 * then the text, the source line and a caret; "--set TEXT: key: " for a
 * value from an override; "FILE: key: " when pos is nowhere. key may be
 * NULL. Returns DT_ERR_JOB. */
enum dt_status dt_job_failf(const struct dt_job_ctx *c, struct dt_pos pos,
			    const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* True when the value at pos was given (in the file or by --set). */
bool dt_job_given(struct dt_pos pos);

#endif
