/* progress.h - what a person at the terminal sees: a progress line that
 * redraws in place on a TTY, plain log lines otherwise. */
#ifndef DT_TRAIN_PROGRESS_H
#define DT_TRAIN_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

struct dt_progress {
	FILE *out;
	int tty;		/* redraw one line with \r */
	int64_t total_steps;
	double last_draw;	/* seconds, monotonic */
	int drawn;		/* a partial line is on screen */
};

/* Seconds on a monotonic clock. */
double dt_now(void);

/* Starts reporting to out (stderr); tty selects the in-place line. */
void dt_progress_init(struct dt_progress *p, FILE *out, int tty,
		      int64_t total_steps);

/* Reports a logged step: step is 1-based (steps done), loss the mean over
 * the log window, rate in samples/s, elapsed seconds since training began.
 * On a TTY redraws at most 5 times a second unless force; otherwise prints
 * one line. */
void dt_progress_step(struct dt_progress *p, int64_t step, int64_t epoch,
		      double loss, double lr, double rate, double elapsed,
		      int force);

/* Prints an evaluation result on its own line. */
void dt_progress_eval(struct dt_progress *p, int64_t step, double loss,
		      double accuracy);

/* Ends the progress line (newline on a TTY if one is drawn). */
void dt_progress_end(struct dt_progress *p);

#endif
