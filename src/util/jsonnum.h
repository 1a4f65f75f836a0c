/* SPDX-License-Identifier: MIT */
/* jsonnum.h - numbers for the JSON dtrain writes. */
#ifndef DT_UTIL_JSONNUM_H
#define DT_UTIL_JSONNUM_H

struct json_object;

/* All three return a new json-c number (the caller, or the container it
 * is added to, owns it), or NULL (which json-c writes as null) when v is
 * NaN or infinite: JSON (RFC 8259 section 6) has no such numbers, and the
 * bare NaN json-c would otherwise write is refused by strict parsers. A
 * whole number keeps a ".0" so that readers take it for a float. */

/* For a double that is exact arithmetic (FLOP counts, bytes, a modelled
 * step time): the fewest significant digits (at most 17) that read back
 * as the same double (0.1, not json-c's 0.10000000000000001). */
struct json_object *dt_json_number(double v);

/* For a value computed in float32 or meaningful only to float32
 * precision (a loss, an accuracy, the learning rate, a gradient norm, a
 * throughput): the fewest significant digits (at most 9, FLT_DECIMAL_DIG)
 * that read back as the same float32, (float)v, whether read straight to
 * a float or to a double and then rounded to float (0.4523451, not
 * 0.45234512417018414). A value beyond the float range is written as the
 * double's shortest text instead of overflowing to null. */
struct json_object *dt_json_float(double v);

/* For a measured time in seconds: fixed to the microsecond, "%.6f"
 * (12.345679, 0.000123, 1234567.000000): a log window of a small model
 * lasts a few milliseconds, and timer noise makes finer digits
 * meaningless. */
struct json_object *dt_json_seconds(double v);

#endif
