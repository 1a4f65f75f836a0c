/* SPDX-License-Identifier: MIT */
/* link.c - `plan --link RATE,LATENCY`: what one optimizer step would cost
 * on a given network link (plan.h, dt_plan_link_*).
 *
 * The gradient sync is costed as the ring all-reduce of Patarasuk and
 * Yuan ("Bandwidth optimal all-reduce algorithms for clusters of
 * workstations", J. Parallel Distrib. Comput. 69(2), 2009; the same
 * alpha-beta cost as Thakur, Rabenseifner and Gropp, "Optimization of
 * collective communication operations in MPICH", IJHPCA 19(1), 2005):
 * over p ranks each sends and receives 2 (p-1)/p of the n gradient bytes
 * in 2 (p-1) messages, so
 *
 *     t_comm = 2 (p-1)/p x n / rate + 2 (p-1) x latency.
 *
 * A parameter-server worker pushes its gradient and pulls the parameters:
 * (pushed + pulled) / rate + 2 x latency. The compute time is the
 * busiest rank's FLOPs per step over a GFLOP/s figure; of it, backward is
 * the plan's backward share (twice the forward FLOPs). With the gradient
 * all-reduce overlapped with backward at most the backward time of the
 * communication hides: hidden = min(t_comm, t_backward); without it none
 * does. */
#include "plan/plan.h"

#include <ctype.h>
#include <json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/jsonnum.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))

/* The number at the start of s, finite and > 0; *end after it. */
static int
positive(const char *s, double *v, const char **end)
{
	char *e;

	if (!isdigit((unsigned char)*s) && *s != '.')
		return 0;
	*v = strtod(s, &e);
	*end = e;
	return e != s && isfinite(*v) && *v > 0;
}

/* RATE: NUMBER, an optional SI prefix (k, m, g, t: powers of 1000, either
 * case), then bit(s) (or bps), byte(s) or B, and an optional "/s". */
static int
parse_rate(const char *s, size_t len, double *bytes_per_s)
{
	static const struct {
		const char *word;
		double bytes;
	} units[] = { { "bits", 0.125 }, { "bit", 0.125 }, { "bps", 0.125 },
		      { "bytes", 1 }, { "byte", 1 } };
	char buf[64];
	const char *p;
	double v, scale = 1, unit = 0;
	size_t n;

	if (len >= sizeof buf)
		return 0;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!positive(buf, &v, &p))
		return 0;
	switch (tolower((unsigned char)*p)) {
	case 'k': scale = 1e3; p++; break;
	case 'm': scale = 1e6; p++; break;
	case 'g': scale = 1e9; p++; break;
	case 't': scale = 1e12; p++; break;
	default: break;
	}
	n = strlen(p);
	if (n >= 2 && strcmp(p + n - 2, "/s") == 0)
		n -= 2;
	if (n == 1 && *p == 'B')
		unit = 1;
	for (size_t i = 0; unit == 0 && i < sizeof units / sizeof units[0];
	     i++)
		if (strlen(units[i].word) == n &&
		    strncasecmp(p, units[i].word, n) == 0)
			unit = units[i].bytes;
	*bytes_per_s = v * scale * unit;
	return unit > 0 && isfinite(*bytes_per_s);
}

/* LATENCY: NUMBER then s, ms, us or ns (zero allowed). */
static int
parse_latency(const char *s, double *seconds)
{
	static const struct {
		const char *word;
		double s;
	} units[] = { { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 },
		      { "ns", 1e-9 } };
	const char *p;
	char *e;
	double v;

	if (!isdigit((unsigned char)*s) && *s != '.')
		return 0;
	v = strtod(s, &e);
	p = e;
	if (p == s || !isfinite(v) || v < 0)
		return 0;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(p, units[i].word) == 0) {
			*seconds = v * units[i].s;
			return 1;
		}
	return 0;
}

enum dt_status
dt_plan_link_parse(const char *text, struct dt_plan_link *out,
		   struct dt_error *err)
{
	const char *comma = strchr(text, ',');

	if (comma == NULL || !parse_rate(text, (size_t)(comma - text),
					 &out->bytes_per_s) ||
	    !parse_latency(comma + 1, &out->latency_s))
		return dt_errorf(err, DT_ERR_USAGE, "--link: expected RATE,"
				 "LATENCY such as 10gbit,50us or 1gbit,0.2ms "
				 "(RATE: a number > 0, an optional k, m, g or "
				 "t, then bit or byte (B); LATENCY: a number "
				 "and s, ms, us or ns), got \"%s\"", text);
	return DT_OK;
}

static struct json_object *
member(const struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	json_object_object_get_ex(o, key, &x);
	return x;
}

static double
number(const struct json_object *o, const char *a, const char *b)
{
	struct json_object *x = member(o, a);

	if (b != NULL)
		x = member(x, b);
	return x != NULL ? json_object_get_double(x) : 0;
}

/* FLOPs of one optimizer step on the busiest rank: its stage's (one
 * tensor-parallel rank's share) FLOPs per sample x micro-batch x
 * micro-batches per step. */
static double
rank_flops(const struct json_object *desc)
{
	struct json_object *stages = member(desc, "stages");
	double per_sample = 0;
	size_t n = stages != NULL ? json_object_array_length(stages) : 0;

	for (size_t s = 0; s < n; s++) {
		double f = number(json_object_array_get_idx(stages, s),
				  "flops_per_sample", NULL);

		if (f > per_sample)
			per_sample = f;
	}
	if (per_sample == 0)
		per_sample = number(desc, "flops_per_sample", NULL);
	return per_sample * number(desc, "batch", "micro_batch") *
	       number(desc, "batch", "grad_accum_steps");
}

/* Seconds of the step's gradient sync on link (the models above). */
static double
comm_seconds(const struct json_object *desc, const struct dt_plan_link *link)
{
	const struct json_object *c = member(desc, "communication_per_rank");
	double sent = number(desc, "communication_per_rank", "sent_per_step");
	double got = number(desc, "communication_per_rank",
			    "received_per_step");
	double p = number(desc, "grid", "data_parallel") *
		   fmax(1, number(desc, "grid", "tensor_parallel"));

	if (member(c, "server_bytes_per_step") != NULL)
		return (sent + got) / link->bytes_per_s + 2 * link->latency_s;
	if (p <= 1 || sent <= 0)
		return 0;
	return sent / link->bytes_per_s + 2 * (p - 1) * link->latency_s;
}

void
dt_plan_link_estimate(struct json_object *desc,
		      const struct dt_plan_link *link, double gflops,
		      const char *gflops_source, int overlap,
		      const char *overlap_source)
{
	struct json_object *o = json_object_new_object();
	double flops = rank_flops(desc);
	double total = number(desc, "flops_per_sample", NULL);
	double fwd = number(desc, "fwd_flops_per_sample", NULL);
	double compute = flops / (gflops * 1e9);
	double backward = total > 0 ? compute * (total - fwd) / total : 0;
	double comm = comm_seconds(desc, link);
	double hidden = overlap ? fmin(comm, backward) : 0;
	int ps = member(member(desc, "communication_per_rank"),
			"server_bytes_per_step") != NULL;

	ADD(o, "rate_bytes_per_s", dt_json_float(link->bytes_per_s));
	ADD(o, "latency_s", dt_json_float(link->latency_s));
	ADD(o, "gflops", dt_json_float(gflops));
	ADD(o, "gflops_source", json_object_new_string(gflops_source));
	ADD(o, "flops_per_rank_step", dt_json_number(flops));
	ADD(o, "compute_s", dt_json_float(compute));
	ADD(o, "backward_s", dt_json_float(backward));
	ADD(o, "comm_s", dt_json_float(comm));
	ADD(o, "comm_model", json_object_new_string(
		    ps ? "parameter server: (pushed + pulled) / rate + 2 x "
		    "latency" : "ring: sent_per_step / rate + 2(p-1) x "
		    "latency (all-reduce: 2(p-1)/p x bytes; the exact "
		    "mode: (p-1)/p x 12 bytes a value)"));
	ADD(o, "overlap", json_object_new_boolean(overlap));
	ADD(o, "overlap_source", json_object_new_string(overlap_source));
	ADD(o, "hidden_s", dt_json_float(hidden));
	ADD(o, "exposed_s", dt_json_float(comm - hidden));
	ADD(o, "step_s", dt_json_float(compute + comm - hidden));
	ADD(desc, "link_estimate", o);
}

/* "12.3 ms", "4.56 s", "789 us". */
static void
seconds_text(char *buf, size_t size, double s)
{
	if (s >= 1)
		snprintf(buf, size, "%.3g s", s);
	else if (s >= 1e-3)
		snprintf(buf, size, "%.3g ms", s * 1e3);
	else
		snprintf(buf, size, "%.3g us", s * 1e6);
}

void
dt_plan_link_print(const struct json_object *desc, FILE *out)
{
	const struct json_object *o = member(desc, "link_estimate");
	char rate[32], lat[32], comp[32], bwd[32], comm[32], hid[32], exp[32],
	     step[32];
	double c;

	if (o == NULL)
		return;
	snprintf(rate, sizeof rate, "%.4g Gbit/s",
		 number(o, "rate_bytes_per_s", NULL) * 8e-9);
	seconds_text(lat, sizeof lat, number(o, "latency_s", NULL));
	seconds_text(comp, sizeof comp, number(o, "compute_s", NULL));
	seconds_text(bwd, sizeof bwd, number(o, "backward_s", NULL));
	seconds_text(comm, sizeof comm, number(o, "comm_s", NULL));
	seconds_text(hid, sizeof hid, number(o, "hidden_s", NULL));
	seconds_text(exp, sizeof exp, number(o, "exposed_s", NULL));
	seconds_text(step, sizeof step, number(o, "step_s", NULL));
	c = number(o, "comm_s", NULL);
	fprintf(out, "\non a link of %s and %s latency, per optimizer step "
		"(estimate):\n", rate, lat);
	fprintf(out, "  compute   %s (backward %s) at %.4g GFLOP/s, %s\n",
		comp, bwd, number(o, "gflops", NULL),
		json_object_get_string(member(o, "gflops_source")));
	fprintf(out, "  gradient sync %s (%s)\n", comm,
		json_object_get_string(member(o, "comm_model")));
	fprintf(out, "  hidden behind backward %s (overlap %s: %s), exposed "
		"%s (%.0f%% of the sync)\n", hid,
		json_object_get_boolean(member(o, "overlap")) ? "on" : "off",
		json_object_get_string(member(o, "overlap_source")), exp,
		c > 0 ? 100 * (number(o, "exposed_s", NULL) / c) : 0.0);
	fprintf(out, "  step      %s\n", step);
}
