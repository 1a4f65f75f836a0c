/* SPDX-License-Identifier: MIT */
/* metrics.c - metrics.jsonl, summary.json and plan.json (metrics.h). */
#include "train/metrics.h"

#include <errno.h>
#include <json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "train/rundir.h"
#include "util/alloc.h"
#include "util/cpus.h"
#include "util/jsonnum.h"

#define ADD(o, key, val) json_object_object_add(o, key, val)

/* One line of metrics.jsonl (o is consumed), written whole with one
 * write(2) after the stream is flushed: a full disk must stop the run,
 * and a part of the line that reached the file is cut off again, so the
 * file always ends with a whole line. */
static enum dt_status
metrics_line(struct dt_run *r, struct json_object *o, struct dt_error *err)
{
	const char *text = json_object_to_json_string_ext(
		o, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text), done = 0;
	char *line;
	struct stat sb;
	int fd, e = 0;

	if (r->metrics == NULL) {
		json_object_put(o);
		return DT_OK;
	}
	line = dt_xmalloc(len + 2, 1);	/* (len + 1) bytes and a NUL */
	memcpy(line, text, len);
	line[len++] = '\n';
	json_object_put(o);
	fd = fileno(r->metrics);
	errno = 0;
	if (fflush(r->metrics) == EOF || fstat(fd, &sb) != 0)
		e = errno != 0 ? errno : EIO;
	while (e == 0 && done < len) {
		ssize_t k = write(fd, line + done, len - done);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			e = k < 0 ? errno : ENOSPC;
		else
			done += (size_t)k;
	}
	free(line);
	if (e == 0)
		return DT_OK;
	/* Opened for appending: the line began at the old end. */
	if (done > 0 && ftruncate(fd, sb.st_size) != 0)
		return dt_errorf(err, DT_ERR_IO, "%s/metrics.jsonl: write "
				 "failed: %s; and cutting the part written "
				 "off again failed: %s", r->dir, strerror(e),
				 strerror(errno));
	return dt_errorf(err, DT_ERR_IO, "%s/metrics.jsonl: write failed: %s",
			 r->dir, strerror(e));
}

int
dt_metrics_history(const char *dir, int64_t *last_step, int *summary)
{
	char path[DT_JOB_PATH_MAX + 32], *line = NULL;
	size_t cap = 0;
	struct stat sb;
	FILE *in;

	*last_step = -1;
	*summary = dt_rundir_path(path, sizeof path, dir, "summary.json",
				  NULL) == DT_OK && stat(path, &sb) == 0;
	if (dt_rundir_path(path, sizeof path, dir, "metrics.jsonl", NULL) ||
	    (in = fopen(path, "r")) == NULL)
		return *summary;
	while (getline(&line, &cap, in) > 0) {
		struct json_object *o = json_tokener_parse(line), *s;

		if (o != NULL && json_object_object_get_ex(o, "step", &s) &&
		    json_object_get_int64(s) > *last_step)
			*last_step = json_object_get_int64(s);
		json_object_put(o);
	}
	free(line);
	fclose(in);
	return *summary || *last_step > 0;
}

/* The wall-clock time now, ISO 8601 in UTC to the millisecond
 * ("2026-12-02T01:02:03.456Z"). */
static struct json_object *
iso_time_now(void)
{
	struct timespec ts;
	struct tm tm;
	char buf[40];
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, sizeof buf - n, ".%03ldZ", ts.tv_nsec / 1000000);
	return json_object_new_string(buf);
}

/* One breakdown as a JSON object; row: DT_TIME_PARTS doubles in the
 * order of struct dt_time_breakdown. rank >= 0 adds "rank". */
static struct json_object *
breakdown_object(int rank, const double *row)
{
	static const char *const names[DT_TIME_PARTS] = {
		"compute_s", "comm_wait_s", "data_wait_s", "optim_s"
	};
	struct json_object *o = json_object_new_object();

	if (rank >= 0)
		ADD(o, "rank", json_object_new_int(rank));
	for (int i = 0; i < DT_TIME_PARTS; i++)
		ADD(o, names[i], dt_json_seconds(row[i]));
	return o;
}

/* Rank 0's compute_s of the window split: {"forward_s", "backward_s"}. */
static struct json_object *
passes_object(const struct dt_log_line *line)
{
	struct json_object *o = json_object_new_object();

	ADD(o, "forward_s", dt_json_seconds(line->forward_s));
	ADD(o, "backward_s", dt_json_seconds(line->backward_s));
	return o;
}

/* The row of r->rank_times with the largest window sum (the lowest rank
 * on a tie). */
static const double *
slowest_row(const struct dt_run *r)
{
	const double *best = r->rank_times;	/* (DT_RANK_TIMES) */
	double best_sum = -1;

	for (int w = 0; w < r->n_workers; w++) {
		/* row: (DT_RANK_TIMES) */
		const double *row = r->rank_times + DT_RANK_TIMES * w;
		double sum = 0;

		for (int i = 0; i < DT_TIME_PARTS; i++)
			sum += row[1 + i];
		if (sum > best_sum) {
			best_sum = sum;
			best = row;
		}
	}
	return best;
}

/* log.tensorboard: the scalar under tag, when finite (metrics.jsonl has
 * null for the others). */
static enum dt_status
tb_scalar(struct dt_run *r, const char *tag, double v, struct dt_error *err)
{
	struct timespec ts;

	if (r->tb == NULL || !isfinite(v))
		return DT_OK;
	clock_gettime(CLOCK_REALTIME, &ts);
	return dt_tfevents_scalar(r->tb, tag, r->position.step,
				  (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9,
				  v, err);
}

enum dt_status
dt_metrics_log(struct dt_run *r, const struct dt_log_line *line,
	       struct dt_error *err)
{
	struct json_object *o = json_object_new_object();
	const double *slow = slowest_row(r);	/* (DT_RANK_TIMES) */
	int lm = isfinite(line->tokens_per_s);
	enum dt_status st;

	ADD(o, "step", json_object_new_int64(r->position.step));
	ADD(o, "epoch", json_object_new_int64(r->position.epoch));
	ADD(o, "time", iso_time_now());
	ADD(o, "elapsed_s", dt_json_seconds(line->elapsed_s));
	ADD(o, "loss", dt_json_float(line->loss));
	ADD(o, "lr", dt_json_float(line->lr));
	ADD(o, "grad_norm", dt_json_float(line->grad_norm));
	ADD(o, "samples_per_s", dt_json_float(line->samples_per_s));
	if (lm)
		ADD(o, "tokens_per_s", dt_json_float(line->tokens_per_s));
	ADD(o, "data_wait_s", dt_json_seconds(line->data_wait_s));
	/* Rank 0 is row 0: the workers' communicator keeps world order. */
	ADD(o, "breakdown", breakdown_object(-1, r->rank_times + 1));
	ADD(o, "slowest", breakdown_object((int)slow[0], slow + 1));
	ADD(o, "passes", passes_object(line));
	dt_grad_sync_log(r->sync, o);	/* its own keys (staleness) */
	if (r->position.skipped > 0)
		ADD(o, "skipped_steps",
		    json_object_new_int64(r->position.skipped));
	st = metrics_line(r, o, err);
	if (st == DT_OK)
		st = tb_scalar(r, "train/loss", line->loss, err);
	if (st == DT_OK)
		st = tb_scalar(r, "train/lr", line->lr, err);
	if (st == DT_OK)
		st = tb_scalar(r, "train/grad_norm", line->grad_norm, err);
	if (st == DT_OK)
		st = tb_scalar(r, "train/samples_per_s", line->samples_per_s,
			       err);
	if (st == DT_OK && lm)
		st = tb_scalar(r, "train/tokens_per_s", line->tokens_per_s,
			       err);
	return st;
}

enum dt_status
dt_metrics_eval(struct dt_run *r, double loss, double accuracy,
		struct dt_error *err)
{
	struct json_object *o = json_object_new_object();
	enum dt_status st;

	ADD(o, "step", json_object_new_int64(r->position.step));
	ADD(o, "epoch", json_object_new_int64(r->position.epoch));
	ADD(o, "time", iso_time_now());
	ADD(o, "eval_loss", dt_json_float(loss));
	ADD(o, "eval_accuracy", dt_json_float(accuracy));
	if (r->labels_per_sample > 1)
		ADD(o, "eval_perplexity", dt_json_float(exp(loss)));
	st = metrics_line(r, o, err);
	if (st == DT_OK)
		st = tb_scalar(r, "eval/loss", loss, err);
	if (st == DT_OK)
		st = tb_scalar(r, "eval/accuracy", accuracy, err);
	if (st == DT_OK && r->labels_per_sample > 1)
		st = tb_scalar(r, "eval/perplexity", exp(loss), err);
	return st;
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

/* The CPUs rank 0 may run on (its affinity mask, as its threads found
 * it): "0-1", the form of Cpus_allowed_list in /proc/PID/status. */
static void
add_cpus(struct json_object *o)
{
	char cpus[256];

	dt_cpus_allowed_list(cpus, sizeof cpus);
	ADD(o, "cpus_rank0", json_object_new_string(cpus));
}

/* How often rank 0 drove its gradient sums in flight during backward
 * in this session (train/sync.h: overlap; zeros without): at the ends of
 * nodes, and from inside long products (graph/kern.h's hook). */
static void
add_progress(struct json_object *o, const struct dt_run *r)
{
	struct json_object *p;
	int64_t nodes = 0, products = 0;

	if (r->sync == NULL)
		return;
	dt_grad_sync_progress_count(r->sync, &nodes, &products);
	p = json_object_new_object();
	ADD(p, "between_nodes", json_object_new_int64(nodes));
	ADD(p, "in_products", json_object_new_int64(products));
	ADD(o, "progress_tests_rank0", p);
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
		/* (DT_METRICS_BYTE_COUNTS) */
		const double *b = bytes + DT_METRICS_BYTE_COUNTS * i;

		ADD(e, "rank", json_object_new_int(i));
		ADD(e, "p2p_bytes", json_object_new_int64((int64_t)b[0]));
		ADD(e, "grad_allreduce_bytes",
		    json_object_new_int64((int64_t)b[1]));
		ADD(e, "tp_allreduce_bytes",
		    json_object_new_int64((int64_t)b[2]));
		ADD(e, "tp_norm_bytes", json_object_new_int64((int64_t)b[3]));
		ADD(e, "zero_block_bytes",
		    json_object_new_int64((int64_t)b[4]));
		json_object_array_add(a, e);
	}
	ADD(o, "bytes_per_step", a);
}

/* The plan's memory of rank (the total of plan.json's "ranks"), in
 * bytes; -1 where the plan has none. */
static int64_t
planned_memory(const struct dt_run *r, int rank)
{
	struct json_object *ranks, *x, *mem, *total;

	if (r->plan.desc == NULL ||
	    !json_object_object_get_ex(r->plan.desc, "ranks", &ranks) ||
	    rank < 0 || (size_t)rank >= json_object_array_length(ranks))
		return -1;
	x = json_object_array_get_idx(ranks, (size_t)rank);
	if (!json_object_object_get_ex(x, "memory", &mem) ||
	    !json_object_object_get_ex(mem, "total", &total))
		return -1;
	return json_object_get_int64(total);
}

/* Worker w's peak resident memory beside the plan's figure for its rank,
 * into e: the measured bytes, the planned and their ratio (null where
 * either is unknown). */
static void
add_peak(struct json_object *e, const struct dt_run *r, int w, int rank)
{
	int64_t plan = planned_memory(r, rank);
	double peak = r->peak_resident != NULL ? r->peak_resident[w] : -1;

	ADD(e, "peak_resident_bytes", peak >= 0 ?
	    json_object_new_int64((int64_t)peak) : NULL);
	ADD(e, "plan_memory_bytes", plan > 0 ?
	    json_object_new_int64(plan) : NULL);
	ADD(e, "peak_over_plan", peak >= 0 && plan > 0 ?
	    dt_json_float(peak / (double)plan) : NULL);
}

/* Each worker's time breakdown over the whole run (this run or resume),
 * as gathered on the last logged step, and its peak resident memory
 * against the plan's. */
static void
add_ranks(struct json_object *o, const struct dt_run *r)
{
	struct json_object *a;

	if (r->rank_times == NULL)
		return;
	a = json_object_new_array();
	for (int w = 0; w < r->n_workers; w++) {
		/* row: (DT_RANK_TIMES) */
		const double *row = r->rank_times + DT_RANK_TIMES * w;
		struct json_object *e = breakdown_object(
			(int)row[0], row + 1 + DT_TIME_PARTS);

		add_peak(e, r, w, (int)row[0]);
		json_object_array_add(a, e);
	}
	ADD(o, "ranks", a);
}

void
dt_metrics_memory_note(const struct dt_run *r, FILE *out)
{
	if (r->rank != 0 || r->peak_resident == NULL ||
	    r->rank_times == NULL)
		return;
	for (int w = 0; w < r->n_workers; w++) {
		int rank = (int)r->rank_times[DT_RANK_TIMES * w];
		int64_t plan = planned_memory(r, rank);
		double peak = r->peak_resident[w];

		if (plan <= 0 || peak < 0 ||
		    peak <= (1 + DT_METRICS_PEAK_SLACK) * (double)plan)
			continue;
		fprintf(out, "dtrain: warning: rank %d: peak resident memory %.0f "
			"bytes (%.1f MiB) is %.2f x the plan's %lld bytes "
			"(%.1f MiB), more than %.0f%% over it (summary.json, "
			"ranks); dtrain plan --dry-run shows the plan's "
			"terms\n", rank, peak, peak / 1048576.0,
			peak / (double)plan, (long long)plan,
			(double)plan / 1048576.0,
			100.0 * DT_METRICS_PEAK_SLACK);
	}
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
	ADD(o, "train_loss", dt_json_float(res->train_loss));
	ADD(o, "eval_loss", r->have_eval ?
	    dt_json_float(res->eval_loss) : NULL);
	ADD(o, "eval_accuracy", r->have_eval ?
	    dt_json_float(res->eval_accuracy) : NULL);
	ADD(o, "session_steps", json_object_new_int64(res->session_steps));
	ADD(o, "session_samples", json_object_new_int64(res->session_samples));
	ADD(o, "wall_s", dt_json_seconds(res->wall_s));
	ADD(o, "samples_per_s", dt_json_float(res->samples_per_s));
	ADD(o, "world_size", json_object_new_int(r->plan.world_size));
	ADD(o, "data_parallel", json_object_new_int(r->plan.dp_size));
	ADD(o, "global_batch", json_object_new_int64(r->plan.global_batch));
	ADD(o, "micro_batch", json_object_new_int64(r->plan.micro_batch));
	ADD(o, "grad_accum_steps",
	    json_object_new_int64(r->plan.grad_accum_steps));
	ADD(o, "skipped_steps", json_object_new_int64(res->skipped_steps));
	ADD(o, "resumed_from", res->resumed_from >= 0 ?
	    json_object_new_int64(res->resumed_from) : NULL);
	/* Open MPI's TCP eager limit set before MPI started: bytes, 0 its
	 * own, null the environment's. */
	ADD(o, "tcp_eager_bytes", r->tcp_eager >= 0 ?
	    json_object_new_int64(r->tcp_eager) : NULL);
	dt_grad_sync_summary(r->sync, o);	/* its own lines (servers) */
	ADD(o, "bytes_sent_rank0", json_object_new_int64((int64_t)sent_bytes(r)));
	add_cpus(o);
	add_grid(o, r);
	add_bytes(o, r, bytes);
	add_progress(o, r);
	dt_best_summary(r, o);
	add_ranks(o, r);
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

enum dt_status
dt_metrics_open_tb(struct dt_run *r, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 32];
	enum dt_status st;

	if (r->rank != 0 || !r->job->log.tensorboard)
		return DT_OK;
	st = dt_rundir_path(path, sizeof path, r->dir, "tb", err);
	if (st != DT_OK)
		return st;
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s", path,
				 strerror(errno));
	return dt_tfevents_open(path, &r->tb, err);
}
