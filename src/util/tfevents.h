/* SPDX-License-Identifier: MIT */
/* tfevents.h - TensorBoard event files with scalar summaries.
 *
 * An event file is a sequence of TFRecord records (TensorFlow's
 * tensorflow/core/lib/io/record_writer and its format note): each record
 * is a little-endian uint64 length, the masked CRC-32C of those 8 bytes,
 * the payload, and the masked CRC-32C of the payload, where mask(c) =
 * ((c >> 15) | (c << 17)) + 0xa282ead8. Each payload is an Event protocol
 * buffer (tensorflow/core/util/event.proto): wall_time (field 1, double),
 * step (2, varint) and either file_version (3, "brain.Event:2", the first
 * record) or a Summary (5) of Values with tag (1) and simple_value (2,
 * float). Protocol-buffer wire format: developers.google.com/protocol-
 * buffers/docs/encoding. CRC-32C: RFC 3720 appendix B.4 (Castagnoli). */
#ifndef DT_UTIL_TFEVENTS_H
#define DT_UTIL_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

struct dt_tfevents;

/* Creates DIR/events.out.tfevents.SECONDS.HOST.PID (TensorBoard reads
 * every such file in the directory, so a resumed run adds a file beside
 * the first) and writes its file_version record. DIR must exist.
 * On success *out owns the open file (dt_tfevents_close). Errors: DT_ERR_IO
 * naming the path; *out is then NULL. */
enum dt_status dt_tfevents_open(const char *dir, struct dt_tfevents **out,
				struct dt_error *err);

/* Appends one Event holding one scalar: tag (UTF-8, at most 255 bytes),
 * at step (>= 0), wall_time in seconds since the Unix epoch, value as a
 * float (TensorBoard's simple_value is 32-bit). The record is flushed to
 * the kernel before returning, so a reader sees whole records. Errors:
 * DT_ERR_IO "PATH: write failed: REASON" (a full disk); the file may then
 * end in a partial record, which TensorBoard skips by its CRC. */
enum dt_status dt_tfevents_scalar(struct dt_tfevents *w, const char *tag,
				  int64_t step, double wall_time, double value,
				  struct dt_error *err);

/* The path of the file w writes (owned by w). */
const char *dt_tfevents_path(const struct dt_tfevents *w);

/* Closes the file; accepts NULL. Returns DT_ERR_IO if the close fails. */
enum dt_status dt_tfevents_close(struct dt_tfevents *w, struct dt_error *err);

/* CRC-32C of n bytes at p, continuing from crc (0 to start). */
uint32_t dt_crc32c(uint32_t crc, const void *p, size_t n);

/* The TFRecord mask of a CRC-32C. */
uint32_t dt_crc32c_mask(uint32_t crc);

#endif
