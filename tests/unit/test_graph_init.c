/* SPDX-License-Identifier: MIT */
/* test_graph_init.c - Check suite for the initialisation choice
 * (graph/init.c, model.init and a layer's init:): the default keeps the
 * bits of the shipped jobs as they were before the choice existed; each
 * rule's draws have the mean and standard deviation of its formula, within
 * 4 standard errors of the estimators at the sample size, and the exact
 * values of its keyed draw; GPT-2's residual projections are scaled by
 * exactly 1/sqrt(2 x blocks) on a 2-block model, and nothing else is. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/init.h"
#include "graph/model.h"
#include "util/alloc.h"
#include "util/rng.h"

/* Builds the model of job text (with the overrides) for micro-batches of
 * 1; the job is freed. */
static struct dt_model *
build(const char *text, const char *const *sets, int n_sets)
{
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m = NULL;
	struct dt_error err;

	ck_assert_msg(dt_job_parse("job.yaml", text, strlen(text), sets, n_sets,
				   job, &err) == DT_OK, "%s", err.msg);
	ck_assert_msg(dt_model_new(job, 1, &m, &err) == DT_OK, "%s", err.msg);
	free(job);
	return m;
}

/* The model of a shipped job, by its path under the source tree. */
static struct dt_model *
build_shipped(const char *name)
{
	const char *top = getenv("top_srcdir");
	struct dt_job *job = dt_xcalloc(1, sizeof *job);
	struct dt_model *m = NULL;
	struct dt_error err;
	char path[4096];

	snprintf(path, sizeof path, "%s/jobs/%s", top ? top : ".", name);
	ck_assert_msg(dt_job_load(path, NULL, 0, job, &err) == DT_OK, "%s",
		      err.msg);
	ck_assert_msg(dt_model_new(job, 1, &m, &err) == DT_OK, "%s", err.msg);
	free(job);
	return m;
}

/* Tensor `node.name` of m: its values, size and model-wide index. */
static const float *
tensor(const struct dt_model *m, const char *node, const char *name,
       int64_t *size, int *index)
{
	struct dt_tensor_info t;

	*size = 0;
	for (int i = 0; i < dt_model_n_tensors(m); i++) {
		dt_model_tensor_info(m, i, &t);
		if (strcmp(t.node, node) == 0 && strcmp(t.name, name) == 0) {
			*size = t.size;
			if (index != NULL)
				*index = i;
			return dt_model_params((struct dt_model *)m) + t.offset;
		}
	}
	ck_abort_msg("no tensor %s.%s", node, name);
	return NULL;
}

/* FNV-1a (64 bits) of the parameter arena, each float's bits fed as 4
 * little-endian bytes. */
static uint64_t
arena_hash(struct dt_model *m)
{
	const float *p = dt_model_params(m);
	uint64_t h = 14695981039346656037u;

	for (size_t i = 0; i < dt_model_n_params(m); i++) {
		uint32_t bits;

		memcpy(&bits, &p[i], sizeof bits);
		for (int b = 0; b < 4; b++) {
			h ^= (bits >> (8 * b)) & 0xffu;
			h *= 1099511628211u;
		}
	}
	return h;
}

/* The default (model.init auto) draws what dtrain drew before the choice
 * existed: the first values below were printed by the tree before init.c
 * (commit 5a57deb, where embeddings and attention drew through init hooks
 * of their own), and its arenas hashed the same as this tree's under a
 * 64-bit FNV-1a of another offset basis, so the standard FNV-1a values
 * below are those of its arenas too. */
START_TEST(test_default_unchanged)
{
	static const struct {
		const char *job;
		size_t n_params;
		uint64_t hash;
	} shipped[] = {
		{ "char-gpt.yaml", 826208, 0xaf72b31f6f3d3eabu },
		{ "fashion-mnist-cnn.yaml", 421642, 0xb0ba2045e2270c17u },
		{ "fashion-mnist-mlp.yaml", 535818, 0xc5720d9360387867u },
	};
	static const struct {
		const char *node, *name;
		float first[3];
	} firsts[] = {
		{ "tok", "weight",
		  { -0x1.28e472p-8f, 0x1.4100a8p-6f, -0x1.8a7688p-8f } },
		{ "pos", "weight",
		  { -0x1.1968bap-6f, -0x1.0c2cb4p-6f, -0x1.ce09c4p-7f } },
		{ "block.0.attn", "qkv_weight",
		  { -0x1.0a4f7ep-6f, 0x1.678514p-8f, -0x1.3265cp-6f } },
		{ "block.0.attn", "proj_weight",
		  { -0x1.151f22p-7f, 0x1.acd43cp-7f, 0x1.708184p-8f } },
		{ "block.0.fc", "weight",	/* gelu: He */
		  { -0x1.1b2176p-3f, -0x1.934f9p-4f, -0x1.322bf8p-6f } },
		{ "block.0.proj", "weight",	/* no activation: Xavier */
		  { 0x1.3538bcp-6f, 0x1.5e5bd6p-5f, 0x1.655406p-5f } },
	};

	for (size_t j = 0; j < sizeof shipped / sizeof shipped[0]; j++) {
		struct dt_model *m = build_shipped(shipped[j].job);

		ck_assert_uint_eq(dt_model_n_params(m), shipped[j].n_params);
		ck_assert_msg(arena_hash(m) == shipped[j].hash,
			      "%s: init hash %016llx", shipped[j].job,
			      (unsigned long long)arena_hash(m));
		if (j == 0)
			for (size_t t = 0; t < sizeof firsts / sizeof firsts[0];
			     t++) {
				int64_t n;
				const float *w = tensor(m, firsts[t].node,
							firsts[t].name, &n,
							NULL);

				for (int e = 0; e < 3; e++)
					ck_assert_msg(w[e] ==
						      firsts[t].first[e],
						      "%s.%s[%d] = %a",
						      firsts[t].node,
						      firsts[t].name, e,
						      (double)w[e]);
			}
		dt_model_free(m);
	}
}
END_TEST

/* One dense layer of 256 -> 512 (131072 weights) under a model.init and
 * an embedding of 512 x 64 before it, seed 11. */
static const char one_dense[] =
	"seed: 11\n"
	"data: {format: tokens, train: {file: t.bin}, context: 4}\n"
	"model:\n"
	"  input_shape: [4]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 512, dim: 64}\n"
	"    - {type: flatten}\n"
	"    - {type: dense, name: a, units: 512}\n"
	"    - {type: dense, name: b, units: 256, activation: relu}\n"
	"    - {type: dense, name: c, units: 3}\n"
	"train: {micro_batch: 1, steps: 1, lr: 0.1}\n";

/* Mean and standard deviation of w (n values), in double. */
static void
moments(const float *w, int64_t n, double *mean, double *sd)
{
	double s = 0.0, s2 = 0.0;

	for (int64_t i = 0; i < n; i++)
		s += w[i];
	*mean = s / (double)n;
	for (int64_t i = 0; i < n; i++)
		s2 += ((double)w[i] - *mean) * ((double)w[i] - *mean);
	*sd = sqrt(s2 / (double)n);
}

/* The sample of n draws of a distribution with standard deviation sigma
 * and kurtosis kurt (3 normal, 1.8 uniform): the mean within 4 standard
 * errors sigma/sqrt(n) of 0, the standard deviation within 4 standard
 * errors of sigma, sigma sqrt((kurt - 1) / (4 n)) (the delta method on
 * the sample variance, whose variance is (mu4 - sigma^4) / n). */
static void
expect_moments(const float *w, int64_t n, double sigma, double kurt)
{
	double mean, sd, se_sd = sigma * sqrt((kurt - 1.0) / (4.0 * n));

	moments(w, n, &mean, &sd);
	ck_assert_msg(fabs(mean) <= 4.0 * sigma / sqrt((double)n),
		      "mean %g, sigma %g, n %lld", mean, sigma, (long long)n);
	ck_assert_msg(fabs(sd - sigma) <= 4.0 * se_sd,
		      "sd %g, sigma %g +- %g", sd, sigma, 4.0 * se_sd);
}

/* w[j] for the first draws of tensor index t, seed 11: std times the
 * normal draw keyed (11, DT_RNG_INIT, t, j). */
static void
expect_normal_draws(const float *w, int t, float std)
{
	for (int j = 0; j < 8; j++)
		ck_assert(w[j] == std * dt_rng_normal(11, DT_RNG_INIT,
						      (uint64_t)t,
						      (uint64_t)j));
}

START_TEST(test_rules)
{
	const char *he[] = { "model.init=he" };
	const char *xavier[] = { "model.init=xavier" };
	const char *normal[] = { "model.init=normal(0.05)" };
	const char *gpt2[] = { "model.init=gpt2" };
	const char *own[] = { "model.init=gpt2",
			      "model.layers.a.init=normal(0.125)" };
	struct dt_model *m;
	const float *w, *tok, *bias;
	int64_t n, n_tok, n_b;
	int t, t_tok;
	float a;

	/* he: N(0, 2/256); the table keeps its N(0, 0.02^2). */
	m = build(one_dense, he, 1);
	w = tensor(m, "a", "weight", &n, &t);
	ck_assert_int_eq(n, 256 * 512);
	expect_moments(w, n, sqrt(2.0 / 256.0), 3.0);
	expect_normal_draws(w, t, (float)sqrt(2.0 / 256.0));
	tok = tensor(m, "tok", "weight", &n_tok, &t_tok);
	expect_normal_draws(tok, t_tok, 0.02f);
	expect_moments(tok, n_tok, 0.02, 3.0);
	bias = tensor(m, "a", "bias", &n_b, NULL);
	for (int64_t i = 0; i < n_b; i++)
		ck_assert(bias[i] == 0.0f);
	dt_model_free(m);

	/* xavier: U(-a, a), a = sqrt(6/(256 + 512)), sigma a/sqrt(3), and
	 * the draw a (2u - 1). */
	m = build(one_dense, xavier, 1);
	w = tensor(m, "a", "weight", &n, &t);
	a = (float)sqrt(6.0 / (256.0 + 512.0));
	expect_moments(w, n, a / sqrt(3.0), 1.8);
	for (int j = 0; j < 8; j++)
		ck_assert(w[j] == a * (2.0f * dt_rng_uniform(11, DT_RNG_INIT,
							     (uint64_t)t,
							     (uint64_t)j) -
				       1.0f));
	for (int64_t i = 0; i < n; i++)
		ck_assert(fabsf(w[i]) <= a);
	/* b has a relu: xavier all the same (the choice beats the type's
	 * own He). */
	w = tensor(m, "b", "weight", &n, NULL);
	a = (float)sqrt(6.0 / (512.0 + 256.0));
	expect_moments(w, n, a / sqrt(3.0), 1.8);
	tok = tensor(m, "tok", "weight", &n_tok, &t_tok);
	expect_normal_draws(tok, t_tok, 0.02f);
	dt_model_free(m);

	/* normal(0.05), every weight, the table too. */
	m = build(one_dense, normal, 1);
	w = tensor(m, "a", "weight", &n, &t);
	expect_moments(w, n, 0.05, 3.0);
	expect_normal_draws(w, t, 0.05f);
	tok = tensor(m, "tok", "weight", &n_tok, &t_tok);
	expect_normal_draws(tok, t_tok, 0.05f);
	dt_model_free(m);

	/* gpt2 without an add: N(0, 0.02^2) everywhere, nothing scaled. */
	m = build(one_dense, gpt2, 1);
	w = tensor(m, "a", "weight", &n, &t);
	expect_moments(w, n, 0.02, 3.0);
	expect_normal_draws(w, t, 0.02f);
	w = tensor(m, "c", "weight", &n, &t);
	expect_normal_draws(w, t, 0.02f);
	dt_model_free(m);

	/* A layer's own init beats model.init. */
	m = build(one_dense, own, 2);
	w = tensor(m, "a", "weight", &n, &t);
	expect_moments(w, n, 0.125, 3.0);
	expect_normal_draws(w, t, 0.125f);
	w = tensor(m, "b", "weight", &n, &t);
	expect_normal_draws(w, t, 0.02f);
	dt_model_free(m);
}
END_TEST

/* The rules the default names, drawn on purpose, give the default's bits:
 * auto is He for the relu dense and Xavier for the others, and 0.02 for
 * the table. */
START_TEST(test_auto_is_the_types_own)
{
	const char *he[] = { "model.init=he" };
	const char *xavier[] = { "model.init=xavier" };
	const char *dflt[] = { "model.init=auto" };
	struct dt_model *m_auto = build(one_dense, dflt, 1);
	struct dt_model *m_none = build(one_dense, NULL, 0);
	struct dt_model *m_he = build(one_dense, he, 1);
	struct dt_model *m_x = build(one_dense, xavier, 1);
	const float *a_auto, *b_auto, *a_he, *b_he, *a_x;
	int64_t n, n2;
	size_t bytes;

	ck_assert(arena_hash(m_auto) == arena_hash(m_none));
	bytes = dt_model_n_params(m_auto) * sizeof(float);
	ck_assert(memcmp(dt_model_params(m_auto), dt_model_params(m_none),
			 bytes) == 0);
	b_auto = tensor(m_auto, "b", "weight", &n, NULL);
	b_he = tensor(m_he, "b", "weight", &n2, NULL);
	ck_assert(memcmp(b_auto, b_he, (size_t)n * sizeof(float)) == 0);
	a_auto = tensor(m_auto, "a", "weight", &n, NULL);
	a_x = tensor(m_x, "a", "weight", &n2, NULL);
	a_he = tensor(m_he, "a", "weight", &n2, NULL);
	ck_assert(memcmp(a_auto, a_x, (size_t)n * sizeof(float)) == 0);
	ck_assert(memcmp(a_auto, a_he, (size_t)n * sizeof(float)) != 0);
	dt_model_free(m_auto);
	dt_model_free(m_none);
	dt_model_free(m_he);
	dt_model_free(m_x);
}
END_TEST

/* A pre-norm transformer of 2 blocks: 4 residual adds, the attention
 * through a dropout, the MLP's second dense straight into its add. */
static const char gpt_2_blocks[] =
	"seed: 5\n"
	"data: {format: tokens, train: {file: t.bin}, context: 8}\n"
	"model:\n"
	"  input_shape: [8]\n"
	"  layers:\n"
	"    - {type: embedding, name: tok, vocab: 16, dim: 32}\n"
	"    - {type: pos_embedding, name: pos, length: 8}\n"
	"    - repeat: 2\n"
	"      name: block\n"
	"      layers:\n"
	"        - {type: layernorm, name: ln1}\n"
	"        - {type: attention, name: attn, heads: 2}\n"
	"        - {type: dropout, name: drop, rate: 0.1}\n"
	"        - {type: add, name: res1, inputs: [block_input, drop]}\n"
	"        - {type: layernorm, name: ln2}\n"
	"        - {type: dense, name: fc, units: 128, activation: gelu}\n"
	"        - {type: dense, name: proj, units: 32}\n"
	"        - {type: add, name: res2, inputs: [res1, proj]}\n"
	"    - {type: layernorm, name: ln_f}\n"
	"    - {type: dense, name: head, units: 16}\n"
	"train: {micro_batch: 1, steps: 1, lr: 0.1}\n";

/* Whether tensor node.name of gpt_2_blocks is a residual branch's output
 * matrix. */
static bool
is_residual(const char *node, const char *name)
{
	return (strcmp(node, "block.0.attn") == 0 ||
		strcmp(node, "block.1.attn") == 0) ?
	       strcmp(name, "proj_weight") == 0 :
	       strcmp(node, "block.0.proj") == 0 ||
	       strcmp(node, "block.1.proj") == 0 ?
	       strcmp(name, "weight") == 0 : false;
}

START_TEST(test_gpt2_residual)
{
	const char *gpt2[] = { "model.init=gpt2" };
	const char *normal[] = { "model.init=normal(0.02)" };
	const char *opt_out[] = {
		"model.init=gpt2",
		"model.layers.block.1.proj.init=normal(0.02)",
	};
	struct dt_model *g = build(gpt_2_blocks, gpt2, 1);
	struct dt_model *r = build(gpt_2_blocks, normal, 1);
	struct dt_model *o = build(gpt_2_blocks, opt_out, 2);
	struct dt_tensor_info t;
	bool *branch = dt_xcalloc((size_t)g->n_nodes, sizeof *branch);
	int scaled = 0;

	/* N = 2 x blocks residual adds; the branches are the attentions and
	 * the MLPs' second dense, not the embeddings the first add reads. */
	ck_assert_int_eq(dt_model_residual_branches(g, branch), 4);
	for (int i = 0; i < g->n_nodes; i++)
		ck_assert_msg(branch[i] ==
			      (strcmp(g->nodes[i].name, "block.0.attn") == 0 ||
			       strcmp(g->nodes[i].name, "block.1.attn") == 0 ||
			       strcmp(g->nodes[i].name, "block.0.proj") == 0 ||
			       strcmp(g->nodes[i].name, "block.1.proj") == 0),
			      "node %s", g->nodes[i].name);
	for (int i = 0; i < dt_model_n_tensors(g); i++) {
		const float *wg, *wr, *wo;

		dt_model_tensor_info(g, i, &t);
		wg = dt_model_params(g) + t.offset;
		wr = dt_model_params(r) + t.offset;
		wo = dt_model_params(o) + t.offset;
		for (int64_t j = 0; j < t.size; j++) {
			if (t.n_dims == 1) {
				/* Biases 0, layernorm gains 1. */
				ck_assert(wg[j] == (strcmp(t.name, "weight")
						    == 0 ? 1.0f : 0.0f));
				continue;
			}
			if (!is_residual(t.node, t.name)) {
				ck_assert(wg[j] == wr[j]);
				continue;
			}
			/* 0.02 / sqrt(4) = 0.01: exactly half the N(0, 0.02^2)
			 * draw of the same key, both rounded to float. */
			ck_assert_msg(wg[j] * 2.0f == wr[j], "%s.%s[%lld]",
				      t.node, t.name, (long long)j);
			/* block.1.proj opted out with its own init. */
			ck_assert(wo[j] == (strcmp(t.node, "block.1.proj") == 0
					    ? wr[j] : wg[j]));
		}
		if (t.n_dims == 2 && is_residual(t.node, t.name)) {
			double mean, sd_g, sd_r;

			moments(wg, t.size, &mean, &sd_g);
			moments(wr, t.size, &mean, &sd_r);
			ck_assert(sd_g * 2.0 == sd_r);
			scaled++;
		}
	}
	ck_assert_int_eq(scaled, 4);
	free(branch);
	dt_model_free(g);
	dt_model_free(r);
	dt_model_free(o);
}
END_TEST

static Suite *
init_suite(void)
{
	Suite *s = suite_create("graph_init");
	TCase *tc = tcase_create("init");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_default_unchanged);
	tcase_add_test(tc, test_rules);
	tcase_add_test(tc, test_auto_is_the_types_own);
	tcase_add_test(tc, test_gpt2_residual);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(init_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
