/* SPDX-License-Identifier: MIT */
/* yaml.c - libyaml's event stream turned into a small tree with positions,
 * plus the YAML 1.2 core-schema rules for scalars (null, booleans, numbers;
 * see "YAML Ain't Markup Language Version 1.2", section 10.3.2).
 *
 * The tree is built once and then walked against the schema, so a missing
 * key can point at its enclosing mapping and a duplicate at its first use.
 * Job files are small; the tree costs nothing worth mentioning. */
#include "job/yaml.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "util/alloc.h"

#define MAX_DEPTH 64

struct builder {
	yaml_parser_t parser;
	struct dt_yaml_error *ye;
	const char *text;
	size_t len;
};

static void set_error(struct dt_yaml_error *ye, size_t line0, size_t col0,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Fills *ye from libyaml's 0-based mark and a printf-style message. */
static void
set_error(struct dt_yaml_error *ye, size_t line0, size_t col0,
	  const char *fmt, ...)
{
	va_list ap;

	ye->line = (int)line0 + 1;
	ye->col = (int)col0 + 1;
	va_start(ap, fmt);
	vsnprintf(ye->msg, sizeof ye->msg, fmt, ap);
	va_end(ap);
}

/* Column (1-based) of a tab in the indentation of the given line: the
 * leading run of spaces, tabs and "- " sequence markers. 0 when none. */
static int
tab_in_indent(const char *text, size_t len, int line)
{
	size_t n, i;
	const char *s = dt_yaml_line(text, len, line, &n);

	if (s == NULL)
		return 0;
	for (i = 0; i < n; i++) {
		if (s[i] == '\t')
			return (int)i + 1;
		if (s[i] == ' ')
			continue;
		if (s[i] == '-' && i + 1 < n && (s[i + 1] == ' ' ||
						  s[i + 1] == '\t'))
			continue;
		break;
	}
	return 0;
}

/* Turns libyaml's failure into *ye. libyaml reports a tab in indentation
 * as "found character that cannot start any token", which sends people
 * looking for a stray character; name the tab instead. */
static void
parser_error(struct builder *b)
{
	yaml_parser_t *p = &b->parser;
	struct dt_yaml_error *ye = b->ye;
	int first, line, col;

	if (p->error == YAML_READER_ERROR) {
		/* Invalid encoding: only a byte offset is known. */
		size_t off = p->problem_offset, i;

		ye->line = 1;
		ye->col = 1;
		for (i = 0; i < off && i < b->len; i++) {
			if (b->text[i] == '\n') {
				ye->line++;
				ye->col = 1;
			} else if (((unsigned char)b->text[i] & 0xc0) != 0x80) {
				ye->col++;
			}
		}
		snprintf(ye->msg, sizeof ye->msg, "%s (byte offset %zu)",
			 p->problem ? p->problem : "cannot read the text",
			 off);
		return;
	}
	line = (int)p->problem_mark.line + 1;
	first = line;
	if (p->context != NULL && (int)p->context_mark.line + 1 < first)
		first = (int)p->context_mark.line + 1;
	for (; first <= line; first++) {
		col = tab_in_indent(b->text, b->len, first);
		if (col > 0) {
			ye->line = first;
			ye->col = col;
			snprintf(ye->msg, sizeof ye->msg,
				 "tab character in indentation; use spaces");
			return;
		}
	}
	ye->line = line;
	ye->col = (int)p->problem_mark.column + 1;
	if (p->context != NULL &&
	    (p->context_mark.line != p->problem_mark.line ||
	     p->context_mark.column != p->problem_mark.column))
		snprintf(ye->msg, sizeof ye->msg,
			 "%s (%s that starts at %d:%d)",
			 p->problem ? p->problem : "syntax error", p->context,
			 (int)p->context_mark.line + 1,
			 (int)p->context_mark.column + 1);
	else
		snprintf(ye->msg, sizeof ye->msg, "%s",
			 p->problem ? p->problem : "syntax error");
}

static bool
next_event(struct builder *b, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&b->parser, ev)) {
		parser_error(b);
		return false;
	}
	return true;
}

static struct dt_ynode *
new_node(enum dt_ynode_kind kind, const yaml_mark_t *mark)
{
	struct dt_ynode *n = dt_xcalloc(1, sizeof *n);

	n->kind = kind;
	n->line = (int)mark->line + 1;
	n->col = (int)mark->column + 1;
	return n;
}

static void
add_kid(struct dt_ynode *parent, struct dt_ynode *kid)
{
	parent->kids = dt_xrealloc(parent->kids, (size_t)parent->n_kids + 1,
				   sizeof *parent->kids);
	parent->kids[parent->n_kids++] = kid;
}

/* Builds the node that starts with ev (consumed here) into *out. */
static bool
build(struct builder *b, yaml_event_t *ev, int depth, struct dt_ynode **out)
{
	yaml_event_type_t end;
	struct dt_ynode *n;
	yaml_event_t kid;
	bool ok = true;

	*out = NULL;
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.tag != NULL &&
		    !ev->data.scalar.plain_implicit &&
		    !ev->data.scalar.quoted_implicit) {
			set_error(b->ye, ev->start_mark.line,
				  ev->start_mark.column,
				  "tags such as %s are not supported",
				  (const char *)ev->data.scalar.tag);
			yaml_event_delete(ev);
			return false;
		}
		if (memchr(ev->data.scalar.value, '\0',
			   ev->data.scalar.length) != NULL) {
			set_error(b->ye, ev->start_mark.line,
				  ev->start_mark.column,
				  "NUL character in a value");
			yaml_event_delete(ev);
			return false;
		}
		n = new_node(DT_YNODE_SCALAR, &ev->start_mark);
		n->len = ev->data.scalar.length;
		n->text = dt_xmalloc(n->len + 1, 1);
		memcpy(n->text, ev->data.scalar.value, n->len);
		n->text[n->len] = '\0';
		n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
		yaml_event_delete(ev);
		*out = n;
		return true;
	case YAML_ALIAS_EVENT:
		set_error(b->ye, ev->start_mark.line, ev->start_mark.column,
			  "aliases such as *%s are not supported; name the "
			  "value once under vars: and write $NAME where it "
			  "is used",
			  (const char *)ev->data.alias.anchor);
		yaml_event_delete(ev);
		return false;
	case YAML_MAPPING_START_EVENT:
	case YAML_SEQUENCE_START_EVENT:
		break;
	default:
		set_error(b->ye, ev->start_mark.line, ev->start_mark.column,
			  "unexpected YAML event");
		yaml_event_delete(ev);
		return false;
	}

	if (depth >= MAX_DEPTH) {
		set_error(b->ye, ev->start_mark.line, ev->start_mark.column,
			  "nesting deeper than 64 levels");
		yaml_event_delete(ev);
		return false;
	}
	if (ev->type == YAML_MAPPING_START_EVENT) {
		if (ev->data.mapping_start.tag != NULL &&
		    !ev->data.mapping_start.implicit) {
			set_error(b->ye, ev->start_mark.line,
				  ev->start_mark.column,
				  "tags such as %s are not supported",
				  (const char *)ev->data.mapping_start.tag);
			yaml_event_delete(ev);
			return false;
		}
		n = new_node(DT_YNODE_MAP, &ev->start_mark);
		end = YAML_MAPPING_END_EVENT;
	} else {
		if (ev->data.sequence_start.tag != NULL &&
		    !ev->data.sequence_start.implicit) {
			set_error(b->ye, ev->start_mark.line,
				  ev->start_mark.column,
				  "tags such as %s are not supported",
				  (const char *)ev->data.sequence_start.tag);
			yaml_event_delete(ev);
			return false;
		}
		n = new_node(DT_YNODE_SEQ, &ev->start_mark);
		end = YAML_SEQUENCE_END_EVENT;
	}
	yaml_event_delete(ev);

	for (;;) {
		struct dt_ynode *k;

		if (!next_event(b, &kid)) {
			ok = false;
			break;
		}
		if (kid.type == end) {
			yaml_event_delete(&kid);
			break;
		}
		if (!build(b, &kid, depth + 1, &k)) {
			ok = false;
			break;
		}
		add_kid(n, k);
	}
	if (!ok) {
		dt_yaml_free(n);
		return false;
	}
	*out = n;
	return true;
}

/* Reads the rest of the stream after the first document's root. */
static bool
finish_stream(struct builder *b)
{
	yaml_event_t ev;

	if (!next_event(b, &ev))
		return false;
	if (ev.type != YAML_DOCUMENT_END_EVENT) {
		set_error(b->ye, ev.start_mark.line, ev.start_mark.column,
			  "expected the end of the document");
		yaml_event_delete(&ev);
		return false;
	}
	yaml_event_delete(&ev);
	if (!next_event(b, &ev))
		return false;
	if (ev.type == YAML_DOCUMENT_START_EVENT) {
		set_error(b->ye, ev.start_mark.line, ev.start_mark.column,
			  "expected one YAML document, found a second");
		yaml_event_delete(&ev);
		return false;
	}
	yaml_event_delete(&ev);
	return true;
}

bool
dt_yaml_parse(const char *text, size_t len, struct dt_ynode **root,
	      struct dt_yaml_error *ye)
{
	struct builder b;
	yaml_event_t ev;
	bool ok = false;

	*root = NULL;
	memset(ye, 0, sizeof *ye);
	memset(&b, 0, sizeof b);
	b.ye = ye;
	b.text = text;
	b.len = len;
	if (!yaml_parser_initialize(&b.parser)) {
		snprintf(ye->msg, sizeof ye->msg, "cannot start libyaml");
		return false;
	}
	yaml_parser_set_input_string(&b.parser, (const unsigned char *)text,
				     len);
	yaml_parser_set_encoding(&b.parser, YAML_UTF8_ENCODING);

	if (!next_event(&b, &ev))	/* STREAM-START */
		goto out;
	yaml_event_delete(&ev);
	if (!next_event(&b, &ev))
		goto out;
	if (ev.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&ev);
		ok = true;		/* no document at all */
		goto out;
	}
	yaml_event_delete(&ev);		/* DOCUMENT-START */
	if (!next_event(&b, &ev))
		goto out;
	if (!build(&b, &ev, 0, root))
		goto out;
	if (!finish_stream(&b)) {
		dt_yaml_free(*root);
		*root = NULL;
		goto out;
	}
	ok = true;
out:
	yaml_parser_delete(&b.parser);
	return ok;
}

void
dt_yaml_free(struct dt_ynode *n)
{
	int i;

	if (n == NULL)
		return;
	for (i = 0; i < n->n_kids; i++)
		dt_yaml_free(n->kids[i]);
	free(n->kids);
	free(n->text);
	free(n);
}

bool
dt_yaml_is_null(const struct dt_ynode *n)
{
	if (n->kind != DT_YNODE_SCALAR || n->quoted)
		return false;
	return n->len == 0 || strcmp(n->text, "~") == 0 ||
	       strcmp(n->text, "null") == 0 || strcmp(n->text, "Null") == 0 ||
	       strcmp(n->text, "NULL") == 0;
}

static bool
is_digits(const char *s, const char *set)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (strchr(set, *s) == NULL)
			return false;
	return true;
}

/* Accumulates digits of base into *mag; true on overflow. */
static bool
accumulate(const char *s, unsigned base, uint64_t *mag)
{
	*mag = 0;
	for (; *s != '\0'; s++) {
		unsigned d = (unsigned)(*s >= 'a' ? *s - 'a' + 10 :
					*s >= 'A' ? *s - 'A' + 10 : *s - '0');

		if (*mag > (UINT64_MAX - d) / base)
			return true;
		*mag = *mag * base + d;
	}
	return false;
}

/* The float production of the core schema, without the special values:
 * [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
static bool
is_float_text(const char *s)
{
	size_t ip = 0, fp = 0;

	if (*s == '-' || *s == '+')
		s++;
	while (*s >= '0' && *s <= '9') {
		s++;
		ip++;
	}
	if (*s == '.') {
		s++;
		while (*s >= '0' && *s <= '9') {
			s++;
			fp++;
		}
		if (ip == 0 && fp == 0)
			return false;
	} else if (ip == 0) {
		return false;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

enum dt_ynum_kind
dt_yaml_number(const char *text, struct dt_ynum *num)
{
	const char *s = text;

	memset(num, 0, sizeof *num);
	if (strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0 ||
	    strcmp(s, ".NAN") == 0) {
		num->value = NAN;
		return num->kind = DT_YNUM_SPECIAL;
	}
	if (*s == '-' || *s == '+') {
		num->neg = *s == '-';
		s++;
	}
	if (strcmp(s, ".inf") == 0 || strcmp(s, ".Inf") == 0 ||
	    strcmp(s, ".INF") == 0) {
		num->value = num->neg ? -INFINITY : INFINITY;
		return num->kind = DT_YNUM_SPECIAL;
	}
	if (s == text && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
		bool hex = s[1] == 'x';

		if (!is_digits(s + 2, hex ? "0123456789abcdefABCDEF" :
			       "01234567"))
			return DT_YNUM_NOT;
		num->overflow = accumulate(s + 2, hex ? 16 : 8, &num->mag);
		num->value = num->overflow ? HUGE_VAL : (double)num->mag;
		return num->kind = DT_YNUM_INT;
	}
	if (is_digits(s, "0123456789")) {
		num->overflow = accumulate(s, 10, &num->mag);
		num->value = strtod(text, NULL);
		return num->kind = DT_YNUM_INT;
	}
	if (!is_float_text(text))
		return DT_YNUM_NOT;
	/* strtod follows LC_NUMERIC; dtrain never changes it from "C". */
	num->value = strtod(text, NULL);
	return num->kind = DT_YNUM_FLOAT;
}

/* Appends text as a double-quoted, escaped and shortened string. */
static void
quote(const char *text, size_t len, char *buf, size_t size)
{
	size_t o = 0, i;

	if (size < 8) {
		if (size > 0)
			buf[0] = '\0';
		return;
	}
	buf[o++] = '"';
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)text[i];

		if (o + 8 >= size || i >= 60) {
			/* Cut before a UTF-8 continuation byte's lead. */
			while (o > 1 && ((unsigned char)buf[o - 1] & 0xc0) ==
			       0x80)
				o--;
			if (o > 1 && ((unsigned char)buf[o - 1] & 0x80))
				o--;
			buf[o++] = '.';
			buf[o++] = '.';
			buf[o++] = '.';
			break;
		}
		if (ch == '"' || ch == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)ch;
		} else if (ch == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else if (ch == '\t') {
			buf[o++] = '\\';
			buf[o++] = 't';
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x",
					      ch);
		} else {
			buf[o++] = (char)ch;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

void
dt_yaml_describe(const struct dt_ynode *n, char *buf, size_t size)
{
	char q[128];

	if (n->kind == DT_YNODE_MAP) {
		snprintf(buf, size, "a mapping");
	} else if (n->kind == DT_YNODE_SEQ) {
		snprintf(buf, size, n->n_kids ? "a list" : "an empty list");
	} else if (dt_yaml_is_null(n)) {
		snprintf(buf, size, n->len == 0 ? "nothing" : "null");
	} else {
		quote(n->text, n->len, q, sizeof q);
		snprintf(buf, size, "%s%s", n->quoted ? "a quoted string " :
			 "", q);
	}
}

const char *
dt_yaml_line(const char *text, size_t len, int line, size_t *n)
{
	size_t i = 0, start;
	int at = 1;

	if (line < 1)
		return NULL;
	while (at < line) {
		const char *nl = memchr(text + i, '\n', len - i);

		if (nl == NULL)
			return NULL;
		i = (size_t)(nl - text) + 1;
		at++;
	}
	start = i;
	while (i < len && text[i] != '\n')
		i++;
	if (i > start && text[i - 1] == '\r')
		i--;
	*n = i - start;
	return text + start;
}
