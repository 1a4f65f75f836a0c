/* SPDX-License-Identifier: MIT */
/* main.c - dtrain's entry: dispatch to a subcommand from the table
 * (cmd/cmd.h); each command parses its own options from its table. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "config.h"

/* The exit status `status` of a command, made 1 when what it wrote to
 * standard output did not all get there (a full disk, an I/O error),
 * with a message on stderr: a plan, an evaluation
 * or a version that was lost must not end with exit status 0. A status
 * that is already a failure is kept as it is, without a message (the
 * command has said what went wrong). */
static int
checked_stdout(int status)
{
	int flushed, e;

	if (status != 0)
		return status;
	errno = 0;
	flushed = fflush(stdout) == 0;
	e = errno;
	if (flushed && !ferror(stdout))
		return status;
	return dt_cmd_stdout_error(flushed ? 0 : e);
}

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
		return checked_stdout(0);
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		if (argc > 2) {
			fprintf(stderr, "dtrain: %s takes no arguments, "
				"found \"%s\"\n", argv[1], argv[2]);
			return 2;
		}
		dt_cmd_print_version(stdout);
		return checked_stdout(0);
	}
	cmd = dt_cmd_find(argv[1]);
	if (cmd != NULL)
		return checked_stdout(cmd->run(argc - 1, argv + 1));
	fprintf(stderr, "dtrain: unknown command \"%s\"\n", argv[1]);
	dt_cmd_print_commands(stderr);
	return 2;
}
