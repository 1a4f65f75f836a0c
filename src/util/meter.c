/* SPDX-License-Identifier: MIT */
/* meter.c - the calling thread's progress meter (meter.h). */
#include "util/meter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Thread_local const struct dt_meter *current;
/* DTRAIN_TEST_METER_DELAY_US, read as a task begins: a test aid (dtrain(1),
 * ENVIRONMENT) that makes each update of a metered task wait that long,
 * so that a test sees the line of a read a fast machine would finish
 * before the line is drawn. 0: none. */
static _Thread_local long delay_us;

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
	const char *env = getenv("DTRAIN_TEST_METER_DELAY_US");
	char what[128];

	if (current == NULL || current->begin == NULL)
		return;
	/* Under a second, so that it fits a timespec's nanoseconds. */
	delay_us = env != NULL ? strtol(env, NULL, 10) : 0;
	if (delay_us < 0 || delay_us >= 1000000)
		delay_us = 0;
	snprintf(what, sizeof what, "%s %s", verb,
		 slash != NULL ? slash + 1 : path);
	current->begin(current->ctx, what, total);
}

void
dt_meter_update(int64_t done)
{
	if (current != NULL && current->update != NULL) {
		if (delay_us > 0) {
			struct timespec ts = { 0, delay_us * 1000L };

			nanosleep(&ts, NULL);
		}
		current->update(current->ctx, done);
	}
}

void
dt_meter_end(void)
{
	if (current != NULL && current->end != NULL)
		current->end(current->ctx);
}
