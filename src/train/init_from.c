/* SPDX-License-Identifier: MIT */
/* init_from.c - model.init_from (init_from.h): the parameters of an
 * exported run as the start of a new one. Only the parameters are taken:
 * the optimizer state, the step and the data position start afresh, as
 * for any new run. */
#include "train/init_from.h"

#include <errno.h>
#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "train/gather.h"
#include "train/state.h"
#include "util/alloc.h"

/* DT_ERR_FORMAT when the safetensors file at path says in its
 * __metadata__ that `dtrain export --format torch` wrote it
 * ("dtrain_format": "torch-1"): its tensors are in PyTorch's layouts,
 * and a square weight would pass the shape check transposed. A header
 * that cannot be read is left to dt_ckpt_import to report. */
static enum dt_status
refuse_torch(const char *path, struct dt_error *err)
{
	unsigned char len8[8];
	uint64_t n = 0;
	char *text;
	struct json_object *o, *meta, *fmt;
	enum dt_status st = DT_OK;
	struct stat sb;
	FILE *f;

	/* Only a regular file is opened here (a FIFO would block). */
	if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
		return DT_OK;
	f = fopen(path, "rb");
	if (f == NULL)
		return DT_OK;
	if (fread(len8, 1, 8, f) == 8)
		for (int i = 7; i >= 0; i--)
			n = n << 8 | len8[i];
	if (n == 0 || n > (100u << 20)) {
		fclose(f);
		return DT_OK;
	}
	text = dt_xmalloc((size_t)n + 1, 1);
	if (fread(text, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(text);
		return DT_OK;
	}
	fclose(f);
	text[n] = '\0';
	o = json_tokener_parse(text);
	free(text);
	if (o != NULL && json_object_object_get_ex(o, "__metadata__", &meta) &&
	    json_object_object_get_ex(meta, "dtrain_format", &fmt) &&
	    json_object_is_type(fmt, json_type_string) &&
	    strncmp(json_object_get_string(fmt), "torch", 5) == 0)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: written by dtrain export "
			       "--format torch, in PyTorch's layouts; export "
			       "without --format for model.init_from", path);
	json_object_put(o);
	return st;
}

/* DT_ERR_FORMAT naming what model.init_from takes when the directory at
 * path has no MANIFEST.json (a run directory or its checkpoints/, most
 * likely), with the run's checkpoints/ directory when it has one: a
 * checkpoint is a step directory with its manifest (dtrain(1)
 * CHECKPOINTS). */
static enum dt_status
not_a_checkpoint(const char *path, struct dt_error *err)
{
	char m[DT_JOB_PATH_MAX + 32];
	struct stat sb;
	const char *hint = "";

	snprintf(m, sizeof m, "%s/MANIFEST.json", path);
	if (lstat(m, &sb) == 0 || errno != ENOENT)
		return DT_OK;	/* there, or read and reported later */
	snprintf(m, sizeof m, "%s/checkpoints", path);
	if (stat(m, &sb) == 0 && S_ISDIR(sb.st_mode))
		hint = " (a run directory: its checkpoints are in "
		       "checkpoints/)";
	return dt_errorf(err, DT_ERR_FORMAT, "%s: a directory without "
			 "MANIFEST.json, so no checkpoint%s; expected a "
			 "safetensors file or a checkpoint's directory, "
			 "RUN_DIR/checkpoints/step-NNNNNNNNN", path, hint);
}

/* The tensors of m saved in a file (tied copies left out), as targets
 * into t and names (room for every tensor of m) over params (NULL: no
 * data, for a check of names and shapes); returns their number. */
static int
targets_of(const struct dt_model *m, float *params, struct dt_ckpt_target *t,
	   char (*names)[DT_CKPT_NAME_MAX])
{
	int k = 0;

	for (int j = 0; j < dt_model_n_tensors(m); j++) {
		struct dt_tensor_info ti;
		int i = k;

		dt_model_tensor_info(m, j, &ti);
		if (ti.tie_node != NULL)
			continue;	/* filled from its table */
		k++;
		snprintf(names[i], sizeof names[i], "%s.%s", ti.node, ti.name);
		t[i].name = names[i];
		t[i].data = params != NULL ? params + ti.offset : NULL;
		t[i].n_dims = ti.n_dims;
		for (int d = 0; d < ti.n_dims; d++)
			t[i].shape[d] = ti.shape[d];
	}
	return k;
}

enum dt_status
dt_init_import(const struct dt_model *m, float *params, const char *path,
	       struct dt_error *err)
{
	int n = dt_model_n_tensors(m);
	struct dt_ckpt_target *t = dt_xcalloc((size_t)n + 1, sizeof *t);
	char (*names)[DT_CKPT_NAME_MAX] = dt_xcalloc((size_t)n + 1,
						     sizeof *names);
	enum dt_status st;
	struct stat sb;
	int k = targets_of(m, params, t, names);

	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		/* A checkpoint directory (either format). */
		st = not_a_checkpoint(path, err);
		if (st == DT_OK)
			st = dt_ckpt_load_params(path, t, (size_t)k, err);
	} else {
		st = refuse_torch(path, err);
		if (st == DT_OK)
			st = dt_ckpt_import(path, t, (size_t)k, err);
	}
	if (st == DT_OK)
		dt_model_tie_fill(m, params);
	free(t);
	free(names);
	return st;
}

/* What rank 0 tells the others before the parameters. */
struct verdict {
	int32_t status;
	char msg[sizeof ((struct dt_error *)0)->msg];
};

enum dt_status
dt_init_check_names(struct dt_run *r, const char *path, struct dt_error *err)
{
	struct dt_model *shapes;
	struct dt_ckpt_target *t;
	char (*names)[DT_CKPT_NAME_MAX];
	enum dt_status st = dt_model_new(r->job, 0, &shapes, err);
	int n, k;

	if (st != DT_OK)
		return st;
	n = dt_model_n_tensors(shapes);
	t = dt_xcalloc((size_t)n + 1, sizeof *t);
	names = dt_xcalloc((size_t)n + 1, sizeof *names);
	k = targets_of(shapes, NULL, t, names);
	st = dt_ckpt_check_params(path, t, (size_t)k, err);
	free(t);
	free(names);
	dt_model_free(shapes);
	return st;
}

/* model.init_from naming a checkpoint written in shards, where every rank
 * sees it and reads its own part (dt_run_own_parts): rank 0 checks the
 * names and shapes, then each rank reads its stage's parameters (its
 * part at parallel.zero: 3) from whichever files hold them, nothing
 * broadcast. 0 (nothing done) otherwise, the same on every rank; else 1
 * with the agreed status in *st. */
static int
init_own(struct dt_run *r, const char *path, enum dt_status *st,
	 struct dt_error *err)
{
	struct verdict v = { DT_OK, "" };
	char where[DT_JOB_PATH_MAX + 64];
	struct stat sb;
	int mine = dt_run_own_parts(r) && stat(path, &sb) == 0 &&
		   S_ISDIR(sb.st_mode) && dt_ckpt_is_sharded(path);

	if (dt_comm_agree(r->comm, mine ? DT_OK : DT_ERR_IO, err) != DT_OK) {
		dt_error_clear(err);
		return 0;
	}
	if (r->rank == 0) {
		v.status = (int32_t)dt_init_check_names(r, path, err);
		snprintf(v.msg, sizeof v.msg, "%s", err->msg);
	}
	*st = dt_comm_bcast(r->comm, &v, sizeof v, 0, err);
	if (*st == DT_OK && v.status != DT_OK)
		*st = dt_errorf(err, (enum dt_status)v.status, "%s", v.msg);
	if (*st == DT_OK)
		*st = dt_run_load_own(r, path, 0, err);
	if (*st != DT_OK && *st != DT_ERR_MPI) {
		dt_job_where(r->job, "model.init_from", where, sizeof where);
		dt_error_prefix(err, "%s", where);
	}
	if (*st == DT_OK && r->rank == 0)
		fprintf(stderr, "dtrain: parameters from %s\n", path);
	return 1;
}

enum dt_status
dt_run_init_from(struct dt_run *r, struct dt_error *err)
{
	const char *path = r->job->model.init_from;
	struct dt_model *whole = r->model;
	float *params = dt_model_params(r->model);	/* (n_params) */
	struct verdict v = { DT_OK, "" };
	struct dt_full f = { 0 };
	char where[DT_JOB_PATH_MAX + 64];
	enum dt_status st;

	if (path[0] == '\0' || r->resumed_from >= 0)
		return DT_OK;
	if (init_own(r, path, &st, err))
		return st;
	if (r->layout.split) {
		/* The file holds the whole model: read it whole, then each
		 * rank keeps its stage (as a restore does). */
		st = dt_full_alloc(r, &f, err);
		if (st != DT_OK)
			return st;	/* every rank fails alike */
		whole = f.shapes;
		params = f.params;
	}
	if (r->rank == 0) {
		v.status = (int32_t)dt_init_import(whole, params, path, err);
		if (v.status != DT_OK) {
			dt_job_where(r->job, "model.init_from", where,
				     sizeof where);
			dt_error_prefix(err, "%s", where);
			snprintf(v.msg, sizeof v.msg, "%s", err->msg);
		}
	}
	st = dt_comm_bcast(r->comm, &v, sizeof v, 0, err);
	if (st == DT_OK && v.status != DT_OK)
		st = dt_errorf(err, (enum dt_status)v.status, "%s", v.msg);
	if (st == DT_OK)
		st = dt_comm_bcast(r->comm, params,
				   dt_model_n_params(whole) * sizeof(float), 0,
				   err);
	if (st == DT_OK && r->layout.split)
		dt_full_scatter(r, &f);
	dt_full_free(&f);
	if (st == DT_OK && r->rank == 0)
		fprintf(stderr, "dtrain: parameters from %s\n", path);
	return st;
}
