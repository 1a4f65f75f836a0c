/* SPDX-License-Identifier: MIT */
/* fuzz_http_header.c - the HTTP response header lines of a download
 * (dt_fetch_parse_header_line, what fetch.c's libcurl callback calls).
 *
 * The input is a sequence of header lines as a server would send them
 * (split at each LF, kept with their line ends, as libcurl hands them
 * over one by one), fed to one struct dt_fetch_header. After every line
 * the fields must hold what fetch.c relies on: terminated strings, a
 * strong ETag or none, numbers >= -1, a Retry-After of at most a day. */
#include "fuzz.h"

#include <string.h>

#include "data/data_priv.h"

static void
check_fields(const struct dt_fetch_header *h)
{
	dt_fuzz_check(memchr(h->reason, '\0', sizeof h->reason) != NULL,
		      "reason is not terminated");
	dt_fuzz_check(memchr(h->etag, '\0', sizeof h->etag) != NULL,
		      "etag is not terminated");
	dt_fuzz_check(memchr(h->last_modified, '\0',
			     sizeof h->last_modified) != NULL,
		      "last_modified is not terminated");
	dt_fuzz_check(h->etag[0] == '\0' || h->etag[0] == '"',
		      "a weak or unquoted ETag was kept");
	dt_fuzz_check(h->content_length >= -1 && h->range_start >= -1 &&
		      h->range_total >= -1 && h->status >= -1,
		      "a number below -1");
	dt_fuzz_check(h->retry_after_s >= -1 && h->retry_after_s <= 86400,
		      "Retry-After outside [-1, 86400]");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dt_fetch_header h;
	const char *p = (const char *)data, *end = p + size;

	memset(&h, 0, sizeof h);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl != NULL ? (size_t)(nl - p) + 1 :
					  (size_t)(end - p);

		dt_fetch_parse_header_line(&h, p, len);
		check_fields(&h);
		p += len;
	}
	return 0;
}
