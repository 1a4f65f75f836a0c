/* SPDX-License-Identifier: MIT */
/* fetch.c - local and remote data sources (see fetch.h for the contract).
 *
 * The download is libcurl's easy interface with our own header and body
 * callbacks, because the decisions that matter happen when the body
 * starts: a 4xx or 5xx body is never written, a 206 must continue exactly
 * where the .part file ends (Content-Range, RFC 9110 section 14.4), and a
 * 200 after a Range request means the server ignored it (RFC 9110 section
 * 14.2), so the .part file is emptied and the file read from byte 0. We
 * send our own Range header instead of CURLOPT_RESUME_FROM because libcurl
 * refuses a 200 answer to the latter, and we want to accept it. sha256 is
 * OpenSSL's EVP interface. */
#include "data/fetch.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "data/data_priv.h"
#include "util/alloc.h"
#include "util/fileio.h"
#include "util/span.h"

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "dev"
#endif

/* Bytes of the URL's hash that name a cache file (as hex: 16 digits). */
#define NAME_HASH_BYTES 8
/* Longest basename kept in a cache file name. */
#define NAME_BASE_MAX 96
/* Restarts from byte 0 (server ignored or botched a Range) per fetch, on
 * top of the retries: each one needs a misbehaving server, so a small
 * bound suffices and a pathological server cannot loop us forever. */
#define MAX_RESTARTS 3
/* Redraw the progress bar at most this often. */
#define PROGRESS_INTERVAL_NS 100000000LL

static long long
ll(int64_t v)
{
	return (long long)v;
}

void
dt_fetch_opts_init(struct dt_fetch_opts *opts)
{
	memset(opts, 0, sizeof *opts);
	opts->retries = 4;
	opts->retry_delay_ms = 1000;
	opts->retry_max_delay_ms = 30000;
	opts->connect_timeout_s = 30;
	opts->low_speed_limit = 1;
	opts->low_speed_time_s = 60;
	opts->max_redirects = 10;
}

/* ---- hashing ------------------------------------------------------------ */

static void
to_hex(const unsigned char *md, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[2 * n] = '\0';
}

static EVP_MD_CTX *
sha256_begin(void)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	/* Both fail only when OpenSSL cannot allocate: STYLE.md's one rule. */
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		fprintf(stderr, "dtrain: OpenSSL cannot set up sha256\n");
		abort();
	}
	return ctx;
}

static void
sha256_end(EVP_MD_CTX *ctx, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (EVP_DigestFinal_ex(ctx, md, &len) != 1 || len != 32) {
		fprintf(stderr, "dtrain: OpenSSL sha256 failed\n");
		abort();
	}
	EVP_MD_CTX_free(ctx);
	to_hex(md, 32, hex);
}

enum dt_status
dt_sha256_file(const char *path, char hex[65], struct dt_error *err)
{
	unsigned char *buf;
	EVP_MD_CTX *ctx;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int64_t off = 0;
	ssize_t n;

	if (fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	buf = dt_xmalloc(1 << 20, 1);
	ctx = sha256_begin();
	while ((n = read(fd, buf, 1 << 20)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			dt_errorf(err, DT_ERR_IO, "%s: byte %lld: read failed: "
				  "%s", path, ll(off), strerror(errno));
			EVP_MD_CTX_free(ctx);
			free(buf);
			close(fd);
			return DT_ERR_IO;
		}
		if (EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)
			abort();
		off += n;
	}
	free(buf);
	close(fd);
	sha256_end(ctx, hex);
	return DT_OK;
}

/* ---- names and places --------------------------------------------------- */

enum kind { KIND_PATH, KIND_HTTP, KIND_HTTPS };

/* Classifies src->url and checks src->sha256. *path is the local path for
 * KIND_PATH (file:// stripped). */
static enum dt_status
classify(const struct dt_fetch_source *src, enum kind *kind, const char **path,
	 struct dt_error *err)
{
	const char *u = src->url;
	size_t scheme = 0;

	if (u == NULL || *u == '\0')
		return dt_errorf(err, DT_ERR_USAGE, "empty data source: give "
				 "a path or an http(s):// URL");
	if (src->sha256 != NULL && src->sha256[0] != '\0') {
		size_t n = strlen(src->sha256);
		size_t i;

		for (i = 0; i < n && isxdigit((unsigned char)src->sha256[i]);
		     i++)
			;
		if (n != 64 || i != n)
			return dt_errorf(err, DT_ERR_USAGE,
					 "%s: sha256 must be 64 hex digits, "
					 "found \"%s\"", u, src->sha256);
	}
	if (src->size < 0)
		return dt_errorf(err, DT_ERR_USAGE, "%s: size must be >= 0, "
				 "found %lld", u, ll(src->size));

	while (isalnum((unsigned char)u[scheme]) || u[scheme] == '+' ||
	       u[scheme] == '-' || u[scheme] == '.')
		scheme++;
	if (scheme == 0 || strncmp(u + scheme, "://", 3) != 0) {
		*kind = KIND_PATH;
		*path = u;
		return DT_OK;
	}
	if (scheme == 4 && strncasecmp(u, "http", 4) == 0)
		*kind = KIND_HTTP;
	else if (scheme == 5 && strncasecmp(u, "https", 5) == 0)
		*kind = KIND_HTTPS;
	else if (scheme == 4 && strncasecmp(u, "file", 4) == 0) {
		if (u[7] != '/')
			return dt_errorf(err, DT_ERR_USAGE,
					 "%s: a file URL must name an absolute "
					 "path (file:///PATH)", u);
		*kind = KIND_PATH;
		*path = u + 7;
		return DT_OK;
	} else
		return dt_errorf(err, DT_ERR_USAGE,
				 "%s: unsupported URL scheme \"%.*s\": use a "
				 "path, http:// or https://", u, (int)scheme,
				 u);
	if (u[scheme + 3] == '\0' || u[scheme + 3] == '/' ||
	    u[scheme + 3] == '?' || u[scheme + 3] == '#')
		return dt_errorf(err, DT_ERR_USAGE, "%s: the URL has no host",
				 u);
	return DT_OK;
}

enum dt_status
dt_fetch_cache_path(const struct dt_fetch_opts *o, char *dir, size_t size,
		   struct dt_error *err)
{
	const char *base = o->cache_dir;
	const char *tail = "";
	int n;

	if (base == NULL || *base == '\0') {
		base = getenv("DTRAIN_CACHE");
		if (base == NULL || *base == '\0') {
			base = getenv("XDG_CACHE_HOME");
			tail = "/dtrain";
			/* The XDG spec: a relative value is to be ignored. */
			if (base == NULL || base[0] != '/') {
				base = getenv("HOME");
				tail = "/.cache/dtrain";
			}
		}
	}
	if (base == NULL || *base == '\0')
		return dt_errorf(err, DT_ERR_IO, "cannot find a cache "
				 "directory for downloads: set DTRAIN_CACHE "
				 "(or HOME)");
	n = snprintf(dir, size, "%s%s", base, tail);
	if (n < 0 || (size_t)n >= size)
		return dt_errorf(err, DT_ERR_USAGE, "cache directory %s%s: "
				 "path too long", base, tail);
	return DT_OK;
}

enum dt_status
dt_fetch_make_dirs(const char *dir, struct dt_error *err)
{
	char *p = dt_xstrdup(dir);
	enum dt_status st = DT_OK;

	for (char *s = p + 1;; s++) {
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			st = dt_errorf(err, DT_ERR_IO, "%s: cannot create the "
				       "cache directory: %s", p,
				       strerror(errno));
			break;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	return st;
}

/* NAME for url: 16 hex digits of its sha256, '-', a cleaned basename. */
static void
cache_name(const char *url, char *name, size_t size)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char hex[2 * NAME_HASH_BYTES + 1];
	char base[NAME_BASE_MAX + 1];
	const char *p = strstr(url, "://") + 3;
	const char *end = p + strcspn(p, "?#");
	const char *start;
	size_t n = 0;

	if (EVP_Digest(url, strlen(url), md, &len, EVP_sha256(), NULL) != 1)
		abort();
	to_hex(md, NAME_HASH_BYTES, hex);

	/* The last path segment; with no path at all (http://host) the host
	 * part is not a file name, so "index" stands in. */
	start = end;
	while (start > p && start[-1] != '/')
		start--;
	if (start == p)
		start = end;
	for (const char *s = start; s < end && n < NAME_BASE_MAX; s++) {
		unsigned char c = (unsigned char)*s;

		base[n++] = isalnum(c) || c == '.' || c == '-' || c == '_' ?
			    (char)c : '_';
	}
	base[n] = '\0';
	if (n == 0)
		strcpy(base, "index");
	if (base[0] == '.')	/* no hidden files, no ".." */
		base[0] = '_';
	snprintf(name, size, "%s-%s", hex, base);
}

/* Copies s into out[0..size) or fails without touching out. */
static enum dt_status
give_path(const char *s, char *out, size_t size, struct dt_error *err)
{
	size_t n = strlen(s);

	if (n >= size)
		return dt_errorf(err, DT_ERR_USAGE, "%s: path longer than %zu "
				 "bytes", s, size - 1);
	memcpy(out, s, n + 1);
	return DT_OK;
}

/* Where a URL lives in the cache: dir, and file = dir/NAME. */
static enum dt_status
cache_paths(const char *url, const struct dt_fetch_opts *o, char *dir,
	    char *file, size_t size, struct dt_error *err)
{
	char name[2 * NAME_HASH_BYTES + NAME_BASE_MAX + 4];
	enum dt_status st = dt_fetch_cache_path(o, dir, size, err);
	int n;

	if (st != DT_OK)
		return st;
	cache_name(url, name, sizeof name);
	/* ".part" and ".lock" are appended later; leave them room. */
	n = snprintf(file, size - 8, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= size - 8)
		return dt_errorf(err, DT_ERR_USAGE, "cache directory %s: path "
				 "too long", dir);
	return DT_OK;
}

/* ---- verification ------------------------------------------------------- */

/* Checks path against src->size and src->sha256. what names the file in
 * messages (the URL for a download). o: hash through the digest cache
 * (dt_fetch_digest), for files that stay; NULL for a .part file. On a
 * mismatch returns DT_ERR_DATA. */
static enum dt_status
verify(const char *path, const char *what, const struct dt_fetch_source *src,
       const struct dt_fetch_opts *o, struct dt_error *err)
{
	struct stat sb;
	char hex[65];
	enum dt_status st;

	if (stat(path, &sb) != 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot stat: %s", path,
				 strerror(errno));
	if (src->size > 0 && (int64_t)sb.st_size != src->size)
		return dt_errorf(err, DT_ERR_DATA, "%s: size mismatch: "
				 "expected %lld bytes, got %lld", what,
				 ll(src->size), ll((int64_t)sb.st_size));
	if (src->sha256 == NULL || src->sha256[0] == '\0')
		return DT_OK;
	st = o != NULL ? dt_fetch_digest(path, o, hex, err) :
			 dt_sha256_file(path, hex, err);
	if (st != DT_OK)
		return st;
	if (strcasecmp(hex, src->sha256) != 0)
		return dt_errorf(err, DT_ERR_DATA, "%s: sha256 mismatch: "
				 "expected %s, got %s", what, src->sha256, hex);
	return DT_OK;
}

static enum dt_status
fetch_local(const struct dt_fetch_source *src, const char *path,
	    const struct dt_fetch_opts *o, char *out, size_t size,
	    struct dt_error *err)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	enum dt_status st;

	if (fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", path,
				 strerror(errno));
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return dt_errorf(err, DT_ERR_IO, "%s: not a regular file",
				 path);
	}
	close(fd);
	st = verify(path, path, src, o, err);
	if (st != DT_OK)
		return st;
	return give_path(path, out, size, err);
}

/* ---- one transfer ------------------------------------------------------- */

/* Why a callback stopped the transfer. */
enum stop {
	STOP_NONE,
	STOP_HTTP,		/* the answer is not a 2xx */
	STOP_TOO_BIG,		/* over src->size or max_bytes */
	STOP_WRITE,		/* writing the .part file failed */
	STOP_BAD_RANGE,		/* a 206 not starting where we asked */
	STOP_INTERRUPT,		/* *opts->interrupt */
};

/* NAME.part.meta: the validator (RFC 9110 section 8.8: a strong ETag,
 * else Last-Modified, else none) and the total size of the response the
 * .part file began, so a later Range request is made conditional with
 * If-Range (RFC 9110 section 13.1.5) and a changed file is fetched whole
 * instead of being appended to bytes of another version. Two lines:
 * the validator (may be empty) and the total size (-1 if not known). */
struct part_meta {
	int known;		/* the .part bytes have a recorded origin */
	char validator[128];
	int64_t total;
};

/* Reads NAME.part.meta into *m; m->known = 0 if it is missing or
 * malformed. */
static void
part_meta_read(const char *path, struct part_meta *m)
{
	char buf[256];
	ssize_t n;
	char *nl, *end;
	int fd;

	memset(m, 0, sizeof *m);
	m->total = -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	nl = strchr(buf, '\n');
	if (nl == NULL || (size_t)(nl - buf) >= sizeof m->validator)
		return;
	*nl = '\0';
	errno = 0;
	m->total = strtoll(nl + 1, &end, 10);
	if (errno != 0 || end == nl + 1 || (*end != '\n' && *end != '\0') ||
	    m->total < -1)
		return;
	memcpy(m->validator, buf, (size_t)(nl - buf) + 1);
	m->known = 1;
}

/* Writes *m to path (replacing it); -1 with errno on failure. */
static int
part_meta_write(const char *path, const struct part_meta *m)
{
	char buf[256];
	int n, fd, rc = 0;

	n = snprintf(buf, sizeof buf, "%s\n%lld\n", m->validator,
		     (long long)m->total);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0666);
	if (fd < 0)
		return -1;
	if (n < 0 || (size_t)n >= sizeof buf || write(fd, buf, (size_t)n) != n)
		rc = -1;
	if (close(fd) != 0)
		rc = -1;
	return rc;
}

/* The state of one attempt. The header fields describe the latest
 * response: a redirect's headers are replaced by the next response's. */
struct xfer {
	const struct dt_fetch_opts *o;
	const char *url;
	const char *label;	/* name on the progress bar */
	int fd;			/* NAME.part, O_APPEND */
	int64_t have;		/* bytes in .part when the body began */
	int64_t got;		/* body bytes written by this attempt */
	int64_t limit;		/* max file size; 0 = none */
	int limit_is_size;	/* limit comes from src->size */

	struct dt_fetch_header h;	/* what the latest response said */

	/* What the .part file's bytes are a prefix of (NAME.part.meta),
	 * kept across the attempts of one download and across runs. */
	const char *meta_path;
	struct part_meta *meta;

	int started;		/* the body of a 2xx answer began */
	int restarted;		/* that body replaced the .part content */
	enum stop stop;
	int saved_errno;
	int discard;		/* the .part content is junk: delete it */

	struct timespec t0, last_draw;
	int drawn;
};

static int64_t
elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000LL +
	       (b->tv_nsec - a->tv_nsec);
}

/* curl hands over one header line at a time (not NUL-terminated). */
static size_t
on_header(char *data, size_t size, size_t count, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * count;

	dt_fetch_parse_header_line(&x->h, data, len);
	return len;
}

/* The size limit, checked as soon as the length is announced. */
static int
begin_limits(struct xfer *x)
{
	/* Content-Length comes from the server: compared by subtraction,
	 * as have + a length near INT64_MAX would overflow. */
	if (x->limit > 0 && x->h.content_length >= 0 &&
	    x->h.content_length > x->limit - x->have) {
		x->stop = STOP_TOO_BIG;
		return -1;
	}
	return 0;
}

/* Called when the body of the final answer starts (or, for an empty body,
 * after the transfer): decides whether it is data and where it goes. */
static int
begin_body(struct xfer *x)
{
	x->started = 1;
	if (x->h.status < 200 || x->h.status >= 300) {
		x->stop = STOP_HTTP;
		return -1;
	}
	if (x->h.status == 206) {
		if (x->h.range_start != x->have ||
		    (x->meta->total >= 0 &&
		     x->h.range_total != x->meta->total)) {
			x->stop = STOP_BAD_RANGE;
			return -1;
		}
		return begin_limits(x);
	}
	/* A whole body: record what the .part bytes will be a prefix of. */
	snprintf(x->meta->validator, sizeof x->meta->validator, "%s",
		 x->h.etag[0] != '\0' ? x->h.etag : x->h.last_modified);
	x->meta->total = x->h.content_length;
	x->meta->known = 1;
	if (part_meta_write(x->meta_path, x->meta) != 0) {
		x->saved_errno = errno;
		x->stop = STOP_WRITE;
		return -1;
	}
	if (x->have > 0) {
		/* The server ignored our Range and sends the whole file. */
		if (ftruncate(x->fd, 0) != 0) {
			x->saved_errno = errno;
			x->stop = STOP_WRITE;
			return -1;
		}
		x->have = 0;
		x->restarted = 1;
	}
	return begin_limits(x);
}

static size_t
on_body(char *data, size_t size, size_t count, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * count;
	size_t done = 0;

	if (!x->started && begin_body(x) != 0)
		return 0;
	if (x->limit > 0 && x->have + x->got + (int64_t)len > x->limit) {
		x->stop = STOP_TOO_BIG;
		return 0;
	}
	while (done < len) {
		ssize_t n = write(x->fd, data + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			x->saved_errno = errno;
			x->stop = STOP_WRITE;
			return 0;
		}
		done += (size_t)n;
	}
	x->got += (int64_t)len;
	return len;
}

/* "12.3 MiB" into buf. */
static void
human(double v, char *buf, size_t size)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
}

/* One line on stderr: name, bytes, percentage, rate, ETA. total < 0 when
 * the size is not known. */
static void
draw(struct xfer *x, int64_t now_bytes, int64_t total)
{
	struct timespec now;
	double secs, rate;
	char a[32], b[32], r[32], eta[32] = "";

	clock_gettime(CLOCK_MONOTONIC, &now);
	secs = (double)elapsed_ns(&x->t0, &now) / 1e9;
	rate = secs > 0 ? (double)x->got / secs : 0;
	human((double)now_bytes, a, sizeof a);
	human(rate, r, sizeof r);
	if (total > 0) {
		human((double)total, b, sizeof b);
		if (rate > 0 && total >= now_bytes) {
			char span[24];

			dt_fmt_span(span, sizeof span,
				    (double)(total - now_bytes) / rate);
			snprintf(eta, sizeof eta, "  ETA %s", span);
		}
		fprintf(stderr, "\r%-32.32s %10s / %-10s %3d%%  %10s/s%s\033[K",
			x->label, a, b, (int)(100 * now_bytes / total), r,
			eta);
	} else {
		fprintf(stderr, "\r%-32.32s %10s  %10s/s\033[K", x->label, a,
			r);
	}
	fflush(stderr);
	x->last_draw = now;
	x->drawn = 1;
}

static int
on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow,
	    curl_off_t ultotal, curl_off_t ulnow)
{
	struct xfer *x = ud;
	struct timespec now;

	(void)ultotal;
	(void)ulnow;
	if (x->o->interrupt != NULL && *x->o->interrupt) {
		x->stop = STOP_INTERRUPT;
		return 1;
	}
	if (!x->o->progress || !x->started || x->stop != STOP_NONE)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (x->drawn && elapsed_ns(&x->last_draw, &now) < PROGRESS_INTERVAL_NS)
		return 0;
	draw(x, x->have + (int64_t)dlnow,
	     dltotal > 0 ? x->have + (int64_t)dltotal : -1);
	return 0;
}

/* Sleeps ms milliseconds, waking early when *interrupt is set. Returns
 * nonzero when interrupted. */
static int
nap(const struct dt_fetch_opts *o, long ms)
{
	while (ms > 0) {
		long step = ms < 50 ? ms : 50;
		struct timespec ts = { step / 1000, (step % 1000) * 1000000L };

		if (o->interrupt != NULL && *o->interrupt)
			return 1;
		nanosleep(&ts, NULL);
		ms -= step;
	}
	return o->interrupt != NULL && *o->interrupt;
}

/* curl results worth another attempt: the network or the server may do
 * better next time. Everything else (DNS, TLS trust, a malformed URL, a
 * redirect loop) will fail the same way again. */
static int
transient(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		return 0;
	}
}

static void
set_common(CURL *c, const struct dt_fetch_opts *o, const char *url,
	   enum kind kind, char *errbuf)
{
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "dtrain/" PACKAGE_VERSION);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, o->max_redirects);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR,
			 kind == KIND_HTTPS ? "https" : "http,https");
#else
	curl_easy_setopt(c, CURLOPT_PROTOCOLS,
			 (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS,
			 kind == KIND_HTTPS ? (long)CURLPROTO_HTTPS :
			 (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	/* The defaults already; said out loud because they must stay so. */
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (o->ca_file != NULL)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->connect_timeout_s);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, o->low_speed_limit);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->low_speed_time_s);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS,
			 o->progress || o->interrupt != NULL ? 0L : 1L);
}

/* What one attempt came to. */
enum outcome {
	OUT_DONE,		/* .part holds the whole body */
	OUT_RETRY,		/* worth another attempt (counted) */
	OUT_RESTART,		/* start over from byte 0 (not counted) */
	OUT_FAIL,		/* err is filled */
};

/* Judges an attempt that has ended. why (size whysz) receives the reason
 * for OUT_RETRY. */
static enum outcome
judge(struct xfer *x, CURL *c, CURLcode rc, const char *errbuf,
      const char *part, char *why, size_t whysz, struct dt_error *err)
{
	const char *url = x->url;

	if (x->stop == STOP_INTERRUPT) {
		dt_errorf(err, DT_ERR_INTERRUPTED, "%s: download interrupted",
			  url);
		return OUT_FAIL;
	}
	if (x->stop == STOP_WRITE) {
		dt_errorf(err, DT_ERR_IO, "%s: write failed: %s", part,
			  strerror(x->saved_errno));
		return OUT_FAIL;
	}
	if (x->stop == STOP_TOO_BIG) {
		x->discard = 1;
		if (x->h.content_length >= 0)
			dt_errorf(err, DT_ERR_NET, "%s: the server announces "
				  "%lld bytes, more than the %s of %lld bytes",
				  url, ll(x->h.content_length >
					  INT64_MAX - x->have ? INT64_MAX :
					  x->have + x->h.content_length),
				  x->limit_is_size ? "expected size" :
				  "limit (max_bytes)", ll(x->limit));
		else
			dt_errorf(err, DT_ERR_NET, "%s: the body runs past the "
				  "%s of %lld bytes; download stopped", url,
				  x->limit_is_size ? "expected size" :
				  "limit (max_bytes)", ll(x->limit));
		return OUT_FAIL;
	}
	if (x->stop == STOP_BAD_RANGE) {
		if (x->h.range_start == x->have)
			snprintf(why, whysz, "the file is now %lld bytes, not "
				 "%lld", ll(x->h.range_total),
				 ll(x->meta->total));
		else
			snprintf(why, whysz, "asked for bytes from %lld, the "
				 "server sent them from %lld", ll(x->have),
				 ll(x->h.range_start));
		x->meta->total = -1;
		return OUT_RESTART;
	}
	if (rc == CURLE_OK && !x->started)
		begin_body(x);	/* an empty body */
	if (x->stop == STOP_HTTP) {
		long s = x->h.status;

		if (s == 416 && x->have > 0 && x->h.range_total == x->have)
			return OUT_DONE;	/* .part was already whole */
		if (s == 416) {
			snprintf(why, whysz, "HTTP 416 for bytes from %lld",
				 ll(x->have));
			return OUT_RESTART;
		}
		if (s >= 500 && s < 600) {
			snprintf(why, whysz, "HTTP %ld %s", s, x->h.reason);
			return OUT_RETRY;
		}
		x->discard = 1;
		if (s >= 400 && s < 500)
			dt_errorf(err, DT_ERR_NET, "%s: HTTP %ld %s (the server "
				  "refused the request; check the URL)", url, s,
				  x->h.reason);
		else
			dt_errorf(err, DT_ERR_NET, "%s: unexpected HTTP status "
				  "%ld %s", url, s, x->h.reason);
		return OUT_FAIL;
	}
	if (rc == CURLE_OK)
		return OUT_DONE;
	if (rc == CURLE_TOO_MANY_REDIRECTS) {
		dt_errorf(err, DT_ERR_NET, "%s: more than %ld redirects (a "
			  "redirect loop?)", url, x->o->max_redirects);
		return OUT_FAIL;
	}
	if (rc == CURLE_PEER_FAILED_VERIFICATION) {
		dt_errorf(err, DT_ERR_NET, "%s: the server's TLS certificate "
			  "does not verify: %s (install the issuing CA, or "
			  "give its bundle as ca_file)", url,
			  *errbuf ? errbuf : curl_easy_strerror(rc));
		return OUT_FAIL;
	}
	if (rc == CURLE_UNSUPPORTED_PROTOCOL) {
		char *to = NULL;

		/* Following a Location makes it the effective URL. */
		if (curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &to) ==
		    CURLE_OK && to != NULL && strcmp(to, url) != 0) {
			dt_errorf(err, DT_ERR_NET, "%s: refusing the redirect to "
				  "%s (only http and https are followed, and "
				  "from https only https)", url, to);
			return OUT_FAIL;
		}
	}
	if (transient(rc)) {
		snprintf(why, whysz, "%s", *errbuf ? errbuf :
			 curl_easy_strerror(rc));
		return OUT_RETRY;
	}
	dt_errorf(err, DT_ERR_NET, "%s: %s", url,
		  *errbuf ? errbuf : curl_easy_strerror(rc));
	return OUT_FAIL;
}

/* After an attempt that curl saw end cleanly: whether the .part file
 * can be shown to hold the whole body. A body shorter than the length
 * announced at its start, or one whose end the server did not mark when
 * neither the job (sha256, size) nor the format (IDX, NPY, llm.c) can tell
 * a cut one from a whole one, is a failed transfer: DT_ERR_NET. */
static enum dt_status
check_end(const struct xfer *x, const struct dt_fetch_source *src,
	  struct dt_error *err)
{
	int64_t got = x->have + x->got;
	int64_t total = x->meta->total >= 0 ? x->meta->total :
			x->h.range_total;
	int covered = (src->sha256 != NULL && src->sha256[0] != '\0') ||
		      src->size > 0 || src->expect == DT_DATA_IDX ||
		      src->expect == DT_DATA_NPY ||
		      src->expect == DT_DATA_LLMC;

	if (total >= 0 && got != total)
		return dt_errorf(err, DT_ERR_NET, "%s: the body ended after "
				 "%lld bytes, the server announced %lld (a "
				 "failed transfer; nothing was cached)",
				 x->url, ll(got), ll(total));
	if (x->h.status != 200 || x->h.content_length >= 0 ||
	    x->h.chunked || covered)
		return DT_OK;
	return dt_errorf(err, DT_ERR_NET, "%s: the server sent neither a "
			 "Content-Length nor a chunked body, so a body cut "
			 "short cannot be told from a whole one (a failed "
			 "transfer; nothing was cached): give the source's "
			 "size or sha256 in the job", x->url);
}

/* Downloads url into part (created or resumed) until it holds the whole
 * body. On DT_ERR_NET from retries running out, part is kept. */
static enum dt_status
download(const char *url, enum kind kind, const struct dt_fetch_source *src,
	 const struct dt_fetch_opts *o, const char *part, const char *label,
	 struct dt_error *err)
{
	char errbuf[CURL_ERROR_SIZE];
	char why[CURL_ERROR_SIZE + 64] = "";
	char range[32], meta_path[PATH_MAX + 16];
	char if_range[sizeof ((struct part_meta *)0)->validator + 16];
	struct curl_slist *hdrs = NULL;
	struct part_meta meta;
	struct xfer x;
	enum dt_status st = DT_OK;
	long delay = o->retry_delay_ms;
	int attempt = 0, restarts = 0;
	CURL *c;
	int fd;

	fd = open(part, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
	if (fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s", part,
				 strerror(errno));
	snprintf(meta_path, sizeof meta_path, "%s.meta", part);
	part_meta_read(meta_path, &meta);
	if (!meta.known && ftruncate(fd, 0) != 0) {
		/* Bytes of unknown origin (no record of the response they
		 * came from) are never resumed onto. */
		close(fd);
		return dt_errorf(err, DT_ERR_IO, "%s: cannot truncate: %s",
				 part, strerror(errno));
	}
	c = curl_easy_init();
	if (c == NULL) {
		close(fd);
		return dt_errorf(err, DT_ERR_NET, "%s: cannot initialise "
				 "libcurl", url);
	}
	set_common(c, o, url, kind, errbuf);

	for (;;) {
		struct stat sb;
		enum outcome out;
		CURLcode rc;

		if (fstat(fd, &sb) != 0) {
			st = dt_errorf(err, DT_ERR_IO, "%s: cannot stat: %s",
				       part, strerror(errno));
			break;
		}
		memset(&x, 0, sizeof x);
		x.o = o;
		x.url = url;
		x.label = label;
		x.fd = fd;
		x.have = (int64_t)sb.st_size;
		x.meta = &meta;
		x.meta_path = meta_path;
		x.limit = src->size;
		x.limit_is_size = src->size > 0;
		if (o->max_bytes > 0 &&
		    (x.limit == 0 || o->max_bytes < x.limit)) {
			x.limit = o->max_bytes;
			x.limit_is_size = 0;
		}
		if (x.limit > 0 && x.have > x.limit) {
			if (ftruncate(fd, 0) != 0) {
				st = dt_errorf(err, DT_ERR_IO, "%s: cannot "
					       "truncate: %s", part,
					       strerror(errno));
				break;
			}
			x.have = 0;
		}
		if (src->size > 0 && x.have == src->size)
			break;	/* a previous run got it all */

		snprintf(range, sizeof range, "%lld-", ll(x.have));
		curl_easy_setopt(c, CURLOPT_RANGE, x.have > 0 ? range : NULL);
		/* Resume only onto the same version of the file: a changed
		 * one comes back whole (200) and replaces the .part bytes. */
		curl_slist_free_all(hdrs);
		hdrs = NULL;
		if (x.have > 0 && meta.validator[0] != '\0') {
			snprintf(if_range, sizeof if_range, "If-Range: %s",
				 meta.validator);
			hdrs = curl_slist_append(NULL, if_range);
			if (hdrs == NULL) {
				/* STYLE.md: out of memory aborts. */
				fprintf(stderr, "dtrain: out of memory in "
					"libcurl\n");
				abort();
			}
		}
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
		errbuf[0] = '\0';
		clock_gettime(CLOCK_MONOTONIC, &x.t0);
		rc = curl_easy_perform(c);
		if (x.drawn && rc == CURLE_OK && x.stop == STOP_NONE)
			draw(&x, x.have + x.got, x.have + x.got);
		if (x.drawn)
			fputc('\n', stderr);

		out = judge(&x, c, rc, errbuf, part, why, sizeof why, err);
		if (out == OUT_DONE) {
			st = check_end(&x, src, err);
			if (st != DT_OK && ftruncate(fd, 0) != 0)
				st = dt_errorf(err, DT_ERR_IO, "%s: cannot "
					       "truncate: %s", part,
					       strerror(errno));
			break;
		}
		if (out == OUT_FAIL) {
			st = err != NULL ? err->status : DT_ERR_NET;
			/* A partial body is kept for a later resume unless
			 * the server refused the file or it ran too long. */
			if (x.discard)
				unlink(part);
			break;
		}
		if (out == OUT_RESTART) {
			if (++restarts > MAX_RESTARTS) {
				st = dt_errorf(err, DT_ERR_NET, "%s: cannot "
					       "resume: %s", url, why);
				unlink(part);
				break;
			}
			if (ftruncate(fd, 0) != 0) {
				st = dt_errorf(err, DT_ERR_IO, "%s: cannot "
					       "truncate: %s", part,
					       strerror(errno));
				break;
			}
			continue;
		}
		/* OUT_RETRY */
		if (attempt >= o->retries) {
			char kept[PATH_MAX + 96] = "";

			if (x.have + x.got > 0)
				snprintf(kept, sizeof kept, " (%lld bytes kept "
					 "in %s; the next fetch resumes from "
					 "there)", ll(x.have + x.got), part);
			st = dt_errorf(err, DT_ERR_NET, "%s: gave up after %d "
				       "attempt%s; the last failed with: %s%s",
				       url, attempt + 1, attempt == 0 ? "" : "s",
				       why, kept);
			break;
		}
		attempt++;
		{
			long wait = delay;

			if (x.h.retry_after_s > 0 &&
			    x.h.retry_after_s * 1000 > wait)
				wait = x.h.retry_after_s * 1000;
			if (wait > o->retry_max_delay_ms)
				wait = o->retry_max_delay_ms;
			if (o->progress)
				fprintf(stderr, "dtrain: %s: %s; retrying in "
					"%.1f s (%d of %d)\n", url, why,
					(double)wait / 1000, attempt,
					o->retries);
			if (nap(o, wait)) {
				st = dt_errorf(err, DT_ERR_INTERRUPTED, "%s: "
					       "download interrupted", url);
				break;
			}
		}
		delay = delay > o->retry_max_delay_ms / 2 ?
			o->retry_max_delay_ms : 2 * delay;
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	{
		struct stat sb;

		/* An empty .part resumes nothing; leave no litter. A .part
		 * that is gone (refused, too long) takes its record along. */
		if (st != DT_OK && fstat(fd, &sb) == 0 && sb.st_size == 0)
			unlink(part);
		if (st != DT_OK && access(part, F_OK) != 0)
			unlink(meta_path);
	}
	return dt_file_sync_close(fd, part, st, err);
}

/* Holds CACHE/NAME.lock: downloads of one URL take turns. */
static enum dt_status
lock_name(const char *file, const struct dt_fetch_opts *o, int *fd_out,
	  struct dt_error *err)
{
	char lock[PATH_MAX + 8];
	int fd;

	snprintf(lock, sizeof lock, "%s.lock", file);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot create: %s", lock,
				 strerror(errno));
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			close(fd);
			return dt_errorf(err, DT_ERR_IO, "%s: cannot lock: %s",
					 lock, strerror(errno));
		}
		if (o->interrupt != NULL && *o->interrupt) {
			close(fd);
			return dt_errorf(err, DT_ERR_INTERRUPTED, "%s: "
					 "interrupted waiting for another "
					 "download of this file", lock);
		}
	}
	*fd_out = fd;
	return DT_OK;
}

/* Removes PART.meta, the record of what PART holds. */
static void
unlink_meta(const char *part)
{
	char meta[PATH_MAX + 16];

	snprintf(meta, sizeof meta, "%s.meta", part);
	unlink(meta);
}

/* For --refresh: removes FILE.part and its record, so that the download
 * starts from byte 0. Returns 0, or -1 with *st and err set. */
static int
unlink_part(const char *file, enum dt_status *st, struct dt_error *err)
{
	char part[PATH_MAX + 8];

	snprintf(part, sizeof part, "%s.part", file);
	if (unlink(part) != 0 && errno != ENOENT) {
		*st = dt_errorf(err, DT_ERR_IO, "%s: cannot remove: %s", part,
				strerror(errno));
		return -1;
	}
	unlink_meta(part);
	return 0;
}

/* After a failed download: says in err that it was deleted (deleted: it
 * failed its checks) and that the cached FILE, where one is there (a
 * --refresh), is kept. */
static void
note_failed(const char *file, int deleted, struct dt_error *err)
{
	struct stat sb;
	int kept = stat(file, &sb) == 0;
	size_t len;

	if (err == NULL || (!deleted && !kept))
		return;
	len = strlen(err->msg);
	if (deleted && kept)
		snprintf(err->msg + len, sizeof err->msg - len,
			 " (the download has been deleted; the cached file "
			 "%s is kept)", file);
	else if (deleted)
		snprintf(err->msg + len, sizeof err->msg - len,
			 " (the download has been deleted)");
	else
		snprintf(err->msg + len, sizeof err->msg - len,
			 " (the cached file %s is kept)", file);
}

/* The checks a file in the cache passes each time it is used: size and
 * sha256 (the digest cached), the kind's first bytes and its length. */
static enum dt_status
check_file(const char *file, const struct dt_fetch_source *src,
	   const struct dt_fetch_opts *o, struct dt_error *err)
{
	enum dt_status st = verify(file, src->url, src, o, err);

	if (st == DT_OK)
		st = dt_data_sniff(file, src->expect, src->url, err);
	if (st == DT_OK)
		st = dt_data_check_whole(file, src->expect, src->url, err);
	return st;
}

static enum dt_status
fetch_url(const struct dt_fetch_source *src, enum kind kind,
	  const struct dt_fetch_opts *o, char *out, size_t size,
	  struct dt_error *err)
{
	char dir[PATH_MAX], file[PATH_MAX], part[PATH_MAX + 8];
	const char *label;
	struct stat sb;
	enum dt_status st;
	int lock_fd = -1;

	st = cache_paths(src->url, o, dir, file, sizeof file, err);
	if (st != DT_OK)
		return st;
	if (strlen(file) >= size)
		return dt_errorf(err, DT_ERR_USAGE, "%s: path longer than %zu "
				 "bytes", file, size - 1);
	st = dt_fetch_make_dirs(dir, err);
	if (st != DT_OK)
		return st;
	st = lock_name(file, o, &lock_fd, err);
	if (st != DT_OK)
		return st;

	/* --refresh downloads beside the cached file, which stays until
	 * the new one has passed every check (the rename replaces it). */
	if (o->refresh && unlink_part(file, &st, err) != 0)
		goto done;
	if (!o->refresh && stat(file, &sb) == 0) {
		st = check_file(file, src, o, err);
		if (st != DT_ERR_DATA)
			goto done;
		/* Damaged since, stored by an older version that checked
		 * less, or the job now expects other bytes: named, and
		 * fetched again rather than trusted. */
		fprintf(stderr, "dtrain: %s: the cached file fails its check "
			"(%s); downloading it again\n", file,
			err != NULL ? err->msg : "?");
		if (unlink(file) != 0) {
			st = dt_errorf(err, DT_ERR_IO, "%s: cannot remove: %s",
				       file, strerror(errno));
			goto done;
		}
		dt_error_clear(err);
	}

	snprintf(part, sizeof part, "%s.part", file);
	label = strrchr(file, '/') + 1 + 2 * NAME_HASH_BYTES + 1;
	st = download(src->url, kind, src, o, part, label, err);
	if (st != DT_OK) {
		note_failed(file, 0, err);
		goto done;
	}
	st = verify(part, src->url, src, NULL, err);
	if (st == DT_OK)
		st = dt_data_sniff(part, src->expect, src->url, err);
	if (st == DT_OK)
		st = dt_data_check_whole(part, src->expect, src->url, err);
	if (st != DT_OK) {
		unlink(part);
		unlink_meta(part);
		note_failed(file, st == DT_ERR_DATA, err);
		goto done;
	}
	st = dt_file_rename(part, file, err);
	unlink_meta(part);
done:
	close(lock_fd);	/* releases the flock */
	if (st == DT_OK)
		memcpy(out, file, strlen(file) + 1);
	return st;
}

enum dt_status
dt_fetch(const struct dt_fetch_source *src, const struct dt_fetch_opts *opts,
	 char *local_path, size_t size, struct dt_error *err)
{
	struct dt_fetch_opts defaults;
	const char *path = NULL;
	enum kind kind;
	enum dt_status st;

	if (opts == NULL) {
		dt_fetch_opts_init(&defaults);
		opts = &defaults;
	}
	st = classify(src, &kind, &path, err);
	if (st != DT_OK)
		return st;
	if (kind == KIND_PATH)
		return fetch_local(src, path, opts, local_path, size, err);
	return fetch_url(src, kind, opts, local_path, size, err);
}

enum dt_status
dt_fetch_is_cached(const struct dt_fetch_source *src,
		   const struct dt_fetch_opts *opts, char *local_path,
		   size_t size, int *cached, struct dt_error *err)
{
	struct dt_fetch_opts defaults;
	char dir[PATH_MAX], file[PATH_MAX];
	const char *path = NULL;
	struct stat sb;
	enum kind kind;
	enum dt_status st;

	if (opts == NULL) {
		dt_fetch_opts_init(&defaults);
		opts = &defaults;
	}
	st = classify(src, &kind, &path, err);
	if (st != DT_OK)
		return st;
	if (kind != KIND_PATH) {
		st = cache_paths(src->url, opts, dir, file, sizeof file, err);
		if (st != DT_OK)
			return st;
		path = file;
	}
	st = give_path(path, local_path, size, err);
	if (st != DT_OK)
		return st;
	*cached = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
		  (src->size == 0 || (int64_t)sb.st_size == src->size);
	return DT_OK;
}

enum dt_status
dt_fetch_cache_dir(const struct dt_fetch_opts *opts, char *dir, size_t size,
		   struct dt_error *err)
{
	struct dt_fetch_opts none;
	enum dt_status st;

	if (opts == NULL) {
		dt_fetch_opts_init(&none);
		opts = &none;
	}
	st = dt_fetch_cache_path(opts, dir, size, err);
	if (st == DT_OK)
		st = dt_fetch_make_dirs(dir, err);
	return st;
}
