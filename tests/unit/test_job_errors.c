/* SPDX-License-Identifier: MIT */
/* test_job_errors.c - every kind of job-file error gives its exact message:
 * FILE:LINE:COL, the key, what was expected and what was found, the source
 * line and a caret under the column; YAML 1.2 numbers; --set errors. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "job_test.h"

START_TEST(test_err_unknown_key)
{
	expect_error("train:\n  lrr: 0.1\n", NULL, 0,
		     "job.yaml:2:3: train.lrr: unknown key; did you mean "
		     "'train.lr'?\n  lrr: 0.1\n  ^");
	/* Right key, wrong section. */
	expect_error("seed: 1\nlr: 0.1\n", NULL, 0,
		     "job.yaml:2:1: lr: unknown key; did you mean "
		     "'train.lr'?\nlr: 0.1\n^");
	expect_error("data:\n  train:\n    imagse: x\n", NULL, 0,
		     "job.yaml:3:5: data.train.imagse: unknown key; did you "
		     "mean 'data.train.images'?\n    imagse: x\n    ^");
	/* Nothing close: list what the section takes. */
	expect_error("log:\n  every: 5\n", NULL, 0,
		     "job.yaml:2:3: log.every: unknown key; log takes "
		     "every_steps, tensorboard\n  every: 5\n  ^");
	expect_error("model:\n  layers:\n    - {type: dense, unit: 3}\n",
		     NULL, 0,
		     "job.yaml:3:21: model.layers.0.unit: unknown key; did "
		     "you mean 'model.layers.0.units'?\n"
		     "    - {type: dense, unit: 3}\n"
		     "                    ^");
	expect_error("optimiser: adam\n", NULL, 0,
		     "job.yaml:1:1: optimiser: unknown key; the top level "
		     "takes name, seed, data, model, train, parallel, "
		     "checkpoint, eval, log\noptimiser: adam\n^");
	/* A missing space after ':' makes one plain scalar in a flow. */
	expect_error("model:\n  layers:\n    - {type: dense, units: 3, "
		     "activation:relu}\n", NULL, 0,
		     "job.yaml:3:31: model.layers.0.activation:relu: unknown "
		     "key; put a space after ':' to give "
		     "model.layers.0.activation a value\n"
		     "    - {type: dense, units: 3, activation:relu}\n"
		     "                              ^");
	/* A dotted key is not a path into a section. */
	expect_error("data:\n  train.images: x\n", NULL, 0,
		     "job.yaml:2:3: data.train.images: expected a key "
		     "without '.', found \"train.images\"; nest mappings "
		     "instead\n  train.images: x\n  ^");
}
END_TEST

START_TEST(test_err_duplicate_key)
{
	expect_error("train:\n  lr: 0.1\n  momentum: 0.9\n  lr: 0.2\n",
		     NULL, 0,
		     "job.yaml:4:3: train.lr: duplicate key, first given on "
		     "line 2\n  lr: 0.2\n  ^");
	expect_error("seed: 1\ndata: {}\nseed: 2\n", NULL, 0,
		     "job.yaml:3:1: seed: duplicate key, first given on line "
		     "1\nseed: 2\n^");
}
END_TEST

START_TEST(test_err_wrong_type)
{
	expect_error("train:\n  lr: fast\n", NULL, 0,
		     "job.yaml:2:7: train.lr: expected a number, found "
		     "\"fast\"\n  lr: fast\n      ^");
	expect_error("train:\n  nesterov: yes\n", NULL, 0,
		     "job.yaml:2:13: train.nesterov: expected true or false, "
		     "found \"yes\"\n  nesterov: yes\n            ^");
	expect_error("train:\n  nesterov: True\n", NULL, 0,
		     "job.yaml:2:13: train.nesterov: expected true or false, "
		     "found \"True\"\n  nesterov: True\n            ^");
	expect_error("train:\n  lr: \"0.1\"\n", NULL, 0,
		     "job.yaml:2:7: train.lr: expected a number, found a "
		     "quoted string \"0.1\"\n  lr: \"0.1\"\n      ^");
	expect_error("train:\n  steps: '10'\n", NULL, 0,
		     "job.yaml:2:10: train.steps: expected an integer, found "
		     "a quoted string \"10\"\n  steps: '10'\n         ^");
	expect_error("train:\n  lr:\n", NULL, 0,
		     "job.yaml:2:6: train.lr: expected a number, found "
		     "nothing\n  lr:\n     ^");
	expect_error("train:\n  lr: [0.1]\n", NULL, 0,
		     "job.yaml:2:7: train.lr: expected a number, found a "
		     "list\n  lr: [0.1]\n      ^");
	expect_error("train: 3\n", NULL, 0,
		     "job.yaml:1:8: train: expected a mapping, found \"3\"\n"
		     "train: 3\n       ^");
	expect_error("model:\n  input_shape: 28\n", NULL, 0,
		     "job.yaml:2:16: model.input_shape: expected a list of 1 "
		     "to 4 integers, found \"28\"\n  input_shape: 28\n"
		     "               ^");
	expect_error("model:\n  layers:\n    - dense\n", NULL, 0,
		     "job.yaml:3:7: model.layers.0: expected a mapping such "
		     "as {type: dense, units: 10}, found \"dense\"\n"
		     "    - dense\n      ^");
	expect_error("name: a/b\n", NULL, 0,
		     "job.yaml:1:7: name: expected a name of letters, digits, "
		     "'.', '_' and '-' (not starting with '.'), found \"a/b\"\n"
		     "name: a/b\n      ^");
	expect_error("- data\n", NULL, 0,
		     "job.yaml:1:1: expected a mapping of job sections (data, "
		     "model, train, ...), found a list\n- data\n^");
}
END_TEST

START_TEST(test_err_missing)
{
	char msg[1024];

	/* lr is missing: point at the train mapping. */
	expect_error("data:\n  train: {images: a, labels: b}\nmodel:\n"
		     "  input_shape: [4]\n  layers: [{type: dense, units: 2}]\n"
		     "train:\n  micro_batch: 2\n  steps: 5\n", NULL, 0,
		     "job.yaml:7:3: train.lr: required key missing; expected "
		     "a number > 0\n  micro_batch: 2\n  ^");
	/* No data section at all: point at the top mapping. */
	expect_error("\n\nmodel:\n  input_shape: [4]\n", NULL, 0,
		     "job.yaml:3:1: data.train.images: required key missing "
		     "(data.format is idx); expected a path or URL\nmodel:\n^");
	expect_error("data:\n  train: {images: a}\n", NULL, 0,
		     "job.yaml:2:10: data.train.labels: required key missing "
		     "(data.format is idx); expected a path or URL\n"
		     "  train: {images: a}\n         ^");
	expect_error("data:\n  train: {images: a, labels: b}\n"
		     "  eval:\n    images: c\nmodel:\n  input_shape: [4]\n"
		     "  layers: [{type: dense, units: 2}]\n"
		     "train: {lr: 1, micro_batch: 1, steps: 1}\n", NULL, 0,
		     "job.yaml:4:5: data.eval.labels: required key missing "
		     "(data.eval.images is given); expected a path or URL\n"
		     "    images: c\n    ^");
	snprintf(msg, sizeof msg, "job.yaml:6:7: model.layers.0.type: "
		 "required key missing; expected one of %s\n"
		 "    - {units: 2}\n      ^", layer_type_words());
	expect_error("data:\n  train: {images: a, labels: b}\nmodel:\n"
		     "  input_shape: [4]\n  layers:\n    - {units: 2}\n",
		     NULL, 0, msg);
	expect_error("data:\n  train: {images: a, labels: b}\nmodel:\n"
		     "  input_shape: [4]\n  layers: []\n", NULL, 0,
		     "job.yaml:5:11: model.layers: expected at least one "
		     "layer, found an empty list\n  layers: []\n          ^");
	/* Cross-key rules. */
	expect_error("data:\n  train: {images: a, labels: b}\nmodel:\n"
		     "  input_shape: [4]\n  layers: [{type: dense, units: 2}]\n"
		     "train:\n  lr: 0.1\n  micro_batch: 4\n", NULL, 0,
		     "job.yaml:7:3: train: expected train.epochs or "
		     "train.steps, found neither\n  lr: 0.1\n  ^");
	expect_error(min_with("  epochs: 2\n"), NULL, 0,
		     "job.yaml:11:11: train.epochs: expected train.epochs or "
		     "train.steps, found both\n  epochs: 2\n          ^");
	expect_error("data:\n  train: {images: a, labels: b}\nmodel:\n"
		     "  input_shape: [4]\n  layers: [{type: dense, units: 2}]\n"
		     "train:\n  lr: 0.1\n  steps: 4\n  grad_accum_steps: 2\n",
		     NULL, 0,
		     "job.yaml:7:3: train: expected train.global_batch or "
		     "train.micro_batch (or both), found neither\n"
		     "  lr: 0.1\n  ^");
	expect_error(min_with("  nesterov: true\n"), NULL, 0,
		     "job.yaml:11:13: train.nesterov: true needs "
		     "train.momentum > 0, found momentum 0\n"
		     "  nesterov: true\n            ^");
	expect_error("data:\n  train: {images: a, labels: b}\nmodel:\n"
		     "  input_shape: [4]\n  layers:\n"
		     "    - {type: dense, units: 2, name: fc}\n"
		     "    - {type: dense, units: 2, name: fc}\n", NULL, 0,
		     "job.yaml:7:37: model.layers.1.name: duplicate layer "
		     "name \"fc\", first used by model.layers.0\n"
		     "    - {type: dense, units: 2, name: fc}\n"
		     "                                    ^");
}
END_TEST

START_TEST(test_err_range)
{
	expect_error("train:\n  lr: -0.1\n", NULL, 0,
		     "job.yaml:2:7: train.lr: must be > 0, found -0.1\n"
		     "  lr: -0.1\n      ^");
	expect_error("train:\n  lr: 0\n", NULL, 0,
		     "job.yaml:2:7: train.lr: must be > 0, found 0\n"
		     "  lr: 0\n      ^");
	expect_error("train:\n  momentum: 1\n", NULL, 0,
		     "job.yaml:2:13: train.momentum: must be in [0, 1), found "
		     "1\n  momentum: 1\n            ^");
	expect_error("train:\n  beta2: -1e-3\n", NULL, 0,
		     "job.yaml:2:10: train.beta2: must be in [0, 1), found "
		     "-1e-3\n  beta2: -1e-3\n         ^");
	expect_error("train:\n  micro_batch: 0\n", NULL, 0,
		     "job.yaml:2:16: train.micro_batch: must be in [1, 65536], found 0\n"
		     "  micro_batch: 0\n               ^");
	expect_error("seed: -1\n", NULL, 0,
		     "job.yaml:1:7: seed: must be >= 0, found -1\n"
		     "seed: -1\n      ^");
	expect_error("model:\n  input_shape: [28, 0]\n", NULL, 0,
		     "job.yaml:2:21: model.input_shape.1: must be in [1, 4194304], found "
		     "0\n  input_shape: [28, 0]\n                    ^");
	expect_error("model:\n  input_shape: [1, 2, 3, 4, 5]\n", NULL, 0,
		     "job.yaml:2:29: model.input_shape: expected at most 4 "
		     "dimensions, found 5\n  input_shape: [1, 2, 3, 4, 5]\n"
		     "                            ^");
	expect_error("train:\n  lr: .inf\n", NULL, 0,
		     "job.yaml:2:7: train.lr: expected a finite number, found "
		     ".inf\n  lr: .inf\n      ^");
}
END_TEST

START_TEST(test_err_enum)
{
	expect_error("train:\n  optimizer: adamm\n", NULL, 0,
		     "job.yaml:2:14: train.optimizer: expected one of sgd, "
		     "adam, adamw, found \"adamm\"\n  optimizer: adamm\n"
		     "             ^");
	expect_error("model:\n  layers:\n    - {type: dense, units: 3, "
		     "activation: softmax}\n", NULL, 0,
		     "job.yaml:3:43: model.layers.0.activation: expected one "
		     "of none, relu, tanh, sigmoid, gelu, found \"softmax\"\n"
		     "    - {type: dense, units: 3, activation: softmax}\n"
		     "                                          ^");
}
END_TEST

START_TEST(test_err_tabs_and_syntax)
{
	expect_error("train:\n\tlr: 0.1\n", NULL, 0,
		     "job.yaml:2:1: tab character in indentation; use spaces\n"
		     "\tlr: 0.1\n^");
	expect_error("train:\n  lr: 0.1\n  \tmomentum: 0.9\n", NULL, 0,
		     "job.yaml:3:3: tab character in indentation; use spaces\n"
		     "  \tmomentum: 0.9\n  ^");
	/* A tab after the separator is fine YAML. */
	ck_assert_int_eq(parse(min_with("  momentum:\t0.5\n")), DT_OK);
	ck_assert(job.train.momentum == 0.5);

	expect_error("seed: 1\ntrain: lr: 0.1\n", NULL, 0,
		     "job.yaml:2:10: mapping values are not allowed in this "
		     "context\ntrain: lr: 0.1\n         ^");
	expect_error("model:\n  input_shape: [28, 28\nseed: 1\n", NULL, 0,
		     "job.yaml:3:5: did not find expected ',' or ']' (while "
		     "parsing a flow sequence that starts at 2:16)\n"
		     "seed: 1\n    ^");
	expect_error("seed: 1\n---\nseed: 2\n", NULL, 0,
		     "job.yaml:2:1: expected one YAML document, found a "
		     "second\n---\n^");
	expect_error("a: &x 1\nb: *x\n", NULL, 0,
		     "job.yaml:2:4: aliases such as *x are not supported; "
		     "name the value once under vars: and write $NAME where "
		     "it is used\n"
		     "b: *x\n   ^");
}
END_TEST

START_TEST(test_err_empty)
{
	expect_error("", NULL, 0,
		     "job.yaml:1:1: expected a mapping of job sections (data, "
		     "model, train, ...), found an empty file\n\n^");
	expect_error("# only a comment\n\n", NULL, 0,
		     "job.yaml:1:1: expected a mapping of job sections (data, "
		     "model, train, ...), found an empty file\n"
		     "# only a comment\n^");
}
END_TEST

START_TEST(test_numbers)
{
	static const struct {
		const char *text;
		double want;
	} floats[] = {
		{ "1e-3", 1e-3 }, { "1E-3", 1e-3 }, { ".001", 0.001 },
		{ "+0.5", 0.5 }, { "10", 10.0 }, { "2.", 2.0 },
		{ "1.5e+2", 150.0 }, { "0x10", 16.0 },
	};
	static const struct {
		const char *text;
		int64_t want;
	} ints[] = {
		{ "10", 10 }, { "+7", 7 }, { "1e3", 1000 }, { "2.0", 2 },
		{ "0x1F", 31 }, { "0o17", 15 }, { "6.5536e4", 65536 },
		{ "0x10000", 65536 },
	};
	char line[128];
	size_t i;

	for (i = 0; i < sizeof floats / sizeof floats[0]; i++) {
		snprintf(line, sizeof line, "  weight_decay: %s\n",
			 floats[i].text);
		ck_assert_msg(parse(min_with(line)) == DT_OK, "%s: %s",
			      floats[i].text, err.msg);
		ck_assert_msg(job.train.weight_decay == floats[i].want, "%s",
			      floats[i].text);
	}
	/* -2.5 reads as a number; the range check is what refuses it. */
	expect_error(min_with("  weight_decay: -2.5\n"), NULL, 0,
		     "job.yaml:11:17: train.weight_decay: must be >= 0, found "
		     "-2.5\n  weight_decay: -2.5\n                ^");
	for (i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		snprintf(line, sizeof line, "  grad_accum_steps: %s\n",
			 ints[i].text);
		ck_assert_msg(parse(min_with(line)) == DT_OK, "%s: %s",
			      ints[i].text, err.msg);
		ck_assert_int_eq(job.train.grad_accum_steps, ints[i].want);
	}
	ck_assert_int_eq(parse("seed: 18446744073709551615\n" "data:\n"
			       "  train: {images: a, labels: b}\nmodel:\n"
			       "  input_shape: [4]\n  layers: [{type: dense, "
			       "units: 2}]\ntrain: {micro_batch: 1, steps: 1, "
			       "lr: 1}\n"), DT_OK);
	ck_assert_uint_eq(job.seed, UINT64_MAX);

	/* Past the bound, the message shows the number as written, even
	 * one that does not fit 32 bits or a double. */
	expect_error(min_with("  grad_accum_steps: 65537\n"), NULL, 0,
		     "job.yaml:11:21: train.grad_accum_steps: must be in "
		     "[1, 65536], found 65537\n  grad_accum_steps: 65537\n"
		     "                    ^");
	expect_error(min_with("  grad_accum_steps: 9007199254740993\n"), NULL,
		     0, "job.yaml:11:21: train.grad_accum_steps: must be in "
		     "[1, 65536], found 9007199254740993\n"
		     "  grad_accum_steps: 9007199254740993\n"
		     "                    ^");
	expect_error(min_with("  grad_accum_steps: 2.5\n"), NULL, 0,
		     "job.yaml:11:21: train.grad_accum_steps: expected an "
		     "integer, found \"2.5\"\n  grad_accum_steps: 2.5\n"
		     "                    ^");
	expect_error(min_with("  grad_accum_steps: 1_000\n"), NULL, 0,
		     "job.yaml:11:21: train.grad_accum_steps: expected an "
		     "integer, found \"1_000\"\n  grad_accum_steps: 1_000\n"
		     "                    ^");
	expect_error(min_with("  grad_accum_steps: 1e30\n"), NULL, 0,
		     "job.yaml:11:21: train.grad_accum_steps: expected an "
		     "integer that fits 64 bits, found 1e30\n"
		     "  grad_accum_steps: 1e30\n                    ^");
	expect_error(min_with("  grad_accum_steps: 99999999999999999999\n"),
		     NULL, 0,
		     "job.yaml:11:21: train.grad_accum_steps: expected an "
		     "integer that fits 64 bits, found 99999999999999999999\n"
		     "  grad_accum_steps: 99999999999999999999\n"
		     "                    ^");
	expect_error(min_with("  weight_decay: 1e\n"), NULL, 0,
		     "job.yaml:11:17: train.weight_decay: expected a number, "
		     "found \"1e\"\n  weight_decay: 1e\n                ^");
	expect_error(min_with("  weight_decay: .nan\n"), NULL, 0,
		     "job.yaml:11:17: train.weight_decay: expected a finite "
		     "number, found .nan\n  weight_decay: .nan\n"
		     "                ^");
}
END_TEST

START_TEST(test_set_errors)
{
	const char *s1[] = { "train.lr=fast" };
	const char *s2[] = { "train.lrr=0.1" };
	const char *s3[] = { "train.lr" };
	const char *s4[] = { "model.layers.3.units=64" };
	const char *s5[] = { "train.nesterov=yes" };
	const char *s6[] = { "seed=1", "train.lr=-1" };
	const char *s7[] = { "train.lr=\"0.1\"" };
	const char *s8[] = { "train.epochs=3", "train.steps=7" };
	const char *s9[] = { "model.layers.0.unit=3" };
	const char *s10[] = { "train.lr=[1" };
	const char *s11[] = { "train.optimizer=lion" };
	const char *s12[] = { "train.lr=" };
	const char *s13[] = { " =3" };

	expect_error(min_job, s1, 1,
		     "--set train.lr=fast: train.lr: expected a number, found "
		     "\"fast\"");
	expect_error(min_job, s2, 1,
		     "--set train.lrr=0.1: train.lrr: unknown key; did you "
		     "mean 'train.lr'?");
	expect_error(min_job, s3, 1,
		     "--set train.lr: expected key.path=value");
	expect_error(min_job, s4, 1,
		     "--set model.layers.3.units=64: model.layers.3.units: no "
		     "such layer; there are 1 (0 to 0)");
	expect_error(min_job, s5, 1,
		     "--set train.nesterov=yes: train.nesterov: expected true "
		     "or false, found \"yes\"");
	expect_error(min_job, s6, 2,
		     "--set train.lr=-1: train.lr: must be > 0, found -1");
	expect_error(min_job, s7, 1,
		     "--set train.lr=\"0.1\": train.lr: expected a number, "
		     "found a quoted string \"0.1\"");
	/* A rule broken by an override names the override. */
	expect_error(min_job, s8, 2,
		     "--set train.steps=7: train.steps: expected "
		     "train.epochs or train.steps, found both");
	expect_error(min_job, s9, 1,
		     "--set model.layers.0.unit=3: model.layers.0.unit: "
		     "unknown key; did you mean 'model.layers.0.units'?");
	expect_error(min_job, s10, 1,
		     "--set train.lr=[1: train.lr: value is not valid YAML: "
		     "did not find expected ',' or ']' (while parsing a flow "
		     "sequence that starts at 1:1); a value that starts "
		     "with { or [ is a YAML mapping or list: to give it as "
		     "a string (a brace pattern of shards), quote it: --set "
		     "'train.lr=\"...\"'");
	expect_error(min_job, s11, 1,
		     "--set train.optimizer=lion: train.optimizer: expected "
		     "one of sgd, adam, adamw, found \"lion\"");
	expect_error(min_job, s12, 1,
		     "--set train.lr=: train.lr: expected a number, found "
		     "nothing");
	expect_error(min_job, s13, 1, "--set  =3: expected key.path=value");
}
END_TEST

TCase *
job_error_tcase(void)
{
	TCase *tc = tcase_create("errors");

	tcase_add_test(tc, test_err_unknown_key);
	tcase_add_test(tc, test_err_duplicate_key);
	tcase_add_test(tc, test_err_wrong_type);
	tcase_add_test(tc, test_err_missing);
	tcase_add_test(tc, test_err_range);
	tcase_add_test(tc, test_err_enum);
	tcase_add_test(tc, test_err_tabs_and_syntax);
	tcase_add_test(tc, test_err_empty);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_set_errors);
	return tc;
}
