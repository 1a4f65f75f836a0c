/* fuzz_job.c - the job parser (dt_job_parse) on arbitrary YAML.
 *
 * Any text must give DT_OK or DT_ERR_JOB with a message, never a crash;
 * a job that parses must write (dt_job_write) YAML that parses again and
 * writes the same text again: the resolved job a run stores in its run
 * directory is what resume and export read back. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/job.h"
#include "util/status.h"

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

	dt_fuzz_check(job != NULL && again != NULL, "out of memory");
	dt_error_clear(&err);
	st = dt_job_parse("/fuzz/job.yaml", (const char *)data, size, NULL, 0,
			  job, &err);
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
	free(job);
	free(again);
	return 0;
}
