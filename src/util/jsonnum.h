/* SPDX-License-Identifier: MIT */
/* jsonnum.h - numbers for the JSON dtrain writes. */
#ifndef DT_UTIL_JSONNUM_H
#define DT_UTIL_JSONNUM_H

struct json_object;

/* A json-c number for v, or NULL (which json-c writes as null) when v is
 * NaN or infinite: JSON (RFC 8259 section 6) has no such numbers, and the
 * bare NaN json-c would otherwise write is refused by strict parsers.
 * Written in the fewest significant digits that read back as the same
 * double (0.1, not json-c's 0.10000000000000001). The object is new
 * (the caller, or the container it is added to, owns it). */
struct json_object *dt_json_number(double v);

/* As dt_json_number, for a measured time or rate, where digits past the
 * sixth are noise: written with "%.6g" (12.3457, 0.000123457). */
struct json_object *dt_json_seconds(double v);

#endif
