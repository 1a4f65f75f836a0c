/* SPDX-License-Identifier: MIT */
/* cmd_help.c - `dtrain help [command]`: the list of commands from the command
 * table, or one command's options from its option table (the same text as
 * `dtrain COMMAND --help`). */
#include "cmd/cmd.h"

#include <stdio.h>
#include <stdlib.h>

static const struct dt_cmd_opt help_opts[] = {
	{ .kind = DT_CMD_ARG_END },
};

static int
cmd_help(int argc, char **argv)
{
	struct dt_cmd_line line;
	const struct dt_cmd *cmd;
	int rc = dt_cmd_parse(&dt_cmd_help, argc, argv, NULL, &line);

	if (rc >= 0)
		return rc;
	free(line.sets);
	if (line.operand == NULL) {
		dt_cmd_print_commands(stdout);
		return 0;
	}
	cmd = dt_cmd_find(line.operand);
	if (cmd == NULL)
		return dt_cmd_usage_error(&dt_cmd_help, "unknown command \"%s\" "
					  "(dtrain help lists them)",
					  line.operand);
	dt_cmd_print_help(cmd, stdout);
	return 0;
}

const struct dt_cmd dt_cmd_help = {
	.name = "help",
	.summary = "list the commands, or describe one command's options",
	.opts = help_opts,
	.operand = "command",
	.operand_noun = "command",
	.operand_doc = "the command to describe; none: list them all",
	.operand_optional = 1,
	.run = cmd_help,
};
