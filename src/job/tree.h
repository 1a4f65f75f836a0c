/* SPDX-License-Identifier: MIT */
/* tree.h - job/ only: what tree.c does to the job file's node tree before
 * it is applied: the named values of vars: and their references, and the
 * --set overrides that name a var or a repeat block's layer. Above
 * error.h, below job.c. */
#ifndef DT_JOB_TREE_H
#define DT_JOB_TREE_H

#include <stdbool.h>

#include "job/error.h"

/* Finds the top-level `vars:` mapping of root (a mapping) and checks it:
 * every key a name of letters, digits and '_' not starting with a digit,
 * given once, every value a scalar that is not itself a reference. Sets
 * *vars to it, or to NULL when root has none. Returns DT_OK, or
 * DT_ERR_JOB naming the var's file:line:col. */
enum dt_status dt_job_vars_check(struct dt_job_ctx *c,
				 const struct dt_ynode *root,
				 struct dt_ynode **vars);

/* Replaces, in the values under n (path names n in messages), every plain
 * scalar "$NAME" with the value of var NAME of vars (NULL: the job has
 * none). A replaced scalar keeps its own position, so errors about the
 * value point at the place that used it, or at the --set that gave the
 * var's value. Each reference becomes one scalar: the tree keeps its
 * size. Returns DT_OK, or DT_ERR_JOB at an undefined var. */
enum dt_status dt_job_vars_subst(struct dt_job_ctx *c,
				 const struct dt_ynode *vars,
				 struct dt_ynode *n, const char *path);

/* Takes the `vars:` entry out of mapping root and returns its value
 * (caller frees with dt_yaml_free), or NULL when root has none. */
struct dt_ynode *dt_job_vars_detach(struct dt_ynode *root);

/* Applies override c->set, key = *v, to root (the file's top mapping)
 * when it names a var ("vars.width") or a repeat block or one of its
 * layers ("model.layers.block.repeat", "model.layers.block.fc.units"):
 * the value node *v goes into the tree (it then belongs to the tree and
 * *v is set to NULL) and *done to true. Any other key (an index, a layer
 * outside a block, a layer of one copy "block.2.fc") leaves root and *v
 * alone and sets *done to false. vars is root's vars mapping or NULL.
 * Returns DT_OK, or DT_ERR_JOB for a var the job does not define, a
 * value that a var cannot take, or a layer key given to a block. */
enum dt_status dt_job_tree_set(struct dt_job_ctx *c, struct dt_ynode *root,
			       struct dt_ynode *vars, const char *key,
			       struct dt_ynode **v, bool *done);

/* Marks n and every node under it as coming from --set number set. */
void dt_job_tree_mark(struct dt_ynode *n, int set);

#endif
