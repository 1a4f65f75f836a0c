/* report.c - what `dtrain plan --dry-run` shows (see plan.h). The text is
 * printed from the JSON description, so the two always agree. */
#include "plan/plan.h"

#include <json.h>
#include <string.h>

#include "dist/ps.h"
#include "graph/graph.h"

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

struct json_object *
dt_plan_describe(const struct dt_job *job, const struct dt_plan *plan,
		 const struct dt_model *model, int blas_threads,
		 int64_t n_train, int64_t train_bytes, int64_t n_eval,
		 int64_t eval_bytes)
{
	struct json_object *o = json_object_new_object();
	struct json_object *grid = json_object_new_object();
	struct json_object *batch = json_object_new_object();
	struct json_object *layers = json_object_new_array();
	struct json_object *mem = json_object_new_object();
	struct json_object *comm = json_object_new_object();
	struct json_object *data = json_object_new_object();
	struct json_object *ranks = json_object_new_array();
	int64_t n_params = (int64_t)dt_model_n_params(model);
	int64_t n_trained = (int64_t)dt_model_n_trained(model);
	int64_t act = dt_model_act_floats_per_sample(model) * plan->micro_batch;
	int64_t input = dt_model_input_size(model) * plan->micro_batch;
	int64_t p = plan->dp_size, grad_bytes = n_trained * 4;
	int64_t ring = p > 1 ? 2 * (p - 1) * grad_bytes / p : 0;
	double fwd = 0, total_flops;
	int64_t steps_per_epoch = -1, dropped = -1, total_steps = -1;
	int64_t bufs = optim_buffers(job);
	int64_t per_rank;
	int ps = job->parallel.sync == DT_SYNC_PARAMETER_SERVER;
	int async = ps && job->parallel.mode == DT_PS_ASYNC;
	int n_servers = ps ? (int)job->parallel.servers : 0;

	ADD(o, "name", json_object_new_string(job->name));
	ADD(grid, "world_size", json_object_new_int(plan->world_size));
	ADD(grid, "data_parallel", json_object_new_int(plan->dp_size));
	ADD(grid, "pipeline_parallel", json_object_new_int(1));
	ADD(grid, "tensor_parallel", json_object_new_int(1));
	ADD(grid, "blas_threads_per_rank", json_object_new_int(blas_threads));
	ADD(o, "grid", grid);

	ADD(batch, "global_batch", json_object_new_int64(plan->global_batch));
	ADD(batch, "micro_batch", json_object_new_int64(plan->micro_batch));
	ADD(batch, "grad_accum_steps",
	    json_object_new_int64(plan->grad_accum_steps));
	ADD(batch, "per_rank_batch", json_object_new_int64(plan->per_rank_batch));
	if (n_train > 0) {
		steps_per_epoch = n_train / plan->global_batch;
		dropped = n_train - steps_per_epoch * plan->global_batch;
		total_steps = job->train.steps > 0 ? job->train.steps :
			      job->train.epochs * steps_per_epoch;
	}
	ADD(batch, "steps_per_epoch", steps_per_epoch >= 0 ?
	    json_object_new_int64(steps_per_epoch) : NULL);
	ADD(batch, "samples_dropped_per_epoch", dropped >= 0 ?
	    json_object_new_int64(dropped) : NULL);
	ADD(batch, "total_steps", total_steps >= 0 ?
	    json_object_new_int64(total_steps) : NULL);
	ADD(o, "batch", batch);

	for (int i = 0; i < dt_model_n_layers(model); i++) {
		struct dt_layer_info li;
		struct json_object *l = json_object_new_object();

		dt_model_layer_info(model, i, &li);
		ADD(l, "name", json_object_new_string(li.name));
		ADD(l, "kind", json_object_new_string(li.kind));
		ADD(l, "output_shape", shape_array(li.n_dims, li.out_shape));
		ADD(l, "params", json_object_new_int64(li.n_params));
		ADD(l, "fwd_flops_per_sample", json_object_new_double(li.fwd_flops));
		ADD(l, "bwd_flops_per_sample",
		    json_object_new_double(2 * li.fwd_flops));
		ADD(l, "stage", json_object_new_int(0));
		json_object_array_add(layers, l);
		fwd += li.fwd_flops;
	}
	ADD(o, "layers", layers);
	total_flops = dt_model_flops_per_sample(model);
	ADD(o, "params", json_object_new_int64(n_params));
	ADD(o, "flops_per_sample", json_object_new_double(total_flops));
	ADD(o, "fwd_flops_per_sample", json_object_new_double(fwd));
	ADD(o, "flops_per_step",
	    json_object_new_double(total_flops * (double)plan->global_batch));

	/* Per-rank memory in bytes; every data-parallel rank holds the same. */
	ADD(mem, "params", json_object_new_int64(n_params * 4));
	ADD(mem, "grads", json_object_new_int64(n_params * 4));
	ADD(mem, "optimizer_state", json_object_new_int64(bufs * n_trained * 4));
	ADD(mem, "activations", json_object_new_int64((act + input) * 4));
	ADD(mem, "dataset", json_object_new_int64(train_bytes + eval_bytes));
	/* The loader thread's ring of prepared micro-batches (inputs and
	 * labels) and its own copy of the epoch order. */
	int64_t slots = job->data.prefetch * plan->grad_accum_steps;
	int64_t loader = job->data.prefetch > 0 ?
			 slots * (input + plan->micro_batch *
				  dt_model_labels_per_sample(model)) * 4 +
			 (n_train > 0 ? n_train * 8 : 0) : 0;
	ADD(mem, "loader", json_object_new_int64(loader));
	ADD(mem, "runtime", json_object_new_int64(DT_PLAN_RUNTIME_BYTES));
	per_rank = n_params * 4 * 2 + n_trained * 4 * bufs + (act + input) * 4 +
		   train_bytes +
		   eval_bytes + loader + DT_PLAN_RUNTIME_BYTES;
	ADD(mem, "total", json_object_new_int64(per_rank));
	ADD(o, "memory_per_rank", mem);

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
		ADD(comm, "algorithm", json_object_new_string("ring all-reduce"));
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

		ADD(x, "rank", json_object_new_int(r));
		if (r >= plan->dp_size) {
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
		ADD(x, "role", json_object_new_string(ps ? "worker" :
						      "data-parallel worker"));
		ADD(x, "dp_rank", json_object_new_int(r));
		ADD(x, "stage", json_object_new_int(0));
		ADD(x, "samples_per_step",
		    json_object_new_int64(plan->per_rank_batch));
		json_object_array_add(ranks, x);
	}
	ADD(o, "ranks", ranks);
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

void
dt_plan_print(const struct json_object *d, FILE *out)
{
	struct json_object *layers, *x;
	char b1[32], b2[32], b3[32];
	static const char *const memkeys[] = { "params", "grads",
					       "optimizer_state",
					       "activations", "dataset",
					       "loader", "runtime", "total" };

	json_object_object_get_ex(d, "name", &x);
	fprintf(out, "plan for %s\n\n", json_object_get_string(x));
	fprintf(out, "grid: %lld ranks = data-parallel %lld x pipeline %lld x "
		"tensor %lld; %lld BLAS thread(s) per rank\n",
		(long long)get_i(d, "grid", "world_size"),
		(long long)get_i(d, "grid", "data_parallel"),
		(long long)get_i(d, "grid", "pipeline_parallel"),
		(long long)get_i(d, "grid", "tensor_parallel"),
		(long long)get_i(d, "grid", "blas_threads_per_rank"));
	fprintf(out, "batch: global %lld = micro-batch %lld x accumulation "
		"%lld x data-parallel %lld\n",
		(long long)get_i(d, "batch", "global_batch"),
		(long long)get_i(d, "batch", "micro_batch"),
		(long long)get_i(d, "batch", "grad_accum_steps"),
		(long long)get_i(d, "grid", "data_parallel"));
	if (get_i(d, "batch", "steps_per_epoch") >= 0)
		fprintf(out, "steps: %lld per epoch (%lld samples dropped per "
			"epoch of %lld), %lld in all\n",
			(long long)get_i(d, "batch", "steps_per_epoch"),
			(long long)get_i(d, "batch",
					 "samples_dropped_per_epoch"),
			(long long)get_i(d, "data", "train_samples"),
			(long long)get_i(d, "batch", "total_steps"));
	fprintf(out, "\n%-24s %-21s %-18s %12s %14s %14s\n", "layer", "kind",
		"output", "params", "fwd/sample", "bwd/sample");
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
		fprintf(out, "%-24s %-21s %-18s %12lld %14s %14s\n",
			json_object_get_string(name),
			json_object_get_string(kind), shp,
			(long long)get_i(l, "params", NULL), b1, b2);
	}
	json_object_object_get_ex(d, "flops_per_sample", &x);
	flops_text(b1, sizeof b1, json_object_get_double(x));
	json_object_object_get_ex(d, "flops_per_step", &x);
	flops_text(b2, sizeof b2, json_object_get_double(x));
	fprintf(out, "\ntotal: %lld parameters; %s per sample (forward + "
		"backward), %s per optimizer step\n",
		(long long)get_i(d, "params", NULL), b1, b2);
	fprintf(out, "\nmemory per rank:");
	for (size_t i = 0; i < sizeof memkeys / sizeof memkeys[0]; i++) {
		bytes_text(b1, sizeof b1, get_i(d, "memory_per_rank",
						memkeys[i]));
		fprintf(out, "%s %s %s", i ? "," : "", memkeys[i], b1);
	}
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
		} else {
			fprintf(out, "\ncommunication per rank and step: sent "
				"%s, received %s (%s of %s of gradients)\n",
				b1, b2, json_object_get_string(alg), b3);
		}
	}
}
