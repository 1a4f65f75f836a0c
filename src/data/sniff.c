/* SPDX-License-Identifier: MIT */
/* sniff.c - is a downloaded file plausibly data of the kind a job expects?
 *
 * A server that answers 200 with an HTML page (a login wall, a captive
 * portal, a moved-file notice) would otherwise have that page cached under
 * the data's final name, and every later run would fail on it, or, for a
 * text source, train on it. The first bytes of the file (decompressed when
 * it starts with the gzip magic 1f 8b, RFC 1952) are checked against what
 * the format's own reader demands first: the IDX magic (two zero bytes, a
 * type code, 1 to 4 dimensions; LeCun et al., the MNIST database page),
 * the NPY magic "\x93NUMPY" (NumPy's NEP 1 format description), and for
 * text, CSV and raw token ids at least that it is not an HTML or XML
 * document (and, for text and CSV, holds no NUL byte).
 *
 * dt_data_check_whole goes further for the formats whose header says how
 * long the file is (IDX, NPY, llm.c's token shards): a body cut short by a server or a proxy,
 * which no digest covers when the job gives none, is told from a whole one
 * before it reaches the cache. */
#include "data/fetch.h"
#include "data/data.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

#define SNIFF_BYTES 4096

static const char *
kind_name(enum dt_data_kind kind)
{
	switch (kind) {
	case DT_DATA_IDX:
		return "an IDX file";
	case DT_DATA_NPY:
		return "an NPY file";
	case DT_DATA_TEXT:
		return "text";
	case DT_DATA_BINARY:
		return "token data";
	case DT_DATA_LLMC:
		return "an llm.c token shard";
	case DT_DATA_ANY:
		break;
	}
	return "data";
}

/* Whether buf (n bytes) begins, after white space and a UTF-8 byte order
 * mark, like a markup document. */
static int
looks_like_markup(const unsigned char *buf, size_t n)
{
	static const char *const starts[] = {
		"<!doctype", "<html", "<?xml", "<head", "<body", "<!--",
	};
	size_t i = 0;

	if (n >= 3 && buf[0] == 0xef && buf[1] == 0xbb && buf[2] == 0xbf)
		i = 3;
	while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' ||
			 buf[i] == '\n'))
		i++;
	for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
		size_t len = strlen(starts[k]);

		if (n - i >= len &&
		    strncasecmp((const char *)buf + i, starts[k], len) == 0)
			return 1;
	}
	return 0;
}

/* The first bytes of buf as a quoted, escaped string for a message. */
static void
quote_start(const unsigned char *buf, size_t n, char *out, size_t size)
{
	size_t o = 0;

	out[o++] = '"';
	for (size_t i = 0; i < n && i < 24 && o + 6 < size; i++) {
		if (buf[i] >= 0x20 && buf[i] < 0x7f && buf[i] != '"' &&
		    buf[i] != '\\')
			out[o++] = (char)buf[i];
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x",
					      buf[i]);
	}
	if (o + 5 < size && n > 24) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o++] = '"';
	out[o] = '\0';
}

/* Why buf (n bytes, the start of the file) cannot be data of kind, or NULL
 * if it can. */
static const char *
verdict(const unsigned char *buf, size_t n, enum dt_data_kind kind)
{
	if (kind == DT_DATA_ANY)
		return NULL;
	if (looks_like_markup(buf, n))
		return "an HTML or XML page, not the data";
	switch (kind) {
	case DT_DATA_IDX:
		if (n < 4 || buf[0] != 0 || buf[1] != 0)
			return "no IDX magic (two zero bytes first)";
		if (buf[2] != 0x08 && buf[2] != 0x09 && buf[2] != 0x0b &&
		    buf[2] != 0x0c && buf[2] != 0x0d && buf[2] != 0x0e)
			return "an unknown IDX type code";
		if (buf[3] < 1 || buf[3] > 4)
			return "an IDX dimension count outside 1..4";
		return NULL;
	case DT_DATA_NPY:
		if (n < 6 || memcmp(buf, "\x93NUMPY", 6) != 0)
			return "no NPY magic (\\x93NUMPY)";
		return NULL;
	case DT_DATA_TEXT:
		if (memchr(buf, 0, n) != NULL)
			return "a NUL byte, so not text";
		return NULL;
	case DT_DATA_BINARY:
	case DT_DATA_LLMC:
	case DT_DATA_ANY:
		break;
	}
	return NULL;
}

enum dt_status
dt_data_sniff(const char *path, enum dt_data_kind kind, const char *what,
	      struct dt_error *err)
{
	unsigned char buf[SNIFF_BYTES];
	char start[128];
	const char *why;
	gzFile f;
	int n;

	if (kind == DT_DATA_ANY)
		return DT_OK;
	/* gzread passes a file without the gzip magic through unchanged. */
	f = gzopen(path, "rb");
	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 errno != 0 ? strerror(errno) : "out of memory");
	n = gzread(f, buf, sizeof buf);
	if (n < 0) {
		int zerr = 0;
		const char *msg = gzerror(f, &zerr);
		enum dt_status st;

		/* msg lives in f's state, which gzclose frees: the message is
		 * made first (found by tests/fuzz/fuzz_sniff). */
		st = dt_errorf(err, DT_ERR_DATA, "%s: the download is not %s: "
			       "it is not valid gzip (%s)", what,
			       kind_name(kind), msg != NULL ? msg : "?");
		gzclose(f);
		return st;
	}
	gzclose(f);
	why = verdict(buf, (size_t)n, kind);
	if (why == NULL)
		return DT_OK;
	quote_start(buf, (size_t)n, start, sizeof start);
	return dt_errorf(err, DT_ERR_DATA, "%s: the download is not %s: it "
			 "starts with %s, %s", what, kind_name(kind), start,
			 why);
}

/* llm.c's header of the file at path against the file's length
 * (dt_llmc_header_check); DT_ERR_FORMAT in e for a bad one. */
static enum dt_status
llmc_whole(const char *path, struct dt_error *e)
{
	unsigned char hdr[DT_LLMC_HEADER_BYTES];
	struct stat sb;
	int64_t n_tokens;
	size_t got;
	FILE *f = fopen(path, "rb");

	if (f == NULL)
		return dt_errorf(e, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	got = fread(hdr, 1, sizeof hdr, f);
	if (ferror(f) || fstat(fileno(f), &sb) != 0) {
		fclose(f);
		return dt_errorf(e, DT_ERR_IO, "%s: cannot read: %s", path,
				 strerror(errno));
	}
	fclose(f);
	(void)got;
	return dt_llmc_header_check(path, hdr, (int64_t)sb.st_size,
				    &n_tokens, e);
}

enum dt_status
dt_data_check_whole(const char *path, enum dt_data_kind kind,
		    const char *what, struct dt_error *err)
{
	struct dt_error e;
	struct dt_idx idx;
	struct dt_npy npy;
	enum dt_status st;

	/* The readers check the header's length against the body exactly;
	 * what they read is dropped again. */
	if (kind == DT_DATA_LLMC) {
		st = llmc_whole(path, &e);
		if (st == DT_OK || st == DT_ERR_IO)
			return st == DT_OK ? DT_OK :
			       dt_errorf(err, st, "%s", e.msg);
		return dt_errorf(err, DT_ERR_DATA, "%s: the download is not a "
				 "whole llm.c token shard: %s", what, e.msg);
	}
	if (kind == DT_DATA_IDX) {
		st = dt_idx_read(path, &idx, &e);
		dt_idx_fini(&idx);
	} else if (kind == DT_DATA_NPY) {
		st = dt_npy_read(path, &npy, &e);
		dt_npy_fini(&npy);
	} else {
		return DT_OK;
	}
	if (st == DT_OK)
		return DT_OK;
	if (st == DT_ERR_IO)
		return dt_errorf(err, st, "%s", e.msg);
	return dt_errorf(err, DT_ERR_DATA, "%s: the download is not a whole "
			 "%s: %s", what, kind == DT_DATA_IDX ? "IDX file" :
			 "NPY file", e.msg);
}
