/* SPDX-License-Identifier: MIT */
/* test_job_layers.c - model.layers: every layer type with its keys and
 * defaults, inputs, repeat blocks (names, inputs, count, positions, --set
 * by expanded index) and the exact message of each layer error. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_test.h"

/* "job.yaml:L:C: head" then line and a caret under column col (a static
 * buffer, so one per expect_error call). */
static const char *
at(int line_no, int col, const char *head, const char *line)
{
	static char buf[2048];

	snprintf(buf, sizeof buf, "job.yaml:%d:%d: %s\n%s\n%*s^", line_no,
		 col, head, line, col - 1, "");
	return buf;
}

/* Expects the error head at line:col of the one-line layer list layer. */
static void
expect_layer_error(const char *layer, int col, const char *head)
{
	char line[512];

	snprintf(line, sizeof line, "%.*s", (int)strcspn(layer, "\n"), layer);
	expect_error(layers_job(layer), NULL, 0, at(6, col, head, line));
}

START_TEST(test_layer_types)
{
	const struct dt_layer_spec *l = job.model.layers;

	ck_assert_int_eq(parse(layers_job(
		"    - {type: conv2d, channels: 4, kernel: 3, padding: 1, "
		"activation: relu}\n"
		"    - {type: maxpool2d, kernel: 2}\n"
		"    - {type: batchnorm}\n"
		"    - {type: avgpool2d, kernel: 2, stride: 1}\n"
		"    - {type: flatten}\n"
		"    - {type: dropout, rate: 0.5}\n"
		"    - {type: reshape, shape: [2, -1]}\n"
		"    - {type: layernorm, eps: 1e-6}\n"
		"    - {type: dense, units: 10, bias: false, name: logits}\n"
		"    - {type: gelu}\n"
		"    - {type: softmax}\n")), DT_OK);
	ck_assert_int_eq(job.model.n_layers, 11);

	ck_assert_int_eq(l[0].kind, DT_LAYER_CONV2D);
	ck_assert_str_eq(l[0].name, "conv2d0");
	ck_assert_int_eq(l[0].channels, 4);
	ck_assert_int_eq(l[0].kernel, 3);
	ck_assert_int_eq(l[0].stride, 1);	/* conv2d's default */
	ck_assert_int_eq(l[0].padding, 1);
	ck_assert_int_eq(l[0].activation, DT_ACT_RELU);
	ck_assert(l[0].bias);
	/* Fields the type does not use stay 0. */
	ck_assert(l[0].units == 0 && l[0].rate == 0.0 && l[0].eps == 0.0 &&
		  !l[0].causal && l[0].n_inputs == 0);

	ck_assert_int_eq(l[1].kind, DT_LAYER_MAXPOOL2D);
	ck_assert_str_eq(l[1].name, "maxpool2d1");
	ck_assert_int_eq(l[1].stride, 2);	/* a pool's: the kernel */
	ck_assert_int_eq(l[1].padding, 0);
	ck_assert(!l[1].bias);
	ck_assert_int_eq(l[2].kind, DT_LAYER_BATCHNORM);
	ck_assert(l[2].eps == 1e-5 && l[2].momentum == 0.1);
	ck_assert_int_eq(l[3].kind, DT_LAYER_AVGPOOL2D);
	ck_assert_int_eq(l[3].stride, 1);
	ck_assert_int_eq(l[4].kind, DT_LAYER_FLATTEN);
	ck_assert_int_eq(l[5].kind, DT_LAYER_DROPOUT);
	ck_assert(l[5].rate == 0.5);
	ck_assert_int_eq(l[6].kind, DT_LAYER_RESHAPE);
	ck_assert_int_eq(l[6].n_shape, 2);
	ck_assert_int_eq(l[6].shape[0], 2);
	ck_assert_int_eq(l[6].shape[1], -1);
	ck_assert_int_eq(l[7].kind, DT_LAYER_LAYERNORM);
	ck_assert(l[7].eps == 1e-6 && l[7].momentum == 0.0);
	ck_assert_int_eq(l[8].kind, DT_LAYER_DENSE);
	ck_assert_int_eq(l[8].units, 10);
	ck_assert(!l[8].bias);
	ck_assert_int_eq(l[8].activation, DT_ACT_NONE);
	ck_assert_str_eq(l[8].name, "logits");
	ck_assert_int_eq(l[9].kind, DT_LAYER_ACTIVATION);
	ck_assert_int_eq(l[9].activation, DT_ACT_GELU);
	ck_assert_str_eq(l[9].name, "gelu9");
	ck_assert_int_eq(l[10].kind, DT_LAYER_SOFTMAX);
	ck_assert_str_eq(l[10].name, "softmax10");

	ck_assert_int_eq(parse(layers_job(
		"    - {type: embedding, vocab: 100, dim: 16}\n"
		"    - {type: pos_embedding, length: 8, dim: 16}\n"
		"    - {type: attention, heads: 2, causal: false, name: attn}\n"
		"    - {type: add, inputs: [pos_embedding1, attn]}\n"
		"    - {type: concat, inputs: [input, add3, attn], name: cat}\n"
		"    - {type: relu}\n"
		"    - {type: tanh}\n"
		"    - {type: sigmoid}\n")), DT_OK);
	ck_assert_int_eq(l[0].kind, DT_LAYER_EMBEDDING);
	ck_assert(l[0].vocab == 100 && l[0].dim == 16);
	ck_assert_int_eq(l[1].kind, DT_LAYER_POS_EMBEDDING);
	ck_assert(l[1].length == 8 && l[1].dim == 16);
	ck_assert_int_eq(l[2].kind, DT_LAYER_ATTENTION);
	ck_assert(l[2].heads == 2 && !l[2].causal && l[2].bias);
	ck_assert_int_eq(l[3].kind, DT_LAYER_ADD);
	ck_assert_str_eq(l[3].name, "add3");
	ck_assert_int_eq(l[3].n_inputs, 2);
	ck_assert_str_eq(l[3].inputs[0], "pos_embedding1");
	ck_assert_str_eq(l[3].inputs[1], "attn");
	ck_assert_int_eq(l[4].kind, DT_LAYER_CONCAT);
	ck_assert_int_eq(l[4].n_inputs, 3);
	ck_assert_str_eq(l[4].inputs[0], "input");
	ck_assert_int_eq(l[5].activation, DT_ACT_RELU);
	ck_assert_int_eq(l[6].activation, DT_ACT_TANH);
	ck_assert_int_eq(l[7].activation, DT_ACT_SIGMOID);
	ck_assert_int_eq(dt_job_pos(&job, "model.layers.4.inputs.2").line, 10);
	ck_assert_int_eq(dt_job_pos(&job, "model.layers.4.inputs.2").col, 44);
	ck_assert_int_eq(dt_job_pos(&job, "model.layers.4.inputs.3").line, 0);
	ck_assert_int_eq(dt_job_pos(&job, "model.layers.2.causal").col, 43);

	ck_assert_int_eq(parse(layers_job(
		"    - {type: reshape, shape: [4, 16]}\n")), DT_OK);
	ck_assert_int_eq(dt_job_pos(&job, "model.layers.0.shape.1").col, 34);
}
END_TEST

/* A transformer-like block three times; its input by block_input. */
static const char blocks[] =
	"    - {type: embedding, vocab: 100, dim: 16, name: tok}\n"
	"    - repeat: 3\n"
	"      name: blk\n"
	"      layers:\n"
	"        - {type: layernorm, name: ln}\n"
	"        - {type: attention, heads: 2}\n"
	"        - {type: add, inputs: [block_input, attention1], name: res}\n"
	"    - {type: dense, units: 100, inputs: [blk.1.res]}\n";

START_TEST(test_repeat)
{
	static const char *const names[] = {
		"tok", "blk.0.ln", "blk.0.attention1", "blk.0.res", "blk.1.ln",
		"blk.1.attention1", "blk.1.res", "blk.2.ln", "blk.2.attention1",
		"blk.2.res", "dense10",
	};
	const struct dt_layer_spec *l = job.model.layers;
	struct dt_pos pos;
	int i;

	ck_assert_int_eq(parse(layers_job(blocks)), DT_OK);
	ck_assert_int_eq(job.model.n_layers, 11);
	for (i = 0; i < 11; i++)
		ck_assert_str_eq(l[i].name, names[i]);
	ck_assert_int_eq(l[5].kind, DT_LAYER_ATTENTION);
	ck_assert_int_eq(l[5].heads, 2);
	/* Each copy's own layers; block_input is the layer before. */
	ck_assert_str_eq(l[3].inputs[0], "tok");
	ck_assert_str_eq(l[3].inputs[1], "blk.0.attention1");
	ck_assert_str_eq(l[6].inputs[0], "blk.0.res");
	ck_assert_str_eq(l[6].inputs[1], "blk.1.attention1");
	ck_assert_str_eq(l[9].inputs[0], "blk.1.res");
	ck_assert_str_eq(l[9].inputs[1], "blk.2.attention1");
	ck_assert_int_eq(l[10].n_inputs, 1);
	ck_assert_str_eq(l[10].inputs[0], "blk.1.res");
	/* Positions point at the entries in the block. */
	for (i = 1; i < 10; i += 3) {
		ck_assert_int_eq(l[i].pos.line, 10);
		ck_assert_int_eq(l[i].pos.col, 11);
	}
	pos = dt_job_pos(&job, "model.layers.8.heads");
	ck_assert_int_eq(pos.line, 11);
	ck_assert_int_eq(pos.col, 36);
	pos = dt_job_pos(&job, "model.layers.9.inputs.0");
	ck_assert_int_eq(pos.line, 12);
	ck_assert_int_eq(pos.col, 32);
	/* A default name "was given" by the block: it stays on --set. */
	pos = dt_job_pos(&job, "model.layers.5.name");
	ck_assert_int_eq(pos.line, 11);

	/* --set uses the expanded index. */
	{
		const char *sets[] = { "model.layers.5.heads=4",
				       "model.layers.7.eps=1e-3" };

		ck_assert_int_eq(parse_as("/j/j.yaml", layers_job(blocks), sets,
					  2), DT_OK);
		ck_assert_int_eq(l[5].heads, 4);
		ck_assert_int_eq(l[2].heads, 2);
		ck_assert_int_eq(l[8].heads, 2);
		ck_assert(l[7].eps == 1e-3 && l[4].eps == 1e-5);
		ck_assert_int_eq(dt_job_pos(&job, "model.layers.5.heads")
				 .from_set, 1);
	}

	/* No name: block<index>; first in the model: block_input is the
	 * model's input; a default layer name is <type><index in block>. */
	ck_assert_int_eq(parse(layers_job(
		"    - repeat: 2\n"
		"      layers: [{type: dense, units: 4}, "
		"{type: add, inputs: [block_input, dense0]}]\n"
		"    - {type: relu}\n"
		"    - repeat: 1\n"
		"      layers: [{type: dense, units: 4, name: fc}]\n")), DT_OK);
	ck_assert_int_eq(job.model.n_layers, 6);
	ck_assert_str_eq(l[0].name, "block0.0.dense0");
	ck_assert_str_eq(l[1].name, "block0.0.add1");
	ck_assert_str_eq(l[1].inputs[0], "input");
	ck_assert_str_eq(l[1].inputs[1], "block0.0.dense0");
	ck_assert_str_eq(l[3].name, "block0.1.add1");
	ck_assert_str_eq(l[3].inputs[0], "block0.0.add1");
	ck_assert_str_eq(l[3].inputs[1], "block0.1.dense0");
	ck_assert_str_eq(l[4].name, "relu4");
	ck_assert_str_eq(l[5].name, "block5.0.fc");
}
END_TEST

START_TEST(test_layer_set)
{
	const char *s1[] = { "model.layers.1={type: dropout, rate: 0.25}" };
	const char *s2[] = { "model.layers.0={activation: tanh}",
			     "model.layers.1.type=sigmoid" };
	const char *s3[] = { "model.layers=[{type: relu}, {repeat: 2, "
			     "layers: [{type: dense, units: 3}]}]" };
	const char *s4[] = { "model.layers.1.inputs=[input]" };
	const char *two = "    - {type: dense, units: 3, activation: relu}\n"
			  "    - {type: relu, name: r}\n";
	const struct dt_layer_spec *l = job.model.layers;

	/* A layer mapping with a type replaces the layer. */
	ck_assert_int_eq(parse_as("j.yaml", layers_job(two), s1, 1), DT_OK);
	ck_assert_int_eq(l[1].kind, DT_LAYER_DROPOUT);
	ck_assert(l[1].rate == 0.25);
	ck_assert_int_eq(l[1].activation, DT_ACT_NONE);
	ck_assert_str_eq(l[1].name, "dropout1");
	/* Without one it is merged; a new type keeps no stale function. */
	ck_assert_int_eq(parse_as("j.yaml", layers_job(two), s2, 2), DT_OK);
	ck_assert_int_eq(l[0].units, 3);
	ck_assert_int_eq(l[0].activation, DT_ACT_TANH);
	ck_assert_int_eq(l[1].kind, DT_LAYER_ACTIVATION);
	ck_assert_int_eq(l[1].activation, DT_ACT_SIGMOID);
	ck_assert_str_eq(l[1].name, "r");
	/* A whole list may hold blocks. */
	ck_assert_int_eq(parse_as("j.yaml", layers_job(two), s3, 1), DT_OK);
	ck_assert_int_eq(job.model.n_layers, 3);
	ck_assert_str_eq(l[2].name, "block1.1.dense0");
	ck_assert_int_eq(parse_as("j.yaml", layers_job(two), s4, 1), DT_OK);
	ck_assert_str_eq(l[1].inputs[0], "input");
}
END_TEST

/* model.init and a layer's init: the words, normal(STD), the default
 * (model.init auto, a layer's left to model.init), --set by expanded
 * index and by name, and the written job reading back the same. */
START_TEST(test_layer_init)
{
	const char *layers =
		"    - {type: conv2d, channels: 4, kernel: 3, init: he}\n"
		"    - {type: dense, units: 6, init: normal(0.05), name: mid}\n"
		"    - {type: dense, units: 2, name: out}\n"
		"  init: gpt2\n";
	const char *s1[] = { "model.init=xavier",
			     "model.layers.out.init=normal(1e-3)",
			     "model.layers.0.init=auto" };
	const struct dt_layer_spec *l = job.model.layers;
	char *text;

	ck_assert_int_eq(parse(layers_job("    - {type: dense, units: 2}\n")),
			 DT_OK);
	ck_assert_int_eq(job.model.init.rule, DT_INIT_RULE_AUTO);
	ck_assert_int_eq(l[0].init.rule, DT_INIT_RULE_INHERIT);

	ck_assert_int_eq(parse(layers_job(layers)), DT_OK);
	ck_assert_int_eq(job.model.init.rule, DT_INIT_RULE_GPT2);
	ck_assert_int_eq(l[0].init.rule, DT_INIT_RULE_HE);
	ck_assert_int_eq(l[1].init.rule, DT_INIT_RULE_NORMAL);
	ck_assert(l[1].init.std == 0.05);
	ck_assert_int_eq(l[2].init.rule, DT_INIT_RULE_INHERIT);
	/* Written: the layers that name one and model.init; read back. */
	text = write_text(&job);
	ck_assert_ptr_nonnull(strstr(text, "  init: gpt2\n"));
	ck_assert_ptr_nonnull(strstr(text, ", init: he, name: \"conv2d0\"}"));
	ck_assert_ptr_nonnull(strstr(text, ", init: normal(0.05), name: "
				     "\"mid\"}"));
	ck_assert_ptr_nonnull(strstr(text, "units: 2, activation: none, "
				     "bias: true, name: \"out\"}"));
	ck_assert_int_eq(parse(text), DT_OK);
	free(text);
	ck_assert_int_eq(job.model.init.rule, DT_INIT_RULE_GPT2);
	ck_assert_int_eq(l[0].init.rule, DT_INIT_RULE_HE);
	ck_assert(l[1].init.rule == DT_INIT_RULE_NORMAL &&
		  l[1].init.std == 0.05);
	ck_assert_int_eq(l[2].init.rule, DT_INIT_RULE_INHERIT);

	ck_assert_int_eq(parse_as("j.yaml", layers_job(layers), s1, 3), DT_OK);
	ck_assert_int_eq(job.model.init.rule, DT_INIT_RULE_XAVIER);
	ck_assert_int_eq(l[0].init.rule, DT_INIT_RULE_AUTO);
	ck_assert(l[1].init.rule == DT_INIT_RULE_NORMAL &&
		  l[1].init.std == 0.05);
	ck_assert(l[2].init.rule == DT_INIT_RULE_NORMAL &&
		  l[2].init.std == 1e-3);
}
END_TEST

/* The errors of init: file:line:col, the key and the words it takes. */
START_TEST(test_layer_init_errors)
{
	const char *want = "expected auto, he, xavier, gpt2 or normal(STD) "
			   "with STD a number >= 0, found ";
	const char *s1[] = { "model.init=kaiming" };
	const char *s2[] = { "model.layers.tok.init=xavier" };
	char head[256];

	snprintf(head, sizeof head, "model.layers.0.init: %s\"kaiming\"",
		 want);
	expect_layer_error("    - {type: dense, units: 2, init: kaiming}\n",
			   37, head);
	snprintf(head, sizeof head, "model.layers.0.init: %s\"normal(-0.1)\"",
		 want);
	expect_layer_error("    - {type: dense, units: 2, "
			   "init: normal(-0.1)}\n", 37, head);
	snprintf(head, sizeof head, "model.layers.0.init: %s\"normal()\"",
		 want);
	expect_layer_error("    - {type: dense, units: 2, init: normal()}\n",
			   37, head);
	snprintf(head, sizeof head, "model.layers.0.init: %s\"normal(.inf)\"",
		 want);
	expect_layer_error("    - {type: dense, units: 2, "
			   "init: normal(.inf)}\n", 37, head);
	expect_layer_error("    - {type: layernorm, init: he}\n", 25,
			   "model.layers.0.init: layernorm takes eps, name, "
			   "inputs");
	expect_layer_error("    - {type: embedding, vocab: 8, dim: 4, "
			   "init: he}\n", 49,
			   "model.layers.0.init: embedding takes auto, gpt2 or "
			   "normal(STD) (a table has no fan-in for he or "
			   "xavier), found he");
	snprintf(head, sizeof head, "job.yaml:7:9: model.init: %s\"he2\"\n"
		 "  init: he2\n        ^", want);
	expect_error(layers_job("    - {type: dense, units: 2}\n"
				"  init: he2\n"), NULL, 0, head);
	snprintf(head, sizeof head, "--set model.init=kaiming: model.init: "
		 "%s\"kaiming\"", want);
	expect_error(layers_job("    - {type: dense, units: 2}\n"), s1, 1,
		     head);
	expect_error(layers_job("    - {type: embedding, vocab: 8, dim: 4, "
				"name: tok}\n"), s2, 1,
		     "--set model.layers.tok.init=xavier: model.layers.0.init: "
		     "embedding takes auto, gpt2 or normal(STD) (a table has "
		     "no fan-in for he or xavier), found xavier");
}
END_TEST

START_TEST(test_layer_errors)
{
	char msg[1024];

	expect_layer_error("    - {type: conv2d, channels: 8, kernel: 3, "
			   "units: 4}\n", 46,
			   "model.layers.0.units: conv2d takes channels, "
			   "kernel, stride, padding, activation, bias, init, "
			   "name, inputs");
	/* The type is read first wherever it stands. */
	expect_layer_error("    - {units: 4, type: conv2d, channels: 8, "
			   "kernel: 3}\n", 8,
			   "model.layers.0.units: conv2d takes channels, "
			   "kernel, stride, padding, activation, bias, init, "
			   "name, inputs");
	expect_layer_error("    - {type: relu, activation: relu}\n", 20,
			   "model.layers.0.activation: relu takes name, "
			   "inputs");
	expect_layer_error("    - {type: conv2d, channels: 8}\n", 7,
			   "model.layers.0.kernel: required key missing (type "
			   "is conv2d); expected an integer in [1, 1024]");
	expect_layer_error("    - {type: embedding, dim: 8}\n", 7,
			   "model.layers.0.vocab: required key missing (type "
			   "is embedding); expected an integer in [1, 16777216]");
	expect_layer_error("    - {type: attention}\n", 7,
			   "model.layers.0.heads: required key missing (type "
			   "is attention); expected an integer in [1, 4096]");
	expect_layer_error("    - {type: dropout}\n", 7,
			   "model.layers.0.rate: required key missing (type "
			   "is dropout); expected a number in [0, 1)");
	expect_layer_error("    - {type: dropout, rate: 1}\n", 29,
			   "model.layers.0.rate: must be in [0, 1), found 1");
	expect_layer_error("    - {type: reshape}\n", 7,
			   "model.layers.0.shape: required key missing (type "
			   "is reshape); expected a list of 1 to 4 integers");
	expect_layer_error("    - {type: reshape, shape: [-1, 0]}\n", 35,
			   "model.layers.0.shape.1: must be in [1, 4194304] or -1, found "
			   "0");
	expect_layer_error("    - {type: reshape, shape: [-1, 2, -1]}\n", 38,
			   "model.layers.0.shape.2: expected at most one -1, "
			   "found a second");
	expect_layer_error("    - {type: conv2d, channels: 8, kernel: 0}\n",
			   43, "model.layers.0.kernel: must be in [1, 1024], found 0");
	snprintf(msg, sizeof msg, "model.layers.0.type: expected one of %s, "
		 "found \"dens\"", layer_type_words());
	expect_layer_error("    - {type: dens}\n", 14, msg);

	/* inputs */
	expect_layer_error("    - {type: add, inputs: [input]}\n", 27,
			   "model.layers.0.inputs: add takes 2 to 4 inputs, "
			   "found 1");
	expect_layer_error("    - {type: concat}\n", 7,
			   "model.layers.0.inputs: required key missing (type "
			   "is concat); expected a list of 1 to 4 layer names");
	expect_layer_error("    - {type: dense, units: 3, inputs: [input, "
			   "input]}\n", 39,
			   "model.layers.0.inputs: dense takes one input, "
			   "found 2");
	expect_layer_error("    - {type: dense, units: 3, inputs: [dense1]}\n"
			   "    - {type: dense, units: 3}\n", 40,
			   "model.layers.0.inputs.0: expected \"input\" or an "
			   "earlier layer, found \"dense1\" (model.layers.1)");
	expect_layer_error("    - {type: relu, name: r, inputs: [r]}\n", 38,
			   "model.layers.0.inputs.0: expected \"input\" or an "
			   "earlier layer, found \"r\" (model.layers.0)");
	expect_error(layers_job("    - {type: dense, units: 3, name: hidden}\n"
				"    - {type: relu, inputs: [hiden]}\n"), NULL,
		     0, at(7, 29, "model.layers.1.inputs.0: expected \"input\" "
			   "or an earlier layer, found \"hiden\"; did you mean "
			   "'hidden'?", "    - {type: relu, inputs: [hiden]}"));
	expect_layer_error("    - {type: relu, inputs: [inptu]}\n", 29,
			   "model.layers.0.inputs.0: expected \"input\" or an "
			   "earlier layer, found \"inptu\"; did you mean "
			   "'input'?");
	expect_layer_error("    - {type: relu, inputs: [xyzzy]}\n", 29,
			   "model.layers.0.inputs.0: expected \"input\" or an "
			   "earlier layer, found \"xyzzy\"");
	expect_layer_error("    - {type: relu, inputs: [block_input]}\n", 29,
			   "model.layers.0.inputs.0: expected \"input\" or an "
			   "earlier layer, found \"block_input\", which only "
			   "the layers of a repeat block use");
	expect_layer_error("    - {type: relu, inputs: [a/b]}\n", 29,
			   "model.layers.0.inputs.0: expected a name of "
			   "letters, digits, '.', '_' and '-' (not starting "
			   "with '.'), found \"a/b\"");
	expect_layer_error("    - {type: add, inputs: [input, input, input, "
			   "input, input]}\n", 56,
			   "model.layers.0.inputs: expected at most 4 names, "
			   "found 5");
	expect_layer_error("    - {type: relu, name: input}\n", 26,
			   "model.layers.0.name: expected a name other than "
			   "input and block_input (they mean the model's and a "
			   "block's input), found \"input\"");
	expect_error(layers_job("    - {type: relu, name: r}\n"
				"    - {type: tanh, name: r}\n"), NULL, 0,
		     at(7, 26, "model.layers.1.name: duplicate layer name "
			"\"r\", first used by model.layers.0",
			"    - {type: tanh, name: r}"));
}
END_TEST

START_TEST(test_layer_set_errors)
{
	const char *dense = "    - {type: dense, units: 3}\n";
	const char *s1[] = { "model.layers.0.type=relu" };
	const char *s2[] = { "model.layers.0.channels=3" };
	const char *s3[] = { "model.layers.0.type=conv2d" };
	const char *s4[] = { "model.layers.0={repeat: 2, layers: [{type: "
			     "relu}]}" };
	const char *s5[] = { "model.layers.0.inputs=[nope]" };

	expect_error(layers_job(dense), s1, 1,
		     "--set model.layers.0.type=relu: model.layers.0.units: "
		     "relu takes name, inputs");
	expect_error(layers_job(dense), s2, 1,
		     "--set model.layers.0.channels=3: model.layers.0.channels: "
		     "dense takes units, activation, bias, init, name, "
		     "inputs, tie");
	expect_error(layers_job("    - {type: relu}\n"), s3, 1,
		     "--set model.layers.0.type=conv2d: model.layers.0.channels: "
		     "required key missing (type is conv2d); expected an "
		     "integer in [1, 65536]");
	expect_error(layers_job(dense), s4, 1,
		     "--set model.layers.0={repeat: 2, layers: [{type: relu}]}: "
		     "model.layers.0: expected a layer, found a repeat block; "
		     "blocks are entries of model.layers and do not nest");
	expect_error(layers_job(dense), s5, 1,
		     "--set model.layers.0.inputs=[nope]: "
		     "model.layers.0.inputs.0: expected \"input\" or an earlier "
		     "layer, found \"nope\"");
}
END_TEST

START_TEST(test_block_errors)
{
	const char *d = "    - {type: dense, units: 3}\n";
	char text[512];

#define BLOCK(s) (snprintf(text, sizeof text, "%s%s", d, s), text)
	expect_error(layers_job(BLOCK("    - {repeat: 0, layers: [{type: "
				      "relu}]}\n")), NULL, 0,
		     at(7, 16, "model.layers.1.repeat: must be in [1, 256], found 0",
			"    - {repeat: 0, layers: [{type: relu}]}"));
	expect_error(layers_job(BLOCK("    - {repeat: 2}\n")), NULL, 0,
		     at(7, 7, "model.layers.1.layers: required key missing; "
			"expected a list of layers", "    - {repeat: 2}"));
	expect_error(layers_job(BLOCK("    - {layers: [{type: relu}]}\n")),
		     NULL, 0,
		     at(7, 7, "model.layers.1.repeat: required key missing; "
			"expected an integer in [1, 256]",
			"    - {layers: [{type: relu}]}"));
	expect_error(layers_job(BLOCK("    - {repeat: 2, layers: []}\n")),
		     NULL, 0,
		     at(7, 27, "model.layers.1.layers: expected at least one "
			"layer, found an empty list",
			"    - {repeat: 2, layers: []}"));
	expect_error(layers_job(BLOCK("    - {repeat: 2, layers: relu}\n")),
		     NULL, 0,
		     at(7, 27, "model.layers.1.layers: expected a list of "
			"layers, found \"relu\"",
			"    - {repeat: 2, layers: relu}"));
	expect_error(layers_job(BLOCK("    - {repeat: 2, type: dense, "
				      "layers: [{type: relu}]}\n")), NULL, 0,
		     at(7, 19, "model.layers.1.type: a repeat block takes "
			"repeat, layers, name; put type in one of its layers",
			"    - {repeat: 2, type: dense, layers: [{type: relu}]}"));
	expect_error(layers_job(BLOCK("    - {repeat: 2, laers: [{type: "
				      "relu}]}\n")), NULL, 0,
		     at(7, 19, "model.layers.1.laers: unknown key; did you "
			"mean 'model.layers.1.layers'?",
			"    - {repeat: 2, laers: [{type: relu}]}"));
	expect_error(layers_job(BLOCK("    - {repeat: 2, layers: [{repeat: 2, "
				      "layers: [{type: relu}]}]}\n")), NULL, 0,
		     at(7, 28, "model.layers.block1.layers.0: expected a "
			"layer, found a repeat block; blocks are entries of "
			"model.layers and do not nest", "    - {repeat: 2, layers: [{repeat: 2, "
			"layers: [{type: relu}]}]}"));
	/* Errors of a layer's keys inside a block name it by the block
	 * (above, model.layers.block1.layers.0: it was model.layers.1);
	 * the later checks name the first copy's expanded index. */
	expect_error(layers_job(BLOCK("    - {repeat: 2, layers: [{type: "
				      "relu}, {type: dense}]}\n")), NULL, 0,
		     at(7, 42, "model.layers.2.units: required key missing "
			"(type is dense); expected an integer in [1, 1048576]",
			"    - {repeat: 2, layers: [{type: relu}, {type: "
			"dense}]}"));
	expect_error(layers_job(BLOCK("    - {repeat: 100, layers: [{type: "
				      "relu}, {type: tanh}, {type: gelu}]}\n"
				      "    - {repeat: 3, layers: [{type: "
				      "relu}]}\n")), NULL, 0,
		     at(7, 16, "model.layers: expected at most 256 layers once "
			"repeat blocks are expanded, found 304",
			"    - {repeat: 100, layers: [{type: relu}, {type: "
			"tanh}, {type: gelu}]}"));
	expect_error(layers_job(BLOCK("    - {repeat: 2, name: "
				      "a-very-long-block-name-that-goes-on, "
				      "layers: [{type: relu, name: "
				      "a-rather-long-layer-name-xy}]}\n")),
		     NULL,
		     0, at(7, 90, "model.layers.2.name: expected a name of 1 "
			   "to 63 characters once the block's name and copy "
			   "are added, found 65 characters",
			   "    - {repeat: 2, name: "
			   "a-very-long-block-name-that-goes-on, layers: "
			   "[{type: relu, name: a-rather-long-layer-name-xy}]}"));
	expect_error(layers_job(BLOCK("    - {repeat: 2, name: input, layers: "
				      "[{type: relu}]}\n")), NULL, 0,
		     at(7, 25, "model.layers.1.name: expected a name other "
			"than input and block_input (they mean the model's and "
			"a block's input), found \"input\"",
			"    - {repeat: 2, name: input, layers: [{type: "
			"relu}]}"));
	/* A name inside a block that refers to a later layer of it. */
	expect_error(layers_job(BLOCK("    - {repeat: 2, layers: [{type: add, "
				      "inputs: [relu1, block_input]}, {type: "
				      "relu}]}\n")), NULL, 0,
		     at(7, 49, "model.layers.1.inputs.0: expected \"input\" or "
			"an earlier layer, found \"block1.0.relu1\" "
			"(model.layers.2)", "    - {repeat: 2, layers: [{type: "
			"add, inputs: [relu1, block_input]}, {type: relu}]}"));
#undef BLOCK
}
END_TEST

TCase *
job_layer_tcase(void)
{
	TCase *tc = tcase_create("layers");

	tcase_add_test(tc, test_layer_types);
	tcase_add_test(tc, test_repeat);
	tcase_add_test(tc, test_layer_set);
	tcase_add_test(tc, test_layer_init);
	tcase_add_test(tc, test_layer_init_errors);
	tcase_add_test(tc, test_layer_errors);
	tcase_add_test(tc, test_layer_set_errors);
	tcase_add_test(tc, test_block_errors);
	return tc;
}
