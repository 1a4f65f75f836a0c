/* SPDX-License-Identifier: MIT */
/* banner.h - what `dtrain run -n` passes on of mpirun's stderr.
 *
 * When every rank of a job checkpointed after a stop and exited 3, Open
 * MPI 4.1's mpirun still says the job failed, in show_help blocks between
 * rules of dashes ("Primary job  terminated normally, but 1 process
 * returned a non-zero exit code ..." and "mpirun detected that one or
 * more processes exited with non-zero status ..."). Its -q (or
 * orte_execute_quiet) would silence every message, those of a real
 * failure too, and must be chosen before the job starts. So the launcher
 * reads mpirun's stderr through a pipe and copies it on as it comes, byte
 * for byte (the progress line's redraws included), holding back only
 * those two blocks until the job has ended: dropped when it ended
 * interrupted (status 3 from every rank), written out otherwise. */
#ifndef DT_LAUNCH_BANNER_H
#define DT_LAUNCH_BANNER_H

#include <stddef.h>
#include <stdio.h>

/* Where the filter is in mpirun's stream. */
enum dt_banner_state {
	DT_BANNER_LINE_START = 0,	/* at the start of a line */
	DT_BANNER_MID_LINE,		/* inside a line passed on */
	DT_BANNER_MAYBE_RULE,		/* a line of dashes so far, held */
	DT_BANNER_BLOCK,		/* after an opening rule, held */
};

struct dt_banner {
	FILE *out;			/* where the stream goes on */
	enum dt_banner_state state;
	char *cur;			/* (cap) the rule or block held */
	size_t n, cap;
	size_t line_at;			/* offset of the line in cur being read */
	char *held;			/* (held_cap) the blocks held back */
	size_t held_n, held_cap;
};

/* Starts a filter that writes to out (not owned). */
void dt_banner_init(struct dt_banner *b, FILE *out);

/* Takes the next len bytes of mpirun's stderr: writes all but a line of
 * dashes or a block between two such lines (which wait for the line or
 * the block to end) and holds back the two banners above. Flushes out. */
void dt_banner_feed(struct dt_banner *b, const char *buf, size_t len);

/* The stream ended (or a held line waited too long): writes what is held
 * of an unfinished line or block as it is. */
void dt_banner_flush(struct dt_banner *b);

/* The job ended: with quiet, drops the banners held back, else writes
 * them; then frees what b holds. */
void dt_banner_end(struct dt_banner *b, int quiet);

/* Whether b holds an unfinished line or block (which dt_banner_flush
 * writes). */
int dt_banner_pending(const struct dt_banner *b);

#endif
