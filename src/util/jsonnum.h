/* SPDX-License-Identifier: MIT */
/* jsonnum.h - numbers for the JSON dtrain writes. */
#ifndef DT_UTIL_JSONNUM_H
#define DT_UTIL_JSONNUM_H

struct json_object;

/* A json-c number for v, or NULL (which json-c writes as null) when v is
 * NaN or infinite: JSON (RFC 8259 section 6) has no such numbers, and the
 * bare NaN json-c would otherwise write is refused by strict parsers. The
 * object is new (the caller, or the container it is added to, owns it). */
struct json_object *dt_json_number(double v);

#endif
