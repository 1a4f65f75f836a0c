/* priv.h - what the files of src/job/ share with each other; nothing
 * outside src/job/ includes it.
 *
 *   yaml.c    libyaml events -> a small node tree with 1-based positions,
 *             YAML 1.2 scalar rules (null, bool, numbers)
 *   schema.c  the tables: job keys, layer keys, layer types
 *   keys.c    key lookup, type and range texts, "did you mean", the key list
 *   value.c   one value of a key: scalars, data sources, lists
 *   apply.c   node tree -> struct dt_job, one section and key at a time
 *   layers.c  model.layers: layer mappings, repeat blocks, layer checks
 *   check.c   the checks that need the whole job, once every source is in
 *   job.c     dt_job_parse / dt_job_load: defaults, file, --set
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
	DT_KEY_PATH,		/* char[size]: a local path, resolved against
				 * the job's dir */
	DT_KEY_SOURCE,		/* struct dt_source: a path or URL, or a
				 * mapping {path, sha256, size} */
	DT_KEY_DEGREE,		/* int64_t >= 1, or "auto" (DT_DEGREE_AUTO) */
	DT_KEY_NAMES,		/* char[n_max][size] and an int count at
				 * off_n: a list of layer names */
	DT_KEY_SHAPE,		/* int64_t[n_max] and an int count at off_n:
				 * a list of integers >= 1 */
	DT_KEY_LAYERS,		/* model.layers: a list of layer mappings */
	DT_KEY_LAYER_TYPE,	/* a layer's type: names[] words, stored as
				 * kind (and activation) by dt_layer_types */
};

#define DT_KEYF_REQUIRED 0x01	/* with `when`: required when it applies */
#define DT_KEYF_MIN 0x02	/* value >= min */
#define DT_KEYF_MIN_OPEN 0x04	/* value > min (with DT_KEYF_MIN) */
#define DT_KEYF_MAX 0x08	/* value <= max */
#define DT_KEYF_MAX_OPEN 0x10	/* value < max (with DT_KEYF_MAX) */
#define DT_KEYF_NEG1 0x20	/* SHAPE: one item may be -1 */

/* One key of the job file. */
struct dt_key {
	const char *key;	/* full path; layer keys: the leaf ("units") */
	enum dt_key_type type;
	size_t off;		/* offset of the value in struct dt_job, or in
				 * struct dt_layer_spec for layer keys */
	size_t size;		/* NAME/PATH/NAMES: bytes of one name */
	const char *def;	/* default as YAML text, NULL: none (zero) */
	unsigned flags;		/* DT_KEYF_* */
	double min, max;
	const char *const *names;	/* ENUM, LAYER_TYPE: NULL-terminated */
	const int64_t *choices;	/* INT: the values allowed, 0-terminated */
	size_t off_n;		/* NAMES, SHAPE: offset of the int count */
	int n_max;		/* NAMES, SHAPE: most items */
	size_t mirror;		/* SOURCE: offset of a char[] that gets a copy
				 * of the path; 0: none */
	const char *when;	/* an ENUM key this key depends on, or NULL */
	unsigned when_mask;	/* the values of `when` (bit 1 << value) with
				 * which this key is used */
	const char *def_doc;	/* shown default when def is NULL */
	const char *doc;	/* one line for the man page and job-keys */
};

extern const struct dt_key dt_job_schema[];
extern const int dt_job_schema_len;
extern const struct dt_key dt_job_layer_schema[];	/* DT_JOB_LAYER_KEYS */

/* Rows of dt_job_layer_schema, as indexes of origin.layer[i]; also the
 * order in which messages list the keys a layer type takes. */
enum dt_layer_key {
	DT_LAYER_KEY_TYPE,
	DT_LAYER_KEY_UNITS,
	DT_LAYER_KEY_CHANNELS,
	DT_LAYER_KEY_KERNEL,
	DT_LAYER_KEY_STRIDE,
	DT_LAYER_KEY_PADDING,
	DT_LAYER_KEY_RATE,
	DT_LAYER_KEY_EPS,
	DT_LAYER_KEY_MOMENTUM,
	DT_LAYER_KEY_VOCAB,
	DT_LAYER_KEY_DIM,
	DT_LAYER_KEY_LENGTH,
	DT_LAYER_KEY_HEADS,
	DT_LAYER_KEY_CAUSAL,
	DT_LAYER_KEY_SHAPE,
	DT_LAYER_KEY_ACTIVATION,
	DT_LAYER_KEY_BIAS,
	DT_LAYER_KEY_NAME,
	DT_LAYER_KEY_INPUTS,
};

/* A word for `type:`, the kind it makes and the keys that kind takes. */
struct dt_layer_type {
	const char *name;		/* "conv2d", "relu" */
	enum dt_layer_kind kind;
	enum dt_activation act;		/* DT_LAYER_ACTIVATION: which */
	unsigned takes;			/* bits 1 << enum dt_layer_key */
	unsigned needs;			/* required keys, a subset */
	int min_inputs, max_inputs;	/* length of `inputs:` when given */
};

extern const struct dt_layer_type dt_layer_types[];
extern const int dt_layer_types_len;

/* The keys of a repeat block, an entry {repeat: N, layers: [...]} of
 * model.layers; its name uses the layer row DT_LAYER_KEY_NAME. */
extern const struct dt_key dt_job_block_repeat, dt_job_block_layers;

/* ---- keys.c ---- */

/* Index of key in dt_job_schema (sections included), or -1. */
int dt_job_schema_find(const char *key);
/* Index of leaf ("units") in dt_job_layer_schema, or -1. */
int dt_job_layer_key_find(const char *leaf);
/* The row of layer's type (by kind and activation); never NULL. */
const struct dt_layer_type *dt_job_layer_type(const struct dt_layer_spec *l);
/* Whether key k is used with the job's current values of the keys it
 * depends on (k->when); true for keys without `when`. */
bool dt_job_key_applies(const struct dt_job *job, const struct dt_key *k);
/* Index among the DT_KEY_SOURCE rows (origin.source) of schema row ki. */
int dt_job_source_slot(int ki);
/* Optimal string alignment distance between a and b; large when either
 * is longer than 96 bytes. */
int dt_job_distance(const char *a, const char *b);
/* The largest distance at which a word of len bytes gets a suggestion. */
int dt_job_suggest_limit(size_t len);
/* Writes the known key closest to the unknown key into buf ("" when none is
 * close enough). Layer keys are matched with key's own layer index. */
void dt_job_suggest(const char *key, char *buf, size_t size);
/* The keys directly under prefix ("train", "" for the top, a data source
 * such as "data.train.images", or "model.layers.N"), comma-separated, into
 * buf. */
void dt_job_section_keys(const char *prefix, char *buf, size_t size);
/* The keys a layer type takes, in schema order, comma-separated. */
void dt_job_type_keys(const struct dt_layer_type *t, char *buf, size_t size);
/* The values of k->when that k is used with: "csv", "idx, npy". */
void dt_job_when_text(const struct dt_key *k, char *buf, size_t size);
/* "a number", "an integer", "one of sgd, adam, adamw", ... */
void dt_job_type_text(const struct dt_key *k, char *buf, size_t size);
/* "> 0", ">= 1", "in [0, 1)", "in {2, 4}"; "" when k has no range. */
void dt_job_range_text(const struct dt_key *k, char *buf, size_t size);

/* ---- job.c ---- */

/* Reads an index from "LIST.N" or "LIST.N.rest" (list is "model.layers" or
 * "model.input_shape"; N decimal, no leading zeros): returns N and points
 * *rest at "" or ".rest"; returns -1 when key is not of that form. */
int dt_job_list_index(const char *key, const char *list, const char **rest);

/* ---- value.c, apply.c, layers.c ---- */

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

/* Where node n is: its line and column in the file, or the --set. */
struct dt_pos dt_job_node_pos(const struct dt_job_ctx *c,
			      const struct dt_ynode *n);
/* Fails with "expected <k's type>, found <v>" at v. */
enum dt_status dt_job_type_error(const struct dt_job_ctx *c,
				 const struct dt_key *k, const char *path,
				 const struct dt_ynode *v);
/* Stores scalar v for key k (INT, UINT, FLOAT, BOOL, ENUM, NAME, PATH,
 * DEGREE) into dst and its position into *slot, after checking its type
 * and range. */
enum dt_status dt_job_store_scalar(const struct dt_job_ctx *c,
				   const struct dt_key *k, const char *path,
				   const struct dt_ynode *v, void *dst,
				   struct dt_pos *slot);
/* Stores a data source (a string, or a mapping {path, sha256, size}) for
 * schema row ki; a string or mapping replaces the whole source. */
enum dt_status dt_job_store_source(struct dt_job_ctx *c, int ki,
				   const char *path, const struct dt_ynode *v);
/* Stores one part ("path", "sha256" or "size") of the source of row ki. */
enum dt_status dt_job_store_source_part(struct dt_job_ctx *c, int ki,
					const char *part, const char *path,
					const struct dt_ynode *v);
/* Stores list v of k (NAMES or SHAPE) into dst, the count into *n and the
 * items' positions into pos[]; the list replaces what is there. */
enum dt_status dt_job_store_list(const struct dt_job_ctx *c,
				 const struct dt_key *k, const char *path,
				 const struct dt_ynode *v, void *dst, int *n,
				 struct dt_pos *pos);
/* Stores item v of the SHAPE list k into *dst and *slot. */
enum dt_status dt_job_store_shape_item(const struct dt_job_ctx *c,
				       const struct dt_key *k,
				       const char *path,
				       const struct dt_ynode *v, int64_t *dst,
				       struct dt_pos *slot);
/* Stores the schema default of key k into dst (a field of the job). */
void dt_job_store_default(const struct dt_key *k, void *dst);

/* The key of mapping entry i (kids[2i]) joined to prefix into path; fails
 * on a key that is not a scalar and on a duplicate. */
enum dt_status dt_job_entry_key(const struct dt_job_ctx *c, const char *prefix,
				const struct dt_ynode *map, int i, char *path,
				size_t size);
/* Applies node v to the schema key at index ki (path is its full name):
 * checks its type and range and stores value and position. Sections merge
 * into what is there; lists replace it. */
enum dt_status dt_job_apply_key(struct dt_job_ctx *c, int ki,
				const char *path, const struct dt_ynode *v);
/* Applies every key of mapping map, whose path is prefix ("" for the top). */
enum dt_status dt_job_apply_section(struct dt_job_ctx *c, const char *prefix,
				    const struct dt_ynode *map);
/* Fails with "unknown key", suggesting the closest key or listing the
 * keys of the section. */
enum dt_status dt_job_unknown_key(const struct dt_job_ctx *c, struct dt_pos pos,
				  const char *path);

/* Applies the list v to model.layers (row ki), expanding repeat blocks. */
enum dt_status dt_job_apply_layers(struct dt_job_ctx *c, int ki,
				   const char *path, const struct dt_ynode *v);
/* Applies mapping map to layer i (which exists): merged into it, or
 * replacing it when the mapping gives `type` and replace is true. */
enum dt_status dt_job_apply_layer(struct dt_job_ctx *c, int i,
				  const struct dt_ynode *map, bool replace);
/* Applies one layer key k of layer i with path; key is the key's node
 * (NULL for a --set), where an error about the layer's type points. */
enum dt_status dt_job_apply_layer_key(struct dt_job_ctx *c, int i, int k,
				      const char *path,
				      const struct dt_ynode *key,
				      const struct dt_ynode *v);
/* Puts layer i back to its zero state with no position. */
void dt_job_layer_reset(struct dt_job *job, int i);
/* Index of the layer named name among the first n, or -1. */
int dt_job_find_layer(const struct dt_job *job, const char *name, int n);
/* The name among the first n layers (and "input" when input is true)
 * closest to name, or NULL when none is close enough. */
const char *dt_job_closest_layer(const struct dt_job *job, const char *name,
				 int n, bool input);
/* Gives layers without a `name:` their default "<type><index>". */
void dt_job_default_names(struct dt_job *job);
/* The checks of model.layers once every source is applied: types, keys
 * per type, required keys, inputs, unique names; then fills the defaults
 * of the keys each layer's type takes. */
enum dt_status dt_job_check_layers(const struct dt_job_ctx *c);

/* ---- check.c ---- */

/* The checks that need more than one key, once every source is applied;
 * fills the defaults that depend on other keys. */
enum dt_status dt_job_finish(struct dt_job_ctx *c);
/* Fails with "required key missing<why>; expected <type>" at at. */
enum dt_status dt_job_missing(const struct dt_job_ctx *c,
			      const struct dt_key *k, const char *key,
			      struct dt_pos at, const char *why);
/* Of a key's position and the position of what made it wrong (another
 * key), the one to blame: the cause when it came from a later --set. */
struct dt_pos dt_job_blame(struct dt_pos key, struct dt_pos cause);

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
