/* SPDX-License-Identifier: MIT */
/* span.c - the time-span format (see span.h). */
#include "util/span.h"

#include <stdio.h>

void
dt_fmt_span(char *buf, size_t size, double s)
{
	long t = s < 0 || s != s ? 0 : (long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
	else
		snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
}
