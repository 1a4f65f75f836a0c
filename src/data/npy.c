/* SPDX-License-Identifier: MIT */
/* npy.c - the NPY reader (NumPy's format, as numpy/lib/format.py and
 * NEP 1 describe it):
 *
 *   byte 0..5   "\x93NUMPY"
 *   byte 6, 7   major and minor version: 1.0, 2.0 or 3.0
 *   byte 8..    header length: u16 little-endian (v1) or u32 (v2, v3)
 *   then        the header: a Python dict literal, padded with spaces and
 *               ended by '\n', e.g.
 *               {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 *   then        the elements in C (row-major) order
 *
 * The dict is parsed by a small recursive-descent reader that knows exactly
 * the three keys and the value forms NumPy writes (a string, True/False, a
 * tuple of integers), so every complaint can point at its byte. */
#include "data/data.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data_priv.h"
#include "util/alloc.h"
#include "util/endian.h"

#define MAX_DIMS 8

static long long
ll(int64_t v)
{
	return (long long)v;
}

/* The header being parsed: bytes [i, end) of the file remain. */
struct hdr {
	const char *path;
	const unsigned char *s;
	size_t i, end;
	struct dt_error *err;
};

static enum dt_status
bad(const struct hdr *h, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum dt_status
bad(const struct hdr *h, size_t off, const char *fmt, ...)
{
	char what[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return dt_errorf(h->err, DT_ERR_FORMAT, "%s: byte %zu: %s", h->path,
			 off, what);
}

static void
skip_ws(struct hdr *h)
{
	while (h->i < h->end && (h->s[h->i] == ' ' || h->s[h->i] == '\t' ||
				 h->s[h->i] == '\n' || h->s[h->i] == '\r'))
		h->i++;
}

/* Describes the byte at h->i for a message: 'x' or "the end of the
 * header". */
static const char *
here(const struct hdr *h, char *buf, size_t size)
{
	unsigned char c;

	if (h->i >= h->end)
		return "the end of the header";
	c = h->s[h->i];
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "byte 0x%02x", c);
	return buf;
}

static enum dt_status
expect(struct hdr *h, char c, const char *where)
{
	char buf[16];

	skip_ws(h);
	if (h->i < h->end && h->s[h->i] == (unsigned char)c) {
		h->i++;
		return DT_OK;
	}
	return bad(h, h->i, "header dict: expected '%c' %s, found %s", c,
		   where, here(h, buf, sizeof buf));
}

/* A quoted Python string without escapes (NumPy writes none). */
static enum dt_status
string(struct hdr *h, char *out, size_t size)
{
	char buf[16];
	size_t start, n;
	unsigned char q;

	skip_ws(h);
	if (h->i >= h->end || (h->s[h->i] != '\'' && h->s[h->i] != '"'))
		return bad(h, h->i, "header dict: expected a quoted string, "
			   "found %s", here(h, buf, sizeof buf));
	q = h->s[h->i++];
	start = h->i;
	while (h->i < h->end && h->s[h->i] != q && h->s[h->i] != '\\')
		h->i++;
	if (h->i >= h->end || h->s[h->i] != q)
		return bad(h, start - 1, "header dict: unterminated or escaped "
			   "string");
	n = h->i - start;
	h->i++;
	if (n >= size)
		return bad(h, start, "header dict: string of %zu bytes, longer "
			   "than any key or dtype", n);
	memcpy(out, h->s + start, n);
	out[n] = '\0';
	return DT_OK;
}

static int
word(struct hdr *h, const char *w)
{
	size_t n = strlen(w);

	if (h->end - h->i >= n && memcmp(h->s + h->i, w, n) == 0) {
		h->i += n;
		return 1;
	}
	return 0;
}

static enum dt_status
boolean(struct hdr *h, int *out)
{
	char buf[16];

	skip_ws(h);
	if (word(h, "True"))
		*out = 1;
	else if (word(h, "False"))
		*out = 0;
	else
		return bad(h, h->i, "header dict: fortran_order must be True or "
			   "False, found %s", here(h, buf, sizeof buf));
	return DT_OK;
}

/* A tuple of non-negative integers: (), (3,), (3, 4), trailing comma
 * allowed, Python 2's 'L' suffix tolerated. */
static enum dt_status
shape(struct hdr *h, struct dt_npy *a)
{
	char buf[16];
	enum dt_status st = expect(h, '(', "to open the shape tuple");

	if (st != DT_OK)
		return st;
	for (;;) {
		uint64_t v = 0;
		size_t start;

		skip_ws(h);
		if (h->i < h->end && h->s[h->i] == ')') {
			h->i++;
			return DT_OK;
		}
		start = h->i;
		while (h->i < h->end && h->s[h->i] >= '0' &&
		       h->s[h->i] <= '9') {
			if (v > ((uint64_t)INT64_MAX - 9) / 10)
				return bad(h, start, "shape: dimension too "
					   "large");
			v = v * 10 + (uint64_t)(h->s[h->i++] - '0');
		}
		if (h->i == start)
			return bad(h, h->i, "shape: expected a dimension (a "
				   "non-negative integer) or ')', found %s",
				   here(h, buf, sizeof buf));
		if (h->i < h->end && h->s[h->i] == 'L')
			h->i++;
		if (a->n_dims == MAX_DIMS)
			return bad(h, start, "shape: more than %d dimensions",
				   MAX_DIMS);
		a->dims[a->n_dims++] = (int64_t)v;
		skip_ws(h);
		if (h->i < h->end && h->s[h->i] == ',') {
			h->i++;
			continue;
		}
		if (h->i < h->end && h->s[h->i] == ')')
			continue;
		return bad(h, h->i, "shape: expected ',' or ')', found %s",
			   here(h, buf, sizeof buf));
	}
}

static enum dt_status
dtype(struct hdr *h, size_t off, const char *descr, struct dt_npy *a)
{
	static const struct {
		const char *descr;
		enum dt_npy_dtype type;
		size_t size;
	} known[] = {
		{ "|u1", DT_NPY_U8, 1 }, { "<u1", DT_NPY_U8, 1 },
		{ ">u1", DT_NPY_U8, 1 }, { "<i4", DT_NPY_I32, 4 },
		{ "<i8", DT_NPY_I64, 8 }, { "<f4", DT_NPY_F32, 4 },
		{ "<f8", DT_NPY_F64, 8 },
	};

	for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
		if (strcmp(descr, known[k].descr) == 0) {
			a->dtype = known[k].type;
			a->elem_size = known[k].size;
			memcpy(a->descr, known[k].descr, 4);
			return DT_OK;
		}
	}
	return bad(h, off, "dtype '%s' is not supported: expected one of "
		   "'<f4', '<f8', '|u1', '<i4', '<i8' (little-endian float32, "
		   "float64, uint8, int32, int64)%s", descr,
		   descr[0] == '>' ? "; this array is big-endian, save it with "
		   "arr.astype(arr.dtype.newbyteorder('<'))" : "");
}

/* Parses the header dict in [h->i, h->end) into a. */
static enum dt_status
dict(struct hdr *h, struct dt_npy *a)
{
	int have_descr = 0, have_fortran = 0, have_shape = 0;
	size_t open_at;
	enum dt_status st;

	skip_ws(h);
	open_at = h->i;
	st = expect(h, '{', "at the start of the header");
	if (st != DT_OK)
		return st;
	for (;;) {
		char key[32], descr[32], buf[16];
		size_t key_off;
		int fortran = 0;

		skip_ws(h);
		if (h->i < h->end && h->s[h->i] == '}') {
			h->i++;
			break;
		}
		key_off = h->i;
		st = string(h, key, sizeof key);
		if (st == DT_OK)
			st = expect(h, ':', "after a key");
		if (st != DT_OK)
			return st;
		skip_ws(h);
		if (strcmp(key, "descr") == 0 && !have_descr) {
			have_descr = 1;
			a->descr_off = (int64_t)h->i;
			if (h->i < h->end && h->s[h->i] == '[')
				return bad(h, h->i, "descr is a list: "
					   "structured arrays are not "
					   "supported; save one plain array "
					   "per file");
			st = string(h, descr, sizeof descr);
			if (st == DT_OK)
				st = dtype(h, (size_t)a->descr_off, descr, a);
		} else if (strcmp(key, "fortran_order") == 0 &&
			   !have_fortran) {
			size_t off = h->i;

			have_fortran = 1;
			st = boolean(h, &fortran);
			if (st == DT_OK && fortran)
				return bad(h, off, "fortran_order is True: "
					   "only C-order arrays are supported "
					   "(save np.ascontiguousarray(arr))");
		} else if (strcmp(key, "shape") == 0 && !have_shape) {
			have_shape = 1;
			a->shape_off = (int64_t)h->i;
			st = shape(h, a);
		} else if (strcmp(key, "descr") == 0 ||
			   strcmp(key, "fortran_order") == 0 ||
			   strcmp(key, "shape") == 0) {
			return bad(h, key_off, "header dict: key '%s' appears "
				   "twice", key);
		} else {
			return bad(h, key_off, "header dict: unknown key '%s' "
				   "(expected 'descr', 'fortran_order' and "
				   "'shape')", key);
		}
		if (st != DT_OK)
			return st;
		skip_ws(h);
		if (h->i < h->end && h->s[h->i] == ',') {
			h->i++;
			continue;
		}
		if (h->i < h->end && h->s[h->i] == '}')
			continue;
		return bad(h, h->i, "header dict: expected ',' or '}', found %s",
			   here(h, buf, sizeof buf));
	}
	if (!have_descr || !have_fortran || !have_shape)
		return bad(h, open_at, "header dict: no '%s' key",
			   !have_descr ? "descr" : !have_fortran ?
			   "fortran_order" : "shape");
	skip_ws(h);
	if (h->i < h->end)
		return bad(h, h->i, "header: unexpected text after the dict");
	return DT_OK;
}

/* Checks the preamble and parses the header of the file in b, filling a
 * and *data_off. */
static enum dt_status
read_header(const char *path, const struct dt_blob *b, struct dt_npy *a,
	    size_t *data_off, struct dt_error *err)
{
	struct hdr h = { .path = path, .s = b->p, .err = err };
	const unsigned char *s = b->p;
	size_t pre, hlen;
	int major;

	if (b->n < 6 || memcmp(s, "\x93NUMPY", 6) != 0) {
		size_t off = 0;

		while (off < 6 && off < b->n &&
		       s[off] == (unsigned char)"\x93NUMPY"[off])
			off++;
		if (off == b->n)
			return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: "
					 "truncated header: the file ends "
					 "inside the 6-byte magic", path, off);
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: bad magic: "
				 "an NPY file starts with \\x93NUMPY (is this "
				 "a .npy file?)", path, off);
	}
	if (b->n < 8)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: truncated "
				 "header: the file ends inside the version",
				 path, b->n);
	major = s[6];
	if (major < 1 || major > 3)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 6: NPY version "
				 "%d.%d is not supported (1.0, 2.0 and 3.0 are)",
				 path, s[6], s[7]);
	pre = major == 1 ? 10 : 12;
	if (b->n < pre)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: truncated "
				 "header: the file ends inside the header "
				 "length (bytes 8 to %zu)", path, b->n, pre - 1);
	hlen = (size_t)dt_le_get(s + 8, major == 1 ? 2 : 4);
	if (b->n - pre < hlen)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: truncated "
				 "header: expected %zu header bytes, the file "
				 "ends after %zu", path, b->n, hlen,
				 b->n - pre);
	h.i = pre;
	h.end = pre + hlen;
	*data_off = h.end;
	return dict(&h, a);
}

enum dt_status
dt_npy_read(const char *path, struct dt_npy *a, struct dt_error *err)
{
	struct dt_blob b;
	size_t data_off = 0, have;
	uint64_t count = 1, bytes;
	unsigned char *buf;
	enum dt_status st;

	memset(a, 0, sizeof *a);
	st = dt_blob_read(path, 0, &b, err);
	if (st != DT_OK)
		return st;
	st = read_header(path, &b, a, &data_off, err);
	if (st != DT_OK)
		goto fail;

	for (int i = 0; i < a->n_dims; i++) {
		uint64_t d = (uint64_t)a->dims[i];

		if (d != 0 && count > (uint64_t)INT64_MAX / a->elem_size / d) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte %lld: "
				       "shape: dimension %d (%" PRIu64 ") makes "
				       "the data larger than this machine can "
				       "address", path, ll(a->shape_off), i,
				       d);
			goto fail;
		}
		count *= d;
	}
	bytes = count * a->elem_size;
	have = b.n - data_off;
	if (have < bytes) {
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: truncated: "
			       "expected %" PRIu64 " bytes of data, found %zu "
			       "(the data starts at byte %zu)", path, b.n,
			       bytes, have, data_off);
		goto fail;
	}
	if (have > bytes) {
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte %" PRIu64 ": "
			       "trailing data after %" PRIu64 " bytes (%" PRIu64
			       " more bytes than the header promises)", path,
			       data_off + bytes, data_off + bytes,
			       (uint64_t)have - bytes);
		goto fail;
	}

	/* The body moves to the front of the buffer, which is then trimmed:
	 * one allocation, suitably aligned for any element type. */
	buf = dt_blob_take(&b);
	if (bytes == 0) {
		free(buf);
		a->data = NULL;
	} else {
		memmove(buf, buf + data_off, (size_t)bytes);
		a->data = dt_xrealloc(buf, (size_t)bytes, 1);
	}
	dt_le_to_host(a->data, a->elem_size, count);
	return DT_OK;
fail:
	dt_blob_fini(&b);
	memset(a, 0, sizeof *a);
	return st;
}

void
dt_npy_fini(struct dt_npy *a)
{
	if (a == NULL)
		return;
	free(a->data);
	memset(a, 0, sizeof *a);
}

/* "(2, 3)" */
static void
shape_str(const struct dt_npy *a, char *out, size_t size)
{
	size_t o = 0;

	o += (size_t)snprintf(out, size, "(");
	for (int i = 0; i < a->n_dims && o < size; i++)
		o += (size_t)snprintf(out + o, size - o, "%s%lld",
				      i ? ", " : "", ll(a->dims[i]));
	if (o < size)
		snprintf(out + o, size - o, a->n_dims == 1 ? ",)" : ")");
}

static int64_t
int_at(const struct dt_npy *a, int64_t i)
{
	switch (a->dtype) {
	case DT_NPY_U8: return ((const uint8_t *)a->data)[i];
	case DT_NPY_I32: return ((const int32_t *)a->data)[i];
	case DT_NPY_I64: return ((const int64_t *)a->data)[i];
	default: break;
	}
	assert(!"int_at: not an integer dtype");
	return 0;
}

static enum dt_status
take_labels(const char *path, const struct dt_npy *lab, int64_t n_classes,
	    struct dt_dataset *ds, struct dt_error *err)
{
	char sh[128];

	shape_str(lab, sh, sizeof sh);
	if (lab->n_dims != 1)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %lld: labels "
				 "must be 1-dimensional (one label per "
				 "record), found shape %s", path,
				 ll(lab->shape_off), sh);
	if (lab->dtype != DT_NPY_U8 && lab->dtype != DT_NPY_I32 &&
	    lab->dtype != DT_NPY_I64)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %lld: labels "
				 "must have an integer dtype ('|u1', '<i4' or "
				 "'<i8'), found '%s'", path,
				 ll(lab->descr_off), lab->descr);
	ds->y = dt_xmalloc((size_t)ds->n, sizeof *ds->y);
	for (int64_t i = 0; i < ds->n; i++) {
		int64_t v = int_at(lab, i);

		if (v < 0 || v >= n_classes)
			return dt_errorf(err, DT_ERR_DATA, "%s: record %lld: "
					 "label %lld out of range [0, %lld)",
					 path, ll(i), ll(v), ll(n_classes));
		ds->y[i] = (int32_t)v;
	}
	return DT_OK;
}

/* Element i of any of the five dtypes as a double. */
static double
double_at(const struct dt_npy *a, int64_t i)
{
	switch (a->dtype) {
	case DT_NPY_F32: return ((const float *)a->data)[i];
	case DT_NPY_F64: return ((const double *)a->data)[i];
	default: return (double)int_at(a, i);
	}
}

/* Regression targets: (records) or (records, K) of any dtype, finite
 * as float32, into ds->t. */
static enum dt_status
take_targets(const char *path, const struct dt_npy *lab,
	     struct dt_dataset *ds, struct dt_error *err)
{
	char sh[128];
	int64_t count;

	shape_str(lab, sh, sizeof sh);
	if (lab->n_dims < 1 || lab->n_dims > 2)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %lld: targets "
				 "must have shape (records,) or (records, K), "
				 "found %s", path, ll(lab->shape_off), sh);
	ds->n_targets = lab->n_dims == 2 ? lab->dims[1] : 1;
	if (ds->n_targets < 1)
		return dt_errorf(err, DT_ERR_DATA, "%s: byte %lld: no targets "
				 "per record (shape %s)", path,
				 ll(lab->shape_off), sh);
	count = ds->n * ds->n_targets;
	ds->t = dt_xmalloc((size_t)count, sizeof *ds->t);
	for (int64_t i = 0; i < count; i++) {
		ds->t[i] = (float)double_at(lab, i);
		if (!isfinite(ds->t[i]))
			return dt_errorf(err, DT_ERR_DATA, "%s: record %lld: "
					 "target %lld is not a finite float32",
					 path, ll(i / ds->n_targets),
					 ll(i % ds->n_targets));
	}
	return DT_OK;
}

static enum dt_status
take_features(const char *path, struct dt_npy *f, struct dt_dataset *ds,
	      struct dt_error *err)
{
	int64_t count = ds->n * ds->sample_size;

	switch (f->dtype) {
	case DT_NPY_U8:
		ds->x_u8 = f->data;
		f->data = NULL;
		return DT_OK;
	case DT_NPY_F32:
		ds->x_f32 = f->data;
		f->data = NULL;
		break;
	case DT_NPY_F64:
		ds->x_f32 = dt_xmalloc((size_t)count, sizeof *ds->x_f32);
		for (int64_t i = 0; i < count; i++)
			ds->x_f32[i] = (float)((const double *)f->data)[i];
		break;
	default:
		ds->x_f32 = dt_xmalloc((size_t)count, sizeof *ds->x_f32);
		for (int64_t i = 0; i < count; i++)
			ds->x_f32[i] = (float)int_at(f, i);
		return DT_OK;
	}
	for (int64_t i = 0; i < count; i++) {
		if (!isfinite(ds->x_f32[i]))
			return dt_errorf(err, DT_ERR_DATA, "%s: record %lld: "
					 "feature %lld is %s (as float32)",
					 path, ll(i / ds->sample_size),
					 ll(i % ds->sample_size),
					 isnan(ds->x_f32[i]) ? "NaN" :
					 "infinite");
	}
	return DT_OK;
}

enum dt_status
dt_dataset_load_npy(const char *features, const char *labels,
		    int64_t n_classes, float scale, struct dt_dataset *ds,
		    struct dt_error *err)
{
	struct dt_npy f, lab = { 0 };
	char sh[128];
	enum dt_status st;

	assert(n_classes >= 0);
	memset(ds, 0, sizeof *ds);
	st = dt_npy_read(features, &f, err);
	if (st != DT_OK)
		return st;
	if (labels != NULL)
		st = dt_npy_read(labels, &lab, err);
	if (st != DT_OK) {
		dt_npy_fini(&f);
		return st;
	}
	shape_str(&f, sh, sizeof sh);
	if (f.n_dims < 2 || f.n_dims > 4) {
		st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte %lld: features "
			       "must have 2 to 4 dimensions (records, then "
			       "each sample's shape), found shape %s", features,
			       ll(f.shape_off), sh);
		goto out;
	}
	if (f.dims[0] == 0) {
		st = dt_errorf(err, DT_ERR_DATA, "%s: no records (shape %s)",
			       features, sh);
		goto out;
	}
	if (lab.n_dims >= 1 && f.dims[0] != lab.dims[0]) {
		st = dt_errorf(err, DT_ERR_DATA, "%s: features has %lld "
			       "records, labels has %lld (%s); the two files "
			       "must describe the same samples", features,
			       ll(f.dims[0]), ll(lab.dims[0]), labels);
		goto out;
	}
	ds->n = f.dims[0];
	ds->n_shape = f.n_dims - 1;
	ds->sample_size = 1;
	for (int i = 0; i < ds->n_shape; i++) {
		ds->shape[i] = f.dims[i + 1];
		ds->sample_size *= f.dims[i + 1];
	}
	if (ds->sample_size == 0) {
		st = dt_errorf(err, DT_ERR_DATA, "%s: byte %lld: samples of "
			       "size 0 (shape %s)", features, ll(f.shape_off),
			       sh);
		goto out;
	}
	if (labels == NULL)
		st = DT_OK;
	else if (n_classes == 0)
		st = take_targets(labels, &lab, ds, err);
	else
		st = take_labels(labels, &lab, n_classes, ds, err);
	if (st == DT_OK)
		st = take_features(features, &f, ds, err);
	ds->scale = scale != 0 ? scale : dt_dataset_auto_scale(ds);
out:
	dt_npy_fini(&f);
	dt_npy_fini(&lab);
	if (st != DT_OK)
		dt_dataset_fini(ds);
	return st;
}
