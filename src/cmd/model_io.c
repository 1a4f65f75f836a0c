/* SPDX-License-Identifier: MIT */
/* model_io.c - a trained run's model, ready to run (model_io.h). */
#include "cmd/model_io.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "cmd/cmd.h"
#include "comm/comm.h"
#include "graph/graph.h"
#include "graph/model.h"
#include "train/init_from.h"
#include "train/progress.h"
#include "train/rundir.h"
#include "util/alloc.h"
#include "util/sysmem.h"

int
dt_cmd_checkpoint_arg(const char *s, int64_t *step)
{
	uint64_t v = 0;

	if (s == NULL) {
		*step = DT_CMD_CKPT_NEWEST;
		return 0;
	}
	if (strcmp(s, "best") == 0) {
		*step = DT_CMD_CKPT_BEST;
		return 0;
	}
	if (*s == '\0')
		return -1;
	for (const char *p = s; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || v > (uint64_t)(INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*step = (int64_t)v;
	return 0;
}

/* CKPT_DIR/best's one checkpoint (eval.keep_best keeps only the best
 * there). */
static enum dt_status
find_best(const char *dir, const char *ckpt_dir, char *path, size_t size,
	  int64_t *found, struct dt_error *err)
{
	char best[DT_JOB_PATH_MAX + 8];
	enum dt_status st;

	if ((size_t)snprintf(best, sizeof best, "%s/best", ckpt_dir) >=
	    sizeof best)
		return dt_errorf(err, DT_ERR_USAGE, "%s/best: path too long",
				 ckpt_dir);
	st = dt_ckpt_find_latest(best, path, size, found, dt_ckpt_report_file,
				 stderr, err);
	if (st == DT_OK && *found < 0)
		st = dt_errorf(err, DT_ERR_USAGE, "%s: no best checkpoint (%s "
			       "holds none): the run kept none; train it with "
			       "eval.keep_best: true (and an evaluation split), "
			       "or give --checkpoint STEP", dir, best);
	return st;
}

enum dt_status
dt_cmd_ckpt_of_run(const char *dir, const char *path, struct dt_error *err)
{
	char id[DT_RUNDIR_ID_MAX], abs[DT_CKPT_RUN_DIR_MAX];
	enum dt_status st;

	st = dt_rundir_run_id(dir, 0, id, sizeof id, err);
	if (st != DT_OK)
		return st;
	if (realpath(dir, abs) == NULL)
		snprintf(abs, sizeof abs, "%s", dir);
	return dt_ckpt_check_run(path, id, abs, err);
}

/* dt_cmd_find_checkpoint, but for the check that the checkpoint is the
 * run's own. */
static enum dt_status
find_any(const char *dir, int64_t step, char *path, size_t size,
	 int64_t *found, struct dt_error *err)
{
	char ckpt_dir[DT_JOB_PATH_MAX];
	enum dt_status st;

	st = dt_cmd_ckpt_dir(dir, ckpt_dir, sizeof ckpt_dir, err);
	if (st != DT_OK)
		return st;
	if (step == DT_CMD_CKPT_BEST)
		return find_best(dir, ckpt_dir, path, size, found, err);
	if (step < 0) {
		st = dt_ckpt_find_latest(ckpt_dir, path, size, found,
					 dt_ckpt_report_file, stderr, err);
		if (st == DT_OK && *found < 0)
			st = dt_errorf(err, DT_ERR_USAGE, "%s: no checkpoint "
				       "in %s; train the run to its end "
				       "(checkpoint.at_end is on by default) "
				       "or set checkpoint.every_steps",
				       dir, ckpt_dir);
		return st;
	}
	st = dt_ckpt_path(path, size, ckpt_dir, step, err);
	if (st != DT_OK)
		return st;
	if (access(path, F_OK) != 0) {
		/* eval.keep_best keeps the best one apart, out of reach of
		 * checkpoint.keep_last: CKPT_DIR/best/step-N. */
		char best[DT_JOB_PATH_MAX + 8], alt[DT_JOB_PATH_MAX + 32];

		snprintf(best, sizeof best, "%s/best", ckpt_dir);
		if (dt_ckpt_path(alt, sizeof alt, best, step, err) == DT_OK &&
		    access(alt, F_OK) == 0 && strlen(alt) < size)
			memcpy(path, alt, strlen(alt) + 1);
		else
			return dt_errorf(err, DT_ERR_USAGE, "%s: no checkpoint "
					 "of step %lld (%s, nor %s)", dir,
					 (long long)step, path, best);
	}
	st = dt_ckpt_verify(path, err);
	if (st == DT_OK)
		*found = step;
	return st;
}

enum dt_status
dt_cmd_find_checkpoint(const char *dir, int64_t step, char *path,
		       size_t size, int64_t *found, struct dt_error *err)
{
	enum dt_status st = find_any(dir, step, path, size, found, err);

	return st == DT_OK ? dt_cmd_ckpt_of_run(dir, path, err) : st;
}

/* See model_io.h. */
enum dt_status
dt_cmd_import_params(struct dt_model *m, const char *ckpt,
		     struct dt_error *err)
{
	char file[DT_JOB_PATH_MAX + 96];

	snprintf(file, sizeof file, "%s/params.safetensors", ckpt);
	/* A pipeline's checkpoint: the stages' files, read by name. */
	if (access(file, F_OK) != 0 && dt_ckpt_is_sharded(ckpt))
		snprintf(file, sizeof file, "%s", ckpt);
	return dt_init_import(m, dt_model_params(m), file, err);
}

/* The checkpoint's data_norm (meta.json), when it has one. */
static enum dt_status
read_norm(struct dt_cmd_model *cm, struct dt_error *err)
{
	struct dt_ckpt_meta meta;
	char where[DT_JOB_PATH_MAX + 96];
	enum dt_status st = dt_ckpt_read_meta(cm->ckpt, &meta, err);

	if (st != DT_OK || meta.data_norm == NULL) {
		dt_ckpt_meta_fini(&meta);
		return st;
	}
	snprintf(where, sizeof where, "%s/meta.json: data_norm", cm->ckpt);
	st = dt_norm_parse(meta.data_norm, where, &cm->norm, err);
	cm->has_norm = st == DT_OK;
	dt_ckpt_meta_fini(&meta);
	return st;
}

enum dt_status
dt_cmd_model_open(const char *dir, const char *const *sets, int n_sets,
		  int64_t step, int64_t max_batch, struct dt_cmd_model *cm,
		  struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 16];
	enum dt_status st;

	memset(cm, 0, sizeof *cm);
	cm->step = -1;
	snprintf(path, sizeof path, "%s/job.yaml", dir);
	if (access(path, F_OK) != 0)
		return dt_errorf(err, DT_ERR_USAGE, "%s: not a run directory "
				 "(no job.yaml)", dir);
	cm->job = dt_xcalloc(1, sizeof *cm->job);
	st = dt_cmd_load_job(path, sets, n_sets, cm->job, err);
	if (st == DT_OK && cm->job->data.format == DT_FORMAT_TEXT) {
		int bpe = cm->job->data.text_unit == DT_JOB_TEXT_BPE;
		const char *name = bpe ? "tokenizer.json" : "vocab.bin";

		snprintf(path, sizeof path, "%s/%s", dir, name);
		if (access(path, F_OK) != 0)
			st = dt_errorf(err, DT_ERR_USAGE, "%s: no %s (the run "
				       "stopped before reading its data)", dir,
				       name);
		else if (bpe)
			st = dt_vocab_load_bpe(path, &cm->vocab, err);
		else
			st = dt_vocab_load(path, &cm->vocab, err);
	}
	if (st == DT_OK)
		st = dt_cmd_find_checkpoint(dir, step, cm->ckpt,
					    sizeof cm->ckpt, &cm->step, err);
	if (st == DT_OK)
		st = read_norm(cm, err);
	if (st == DT_OK)
		st = dt_model_new(cm->job, max_batch, &cm->model, err);
	if (st == DT_OK && max_batch > 0)
		st = dt_cmd_import_params(cm->model, cm->ckpt, err);
	if (st != DT_OK)
		dt_cmd_model_close(cm);
	return st;
}

void
dt_cmd_model_inputs(const struct dt_cmd_model *cm, struct dt_dataset *ds)
{
	if (!cm->has_norm)
		return;
	ds->scale = (float)cm->norm.scale;
	ds->norm = cm->norm.kind != DT_NORM_NONE ? &cm->norm : NULL;
}

enum dt_status
dt_cmd_model_load(struct dt_cmd_model *cm, int64_t max_batch,
		  struct dt_error *err)
{
	struct dt_model *m = NULL;
	enum dt_status st;

	st = dt_model_new(cm->job, max_batch, &m, err);
	if (st == DT_OK) {
		dt_model_free(cm->model);
		cm->model = m;
		st = dt_cmd_import_params(cm->model, cm->ckpt, err);
	}
	if (st != DT_OK)
		dt_cmd_model_close(cm);
	return st;
}

/* Bytes of a batch of b samples under c on cm's model. */
static double
batch_bytes(const struct dt_cmd_model *cm, const struct dt_cmd_batch_cost *c,
	    int64_t b)
{
	double arenas = 2.0 * 4.0 * (double)dt_model_n_params(cm->model);
	double act = 4.0 * (double)dt_model_act_floats_per_sample(cm->model);

	return arenas + (double)c->fixed + (double)b * (act +
						       (double)c->per_sample);
}

enum dt_status
dt_cmd_batch_fit(const struct dt_cmd_model *cm,
		 const struct dt_cmd_batch_cost *c, int64_t *batch,
		 struct dt_error *err)
{
	int64_t want = c->asked > 0 ? c->asked : c->dflt, avail, fits;
	const char *kind = "node";
	char hint[128];
	double one, each;

	if (dt_sysmem_available(&avail, &kind) != 0) {
		*batch = want;
		return DT_OK;
	}
	if (c->local_ranks > 1)
		avail /= c->local_ranks;
	one = batch_bytes(cm, c, 1);
	each = batch_bytes(cm, c, 2) - one;
	fits = one > (double)avail ? 0 : 1 + (int64_t)(((double)avail - one) /
						       each);
	if (fits >= want) {
		*batch = want;
		return DT_OK;
	}
	if (fits >= 1 && c->asked == 0) {
		fprintf(stderr, "dtrain: %s: batches of %lld samples, not "
			"%lld: %lld bytes (%.1f MiB) of memory are available "
			"(%s)\n", c->cmd, (long long)fits, (long long)want,
			(long long)avail, (double)avail / 1048576.0, kind);
		*batch = fits;
		return DT_OK;
	}
	if (fits < 1)
		want = 1;
	if (fits >= 1)
		snprintf(hint, sizeof hint, "the largest batch that fits is "
			 "--batch %lld", (long long)fits);
	else
		snprintf(hint, sizeof hint, "even a batch of 1 does not fit, "
			 "short by %.0f bytes: free memory or raise the limit",
			 batch_bytes(cm, c, 1) - (double)avail);
	return dt_errorf(err, DT_ERR_PLAN, "not enough memory: %s in batches "
			 "of %lld sample%s needs %.0f bytes (%.1f MiB: "
			 "parameters and gradients %.0f, %.0f a sample, "
			 "outputs %lld) but only %lld bytes (%.1f MiB) are "
			 "available (%s%s); %s", c->cmd, (long long)want,
			 want == 1 ? "" : "s", batch_bytes(cm, c, want),
			 batch_bytes(cm, c, want) / 1048576.0,
			 batch_bytes(cm, c, 0) - (double)c->fixed, each,
			 (long long)c->fixed, (long long)avail,
			 (double)avail / 1048576.0, kind[0] == 'c' ?
			 "the cgroup's memory limit less its usage" :
			 "the node's MemAvailable", c->local_ranks > 1 ?
			 ", shared by the ranks on this node" : "", hint);
}

void
dt_cmd_model_close(struct dt_cmd_model *cm)
{
	dt_model_free(cm->model);
	dt_vocab_fini(&cm->vocab);
	dt_norm_fini(&cm->norm);
	free(cm->job);
	memset(cm, 0, sizeof *cm);
	cm->step = -1;
}

/* The node whose output the loss reads. */
static const struct dt_node *
last_layer(const struct dt_model *m)
{
	const struct dt_node *loss = &m->nodes[m->n_nodes - 1];

	return &m->nodes[loss->inputs[0]];
}

const float *
dt_cmd_model_logits(const struct dt_cmd_model *cm, int64_t *out_size)
{
	const struct dt_node *n = last_layer(cm->model);

	*out_size = n->out_size;
	return n->out;
}

void
dt_cmd_model_logits_shape(const struct dt_cmd_model *cm, int *n_dims,
			  int64_t dims[4])
{
	const struct dt_node *n = last_layer(cm->model);

	*n_dims = n->out_shape.n_dims;
	for (int d = 0; d < 4; d++)
		dims[d] = d < n->out_shape.n_dims ? n->out_shape.dim[d] : 0;
}

enum dt_status
dt_cmd_comm_new(struct dt_comm **out, struct dt_error *err)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE",
					    "PMIX_RANK", "PMI_SIZE",
					    "PMI_RANK" };

	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (getenv(vars[i]) != NULL)
			return dt_comm_mpi_new(out, err);
	*out = dt_comm_self_new();
	return DT_OK;
}

void
dt_cmd_progress_init(struct dt_progress *p, struct dt_comm *comm)
{
	int show = comm != NULL && dt_comm_rank(comm) == 0 &&
		   dt_progress_tty();

	dt_progress_init(p, show ? stderr : NULL, show, 0);
}

int
dt_cmd_comm_finish(struct dt_comm *comm, enum dt_status st,
		   struct dt_error *err)
{
	if (st != DT_OK && comm != NULL && dt_comm_size(comm) > 1) {
		fprintf(stderr, "dtrain: rank %d: %s\n", dt_comm_rank(comm),
			err->msg);
		dt_comm_abort(comm, dt_status_exit_code(st));
	}
	dt_comm_free(comm);
	if (st != DT_OK)
		return dt_cmd_fail(st, err);
	return 0;
}
