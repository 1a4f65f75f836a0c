/* SPDX-License-Identifier: MIT */
/* span.h - the one format of a time span that dtrain shows a person:
 * every ETA and elapsed time, on the training progress line, in plain
 * log lines and on the download bar. */
#ifndef DT_UTIL_SPAN_H
#define DT_UTIL_SPAN_H

#include <stddef.h>

/* Writes the span s (seconds, rounded to whole seconds; negative or NaN
 * counts as 0) into buf (size bytes, truncated as snprintf truncates):
 * "1h02m" from an hour up, else "3m05s". No errors. */
void dt_fmt_span(char *buf, size_t size, double s);

#endif
