/* SPDX-License-Identifier: MIT */
/* csv.c - a labelled dataset from a CSV file of numbers (RFC 4180's
 * syntax: delimited cells, double quotes around a cell, "" for a quote
 * inside one; a quoted cell may not span lines). One row per sample, one
 * column of integer class labels or K columns of float targets (or, for
 * predict, neither), every other column a feature. */
#include "data/data.h"

#include <assert.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data_priv.h"
#include "util/alloc.h"
#include "util/meter.h"

/* Longest cell text parsed as a number. */
#define CELL_MAX 128

static long long
ll(int64_t v)
{
	return (long long)v;
}

/* Where the parser is: for messages. */
struct pos {
	const char *path;
	int64_t line;		/* 1-based */
};

/* One cell of a line: [p, p + n), quotes removed only when simple. */
struct cell {
	const char *p;
	size_t n;
	int quoted;
};

/* Writes s[0..n) into out as a short, printable, quoted excerpt. */
static void
excerpt(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;

	out[o++] = '"';
	for (size_t i = 0; i < n && o + 6 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == 24 && n > 28) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
}

/* Splits the line [s, end) into cells (appended to *cells, which grows)
 * and returns how many, or -1 with err filled. */
static int64_t
split(const char *s, const char *end, char delim, struct cell **cells,
      size_t *cap, const struct pos *at, struct dt_error *err)
{
	int64_t n = 0;
	const char *p = s;

	for (;;) {
		struct cell c = { p, 0, 0 };
		const char *q = p;

		while (q < end && (*q == ' ' || *q == '\t') && *q != delim)
			q++;
		if (q < end && *q == '"') {
			/* A quoted cell: up to the closing quote. */
			c.p = ++q;
			c.quoted = 1;
			while (q < end) {
				if (*q == '"' && q + 1 < end && q[1] == '"')
					q += 2;
				else if (*q == '"')
					break;
				else
					q++;
			}
			if (q == end) {
				dt_errorf(err, DT_ERR_FORMAT, "%s: line %lld, "
					  "column %lld: unterminated quoted "
					  "cell (a cell cannot span lines)",
					  at->path, ll(at->line), ll(n + 1));
				return -1;
			}
			c.n = (size_t)(q - c.p);
			q++;
			while (q < end && (*q == ' ' || *q == '\t') &&
			       *q != delim)
				q++;
			if (q < end && *q != delim) {
				dt_errorf(err, DT_ERR_FORMAT, "%s: line %lld, "
					  "column %lld: text after the closing "
					  "quote", at->path, ll(at->line),
					  ll(n + 1));
				return -1;
			}
		} else {
			while (q < end && *q != delim)
				q++;
			c.n = (size_t)(q - p);
		}
		if ((size_t)n == *cap) {
			*cap = *cap ? 2 * *cap : 16;
			*cells = dt_xrealloc(*cells, *cap, sizeof **cells);
		}
		(*cells)[n++] = c;
		if (q == end)
			return n;
		p = q + 1;	/* past the delimiter */
	}
}

/* Parses one cell as a finite float (as a double in *out). */
static enum dt_status
number(const struct cell *c, int64_t col, const struct pos *at, double *out,
       struct dt_error *err)
{
	char buf[CELL_MAX], show[64];
	const char *p = c->p;
	size_t n = c->n;
	char *end;
	double v;

	while (n > 0 && (*p == ' ' || *p == '\t')) {
		p++;
		n--;
	}
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n == 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: line %lld, column "
				 "%lld: empty cell, expected a number",
				 at->path, ll(at->line), ll(col + 1));
	excerpt(p, n, show, sizeof show);
	if (n >= sizeof buf)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: line %lld, column "
				 "%lld: expected a number, found %s", at->path,
				 ll(at->line), ll(col + 1), show);
	memcpy(buf, p, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (end == buf || *end != '\0')
		return dt_errorf(err, DT_ERR_FORMAT, "%s: line %lld, column "
				 "%lld: expected a number, found %s", at->path,
				 ll(at->line), ll(col + 1), show);
	if (!isfinite(v))
		return dt_errorf(err, DT_ERR_DATA, "%s: line %lld, column %lld: "
				 "%s is not a finite number", at->path,
				 ll(at->line), ll(col + 1), show);
	if (fabs(v) > FLT_MAX)
		return dt_errorf(err, DT_ERR_DATA, "%s: line %lld, column %lld: "
				 "%s is out of float32 range", at->path,
				 ll(at->line), ll(col + 1), show);
	*out = v;
	return DT_OK;
}

/* The growing output of the parser. */
struct rows {
	float *x;		/* (n, n_features) */
	int32_t *y;		/* (n) class labels, or NULL */
	float *t;		/* (n, n_targets) targets, or NULL */
	int64_t n, cap;
	int64_t max;		/* rows the file can hold at most */
	int64_t nf, nt;		/* features and targets per row */
	int64_t lab0, nlab;	/* the label or target columns: [lab0,
				 * lab0 + nlab); nlab 0: none */
	int labelled;		/* the rows carry labels or targets */
};

static void
grow(struct rows *r)
{
	if (r->n < r->cap)
		return;
	/* Never more rows than the bytes can hold (a first line of a
	 * million columns must not reserve gigabytes for rows that are not
	 * there). */
	r->cap = r->cap ? 2 * r->cap : 1024;
	if (r->cap > r->max)
		r->cap = r->max > r->n ? r->max : r->n + 1;
	r->x = dt_xrealloc(r->x, (size_t)r->cap,
			   (size_t)r->nf * sizeof *r->x);
	if (r->labelled && r->nt > 0)
		r->t = dt_xrealloc(r->t, (size_t)r->cap,
				   (size_t)r->nt * sizeof *r->t);
	else if (r->labelled)
		r->y = dt_xrealloc(r->y, (size_t)r->cap, sizeof *r->y);
}

/* Checks a class label and stores it as row r->n's. */
static enum dt_status
take_label(double v, int64_t c, const struct dt_csv_opts *o,
	   const struct pos *at, struct rows *r, struct dt_error *err)
{
	if (v != floor(v))
		return dt_errorf(err, DT_ERR_DATA, "%s: line %lld, column "
				 "%lld: label %g is not an integer", at->path,
				 ll(at->line), ll(c + 1), v);
	if (v < 0 || v >= (double)o->n_classes)
		return dt_errorf(err, DT_ERR_DATA, "%s: line %lld, column "
				 "%lld: label %.0f out of range [0, %lld)",
				 at->path, ll(at->line), ll(c + 1), v,
				 ll(o->n_classes));
	r->y[r->n] = (int32_t)v;
	return DT_OK;
}

/* Takes one data row's cells into r. */
static enum dt_status
take_row(const struct cell *cells, int64_t n_cols,
	 const struct dt_csv_opts *o, const struct pos *at, struct rows *r,
	 struct dt_error *err)
{
	float *x;
	int64_t j = 0;

	grow(r);
	x = r->x + r->n * r->nf;
	for (int64_t c = 0; c < n_cols; c++) {
		double v = 0;
		enum dt_status st = number(&cells[c], c, at, &v, err);

		if (st != DT_OK)
			return st;
		if (c < r->lab0 || c >= r->lab0 + r->nlab) {
			x[j++] = (float)v;
			continue;
		}
		if (!r->labelled)
			continue;
		if (r->nt > 0) {
			r->t[r->n * r->nt + (c - r->lab0)] = (float)v;
			continue;
		}
		st = take_label(v, c, o, at, r, err);
		if (st != DT_OK)
			return st;
	}
	r->n++;
	return DT_OK;
}

/* Whether every cell of a line is a number: a first line that is not
 * holds the column names. */
static int
all_numbers(const struct cell *cells, int64_t n, const struct pos *at)
{
	for (int64_t c = 0; c < n; c++) {
		double v;

		if (number(&cells[c], c, at, &v, NULL) != DT_OK)
			return 0;
	}
	return 1;
}

/* The first line fixes the columns: which hold the label or targets,
 * and, for predict (o->n_features > 0), whether the rows have them. */
static enum dt_status
first_line(const struct dt_csv_opts *o, int64_t n_cols, size_t len,
	   const struct pos *at, struct rows *r, struct dt_error *err)
{
	char delim = o->delimiter ? o->delimiter : ',';
	int64_t width = o->n_targets > 0 ? o->n_targets : 1, lab;

	if (n_cols < 2 && o->n_features <= 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: line %lld: 1 "
				 "column: a label and at least one feature "
				 "are needed (is the delimiter '%c'?)",
				 at->path, ll(at->line), delim);
	/* Each row: n_cols non-empty cells, n_cols - 1 delimiters. */
	r->max = (int64_t)(len / (size_t)(2 * n_cols - 1)) + 1;
	r->labelled = 1;
	if (o->n_features > 0 && n_cols == o->n_features) {
		r->labelled = 0;
		r->nf = n_cols;
		return DT_OK;
	}
	if (o->n_features > 0 && n_cols != o->n_features + width)
		return dt_errorf(err, DT_ERR_DATA, "%s: line %lld, column "
				 "%lld: %lld columns, but the model takes %lld "
				 "features (%lld columns without the label, "
				 "%lld with it)", at->path, ll(at->line),
				 ll((n_cols < o->n_features ? n_cols :
				     o->n_features + width) + 1), ll(n_cols),
				 ll(o->n_features), ll(o->n_features),
				 ll(o->n_features + width));
	lab = o->label_col >= 0 ? o->label_col : n_cols - width + 1 +
	      o->label_col;
	if (lab < 0 || lab + width > n_cols)
		return dt_errorf(err, DT_ERR_DATA, "%s: label column %d%s "
				 "does not exist: the file has %lld columns "
				 "(line %lld)", at->path, o->label_col,
				 width > 1 ? " and the targets after it" : "",
				 ll(n_cols), ll(at->line));
	r->lab0 = lab;
	r->nlab = width;
	r->nt = o->n_targets > 0 ? o->n_targets : 0;
	r->nf = n_cols - width;
	if (r->nf < 1)
		return dt_errorf(err, DT_ERR_DATA, "%s: line %lld: %lld "
				 "columns hold %lld targets and no feature",
				 at->path, ll(at->line), ll(n_cols), ll(width));
	return DT_OK;
}

/* Whether a header of hdr columns (line hdr_line; 0: none) fits the
 * first data row's n_cols, as first_line read it: as wide, or, rows
 * without the label (predict), wide enough to name the label too. */
static enum dt_status
header_fits(const struct dt_csv_opts *o, int64_t hdr, int64_t hdr_line,
	    int64_t n_cols, const struct pos *at, const struct rows *r,
	    struct dt_error *err)
{
	int64_t width = o->n_targets > 0 ? o->n_targets : 1;

	if (hdr_line == 0 || hdr == n_cols ||
	    (!r->labelled && hdr == n_cols + width))
		return DT_OK;
	return dt_errorf(err, DT_ERR_FORMAT, "%s: line %lld: the header has "
			 "%lld column%s, the first data row %lld (line %lld)%s",
			 at->path, ll(hdr_line), ll(hdr), hdr == 1 ? "" : "s",
			 ll(n_cols), ll(at->line),
			 r->labelled ? "" : ", or that and the label");
}

static enum dt_status
parse(const char *path, const unsigned char *text, size_t len,
      const struct dt_csv_opts *o, struct rows *r, struct dt_error *err)
{
	/* An empty file comes without a buffer (text NULL), and NULL + 0
	 * is undefined behaviour (C11 6.5.6p8). */
	const char *s = (const char *)text, *end = len > 0 ? s + len : s;
	char delim = o->delimiter ? o->delimiter : ',';
	struct cell *cells = NULL;
	size_t cap = 0;
	struct pos at = { path, 0 };
	int64_t n_cols = -1, first = 0, hdr = 0, hdr_line = 0;
	int header = o->header, had_header = 0;
	enum dt_status st = DT_OK;

	if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		s += 3;
	dt_meter_begin("parse", path, (int64_t)len);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *eol = nl != NULL ? nl : end;
		const char *q;
		int64_t n;

		at.line++;
		if (eol > s && eol[-1] == '\r')
			eol--;
		for (q = s; q < eol && (*q == ' ' || *q == '\t'); q++)
			;
		if (q == eol)
			goto next;	/* blank */

		n = split(s, eol, delim, &cells, &cap, &at, err);
		if (n < 0) {
			st = err != NULL ? err->status : DT_ERR_FORMAT;
			break;
		}
		if (header == DT_CSV_HEADER_DETECT)
			header = !all_numbers(cells, n, &at);
		if (header) {
			/* The first data row decides the columns; the
			 * header must fit it (header_fits). */
			header = 0;
			had_header = 1;
			hdr = n;
			hdr_line = at.line;
			goto next;
		}
		if (n_cols < 0) {
			n_cols = n;
			first = at.line;
			st = first_line(o, n_cols, len, &at, r, err);
			if (st == DT_OK)
				st = header_fits(o, hdr, hdr_line, n_cols, &at,
						 r, err);
			if (st != DT_OK)
				break;
		} else if (n != n_cols) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: line %lld, "
				       "column %lld: %lld column%s, expected "
				       "%lld (as on line %lld)", path,
				       ll(at.line), ll((n < n_cols ? n :
							n_cols) + 1), ll(n),
				       n == 1 ? "" : "s", ll(n_cols),
				       ll(first));
			break;
		}
		st = take_row(cells, n_cols, o, &at, r, err);
		if (st != DT_OK)
			break;
next:
		if (nl == NULL)
			break;
		s = nl + 1;
		if ((at.line & 1023) == 0)
			dt_meter_update((int64_t)(s - (const char *)text));
	}
	dt_meter_end();
	free(cells);
	if (st == DT_OK && r->n == 0)
		st = dt_errorf(err, DT_ERR_DATA, "%s: no data rows%s", path,
			       had_header ? " after the header" : "");
	return st;
}

enum dt_status
dt_dataset_load_csv(const char *path, const struct dt_csv_opts *opts,
		    struct dt_dataset *ds, struct dt_error *err)
{
	struct dt_blob b;
	struct rows r = { 0 };
	enum dt_status st;

	assert(opts->n_classes > 0 || opts->n_targets > 0);
	memset(ds, 0, sizeof *ds);
	st = dt_blob_read(path, 1, &b, err);
	if (st != DT_OK)
		return st;
	st = parse(path, b.p, b.n, opts, &r, err);
	dt_blob_fini(&b);
	if (st != DT_OK) {
		free(r.x);
		free(r.y);
		free(r.t);
		return st;
	}
	ds->n = r.n;
	ds->sample_size = r.nf;
	ds->n_shape = 1;
	ds->shape[0] = r.nf;
	ds->x_f32 = dt_xrealloc(r.x, (size_t)r.n,
				(size_t)r.nf * sizeof *r.x);
	if (r.y != NULL)
		ds->y = dt_xrealloc(r.y, (size_t)r.n, sizeof *r.y);
	if (r.t != NULL) {
		ds->t = dt_xrealloc(r.t, (size_t)r.n,
				    (size_t)r.nt * sizeof *r.t);
		ds->n_targets = r.nt;
	}
	ds->scale = opts->scale != 0 ? opts->scale : 1.0f;
	return DT_OK;
}
