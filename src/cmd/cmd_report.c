/* SPDX-License-Identifier: MIT */
/* cmd_report.c - `dtrain report RUN_DIR [-o FILE]`: one self-contained HTML
 * page about a run (default RUN_DIR/report.html): its summary, the
 * curves of metrics.jsonl (loss and accuracy, train and eval, throughput,
 * learning rate, gradient norm, the per-interval time breakdown of rank 0
 * and of the slowest rank where they were logged), the per-rank time
 * totals of summary.json and each rank's peak resident memory beside the
 * plan's figure, the plan (plan.json) and the job (job.yaml).
 *
 * The page fetches nothing: its data is a JSON block inside it, written
 * as strict JSON whatever the files held (strict_copy), and its script
 * (report_script.c) draws the charts as inline SVG; the plan and
 * the job are HTML-escaped text. It can be made at any time, also while
 * the run is going on (summary.json is then missing and said to be). */
#include "cmd/cmd.h"

#include <errno.h>
#include <json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_report.h"
#include "job/job.h"
#include "train/rundir.h"
#include "util/jsonnum.h"

/* The charts of the page, in order. */
enum chart {
	CHART_LOSS,
	CHART_ACCURACY,
	CHART_SAMPLES,
	CHART_TOKENS,
	CHART_LR,
	CHART_GRAD_NORM,
	CHART_BREAKDOWN,
	CHART_SLOWEST,
	CHART_DATA_WAIT,
	N_CHARTS
};

static const struct chart_def {
	const char *id;
	const char *title;
	const char *y;		/* axis label */
	int zero;		/* the axis starts at 0 */
} chart_defs[N_CHARTS] = {
	[CHART_LOSS] = { "loss", "Loss", "mean loss", 0 },
	[CHART_ACCURACY] = { "accuracy", "Eval accuracy", "accuracy", 0 },
	[CHART_SAMPLES] = { "samples_per_s", "Throughput", "samples/s", 1 },
	[CHART_TOKENS] = { "tokens_per_s", "Throughput in tokens",
			   "tokens/s", 1 },
	[CHART_LR] = { "lr", "Learning rate", "learning rate", 1 },
	[CHART_GRAD_NORM] = { "grad_norm", "Gradient norm", "global L2 norm",
			      1 },
	[CHART_BREAKDOWN] = { "breakdown", "Time per log interval, rank 0",
			      "seconds", 1 },
	[CHART_SLOWEST] = { "slowest", "Time per log interval, slowest rank",
			    "seconds", 1 },
	[CHART_DATA_WAIT] = { "data_wait_s", "Waiting for data, rank 0",
			      "seconds", 1 },
};

/* One curve: the values of key (inside the object group when not NULL)
 * over the lines of metrics.jsonl that have it. */
static const struct series_def {
	enum chart chart;
	const char *group;
	const char *key;
	const char *name;	/* in the legend */
} series_defs[] = {
	{ CHART_LOSS, NULL, "loss", "train" },
	{ CHART_LOSS, NULL, "eval_loss", "eval" },
	{ CHART_ACCURACY, NULL, "eval_accuracy", "eval" },
	{ CHART_SAMPLES, NULL, "samples_per_s", "samples/s" },
	{ CHART_TOKENS, NULL, "tokens_per_s", "tokens/s" },
	{ CHART_LR, NULL, "lr", "lr" },
	{ CHART_GRAD_NORM, NULL, "grad_norm", "grad_norm" },
	{ CHART_BREAKDOWN, "breakdown", "compute_s", "compute_s" },
	{ CHART_BREAKDOWN, "breakdown", "comm_wait_s", "comm_wait_s" },
	{ CHART_BREAKDOWN, "breakdown", "data_wait_s", "data_wait_s" },
	{ CHART_BREAKDOWN, "breakdown", "optim_s", "optim_s" },
	{ CHART_SLOWEST, "slowest", "compute_s", "compute_s" },
	{ CHART_SLOWEST, "slowest", "comm_wait_s", "comm_wait_s" },
	{ CHART_SLOWEST, "slowest", "data_wait_s", "data_wait_s" },
	{ CHART_SLOWEST, "slowest", "optim_s", "optim_s" },
	{ CHART_DATA_WAIT, NULL, "data_wait_s", "data_wait_s" },
};

#define N_SERIES (sizeof series_defs / sizeof series_defs[0])

/* The per-rank totals of summary.json "ranks", in stacking order. */
static const char *const rank_keys[] = {
	"compute_s", "comm_wait_s", "data_wait_s", "optim_s",
};

struct report {
	const char *dir;
	struct json_object *points[N_SERIES];	/* arrays of [step, value] */
	struct json_object *summary;		/* NULL: no summary.json */
	char *plan;		/* plan.json's text, NULL if missing */
	char *job;		/* job.yaml's text, NULL if missing */
	int64_t n_steps, n_evals, last_step;
};

/* The whole file at path into *text (heap, NUL-terminated; NULL when the
 * file does not exist and missing_ok). DT_ERR_IO naming the path. */
static enum dt_status
read_text(const char *path, int missing_ok, char **text, struct dt_error *err)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, n;
	FILE *mem;
	char chunk[1 << 14];

	*text = NULL;
	if (f == NULL) {
		if (errno == ENOENT && missing_ok)
			return DT_OK;
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	}
	mem = open_memstream(&buf, &len);
	if (mem == NULL) {
		fclose(f);
		return dt_errorf(err, DT_ERR_IO, "out of memory");
	}
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		fwrite(chunk, 1, n, mem);
	if (ferror(f)) {
		fclose(f);
		fclose(mem);
		free(buf);
		return dt_errorf(err, DT_ERR_IO, "%s: read failed: %s", path,
				 strerror(errno));
	}
	fclose(f);
	fclose(mem);
	*text = buf;
	return DT_OK;
}

/* The 1-based line of byte offset off in text. */
static int
line_of(const char *text, size_t off)
{
	int line = 1;

	for (size_t i = 0; i < off && text[i] != '\0'; i++)
		line += text[i] == '\n';
	return line;
}

/* One JSON value from all of text (path names it in errors, first_line
 * is text's first line in the file): DT_ERR_FORMAT "PATH:LINE: ..." for
 * a value that does not parse, is not an object, or has more after it. */
static enum dt_status
parse_object(const char *path, int first_line, const char *text,
	     struct json_object **out, struct dt_error *err)
{
	struct json_tokener *tok = json_tokener_new();
	size_t len = strlen(text), end;
	enum json_tokener_error jerr;
	struct json_object *o;

	*out = NULL;
	if (tok == NULL)
		return dt_errorf(err, DT_ERR_IO, "out of memory");
	o = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (o == NULL || jerr != json_tokener_success) {
		json_object_put(o);
		/* Cut short: the last line that holds text. */
		if (jerr == json_tokener_continue)
			return dt_errorf(err, DT_ERR_FORMAT, "%s:%d: not JSON: "
					 "cut short", path,
					 first_line - 1 +
					 line_of(text, len - (len > 0 &&
						 text[len - 1] == '\n')));
		return dt_errorf(err, DT_ERR_FORMAT, "%s:%d: not JSON: %s",
				 path, first_line - 1 + line_of(text, end),
				 json_tokener_error_desc(jerr));
	}
	while (end < len && strchr(" \t\r\n", text[end]) != NULL)
		end++;
	if (end < len) {
		json_object_put(o);
		return dt_errorf(err, DT_ERR_FORMAT, "%s:%d: more text after "
				 "the JSON value", path,
				 first_line - 1 + line_of(text, end));
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return dt_errorf(err, DT_ERR_FORMAT, "%s:%d: expected a JSON "
				 "object", path, first_line);
	}
	*out = o;
	return DT_OK;
}

/* A copy of v that json-c writes as strict JSON (RFC 8259): json-c's
 * reader takes 0., 00.5, NaN and Infinity and its writer gives a parsed
 * number back as it was written, which a browser's JSON.parse refuses.
 * Numbers are written anew (dtrain's shortest form), NaN and the
 * infinities as null, strings, booleans and the structure as they are.
 * NULL for null; the caller owns the copy. */
static struct json_object *
strict_copy(struct json_object *v)
{
	struct json_object *c;

	switch (json_object_get_type(v)) {
	case json_type_null:
		return NULL;
	case json_type_boolean:
		return json_object_new_boolean(json_object_get_boolean(v));
	case json_type_double:
		return dt_json_number(json_object_get_double(v));
	case json_type_int:
		return json_object_new_int64(json_object_get_int64(v));
	case json_type_string:
		return json_object_new_string_len(json_object_get_string(v),
			json_object_get_string_len(v));
	case json_type_array:
		c = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(v); i++)
			json_object_array_add(c, strict_copy(
				json_object_array_get_idx(v, i)));
		return c;
	case json_type_object:
		c = json_object_new_object();
		json_object_object_foreach(v, key, val)
			json_object_object_add(c, key, strict_copy(val));
		return c;
	}
	return NULL;
}

/* Appends [step, value] of series def to pts when the line o has the
 * value; a value that is neither a number nor null is an error. NaN and
 * the infinities (which dtrain writes as null) are left out as null
 * is. */
static enum dt_status
take_point(const struct series_def *def, struct json_object *o, int64_t step,
	   struct json_object *pts, const char *path, int line,
	   struct dt_error *err)
{
	struct json_object *g = o, *v, *p;

	if (def->group != NULL &&
	    (!json_object_object_get_ex(o, def->group, &g) ||
	     !json_object_is_type(g, json_type_object)))
		return DT_OK;
	if (!json_object_object_get_ex(g, def->key, &v) || v == NULL)
		return DT_OK;	/* absent, or null (not finite) */
	if (!json_object_is_type(v, json_type_double) &&
	    !json_object_is_type(v, json_type_int))
		return dt_errorf(err, DT_ERR_FORMAT, "%s:%d: %s%s%s: expected "
				 "a number", path, line,
				 def->group ? def->group : "",
				 def->group ? "." : "", def->key);
	if (!isfinite(json_object_get_double(v)))
		return DT_OK;
	p = json_object_new_array();
	json_object_array_add(p, json_object_new_int64(step));
	json_object_array_add(p, dt_json_number(
				      json_object_get_double(v)));
	json_object_array_add(pts, p);
	return DT_OK;
}

/* One line (lineno) of metrics.jsonl into the series. */
static enum dt_status
take_line(struct report *rep, const char *path, int lineno, const char *line,
	  struct dt_error *err)
{
	struct json_object *o, *s;
	enum dt_status st = parse_object(path, lineno, line, &o, err);
	int64_t step;

	if (st != DT_OK)
		return st;
	if (!json_object_object_get_ex(o, "step", &s) ||
	    !json_object_is_type(s, json_type_int) ||
	    (step = json_object_get_int64(s)) < 0) {
		json_object_put(o);
		return dt_errorf(err, DT_ERR_FORMAT, "%s:%d: no \"step\" (a "
				 "whole number >= 0)", path, lineno);
	}
	for (size_t i = 0; st == DT_OK && i < N_SERIES; i++)
		st = take_point(&series_defs[i], o, step, rep->points[i], path,
				lineno, err);
	if (json_object_object_get_ex(o, "eval_loss", NULL))
		rep->n_evals++;
	else
		rep->n_steps++;
	if (step > rep->last_step)
		rep->last_step = step;
	json_object_put(o);
	return st;
}

static enum dt_status
read_metrics(struct report *rep, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 32];
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0;
	enum dt_status st = DT_OK;
	FILE *f;

	st = dt_rundir_path(path, sizeof path, rep->dir, "metrics.jsonl", err);
	if (st != DT_OK)
		return st;
	f = fopen(path, "r");
	if (f == NULL && errno == ENOENT)
		return dt_errorf(err, DT_ERR_USAGE, "%s: not a run directory "
				 "(no metrics.jsonl)", rep->dir);
	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	while (st == DT_OK && (n = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (strspn(line, " \t\r\n") == (size_t)n)
			continue;
		/* dtrain ends every line with a newline: a last line without
		 * one is the line a running (or killed) trainer was writing. */
		if (line[n - 1] != '\n') {
			fprintf(stderr, "dtrain: %s:%d: an unfinished last line "
				"(the run was writing it), left out\n", path,
				lineno);
			break;
		}
		st = take_line(rep, path, lineno, line, err);
	}
	if (st == DT_OK && ferror(f))
		st = dt_errorf(err, DT_ERR_IO, "%s: read failed", path);
	free(line);
	fclose(f);
	return st;
}

/* summary.json, plan.json and job.yaml, each where present. */
static enum dt_status
read_others(struct report *rep, struct dt_error *err)
{
	char path[DT_JOB_PATH_MAX + 32];
	char *text;
	enum dt_status st;

	st = dt_rundir_path(path, sizeof path, rep->dir, "summary.json", err);
	if (st == DT_OK)
		st = read_text(path, 1, &text, err);
	if (st == DT_OK && text != NULL) {
		st = parse_object(path, 1, text, &rep->summary, err);
		free(text);
	}
	if (st == DT_OK)
		st = dt_rundir_path(path, sizeof path, rep->dir, "plan.json",
				    err);
	if (st == DT_OK)
		st = read_text(path, 1, &rep->plan, err);
	if (st == DT_OK)
		st = dt_rundir_path(path, sizeof path, rep->dir, "job.yaml",
				    err);
	if (st == DT_OK)
		st = read_text(path, 1, &rep->job, err);
	return st;
}

/* text as HTML text or attribute value. */
static void
put_html(FILE *out, const char *text)
{
	for (const char *p = text; *p != '\0'; p++)
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default: fputc(*p, out);
		}
}

/* JSON text inside <script>: <, > and & (which JSON has only inside
 * strings) as \u escapes, so that no "</script>" or "<!--" can end or
 * change the block. */
static void
put_script_json(FILE *out, const char *json)
{
	for (const char *p = json; *p != '\0'; p++)
		switch (*p) {
		case '<': fputs("\\u003c", out); break;
		case '>': fputs("\\u003e", out); break;
		case '&': fputs("\\u0026", out); break;
		default: fputc(*p, out);
		}
}

/* The page's JSON (cmd_report.h): the charts that have points, and the
 * per-rank bars where summary.json has "ranks". */
static struct json_object *
page_data(const struct report *rep)
{
	struct json_object *data = json_object_new_object();
	struct json_object *charts = json_object_new_array(), *ranks;
	int have[N_CHARTS] = { 0 };

	for (size_t i = 0; i < N_SERIES; i++)
		if (json_object_array_length(rep->points[i]) > 0)
			have[series_defs[i].chart] = 1;
	/* data_wait_s alone only where there is no breakdown to hold it. */
	if (have[CHART_BREAKDOWN])
		have[CHART_DATA_WAIT] = 0;
	for (int c = 0; c < N_CHARTS; c++) {
		struct json_object *o, *series;

		if (!have[c])
			continue;
		o = json_object_new_object();
		series = json_object_new_array();
		json_object_object_add(o, "id",
				       json_object_new_string(chart_defs[c].id));
		json_object_object_add(o, "title", json_object_new_string(
					       chart_defs[c].title));
		json_object_object_add(o, "y",
				       json_object_new_string(chart_defs[c].y));
		json_object_object_add(o, "zero", json_object_new_boolean(
					       chart_defs[c].zero));
		for (size_t i = 0; i < N_SERIES; i++) {
			struct json_object *s;

			if ((int)series_defs[i].chart != c ||
			    json_object_array_length(rep->points[i]) == 0)
				continue;
			s = json_object_new_object();
			json_object_object_add(s, "name", json_object_new_string(
						       series_defs[i].name));
			json_object_object_add(s, "points",
					       json_object_get(rep->points[i]));
			json_object_array_add(series, s);
		}
		json_object_object_add(o, "series", series);
		json_object_array_add(charts, o);
	}
	json_object_object_add(data, "charts", charts);
	if (rep->summary != NULL &&
	    json_object_object_get_ex(rep->summary, "ranks", &ranks) &&
	    json_object_is_type(ranks, json_type_array) &&
	    json_object_array_length(ranks) > 0) {
		struct json_object *bars = json_object_new_object();
		struct json_object *keys = json_object_new_array();

		for (size_t k = 0; k < sizeof rank_keys / sizeof rank_keys[0];
		     k++)
			json_object_array_add(keys, json_object_new_string(
						      rank_keys[k]));
		json_object_object_add(bars, "title", json_object_new_string(
					       "Time per rank over the run"));
		json_object_object_add(bars, "keys", keys);
		json_object_object_add(bars, "ranks", strict_copy(ranks));
		json_object_object_add(data, "bars", bars);
	}
	return data;
}

static void
put_summary(FILE *out, const struct report *rep)
{
	fputs("<h2>Summary</h2>\n", out);
	if (rep->summary == NULL) {
		fputs("<p>No summary.json: the run has not finished "
		      "(or stopped before its end).</p>\n", out);
		return;
	}
	fputs("<table class=\"summary\">\n", out);
	json_object_object_foreach(rep->summary, key, val) {
		const char *text = val == NULL ? "null" :
			json_object_is_type(val, json_type_string) ?
			json_object_get_string(val) :
			json_object_to_json_string_ext(val,
						       JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE);

		fputs("<tr><th>", out);
		put_html(out, key);
		fputs("</th><td>", out);
		put_html(out, text);
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n", out);
}

/* The int64 at key of o, or -1 where it is not a number. */
static int64_t
member_i64(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_int) ||
	      json_object_is_type(v, json_type_double)))
		return -1;
	return json_object_get_int64(v);
}

/* Each rank's peak resident memory beside the plan's figure for it, from
 * summary.json "ranks": a row per rank with both in MiB, their ratio and
 * a bar of the ratio (100 px: the plan), red beyond 15% over. */
static void
put_memory(FILE *out, const struct report *rep)
{
	struct json_object *ranks = NULL;
	size_t n = 0, have = 0;

	fputs("<h2>Memory per rank</h2>\n", out);
	if (rep->summary != NULL &&
	    json_object_object_get_ex(rep->summary, "ranks", &ranks) &&
	    json_object_is_type(ranks, json_type_array))
		n = json_object_array_length(ranks);
	for (size_t i = 0; i < n; i++)
		have += member_i64(json_object_array_get_idx(ranks, i),
				   "peak_resident_bytes") >= 0;
	if (have == 0) {
		fputs("<p>Not recorded in summary.json "
		      "(\"peak_resident_bytes\").</p>\n", out);
		return;
	}
	fputs("<table class=\"summary\" id=\"memory\">\n<tr><th>rank</th>"
	      "<th>peak resident (VmHWM)</th><th>plan</th>"
	      "<th>peak / plan</th><th></th></tr>\n", out);
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(ranks, i);
		int64_t peak = member_i64(e, "peak_resident_bytes");
		int64_t plan = member_i64(e, "plan_memory_bytes");
		double ratio = plan > 0 && peak >= 0 ?
			       (double)peak / (double)plan : -1;

		if (peak < 0)
			continue;
		fprintf(out, "<tr><td>%lld</td><td>%.1f MiB</td>",
			(long long)member_i64(e, "rank"),
			(double)peak / 1048576.0);
		if (ratio < 0) {
			fputs("<td>-</td><td>-</td><td></td></tr>\n", out);
			continue;
		}
		fprintf(out, "<td>%.1f MiB</td><td>%.2f</td><td><div "
			"class=\"bar%s\" style=\"width:%.0fpx\"></div>"
			"</td></tr>\n", (double)plan / 1048576.0, ratio,
			ratio > 1.15 ? " over" : "",
			ratio < 3 ? 100 * ratio : 300);
	}
	fputs("</table>\n", out);
}

static void
put_text_block(FILE *out, const char *title, const char *id,
	       const char *text, const char *missing)
{
	fprintf(out, "<h2>%s</h2>\n", title);
	if (text == NULL) {
		fprintf(out, "<p>%s</p>\n", missing);
		return;
	}
	fprintf(out, "<pre id=\"%s\">", id);
	put_html(out, text);
	fputs("</pre>\n", out);
}

static const char page_style[] =
	"body{font-family:sans-serif;margin:1.5em auto;max-width:72em;"
	"color:#222}\n"
	"figure{display:inline-block;margin:0 1em 1em 0}\n"
	"figcaption{font-weight:bold;margin-bottom:.2em}\n"
	"svg.chart{background:#fff;border:1px solid #ccc}\n"
	"svg text{font-size:11px;fill:#333}\n"
	".grid{stroke:#e4e4e4}.axis{stroke:#666}\n"
	".frame{fill:none;stroke:#999}\n"
	".line{fill:none;stroke-width:1.6}\n"
	"table.summary{border-collapse:collapse}\n"
	"table.summary th,table.summary td{border:1px solid #ddd;"
	"padding:.2em .6em;text-align:left;vertical-align:top}\n"
	"table.summary td{font-family:monospace;word-break:break-all}\n"
	".bar{height:.8em;background:#4a7fb5}.bar.over{background:#c33}\n"
	"pre{background:#f6f6f6;border:1px solid #ddd;padding:.6em;"
	"overflow:auto;max-height:40em}\n";

/* Links to the ranks' Chrome traces, RUN_DIR/trace-rankR.json from rank
 * 0 up while they exist (DTRAIN_TRACE=1, util/trace.h), relative to the
 * run directory (where the page is written unless -o says otherwise). */
static void
put_traces(FILE *out, const struct report *rep)
{
	char path[DT_JOB_PATH_MAX + 32], name[32];
	int r;

	for (r = 0;; r++) {
		FILE *f;

		snprintf(name, sizeof name, "trace-rank%d.json", r);
		snprintf(path, sizeof path, "%s/%s", rep->dir, name);
		f = fopen(path, "r");
		if (f == NULL)
			break;
		fclose(f);
		if (r == 0)
			fputs("<h2>Timeline (Chrome trace)</h2>\n<p>Each rank's "
			      "passes, bucket sums and MPI waits (open in "
			      "chrome://tracing or ui.perfetto.dev):", out);
		fprintf(out, " <a href=\"%s\">%s</a>", name, name);
	}
	if (r > 0)
		fputs("</p>\n", out);
}

static enum dt_status
write_page(FILE *out, void *ctx, struct dt_error *err)
{
	const struct report *rep = ctx;
	struct json_object *data = page_data(rep), *name = NULL;
	const char *title = rep->dir;

	if (rep->summary != NULL &&
	    json_object_object_get_ex(rep->summary, "name", &name) &&
	    json_object_is_type(name, json_type_string))
		title = json_object_get_string(name);
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	      "<meta charset=\"utf-8\">\n<title>dtrain report: ", out);
	put_html(out, title);
	fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n"
		"<body data-status=\"pending\">\n<h1>dtrain report: ",
		page_style);
	put_html(out, title);
	fputs("</h1>\n<p>Run directory <code>", out);
	put_html(out, rep->dir);
	fprintf(out, "</code>: %lld logged step%s and %lld evaluation%s in "
		"metrics.jsonl, the last at step %lld.</p>\n",
		(long long)rep->n_steps, rep->n_steps == 1 ? "" : "s",
		(long long)rep->n_evals, rep->n_evals == 1 ? "" : "s",
		(long long)rep->last_step);
	put_summary(out, rep);
	fputs("<h2>Curves</h2>\n<noscript><p>The charts are drawn by the "
	      "page's script.</p></noscript>\n<div id=\"charts\"></div>\n"
	      "<h2>Time per rank</h2>\n<div id=\"ranks\"></div>\n", out);
	if (json_object_object_get_ex(data, "bars", NULL) == 0)
		fputs("<p>Not recorded in summary.json (\"ranks\").</p>\n",
		      out);
	put_memory(out, rep);
	put_traces(out, rep);
	put_text_block(out, "Plan (plan.json)", "plan", rep->plan,
		       "No plan.json.");
	put_text_block(out, "Job (job.yaml)", "job", rep->job,
		       "No job.yaml.");
	fputs("<script id=\"dt-data\" type=\"application/json\">", out);
	put_script_json(out, json_object_to_json_string_ext(
				data, JSON_C_TO_STRING_PLAIN));
	fprintf(out, "</script>\n<script>\n%s</script>\n</body>\n</html>\n",
		dt_report_script);
	json_object_put(data);
	if (ferror(out))
		return dt_errorf(err, DT_ERR_IO, "write failed");
	return DT_OK;
}

/* Reads the run in dir into rep (report_close frees it, also after an
 * error). */
static enum dt_status
report_open(struct report *rep, const char *dir, struct dt_error *err)
{
	enum dt_status st;

	memset(rep, 0, sizeof *rep);
	rep->dir = dir;
	for (size_t i = 0; i < N_SERIES; i++)
		rep->points[i] = json_object_new_array();
	st = read_metrics(rep, err);
	if (st == DT_OK)
		st = read_others(rep, err);
	return st;
}

static void
report_close(struct report *rep)
{
	for (size_t i = 0; i < N_SERIES; i++)
		json_object_put(rep->points[i]);
	json_object_put(rep->summary);
	free(rep->plan);
	free(rep->job);
	memset(rep, 0, sizeof *rep);
}

enum dt_status
dt_report_page(const char *dir, FILE *out, struct dt_error *err)
{
	struct report rep;
	enum dt_status st = report_open(&rep, dir, err);

	if (st == DT_OK)
		st = write_page(out, &rep, err);
	report_close(&rep);
	return st;
}

struct report_args {
	const char *output;	/* NULL: RUN_DIR/report.html */
};

static const struct dt_cmd_opt report_opts[] = {
	{ .name = "output", .short_name = 'o', .kind = DT_CMD_ARG_STRING,
	  .arg = "file", .offset = offsetof(struct report_args, output),
	  .flags = DT_CMD_OPT_PATH,
	  .doc = "write to file (default run_dir/report.html)" },
	{ .kind = DT_CMD_ARG_END },
};

static int
cmd_report(int argc, char **argv)
{
	struct report_args a = { 0 };
	struct report rep;
	struct dt_cmd_line line;
	struct dt_error err;
	char out[DT_JOB_PATH_MAX + 32];
	enum dt_status st;
	int rc = dt_cmd_parse(&dt_cmd_report, argc, argv, &a, &line);

	if (rc >= 0)
		return rc;
	free(line.sets);
	dt_error_clear(&err);
	if (a.output != NULL &&
	    dt_cmd_output_check(a.output, line.operand, "report.html", NULL,
				&err) != DT_OK)
		return dt_cmd_usage_error(&dt_cmd_report, "%s", err.msg);
	st = report_open(&rep, line.operand, &err);
	if (st == DT_OK && a.output != NULL)
		snprintf(out, sizeof out, "%s", a.output);
	else if (st == DT_OK)
		st = dt_rundir_path(out, sizeof out, rep.dir, "report.html",
				    &err);
	if (st == DT_OK)
		st = dt_rundir_write_atomic(out, write_page, &rep, &err);
	report_close(&rep);
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);
	printf("%s\n", out);
	return 0;
}

const struct dt_cmd dt_cmd_report = {
	.name = "report",
	.summary = "write a run's curves, summary, plan and job as one HTML "
		   "page",
	.opts = report_opts,
	.operand = "run_dir",
	.operand_noun = "run directory",
	.operand_doc = "the run directory",
	.run = cmd_report,
};
