/* SPDX-License-Identifier: MIT */
/* cmd.h - the subcommand table (tmux's cmd_table): one file per command,
 * each with an entry here and a table of its options (cmd/opt.h). */
#ifndef DT_CMD_H
#define DT_CMD_H

#include <stddef.h>
#include <stdio.h>

#include "cmd/opt.h"
#include "util/status.h"

/* One command. Its synopsis, which dtrain(1) repeats word for word, and
 * its --help are made from opts and the operand (cmd/opt.h). */
struct dt_cmd {
	const char *name;
	const char *summary;		/* one line, for `dtrain help` */
	const struct dt_cmd_opt *opts;	/* its options, in synopsis order */
	const char *operand;		/* the operand's name in the synopsis
					 * ("job.yaml") */
	const char *operand_noun;	/* what it is, in errors ("job file") */
	const char *operand_doc;	/* one line for --help */
	int operand_optional;		/* zero or one operand, not one */
	int (*run)(int argc, char **argv);	/* returns the exit code */
};

extern const struct dt_cmd dt_cmd_run;
extern const struct dt_cmd dt_cmd_resume;
extern const struct dt_cmd dt_cmd_export;
extern const struct dt_cmd dt_cmd_report;
extern const struct dt_cmd dt_cmd_eval;
extern const struct dt_cmd dt_cmd_predict;
extern const struct dt_cmd dt_cmd_plan;
extern const struct dt_cmd dt_cmd_sample;
extern const struct dt_cmd dt_cmd_fetch;
extern const struct dt_cmd dt_cmd_tokenize;
extern const struct dt_cmd dt_cmd_help;

/* Every command, NULL-terminated, in the order `dtrain help` lists them. */
extern const struct dt_cmd *const dt_cmd_table[];

/* The command called name, or NULL. */
const struct dt_cmd *dt_cmd_find(const char *name);

/* Writes `dtrain help` (every command of the table with its summary) to
 * out. */
void dt_cmd_print_commands(FILE *out);

/* The rank of this process as told by the launcher before MPI starts:
 * OMPI_COMM_WORLD_RANK (with OMPI_COMM_WORLD_SIZE > 1), PMI_RANK (with
 * PMI_SIZE > 1) or PMIX_RANK (with SLURM_STEP_NUM_TASKS or SLURM_NTASKS
 * > 1); 0 otherwise, so that a singleton which inherited one of them (or
 * SLURM_PROCID, never read) still prints its errors. */
int dt_cmd_launch_rank(void);

/* The launcher that started this process as one of several ("mpirun",
 * "srun", "an MPI launcher (PMI)"), or NULL: `run -n` and --max-restarts
 * refuse to start a job of their own inside one. A static string. */
const char *dt_cmd_launcher(void);

/* Prints "dtrain: MSG" to stderr (only on launch rank 0) and returns the
 * exit code of status. */
int dt_cmd_fail(enum dt_status status, const struct dt_error *err);

/* Prints "dtrain: write error on standard output: REASON" (strerror(e);
 * without ": REASON" where e is 0, the reason unknown) to stderr and
 * returns 1, the exit status of a command whose output did not all get
 * there. e: the errno of the write that failed. */
int dt_cmd_stdout_error(int e);

/* Prints "dtrain NAME: " and a message made from fmt and one string arg,
 * then cmd's synopsis, to stderr (on launch rank 0 only); returns 2, the
 * exit code of bad usage. */
int dt_cmd_usage_error(const struct dt_cmd *cmd, const char *fmt,
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

/* Refuses an output file (-o) that would replace a file the command
 * reads or a run needs. output is compared, by the realpath of the file
 * where it exists and by the realpath of its directory plus its name,
 * with each of inputs[] (NULL-ended; NULL for none) and with every
 * existing file under run_dir and under the run's checkpoint directory
 * (dt_cmd_ckpt_dir), except run_dir/own, the file the command writes by
 * default (own and run_dir may be NULL). DT_OK, or DT_ERR_USAGE with a
 * message naming the file and why: "-o F is a file of the run directory
 * R; write elsewhere" or "-o F is the input I; write elsewhere". */
enum dt_status dt_cmd_output_check(const char *output, const char *run_dir,
				   const char *own,
				   const char *const *inputs,
				   struct dt_error *err);

/* Writes `dtrain --version` to out: "dtrain VERSION", the licence, then
 * one "name: value" line each for the BLAS (openblas_get_config()), the MPI
 * library, mpirun, libyaml, zlib, libcurl, json-c, the compiler and the
 * build switches (sanitizers, debug, werror: "yes" or "no"). */
void dt_cmd_print_version(FILE *out);

/* Writes the bash completion script for dtrain to out: a function
 * _dtrain, registered with `complete -F`, that completes the commands,
 * each command's options and, after --set, the job keys ("train.lr=").
 * Made from dt_cmd_table, the commands' option tables and
 * dt_job_each_key. */
void dt_cmd_write_completion(FILE *out);

#endif
