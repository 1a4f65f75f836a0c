/* SPDX-License-Identifier: MIT */
/* text.c - character-level language-model data (as in Karpathy's
 * char-rnn and nanoGPT's shakespeare_char): a text read as bytes or as
 * UTF-8 code points, a vocabulary of the distinct units in ascending
 * order (so the same text always gives the same ids), the vocabulary as a
 * small checked binary file, and the text turned into token ids that
 * tokens.c cuts into samples. UTF-8 is decoded strictly, as RFC 3629 and
 * the Unicode standard's table 3-7 define it: no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
#include "data/data.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "data/bpe.h"
#include "data/data_priv.h"
#include "util/alloc.h"
#include "util/endian.h"
#include "util/fileio.h"
#include "util/meter.h"

#define MAX_CODE_POINT 0x10FFFFu
#define VOCAB_MAGIC "DTVOCAB\0"
#define VOCAB_VERSION 1u
#define VOCAB_HEADER 32u
/* Bytes of text between two progress reports. */
#define METER_STEP ((size_t)1 << 20)

/* Decodes the character at s[i] (i < n) into *cp and returns its length,
 * or 0 with *why describing the fault. */
static size_t
utf8_next(const unsigned char *s, size_t n, size_t i, uint32_t *cp,
	  char *why, size_t whysz)
{
	unsigned char c = s[i];
	unsigned char lo = 0x80, hi = 0xBF;
	size_t len;
	uint32_t v;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		v = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0;	/* overlong below */
		if (c == 0xED)
			hi = 0x9F;	/* surrogates above */
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		v = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;
		if (c == 0xF4)
			hi = 0x8F;	/* above U+10FFFF */
	} else {
		snprintf(why, whysz, "byte 0x%02X cannot start a character", c);
		return 0;
	}
	for (size_t k = 1; k < len; k++) {
		unsigned char d;

		if (i + k >= n) {
			snprintf(why, whysz, "the text ends inside a %zu-byte "
				 "character", len);
			return 0;
		}
		d = s[i + k];
		if (d < lo || d > hi) {
			snprintf(why, whysz, "byte 0x%02X cannot follow 0x%02X%s",
				 d, s[i + k - 1],
				 k == 1 && (lo != 0x80 || hi != 0xBF) ?
				 " (an overlong form, a surrogate or a code "
				 "point above U+10FFFF)" : "");
			return 0;
		}
		v = v << 6 | (d & 0x3F);
		lo = 0x80;
		hi = 0xBF;
	}
	*cp = v;
	return len;
}

static enum dt_status
bad_utf8(const char *path, size_t off, const char *why, struct dt_error *err)
{
	return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: invalid UTF-8: %s "
			 "(read text that is not UTF-8 as bytes)", path, off,
			 why);
}

enum dt_status
dt_vocab_build(const char *path, enum dt_text_unit unit, struct dt_vocab *v,
	       struct dt_error *err)
{
	struct dt_blob b;
	size_t bits = unit == DT_TEXT_BYTES ? 256 : MAX_CODE_POINT + 1;
	unsigned char *seen;
	enum dt_status st;
	int64_t count = 0;

	assert(unit == DT_TEXT_BYTES || unit == DT_TEXT_CHARS);
	memset(v, 0, sizeof *v);
	st = dt_blob_read(path, 1, &b, err);
	if (st != DT_OK)
		return st;
	if (b.n == 0) {
		dt_blob_fini(&b);
		return dt_errorf(err, DT_ERR_DATA, "%s: empty text: no "
				 "vocabulary to build", path);
	}
	seen = dt_xcalloc(bits / 8 + 1, 1);
	dt_meter_begin("scan", path, (int64_t)b.n);
	for (size_t i = 0, next = 0; i < b.n;) {
		uint32_t cp = b.p[i];
		size_t len = 1;
		char why[160];

		if (i >= next) {
			dt_meter_update((int64_t)i);
			next = i + METER_STEP;
		}

		if (unit == DT_TEXT_CHARS) {
			len = utf8_next(b.p, b.n, i, &cp, why, sizeof why);
			if (len == 0) {
				st = bad_utf8(path, i, why, err);
				break;
			}
		}
		seen[cp >> 3] |= (unsigned char)(1u << (cp & 7));
		i += len;
	}
	dt_meter_end();
	dt_blob_fini(&b);
	if (st != DT_OK) {
		free(seen);
		return st;
	}
	for (size_t u = 0; u < bits; u++)
		count += seen[u >> 3] >> (u & 7) & 1;
	v->unit = unit;
	v->size = count;
	v->units = dt_xmalloc((size_t)count, sizeof *v->units);
	count = 0;
	for (size_t u = 0; u < bits; u++)
		if (seen[u >> 3] >> (u & 7) & 1)
			v->units[count++] = (uint32_t)u;
	free(seen);
	return DT_OK;
}

void
dt_vocab_fini(struct dt_vocab *v)
{
	if (v == NULL)
		return;
	free(v->units);
	dt_bpe_free(v->bpe);
	memset(v, 0, sizeof *v);
}

enum dt_status
dt_vocab_load_bpe(const char *path, struct dt_vocab *v, struct dt_error *err)
{
	memset(v, 0, sizeof *v);
	if (dt_bpe_load(path, &v->bpe, err) != DT_OK)
		return err->status;
	v->unit = DT_TEXT_BPE;
	v->size = dt_bpe_size(v->bpe);
	return DT_OK;
}

int64_t
dt_vocab_id(const struct dt_vocab *v, uint32_t unit)
{
	int64_t lo = 0, hi = v->size;

	if (v->unit == DT_TEXT_BPE)
		return unit < 256 ? dt_bpe_byte_id(v->bpe, (uint8_t)unit) : -1;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (v->units[mid] < unit)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < v->size && v->units[lo] == unit ? lo : -1;
}

size_t
dt_vocab_piece(const struct dt_vocab *v, int64_t id, char out[4])
{
	uint32_t c;

	assert(id >= 0 && id < v->size && v->unit != DT_TEXT_BPE);
	c = v->units[id];
	if (v->unit == DT_TEXT_BYTES || c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xC0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xE0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 0x3F));
		out[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 0x3F));
	out[2] = (char)(0x80 | (c >> 6 & 0x3F));
	out[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

/* ---- the vocabulary file ------------------------------------------------ */

enum dt_status
dt_vocab_save(const struct dt_vocab *v, const char *path,
	      struct dt_error *err)
{
	size_t len = VOCAB_HEADER + 4 * (size_t)v->size + 4;
	unsigned char *buf;
	char tmp[4096];
	size_t done = 0;
	enum dt_status st = DT_OK;
	int fd, n;

	if (v->unit == DT_TEXT_BPE)
		return dt_bpe_save(v->bpe, path, err);
	buf = dt_xcalloc(len, 1);
	memcpy(buf, VOCAB_MAGIC, 8);
	dt_le_put(buf + 8, VOCAB_VERSION, 4);
	dt_le_put(buf + 12, VOCAB_HEADER, 4);
	dt_le_put(buf + 16, (uint32_t)v->unit, 4);
	dt_le_put(buf + 24, (uint64_t)v->size, 8);
	for (int64_t i = 0; i < v->size; i++)
		dt_le_put(buf + VOCAB_HEADER + 4 * i, v->units[i], 4);
	dt_le_put(buf + len - 4, crc32_z(0, buf, len - 4), 4);

	n = snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (n < 0 || (size_t)n >= sizeof tmp) {
		free(buf);
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", path);
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		free(buf);
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s", tmp,
				 strerror(errno));
	}
	while (done < len) {
		ssize_t w = write(fd, buf + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			st = dt_errorf(err, DT_ERR_IO, "%s: write failed: %s",
				       tmp, strerror(errno));
			break;
		}
		done += (size_t)w;
	}
	st = dt_file_sync_close(fd, tmp, st, err);
	if (st == DT_OK)
		st = dt_file_rename(tmp, path, err);
	else
		unlink(tmp);
	free(buf);
	return st;
}

/* Checks the fields of a vocabulary file in b; fills v (but units). */
static enum dt_status
check_vocab(const char *path, const struct dt_blob *b, struct dt_vocab *v,
	    size_t *units_at, struct dt_error *err)
{
	const unsigned char *p = b->p;
	uint64_t version, hsize, unit, count, max, want, crc, calc;

	if (b->n < VOCAB_HEADER)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: truncated "
				 "header: expected %u bytes, the file has %zu",
				 path, b->n, VOCAB_HEADER, b->n);
	if (memcmp(p, VOCAB_MAGIC, 8) != 0)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 0: bad magic: a "
				 "vocabulary file starts with DTVOCAB (is this "
				 "a dtrain vocabulary?)", path);
	version = dt_le_get(p + 8, 4);
	if (version != VOCAB_VERSION)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 8: version %llu "
				 "is not supported (%u is)", path,
				 (unsigned long long)version, VOCAB_VERSION);
	hsize = dt_le_get(p + 12, 4);
	if (hsize < VOCAB_HEADER || hsize > b->n)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 12: header size "
				 "%llu, expected %u to the file size %zu", path,
				 (unsigned long long)hsize, VOCAB_HEADER, b->n);
	unit = dt_le_get(p + 16, 4);
	if (unit != DT_TEXT_BYTES && unit != DT_TEXT_CHARS)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 16: unit %llu, "
				 "expected 1 (bytes) or 2 (chars)", path,
				 (unsigned long long)unit);
	count = dt_le_get(p + 24, 8);
	max = unit == DT_TEXT_BYTES ? 256 : MAX_CODE_POINT + 1;
	if (count < 1 || count > max)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte 24: count %llu "
				 "out of range [1, %llu]", path,
				 (unsigned long long)count,
				 (unsigned long long)max);
	want = hsize + 4 * count + 4;
	if (b->n < want)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: truncated: "
				 "expected %llu bytes, the file has %zu", path,
				 b->n, (unsigned long long)want, b->n);
	if (b->n > want)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %llu: trailing "
				 "data after %llu bytes", path,
				 (unsigned long long)want,
				 (unsigned long long)want);
	crc = dt_le_get(p + want - 4, 4);
	calc = crc32_z(0, p, (size_t)want - 4);
	if (crc != calc)
		return dt_errorf(err, DT_ERR_FORMAT, "%s: byte %llu: CRC-32 "
				 "mismatch: stored 0x%08llx, computed 0x%08llx "
				 "(the file is damaged)", path,
				 (unsigned long long)(want - 4),
				 (unsigned long long)crc,
				 (unsigned long long)calc);
	v->unit = (enum dt_text_unit)unit;
	v->size = (int64_t)count;
	*units_at = (size_t)hsize;
	return DT_OK;
}

enum dt_status
dt_vocab_load(const char *path, struct dt_vocab *v, struct dt_error *err)
{
	struct dt_blob b;
	size_t at = 0;
	enum dt_status st;

	memset(v, 0, sizeof *v);
	st = dt_blob_read(path, 0, &b, err);
	if (st != DT_OK)
		return st;
	st = check_vocab(path, &b, v, &at, err);
	if (st != DT_OK)
		goto out;
	v->units = dt_xmalloc((size_t)v->size, sizeof *v->units);
	for (int64_t i = 0; i < v->size; i++) {
		size_t off = at + 4 * (size_t)i;
		uint32_t u = (uint32_t)dt_le_get(b.p + off, 4);

		if (i > 0 && u <= v->units[i - 1]) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: unit "
				       "%u is not above the one before it (%u): "
				       "units must be strictly ascending", path,
				       off, u, v->units[i - 1]);
			break;
		}
		if ((v->unit == DT_TEXT_BYTES && u > 255) ||
		    u > MAX_CODE_POINT || (u >= 0xD800 && u <= 0xDFFF)) {
			st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte %zu: unit "
				       "%u is not a valid %s", path, off, u,
				       v->unit == DT_TEXT_BYTES ? "byte" :
				       "code point");
			break;
		}
		v->units[i] = u;
	}
out:
	dt_blob_fini(&b);
	if (st != DT_OK)
		dt_vocab_fini(v);
	return st;
}

/* ---- encoding ----------------------------------------------------------- */

enum dt_status
dt_text_encode(const char *path, const struct dt_vocab *v, int64_t context,
	       int64_t stride, struct dt_token_data *td, struct dt_error *err)
{
	struct dt_blob b;
	int32_t *table;		/* (largest unit + 1): id or -1 */
	uint32_t top;
	int wide = v->size > 65536;
	void *ids;
	int64_t n = 0;
	enum dt_status st;

	assert(v->size > 0 && context >= 1 && stride >= 0);
	if (v->unit == DT_TEXT_BPE)
		return dt_bpe_text_encode(v->bpe, path, context, stride, td,
					  err);
	top = v->units[v->size - 1];
	memset(td, 0, sizeof *td);
	st = dt_blob_read(path, 1, &b, err);
	if (st != DT_OK)
		return st;
	if (b.n == 0) {
		dt_blob_fini(&b);
		return dt_errorf(err, DT_ERR_DATA, "%s: empty text", path);
	}
	table = dt_xmalloc((size_t)top + 1, sizeof *table);
	memset(table, 0xff, ((size_t)top + 1) * sizeof *table);
	for (int64_t i = 0; i < v->size; i++)
		table[v->units[i]] = (int32_t)i;
	ids = dt_xmalloc(b.n, wide ? 4 : 2);

	dt_meter_begin("encode", path, (int64_t)b.n);
	for (size_t i = 0, next = 0; i < b.n;) {
		uint32_t cp = b.p[i];
		size_t len = 1;
		char why[160];
		int32_t id;

		if (i >= next) {
			dt_meter_update((int64_t)i);
			next = i + METER_STEP;
		}

		if (v->unit == DT_TEXT_CHARS) {
			len = utf8_next(b.p, b.n, i, &cp, why, sizeof why);
			if (len == 0) {
				st = bad_utf8(path, i, why, err);
				break;
			}
		}
		id = cp <= top ? table[cp] : -1;
		if (id < 0) {
			if (v->unit == DT_TEXT_BYTES)
				st = dt_errorf(err, DT_ERR_DATA, "%s: byte %zu: "
					       "byte 0x%02X is not in the "
					       "vocabulary (was it built from "
					       "another text?)", path, i, cp);
			else
				st = dt_errorf(err, DT_ERR_DATA, "%s: byte %zu: "
					       "character U+%04X is not in the "
					       "vocabulary (was it built from "
					       "another text?)", path, i, cp);
			break;
		}
		if (wide)
			((uint32_t *)ids)[n++] = (uint32_t)id;
		else
			((uint16_t *)ids)[n++] = (uint16_t)id;
		i += len;
	}
	dt_meter_end();
	free(table);
	dt_blob_fini(&b);
	if (st != DT_OK) {
		free(ids);
		return st;
	}
	ids = dt_xrealloc(ids, (size_t)n, wide ? 4 : 2);
	td->n_tokens = n;
	td->elem_size = wide ? 4 : 2;
	td->tokens = ids;
	td->vocab_size = v->size;
	td->owned = ids;
	td->owned_len = (size_t)n * (size_t)td->elem_size;
	st = dt_tokens_window(td, path, context, stride, err);
	if (st != DT_OK) {
		free(ids);
		memset(td, 0, sizeof *td);
		return st;
	}
	return DT_OK;
}

/* ---- counting, for plans ----------------------------------------------- */

enum dt_status
dt_text_count(const char *path, struct dt_text_count *c, struct dt_error *err)
{
	unsigned char *buf = dt_xmalloc(METER_STEP, 1);
	unsigned char *seen = dt_xcalloc((MAX_CODE_POINT >> 3) + 1, 1);
	uint32_t cp = 0;
	int more = 0, n;
	gzFile f;

	memset(c, 0, sizeof *c);
	f = gzopen(path, "rb");
	if (f == NULL) {
		free(buf);
		free(seen);
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 errno != 0 ? strerror(errno) : "out of memory");
	}
	/* Lead bytes start characters; continuation bytes (10xxxxxx) finish
	 * them. Only the count matters here: the loader judges validity. */
	while ((n = gzread(f, buf, (unsigned)METER_STEP)) > 0) {
		for (int i = 0; i < n; i++) {
			unsigned char b = buf[i];

			if ((b & 0xC0) == 0x80 && more > 0) {
				cp = (cp << 6) | (b & 0x3F);
				more--;
			} else {
				c->chars++;
				more = b < 0x80 ? 0 : b < 0xE0 ? 1 :
				       b < 0xF0 ? 2 : 3;
				cp = b < 0x80 ? b : b < 0xE0 ? (b & 0x1Fu) :
				     b < 0xF0 ? (b & 0x0Fu) : (b & 0x07u);
			}
			if (more == 0 && cp <= MAX_CODE_POINT &&
			    !(seen[cp >> 3] & (1u << (cp & 7)))) {
				seen[cp >> 3] |= (unsigned char)(1u << (cp & 7));
				c->distinct_chars++;
			}
		}
		c->bytes += n;
	}
	if (n < 0) {
		int zerr = 0;
		enum dt_status st = dt_errorf(err, DT_ERR_FORMAT, "%s: byte "
					      "%lld: %s", path,
					      (long long)c->bytes,
					      gzerror(f, &zerr));

		gzclose(f);
		free(buf);
		free(seen);
		return st;
	}
	gzclose(f);
	free(buf);
	free(seen);
	return DT_OK;
}
