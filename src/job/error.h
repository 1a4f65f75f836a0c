/* SPDX-License-Identifier: MIT */
/* error.h - job/ only: what error.c gives the files above it: the context
 * of the values being applied, positions, the message maker and the common
 * complaints. Includes keys.h and yaml.h, nothing above them. */
#ifndef DT_JOB_ERROR_H
#define DT_JOB_ERROR_H

#include <stdbool.h>
#include <stddef.h>

#include "job/keys.h"
#include "job/yaml.h"
#include "util/status.h"

/* What applying values needs to know: the job, where errors go and which
 * source the values come from. */
struct dt_job_ctx {
	struct dt_job *job;
	struct dt_error *err;
	const char *name;	/* the job file, as named in messages */
	const char *text;	/* its contents, for the source line */
	size_t len;
	const char *dir;	/* base for relative paths in the file */
	const char *set_dir;	/* and in values from --set (the working
				 * directory) */
	int set;		/* 1-based --set being applied, 0: the file */
};

/* True when the value at pos was given (in the file or by --set). */
bool dt_job_given(struct dt_pos pos);

/* Where node n is: its line and column in the file, or the --set (the
 * node's own, n->set, or the one being applied, c->set). */
struct dt_pos dt_job_node_pos(const struct dt_job_ctx *c,
			      const struct dt_ynode *n);

/* Of a key's position and the position of what made it wrong (another
 * key), the one to blame: the cause when it came from a later --set. */
struct dt_pos dt_job_blame(struct dt_pos key, struct dt_pos cause);

/* Fills c->err with DT_ERR_JOB and the message for pos: "FILE:L:C: key: "
 * then the text, the source line and a caret; "--set TEXT: key: " for a
 * value from an override; "FILE: key: " when pos is nowhere. key may be
 * NULL. Returns DT_ERR_JOB. */
enum dt_status dt_job_failf(const struct dt_job_ctx *c, struct dt_pos pos,
			    const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Fails with "expected <k's type>, found <v>" at v. */
enum dt_status dt_job_type_error(const struct dt_job_ctx *c,
				 const struct dt_key *k, const char *path,
				 const struct dt_ynode *v);
/* Fails with "required key missing<why>; expected <type>" at at. */
enum dt_status dt_job_missing(const struct dt_job_ctx *c,
			      const struct dt_key *k, const char *key,
			      struct dt_pos at, const char *why);
/* Fails with "unknown key", suggesting the closest key or listing the
 * keys of the section. */
enum dt_status dt_job_unknown_key(const struct dt_job_ctx *c, struct dt_pos pos,
				  const char *path);

/* The key of mapping entry i (kids[2i]) joined to prefix into path; fails
 * on a key that is not a scalar and on a duplicate. */
enum dt_status dt_job_entry_key(const struct dt_job_ctx *c, const char *prefix,
				const struct dt_ynode *map, int i, char *path,
				size_t size);

/* Reads an index from "LIST.N" or "LIST.N.rest" (list is "model.layers" or
 * "model.input_shape"; N decimal, no leading zeros): returns N and points
 * *rest at "" or ".rest"; returns -1 when key is not of that form. */
int dt_job_list_index(const char *key, const char *list, const char **rest);

#endif
