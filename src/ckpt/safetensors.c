/* SPDX-License-Identifier: MIT */
/* safetensors.c - writing and reading tensor files in the safetensors
 * format (https://github.com/huggingface/safetensors, "Format"; see
 * ckpt.h): the header built and parsed with json-c, every field of a read
 * header checked before use (length within the file, JSON types, F32 only,
 * shapes against byte ranges, offsets contiguous from 0 to the end), and
 * the per-tensor CRC-32s dtrain keeps in __metadata__ as "crc32:NAME". */
#include "ckpt/ckpt_priv.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "util/endian.h"

#define CRC_PREFIX "crc32:"
#define SCRATCH_SIZE ((size_t)1 << 20)

/* Elements of a shape; -1 if the byte size would not fit int64_t. */
static int64_t
count_elems(int n_dims, const int64_t *shape)
{
	int64_t count = 1;

	for (int i = 0; i < n_dims; i++) {
		if (shape[i] < 0)
			return -1;
		if (shape[i] != 0 && count > INT64_MAX / 4 / shape[i])
			return -1;
		count *= shape[i];
	}
	return count;
}

static void
fmt_shape(char *buf, size_t size, int n_dims, const int64_t *shape)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < n_dims && used < size; i++) {
		int k = snprintf(buf + used, size - used, "%s%lld",
				 i ? ", " : "[", (long long)shape[i]);

		if (k < 0)
			break;
		used += (size_t)k;
	}
	if (used < size)
		snprintf(buf + used, size - used, "%s", n_dims ? "]" : "[]");
}

/* CRC-32 of n floats as little-endian bytes. */
static uint32_t
crc_f32(const float *p, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	unsigned char buf[4096];
	uLong crc = 0;

	while (n > 0) {
		size_t k = n < sizeof buf / 4 ? n : sizeof buf / 4;

		dt_le_put_f32(buf, p, k);
		crc = crc32_z(crc, buf, 4 * k);
		p += k;
		n -= k;
	}
	return (uint32_t)crc;
#else
	return (uint32_t)crc32_z(0, (const Bytef *)p, n * sizeof(float));
#endif
}

/* ---- writing ------------------------------------------------------------ */

static int
cmp_names(const void *a, const void *b)
{
	const struct dt_ckpt_tensor *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

enum dt_status
dt_ck_check_tensors(const struct dt_ckpt_tensor *t, size_t n, size_t min_n,
		    int fetched, const char *what, struct dt_error *err)
{
	const struct dt_ckpt_tensor **sorted;
	int64_t total = 0;

	if (n < min_n)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: no tensors to save",
				 what);
	for (size_t i = 0; i < n; i++) {
		const char *name = t[i].name;
		int64_t count;
		size_t len = name ? strlen(name) : 0;

		if (len == 0 || len >= DT_CKPT_NAME_MAX)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %zu: "
					 "name must be 1 to %d bytes", what, i,
					 DT_CKPT_NAME_MAX - 1);
		for (size_t j = 0; j < len; j++)
			if ((unsigned char)name[j] < 0x20 || name[j] == 0x7f)
				return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor "
						 "%zu: name contains a control "
						 "character", what, i);
		if (strcmp(name, "__metadata__") == 0)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor name "
					 "__metadata__ is reserved", what);
		if (t[i].n_dims < 0 || t[i].n_dims > DT_CKPT_MAX_DIMS)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s: "
					 "%d dimensions (0 to %d allowed)",
					 what, name, t[i].n_dims,
					 DT_CKPT_MAX_DIMS);
		count = count_elems(t[i].n_dims, t[i].shape);
		if (count < 0 || count * 4 > INT64_MAX - total)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s: "
					 "negative or too large shape", what,
					 name);
		if (count > 0 && t[i].data == NULL && !fetched)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s: no "
					 "data", what, name);
		total += count * 4;
	}
	sorted = dt_xmalloc(n ? n : 1, sizeof *sorted);
	for (size_t i = 0; i < n; i++)
		sorted[i] = &t[i];
	qsort(sorted, n, sizeof *sorted, cmp_names);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
			enum dt_status st = dt_errorf(err, DT_ERR_FORMAT,
						      "%s: tensor name %s "
						      "appears twice", what,
						      sorted[i]->name);

			free(sorted);
			return st;
		}
	}
	free(sorted);
	return DT_OK;
}

static json_object *
int_array(const int64_t *v, int n)
{
	json_object *a = json_object_new_array();

	for (int i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_int64(v[i]));
	return a;
}

enum dt_status
dt_ck_st_write_header(struct dt_ck_wfile *w, const struct dt_ck_entry *t,
		      size_t n, struct dt_error *err)
{
	json_object *root = json_object_new_object();
	json_object *meta = json_object_new_object();
	unsigned char len_le[8];
	const char *text;
	size_t len, padded;
	int64_t offset = 0;
	enum dt_status st;

	json_object_object_add(meta, "producer",
			       json_object_new_string("dtrain"));
	/* The reference writer puts __metadata__ first; readers that scan
	 * for it find it at once. */
	json_object_object_add(root, "__metadata__", meta);
	for (size_t i = 0; i < n; i++) {
		int64_t bytes = 4 * count_elems(t[i].n_dims, t[i].shape);
		int64_t range[2] = { offset, offset + bytes };
		json_object *e = json_object_new_object();
		char key[sizeof CRC_PREFIX + DT_CKPT_NAME_MAX], hex[9];

		json_object_object_add(e, "dtype",
				       json_object_new_string("F32"));
		json_object_object_add(e, "shape",
				       int_array(t[i].shape, t[i].n_dims));
		json_object_object_add(e, "data_offsets", int_array(range, 2));
		json_object_object_add(root, t[i].name, e);
		snprintf(key, sizeof key, "%s%s", CRC_PREFIX, t[i].name);
		snprintf(hex, sizeof hex, "%08x", (unsigned)t[i].crc);
		json_object_object_add(meta, key, json_object_new_string(hex));
		offset += bytes;
	}
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	len = strlen(text);
	padded = (len + 7) & ~(size_t)7;
	dt_le_put(len_le, (uint64_t)padded, 8);
	st = dt_ck_write(w, len_le, 8, err);
	if (st == DT_OK)
		st = dt_ck_write(w, text, len, err);
	if (st == DT_OK && padded > len)
		st = dt_ck_write(w, "        ", padded - len, err);
	json_object_put(root);
	return st;
}

/* CRC-32 of tensor t, read from its data or, where that is NULL,
 * fetched from src in pieces of DT_CKPT_STREAM_FLOATS into buf. */
static enum dt_status
tensor_crc(const struct dt_ckpt_tensor *t, size_t j,
	   const struct dt_ck_fetch *src, float *buf, uint32_t *crc,
	   struct dt_error *err)
{
	int64_t n = count_elems(t->n_dims, t->shape);

	if (t->data != NULL) {
		*crc = crc_f32(t->data, (size_t)n);
		return DT_OK;
	}
	*crc = 0;
	for (int64_t lo = 0; lo < n; lo += DT_CKPT_STREAM_FLOATS) {
		int64_t hi = n - lo < DT_CKPT_STREAM_FLOATS ? n :
			     lo + DT_CKPT_STREAM_FLOATS;
		enum dt_status st = src->fn(src->ctx, src->file, j, lo, hi,
					    buf, err);

		if (st != DT_OK)
			return st;
		*crc = (uint32_t)crc32_combine(*crc, crc_f32(buf,
					       (size_t)(hi - lo)),
					       (z_off_t)(4 * (hi - lo)));
	}
	return DT_OK;
}

/* Tensor t's bytes to w: from its data, or fetched piece by piece from
 * src into buf as tensor_crc does. */
static enum dt_status
tensor_write(struct dt_ck_wfile *w, const struct dt_ckpt_tensor *t,
	     size_t j, const struct dt_ck_fetch *src, float *buf,
	     struct dt_error *err)
{
	int64_t n = count_elems(t->n_dims, t->shape);
	enum dt_status st = DT_OK;

	if (t->data != NULL)
		return dt_ck_write_f32(w, t->data, (size_t)n, err);
	for (int64_t lo = 0; lo < n && st == DT_OK;
	     lo += DT_CKPT_STREAM_FLOATS) {
		int64_t hi = n - lo < DT_CKPT_STREAM_FLOATS ? n :
			     lo + DT_CKPT_STREAM_FLOATS;

		st = src->fn(src->ctx, src->file, j, lo, hi, buf, err);
		if (st == DT_OK)
			st = dt_ck_write_f32(w, buf, (size_t)(hi - lo), err);
	}
	return st;
}

enum dt_status
dt_ck_st_write(struct dt_ck_wfile *w, const struct dt_ckpt_tensor *t,
	       size_t n, const struct dt_ck_fetch *src, struct dt_error *err)
{
	struct dt_ck_entry *e = dt_xcalloc(n + 1, sizeof *e);
	float *buf = NULL;	/* (DT_CKPT_STREAM_FLOATS) fetched pieces */
	enum dt_status st = DT_OK;

	for (size_t i = 0; i < n && buf == NULL; i++)
		if (t[i].data == NULL && src != NULL)
			buf = dt_xalloc_floats((size_t)DT_CKPT_STREAM_FLOATS);
	for (size_t i = 0; i < n && st == DT_OK; i++) {
		snprintf(e[i].name, sizeof e[i].name, "%s", t[i].name);
		e[i].n_dims = t[i].n_dims;
		memcpy(e[i].shape, t[i].shape, sizeof e[i].shape);
		st = tensor_crc(&t[i], i, src, buf, &e[i].crc, err);
		e[i].has_crc = 1;
	}
	if (st == DT_OK)
		st = dt_ck_st_write_header(w, e, n, err);
	free(e);
	for (size_t i = 0; i < n && st == DT_OK; i++)
		st = tensor_write(w, &t[i], i, src, buf, err);
	free(buf);
	return st;
}

/* ---- reading ------------------------------------------------------------ */

static int
cmp_offsets(const void *a, const void *b)
{
	const struct dt_ck_entry *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/* Checks one tensor entry of the header and fills *e. */
static enum dt_status
parse_entry(const char *label, const char *name, json_object *v,
	    struct dt_ck_entry *e, struct dt_error *err)
{
	json_object *dtype, *shape, *offsets;
	int64_t count, range[2];
	size_t n_dims;

	if (strlen(name) >= DT_CKPT_NAME_MAX)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header: tensor name "
				 "longer than %d bytes", label,
				 DT_CKPT_NAME_MAX - 1);
	strcpy(e->name, name);
	if (!json_object_is_type(v, json_type_object) ||
	    !json_object_object_get_ex(v, "dtype", &dtype) ||
	    !json_object_object_get_ex(v, "shape", &shape) ||
	    !json_object_object_get_ex(v, "data_offsets", &offsets) ||
	    json_object_object_length(v) != 3)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header: tensor %s: "
				 "expected an object with exactly dtype, "
				 "shape and data_offsets", label, name);
	if (!json_object_is_type(dtype, json_type_string))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header: tensor %s: "
				 "dtype is not a string", label, name);
	if (strcmp(json_object_get_string(dtype), "F32") != 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header: tensor %s: "
				 "dtype %s is not supported (only F32)", label,
				 name, json_object_get_string(dtype));
	if (!json_object_is_type(shape, json_type_array) ||
	    json_object_array_length(shape) > DT_CKPT_MAX_DIMS)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header: tensor %s: "
				 "shape must be an array of at most %d "
				 "integers", label, name, DT_CKPT_MAX_DIMS);
	n_dims = json_object_array_length(shape);
	e->n_dims = (int)n_dims;
	for (size_t i = 0; i < n_dims; i++)
		if (!dt_ck_json_int64(json_object_array_get_idx(shape, i),
				      &e->shape[i]) || e->shape[i] < 0)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: header: "
					 "tensor %s: shape[%zu] is not a "
					 "non-negative integer", label, name,
					 i);
	if (!json_object_is_type(offsets, json_type_array) ||
	    json_object_array_length(offsets) != 2 ||
	    !dt_ck_json_int64(json_object_array_get_idx(offsets, 0),
			      &range[0]) ||
	    !dt_ck_json_int64(json_object_array_get_idx(offsets, 1),
			      &range[1]) ||
	    range[0] < 0 || range[1] < range[0])
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header: tensor %s: "
				 "data_offsets must be [begin, end] with 0 <= "
				 "begin <= end", label, name);
	e->begin = range[0];
	e->end = range[1];
	count = count_elems(e->n_dims, e->shape);
	if (count < 0 || count * 4 != e->end - e->begin) {
		char s[96];

		fmt_shape(s, sizeof s, e->n_dims, e->shape);
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header: tensor %s: "
				 "shape %s does not fit data_offsets [%lld, "
				 "%lld] of F32", label, name, s,
				 (long long)e->begin, (long long)e->end);
	}
	return DT_OK;
}

/* Reads the crc32 entries of __metadata__ into h's entries. */
static enum dt_status
parse_metadata(const char *label, json_object *meta, struct dt_ck_header *h,
	       struct dt_error *err)
{
	if (!json_object_is_type(meta, json_type_object))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header: __metadata__ "
				 "is not an object", label);
	json_object_object_foreach(meta, key, val) {
		size_t i;

		if (!json_object_is_type(val, json_type_string))
			return dt_errorf(err, DT_ERR_FORMAT, "%s: header: "
					 "__metadata__.%s is not a string",
					 label, key);
		if (strncmp(key, CRC_PREFIX, strlen(CRC_PREFIX)) != 0)
			continue;
		for (i = 0; i < h->n; i++)
			if (strcmp(h->t[i].name, key + strlen(CRC_PREFIX)) == 0)
				break;
		if (i == h->n)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: header: %s "
					 "names no tensor", label, key);
		if (!dt_ck_parse_crc(json_object_get_string(val),
				     &h->t[i].crc))
			return dt_errorf(err, DT_ERR_FORMAT, "%s: header: %s: "
					 "expected 8 hex digits", label, key);
		h->t[i].has_crc = 1;
	}
	return DT_OK;
}

/* Checks the parsed header root and fills h. */
static enum dt_status
parse_root(const struct dt_ck_rfile *r, json_object *root, int64_t hlen,
	   int require_crc, struct dt_ck_header *h, struct dt_error *err)
{
	json_object *meta = NULL;
	int64_t expect = 0;
	size_t n = 0;
	enum dt_status st;

	if (!json_object_is_type(root, json_type_object))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header is not a JSON "
				 "object", r->label);
	h->t = dt_xcalloc((size_t)json_object_object_length(root) + 1,
			  sizeof *h->t);
	json_object_object_foreach(root, key, val) {
		if (strcmp(key, "__metadata__") == 0) {
			meta = val;
			continue;
		}
		st = parse_entry(r->label, key, val, &h->t[n], err);
		if (st != DT_OK)
			return st;
		h->n = ++n;
	}
	qsort(h->t, h->n, sizeof *h->t, cmp_offsets);
	for (size_t i = 0; i < h->n; i++) {
		if (h->t[i].begin != expect)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: header: tensor "
					 "%s: data_offsets [%lld, %lld] %s the "
					 "previous tensor, which ends at %lld",
					 r->label, h->t[i].name,
					 (long long)h->t[i].begin,
					 (long long)h->t[i].end,
					 h->t[i].begin > expect ?
					 "leave a gap after" : "overlap",
					 (long long)expect);
		expect = h->t[i].end;
	}
	h->data_size = expect;
	/* Only a plain file's size is known before reading it; a gzip
	 * stream's end is checked when the data has been read. */
	/* Offsets come from the file: compared by subtraction, as a sum
	 * near INT64_MAX would overflow. */
	if (!r->gz && h->data_size != r->file_size - 8 - hlen)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header describes "
				 "%lld bytes of tensor data, the file holds "
				 "%lld", r->label, (long long)h->data_size,
				 (long long)(r->file_size - 8 - hlen));
	if (meta != NULL) {
		st = parse_metadata(r->label, meta, h, err);
		if (st != DT_OK)
			return st;
	}
	for (size_t i = 0; require_crc && i < h->n; i++)
		if (!h->t[i].has_crc)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: header: tensor "
					 "%s has no %s entry in __metadata__",
					 r->label, h->t[i].name, CRC_PREFIX);
	return DT_OK;
}

enum dt_status
dt_ck_st_read_header(struct dt_ck_rfile *r, int require_crc,
		     struct dt_ck_header *h, struct dt_error *err)
{
	unsigned char len_le[8];
	uint64_t hlen = 0;
	char *text, label[DT_CK_PATH_MAX + 16];
	json_object *root;
	enum dt_status st;

	memset(h, 0, sizeof *h);
	st = dt_ck_read(r, len_le, 8, err);
	if (st != DT_OK)
		return st;
	hlen = dt_le_get(len_le, 8);
	if (hlen < 2 || hlen > (uint64_t)DT_CK_HEADER_MAX ||
	    (!r->gz && hlen > (uint64_t)(r->file_size - 8)))
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header length %llu "
				 "at byte 0 is impossible (file of %lld bytes, "
				 "limit %lld)", r->label,
				 (unsigned long long)hlen,
				 (long long)r->file_size,
				 (long long)DT_CK_HEADER_MAX);
	text = dt_xmalloc((size_t)hlen + 1, 1);
	st = dt_ck_read(r, text, (size_t)hlen, err);
	if (st != DT_OK) {
		free(text);
		return st;
	}
	text[hlen] = '\0';
	if (text[0] != '{' || memchr(text, '\0', (size_t)hlen) != NULL) {
		free(text);
		return dt_errorf(err, DT_ERR_FORMAT, "%s: header at byte 8 is "
				 "not a JSON object", r->label);
	}
	snprintf(label, sizeof label, "%s: header", r->label);
	st = dt_ck_json_parse(text, (size_t)hlen, label, &root, err);
	free(text);
	if (st != DT_OK)
		return st;
	st = parse_root(r, root, (int64_t)hlen, require_crc, h, err);
	json_object_put(root);
	if (st != DT_OK)
		dt_ck_header_fini(h);
	return st;
}

enum dt_status
dt_ck_st_read_data(struct dt_ck_rfile *r, const struct dt_ck_header *h,
		   float *const *dst, struct dt_error *err)
{
	unsigned char *scratch = NULL;
	enum dt_status st = DT_OK;

	for (size_t i = 0; i < h->n && st == DT_OK; i++) {
		const struct dt_ck_entry *e = &h->t[i];
		size_t left = (size_t)(e->end - e->begin);
		uLong crc = 0;

		if (dst[i] != NULL) {
			st = dt_ck_read(r, dst[i], left, err);
			if (st != DT_OK)
				break;
			crc = crc32_z(0, (const Bytef *)dst[i], left);
			dt_le_to_host(dst[i], 4, left / 4);
		}
		while (dst[i] == NULL && left > 0) {
			size_t k = left < SCRATCH_SIZE ? left : SCRATCH_SIZE;

			if (scratch == NULL)
				scratch = dt_xmalloc(SCRATCH_SIZE, 1);
			st = dt_ck_read(r, scratch, k, err);
			if (st != DT_OK)
				break;
			crc = crc32_z(crc, scratch, k);
			left -= k;
		}
		if (st == DT_OK && e->has_crc && (uint32_t)crc != e->crc)
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: crc32 mismatch "
				       "for %s (stored %08x, data has %08x)",
				       r->label, e->name, (unsigned)e->crc,
				       (unsigned)crc);
	}
	free(scratch);
	return st;
}

void
dt_ck_header_fini(struct dt_ck_header *h)
{
	free(h->t);
	memset(h, 0, sizeof *h);
}

int
dt_ck_ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && strcmp(s + n - k, tail) == 0;
}

int
dt_ck_span_parse(const char *name, size_t *len, int64_t *lo, int64_t *hi)
{
	const char *open = strrchr(name, '[');
	char *end;

	if (open == NULL || open == name || !dt_ck_ends_with(name, "]"))
		return 0;
	*len = (size_t)(open - name);
	*lo = strtoll(open + 1, &end, 10);
	if (end == open + 1 || *end != ':' || *lo < 0)
		return 0;
	*hi = strtoll(end + 1, &end, 10);
	return strcmp(end, "]") == 0 && *hi > *lo;
}

enum dt_status
dt_ck_match_target(const char *label, const struct dt_ck_entry *e,
		   const struct dt_ckpt_target *t, size_t n,
		   unsigned char *seen, size_t *j, struct dt_error *err)
{
	size_t k;

	for (k = 0; k < n; k++)
		if (strcmp(t[k].name, e->name) == 0)
			break;
	if (k == n)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: holds tensor %s, "
				 "which the model does not have", label,
				 e->name);
	if (seen[k])
		return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s is in two "
				 "files", label, e->name);
	if (t[k].n_dims != e->n_dims ||
	    memcmp(t[k].shape, e->shape,
		   (size_t)e->n_dims * sizeof e->shape[0]) != 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s has "
				 "another shape than the model's", label,
				 e->name);
	seen[k] = 1;
	*j = k;
	return DT_OK;
}

enum dt_status
dt_ck_match(const struct dt_ck_header *h, const char *label,
	    const struct dt_ckpt_target *t, size_t n, float **dst,
	    struct dt_error *err)
{
	unsigned char *used = dt_xcalloc(n ? n : 1, 1);
	enum dt_status st = DT_OK;
	char have[96], want[96];

	for (size_t i = 0; i < h->n && st == DT_OK; i++) {
		const struct dt_ck_entry *e = &h->t[i];
		size_t j;

		for (j = 0; j < n; j++)
			if (!used[j] && strcmp(t[j].name, e->name) == 0)
				break;
		if (j == n) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: holds tensor %s, "
				       "which the model does not have", label,
				       e->name);
			break;
		}
		used[j] = 1;
		if (t[j].n_dims != e->n_dims ||
		    memcmp(t[j].shape, e->shape,
			   (size_t)e->n_dims * sizeof e->shape[0]) != 0) {
			fmt_shape(have, sizeof have, e->n_dims, e->shape);
			fmt_shape(want, sizeof want, t[j].n_dims, t[j].shape);
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: tensor %s has "
				       "shape %s, the model expects %s", label,
				       e->name, have, want);
			break;
		}
		assert(t[j].data != NULL || e->end == e->begin);
		dst[i] = t[j].data;
	}
	for (size_t j = 0; j < n && st == DT_OK; j++)
		if (!used[j])
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: no tensor named "
				       "%s", label, t[j].name);
	free(used);
	return st;
}
