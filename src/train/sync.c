/* SPDX-License-Identifier: MIT */
/* sync.c - the gradient-sync seam (sync.h) and its all-reduce
 * implementations: float, exact (double), and both over pipeline stages.
 *
 * Float: the micro-batches' backward passes add into the float gradient
 * arena, and one MPI_SUM all-reduce over the summing ranks adds the
 * ranks' arenas. Exact (dt_plan_exact_accum): each micro-batch's float
 * gradient is added to a double accumulator, the accumulators are summed
 * in double (MPI_DOUBLE, 8 bytes a value) and rounded to float once, so
 * the gradient does not depend on how the global batch is split.
 *
 * The squared norm for clipping is each tensor's sum of squares in
 * double, added in model order: a rank holding the whole model computes
 * it from its own gradient; a stage puts its tensors' squares at their
 * model indices in the step report (on its rank of data- and tensor-
 * parallel index 0, zeros elsewhere), the report's sum brings every
 * stage's, and the same model-order sum follows. Adding zeros and
 * reordering nothing, both give the same bits. */
#include "train/sync.h"

#include <stdlib.h>
#include <string.h>

#include "dist/hier.h"
#include "train/progress.h"
#include "train/sync_priv.h"
#include "util/alloc.h"

_Static_assert((int)DT_HIER_AUTO == DT_HIERARCHICAL_AUTO &&
	       (int)DT_HIER_ON == DT_HIERARCHICAL_ON &&
	       (int)DT_HIER_OFF == DT_HIERARCHICAL_OFF,
	       "parallel.hierarchical's words are dist/hier.h's modes");

/* Sum of squares of n floats in double, in eight lanes. */
static double
tensor_sq(const float *g, int64_t n)
{
	double lane[8] = { 0 }, total = 0;
	int64_t i = 0;

	for (; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			lane[k] += (double)g[i + k] * g[i + k];
	for (int k = 0; k < 8; k++)
		total += lane[k];
	for (; i < n; i++)
		total += (double)g[i] * g[i];
	return total;
}

/* Writes the squared norm of each of the model's trained tensors at
 * norm2[first + its index in the model]. */
static void
own_norms(struct dt_model *m, double *norm2, int first)
{
	const float *g = dt_model_grads(m);
	size_t n_trained = dt_model_n_trained(m);

	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset < n_trained)
			norm2[first + t] = tensor_sq(g + ti.offset, ti.size);
	}
}

double
dt_sync_local_norm2(struct dt_grad_sync *s)
{
	struct dt_model *m = s->cfg.model;
	double total = 0;

	for (int t = 0; t < dt_model_n_tensors(m); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, t, &ti);
		if (ti.offset >= dt_model_n_trained(m))
			continue;
		total += tensor_sq(dt_model_grads(m) + ti.offset, ti.size);
	}
	return total;
}

static double
shared_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	double total = 0;

	for (int t = 0; t < s->cfg.n_tensors_all; t++)
		total += report->tensor_norm2[t];
	return total;
}

static void
no_op(struct dt_grad_sync *s)
{
	(void)s;
}

static void
exact_step_begin(struct dt_grad_sync *s)
{
	memset(s->acc, 0, s->n * sizeof *s->acc);
}

/* Each micro-batch's gradient alone in the float arena. */
static void
exact_backward_begin(struct dt_grad_sync *s)
{
	memset(dt_model_grads(s->cfg.model), 0, s->n * sizeof(float));
}

static void
exact_backward_end(struct dt_grad_sync *s)
{
	const float *restrict g = dt_model_grads(s->cfg.model);
	double *restrict a = s->acc;

	dt_model_tp_prepare_grads(s->cfg.model);
	for (size_t i = 0; i < s->n; i++)
		a[i] += (double)g[i];
}

static enum dt_status
float_begin(struct dt_grad_sync *s, int bucket, struct dt_error *err)
{
	struct dt_comm *c = s->cfg.sum_comm;
	uint64_t b0 = dt_comm_bytes_sent(c);
	enum dt_status st;

	(void)bucket;
	dt_model_tp_prepare_grads(s->cfg.model);
	st = dt_comm_allreduce_sum_f32(c, dt_model_grads(s->cfg.model), s->n,
				       err);
	s->bytes += dt_comm_bytes_sent(c) - b0;
	return st;
}

static enum dt_status
exact_begin(struct dt_grad_sync *s, int bucket, struct dt_error *err)
{
	struct dt_comm *c = s->cfg.sum_comm;
	float *g = dt_model_grads(s->cfg.model);
	uint64_t b0 = dt_comm_bytes_sent(c);
	enum dt_status st;

	(void)bucket;
	st = dt_comm_allreduce_sum_f64(c, s->acc, s->n, err);
	s->bytes += dt_comm_bytes_sent(c) - b0;
	for (size_t i = 0; i < s->n; i++)
		g[i] = (float)s->acc[i];
	return st;
}

/* Today every bucket's sum is done in begin. */
static enum dt_status
whole_finish(struct dt_grad_sync *s, double step_loss,
	     struct dt_step_report *report, struct dt_error *err)
{
	(void)s;
	(void)step_loss;
	(void)report;
	(void)err;
	return DT_OK;
}

static enum dt_status
stage_finish(struct dt_grad_sync *s, double step_loss,
	     struct dt_step_report *report, struct dt_error *err)
{
	(void)step_loss;
	(void)err;
	memset(report->tensor_norm2, 0,
	       (size_t)s->cfg.n_tensors_all * sizeof *report->tensor_norm2);
	if (s->cfg.norm_owner)
		own_norms(s->cfg.model, report->tensor_norm2,
			  s->cfg.first_tensor);
	return DT_OK;
}

static double
whole_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	(void)report;
	return dt_sync_local_norm2(s);
}

static void
optim_apply(struct dt_grad_sync *s, float lr)
{
	dt_optim_step(s->cfg.optim, dt_model_params(s->cfg.model),
		      dt_model_grads(s->cfg.model), lr);
}

static const struct dt_grad_sync_ops allreduce_ops = {
	"allreduce", no_op, no_op, no_op, float_begin, whole_finish,
	whole_norm2, optim_apply,
};
static const struct dt_grad_sync_ops exact_ops = {
	"exact", exact_step_begin, exact_backward_begin, exact_backward_end,
	exact_begin, whole_finish, whole_norm2, optim_apply,
};
static const struct dt_grad_sync_ops stage_allreduce_ops = {
	"stages", no_op, no_op, no_op, float_begin, stage_finish,
	shared_norm2, optim_apply,
};
static const struct dt_grad_sync_ops stage_exact_ops = {
	"stages-exact", exact_step_begin, exact_backward_begin,
	exact_backward_end, exact_begin, stage_finish, shared_norm2,
	optim_apply,
};

enum dt_status
dt_grad_sync_new(const struct dt_grad_sync_cfg *cfg,
		 struct dt_grad_sync **out, struct dt_error *err)
{
	struct dt_grad_sync *s = dt_xcalloc(1, sizeof *s);
	int exact = cfg->plan->exact_accum;
	enum dt_status st;

	s->cfg = *cfg;
	s->n = dt_model_n_trained(cfg->model);
	s->workers = cfg->world;
	*out = s;
	if (cfg->job->parallel.sync == DT_SYNC_PARAMETER_SERVER)
		return dt_sync_ps_init(s, err);
	if (cfg->split)
		s->ops = exact ? &stage_exact_ops : &stage_allreduce_ops;
	else
		s->ops = exact ? &exact_ops : &allreduce_ops;
	if (exact)
		s->acc = dt_xcalloc(s->n + 1, sizeof *s->acc);
	/* Collective over sum_comm: the per-host sum where it applies. */
	st = dt_comm_hier_new(cfg->sum_comm,
			      (enum dt_hier_mode)cfg->job->parallel.hierarchical,
			      &s->hier, &s->hosts, &s->max_per_host, err);
	if (s->hier != NULL)
		s->cfg.sum_comm = s->hier;
	return st;
}

void
dt_grad_sync_free(struct dt_grad_sync *s)
{
	if (s == NULL)
		return;
	dt_ps_free(s->ps);
	dt_comm_free(s->hier);
	free(s->acc);
	free(s);
}

int
dt_grad_sync_n_norms(const struct dt_grad_sync *s)
{
	return s->ops->finish == stage_finish ? s->cfg.n_tensors_all : 0;
}

int
dt_grad_sync_lazy(const struct dt_grad_sync *s)
{
	return s->lazy;
}

struct dt_ps *
dt_grad_sync_servers(const struct dt_grad_sync *s)
{
	return s->ps;
}

struct dt_comm *
dt_grad_sync_workers(const struct dt_grad_sync *s)
{
	return s->workers;
}

int
dt_grad_sync_hier(const struct dt_grad_sync *s, int *hosts, int *max_per_host)
{
	*hosts = s->hosts > 0 ? s->hosts : 1;
	*max_per_host = s->max_per_host > 0 ? s->max_per_host : 1;
	return s->hier != NULL;
}

uint64_t
dt_grad_sync_bytes(const struct dt_grad_sync *s)
{
	return s->bytes;
}

void
dt_grad_sync_step_begin(struct dt_grad_sync *s)
{
	s->ops->step_begin(s);
}

void
dt_grad_sync_backward_begin(struct dt_grad_sync *s)
{
	s->ops->backward_begin(s);
}

void
dt_grad_sync_backward_end(struct dt_grad_sync *s)
{
	s->ops->backward_end(s);
}

enum dt_status
dt_grad_sync_begin(struct dt_grad_sync *s, int bucket, struct dt_error *err)
{
	double t = dt_now();
	enum dt_status st = s->ops->begin(s, bucket, err);

	s->begin_s += dt_now() - t;
	return st;
}

double
dt_grad_sync_take_begin(struct dt_grad_sync *s)
{
	double t = s->begin_s;

	s->begin_s = 0;
	return t;
}

enum dt_status
dt_grad_sync_finish(struct dt_grad_sync *s, double step_loss,
		    struct dt_step_report *report, struct dt_error *err)
{
	return s->ops->finish(s, step_loss, report, err);
}

double
dt_grad_sync_norm2(struct dt_grad_sync *s, const struct dt_step_report *report)
{
	return s->ops->norm2(s, report);
}

void
dt_grad_sync_apply(struct dt_grad_sync *s, float lr)
{
	s->ops->apply(s, lr);
}
