/* SPDX-License-Identifier: MIT */
/* status.c - status names, dt_errorf and the status -> exit code map. */
#include "util/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *
dt_status_str(enum dt_status status)
{
	switch (status) {
	case DT_OK: return "ok";
	case DT_ERR_USAGE: return "bad usage";
	case DT_ERR_JOB: return "bad job file";
	case DT_ERR_IO: return "I/O error";
	case DT_ERR_FORMAT: return "malformed file";
	case DT_ERR_DATA: return "bad data";
	case DT_ERR_NUMERIC: return "non-finite value";
	case DT_ERR_MPI: return "MPI error";
	case DT_ERR_EXISTS: return "run directory exists";
	case DT_ERR_INTERRUPTED: return "interrupted";
	case DT_ERR_PLAN: return "impossible layout";
	case DT_ERR_NET: return "download failed";
	}
	return "unknown status";
}

enum dt_status
dt_errorf(struct dt_error *err, enum dt_status status, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return status;
	err->status = status;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return status;
}

void
dt_error_prefix(struct dt_error *err, const char *fmt, ...)
{
	char prefix[256], old[sizeof err->msg];
	va_list ap;

	if (err == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	/* Truncation is acceptable: the message stays a valid string. */
	if (snprintf(err->msg, sizeof err->msg, "%s%s", prefix, old) < 0)
		err->msg[0] = '\0';
}

void
dt_error_clear(struct dt_error *err)
{
	if (err == NULL)
		return;
	err->status = DT_OK;
	err->msg[0] = '\0';
}

int
dt_status_exit_code(enum dt_status status)
{
	switch (status) {
	case DT_OK:
		return 0;
	case DT_ERR_USAGE:
	case DT_ERR_JOB:
	case DT_ERR_PLAN:
	case DT_ERR_EXISTS:
		return 2;
	case DT_ERR_INTERRUPTED:
		return 3;
	default:
		return 1;
	}
}
