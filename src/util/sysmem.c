/* SPDX-License-Identifier: MIT */
/* sysmem.c - memory this process may still take, and its peak (see
 * sysmem.h). */
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

/* Whether word is one of the comma-separated words of list. */
static int
has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p != NULL; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	}
	return 0;
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

/* This process's cgroup in the hierarchy of /proc/self/cgroup whose
 * line is "0::PATH" (v2, controller NULL) or "N:LIST:PATH" with
 * controller in LIST (v1), as mount/PATH into dir; 0 on success. */
static int
cgroup_dir(const char *controller, const char *mount, char *dir,
	   size_t size)
{
	char line[1024];
	int found = -1;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (f == NULL)
		return -1;
	while (found != 0 && fgets(line, sizeof line, f) != NULL) {
		char *list = strchr(line, ':'), *path;

		if (list == NULL || (path = strchr(list + 1, ':')) == NULL)
			continue;
		*path++ = '\0';
		list++;
		path[strcspn(path, "\n")] = '\0';
		if (controller == NULL ? strcmp(line, "0") != 0 ||
		    *list != '\0' : !has_word(list, controller))
			continue;
		if ((size_t)snprintf(dir, size, "%s%s", mount,
				     strcmp(path, "/") == 0 ? "" : path) <
		    size)
			found = 0;
	}
	fclose(f);
	return found;
}

/* The least of limit less usage over dir and the directories above it
 * up to mount (a limit binds the groups below it too; files limit_file
 * and usage_file in each, a limit that v1 writes as a huge number for
 * none, or v2 as "max", counting as none), or -1 when none has one. */
static int64_t
least_room(char *dir, const char *mount, const char *limit_file,
	   const char *usage_file)
{
	char path[1100];
	int64_t room = -1, limit, used;
	size_t top = strlen(mount);

	for (;;) {
		snprintf(path, sizeof path, "%s/%s", dir, limit_file);
		if (read_i64(path, &limit) == 0 && limit < INT64_MAX / 2) {
			snprintf(path, sizeof path, "%s/%s", dir, usage_file);
			if (read_i64(path, &used) != 0)
				used = 0;
			if (room < 0 || limit - used < room)
				room = limit > used ? limit - used : 0;
		}
		if (strlen(dir) <= top)
			break;
		*strrchr(dir, '/') = '\0';
	}
	return room;
}

/* The cgroup's limit less its usage, the least over the groups above it,
 * or -1 if there is no limit. */
static int64_t
cgroup_available(void)
{
	char dir[1024];
	int64_t room = -1;

	if (cgroup_dir(NULL, "/sys/fs/cgroup", dir, sizeof dir) == 0)
		room = least_room(dir, "/sys/fs/cgroup", "memory.max",
				  "memory.current");
	if (room < 0 && cgroup_dir("memory", "/sys/fs/cgroup/memory", dir,
				   sizeof dir) == 0)
		room = least_room(dir, "/sys/fs/cgroup/memory",
				  "memory.limit_in_bytes",
				  "memory.usage_in_bytes");
	return room;
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

int
dt_sysmem_peak_resident(int64_t *bytes)
{
	char line[256];
	int64_t kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "VmHWM: %" SCNd64 " kB", &kb) == 1)
			break;
	fclose(f);
	if (kb < 0 || kb >= INT64_MAX / 1024)
		return -1;
	*bytes = kb * 1024;
	return 0;
}
