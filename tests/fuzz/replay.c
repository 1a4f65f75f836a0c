/* SPDX-License-Identifier: MIT */
/* replay.c - a main for a fuzz target without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on each file given, or, with no argument,
 * on every file of $top_srcdir/tests/fuzz/corpus/NAME/ and
 * $top_srcdir/tests/fuzz/regress/NAME/ (NAME is DT_FUZZ_NAME, set by
 * tests/fuzz/local.mk). make check runs it that way, so every seed and
 * every input that once crashed a reader passes on each build, with gcc
 * and without the fuzzer. Exit 0 when every input ran (at least one
 * seed), 1 when a file cannot be read or none was found; a crash is the
 * target's own abort or a sanitizer's report. */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef DT_FUZZ_NAME
#error "DT_FUZZ_NAME names the target (tests/fuzz/local.mk sets it)"
#endif

/* Runs the target on the file at path; 0, or -1 if it cannot be read. */
static int
replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t n = 0, cap = 0;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	for (;;) {
		size_t got;

		if (cap - n < 4096) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap);
			if (buf == NULL) {
				fclose(f);
				return -1;
			}
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		perror(path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir, in name order; adds their number to
 * *count. A missing dir counts nothing. 0, or -1 on a read error. */
static int
replay_dir(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof *names);
			if (names == NULL)
				abort();
		}
		names[n] = strdup(e->d_name);
		if (names[n] == NULL)
			abort();
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof *names, by_name);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		struct stat sb;

		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
			if (replay_file(path) != 0)
				rc = -1;
			(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	char dir[4096];
	int count = 0, rc = 0;

	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (replay_file(argv[i]) != 0)
				rc = 1;
		return rc;
	}
	if (top == NULL)
		top = ".";
	snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", top,
		 DT_FUZZ_NAME);
	if (replay_dir(dir, &count) != 0)
		rc = 1;
	if (count == 0) {
		fprintf(stderr, "%s: no seed inputs\n", dir);
		return 1;
	}
	snprintf(dir, sizeof dir, "%s/tests/fuzz/regress/%s", top,
		 DT_FUZZ_NAME);
	if (replay_dir(dir, &count) != 0)
		rc = 1;
	printf("%s: %d inputs replayed\n", DT_FUZZ_NAME, count);
	return rc;
}
