/* SPDX-License-Identifier: MIT */
/* elastic.c - `run -n N --elastic MIN` (launch_priv.h): the hosts of the
 * hostfile, probed after a failed launch (hosts.c), and the rank count of
 * the restart: as many as the hosts that answered hold, up to N, that the
 * job's plan takes, at least MIN. */
#include "launch/launch_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job/job.h"
#include "plan/plan.h"
#include "util/alloc.h"

/* A host that answers takes mpirun a second or two to start a process on
 * (more on a loaded machine); one that does not answer never does. */
#define DT_ELASTIC_PROBE_MIN_S 10.0

int
dt_launch_elastic_init(const struct dt_launch_config *cfg,
		       const char *launch_dir, struct dt_launch_elastic *el)
{
	double timeout_s = cfg->job->parallel.timeout_s;
	char file[PATH_MAX];
	const char *from;
	struct dt_error err;
	int rc = 0;

	dt_launch_named_hostfile(cfg, file, sizeof file, &from);
	el->probe_s = timeout_s > DT_ELASTIC_PROBE_MIN_S ? timeout_s :
		      DT_ELASTIC_PROBE_MIN_S;
	snprintf(el->file, sizeof el->file, "%s/hosts", launch_dir);
	memset(&el->hosts, 0, sizeof el->hosts);
	if (file[0] == '\0') {
		fprintf(stderr, "dtrain: --elastic needs a hostfile, to know "
			"the hosts: --mpi-args \"--hostfile FILE\" or "
			"%s=FILE\n", DT_DEFAULT_HOSTFILE_ENV);
		rc = 2;
	} else if (dt_hosts_read(file, &el->hosts, &err) != DT_OK ||
		   dt_hosts_write(&el->hosts, el->file, &err) != DT_OK) {
		fprintf(stderr, "dtrain: --elastic: %s\n", err.msg);
		rc = err.status == DT_ERR_IO ? 1 : 2;
	} else {
		unsetenv(DT_DEFAULT_HOSTFILE_ENV);
	}
	return rc;
}

void
dt_launch_elastic_fini(struct dt_launch_elastic *el)
{
	if (el->file[0] != '\0')
		unlink(el->file);
	dt_hosts_fini(&el->hosts);
}

/* Whether n ranks can run the job: its plan builds for them (with a fixed
 * global batch and micro-batch, n must divide global / micro). */
static int
plan_fits(const struct dt_job *job, int n)
{
	struct dt_plan_host host = { .cores = 1, .local_ranks = n };
	struct dt_plan plan;
	struct dt_error err;
	enum dt_status st;

	memset(&plan, 0, sizeof plan);
	st = dt_plan_build(job, n, &host, NULL, &plan, &err);
	dt_plan_fini(&plan);
	return st == DT_OK;
}

/* Probes every host of el (each gets its chance again: a lost host may be
 * back) and names those alive before a launch of n_before ranks and not
 * now in lost (size bytes). */
static void
probe_hosts(const struct dt_launch_config *cfg, const char *self,
	    const char *launch_dir, struct dt_launch_elastic *el,
	    int n_before, char *lost, size_t size)
{
	struct dt_hosts before = { .n = el->hosts.n };
	struct dt_launch_cmd probe;
	int host_arg;

	before.h = dt_xmalloc((size_t)el->hosts.n, sizeof *before.h);
	memcpy(before.h, el->hosts.h, (size_t)el->hosts.n * sizeof *before.h);
	for (int i = 0; i < el->hosts.n; i++)
		el->hosts.h[i].alive = 1;
	dt_launch_cmd_probe(&probe, cfg, self, &host_arg);
	dt_hosts_probe(&el->hosts, probe.argv, host_arg, launch_dir,
		       el->probe_s);
	dt_launch_cmd_fini(&probe);
	dt_hosts_lost(&el->hosts, &before, n_before, el->probe_s, lost, size);
	free(before.h);
}

/* Says why the hosts left (slots of them, lost named in lost) cannot
 * take a restart: cap ranks is all they hold. */
static void
say_too_few(const struct dt_launch_config *cfg,
	    const struct dt_launch_elastic *el, const char *lost, int slots,
	    int cap, int fail_rc)
{
	char why[256], where[1024];

	dt_hosts_placement(&el->hosts, slots, where, sizeof where);
	if (cap < cfg->elastic)
		snprintf(why, sizeof why, "fewer than --elastic %d",
			 cfg->elastic);
	else
		snprintf(why, sizeof why, "and the job's plan takes no rank "
			 "count from %d down to --elastic %d",
			 cap < cfg->ranks ? cap : cfg->ranks, cfg->elastic);
	fprintf(stderr, "dtrain: --elastic %d: %s%s; the hosts that answered "
		"(%s) hold %d slot%s, %s; stopping (exit %d)\n", cfg->elastic,
		lost[0] != '\0' ? "lost " : "no host lost", lost,
		where[0] != '\0' ? where : "none", slots, slots == 1 ? "" : "s",
		why, fail_rc);
}

int
dt_launch_elastic_resize(const struct dt_launch_config *cfg,
			 const char *self, const char *launch_dir,
			 struct dt_launch_elastic *el, int *n, int fail_rc)
{
	char lost[1024];
	struct dt_error err;
	int slots, total = 0, cap, fit;

	probe_hosts(cfg, self, launch_dir, el, *n, lost, sizeof lost);
	slots = dt_hosts_slots(&el->hosts);
	for (int i = 0; i < el->hosts.n; i++)
		total += el->hosts.h[i].slots;
	/* -n beyond the slots (oversubscribed) keeps its ratio to them. */
	cap = cfg->ranks <= total ? slots :
	      (int)((long long)cfg->ranks * slots / total);
	fit = cap < cfg->ranks ? cap : cfg->ranks;
	while (fit >= cfg->elastic && !plan_fits(cfg->job, fit))
		fit--;
	if (fit < cfg->elastic) {
		say_too_few(cfg, el, lost, slots, cap, fail_rc);
		return fail_rc;
	}
	if (dt_hosts_write(&el->hosts, el->file, &err) != DT_OK) {
		fprintf(stderr, "dtrain: --elastic: %s\n", err.msg);
		return fail_rc;
	}
	if (lost[0] != '\0')
		fprintf(stderr, "dtrain: --elastic: lost %s\n", lost);
	*n = fit;
	return 0;
}

void
dt_launch_elastic_say(const struct dt_launch_elastic *el, int n,
		      int restart)
{
	char where[1024];
	int used = dt_hosts_placement(&el->hosts, n, where, sizeof where);

	if (restart > 0)
		fprintf(stderr, "dtrain: restart %d: %d rank%s on %d host%s: "
			"%s\n", restart, n, n == 1 ? "" : "s", used,
			used == 1 ? "" : "s", where);
	else
		fprintf(stderr, "dtrain: %d rank%s on %d host%s: %s\n", n,
			n == 1 ? "" : "s", used, used == 1 ? "" : "s", where);
}
