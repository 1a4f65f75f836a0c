/* SPDX-License-Identifier: MIT */
/* keys.h - job/ only: what keys.c reads from the tables: key lookup,
 * type and range texts, "did you mean", the keys of a section or type. */
#ifndef DT_JOB_KEYS_H
#define DT_JOB_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job/schema.h"

/* The UTF-8 character at s (n > 0 bytes left): its length in bytes
 * (1 to 4) with the code point in *cp, or 0 when the bytes there are not
 * well-formed UTF-8 (a bad lead or continuation byte, a truncated,
 * overlong or surrogate sequence, or past U+10FFFF), as libyaml judges
 * its input (RFC 3629, section 4). */
int dt_job_utf8_char(const unsigned char *s, size_t n, uint32_t *cp);
/* Whether libyaml takes code point cp raw in a double-quoted scalar (its
 * "printable" set, YAML 1.1 section 5.1); others must be escaped. */
bool dt_job_yaml_printable(uint32_t cp);

/* Index of key in dt_job_schema (sections included), or -1. */
int dt_job_schema_find(const char *key);
/* Index of leaf ("units") in dt_job_layer_schema, or -1. */
int dt_job_layer_key_find(const char *leaf);
/* The row of layer's type (by kind and activation); never NULL. */
const struct dt_layer_type *dt_job_layer_type(const struct dt_layer_spec *l);
/* Whether key k is used with the job's current values of the keys it
 * depends on (k->when); true for keys without `when`. */
bool dt_job_key_applies(const struct dt_job *job, const struct dt_key *k);
/* Index among the DT_KEY_SOURCE rows (origin.source) of schema row ki. */
int dt_job_source_slot(int ki);
/* Optimal string alignment distance between a and b; large when either
 * is longer than 96 bytes. */
int dt_job_distance(const char *a, const char *b);
/* The largest distance at which a word of len bytes gets a suggestion. */
int dt_job_suggest_limit(size_t len);
/* Writes the known key closest to the unknown key into buf ("" when none is
 * close enough). Layer keys are matched with key's own layer index. */
void dt_job_suggest(const char *key, char *buf, size_t size);
/* The keys directly under prefix ("train", "" for the top, a data source
 * such as "data.train.images", or "model.layers.N"), comma-separated, into
 * buf. */
void dt_job_section_keys(const char *prefix, char *buf, size_t size);
/* The keys a layer type takes, in schema order, comma-separated. */
void dt_job_type_keys(const struct dt_layer_type *t, char *buf, size_t size);
/* The values of k->when that k is used with: "csv", "idx, npy". */
void dt_job_when_text(const struct dt_key *k, char *buf, size_t size);
/* "a number", "an integer", "one of sgd, adam, adamw", ... */
void dt_job_type_text(const struct dt_key *k, char *buf, size_t size);
/* "> 0", ">= 1", "in [0, 1)", "in {2, 4}"; "" when k has no range. */
void dt_job_range_text(const struct dt_key *k, char *buf, size_t size);

#endif
