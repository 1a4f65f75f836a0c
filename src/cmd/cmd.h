/* cmd.h - the subcommand table (tmux's cmd_table): one file per command,
 * each with an entry here. */
#ifndef DT_CMD_H
#define DT_CMD_H

#include <stddef.h>

#include "util/status.h"

struct dt_cmd {
	const char *name;
	const char *usage;	/* synopsis, word for word as in dtrain(1) */
	const char *summary;
	int (*run)(int argc, char **argv);	/* returns the exit code */
};

extern const struct dt_cmd dt_cmd_run;
extern const struct dt_cmd dt_cmd_resume;
extern const struct dt_cmd dt_cmd_export;
extern const struct dt_cmd dt_cmd_plan;
extern const struct dt_cmd dt_cmd_sample;
extern const struct dt_cmd dt_cmd_fetch;

/* Every command, NULL-terminated. */
extern const struct dt_cmd *const dt_cmd_table[];

/* The rank of this process as told by the launcher before MPI starts
 * (Open MPI, PMI, Slurm), 0 when not launched in parallel. */
int dt_cmd_launch_rank(void);

/* Prints "dtrain: MSG" to stderr (only on launch rank 0) and returns the
 * exit code of status. */
int dt_cmd_fail(enum dt_status status, const struct dt_error *err);

/* Prints "dtrain NAME: " and a message made from fmt and one string arg,
 * then the usage line, to stderr (on launch rank 0 only); returns 2, the
 * exit code of bad usage. */
int dt_cmd_usage_error(const char *name, const char *usage, const char *fmt,
		       const char *arg);

struct dt_job;
/* dt_job_load for a command: a job file that cannot be read is bad usage
 * (DT_ERR_USAGE, exit 2), since nothing was attempted; other results as
 * dt_job_load's. */
enum dt_status dt_cmd_load_job(const char *path, const char *const *sets,
			       int n_sets, struct dt_job *job,
			       struct dt_error *err);

/* The checkpoint directory of the run in dir (its saved job's
 * checkpoint.dir, else dir/checkpoints) into buf. DT_ERR_USAGE if dir holds
 * no job.yaml. */
enum dt_status dt_cmd_ckpt_dir(const char *dir, char *buf, size_t size,
			       struct dt_error *err);

#endif
