/* SPDX-License-Identifier: MIT */
/* state.c - checkpoints of the training loop's state, and their restore.
 *
 * Every rank writes its own shard (ckpt.h, "sharded"; shard_checkpoint)
 * where the checkpoint directory is shared; else, and for parameter
 * servers, rank 0 gathers and writes the old format. On restore rank 0
 * finds the newest checkpoint that verifies; from shards each rank then
 * reads its own part (load_own, ckpt.h's dt_ckpt_load_part: nothing
 * whole on any rank, nothing broadcast), from the old format (or for
 * parameter servers) rank 0 reads it whole and broadcasts. The
 * optimizer state comes from the gradient sync, which owns it (sync.h:
 * dt_grad_sync_state, _state_collect, _state_loaded). */
#include "train/state.h"

#include <assert.h>
#include <errno.h>
#include <json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "job/schema.h"
#include "plan/sync_plan.h"
#include "train/datafiles.h"
#include "train/gather.h"
#include "train/init_from.h"
#include "train/metrics.h"
#include "train/run_data.h"
#include "train/rundir.h"
#include "util/alloc.h"
#include "util/fileio.h"

/* Tensor lists for the checkpoint: one per model tensor, named
 * "node.name" (a tied copy left out: its table is saved once), and one
 * per optimizer buffer (the whole trained arena, the copy's moments with
 * it). */
struct tensors {
	int n_params, n_optim;
	char (*names)[128];
	struct dt_ckpt_tensor *params, *optim;
	struct dt_ckpt_target *pt, *ot;
};

static const char *
optim_buf_name(const struct dt_job *job, int i)
{
	if (job->train.optimizer == DT_OPTIM_SGD)
		return "sgd.momentum";
	return i == 0 ? "adam.m" : "adam.v";
}

/* The tensor lists of the whole model: names, shapes and offsets from
 * model, data in params and the n_bufs optimizer buffers bufs (n_trained
 * of model floats each). */
static void
tensors_init(struct tensors *t, const struct dt_job *job,
	     const struct dt_model *model, float *params, float **bufs,
	     int n_bufs)
{
	size_t n = dt_model_n_trained(model);

	memset(t, 0, sizeof *t);
	t->n_params = dt_model_n_tensors(model);
	t->n_optim = n_bufs;
	t->names = dt_xcalloc((size_t)(t->n_params + 1), sizeof *t->names);
	t->params = dt_xcalloc((size_t)t->n_params + 1, sizeof *t->params);
	t->pt = dt_xcalloc((size_t)t->n_params + 1, sizeof *t->pt);
	t->optim = dt_xcalloc((size_t)n_bufs + 1, sizeof *t->optim);
	t->ot = dt_xcalloc((size_t)n_bufs + 1, sizeof *t->ot);
	t->n_params = 0;
	for (int j = 0; j < dt_model_n_tensors(model); j++) {
		struct dt_tensor_info ti;
		int i = t->n_params;

		dt_model_tensor_info(model, j, &ti);
		/* A tied copy is saved once, as its embedding's table; the
		 * loader fills it (dt_model_tie_fill). */
		if (ti.tie_node != NULL)
			continue;
		t->n_params++;
		snprintf(t->names[i], sizeof t->names[i], "%s.%s", ti.node,
			 ti.name);
		t->params[i].name = t->names[i];
		t->params[i].data = params + ti.offset;
		t->params[i].n_dims = ti.n_dims;
		memcpy(t->params[i].shape, ti.shape, sizeof ti.shape);
		t->pt[i].name = t->names[i];
		t->pt[i].data = params + ti.offset;
		t->pt[i].n_dims = ti.n_dims;
		memcpy(t->pt[i].shape, ti.shape, sizeof ti.shape);
	}
	for (int i = 0; i < n_bufs; i++) {
		t->optim[i].name = optim_buf_name(job, i);
		t->optim[i].data = bufs[i];
		t->optim[i].n_dims = 1;
		t->optim[i].shape[0] = (int64_t)n;
		t->ot[i].name = t->optim[i].name;
		t->ot[i].data = bufs[i];
		t->ot[i].n_dims = 1;
		t->ot[i].shape[0] = (int64_t)n;
	}
}

static void
tensors_fini(struct tensors *t)
{
	free(t->names);
	free(t->params);
	free(t->pt);
	free(t->optim);
	free(t->ot);
}

static char *
job_text(const struct dt_job *job)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return dt_xstrdup("");
	if (dt_job_write(job, f, NULL) != DT_OK) {
		fclose(f);
		free(buf);
		return dt_xstrdup("");
	}
	fclose(f);
	return buf;
}

static void
set_extra(struct dt_ckpt_scalar *e, const char *key, double d, int64_t i,
	  int is_int)
{
	snprintf(e->key, sizeof e->key, "%s", key);
	e->type = is_int ? DT_CKPT_INT64 : DT_CKPT_DOUBLE;
	e->d = d;
	e->i = i;
}

#define N_EXTRA 9
/* The files a rank writes of a sharded checkpoint: its parameter file,
 * its optimizer state's, and (parameters parted) its cut tensor's. */
#define SHARD_SLOTS 3
#define SHARD_CUT 2
/* The tag of the untrained tensors sent to their file's writer. */
enum { TAG_UNTRAINED = 31 };

/* The position's values besides meta.json's own keys, into extra
 * (N_EXTRA of them); returns their number. */
static size_t
position_extras(const struct dt_run *r, struct dt_ckpt_scalar *extra)
{
	set_extra(&extra[0], "window_loss", r->position.window_loss, 0, 0);
	set_extra(&extra[1], "window_steps", 0, r->position.window_steps, 1);
	set_extra(&extra[2], "window_samples", 0,
		  r->position.window_samples, 1);
	set_extra(&extra[3], "skipped_steps", 0, r->position.skipped, 1);
	set_extra(&extra[4], "diverge_loss_sum", r->diverge.loss_sum, 0, 0);
	set_extra(&extra[5], "diverge_loss_n", 0, r->diverge.loss_n, 1);
	set_extra(&extra[6], "diverge_norm_sum", r->diverge.norm_sum, 0, 0);
	set_extra(&extra[7], "diverge_norm_n", 0, r->diverge.norm_n, 1);
	set_extra(&extra[8], "samples", 0, r->position.samples, 1);
	return N_EXTRA;
}

enum dt_status
dt_run_claim(struct dt_run *r, int resume, int start_over,
	     struct dt_error *err)
{
	enum dt_status st;

	r->start_over = start_over;
	if (r->rank != 0)
		return DT_OK;
	if (realpath(r->dir, r->run_path) == NULL)
		snprintf(r->run_path, sizeof r->run_path, "%s", r->dir);
	st = dt_rundir_run_id(r->dir, 1, r->run_id, sizeof r->run_id, err);
	if (st == DT_OK)
		st = dt_rundir_claim_ckpt(r->ckpt_dir, r->run_id, r->run_path,
					  !resume, &r->ckpt_lock,
					  &r->ckpt_made, err);
	return st;
}

void
dt_run_release_ckpt(struct dt_run *r, int undo)
{
	char path[DT_JOB_PATH_MAX + 16];

	if (r->rank != 0 || r->ckpt_lock < 0)
		return;
	if (undo && r->ckpt_made &&
	    dt_rundir_path(path, sizeof path, r->ckpt_dir,
			   DT_RUNDIR_OWNER_FILE, NULL) == DT_OK) {
		(void)unlink(path);
		(void)rmdir(r->ckpt_dir);
	}
	close(r->ckpt_lock);
	r->ckpt_lock = -1;
}

void
dt_run_set_aside(struct dt_run *r, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 64], aside[DT_JOB_PATH_MAX + 80],
		msg[sizeof err->msg];
	int64_t bad = r->position.step;

	if (r->rank != 0 || r->last_ckpt_step != bad || bad <= 0 ||
	    dt_ckpt_path(path, sizeof path, r->ckpt_dir, bad, NULL) != DT_OK)
		return;
	snprintf(msg, sizeof msg, "%s", err->msg);
	snprintf(aside, sizeof aside, "%s.diverged", path);
	if (access(aside, F_OK) == 0 || rename(path, aside) != 0) {
		dt_errorf(err, err->status, "%s; and the checkpoint of step "
			  "%lld, whose state gave that loss, could not be set "
			  "aside as %s (%s): remove it before resuming", msg,
			  (long long)bad, aside, access(aside, F_OK) == 0 ?
			  "that name is taken" : strerror(errno));
		return;
	}
	dt_file_fsync_dir(r->ckpt_dir, NULL);
	r->last_ckpt_step = -1;
	dt_errorf(err, err->status, "%s; the checkpoint of step %lld, whose "
		  "state gave that loss, is set aside as %s: a resume "
		  "continues from the checkpoint before it", msg,
		  (long long)bad, aside);
}

enum dt_status
dt_run_checkpoint(struct dt_run *r, struct dt_error *err)
{
	enum dt_status st = dt_run_checkpoint_to(r, r->ckpt_dir,
						 r->job->checkpoint.keep_last,
						 err);

	if (st == DT_OK)
		r->last_ckpt_step = r->position.step;
	return st;
}

/* Rank 0: r->data_files, made at the first call (err: why it could not
 * be, NULL for none needed); NULL when it cannot be. */
static const char *
run_data_files(struct dt_run *r, struct dt_error *err)
{
	struct dt_error e;

	if (r->data_files == NULL)
		r->data_files = dt_datafiles_record(r->data_job,
						    err != NULL ? err : &e);
	return r->data_files;
}

/* The checkpoint's meta.json of r's position: its step, layout, job,
 * run, the optimizer's step count, shard list and inputs' map (heap:
 * the caller frees meta->job_text, meta->data_shards, meta->data_norm
 * and meta->data_files)
 * and extras (in extra, N_EXTRA + DT_BEST_N_EXTRA entries, the
 * caller's). */
static void
fill_meta(struct dt_run *r, struct dt_ckpt_meta *meta,
	  struct dt_ckpt_scalar *extra, int64_t optim_steps)
{
	memset(meta, 0, sizeof *meta);
	meta->step = r->position.step;
	meta->epoch = r->position.epoch;
	meta->epoch_samples = r->position.epoch_off;
	meta->optim_steps = optim_steps;
	meta->seed = r->job->seed;
	meta->world_size = r->plan.world_size;
	meta->dp_size = r->plan.dp_size;
	meta->pp_size = r->plan.pp_size;
	meta->tp_size = r->plan.tp_size;
	meta->job_text = job_text(r->job);
	snprintf(meta->run_id, sizeof meta->run_id, "%s", r->run_id);
	if (r->run_id[0] != '\0')
		snprintf(meta->run_dir, sizeof meta->run_dir, "%s",
			 r->run_path);
	if (r->train.td.shards != NULL)
		meta->data_shards = dt_tokens_shard_list(&r->train.td);
	if (!r->train.tokens && r->train.n > 0)
		meta->data_norm = dt_norm_text(&r->norm);
	if (run_data_files(r, NULL) != NULL)
		meta->data_files = dt_xstrdup(r->data_files);
	meta->n_extra = position_extras(r, extra);
	dt_best_meta_put(&r->best, &extra[meta->n_extra]);
	meta->n_extra += DT_BEST_N_EXTRA;
	meta->extra = extra;
}

/* What rank 0 saves a checkpoint with: meta.json's values (fill_meta,
 * its extras in extra) and the save's options: keep_last, the optimizer
 * file gzip'd where checkpoint.compress says so, pruning problems to
 * stderr, no fetch (the caller sets one). ckpt_head_fini frees what
 * fill_meta allocated; h must stay where it is meanwhile (meta.extra
 * points into it). */
struct ckpt_head {
	struct dt_ckpt_scalar extra[N_EXTRA + DT_BEST_N_EXTRA];
	struct dt_ckpt_meta meta;
	struct dt_ckpt_opts opts;
};

static void
ckpt_head_init(struct dt_run *r, struct ckpt_head *h, int64_t optim_steps,
	       int64_t keep_last)
{
	fill_meta(r, &h->meta, h->extra, optim_steps);
	memset(&h->opts, 0, sizeof h->opts);
	h->opts.keep_last = keep_last;
	h->opts.compress_optim = r->job->checkpoint.compress;
	h->opts.report = dt_ckpt_report_file;
	h->opts.report_ctx = stderr;
}

static void
ckpt_head_fini(struct ckpt_head *h)
{
	free(h->meta.job_text);
	free(h->meta.data_shards);
	free(h->meta.data_norm);
	free(h->meta.data_files);
}

/* Tensor j of pt: its first float's offset in the parameter arena
 * (*off) and its floats. From pt->pt, which always points into the
 * arena (pt->params[j].data may point at a copy, untrained_from_first). */
static size_t
tensor_span(const struct dt_run *r, const struct tensors *pt, int j,
	    size_t *off)
{
	const struct dt_ckpt_target *t = &pt->pt[j];
	size_t n = 1;

	*off = (size_t)(t->data - dt_model_params(r->model));
	for (int d = 0; d < t->n_dims; d++)
		n *= (size_t)t->shape[d];
	return n;
}

/* The stage rank whose part (dt_comm_part over stage_comm, that of
 * sharded_tensors' optimizer spans) holds trained float off of nt; 0 for
 * an untrained one (off >= nt), which every rank holds. Its part's end
 * into *part_hi. */
static int
owner_part(struct dt_comm *c, size_t nt, size_t off, size_t *part_hi)
{
	int p = dt_comm_size(c);

	*part_hi = nt;
	for (int q = 0; off < nt && q < p; q++) {
		size_t lo, hi;

		dt_comm_part(nt, p, q, &lo, &hi);
		*part_hi = hi;
		if (off >= lo && off < hi)
			return q;
	}
	return 0;
}

/* The index in pt of the trained tensor whose file holds tensor j
 * where the parameters are parted: j itself if it is trained; for an
 * untrained one (a batchnorm's running statistics, past the stage's nt
 * trained floats in the arena but between trained tensors in the list)
 * the nearest trained tensor before it in the list, or where none is,
 * the first after it; -1 where the stage trains nothing. So every file
 * holds consecutive tensors of the list. */
static int
anchor_of(const struct dt_run *r, const struct tensors *pt, int j)
{
	const struct dt_stage_info *si = &r->layout.stage;
	size_t nt = si->trained_hi - si->trained_lo, off;

	for (int k = j; k >= 0; k--)
		if (tensor_span(r, pt, k, &off) > 0 && off < nt)
			return k;
	for (int k = j + 1; k < pt->n_params; k++)
		if (tensor_span(r, pt, k, &off) > 0 && off < nt)
			return k;
	return -1;
}

/* Whether this rank writes tensor j of pt into its parameter file of a
 * sharded checkpoint: the stage's first rank every tensor, or where the
 * parameters are parted (parallel.zero: 3, dt_grad_sync_params_parted)
 * the rank whose part holds the whole of the trained tensor that j goes
 * with (anchor_of; j's own part where it is trained, the stage's first
 * rank where the stage trains nothing). Where that tensor runs past the
 * end of the part holding its first float it is cut: write_cut writes
 * it, and the untrained ones that go with it. */
static int
writes_tensor(const struct dt_run *r, const struct tensors *pt, int j)
{
	const struct dt_stage_info *si = &r->layout.stage;
	struct dt_comm *c = r->layout.stage_comm;
	size_t off, n, hi, nt;
	int q, a;

	if (!dt_grad_sync_params_parted(r->sync))
		return dt_comm_rank(c) == 0;
	a = anchor_of(r, pt, j);
	if (a < 0)
		return dt_comm_rank(c) == 0;
	n = tensor_span(r, pt, a, &off);
	nt = si->trained_hi - si->trained_lo;
	q = owner_part(c, nt, off, &hi);
	return q == dt_comm_rank(c) && off + n <= hi;
}

/* The stage rank that writes tensor j of pt where the parameters are
 * parted: the one whose part holds the first float of the trained
 * tensor j goes with (anchor_of; whole in its part, or cut: write_cut),
 * the stage's first rank where the stage trains nothing. */
static int
writer_of(const struct dt_run *r, const struct tensors *pt, int j)
{
	const struct dt_stage_info *si = &r->layout.stage;
	size_t nt = si->trained_hi - si->trained_lo, off, hi;
	int a = anchor_of(r, pt, j);

	if (a < 0)
		return 0;
	(void)tensor_span(r, pt, a, &off);
	return owner_part(r->layout.stage_comm, nt, off, &hi);
}

/* Where the parameters are parted, the untrained tensors (a batchnorm's
 * running statistics, which each rank updates from its own
 * micro-batches) are written as the stage's first rank holds them, as
 * every other layout writes them (that rank writes the parameters):
 * each one whose file another rank writes is sent there (stage_comm,
 * point to point, in the list's order) into a copy, *copy (heap, the
 * caller frees it; NULL where none), and pt->params[j].data points at
 * it. A failed transfer leaves the other rank waiting: the job ends. */
static void
untrained_from_first(struct dt_run *r, struct tensors *pt, float **copy)
{
	const struct dt_stage_info *si = &r->layout.stage;
	size_t nt = si->trained_hi - si->trained_lo, total = 0, at = 0;
	struct dt_comm *c = r->layout.stage_comm;
	int me = dt_comm_rank(c);
	enum dt_status st = DT_OK;
	struct dt_error err;

	*copy = NULL;
	for (int j = 0; j < pt->n_params; j++) {
		size_t off, n = tensor_span(r, pt, j, &off);

		if (n > 0 && off >= nt && me != 0 && writer_of(r, pt, j) == me)
			total += n;
	}
	if (total > 0)
		*copy = dt_xalloc_floats(total);	/* (total) */
	for (int j = 0; j < pt->n_params && st == DT_OK; j++) {
		size_t off, n = tensor_span(r, pt, j, &off);
		int w;

		if (n == 0 || off < nt || (w = writer_of(r, pt, j)) == 0)
			continue;
		if (me == 0) {
			st = dt_comm_send_f32(c, pt->pt[j].data, n, w,
					      TAG_UNTRAINED, &err);
		} else if (me == w) {
			st = dt_comm_recv_f32(c, *copy + at, n, 0,
					      TAG_UNTRAINED, &err);
			pt->params[j].data = *copy + at;
			at += n;
		}
	}
	if (st != DT_OK) {
		fprintf(stderr, "dtrain: rank %d: %s\n", r->rank, err.msg);
		dt_comm_abort(r->comm, dt_status_exit_code(st));
	}
}

/* A parameter file where the parameters are parted, named by the index
 * j of its first tensor in the stage's list: params-tensor-JJJJJJ
 * .safetensors, or params-stage-SSS-tensor-JJJJJJ on a pipeline. A
 * file's tensors follow each other in the list (the trained ones lie in
 * the arena in its order, graph.c, and each untrained one goes with
 * the trained one before it, anchor_of), so the names sort in the
 * one-rank model's order, the order export streams them in. */
static void
param_file_parted(const struct dt_run *r, char *file, size_t size, int j)
{
	if (r->plan.pp_size == 1)
		snprintf(file, size, "params-tensor-%06d.safetensors", j);
	else
		snprintf(file, size,
			 "params-stage-%03d-tensor-%06d.safetensors",
			 r->layout.grid.stage, j);
}

/* Where the parameters are parted: each tensor that runs past the end
 * of the part holding its first float (a part has at most one, its
 * last), one at a time, gathered (collective over the stage's summing
 * ranks, dt_grad_sync_params_span), written by the rank of that part
 * (its file SHARD_CUT of mine) with the untrained tensors that go with
 * it (anchor_of: whole on every rank) and handed back at once, so that
 * no rank holds more than one tensor beyond its part. Every rank runs
 * every gather, also after its own write failed (*st). */
static void
write_cut(struct dt_run *r, const char *tmp, const struct tensors *pt,
	  struct dt_ckpt_shard_file *mine, enum dt_status *st,
	  struct dt_error *err)
{
	const struct dt_stage_info *si = &r->layout.stage;
	size_t nt = si->trained_hi - si->trained_lo;
	struct dt_comm *c = r->layout.stage_comm;
	char file[64];

	for (int j = 0; j < pt->n_params; j++) {
		size_t off, n = tensor_span(r, pt, j, &off), hi, end;
		int q, first = j, last = j + 1;

		if (n == 0 || off >= nt)
			continue;
		q = owner_part(c, nt, off, &hi);
		if (off + n <= hi)
			continue;
		end = off + n < nt ? off + n : nt;
		dt_grad_sync_params_span(r->sync, off, end, err);
		while (first > 0 && anchor_of(r, pt, first - 1) == j)
			first--;
		while (last < pt->n_params && anchor_of(r, pt, last) == j)
			last++;
		if (q == dt_comm_rank(c) && *st == DT_OK) {
			param_file_parted(r, file, sizeof file, first);
			*st = dt_ckpt_shard_write(tmp, file,
						  &pt->params[first],
						  (size_t)(last - first),
						  &mine[SHARD_CUT], err);
		}
		dt_grad_sync_params_span_release(r->sync, off, end);
	}
}

/* What this rank writes of a sharded checkpoint (ckpt.h): the stage's
 * first rank its stage's parameters, by tensor (into t[0..*n_p); where
 * they are parted, each rank the tensors beginning in its part); every
 * rank of the stage its part (dt_comm_part over stage_comm, the part
 * parallel.zero's optimizer owns) of each optimizer buffer, as spans at
 * their one-rank offsets (into t[*n_p..*n_p + *n_o)), read in place from
 * os (dt_grad_sync_state_own: the whole buffers, or at parallel.zero
 * that very part). Ranks holding replicas thus write disjoint bytes. t
 * and names: room for every tensor of the stage and 4 spans; pt from
 * tensors_init. */
static void
shard_tensors(struct dt_run *r, const struct dt_grad_sync_state *os,
	      const struct tensors *pt, struct dt_ckpt_tensor *t,
	      char (*names)[128], size_t *n_p, size_t *n_o)
{
	const struct dt_stage_info *si = &r->layout.stage;
	size_t nt = si->trained_hi - si->trained_lo, lo, hi;
	struct dt_comm *c = r->layout.stage_comm;

	*n_p = 0;
	for (int j = 0; j < pt->n_params; j++)
		if (writes_tensor(r, pt, j))
			t[(*n_p)++] = pt->params[j];
	*n_o = 0;
	dt_comm_part(nt, dt_comm_size(c), dt_comm_rank(c), &lo, &hi);
	assert(hi <= lo || (os->lo <= lo && hi <= os->hi));
	for (int b = 0; hi > lo && b < os->n_bufs; b++) {
		struct dt_ckpt_tensor *o = &t[*n_p + *n_o];

		snprintf(names[b], sizeof names[b], "%s[%zu:%zu]",
			 optim_buf_name(r->job, b), si->trained_lo + lo,
			 si->trained_lo + hi);
		o->name = names[b];
		o->data = os->bufs[b] + (lo - os->lo);
		o->n_dims = 1;
		o->shape[0] = (int64_t)(hi - lo);
		(*n_o)++;
	}
}

/* Rank 0 learns every rank's SHARD_SLOTS shard files (an empty name: none), in
 * rank order, into files; returns how many. */
static size_t
shard_files(struct dt_run *r, const struct dt_ckpt_shard_file *mine,
	    struct dt_ckpt_shard_file *files, enum dt_status *st,
	    struct dt_error *err)
{
	size_t n = 0;

	for (int q = 0; q < r->plan.world_size && *st == DT_OK; q++) {
		struct dt_ckpt_shard_file f[SHARD_SLOTS];

		memcpy(f, mine, sizeof f);
		*st = dt_comm_bcast(r->comm, f, sizeof f, q, err);
		for (int k = 0; r->rank == 0 && *st == DT_OK && k < SHARD_SLOTS; k++)
			if (f[k].name[0] != '\0')
				files[n++] = f[k];
	}
	return n;
}

/* The index of the first tensor of pt this rank writes into its
 * parameter file (writes_tensor), or -1. */
static int
first_written(const struct dt_run *r, const struct tensors *pt)
{
	for (int j = 0; j < pt->n_params; j++)
		if (writes_tensor(r, pt, j))
			return j;
	return -1;
}

/* This rank's files of a sharded checkpoint into tmp (mine: SHARD_SLOTS entries,
 * an empty name where it writes none). */
static enum dt_status
shard_write_mine(struct dt_run *r, const char *tmp,
		 const struct dt_grad_sync_state *os,
		 struct dt_ckpt_shard_file *mine, struct dt_error *err)
{
	struct tensors pt;
	struct dt_ckpt_tensor *t;
	float *copy = NULL;	/* (the untrained floats sent here): the
				 * first rank's untrained tensors */
	char names[4][128], file[64];
	size_t n_p, n_o;
	enum dt_status st = DT_OK;

	tensors_init(&pt, r->job, r->model, dt_model_params(r->model), NULL,
		     0);
	if (dt_grad_sync_params_parted(r->sync))
		untrained_from_first(r, &pt, &copy);
	t = dt_xcalloc((size_t)pt.n_params + 5, sizeof *t);
	shard_tensors(r, os, &pt, t, names, &n_p, &n_o);
	if (dt_grad_sync_params_parted(r->sync))
		param_file_parted(r, file, sizeof file, first_written(r, &pt));
	else if (r->plan.pp_size == 1)
		snprintf(file, sizeof file, "params.safetensors");
	else
		snprintf(file, sizeof file, "params-stage-%03d.safetensors",
			 r->layout.grid.stage);
	if (n_p > 0)
		st = dt_ckpt_shard_write(tmp, file, t, n_p, &mine[0], err);
	snprintf(file, sizeof file, "rank-%05d.safetensors", r->rank);
	if (st == DT_OK && n_o > 0)
		st = dt_ckpt_shard_write(tmp, file, t + n_p, n_o, &mine[1],
					 err);
	if (dt_grad_sync_params_parted(r->sync))
		write_cut(r, tmp, &pt, mine, &st, err);
	free(t);
	free(copy);
	tensors_fini(&pt);
	return st;
}

/* The rank's shard into tmp, then (rank 0, when every rank's is durable)
 * meta.json and the manifest, and the rename. Collective over r->comm;
 * every rank returns the same status. */
static enum dt_status
shard_write_all(struct dt_run *r, const char *tmp, const char *dir,
		int64_t keep_last, struct dt_error *err)
{
	struct dt_ckpt_shard_file mine[SHARD_SLOTS], *files = NULL;
	struct dt_grad_sync_state os;
	enum dt_status st;
	size_t n_files = 0;

	memset(mine, 0, sizeof mine);
	/* parallel.zero: 3 holds each parameter on its owner only: each
	 * rank writes the tensors wholly in its part, and only the tensors
	 * a part boundary cuts are gathered, one at a time (write_cut).
	 * The optimizer state is never gathered. */
	dt_grad_sync_state_own(r->sync, &os);
	st = shard_write_mine(r, tmp, &os, mine, err);
	st = dt_comm_agree(r->comm, st, err);
	if (st == DT_OK) {
		files = dt_xcalloc(SHARD_SLOTS * (size_t)r->plan.world_size,
				   sizeof *files);
		n_files = shard_files(r, mine, files, &st, err);
	}
	if (r->rank == 0 && st == DT_OK) {
		struct ckpt_head h;

		/* (checkpoint.compress is false here: dt_plan_ckpt_sharded) */
		ckpt_head_init(r, &h, os.steps, keep_last);
		st = dt_ckpt_shard_finish(dir, tmp, &h.opts, &h.meta, files,
					  n_files, err);
		ckpt_head_fini(&h);
	}
	free(files);
	if (r->rank == 0 && st != DT_OK)
		dt_ckpt_shard_abort(tmp);
	return dt_comm_agree(r->comm, st, err);
}

/* A checkpoint written in shards (ckpt.h): every rank writes its own
 * part, nothing is gathered. Returns 1 with the agreed status in *st, or
 * 0 (nothing written) where the plan says rank 0 gathers them
 * (dt_plan_ckpt_sharded: parameter servers, checkpoint.compress, a world
 * larger than a manifest lists) or some rank cannot see the checkpoint
 * directory (then the gather writes it). */
static int
shard_checkpoint(struct dt_run *r, const char *dir, int64_t keep_last,
		 enum dt_status *st, struct dt_error *err)
{
	struct {
		int32_t st;
		char tmp[DT_JOB_PATH_MAX + 96];
	} b;
	enum dt_status seen;

	if (!dt_plan_ckpt_sharded(r->job, &r->plan) ||
	    dt_grad_sync_state_remote(r->sync) || r->layout.stage_comm == NULL)
		return 0;
	memset(&b, 0, sizeof b);
	if (r->rank == 0)
		b.st = (int32_t)dt_ckpt_shard_begin(dir, r->position.step,
						    b.tmp, sizeof b.tmp, err);
	*st = dt_comm_bcast(r->comm, &b, sizeof b, 0, err);
	if (*st == DT_OK && b.st != DT_OK)
		*st = dt_comm_agree(r->comm, (enum dt_status)b.st, err);
	if (*st != DT_OK)
		return 1;
	seen = access(b.tmp, W_OK) == 0 ? DT_OK : DT_ERR_IO;
	if (dt_comm_agree(r->comm, seen, err) != DT_OK) {
		if (r->rank == 0)
			dt_ckpt_shard_abort(b.tmp);
		dt_error_clear(err);
		return 0;
	}
	*st = shard_write_all(r, b.tmp, dir, keep_last, err);
	return 1;
}

/* A checkpoint of the gathered format written a piece at a time where
 * the optimizer state (and at parallel.zero 3 the trained parameters)
 * is in parts over the ranks of one stage: rank 0's dt_ckpt_save
 * fetches each piece (DT_CKPT_STREAM_FLOATS floats of one tensor) from
 * the ranks whose parts hold it as it writes, twice (its CRC-32 before
 * the header, its bytes after), and the other ranks make the same
 * fetches in the same order (stream_from), so no rank holds more than
 * its part and one piece; the bytes are those of the whole state
 * written at once. */
struct stream {
	struct dt_run *r;
	struct tensors *t;	/* rank 0's lists: data NULL where fetched */
	int64_t done;		/* fetches made */
};

/* One fetch (dt_ckpt_fetch_fn): collective over the stage's summing
 * ranks; buf NULL on a rank that only sends. A failed exchange leaves
 * the others inside it: the job ends. */
static enum dt_status
stream_fetch(void *ctx, int file, size_t j, int64_t lo, int64_t hi,
	     float *buf, struct dt_error *err)
{
	struct stream *x = ctx;
	float *params = dt_model_params(x->r->model);	/* (n_params) */
	enum dt_status st = DT_OK;

	x->done++;
	if (file == 0) {
		size_t off = (size_t)(x->t->pt[j].data - params);

		st = dt_grad_sync_params_span(x->r->sync, off + (size_t)lo,
					      off + (size_t)hi, err);
		if (st == DT_OK && buf != NULL)
			memcpy(buf, params + off + lo,
			       (size_t)(hi - lo) * sizeof *buf);
		dt_grad_sync_params_span_release(x->r->sync, off + (size_t)lo,
						 off + (size_t)hi);
	} else {
		st = dt_grad_sync_state_span(x->r->sync, (int)j, (size_t)lo,
					     (size_t)hi, buf, err);
	}
	if (st != DT_OK) {
		fprintf(stderr, "dtrain: rank %d: %s\n", x->r->rank, err->msg);
		dt_comm_abort(x->r->comm, dt_status_exit_code(st));
	}
	return DT_OK;
}

/* The fetches of a streamed save from the k-th on (0: all), in
 * dt_ckpt_save's order (ckpt.h), into buf (NULL: this rank sends). */
static void
stream_from(struct stream *x, int64_t k, float *buf)
{
	int64_t i = 0;
	struct dt_error err;

	for (int file = 0; file < 2; file++) {
		const struct dt_ckpt_tensor *t = file == 0 ? x->t->params :
						 x->t->optim;
		int n = file == 0 ? x->t->n_params : x->t->n_optim;

		for (int pass = 0; pass < 2; pass++)
			for (int j = 0; j < n; j++) {
				int64_t size = 1;

				if (t[j].data != NULL)
					continue;
				for (int d = 0; d < t[j].n_dims; d++)
					size *= t[j].shape[d];
				for (int64_t lo = 0; lo < size;
				     lo += DT_CKPT_STREAM_FLOATS, i++) {
					int64_t hi = size - lo <
						     DT_CKPT_STREAM_FLOATS ?
						     size : lo +
						     DT_CKPT_STREAM_FLOATS;

					if (i >= k)
						stream_fetch(x, file, (size_t)j,
							     lo, hi, buf, &err);
				}
			}
	}
}

/* Whether a checkpoint of the gathered format is written a piece at a
 * time (stream_fetch): the optimizer state in parts over the ranks of
 * the one stage, no tensor slices. */
static int
streams_gathered(const struct dt_run *r)
{
	return !r->layout.split && r->plan.pp_size == 1 &&
	       r->plan.tp_size == 1 && dt_grad_sync_state_parted(r->sync);
}

/* The gathered format, streamed (struct stream). Collective over
 * r->comm; every rank returns the same status. */
static enum dt_status
stream_checkpoint(struct dt_run *r, const char *dir, int64_t keep_last,
		  struct dt_error *err)
{
	struct dt_grad_sync_state os;
	struct stream x = { .r = r };
	struct tensors t;
	enum dt_status st = DT_OK;
	float *params = dt_model_params(r->model);	/* (n_params) */
	size_t nt = dt_model_n_trained(r->model);

	dt_grad_sync_state_own(r->sync, &os);
	tensors_init(&t, r->job, r->model, params, os.bufs, os.n_bufs);
	x.t = &t;
	/* The parts are fetched: the optimizer buffers always, the
	 * trained parameters where the ranks hold parts of them. */
	for (int b = 0; b < t.n_optim; b++)
		t.optim[b].data = NULL;
	for (int j = 0; j < t.n_params; j++)
		if (dt_grad_sync_params_parted(r->sync) &&
		    (size_t)(t.pt[j].data - params) < nt)
			t.params[j].data = NULL;
	if (r->rank == 0) {
		struct ckpt_head h;

		ckpt_head_init(r, &h, os.steps, keep_last);
		h.opts.fetch = stream_fetch;
		h.opts.fetch_ctx = &x;
		st = dt_ckpt_save(dir, &h.opts, &h.meta, t.params,
				  (size_t)t.n_params, t.optim,
				  (size_t)t.n_optim, err);
		ckpt_head_fini(&h);
		if (st != DT_OK) {
			/* The fetches the failed save did not make. */
			float *scratch =	/* (DT_CKPT_STREAM_FLOATS) */
				dt_xalloc_floats((size_t)DT_CKPT_STREAM_FLOATS);

			stream_from(&x, x.done, scratch);
			free(scratch);
		}
	} else {
		stream_from(&x, 0, NULL);
	}
	tensors_fini(&t);
	return dt_comm_agree(r->comm, st, err);
}

enum dt_status
dt_run_checkpoint_to(struct dt_run *r, const char *dir, int64_t keep_last,
		     struct dt_error *err)
{
	enum dt_status st = DT_OK;
	struct dt_full f;

	if (shard_checkpoint(r, dir, keep_last, &st, err))
		return st;
	if (streams_gathered(r))
		return stream_checkpoint(r, dir, keep_last, err);

	memset(&f, 0, sizeof f);
	/* Where the state is kept elsewhere (parameter servers) or in parts
	 * (parallel.zero), every training rank fetches it first; a failure
	 * goes on to the agreement below, so that every one learns of it
	 * instead of waiting there. */
	st = dt_grad_sync_state_collect(r->sync, err);
	if (r->layout.split) {
		/* Each stage holds its own part: rank 0 collects them. */
		st = dt_comm_agree(r->comm, st, err);
		if (st == DT_OK)
			st = dt_full_gather(r, &f, err);
	}
	if (r->rank == 0 && st == DT_OK) {
		struct tensors t;
		struct ckpt_head h;
		struct dt_grad_sync_state os;

		dt_grad_sync_state(r->sync, &os);
		/* A checkpoint's optimizer tensors are the state of every
		 * trained float, which is what each implementation keeps. */
		assert(os.lo == 0 && os.hi == dt_model_n_trained(r->model));
		if (r->layout.split)
			tensors_init(&t, r->job, f.shapes, f.params, f.bufs,
				     f.n_bufs);
		else
			tensors_init(&t, r->job, r->model,
				     dt_model_params(r->model), os.bufs,
				     os.n_bufs);
		ckpt_head_init(r, &h, os.steps, keep_last);
		st = dt_ckpt_save(dir, &h.opts, &h.meta, t.params,
				  (size_t)t.n_params, t.optim,
				  (size_t)t.n_optim, err);
		ckpt_head_fini(&h);
		tensors_fini(&t);
	}
	dt_full_free(&f);
	return dt_comm_agree(dt_grad_sync_workers(r->sync), st, err);
}

/* meta.json's extra value `key` into *i or *d (the other is untouched):
 * 0 when absent (a checkpoint from before the key), DT_ERR_FORMAT naming
 * the file and key when it has the other type. */
static enum dt_status
extra_get(const struct dt_ckpt_meta *m, const char *file, const char *key,
	  int64_t *i, double *d, struct dt_error *err)
{
	enum dt_ckpt_scalar_type want = i != NULL ? DT_CKPT_INT64 :
						    DT_CKPT_DOUBLE;

	if (i != NULL)
		*i = 0;
	else
		*d = 0;
	for (size_t k = 0; k < m->n_extra; k++) {
		if (strcmp(m->extra[k].key, key) != 0)
			continue;
		if (m->extra[k].type != want)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: extra.%s: "
					 "expected %s", file, key,
					 i != NULL ? "an int64" : "a double");
		if (i != NULL)
			*i = m->extra[k].i;
		else
			*d = m->extra[k].d;
	}
	return DT_OK;
}

static int
has_extra(const struct dt_ckpt_meta *m, const char *key)
{
	for (size_t k = 0; k < m->n_extra; k++)
		if (strcmp(m->extra[k].key, key) == 0)
			return 1;
	return 0;
}

/* Refuses an integer of meta.json outside [lo, hi], naming file and key
 * and why hi is the bound. */
static enum dt_status
bound_int(const char *file, const char *key, int64_t v, int64_t lo,
	  int64_t hi, const char *why, struct dt_error *err)
{
	if (v >= lo && v <= hi)
		return DT_OK;
	return dt_errorf(err, DT_ERR_FORMAT, "%s: %s: %lld is outside [%lld, "
			 "%lld] (%s); the checkpoint does not belong to this "
			 "job and data", file, key, (long long)v, (long long)lo,
			 (long long)hi, why);
}

static enum dt_status
bound_double(const char *file, const char *key, double v,
	     struct dt_error *err)
{
	if (isfinite(v) && v >= 0)
		return DT_OK;
	return dt_errorf(err, DT_ERR_FORMAT, "%s: %s: %g is not a finite "
			 "number >= 0", file, key, v);
}

/* What rank 0 broadcasts besides the arenas. */
struct position {
	int32_t status;
	int32_t found;
	int32_t own;		/* every rank reads its own part (a sharded
				 * checkpoint, the state kept where it
				 * trains), else rank 0 reads the whole */
	char path[DT_JOB_PATH_MAX + 64];	/* the checkpoint */
	int64_t step, epoch, epoch_off, optim_steps;
	int64_t window_steps, window_samples, skipped;
	double window_loss;
	struct dt_best best;
	double diverge_loss_sum, diverge_norm_sum;
	int64_t diverge_loss_n, diverge_norm_n;
	int64_t samples;
};

/* The most ranks a checkpoint's writer may have had (2^20): it bounds
 * optim_steps below, so a crafted world_size cannot loosen that. */
#define DT_CKPT_WORLD_MAX 1048576

/* The position of meta (read from checkpoint directory dir, named for
 * step dir_step) into *pos, every number checked against the job and the
 * data before anything uses it: a crafted meta.json whose manifest was
 * recomputed verifies, and its numbers index the data set (the gather
 * reads perm[epoch_samples...]) and size the loop's sums. The bounds are
 * what a run of this job can reach: the data position inside the
 * training set, no more epochs or skipped steps than steps, no more
 * optimizer updates than steps x ranks (asynchronous servers update once
 * per push), no more logged samples than steps x the largest batch. (Every
 * random draw is keyed by (seed, step, sample), checked here through
 * the seed and the step: there is no generator state to check.) The
 * tensors' names and shapes are checked against the model by
 * dt_ckpt_load. */
static enum dt_status
checked_position(const struct dt_run *r, const char *dir, int64_t dir_step,
		 const struct dt_ckpt_meta *m, struct position *pos,
		 struct dt_error *err)
{
	char file[DT_JOB_PATH_MAX + 80];
	int64_t step = m->step, n = r->train.n;
	double max_samples;
	enum dt_status st;

	snprintf(file, sizeof file, "%s/meta.json", dir);
	if ((st = bound_int(file, "step", step, dir_step, dir_step,
			    "the directory's name", err)) ||
	    (st = bound_int(file, "step", step, 0, DT_JOB_STEPS_MAX,
			    "train.steps' bound", err)) ||
	    (st = bound_int(file, "epoch", m->epoch, 0, step,
			    "every epoch takes a step", err)) ||
	    (st = bound_int(file, "epoch_samples", m->epoch_samples, 0, n,
			    "the training set's samples", err)) ||
	    (st = bound_int(file, "world_size", m->world_size, 1,
			    DT_CKPT_WORLD_MAX, "2^20 ranks", err)) ||
	    (st = bound_int(file, "optim_steps", m->optim_steps, 0,
			    step * (int64_t)m->world_size,
			    "one update per step and rank at most", err)))
		return st;
	pos->step = step;
	pos->epoch = m->epoch;
	pos->epoch_off = m->epoch_samples;
	pos->optim_steps = m->optim_steps;
	if ((st = extra_get(m, file, "window_loss", NULL, &pos->window_loss,
			    err)) ||
	    (st = extra_get(m, file, "window_steps", &pos->window_steps, NULL,
			    err)) ||
	    (st = extra_get(m, file, "window_samples", &pos->window_samples,
			    NULL, err)) ||
	    (st = extra_get(m, file, "skipped_steps", &pos->skipped, NULL,
			    err)) ||
	    (st = extra_get(m, file, "diverge_loss_sum", NULL,
			    &pos->diverge_loss_sum, err)) ||
	    (st = extra_get(m, file, "diverge_loss_n", &pos->diverge_loss_n,
			    NULL, err)) ||
	    (st = extra_get(m, file, "diverge_norm_sum", NULL,
			    &pos->diverge_norm_sum, err)) ||
	    (st = extra_get(m, file, "diverge_norm_n", &pos->diverge_norm_n,
			    NULL, err)) ||
	    (st = extra_get(m, file, "samples", &pos->samples, NULL, err)))
		return st;
	if (!has_extra(m, "samples"))	/* from before the key */
		pos->samples = (step - pos->skipped) * r->plan.global_batch;
	max_samples = (double)pos->window_steps * DT_JOB_BATCH_MAX *
		      (double)(r->labels_per_sample > 0 ?
			       r->labels_per_sample : 1);
	if ((st = bound_int(file, "extra.window_steps", pos->window_steps, 0,
			    step, "no more than the steps", err)) ||
	    (st = bound_int(file, "extra.window_samples",
			    pos->window_samples, 0,
			    max_samples < (double)INT64_MAX / 2 ?
			    (int64_t)max_samples : INT64_MAX / 2,
			    "the window's steps x the largest batch", err)) ||
	    (st = bound_int(file, "extra.skipped_steps", pos->skipped, 0, step,
			    "no more than the steps", err)) ||
	    (st = bound_int(file, "extra.samples", pos->samples, 0,
			    step * DT_JOB_BATCH_MAX,
			    "the steps x the largest batch", err)) ||
	    (st = bound_int(file, "extra.diverge_loss_n", pos->diverge_loss_n,
			    0, step < DT_DIVERGE_WINDOW ? step :
			    DT_DIVERGE_WINDOW, "the guard's early window",
			    err)) ||
	    (st = bound_int(file, "extra.diverge_norm_n", pos->diverge_norm_n,
			    0, step < DT_DIVERGE_WINDOW ? step :
			    DT_DIVERGE_WINDOW, "the guard's early window",
			    err)) ||
	    (st = bound_double(file, "extra.window_loss", pos->window_loss,
			       err)) ||
	    (st = bound_double(file, "extra.diverge_loss_sum",
			       pos->diverge_loss_sum, err)) ||
	    (st = bound_double(file, "extra.diverge_norm_sum",
			       pos->diverge_norm_sum, err)))
		return st;
	return DT_OK;
}

/* The best-checkpoint state of meta (eval.keep_best, eval.patience) into
 * *b, checked like the position: the right types, a best step of -1 (none
 * yet) up to the checkpoint's step, no more evaluations without
 * improvement than steps, and a finite value >= 0 once there is a best
 * (loss, accuracy and perplexity all are). */
static enum dt_status
checked_best(const char *dir, const struct dt_ckpt_meta *m,
	     struct dt_best *b, struct dt_error *err)
{
	char file[DT_JOB_PATH_MAX + 80];
	int64_t i;
	double d;
	enum dt_status st;

	snprintf(file, sizeof file, "%s/meta.json", dir);
	if ((st = extra_get(m, file, "best_value", NULL, &d, err)) ||
	    (st = extra_get(m, file, "best_step", &i, NULL, err)) ||
	    (st = extra_get(m, file, "best_bad_evals", &i, NULL, err)))
		return st;
	dt_best_meta_get(b, m);
	if ((st = bound_int(file, "extra.best_step", b->step, -1, m->step,
			    "no later than the checkpoint", err)) ||
	    (st = bound_int(file, "extra.best_bad_evals", b->bad_evals, 0,
			    m->step, "no more than the steps", err)))
		return st;
	if (b->step >= 0)
		return bound_double(file, "extra.best_value", b->value, err);
	return DT_OK;
}

/* Rank 0, no usable checkpoint (find: the search's status, err its
 * message): DT_OK to start from the beginning, or the refusal of a run
 * that has trained and would be started over. */
static enum dt_status
no_checkpoint(struct dt_run *r, enum dt_status find, struct dt_error *err)
{
	char why[sizeof err->msg];
	int64_t last;
	int summary, history = dt_metrics_history(r->dir, &last, &summary);

	if (find == DT_OK)
		snprintf(why, sizeof why, "%.1024s holds no checkpoint",
			 r->ckpt_dir);
	else
		snprintf(why, sizeof why, "%s", err->msg);
	if (r->start_over || (!history && find == DT_OK)) {
		fprintf(stderr, "dtrain: %s; starting from the beginning%s\n",
			why, r->start_over ? " (--start-over)" : "");
		return dt_run_vocab_replace(r, err);
	}
	if (!history)
		return find;
	return dt_errorf(err, find == DT_OK ? DT_ERR_USAGE : find, "%s: the "
			 "run has trained (%s%lld%s) but %s%s; resuming would "
			 "start it over and rewrite its history: put its "
			 "checkpoint back, or start over from step 0 with "
			 "dtrain resume --start-over %s", r->dir,
			 last > 0 ? "metrics.jsonl to step " : "",
			 (long long)(last > 0 ? last : 0),
			 summary ? (last > 0 ? ", summary.json" :
				    " steps; summary.json") : "",
			 why, find == DT_OK ? "" : " (each candidate is "
			 "named above, with why it was skipped)", r->dir);
}

/* Line i (0-based) of a shard list, into buf; "" past the end. */
static void
shard_line(const char *list, int64_t i, char *buf, size_t size)
{
	const char *p = list != NULL ? list : "", *e;

	for (; i > 0 && *p != '\0'; i--) {
		e = strchr(p, '\n');
		p = e != NULL ? e + 1 : p + strlen(p);
	}
	e = strchr(p, '\n');
	snprintf(buf, size, "%.*s", (int)(e != NULL ? e - p : (int)strlen(p)),
		 p);
	/* "NAME<TAB>BYTES" reads "NAME (BYTES bytes)" in messages. */
	if ((e = strchr(buf, '\t')) != NULL) {
		char bytes[32];

		snprintf(bytes, sizeof bytes, "%s", e + 1);
		snprintf(buf + (e - buf), size - (size_t)(e - buf),
			 " (%s bytes)", bytes);
	}
}

/* A run over token shards resumes only over the shard list its
 * checkpoint was saved with (names and sizes, in order): windows are
 * numbered across the shards, so another list would silently move every
 * sample after the first change. */
static enum dt_status
checked_shards(const struct dt_run *r, const char *path,
	       const struct dt_ckpt_meta *m, struct dt_error *err)
{
	char *now = r->train.td.shards != NULL ?
		    dt_tokens_shard_list(&r->train.td) : NULL;
	char was_l[DT_JOB_PATH_MAX + 64], now_l[DT_JOB_PATH_MAX + 64];
	enum dt_status st = DT_OK;
	int64_t i = 0;

	if ((now == NULL) != (m->data_shards == NULL)) {
		st = dt_errorf(err, DT_ERR_DATA, "%s: saved %s a list of token "
			       "shards, and the training data %s; resume with "
			       "the data it was saved with", path,
			       now == NULL ? "with" : "without",
			       now == NULL ? "is not sharded" : "is");
		free(now);
		return st;
	}
	if (now == NULL || strcmp(now, m->data_shards) == 0) {
		free(now);
		return DT_OK;
	}
	for (;; i++) {
		shard_line(m->data_shards, i, was_l, sizeof was_l);
		shard_line(now, i, now_l, sizeof now_l);
		if (strcmp(was_l, now_l) != 0)
			break;
	}
	st = dt_errorf(err, DT_ERR_DATA, "%s: the training shards changed "
		       "since the checkpoint: shard %lld was %s, is now %s; "
		       "resume with the same shard list", path, (long long)i,
		       was_l[0] ? was_l : "absent",
		       now_l[0] ? now_l : "absent");
	free(now);
	return st;
}

/* The scale and normalisation statistics the training data gives now
 * (run_data.c) against those the checkpoint's model was trained with:
 * a changed training file would feed the model other inputs. A
 * checkpoint without them (an older dtrain) passes. */
static enum dt_status
checked_norm(const struct dt_run *r, const char *path,
	     const struct dt_ckpt_meta *m, struct dt_error *err)
{
	char *now;
	int same;

	if (m->data_norm == NULL || r->train.tokens)
		return DT_OK;
	now = dt_norm_text(&r->norm);
	same = strcmp(now, m->data_norm) == 0;
	free(now);
	if (same)
		return DT_OK;
	return dt_errorf(err, DT_ERR_DATA, "%s: the model was trained on "
			 "inputs with another scale or other data.normalize "
			 "statistics than the training data gives now (%s); "
			 "has %s changed? Resume with the data it was "
			 "trained on, or start a new run", path,
			 dt_norm_kind_name(r->norm.kind),
			 r->job->data.format == DT_FORMAT_CSV ?
			 r->job->data.train.file.path :
			 r->job->data.train.images);
}

/* A sharded checkpoint (whatever layout wrote it) into the whole model's
 * arrays: params by tensor (t's targets) and the n_bufs optimizer
 * buffers bufs (n_trained of whole each) by span. */
static enum dt_status
load_flat(struct dt_run *r, const char *path, const struct dt_model *whole,
	  const struct tensors *t, float **bufs, int n_bufs,
	  struct dt_ckpt_meta *meta, struct dt_error *err)
{
	struct dt_ckpt_flat a[4];

	assert(n_bufs <= 4);
	for (int b = 0; b < n_bufs; b++) {
		a[b].name = optim_buf_name(r->job, b);
		a[b].data = bufs[b];
		a[b].n = dt_model_n_trained(whole);
	}
	return dt_ckpt_load_flat(path, t->pt, (size_t)t->n_params, a,
				 (size_t)n_bufs, meta, err);
}


/* The checks of meta (read from the checkpoint at path of step) against
 * the job and the data, and the position it gives into *pos. */
static enum dt_status
checked_meta(struct dt_run *r, const char *path, int64_t step,
	     const struct dt_ckpt_meta *meta, struct position *pos,
	     struct dt_error *err)
{
	enum dt_status st = DT_OK;

	if (meta->seed != r->job->seed)
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: saved with seed %llu, "
			       "the job has %llu", path,
			       (unsigned long long)meta->seed,
			       (unsigned long long)r->job->seed);
	if (st == DT_OK)
		st = checked_shards(r, path, meta, err);
	if (st == DT_OK)
		st = checked_norm(r, path, meta, err);
	if (st == DT_OK && meta->data_files != NULL)
		st = run_data_files(r, err) == NULL ? DT_ERR_IO :
		     dt_datafiles_check(path, meta->data_files, r->data_files,
					err);
	if (st == DT_OK)
		st = checked_position(r, path, step, meta, pos, err);
	if (st == DT_OK)
		st = checked_best(path, meta, &pos->best, err);
	return st;
}

/* Parameter servers keep the optimizer state: rank 0 hands them the
 * whole. Tensor ranks that own their slices take their blocks out of the
 * whole tensors (gather.c): the shards' ranges of a block are not
 * built. */
int
dt_run_own_parts(const struct dt_run *r)
{
	return !dt_grad_sync_state_remote(r->sync) &&
	       r->layout.stage_comm != NULL && !r->plan.tp_sliced;
}

/* Rank 0: the newest checkpoint that verifies, into pos->path (found 0
 * when there is none, or DT_OK refused as no_checkpoint says). A sharded
 * one that every rank reads its part of (own_parts) has its meta.json
 * read and checked here, its position into *pos (pos->own 1). */
static enum dt_status
locate(struct dt_run *r, struct position *pos, struct dt_error *err)
{
	int64_t step = -1;
	struct dt_ckpt_meta meta;
	enum dt_status st;

	/* This run is the only writer: what a killed one left half made
	 * goes first. */
	st = dt_ckpt_clean_temporaries(r->ckpt_dir, dt_ckpt_report_file,
				       stderr, err);
	if (st == DT_OK)
		st = dt_ckpt_find_latest(r->ckpt_dir, pos->path,
					 sizeof pos->path, &step,
					 dt_ckpt_report_file, stderr, err);
	if (st == DT_ERR_FORMAT || (st == DT_OK && step < 0))
		return no_checkpoint(r, st, err);
	if (st != DT_OK)
		return st;
	if (r->start_over)
		return dt_errorf(err, DT_ERR_USAGE, "%s: --start-over is for a "
				 "run with no usable checkpoint, and %s is "
				 "one: resume without it", r->dir, pos->path);
	st = dt_ckpt_check_run(pos->path, r->run_id, r->run_path, err);
	if (st != DT_OK)
		return st;
	pos->found = 1;
	pos->step = step;
	if (!dt_run_own_parts(r) || !dt_ckpt_is_sharded(pos->path))
		return DT_OK;
	pos->own = 1;
	/* The ranks read only the tensors they hold: the files' names and
	 * shapes are checked against the whole model here. */
	st = dt_init_check_names(r, pos->path, err);
	if (st != DT_OK)
		return st;
	st = dt_ckpt_read_meta(pos->path, &meta, err);
	if (st == DT_OK)
		st = checked_meta(r, pos->path, step, &meta, pos, err);
	dt_ckpt_meta_fini(&meta);
	return st;
}

/* Rank 0: the checkpoint at pos->path whole into params and bufs (the
 * arrays of whole, the whole model), either format, and its position
 * into *pos. */
static enum dt_status
read_whole(struct dt_run *r, const struct dt_model *whole, float *params,
	   float **bufs, int n_bufs, struct position *pos,
	   struct dt_error *err)
{
	const char *path = pos->path;
	struct tensors t;
	struct dt_ckpt_meta meta;
	enum dt_status st;

	tensors_init(&t, r->job, whole, params, bufs, n_bufs);
	if (dt_ckpt_is_sharded(path))
		st = load_flat(r, path, whole, &t, bufs, n_bufs, &meta, err);
	else
		st = dt_ckpt_load(path, t.pt, (size_t)t.n_params, t.ot,
				  (size_t)t.n_optim, &meta, err);
	tensors_fini(&t);
	if (st == DT_OK) {
		dt_model_tie_fill(whole, params);
		st = checked_meta(r, path, pos->step, &meta, pos, err);
	}
	dt_ckpt_meta_fini(&meta);
	return st;
}

/* The old way, for a checkpoint in the gathered format (or for parameter
 * servers): rank 0 reads it whole and broadcasts it; each rank keeps its
 * stage. Collective over r->comm; *pos becomes rank 0's. */
static enum dt_status
restore_whole(struct dt_run *r, struct position *pos, struct dt_error *err)
{
	struct dt_grad_sync_state os;
	struct dt_model *whole = r->model;
	float *params = dt_model_params(r->model);	/* (n_params) */
	struct dt_full f;
	enum dt_status st = DT_OK;

	dt_grad_sync_state(r->sync, &os);
	assert(os.lo == 0 && os.hi == dt_model_n_trained(r->model));
	/* bufs: (n_bufs) (n_trained) */
	float **bufs = os.bufs;

	memset(&f, 0, sizeof f);
	if (r->layout.split) {
		/* The whole model passes through every rank, each keeping
		 * its stage. */
		st = dt_full_alloc(r, &f, err);
		if (st != DT_OK)
			return st;	/* every rank fails alike */
		whole = f.shapes;
		params = f.params;
		bufs = f.bufs;
	}
	if (r->rank == 0)
		pos->status = (int32_t)read_whole(r, whole, params, bufs,
						  os.n_bufs, pos, err);
	st = dt_comm_bcast(r->comm, pos, sizeof *pos, 0, err);
	if (st == DT_OK && pos->status != DT_OK) {
		st = (enum dt_status)pos->status;
		if (r->rank != 0)
			dt_errorf(err, st, "rank 0 could not load a "
				  "checkpoint");
	}
	if (st == DT_OK)
		st = dt_comm_bcast(r->comm, params, dt_model_n_params(whole) *
				   sizeof(float), 0, err);
	for (int i = 0; st == DT_OK && i < os.n_bufs; i++)
		st = dt_comm_bcast(r->comm, bufs[i], dt_model_n_trained(whole) *
				   sizeof(float), 0, err);
	if (st == DT_OK && r->layout.split)
		dt_full_scatter(r, &f);
	dt_full_free(&f);
	return st;
}

/* Tensor ti of this rank's model (params its arena, nt its trained
 * floats) as a range to read into part (name into name): the whole
 * tensor, or where only the trained floats [lo, hi) are kept
 * (parallel.zero: 3), its floats among them. A tied copy is read from
 * its embedding's table, which it repeats. 0 when nothing of it is
 * kept. */
static int
part_of(const struct dt_tensor_info *ti, float *params, size_t nt,
	size_t lo, size_t hi, struct dt_ckpt_part *part, char *name,
	size_t size)
{
	size_t a = ti->offset, b = ti->offset + (size_t)ti->size;

	if (a < nt) {
		a = a > lo ? a : lo;
		b = b < hi ? b : hi;
	}
	if (a >= b)
		return 0;
	if (ti->tie_node != NULL)
		snprintf(name, size, "%s.weight", ti->tie_node);
	else
		snprintf(name, size, "%s.%s", ti->node, ti->name);
	part->name = name;
	part->n_dims = ti->tie_node != NULL ? -1 : ti->n_dims;
	memcpy(part->shape, ti->shape, sizeof part->shape);
	part->lo = (int64_t)(a - ti->offset);
	part->hi = (int64_t)(b - ti->offset);
	part->data = params + a;
	return 1;
}

/* This rank's part of dt_run_load_own: the stage's parameters and, with
 * optim, the optimizer state's spans at their one-rank offsets. */
static enum dt_status
load_own(struct dt_run *r, const char *path, int optim, struct dt_error *err)
{
	struct dt_model *m = r->model;
	size_t nt = dt_model_n_trained(m), off = r->layout.stage.trained_lo;
	int n = dt_model_n_tensors(m), k = 0, zero3 =
		r->plan.sync[r->layout.grid.stage].zero >= 3;
	struct dt_ckpt_part *parts = dt_xcalloc((size_t)n + 1, sizeof *parts);
	char (*names)[DT_CKPT_NAME_MAX] = dt_xcalloc((size_t)n + 1,
						     sizeof *names);
	struct dt_ckpt_span spans[4];
	struct dt_grad_sync_state os;
	enum dt_status st;

	dt_grad_sync_state_own(r->sync, &os);
	assert(os.n_bufs <= 4);
	for (int j = 0; j < n; j++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, j, &ti);
		k += part_of(&ti, dt_model_params(m), nt, zero3 ? os.lo : 0,
			     zero3 ? os.hi : nt, &parts[k], names[k],
			     sizeof names[k]);
	}
	for (int b = 0; b < os.n_bufs; b++) {
		spans[b].name = optim_buf_name(r->job, b);
		spans[b].lo = (int64_t)(off + os.lo);
		spans[b].hi = (int64_t)(off + os.hi);
		spans[b].data = os.bufs[b];
	}
	st = dt_ckpt_load_part(path, r->rank, parts, (size_t)k, spans,
			       optim ? (size_t)os.n_bufs : 0, err);
	free(parts);
	free(names);
	return st;
}

/* Collective over r->comm: the worst of every rank's status st, with the
 * message of the lowest rank that failed on every rank (rank 0 prints
 * it: which rank needed which file). */
static enum dt_status
agree_told(struct dt_run *r, enum dt_status st, struct dt_error *err)
{
	struct {
		int32_t st;
		char msg[sizeof err->msg];
	} b;
	enum dt_status all = dt_comm_agree(r->comm, st, err);

	for (int q = 0; all != DT_OK && q < dt_comm_size(r->comm); q++) {
		memset(&b, 0, sizeof b);
		b.st = (int32_t)st;
		if (q == r->rank)
			snprintf(b.msg, sizeof b.msg, "%s", err->msg);
		if (dt_comm_bcast(r->comm, &b, sizeof b, q, err) != DT_OK)
			return DT_ERR_MPI;
		if (b.st != DT_OK) {
			dt_errorf(err, all, "%s", b.msg);
			break;
		}
	}
	return all;
}

enum dt_status
dt_run_load_own(struct dt_run *r, const char *path, int optim,
		struct dt_error *err)
{
	return agree_told(r, load_own(r, path, optim, err), err);
}

static void
set_position(struct dt_run *r, const struct position *pos)
{
	r->position.step = pos->step;
	r->position.epoch = pos->epoch;
	r->position.epoch_off = pos->epoch_off;
	r->position.window_loss = pos->window_loss;
	r->position.window_steps = pos->window_steps;
	r->position.window_samples = pos->window_samples;
	r->position.skipped = pos->skipped;
	r->best = pos->best;
	r->position.samples = pos->samples;
	r->diverge.loss_sum = pos->diverge_loss_sum;
	r->diverge.loss_n = pos->diverge_loss_n;
	r->diverge.norm_sum = pos->diverge_norm_sum;
	r->diverge.norm_n = pos->diverge_norm_n;
	r->resumed_from = pos->step;
	r->last_ckpt_step = pos->step;
}

enum dt_status
dt_run_restore(struct dt_run *r, struct dt_error *err)
{
	struct position pos;
	enum dt_status st;

	memset(&pos, 0, sizeof pos);
	if (r->rank == 0)
		pos.status = (int32_t)locate(r, &pos, err);
	/* Rank 0's verdict travels with the position. */
	if (dt_comm_bcast(r->comm, &pos, sizeof pos, 0, err) != DT_OK)
		return DT_ERR_MPI;
	if (pos.status != DT_OK) {
		if (r->rank != 0)
			dt_errorf(err, (enum dt_status)pos.status,
				  "rank 0 could not load a checkpoint");
		return (enum dt_status)pos.status;
	}
	r->resumed_from = -1;
	if (!pos.found)
		return DT_OK;
	/* A rank that cannot see the checkpoint (a directory not shared
	 * with every host) takes it from rank 0, as from the gathered
	 * format. */
	if (pos.own && dt_comm_agree(r->comm, access(pos.path, R_OK) == 0 ?
				     DT_OK : DT_ERR_IO, err) != DT_OK) {
		dt_error_clear(err);
		pos.own = 0;
	}
	if (pos.own)
		st = dt_run_load_own(r, pos.path, 1, err);
	else
		st = restore_whole(r, &pos, err);
	if (st != DT_OK)
		return st;
	if (r->rank == 0)
		fprintf(stderr, "dtrain: resuming from %s (step %lld)\n",
			pos.path, (long long)pos.step);
	dt_grad_sync_state_loaded(r->sync, pos.optim_steps);
	set_position(r, &pos);
	return DT_OK;
}
