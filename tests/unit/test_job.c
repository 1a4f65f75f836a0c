/* SPDX-License-Identifier: MIT */
/* test_job.c - Check suite for src/job/: a full job parses to the expected
 * fields, defaults, paths, --set overrides, the write/read round trip,
 * positions, loading a file, and every schema key and every layer type
 * (from the list in job/layer_types.h) documented in man/dtrain-job.5.
 * The error messages are tested in test_job_errors.c. */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job/job.h"
#include "util/status.h"

#include "job_test.h"

/* Big (the layer table); one per process is enough, Check forks per test. */
struct dt_job job;
struct dt_error err;

/* A job that uses every section. */
static const char full_job[] =
	"# MNIST, a small MLP\n"
	"name: mnist-mlp\n"
	"seed: 1234\n"
	"data:\n"
	"  format: idx\n"
	"  train:\n"
	"    images: data/train-images-idx3-ubyte.gz\n"
	"    labels: ./data/train-labels-idx1-ubyte.gz\n"
	"  eval: {images: /srv/mnist/t10k-images.gz, labels: t10k-labels.gz}\n"
	"  scale: 0.5\n"
	"model:\n"
	"  input_shape: [28, 28]\n"
	"  layers:\n"
	"    - {type: dense, units: 256, activation: relu}\n"
	"    - type: dense\n"
	"      units: 128\n"
	"      activation: gelu\n"
	"      name: hidden\n"
	"    - {type: dense, units: 10, name: logits}\n"
	"  loss: softmax_cross_entropy\n"
	"train:\n"
	"  global_batch: 256\n"
	"  micro_batch: 64\n"
	"  epochs: 3\n"
	"  optimizer: adamw\n"
	"  lr: 3e-4\n"
	"  weight_decay: 0.01\n"
	"  beta1: 0.8\n"
	"  beta2: 0.99\n"
	"  eps: 1E-6\n"
	"parallel:\n"
	"  strategy: data\n"
	"  data_parallel: 2\n"
	"eval:\n"
	"  every_steps: 100\n"
	"log:\n"
	"  every_steps: 20\n";

/* The least a job needs. */
const char min_job[] =
	"data:\n"
	"  train: {images: a.idx, labels: b.idx}\n"
	"model:\n"
	"  input_shape: [4]\n"
	"  layers:\n"
	"    - {type: dense, units: 3}\n"
	"train:\n"
	"  micro_batch: 8\n"
	"  steps: 100\n"
	"  lr: 0.1\n";

enum dt_status
parse_as(const char *name, const char *text, const char *const *sets,
	 int n_sets)
{
	memset(&err, 0, sizeof err);
	return dt_job_parse(name, text, strlen(text), sets, n_sets, &job,
			    &err);
}

enum dt_status
parse(const char *text)
{
	return parse_as("/jobs/job.yaml", text, NULL, 0);
}

/* Parses text (named job.yaml) with the overrides and expects exactly msg. */
void
expect_error(const char *text, const char *const *sets, int n_sets,
	     const char *msg)
{
	enum dt_status st = parse_as("job.yaml", text, sets, n_sets);

	ck_assert_int_eq(st, DT_ERR_JOB);
	ck_assert_int_eq(err.status, DT_ERR_JOB);
	ck_assert_str_eq(err.msg, msg);
}

/* min_job with one line appended to its train section. */
const char *
min_with(const char *train_line)
{
	static char buf[1024];

	snprintf(buf, sizeof buf, "%s%s", min_job, train_line);
	return buf;
}

const char *
layers_job(const char *layers)
{
	static char buf[8192];

	snprintf(buf, sizeof buf, "data:\n  train: {images: a.idx, labels: "
		 "b.idx}\nmodel:\n  input_shape: [1, 8, 8]\n  layers:\n%s"
		 "train: {micro_batch: 8, steps: 10, lr: 0.1}\n", layers);
	return buf;
}

const char *
data_job(const char *data, const char *tail)
{
	static char buf[8192];

	snprintf(buf, sizeof buf, "model:\n  input_shape: [4]\n  layers: "
		 "[{type: dense, units: 2, name: a}, {type: dense, units: 2, "
		 "name: b}, {type: dense, units: 2, name: c}]\ntrain: "
		 "{micro_batch: 8, steps: 10, lr: 0.1}\ndata:\n%s%s", data,
		 tail);
	return buf;
}

START_TEST(test_full_job)
{
	const struct dt_layer_spec *l = job.model.layers;

	ck_assert_int_eq(parse(full_job), DT_OK);
	ck_assert_str_eq(job.path, "/jobs/job.yaml");
	ck_assert_str_eq(job.name, "mnist-mlp");
	ck_assert_uint_eq(job.seed, 1234);
	ck_assert_int_eq(job.data.format, DT_FORMAT_IDX);
	ck_assert_str_eq(job.data.train.images,
			 "/jobs/data/train-images-idx3-ubyte.gz");
	ck_assert_str_eq(job.data.train.labels,
			 "/jobs/data/train-labels-idx1-ubyte.gz");
	ck_assert_str_eq(job.data.eval.images, "/srv/mnist/t10k-images.gz");
	ck_assert_str_eq(job.data.eval.labels, "/jobs/t10k-labels.gz");
	ck_assert(job.data.scale == 0.5);

	ck_assert_int_eq(job.model.n_input_dims, 2);
	ck_assert_int_eq(job.model.input_shape[0], 28);
	ck_assert_int_eq(job.model.input_shape[1], 28);
	ck_assert_int_eq(job.model.n_layers, 3);
	ck_assert_int_eq(l[0].kind, DT_LAYER_DENSE);
	ck_assert_int_eq(l[0].units, 256);
	ck_assert_int_eq(l[0].activation, DT_ACT_RELU);
	ck_assert_str_eq(l[0].name, "dense0");
	ck_assert_int_eq(l[1].units, 128);
	ck_assert_int_eq(l[1].activation, DT_ACT_GELU);
	ck_assert_str_eq(l[1].name, "hidden");
	ck_assert_int_eq(l[2].units, 10);
	ck_assert_int_eq(l[2].activation, DT_ACT_NONE);
	ck_assert_str_eq(l[2].name, "logits");
	ck_assert_int_eq(l[1].pos.line, 15);
	ck_assert_int_eq(l[1].pos.col, 7);
	ck_assert_int_eq(job.model.loss, DT_LOSS_SOFTMAX_CROSS_ENTROPY);

	ck_assert_int_eq(job.train.global_batch, 256);
	ck_assert_int_eq(job.train.micro_batch, 64);
	ck_assert_int_eq(job.train.grad_accum_steps, 0);
	ck_assert_int_eq(job.train.epochs, 3);
	ck_assert_int_eq(job.train.steps, 0);
	ck_assert_int_eq(job.train.optimizer, DT_OPTIM_ADAMW);
	ck_assert(job.train.lr == 3e-4);
	ck_assert(job.train.momentum == 0.0);
	ck_assert(!job.train.nesterov);
	ck_assert(job.train.weight_decay == 0.01);
	ck_assert(job.train.beta1 == 0.8);
	ck_assert(job.train.beta2 == 0.99);
	ck_assert(job.train.eps == 1e-6);
	ck_assert_int_eq(job.parallel.strategy, DT_STRATEGY_DATA);
	ck_assert_int_eq(job.parallel.data_parallel, 2);
	ck_assert_int_eq(job.eval.every_steps, 100);
	ck_assert_int_eq(job.log.every_steps, 20);
}
END_TEST

START_TEST(test_defaults)
{
	ck_assert_int_eq(parse_as("/jobs/small.yml", min_job, NULL, 0),
			 DT_OK);
	ck_assert_str_eq(job.name, "small");
	ck_assert_uint_eq(job.seed, 0);
	/* Unset: the reader resolves it from what the file stores. */
	ck_assert(job.data.scale == 0);
	ck_assert_int_eq(job.data.normalize, DT_NORMALIZE_NONE);
	ck_assert_str_eq(job.data.eval.images, "");
	ck_assert_str_eq(job.data.eval.labels, "");
	ck_assert_str_eq(job.model.layers[0].name, "dense0");
	ck_assert_int_eq(job.model.layers[0].activation, DT_ACT_NONE);
	ck_assert_int_eq(job.train.global_batch, 0);
	ck_assert_int_eq(job.train.grad_accum_steps, 0);
	ck_assert_int_eq(job.train.epochs, 0);
	ck_assert_int_eq(job.train.steps, 100);
	ck_assert_int_eq(job.train.optimizer, DT_OPTIM_SGD);
	ck_assert(job.train.beta1 == 0.9);
	ck_assert(job.train.beta2 == 0.999);
	ck_assert(job.train.eps == 1e-8);
	ck_assert(job.train.weight_decay == 0.0);
	ck_assert_int_eq(job.parallel.data_parallel, 0);
	ck_assert_int_eq(job.parallel.hierarchical, DT_HIERARCHICAL_AUTO);
	ck_assert_int_eq(job.eval.every_steps, 0);
	ck_assert_int_eq(job.log.every_steps, 10);

	ck_assert_int_eq(parse_as("job.yaml", min_job, NULL, 0), DT_OK);
	ck_assert_str_eq(job.name, "job");
	ck_assert_int_eq(parse_as("dir/My Job.v2.yaml", min_job, NULL, 0),
			 DT_OK);
	ck_assert_str_eq(job.name, "My_Job.v2");
}
END_TEST

START_TEST(test_relative_paths)
{
	char cwd[4096], want[4200];

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	ck_assert_int_eq(parse_as("sub/dir/j.yaml", min_job, NULL, 0), DT_OK);
	snprintf(want, sizeof want, "%s/sub/dir/a.idx", cwd);
	ck_assert_str_eq(job.data.train.images, want);
	ck_assert_int_eq(parse_as("j.yaml", min_job, NULL, 0), DT_OK);
	snprintf(want, sizeof want, "%s/a.idx", cwd);
	ck_assert_str_eq(job.data.train.images, want);

	/* A --set path is typed at the shell, so it is relative to the cwd. */
	{
		const char *sets[] = { "data.train.labels=l.idx",
				       "data.eval.images=https://x.org/e.gz",
				       "data.eval.labels=/abs/el.gz" };

		ck_assert_int_eq(parse_as("/jobs/j.yaml", min_job, sets, 3),
				 DT_OK);
	}
	ck_assert_str_eq(job.data.train.images, "/jobs/a.idx");
	snprintf(want, sizeof want, "%s/l.idx", cwd);
	ck_assert_str_eq(job.data.train.labels, want);
	ck_assert_str_eq(job.data.eval.images, "https://x.org/e.gz");
	ck_assert_str_eq(job.data.eval.labels, "/abs/el.gz");
}
END_TEST

START_TEST(test_set)
{
	const char *sets[] = {
		"train.lr=0.5", "train.lr=2e-2", "model.layers.0.units=64",
		"train.optimizer=adam", "name=tuned", "train.nesterov=false",
		"model.input_shape=[2, 2]", " train.global_batch = 32",
	};
	struct dt_pos pos;

	ck_assert_int_eq(parse_as("/jobs/j.yaml", min_job, sets, 8), DT_OK);
	ck_assert(job.train.lr == 2e-2);	/* the later one wins */
	ck_assert_int_eq(job.model.layers[0].units, 64);
	ck_assert_int_eq(job.train.optimizer, DT_OPTIM_ADAM);
	ck_assert_str_eq(job.name, "tuned");
	ck_assert_int_eq(job.model.n_input_dims, 2);
	ck_assert_int_eq(job.model.input_shape[1], 2);
	ck_assert_int_eq(job.train.global_batch, 32);
	pos = dt_job_pos(&job, "train.lr");
	ck_assert_int_eq(pos.line, 0);
	ck_assert_int_eq(pos.from_set, 2);
	pos = dt_job_pos(&job, "model.layers.0.units");
	ck_assert_int_eq(pos.from_set, 3);

	{
		const char *more[] = {
			"model.layers=[{type: dense, units: 5}, {type: dense, "
			"units: 2, activation: tanh}]",
			"model.layers.1.units=7", "model.input_shape.0=9",
			"train={momentum: 0.9, nesterov: true}",
		};

		ck_assert_int_eq(parse_as("/jobs/j.yaml", min_job, more, 4),
				 DT_OK);
	}
	ck_assert_int_eq(job.model.n_layers, 2);
	ck_assert_int_eq(job.model.layers[1].units, 7);
	ck_assert_int_eq(job.model.layers[1].activation, DT_ACT_TANH);
	ck_assert_str_eq(job.model.layers[1].name, "dense1");
	ck_assert_int_eq(job.model.input_shape[0], 9);
	ck_assert(job.train.momentum == 0.9 && job.train.nesterov);
	ck_assert(job.train.lr == 0.1);	/* merged, not replaced */

	/* A run length on the command line replaces the file's, in either
	 * unit. */
	{
		const char *ep[] = { "train.epochs=3" };

		ck_assert_int_eq(parse_as("/jobs/j.yaml", min_job, ep, 1),
				 DT_OK);
		ck_assert_int_eq(job.train.epochs, 3);
		ck_assert_int_eq(job.train.steps, 0);
		ck_assert_int_eq(dt_job_pos(&job, "train.steps").line, 0);
		ck_assert_int_eq(dt_job_pos(&job, "train.epochs").from_set, 1);
	}
}
END_TEST

char *
write_text(const struct dt_job *j)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(dt_job_write(j, f, &err), DT_OK);
	fclose(f);
	return buf;
}

/* model.loss: mse is refused where the job is read, in the file and
 * with --set, not at run time after the data is loaded. */
START_TEST(test_mse_and_normalize)
{
	const char *sets[] = { "model.loss=mse", "data.normalize=minmax" };
	const char *bad[] = { "data.normalize=zscore" };

	ck_assert_int_eq(parse_as("/jobs/job.yaml", min_job, sets, 2), DT_OK);
	ck_assert_int_eq(job.model.loss, DT_LOSS_MSE);
	ck_assert_int_eq(job.data.normalize, DT_NORMALIZE_MINMAX);
	expect_error(min_job, bad, 1, "--set data.normalize=zscore: "
		     "data.normalize: expected one of none, standard, minmax, "
		     "found \"zscore\"");
}
END_TEST

/* model.loss l1 and huber; model.huber_delta only with huber (default 1,
 * > 0); eval.monitor: accuracy refused with any regression loss, naming
 * both keys, where the job is read. */
START_TEST(test_robust_losses)
{
	const char *l1[] = { "model.loss=l1" };
	const char *huber[] = { "model.loss=huber", "model.huber_delta=0.25" };
	const char *stray[] = { "model.loss=l1", "model.huber_delta=2" };
	const char *zero[] = { "model.loss=huber", "model.huber_delta=0" };
	const char *acc[] = { "model.loss=mse", "eval.monitor=accuracy" };
	const char *ppl[] = { "model.loss=huber", "eval.monitor=perplexity" };
	const char *loss_late[] = { "model.loss=l1" };
	char text[1024];
	char *w;

	ck_assert_int_eq(parse_as("/jobs/job.yaml", min_job, l1, 1), DT_OK);
	ck_assert_int_eq(job.model.loss, DT_LOSS_L1);
	ck_assert(dt_loss_is_regression(job.model.loss));
	ck_assert_int_eq(parse_as("/jobs/job.yaml", min_job, huber, 1), DT_OK);
	ck_assert_int_eq(job.model.loss, DT_LOSS_HUBER);
	ck_assert_double_eq(job.model.huber_delta, 1.0);
	ck_assert_int_eq(parse_as("/jobs/job.yaml", min_job, huber, 2), DT_OK);
	ck_assert_double_eq(job.model.huber_delta, 0.25);
	w = write_text(&job);
	ck_assert_ptr_nonnull(strstr(w, "  loss: huber\n  huber_delta: 0.25\n"));
	free(w);
	ck_assert_int_eq(parse_as("/jobs/job.yaml", min_job, NULL, 0), DT_OK);
	ck_assert(!dt_loss_is_regression(job.model.loss));
	expect_error(min_job, stray, 2, "--set model.huber_delta=2: "
		     "model.huber_delta: not used when model.loss is l1 "
		     "(only huber)");
	expect_error(min_job, zero, 2, "--set model.huber_delta=0: "
		     "model.huber_delta: must be > 0, found 0");
	expect_error(min_job, acc, 2, "--set eval.monitor=accuracy: "
		     "eval.monitor: accuracy needs classes, but model.loss "
		     "is mse, a regression: monitor loss instead");
	/* The monitor in the file, the loss from --set: the --set is
	 * blamed, the message names both. */
	snprintf(text, sizeof text, "%seval:\n  monitor: accuracy\n",
		 min_job);
	expect_error(text, loss_late, 1, "--set model.loss=l1: eval.monitor: "
		     "accuracy needs classes, but model.loss is l1, a "
		     "regression: monitor loss instead");
	/* Perplexity, e to the loss, orders runs as the loss does. */
	ck_assert_int_eq(parse_as("/jobs/job.yaml", min_job, ppl, 2), DT_OK);
}
END_TEST

START_TEST(test_round_trip)
{
	static struct dt_job first;
	const char *sets[] = { "train.momentum=0.1", "seed=7",
			       "train.lr=0.1" };
	char *a, *b;
	int i;

	ck_assert_int_eq(parse_as("/jobs/mnist.yaml", full_job, sets, 3),
			 DT_OK);
	first = job;
	a = write_text(&first);
	/* Read back from another directory: the paths are absolute. */
	ck_assert_int_eq(parse_as("/elsewhere/copy.yaml", a, NULL, 0), DT_OK);
	b = write_text(&job);
	ck_assert_str_eq(a, b);

	ck_assert_str_eq(job.name, first.name);
	ck_assert_uint_eq(job.seed, 7);
	ck_assert_str_eq(job.data.train.images, first.data.train.images);
	ck_assert_str_eq(job.data.eval.labels, first.data.eval.labels);
	ck_assert(job.data.scale == first.data.scale);
	ck_assert_int_eq(job.model.n_layers, first.model.n_layers);
	for (i = 0; i < job.model.n_layers; i++) {
		ck_assert_str_eq(job.model.layers[i].name,
				 first.model.layers[i].name);
		ck_assert_int_eq(job.model.layers[i].units,
				 first.model.layers[i].units);
		ck_assert_int_eq(job.model.layers[i].activation,
				 first.model.layers[i].activation);
	}
	ck_assert(memcmp(job.model.input_shape, first.model.input_shape,
			 sizeof job.model.input_shape) == 0);
	ck_assert(memcmp(&job.train, &first.train, sizeof job.train) == 0);
	ck_assert(memcmp(&job.parallel, &first.parallel,
			 sizeof job.parallel) == 0);
	ck_assert_int_eq(job.eval.every_steps, first.eval.every_steps);
	ck_assert_int_eq(job.log.every_steps, first.log.every_steps);
	free(a);
	free(b);

	/* Defaults and awkward values survive too. */
	{
		const char *odd[] = { "name=true", "train.lr=0.1",
				      "data.scale=0.3" };

		ck_assert_int_eq(parse_as("/j/min.yaml", min_job, odd, 3),
				 DT_OK);
	}
	first = job;
	a = write_text(&first);
	ck_assert_int_eq(parse_as("/x/y.yaml", a, NULL, 0), DT_OK);
	ck_assert_str_eq(job.name, "true");
	ck_assert(job.data.scale == 0.3);
	ck_assert(memcmp(&job.train, &first.train, sizeof job.train) == 0);
	b = write_text(&job);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
}
END_TEST

/* A job that uses every kind of key: a repeat block with residual adds,
 * URL and mapping sources, a schedule, a hybrid layout with a parameter
 * server, a checkpoint section. */
static const char everything_job[] =
	"name: everything\n"
	"seed: 3\n"
	"data:\n"
	"  format: tokens\n"
	"  train:\n"
	"    file: {path: https://example.org/train.bin, size: 4096,\n"
	"           sha256: 9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822C"
	"D15D6C15B0F00A08}\n"
	"  eval:\n"
	"    file: val.bin\n"
	"  token_bytes: 4\n"
	"  context: 16\n"
	"  prefetch: 3\n"
	"  max_bytes: 1000000\n"
	"model:\n"
	"  input_shape: [16]\n"
	"  layers:\n"
	"    - {type: embedding, vocab: 50, dim: 8, name: tok}\n"
	"    - {type: pos_embedding, length: 16, dim: 8}\n"
	"    - repeat: 2\n"
	"      name: blk\n"
	"      layers:\n"
	"        - {type: layernorm, eps: 1e-6, name: ln}\n"
	"        - {type: attention, heads: 2, causal: false, bias: false,\n"
	"           name: attn}\n"
	"        - {type: add, inputs: [block_input, attn], name: res}\n"
	"        - {type: dense, units: 8, activation: gelu}\n"
	"        - {type: dropout, rate: 0.1}\n"
	"    - {type: concat, inputs: [blk.0.res, blk.1.res]}\n"
	"    - {type: reshape, shape: [-1, 4]}\n"
	"    - {type: batchnorm, momentum: 0.2}\n"
	"    - {type: flatten}\n"
	"    - {type: dense, units: 50, name: logits}\n"
	"    - {type: tanh}\n"
	"  loss: softmax_cross_entropy\n"
	"train:\n"
	"  global_batch: 32\n"
	"  micro_batch: 8\n"
	"  steps: 1000\n"
	"  optimizer: adam\n"
	"  lr: 0.001\n"
	"  clip_norm: 0.5\n"
	"  on_nonfinite: skip_step\n"
	"  schedule: {kind: cosine, warmup_steps: 100, min_lr: 1e-5}\n"
	"parallel:\n"
	"  strategy: hybrid\n"
	"  data_parallel: auto\n"
	"  pipeline_parallel: 2\n"
	"  tensor_parallel: 2\n"
	"  schedule: 1f1b\n"
	"  micro_batches: 4\n"
	"  balance: params\n"
	"  stages: [blk.1.ln]\n"
	"  sync: parameter_server\n"
	"  servers: 2\n"
	"  mode: async\n"
	"  max_staleness: 3\n"
	"  hierarchical: off\n"
	"checkpoint:\n"
	"  every_steps: 100\n"
	"  every_seconds: 60.5\n"
	"  at_end: false\n"
	"  keep_last: 0\n"
	"  dir: ckpt\n"
	"  compress: true\n"
	"eval: {every_steps: 50}\n"
	"log: {every_steps: 5}\n";

/* Everything but the positions and the file name agrees. */
static void
ck_same_job(const struct dt_job *a, const struct dt_job *b)
{
	int i;

	ck_assert_str_eq(a->name, b->name);
	ck_assert_uint_eq(a->seed, b->seed);
	ck_assert(memcmp(&a->data, &b->data, sizeof a->data) == 0);
	ck_assert_int_eq(a->model.n_layers, b->model.n_layers);
	ck_assert_int_eq(a->model.n_input_dims, b->model.n_input_dims);
	ck_assert(memcmp(a->model.input_shape, b->model.input_shape,
			 sizeof a->model.input_shape) == 0);
	ck_assert_int_eq(a->model.loss, b->model.loss);
	for (i = 0; i < a->model.n_layers; i++)
		ck_assert_msg(memcmp(&a->model.layers[i], &b->model.layers[i],
				     offsetof(struct dt_layer_spec, pos)) == 0,
			      "layer %d differs", i);
	ck_assert(memcmp(&a->train, &b->train, sizeof a->train) == 0);
	ck_assert(memcmp(&a->parallel, &b->parallel, sizeof a->parallel) == 0);
	ck_assert(memcmp(&a->checkpoint, &b->checkpoint,
			 sizeof a->checkpoint) == 0);
	ck_assert(memcmp(&a->eval, &b->eval, sizeof a->eval) == 0);
	ck_assert(memcmp(&a->log, &b->log, sizeof a->log) == 0);
}

START_TEST(test_round_trip_everything)
{
	static struct dt_job first;
	const struct dt_layer_spec *l = first.model.layers;
	const char *sets[] = { "model.layers.5.units=12",
			       "data.eval.file.size=77" };
	char *a, *b;

	ck_assert_int_eq(parse_as("/jobs/all.yaml", everything_job, sets, 2),
			 DT_OK);
	first = job;
	ck_assert_int_eq(first.model.n_layers, 18);
	ck_assert_str_eq(l[7].name, "blk.1.ln");
	ck_assert_str_eq(l[9].inputs[0], "blk.0.dropout4");
	ck_assert_int_eq(l[5].units, 12);
	ck_assert_int_eq(l[10].units, 8);
	ck_assert_int_eq(first.parallel.hierarchical, DT_HIERARCHICAL_OFF);
	ck_assert_str_eq(first.data.train.file.sha256,
			 "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d"
			 "6c15b0f00a08");
	a = write_text(&first);
	ck_assert_int_eq(parse_as("/elsewhere/copy.yaml", a, NULL, 0), DT_OK);
	ck_same_job(&first, &job);
	b = write_text(&job);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);

	/* A CNN on URL-served idx files, and csv; keys of other formats,
	 * schedules and strategies are left out and read back as defaults. */
	ck_assert_int_eq(parse_as("/jobs/cnn.yaml",
		"data:\n"
		"  train:\n"
		"    images: {path: https://x.org/i.gz, size: 10}\n"
		"    labels: l.gz\n"
		"  eval: {images: /d/ti.gz, labels: {path: tl.gz, sha256: "
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}}\n"
		"model:\n"
		"  input_shape: [1, 28, 28]\n"
		"  layers:\n"
		"    - {type: conv2d, channels: 8, kernel: 5, stride: 2, "
		"padding: 2, activation: relu, bias: false}\n"
		"    - {type: maxpool2d, kernel: 2, padding: 1}\n"
		"    - {type: avgpool2d, kernel: 3, stride: 1}\n"
		"    - {type: flatten}\n"
		"    - {type: dense, units: 10}\n"
		"    - {type: softmax}\n"
		"train: {micro_batch: 8, epochs: 1, lr: 0.1,\n"
		"        schedule: {kind: step, step_size: 30, gamma: 0.5}}\n"
		"parallel: {strategy: model, pipeline_parallel: auto}\n",
		NULL, 0), DT_OK);
	first = job;
	a = write_text(&first);
	ck_assert_int_eq(parse_as("/x/y.yaml", a, NULL, 0), DT_OK);
	ck_same_job(&first, &job);
	b = write_text(&job);
	ck_assert_str_eq(a, b);
	ck_assert_ptr_null(strstr(a, "header"));
	ck_assert_ptr_null(strstr(a, "min_lr"));
	ck_assert_ptr_null(strstr(a, "servers"));
	free(a);
	free(b);

	ck_assert_int_eq(parse_as("/jobs/csv.yaml", data_job(
		"  format: csv\n  train: {file: t.csv}\n  header: true\n"
		"  label_column: 3\n  scale: 1\n",
		"checkpoint: {dir: /abs/ck}\n"), NULL, 0), DT_OK);
	first = job;
	a = write_text(&first);
	ck_assert_int_eq(parse_as("/x/y.yaml", a, NULL, 0), DT_OK);
	ck_same_job(&first, &job);
	free(a);
}
END_TEST

START_TEST(test_pos_and_where)
{
	const char *sets[] = { "train.epochs=9", "train.steps=1" };
	struct dt_pos pos;
	char buf[256];

	ck_assert_int_eq(parse_as("/jobs/job.yaml", full_job, NULL, 0), DT_OK);
	pos = dt_job_pos(&job, "train.lr");
	ck_assert_int_eq(pos.line, 26);
	ck_assert_int_eq(pos.col, 7);
	ck_assert_int_eq(pos.from_set, 0);
	pos = dt_job_pos(&job, "model.layers.1.units");
	ck_assert_int_eq(pos.line, 16);
	ck_assert_int_eq(pos.col, 14);
	pos = dt_job_pos(&job, "model.layers.2");
	ck_assert_int_eq(pos.line, 19);
	pos = dt_job_pos(&job, "model.input_shape.1");
	ck_assert_int_eq(pos.line, 12);
	ck_assert_int_eq(pos.col, 21);
	pos = dt_job_pos(&job, "train");
	ck_assert_int_eq(pos.line, 22);
	pos = dt_job_pos(&job, "train.momentum");
	ck_assert_int_eq(pos.line, 0);
	pos = dt_job_pos(&job, "no.such.key");
	ck_assert_int_eq(pos.line + pos.col + pos.from_set, 0);
	pos = dt_job_pos(&job, "model.layers.9.units");
	ck_assert_int_eq(pos.line, 0);

	dt_job_where(&job, "train.micro_batch", buf, sizeof buf);
	ck_assert_str_eq(buf, "/jobs/job.yaml:23:16: train.micro_batch: ");
	dt_job_where(&job, "train.grad_accum_steps", buf, sizeof buf);
	ck_assert_str_eq(buf, "/jobs/job.yaml: train.grad_accum_steps: ");

	ck_assert_int_eq(parse_as("/jobs/j.yaml", min_job, sets, 1), DT_OK);
	dt_job_where(&job, "train.epochs", buf, sizeof buf);
	ck_assert_str_eq(buf, "--set train.epochs=9: train.epochs: ");
	ck_assert_int_eq(parse_as("/jobs/j.yaml", min_job, sets + 1, 1), DT_OK);
	dt_job_where(&job, "train.steps", buf, sizeof buf);
	ck_assert_str_eq(buf, "--set train.steps=1: train.steps: ");
}
END_TEST

START_TEST(test_load)
{
	char dir[] = "/tmp/test_job.XXXXXX", path[128], sub[128];
	const char *sets[] = { "train.steps=5" };
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sub, sizeof sub, "%s/jobs", dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	snprintf(path, sizeof path, "%s/jobs/tiny.yaml", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(min_job, f);
	fclose(f);

	ck_assert_int_eq(dt_job_load(path, sets, 1, &job, &err), DT_OK);
	ck_assert_str_eq(job.name, "tiny");
	ck_assert_int_eq(job.train.steps, 5);
	snprintf(sub, sizeof sub, "%s/jobs/a.idx", dir);
	ck_assert_str_eq(job.data.train.images, sub);

	snprintf(sub, sizeof sub, "%s/jobs/missing.yaml", dir);
	ck_assert_int_eq(dt_job_load(sub, NULL, 0, &job, &err), DT_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err.msg, "missing.yaml: cannot open the "
				     "job file: No such file or directory"));
	unlink(path);
	snprintf(sub, sizeof sub, "%s/jobs", dir);
	rmdir(sub);
	rmdir(dir);
}
END_TEST

/* The words of `type:` and of model.loss, from the lists in
 * job/layer_types.h: a type added there is expected here too. */
#define TYPE_WORD(text, ACT, ...) text,
#define KIND_WORDS(NAME, word, words, ...) words(TYPE_WORD, word)
static const char *const type_words[] = { DT_LAYER_TYPES(KIND_WORDS) NULL };
#define LOSS_WORD(NAME, word, ops) #word,
static const char *const loss_words[] = { DT_LOSS_TYPES(LOSS_WORD) NULL };

/* Words joined by ", " into buf. */
static void
join_words(const char *const *words, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; words[i] != NULL; i++) {
		n += (size_t)snprintf(buf + n, size - n, "%s%s",
				      i ? ", " : "", words[i]);
		ck_assert_uint_lt(n, size);
	}
}

const char *
layer_type_words(void)
{
	static char buf[1024];

	join_words(type_words, buf, sizeof buf);
	return buf;
}

struct key_list {
	int n;
	char keys[128][64];
	char defs[128][256];
	char types[128][256];
};

static void
collect(const char *key, const char *type, const char *def, const char *doc,
	void *ctx)
{
	struct key_list *kl = ctx;

	ck_assert_ptr_nonnull(doc);
	ck_assert_int_lt(kl->n, 128);
	snprintf(kl->keys[kl->n], sizeof kl->keys[0], "%s", key);
	snprintf(kl->types[kl->n], sizeof kl->types[0], "%s", type);
	snprintf(kl->defs[kl->n], sizeof kl->defs[0], "%s", def);
	kl->n++;
}

static int
find_key(const struct key_list *kl, const char *key)
{
	int i;

	for (i = 0; i < kl->n; i++)
		if (strcmp(kl->keys[i], key) == 0)
			return i;
	return -1;
}

START_TEST(test_each_key)
{
	static struct key_list kl;
	char want[1100], words[256];
	int i;

	dt_job_each_key(collect, &kl);
	i = find_key(&kl, "train.lr");
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(kl.types[i], "a number > 0");
	ck_assert_str_eq(kl.defs[i], "required");
	i = find_key(&kl, "train.momentum");
	ck_assert_str_eq(kl.types[i], "a number in [0, 1)");
	ck_assert_str_eq(kl.defs[i], "0");
	i = find_key(&kl, "train.optimizer");
	ck_assert_str_eq(kl.types[i], "one of sgd, adam, adamw");
	ck_assert_str_eq(kl.defs[i], "sgd");
	i = find_key(&kl, "model.layers.N.units");
	ck_assert_str_eq(kl.types[i], "an integer in [1, 1048576]");
	ck_assert_int_ge(find_key(&kl, "model.input_shape"), 0);
	ck_assert_int_ge(find_key(&kl, "model.layers.N.activation"), 0);
	ck_assert_int_lt(find_key(&kl, "train"), 0);	/* no sections */
	ck_assert_int_lt(find_key(&kl, "train.schedule"), 0);
	i = find_key(&kl, "model.layers.N.type");
	snprintf(want, sizeof want, "one of %s", layer_type_words());
	ck_assert_str_eq(kl.types[i], want);
	/* Every loss of DT_LOSS_TYPES. */
	join_words(loss_words, words, sizeof words);
	ck_assert_str_eq(words, "softmax_cross_entropy, mse, l1, huber");
	ck_assert_str_eq(kl.types[find_key(&kl, "model.loss")],
			 "one of softmax_cross_entropy, mse, l1, huber");
	ck_assert_str_eq(kl.defs[i], "required");
	i = find_key(&kl, "model.layers.N.stride");
	ck_assert_str_eq(kl.defs[i], "1 for conv2d; kernel for the pools");
	i = find_key(&kl, "model.layers.N.inputs");
	ck_assert_str_eq(kl.types[i], "a list of 1 to 4 layer names");
	i = find_key(&kl, "model.layers.N.repeat");
	ck_assert_str_eq(kl.types[i], "an integer in [1, 256]");
	i = find_key(&kl, "data.token_bytes");
	ck_assert_str_eq(kl.types[i], "an integer in {2, 4}");
	ck_assert_str_eq(kl.defs[i], "2");
	i = find_key(&kl, "data.context");
	ck_assert_str_eq(kl.defs[i], "required with data.format tokens, text, "
			 "llmc, u16");
	i = find_key(&kl, "data.train.images");
	ck_assert_str_eq(kl.types[i], "a path or URL");
	ck_assert_str_eq(kl.defs[i], "required with data.format idx, npy");
	i = find_key(&kl, "parallel.data_parallel");
	ck_assert_str_eq(kl.types[i], "auto or an integer in [1, 65536]");
	i = find_key(&kl, "train.schedule.gamma");
	ck_assert_str_eq(kl.types[i], "a number in (0, 1]");
	ck_assert_str_eq(kl.defs[i], "0.1");
	ck_assert_int_ge(find_key(&kl, "checkpoint.dir"), 0);
}
END_TEST

/* The contents of man/dtrain-job.5 (caller frees). */
static char *
read_man_page(void)
{
	const char *top = getenv("top_srcdir");
	char path[4096], *page;
	long size;
	FILE *f;

	snprintf(path, sizeof path, "%s/man/dtrain-job.5", top ? top : ".");
	f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	page = calloc(1, (size_t)size + 1);
	ck_assert_ptr_nonnull(page);
	ck_assert_int_eq(fread(page, 1, (size_t)size, f), size);
	fclose(f);
	return page;
}

START_TEST(test_man_page_lists_every_key)
{
	static struct key_list kl;
	char *page = read_man_page();
	int i;

	dt_job_each_key(collect, &kl);
	ck_assert_int_gt(kl.n, 30);
	for (i = 0; i < kl.n; i++) {
		char item[96];

		/* Each key has its own list item: ".It Cm key". */
		snprintf(item, sizeof item, ".It Cm %s\n", kl.keys[i]);
		ck_assert_msg(strstr(page, item) != NULL,
			      "man/dtrain-job.5: no \"%.*s\" for key %s",
			      (int)strlen(item) - 1, item, kl.keys[i]);
	}
	free(page);
}
END_TEST

/* Whether word is one of the words of a line "HEAD a , b ;" between from
 * and to (head is "\n.It Li " or "\n.Li "). */
static bool
listed(const char *from, const char *to, const char *head, const char *word)
{
	size_t n = strlen(word), h = strlen(head);
	const char *p;

	for (p = from; (p = strstr(p, head)) != NULL && p < to; p++) {
		const char *w = p + h, *end = strchr(w, '\n');

		while (w < end) {
			size_t len = strcspn(w, " ,;\n");

			if (len == n && strncmp(w, word, n) == 0)
				return true;
			w += len + 1;
		}
	}
	return false;
}

/* Every word of `type:` is in the list of model.layers.N.type and has an
 * item under "Layer types" of man/dtrain-job.5 (".It Li word", alone or
 * with others). */
START_TEST(test_man_page_lists_every_type)
{
	char *page = read_man_page();
	const char *from = strstr(page, "\n.Ss Layer types\n"), *to;
	const char *key = strstr(page, "\n.It Cm model.layers.N.type\n"), *end;
	int i;

	ck_assert_msg(from != NULL, "man/dtrain-job.5: no Layer types");
	to = strstr(from + 1, "\n.Ss ");
	ck_assert_ptr_nonnull(to);
	ck_assert_ptr_nonnull(key);
	end = strstr(key + 1, "\n.It ");
	ck_assert_ptr_nonnull(end);
	for (i = 0; type_words[i] != NULL; i++) {
		ck_assert_msg(listed(from, to, "\n.It Li ", type_words[i]),
			      "man/dtrain-job.5: no \".It Li %s\" under Layer "
			      "types", type_words[i]);
		ck_assert_msg(listed(key, end, "\n.Li ", type_words[i]),
			      "man/dtrain-job.5: %s is not in the words of "
			      "model.layers.N.type", type_words[i]);
	}
	/* The test can fail: a word that is not a type is in neither. */
	ck_assert(!listed(from, to, "\n.It Li ", "dense2"));
	ck_assert(!listed(from, to, "\n.It Li ", "conv"));
	ck_assert(!listed(key, end, "\n.Li ", "conv"));
	free(page);
}
END_TEST

static Suite *
job_suite(void)
{
	Suite *s = suite_create("job");
	TCase *tc = tcase_create("job");

	tcase_add_test(tc, test_full_job);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_relative_paths);
	tcase_add_test(tc, test_set);
	tcase_add_test(tc, test_mse_and_normalize);
	tcase_add_test(tc, test_robust_losses);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_round_trip_everything);
	tcase_add_test(tc, test_pos_and_where);
	tcase_add_test(tc, test_load);
	tcase_add_test(tc, test_each_key);
	tcase_add_test(tc, test_man_page_lists_every_key);
	tcase_add_test(tc, test_man_page_lists_every_type);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, job_error_tcase());
	suite_add_tcase(s, job_layer_tcase());
	suite_add_tcase(s, job_section_tcase());
	suite_add_tcase(s, job_bound_tcase());
	suite_add_tcase(s, job_utf8_tcase());
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(job_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
