/* SPDX-License-Identifier: MIT */
/* jsonnum.c - finite numbers or null, written compactly (see jsonnum.h). */
#include "util/jsonnum.h"

#include <json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The fewest significant digits (1 to 17) whose %g text reads back as v:
 * 17 always do for an IEEE 754 double (its decimal round trip, as in
 * C11 DBL_DECIMAL_DIG), most values need far fewer. */
static void
shortest(char *buf, size_t size, double v)
{
	for (int digits = 1; digits <= 17; digits++) {
		snprintf(buf, size, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			return;
	}
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
	return json_object_new_double_s(strtod(buf, NULL), buf);
}
