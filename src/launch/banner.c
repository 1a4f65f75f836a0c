/* SPDX-License-Identifier: MIT */
/* banner.c - mpirun's stderr, less its banners after a clean stop
 * (banner.h). Open MPI's show_help frames each message with a rule of
 * dashes (74 of them in 4.1) above and below; a rule here is a line of
 * 20 or more dashes and nothing else. */
#include "launch/banner.h"

#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"

#define RULE_MIN 20
/* A block longer than this is no banner: passed on as it is. */
#define BLOCK_MAX ((size_t)64 << 10)

/* The first words of the two banners a stopped job gets. */
static const char *const banners[] = {
	"Primary job  terminated normally, but",
	"mpirun detected that one or more processes exited with non-zero",
};

void
dt_banner_init(struct dt_banner *b, FILE *out)
{
	memset(b, 0, sizeof *b);
	b->out = out;
	b->state = DT_BANNER_LINE_START;
}

static void
append(char **buf, size_t *n, size_t *cap, const char *p, size_t len)
{
	if (*n + len + 1 > *cap) {
		*cap = (*n + len + 1) * 2;
		*buf = dt_xrealloc(*buf, *cap, 1);
	}
	memcpy(*buf + *n, p, len);
	*n += len;
	(*buf)[*n] = '\0';
}

/* Whether s[0..len) is a rule: RULE_MIN or more dashes, then "\n". */
static int
is_rule(const char *s, size_t len)
{
	if (len < RULE_MIN + 1 || s[len - 1] != '\n')
		return 0;
	for (size_t i = 0; i + 1 < len; i++)
		if (s[i] != '-')
			return 0;
	return 1;
}

static int
is_banner(const char *block)
{
	for (size_t i = 0; i < sizeof banners / sizeof banners[0]; i++)
		if (strstr(block, banners[i]) != NULL)
			return 1;
	return 0;
}

/* Writes what is held in cur and goes on at state. */
static void
release(struct dt_banner *b, enum dt_banner_state state)
{
	if (b->n > 0)
		fwrite(b->cur, 1, b->n, b->out);
	b->n = b->line_at = 0;
	b->state = state;
}

/* One byte c in a held state. */
static void
held_byte(struct dt_banner *b, char c)
{
	append(&b->cur, &b->n, &b->cap, &c, 1);
	if (b->state == DT_BANNER_MAYBE_RULE) {
		if (c == '\n' && is_rule(b->cur, b->n)) {
			b->state = DT_BANNER_BLOCK;
			b->line_at = b->n;
		} else if (c != '-') {
			release(b, c == '\n' ? DT_BANNER_LINE_START :
				DT_BANNER_MID_LINE);
		}
		return;
	}
	if (c != '\n') {
		if (b->n > BLOCK_MAX)
			release(b, DT_BANNER_MID_LINE);
		return;
	}
	if (!is_rule(b->cur + b->line_at, b->n - b->line_at)) {
		b->line_at = b->n;
		return;
	}
	/* The closing rule: a whole block. */
	if (is_banner(b->cur)) {
		append(&b->held, &b->held_n, &b->held_cap, b->cur, b->n);
		b->n = b->line_at = 0;
		b->state = DT_BANNER_LINE_START;
	} else {
		release(b, DT_BANNER_LINE_START);
	}
}

void
dt_banner_feed(struct dt_banner *b, const char *buf, size_t len)
{
	size_t i = 0;

	while (i < len) {
		if (b->state == DT_BANNER_MID_LINE ||
		    (b->state == DT_BANNER_LINE_START && buf[i] != '-')) {
			/* Pass on the rest of this line in one write. */
			const char *nl = memchr(buf + i, '\n', len - i);
			size_t k = nl != NULL ? (size_t)(nl - (buf + i)) + 1 :
				   len - i;

			fwrite(buf + i, 1, k, b->out);
			i += k;
			b->state = nl != NULL ? DT_BANNER_LINE_START :
				   DT_BANNER_MID_LINE;
			continue;
		}
		if (b->state == DT_BANNER_LINE_START)
			b->state = DT_BANNER_MAYBE_RULE;
		held_byte(b, buf[i++]);
	}
	fflush(b->out);
}

int
dt_banner_pending(const struct dt_banner *b)
{
	return b->n > 0;
}

void
dt_banner_flush(struct dt_banner *b)
{
	release(b, b->n > 0 && b->cur[b->n - 1] != '\n' ?
		DT_BANNER_MID_LINE : DT_BANNER_LINE_START);
	fflush(b->out);
}

void
dt_banner_end(struct dt_banner *b, int quiet)
{
	dt_banner_flush(b);
	if (!quiet && b->held_n > 0)
		fwrite(b->held, 1, b->held_n, b->out);
	fflush(b->out);
	free(b->cur);
	free(b->held);
	dt_banner_init(b, b->out);
}
