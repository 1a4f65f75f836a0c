/* SPDX-License-Identifier: MIT */
/* cmd_complete.c - the bash completion script for dtrain, written from the
 * command table (cmd/cmd.h), each command's option table (cmd/opt.h) and
 * the job key table (job/schema.c), so it cannot fall behind either. The
 * build runs completion/gen to write it (see completion/local.mk). */
#include "cmd/cmd.h"

#include <string.h>

#include "job/job.h"

/* key to out with the N of a layer key ("model.layers.N.units") written
 * as index. */
static void
put_key(FILE *out, const char *key, char index)
{
	for (const char *p = key; *p != '\0'; p++) {
		if (*p == 'N' && p > key && p[-1] == '.' &&
		    (p[1] == '.' || p[1] == '\0'))
			fputc(index, out);
		else
			fputc(*p, out);
	}
}

/* Writes one job key, as `--set` takes it ("train.lr="), to the FILE in
 * ctx; the N of a layer key becomes 0 ("model.layers.0.units="). */
static void
write_key(const char *key, const char *type, const char *def,
	  const char *doc, void *ctx)
{
	FILE *out = ctx;

	(void)type;
	(void)def;
	(void)doc;
	fputc(' ', out);
	put_key(out, key, '0');
	fputc('=', out);
}

/* One case arm of _dtrain_values for a key whose values are words
 * ("one of sgd, adam, adamw", "true or false"), to the FILE in ctx; the
 * N of a layer key matches any layer index. Other keys get no arm. */
static void
write_values(const char *key, const char *type, const char *def,
	     const char *doc, void *ctx)
{
	FILE *out = ctx;
	const char *words;

	(void)def;
	(void)doc;
	if (strcmp(type, "true or false") == 0)
		words = "true false";
	else if (strncmp(type, "one of ", 7) == 0)
		words = type + 7;
	else
		return;
	fputc('\t', out);
	put_key(out, key, '*');
	fputs(") echo '", out);
	for (const char *p = words; *p != '\0'; p++)
		if (*p != ',')
			fputc(*p, out);
	fputs("' ;;\n", out);
}

/* The words of cmd's options (-q --quiet ...) and, in takes, those that
 * take a value, each followed by a blank. */
static void
write_opts(const struct dt_cmd *cmd, FILE *out, int takes)
{
	if (!takes)
		fputs(" -h --help", out);
	for (const struct dt_cmd_opt *o = cmd->opts;
	     o != NULL && o->kind != DT_CMD_ARG_END; o++) {
		if (o->kind == DT_CMD_ARG_REFUSED ||
		    (takes && o->kind == DT_CMD_ARG_FLAG))
			continue;
		if (o->short_name != '\0')
			fprintf(out, " -%c", o->short_name);
		if (o->name != NULL)
			fprintf(out, " --%s", o->name);
	}
}

/* The case arms for the options whose values are words ("export
 * --format" offers dtrain and torch, "eval --checkpoint" best; a step
 * number is the user's to type). */
static void
write_words(FILE *out)
{
	fputs("\tcase \"${COMP_WORDS[1]} $prev\" in\n", out);
	for (int i = 0; dt_cmd_table[i] != NULL; i++) {
		const struct dt_cmd *c = dt_cmd_table[i];

		for (const struct dt_cmd_opt *o = c->opts;
		     o != NULL && o->kind != DT_CMD_ARG_END; o++) {
			if (o->words == NULL || o->kind == DT_CMD_ARG_REFUSED)
				continue;
			fprintf(out, "\t\"%s --%s\"", c->name, o->name);
			if (o->short_name != '\0')
				fprintf(out, " | \"%s -%c\"", c->name,
					o->short_name);
			fprintf(out, ")\n\t\tCOMPREPLY=($(compgen -W '%s' "
				"-- \"$cur\"))\n"
				"\t\treturn 0\n\t\t;;\n", o->words);
		}
	}
	fputs("\tesac\n", out);
}

/* The case arm of each command in _dtrain: its options, the options that
 * take a file, and what its operand is. */
static void
write_command_cases(FILE *out)
{
	for (int i = 0; dt_cmd_table[i] != NULL; i++) {
		const struct dt_cmd *c = dt_cmd_table[i];

		fprintf(out, "\t%s)\n\t\topts='", c->name);
		write_opts(c, out, 0);
		fputs("'\n\t\ttakes='", out);
		write_opts(c, out, 1);
		fputs(" '\n", out);
		/* help takes a command; the others a file or directory. */
		if (c == &dt_cmd_help)
			fputs("\t\toperand=command\n", out);
		fputs("\t\t;;\n", out);
	}
}

void
dt_cmd_write_completion(FILE *out)
{
	fputs("# bash completion for dtrain(1), generated from dtrain's "
	      "command, option\n# and job key tables; do not edit.\n\n"
	      "_dtrain_keys='", out);
	dt_job_each_key(write_key, out);
	fputs("'\n\n# _dtrain_values KEY: the words KEY takes after --set "
	      "KEY=, if any.\n_dtrain_values()\n{\n"
	      "\tcase $1 in\n", out);
	dt_job_each_key(write_values, out);
	fputs("\tesac\n}\n", out);
	fputs("\n_dtrain()\n{\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]}\n"
	      "\tlocal prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	      "\tlocal opts='' takes='' operand=file\n\n"
	      "\tCOMPREPLY=()\n"
	      "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W '", out);
	for (int i = 0; dt_cmd_table[i] != NULL; i++)
		fprintf(out, "%s ", dt_cmd_table[i]->name);
	fputs("--help --version' -- \"$cur\"))\n\t\treturn 0\n\tfi\n"
	      "\tcase ${COMP_WORDS[1]} in\n", out);
	write_command_cases(out);
	fputs("\t*)\n\t\treturn 0\n\t\t;;\n\tesac\n"
	      /* --set KEY=VALUE: bash splits at the = (COMP_WORDBREAKS),
	       * leaving the = as the word or before it. Readline replaces
	       * only the text after the last break character, which is
	       * empty when the word is the = itself: the reply then must
	       * not repeat the = (it would read KEY==VALUE). When = is not
	       * a break character the word is all of KEY=VALUE. */
	      "\tlocal key= val= pre=\n"
	      "\tif [ \"$prev\" = = ] && [ \"${COMP_WORDS[COMP_CWORD-3]}\" = "
	      "--set ]; then\n"
	      "\t\tkey=${COMP_WORDS[COMP_CWORD-2]} val=$cur\n"
	      "\telif [ \"$cur\" = = ] && [ \"${COMP_WORDS[COMP_CWORD-2]}\" "
	      "= --set ]; then\n"
	      "\t\tkey=$prev\n"
	      "\telif [ \"$prev\" = --set ] && [[ $cur == *=* ]]; then\n"
	      "\t\tkey=${cur%%=*} val=${cur#*=} pre=$key=\n"
	      "\tfi\n"
	      "\tif [ -n \"$key\" ]; then\n"
	      "\t\tCOMPREPLY=($(compgen -P \"$pre\" -W \"$(_dtrain_values "
	      "\"$key\")\" -- \"$val\"))\n"
	      "\t\treturn 0\n\tfi\n"
	      "\tif [ \"$prev\" = --set ]; then\n"
	      "\t\tcompopt -o nospace 2>/dev/null\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$_dtrain_keys\" -- \"$cur\"))\n"
	      "\t\treturn 0\n\tfi\n", out);
	write_words(out);
	fputs("\tcase \" $takes \" in\n"
	      "\t*\" $prev \"*)\n"
	      "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
	      "\t\treturn 0\n\t\t;;\n\tesac\n"
	      "\tcase $cur in\n"
	      "\t-*)\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
	      "\t\t;;\n"
	      "\t*)\n"
	      "\t\tif [ $operand = command ]; then\n"
	      "\t\t\tCOMPREPLY=($(compgen -W '", out);
	for (int i = 0; dt_cmd_table[i] != NULL; i++)
		fprintf(out, "%s ", dt_cmd_table[i]->name);
	fputs("' -- \"$cur\"))\n"
	      "\t\telse\n"
	      "\t\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
	      "\t\tfi\n"
	      "\t\t;;\n\tesac\n\treturn 0\n}\n"
	      "complete -F _dtrain dtrain\n", out);
}
