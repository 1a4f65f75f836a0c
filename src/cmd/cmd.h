/* cmd.h - the subcommand table (tmux's cmd_table): one file per command,
 * each with an entry here. */
#ifndef DT_CMD_H
#define DT_CMD_H

#include "util/status.h"

struct dt_cmd {
	const char *name;
	const char *usage;	/* synopsis, word for word as in dtrain(1) */
	const char *summary;
	int (*run)(int argc, char **argv);	/* returns the exit code */
};

extern const struct dt_cmd dt_cmd_run;

/* Every command, NULL-terminated. */
extern const struct dt_cmd *const dt_cmd_table[];

/* The rank of this process as told by the launcher before MPI starts
 * (Open MPI, PMI, Slurm), 0 when not launched in parallel. */
int dt_cmd_launch_rank(void);

/* Prints "dtrain: MSG" to stderr (only on launch rank 0) and returns the
 * exit code of status. */
int dt_cmd_fail(enum dt_status status, const struct dt_error *err);

#endif
