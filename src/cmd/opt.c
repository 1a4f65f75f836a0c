/* SPDX-License-Identifier: MIT */
/* opt.c - the one parser of every command's option table (cmd/opt.h), and
 * the synopsis and --help made from the same table. getopt_long does the
 * scanning (GNU order: options and the operand in any order, "--" ends
 * the options); this file turns the table into its arguments and checks
 * each value by its kind. */
#include "cmd/opt.h"

#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "util/alloc.h"

/* The most options one table may hold (getopt's arrays are on the
 * stack). */
#define OPT_MAX 24

/* getopt_long's value for the long-only entry i of a table; above every
 * char, so it never collides with a short name. */
#define OPT_LONG_VAL(i) (256 + (i))

static int
opt_takes_value(const struct dt_cmd_opt *o)
{
	if (o->kind == DT_CMD_ARG_REFUSED)
		return o->arg != NULL;
	return o->kind != DT_CMD_ARG_FLAG;
}

/* The option as a message names it: the spelling used when known
 * (long_used), else the short name if it has one. */
static void
opt_name(const struct dt_cmd_opt *o, int long_used, char *buf, size_t size)
{
	if (o->name != NULL && (long_used || o->short_name == '\0'))
		snprintf(buf, size, "--%s", o->name);
	else
		snprintf(buf, size, "-%c", o->short_name);
}

/* Checks text by o's kind and stores it at o's destination in dst (or in
 * line for --set). DT_ERR_USAGE naming the option (as name) and what it
 * takes otherwise, and nothing stored. */
static enum dt_status
opt_store(const struct dt_cmd_opt *o, const char *name, const char *text,
	  void *dst, struct dt_cmd_line *line, struct dt_error *err)
{
	/* Only the kinds with a destination compute it: dst may be NULL for
	 * a table of --set alone. */
	char *to = o->kind == DT_CMD_ARG_SET || o->kind == DT_CMD_ARG_REFUSED ?
		   NULL : (char *)dst + o->offset;
	char *end;

	assert(to != NULL || o->kind == DT_CMD_ARG_SET ||
	       o->kind == DT_CMD_ARG_REFUSED);
	switch (o->kind) {
	case DT_CMD_ARG_FLAG:
		*(int *)to = 1;
		return DT_OK;
	case DT_CMD_ARG_STRING:
		if ((o->flags & DT_CMD_OPT_PATH) && *text == '\0')
			return dt_errorf(err, DT_ERR_USAGE, "%s: expected a "
					 "%s name, found \"\"", name,
					 strcmp(o->arg, "dir") == 0 ?
					 "directory" : "file");
		*(const char **)to = text;
		return DT_OK;
	case DT_CMD_ARG_INT: {
		long long v;

		errno = 0;
		v = strtoll(text, &end, 10);
		if (errno || end == text || *end != '\0' || v < o->min ||
		    v > o->max)
			return dt_errorf(err, DT_ERR_USAGE, "%s: expected a "
					 "whole number from %lld to %lld, "
					 "found \"%s\"", name, o->min, o->max,
					 text);
		*(int *)to = (int)v;
		return DT_OK;
	}
	case DT_CMD_ARG_NUMBER: {
		double v;

		errno = 0;
		v = strtod(text, &end);
		if (errno || end == text || *end != '\0' || !isfinite(v) ||
		    v < (double)o->min)
			return dt_errorf(err, DT_ERR_USAGE, "%s: expected a "
					 "number >= %lld, found \"%s\"", name,
					 o->min, text);
		*(double *)to = v;
		return DT_OK;
	}
	case DT_CMD_ARG_U64: {
		unsigned long long v;

		errno = 0;
		v = strtoull(text, &end, 0);
		/* strtoull takes "-1" as 2^64-1: a sign is refused. */
		if (errno || end == text || *end != '\0' ||
		    strchr(text, '-') != NULL)
			return dt_errorf(err, DT_ERR_USAGE, "%s: expected a "
					 "whole number from 0 to 2^64-1, found "
					 "\"%s\"", name, text);
		*(uint64_t *)to = (uint64_t)v;
		return DT_OK;
	}
	case DT_CMD_ARG_SET:
		if (strchr(text, '=') == NULL || text[0] == '=')
			return dt_errorf(err, DT_ERR_USAGE, "%s: expected "
					 "key.path=value, found \"%s\"", name,
					 text);
		line->sets[line->n_sets++] = text;
		return DT_OK;
	case DT_CMD_ARG_REFUSED:
		return dt_errorf(err, DT_ERR_USAGE, "%s: %s", name, o->doc);
	case DT_CMD_ARG_END:
		break;
	}
	assert(!"option kind");
	return DT_ERR_USAGE;
}

/* The edit distance (Levenshtein: insertions, deletions, substitutions)
 * between a[0..na) and b; strings over 63 bytes count as far apart. */
static int
edit_distance(const char *a, size_t na, const char *b)
{
	size_t nb = strlen(b);
	int row[64];

	if (na >= 64 || nb >= 64)
		return 64;
	for (size_t j = 0; j <= nb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= na; i++) {
		int diag = row[0];

		row[0] = (int)i;
		for (size_t j = 1; j <= nb; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[nb];
}

/* The option of cmd whose long name is within two edits of the unknown
 * one typed (up to any "=value"), the nearest first; NULL if none. */
static const struct dt_cmd_opt *
opt_nearest(const struct dt_cmd *cmd, const char *typed)
{
	const struct dt_cmd_opt *best = NULL;
	size_t n = strcspn(typed, "=");
	int best_d = 3;

	for (int i = 0; cmd->opts[i].kind != DT_CMD_ARG_END; i++) {
		const struct dt_cmd_opt *o = &cmd->opts[i];
		int d;

		if (o->name == NULL || o->kind == DT_CMD_ARG_REFUSED)
			continue;
		d = edit_distance(typed, n, o->name);
		if (d < best_d) {
			best_d = d;
			best = o;
		}
	}
	return best;
}

/* The error for getopt's '?' or ':' (c) at optopt, for cmd. */
static enum dt_status
opt_scan_error(const struct dt_cmd *cmd, int c, char **argv,
	       struct dt_error *err)
{
	const struct dt_cmd_opt *o = NULL;
	char name[64];
	int i;

	if (optopt >= OPT_LONG_VAL(0))
		o = &cmd->opts[optopt - OPT_LONG_VAL(0)];
	else if (optopt != 0 && optopt != 'h')
		for (i = 0; cmd->opts[i].kind != DT_CMD_ARG_END; i++)
			if (cmd->opts[i].short_name == optopt)
				o = &cmd->opts[i];
	if (o != NULL)
		opt_name(o, optopt >= OPT_LONG_VAL(0), name, sizeof name);
	else if (optopt == 'h')
		snprintf(name, sizeof name, "--help");
	else if (optopt != 0)
		snprintf(name, sizeof name, "-%c", optopt);
	else
		snprintf(name, sizeof name, "%s", argv[optind - 1]);
	if (c == ':')
		return dt_errorf(err, DT_ERR_USAGE, "%s needs a value (%s)",
				 name, o != NULL && o->arg != NULL ? o->arg :
				 "see --help");
	/* A known option that got '?' was given a value it does not take
	 * ("--json=1"). */
	if (o != NULL || optopt == 'h')
		return dt_errorf(err, DT_ERR_USAGE, "%s takes no value, found "
				 "\"%s\"", name, argv[optind - 1]);
	if (optopt == 0 && strncmp(name, "--", 2) == 0 &&
	    (o = opt_nearest(cmd, name + 2)) != NULL)
		return dt_errorf(err, DT_ERR_USAGE, "unknown option \"%s\"; "
				 "did you mean --%s?", name, o->name);
	return dt_errorf(err, DT_ERR_USAGE, "unknown option \"%s\" (dtrain "
			 "help %s describes every option)", name, cmd->name);
}

/* Fills longopts (OPT_MAX + 2 entries) and shorts (2 * OPT_MAX + 4
 * bytes) with getopt_long's view of cmd's table: each long name's value
 * is OPT_LONG_VAL(its index), -h and --help are added, and both arrays
 * are terminated. */
static void
opt_getopt_tables(const struct dt_cmd *cmd, struct option *longopts,
		  char *shorts)
{
	int n_long = 0, n_short = 0;

	/* ':' first: a missing value is told apart from an unknown
	 * option. */
	shorts[n_short++] = ':';
	shorts[n_short++] = 'h';
	for (int i = 0; cmd->opts[i].kind != DT_CMD_ARG_END; i++) {
		const struct dt_cmd_opt *o = &cmd->opts[i];
		int has_arg = opt_takes_value(o);

		assert(i < OPT_MAX && o->short_name != 'h');
		if (o->name != NULL)
			longopts[n_long++] = (struct option){
				o->name, has_arg ? required_argument :
				no_argument, NULL, OPT_LONG_VAL(i) };
		if (o->short_name != '\0') {
			shorts[n_short++] = o->short_name;
			if (has_arg)
				shorts[n_short++] = ':';
		}
	}
	longopts[n_long++] = (struct option){ "help", no_argument, NULL, 'h' };
	longopts[n_long] = (struct option){ NULL, 0, NULL, 0 };
	shorts[n_short] = '\0';
}

/* Checks the arguments left after the options (argv[optind..argc)):
 * one operand, or none where cmd's is optional; stores it in
 * line->operand. DT_ERR_USAGE saying what was expected otherwise. */
static enum dt_status
opt_operand(const struct dt_cmd *cmd, int argc, char **argv,
	    struct dt_cmd_line *line, struct dt_error *err)
{
	int n_operands = argc - optind;

	if (n_operands == 0 && !cmd->operand_optional)
		return dt_errorf(err, DT_ERR_USAGE, "expected one %s",
				 cmd->operand_noun);
	if (n_operands > 1)
		return dt_errorf(err, DT_ERR_USAGE, "expected %s %s, found %d "
				 "arguments that are not options (\"%s\", "
				 "\"%s\"%s)", cmd->operand_optional ?
				 "at most one" : "one", cmd->operand_noun,
				 n_operands, argv[optind], argv[optind + 1],
				 n_operands > 2 ? ", ..." : "");
	if (n_operands == 1)
		line->operand = argv[optind];
	return DT_OK;
}

enum dt_status
dt_cmd_opts_parse(const struct dt_cmd *cmd, int argc, char **argv, void *dst,
		  struct dt_cmd_line *line, struct dt_error *err)
{
	struct option longopts[OPT_MAX + 2];
	char shorts[2 * OPT_MAX + 4];
	int c;
	enum dt_status st = DT_OK;

	memset(line, 0, sizeof *line);
	opt_getopt_tables(cmd, longopts, shorts);
	line->sets = dt_xmalloc((size_t)argc + 1, sizeof *line->sets);
	/* 0, not 1: glibc then also forgets the permutation state of an
	 * earlier scan (the unit tests parse many times). */
	optind = 0;
	opterr = 0;
	while (st == DT_OK && !line->help &&
	       (c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		const struct dt_cmd_opt *o = NULL;
		char name[64];

		if (c == '?' || c == ':') {
			st = opt_scan_error(cmd, c, argv, err);
			break;
		}
		if (c == 'h') {
			line->help = 1;
			break;
		}
		if (c >= OPT_LONG_VAL(0)) {
			o = &cmd->opts[c - OPT_LONG_VAL(0)];
			opt_name(o, 1, name, sizeof name);
		} else {
			for (int i = 0; cmd->opts[i].kind != DT_CMD_ARG_END;
			     i++)
				if (cmd->opts[i].short_name == c)
					o = &cmd->opts[i];
			assert(o != NULL);
			opt_name(o, 0, name, sizeof name);
		}
		st = opt_store(o, name, optarg, dst, line, err);
	}
	if (st == DT_OK && !line->help)
		st = opt_operand(cmd, argc, argv, line, err);
	if (st != DT_OK) {
		free(line->sets);
		line->sets = NULL;
		line->n_sets = 0;
	}
	return st;
}

int
dt_cmd_parse(const struct dt_cmd *cmd, int argc, char **argv, void *dst,
	     struct dt_cmd_line *line)
{
	struct dt_error err;

	dt_error_clear(&err);
	if (dt_cmd_opts_parse(cmd, argc, argv, dst, line, &err) != DT_OK)
		return dt_cmd_usage_error(cmd, "%s", err.msg);
	if (line->help) {
		free(line->sets);
		line->sets = NULL;
		dt_cmd_print_help(cmd, stdout);
		return 0;
	}
	return -1;
}

/* Appends text to buf (of size, holding a string), truncating. */
static void
append(char *buf, size_t size, const char *text)
{
	size_t len = strlen(buf);

	if (len + 1 < size)
		snprintf(buf + len, size - len, "%s", text);
}

void
dt_cmd_synopsis(const struct dt_cmd *cmd, char *buf, size_t size)
{
	assert(size > 0);
	snprintf(buf, size, "dtrain %s", cmd->name);
	for (int i = 0; cmd->opts[i].kind != DT_CMD_ARG_END; i++) {
		const struct dt_cmd_opt *o = &cmd->opts[i];
		int bare = (o->flags & DT_CMD_OPT_BARE) != 0;
		char name[64];

		if (o->kind == DT_CMD_ARG_REFUSED)
			continue;
		opt_name(o, 0, name, sizeof name);
		append(buf, size, bare ? " " : " [");
		append(buf, size, name);
		if (o->arg != NULL) {
			append(buf, size, " ");
			append(buf, size, o->arg);
		}
		if (o->kind == DT_CMD_ARG_SET)
			append(buf, size, " ...");
		if (!bare)
			append(buf, size, "]");
	}
	append(buf, size, cmd->operand_optional ? " [" : " ");
	append(buf, size, cmd->operand);
	if (cmd->operand_optional)
		append(buf, size, "]");
}

/* The left column of o's help line: "-n, --ranks ranks",
 * "    --json", "-n chars". */
static void
help_left(const struct dt_cmd_opt *o, char *buf, size_t size)
{
	const char *arg = o->arg != NULL ? o->arg : "";
	const char *sep = o->arg != NULL ? " " : "";

	if (o->short_name != '\0' && o->name != NULL)
		snprintf(buf, size, "-%c, --%s%s%s", o->short_name, o->name,
			 sep, arg);
	else if (o->short_name != '\0')
		snprintf(buf, size, "-%c%s%s", o->short_name, sep, arg);
	else
		snprintf(buf, size, "    --%s%s%s", o->name, sep, arg);
}

void
dt_cmd_print_help(const struct dt_cmd *cmd, FILE *out)
{
	static const struct dt_cmd_opt help = {
		.name = "help", .short_name = 'h', .kind = DT_CMD_ARG_FLAG,
		.doc = "show this help and exit",
	};
	char synopsis[512], left[96];
	int width = (int)strlen(cmd->operand);

	for (int i = 0; cmd->opts[i].kind != DT_CMD_ARG_END; i++) {
		help_left(&cmd->opts[i], left, sizeof left);
		if (cmd->opts[i].kind != DT_CMD_ARG_REFUSED &&
		    (int)strlen(left) > width)
			width = (int)strlen(left);
	}
	help_left(&help, left, sizeof left);
	if ((int)strlen(left) > width)
		width = (int)strlen(left);
	dt_cmd_synopsis(cmd, synopsis, sizeof synopsis);
	fprintf(out, "usage: %s\n%s\n\noptions:\n", synopsis, cmd->summary);
	for (int i = 0; cmd->opts[i].kind != DT_CMD_ARG_END; i++) {
		if (cmd->opts[i].kind == DT_CMD_ARG_REFUSED)
			continue;
		help_left(&cmd->opts[i], left, sizeof left);
		fprintf(out, "  %-*s  %s\n", width, left, cmd->opts[i].doc);
	}
	help_left(&help, left, sizeof left);
	fprintf(out, "  %-*s  %s\n", width, left, help.doc);
	fprintf(out, "\n  %-*s  %s\n\nsee dtrain(1)\n", width, cmd->operand,
		cmd->operand_doc);
}
