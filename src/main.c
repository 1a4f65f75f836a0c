/* main.c - dtrain's entry: dispatch to a subcommand from the table. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "config.h"

static void
usage(FILE *out)
{
	fputs("usage: dtrain <command> [options]\n\ncommands:\n", out);
	for (int i = 0; dt_cmd_table[i] != NULL; i++)
		fprintf(out, "  %-8s %s\n", dt_cmd_table[i]->name,
			dt_cmd_table[i]->summary);
	fputs("\n  dtrain --help | --version\n"
	      "see dtrain(1) and dtrain-job(5)\n", out);
}

int
main(int argc, char **argv)
{
	/* A file-size limit (ulimit -f) makes writes fail with EFBIG, which
	 * every writer reports, instead of killing the process midway. */
	signal(SIGXFSZ, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("dtrain %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (int i = 0; dt_cmd_table[i] != NULL; i++)
		if (strcmp(argv[1], dt_cmd_table[i]->name) == 0)
			return dt_cmd_table[i]->run(argc - 1, argv + 1);
	fprintf(stderr, "dtrain: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
