/* SPDX-License-Identifier: MIT */
/* progress.h - what a person at the terminal sees: a progress line that
 * redraws in place on a TTY (and once a second between logged steps, so
 * that the elapsed time and the ETA move during a long step), plain log
 * lines with an ISO 8601 time otherwise. */
#ifndef DT_TRAIN_PROGRESS_H
#define DT_TRAIN_PROGRESS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

struct dt_progress {
	FILE *out;
	int tty;		/* redraw one line with \r */
	int64_t total_steps;
	double last_draw;	/* seconds, monotonic */
	int drawn;		/* a partial line is on screen */
	/* The last logged step, which the ticker redraws. */
	int64_t step, epoch;
	double loss, rate;
	double per_step;	/* seconds a step took on average */
	double elapsed;		/* seconds since training began, at t_step */
	double t_step;		/* when it was logged, monotonic */
	/* The ticker thread (TTY only), started by the first step. */
	pthread_mutex_t lock;	/* guards everything above and out */
	pthread_cond_t wake;
	pthread_t ticker;
	int ticking;		/* the thread runs */
	int stopping;		/* it is asked to end */
};

/* Seconds on a monotonic clock. */
double dt_now(void);

/* Starts reporting to out (stderr; NULL: report nothing). tty selects the
 * in-place line; the environment variable DTRAIN_PROGRESS_TTY, when set,
 * decides instead ("1": a terminal, "0": not), since under mpirun rank 0's
 * stderr is a pipe to mpirun even when mpirun's own is a terminal (`dtrain
 * run -n` sets it). Call dt_progress_end before p goes away. */
void dt_progress_init(struct dt_progress *p, FILE *out, int tty,
		      int64_t total_steps);

/* Whether this process's stderr counts as a terminal for progress output
 * (the training line and the download bars): DTRAIN_PROGRESS_TTY when set
 * to "1" or "0", else isatty(2). No errors. */
int dt_progress_tty(void);

/* Reports a logged step: step is 1-based (steps done), loss the mean over
 * the log window, rate in samples/s, elapsed seconds since training began.
 * On a TTY redraws at most 5 times a second unless force, and starts the
 * ticker that redraws the line once a second with the elapsed time and
 * the ETA brought up to date; otherwise prints one line:
 * "2026-12-01T10:00:00Z step 5/100 epoch 0 loss ... eta 1m05s". */
void dt_progress_step(struct dt_progress *p, int64_t step, int64_t epoch,
		      double loss, double lr, double rate, double elapsed,
		      int force);

/* Prints an evaluation result on its own line. */
void dt_progress_eval(struct dt_progress *p, int64_t step, double loss,
		      double accuracy);

/* Ends the progress line (newline on a TTY if one is drawn) and stops the
 * ticker. Idempotent; p may be reported to again afterwards. */
void dt_progress_end(struct dt_progress *p);

/* The elapsed time and the ETA are in util/span.h's format. */

#endif
