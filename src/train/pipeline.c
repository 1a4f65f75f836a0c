/* pipeline.c - training and evaluation over pipeline stages and
 * tensor-parallel groups (pipeline.h).
 *
 * Every rank of the grid holds the whole parameter arena, initialised
 * alike; a stage runs its own nodes and trains its own range of the arena,
 * and its ranks of data-parallel and tensor-parallel index 0 hand that
 * range to rank 0 for checkpoints. Activations go forward and their
 * gradients backward between neighbouring stages with MPI point-to-point
 * messages: blocking receives and non-blocking sends, whose buffers (the
 * slot of the micro-batch) are not reused before the send has completed.
 * Each stage runs its schedule's operations (plan.h) in order; forward
 * and backward both take micro-batches in increasing order on every stage,
 * so the messages of one direction match in order. */
#include "train/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/alloc.h"
#include "train/progress.h"

enum { TAG_ACT = 11, TAG_GRAD = 12, TAG_GATHER = 13 };

/* The tensor-parallel sums of the split layers; a failure here cannot be
 * returned through the layer, and the other ranks wait inside the same
 * sum, so it ends the job. */
static void
tp_allreduce(void *ctx, float *buf, size_t n)
{
	struct dt_run *r = ctx;
	struct dt_error err;

	if (dt_comm_allreduce_sum_f32(r->tp_comm, buf, n, &err) != DT_OK) {
		fprintf(stderr, "dtrain: rank %d: %s\n", r->rank, err.msg);
		dt_comm_abort(r->comm, dt_status_exit_code(err.status));
	}
}

enum dt_status
dt_pipe_setup(struct dt_run *r, struct dt_error *err)
{
	const struct dt_plan *p = &r->plan;
	struct dt_model *shapes = NULL;
	int n_nodes, pp = p->pp_size, tp = p->tp_size;
	enum dt_status st;

	r->mp = 1;
	dt_plan_position(p, r->rank, &r->pos);
	st = dt_model_new(r->job, 0, &shapes, err);
	if (st != DT_OK)
		return st;
	n_nodes = dt_model_n_layers(shapes);
	r->stage_of = dt_xcalloc((size_t)n_nodes, sizeof *r->stage_of);
	/* Stages balance one tensor-parallel rank's share of the work, as
	 * dtrain plan does. */
	st = dt_plan_layout(r->job, p, shapes, r->stage_of, err);
	/* Where this stage's tensors start in the model's list, for the
	 * per-tensor gradient norms. */
	r->n_tensors_all = dt_model_n_tensors(shapes);
	r->first_tensor = 0;
	for (int t = 0; t < r->n_tensors_all; t++) {
		struct dt_tensor_info ti;
		struct dt_layer_info li;
		int node = 0;

		dt_model_tensor_info(shapes, t, &ti);
		while (node < n_nodes) {
			dt_model_layer_info(shapes, node, &li);
			if (strcmp(li.name, ti.node) == 0)
				break;
			node++;
		}
		if (node < n_nodes && r->stage_of[node] < r->pos.stage)
			r->first_tensor = t + 1;
	}
	r->sinfos = dt_xcalloc((size_t)pp, sizeof *r->sinfos);
	for (int s = 0; st == DT_OK && s < pp; s++)
		dt_model_stage_info(shapes, r->stage_of, pp, s, &r->sinfos[s]);
	if (st == DT_OK)
		r->sinfo = r->sinfos[r->pos.stage];
	dt_model_free(shapes);
	if (st != DT_OK)
		return st;
	r->n_slots = (int)dt_plan_in_flight(p, r->pos.stage);
	st = dt_model_new_stage(r->job, p->micro_batch, r->stage_of, pp,
				r->pos.stage, r->n_slots, &r->model, err);
	if (st != DT_OK)
		return st;
	if (tp > 1) {
		st = dt_model_plan_tensor_parallel(r->model, r->job, tp, err);
		if (st != DT_OK)
			return st;
	}
	r->lps = dt_model_labels_per_sample(r->model);

	/* The communicators, each a split of the world by the coordinates
	 * its members share. */
	st = dt_comm_split(r->comm, r->pos.stage, r->rank, &r->grad_comm, err);
	if (st == DT_OK)
		st = dt_comm_split(r->comm, r->pos.dp * tp + r->pos.tp,
				   r->pos.stage, &r->pipe_comm, err);
	if (st == DT_OK)
		st = dt_comm_split(r->comm, r->pos.dp * pp + r->pos.stage,
				   r->pos.tp, &r->tp_comm, err);
	if (st != DT_OK)
		return st;
	if (tp > 1)
		dt_model_set_tensor_group(r->model, r->pos.tp, tp,
					  tp_allreduce, r);

	r->ops = dt_xcalloc((size_t)(2 * p->grad_accum_steps), sizeof *r->ops);
	dt_plan_pipe_ops(p, r->pos.stage, r->ops);
	r->slot_x = dt_xcalloc((size_t)r->n_slots, sizeof *r->slot_x);
	r->slot_y = dt_xcalloc((size_t)r->n_slots, sizeof *r->slot_y);
	for (int i = 0; i < r->n_slots; i++) {
		r->slot_x[i] = dt_xalloc_floats((size_t)(p->micro_batch *
				dt_model_input_size(r->model)));
		r->slot_y[i] = dt_xcalloc((size_t)(p->micro_batch *
				(r->lps > 0 ? r->lps : 1)), sizeof(int32_t));
	}
	r->max_req = dt_model_n_live(r->model, 0) +
		     dt_model_n_live(r->model, 1) + 1;
	r->slot_req = dt_xcalloc((size_t)(r->n_slots * r->max_req),
				 sizeof *r->slot_req);
	r->slot_n_req = dt_xcalloc((size_t)r->n_slots, sizeof *r->slot_n_req);
	return DT_OK;
}

void
dt_pipe_fini(struct dt_run *r)
{
	for (int i = 0; r->slot_x != NULL && i < r->n_slots; i++) {
		free(r->slot_x[i]);
		free(r->slot_y[i]);
	}
	free(r->slot_x);
	free(r->slot_y);
	free(r->slot_req);
	free(r->slot_n_req);
	free(r->ops);
	free(r->stage_of);
	free(r->sinfos);
	dt_comm_free(r->tp_comm);
	dt_comm_free(r->pipe_comm);
	dt_comm_free(r->grad_comm);
}

static int
is_last_stage(const struct dt_run *r)
{
	return r->pos.stage == r->plan.pp_size - 1;
}

/* Waits for the sends still reading slot's buffers. */
static enum dt_status
free_slot(struct dt_run *r, int slot, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	for (int i = 0; i < r->slot_n_req[slot] && st == DT_OK; i++)
		st = dt_comm_wait(r->pipe_comm,
				  r->slot_req[slot * r->max_req + i], err);
	r->slot_n_req[slot] = 0;
	return st;
}

/* Receives (send = 0) or sends (1) the outputs (grad = 0) or gradients
 * (1) of one live set, batch rows each. after selects the set: 0 the one
 * from the stage before, 1 the one to the stage after. */
static enum dt_status
move_live(struct dt_run *r, int after, int grad, int send, int slot,
	  int64_t batch, struct dt_error *err)
{
	int peer = r->pos.stage + (after ? 1 : -1);
	int tag = grad ? TAG_GRAD : TAG_ACT;
	enum dt_status st = DT_OK;

	for (int j = 0; j < dt_model_n_live(r->model, after) && st == DT_OK;
	     j++) {
		float *out, *g, *buf;
		int64_t fps;

		dt_model_live_buffers(r->model, after, j, &out, &g, &fps);
		buf = grad ? g : out;
		if (buf == NULL)
			continue;
		if (send) {
			int *req = &r->slot_req[slot * r->max_req +
						r->slot_n_req[slot]];

			st = dt_comm_isend_f32(r->pipe_comm, buf,
					       (size_t)(batch * fps), peer,
					       tag, req, err);
			if (st == DT_OK)
				r->slot_n_req[slot]++;
		} else {
			st = dt_comm_recv_f32(r->pipe_comm, buf,
					      (size_t)(batch * fps), peer, tag,
					      err);
		}
	}
	return st;
}

/* Fills slot's x and y with micro-batch k of the step and returns the
 * global index of its first sample. */
static int64_t
load_micro(struct dt_run *r, int slot, int64_t k, double *data_wait)
{
	const struct dt_plan *p = &r->plan;
	int64_t in = dt_model_input_size(r->model);

	if (r->loader != NULL) {
		const struct dt_batch *b = dt_loader_next(r->loader);
		int64_t first = b->first_sample;

		memcpy(r->slot_x[slot], b->x,
		       (size_t)(p->micro_batch * in) * sizeof(float));
		memcpy(r->slot_y[slot], b->y,
		       (size_t)(p->micro_batch * r->lps) * sizeof(int32_t));
		dt_loader_release(r->loader);
		return first;
	}

	int64_t off = r->epoch_off + dt_shard_offset(0, p->global_batch,
						     r->pos.dp, p->dp_size,
						     p->micro_batch, k);
	double t = dt_now();

	dt_source_gather(&r->train, r->perm + off, p->micro_batch,
			 r->slot_x[slot], r->slot_y[slot]);
	*data_wait += dt_now() - t;
	return r->epoch * r->train.n + off;
}

enum dt_status
dt_pipe_train_step(struct dt_run *r, float grad_scale, double *loss_sum,
		   double *data_wait, struct dt_error *err)
{
	const struct dt_plan *p = &r->plan;
	int64_t mb = p->micro_batch;
	int last = is_last_stage(r);
	uint64_t p2p0 = dt_comm_p2p_bytes_sent(r->pipe_comm);
	uint64_t tp0 = dt_comm_bytes_sent(r->tp_comm);
	enum dt_status st = DT_OK;

	*loss_sum = 0;
	for (int64_t i = 0; i < 2 * p->grad_accum_steps && st == DT_OK; i++) {
		const struct dt_pipe_op *op = &r->ops[i];
		int slot = (int)(op->micro % r->n_slots);

		if (!op->backward) {
			double ls = 0;
			int64_t first;

			st = free_slot(r, slot, err);
			if (st != DT_OK)
				break;
			first = load_micro(r, slot, op->micro, data_wait);
			dt_model_use_slot(r->model, slot);
			dt_model_set_position(r->model, (uint64_t)r->step,
					      first);
			st = move_live(r, 0, 0, 0, slot, mb, err);
			if (st != DT_OK)
				break;
			dt_model_stage_forward(r->model, r->slot_x[slot],
					       last ? r->slot_y[slot] : NULL,
					       mb, true, &ls, NULL);
			if (last && r->pos.tp == 0)
				*loss_sum += ls;
			st = move_live(r, 1, 0, 1, slot, mb, err);
		} else {
			dt_model_use_slot(r->model, slot);
			st = move_live(r, 1, 1, 0, slot, mb, err);
			if (st != DT_OK)
				break;
			dt_accum_before(r);
			dt_model_stage_backward(r->model, r->slot_x[slot],
						last ? r->slot_y[slot] : NULL,
						mb, grad_scale);
			dt_accum_after(r);
			st = move_live(r, 0, 1, 1, slot, mb, err);
		}
	}
	if (st == DT_OK)
		st = dt_comm_wait_all(r->pipe_comm, err);
	for (int s = 0; s < r->n_slots; s++)
		r->slot_n_req[s] = 0;
	r->bytes_p2p += dt_comm_p2p_bytes_sent(r->pipe_comm) - p2p0;
	r->bytes_tp += dt_comm_bytes_sent(r->tp_comm) - tp0;
	return st;
}

void
dt_accum_start(struct dt_run *r)
{
	if (r->acc != NULL)
		memset(r->acc, 0, dt_model_n_trained(r->model) * sizeof *r->acc);
}

void
dt_accum_before(struct dt_run *r)
{
	if (r->acc != NULL)
		memset(dt_model_grads(r->model), 0,
		       dt_model_n_trained(r->model) * sizeof(float));
}

void
dt_accum_after(struct dt_run *r)
{
	const float *restrict g = dt_model_grads(r->model);
	double *restrict a = r->acc;
	size_t n = dt_model_n_trained(r->model);

	if (a == NULL)
		return;
	dt_model_tp_prepare_grads(r->model);
	for (size_t i = 0; i < n; i++)
		a[i] += (double)g[i];
}

enum dt_status
dt_accum_sum(struct dt_run *r, struct dt_comm *c, struct dt_error *err)
{
	float *g = dt_model_grads(r->model);
	size_t n = dt_model_n_trained(r->model);
	enum dt_status st = DT_OK;

	if (r->acc == NULL)
		return DT_OK;
	if (c != NULL) {
		uint64_t b0 = dt_comm_bytes_sent(c);

		st = dt_comm_allreduce_sum_f64(c, r->acc, n, err);
		r->bytes_grad += dt_comm_bytes_sent(c) - b0;
	}
	for (size_t i = 0; i < n; i++)
		g[i] = (float)r->acc[i];
	return st;
}

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

/* Writes the squared norm of each of r's trained tensors at norms[first +
 * its index in r's model]. */
static void
own_norms(struct dt_run *r, double *norms, int first)
{
	const float *g = dt_model_grads(r->model);
	size_t n_trained = dt_model_n_trained(r->model);

	for (int t = 0; t < dt_model_n_tensors(r->model); t++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(r->model, t, &ti);
		if (ti.offset < n_trained)
			norms[first + t] = tensor_sq(g + ti.offset, ti.size);
	}
}

double
dt_grad_norm2(struct dt_run *r, const double *norms)
{
	double total = 0;

	if (norms == NULL) {
		double one;

		for (int t = 0; t < dt_model_n_tensors(r->model); t++) {
			struct dt_tensor_info ti;

			dt_model_tensor_info(r->model, t, &ti);
			if (ti.offset >= dt_model_n_trained(r->model))
				continue;
			one = tensor_sq(dt_model_grads(r->model) + ti.offset,
					ti.size);
			total += one;
		}
		return total;
	}
	for (int t = 0; t < r->n_tensors_all; t++)
		total += norms[t];
	return total;
}

enum dt_status
dt_pipe_sync_grads(struct dt_run *r, double *norms, struct dt_error *err)
{
	float *grads = dt_model_grads(r->model);
	size_t n = dt_model_n_trained(r->model);
	uint64_t b0 = dt_comm_bytes_sent(r->grad_comm);
	enum dt_status st;

	if (r->acc != NULL) {
		st = dt_accum_sum(r, r->grad_comm, err);
	} else {
		dt_model_tp_prepare_grads(r->model);
		st = dt_comm_allreduce_sum_f32(r->grad_comm, grads, n,
					       err);
		r->bytes_grad += dt_comm_bytes_sent(r->grad_comm) - b0;
	}
	memset(norms, 0, (size_t)r->n_tensors_all * sizeof *norms);
	if (r->pos.dp == 0 && r->pos.tp == 0)
		own_norms(r, norms, r->first_tensor);
	return st;
}

enum dt_status
dt_pipe_eval(struct dt_run *r, int64_t lo, int64_t hi, double *sums,
	     struct dt_error *err)
{
	int64_t mb = r->plan.micro_batch;
	int last = is_last_stage(r);
	enum dt_status st = DT_OK;

	st = free_slot(r, 0, err);
	for (int64_t i = lo; i < hi && st == DT_OK; i += mb) {
		int64_t count = hi - i < mb ? hi - i : mb, correct = 0;
		double ls = 0;

		for (int64_t j = 0; j < count; j++)
			r->eval_idx[j] = i + j;
		dt_source_gather(&r->eval, r->eval_idx, count, r->slot_x[0],
				 r->slot_y[0]);
		dt_model_use_slot(r->model, 0);
		st = move_live(r, 0, 0, 0, 0, count, err);
		if (st != DT_OK)
			break;
		dt_model_stage_forward(r->model, r->slot_x[0],
				       last ? r->slot_y[0] : NULL, count,
				       false, &ls, &correct);
		if (last && r->pos.tp == 0) {
			sums[0] += ls;
			sums[1] += (double)correct;
		}
		st = move_live(r, 1, 0, 1, 0, count, err);
		/* The next micro-batch overwrites the slot. */
		if (st == DT_OK)
			st = free_slot(r, 0, err);
	}
	if (st == DT_OK)
		st = dt_comm_wait_all(r->pipe_comm, err);
	r->slot_n_req[0] = 0;
	return st;
}

enum dt_status
dt_pipe_full_alloc(struct dt_run *r, struct dt_full *f, struct dt_error *err)
{
	int n_bufs = 0;
	size_t n;
	enum dt_status st;

	memset(f, 0, sizeof *f);
	st = dt_model_new(r->job, 0, &f->shapes, err);
	if (st != DT_OK)
		return st;
	dt_optim_state(r->optim, &n_bufs);
	n = dt_model_n_params(f->shapes);
	f->params = dt_xalloc_floats(n);
	f->n_bufs = n_bufs;
	for (int b = 0; b < n_bufs; b++)
		f->bufs[b] = dt_xalloc_floats(dt_model_n_trained(f->shapes));
	return DT_OK;
}

void
dt_pipe_full_free(struct dt_full *f)
{
	dt_model_free(f->shapes);
	free(f->params);
	for (int b = 0; b < f->n_bufs; b++)
		free(f->bufs[b]);
	memset(f, 0, sizeof *f);
}

/* Copies between this rank's stage arrays and the whole ones: to_full
 * places the stage's parameters, buffers and optimizer state at their
 * one-rank ranges, else takes them from there. */
static void
copy_stage(struct dt_run *r, struct dt_full *f, const struct dt_stage_info *si,
	   int to_full)
{
	float *params = dt_model_params(r->model);
	size_t nt = si->trained_hi - si->trained_lo;
	size_t nb = si->buffer_hi - si->buffer_lo;
	int n_bufs = 0;
	float **bufs = dt_optim_state(r->optim, &n_bufs);

#define COPY(local, whole, n) \
	memcpy(to_full ? (whole) : (local), to_full ? (local) : (whole), \
	       (n) * sizeof(float))
	COPY(params, f->params + si->trained_lo, nt);
	COPY(params + nt, f->params + si->buffer_lo, nb);
	for (int b = 0; b < n_bufs; b++)
		COPY(bufs[b], f->bufs[b] + si->trained_lo, nt);
#undef COPY
}

/* Stage s's part of one array, sent by src and placed by rank 0. */
static enum dt_status
move_part(struct dt_run *r, int src, float *local, float *whole, size_t n,
	  struct dt_error *err)
{
	int req;
	enum dt_status st;

	if (n == 0)
		return DT_OK;
	if (r->rank == 0)
		return dt_comm_recv_f32(r->comm, whole, n, src, TAG_GATHER,
					err);
	st = dt_comm_isend_f32(r->comm, local, n, 0, TAG_GATHER, &req, err);
	if (st == DT_OK)
		st = dt_comm_wait(r->comm, req, err);
	return st;
}

enum dt_status
dt_pipe_full_gather(struct dt_run *r, struct dt_full *f, struct dt_error *err)
{
	float *params = dt_model_params(r->model);
	int n_bufs = 0;
	float **bufs = dt_optim_state(r->optim, &n_bufs);
	enum dt_status st = DT_OK;

	memset(f, 0, sizeof *f);
	if (r->rank == 0) {
		st = dt_pipe_full_alloc(r, f, err);
		if (st == DT_OK)
			copy_stage(r, f, &r->sinfos[0], 1);
	}
	for (int s = 1; s < r->plan.pp_size && st == DT_OK; s++) {
		const struct dt_stage_info *si = &r->sinfos[s];
		int src = dt_plan_rank(&r->plan, 0, s, 0);
		size_t nt = si->trained_hi - si->trained_lo;

		if (r->rank != 0 && r->rank != src)
			continue;
		st = move_part(r, src, params, f->params + (r->rank == 0 ?
			       si->trained_lo : 0), nt, err);
		if (st == DT_OK)
			st = move_part(r, src, params + nt, f->params +
				       (r->rank == 0 ? si->buffer_lo : 0),
				       si->buffer_hi - si->buffer_lo, err);
		for (int b = 0; b < n_bufs && st == DT_OK; b++)
			st = move_part(r, src, bufs[b], r->rank == 0 ?
				       f->bufs[b] + si->trained_lo : NULL, nt,
				       err);
	}
	if (st != DT_OK) {
		/* The other ranks are inside this exchange. */
		fprintf(stderr, "dtrain: rank %d: %s\n", r->rank, err->msg);
		dt_comm_abort(r->comm, dt_status_exit_code(st));
	}
	return DT_OK;
}

void
dt_pipe_full_scatter(struct dt_run *r, struct dt_full *f)
{
	copy_stage(r, f, &r->sinfo, 0);
}
