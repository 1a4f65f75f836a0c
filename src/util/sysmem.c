/* SPDX-License-Identifier: MIT */
/* sysmem.c - memory this process may still take (see sysmem.h). */
#include "util/sysmem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first integer in the file at path into *v; 0 on success, -1 if the
 * file is missing or holds none (cgroup v2 writes "max" for no limit). */
static int
read_i64(const char *path, int64_t *v)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (f == NULL)
		return -1;
	ok = fscanf(f, "%" SCNd64, v) == 1;
	fclose(f);
	return ok && *v >= 0 ? 0 : -1;
}

/* MemAvailable in bytes, or -1. */
static int64_t
node_available(void)
{
	char line[256];
	int64_t kb = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "MemAvailable: %" SCNd64 " kB", &kb) == 1)
			break;
	fclose(f);
	return kb >= 0 && kb < INT64_MAX / 1024 ? kb * 1024 : -1;
}

/* This process's cgroup v2 directory (from the "0::PATH" line of
 * /proc/self/cgroup) into dir; 0 on success. */
static int
cgroup2_dir(char *dir, size_t size)
{
	char line[1024];
	int found = -1;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if ((size_t)snprintf(dir, size, "/sys/fs/cgroup%s", line + 3) <
		    size)
			found = 0;
		break;
	}
	fclose(f);
	return found;
}

/* The cgroup's limit less its usage, or -1 if there is no limit. */
static int64_t
cgroup_available(void)
{
	char dir[1024], path[1100];
	int64_t limit, used;

	if (cgroup2_dir(dir, sizeof dir) == 0) {
		snprintf(path, sizeof path, "%s/memory.max", dir);
		if (read_i64(path, &limit) == 0) {
			snprintf(path, sizeof path, "%s/memory.current", dir);
			if (read_i64(path, &used) != 0)
				used = 0;
			return limit > used ? limit - used : 0;
		}
	}
	if (read_i64("/sys/fs/cgroup/memory/memory.limit_in_bytes",
		     &limit) == 0 && limit < INT64_MAX / 2) {
		/* v1 writes a huge page-aligned number for no limit. */
		if (read_i64("/sys/fs/cgroup/memory/memory.usage_in_bytes",
			     &used) != 0)
			used = 0;
		return limit > used ? limit - used : 0;
	}
	return -1;
}

int
dt_sysmem_available(int64_t *avail, const char **limit_kind)
{
	const char *test = getenv("DTRAIN_TEST_MEM_AVAILABLE");
	int64_t node, group;

	/* Test aid, documented in dtrain(1): pretend the node has this
	 * many bytes free. */
	if (test != NULL && *test != '\0') {
		char *end;
		long long v = strtoll(test, &end, 10);

		if (*end == '\0' && v >= 0) {
			*avail = (int64_t)v;
			*limit_kind = "node";
			return 0;
		}
	}
	node = node_available();
	group = cgroup_available();

	if (node < 0 && group < 0)
		return -1;
	if (group >= 0 && (node < 0 || group < node)) {
		*avail = group;
		*limit_kind = "cgroup";
	} else {
		*avail = node;
		*limit_kind = "node";
	}
	return 0;
}
