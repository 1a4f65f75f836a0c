/* SPDX-License-Identifier: MIT */
/* jsonnum.c - finite numbers or null (see jsonnum.h). */
#include "util/jsonnum.h"

#include <json.h>
#include <math.h>

struct json_object *
dt_json_number(double v)
{
	return isfinite(v) ? json_object_new_double(v) : NULL;
}
