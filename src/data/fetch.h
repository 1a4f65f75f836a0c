/* SPDX-License-Identifier: MIT */
/* fetch.h - data sources: a local path, or an http:// or https:// URL
 * downloaded once with libcurl into a cache directory and verified.
 *
 * A download goes to CACHE/NAME.part and is renamed to CACHE/NAME only
 * when it is complete and its size and sha256 (when given) agree, so a
 * file at a final name is always whole and right. An interrupted download
 * resumes from the .part file with an HTTP Range request. Processes that
 * fetch the same URL at once (ranks on one node) take turns through an
 * flock(2) on CACHE/NAME.lock; the second finds the file done. */
#ifndef DT_DATA_FETCH_H
#define DT_DATA_FETCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "util/status.h"

/* Where data comes from, as the job file says it (job.h's struct
 * dt_source maps onto it field by field: .url = path, .sha256 = sha256,
 * .size = size). A relative path is used as it is: resolving it against
 * the job's directory is the caller's business. */
/* What a source must look like once downloaded (dt_data_sniff). */
enum dt_data_kind {
	DT_DATA_ANY = 0,	/* no check */
	DT_DATA_IDX,		/* IDX magic: 00 00 TYPE DIMS */
	DT_DATA_NPY,		/* "\x93NUMPY" */
	DT_DATA_TEXT,		/* CSV or text: no markup page, no NUL byte */
	DT_DATA_BINARY,		/* raw token ids: no markup page */
	DT_DATA_LLMC,		/* llm.c token shard: its header, then
				 * exactly the tokens it counts */
};

struct dt_fetch_source {
	const char *url;	/* a path, "file://PATH", or an http(s) URL */
	const char *sha256;	/* 64 hex digits (either case); NULL or ""
				 * = not given */
	int64_t size;		/* expected size in bytes; 0 = not given */
	enum dt_data_kind expect; /* checked on a download before it is
				   * stored under its final name */
};

/* How to download. dt_fetch_opts_init fills in the defaults noted here;
 * a NULL opts means exactly those defaults. */
struct dt_fetch_opts {
	/* NULL: $DTRAIN_CACHE, else $XDG_CACHE_HOME/dtrain, else
	 * $HOME/.cache/dtrain; created (with parents) when missing. */
	const char *cache_dir;
	/* A PEM bundle of trusted CAs instead of the system's, or NULL.
	 * Certificates are always verified; this only says against what. */
	const char *ca_file;
	int retries;		/* extra attempts after a 5xx, timeout or
				 * dropped connection (4) */
	long retry_delay_ms;	/* first wait; doubles each retry (1000) */
	long retry_max_delay_ms; /* cap on one wait (30000) */
	long connect_timeout_s;	/* (30) */
	long low_speed_limit;	/* bytes/s below which a body stalls (1) */
	long low_speed_time_s;	/* for this long (60) */
	long max_redirects;	/* (10) */
	int64_t max_bytes;	/* refuse bodies larger than this; 0 = no
				 * bound beyond src->size (0) */
	int progress;		/* draw a progress bar on stderr; pass
				 * isatty(STDERR_FILENO) (0) */
	/* When set, a nonzero *interrupt (from a signal handler) stops a
	 * transfer or a retry wait with DT_ERR_INTERRUPTED (NULL). */
	volatile sig_atomic_t *interrupt;
	/* Download a URL again even when it is in the cache (beside it,
	 * in NAME.part: the cached file stays until the new one has passed
	 * every check), and hash a file again even when its digest is
	 * cached (dt_fetch_digest) (0). */
	int refresh;
};

/* Fills *opts with the defaults above. */
void dt_fetch_opts_init(struct dt_fetch_opts *opts);

/* Makes src available as a local file and writes its path to
 * local_path[0..size).
 *
 * A path (or file:// URL) is returned as it is after checking that it is a
 * readable regular file and, when given, its size and sha256 (the digest
 * through dt_fetch_digest, so an unchanged file is hashed once). A URL is
 * served from the cache when CACHE/NAME exists and opts->refresh is 0 (its
 * size and sha256 are checked again when given, and its format
 * (dt_data_check_whole); a cached file that fails is named on stderr,
 * deleted and downloaded anew), else downloaded:
 *   - 5xx answers, timeouts (connect, or a body slower than
 *     low_speed_limit for low_speed_time_s) and dropped connections are
 *     retried up to opts->retries times, waiting retry_delay_ms, then
 *     twice that, and so on up to retry_max_delay_ms; each retry resumes
 *     from the bytes already in NAME.part, and a server that ignores Range
 *     (answers 200) is read again from byte 0;
 *   - 4xx answers fail at once; their body is never written;
 *   - redirects are followed up to max_redirects (an https URL only to
 *     https); certificates are verified (CURLOPT_SSL_VERIFYPEER and
 *     VERIFYHOST, never turned off);
 *   - a body larger than src->size or opts->max_bytes is refused;
 *   - a body shorter than the length the server announced (Content-Length,
 *     or a Content-Range total) is a failed transfer, and so is a body
 *     whose end the server does not mark (neither Content-Length nor
 *     chunked coding) when nothing else can show it whole: no sha256, no
 *     size, and a kind other than IDX or NPY;
 *   - before the rename, the body must pass dt_data_sniff and
 *     dt_data_check_whole for src->expect.
 * NAME is the first 16 hex digits of sha256(URL), a '-' and the URL's
 * basename (query and fragment dropped, unusual characters as '_').
 *
 * Returns DT_OK with local_path filled. On error local_path is left
 * untouched, and CACHE/NAME holds nothing or a whole file that passed the
 * checks when it was stored (never a partial or unverified one):
 *   DT_ERR_USAGE  a malformed sha256, an unsupported URL scheme, a URL
 *                 without a host, or a path longer than size;
 *   DT_ERR_IO     the cache directory or a file in it cannot be made,
 *                 written or renamed; a local path cannot be read;
 *   DT_ERR_NET    "URL: HTTP 404 Not Found", a redirect loop ("more than N
 *                 redirects"), a certificate that does not verify, a body
 *                 over the limit, or "gave up after N attempts: ..." (the
 *                 .part file is kept for a later resume);
 *   DT_ERR_DATA   "URL: sha256 mismatch: expected X, got Y", a size
 *                 mismatch, or a download that is not src->expect (an
 *                 HTML page answered with 200, say; dt_data_sniff) or not
 *                 all of it (dt_data_check_whole); the downloaded file has
 *                 been deleted;
 *   DT_ERR_INTERRUPTED  *opts->interrupt became nonzero.
 * Not thread-safe on its own: a threaded program calls
 * curl_global_init() before its threads start. */
enum dt_status dt_fetch(const struct dt_fetch_source *src,
			const struct dt_fetch_opts *opts, char *local_path,
			size_t size, struct dt_error *err);

/* Checks that the file at path begins as data of the given kind must
 * (decompressing it first when it starts with the gzip magic): the IDX or
 * NPY magic, and for text and token sources that it is not an HTML or XML
 * page (text: and holds no NUL byte in its first 4 KiB). what names the
 * source in the message (its URL). Reads at most 4 KiB of decompressed
 * data; allocates nothing that outlives the call.
 * Returns DT_OK (always for DT_DATA_ANY); DT_ERR_DATA "WHAT: the download
 * is not an IDX file: it starts with "<!DOCTYPE html>...", an HTML or XML
 * page, not the data"; DT_ERR_IO if path cannot be opened. */
enum dt_status dt_data_sniff(const char *path, enum dt_data_kind kind,
			     const char *what, struct dt_error *err);

/* Checks that the file at path holds exactly the bytes its format's
 * header promises: for DT_DATA_IDX the dimensions times the element size
 * after the header, for DT_DATA_NPY the shape times the dtype's size after
 * the header (decompressing a gzip file whole, which also checks its CRC),
 * for DT_DATA_LLMC llm.c's header (magic, version) and its token count
 * times 2 bytes after it (dt_llmc_header_check). Other kinds carry no
 * length and pass. Reads the whole file for IDX and
 * NPY. what names the source in the message.
 * Returns DT_OK; DT_ERR_DATA "WHAT: the download is not a whole IDX file:
 * PATH: byte N: truncated: expected N bytes of data, found M" (or trailing
 * data, a truncated gzip stream); DT_ERR_IO if path cannot be read. */
enum dt_status dt_data_check_whole(const char *path, enum dt_data_kind kind,
				   const char *what, struct dt_error *err);

/* Whether dt_fetch would answer without a download (for `plan`). Writes
 * the path dt_fetch would return to local_path[0..size) and sets *cached
 * to 1 when that file exists (and has src->size bytes, when given), else
 * 0. For a local path, *cached says whether it exists. Reads no data and
 * hashes nothing, so a cached file can still fail its sha256 later.
 * Errors: DT_ERR_USAGE as for dt_fetch; DT_ERR_IO if the cache directory
 * cannot be determined (no $HOME). On error *cached and local_path are
 * untouched. */
enum dt_status dt_fetch_is_cached(const struct dt_fetch_source *src,
				  const struct dt_fetch_opts *opts,
				  char *local_path, size_t size, int *cached,
				  struct dt_error *err);

/* The download cache's directory (opts->cache_dir, else DTRAIN_CACHE,
 * XDG_CACHE_HOME/dtrain or HOME/.cache/dtrain; opts may be NULL), made
 * with its parents when missing, into dir (size bytes). DT_ERR_IO when
 * there is none or it cannot be made. */
enum dt_status dt_fetch_cache_dir(const struct dt_fetch_opts *opts,
				  char *dir, size_t size,
				  struct dt_error *err);

/* Writes the lowercase hex sha256 of the file at path into hex (65 bytes
 * with the terminator). Returns DT_ERR_IO naming path if it cannot be
 * read; hex is untouched on error. */
enum dt_status dt_sha256_file(const char *path, char hex[65],
			      struct dt_error *err);

/* The lowercase hex sha256 of the file at path, into hex (65 bytes with
 * the terminator), hashed once per version of the file on this node: the
 * digest is kept in CACHE/sha256/ (CACHE as for downloads: opts->cache_dir,
 * $DTRAIN_CACHE, ...; NULL opts: the defaults), keyed by the host, the
 * path, the device and inode, the size and the modification and change
 * times, and written atomically. opts->refresh hashes again. A cache that
 * cannot be found, read or written only costs a hash. Returns DT_OK;
 * DT_ERR_IO naming path if it cannot be read (hex untouched). */
enum dt_status dt_fetch_digest(const char *path,
			       const struct dt_fetch_opts *opts, char hex[65],
			       struct dt_error *err);

/* The first want bytes of the http(s) URL url into buf[0..want) (fewer
 * when the body is shorter; *got says how many) and the size of the whole
 * body into *total, with one GET asking for "Range: bytes=0-(want-1)"
 * (Content-Range gives the size; a server that ignores Range answers 200
 * with Content-Length and is cut off after want bytes). Nothing is cached.
 * 5xx answers and transport errors are retried as dt_fetch does (opts may
 * be NULL: the defaults). Returns DT_OK; DT_ERR_NET "URL: HTTP 404", "URL:
 * gave up after N attempts: ..." or a server that gives no length. */
enum dt_status dt_fetch_head(const char *url,
			     const struct dt_fetch_opts *opts,
			     unsigned char *buf, size_t want, size_t *got,
			     int64_t *total, struct dt_error *err);

#endif
