/* SPDX-License-Identifier: MIT */
/* header.c - one line of an HTTP response header (RFC 9110), read into
 * struct dt_fetch_header for fetch.c's libcurl header callback. Apart
 * from libcurl, so that a fuzz target can feed it hostile lines
 * (tests/fuzz/fuzz_http_header.c): every number from a server is parsed
 * with an overflow check and every string is cut to its field. */
#include "data/data_priv.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Longest Retry-After honoured, in seconds: a day. */
#define RETRY_AFTER_MAX_S 86400

/* Parses a decimal int64 at s (after spaces); -1 if there is none or it
 * is above INT64_MAX - 8 (the overflow check before the last digit is
 * conservative). *end is past the digits, or s when -1 is returned. */
static int64_t
parse_i64(const char *s, const char **end)
{
	int64_t v = 0;
	const char *p = s;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!isdigit((unsigned char)*p)) {
		*end = s;
		return -1;
	}
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (INT64_MAX - 9) / 10) {
			*end = s;
			return -1;
		}
		v = v * 10 + (*p - '0');
	}
	*end = p;
	return v;
}

void
dt_fetch_parse_header_line(struct dt_fetch_header *h, const char *data,
			   size_t len)
{
	char line[256];
	size_t n = len < sizeof line - 1 ? len : sizeof line - 1;
	const char *p, *e;

	memcpy(line, data, n);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		n--;
	line[n] = '\0';

	if (strncmp(line, "HTTP/", 5) == 0) {
		/* A new response: "HTTP/1.1 206 Partial Content". */
		p = line + strcspn(line, " ");
		h->status = parse_i64(p, &e);
		while (*e == ' ')
			e++;
		snprintf(h->reason, sizeof h->reason, "%s", e);
		h->content_length = -1;
		h->range_start = -1;
		h->range_total = -1;
		h->retry_after_s = -1;
		h->etag[0] = '\0';
		h->last_modified[0] = '\0';
		h->chunked = 0;
	} else if (strncasecmp(line, "transfer-encoding:", 18) == 0) {
		/* "gzip, chunked": the codings in the order applied. */
		for (char *c = line + 18; *c != '\0'; c++)
			*c = (char)tolower((unsigned char)*c);
		h->chunked = strstr(line + 18, "chunked") != NULL;
	} else if (strncasecmp(line, "etag:", 5) == 0) {
		p = line + 5;
		while (*p == ' ' || *p == '\t')
			p++;
		/* A weak tag cannot make a range conditional. */
		if (*p == '"' && strlen(p) < sizeof h->etag)
			snprintf(h->etag, sizeof h->etag, "%s", p);
	} else if (strncasecmp(line, "last-modified:", 14) == 0) {
		p = line + 14;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strlen(p) < sizeof h->last_modified)
			snprintf(h->last_modified, sizeof h->last_modified,
				 "%s", p);
	} else if (strncasecmp(line, "content-length:", 15) == 0) {
		h->content_length = parse_i64(line + 15, &e);
	} else if (strncasecmp(line, "retry-after:", 12) == 0) {
		int64_t v = parse_i64(line + 12, &e);

		/* Bounded so that the wait in milliseconds cannot overflow;
		 * opts->retry_max_delay_ms caps it further. */
		h->retry_after_s = v > RETRY_AFTER_MAX_S ? RETRY_AFTER_MAX_S :
							   (long)v;
	} else if (strncasecmp(line, "content-range:", 14) == 0) {
		/* "bytes 100-199/200"; with a 416, "bytes (star)/200". */
		p = line + 14;
		while (*p == ' ')
			p++;
		if (strncasecmp(p, "bytes ", 6) == 0) {
			p += 6;
			h->range_start = parse_i64(p, &e);
			p = strchr(p, '/');
			if (p != NULL)
				h->range_total = parse_i64(p + 1, &e);
		}
	}
}
