/* SPDX-License-Identifier: MIT */
/* mpirun_cmd.c - the command lines the launcher runs (launch_priv.h): the
 * mpirun of each launch, the probe of --elastic, and the hostfile that
 * --mpi-args or the environment names. */
#include "launch/launch_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "util/alloc.h"

int
dt_launch_hostfile_option(const char *const *words, int n, int i,
			  const char **file)
{
	static const char *const opts[] = { "hostfile", "machinefile",
					    "default-hostfile" };
	const char *w = words[i];

	if (w[0] != '-')
		return 0;
	w += w[1] == '-' ? 2 : 1;
	for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
		size_t len = strlen(opts[k]);

		if (strncmp(w, opts[k], len) != 0)
			continue;
		if (w[len] == '=') {
			*file = w + len + 1;
			return 1;
		}
		if (w[len] == '\0' && i + 1 < n) {
			*file = words[i + 1];
			return 2;
		}
	}
	return 0;
}

/* The most words mpi_args can split into. */
static size_t
max_words(const char *mpi_args)
{
	return mpi_args != NULL ? strlen(mpi_args) / 2 + 1 : 1;
}

/* mpi_args split at blanks into words (room for max_words, the
 * caller's); the text they point into is returned (heap, the caller
 * frees it), NULL without mpi_args. */
static char *
split_mpi_args(const char *mpi_args, const char **words, int *n)
{
	char *w, *save = NULL, *tok;

	*n = 0;
	if (mpi_args == NULL)
		return NULL;
	w = dt_xstrdup(mpi_args);
	for (tok = strtok_r(w, " \t\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\n", &save))
		words[(*n)++] = tok;
	return w;
}

/* Appends the words of mpi_args to args at *n; with hostfile, the words
 * that name a hostfile are left out and "--hostfile HOSTFILE" put in
 * their place. Returns the text of the words (heap, the caller frees it
 * once args is done with). */
static char *
add_mpi_args(const char *mpi_args, const char *hostfile, const char **args,
	     int *n)
{
	const char **words = dt_xmalloc(max_words(mpi_args), sizeof *words);
	const char *file;
	int n_words;
	char *text = split_mpi_args(mpi_args, words, &n_words);

	for (int i = 0; i < n_words; i++) {
		int skip = hostfile != NULL ?
			   dt_launch_hostfile_option(words, n_words, i,
						     &file) : 0;

		if (skip > 0)
			i += skip - 1;
		else
			args[(*n)++] = words[i];
	}
	if (hostfile != NULL) {
		args[(*n)++] = "--hostfile";
		args[(*n)++] = hostfile;
	}
	free(words);
	return text;
}

/* Whether the user chose how mpirun maps or binds the ranks: a word of
 * mpi_args that does (--map-by, --bind-to, --cpus-per-proc, a rankfile,
 * an MCA parameter of mapping or binding), or Open MPI's variables of
 * those two in the environment. */
static int
user_maps(const char *mpi_args)
{
	static const char *const words[] = {
		"map-by", "bind-to", "cpus-per-", "rankfile", "pernode",
		"npersocket", "bynode", "byslot", "bycore", "bysocket",
		"rmaps_base_mapping_policy", "hwloc_base_binding_policy",
	};

	if (getenv("OMPI_MCA_rmaps_base_mapping_policy") != NULL ||
	    getenv("OMPI_MCA_hwloc_base_binding_policy") != NULL)
		return 1;
	for (size_t k = 0; mpi_args != NULL &&
	     k < sizeof words / sizeof words[0]; k++)
		if (strstr(mpi_args, words[k]) != NULL)
			return 1;
	return 0;
}

/* The words that give each of n_ranks ranks its cfg->threads cores, at
 * args + *n (4 at most): --map-by slot:PE=T --bind-to core where the
 * ranks' threads fit this node's cores; --bind-to none where they do not
 * (Open MPI refuses to bind more threads than cores) or where a hostfile
 * spreads the ranks over hosts whose cores the launcher cannot count,
 * so that no rank's threads are held to one core. Nothing for one
 * thread per rank (Open MPI's own binding gives each rank a core at
 * least) or when the user chose a mapping. pe holds the map-by value. */
static void
add_mapping(const struct dt_launch_config *cfg, int n_ranks, int hostfile,
	    long cores, char *pe, size_t pe_size, const char **args, int *n)
{
	long t = cfg->threads;

	if (t <= 1 || user_maps(cfg->mpi_args))
		return;
	if (hostfile || cores <= 0 || (long)n_ranks * t > cores) {
		args[(*n)++] = "--bind-to";
		args[(*n)++] = "none";
		return;
	}
	snprintf(pe, pe_size, "slot:PE=%ld", t);
	args[(*n)++] = "--map-by";
	args[(*n)++] = pe;
	args[(*n)++] = "--bind-to";
	args[(*n)++] = "core";
}

/* Whether a launch runs on a hostfile's hosts: the one given (elastic)
 * or one that mpi_args or the environment names. */
static int
has_hostfile(const struct dt_launch_config *cfg, const char *hostfile)
{
	char file[PATH_MAX];
	const char *from;

	if (hostfile != NULL)
		return 1;
	dt_launch_named_hostfile(cfg, file, sizeof file, &from);
	return file[0] != '\0';
}

void
dt_launch_cmd_build(struct dt_launch_cmd *cmd,
		    const struct dt_launch_config *cfg, const char *self,
		    int n_ranks, const char *hostfile, int as_resume,
		    long cores, int pass_tty)
{
	size_t cap = (size_t)cfg->n_rank_args + 20 + max_words(cfg->mpi_args);
	const char **args = dt_xmalloc(cap, sizeof *args);
	int n = 0;

	memset(cmd, 0, sizeof *cmd);
	if (n_ranks > 0) {
		snprintf(cmd->np, sizeof cmd->np, "%d", n_ranks);
		args[n++] = DT_MPIRUN;
		args[n++] = "-np";
		args[n++] = cmd->np;
		if (cores > 0 && n_ranks > cores)
			args[n++] = "--oversubscribe";
		add_mapping(cfg, n_ranks, has_hostfile(cfg, hostfile), cores,
			    cmd->pe, sizeof cmd->pe, args, &n);
		/* Open MPI passes the environment on to the ranks of this
		 * node only; -x takes these to every node. */
		args[n++] = "-x";
		args[n++] = DT_LAUNCH_DIR_ENV;
		if (pass_tty) {
			args[n++] = "-x";
			args[n++] = DT_PROGRESS_TTY_ENV;
		}
		/* A cancel gets its grace period (cancel.c), unless the
		 * user chose mpirun's timeout. */
		if (!dt_launch_sigkill_given(cfg->mpi_args)) {
			args[n++] = "--mca";
			args[n++] = DT_SIGKILL_TIMEOUT_PARAM;
			args[n++] = DT_SIGKILL_TIMEOUT;
		}
		cmd->mpi_words = add_mpi_args(cfg->mpi_args, hostfile, args,
					      &n);
	}
	args[n++] = self;
	if (as_resume) {
		args[n++] = "resume";
		if (cfg->quiet)
			args[n++] = "-q";
		args[n++] = cfg->run_dir;
	} else {
		for (int i = 0; i < cfg->n_rank_args; i++)
			args[n++] = cfg->rank_argv[i];
	}
	args[n] = NULL;
	cmd->argv = args;
	cmd->argc = n;
}

void
dt_launch_cmd_probe(struct dt_launch_cmd *cmd,
		    const struct dt_launch_config *cfg, const char *self,
		    int *host_arg)
{
	const char **args = dt_xmalloc(max_words(cfg->mpi_args) + 10,
				       sizeof *args);
	int n = 0;

	memset(cmd, 0, sizeof *cmd);
	args[n++] = DT_MPIRUN;
	args[n++] = "-np";
	args[n++] = "1";
	cmd->mpi_words = add_mpi_args(cfg->mpi_args, "", args, &n);
	*host_arg = n - 1;
	args[n++] = self;
	args[n++] = "--version";
	args[n] = NULL;
	cmd->argv = args;
	cmd->argc = n;
}

void
dt_launch_cmd_fini(struct dt_launch_cmd *cmd)
{
	free(cmd->argv);
	free(cmd->mpi_words);
	memset(cmd, 0, sizeof *cmd);
}

void
dt_launch_named_hostfile(const struct dt_launch_config *cfg, char *buf,
			 size_t size, const char **from)
{
	const char **words = dt_xmalloc(max_words(cfg->mpi_args),
					sizeof *words);
	const char *file = NULL;
	int n_words;
	char *text = split_mpi_args(cfg->mpi_args, words, &n_words);

	for (int i = 0; i < n_words && file == NULL; i++)
		dt_launch_hostfile_option(words, n_words, i, &file);
	*from = "--mpi-args";
	if (file == NULL) {
		file = getenv(DT_DEFAULT_HOSTFILE_ENV);
		*from = DT_DEFAULT_HOSTFILE_ENV;
	}
	snprintf(buf, size, "%s", file != NULL ? file : "");
	free(text);
	free(words);
}

int
dt_launch_check_hostfile(const struct dt_launch_config *cfg)
{
	char file[PATH_MAX];
	const char *from;

	dt_launch_named_hostfile(cfg, file, sizeof file, &from);
	if (file[0] == '\0' || access(file, R_OK) == 0)
		return 0;
	fprintf(stderr, "dtrain: %s: cannot read the hostfile that %s "
		"names: %s\n", file, from, strerror(errno));
	return 1;
}
