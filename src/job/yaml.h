/* SPDX-License-Identifier: MIT */
/* yaml.h - job/ only: libyaml events -> a small node tree with 1-based
 * positions, and the YAML 1.2 scalar rules (null, bool, numbers). The
 * bottom of job/: it includes no other header of job/. */
#ifndef DT_JOB_YAML_H
#define DT_JOB_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	int set;			/* 1-based --set it came from, 0: the
					 * file (job/tree.c puts overrides'
					 * values into the file's tree) */
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
 * document, on aliases (and so on any "billion laughs" expansion: a job
 * names a value once under vars: instead, job/tree.c), tags, NUL
 * characters or nesting deeper than 64;
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

#endif
