/* job_test.h - what the two files of the job test share. */
#ifndef DT_JOB_TEST_H
#define DT_JOB_TEST_H

#include <check.h>

#include "job/job.h"
#include "util/status.h"

extern struct dt_job job;	/* the job under test */
extern struct dt_error err;	/* the last parse's error */
extern const char min_job[];	/* the least a job needs */

/* Parses text as file name with the overrides into job and err. */
enum dt_status parse_as(const char *name, const char *text,
			const char *const *sets, int n_sets);
/* Parses text as /jobs/job.yaml. */
enum dt_status parse(const char *text);
/* Parses text as job.yaml with the overrides and expects exactly msg. */
void expect_error(const char *text, const char *const *sets, int n_sets,
		  const char *msg);
/* min_job with one line appended to its train section (a static buffer). */
const char *min_with(const char *train_line);

/* The error-message tests. */
TCase *job_error_tcase(void);

#endif
