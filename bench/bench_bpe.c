/* SPDX-License-Identifier: MIT */
/* bench_bpe.c - how fast a byte-level BPE (data/bpe.h) encodes, on one
 * core.
 *
 *   bench_bpe TOKENIZER TEXT [REPEATS]
 *
 * Reads TEXT into memory, encodes it REPEATS times (default 5) with the
 * tokenizer and prints the text's size, the tokens, bytes per token and
 * the median MB/s (10^6 bytes of text per second) of the runs, the first
 * (cold word cache) among them. One thread: the encoder is not shared
 * between threads. A benchmark: it asserts nothing but that every run
 * gives the same number of tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "data/bpe.h"
#include "util/alloc.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int
by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int
main(int argc, char **argv)
{
	struct dt_bpe *b;
	struct dt_error err;
	unsigned char *text;
	int32_t *ids;
	double *mbs;
	int64_t n_ids = 0, first = -1;
	long size;
	int repeats = argc > 3 ? atoi(argv[3]) : 5;
	FILE *f;

	if (argc < 3 || repeats < 1) {
		fprintf(stderr, "usage: bench_bpe TOKENIZER TEXT [REPEATS]\n");
		return 2;
	}
	if (dt_bpe_load(argv[1], &b, &err) != DT_OK) {
		fprintf(stderr, "bench_bpe: %s\n", err.msg);
		return 1;
	}
	f = fopen(argv[2], "rb");
	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "bench_bpe: %s: cannot read\n", argv[2]);
		return 1;
	}
	text = dt_xmalloc((size_t)size + 1, 1);
	ids = dt_xmalloc((size_t)size + 1, sizeof *ids);
	mbs = dt_xmalloc((size_t)repeats, sizeof *mbs);
	if (fread(text, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "bench_bpe: %s: short read\n", argv[2]);
		return 1;
	}
	fclose(f);
	for (int r = 0; r < repeats; r++) {
		double t0 = now();

		if (dt_bpe_encode(b, text, (size_t)size, ids, &n_ids, &err) !=
		    DT_OK) {
			fprintf(stderr, "bench_bpe: %s\n", err.msg);
			return 1;
		}
		mbs[r] = (double)size / 1e6 / (now() - t0);
		if (first >= 0 && n_ids != first) {
			fprintf(stderr, "bench_bpe: run %d gave %lld tokens, "
				"run 0 %lld\n", r, (long long)n_ids,
				(long long)first);
			return 1;
		}
		first = n_ids;
	}
	qsort(mbs, (size_t)repeats, sizeof *mbs, by_value);
	printf("%ld bytes, %lld tokens (%.2f bytes/token), %d runs: "
	       "median %.1f MB/s, slowest %.1f MB/s\n", size,
	       (long long)n_ids, (double)size / (double)(n_ids ? n_ids : 1),
	       repeats, mbs[repeats / 2], mbs[0]);
	free(text);
	free(ids);
	free(mbs);
	dt_bpe_free(b);
	return 0;
}
