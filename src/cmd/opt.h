/* SPDX-License-Identifier: MIT */
/* opt.h - the option tables of the subcommands and their one parser.
 *
 * Each command declares its options once, as a table (tmux's options
 * table, for the command line): the long and short names, the kind of
 * value, where the value goes and a one-line description. From that one
 * table come the parsing (getopt_long underneath, so options may follow
 * the operand), the checks of every value with a message that names the
 * option, the synopsis (which dtrain(1) repeats word for word; a test
 * compares them) and `dtrain CMD --help`. */
#ifndef DT_CMD_OPT_H
#define DT_CMD_OPT_H

#include <stddef.h>
#include <stdio.h>

#include "util/status.h"

/* The kind of an option's value, and so the type of its destination. */
enum dt_cmd_arg {
	DT_CMD_ARG_END = 0,	/* ends a table */
	DT_CMD_ARG_FLAG,	/* no value; sets an int to 1 */
	DT_CMD_ARG_STRING,	/* any text; a const char * into argv */
	DT_CMD_ARG_INT,		/* a decimal whole number in [min, max];
				 * an int */
	DT_CMD_ARG_NUMBER,	/* a finite number >= min; a double */
	DT_CMD_ARG_U64,		/* a whole number from 0 to 2^64-1 (decimal,
				 * 0x hex or 0 octal); a uint64_t */
	DT_CMD_ARG_SET,		/* key.path=value, repeatable, in order;
				 * collected in struct dt_cmd_line */
	DT_CMD_ARG_REFUSED,	/* not an option of this command though a
				 * sibling has it: refused with .doc as the
				 * reason; not in the synopsis or the help */
};

/* Shown without brackets in the synopsis (predict's --input and -o). */
#define DT_CMD_OPT_BARE 1u
/* A STRING that names a file or directory: an empty one is refused. */
#define DT_CMD_OPT_PATH 2u

/* One option. A table is an array ending in an entry of kind
 * DT_CMD_ARG_END; its order is the synopsis's. */
struct dt_cmd_opt {
	const char *name;	/* long name without "--"; NULL: none */
	char short_name;	/* '\0': none */
	enum dt_cmd_arg kind;
	const char *arg;	/* the value's name in the synopsis and help
				 * ("ranks"); NULL for a flag */
	size_t offset;		/* of the destination in the command's
				 * argument struct (unused by SET) */
	long long min, max;	/* INT: the range; NUMBER: min only */
	unsigned flags;		/* DT_CMD_OPT_* */
	const char *doc;	/* one line for --help (under 50 chars) */
	const char *words;	/* the words the value may be, blank-separated
				 * ("best"): what the bash completion offers
				 * for it; NULL: it completes file names */
};

/* The --set entry every command that takes a job shares. */
#define DT_CMD_OPT_SET_ENTRY                                                 \
	{ .name = "set", .kind = DT_CMD_ARG_SET, .arg = "key=value",         \
	  .doc = "override a job key (repeatable; the last wins)" }

struct dt_cmd;

/* What the parser collects besides the table's destinations. */
struct dt_cmd_line {
	const char **sets;	/* (n_sets) the --set values in the order
				 * given, pointing into argv; heap, the
				 * caller frees it (free(NULL) is fine) */
	int n_sets;
	const char *operand;	/* the one operand (into argv), NULL when the
				 * command's operand is optional and absent */
	int help;		/* -h or --help was given */
};

/* Parses argv[1..argc) (argv[0] is the command's name) against cmd->opts
 * into dst, the command's argument struct (defaults already in it), and
 * line (zeroed here). Permutes argv as getopt_long does. Returns DT_OK,
 * with line->help set when -h/--help was seen (parsing stops there); or
 * DT_ERR_USAGE with err naming the option and what it takes, in which
 * case line->sets is freed and NULL. Writes nothing to stdout or stderr. */
enum dt_status dt_cmd_opts_parse(const struct dt_cmd *cmd, int argc,
				 char **argv, void *dst,
				 struct dt_cmd_line *line,
				 struct dt_error *err);

/* dt_cmd_opts_parse for a command's run function: returns -1 to go on
 * with the command; 0 after printing the help to stdout; 2 after printing
 * the error and the synopsis to stderr (on launch rank 0 only). On -1 the
 * caller owns line->sets; otherwise it is NULL. */
int dt_cmd_parse(const struct dt_cmd *cmd, int argc, char **argv, void *dst,
		 struct dt_cmd_line *line);

/* Writes cmd's synopsis ("dtrain run [-q] [-n ranks] ... job.yaml"),
 * generated from its table, into buf (NUL-terminated, truncated to
 * size). */
void dt_cmd_synopsis(const struct dt_cmd *cmd, char *buf, size_t size);

/* Writes `dtrain CMD --help` to out: the usage line, the summary, one
 * line per option and the operand. */
void dt_cmd_print_help(const struct dt_cmd *cmd, FILE *out);

#endif
