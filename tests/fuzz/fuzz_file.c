/* SPDX-License-Identifier: MIT */
/* fuzz_file.c - scratch files for the fuzz targets whose readers take a
 * path (see fuzz.h). */
#include "fuzz.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SLOTS 4

/* The paths are a pure function of the process and the slot; the static
 * buffers only keep the returned strings alive. */
static char paths[SLOTS][512];

static const char *
scratch_dir(void)
{
	const char *d = getenv("DTRAIN_FUZZ_TMP");

	if (d == NULL || *d == '\0')
		d = getenv("TMPDIR");
	if (d == NULL || *d == '\0')
		d = "/tmp";
	return d;
}

static void
remove_files(void)
{
	for (int i = 0; i < SLOTS; i++)
		if (paths[i][0] != '\0')
			unlink(paths[i]);
}

const char *
dt_fuzz_file(int slot, const void *data, size_t size)
{
	const char *p = data;
	int fd, first = 1;

	if (slot < 0 || slot >= SLOTS)
		abort();
	for (int i = 0; i < SLOTS; i++)
		if (paths[i][0] != '\0')
			first = 0;
	if (paths[slot][0] == '\0')
		snprintf(paths[slot], sizeof paths[slot], "%s/dtrain-fuzz-%ld-%d",
			 scratch_dir(), (long)getpid(), slot);
	if (first)
		atexit(remove_files);
	fd = open(paths[slot], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(paths[slot]);
		abort();
	}
	while (size > 0) {
		ssize_t w = write(fd, p, size);

		if (w <= 0) {
			perror(paths[slot]);
			abort();
		}
		p += w;
		size -= (size_t)w;
	}
	if (close(fd) != 0) {
		perror(paths[slot]);
		abort();
	}
	return paths[slot];
}

void
dt_fuzz_check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz: %s\n", what);
		abort();
	}
}
