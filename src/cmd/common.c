/* SPDX-License-Identifier: MIT */
/* common.c - helpers shared by the subcommands, and the command table. */
#include "cmd/cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/job.h"

const struct dt_cmd *const dt_cmd_table[] = {
	&dt_cmd_plan,
	&dt_cmd_fetch,
	&dt_cmd_run,
	&dt_cmd_resume,
	&dt_cmd_eval,
	&dt_cmd_predict,
	&dt_cmd_export,
	&dt_cmd_report,
	&dt_cmd_sample,
	&dt_cmd_tokenize,
	&dt_cmd_help,
	NULL,
};

const struct dt_cmd *
dt_cmd_find(const char *name)
{
	for (int i = 0; dt_cmd_table[i] != NULL; i++)
		if (strcmp(name, dt_cmd_table[i]->name) == 0)
			return dt_cmd_table[i];
	return NULL;
}

void
dt_cmd_print_commands(FILE *out)
{
	int width = 0;

	/* the names' column, two spaces wider than the longest */
	for (int i = 0; dt_cmd_table[i] != NULL; i++)
		if ((int)strlen(dt_cmd_table[i]->name) > width)
			width = (int)strlen(dt_cmd_table[i]->name);
	fputs("usage: dtrain <command> [options]\n\ncommands:\n", out);
	for (int i = 0; dt_cmd_table[i] != NULL; i++)
		fprintf(out, "  %-*s  %s\n", width, dt_cmd_table[i]->name,
			dt_cmd_table[i]->summary);
	fputs("\n  dtrain --help | --version\n"
	      "dtrain help COMMAND (or dtrain COMMAND --help) describes its "
	      "options;\nsee dtrain(1) and dtrain-job(5)\n", out);
}

/* The value of the environment variable name as a whole number, or -1
 * when it is unset or not one. */
static long
env_long(const char *name)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (v == NULL || *v == '\0')
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	return errno != 0 || *end != '\0' || n < 0 ? -1 : n;
}

int
dt_cmd_launch_rank(void)
{
	long rank;

	/* Each variable counts only with a world of more than one process
	 * beside it: one inherited into a singleton (a shell inside srun,
	 * a process that a rank started) must not silence its errors.
	 * SLURM_PROCID alone never counts: without an MPI plugin (srun
	 * --mpi=pmix) every task srun starts is a singleton of its own. */
	rank = env_long("OMPI_COMM_WORLD_RANK");
	if (rank >= 0 && env_long("OMPI_COMM_WORLD_SIZE") > 1)
		return (int)rank;
	rank = env_long("PMI_RANK");
	if (rank >= 0 && env_long("PMI_SIZE") > 1)
		return (int)rank;
	rank = env_long("PMIX_RANK");
	if (rank >= 0 && (env_long("SLURM_STEP_NUM_TASKS") > 1 ||
			  env_long("SLURM_NTASKS") > 1))
		return (int)rank;
	return 0;
}

const char *
dt_cmd_launcher(void)
{
	if (getenv("OMPI_COMM_WORLD_SIZE") != NULL)
		return "mpirun";
	if (getenv("PMIX_RANK") != NULL || getenv("PMI_RANK") != NULL)
		return "an MPI launcher (PMI)";
	if (getenv("SLURM_STEP_ID") != NULL &&
	    env_long("SLURM_STEP_NUM_TASKS") > 1)
		return "srun";
	return NULL;
}

int
dt_cmd_usage_error(const struct dt_cmd *cmd, const char *fmt,
		   const char *arg)
{
	char synopsis[512];

	if (dt_cmd_launch_rank() != 0)
		return 2;
	dt_cmd_synopsis(cmd, synopsis, sizeof synopsis);
	fprintf(stderr, "dtrain %s: ", cmd->name);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: %s\n", synopsis);
	return 2;
}

enum dt_status
dt_cmd_load_job(const char *path, const char *const *sets, int n_sets,
		struct dt_job *job, struct dt_error *err)
{
	enum dt_status st = dt_job_load(path, sets, n_sets, job, err);

	return st == DT_ERR_IO ? DT_ERR_USAGE : st;
}

int
dt_cmd_fail(enum dt_status status, const struct dt_error *err)
{
	if (dt_cmd_launch_rank() == 0 && err->msg[0] != '\0')
		fprintf(stderr, "dtrain: %s\n", err->msg);
	return dt_status_exit_code(status);
}
