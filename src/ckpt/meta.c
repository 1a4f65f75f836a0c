/* SPDX-License-Identifier: MIT */
/* meta.c - the two JSON files of a checkpoint, written and read with
 * json-c: meta.json (struct dt_ckpt_meta) and MANIFEST.json (every file
 * with its size and CRC-32). Readers check every key: each one known,
 * present and of its type, integers exact in int64_t, no unknown keys.
 *
 * meta.json, version 1:
 *   {"format": "dtrain-checkpoint-meta", "version": 1, "step": 120,
 *    "epoch": 2, "epoch_samples": 3840, "optim_steps": 120, "seed": 42,
 *    "world_size": 4, "dp_size": 4, "pp_size": 1, "tp_size": 1,
 *    "extra": {"n": {"type": "int64", "value": 5},
 *              "loss_sum": {"type": "double", "bits": "3ff8000000000000",
 *                           "value": 1.5}},
 *    "run_id": "9f0c...", "run_dir": "/home/me/runs/mnist",
 *    "job": "name: mnist\n..."}
 * run_id and run_dir name the run the checkpoint belongs to; both are
 * absent in a checkpoint of an older dtrain (which every reader takes).
 * A double's 64 bits are authoritative; "value" is for people only (and
 * left out when not finite).
 *
 * MANIFEST.json, version 1:
 *   {"format": "dtrain-checkpoint", "version": 1, "step": 120,
 *    "files": [{"name": "params.safetensors", "size": 4200,
 *               "crc32": "1a2b3c4d"}, ...]} */
#include "ckpt/ckpt_priv.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

#define META_FORMAT "dtrain-checkpoint-meta"
#define MANIFEST_FORMAT "dtrain-checkpoint"

/* ---- JSON helpers ------------------------------------------------------- */

enum dt_status
dt_ck_json_parse(const char *text, size_t len, const char *label,
		 json_object **out, struct dt_error *err)
{
	json_tokener *tok;
	json_object *obj;
	enum json_tokener_error jerr;
	size_t end;

	*out = NULL;
	if (len > (size_t)DT_CK_JSON_MAX * 2)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: too large", label);
	tok = json_tokener_new();
	if (tok == NULL) {
		fprintf(stderr, "dtrain: out of memory in json-c\n");
		abort();
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
			       JSON_TOKENER_ALLOW_TRAILING_CHARS);
	obj = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (obj == NULL || jerr != json_tokener_success) {
		json_object_put(obj);
		return dt_errorf(err, DT_ERR_FORMAT, "%s: invalid JSON at byte "
				 "%zu: %s", label, end,
				 jerr == json_tokener_continue ?
				 "unexpected end" :
				 json_tokener_error_desc(jerr));
	}
	for (; end < len; end++) {
		if (strchr(" \t\r\n", text[end]) == NULL) {
			json_object_put(obj);
			return dt_errorf(err, DT_ERR_FORMAT, "%s: unexpected "
					 "text after the JSON value at byte %zu",
					 label, end);
		}
	}
	*out = obj;
	return DT_OK;
}

/* json-c clamps integers that do not fit; printing the value back and
 * comparing with the text json-c would write catches that. */
int
dt_ck_json_int64(json_object *v, int64_t *out)
{
	char buf[32];

	if (!json_object_is_type(v, json_type_int))
		return 0;
	*out = json_object_get_int64(v);
	snprintf(buf, sizeof buf, "%" PRId64, *out);
	return strcmp(buf, json_object_to_json_string(v)) == 0;
}

static int
json_uint64(json_object *v, uint64_t *out)
{
	char buf[32];

	if (!json_object_is_type(v, json_type_int))
		return 0;
	*out = json_object_get_uint64(v);
	snprintf(buf, sizeof buf, "%" PRIu64, *out);
	return strcmp(buf, json_object_to_json_string(v)) == 0;
}

static int
parse_hex(const char *s, int digits, uint64_t *out)
{
	uint64_t v = 0;

	for (int i = 0; i < digits; i++) {
		char c = s[i];
		int d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return 0;
		v = v << 4 | (uint64_t)d;
	}
	if (s[digits] != '\0')
		return 0;
	*out = v;
	return 1;
}

int
dt_ck_parse_crc(const char *s, uint32_t *out)
{
	uint64_t v;

	if (!parse_hex(s, 8, &v))
		return 0;
	*out = (uint32_t)v;
	return 1;
}

static const char *
type_name(json_object *v)
{
	return v == NULL ? "null" : json_type_to_name(json_object_get_type(v));
}

/* Fetches key from obj as an integer in [lo, hi]. */
static enum dt_status
get_int(json_object *obj, const char *label, const char *key, int64_t lo,
	int64_t hi, int64_t *out, struct dt_error *err)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: %s: missing", label,
				 key);
	if (!dt_ck_json_int64(v, out))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: %s: expected an "
				 "integer, found %s", label, key,
				 json_object_is_type(v, json_type_int) ?
				 json_object_to_json_string(v) :
				 type_name(v));
	if (*out < lo || *out > hi)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: %s: %" PRId64 " is "
				 "out of range [%" PRId64 ", %" PRId64 "]",
				 label, key, *out, lo, hi);
	return DT_OK;
}

static enum dt_status
get_string(json_object *obj, const char *label, const char *key,
	   const char **out, struct dt_error *err)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: %s: missing", label,
				 key);
	if (!json_object_is_type(v, json_type_string))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: %s: expected a "
				 "string, found %s", label, key, type_name(v));
	*out = json_object_get_string(v);
	return DT_OK;
}

/* Every key of obj must be one of keys (a NULL-terminated list). */
static enum dt_status
only_keys(json_object *obj, const char *label, const char *const *keys,
	  struct dt_error *err)
{
	json_object_object_foreach(obj, key, val) {
		size_t i;

		(void)val;
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], key) == 0)
				break;
		if (keys[i] == NULL)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: unknown key "
					 "\"%s\"", label, key);
	}
	return DT_OK;
}

/* Checks format and version of a dtrain JSON file. */
static enum dt_status
check_header(json_object *root, const char *label, const char *format,
	     struct dt_error *err)
{
	const char *s;
	int64_t version;
	enum dt_status st;

	if (!json_object_is_type(root, json_type_object))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: expected a JSON "
				 "object", label);
	st = get_string(root, label, "format", &s, err);
	if (st != DT_OK)
		return st;
	if (strcmp(s, format) != 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: format is \"%s\", "
				 "expected \"%s\"", label, s, format);
	st = get_int(root, label, "version", 0, INT64_MAX, &version, err);
	if (st != DT_OK)
		return st;
	if (version != DT_CK_FORMAT_VERSION)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: version %" PRId64
				 " is not supported (this dtrain reads "
				 "version %d)", label, version,
				 DT_CK_FORMAT_VERSION);
	return DT_OK;
}

static char *
to_text(json_object *root)
{
	const char *s = json_object_to_json_string_ext(
		root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(s);
	char *text = dt_xmalloc(len + 2, 1);

	memcpy(text, s, len);
	text[len] = '\n';
	text[len + 1] = '\0';
	json_object_put(root);
	return text;
}

/* ---- meta.json ---------------------------------------------------------- */

static int
valid_key(const char *key)
{
	size_t len = strnlen(key, DT_CKPT_KEY_MAX);

	if (len == 0 || len == DT_CKPT_KEY_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (key[i] < 0x20 || key[i] > 0x7e)
			return 0;
	return 1;
}

static int
cmp_keys(const void *a, const void *b)
{
	const struct dt_ckpt_scalar *const *x = a, *const *y = b;

	return strcmp((*x)->key, (*y)->key);
}

/* A run id: 1 to DT_CKPT_RUN_ID_MAX - 1 of [0-9A-Za-z_-]. */
static int
valid_run_id(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n < DT_CKPT_RUN_ID_MAX &&
	       strspn(s, "0123456789abcdefghijklmnopqrstuvwxyz"
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZ_-") == n;
}

/* A run directory: no control characters, shorter than the field. */
static int
valid_run_dir(const char *s)
{
	size_t n = strlen(s);

	if (n >= DT_CKPT_RUN_DIR_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

enum dt_status
dt_ck_meta_check(const struct dt_ckpt_meta *m, struct dt_error *err)
{
	const struct dt_ckpt_scalar **sorted;
	enum dt_status st = DT_OK;

	if (m->step < 0 || m->epoch < 0 || m->epoch_samples < 0 ||
	    m->optim_steps < 0)
		return dt_errorf(err, DT_ERR_FORMAT, "checkpoint metadata: "
				 "step, epoch, epoch_samples and optim_steps "
				 "must be >= 0");
	if (m->world_size < 1 || m->dp_size < 1 || m->pp_size < 1 ||
	    m->tp_size < 1)
		return dt_errorf(err, DT_ERR_FORMAT, "checkpoint metadata: "
				 "world_size, dp_size, pp_size and tp_size "
				 "must be >= 1");
	if ((m->run_id[0] != '\0' && !valid_run_id(m->run_id)) ||
	    !valid_run_dir(m->run_dir))
		return dt_errorf(err, DT_ERR_FORMAT, "checkpoint metadata: "
				 "run_id must be 1 to %d of [0-9A-Za-z_-], "
				 "run_dir without control characters",
				 DT_CKPT_RUN_ID_MAX - 1);
	if (m->n_extra > DT_CKPT_MAX_EXTRA ||
	    (m->n_extra > 0 && m->extra == NULL))
		return dt_errorf(err, DT_ERR_FORMAT, "checkpoint metadata: "
				 "%zu extra values (at most %d)", m->n_extra,
				 DT_CKPT_MAX_EXTRA);
	for (size_t i = 0; i < m->n_extra; i++) {
		if (!valid_key(m->extra[i].key))
			return dt_errorf(err, DT_ERR_FORMAT, "checkpoint "
					 "metadata: extra value %zu: key must "
					 "be 1 to %d printable ASCII "
					 "characters", i, DT_CKPT_KEY_MAX - 1);
		if (m->extra[i].type != DT_CKPT_INT64 &&
		    m->extra[i].type != DT_CKPT_DOUBLE)
			return dt_errorf(err, DT_ERR_FORMAT, "checkpoint "
					 "metadata: extra value %s: unknown "
					 "type %d", m->extra[i].key,
					 (int)m->extra[i].type);
	}
	sorted = dt_xmalloc(m->n_extra ? m->n_extra : 1, sizeof *sorted);
	for (size_t i = 0; i < m->n_extra; i++)
		sorted[i] = &m->extra[i];
	qsort(sorted, m->n_extra, sizeof *sorted, cmp_keys);
	for (size_t i = 1; i < m->n_extra && st == DT_OK; i++)
		if (strcmp(sorted[i - 1]->key, sorted[i]->key) == 0)
			st = dt_errorf(err, DT_ERR_FORMAT, "checkpoint "
				       "metadata: extra key %s appears twice",
				       sorted[i]->key);
	free(sorted);
	return st;
}

char *
dt_ck_meta_encode(const struct dt_ckpt_meta *m)
{
	json_object *root = json_object_new_object();
	json_object *extra = json_object_new_object();

	json_object_object_add(root, "format",
			       json_object_new_string(META_FORMAT));
	json_object_object_add(root, "version",
			       json_object_new_int(DT_CK_FORMAT_VERSION));
	json_object_object_add(root, "step", json_object_new_int64(m->step));
	json_object_object_add(root, "epoch",
			       json_object_new_int64(m->epoch));
	json_object_object_add(root, "epoch_samples",
			       json_object_new_int64(m->epoch_samples));
	json_object_object_add(root, "optim_steps",
			       json_object_new_int64(m->optim_steps));
	json_object_object_add(root, "seed", json_object_new_uint64(m->seed));
	json_object_object_add(root, "world_size",
			       json_object_new_int64(m->world_size));
	json_object_object_add(root, "dp_size",
			       json_object_new_int64(m->dp_size));
	json_object_object_add(root, "pp_size",
			       json_object_new_int64(m->pp_size));
	json_object_object_add(root, "tp_size",
			       json_object_new_int64(m->tp_size));
	for (size_t i = 0; i < m->n_extra; i++) {
		const struct dt_ckpt_scalar *x = &m->extra[i];
		json_object *v = json_object_new_object();

		if (x->type == DT_CKPT_INT64) {
			json_object_object_add(v, "type",
					       json_object_new_string("int64"));
			json_object_object_add(v, "value",
					       json_object_new_int64(x->i));
		} else {
			uint64_t bits;
			char hex[17];

			memcpy(&bits, &x->d, sizeof bits);
			snprintf(hex, sizeof hex, "%016" PRIx64, bits);
			json_object_object_add(v, "type",
					       json_object_new_string("double"));
			json_object_object_add(v, "bits",
					       json_object_new_string(hex));
			if (isfinite(x->d))
				json_object_object_add(
					v, "value", json_object_new_double(x->d));
		}
		json_object_object_add(extra, x->key, v);
	}
	json_object_object_add(root, "extra", extra);
	if (m->run_id[0] != '\0') {
		json_object_object_add(root, "run_id",
				       json_object_new_string(m->run_id));
		json_object_object_add(root, "run_dir",
				       json_object_new_string(m->run_dir));
	}
	json_object_object_add(root, "job", json_object_new_string(
				       m->job_text ? m->job_text : ""));
	if (m->data_shards != NULL)
		json_object_object_add(root, "data_shards",
				       json_object_new_string(m->data_shards));
	if (m->data_norm != NULL)
		json_object_object_add(root, "data_norm",
				       json_object_new_string(m->data_norm));
	if (m->data_files != NULL)
		json_object_object_add(root, "data_files",
				       json_object_new_string(m->data_files));
	return to_text(root);
}

void
dt_ckpt_meta_fini(struct dt_ckpt_meta *meta)
{
	if (meta == NULL)
		return;
	free(meta->job_text);
	free(meta->data_shards);
	free(meta->data_norm);
	free(meta->data_files);
	free(meta->extra);
	memset(meta, 0, sizeof *meta);
}

static enum dt_status
decode_scalar(const char *key, json_object *v, struct dt_ckpt_scalar *x,
	      struct dt_error *err)
{
	static const char *const int_keys[] = { "type", "value", NULL };
	static const char *const dbl_keys[] = { "type", "bits", "value",
						NULL };
	char label[DT_CKPT_KEY_MAX + 32];
	const char *type, *bits;
	uint64_t u;
	enum dt_status st;

	snprintf(label, sizeof label, "meta.json: extra.%s", key);
	if (!valid_key(key))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: key must be 1 to %d "
				 "printable ASCII characters", label,
				 DT_CKPT_KEY_MAX - 1);
	strcpy(x->key, key);
	if (!json_object_is_type(v, json_type_object))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: expected an object, "
				 "found %s", label, type_name(v));
	st = get_string(v, label, "type", &type, err);
	if (st != DT_OK)
		return st;
	if (strcmp(type, "int64") == 0) {
		x->type = DT_CKPT_INT64;
		st = only_keys(v, label, int_keys, err);
		if (st == DT_OK)
			st = get_int(v, label, "value", INT64_MIN, INT64_MAX,
				     &x->i, err);
		return st;
	}
	if (strcmp(type, "double") != 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: type \"%s\" is not "
				 "int64 or double", label, type);
	x->type = DT_CKPT_DOUBLE;
	st = only_keys(v, label, dbl_keys, err);
	if (st == DT_OK)
		st = get_string(v, label, "bits", &bits, err);
	if (st != DT_OK)
		return st;
	if (!parse_hex(bits, 16, &u))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: bits: expected 16 hex "
				 "digits", label);
	memcpy(&x->d, &u, sizeof x->d);
	return DT_OK;
}

/* The optional run_id and run_dir of meta.json: both or neither. */
static enum dt_status
decode_run(json_object *root, struct dt_ckpt_meta *m, struct dt_error *err)
{
	const char *L = "meta.json", *id, *dir;
	json_object *v;
	enum dt_status st;

	if (!json_object_object_get_ex(root, "run_id", &v) &&
	    !json_object_object_get_ex(root, "run_dir", &v))
		return DT_OK;
	if ((st = get_string(root, L, "run_id", &id, err)) ||
	    (st = get_string(root, L, "run_dir", &dir, err)))
		return st;
	if (!valid_run_id(id))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: run_id: expected 1 "
				 "to %d of [0-9A-Za-z_-]", L,
				 DT_CKPT_RUN_ID_MAX - 1);
	if (!valid_run_dir(dir))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: run_dir: longer than "
				 "%d bytes or holds a control character", L,
				 DT_CKPT_RUN_DIR_MAX - 1);
	strcpy(m->run_id, id);
	strcpy(m->run_dir, dir);
	return DT_OK;
}

/* The string under key of root (in file L), when there is one, into *out
 * (heap, the caller's); *out untouched when there is none. */
static enum dt_status
opt_string(json_object *root, const char *L, const char *key, char **out,
	   struct dt_error *err)
{
	const char *text;
	json_object *v;
	enum dt_status st;

	if (!json_object_object_get_ex(root, key, &v))
		return DT_OK;
	st = get_string(root, L, key, &text, err);
	if (st == DT_OK)
		*out = dt_xstrdup(text);
	return st;
}

static enum dt_status
decode_meta(json_object *root, struct dt_ckpt_meta *m, struct dt_error *err)
{
	static const char *const keys[] = {
		"format", "version", "step", "epoch", "epoch_samples",
		"optim_steps", "seed", "world_size", "dp_size", "pp_size",
		"tp_size", "extra", "job", "run_id", "run_dir", "data_shards",
		"data_norm", "data_files", NULL
	};
	static const char *const sizes[] = { "world_size", "dp_size",
					     "pp_size", "tp_size" };
	int32_t *size_fields[] = { &m->world_size, &m->dp_size, &m->pp_size,
				   &m->tp_size };
	const char *L = "meta.json", *job;
	json_object *v;
	int64_t x;
	size_t n;
	enum dt_status st;

	if ((st = check_header(root, L, META_FORMAT, err)) ||
	    (st = only_keys(root, L, keys, err)) ||
	    (st = get_int(root, L, "step", 0, INT64_MAX, &m->step, err)) ||
	    (st = get_int(root, L, "epoch", 0, INT64_MAX, &m->epoch, err)) ||
	    (st = get_int(root, L, "epoch_samples", 0, INT64_MAX,
			  &m->epoch_samples, err)) ||
	    (st = get_int(root, L, "optim_steps", 0, INT64_MAX,
			  &m->optim_steps, err)))
		return st;
	if (!json_object_object_get_ex(root, "seed", &v) ||
	    !json_uint64(v, &m->seed))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: seed: expected an "
				 "integer in [0, 2^64)", L);
	for (int i = 0; i < 4; i++) {
		st = get_int(root, L, sizes[i], 1, INT32_MAX, &x, err);
		if (st != DT_OK)
			return st;
		*size_fields[i] = (int32_t)x;
	}
	if (!json_object_object_get_ex(root, "extra", &v) ||
	    !json_object_is_type(v, json_type_object))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: extra: expected an "
				 "object, found %s", L,
				 json_object_object_get_ex(root, "extra", &v) ?
				 type_name(v) : "nothing");
	n = (size_t)json_object_object_length(v);
	if (n > DT_CKPT_MAX_EXTRA)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: extra: %zu values "
				 "(at most %d)", L, n, DT_CKPT_MAX_EXTRA);
	m->extra = dt_xcalloc(n ? n : 1, sizeof *m->extra);
	json_object_object_foreach(v, key, val) {
		st = decode_scalar(key, val, &m->extra[m->n_extra], err);
		if (st != DT_OK)
			return st;
		m->n_extra++;
	}
	st = get_string(root, L, "job", &job, err);
	if (st != DT_OK)
		return st;
	m->job_text = dt_xstrdup(job);
	/* Optional: only a run over token shards saves the first, one over
	 * idx, npy or csv features the second, a run of this dtrain the
	 * third. */
	if ((st = opt_string(root, L, "data_shards", &m->data_shards, err)) ||
	    (st = opt_string(root, L, "data_norm", &m->data_norm, err)) ||
	    (st = opt_string(root, L, "data_files", &m->data_files, err)))
		return st;
	return decode_run(root, m, err);
}

enum dt_status
dt_ck_meta_decode(const char *text, size_t len, struct dt_ckpt_meta *m,
		  struct dt_error *err)
{
	json_object *root;
	enum dt_status st;

	memset(m, 0, sizeof *m);
	st = dt_ck_json_parse(text, len, DT_CK_META, &root, err);
	if (st != DT_OK)
		return st;
	st = decode_meta(root, m, err);
	json_object_put(root);
	if (st != DT_OK)
		dt_ckpt_meta_fini(m);
	return st;
}

/* ---- MANIFEST.json ------------------------------------------------------ */

char *
dt_ck_manifest_encode(const struct dt_ck_manifest *man)
{
	json_object *root = json_object_new_object();
	json_object *files = json_object_new_array();

	json_object_object_add(root, "format",
			       json_object_new_string(MANIFEST_FORMAT));
	json_object_object_add(root, "version",
			       json_object_new_int(DT_CK_FORMAT_VERSION));
	json_object_object_add(root, "step", json_object_new_int64(man->step));
	for (size_t i = 0; i < man->n; i++) {
		json_object *f = json_object_new_object();
		char hex[9];

		snprintf(hex, sizeof hex, "%08x", (unsigned)man->f[i].crc);
		json_object_object_add(f, "name",
				       json_object_new_string(man->f[i].name));
		json_object_object_add(f, "size",
				       json_object_new_int64(man->f[i].size));
		json_object_object_add(f, "crc32", json_object_new_string(hex));
		json_object_array_add(files, f);
	}
	json_object_object_add(root, "files", files);
	return to_text(root);
}

static enum dt_status
decode_file(json_object *f, size_t i, struct dt_ck_manifest *man,
	    struct dt_error *err)
{
	static const char *const keys[] = { "name", "size", "crc32", NULL };
	struct dt_ck_file *out = &man->f[i];
	char label[64];
	const char *name, *crc;
	enum dt_status st;

	snprintf(label, sizeof label, "%s: files[%zu]", DT_CK_MANIFEST, i);
	if (!json_object_is_type(f, json_type_object))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: expected an object, "
				 "found %s", label, type_name(f));
	if ((st = only_keys(f, label, keys, err)) ||
	    (st = get_string(f, label, "name", &name, err)) ||
	    (st = get_int(f, label, "size", 0, INT64_MAX, &out->size, err)) ||
	    (st = get_string(f, label, "crc32", &crc, err)))
		return st;
	if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL ||
	    strlen(name) >= sizeof out->name)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: name \"%.64s\" is not "
				 "a plain file name", label, name);
	strcpy(out->name, name);
	if (!dt_ck_parse_crc(crc, &out->crc))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: crc32: expected 8 "
				 "hex digits", label);
	for (size_t j = 0; j < i; j++)
		if (strcmp(man->f[j].name, name) == 0)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: %s is listed "
					 "twice", label, name);
	return DT_OK;
}

enum dt_status
dt_ck_manifest_decode(const char *text, size_t len,
		      struct dt_ck_manifest *man, struct dt_error *err)
{
	static const char *const keys[] = { "format", "version", "step",
					    "files", NULL };
	const char *L = DT_CK_MANIFEST;
	json_object *root, *files;
	enum dt_status st;

	memset(man, 0, sizeof *man);
	st = dt_ck_json_parse(text, len, L, &root, err);
	if (st != DT_OK)
		return st;
	if ((st = check_header(root, L, MANIFEST_FORMAT, err)) ||
	    (st = only_keys(root, L, keys, err)) ||
	    (st = get_int(root, L, "step", 0, INT64_MAX, &man->step, err)))
		goto out;
	if (!json_object_object_get_ex(root, "files", &files) ||
	    !json_object_is_type(files, json_type_array) ||
	    json_object_array_length(files) > DT_CK_MAX_FILES) {
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: files: expected an "
			       "array of at most %d entries", L,
			       DT_CK_MAX_FILES);
		goto out;
	}
	man->n = json_object_array_length(files);
	for (size_t i = 0; i < man->n && st == DT_OK; i++)
		st = decode_file(json_object_array_get_idx(files, i), i, man,
				 err);
out:
	json_object_put(root);
	return st;
}
