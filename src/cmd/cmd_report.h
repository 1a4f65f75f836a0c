/* SPDX-License-Identifier: MIT */
/* cmd_report.h - `dtrain report`'s page: the parts other than the command,
 * and its reader of a run directory (for the fuzz target of
 * tests/fuzz/fuzz_report.c). */
#ifndef DT_CMD_CMD_REPORT_H
#define DT_CMD_CMD_REPORT_H

#include <stdio.h>

#include "util/status.h"

/* Reads the run directory dir as `dtrain report` does (metrics.jsonl,
 * and summary.json, plan.json and job.yaml where present) and writes its
 * page to out. DT_ERR_USAGE when dir has no metrics.jsonl, DT_ERR_FORMAT
 * "FILE:LINE: ..." for a line or file that is not the JSON object
 * expected, DT_ERR_IO naming the file; out is then untouched. The page's
 * data block is strict JSON (RFC 8259) whatever the files held. */
enum dt_status dt_report_page(const char *dir, FILE *out,
			      struct dt_error *err);

/* The page's script (report_script.c): draws the charts described by the
 * JSON in the page's <script id="dt-data" type="application/json"> as
 * inline SVG. That JSON holds "charts": [{"id", "title", "y" (the axis
 * label), "zero" (start the axis at 0), "series": [{"name", "points":
 * [[step, value], ...]}]}], and "bars" (absent, or {"title", "keys":
 * [names], "ranks": [{"rank": K, name: seconds, ...}]}). A static string. */
extern const char dt_report_script[];

#endif
