/* SPDX-License-Identifier: MIT */
/* cmd_export.c - `dtrain export RUN_DIR [-o FILE] [--format dtrain|torch]
 * [--checkpoint step|best]`:
 * a checkpoint's parameters (the newest valid one, that of --checkpoint
 * STEP, or the kept best one) as one safetensors file, in
 * dtrain's names and layouts (the checkpoint's own file, the default) or
 * in PyTorch's (torch_export.c). */
#include "cmd/cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "cmd/model_io.h"
#include "cmd/torch_export.h"
#include "job/job.h"
#include "train/rundir.h"

static enum dt_status
copy_file(FILE *out, void *ctx, struct dt_error *err)
{
	const char *src = ctx;
	char buf[1 << 16];
	size_t n;
	FILE *in = fopen(src, "rb");

	if (in == NULL)
		return dt_errorf(err, DT_ERR_IO, "%s: cannot open: %s", src,
				 strerror(errno));
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, out) != n) {
			fclose(in);
			return dt_errorf(err, DT_ERR_IO, "write failed: %s",
					 strerror(errno));
		}
	if (ferror(in)) {
		fclose(in);
		return dt_errorf(err, DT_ERR_IO, "%s: read failed", src);
	}
	fclose(in);
	return DT_OK;
}

/* The checkpoint directory of the run in dir: checkpoint.dir of its saved
 * job, else dir/checkpoints. */
enum dt_status
dt_cmd_ckpt_dir(const char *dir, char *buf, size_t size, struct dt_error *err)
{
	static struct dt_job job;
	char path[DT_JOB_PATH_MAX + 16];
	enum dt_status st;

	snprintf(path, sizeof path, "%s/job.yaml", dir);
	if (access(path, F_OK) != 0)
		return dt_errorf(err, DT_ERR_USAGE, "%s: not a run directory "
				 "(no job.yaml)", dir);
	st = dt_job_load(path, NULL, 0, &job, err);
	if (st != DT_OK)
		return st;
	if (job.checkpoint.dir[0] != '\0')
		snprintf(buf, size, "%s", job.checkpoint.dir);
	else
		snprintf(buf, size, "%s/checkpoints", dir);
	return DT_OK;
}

struct export_args {
	const char *output;	/* NULL: RUN_DIR/model.safetensors */
	const char *format;	/* NULL: "dtrain" */
	const char *checkpoint;	/* NULL: the newest */
};

static const struct dt_cmd_opt export_opts[] = {
	{ .name = "output", .short_name = 'o', .kind = DT_CMD_ARG_STRING,
	  .arg = "file", .offset = offsetof(struct export_args, output),
	  .flags = DT_CMD_OPT_PATH,
	  .doc = "write to file (default run_dir/model.safetensors)" },
	{ .name = "format", .kind = DT_CMD_ARG_STRING, .arg = "format",
	  .offset = offsetof(struct export_args, format),
	  .doc = "dtrain (default) or torch: PyTorch's layouts",
	  .words = "dtrain torch" },
	DT_CMD_OPT_CHECKPOINT_ENTRY(offsetof(struct export_args, checkpoint)),
	{ .kind = DT_CMD_ARG_END },
};

static int
cmd_export(int argc, char **argv)
{
	char latest[DT_JOB_PATH_MAX + 64];
	char src[DT_JOB_PATH_MAX + 96], out[DT_JOB_PATH_MAX + 32];
	struct export_args a = { 0 };
	struct dt_cmd_line line;
	const char *output, *dir;
	struct dt_error err;
	enum dt_status st;
	int64_t step = -1, which;
	int rc = dt_cmd_parse(&dt_cmd_export, argc, argv, &a, &line);

	if (rc >= 0)
		return rc;
	free(line.sets);
	output = a.output;
	dir = line.operand;
	if (a.format != NULL && strcmp(a.format, "dtrain") != 0 &&
	    strcmp(a.format, "torch") != 0)
		return dt_cmd_usage_error(&dt_cmd_export, "--format %s: "
					  "expected dtrain or torch",
					  a.format);
	if (dt_cmd_checkpoint_arg(a.checkpoint, &which) != 0)
		return dt_cmd_usage_error(&dt_cmd_export, "--checkpoint %s: "
					  "expected a step or best",
					  a.checkpoint);
	if (output != NULL &&
	    dt_cmd_output_check(output, dir, "model.safetensors", NULL,
				&err) != DT_OK)
		return dt_cmd_usage_error(&dt_cmd_export, "%s", err.msg);
	if (output != NULL)
		snprintf(out, sizeof out, "%s", output);
	else
		snprintf(out, sizeof out, "%s/model.safetensors", dir);
	if (a.format != NULL && strcmp(a.format, "torch") == 0) {
		dt_error_clear(&err);
		st = dt_cmd_export_torch(dir, which, out, &step, &err);
		if (st != DT_OK)
			return dt_cmd_fail(st, &err);
		printf("%s: parameters of step %lld in PyTorch's layout\n",
		       out, (long long)step);
		return 0;
	}
	st = dt_cmd_find_checkpoint(dir, which, latest, sizeof latest, &step,
				    &err);
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);
	snprintf(src, sizeof src, "%s/params.safetensors", latest);
	/* A pipeline's checkpoint holds one parameter file a stage: they
	 * are streamed into one, tensor by tensor. */
	if (access(src, F_OK) != 0 && dt_ckpt_is_sharded(latest))
		st = dt_ckpt_export_ckpt(latest, out, &err);
	else
		st = dt_rundir_write_atomic(out, copy_file, src, &err);
	if (st != DT_OK)
		return dt_cmd_fail(st, &err);
	printf("%s: parameters of step %lld (%s)\n", out, (long long)step,
	       latest);
	return 0;
}

const struct dt_cmd dt_cmd_export = {
	.name = "export",
	.summary = "write a run's parameters as safetensors",
	.opts = export_opts,
	.operand = "run_dir",
	.operand_noun = "run directory",
	.operand_doc = "the run directory",
	.run = cmd_export,
};
