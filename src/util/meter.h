/* SPDX-License-Identifier: MIT */
/* meter.h - how a long read says how far it got (data/ reading a gzip
 * IDX file, a large NPY, CSV or text file) to whoever shows progress
 * (train/progress.h's line), without data/ knowing of terminals.
 *
 * The meter in use is the calling thread's, set around the loading by
 * the code that shows progress (as errno is the thread's): one pointer
 * per thread rather than a parameter through every reader and the
 * source layer above them. It changes nothing but what is drawn. */
#ifndef DT_UTIL_METER_H
#define DT_UTIL_METER_H

#include <stdint.h>

struct dt_meter {
	/* A task of total units (bytes) begins: what names it ("read
	 * train-images-idx3-ubyte.gz"); done units of it so far; it ended. */
	void (*begin)(void *ctx, const char *what, int64_t total);
	void (*update)(void *ctx, int64_t done);
	void (*end)(void *ctx);
	void *ctx;
};

/* Makes m (not copied: it must outlive its use; NULL: none) this
 * thread's meter and returns the one it replaces, for the caller to put
 * back. */
const struct dt_meter *dt_meter_use(const struct dt_meter *m);

/* What the readers call; each does nothing without a meter. The name
 * shown is "VERB BASENAME" ("read t10k-images-idx3-ubyte.gz") from path;
 * total and done count bytes (of the file, or of the text parsed). */
void dt_meter_begin(const char *verb, const char *path, int64_t total);
void dt_meter_update(int64_t done);
void dt_meter_end(void);

#endif
