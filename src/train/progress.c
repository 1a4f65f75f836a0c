/* progress.c - progress line and log lines. */
#include "train/progress.h"

#include <time.h>

double
dt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
dt_progress_init(struct dt_progress *p, FILE *out, int tty,
		 int64_t total_steps)
{
	p->out = out;
	p->tty = tty;
	p->total_steps = total_steps;
	p->last_draw = 0;
	p->drawn = 0;
}

static void
fmt_eta(char *buf, size_t size, double s)
{
	long t = s < 0 ? 0 : (long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
	else
		snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
}

void
dt_progress_step(struct dt_progress *p, int64_t step, int64_t epoch,
		 double loss, double lr, double rate, double elapsed,
		 int force)
{
	char eta[32];
	double now = dt_now();
	double per_step = step > 0 ? elapsed / (double)step : 0;

	if (p->out == NULL)
		return;
	fmt_eta(eta, sizeof eta, per_step * (double)(p->total_steps - step));
	if (p->tty) {
		if (!force && now - p->last_draw < 0.2)
			return;
		p->last_draw = now;
		fprintf(p->out, "\r\033[Kstep %lld/%lld  epoch %lld  loss %.4f"
			"  %.0f samples/s  ETA %s", (long long)step,
			(long long)p->total_steps, (long long)epoch, loss,
			rate, eta);
		p->drawn = 1;
	} else {
		fprintf(p->out, "step %lld/%lld epoch %lld loss %.6f lr %.6g "
			"samples/s %.0f eta %s\n", (long long)step,
			(long long)p->total_steps, (long long)epoch, loss, lr,
			rate, eta);
	}
	fflush(p->out);
}

void
dt_progress_eval(struct dt_progress *p, int64_t step, double loss,
		 double accuracy)
{
	if (p->out == NULL)
		return;
	if (p->tty && p->drawn)
		fputs("\r\033[K", p->out);
	fprintf(p->out, "eval at step %lld: loss %.4f accuracy %.4f\n",
		(long long)step, loss, accuracy);
	p->drawn = 0;
	fflush(p->out);
}

void
dt_progress_end(struct dt_progress *p)
{
	if (p->out != NULL && p->tty && p->drawn)
		fputc('\n', p->out);
	p->drawn = 0;
	if (p->out != NULL)
		fflush(p->out);
}
