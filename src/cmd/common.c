/* SPDX-License-Identifier: MIT */
/* common.c - helpers shared by the subcommands, and the command table. */
#include "cmd/cmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

int
dt_cmd_stdout_error(int e)
{
	if (e != 0)
		fprintf(stderr, "dtrain: write error on standard output: "
			"%s\n", strerror(e));
	else
		fprintf(stderr, "dtrain: write error on standard output\n");
	return 1;
}

/* The two paths that output names: the realpath of the file where it
 * exists into file[PATH_MAX] ("" where not), and the realpath of its
 * directory plus its name into entry[2 * PATH_MAX] ("" where the
 * directory does not resolve). */
static void
output_paths(const char *output, char *file, char *entry)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(output, '/');
	const char *name = slash != NULL ? slash + 1 : output;

	file[0] = entry[0] = '\0';
	if (realpath(output, real) != NULL)
		snprintf(file, PATH_MAX, "%s", real);
	if (slash == NULL)
		snprintf(dir, sizeof dir, ".");
	else if (slash == output)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - output),
			 output);
	if (*name != '\0' && realpath(dir, real) != NULL)
		snprintf(entry, 2 * PATH_MAX, "%s/%s",
			 strcmp(real, "/") == 0 ? "" : real, name);
}

/* Whether path (resolved; "" for none) is an existing file other than a
 * directory under dir (resolved), and not the file own (or own NULL). */
static int
file_under(const char *path, const char *dir, const char *own)
{
	size_t n = strlen(dir);
	struct stat sb;

	return path[0] != '\0' && strncmp(path, dir, n) == 0 &&
	       path[n] == '/' && (own == NULL || strcmp(path, own) != 0) &&
	       stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode);
}

/* Whether file or entry (output_paths) is an existing file under dir
 * other than dir/own (own NULL: none excepted). */
static int
in_dir(const char *file, const char *entry, const char *dir,
       const char *own)
{
	char real[PATH_MAX], own_path[2 * PATH_MAX];

	if (realpath(dir, real) == NULL)
		return 0;
	if (own != NULL)
		snprintf(own_path, sizeof own_path, "%s/%s", real, own);
	return file_under(file, real, own != NULL ? own_path : NULL) ||
	       file_under(entry, real, own != NULL ? own_path : NULL);
}

enum dt_status
dt_cmd_output_check(const char *output, const char *run_dir,
		    const char *own, const char *const *inputs,
		    struct dt_error *err)
{
	char file[PATH_MAX], entry[2 * PATH_MAX], real[PATH_MAX];
	char ckpt[DT_JOB_PATH_MAX + 64];
	struct dt_error ignored;

	output_paths(output, file, entry);
	for (size_t i = 0; inputs != NULL && inputs[i] != NULL; i++)
		if (realpath(inputs[i], real) != NULL &&
		    (strcmp(file, real) == 0 || strcmp(entry, real) == 0))
			return dt_errorf(err, DT_ERR_USAGE, "-o %s is the "
					 "input %s; write elsewhere", output,
					 inputs[i]);
	if (run_dir == NULL)
		return DT_OK;
	if (in_dir(file, entry, run_dir, own))
		return dt_errorf(err, DT_ERR_USAGE, "-o %s is a file of the "
				 "run directory %s; write elsewhere", output,
				 run_dir);
	if (dt_cmd_ckpt_dir(run_dir, ckpt, sizeof ckpt, &ignored) == DT_OK &&
	    in_dir(file, entry, ckpt, NULL))
		return dt_errorf(err, DT_ERR_USAGE, "-o %s is a file of the "
				 "checkpoint directory %s of the run %s; write "
				 "elsewhere", output, ckpt, run_dir);
	return DT_OK;
}
