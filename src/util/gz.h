/* SPDX-License-Identifier: MIT */
/* gz.h - what zlib's gz* interface (zlib.h, "gzip file access
 * functions") reports, in dtrain's terms: a short or failed gzread becomes
 * a status naming the file and the byte offset, a failed gzclose_r a close
 * error, and zlib running out of memory an abort (STYLE.md: out of memory
 * aborts, wherever it happens). */
#ifndef DT_UTIL_GZ_H
#define DT_UTIL_GZ_H

#include <stdint.h>

#include <zlib.h>

#include "util/status.h"

/* The status of gzip stream f, the file path, after a gzread that
 * returned short or failed at decompressed byte off (saved_errno: errno
 * right after that gzread). zlib reports a cut or corrupt stream through
 * gzerror, not the byte count, so callers ask after every short read.
 * DT_OK when zlib reports no error (a clean end); DT_ERR_IO "PATH: byte
 * OFF: read failed: <strerror(saved_errno)>" when reading the file
 * failed; DT_ERR_FORMAT "PATH: byte OFF: truncated gzip stream: <zlib's
 * words> (the .gz file is cut short; fetch it again)" when the input ends
 * inside a gzip member, or "PATH: byte OFF: corrupt gzip stream: <zlib's
 * words> (FIX)" for any other zlib error (fix: what the reader advises,
 * e.g. "fetch the file again"). Aborts when zlib ran out of memory. */
enum dt_status dt_gz_read_status(gzFile f, const char *path, int64_t off,
				 int saved_errno, const char *fix,
				 struct dt_error *err);

/* Closes f (gzclose_r), the file path. Returns st when it is already a
 * failure; else DT_ERR_IO "PATH: close failed: ..." when the close
 * failed, or DT_OK. */
enum dt_status dt_gz_close(gzFile f, const char *path, enum dt_status st,
			   struct dt_error *err);

/* Says "dtrain: PATH: zlib out of memory" on stderr and aborts: for a
 * gzopen or gzdopen that returned NULL with errno 0. */
_Noreturn void dt_gz_oom(const char *path);

#endif
