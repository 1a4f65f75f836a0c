/* SPDX-License-Identifier: MIT */
/* fuzz_job.c - the job parser (dt_job_parse) on arbitrary YAML and --set
 * overrides.
 *
 * The input is the job text up to its first NUL byte; what follows are
 * overrides ("key.path=value"), one per NUL-separated piece, at most
 * MAX_SETS. Any input must give DT_OK or DT_ERR_JOB with a message, never
 * a crash; a job that parses must write (dt_job_write) YAML that parses
 * again without the overrides and writes the same text again: the
 * resolved job a run stores in its run directory is what resume and
 * export read back. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/job.h"
#include "util/status.h"

#define MAX_SETS 8

/* dt_job_write's text of job (heap, NUL-terminated; *len its length). */
static char *
job_text(const struct dt_job *job, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	struct dt_error err;
	enum dt_status st;

	dt_fuzz_check(f != NULL, "open_memstream failed");
	st = dt_job_write(job, f, &err);
	dt_fuzz_check(fclose(f) == 0, "fclose of a memory stream failed");
	dt_fuzz_check(st == DT_OK, "dt_job_write failed on a parsed job");
	return buf;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dt_job *job = calloc(1, sizeof *job);
	struct dt_job *again = calloc(1, sizeof *again);
	struct dt_error err;
	enum dt_status st;
	char *t1, *t2;
	size_t n1, n2;

	const char *text = (const char *)data;
	const char *nul = memchr(text, '\0', size);
	size_t len = nul != NULL ? (size_t)(nul - text) : size;
	char *sets_buf = NULL;
	const char *sets[MAX_SETS];
	int n_sets = 0;

	dt_fuzz_check(job != NULL && again != NULL, "out of memory");
	if (nul != NULL) {
		/* The pieces after the first NUL, each NUL-terminated. */
		size_t rest = size - len - 1;
		char *p;

		sets_buf = malloc(rest + 1);
		dt_fuzz_check(sets_buf != NULL, "out of memory");
		memcpy(sets_buf, nul + 1, rest);
		sets_buf[rest] = '\0';
		for (p = sets_buf; n_sets < MAX_SETS && p <= sets_buf + rest;
		     p += strlen(p) + 1)
			sets[n_sets++] = p;
	}
	dt_error_clear(&err);
	st = dt_job_parse("/fuzz/job.yaml", text, len, sets, n_sets, job,
			  &err);
	dt_fuzz_check(st == DT_OK || st == DT_ERR_JOB,
		      "dt_job_parse returned neither DT_OK nor DT_ERR_JOB");
	dt_fuzz_check(st == DT_OK || err.msg[0] != '\0',
		      "dt_job_parse failed without a message");
	if (st == DT_OK) {
		t1 = job_text(job, &n1);
		st = dt_job_parse("/fuzz/job.yaml", t1, n1, NULL, 0, again,
				  &err);
		if (st != DT_OK)
			fprintf(stderr, "fuzz: the written job does not parse:"
				"\n%s\n---\n%s\n", err.msg, t1);
		dt_fuzz_check(st == DT_OK, "a written job does not read back");
		t2 = job_text(again, &n2);
		dt_fuzz_check(n1 == n2 && memcmp(t1, t2, n1) == 0,
			      "a written job reads back to another job");
		free(t1);
		free(t2);
	}
	free(sets_buf);
	free(job);
	free(again);
	return 0;
}
