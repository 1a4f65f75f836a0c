/* SPDX-License-Identifier: MIT */
/* test_launch.c - the launcher of `run -n` (src/launch/): the command line
 * it builds for mpirun, word for word; the notes the ranks leave it (a
 * round trip, and torn or hostile note files, every one of which must be
 * rejected); and its decisions after a launch ends: which exit code the
 * job has, given mpirun's wait status and the ranks' notes, and whether
 * it is restarted, given that code and the restart budget. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "launch/launch_priv.h"
#include "train/signals.h"

static char dir[64];

static void
setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/test_launch.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Asserts that cmd's words are want's (NULL-terminated), one by one. */
static void
assert_argv(const struct dt_launch_cmd *cmd, const char *const *want)
{
	int n = 0;

	while (want[n] != NULL)
		n++;
	for (int i = 0; i < n && i < cmd->argc; i++)
		ck_assert_msg(strcmp(cmd->argv[i], want[i]) == 0,
			      "word %d: \"%s\", expected \"%s\"", i,
			      cmd->argv[i], want[i]);
	ck_assert_int_eq(cmd->argc, n);
	ck_assert_ptr_null(cmd->argv[n]);
}

static const char *const run_words[] = { "run", "-q", "--run-dir", "r",
					 "job.yaml" };

/* run -q --run-dir r job.yaml on 4 ranks, with --mpi-args naming a
 * hostfile between other options. */
static struct dt_launch_config
config4(const char *mpi_args)
{
	struct dt_launch_config cfg = {
		.rank_argv = run_words,
		.n_rank_args = 5,
		.ranks = 4,
		.max_restarts = 2,
		.mpi_args = mpi_args,
		.run_dir = "r",
		.quiet = 1,
		.threads = 2,
	};

	return cfg;
}

START_TEST(mpirun_first_launch)
{
	struct dt_launch_config cfg =
		config4("--bind-to none\t --hostfile h1  -mca btl self");
	struct dt_launch_cmd cmd;
	const char *const want[] = {
		DT_MPIRUN, "-np", "4", "--oversubscribe",
		"-x", "DTRAIN_LAUNCH_DIR", "-x", "DTRAIN_PROGRESS_TTY",
		"--mca", "odls_base_sigkill_timeout", "15",
		"--bind-to", "none", "--hostfile", "h1", "-mca", "btl", "self",
		"/x/dtrain", "run", "-q", "--run-dir", "r", "job.yaml", NULL
	};

	/* 2 cores for 4 ranks: oversubscribed; the terminal hint passed;
	 * mpirun waits 15 s twice before it kills (a cancel's 30 s). */
	unsetenv("OMPI_MCA_odls_base_sigkill_timeout");
	dt_launch_cmd_build(&cmd, &cfg, "/x/dtrain", 4, NULL, 0, 2, 1);
	assert_argv(&cmd, want);
	dt_launch_cmd_fini(&cmd);
	ck_assert_ptr_null(cmd.argv);
}
END_TEST

START_TEST(mpirun_restart_on_elastic_hosts)
{
	struct dt_launch_config cfg =
		config4("--bind-to none --hostfile h1 -mca btl self "
			"--machinefile=h2 -default-hostfile h3");
	struct dt_launch_cmd cmd;
	const char *const want[] = {
		DT_MPIRUN, "-np", "3", "-x", "DTRAIN_LAUNCH_DIR",
		"--mca", "odls_base_sigkill_timeout", "15",
		"--bind-to", "none", "-mca", "btl", "self",
		"--hostfile", "/l/hosts", "/x/dtrain", "resume", "-q", "r", NULL
	};

	/* Every hostfile named gives way to the elastic one; 3 ranks on 8
	 * cores; a restart is `resume -q RUN_DIR`. */
	unsetenv("OMPI_MCA_odls_base_sigkill_timeout");
	dt_launch_cmd_build(&cmd, &cfg, "/x/dtrain", 3, "/l/hosts", 1, 8, 0);
	assert_argv(&cmd, want);
	dt_launch_cmd_fini(&cmd);
}
END_TEST

/* The words between -np N [--oversubscribe] and -x DTRAIN_LAUNCH_DIR of
 * a first launch of n ranks of threads each on cores, with mpi_args
 * (NULL for none) and no hostfile of the environment's; NULL-terminated
 * want. */
static void
assert_mapping(int n, int threads, long cores, const char *mpi_args,
	       const char *const *want)
{
	struct dt_launch_config cfg = config4(mpi_args);
	struct dt_launch_cmd cmd;
	int first = n > cores ? 4 : 3, k = 0;

	cfg.threads = threads;
	dt_launch_cmd_build(&cmd, &cfg, "/x/dtrain", n, NULL, 0, cores, 0);
	while (want[k] != NULL) {
		ck_assert_int_lt(first + k, cmd.argc);
		ck_assert_msg(strcmp(cmd.argv[first + k], want[k]) == 0,
			      "%d x %d on %ld: word %d: \"%s\", expected "
			      "\"%s\"", n, threads, cores, first + k,
			      cmd.argv[first + k], want[k]);
		k++;
	}
	ck_assert_str_eq(cmd.argv[first + k], "-x");
	dt_launch_cmd_fini(&cmd);
}

START_TEST(mpirun_threads_get_cores)
{
	const char *const pe2[] = { "--map-by", "slot:PE=2", "--bind-to",
				    "core", NULL };
	const char *const pe3[] = { "--map-by", "slot:PE=3", "--bind-to",
				    "core", NULL };
	const char *const none[] = { "--bind-to", "none", NULL };
	const char *const nothing[] = { NULL };
	struct dt_launch_config cfg = config4(NULL);
	struct dt_launch_cmd cmd;
	const char *const want[] = {
		DT_MPIRUN, "-np", "1", "--map-by", "slot:PE=2", "--bind-to",
		"core", "-x", "DTRAIN_LAUNCH_DIR", "--mca",
		"odls_base_sigkill_timeout", "15", "/x/dtrain", "run", "-q",
		"--run-dir", "r", "job.yaml", NULL
	};

	unsetenv("OMPI_MCA_rmaps_base_mapping_policy");
	unsetenv("OMPI_MCA_hwloc_base_binding_policy");
	unsetenv(DT_DEFAULT_HOSTFILE_ENV);
	/* run -n 1 with 2 threads on 2 cores: both cores its, not one. */
	dt_launch_cmd_build(&cmd, &cfg, "/x/dtrain", 1, NULL, 0, 2, 0);
	assert_argv(&cmd, want);
	dt_launch_cmd_fini(&cmd);
	/* They fit: each rank its T cores. */
	assert_mapping(4, 2, 8, NULL, pe2);
	assert_mapping(2, 3, 6, NULL, pe3);
	/* They do not (Open MPI would refuse to bind): none. */
	assert_mapping(2, 2, 2, NULL, none);
	assert_mapping(3, 2, 2, NULL, none);
	/* Hosts whose cores cannot be counted: none. */
	assert_mapping(2, 2, 8, "--hostfile h1", none);
	/* One thread each: Open MPI's own binding gives a core each. */
	assert_mapping(2, 1, 2, NULL, nothing);
	assert_mapping(1, 0, 2, NULL, nothing);
	/* The user's mapping or binding wins, given in any form. */
	assert_mapping(1, 2, 2, "--map-by node", nothing);
	assert_mapping(1, 2, 2, "-bind-to hwthread", nothing);
	assert_mapping(1, 2, 2, "--cpus-per-proc 2", nothing);
	assert_mapping(1, 2, 2, "--mca hwloc_base_binding_policy none",
		       nothing);
	setenv("OMPI_MCA_hwloc_base_binding_policy", "none", 1);
	assert_mapping(1, 2, 2, NULL, nothing);
	unsetenv("OMPI_MCA_hwloc_base_binding_policy");
	setenv("OMPI_MCA_rmaps_base_mapping_policy", "node", 1);
	assert_mapping(1, 2, 2, NULL, nothing);
	unsetenv("OMPI_MCA_rmaps_base_mapping_policy");
	/* A hostfile from the environment, or the elastic one. */
	setenv(DT_DEFAULT_HOSTFILE_ENV, "h9", 1);
	assert_mapping(1, 2, 2, NULL, none);
	unsetenv(DT_DEFAULT_HOSTFILE_ENV);
	dt_launch_cmd_build(&cmd, &cfg, "/x/dtrain", 1, "/l/hosts", 1, 2, 0);
	ck_assert_str_eq(cmd.argv[3], "--bind-to");
	ck_assert_str_eq(cmd.argv[4], "none");
	dt_launch_cmd_fini(&cmd);
}
END_TEST

START_TEST(mpirun_left_out)
{
	struct dt_launch_config cfg = config4(NULL);
	struct dt_launch_cmd cmd;
	const char *const first[] = { "/x/dtrain", "run", "-q", "--run-dir",
				      "r", "job.yaml", NULL };
	const char *const again[] = { "/x/dtrain", "resume", "r", NULL };

	/* --max-restarts alone: the rank itself, no mpirun. */
	dt_launch_cmd_build(&cmd, &cfg, "/x/dtrain", 0, NULL, 0, 1, 1);
	assert_argv(&cmd, first);
	dt_launch_cmd_fini(&cmd);
	cfg.quiet = 0;
	dt_launch_cmd_build(&cmd, &cfg, "/x/dtrain", 0, NULL, 1, 1, 1);
	assert_argv(&cmd, again);
	dt_launch_cmd_fini(&cmd);
}
END_TEST

START_TEST(mpirun_probe)
{
	struct dt_launch_config cfg = config4("-mca btl self --hostfile=h1");
	struct dt_launch_cmd cmd;
	const char *const want[] = {
		DT_MPIRUN, "-np", "1", "-mca", "btl", "self", "--hostfile", "",
		"/x/dtrain", "--version", NULL
	};
	int host_arg = -1;

	dt_launch_cmd_probe(&cmd, &cfg, "/x/dtrain", &host_arg);
	assert_argv(&cmd, want);
	ck_assert_int_eq(host_arg, 7);
	dt_launch_cmd_fini(&cmd);
}
END_TEST

START_TEST(hostfile_named)
{
	struct dt_launch_config cfg = config4("-mca btl self -machinefile m1 "
					      "--hostfile h2");
	const char *words[] = { "--hostfile", "--hostfile=a", "-hostfile",
				"--hostfilex", "x" };
	const char *from = NULL, *file = "none";
	char buf[64];

	ck_assert_int_eq(dt_launch_hostfile_option(words, 5, 0, &file), 2);
	ck_assert_str_eq(file, "--hostfile=a");
	ck_assert_int_eq(dt_launch_hostfile_option(words, 5, 1, &file), 1);
	ck_assert_str_eq(file, "a");
	ck_assert_int_eq(dt_launch_hostfile_option(words, 5, 3, &file), 0);
	ck_assert_int_eq(dt_launch_hostfile_option(words, 5, 4, &file), 0);
	/* The last word with its value missing names nothing. */
	ck_assert_int_eq(dt_launch_hostfile_option(words, 3, 2, &file), 0);
	ck_assert_str_eq(file, "a");

	dt_launch_named_hostfile(&cfg, buf, sizeof buf, &from);
	ck_assert_str_eq(buf, "m1");
	ck_assert_str_eq(from, "--mpi-args");
	setenv(DT_DEFAULT_HOSTFILE_ENV, "/etc/h", 1);
	cfg.mpi_args = "-mca btl self";
	dt_launch_named_hostfile(&cfg, buf, sizeof buf, &from);
	ck_assert_str_eq(buf, "/etc/h");
	ck_assert_str_eq(from, DT_DEFAULT_HOSTFILE_ENV);
	unsetenv(DT_DEFAULT_HOSTFILE_ENV);
	cfg.mpi_args = NULL;
	dt_launch_named_hostfile(&cfg, buf, sizeof buf, &from);
	ck_assert_str_eq(buf, "");
}
END_TEST

/* Writes text (len bytes) to DIR/name. */
static void
put(const char *name, const char *text, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static enum dt_launch_note_found
read_exit(int rank, struct dt_launch_note *note)
{
	return dt_launch_note_read(dir, rank, DT_LAUNCH_NOTE_EXIT, note);
}

START_TEST(note_round_trip)
{
	struct dt_launch_note note;
	struct dt_error err;
	char path[256];

	ck_assert_int_eq(read_exit(0, &note), DT_LAUNCH_NOTE_NONE);
	ck_assert_int_eq(dt_launch_note_write(dir, 0, DT_LAUNCH_NOTE_EXIT, 3,
					      "node-1.example", &err), DT_OK);
	ck_assert_int_eq(read_exit(0, &note), DT_LAUNCH_NOTE_OK);
	ck_assert_int_eq(note.value, 3);
	ck_assert_str_eq(note.host, "node-1.example");
	ck_assert_int_eq(dt_launch_note_write(dir, 12, DT_LAUNCH_NOTE_PID,
					      4194304, "n2", &err), DT_OK);
	ck_assert_int_eq(dt_launch_note_read(dir, 12, DT_LAUNCH_NOTE_PID,
					     &note), DT_LAUNCH_NOTE_OK);
	ck_assert_int_eq(note.value, 4194304);
	ck_assert_str_eq(note.host, "n2");
	/* The file is exactly the line, and no temporary is left. */
	snprintf(path, sizeof path, "%s/rank-0.exit.tmp", dir);
	ck_assert_int_eq(access(path, F_OK), -1);
	snprintf(path, sizeof path, "%s/rank-12.pid", dir);
	{
		char buf[32] = "";
		FILE *f = fopen(path, "r");

		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fread(buf, 1, sizeof buf - 1, f), 11);
		fclose(f);
		ck_assert_str_eq(buf, "4194304 n2\n");
	}
	/* A directory that is not there: DT_ERR_IO naming the file. */
	ck_assert_int_eq(dt_launch_note_write("/nonexistent-dt", 0,
					      DT_LAUNCH_NOTE_EXIT, 0, "h",
					      &err), DT_ERR_IO);
	ck_assert_msg(strstr(err.msg, "/nonexistent-dt/rank-0.exit.tmp") !=
		      NULL, "%s", err.msg);
}
END_TEST

START_TEST(note_torn_is_rejected)
{
	static const char whole[] = "255 node-1\n";
	struct dt_launch_note note;

	/* The whole note, then every prefix a write cut short leaves. */
	put("rank-0.exit", whole, sizeof whole - 1);
	ck_assert_int_eq(read_exit(0, &note), DT_LAUNCH_NOTE_OK);
	ck_assert_int_eq(note.value, 255);
	for (size_t len = 0; len < sizeof whole - 1; len++) {
		put("rank-0.exit", whole, len);
		ck_assert_msg(read_exit(0, &note) == DT_LAUNCH_NOTE_BAD,
			      "a note torn at byte %zu (\"%.*s\") was taken",
			      len, (int)len, whole);
	}
}
END_TEST

START_TEST(note_hostile_is_rejected)
{
	static const char *const bad[] = {
		"256 h\n", "-1 h\n", "+3 h\n", "99999999999 h\n",
		"0  h\n", "0 h h\n", "0 h\nextra", "0 h\n\n", " 0 h\n",
		"0\th\n", "0 h\r\n", "0x10 h\n", "0 \x01h\n", "\x7f\x45LF\n",
	};
	char big[1024], path[256], target[256];
	struct dt_launch_note note;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		put("rank-1.exit", bad[i], strlen(bad[i]));
		ck_assert_msg(read_exit(1, &note) == DT_LAUNCH_NOTE_BAD,
			      "note %zu taken", i);
	}
	/* Garbage with a NUL inside a would-be valid line. */
	put("rank-1.exit", "0 h\0x\n", 6);
	ck_assert_int_eq(read_exit(1, &note), DT_LAUNCH_NOTE_BAD);
	/* A pid of 0 or 1 would signal a process group or init. */
	put("rank-1.pid", "1 h\n", 4);
	ck_assert_int_eq(dt_launch_note_read(dir, 1, DT_LAUNCH_NOTE_PID,
					     &note), DT_LAUNCH_NOTE_BAD);
	put("rank-1.pid", "0 h\n", 4);
	ck_assert_int_eq(dt_launch_note_read(dir, 1, DT_LAUNCH_NOTE_PID,
					     &note), DT_LAUNCH_NOTE_BAD);
	/* Oversized: a host name of 255 bytes is the most, 256 too many,
	 * and a file of a kilobyte is refused whatever it holds. */
	memset(big, 'a', sizeof big);
	big[0] = '0';
	big[1] = ' ';
	big[2 + 255] = '\n';
	put("rank-1.exit", big, 2 + 255 + 1);
	ck_assert_int_eq(read_exit(1, &note), DT_LAUNCH_NOTE_OK);
	ck_assert_uint_eq(strlen(note.host), 255);
	big[2 + 255] = 'a';
	big[2 + 256] = '\n';
	put("rank-1.exit", big, 2 + 256 + 1);
	ck_assert_int_eq(read_exit(1, &note), DT_LAUNCH_NOTE_BAD);
	big[sizeof big - 1] = '\n';
	put("rank-1.exit", big, sizeof big);
	ck_assert_int_eq(read_exit(1, &note), DT_LAUNCH_NOTE_BAD);
	/* A symlink to a good note, a FIFO (which must not block the
	 * launcher) and a directory. */
	put("good", "0 h\n", 4);
	snprintf(target, sizeof target, "%s/good", dir);
	snprintf(path, sizeof path, "%s/rank-2.exit", dir);
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_eq(read_exit(2, &note), DT_LAUNCH_NOTE_BAD);
	snprintf(path, sizeof path, "%s/rank-3.exit", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(read_exit(3, &note), DT_LAUNCH_NOTE_BAD);
	snprintf(path, sizeof path, "%s/rank-4.exit", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(read_exit(4, &note), DT_LAUNCH_NOTE_BAD);
}
END_TEST

START_TEST(note_of_this_rank)
{
	char host[DT_HOST_NAME_MAX] = "?";
	struct dt_launch_note note;
	pid_t pid = 0;

	gethostname(host, sizeof host - 1);
	/* Outside a launch: nothing written. */
	unsetenv(DT_LAUNCH_DIR_ENV);
	ck_assert_int_eq(dt_launch_supervised(), 0);
	dt_launch_note_exit(0, 7);
	ck_assert_int_eq(read_exit(0, &note), DT_LAUNCH_NOTE_NONE);
	setenv(DT_LAUNCH_DIR_ENV, dir, 1);
	ck_assert_int_eq(dt_launch_supervised(), 1);
	dt_launch_note_exit(2, 7);
	dt_launch_note_pid(2);
	unsetenv(DT_LAUNCH_DIR_ENV);
	ck_assert_int_eq(read_exit(2, &note), DT_LAUNCH_NOTE_OK);
	ck_assert_int_eq(note.value, 7);
	ck_assert_str_eq(note.host, host);
	ck_assert_int_eq(dt_launch_note_local_pid(dir, 2, host, &pid), 1);
	ck_assert_int_eq(pid, getpid());
	ck_assert_int_eq(dt_launch_note_local_pid(dir, 2, "elsewhere", &pid),
			 0);
	dt_launch_notes_clean(dir, 3, 0);
	ck_assert_int_eq(read_exit(2, &note), DT_LAUNCH_NOTE_NONE);
	dt_launch_notes_clean(dir, 3, 1);
	ck_assert_int_eq(access(dir, F_OK), -1);
	ck_assert_int_eq(mkdir(dir, 0700), 0);	/* for teardown */
}
END_TEST

/* The wait status of a child that exits with code, or (code < 0) is
 * killed by signal -code. */
static int
wait_status(int code)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (code < 0) {
			/* Check's handler of SIGTERM would pass it on to
			 * the test's whole process group. */
			signal(-code, SIG_DFL);
			kill(getpid(), -code);
		}
		_exit(code < 0 ? 99 : code);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/* Rank r's exit note, "CODE h\n", or text as it is when code < 0. */
static void
note_exit(int r, int code, const char *text)
{
	char name[32], line[32];

	snprintf(name, sizeof name, "rank-%d.exit", r);
	if (code >= 0)
		snprintf(line, sizeof line, "%d h\n", code);
	else
		snprintf(line, sizeof line, "%s", text);
	put(name, line, strlen(line));
}

START_TEST(status_from_notes)
{
	/* Every rank checkpointed after a stop: 3, not mpirun's 1. */
	note_exit(0, 3, NULL);
	note_exit(1, 3, NULL);
	ck_assert_int_eq(dt_launch_job_status(wait_status(1), 2, dir, NULL, 0),
			 3);
	/* They disagree: mpirun's. */
	note_exit(1, 4, NULL);
	ck_assert_int_eq(dt_launch_job_status(wait_status(1), 2, dir, NULL, 0),
			 1);
	/* All 0, yet mpirun failed (after the notes): mpirun's. */
	note_exit(0, 0, NULL);
	note_exit(1, 0, NULL);
	ck_assert_int_eq(dt_launch_job_status(wait_status(1), 2, dir, NULL, 0),
			 1);
	ck_assert_int_eq(dt_launch_job_status(wait_status(0), 2, dir, NULL, 0),
			 0);
	/* A note missing, or torn: mpirun's. */
	note_exit(0, 3, NULL);
	note_exit(1, -1, "3 h");
	ck_assert_int_eq(dt_launch_job_status(wait_status(5), 2, dir, NULL, 0),
			 5);
	ck_assert_int_eq(dt_launch_job_status(wait_status(5), 3, dir, NULL, 0),
			 5);
	/* mpirun killed: 128 + the signal, whatever the notes say. */
	note_exit(1, 3, NULL);
	ck_assert_int_eq(dt_launch_job_status(wait_status(-SIGKILL), 2, dir,
					      NULL, 0), 128 + SIGKILL);
	/* No mpirun: the rank's own code; notes are not read. */
	ck_assert_int_eq(dt_launch_job_status(wait_status(6), 0, dir, NULL, 0),
			 6);
}
END_TEST

/* A scheduler's cancel that reached the launcher after every rank noted
 * 0: the launcher ended mpirun (an exit 1 then, child.c) or mpirun died
 * of the signal; the job is done all the same. */
START_TEST(status_after_a_late_stop)
{
	note_exit(0, 0, NULL);
	note_exit(1, 0, NULL);
	ck_assert_int_eq(dt_launch_job_status(wait_status(1), 2, dir, NULL, 1),
			 0);
	ck_assert_int_eq(dt_launch_job_status(wait_status(-SIGTERM), 2, dir,
					      NULL, 1), 0);
	/* Without a stop, mpirun's failure after the notes still counts. */
	ck_assert_int_eq(dt_launch_job_status(wait_status(1), 2, dir, NULL, 0),
			 1);
	/* A rank that checkpointed and stopped (3), one not yet noted, or
	 * a rank that failed: not done, as without the stop. */
	note_exit(1, 3, NULL);
	ck_assert_int_eq(dt_launch_job_status(wait_status(1), 2, dir, NULL, 1),
			 1);
	note_exit(0, 3, NULL);
	ck_assert_int_eq(dt_launch_job_status(wait_status(1), 2, dir, NULL, 1),
			 3);
	note_exit(0, 0, NULL);
	note_exit(1, 0, NULL);
	ck_assert_int_eq(dt_launch_job_status(wait_status(1), 3, dir, NULL, 1),
			 1);
}
END_TEST

START_TEST(status_after_the_guard)
{
	struct dt_launch_guard g;

	dt_launch_guard_init(&g, 30);
	ck_assert_int_eq(g.bad_rank, -1);
	ck_assert_int_eq(g.ended, 0);
	/* A guard that sent nothing changes nothing. */
	g.bad_rank = 1;
	g.bad_code = 4;
	ck_assert_int_eq(dt_launch_job_status(wait_status(9), 0, dir, &g, 0),
			 9);
	/* Once it ended mpirun: the failed rank's code, 1 for none or one
	 * out of range, 0 when every rank had finished. */
	g.ended = 1;
	ck_assert_int_eq(dt_launch_job_status(wait_status(-SIGTERM), 2, dir,
					      &g, 0), 4);
	g.bad_code = -1;
	ck_assert_int_eq(dt_launch_job_status(wait_status(-SIGTERM), 2, dir,
					      &g, 0), 1);
	g.bad_code = 300;
	g.ended = 2;
	ck_assert_int_eq(dt_launch_job_status(wait_status(-SIGKILL), 2, dir,
					      &g, 0), 1);
	g.bad_rank = DT_LAUNCH_DONE_RANKS;
	g.bad_code = 0;
	ck_assert_int_eq(dt_launch_job_status(wait_status(-SIGKILL), 2, dir,
					      &g, 0), 0);
}
END_TEST

START_TEST(failed_rank_found)
{
	char host[DT_HOST_NAME_MAX] = "?", line[300];
	int rank = -9, code = -9;
	pid_t gone;

	gethostname(host, sizeof host - 1);
	note_exit(0, 0, NULL);
	note_exit(1, 0, NULL);
	ck_assert_int_eq(dt_launch_rank_failed(dir, 2, host, &rank, &code),
			 0);
	ck_assert_int_eq(dt_launch_all_done(dir, 2), 1);
	ck_assert_int_eq(dt_launch_all_done(dir, 3), 0);
	ck_assert_int_eq(dt_launch_all_done(dir, 0), 0);
	/* Rank 2 of 3 exited 5. */
	note_exit(2, 5, NULL);
	ck_assert_int_eq(dt_launch_rank_failed(dir, 3, host, &rank, &code),
			 1);
	ck_assert_int_eq(rank, 2);
	ck_assert_int_eq(code, 5);
	/* A torn exit note counts as a failure with code 1. */
	note_exit(2, -1, "0 h");
	ck_assert_int_eq(dt_launch_rank_failed(dir, 3, host, &rank, &code),
			 1);
	ck_assert_int_eq(code, 1);
	ck_assert_int_eq(dt_launch_all_done(dir, 3), 0);
	/* Rank 2 noted a pid on this host that is gone, and no exit code;
	 * the same pid noted for another host is not looked at. */
	unlink(strcat(strcpy(line, dir), "/rank-2.exit"));
	gone = fork();
	if (gone == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(gone, NULL, 0), gone);
	snprintf(line, sizeof line, "%d elsewhere\n", (int)gone);
	put("rank-2.pid", line, strlen(line));
	ck_assert_int_eq(dt_launch_rank_failed(dir, 3, host, &rank, &code),
			 0);
	snprintf(line, sizeof line, "%d %s\n", (int)gone, host);
	put("rank-2.pid", line, strlen(line));
	ck_assert_int_eq(dt_launch_rank_failed(dir, 3, host, &rank, &code),
			 1);
	ck_assert_int_eq(rank, 2);
	ck_assert_int_eq(code, -1);
	/* Alive (this process): not failed. */
	snprintf(line, sizeof line, "%d %s\n", (int)getpid(), host);
	put("rank-2.pid", line, strlen(line));
	ck_assert_int_eq(dt_launch_rank_failed(dir, 3, host, &rank, &code),
			 0);
}
END_TEST

START_TEST(restart_or_stop)
{
	/* Done, bad input, stopped: never restarted, budget or not. */
	ck_assert_int_eq(dt_launch_next(0, 0, 3, 0), DT_LAUNCH_NEXT_STOP);
	ck_assert_int_eq(dt_launch_next(2, 0, 3, 0), DT_LAUNCH_NEXT_STOP);
	ck_assert_int_eq(dt_launch_next(3, 0, 3, 0), DT_LAUNCH_NEXT_STOP);
	/* A failure with restarts left. */
	ck_assert_int_eq(dt_launch_next(1, 0, 3, 0), DT_LAUNCH_NEXT_RESTART);
	ck_assert_int_eq(dt_launch_next(137, 2, 3, 0),
			 DT_LAUNCH_NEXT_RESTART);
	ck_assert_int_eq(dt_launch_next(4, 2, 3, 0), DT_LAUNCH_NEXT_RESTART);
	/* ... after a stop signal: not. */
	ck_assert_int_eq(dt_launch_next(1, 0, 3, 1), DT_LAUNCH_NEXT_STOP);
	ck_assert_int_eq(dt_launch_next(130, 0, 3, 2), DT_LAUNCH_NEXT_STOP);
	/* The budget spent (said), or none given (nothing to say). */
	ck_assert_int_eq(dt_launch_next(1, 3, 3, 0), DT_LAUNCH_NEXT_SPENT);
	ck_assert_int_eq(dt_launch_next(1, 0, 0, 0), DT_LAUNCH_NEXT_STOP);
}
END_TEST

START_TEST(restart_from_notes)
{
	int rc;

	/* Ranks that checkpointed after a stop (3 each) under an mpirun
	 * that failed: code 3, which is not restarted. */
	note_exit(0, 3, NULL);
	note_exit(1, 3, NULL);
	rc = dt_launch_job_status(wait_status(1), 2, dir, NULL, 0);
	ck_assert_int_eq(rc, 3);
	ck_assert_int_eq(dt_launch_next(rc, 0, 2, 0), DT_LAUNCH_NEXT_STOP);
	/* A rank whose exit note was torn: mpirun's 1, restarted while the
	 * budget lasts. */
	note_exit(1, -1, "3");
	rc = dt_launch_job_status(wait_status(1), 2, dir, NULL, 0);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(dt_launch_next(rc, 1, 2, 0), DT_LAUNCH_NEXT_RESTART);
	ck_assert_int_eq(dt_launch_next(rc, 2, 2, 0), DT_LAUNCH_NEXT_SPENT);
}
END_TEST

START_TEST(grace)
{
	ck_assert(dt_launch_grace_s(0) == 60);
	ck_assert(dt_launch_grace_s(-1) == 60);
	ck_assert(dt_launch_grace_s(2) == 10);
	ck_assert(dt_launch_grace_s(10) == 30);
}
END_TEST

START_TEST(mpirun_timeout_of_the_user)
{
	struct dt_launch_config cfg =
		config4("--mca odls_base_sigkill_timeout 40");
	struct dt_launch_cmd cmd;
	/* (config4's 2 threads a rank fit 8 cores: PE=2 mapping too) */
	const char *const mine[] = {
		DT_MPIRUN, "-np", "2", "--map-by", "slot:PE=2", "--bind-to",
		"core", "-x", "DTRAIN_LAUNCH_DIR",
		"--mca", "odls_base_sigkill_timeout", "40",
		"/x/dtrain", "run", "-q", "--run-dir", "r", "job.yaml", NULL
	};
	const char *const from_env[] = {
		DT_MPIRUN, "-np", "2", "--map-by", "slot:PE=2", "--bind-to",
		"core", "-x", "DTRAIN_LAUNCH_DIR",
		"/x/dtrain", "run", "-q", "--run-dir", "r", "job.yaml", NULL
	};

	/* The user's own timeout, in --mpi-args or the environment, is
	 * left as it is. */
	unsetenv("OMPI_MCA_odls_base_sigkill_timeout");
	dt_launch_cmd_build(&cmd, &cfg, "/x/dtrain", 2, NULL, 0, 8, 0);
	assert_argv(&cmd, mine);
	dt_launch_cmd_fini(&cmd);
	cfg.mpi_args = NULL;
	setenv("OMPI_MCA_odls_base_sigkill_timeout", "5", 1);
	dt_launch_cmd_build(&cmd, &cfg, "/x/dtrain", 2, NULL, 0, 8, 0);
	assert_argv(&cmd, from_env);
	dt_launch_cmd_fini(&cmd);
	unsetenv("OMPI_MCA_odls_base_sigkill_timeout");
}
END_TEST

START_TEST(mpirun_grace_checked)
{
	char msg[512] = "";

	/* Not started by mpirun (a singleton, srun): nothing to check. */
	unsetenv("OMPI_MCA_orte_hnp_uri");
	unsetenv("OMPI_MCA_odls_base_sigkill_timeout");
	ck_assert_int_eq(dt_launch_mpirun_grace_short(msg, sizeof msg), 0);
	/* Under mpirun with Open MPI's default of 1 s: SIGKILL after 2 s. */
	setenv("OMPI_MCA_orte_hnp_uri", "1.0;tcp://127.0.0.1:1", 1);
	ck_assert_int_eq(dt_launch_mpirun_grace_short(msg, sizeof msg), 1);
	ck_assert_ptr_nonnull(strstr(msg, "kills the ranks 2 s after"));
	ck_assert_ptr_nonnull(strstr(msg, "--mca odls_base_sigkill_timeout "
				      "15"));
	setenv("OMPI_MCA_odls_base_sigkill_timeout", "14", 1);
	ck_assert_int_eq(dt_launch_mpirun_grace_short(msg, sizeof msg), 1);
	ck_assert_ptr_nonnull(strstr(msg, "kills the ranks 28 s after"));
	setenv("OMPI_MCA_odls_base_sigkill_timeout", "15x", 1);
	ck_assert_int_eq(dt_launch_mpirun_grace_short(msg, sizeof msg), 1);
	setenv("OMPI_MCA_odls_base_sigkill_timeout", "15", 1);
	ck_assert_int_eq(dt_launch_mpirun_grace_short(msg, sizeof msg), 0);
	unsetenv("OMPI_MCA_odls_base_sigkill_timeout");
	unsetenv("OMPI_MCA_orte_hnp_uri");
}
END_TEST

/* The copy rule of train/signals.h, and its handler in a child: copies of
 * one stop keep it alive and stopping; a SIGINT DT_STOP_COPY_S later ends
 * it at once, 128 + SIGINT. */
START_TEST(stop_copies_count_once)
{
	struct timespec nap = { DT_STOP_COPY_S, 200 * 1000 * 1000 };
	int status;
	pid_t pid;

	ck_assert_int_eq(dt_signals_is_copy(SIGTERM, DT_STOP_GRACE_S - 0.1),
			 1);
	ck_assert_int_eq(dt_signals_is_copy(SIGTERM, DT_STOP_GRACE_S), 0);
	ck_assert_int_eq(dt_signals_is_copy(SIGINT, DT_STOP_COPY_S - 0.1), 1);
	ck_assert_int_eq(dt_signals_is_copy(SIGINT, DT_STOP_COPY_S), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dt_signals_install();
		raise(SIGTERM);
		raise(SIGTERM);
		raise(SIGINT);
		if (dt_signals_pending() != SIGTERM)
			_exit(10);
		dt_signals_restore();	/* kept: a stop is under way */
		raise(SIGTERM);
		nanosleep(&nap, NULL);
		raise(SIGINT);
		_exit(11);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 128 + SIGINT);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("launch");
	TCase *cmd = tcase_create("mpirun");
	TCase *note = tcase_create("notes");
	TCase *next = tcase_create("decisions");
	SRunner *sr;
	int failed;

	tcase_add_test(cmd, mpirun_first_launch);
	tcase_add_test(cmd, mpirun_restart_on_elastic_hosts);
	tcase_add_test(cmd, mpirun_threads_get_cores);
	tcase_add_test(cmd, mpirun_left_out);
	tcase_add_test(cmd, mpirun_probe);
	tcase_add_test(cmd, hostfile_named);
	tcase_add_test(cmd, mpirun_timeout_of_the_user);
	tcase_add_test(cmd, mpirun_grace_checked);
	tcase_add_test(cmd, stop_copies_count_once);
	tcase_add_checked_fixture(note, setup, teardown);
	tcase_add_test(note, note_round_trip);
	tcase_add_test(note, note_torn_is_rejected);
	tcase_add_test(note, note_hostile_is_rejected);
	tcase_add_test(note, note_of_this_rank);
	tcase_add_checked_fixture(next, setup, teardown);
	tcase_add_test(next, status_from_notes);
	tcase_add_test(next, status_after_the_guard);
	tcase_add_test(next, status_after_a_late_stop);
	tcase_add_test(next, failed_rank_found);
	tcase_add_test(next, restart_or_stop);
	tcase_add_test(next, restart_from_notes);
	tcase_add_test(next, grace);
	suite_add_tcase(s, cmd);
	suite_add_tcase(s, note);
	suite_add_tcase(s, next);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
