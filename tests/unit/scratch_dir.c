/* SPDX-License-Identifier: MIT */
/* scratch_dir.c - the flat temporary directory of a unit suite
 * (scratch_dir.h), written once for the suites that share it. */
#include "scratch_dir.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void
scratch_dir_make(char *dir, size_t size, const char *suite)
{
	const char *base = getenv("TMPDIR");

	if (base == NULL || *base == '\0')
		base = "/tmp";
	if (snprintf(dir, size, "%s/dtrain-test-%s-XXXXXX", base, suite) >=
	    (int)size) {
		fprintf(stderr, "test_%s: TMPDIR is too long\n", suite);
		abort();
	}
	if (mkdtemp(dir) == NULL) {
		perror(dir);
		abort();
	}
}

void
scratch_dir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX + 300];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}
