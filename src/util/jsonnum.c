/* SPDX-License-Identifier: MIT */
/* jsonnum.c - finite numbers or null, written compactly (see jsonnum.h). */
#include "util/jsonnum.h"

#include <json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole number written without a fraction gets ".0", as json-c writes
 * doubles, so that readers keep taking it for a float. */
static void
mark_float(char *buf, size_t size)
{
	if (strpbrk(buf, ".e") == NULL && strlen(buf) + 2 < size)
		strcat(buf, ".0");
}

/* The fewest significant digits (1 to 17) whose %g text reads back as v:
 * 17 always do for an IEEE 754 double (its decimal round trip, as in
 * C11 DBL_DECIMAL_DIG), most values need far fewer. A whole number below
 * 1e15 that %g would give an exponent (100 as 1e+02) is written out. */
static void
shortest(char *buf, size_t size, double v)
{
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(buf, size, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (strchr(buf, 'e') != NULL && fabs(v) < 1e15 && v == floor(v))
		snprintf(buf, size, "%.0f", v);
	mark_float(buf, size);
}

struct json_object *
dt_json_number(double v)
{
	char buf[32];

	if (!isfinite(v))
		return NULL;
	shortest(buf, sizeof buf, v);
	return json_object_new_double_s(v, buf);
}

struct json_object *
dt_json_seconds(double v)
{
	char buf[32];

	if (!isfinite(v))
		return NULL;
	snprintf(buf, sizeof buf, "%.6g", v);
	mark_float(buf, sizeof buf);
	return json_object_new_double_s(strtod(buf, NULL), buf);
}
