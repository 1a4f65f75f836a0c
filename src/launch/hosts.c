/* SPDX-License-Identifier: MIT */
/* hosts.c - the hosts of an elastic launch (see hosts.h): Open MPI's
 * hostfile format as its mpirun(1) page describes it (a name, then
 * slots=N and max_slots=N, nothing else), and a probe of each host by
 * the same mpirun, bounded by a timeout. */
#include "launch/hosts.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"

static struct dt_host *
find_host(struct dt_hosts *hosts, const char *name)
{
	for (int i = 0; i < hosts->n; i++)
		if (strcmp(hosts->h[i].name, name) == 0)
			return &hosts->h[i];
	return NULL;
}

/* The slots of the hosts read so far. */
static int64_t
all_slots(const struct dt_hosts *hosts)
{
	int64_t n = 0;

	for (int i = 0; i < hosts->n; i++)
		n += hosts->h[i].slots;
	return n;
}

/* The words of a hostfile line after its host name, from rest, into buf
 * (size bytes): blanks around '=' dropped, as Open MPI's lexer reads
 * "slots = 2" as "slots=2". */
static void
join_equals(const char *rest, char *buf, size_t size)
{
	size_t n = 0;

	for (const char *p = rest; *p != '\0' && n + 1 < size; p++) {
		if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
			const char *q = p;

			while (*q == ' ' || *q == '\t' || *q == '\r' ||
			       *q == '\n')
				q++;
			if (*q == '=' || (n > 0 && buf[n - 1] == '=')) {
				p = q - 1;
				continue;
			}
		}
		buf[n++] = *p;
	}
	buf[n] = '\0';
}

/* Whether key (len bytes) is one of the comma-separated names in set. */
static int
key_in(const char *key, size_t len, const char *set)
{
	while (*set != '\0') {
		size_t k = strcspn(set, ",");

		if (k == len && strncmp(key, set, len) == 0)
			return 1;
		set += k + (set[k] == ',');
	}
	return 0;
}

/* Reads word "KEY=N" of a hostfile line into slots[0] (slots=, and Open
 * MPI's count= and cpu=) or slots[1] (max_slots=, max-slots=,
 * slots_max=), each given at most once, N from 1 to DT_HOSTS_SLOTS_MAX. */
static enum dt_status
read_word(const char *word, long slots[2], const char *path, int line_no,
	  struct dt_error *err)
{
	const char *eq = strchr(word, '=');
	size_t len = eq != NULL ? (size_t)(eq - word) : 0;
	int k;
	char *end;

	if (eq != NULL && key_in(word, len, "slots,count,cpu"))
		k = 0;
	else if (eq != NULL && key_in(word, len, "max_slots,max-slots,"
				      "slots_max"))
		k = 1;
	else
		return dt_errorf(err, DT_ERR_USAGE, "%s:%d: \"%s\": expected "
				 "slots=N or max_slots=N", path, line_no,
				 word);
	if (slots[k] != 0)
		return dt_errorf(err, DT_ERR_USAGE, "%s:%d: \"%s\": %s given "
				 "twice", path, line_no, word,
				 k == 0 ? "slots" : "max_slots");
	errno = 0;
	slots[k] = strtol(eq + 1, &end, 10);
	if (errno != 0 || end == eq + 1 || *end != '\0' || slots[k] < 1 ||
	    slots[k] > DT_HOSTS_SLOTS_MAX)
		return dt_errorf(err, DT_ERR_USAGE, "%s:%d: \"%s\": expected "
				 "%.*s=N with N from 1 to %d", path, line_no,
				 word, (int)len, word, DT_HOSTS_SLOTS_MAX);
	return DT_OK;
}

/* The slots that the words after a host's name give (rest, cut by
 * read_line): slots=N, or max_slots=N alone (Open MPI then takes N
 * slots), 1 when neither; max_slots below slots is refused. */
static enum dt_status
read_slots(const char *rest, long *out, const char *path, int line_no,
	   struct dt_error *err)
{
	char words[DT_HOSTS_LINE_MAX + 2], *save = NULL, *word;
	long slots[2] = { 0, 0 };	/* slots=, max_slots= */
	enum dt_status st = DT_OK;

	join_equals(rest, words, sizeof words);
	for (word = strtok_r(words, " \t\r\n", &save);
	     word != NULL && st == DT_OK;
	     word = strtok_r(NULL, " \t\r\n", &save))
		st = read_word(word, slots, path, line_no, err);
	if (st != DT_OK)
		return st;
	if (slots[0] != 0 && slots[1] != 0 && slots[1] < slots[0])
		return dt_errorf(err, DT_ERR_USAGE, "%s:%d: max_slots=%ld is "
				 "less than slots=%ld", path, line_no,
				 slots[1], slots[0]);
	*out = slots[0] != 0 ? slots[0] : slots[1] != 0 ? slots[1] : 1;
	return DT_OK;
}

/* Whether name is MPICH's "HOST:N", which Open MPI's mpirun refuses (an
 * IPv6 address, with more than one ':', is not). */
static int
mpich_form(const char *name)
{
	const char *colon = strchr(name, ':');

	return colon != NULL && colon > name && strchr(colon + 1, ':') ==
	       NULL && colon[1] != '\0' &&
	       strspn(colon + 1, "0123456789") == strlen(colon + 1);
}

/* One line of a hostfile, comments already cut: adds its host. */
static enum dt_status
read_line(struct dt_hosts *hosts, int *cap, char *line, const char *path,
	  int line_no, struct dt_error *err)
{
	char *save = NULL, *name = strtok_r(line, " \t\r\n", &save);
	long slots = 1;
	struct dt_host *h;
	enum dt_status st;

	if (name == NULL)
		return DT_OK;
	if (strlen(name) >= DT_HOST_NAME_MAX)
		return dt_errorf(err, DT_ERR_USAGE, "%s:%d: host name longer "
				 "than %d bytes", path, line_no,
				 DT_HOST_NAME_MAX - 1);
	if (mpich_form(name))
		return dt_errorf(err, DT_ERR_USAGE, "%s:%d: \"%s\": HOST:N is "
				 "MPICH's form, not Open MPI's; write "
				 "\"%.*s slots=%s\"", path, line_no, name,
				 (int)(strchr(name, ':') - name), name,
				 strchr(name, ':') + 1);
	st = read_slots(save != NULL ? save : "", &slots, path, line_no,
			err);
	if (st != DT_OK)
		return st;
	/* Every sum of slots (a host's, all hosts', dt_hosts_slots) then
	 * stays within an int. */
	if (all_slots(hosts) + slots > DT_HOSTS_SLOTS_MAX)
		return dt_errorf(err, DT_ERR_USAGE, "%s:%d: the hosts' slots "
				 "add up to more than %d", path, line_no,
				 DT_HOSTS_SLOTS_MAX);
	h = find_host(hosts, name);
	if (h != NULL) {
		h->slots += (int)slots;
		return DT_OK;
	}
	if (hosts->n == *cap) {
		*cap = *cap > 0 ? 2 * *cap : 8;
		hosts->h = dt_xrealloc(hosts->h, (size_t)*cap, sizeof *hosts->h);
	}
	h = &hosts->h[hosts->n++];
	snprintf(h->name, sizeof h->name, "%s", name);
	h->slots = (int)slots;
	h->alive = 1;
	h->probe = 0;
	return DT_OK;
}

enum dt_status
dt_hosts_read(const char *path, struct dt_hosts *hosts, struct dt_error *err)
{
	FILE *f = fopen(path, "r");
	char line[DT_HOSTS_LINE_MAX + 2];	/* the line, its newline, NUL */
	int cap = 0, line_no = 0;
	enum dt_status st = DT_OK;

	hosts->h = NULL;
	hosts->n = 0;
	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "%s: %s", path,
				 strerror(errno));
	while (st == DT_OK && fgets(line, sizeof line, f) != NULL) {
		char *hash = strchr(line, '#');
		size_t len = strlen(line);

		line_no++;
		/* A line that fills the buffer without its newline would go
		 * on as another line: a comment's tail read as a host. */
		if (len == sizeof line - 1 && line[len - 1] != '\n') {
			st = dt_errorf(err, DT_ERR_USAGE, "%s:%d: line longer "
				       "than %zu bytes", path, line_no,
				       sizeof line - 2);
			break;
		}
		if (hash != NULL)
			*hash = '\0';
		st = read_line(hosts, &cap, line, path, line_no, err);
	}
	if (st == DT_OK && ferror(f))
		st = dt_errorf(err, DT_ERR_IO, "%s: read error", path);
	fclose(f);
	if (st == DT_OK && hosts->n == 0)
		st = dt_errorf(err, DT_ERR_USAGE, "%s: names no host", path);
	if (st != DT_OK)
		dt_hosts_fini(hosts);
	return st;
}

void
dt_hosts_fini(struct dt_hosts *hosts)
{
	free(hosts->h);
	hosts->h = NULL;
	hosts->n = 0;
}

/* Writes the alive hosts, or host `only` alone when it is >= 0. */
static enum dt_status
write_file(const struct dt_hosts *hosts, int only, const char *path,
	   struct dt_error *err)
{
	FILE *f = fopen(path, "w");
	int bad;

	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "%s: %s", path,
				 strerror(errno));
	for (int i = 0; i < hosts->n; i++) {
		const struct dt_host *h = &hosts->h[i];

		if (only >= 0 ? i == only : h->alive)
			fprintf(f, "%s slots=%d\n", h->name,
				only >= 0 ? 1 : h->slots);
	}
	bad = ferror(f);
	if (fclose(f) != 0 || bad)
		return dt_errorf(err, DT_ERR_IO, "%s: write failed", path);
	return DT_OK;
}

enum dt_status
dt_hosts_write(const struct dt_hosts *hosts, const char *path,
	       struct dt_error *err)
{
	return write_file(hosts, -1, path, err);
}

int
dt_hosts_slots(const struct dt_hosts *hosts)
{
	int n = 0;

	for (int i = 0; i < hosts->n; i++)
		if (hosts->h[i].alive)
			n += hosts->h[i].slots;
	return n;
}

/* Appends printf-style text at *len in buf, never past size - 1. */
static void
append(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*len + 1 >= size)
		return;
	va_start(ap, fmt);
	w = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	if (w > 0)
		*len += (size_t)w < size - *len ? (size_t)w : size - *len - 1;
}

/* The ranks host i gets when n_ranks fill the alive hosts' slots in
 * order: their number, the first in *first. Ranks past all the slots
 * (mpirun --oversubscribe) are spread as Open MPI's by-slot mapper does:
 * an even share to each alive host, one more to the first of them for
 * what is left over. */
static int
host_ranks(const struct dt_hosts *hosts, int n_ranks, int i, int *first)
{
	int next = 0, alive = 0, over, j = 0;

	for (int k = 0; k < hosts->n; k++)
		alive += hosts->h[k].alive;
	over = n_ranks - dt_hosts_slots(hosts);
	*first = 0;
	for (int k = 0; k < hosts->n; k++) {
		int take;

		if (!hosts->h[k].alive)
			continue;
		take = n_ranks - next < hosts->h[k].slots ? n_ranks - next :
		       hosts->h[k].slots;
		if (over > 0)
			take = hosts->h[k].slots + over / alive +
			       (j < over % alive);
		if (take < 0)
			take = 0;
		j++;
		if (k == i) {
			*first = next;
			return take;
		}
		next += take;
	}
	return 0;
}

/* Appends "NAME (rank F)" or "NAME (ranks F-L)" for host i of hosts under
 * n_ranks, after a comma unless it is the first; a note (NULL: none) goes
 * inside the parenthesis, after ": ". */
static void
append_host(const struct dt_hosts *hosts, int n_ranks, int i, int first_item,
	    const char *note, char *buf, size_t size, size_t *len)
{
	int first, take = host_ranks(hosts, n_ranks, i, &first);
	const char *sep = first_item ? "" : ", ";

	if (take == 0)
		append(buf, size, len, "%s%s (no rank", sep, hosts->h[i].name);
	else if (take == 1)
		append(buf, size, len, "%s%s (rank %d", sep, hosts->h[i].name,
		       first);
	else
		append(buf, size, len, "%s%s (ranks %d-%d", sep,
		       hosts->h[i].name, first, first + take - 1);
	append(buf, size, len, "%s%s)", note != NULL ? ": " : "",
	       note != NULL ? note : "");
}

int
dt_hosts_placement(const struct dt_hosts *hosts, int n_ranks, char *buf,
		   size_t size)
{
	size_t len = 0;
	int used = 0, first;

	if (size > 0)
		buf[0] = '\0';
	for (int i = 0; i < hosts->n; i++)
		if (hosts->h[i].alive &&
		    host_ranks(hosts, n_ranks, i, &first) > 0)
			append_host(hosts, n_ranks, i, used++ == 0, NULL, buf,
				    size, &len);
	return used;
}

int
dt_hosts_lost(const struct dt_hosts *now, const struct dt_hosts *before,
	      int n_before, double timeout_s, char *buf, size_t size)
{
	size_t len = 0;
	int lost = 0;

	if (size > 0)
		buf[0] = '\0';
	for (int i = 0; i < now->n && i < before->n; i++) {
		int probe = now->h[i].probe;
		char note[96];

		if (now->h[i].alive || !before->h[i].alive)
			continue;
		if (probe == DT_HOST_SILENT)
			snprintf(note, sizeof note, "no answer to a probe "
				 "within %.0f s", timeout_s);
		else if (probe == DT_HOST_UNPROBED)
			snprintf(note, sizeof note, "no probe could be "
				 "started");
		else
			snprintf(note, sizeof note, "its probe failed, exit "
				 "%d", probe);
		append_host(before, n_before, i, lost++ == 0, note, buf, size,
			    &len);
	}
	return lost;
}

/* Starts argv with its output on /dev/null in a process group of its own;
 * returns the pid, or -1. */
static pid_t
start_quiet(const char **argv)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);

		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			if (fd > STDERR_FILENO)
				close(fd);
		}
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	setpgid(pid, pid);
	return pid;
}

void
dt_hosts_probe(struct dt_hosts *hosts, const char **argv, int host_arg,
	       const char *dir, double timeout_s)
{
	pid_t *pids = dt_xcalloc((size_t)hosts->n + 1, sizeof *pids);
	char path[4096];
	struct timespec t0, now;
	int left = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < hosts->n; i++) {
		pids[i] = -1;
		if (!hosts->h[i].alive)
			continue;
		snprintf(path, sizeof path, "%s/probe-%d", dir, i);
		hosts->h[i].probe = 0;
		if (write_file(hosts, i, path, NULL) != DT_OK) {
			hosts->h[i].alive = 0;
			hosts->h[i].probe = DT_HOST_UNPROBED;
			continue;
		}
		argv[host_arg] = path;
		pids[i] = start_quiet(argv);
		if (pids[i] < 0) {
			hosts->h[i].alive = 0;
			hosts->h[i].probe = DT_HOST_UNPROBED;
		} else {
			left++;
		}
	}
	while (left > 0) {
		struct timespec nap = { 0, 50 * 1000 * 1000 };
		double waited;

		for (int i = 0; i < hosts->n; i++) {
			int status;

			if (pids[i] <= 0 || waitpid(pids[i], &status,
						    WNOHANG) != pids[i])
				continue;
			hosts->h[i].alive = WIFEXITED(status) &&
					    WEXITSTATUS(status) == 0;
			if (!hosts->h[i].alive)
				hosts->h[i].probe = WIFEXITED(status) ?
						    WEXITSTATUS(status) :
						    128 + WTERMSIG(status);
			kill(-pids[i], SIGKILL);	/* what it left */
			pids[i] = 0;
			left--;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited = (double)(now.tv_sec - t0.tv_sec) +
			 (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
		if (left > 0 && waited >= timeout_s) {
			for (int i = 0; i < hosts->n; i++) {
				if (pids[i] <= 0)
					continue;
				kill(-pids[i], SIGKILL);
				waitpid(pids[i], NULL, 0);
				hosts->h[i].alive = 0;
				hosts->h[i].probe = DT_HOST_SILENT;
				pids[i] = 0;
			}
			left = 0;
		}
		if (left > 0)
			nanosleep(&nap, NULL);
	}
	for (int i = 0; i < hosts->n; i++) {
		snprintf(path, sizeof path, "%s/probe-%d", dir, i);
		unlink(path);
	}
	argv[host_arg] = NULL;
	free(pids);
}
