/* SPDX-License-Identifier: MIT */
/* fingerprint.c - the job as text in memory, and its SHA-256 (FIPS 180-4)
 * fingerprint: what ranks compare to prove they hold the same job
 * (train/agree.c). The text is dt_job_write's, which holds every resolved
 * value and none of the positions or the file's name. */
#include "job/job.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

enum dt_status
dt_job_text(const struct dt_job *job, char **text, size_t *len,
	    struct dt_error *err)
{
	char *buf = NULL;
	size_t n = 0;
	enum dt_status st;
	FILE *f = open_memstream(&buf, &n);

	*text = NULL;
	*len = 0;
	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "cannot write the job to "
				 "memory: %s", strerror(errno));
	st = dt_job_write(job, f, err);
	if (fclose(f) != 0 && st == DT_OK)
		st = dt_errorf(err, DT_ERR_IO, "cannot write the job to "
			       "memory: %s", strerror(errno));
	if (st != DT_OK) {
		free(buf);
		return st;
	}
	*text = buf;
	*len = n;
	return DT_OK;
}

enum dt_status
dt_job_fingerprint(const struct dt_job *job, unsigned char out[32],
		   char hex[65], struct dt_error *err)
{
	unsigned int md_len = 0;
	enum dt_status st;
	size_t len;
	char *text;
	int i, ok;

	st = dt_job_text(job, &text, &len, err);
	if (st != DT_OK)
		return st;
	ok = EVP_Digest(text, len, out, &md_len, EVP_sha256(), NULL) == 1 &&
	     md_len == 32;
	free(text);
	if (!ok)
		return dt_errorf(err, DT_ERR_IO, "cannot hash the job: "
				 "OpenSSL's SHA-256 failed");
	if (hex != NULL) {
		for (i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", out[i]);
		hex[64] = '\0';
	}
	return DT_OK;
}
