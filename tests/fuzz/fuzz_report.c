/* SPDX-License-Identifier: MIT */
/* fuzz_report.c - the readers of `dtrain report`: metrics.jsonl and
 * summary.json of a run directory (dt_report_page, cmd/cmd_report.h).
 *
 * The input up to its first NUL byte is metrics.jsonl, the rest (after
 * the NUL) summary.json; without a NUL there is no summary.json. Any
 * bytes must make a page or fail with DT_ERR_FORMAT (or DT_ERR_USAGE,
 * DT_ERR_IO) and a message; a page's data block must parse as strict
 * JSON (json-c's JSON_TOKENER_STRICT), whatever numbers the files held. */
#include "fuzz.h"

#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd_report.h"
#include "util/status.h"

/* The run directory: the two paths of dt_fuzz_file linked under the names
 * the report reads. */
static char dir[512], metrics[600], summary[600];

static void
remove_dir(void)
{
	unlink(metrics);
	unlink(summary);
	rmdir(dir);
}

static void
make_dir(void)
{
	const char *t = getenv("DTRAIN_FUZZ_TMP");

	if (t == NULL || *t == '\0')
		t = getenv("TMPDIR");
	if (t == NULL || *t == '\0')
		t = "/tmp";
	snprintf(dir, sizeof dir, "%s/dtrain-fuzz-report-XXXXXX", t);
	dt_fuzz_check(mkdtemp(dir) != NULL, "cannot make the run directory");
	snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", dir);
	snprintf(summary, sizeof summary, "%s/summary.json", dir);
	atexit(remove_dir);
}

/* Writes size bytes to path, or removes it when data is NULL. */
static void
put(const char *path, const uint8_t *data, size_t size)
{
	FILE *f;

	unlink(path);
	if (data == NULL)
		return;
	f = fopen(path, "wb");
	dt_fuzz_check(f != NULL && fwrite(data, 1, size, f) == size &&
		      fclose(f) == 0, "cannot write the run's file");
}

/* The page's data block parses as strict JSON. */
static void
check_block(const char *page)
{
	static const char open[] =
		"<script id=\"dt-data\" type=\"application/json\">";
	const char *a = strstr(page, open), *b;
	struct json_tokener *tok;
	struct json_object *o;

	dt_fuzz_check(a != NULL, "a page without its data block");
	a += strlen(open);
	b = strstr(a, "</script>");
	dt_fuzz_check(b != NULL, "an unclosed data block");
	tok = json_tokener_new();
	dt_fuzz_check(tok != NULL, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, a, (int)(b - a));
	dt_fuzz_check(o != NULL &&
		      json_tokener_get_error(tok) == json_tokener_success &&
		      json_tokener_get_parse_end(tok) == (size_t)(b - a),
		      "the page's data block is not strict JSON");
	json_object_put(o);
	json_tokener_free(tok);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t n_metrics = nul != NULL ? (size_t)(nul - data) : size;
	struct dt_error err;
	enum dt_status st;
	char *page = NULL;
	size_t len = 0;
	FILE *out;

	if (dir[0] == '\0')
		make_dir();
	put(metrics, data, n_metrics);
	put(summary, nul != NULL ? nul + 1 : NULL,
	    nul != NULL ? size - n_metrics - 1 : 0);
	out = open_memstream(&page, &len);
	dt_fuzz_check(out != NULL, "out of memory");
	dt_error_clear(&err);
	st = dt_report_page(dir, out, &err);
	dt_fuzz_check(fclose(out) == 0, "the page's stream failed");
	dt_fuzz_check(st == DT_OK || ((st == DT_ERR_FORMAT ||
				       st == DT_ERR_USAGE ||
				       st == DT_ERR_IO) && err.msg[0] != '\0'),
		      "a run refused without a format error and a message");
	if (st == DT_OK)
		check_block(page);
	free(page);
	return 0;
}
