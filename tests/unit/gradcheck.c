/* SPDX-License-Identifier: MIT */
/* gradcheck.c - the finite-difference gradient rig of the layer tests (see
 * gradcheck.h): one node alone through its vtable, a whole model through
 * graph.h, and the record of the types that passed. Central differences
 * (f(v + eps) - f(v - eps)) / 2 eps in float at the step each test gives,
 * against a tolerance of the form of numpy.isclose made symmetric: atol +
 * rtol * max(|a|, |n|). */
#include "gradcheck.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/rng.h"

const struct gc_layout gc_node_inputs = { .model_input = false,
					  .dout_key = 9 };
const struct gc_layout gc_model_input = { .model_input = true,
					  .dout_key = 3 };

/* huber_delta: what the huber loss's infer reads (l1_huber.c). */
const struct dt_job gc_job = { .path = "rig.yaml",
			       .model.huber_delta = 0.75 };
static const char *const rig_names[] = { "a", "b", "c", "d" };

void
gc_fill_uniform(float *a, int64_t n, uint64_t key)
{
	for (int64_t i = 0; i < n; i++)
		a[i] = 2.0f * dt_rng_uniform(1234, DT_RNG_SAMPLE, key,
					     (uint64_t)i) - 1.0f;
}

bool
gc_close_enough(double analytic, double numeric, double atol, double rtol)
{
	double scale = fmax(fabs(analytic), fabs(numeric));

	return fabs(analytic - numeric) <= atol + rtol * scale;
}

enum dt_status
gc_try(struct gc_rig *r, const struct gc_layout *lay,
       const struct dt_layer_ops *ops, const struct dt_layer_spec *spec,
       int n_in, const struct dt_shape *shapes, int64_t batch,
       struct dt_error *err)
{
	enum dt_status st;
	int64_t off = 0, scratch;

	memset(r, 0, sizeof *r);
	r->batch = batch;
	r->training = true;
	r->step = 3;
	r->first_sample = 5;
	r->n.ops = ops;
	r->n.kind = ops->kind;
	r->n.spec = *spec;
	snprintf(r->n.name, sizeof r->n.name, "%s",
		 spec->name[0] != '\0' ? spec->name : "n");
	r->n.n_inputs = n_in;
	for (int k = 0; k < n_in; k++) {
		r->n.inputs[k] = lay->model_input ? DT_NODE_INPUT : k;
		r->n.in_name[k] = lay->model_input ? NULL : rig_names[k];
		r->n.in_shape[k] = shapes[k];
		r->n.in_size[k] = dt_shape_size(&shapes[k]);
	}
	st = ops->infer(&r->n, &gc_job, err);
	if (st != DT_OK)
		return st;
	r->n.out_size = dt_shape_size(&r->n.out_shape);
	for (int t = 0; t < r->n.n_tensors; t++) {
		struct dt_param_tensor *pt = &r->n.tensor[t];

		pt->size = 1;
		for (int d = 0; d < pt->n_dims; d++)
			pt->size *= pt->shape[d];
		pt->offset = (size_t)off;
		off += pt->size;
	}
	r->n.n_params = off;
	r->params = dt_xalloc_floats((size_t)off + 1);	/* (n_params) */
	r->grads = dt_xalloc_floats((size_t)off + 1);	/* (n_params) */
	for (int t = 0; t < r->n.n_tensors; t++) {
		r->n.tensor[t].data = r->params + r->n.tensor[t].offset;
		r->n.tensor[t].grad = r->grads + r->n.tensor[t].offset;
	}
	gc_fill_uniform(r->params, off, 1);	/* nonzero biases too */
	for (int k = 0; k < n_in; k++) {
		size_t len = (size_t)(batch * r->n.in_size[k]);

		r->x[k] = dt_xalloc_floats(len);	/* (B, in_size[k]) */
		r->dx[k] = dt_xalloc_floats(len);
		gc_fill_uniform(r->x[k], batch * r->n.in_size[k],
				2 + (uint64_t)k);
	}
	r->n.out = dt_xalloc_floats((size_t)(batch * r->n.out_size));
	r->g = dt_xalloc_floats((size_t)(batch * r->n.out_size));
	r->n.dout = r->g;
	gc_fill_uniform(r->g, batch * r->n.out_size, lay->dout_key);
	scratch = ops->scratch_floats ? ops->scratch_floats(&r->n) : 0;
	if (scratch > 0)	/* (B, scratch_floats) */
		r->n.scratch = dt_xalloc_floats((size_t)(batch * scratch));
	r->targets = dt_xalloc_floats((size_t)(batch * r->n.out_size));
	gc_fill_uniform(r->targets, batch * r->n.out_size, 10);
	int64_t last = r->n.out_shape.n_dims > 0
			       ? r->n.out_shape.dim[r->n.out_shape.n_dims - 1]
			       : 1;
	int64_t n_labels = batch * r->n.out_size / last;

	r->labels = dt_xcalloc((size_t)n_labels, sizeof *r->labels);
	for (int64_t i = 0; i < n_labels; i++)
		r->labels[i] = (int32_t)((i * 7 + 1) % last);
	return DT_OK;
}

void
gc_init(struct gc_rig *r, const struct gc_layout *lay,
	const struct dt_layer_ops *ops, const struct dt_layer_spec *spec,
	int n_in, const struct dt_shape *shapes, int64_t batch)
{
	struct dt_error err;
	enum dt_status st = gc_try(r, lay, ops, spec, n_in, shapes, batch,
				   &err);

	ck_assert_msg(st == DT_OK, "%s", err.msg);
}

void
gc_free(struct gc_rig *r)
{
	free(r->params);
	free(r->grads);
	for (int k = 0; k < DT_NODE_MAX_INPUTS; k++) {
		free(r->x[k]);
		free(r->dx[k]);
	}
	free(r->n.out);
	free(r->g);
	free(r->n.scratch);
	free(r->labels);
	free(r->targets);
	memset(r, 0, sizeof *r);
}

/* A regression loss, which takes r->targets. */
static bool
takes_targets(const struct gc_rig *r)
{
	return r->n.ops == &dt_layer_mse || r->n.ops == &dt_layer_l1 ||
	       r->n.ops == &dt_layer_huber;
}

static bool
is_loss(const struct gc_rig *r)
{
	return r->n.ops == &dt_layer_softmax_xent || takes_targets(r);
}

struct dt_pass
gc_pass(const struct gc_rig *r)
{
	struct dt_pass p = {
		.batch = r->batch,
		.training = r->training,
		.grad_scale = GC_SCALE,
		.seed = 77,
		.step = r->step,
		.first_sample = r->first_sample,
		.pool = r->pool,
	};

	if (r->n.ops == &dt_layer_softmax_xent)
		p.labels = r->labels;
	if (takes_targets(r))
		p.targets = r->targets;
	return p;
}

void
gc_forward(struct gc_rig *r, struct dt_pass *p)
{
	const float *in[DT_NODE_MAX_INPUTS];

	for (int k = 0; k < r->n.n_inputs; k++)
		in[k] = r->x[k];
	r->n.ops->forward(&r->n, p, in);
}

double
gc_objective(struct gc_rig *r)
{
	struct dt_pass p = gc_pass(r);
	double sum = 0.0;

	gc_forward(r, &p);
	if (is_loss(r))
		return p.loss_sum * GC_SCALE;
	for (int64_t i = 0; i < r->batch * r->n.out_size; i++)
		sum += (double)r->g[i] * r->n.out[i];
	return sum;
}

void
gc_backward(struct gc_rig *r, bool with_dx, bool add)
{
	const float *in[DT_NODE_MAX_INPUTS];
	float *din[DT_NODE_MAX_INPUTS];
	bool din_add[DT_NODE_MAX_INPUTS];
	struct dt_pass p = gc_pass(r);

	memset(r->grads, 0, (size_t)r->n.n_params * sizeof(float));
	for (int k = 0; k < r->n.n_inputs; k++) {
		in[k] = r->x[k];
		din[k] = with_dx ? r->dx[k] : NULL;
		din_add[k] = add;
	}
	r->n.ops->forward(&r->n, &p, in);
	r->n.ops->backward(&r->n, &p, in, din, din_add);
}

double
gc_central_difference(struct gc_rig *r, float *v, double eps)
{
	float keep = *v;
	double up, down;

	*v = keep + (float)eps;
	up = gc_objective(r);
	*v = keep - (float)eps;
	down = gc_objective(r);
	*v = keep;
	return (up - down) / (2.0 * eps);
}

/* ---- the record ------------------------------------------------------ */

static char record_path[4096];	/* "" until gc_record_to */

void
gc_record_path(const char *name, char *buf, size_t size)
{
	const char *top = getenv("top_builddir");

	snprintf(buf, size, "%s/tests/unit/%s.gradcheck",
		 top != NULL && top[0] != '\0' ? top : ".", name);
}

bool
gc_record_to(const char *name)
{
	int fd;

	gc_record_path(name, record_path, sizeof record_path);
	fd = open(record_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "%s: %s; the checked types are not recorded\n",
			record_path, strerror(errno));
		record_path[0] = '\0';
		return false;
	}
	close(fd);
	return true;
}

/* Appends kind and a newline to the record: one write of a short line in
 * append mode, so forked tests do not interleave. */
static void
record(const char *kind)
{
	char line[128];
	int fd, n;

	if (record_path[0] == '\0')
		return;
	n = snprintf(line, sizeof line, "%s\n", kind);
	fd = open(record_path, O_WRONLY | O_APPEND);
	ck_assert_msg(fd >= 0, "%s: %s", record_path, strerror(errno));
	ck_assert_int_eq(write(fd, line, (size_t)n), n);
	close(fd);
}

/* ---- one node -------------------------------------------------------- */

void
gc_check(struct gc_rig *r, const struct gc_tol *tol)
{
	float *alone[DT_NODE_MAX_INPUTS] = { NULL };
	bool with_dx = !tol->no_input;
	double worst = 0.0;
	int64_t checked = 0;
	int bad = 0;

	gc_backward(r, with_dx, false);
	for (int k = 0; with_dx && k < r->n.n_inputs; k++) {
		int64_t len = r->batch * r->n.in_size[k];

		alone[k] = dt_xalloc_floats((size_t)len);
		memcpy(alone[k], r->dx[k], (size_t)len * sizeof(float));
	}
	for (int t = 0; t < r->n.n_tensors; t++) {
		struct dt_param_tensor *pt = &r->n.tensor[t];

		for (int64_t i = 0; i < pt->size; i++) {
			double num = pt->buffer ? 0.0 :
				     gc_central_difference(r, &pt->data[i],
							   tol->eps);

			checked += !pt->buffer;
			worst = fmax(worst, fabs(pt->grad[i] - num));
			if (!gc_close_enough(pt->grad[i], num, tol->atol,
					     tol->rtol) && bad++ < 5)
				fprintf(stderr, "%s %s[%lld]: backward %g, "
					"numeric %g\n", r->n.kind, pt->name,
					(long long)i, (double)pt->grad[i], num);
		}
	}
	for (int k = 0; with_dx && k < r->n.n_inputs; k++)
		for (int64_t i = 0; i < r->batch * r->n.in_size[k]; i++) {
			double num = gc_central_difference(r, &r->x[k][i],
							   tol->eps);

			checked++;
			worst = fmax(worst, fabs(alone[k][i] - num));
			if (!gc_close_enough(alone[k][i], num, tol->atol,
					     tol->rtol) && bad++ < 5)
				fprintf(stderr, "%s input %d[%lld]: backward "
					"%g, numeric %g\n", r->n.kind, k,
					(long long)i, (double)alone[k][i],
					num);
		}
	ck_assert_int_eq(bad, 0);
	if (tol->max_err > 0.0)
		ck_assert_msg(worst < tol->max_err, "%s: worst error %g",
			      r->n.kind, worst);

	for (int k = 0; with_dx && k < r->n.n_inputs; k++)
		for (int64_t i = 0; i < r->batch * r->n.in_size[k]; i++)
			r->dx[k][i] = 0.25f;
	if (with_dx)
		gc_backward(r, true, true);
	for (int k = 0; with_dx && k < r->n.n_inputs; k++) {
		for (int64_t i = 0; i < r->batch * r->n.in_size[k]; i++)
			ck_assert_float_eq_tol(r->dx[k][i],
					       0.25f + alone[k][i], 1e-6f);
		free(alone[k]);
	}
	ck_assert_msg(checked > 0, "%s: nothing to check", r->n.kind);
	record(r->n.kind);
}

/* ---- a whole model --------------------------------------------------- */

/* The model's loss for x, from eval, divided by div. */
static double
model_loss(struct dt_model *m, const float *x, const int32_t *labels,
	   const float *targets, int64_t batch, double div)
{
	double loss;

	if (targets != NULL)
		dt_model_eval_targets(m, x, targets, batch, &loss);
	else
		dt_model_eval(m, x, labels, batch, &loss, NULL);
	return loss / div;
}

int
gc_model_check(struct dt_model *m, const float *x, const int32_t *labels,
	       const float *targets, int64_t batch,
	       const struct gc_model_tol *tol, int *skipped)
{
	float *params = dt_model_params(m), *grads = dt_model_grads(m);
	size_t n = dt_model_n_params(m);
	size_t stride = tol->stride > 1 ? tol->stride : 1;
	float scale = tol->sum ? 1.0f : 1.0f / (float)batch;
	double div = tol->sum ? 1.0 : (double)batch;
	double up, down, mid;
	int bad = 0;

	dt_model_zero_grads(m);
	if (targets != NULL)
		dt_model_train_step_targets(m, x, targets, batch, scale, NULL);
	else
		dt_model_train_step(m, x, labels, batch, scale, NULL, NULL);
	mid = model_loss(m, x, labels, targets, batch, div);
	if (skipped != NULL)
		*skipped = 0;
	for (size_t i = 0; i < n; i += stride) {
		float keep = params[i];

		params[i] = keep + (float)tol->eps;
		up = model_loss(m, x, labels, targets, batch, div);
		params[i] = keep - (float)tol->eps;
		down = model_loss(m, x, labels, targets, batch, div);
		params[i] = keep;
		double num = (up - down) / (2.0 * tol->eps);
		double right = (up - mid) / tol->eps;
		double left = (mid - down) / tol->eps;

		if (gc_close_enough(grads[i], num, tol->atol, tol->rtol))
			continue;
		if (tol->kinks &&
		    (gc_close_enough(grads[i], left, tol->atol, tol->rtol) ||
		     gc_close_enough(grads[i], right, tol->atol, tol->rtol))) {
			if (skipped != NULL)
				(*skipped)++;
			continue;
		}
		if (bad++ < 5)
			fprintf(stderr, "model param %zu: backward %g, "
				"numeric %g\n", i, (double)grads[i], num);
	}
	return bad;
}
