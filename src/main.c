/* SPDX-License-Identifier: MIT */
/* main.c - dtrain's entry: dispatch to a subcommand from the table
 * (cmd/cmd.h); each command parses its own options from its table. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "config.h"

int
main(int argc, char **argv)
{
	const struct dt_cmd *cmd;

	/* A file-size limit (ulimit -f) makes writes fail with EFBIG, which
	 * every writer reports, instead of killing the process midway. */
	signal(SIGXFSZ, SIG_IGN);
	if (argc < 2) {
		dt_cmd_print_commands(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		dt_cmd_print_commands(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		if (argc > 2) {
			fprintf(stderr, "dtrain: %s takes no arguments, "
				"found \"%s\"\n", argv[1], argv[2]);
			return 2;
		}
		dt_cmd_print_version(stdout);
		return 0;
	}
	cmd = dt_cmd_find(argv[1]);
	if (cmd != NULL)
		return cmd->run(argc - 1, argv + 1);
	fprintf(stderr, "dtrain: unknown command \"%s\"\n", argv[1]);
	dt_cmd_print_commands(stderr);
	return 2;
}
