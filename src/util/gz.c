/* SPDX-License-Identifier: MIT */
/* gz.c - zlib's gz* errors as dtrain statuses (see gz.h). */
#include "util/gz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum dt_status
dt_gz_read_status(gzFile f, const char *path, int64_t off, int saved_errno,
		  const char *fix, struct dt_error *err)
{
	int zerr = Z_OK;
	const char *zmsg = gzerror(f, &zerr);
	size_t plen = strlen(path);

	/* zlib writes "PATH: what"; our message names the path already. */
	if (strncmp(zmsg, path, plen) == 0 &&
	    strncmp(zmsg + plen, ": ", 2) == 0)
		zmsg += plen + 2;
	switch (zerr) {
	case Z_OK:
		return DT_OK;
	case Z_ERRNO:
		return dt_errorf(err, DT_ERR_IO, "%s: byte %lld: read failed: %s",
				 path, (long long)off, strerror(saved_errno));
	case Z_BUF_ERROR:
		/* zlib's word for input that ends inside a gzip member. */
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %lld: truncated "
				 "gzip stream: %s (the .gz file is cut short; "
				 "fetch it again)", path, (long long)off, zmsg);
	case Z_MEM_ERROR:
		dt_gz_oom(path);
	default:
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %lld: corrupt "
				 "gzip stream: %s (%s)", path, (long long)off,
				 zmsg, fix);
	}
}

enum dt_status
dt_gz_close(gzFile f, const char *path, enum dt_status st,
	    struct dt_error *err)
{
	int zc = gzclose_r(f);

	if (st == DT_OK && zc != Z_OK)
		st = dt_errorf(err, DT_ERR_IO, "%s: close failed: %s", path,
			       zc == Z_ERRNO ? strerror(errno) : zError(zc));
	return st;
}

void
dt_gz_oom(const char *path)
{
	fprintf(stderr, "dtrain: %s: zlib out of memory\n", path);
	abort();
}
