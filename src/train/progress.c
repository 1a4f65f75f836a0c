/* SPDX-License-Identifier: MIT */
/* progress.c - progress line and log lines (see progress.h). The ticker
 * thread only writes to the terminal: it reads no training state but the
 * numbers the loop handed over, so results do not depend on it. */
#include "train/progress.h"
#include "util/meter.h"
#include "util/span.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How often the ticker redraws the line between logged steps. */
#define DT_PROGRESS_TICK_S 1.0

double
dt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "1" or "0" from DTRAIN_PROGRESS_TTY, else -1. */
static int
tty_env(void)
{
	const char *env = getenv("DTRAIN_PROGRESS_TTY");

	if (env != NULL && (strcmp(env, "1") == 0 || strcmp(env, "0") == 0))
		return env[0] == '1';
	return -1;
}

int
dt_progress_tty(void)
{
	int t = tty_env();

	return t >= 0 ? t : isatty(STDERR_FILENO);
}

void
dt_progress_init(struct dt_progress *p, FILE *out, int tty,
		 int64_t total_steps)
{
	int env = tty_env();

	memset(p, 0, sizeof *p);
	if (env >= 0)
		tty = env;
	p->out = out;
	p->tty = tty;
	p->total_steps = total_steps;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
}

void
dt_progress_from_step(struct dt_progress *p, int64_t first_step)
{
	p->first_step = first_step;
}

/* The current UTC time as ISO 8601 ("2026-12-01T10:00:00Z"). */
static void
fmt_utc(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Draws the TTY line for the last logged step as of now (monotonic), the
 * elapsed time and the ETA moved on by the time since it was logged. With
 * p->lock held. */
static void
draw_line(struct dt_progress *p, double now)
{
	char eta[32], elapsed[32], loss[32];
	double since = now - p->t_step;
	double left = p->per_step * (double)(p->total_steps - p->step) -
		      since;

	dt_fmt_span(elapsed, sizeof elapsed, p->elapsed + since);
	dt_fmt_span(eta, sizeof eta, left);
	if (isfinite(p->loss))
		snprintf(loss, sizeof loss, "%.4f", p->loss);
	else
		snprintf(loss, sizeof loss, "-");
	fprintf(p->out, "\r\033[Kstep %lld/%lld  epoch %lld  loss %s"
		"  %.0f samples/s  %s  ETA %s", (long long)p->step,
		(long long)p->total_steps, (long long)p->epoch, loss,
		p->rate, elapsed, eta);
	fflush(p->out);
	p->last_draw = now;
	p->drawn = 1;
}

/* "12.3/45.6 MB" or "3200/10000" into buf. */
static void
fmt_count(const struct dt_progress *p, char *buf, size_t size)
{
	if (p->task_bytes)
		snprintf(buf, size, "%.1f/%.1f MB", (double)p->task_done / 1e6,
			 (double)p->task_total / 1e6);
	else
		snprintf(buf, size, "%lld/%lld", (long long)p->task_done,
			 (long long)p->task_total);
}

/* Draws the task's line as of now (monotonic): its elapsed time, and the
 * ETA at the rate so far once some of it is done. With p->lock held. */
static void
draw_task(struct dt_progress *p, double now)
{
	char count[64], elapsed[32], eta[32] = "";
	double t = now - p->task_t0;

	fmt_count(p, count, sizeof count);
	dt_fmt_span(elapsed, sizeof elapsed, t);
	if (p->task_done > 0) {
		memcpy(eta, "  ETA ", 7);
		dt_fmt_span(eta + 6, sizeof eta - 6, t / (double)p->task_done *
			    (double)(p->task_total - p->task_done));
	}
	fprintf(p->out, "\r\033[K%s %s  %s%s", p->task, count, elapsed, eta);
	fflush(p->out);
	p->last_draw = now;
	p->task_drawn = 1;
}

static void *
ticker_main(void *arg)
{
	struct dt_progress *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stopping) {
		struct timespec until;
		double now;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&p->wake, &p->lock, &until);
		now = dt_now();
		if (p->stopping || now - p->last_draw <
		    DT_PROGRESS_TICK_S - 0.05)
			continue;
		if (p->in_task) {
			if (now - p->task_t0 >= DT_PROGRESS_TASK_DELAY_S)
				draw_task(p, now);
		} else if (p->drawn) {
			draw_line(p, now);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Starts the ticker, with SIGINT and SIGTERM blocked in it so that they
 * reach the training thread as before. Without a thread the line is
 * simply redrawn at logged steps only. With p->lock held. */
static void
start_ticker(struct dt_progress *p)
{
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	p->stopping = 0;
	p->ticking = pthread_create(&p->ticker, NULL, ticker_main, p) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void
dt_progress_step(struct dt_progress *p, int64_t step, int64_t epoch,
		 double loss, double lr, double rate, double elapsed,
		 int force)
{
	char eta[32], when[32];
	double now = dt_now();
	int64_t done = step - p->first_step;
	double per_step = done > 0 ? elapsed / (double)done : 0;

	if (p->out == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->step = step;
	p->epoch = epoch;
	p->loss = loss;
	p->rate = rate;
	p->per_step = per_step;
	p->elapsed = elapsed;
	p->t_step = now;
	if (p->tty) {
		if (!p->ticking)
			start_ticker(p);
		if (force || now - p->last_draw >= 0.2)
			draw_line(p, now);
	} else {
		dt_fmt_span(eta, sizeof eta, per_step *
				     (double)(p->total_steps - step));
		fmt_utc(when, sizeof when);
		fprintf(p->out, "%s step %lld/%lld epoch %lld loss %.6f lr "
			"%.6g samples/s %.0f eta %s\n", when, (long long)step,
			(long long)p->total_steps, (long long)epoch, loss, lr,
			rate, eta);
		fflush(p->out);
	}
	pthread_mutex_unlock(&p->lock);
}

void
dt_progress_tick(struct dt_progress *p, int64_t step, int64_t epoch,
		 double loss, double rate, double elapsed)
{
	double now = dt_now();
	int64_t done = step - p->first_step;

	if (p->out == NULL || !p->tty)
		return;
	pthread_mutex_lock(&p->lock);
	p->step = step;
	p->epoch = epoch;
	p->loss = loss;
	p->rate = rate;
	p->per_step = done > 0 ? elapsed / (double)done : 0;
	p->elapsed = elapsed;
	p->t_step = now;
	if (!p->ticking)
		start_ticker(p);
	if (!p->in_task && now - p->last_draw >= 0.2)
		draw_line(p, now);
	pthread_mutex_unlock(&p->lock);
}

void
dt_progress_eval(struct dt_progress *p, int64_t step, double loss,
		 double accuracy, double perplexity)
{
	char when[32];

	if (p->out == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->tty && p->drawn)
		fputs("\r\033[K", p->out);
	if (!p->tty) {
		fmt_utc(when, sizeof when);
		fprintf(p->out, "%s ", when);
	}
	fprintf(p->out, "eval at step %lld: loss %.4f", (long long)step,
		loss);
	/* NaN: a regression (mse), which has no accuracy. */
	if (!isnan(accuracy))
		fprintf(p->out, " accuracy %.4f", accuracy);
	if (!isnan(perplexity))
		fprintf(p->out, " perplexity %.4f", perplexity);
	fputc('\n', p->out);
	p->drawn = 0;
	fflush(p->out);
	pthread_mutex_unlock(&p->lock);
}

/* Stops the ticker and waits for it. Without p->lock held. */
static void
stop_ticker(struct dt_progress *p)
{
	int ticking;

	pthread_mutex_lock(&p->lock);
	ticking = p->ticking;
	p->stopping = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (ticking)
		pthread_join(p->ticker, NULL);
	pthread_mutex_lock(&p->lock);
	p->ticking = 0;
	pthread_mutex_unlock(&p->lock);
}

void
dt_progress_end(struct dt_progress *p)
{
	stop_ticker(p);
	pthread_mutex_lock(&p->lock);
	if (p->out != NULL && p->tty && p->drawn)
		fputc('\n', p->out);
	p->drawn = 0;
	if (p->out != NULL)
		fflush(p->out);
	pthread_mutex_unlock(&p->lock);
}

void
dt_progress_task_begin(struct dt_progress *p, const char *what,
		       int64_t total, int bytes)
{
	if (p->out == NULL || !p->tty)
		return;
	pthread_mutex_lock(&p->lock);
	snprintf(p->task, sizeof p->task, "%s", what);
	p->task_done = 0;
	p->task_total = total;
	p->task_bytes = bytes;
	p->task_t0 = dt_now();
	p->task_drawn = 0;
	p->in_task = 1;
	p->task_ticker = !p->ticking;
	if (!p->ticking)
		start_ticker(p);
	pthread_mutex_unlock(&p->lock);
}

void
dt_progress_task_update(struct dt_progress *p, int64_t done)
{
	double now;

	if (p->out == NULL || !p->tty)
		return;
	now = dt_now();
	pthread_mutex_lock(&p->lock);
	if (p->in_task) {
		p->task_done = done;
		if (now - p->task_t0 >= DT_PROGRESS_TASK_DELAY_S &&
		    now - p->last_draw >= 0.2)
			draw_task(p, now);
	}
	pthread_mutex_unlock(&p->lock);
}

void
dt_progress_task_end(struct dt_progress *p)
{
	int own;

	if (p->out == NULL || !p->tty)
		return;
	pthread_mutex_lock(&p->lock);
	own = p->in_task && p->task_ticker;
	pthread_mutex_unlock(&p->lock);
	/* A ticker the task started goes with it (a task after
	 * dt_progress_end, as the run's final evaluation). */
	if (own)
		stop_ticker(p);
	pthread_mutex_lock(&p->lock);
	if (p->task_drawn) {
		/* It was drawn over the step line: both are gone now. */
		fputs("\r\033[K", p->out);
		fflush(p->out);
		p->drawn = 0;
	}
	p->in_task = 0;
	p->task_drawn = 0;
	p->task_ticker = 0;
	pthread_mutex_unlock(&p->lock);
}

static void
meter_begin(void *ctx, const char *what, int64_t total)
{
	dt_progress_task_begin(ctx, what, total, 1);
}

static void
meter_update(void *ctx, int64_t done)
{
	dt_progress_task_update(ctx, done);
}

static void
meter_end(void *ctx)
{
	dt_progress_task_end(ctx);
}

void
dt_progress_meter(struct dt_progress *p, struct dt_meter *m)
{
	m->begin = meter_begin;
	m->update = meter_update;
	m->end = meter_end;
	m->ctx = p;
}
