/* common.c - helpers shared by the subcommands, and the command table. */
#include "cmd/cmd.h"

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
	&dt_cmd_sample,
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
	fputs("usage: dtrain <command> [options]\n\ncommands:\n", out);
	for (int i = 0; dt_cmd_table[i] != NULL; i++)
		fprintf(out, "  %-8s %s\n", dt_cmd_table[i]->name,
			dt_cmd_table[i]->summary);
	fputs("\n  dtrain --help | --version\n"
	      "dtrain help COMMAND (or dtrain COMMAND --help) describes its "
	      "options;\nsee dtrain(1) and dtrain-job(5)\n", out);
}

int
dt_cmd_launch_rank(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK",
					    "PMIX_RANK", "PMI_RANK",
					    "SLURM_PROCID" };

	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);

		if (v != NULL && *v != '\0')
			return atoi(v);
	}
	return 0;
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
