/* SPDX-License-Identifier: MIT */
/* metrics.c - metrics.jsonl, summary.json and plan.json (metrics.h). */
#include "train/metrics.h"

#include <errno.h>
#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "train/rundir.h"
#include "util/jsonnum.h"

#define ADD(o, key, val) json_object_object_add(o, key, val)

static void
metrics_line(struct dt_run *r, struct json_object *o)
{
	if (r->metrics == NULL) {
		json_object_put(o);
		return;
	}
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	      r->metrics);
	fputc('\n', r->metrics);
	fflush(r->metrics);
	json_object_put(o);
}

/* The staleness of the gradients the servers applied since the last
 * logged step. */
static void
add_staleness(struct dt_ps *ps, struct json_object *o)
{
	struct dt_ps_stats st;
	struct dt_error e;

	if (ps == NULL || dt_ps_stats(ps, &st, &e) != DT_OK)
		return;
	ADD(o, "staleness_mean", dt_json_number(st.staleness_mean));
	ADD(o, "staleness_max", json_object_new_int64(st.staleness_max));
}

void
dt_metrics_log(struct dt_run *r, const struct dt_log_line *line)
{
	struct json_object *o = json_object_new_object();

	ADD(o, "step", json_object_new_int64(r->position.step));
	ADD(o, "epoch", json_object_new_int64(r->position.epoch));
	ADD(o, "loss", dt_json_number(line->loss));
	ADD(o, "lr", dt_json_number(line->lr));
	ADD(o, "samples_per_s", dt_json_number(line->samples_per_s));
	ADD(o, "data_wait_s", dt_json_number(line->data_wait_s));
	add_staleness(dt_grad_sync_servers(r->sync), o);
	if (r->position.skipped > 0)
		ADD(o, "skipped_steps",
		    json_object_new_int64(r->position.skipped));
	metrics_line(r, o);
}

void
dt_metrics_eval(struct dt_run *r, double loss, double accuracy)
{
	struct json_object *o = json_object_new_object();

	ADD(o, "step", json_object_new_int64(r->position.step));
	ADD(o, "epoch", json_object_new_int64(r->position.epoch));
	ADD(o, "eval_loss", dt_json_number(loss));
	ADD(o, "eval_accuracy", dt_json_number(accuracy));
	metrics_line(r, o);
}

struct json_file {
	const char *name;
	struct json_object *o;
};

static enum dt_status
write_json(FILE *out, void *ctx, struct dt_error *err)
{
	const struct json_file *f = ctx;

	fputs(json_object_to_json_string_ext(f->o, JSON_C_TO_STRING_PRETTY |
					     JSON_C_TO_STRING_SPACED), out);
	fputc('\n', out);
	if (ferror(out))
		return dt_errorf(err, DT_ERR_IO, "%s: write failed", f->name);
	return DT_OK;
}

/* Rank 0: RUN_DIR/name holding o. */
static enum dt_status
write_file(struct dt_run *r, const char *name, struct json_object *o,
	   struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 32];
	struct json_file f = { name, o };
	enum dt_status st;

	st = dt_rundir_path(path, sizeof path, r->dir, name, err);
	if (st == DT_OK)
		st = dt_rundir_write_atomic(path, write_json, &f, err);
	return st;
}

enum dt_status
dt_metrics_write_plan(struct dt_run *r, struct dt_error *err)
{
	if (r->rank != 0)
		return DT_OK;
	return write_file(r, "plan.json", r->plan.desc, err);
}

/* Bytes this rank has handed to MPI so far, on every communicator it
 * uses: collectives and point-to-point. */
static uint64_t
sent_bytes(const struct dt_run *r)
{
	return dt_comm_bytes_sent(r->comm) + dt_comm_p2p_bytes_sent(r->comm) +
	       dt_layout_bytes_sent(&r->layout);
}

static void
add_servers(struct json_object *o, const struct dt_run *r)
{
	struct dt_ps *servers = dt_grad_sync_servers(r->sync);
	int async = dt_grad_sync_lazy(r->sync);
	struct json_object *h;
	struct dt_ps_stats ps;
	struct dt_error e;

	if (servers == NULL)
		return;
	h = json_object_new_array();
	memset(&ps, 0, sizeof ps);
	if (dt_ps_stats(servers, &ps, &e) == DT_OK)
		for (int i = 0; i < ps.n_hist; i++)
			json_object_array_add(h,
					      json_object_new_int64(ps.hist[i]));
	ADD(o, "parameter_servers", json_object_new_int(
		    dt_ps_n_servers(servers)));
	ADD(o, "ps_mode", json_object_new_string(async ? "async" : "sync"));
	ADD(o, "max_staleness", json_object_new_int64(
		    async ? r->job->parallel.max_staleness : 0));
	/* hist[i]: shard gradients applied i updates stale; the last bucket
	 * counts any staler than the bound (always 0). */
	ADD(o, "staleness_histogram", h);
	ADD(o, "server_bytes_per_step",
	    dt_json_number(ps.server_bytes_per_step));
}

static void
add_grid(struct json_object *o, const struct dt_run *r)
{
	struct json_object *g;

	if (!r->layout.split)
		return;
	g = json_object_new_object();
	ADD(g, "data_parallel", json_object_new_int(r->plan.dp_size));
	ADD(g, "pipeline_parallel", json_object_new_int(r->plan.pp_size));
	ADD(g, "tensor_parallel", json_object_new_int(r->plan.tp_size));
	ADD(g, "schedule", json_object_new_string(
		    r->plan.pipe_schedule == DT_PIPE_1F1B ? "1f1b" : "gpipe"));
	ADD(o, "grid", g);
}

/* What each rank moved per training step, counted as it went (dtrain
 * plan computes the same three numbers). */
static void
add_bytes(struct json_object *o, const struct dt_run *r, const double *bytes)
{
	struct json_object *a;

	if (bytes == NULL)
		return;
	a = json_object_new_array();
	for (int i = 0; i < r->plan.world_size; i++) {
		struct json_object *e = json_object_new_object();
		const double *b = bytes + 3 * i;

		ADD(e, "rank", json_object_new_int(i));
		ADD(e, "p2p_bytes", json_object_new_int64((int64_t)b[0]));
		ADD(e, "grad_allreduce_bytes",
		    json_object_new_int64((int64_t)b[1]));
		ADD(e, "tp_allreduce_bytes",
		    json_object_new_int64((int64_t)b[2]));
		json_object_array_add(a, e);
	}
	ADD(o, "bytes_per_step", a);
}

enum dt_status
dt_metrics_write_summary(struct dt_run *r, const struct dt_train_result *res,
			 const double *bytes, struct dt_error *err)
{
	struct json_object *o;
	enum dt_status st;

	if (r->rank != 0)
		return DT_OK;
	o = json_object_new_object();
	ADD(o, "name", json_object_new_string(r->job->name));
	ADD(o, "steps", json_object_new_int64(res->steps));
	ADD(o, "samples", json_object_new_int64(res->samples));
	ADD(o, "train_loss", dt_json_number(res->train_loss));
	ADD(o, "eval_loss", r->have_eval ?
	    dt_json_number(res->eval_loss) : NULL);
	ADD(o, "eval_accuracy", r->have_eval ?
	    dt_json_number(res->eval_accuracy) : NULL);
	ADD(o, "wall_s", dt_json_number(res->wall_s));
	ADD(o, "samples_per_s", dt_json_number(res->samples_per_s));
	ADD(o, "world_size", json_object_new_int(r->plan.world_size));
	ADD(o, "data_parallel", json_object_new_int(r->plan.dp_size));
	ADD(o, "global_batch", json_object_new_int64(r->plan.global_batch));
	ADD(o, "micro_batch", json_object_new_int64(r->plan.micro_batch));
	ADD(o, "grad_accum_steps",
	    json_object_new_int64(r->plan.grad_accum_steps));
	ADD(o, "skipped_steps", json_object_new_int64(res->skipped_steps));
	ADD(o, "resumed_from", res->resumed_from >= 0 ?
	    json_object_new_int64(res->resumed_from) : NULL);
	add_servers(o, r);
	ADD(o, "bytes_sent_rank0", json_object_new_int64((int64_t)sent_bytes(r)));
	add_grid(o, r);
	add_bytes(o, r, bytes);
	dt_best_summary(r, o);
	st = write_file(r, "summary.json", o, err);
	json_object_put(o);
	return st;
}

struct kept_lines {
	char *text;
	size_t len;
};

static enum dt_status
write_kept(FILE *out, void *ctx, struct dt_error *err)
{
	const struct kept_lines *k = ctx;

	if (k->len > 0 && fwrite(k->text, 1, k->len, out) != k->len)
		return dt_errorf(err, DT_ERR_IO, "metrics.jsonl: write failed");
	return DT_OK;
}

enum dt_status
dt_metrics_reopen(struct dt_run *r, int64_t step, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 32];
	struct kept_lines kept = { NULL, 0 };
	FILE *in, *mem;
	char *line = NULL;
	size_t cap = 0;
	enum dt_status st;

	if (r->rank != 0)
		return DT_OK;
	st = dt_rundir_path(path, sizeof path, r->dir, "metrics.jsonl", err);
	if (st != DT_OK)
		return st;
	mem = open_memstream(&kept.text, &kept.len);
	if (mem == NULL)
		return dt_errorf(err, DT_ERR_IO, "out of memory");
	in = fopen(path, "r");
	if (in != NULL) {
		while (getline(&line, &cap, in) > 0) {
			struct json_object *o = json_tokener_parse(line);
			struct json_object *s;

			/* A line cut by a crash does not parse: drop it. */
			if (o != NULL && json_object_object_get_ex(o, "step",
								    &s) &&
			    json_object_get_int64(s) <= step)
				fputs(line, mem);
			json_object_put(o);
		}
		fclose(in);
	} else if (errno != ENOENT) {
		fclose(mem);
		free(kept.text);
		return dt_errorf(err, DT_ERR_IO, "%s: cannot read: %s", path,
				 strerror(errno));
	}
	free(line);
	fclose(mem);
	st = dt_rundir_write_atomic(path, write_kept, &kept, err);
	free(kept.text);
	if (st != DT_OK)
		return st;
	r->metrics = fopen(path, "a");
	if (r->metrics == NULL)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	return DT_OK;
}
