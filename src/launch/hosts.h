/* SPDX-License-Identifier: MIT */
/* hosts.h - the hosts of a `dtrain run -n ... --elastic MIN` launch: the
 * hostfile read and written back, a probe of each host through mpirun, and
 * where Open MPI puts the ranks (it fills each host's slots in the file's
 * order). */
#ifndef DT_LAUNCH_HOSTS_H
#define DT_LAUNCH_HOSTS_H

#include <stddef.h>

#include "util/status.h"

#define DT_HOST_NAME_MAX 256
/* The most slots of a hostfile, on one line and in all. */
#define DT_HOSTS_SLOTS_MAX (1 << 20)
/* The longest hostfile line, its newline not counted. */
#define DT_HOSTS_LINE_MAX 4094

/* What a probe found of a host it marked not alive (struct dt_host's
 * probe), when not the probe's own exit status. */
#define DT_HOST_SILENT (-1)	/* no answer within the timeout */
#define DT_HOST_UNPROBED (-2)	/* no probe could be started */

struct dt_host {
	char name[DT_HOST_NAME_MAX];
	int slots;		/* slots=N (else max_slots=N, else 1) */
	int alive;		/* 1 until a probe finds it gone */
	int probe;		/* the last probe that found it gone: its
				 * exit status (128 + N: killed by signal
				 * N), DT_HOST_SILENT or DT_HOST_UNPROBED;
				 * 0 otherwise */
};

/* The hosts of a hostfile, in its order; a name given twice is one host
 * with the slots of both lines. */
struct dt_hosts {
	struct dt_host *h;	/* (n) */
	int n;
};

/* Reads the hostfile at path (Open MPI's format: one host per line, its
 * name first, then slots=N and max_slots=N, blanks allowed around '=',
 * max_slots=N alone giving N slots; '#' starts a comment) into *hosts,
 * every host alive. Returns DT_ERR_IO "PATH: ..." when it cannot be read,
 * DT_ERR_USAGE "PATH:LINE: ..." for a line longer than DT_HOSTS_LINE_MAX
 * bytes, "PATH:LINE: \"WORD\": ..." for a word that is not slots=N or
 * max_slots=N (or their other Open MPI names), one given twice, MPICH's
 * HOST:N, a bad slots count (1 to DT_HOSTS_SLOTS_MAX), max_slots below
 * slots, slots that add up to more than DT_HOSTS_SLOTS_MAX, and
 * "PATH: ..." for a file that names no host; *hosts is then empty. The
 * caller frees it with dt_hosts_fini. */
enum dt_status dt_hosts_read(const char *path, struct dt_hosts *hosts,
			     struct dt_error *err);

void dt_hosts_fini(struct dt_hosts *hosts);

/* Writes the hosts still alive to path as a hostfile ("NAME slots=N" a
 * line). Returns DT_ERR_IO "PATH: ..." on failure. */
enum dt_status dt_hosts_write(const struct dt_hosts *hosts, const char *path,
			      struct dt_error *err);

/* The slots of the hosts still alive. */
int dt_hosts_slots(const struct dt_hosts *hosts);

/* Where n_ranks ranks run on the hosts still alive, filled in order, as
 * "NAME (rank 0), NAME (ranks 1-2)" (hosts that get none are left out;
 * ranks past all the slots spread as Open MPI's --oversubscribe does),
 * into buf (size bytes, always terminated). Returns the number of hosts
 * used. */
int dt_hosts_placement(const struct dt_hosts *hosts, int n_ranks, char *buf,
		       size_t size);

/* The hosts alive in before but not in now (the same hosts, probed
 * again with timeout_s), each with the ranks it had when n_before ranks
 * ran on before and what its probe found, as "NAME (rank 1: no answer to
 * a probe within 10 s), NAME (ranks 2-3: its probe failed, exit 1)" (or
 * ": no probe could be started"), into buf (size bytes, always
 * terminated). Returns their number. */
int dt_hosts_lost(const struct dt_hosts *now, const struct dt_hosts *before,
		  int n_before, double timeout_s, char *buf, size_t size);

/* Probes every host still alive at once: argv is an mpirun command line
 * whose element host_arg is replaced by the path of a hostfile naming that
 * host alone (written under dir as probe-K), run with standard input,
 * output and error on /dev/null in a process group of its own. A host
 * whose command has not exited 0 within timeout_s seconds (its process
 * group is then killed) is marked not alive, with its probe's exit status
 * in probe (DT_HOST_SILENT when it did not end in time). A probe that
 * cannot be started counts as lost (DT_HOST_UNPROBED). */
void dt_hosts_probe(struct dt_hosts *hosts, const char **argv, int host_arg,
		    const char *dir, double timeout_s);

#endif
