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
	int64_t first_step;	/* steps done before this process (resume) */
	double last_draw;	/* seconds, monotonic */
	int drawn;		/* a partial line is on screen */
	/* The last logged step, which the ticker redraws. */
	int64_t step, epoch;
	double loss, rate;
	double per_step;	/* seconds a step took on average */
	double elapsed;		/* seconds since training began, at t_step */
	double t_step;		/* when it was logged, monotonic */
	/* A counted task (an evaluation, a file being read), drawn in
	 * place of the step line while it lasts; TTY only. */
	int in_task;
	char task[128];		/* "eval", "read t10k-images-idx3-ubyte.gz" */
	int64_t task_done, task_total;
	int task_bytes;		/* units are bytes: shown in MB */
	double task_t0;		/* its start, monotonic */
	int task_drawn;		/* its line is on screen */
	int task_ticker;	/* it started the ticker, which ends with it */
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

/* The run goes on from first_step (a resume's checkpoint step; 0 by
 * default): the ETA's seconds per step are then the elapsed time over the
 * steps since first_step, as the elapsed time counts from this process's
 * start. No errors. */
void dt_progress_from_step(struct dt_progress *p, int64_t first_step);
/* Whether this process's stderr counts as a terminal for progress output
 * (the training line and the download bars): DTRAIN_PROGRESS_TTY when set
 * to "1" or "0", else isatty(2). No errors. */
int dt_progress_tty(void);

/* Reports a logged step: step is 1-based (steps done), loss the mean over
 * the log window, rate in samples/s, elapsed seconds since training began
 * in this process (at dt_progress_from_step's step).
 * On a TTY redraws at most 5 times a second unless force, and starts the
 * ticker that redraws the line once a second with the elapsed time and
 * the ETA brought up to date; otherwise prints one line:
 * "2026-12-01T10:00:00Z step 5/100 epoch 0 loss ... eta 1m05s". */
void dt_progress_step(struct dt_progress *p, int64_t step, int64_t epoch,
		      double loss, double lr, double rate, double elapsed,
		      int force);

/* Reports a step that is not logged (TTY only; nothing otherwise), so
 * that the in-place line's step count moves every step, not only at
 * log.every_steps: step and epoch as for dt_progress_step, loss the mean
 * of the log window so far (NaN: none yet, drawn as "-"), rate its
 * samples/s so far, elapsed as for dt_progress_step. Redraws at most 5
 * times a second; draws nothing while a task's line is up. No errors. */
void dt_progress_tick(struct dt_progress *p, int64_t step, int64_t epoch,
		      double loss, double rate, double elapsed);

/* Prints an evaluation result on its own line, with the perplexity
 * (exp of the mean token loss) unless it is NaN. */
void dt_progress_eval(struct dt_progress *p, int64_t step, double loss,
		      double accuracy, double perplexity);

/* Ends the progress line (newline on a TTY if one is drawn) and stops the
 * ticker. Idempotent; p may be reported to again afterwards. */
void dt_progress_end(struct dt_progress *p);

/* How long a task runs before its line appears: one that takes less
 * than a moment shows nothing. Seconds. */
#define DT_PROGRESS_TASK_DELAY_S 0.5

/* Starts a counted task on a TTY (off one, and with out NULL, the task
 * functions do nothing: the plain log lines stay as they are): what
 * names it, total counts its units (samples, or bytes when bytes is
 * set). From DT_PROGRESS_TASK_DELAY_S on, the line
 * "eval 3200/10000  0m03s  ETA 0m07s" (bytes: "read NAME  12.3/45.6 MB
 * ..."; the task's elapsed time, the ETA at the rate so far, in
 * util/span.h's format) replaces the step line, redrawn by updates (at
 * most 5 times a second) and by the ticker once a second. */
void dt_progress_task_begin(struct dt_progress *p, const char *what,
			    int64_t total, int bytes);

/* done units of the task are finished (0 <= done <= total). */
void dt_progress_task_update(struct dt_progress *p, int64_t done);

/* Ends the task and clears its line; the step line comes back with the
 * next logged step. */
void dt_progress_task_end(struct dt_progress *p);

struct dt_meter;
/* Fills m (util/meter.h) so that the readers' byte counts become tasks
 * of p (with bytes set). m points at p: neither may go before the other
 * is out of use. */
void dt_progress_meter(struct dt_progress *p, struct dt_meter *m);

/* The elapsed time and the ETA are in util/span.h's format. */

#endif
