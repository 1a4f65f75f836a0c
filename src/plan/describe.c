/* SPDX-License-Identifier: MIT */
/* describe.c - what `dtrain plan --dry-run` shows (see plan.h). The text is
 * printed from the JSON description, so the two always agree. */
#include "plan/plan.h"

#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ps.h"
#include "graph/graph.h"
#include "util/alloc.h"
#include "util/jsonnum.h"

#define ADD(o, k, v) json_object_object_add((o), (k), (v))

static struct json_object *
shape_array(int n, const int64_t *dims)
{
	struct json_object *a = json_object_new_array();

	for (int i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_int64(dims[i]));
	return a;
}

static int
optim_buffers(const struct dt_job *job)
{
	if (job->train.optimizer == DT_OPTIM_SGD)
		return job->train.momentum > 0 ? 1 : 0;
	return 2;
}

/* What a rank of each stage holds and moves; describe() fills one per
 * stage. */
struct stage_plan {
	struct dt_stage_info si;
	int64_t in_flight;		/* micro-batches whose activations
					 * the stage holds at once */
	int64_t tp_floats;		/* per sample, summed in the tensor
					 * group */
	struct json_object *memory;	/* of one of its ranks */
	int64_t total;			/* bytes, of one of its ranks */
	int64_t p2p, grad_allreduce, tp_allreduce;	/* bytes per step */
};

static int64_t get_i(const struct json_object *o, const char *a,
		     const char *b);

/* Bytes a gradient value takes on the all-reduce's wire (train/sync.h):
 * bf16 2; else the exact mode's double 8, twice float's 4. */
static int64_t
wire_bytes(const struct dt_job *job, const struct dt_plan *plan)
{
	if (job->parallel.grad_wire == DT_GRAD_WIRE_BF16)
		return 2;
	return plan->exact_accum ? 8 : 4;
}

static const char *
wire_word(const struct dt_job *job, const struct dt_plan *plan)
{
	if (job->parallel.grad_wire == DT_GRAD_WIRE_BF16)
		return "bf16";
	return plan->exact_accum ? "f64" : "f32";
}

/* One stage's memory and bytes per step, for a rank of it (every rank of
 * a stage holds and moves the same). */
static void
plan_stage(const struct dt_job *job, const struct dt_plan *plan,
	   const struct dt_model *model, int64_t dataset, int64_t loader,
	   struct stage_plan *sp)
{
	int64_t bufs = optim_buffers(job), mb = plan->micro_batch;
	int64_t input = dt_model_input_size(model) * mb;
	int64_t per_step = mb * plan->grad_accum_steps;
	/* Each micro-batch in flight has its slot of activations and its
	 * copy of the input batch (train/exec.c). */
	int64_t act = (sp->si.act_floats * mb + input) * sp->in_flight * 4;
	int64_t trained = (int64_t)(sp->si.trained_hi - sp->si.trained_lo);
	/* A rank holds its stage's tensors only (the whole model without a
	 * pipeline): parameters, gradients and optimizer state. */
	int64_t n_trained = trained;
	int64_t n_params = trained + (int64_t)(sp->si.buffer_hi -
					       sp->si.buffer_lo);
	/* Summed in double when the plan says so (exact_accum): an accumulator
	 * of the trained floats, and 8 bytes a value in the all-reduce. */
	int exact = plan->exact_accum;
	int64_t acc = exact ? trained * 8 : 0;
	struct json_object *mem = json_object_new_object();

	ADD(mem, "params", json_object_new_int64(n_params * 4));
	ADD(mem, "grads", json_object_new_int64(n_params * 4));
	ADD(mem, "optimizer_state", json_object_new_int64(bufs * n_trained * 4));
	ADD(mem, "grad_accumulator", json_object_new_int64(acc));
	ADD(mem, "activations", json_object_new_int64(act));
	ADD(mem, "dataset", json_object_new_int64(dataset));
	ADD(mem, "loader", json_object_new_int64(loader));
	ADD(mem, "runtime", json_object_new_int64(DT_PLAN_RUNTIME_BYTES));
	sp->total = n_params * 4 * 2 + n_trained * 4 * bufs + acc + act +
		    dataset + loader + DT_PLAN_RUNTIME_BYTES;
	ADD(mem, "total", json_object_new_int64(sp->total));
	sp->memory = mem;
	/* The three counts the trainer measures and writes to summary.json
	 * (bytes_per_step): keep them computed exactly this way. */
	sp->p2p = (sp->si.send_fwd_floats + sp->si.send_bwd_floats) * 4 *
		  per_step;
	sp->grad_allreduce = job->parallel.sync != DT_SYNC_PARAMETER_SERVER &&
			     plan->dp_size * plan->tp_size > 1 ?
			     trained * wire_bytes(job, plan) : 0;
	sp->tp_allreduce = plan->tp_size > 1 ? sp->tp_floats * 4 * per_step :
			   0;
}

struct json_object *
dt_plan_describe(const struct dt_job *job, const struct dt_plan *plan)
{
	const struct dt_model *model = plan->shapes;
	int blas_threads = plan->blas_threads;
	int64_t n_train = plan->data.n_train;
	int64_t train_bytes = plan->data.train_bytes;
	int64_t n_eval = plan->data.n_eval;
	int64_t eval_bytes = plan->data.eval_bytes;
	struct json_object *o = json_object_new_object();
	struct json_object *grid = json_object_new_object();
	struct json_object *batch = json_object_new_object();
	struct json_object *layers = json_object_new_array();
	struct json_object *stages = json_object_new_array();
	struct json_object *comm = json_object_new_object();
	struct json_object *data = json_object_new_object();
	struct json_object *ranks = json_object_new_array();
	int n_nodes = dt_model_n_layers(model);
	int pp = plan->pp_size > 0 ? plan->pp_size : 1;
	const int *stage_of_node = plan->stage_of_node;
	struct stage_plan *sp = dt_xcalloc((size_t)pp, sizeof *sp);
	int64_t n_params = (int64_t)dt_model_n_params(model);
	int64_t n_trained = (int64_t)dt_model_n_trained(model);
	int64_t input = dt_model_input_size(model) * plan->micro_batch;
	int64_t p = plan->dp_size, grad_bytes = n_trained * 4, ring;
	double fwd = 0, total_flops;
	int64_t steps_per_epoch = plan->steps_per_epoch;
	int64_t dropped = plan->samples_dropped;
	int64_t total_steps = plan->total_steps;
	int64_t bufs = optim_buffers(job);
	int ps = job->parallel.sync == DT_SYNC_PARAMETER_SERVER;
	int async = ps && job->parallel.mode == DT_PS_ASYNC;
	int n_servers = ps ? (int)job->parallel.servers : 0;
	int split = pp > 1 || plan->tp_size > 1, busiest = 0;
	int by_params = job->parallel.balance == DT_BALANCE_PARAMS;
	double balanced = 0;		/* FLOPs or parameters of all stages */
	struct json_object *mem0 = NULL;	/* rank 0's, with a gather */

	ADD(o, "name", json_object_new_string(job->name));
	ADD(grid, "world_size", json_object_new_int(plan->world_size));
	ADD(grid, "data_parallel", json_object_new_int(plan->dp_size));
	ADD(grid, "pipeline_parallel", json_object_new_int(pp));
	ADD(grid, "tensor_parallel", json_object_new_int(
		    plan->tp_size > 0 ? plan->tp_size : 1));
	ADD(grid, "schedule", json_object_new_string(
		    plan->pipe_schedule == DT_PIPE_1F1B ? "1f1b" : "gpipe"));
	ADD(grid, "micro_batches", json_object_new_int64(
		    plan->grad_accum_steps));
	ADD(grid, "accum_schedule", json_object_new_string(
		    plan->accum_schedule == DT_ACCUM_BREADTH_FIRST ?
		    "breadth_first" : "depth_first"));
	ADD(grid, "bubble_fraction", dt_json_float(
		    dt_plan_bubble(plan)));
	ADD(grid, "blas_threads_per_rank", json_object_new_int(blas_threads));
	ADD(grid, "balance", json_object_new_string(by_params ? "params" :
						     "flops"));
	ADD(o, "grid", grid);

	ADD(batch, "global_batch", json_object_new_int64(plan->global_batch));
	ADD(batch, "micro_batch", json_object_new_int64(plan->micro_batch));
	ADD(batch, "grad_accum_steps",
	    json_object_new_int64(plan->grad_accum_steps));
	ADD(batch, "per_rank_batch", json_object_new_int64(plan->per_rank_batch));
	ADD(batch, "steps_per_epoch", steps_per_epoch >= 0 ?
	    json_object_new_int64(steps_per_epoch) : NULL);
	ADD(batch, "samples_dropped_per_epoch", dropped >= 0 ?
	    json_object_new_int64(dropped) : NULL);
	ADD(batch, "total_steps", total_steps >= 0 ?
	    json_object_new_int64(total_steps) : NULL);
	ADD(o, "batch", batch);

	for (int i = 0; i < n_nodes; i++) {
		struct dt_layer_info li;
		struct json_object *l = json_object_new_object();

		dt_model_layer_info(model, i, &li);
		ADD(l, "name", json_object_new_string(li.name));
		ADD(l, "kind", json_object_new_string(li.kind));
		ADD(l, "output_shape", shape_array(li.n_dims, li.out_shape));
		ADD(l, "params", json_object_new_int64(li.n_params));
		ADD(l, "fwd_flops_per_sample", dt_json_number(li.fwd_flops));
		ADD(l, "bwd_flops_per_sample",
		    dt_json_number(2 * li.fwd_flops));
		ADD(l, "stage", json_object_new_int(stage_of_node[i]));
		json_object_array_add(layers, l);
		fwd += li.fwd_flops;
	}
	ADD(o, "layers", layers);
	total_flops = dt_model_flops_per_sample(model);
	ADD(o, "params", json_object_new_int64(n_params));
	ADD(o, "flops_per_sample", dt_json_number(total_flops));
	ADD(o, "fwd_flops_per_sample", dt_json_number(fwd));
	ADD(o, "flops_per_step",
	    dt_json_number(total_flops * (double)plan->global_batch));

	/* The loader thread's ring of prepared micro-batches (inputs and
	 * labels) and its own copy of the epoch order. */
	int64_t slots = job->data.prefetch * plan->grad_accum_steps;
	int64_t loader = job->data.prefetch > 0 ?
			 slots * (input + plan->micro_batch *
				  dt_model_labels_per_sample(model)) * 4 +
			 (n_train > 0 ? n_train * 8 : 0) : 0;

	for (int s = 0; s < pp; s++) {
		struct json_object *x = json_object_new_object();
		struct json_object *names = json_object_new_array();
		struct json_object *in = json_object_new_array();
		const struct dt_stage_info *si = &sp[s].si;

		sp[s].si = plan->stages[s];
		sp[s].in_flight = plan->in_flight[s];
		sp[s].tp_floats = dt_model_tp_floats_per_sample(
			model, si->first_node, si->last_node);
		plan_stage(job, plan, model, train_bytes + eval_bytes, loader,
			   &sp[s]);
		if (sp[s].total > sp[busiest].total)
			busiest = s;
		for (int i = si->first_node; i <= si->last_node; i++) {
			struct dt_layer_info li;

			dt_model_layer_info(model, i, &li);
			json_object_array_add(names,
					      json_object_new_string(li.name));
		}
		for (int r = 0; r < plan->world_size && !(ps &&
		     r >= plan->dp_size); r++) {
			struct dt_grid_pos pos;

			dt_plan_position(plan, r, &pos);
			if (pos.stage == s)
				json_object_array_add(in,
						      json_object_new_int(r));
		}
		ADD(x, "stage", json_object_new_int(s));
		ADD(x, "first_node", json_object_new_int(si->first_node));
		ADD(x, "last_node", json_object_new_int(si->last_node));
		ADD(x, "nodes", names);
		ADD(x, "flops_per_sample",
		    dt_json_number(si->flops_per_sample));
		ADD(x, "params", json_object_new_int64(si->n_params));
		ADD(x, "trained_params", json_object_new_int64(
			    (int64_t)(si->trained_hi - si->trained_lo)));
		ADD(x, "activation_floats_per_sample",
		    json_object_new_int64(si->act_floats));
		ADD(x, "micro_batches_in_flight",
		    json_object_new_int64(sp[s].in_flight));
		/* As in the ranks' memory: the slots and the input batch. */
		ADD(x, "activation_bytes", json_object_new_int64(
			    get_i(sp[s].memory, "activations", NULL)));
		ADD(x, "send_fwd_floats_per_sample",
		    json_object_new_int64(si->send_fwd_floats));
		ADD(x, "send_bwd_floats_per_sample",
		    json_object_new_int64(si->send_bwd_floats));
		ADD(x, "tp_floats_per_sample",
		    json_object_new_int64(sp[s].tp_floats));
		ADD(x, "ranks", in);
		json_object_array_add(stages, x);
	}
	/* Each stage's share of what the stages are balanced on. */
	for (int s = 0; s < pp; s++)
		balanced += by_params ? (double)sp[s].si.n_params :
			    sp[s].si.flops_per_sample;
	for (int s = 0; s < pp; s++)
		ADD(json_object_array_get_idx(stages, (size_t)s), "share",
		    dt_json_number(balanced > 0 ? (by_params ?
			(double)sp[s].si.n_params :
			sp[s].si.flops_per_sample) / balanced : 0));
	ADD(o, "stages", stages);


	if (ps) {
		/* A worker pushes its gradient and pulls the parameters, all
		 * shards together: the gradient bytes each way per step. */
		ADD(comm, "algorithm", json_object_new_string(
			    "parameter server"));
		ADD(comm, "gradient_bytes", json_object_new_int64(grad_bytes));
		ADD(comm, "sent_per_step", json_object_new_int64(grad_bytes));
		ADD(comm, "received_per_step", json_object_new_int64(grad_bytes));
		ADD(comm, "server_bytes_per_step", json_object_new_int64(
			    (int64_t)dt_ps_server_step_bytes(
				    (size_t)n_trained, n_servers, (int)p)));
		ADD(comm, "server_memory", json_object_new_int64(
			    (int64_t)dt_ps_server_bytes(
				    (size_t)n_trained, n_servers, (int)p,
				    async ? job->parallel.max_staleness : 0,
				    (int)bufs)));
		ADD(comm, "mode", json_object_new_string(async ? "async" :
							 "sync"));
		ADD(comm, "max_staleness", json_object_new_int64(
			    async ? job->parallel.max_staleness : 0));
	} else {
		/* The ring over the dp x tp ranks of the stage with the most
		 * trained floats, in the precision they are summed in. */
		int64_t elem = wire_bytes(job, plan);

		grad_bytes = 0;
		for (int s = 0; s < pp; s++) {
			int64_t b = (int64_t)(sp[s].si.trained_hi -
					      sp[s].si.trained_lo) * elem;

			if (b > grad_bytes)
				grad_bytes = b;
		}
		p = (int64_t)plan->dp_size * (plan->tp_size > 0 ?
					      plan->tp_size : 1);
		ring = p > 1 ? 2 * (p - 1) * grad_bytes / p : 0;
		/* The exact mode's ring (comm/comm.h): reduce-scatter of
		 * the doubles, all-gather of the rounded floats, (p-1)/p x
		 * (8 + 4) bytes a value. With several ranks on a host
		 * (parallel.hierarchical) the hosts sum doubles. */
		if (elem == 8)
			ring = p > 1 ? 3 * (p - 1) * grad_bytes / (2 * p) : 0;
		ADD(comm, "algorithm", json_object_new_string(elem == 8 ?
			    "ring reduce-scatter (f64) and all-gather (f32)" :
			    "ring all-reduce"));
		/* The wire's element (train/sync.h), whether buckets start
		 * during backward, and their size. */
		ADD(comm, "wire", json_object_new_string(wire_word(job, plan)));
		ADD(comm, "wire_bytes_per_value", json_object_new_int64(elem));
		ADD(comm, "overlap", json_object_new_boolean(
			    job->parallel.overlap));
		ADD(comm, "bucket_bytes", json_object_new_int64(
			    (int64_t)(job->parallel.bucket_mb * 1048576.0)));
		ADD(comm, "gradient_bytes", json_object_new_int64(grad_bytes));
		ADD(comm, "sent_per_step", json_object_new_int64(ring));
		ADD(comm, "received_per_step", json_object_new_int64(ring));
	}
	ADD(o, "communication_per_rank", comm);

	ADD(data, "train_samples", n_train >= 0 ?
	    json_object_new_int64(n_train) : NULL);
	ADD(data, "eval_samples", n_eval >= 0 ?
	    json_object_new_int64(n_eval) : NULL);
	ADD(o, "data", data);

	for (int r = 0; r < plan->world_size; r++) {
		struct json_object *x = json_object_new_object();
		struct json_object *bytes;
		struct dt_grid_pos pos;

		ADD(x, "rank", json_object_new_int(r));
		if (ps && r >= plan->dp_size) {
			size_t off, len;

			dt_ps_shard((size_t)n_trained, n_servers,
				    r - plan->dp_size, &off, &len);
			ADD(x, "role", json_object_new_string(
				    "parameter server"));
			ADD(x, "shard_offset", json_object_new_int64((int64_t)off));
			ADD(x, "shard_params", json_object_new_int64((int64_t)len));
			json_object_array_add(ranks, x);
			continue;
		}
		dt_plan_position(plan, r, &pos);
		ADD(x, "role", json_object_new_string(
			    ps ? "worker" : split ? "model-parallel worker" :
			    "data-parallel worker"));
		ADD(x, "dp_rank", json_object_new_int(pos.dp));
		ADD(x, "dp", json_object_new_int(pos.dp));
		ADD(x, "stage", json_object_new_int(pos.stage));
		ADD(x, "tp", json_object_new_int(pos.tp));
		ADD(x, "samples_per_step",
		    json_object_new_int64(plan->per_rank_batch));
		if (r == 0 && pp > 1) {
			/* Rank 0 holds the whole model while it writes a
			 * checkpoint: the parameters and optimizer state
			 * gathered from every stage. */
			struct json_object *m = NULL, *t = NULL;
			int64_t gather = (n_params + bufs * n_trained) * 4;

			json_object_deep_copy(sp[pos.stage].memory, &m, NULL);
			json_object_object_get_ex(m, "total", &t);
			ADD(m, "checkpoint_gather", json_object_new_int64(gather));
			ADD(m, "total", json_object_new_int64(
				    json_object_get_int64(t) + gather));
			ADD(x, "memory", m);
			mem0 = m;
		} else {
			ADD(x, "memory", json_object_get(sp[pos.stage].memory));
		}
		bytes = json_object_new_object();
		ADD(bytes, "p2p_bytes", json_object_new_int64(sp[pos.stage].p2p));
		ADD(bytes, "grad_allreduce_bytes",
		    json_object_new_int64(sp[pos.stage].grad_allreduce));
		ADD(bytes, "tp_allreduce_bytes",
		    json_object_new_int64(sp[pos.stage].tp_allreduce));
		ADD(x, "bytes_per_step", bytes);
		json_object_array_add(ranks, x);
	}
	ADD(o, "ranks", ranks);
	/* The rank that needs the most (every rank's without a pipeline;
	 * with one, rank 0 while it gathers a checkpoint, or the stage
	 * with the most). */
	ADD(o, "memory_per_rank", json_object_get(
		    mem0 != NULL && get_i(mem0, "total", NULL) >
		    sp[busiest].total ? mem0 : sp[busiest].memory));
	for (int s = 0; s < pp; s++)
		json_object_put(sp[s].memory);
	free(sp);
	return o;
}

static int64_t
get_i(const struct json_object *o, const char *a, const char *b)
{
	struct json_object *x = NULL, *y = NULL;

	if (!json_object_object_get_ex(o, a, &x))
		return -1;
	if (b == NULL)
		return json_object_get_int64(x);
	if (!json_object_object_get_ex(x, b, &y) || y == NULL)
		return -1;
	return json_object_get_int64(y);
}

static void
bytes_text(char *buf, size_t size, int64_t b)
{
	if (b >= (int64_t)1 << 30)
		snprintf(buf, size, "%.2f GiB", (double)b / (1 << 30));
	else if (b >= 1 << 20)
		snprintf(buf, size, "%.2f MiB", (double)b / (1 << 20));
	else if (b >= 1 << 10)
		snprintf(buf, size, "%.1f KiB", (double)b / (1 << 10));
	else
		snprintf(buf, size, "%lld B", (long long)b);
}

static void
flops_text(char *buf, size_t size, double f)
{
	if (f >= 1e9)
		snprintf(buf, size, "%.3f GFLOP", f * 1e-9);
	else if (f >= 1e6)
		snprintf(buf, size, "%.3f MFLOP", f * 1e-6);
	else
		snprintf(buf, size, "%.0f FLOP", f);
}

static struct json_object *
get(const struct json_object *o, const char *key)
{
	struct json_object *x = NULL;

	json_object_object_get_ex(o, key, &x);
	return x;
}

/* "0-1, 4-5, 8": the ints of array a, runs of consecutive ones as
 * ranges. */
static void
print_list(FILE *out, struct json_object *a)
{
	size_t n = json_object_array_length(a);

	for (size_t i = 0; i < n;) {
		int64_t lo = json_object_get_int64(
			json_object_array_get_idx(a, i));
		size_t j = i;

		while (j + 1 < n && json_object_get_int64(
			       json_object_array_get_idx(a, j + 1)) ==
		       lo + (int64_t)(j + 1 - i))
			j++;
		if (j == i)
			fprintf(out, "%s%lld", i ? ", " : "", (long long)lo);
		else
			fprintf(out, "%s%lld-%lld", i ? ", " : "",
				(long long)lo, (long long)(lo + (int64_t)(j - i)));
		i = j + 1;
	}
}

static void
print_memory(FILE *out, const char *head, struct json_object *mem)
{
	static const char *const memkeys[] = { "params", "grads",
					       "optimizer_state",
					       "grad_accumulator",
					       "activations", "dataset",
					       "loader", "runtime",
					       "checkpoint_gather", "total" };
	char b[32];

	fprintf(out, "%s", head);
	for (size_t i = 0; i < sizeof memkeys / sizeof memkeys[0]; i++) {
		/* The accumulator exists only on the double path, the
		 * gather only on rank 0 of a pipeline. */
		if ((strcmp(memkeys[i], "grad_accumulator") == 0 ||
		     strcmp(memkeys[i], "checkpoint_gather") == 0) &&
		    get_i(mem, memkeys[i], NULL) <= 0)
			continue;
		bytes_text(b, sizeof b, get_i(mem, memkeys[i], NULL));
		fprintf(out, "%s %s %s", i ? "," : "", memkeys[i], b);
	}
}

/* Per stage: its nodes, work, ranks, and what each of its ranks holds
 * and moves per optimizer step. */
/* The all-reduce's wire: the element, what the exact mode costs, and
 * the buckets. */
static void
print_wire(FILE *out, struct json_object *comm)
{
	struct json_object *w, *ov, *bb;
	const char *word;
	char b[32];

	if (get_i(comm, "sent_per_step", NULL) == 0 ||
	    !json_object_object_get_ex(comm, "wire", &w) ||
	    !json_object_object_get_ex(comm, "overlap", &ov) ||
	    !json_object_object_get_ex(comm, "bucket_bytes", &bb))
		return;
	word = json_object_get_string(w);
	bytes_text(b, sizeof b, json_object_get_int64(bb));
	fprintf(out, "gradients on the wire as %s (%s)", word,
		strcmp(word, "f64") == 0 ? "the exact double sum: 8 bytes a "
		"value reduce-scattered, the rounded float's 4 gathered back, "
		"1.5 x the bytes of f32" : strcmp(word, "bf16") == 0 ?
		"2 bytes a value, summed in f32: half the bytes of f32" :
		"4 bytes a value");
	if (json_object_get_boolean(ov))
		fprintf(out, "; summed in buckets of %s started during "
			"backward\n", b);
	else
		fprintf(out, "; one blocking sum after backward\n");
}

static void
print_stages(const struct json_object *d, FILE *out)
{
	struct json_object *stages = get(d, "stages"), *ranks = get(d, "ranks");
	int world = (int)get_i(d, "grid", "world_size");
	char b1[32], b2[32], b3[32];

	fprintf(out, "\n");
	for (size_t s = 0; s < json_object_array_length(stages); s++) {
		struct json_object *st = json_object_array_get_idx(stages, s);
		struct json_object *nodes = get(st, "nodes"), *in = get(st, "ranks");
		struct json_object *r, *bytes;
		size_t nn = json_object_array_length(nodes);

		if (json_object_array_length(in) == 0)
			continue;
		r = json_object_array_get_idx(ranks, (size_t)
			json_object_get_int64(json_object_array_get_idx(in, 0)));
		flops_text(b1, sizeof b1, json_object_get_double(
				   get(st, "flops_per_sample")));
		if (nn == 1)
			fprintf(out, "stage %zu: node %lld (%s)", s,
				(long long)get_i(st, "first_node", NULL),
				json_object_get_string(
					json_object_array_get_idx(nodes, 0)));
		else
			fprintf(out, "stage %zu: nodes %lld-%lld (%s .. %s, "
				"%zu)", s,
				(long long)get_i(st, "first_node", NULL),
				(long long)get_i(st, "last_node", NULL),
				json_object_get_string(
					json_object_array_get_idx(nodes, 0)),
				json_object_get_string(
					json_object_array_get_idx(nodes,
								  nn - 1)), nn);
		fprintf(out, ", %s per sample, %lld parameters", b1,
			(long long)get_i(st, "params", NULL));
		if (json_object_array_length(stages) > 1)
			fprintf(out, ", %.1f%% of the %s", 100 *
				json_object_get_double(get(st, "share")),
				strcmp(json_object_get_string(get(get(d,
					"grid"), "balance")), "params") == 0 ?
				"parameters" : "FLOPs");
		fprintf(out, "\n");
		fprintf(out, "  ranks ");
		print_list(out, in);
		if (world <= 16) {
			fprintf(out, " (dp, stage, tp:");
			for (size_t i = 0; i < json_object_array_length(in);
			     i++) {
				struct json_object *x = json_object_array_get_idx(
					ranks, (size_t)json_object_get_int64(
						json_object_array_get_idx(in,
									  i)));

				fprintf(out, "%s %lld,%lld,%lld", i ? ";" : "",
					(long long)get_i(x, "dp", NULL),
					(long long)get_i(x, "stage", NULL),
					(long long)get_i(x, "tp", NULL));
			}
			fprintf(out, ")");
		}
		fprintf(out, "; %lld micro-batch(es) of activations held\n",
			(long long)get_i(st, "micro_batches_in_flight", NULL));
		/* Rank 0 also holds the gathered model while it writes a
		 * checkpoint: its own line. */
		if (get_i(r, "rank", NULL) == 0 &&
		    json_object_array_length(in) > 1)
			r = json_object_array_get_idx(ranks, (size_t)
				json_object_get_int64(
					json_object_array_get_idx(in, 1)));
		print_memory(out, get_i(r, "rank", NULL) == 0 ?
			     "  memory of rank 0:" : "  memory per rank:",
			     get(r, "memory"));
		if (s == 0 && get_i(r, "rank", NULL) != 0) {
			struct json_object *r0 =
				json_object_array_get_idx(ranks, 0);

			print_memory(out, "\n  memory of rank 0:",
				     get(r0, "memory"));
		}
		bytes = get(r, "bytes_per_step");
		bytes_text(b1, sizeof b1, get_i(bytes, "p2p_bytes", NULL));
		bytes_text(b2, sizeof b2, get_i(bytes, "grad_allreduce_bytes",
						NULL));
		bytes_text(b3, sizeof b3, get_i(bytes, "tp_allreduce_bytes",
						NULL));
		fprintf(out, "\n  bytes per rank and step: point-to-point %s, "
			"gradient all-reduce %s, tensor all-reduce %s\n", b1,
			b2, b3);
	}
	fprintf(out, "a rank holds its stage's parameters, gradients and "
		"optimizer state; the ranks of a tensor group hold whole "
		"tensors and compute their slices\n");
}

void
dt_plan_print(const struct json_object *d, FILE *out)
{
	struct json_object *layers, *x;
	char b1[32], b2[32], b3[32];
	int64_t pp = get_i(d, "grid", "pipeline_parallel");
	int split = pp > 1 || get_i(d, "grid", "tensor_parallel") > 1;

	json_object_object_get_ex(d, "name", &x);
	fprintf(out, "plan for %s\n\n", json_object_get_string(x));
	fprintf(out, "grid: %lld rank%s = data-parallel %lld x pipeline %lld "
		"x tensor %lld; %lld BLAS thread(s) per rank\n",
		(long long)get_i(d, "grid", "world_size"),
		get_i(d, "grid", "world_size") == 1 ? "" : "s",
		(long long)get_i(d, "grid", "data_parallel"),
		(long long)pp,
		(long long)get_i(d, "grid", "tensor_parallel"),
		(long long)get_i(d, "grid", "blas_threads_per_rank"));
	if (pp > 1)
		fprintf(out, "pipeline: %s schedule, %lld micro-batch(es) per "
			"step, bubble %.1f%% of each step\n",
			json_object_get_string(get(get(d, "grid"), "schedule")),
			(long long)get_i(d, "grid", "micro_batches"),
			100 * json_object_get_double(get(get(d, "grid"),
							 "bubble_fraction")));
	fprintf(out, "batch: global %lld = micro-batch %lld x accumulation "
		"%lld x data-parallel %lld\n",
		(long long)get_i(d, "batch", "global_batch"),
		(long long)get_i(d, "batch", "micro_batch"),
		(long long)get_i(d, "batch", "grad_accum_steps"),
		(long long)get_i(d, "grid", "data_parallel"));
	if (pp == 1)
		fprintf(out, "accumulation schedule: %s (%s)\n",
			json_object_get_string(get(get(d, "grid"),
						   "accum_schedule")),
			strcmp(json_object_get_string(get(get(d, "grid"),
				"accum_schedule")), "breadth_first") == 0 ?
			"every forward, then the backward node by node over "
			"the micro-batches" : "forward and backward of one "
			"micro-batch after another");
	if (get_i(d, "batch", "steps_per_epoch") >= 0)
		fprintf(out, "steps: %lld per epoch (%lld samples dropped per "
			"epoch of %lld), %lld in all\n",
			(long long)get_i(d, "batch", "steps_per_epoch"),
			(long long)get_i(d, "batch",
					 "samples_dropped_per_epoch"),
			(long long)get_i(d, "data", "train_samples"),
			(long long)get_i(d, "batch", "total_steps"));
	fprintf(out, "\n%-24s %-21s %-18s %12s %14s %14s%s\n", "layer", "kind",
		"output", "params", "fwd/sample", "bwd/sample",
		pp > 1 ? "  stage" : "");
	json_object_object_get_ex(d, "layers", &layers);
	for (size_t i = 0; i < json_object_array_length(layers); i++) {
		struct json_object *l = json_object_array_get_idx(layers, i);
		struct json_object *name, *kind, *shape, *fw;
		char shp[64] = "(";
		size_t len = 1;

		json_object_object_get_ex(l, "name", &name);
		json_object_object_get_ex(l, "kind", &kind);
		json_object_object_get_ex(l, "output_shape", &shape);
		json_object_object_get_ex(l, "fwd_flops_per_sample", &fw);
		for (size_t k = 0; k < json_object_array_length(shape); k++)
			len += (size_t)snprintf(shp + len, sizeof shp - len,
						"%s%lld", k ? ", " : "",
						(long long)json_object_get_int64(
							json_object_array_get_idx(shape, k)));
		if (len < sizeof shp - 1)
			strcat(shp, ")");
		flops_text(b1, sizeof b1, json_object_get_double(fw));
		flops_text(b2, sizeof b2, 2 * json_object_get_double(fw));
		fprintf(out, "%-24s %-21s %-18s %12lld %14s %14s",
			json_object_get_string(name),
			json_object_get_string(kind), shp,
			(long long)get_i(l, "params", NULL), b1, b2);
		if (pp > 1)
			fprintf(out, "  %5lld", (long long)get_i(l, "stage",
								 NULL));
		fprintf(out, "\n");
	}
	json_object_object_get_ex(d, "flops_per_sample", &x);
	flops_text(b1, sizeof b1, json_object_get_double(x));
	json_object_object_get_ex(d, "flops_per_step", &x);
	flops_text(b2, sizeof b2, json_object_get_double(x));
	fprintf(out, "\ntotal: %lld parameters; %s per sample (forward + "
		"backward%s), %s per optimizer step\n",
		(long long)get_i(d, "params", NULL), b1,
		get_i(d, "grid", "tensor_parallel") > 1 ?
		", one tensor-parallel rank's share" : "", b2);
	if (split)
		print_stages(d, out);
	else
		print_memory(out, "\nmemory per rank:",
			     get(d, "memory_per_rank"));
	bytes_text(b1, sizeof b1, get_i(d, "communication_per_rank",
					"sent_per_step"));
	bytes_text(b2, sizeof b2, get_i(d, "communication_per_rank",
					"received_per_step"));
	bytes_text(b3, sizeof b3, get_i(d, "communication_per_rank",
					"gradient_bytes"));
	json_object_object_get_ex(d, "communication_per_rank", &x);
	{
		struct json_object *alg, *sb, *sm, *mode, *stale;

		json_object_object_get_ex(x, "algorithm", &alg);
		if (json_object_object_get_ex(x, "server_bytes_per_step", &sb)) {
			char b4[32], b5[32];

			json_object_object_get_ex(x, "server_memory", &sm);
			json_object_object_get_ex(x, "mode", &mode);
			json_object_object_get_ex(x, "max_staleness", &stale);
			bytes_text(b4, sizeof b4, json_object_get_int64(sb));
			bytes_text(b5, sizeof b5, json_object_get_int64(sm));
			fprintf(out, "\nworkers: %lld; parameter servers: %lld "
				"(%s mode, max staleness %lld); each server moves "
				"%s per step and holds %s\n",
				(long long)get_i(d, "grid", "data_parallel"),
				(long long)(get_i(d, "grid", "world_size") -
					    get_i(d, "grid", "data_parallel")),
				json_object_get_string(mode),
				(long long)json_object_get_int64(stale), b4, b5);
			fprintf(out, "communication per worker and step: "
				"pushes %s, pulls %s\n", b1, b2);
		} else if (split && get_i(d, "communication_per_rank",
					  "sent_per_step") == 0) {
			fprintf(out, "no gradient all-reduce: each stage has "
				"one rank\n");
		} else {
			fprintf(out, "%s%s per rank and step: sent %s, received "
				"%s (%s of %s of gradients%s)\n",
				split ? "" : "\n", split ?
				"gradient all-reduce on the wire (ring estimate)" :
				"communication", b1, b2,
				json_object_get_string(alg), b3,
				split ? " over the data- and tensor-parallel "
				"ranks of the largest stage" : "");
			print_wire(out, x);
		}
	}
	dt_plan_link_print(d, out);
}
