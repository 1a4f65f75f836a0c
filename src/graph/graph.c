/* SPDX-License-Identifier: MIT */
/* graph.c - building the node list from a job, laying out the arenas,
 * initialising parameters, and running forward and backward over the
 * nodes in order (see graph.h and layer.h). */
#include "graph/graph.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/init.h"
#include "graph/kern.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "graph/recompute.h"
#include "graph/stage.h"
#include "util/alloc.h"
#include "util/rng.h"


int64_t
dt_shape_size(const struct dt_shape *s)
{
	int64_t size = 1;

	for (int i = 0; i < s->n_dims; i++)
		size *= s->dim[i];
	return size;
}

enum dt_status
dt_node_errorf(const struct dt_node *n, const struct dt_job *job,
	       struct dt_error *err, const char *fmt, ...)
{
	const char *file = job->path[0] != '\0' ? job->path : "<job>";
	char msg[sizeof err->msg], name[DT_LAYER_NAME_MAX + 4] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n->spec.name[0] != '\0')
		snprintf(name, sizeof name, " (%s)", n->spec.name);
	if (n->spec.pos.line > 0)
		return dt_errorf(err, DT_ERR_JOB,
				 "%s:%d:%d: model.layers.%d%s: %s", file,
				 n->spec.pos.line, n->spec.pos.col, n->layer,
				 name, msg);
	return dt_errorf(err, DT_ERR_JOB, "%s: model.layers.%d%s: %s", file,
			 n->layer, name, msg);
}

char *
dt_shape_format(const struct dt_shape *s, char *buf, size_t size)
{
	size_t len = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	for (int i = 0; i < s->n_dims && len < size; i++) {
		int w = snprintf(buf + len, size - len, "%s%lld",
				 i == 0 ? "(" : ", ", (long long)s->dim[i]);

		if (w < 0)
			break;
		len += (size_t)w;
	}
	if (len < size)
		snprintf(buf + len, size - len, "%s", s->n_dims ? ")" : "()");
	return buf;
}

const char *
dt_node_input_name(const struct dt_node *n, int k)
{
	return n->in_name[k] != NULL ? n->in_name[k] : "input";
}

bool
dt_shape_chw(const struct dt_shape *s, int64_t *c, int64_t *h, int64_t *w)
{
	if (s->n_dims == 2) {
		*c = 1;
		*h = s->dim[0];
		*w = s->dim[1];
		return true;
	}
	if (s->n_dims == 3) {
		*c = s->dim[0];
		*h = s->dim[1];
		*w = s->dim[2];
		return true;
	}
	return false;
}

/* Whether job layer spec becomes two nodes, the layer's and an activation
 * after it (an `activation:` on anything but an activation layer). */
static bool
has_activation_node(const struct dt_layer_spec *spec)
{
	return spec->activation != DT_ACT_NONE &&
	       spec->kind != DT_LAYER_ACTIVATION;
}

/* Number of nodes job->model becomes: one per layer, one more for each
 * `activation:`, one for the loss. */
static int
count_nodes(const struct dt_job *job)
{
	int n = 1;

	for (int i = 0; i < job->model.n_layers; i++)
		n += has_activation_node(&job->model.layers[i]) ? 2 : 1;
	return n;
}

/* Points input k of node n (made from job layer i) at the node that gives
 * the output of the layer the job names, "input" meaning the model input;
 * last[j] is the node holding job layer j's output. Only earlier layers
 * can be named, which keeps the node list in topological order. */
static enum dt_status
resolve_input(struct dt_model *m, const struct dt_job *job,
	      struct dt_node *n, int i, int k, const int *last,
	      struct dt_error *err)
{
	const char *want = n->spec.inputs[k];

	if (strcmp(want, "input") == 0) {
		n->inputs[k] = DT_NODE_INPUT;
		n->in_name[k] = "input";
		return DT_OK;
	}
	for (int j = 0; j < i; j++)
		if (strcmp(job->model.layers[j].name, want) == 0) {
			n->inputs[k] = last[j];
			n->in_name[k] = m->nodes[last[j]].spec.name;
			return DT_OK;
		}
	for (int j = i; j < job->model.n_layers; j++)
		if (strcmp(job->model.layers[j].name, want) == 0)
			return dt_node_errorf(n, job, err,
					      "inputs.%d: \"%s\" is "
					      "model.layers.%d, %s; a layer "
					      "can only read layers before it",
					      k, want, j,
					      j == i ? "this layer itself"
						     : "which comes later");
	return dt_node_errorf(n, job, err,
			      "inputs.%d: no layer named \"%s\" (\"input\" "
			      "is the model input)", k, want);
}

/* Fills the node list from job, without shapes: each layer's inputs are
 * those it names, or the previous layer (the model input for the first);
 * the loss reads the last layer. */
static enum dt_status
make_nodes(struct dt_model *m, const struct dt_job *job, struct dt_error *err)
{
	int k = 0, last[DT_JOB_MAX_LAYERS];
	enum dt_status st = DT_OK;

	for (int i = 0; i < job->model.n_layers && st == DT_OK; i++) {
		const struct dt_layer_spec *spec = &job->model.layers[i];
		struct dt_node *n = &m->nodes[k];

		n->ops = dt_layer_for_kind(spec->kind);
		n->layer = i;
		n->spec = *spec;
		snprintf(n->name, sizeof n->name, "%s", spec->name);
		if (n->ops == NULL) {
			st = dt_node_errorf(n, job, err,
					    "layer kind %d is not known to the "
					    "model builder", (int)spec->kind);
			break;
		}
		if (spec->n_inputs < 0 || spec->n_inputs > DT_NODE_MAX_INPUTS) {
			st = dt_node_errorf(n, job, err,
					    "inputs: 1 to %d names, found %d",
					    DT_NODE_MAX_INPUTS, spec->n_inputs);
			break;
		}
		if (spec->n_inputs == 0) {
			n->n_inputs = 1;
			n->inputs[0] = i == 0 ? DT_NODE_INPUT : last[i - 1];
			n->in_name[0] = i == 0
				? "input" : m->nodes[last[i - 1]].spec.name;
		} else {
			n->n_inputs = spec->n_inputs;
			for (int in = 0; in < spec->n_inputs && st == DT_OK;
			     in++)
				st = resolve_input(m, job, n, i, in, last, err);
		}
		n->tie_node = -1;
		if (st == DT_OK && spec->tie[0] != '\0' &&
		    n->ops == &dt_layer_dense)
			st = dt_graph_resolve_tie(m, job, k, i, last, err);
		last[i] = k++;
		if (st == DT_OK && has_activation_node(spec)) {
			n = &m->nodes[k];
			n->ops = &dt_layer_activation;
			n->layer = i;
			n->spec = *spec;
			snprintf(n->name, sizeof n->name, "%s.%s", spec->name,
				 dt_activation_name(spec->activation));
			n->n_inputs = 1;
			n->inputs[0] = k - 1;
			n->in_name[0] = m->nodes[k - 1].spec.name;
			n->tie_node = -1;
			last[i] = k++;
		}
	}
	if (st != DT_OK)
		return st;

	struct dt_node *loss = &m->nodes[k];

	loss->ops = dt_layer_for_loss(job->model.loss);
	loss->layer = job->model.n_layers - 1;
	loss->spec = job->model.layers[loss->layer];
	snprintf(loss->name, sizeof loss->name, "loss");
	if (loss->ops == NULL)
		return dt_errorf(err, DT_ERR_JOB,
				 "%s: model.loss: loss kind %d is not known to "
				 "the model builder",
				 job->path[0] ? job->path : "<job>",
				 (int)job->model.loss);
	loss->n_inputs = 1;
	loss->tie_node = -1;
	loss->inputs[0] = k - 1;
	loss->in_name[0] = loss->spec.name;
	m->loss = job->model.loss;
	/* fused attention keeps nothing (T, T) that recompute could drop */
	for (int i = 0; i < m->n_nodes; i++) {
		struct dt_node *n = &m->nodes[i];

		n->attn_fused = job->model.attention == DT_ATTENTION_FUSED &&
				n->ops == &dt_layer_attention;
		n->recompute = job->model.recompute == DT_RECOMPUTE_ATTENTION &&
			       n->ops->work_floats != NULL && !n->attn_fused;
	}
	assert(k + 1 == m->n_nodes);
	return DT_OK;
}

static enum dt_status
check_input_shape(struct dt_model *m, const struct dt_job *job,
		  struct dt_error *err)
{
	const char *file = job->path[0] != '\0' ? job->path : "<job>";
	int64_t size = 1;

	if (job->model.n_input_dims < 1 ||
	    job->model.n_input_dims > DT_SHAPE_MAX_DIMS)
		return dt_errorf(err, DT_ERR_JOB,
				 "%s: model.input_shape: needs 1 to %d "
				 "dimensions, found %d", file,
				 DT_SHAPE_MAX_DIMS, job->model.n_input_dims);
	m->input_shape.n_dims = job->model.n_input_dims;
	for (int i = 0; i < job->model.n_input_dims; i++) {
		int64_t d = job->model.input_shape[i];

		if (d < 1 || d > INT_MAX / size)
			return dt_errorf(err, DT_ERR_JOB,
					 "%s: model.input_shape.%d: must be "
					 "in [1, %d] and the product below "
					 "2^31, found %lld", file, i,
					 INT_MAX, (long long)d);
		m->input_shape.dim[i] = d;
		size *= d;
	}
	m->input_size = size;
	return DT_OK;
}

/* Runs shape inference over the nodes, in order, checks the sizes BLAS
 * will see (int) and the parameter count, and chooses each weight's init
 * rule (init.c). */
static enum dt_status
infer_shapes(struct dt_model *m, const struct dt_job *job,
	     struct dt_error *err)
{
	size_t n_params = 0;

	for (int i = 0; i < m->n_nodes; i++) {
		struct dt_node *n = &m->nodes[i];
		enum dt_status st;

		for (int k = 0; k < n->n_inputs; k++) {
			int src = n->inputs[k];

			assert(src < i);
			if (src == DT_NODE_INPUT) {
				n->in_shape[k] = m->input_shape;
			} else {
				n->in_shape[k] = m->nodes[src].out_shape;
				m->nodes[src].n_consumers++;
			}
			n->in_size[k] = dt_shape_size(&n->in_shape[k]);
		}
		n->kind = n->ops->kind;
		int lo = n->ops->min_inputs > 0 ? n->ops->min_inputs : 1;
		int hi = n->ops->max_inputs > 0 ? n->ops->max_inputs : 1;

		if (n->n_inputs < lo || n->n_inputs > hi) {
			if (lo == hi)
				return dt_node_errorf(n, job, err,
						      "%s takes %d input%s, "
						      "found %d", n->kind, lo,
						      lo == 1 ? "" : "s",
						      n->n_inputs);
			return dt_node_errorf(n, job, err,
					      "%s takes %d to %d inputs, "
					      "found %d", n->kind, lo, hi,
					      n->n_inputs);
		}
		st = n->ops->infer(n, job, err);
		if (st == DT_OK && n->tie_src != NULL)
			st = dt_graph_check_tie(m, job, i, err);
		if (st != DT_OK)
			return st;

		int64_t size = 1;

		for (int d = 0; d < n->out_shape.n_dims; d++) {
			if (n->out_shape.dim[d] < 1 ||
			    n->out_shape.dim[d] > INT_MAX / size)
				return dt_node_errorf(n, job, err,
						      "output of %s: empty, or "
						      "more than 2^31 values "
						      "per sample", n->name);
			size *= n->out_shape.dim[d];
		}
		n->out_size = size;

		n->n_params = 0;
		for (int t = 0; t < n->n_tensors; t++) {
			struct dt_param_tensor *pt = &n->tensor[t];
			int64_t ts = 1;

			for (int d = 0; d < pt->n_dims; d++)
				if (__builtin_mul_overflow(ts, pt->shape[d],
							   &ts))
					ts = INT64_MAX;
			pt->size = ts;
			n->n_params += ts;
			if (pt->buffer)
				continue;	/* laid out after the trained */
			pt->offset = n_params;
			if (ts == INT64_MAX ||
			    __builtin_add_overflow(n_params, (size_t)ts,
						   &n_params) ||
			    n_params > SIZE_MAX / sizeof(float))
				return dt_node_errorf(n, job, err,
						      "too many parameters");
		}
		n->needs_grad = n->n_params > 0;
		for (int k = 0; k < n->n_inputs; k++)
			if (n->inputs[k] != DT_NODE_INPUT &&
			    m->nodes[n->inputs[k]].needs_grad)
				n->needs_grad = true;
		m->n_tensors += n->n_tensors;
		m->fwd_flops += n->ops->fwd_flops(n);
	}
	/* Buffers (running statistics) go after every trained tensor, so the
	 * optimizer and the gradient sync cover one prefix of the arena. */
	m->n_trained = n_params;
	for (int i = 0; i < m->n_nodes; i++)
		for (int t = 0; t < m->nodes[i].n_tensors; t++) {
			struct dt_param_tensor *pt = &m->nodes[i].tensor[t];

			if (!pt->buffer)
				continue;
			pt->offset = n_params;
			if (__builtin_add_overflow(n_params, (size_t)pt->size,
						   &n_params) ||
			    n_params > SIZE_MAX / sizeof(float))
				return dt_node_errorf(&m->nodes[i], job, err,
						      "too many parameters");
		}
	m->n_params = n_params;
	/* The rules the tensors are drawn by, now that every node's readers
	 * are counted (init.c finds residual branches by them). */
	dt_model_choose_init(m, job);
	return DT_OK;
}

/* Whether backward writes a gradient for node n's output: some node reads
 * the output, and n leads back to parameters. */
static bool
has_dout(const struct dt_node *n)
{
	return n->n_consumers > 0 && n->needs_grad;
}

int64_t
dt_node_out_floats(const struct dt_node *n)
{
	if (n->out_cols <= 0)
		return n->out_size;
	return n->out_size / n->out_shape.dim[n->out_shape.n_dims - 1] *
	       n->out_cols;
}

/* Activation floats per sample of node n: output, output gradient, and
 * the layer's scratch. */
int64_t
dt_node_act_floats(const struct dt_node *n, int64_t *scratch)
{
	*scratch = n->ops->scratch_floats ? n->ops->scratch_floats(n) : 0;
	return dt_node_out_floats(n) * (has_dout(n) ? 2 : 1) + *scratch;
}

int64_t
dt_graph_loss_in_place(const struct dt_model *m, const int *stage_of)
{
	const struct dt_node *loss = &m->nodes[m->n_nodes - 1];
	const int src = loss->inputs[0];
	const struct dt_node *n;

	if (!loss->ops->loss_in_place || loss->n_inputs != 1 ||
	    src == DT_NODE_INPUT)
		return 0;
	n = &m->nodes[src];
	if (n->n_consumers != 1 || !n->ops->bwd_reads_no_out ||
	    n->fused_act != DT_ACT_NONE || n->act_fused ||
	    n->fused_pool != NULL ||
	    (stage_of != NULL && stage_of[src] != stage_of[m->n_nodes - 1]))
		return 0;
	return dt_node_out_floats(loss) +
	       (has_dout(n) ? dt_node_out_floats(n) : 0);
}

/* The activation floats per sample of the whole model as one stage: the
 * kept nodes' buffers, less what the loss saves in a training model
 * (dt_graph_loss_in_place), and, under model.recompute, the workspace
 * (recompute.c), which also marks the segments for m->recompute. */
static enum dt_status
size_activations(struct dt_model *m, struct dt_error *err)
{
	int64_t total = 0, scratch;

	m->seg_first = dt_xcalloc((size_t)m->n_nodes, sizeof *m->seg_first);
	m->seg_last = dt_xcalloc((size_t)m->n_nodes, sizeof *m->seg_last);
	m->transient = dt_xcalloc((size_t)m->n_nodes, sizeof *m->transient);
	dt_recompute_mark(m, NULL, m->seg_first, m->seg_last, m->transient);
	for (int i = 0; i < m->n_nodes; i++)
		if (!m->transient[i] &&
		    __builtin_add_overflow(total,
					   dt_node_act_floats(&m->nodes[i],
							   &scratch),
					   &total))
			goto too_big;
	if (m->train_layout)
		total -= dt_graph_loss_in_place(m, NULL);
	if (__builtin_add_overflow(total,
				   dt_recompute_seg_floats(m, m->seg_first,
							   m->transient, 0,
							   m->n_nodes - 1) +
				   dt_recompute_layer_floats(m, 0,
							     m->n_nodes - 1),
				   &total))
		goto too_big;
	m->act_floats = total;
	if (m->max_batch > 0 &&
	    (__builtin_mul_overflow(total, m->max_batch, &total) ||
	     (uint64_t)total > SIZE_MAX / sizeof(float)))
		goto too_big;
	return DT_OK;
too_big:
	return dt_errorf(err, DT_ERR_PLAN,
			 "activations for a micro-batch of %lld samples do "
			 "not fit in memory", (long long)m->max_batch);
}

/* Marks the relu nodes that the layer before them applies itself
 * (struct dt_node's fused_act and act_fused): an activation node made from
 * a layer's own `activation: relu`, on the same stage as that layer,
 * which is its only reader, of a type with ops->fuses_relu; and then the
 * 2x2 max pooling that alone reads such a relu, on the same stage, when
 * the type has ops->fuses_pool (fused_pool, pool_fused). The values and
 * gradients are those of the nodes apart, bit for bit (the same float
 * operations in fewer passes), so that a pipeline stage boundary, which
 * stops a fusion, does not change a layout's bits. */
static void
fuse_activations(struct dt_model *m)
{
	for (int i = m->first + 1; i <= m->last; i++) {
		struct dt_node *a = &m->nodes[i];
		struct dt_node *n = &m->nodes[i - 1];

		if (a->ops != &dt_layer_activation ||
		    a->spec.activation != DT_ACT_RELU || a->n_inputs != 1 ||
		    a->inputs[0] != i - 1 || a->layer != n->layer ||
		    !n->ops->fuses_relu || n->n_consumers != 1 ||
		    n->tp_mode != DT_TP_NONE ||
		    m->transient[i] != m->transient[i - 1])
			continue;
		n->fused_act = DT_ACT_RELU;
		a->act_fused = true;

		struct dt_node *q = i + 1 <= m->last ? &m->nodes[i + 1] : NULL;

		if (q == NULL || !n->ops->fuses_pool || a->n_consumers != 1 ||
		    q->ops != &dt_layer_maxpool2d || q->n_inputs != 1 ||
		    q->inputs[0] != i || q->spec.kernel != 2 ||
		    (q->spec.stride != 0 && q->spec.stride != 2) ||
		    q->spec.padding != 0 ||
		    m->transient[i + 1] != m->transient[i])
			continue;
		n->fused_pool = q;
		q->pool_fused = true;
	}
}

/* Floats of a buffer of node n that holds per_sample floats a sample, at
 * batch samples on this tensor rank: batch * per_sample, or, for a node
 * with a share of the rows (seq_rows), its rows (dt_node_rows_held)
 * times per_sample's floats a row. */
static int64_t
held_floats(const struct dt_model *m, const struct dt_node *n,
	    int64_t per_sample, int64_t batch)
{
	if (!n->seq_rows)
		return batch * per_sample;
	return dt_node_rows_held(n, batch, m->tp.rank, m->tp.size) *
	       (per_sample / (n->out_size / dt_node_row_len(n)));
}

/* Lays out one activation slot of the stage: the offsets of each present
 * node's output, output gradient and scratch (max_batch rows each), and
 * points the tensors into the parameter and gradient arenas. A transient
 * node's offsets are in the workspace instead (model.h), where each
 * segment starts at 0. A loss in place (m->loss_in_place) has its
 * input's output as its own, and that input's output gradient lies on
 * its output too. A node with a share of the rows (seq_rows) has
 * buffers of its share (held_floats). */
static void
layout_slot(struct dt_model *m)
{
	int64_t slot_at = 0, work_at = 0, rows = m->max_batch;
	int seg = -1;
	const int last_in = m->loss_in_place ?
			    m->nodes[m->n_nodes - 1].inputs[0] : -1;

	for (int i = 0; i < m->n_nodes; i++) {
		struct dt_node *n = &m->nodes[i];
		int64_t scratch = 0;
		bool own = i >= m->first && i <= m->last;
		int64_t *at_p = own && m->transient[i] ? &work_at : &slot_at;
		int64_t at;

		if (own && m->transient[i] && m->seg_first[i] != seg) {
			seg = m->seg_first[i];
			work_at = 0;
		}
		at = *at_p;

		m->out_off[i] = m->dout_off[i] = m->scratch_off[i] = -1;
		for (int k = 0; k < n->n_tensors; k++) {
			struct dt_param_tensor *pt = &n->tensor[k];

			pt->data = own ? m->params + pt->offset : NULL;
			pt->grad = own ? m->grads + pt->offset : NULL;
		}
		if (!m->present[i])
			continue;
		if (n->act_fused) {
			/* its output and gradient are its input's; their
			 * places (sized by the plan) stay unused */
			m->out_off[i] = m->out_off[i - 1];
			m->dout_off[i] = m->dout_off[i - 1];
			*at_p = at + held_floats(m, n, dt_node_out_floats(n),
						 rows) * (has_dout(n) ? 2 : 1);
			continue;
		}
		if (m->loss_in_place && i == m->n_nodes - 1) {
			m->out_off[i] = m->out_off[last_in];
			continue;
		}
		if (own)
			dt_node_act_floats(n, &scratch);
		m->out_off[i] = at;
		at += held_floats(m, n, dt_node_out_floats(n), rows);
		if (own ? has_dout(n) : n->needs_grad) {
			m->dout_off[i] = i == last_in ? m->out_off[i] : at;
			at += i == last_in ? 0 :
			      held_floats(m, n, dt_node_out_floats(n), rows);
		}
		if (scratch > 0) {
			m->scratch_off[i] = at;
			at += held_floats(m, n, scratch, rows);
		}
		*at_p = at;
	}
	m->slot_floats = (size_t)slot_at;
	m->layer_work_off = (size_t)(rows *
		dt_recompute_seg_floats(m, m->seg_first, m->transient,
					m->first, m->last));
	m->work_floats = m->layer_work_off + (size_t)(rows *
		dt_recompute_layer_floats(m, m->first, m->last));
}

void
dt_model_relayout_acts(struct dt_model *m)
{
	if (m->acts == NULL)
		return;
	free(m->acts);
	layout_slot(m);
	m->acts = dt_xalloc_floats(m->slot_floats * (size_t)m->n_slots +
				   m->work_floats);
	dt_model_use_slot(m, m->slot);
}

void
dt_model_use_slot(struct dt_model *m, int slot)
{
	float *base, *slot_base, *work;

	assert(m->acts != NULL && slot >= 0 && slot < m->n_slots);
	m->slot = slot;
	slot_base = m->acts + (size_t)slot * m->slot_floats;
	work = m->acts + (size_t)m->n_slots * m->slot_floats;
	for (int i = 0; i < m->n_nodes; i++) {
		struct dt_node *n = &m->nodes[i];

		base = m->transient[i] && i >= m->first && i <= m->last ?
		       work : slot_base;
		n->work = n->recompute ? work + m->layer_work_off : NULL;

		n->out = m->out_off[i] >= 0 ? base + m->out_off[i] : NULL;
		n->dout = m->dout_off[i] >= 0 ? base + m->dout_off[i] : NULL;
		n->scratch = m->scratch_off[i] >= 0 ? base + m->scratch_off[i]
						    : NULL;
	}
}

void
dt_param_init_normal(struct dt_param_tensor *pt, float std, uint64_t seed,
		     uint64_t tensor_index)
{
	for (int64_t j = 0; j < pt->size; j++)
		pt->data[j] = std * dt_rng_normal(seed, DT_RNG_INIT,
						  tensor_index, (uint64_t)j);
}

static void
init_tensor(struct dt_param_tensor *pt, uint64_t seed, uint64_t index)
{
	switch (pt->init) {
	case DT_INIT_ZERO:
		memset(pt->data, 0, (size_t)pt->size * sizeof(float));
		break;
	case DT_INIT_ONE:
		for (int64_t j = 0; j < pt->size; j++)
			pt->data[j] = 1.0f;
		break;
	case DT_INIT_HE_NORMAL:
		dt_param_init_normal(pt, (float)sqrt(2.0 / (double)pt->fan_in),
				     seed, index);
		break;
	case DT_INIT_XAVIER_UNIFORM: {
		float a = (float)sqrt(6.0 / (double)(pt->fan_in +
						     pt->fan_out));

		for (int64_t j = 0; j < pt->size; j++)
			pt->data[j] = a * (2.0f * dt_rng_uniform(
						   seed, DT_RNG_INIT, index,
						   (uint64_t)j) - 1.0f);
		break;
	}
	case DT_INIT_NORMAL:
		dt_param_init_normal(pt, pt->std, seed, index);
		break;
	}
}

static void
init_params(struct dt_model *m)
{
	uint64_t index = 0;

	for (int i = 0; i < m->n_nodes; i++) {
		struct dt_node *n = &m->nodes[i];

		if (i < m->first || i > m->last) {
			/* Another stage's: not here, but its tensors keep
			 * their place in the draw keys. */
			index += (uint64_t)n->n_tensors;
			continue;
		}
		for (int k = 0; k < n->n_tensors; k++)
			init_tensor(&n->tensor[k], m->seed, index + k);
		if (n->tie_src != NULL)
			dt_graph_init_tied(m, n, init_tensor);
		index += (uint64_t)n->n_tensors;
	}
}

/* Sets up the stage of m (the whole model when stage_of_node is NULL):
 * which nodes it runs and holds, and its live sets. */
static void
setup_stage(struct dt_model *m, const int *stage_of_node, int n_stages,
	    int stage)
{
	m->n_stages = n_stages;
	m->stage = stage;
	m->stage_of = dt_xcalloc((size_t)m->n_nodes, sizeof *m->stage_of);
	m->present = dt_xcalloc((size_t)m->n_nodes, sizeof *m->present);
	m->recv = dt_xcalloc((size_t)m->n_nodes, sizeof *m->recv);
	m->send = dt_xcalloc((size_t)m->n_nodes, sizeof *m->send);
	if (stage_of_node != NULL)
		memcpy(m->stage_of, stage_of_node,
		       (size_t)m->n_nodes * sizeof *m->stage_of);
	m->first = -1;
	for (int i = 0; i < m->n_nodes; i++) {
		if (m->stage_of[i] == stage) {
			if (m->first < 0)
				m->first = i;
			m->last = i;
			m->present[i] = true;
		}
		if (stage > 0 && dt_stage_live(m, m->stage_of, i, stage - 1)) {
			m->present[i] = true;
			m->recv[m->n_recv++] = i;
		}
		if (stage + 1 < n_stages &&
		    dt_stage_live(m, m->stage_of, i, stage))
			m->send[m->n_send++] = i;
	}
}

/* Lays the parameter arena out for the stage's tensors only: its trained
 * tensors back to back from 0, then its buffers, the order of the
 * one-rank arena restricted to the stage (dt_model_stage_info's ranges
 * map one onto the other). Another stage's tensors get an offset past the
 * end and no storage; the tensor list keeps the stage's. */
static void
localize(struct dt_model *m)
{
	size_t at = 0;
	int t = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < m->n_nodes; i++)
			for (int k = 0; k < m->nodes[i].n_tensors; k++) {
				struct dt_param_tensor *pt =
					&m->nodes[i].tensor[k];

				if (pt->buffer != (pass == 1))
					continue;
				if (i < m->first || i > m->last) {
					pt->offset = SIZE_MAX / 2;
					continue;
				}
				pt->offset = at;
				at += (size_t)pt->size;
			}
		if (pass == 0)
			m->n_trained = at;
	}
	m->n_params = at;
	for (int i = m->first; i <= m->last; i++)
		for (int k = 0; k < m->nodes[i].n_tensors; k++, t++) {
			m->tensors[t] = &m->nodes[i].tensor[k];
			m->tensor_node[t] = i;
		}
	m->n_tensors = t;
}

/* Builds the shapes of job's model, then (max_batch > 0) the arenas for
 * one stage of a layout (the whole model when stage_of_node is NULL). */
static enum dt_status
model_new(const struct dt_job *job, int64_t max_batch,
	  const int *stage_of_node, int n_stages, int stage, int n_slots,
	  bool train, struct dt_model **out, struct dt_error *err)
{
	struct dt_model *m;
	enum dt_status st;

	if (max_batch < 0 || max_batch > INT_MAX)
		return dt_errorf(err, DT_ERR_PLAN,
				 "micro-batch of %lld samples: must be in "
				 "[1, %d]", (long long)max_batch, INT_MAX);
	if (job->model.n_layers < 1 || job->model.n_layers > DT_JOB_MAX_LAYERS)
		return dt_errorf(err, DT_ERR_JOB,
				 "%s: model.layers: needs 1 to %d layers, "
				 "found %d",
				 job->path[0] ? job->path : "<job>",
				 DT_JOB_MAX_LAYERS, job->model.n_layers);

	m = dt_xcalloc(1, sizeof *m);
	m->seed = job->seed;
	m->max_batch = max_batch;
	m->n_nodes = count_nodes(job);
	m->nodes = dt_xcalloc((size_t)m->n_nodes, sizeof *m->nodes);
	m->tp.size = 1;
	m->recompute = job->model.recompute;
	m->train_layout = train;
	if ((st = check_input_shape(m, job, err)) != DT_OK ||
	    (st = make_nodes(m, job, err)) != DT_OK ||
	    (st = infer_shapes(m, job, err)) != DT_OK ||
	    (st = size_activations(m, err)) != DT_OK ||
	    (stage_of_node != NULL &&
	     (st = dt_model_check_stages(m, stage_of_node, n_stages,
					 err)) != DT_OK)) {
		dt_model_free(m);
		return st;
	}
	if (n_slots < 1 || (stage_of_node != NULL && (stage < 0 ||
						     stage >= n_stages))) {
		dt_model_free(m);
		return dt_errorf(err, DT_ERR_PLAN, "stage %d of %d with %d "
				 "activation slots", stage, n_stages, n_slots);
	}
	m->tensors = dt_xcalloc((size_t)m->n_tensors + 1, sizeof *m->tensors);
	m->tensor_node = dt_xcalloc((size_t)m->n_tensors + 1,
				    sizeof *m->tensor_node);
	for (int i = 0, t = 0; i < m->n_nodes; i++)
		for (int k = 0; k < m->nodes[i].n_tensors; k++, t++) {
			m->tensors[t] = &m->nodes[i].tensor[k];
			m->tensor_node[t] = i;
		}
	if (stage_of_node == NULL) {
		n_stages = 1;
		stage = 0;
	}
	setup_stage(m, stage_of_node, n_stages, stage);
	if (stage_of_node != NULL)
		localize(m);
	/* The segments of this stage's layout (a block cut by a stage
	 * boundary is two). */
	dt_recompute_mark(m, m->stage_of, m->seg_first, m->seg_last,
			  m->transient);
	m->loss_in_place = m->train_layout &&
			   m->stage_of[m->n_nodes - 1] == stage &&
			   dt_graph_loss_in_place(m, m->stage_of) > 0;
	m->n_slots = n_slots;
	m->slot_step = dt_xcalloc((size_t)n_slots, sizeof *m->slot_step);
	m->slot_first = dt_xcalloc((size_t)n_slots, sizeof *m->slot_first);
	m->out_off = dt_xcalloc((size_t)m->n_nodes, sizeof *m->out_off);
	m->dout_off = dt_xcalloc((size_t)m->n_nodes, sizeof *m->dout_off);
	m->scratch_off = dt_xcalloc((size_t)m->n_nodes,
				    sizeof *m->scratch_off);
	if (max_batch > 0) {
		m->params = dt_xalloc_pages(m->n_params);
		m->grads = dt_xalloc_pages(m->n_params);
		fuse_activations(m);
		layout_slot(m);
		if (m->slot_floats > (SIZE_MAX / sizeof(float) -
				      m->work_floats) / (size_t)n_slots) {
			dt_model_free(m);
			return dt_errorf(err, DT_ERR_PLAN, "activations for %d "
					 "micro-batches of %lld samples do not "
					 "fit in memory", n_slots,
					 (long long)max_batch);
		}
		m->acts = dt_xalloc_floats(m->slot_floats * (size_t)n_slots +
					   m->work_floats);
		m->seg_runs = dt_xcalloc((size_t)m->n_nodes,
					 sizeof *m->seg_runs);
		m->seg_din_add = dt_xcalloc((size_t)m->n_nodes *
					    DT_NODE_MAX_INPUTS,
					    sizeof *m->seg_din_add);
		m->dout_written = dt_xcalloc((size_t)m->n_nodes,
					     sizeof *m->dout_written);
		dt_model_use_slot(m, 0);
		init_params(m);
	}
	*out = m;
	return DT_OK;
}

enum dt_status
dt_model_new(const struct dt_job *job, int64_t max_batch,
	     struct dt_model **out, struct dt_error *err)
{
	return model_new(job, max_batch, NULL, 1, 0, 1, false, out, err);
}

enum dt_status
dt_model_new_slots(const struct dt_job *job, int64_t max_batch, int n_slots,
		   struct dt_model **out, struct dt_error *err)
{
	return model_new(job, max_batch, NULL, 1, 0, n_slots, true, out,
			 err);
}

enum dt_status
dt_model_new_stage(const struct dt_job *job, int64_t max_batch,
		   const int *stage_of_node, int n_stages, int stage,
		   int n_slots, struct dt_model **out, struct dt_error *err)
{
	return model_new(job, max_batch, stage_of_node, n_stages, stage,
			 n_slots, true, out, err);
}

void
dt_model_free(struct dt_model *m)
{
	if (m == NULL)
		return;
	/* the model's arrays, one heap block each */
	void *own[] = {
		m->acts, m->dout_written, m->tensors,
		m->tensor_node, m->stage_of, m->present, m->recv, m->send,
		m->slot_step, m->slot_first, m->out_off, m->dout_off,
		m->scratch_off, m->seg_first, m->seg_last, m->transient,
		m->seg_runs, m->seg_din_add, m->nodes,
	};

	dt_free_each(own, sizeof own / sizeof *own);
	dt_free_pages(m->params, m->n_params);
	dt_free_pages(m->grads, m->n_params);
	free(m);
}

size_t
dt_model_n_params(const struct dt_model *m)
{
	return m->n_params;
}

size_t
dt_model_n_trained(const struct dt_model *m)
{
	return m->n_trained;
}

float *
dt_model_params(struct dt_model *m)
{
	return m->params;
}

float *
dt_model_grads(struct dt_model *m)
{
	return m->grads;
}

void
dt_model_zero_grads(struct dt_model *m)
{
	assert(m->grads != NULL);
	dt_kern_par_copy(m->pool, NULL, m->grads, (int64_t)m->n_params);
}

int64_t
dt_model_input_size(const struct dt_model *m)
{
	return m->input_size;
}

/* The shape the loss reads: the last layer's output. */
static const struct dt_shape *
loss_input(const struct dt_model *m)
{
	return &m->nodes[m->n_nodes - 1].in_shape[0];
}

int64_t
dt_model_n_classes(const struct dt_model *m)
{
	const struct dt_shape *s = loss_input(m);

	if (m->loss != DT_LOSS_SOFTMAX_CROSS_ENTROPY)
		return 0;
	return s->dim[s->n_dims - 1];
}

int64_t
dt_model_labels_per_sample(const struct dt_model *m)
{
	const struct dt_shape *s = loss_input(m);

	if (m->loss != DT_LOSS_SOFTMAX_CROSS_ENTROPY)
		return 0;
	return dt_shape_size(s) / s->dim[s->n_dims - 1];
}

int64_t
dt_model_targets_per_sample(const struct dt_model *m)
{
	if (!dt_loss_is_regression(m->loss))
		return 0;
	return dt_shape_size(loss_input(m));
}

void
dt_model_set_position(struct dt_model *m, uint64_t step, int64_t first_sample)
{
	m->slot_step[m->slot] = step;
	m->slot_first[m->slot] = first_sample;
}

void
dt_model_set_pool(struct dt_model *m, struct dt_pool *pool)
{
	m->pool = pool;
}

struct dt_pool *
dt_model_pool(const struct dt_model *m)
{
	return m->pool;
}

/* The input buffers of node n: the model input x or other nodes' outputs. */
static void
gather_inputs(const struct dt_model *m, const struct dt_node *n,
	      const float *x, const float **in)
{
	for (int k = 0; k < n->n_inputs; k++)
		in[k] = n->inputs[k] == DT_NODE_INPUT ? x
						      : m->nodes[n->inputs[k]].out;
}

static void
forward(struct dt_model *m, struct dt_pass *p, const float *x)
{
	const float *in[DT_NODE_MAX_INPUTS];

	assert(m->acts != NULL && p->batch >= 1 && p->batch <= m->max_batch);
	for (int i = m->first; i <= m->last; i++) {
		struct dt_node *n = &m->nodes[i];

		if (m->node_hook != NULL)
			m->node_hook(m->node_ctx, i, false);
		gather_inputs(m, n, x, in);
		n->ops->forward(n, p, in);
	}
}

/* Whether node i's backward runs in a pass, and din_add for its inputs;
 * marks the dout of its inputs written. The answer depends on the
 * graph only (which consumers have run), so it is the same in every
 * micro-batch. A node is skipped when no parameter lies behind it, or
 * when it is not the loss and nothing wrote its dout (a branch that does
 * not reach the loss). */
static bool
node_runs(struct dt_model *m, int i, bool *din_add)
{
	const struct dt_node *n = &m->nodes[i];

	if (!n->needs_grad || (i < m->n_nodes - 1 && !m->dout_written[i]))
		return false;
	for (int k = 0; k < n->n_inputs; k++) {
		int src = n->inputs[k];

		din_add[k] = false;
		if (src == DT_NODE_INPUT || !m->nodes[src].needs_grad)
			continue;
		din_add[k] = m->dout_written[src];
		m->dout_written[src] = true;
	}
	return true;
}

/* Node i's backward over the current slot. */
static void
node_backward(struct dt_model *m, struct dt_pass *p, int i, const float *x,
	      const bool *din_add)
{
	struct dt_node *n = &m->nodes[i];
	const float *in[DT_NODE_MAX_INPUTS];
	float *din[DT_NODE_MAX_INPUTS];

	if (m->node_hook != NULL)
		m->node_hook(m->node_ctx, i, true);
	gather_inputs(m, n, x, in);
	for (int k = 0; k < n->n_inputs; k++) {
		int src = n->inputs[k];

		din[k] = src == DT_NODE_INPUT || !m->nodes[src].needs_grad ?
			 NULL : m->nodes[src].dout;
	}
	p->node = i;
	n->ops->backward(n, p, in, din, din_add);
}

/* Runs again the forward of the transient nodes of segment [first, last]
 * (recompute.c) over the current slot, in order, with the pass p of the
 * backward: the position and the training flag of the first forward, so
 * the same bits. */
static void
recompute_segment(struct dt_model *m, struct dt_pass *p, const float *x,
		  int first, int last)
{
	const float *in[DT_NODE_MAX_INPUTS];

	p->recompute = true;
	for (int i = first; i <= last; i++) {
		struct dt_node *n = &m->nodes[i];

		if (!m->transient[i])
			continue;
		if (m->node_hook != NULL)
			m->node_hook(m->node_ctx, i, false);
		gather_inputs(m, n, x, in);
		n->ops->forward(n, p, in);
	}
	p->recompute = false;
}

/* Reverse order is a reverse topological order, so every consumer of a
 * node has added into its dout before the node's own backward runs. On a
 * pipeline stage the gradients of the live set sent on (dt_model_send_
 * buffers) have been received into their dout before, and count as
 * written; the received live set's gradients, which go back to the stage
 * before, are set to 0 where no node of this stage wrote them. */
static void
backward(struct dt_model *m, struct dt_pass *p, const float *x)
{
	bool din_add[DT_NODE_MAX_INPUTS];

	memset(m->dout_written, 0, (size_t)m->n_nodes * sizeof(bool));
	p->params_hook = m->params_hook;
	p->params_ctx = m->params_ctx;
	for (int j = 0; j < m->n_send; j++)
		m->dout_written[m->send[j]] = m->nodes[m->send[j]].needs_grad;
	for (int i = m->last; i >= m->first; i--) {
		if (m->seg_last[i] == i)
			recompute_segment(m, p, x, m->seg_first[i], i);
		if (node_runs(m, i, din_add))
			node_backward(m, p, i, x, din_add);
		if (m->bwd_hook != NULL)
			m->bwd_hook(m->bwd_ctx, i);
	}
	for (int j = 0; j < m->n_recv; j++) {
		const struct dt_node *n = &m->nodes[m->recv[j]];

		if (n->needs_grad && !m->dout_written[m->recv[j]])
			memset(n->dout, 0,
			       (size_t)held_floats(m, n,
						   dt_node_out_floats(n),
						   p->batch) * sizeof(float));
	}
}

static void
make_pass(const struct dt_model *m, struct dt_pass *p, const int32_t *labels,
	  const float *targets, int64_t batch, bool training, float grad_scale)
{
	memset(p, 0, sizeof *p);
	p->batch = batch;
	p->training = training;
	p->labels = labels;
	p->targets = targets;
	/* The stage passes carry a regression's targets in the labels'
	 * buffer (graph.h, dt_model_stage_forward). */
	if (dt_loss_is_regression(m->loss) && targets == NULL &&
	    labels != NULL) {
		p->targets = (const float *)(const void *)labels;
		p->labels = NULL;
	}
	p->grad_scale = grad_scale;
	p->seed = m->seed;
	p->step = m->slot_step[m->slot];
	p->first_sample = m->slot_first[m->slot];
	p->tp = m->tp.size > 1 ? &m->tp : NULL;
	p->pool = m->pool;
}

/* One pass: forward, and backward when training; labels or targets (not
 * both) feed the loss. */
static void
run_pass(struct dt_model *m, const float *x, const int32_t *labels,
	 const float *targets, int64_t batch, bool training, float grad_scale,
	 double *loss_sum, int64_t *n_correct)
{
	struct dt_pass p;

	make_pass(m, &p, labels, targets, batch, training, grad_scale);
	forward(m, &p, x);
	if (training)
		backward(m, &p, x);
	if (loss_sum != NULL)
		*loss_sum = p.loss_sum;
	if (n_correct != NULL)
		*n_correct = p.n_correct;
}

void
dt_model_stage_forward(struct dt_model *m, const float *x,
		       const int32_t *labels, int64_t batch, bool training,
		       double *loss_sum, int64_t *n_correct)
{
	struct dt_pass p;

	make_pass(m, &p, labels, NULL, batch, training, 0.0f);
	forward(m, &p, x);
	if (loss_sum != NULL)
		*loss_sum = p.loss_sum;
	if (n_correct != NULL)
		*n_correct = p.n_correct;
}

void
dt_model_stage_backward(struct dt_model *m, const float *x,
			const int32_t *labels, int64_t batch, float grad_scale)
{
	struct dt_pass p;

	make_pass(m, &p, labels, NULL, batch, true, grad_scale);
	backward(m, &p, x);
}

/* Whether segment [first, last] has a transient node. */
static bool
seg_recomputes(const struct dt_model *m, int first, int last)
{
	for (int i = first; i <= last; i++)
		if (m->transient[i])
			return true;
	return false;
}

/* The breadth-first backward of segment [first, last] under
 * model.recompute: micro-batch by micro-batch (the workspace holds one),
 * each recomputed and then its nodes from the last to the first. Each
 * node still sees the micro-batches in order 0 .. n_micro - 1, and
 * hook(ctx, i, k) follows node i's pass over k, so the contract of
 * dt_model_backward_breadth holds. */
static void
breadth_segment(struct dt_model *m, int n_micro, const float *const *x,
		const int32_t *const *labels, int64_t batch, float grad_scale,
		void (*hook)(void *ctx, int node, int micro), void *ctx,
		int first, int last)
{
	struct dt_pass p;

	for (int i = last; i >= first; i--)
		m->seg_runs[i] = node_runs(m, i, m->seg_din_add +
					   (size_t)i * DT_NODE_MAX_INPUTS);
	for (int k = 0; k < n_micro; k++) {
		dt_model_use_slot(m, k);
		make_pass(m, &p, labels[k], NULL, batch, true, grad_scale);
		recompute_segment(m, &p, x[k], first, last);
		for (int i = last; i >= first; i--) {
			if (m->seg_runs[i])
				node_backward(m, &p, i, x[k], m->seg_din_add +
					      (size_t)i * DT_NODE_MAX_INPUTS);
			if (hook != NULL)
				hook(ctx, i, k);
		}
	}
}

void
dt_model_backward_breadth(struct dt_model *m, int n_micro,
			  const float *const *x, const int32_t *const *labels,
			  int64_t batch, float grad_scale,
			  void (*hook)(void *ctx, int node, int micro),
			  void *ctx)
{
	bool din_add[DT_NODE_MAX_INPUTS];
	struct dt_pass p;

	assert(n_micro >= 1 && n_micro <= m->n_slots && m->n_send == 0 &&
	       m->n_recv == 0);
	memset(m->dout_written, 0, (size_t)m->n_nodes * sizeof(bool));
	for (int i = m->last; i >= m->first; i--) {
		if (m->seg_last[i] == i &&
		    seg_recomputes(m, m->seg_first[i], i)) {
			breadth_segment(m, n_micro, x, labels, batch,
					grad_scale, hook, ctx,
					m->seg_first[i], i);
			i = m->seg_first[i];
			continue;
		}

		bool runs = node_runs(m, i, din_add);

		for (int k = 0; k < n_micro; k++) {
			if (runs) {
				dt_model_use_slot(m, k);
				make_pass(m, &p, labels[k], NULL, batch, true,
					  grad_scale);
				node_backward(m, &p, i, x[k], din_add);
			}
			if (hook != NULL)
				hook(ctx, i, k);
		}
	}
}

int
dt_model_n_live(const struct dt_model *m, int after)
{
	return after ? m->n_send : m->n_recv;
}

void
dt_model_live_buffers(struct dt_model *m, int after, int j, float **out,
		      float **grad, int64_t *floats_per_sample)
{
	const struct dt_node *n;

	assert(j >= 0 && j < (after ? m->n_send : m->n_recv));
	n = &m->nodes[after ? m->send[j] : m->recv[j]];
	*out = n->out;
	*grad = n->needs_grad ? n->dout : NULL;
	*floats_per_sample = n->out_size;
}

void
dt_model_train_step(struct dt_model *m, const float *x,
		    const int32_t *labels, int64_t batch, float grad_scale,
		    double *loss_sum, int64_t *n_correct)
{
	assert(labels != NULL && m->loss == DT_LOSS_SOFTMAX_CROSS_ENTROPY);
	run_pass(m, x, labels, NULL, batch, true, grad_scale, loss_sum,
		 n_correct);
}

void
dt_model_eval(struct dt_model *m, const float *x, const int32_t *labels,
	      int64_t batch, double *loss_sum, int64_t *n_correct)
{
	assert(labels == NULL || m->loss == DT_LOSS_SOFTMAX_CROSS_ENTROPY);
	run_pass(m, x, labels, NULL, batch, false, 0.0f, loss_sum, n_correct);
}

void
dt_model_train_step_targets(struct dt_model *m, const float *x,
			    const float *targets, int64_t batch,
			    float grad_scale, double *loss_sum)
{
	assert(targets != NULL && dt_loss_is_regression(m->loss));
	run_pass(m, x, NULL, targets, batch, true, grad_scale, loss_sum, NULL);
}

void
dt_model_eval_targets(struct dt_model *m, const float *x,
		      const float *targets, int64_t batch, double *loss_sum)
{
	assert(targets == NULL || dt_loss_is_regression(m->loss));
	run_pass(m, x, NULL, targets, batch, false, 0.0f, loss_sum, NULL);
}

const float *
dt_model_probs(const struct dt_model *m)
{
	return m->nodes[m->n_nodes - 1].out;
}

double
dt_model_flops_per_sample(const struct dt_model *m)
{
	return 3.0 * m->fwd_flops +
	       dt_model_recompute_flops_per_sample(m);
}

double
dt_model_recompute_flops_per_sample(const struct dt_model *m)
{
	return dt_recompute_flops(m, m->transient, 0, m->n_nodes - 1);
}

int64_t
dt_model_act_floats_per_sample(const struct dt_model *m)
{
	return m->act_floats;
}

int
dt_model_n_layers(const struct dt_model *m)
{
	return m->n_nodes;
}

void
dt_model_layer_info(const struct dt_model *m, int i,
		    struct dt_layer_info *info)
{
	const struct dt_node *n;

	assert(i >= 0 && i < m->n_nodes);
	n = &m->nodes[i];
	memset(info, 0, sizeof *info);
	info->name = n->name;
	info->kind = n->kind;
	info->n_dims = n->out_shape.n_dims;
	for (int d = 0; d < n->out_shape.n_dims; d++)
		info->out_shape[d] = n->out_shape.dim[d];
	info->n_params = n->n_params;
	for (int t = 0; t < n->n_tensors; t++)
		if (n->tensor[t].tied)
			info->n_params -= n->tensor[t].size;
	info->fwd_flops = n->ops->fwd_flops(n);
	info->job_layer = n->layer;
}

int
dt_model_n_tensors(const struct dt_model *m)
{
	return m->n_tensors;
}

void
dt_model_tensor_info(const struct dt_model *m, int i,
		     struct dt_tensor_info *info)
{
	const struct dt_param_tensor *pt;

	assert(i >= 0 && i < m->n_tensors);
	pt = m->tensors[i];
	memset(info, 0, sizeof *info);
	info->node = m->nodes[m->tensor_node[i]].name;
	info->name = pt->name;
	info->n_dims = pt->n_dims;
	for (int d = 0; d < pt->n_dims; d++)
		info->shape[d] = pt->shape[d];
	info->offset = pt->offset;
	info->size = pt->size;
	info->node_index = m->tensor_node[i];
	if (pt->tied)
		info->tie_node = m->nodes[m->tensor_node[i]].tie_src->name;
}

void
dt_model_set_node_hook(struct dt_model *m,
		       void (*hook)(void *ctx, int node, bool backward),
		       void *ctx)
{
	m->node_hook = hook;
	m->node_ctx = ctx;
}

void
dt_model_set_params_hook(struct dt_model *m,
			 void (*hook)(void *ctx, int node), void *ctx)
{
	m->params_hook = hook;
	m->params_ctx = ctx;
}

void
dt_pass_params_final(const struct dt_pass *p)
{
	if (p->params_hook != NULL)
		p->params_hook(p->params_ctx, p->node);
}

void
dt_model_set_backward_hook(struct dt_model *m,
			   void (*hook)(void *ctx, int node), void *ctx)
{
	m->bwd_hook = hook;
	m->bwd_ctx = ctx;
}
