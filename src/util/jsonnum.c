/* SPDX-License-Identifier: MIT */
/* jsonnum.c - finite numbers or null, written compactly (see jsonnum.h). */
#include "util/jsonnum.h"

#include <float.h>
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

/* A whole number below 1e15 that %g gave an exponent (100 as 1e+02) is
 * written out in full. */
static void
plain_whole(char *buf, size_t size, double v)
{
	if (strchr(buf, 'e') != NULL && fabs(v) < 1e15 && v == floor(v))
		snprintf(buf, size, "%.0f", v);
	mark_float(buf, size);
}

/* The fewest significant digits (1 to 17) whose %g text reads back as v:
 * 17 always do for an IEEE 754 double (its decimal round trip, as in
 * C11 DBL_DECIMAL_DIG), most values need far fewer. */
static void
shortest(char *buf, size_t size, double v)
{
	for (int digits = 1; digits <= DBL_DECIMAL_DIG; digits++) {
		snprintf(buf, size, "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	plain_whole(buf, size, v);
}

/* The same for the float f: 9 digits (FLT_DECIMAL_DIG) always read back
 * both ways (strtof, and strtod then rounding), since the 9-digit text
 * lies far nearer f than any midpoint between floats. */
static void
shortest_float(char *buf, size_t size, float f)
{
	for (int digits = 1; digits <= FLT_DECIMAL_DIG; digits++) {
		snprintf(buf, size, "%.*g", digits, (double)f);
		if (strtof(buf, NULL) == f && (float)strtod(buf, NULL) == f)
			break;
	}
	plain_whole(buf, size, (double)f);
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
dt_json_float(double v)
{
	char buf[32];
	float f;

	if (!isfinite(v))
		return NULL;
	if (fabs(v) > FLT_MAX)
		return dt_json_number(v);
	f = (float)v;
	shortest_float(buf, sizeof buf, f);
	return json_object_new_double_s((double)f, buf);
}

struct json_object *
dt_json_seconds(double v)
{
	char buf[48];

	if (!isfinite(v))
		return NULL;
	if (fabs(v) >= 1e15)	/* beyond any run's length: no fixed form */
		return dt_json_number(v);
	snprintf(buf, sizeof buf, "%.6f", v);
	/* -4e-7 would read "-0.000000". */
	if (strcmp(buf, "-0.000000") == 0)
		strcpy(buf, "0.000000");
	return json_object_new_double_s(strtod(buf, NULL), buf);
}
