/* SPDX-License-Identifier: MIT */
/* status.h - dtrain's one error convention.
 *
 * Out of memory aborts (dt_xmalloc and friends); everything else returns an
 * enum dt_status, with the details in a struct dt_error filled by dt_errorf
 * (the model is curl's CURLcode and failf). Numbers are never reused. */
#ifndef DT_UTIL_STATUS_H
#define DT_UTIL_STATUS_H

#include <stddef.h>

enum dt_status {
	DT_OK = 0,
	DT_ERR_USAGE = 1,	/* bad command line */
	DT_ERR_JOB = 2,		/* bad job file or --set override */
	DT_ERR_IO = 3,		/* open/read/write/rename failed */
	DT_ERR_FORMAT = 4,	/* a data or checkpoint file is malformed */
	DT_ERR_DATA = 5,	/* well-formed data with bad values (label range) */
	DT_ERR_NUMERIC = 6,	/* non-finite or diverging loss or gradient */
	DT_ERR_MPI = 7,		/* an MPI call failed */
	DT_ERR_EXISTS = 8,	/* refusing to overwrite a run directory */
	DT_ERR_INTERRUPTED = 9,	/* SIGINT/SIGTERM */
	DT_ERR_PLAN = 10,	/* layout/batch arithmetic cannot work */
	DT_ERR_NET = 11,	/* a download failed */
};

/* The details of a failure: the status and a message that names the file,
 * the place and what was expected. */
struct dt_error {
	enum dt_status status;
	char msg[2048];
};

/* Returns a short constant name for status ("bad job file", ...). */
const char *dt_status_str(enum dt_status status);

/* Fills err (which may be NULL) with status and a printf-style message and
 * returns status, so callers write `return dt_errorf(err, DT_ERR_IO, ...)`.
 * The message is truncated to fit err->msg. */
enum dt_status dt_errorf(struct dt_error *err, enum dt_status status,
			 const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes err->msg with a printf-style context ("rank 1: "). */
void dt_error_prefix(struct dt_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Clears err to DT_OK with an empty message. */
void dt_error_clear(struct dt_error *err);

/* Process exit code for a status: 0 ok, 2 bad usage/job/plan/exists,
 * 3 interrupted, 1 for every runtime failure. */
int dt_status_exit_code(enum dt_status status);

#endif
