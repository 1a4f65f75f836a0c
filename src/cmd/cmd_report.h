/* SPDX-License-Identifier: MIT */
/* cmd_report.h - `dtrain report`'s page: the parts other than the command. */
#ifndef DT_CMD_CMD_REPORT_H
#define DT_CMD_CMD_REPORT_H

/* The page's script (report_script.c): draws the charts described by the
 * JSON in the page's <script id="dt-data" type="application/json"> as
 * inline SVG. That JSON holds "charts": [{"id", "title", "y" (the axis
 * label), "zero" (start the axis at 0), "series": [{"name", "points":
 * [[step, value], ...]}]}], and "bars" (absent, or {"title", "keys":
 * [names], "ranks": [{"rank": K, name: seconds, ...}]}). A static string. */
extern const char dt_report_script[];

#endif
