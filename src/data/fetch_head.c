/* SPDX-License-Identifier: MIT */
/* fetch_head.c - the first bytes of a URL and its whole size, with one
 * ranged GET (RFC 9110, 14.2 and 14.4: "Range: bytes=0-N" answered by 206
 * and "Content-Range: bytes 0-N/TOTAL"), so that a shard's header and
 * length are known before the shard itself is downloaded. */
#include "data/fetch.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "dev"
#endif

/* What the callbacks fill in. */
struct head {
	unsigned char *buf;	/* (want) */
	size_t want, got;
	int64_t total;		/* from Content-Range or Content-Length */
};

static size_t
on_head_header(char *p, size_t size, size_t n, void *arg)
{
	struct head *h = arg;
	size_t len = size * n;
	char line[256];
	const char *slash;

	if (len >= sizeof line)
		return len;
	memcpy(line, p, len);
	line[len] = '\0';
	/* A redirect's headers come first: each answer starts afresh. */
	if (strncmp(line, "HTTP/", 5) == 0)
		h->total = -1;
	if (strncasecmp(line, "Content-Range:", 14) == 0 &&
	    (slash = strchr(line, '/')) != NULL && slash[1] != '*')
		h->total = strtoll(slash + 1, NULL, 10);
	return len;
}

static size_t
on_head_body(char *p, size_t size, size_t n, void *arg)
{
	struct head *h = arg;
	size_t len = size * n, take = h->want - h->got;

	if (take > len)
		take = len;
	memcpy(h->buf + h->got, p, take);
	h->got += take;
	/* Enough: a server that ignores Range is cut off here. */
	return h->got == h->want ? 0 : len;
}

/* One attempt; *code is the HTTP status (0 when none came). */
static CURLcode
head_once(const char *url, const struct dt_fetch_opts *o, struct head *h,
	  long *code, char *errbuf)
{
	char range[48];
	CURL *c = curl_easy_init();
	CURLcode rc;

	if (c == NULL)
		return CURLE_OUT_OF_MEMORY;
	snprintf(range, sizeof range, "0-%zu", h->want - 1);
	h->got = 0;
	h->total = -1;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "dtrain/" PACKAGE_VERSION);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, o->max_redirects);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (o->ca_file != NULL)
		curl_easy_setopt(c, CURLOPT_CAINFO, o->ca_file);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->connect_timeout_s);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, o->low_speed_limit);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->low_speed_time_s);
	curl_easy_setopt(c, CURLOPT_RANGE, range);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_head_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_head_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
	rc = curl_easy_perform(c);
	*code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
	if (*code == 200 && h->total < 0) {
		curl_off_t cl = -1;

		curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		h->total = (int64_t)cl;
	}
	curl_easy_cleanup(c);
	/* Cut off on purpose once want bytes came. */
	if (rc == CURLE_WRITE_ERROR && h->got == h->want)
		rc = CURLE_OK;
	return rc;
}

enum dt_status
dt_fetch_head(const char *url, const struct dt_fetch_opts *opts,
	      unsigned char *buf, size_t want, size_t *got, int64_t *total,
	      struct dt_error *err)
{
	struct dt_fetch_opts def;
	struct head h = { .buf = buf, .want = want };
	char errbuf[CURL_ERROR_SIZE];
	long code = 0, delay;
	CURLcode rc = CURLE_OK;

	if (opts == NULL) {
		dt_fetch_opts_init(&def);
		opts = &def;
	}
	delay = opts->retry_delay_ms;
	for (int attempt = 0; attempt <= opts->retries; attempt++) {
		struct timespec ts;

		errbuf[0] = '\0';
		rc = head_once(url, opts, &h, &code, errbuf);
		if (rc == CURLE_OK && (code == 200 || code == 206))
			break;
		if (rc == CURLE_OK && code < 500)
			return dt_errorf(err, DT_ERR_NET, "%s: HTTP %ld",
					 url, code);
		if (attempt == opts->retries)
			break;
		ts.tv_sec = delay / 1000;
		ts.tv_nsec = delay % 1000 * 1000000;
		nanosleep(&ts, NULL);
		delay = delay * 2 < opts->retry_max_delay_ms ? delay * 2 :
			opts->retry_max_delay_ms;
	}
	if (rc != CURLE_OK)
		return dt_errorf(err, DT_ERR_NET, "%s: gave up after %d "
				 "attempts: %s", url, opts->retries + 1,
				 errbuf[0] ? errbuf : curl_easy_strerror(rc));
	if (code != 200 && code != 206)
		return dt_errorf(err, DT_ERR_NET, "%s: gave up after %d "
				 "attempts: HTTP %ld", url, opts->retries + 1,
				 code);
	if (h.total < 0)
		return dt_errorf(err, DT_ERR_NET, "%s: the server gave no "
				 "length (neither Content-Range nor "
				 "Content-Length), so the shard's size cannot "
				 "be checked", url);
	*got = h.got;
	*total = h.total;
	return DT_OK;
}
