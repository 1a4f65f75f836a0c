#!/bin/sh
# SPDX-License-Identifier: MIT
# A job that says its width once (vars: width, written $width) and its
# window once (data.context; model.input_shape and the pos_embedding's
# length and dim are derived), swept from the command line by name over
# two depths (model.layers.block.repeat) and two widths (vars.width),
# each point planned with the parameter count worked out by hand; the old
# index spelling of a layer key; and the hostile files (issue 32).
#
# Parameters, with W the width, R the repeat count, vocabulary 4, window
# 8, 2 heads and a head of 4 classes:
#   tok embedding 4W, pos_embedding 8W,
#   per block: layernorm 2W, attention (qkv W*3W + 3W, proj W*W + W)
#     4W^2 + 4W, dense fc W^2 + W: 5W^2 + 7W,
#   head dense 4W + 4:  total 16W + 4 + R (5W^2 + 7W).
#   W 8:  R 1: 132 + 376 = 508,   R 2: 132 + 752 = 884
#   W 16: R 1: 260 + 1392 = 1652, R 2: 260 + 2784 = 3044
# Before vars and --set by name, the job was refused (vars: unknown key).
. "${top_srcdir}/tests/integration/lib.sh"

printf 'abbaabab%.0s' $(seq 100) >ab.txt
cat >sweep.yaml <<'YAML'
name: sweep
vars:
  width: 8
data: {format: text, context: 8, text_unit: bytes, train: {file: ab.txt}}
model:
  layers:
    - {type: embedding, name: tok, vocab: 4, dim: $width}
    - {type: pos_embedding, name: pos}
    - repeat: 2
      name: block
      layers:
        - {type: layernorm, name: ln}
        - {type: attention, name: attn, heads: 2}
        - {type: add, name: res, inputs: [block_input, attn]}
        - {type: dense, name: fc, units: $width}
    - {type: dense, name: head, units: 4}
train: {global_batch: 4, steps: 1, optimizer: sgd, lr: 0.1}
YAML

# params ARGS...: the parameter count dtrain plan --dry-run prints.
params() {
	"$DTRAIN" plan --dry-run sweep.yaml "$@" >plan.out 2>plan.err ||
		{ cat plan.err >&2; fail "plan $* failed"; }
	sed -n 's/^total: \([0-9]*\) parameters.*/\1/p' plan.out
}

for point in "1 8 508" "2 8 884" "1 16 1652" "2 16 3044"; do
	set -- $point
	got=$(params --set model.layers.block.repeat="$1" \
		--set vars.width="$2")
	[ "$got" = "$3" ] ||
		fail "repeat $1, width $2: $got parameters, expected $3"
done
[ "$(params)" = 884 ] || fail "the job as written: $(params) parameters"

# The window given once: the resolved job says it in all three places.
"$DTRAIN" plan --print-job sweep.yaml --set vars.width=16 >job.out
grep -q '^  context: 8$' job.out || fail "data.context not 8"
grep -q '^  input_shape: \[8\]$' job.out || fail "input_shape not derived"
grep -q 'type: pos_embedding, length: 8,' job.out ||
	fail "pos_embedding.length not derived"
grep -q 'type: embedding, vocab: 4, dim: 16,' job.out ||
	fail "vars.width did not reach the embedding"
# The same in the other token formats, llm.c's shards and raw uint16
# (refused before: model.input_shape: required key missing).
for f in llmc u16 tokens; do
	"$DTRAIN" plan --print-job sweep.yaml --set data.format=$f \
		>job.out 2>job.err ||
		{ cat job.err >&2; fail "format $f: window not derived"; }
	grep -q '^  input_shape: \[8\]$' job.out ||
		fail "format $f: input_shape not derived"
	grep -q 'type: pos_embedding, length: 8,' job.out ||
		fail "format $f: pos_embedding.length not derived"
done

# A layer by name, a layer of a block (every copy) by name, and the old
# index spelling of the same head (layers: tok, pos, 2 x 4, head = 10);
# head units 5: 4W + 4 becomes 5W + 5, 884 + 9 = 893.
[ "$(params --set model.layers.head.units=5)" = 893 ] ||
	fail "model.layers.head.units=5"
[ "$(params --set model.layers.10.units=5)" = 893 ] ||
	fail "model.layers.10.units=5 (the old spelling)"
# fc units 4 in both copies: the first fc (8 in) 8*4 + 4 = 36 (was 72);
# the second copy then sees width 4: ln 2*4 = 8 (was 16), attention
# 4*12 + 12 + 4*4 + 4 = 80 (was 288), fc 4*4 + 4 = 20 (was 72); the head
# 4*4 + 4 = 20 (was 36): 884 - 36 - 8 - 208 - 52 - 16 = 564.
[ "$(params --set model.layers.block.fc.units=4)" = 564 ] ||
	fail "model.layers.block.fc.units=4: $(params --set \
model.layers.block.fc.units=4)"

# Errors name the key as written, and what to write instead.
expect_fail 2 "model.layers.6.repeat: a repeat count is the block's: layer 6 is block.1.ln; set model.layers.block.repeat" \
	"$DTRAIN" plan --dry-run sweep.yaml --set model.layers.6.repeat=3
expect_fail 2 "model.layers.block.units: a repeat block takes repeat, layers, name; set units in one of its layers, model.layers.block.LAYER.units \(its layers: ln, attn, res, fc\)" \
	"$DTRAIN" plan --dry-run sweep.yaml --set model.layers.block.units=3
expect_fail 2 "model.layers.head.unit: unknown key; did you mean model.layers.head.units\?" \
	"$DTRAIN" plan --dry-run sweep.yaml --set model.layers.head.unit=3
expect_fail 2 "model.layers.hed.units: no layer or repeat block named \"hed\"; did you mean 'head'\?" \
	"$DTRAIN" plan --dry-run sweep.yaml --set model.layers.hed.units=3
expect_fail 2 "vars.widht: .*did you mean width\?" \
	"$DTRAIN" plan --dry-run sweep.yaml --set vars.widht=3
expect_fail 2 "^dtrain: --set model.input_shape=\[6\]: model.input_shape.0: expected 8, the window length data.context gives \(sweep.yaml:4:31\), found 6" \
	"$DTRAIN" plan --dry-run sweep.yaml --set 'model.input_shape=[6]'

# A text job's input_shape is one number, the window: two are refused
# with the window's place (it was "pos_embedding needs a (T, dim)
# input, found 3 axes" from the graph).
expect_fail 2 "^dtrain: --set model.input_shape=\\[8,2\\]: model.input_shape: expected \\[8\\], one number: the window length data.context gives \\(sweep.yaml:4:31\\), found 2 numbers" \
	"$DTRAIN" plan --dry-run sweep.yaml --set 'model.input_shape=[8,2]'

# Hostile files: the "billion laughs" of anchors is refused at its first
# alias; a var cannot hold a list or name another var, so vars cannot
# build one; an undefined reference names its place.
cat >lol.yaml <<'YAML'
name: lol
a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
YAML
expect_fail 2 "^dtrain: lol.yaml:3:8: aliases such as \*a are not supported; name the value once under vars:" \
	"$DTRAIN" plan --dry-run lol.yaml
sed 's/^  width: 8$/  width: [8, 8, 8]/' sweep.yaml >list.yaml
expect_fail 2 "^dtrain: list.yaml:3:10: vars.width: expected a number, a word or true or false, found a list" \
	"$DTRAIN" plan --dry-run list.yaml
sed 's/^  width: 8$/  width: 8\n  w2: $width/' sweep.yaml >chain.yaml
expect_fail 2 "^dtrain: chain.yaml:4:7: vars.w2: expected a value, found the reference \\\$width; a var cannot refer to another var" \
	"$DTRAIN" plan --dry-run chain.yaml
sed 's/units: 4}$/units: $classes}/' sweep.yaml >undef.yaml
expect_fail 2 "^dtrain: undef.yaml:16:40: model.layers.head.units: found \\\$classes, which vars: does not name \(vars: width\)" \
	"$DTRAIN" plan --dry-run undef.yaml
# A layer of a block is named by the block's and its own name whatever is
# wrong with it: a quoted "$width" (a string) as well as a misspelt
# $widht (the quoted one was named model.layers.5.units, its copy's
# index).
sed 's/name: fc, units: \$width}/name: fc, units: "$width"}/' sweep.yaml >quoted.yaml
expect_fail 2 "^dtrain: quoted.yaml:15:42: model.layers.block.fc.units: expected an integer, found a quoted string \"\\\$width\"" \
	"$DTRAIN" plan --dry-run quoted.yaml
sed 's/name: fc, units: \$width}/name: fc, units: $widht}/' sweep.yaml >misspelt.yaml
expect_fail 2 "^dtrain: misspelt.yaml:15:42: model.layers.block.fc.units: found \\\$widht, which vars: does not name; did you mean width\?" \
	"$DTRAIN" plan --dry-run misspelt.yaml
exit 0
