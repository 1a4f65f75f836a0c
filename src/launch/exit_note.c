/* SPDX-License-Identifier: MIT */
/* exit_note.c - the notes through which the ranks of a launch tell the
 * launcher their pid and their exit code (launch_priv.h): the writer, run
 * by each rank, and the strict reader, run by the launcher, which takes a
 * note only when it is the one whole line the writer puts in place. */
#include "launch/launch_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const note_suffix[] = {
	[DT_LAUNCH_NOTE_PID] = "pid",
	[DT_LAUNCH_NOTE_EXIT] = "exit",
};

/* DIR/rank-R.WHAT into path (size bytes); 0 when it did not fit. */
static int
note_path(char *path, size_t size, const char *dir, int rank,
	  enum dt_launch_note_what what)
{
	int len = snprintf(path, size, "%s/rank-%d.%s", dir, rank,
			   note_suffix[what]);

	return len > 0 && (size_t)len < size;
}

enum dt_status
dt_launch_note_write(const char *dir, int rank, enum dt_launch_note_what what,
		     long value, const char *host, struct dt_error *err)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 72];
	FILE *f;

	if (!note_path(path, sizeof path, dir, rank, what))
		return dt_errorf(err, DT_ERR_IO, "%s: path too long", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "%s: %s", tmp,
				 strerror(errno));
	fprintf(f, "%ld %s\n", value, host);
	if (fclose(f) != 0) {
		unlink(tmp);
		return dt_errorf(err, DT_ERR_IO, "%s: cannot write", tmp);
	}
	if (rename(tmp, path) != 0) {
		int e = errno;

		unlink(tmp);
		return dt_errorf(err, DT_ERR_IO, "%s: %s", path, strerror(e));
	}
	return DT_OK;
}

/* Reads the file at path whole into buf (at most DT_LAUNCH_NOTE_MAX
 * bytes and a terminating 0), without following a symlink or waiting on
 * a FIFO; the byte count into *len. */
static enum dt_launch_note_found
note_slurp(const char *path, char *buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat sb;
	ssize_t got = 0;

	*len = 0;
	if (fd < 0)
		return errno == ENOENT ? DT_LAUNCH_NOTE_NONE :
		       DT_LAUNCH_NOTE_BAD;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > DT_LAUNCH_NOTE_MAX) {
		close(fd);
		return DT_LAUNCH_NOTE_BAD;
	}
	/* One byte more than a note may hold: a file that grew since the
	 * fstat is caught by the length. */
	while (*len <= DT_LAUNCH_NOTE_MAX) {
		got = read(fd, buf + *len, DT_LAUNCH_NOTE_MAX + 1 - *len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		*len += (size_t)got;
	}
	close(fd);
	buf[*len] = '\0';
	return got < 0 || *len > DT_LAUNCH_NOTE_MAX ? DT_LAUNCH_NOTE_BAD :
	       DT_LAUNCH_NOTE_OK;
}

/* Whether text (len bytes) is "DIGITS HOST\n" with the value in what's
 * range; fills *note when it is. */
static int
note_parse(const char *text, size_t len, enum dt_launch_note_what what,
	   struct dt_launch_note *note)
{
	size_t i = 0, digits, host;
	long v = 0;

	while (i < len && text[i] >= '0' && text[i] <= '9' && i < 10)
		v = v * 10 + (text[i++] - '0');
	digits = i;
	if (digits == 0 || i >= len || text[i++] != ' ')
		return 0;
	host = i;
	while (i < len && text[i] > ' ' && text[i] < 0x7f)
		i++;
	if (i == host || i - host >= DT_HOST_NAME_MAX || i + 1 != len ||
	    text[i] != '\n')
		return 0;
	if (what == DT_LAUNCH_NOTE_EXIT ? v > 255 : v < 2 || v > INT_MAX)
		return 0;
	note->value = v;
	memcpy(note->host, text + host, i - host);
	note->host[i - host] = '\0';
	return 1;
}

enum dt_launch_note_found
dt_launch_note_read(const char *dir, int rank, enum dt_launch_note_what what,
		    struct dt_launch_note *note)
{
	char path[PATH_MAX + 64], buf[DT_LAUNCH_NOTE_MAX + 1];
	enum dt_launch_note_found found;
	size_t len;

	if (!note_path(path, sizeof path, dir, rank, what))
		return DT_LAUNCH_NOTE_NONE;
	found = note_slurp(path, buf, &len);
	if (found == DT_LAUNCH_NOTE_OK && !note_parse(buf, len, what, note))
		found = DT_LAUNCH_NOTE_BAD;
	return found;
}

int
dt_launch_note_code(const char *dir, int rank, long bad, long *code)
{
	struct dt_launch_note note;

	switch (dt_launch_note_read(dir, rank, DT_LAUNCH_NOTE_EXIT, &note)) {
	case DT_LAUNCH_NOTE_NONE:
		return 0;
	case DT_LAUNCH_NOTE_OK:
		*code = note.value;
		return 1;
	case DT_LAUNCH_NOTE_BAD:
		break;
	}
	*code = bad;
	return 1;
}

int
dt_launch_note_local_pid(const char *dir, int rank, const char *host,
			 pid_t *pid)
{
	struct dt_launch_note note;

	if (dt_launch_note_read(dir, rank, DT_LAUNCH_NOTE_PID, &note) !=
	    DT_LAUNCH_NOTE_OK || strcmp(note.host, host) != 0)
		return 0;
	*pid = (pid_t)note.value;
	return 1;
}

void
dt_launch_notes_clean(const char *dir, int n_ranks, int also_dir)
{
	char path[PATH_MAX + 64];

	for (int r = 0; r < (n_ranks > 0 ? n_ranks : 1); r++)
		for (int w = DT_LAUNCH_NOTE_PID; w <= DT_LAUNCH_NOTE_EXIT;
		     w++)
			if (note_path(path, sizeof path, dir, r,
				      (enum dt_launch_note_what)w))
				unlink(path);
	if (also_dir)
		rmdir(dir);
}

/* Writes this rank's note into $DTRAIN_LAUNCH_DIR, if set. */
static void
note_self(int rank, enum dt_launch_note_what what, long value)
{
	const char *dir = getenv(DT_LAUNCH_DIR_ENV);
	char host[DT_HOST_NAME_MAX] = "?";
	struct dt_error err;

	if (dir == NULL || *dir == '\0')
		return;
	gethostname(host, sizeof host - 1);
	(void)dt_launch_note_write(dir, rank, what, value, host, &err);
}

void
dt_launch_note_pid(int rank)
{
	note_self(rank, DT_LAUNCH_NOTE_PID, (long)getpid());
}

void
dt_launch_note_exit(int rank, int code)
{
	note_self(rank, DT_LAUNCH_NOTE_EXIT, code);
}

int
dt_launch_supervised(void)
{
	return getenv(DT_LAUNCH_DIR_ENV) != NULL;
}
