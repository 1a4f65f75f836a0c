/* SPDX-License-Identifier: MIT */
/* meter.c - the calling thread's progress meter (meter.h). */
#include "util/meter.h"

#include <stdio.h>
#include <string.h>

static _Thread_local const struct dt_meter *current;

const struct dt_meter *
dt_meter_use(const struct dt_meter *m)
{
	const struct dt_meter *old = current;

	current = m;
	return old;
}

void
dt_meter_begin(const char *verb, const char *path, int64_t total)
{
	const char *slash = strrchr(path, '/');
	char what[128];

	if (current == NULL || current->begin == NULL)
		return;
	snprintf(what, sizeof what, "%s %s", verb,
		 slash != NULL ? slash + 1 : path);
	current->begin(current->ctx, what, total);
}

void
dt_meter_update(int64_t done)
{
	if (current != NULL && current->update != NULL)
		current->update(current->ctx, done);
}

void
dt_meter_end(void)
{
	if (current != NULL && current->end != NULL)
		current->end(current->ctx);
}
