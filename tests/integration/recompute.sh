#!/bin/sh
# SPDX-License-Identifier: MIT
# model.recompute changes memory and FLOPs, never bits: a tiny char-GPT
# (two pre-norm blocks with dropout, so the recomputed forward must draw
# the same masks) logs the same losses and ends with byte-identical
# parameters with recompute none, blocks and attention, on one rank
# (depth- and breadth-first accumulation) and on two ranks as a pipeline
# (GPipe and 1F1B), data parallel and tensor parallel (compared with the
# same layout without recompute: a tensor-split sum is not one rank's).
# The plan shows the choice: activation bytes drop, FLOPs rise.
. "${top_srcdir}/tests/integration/lib.sh"

"$PYTHON" - <<'PY'
import random
random.seed(7)
words = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far"]
open("text.txt", "w").write(" ".join(random.choice(words)
                                     for _ in range(3000)) + "\n")
PY
cat >job.yaml <<YAML
name: tiny-gpt
seed: 3
data:
  format: text
  train: {file: $PWD/text.txt}
  context: 16
model:
  input_shape: [16]
  layers:
    - {type: embedding, name: tok, vocab: 128, dim: 32}
    - {type: pos_embedding, name: pos, length: 16, dim: 32}
    - repeat: 2
      name: block
      layers:
        - {type: layernorm, name: ln1}
        - {type: attention, name: attn, heads: 2, causal: true}
        - {type: dropout, name: attn_drop, rate: 0.2}
        - {type: add, name: res1, inputs: [block_input, attn_drop]}
        - {type: layernorm, name: ln2}
        - {type: dense, name: fc, units: 64, activation: gelu}
        - {type: dense, name: proj, units: 32}
        - {type: dropout, name: mlp_drop, rate: 0.2}
        - {type: add, name: res2, inputs: [res1, mlp_drop]}
    - {type: layernorm, name: ln_f}
    - {type: dense, name: head, units: 128}
train: {global_batch: 8, micro_batch: 2, steps: 6, optimizer: adamw, lr: 0.01}
parallel: {blas_threads: 1}
eval: {every_steps: 0}
log: {every_steps: 1}
checkpoint: {at_end: true}
YAML

# run NAME NP [--set ...]: trains job.yaml and exports its parameters.
run() {
	name=$1 np=$2
	shift 2
	mpi "$np" "$DTRAIN" run -q --run-dir "$name" job.yaml "$@" \
		>"$name.out" 2>&1 || { cat "$name.out" >&2; fail "$name: exit"; }
	export_of "$name" "$name.st"
	losses "$name" >"$name.losses"
}
# same A B: the losses and the parameters of runs A and B are the same bits.
same() {
	cmp "$1.losses" "$2.losses" || fail "$2: losses differ from $1's"
	cmp "$1.st" "$2.st" || fail "$2: parameters differ from $1's"
	echo "ok: $2 == $1"
}
R="--set model.recompute"
M="--set parallel.strategy=model"

run one 1
[ "$(wc -l <one.losses)" -eq 6 ] || fail "one: expected 6 losses"
for rc in blocks attention; do
	run one-$rc 1 $R=$rc
	same one one-$rc
	run one-breadth-$rc 1 $R=$rc --set parallel.accum_schedule=breadth_first
	same one one-breadth-$rc
	run pp2-$rc 2 $R=$rc $M --set parallel.pipeline_parallel=2
	same one pp2-$rc
	run pp2-1f1b-$rc 2 $R=$rc $M --set parallel.pipeline_parallel=2 \
		--set parallel.schedule=1f1b
	same one pp2-1f1b-$rc
	run dp2-$rc 2 $R=$rc
	same one dp2-$rc
done
run tp2 2 $M --set parallel.tensor_parallel=2
for rc in blocks attention; do
	run tp2-$rc 2 $R=$rc $M --set parallel.tensor_parallel=2
	same tp2 tp2-$rc
done

# The plan: with blocks a slot keeps only the blocks' outputs (the
# activation bytes fall) and backward runs each block's forward again
# (the FLOPs rise); attention drops the (T, T) probabilities.
for rc in none blocks attention; do
	"$DTRAIN" plan --json job.yaml $R=$rc >plan-$rc.json ||
		fail "plan $rc: exit"
done
"$PYTHON" - <<'PY' || fail "the plans do not show the recompute"
import json
p = {k: json.load(open("plan-%s.json" % k))
     for k in ("none", "blocks", "attention")}
act = {k: v["memory_per_rank"]["activations"] for k, v in p.items()}
flops = {k: v["flops_per_sample"] for k, v in p.items()}
rf = {k: v["recompute_flops_per_sample"] for k, v in p.items()}
print("activations", act, "flops", flops)
assert act["blocks"] < act["none"] and act["attention"] < act["none"], act
assert rf["none"] == 0 and flops["none"] == 3 * p["none"]["fwd_flops_per_sample"]
assert flops["blocks"] > flops["none"] and flops["attention"] > flops["none"]
assert abs(flops["blocks"] - flops["none"] - rf["blocks"]) <= 1e-9 * flops["none"]
# attention: 2*T*T*C + 5*h*T*T per attention layer, two layers
T, C, h = 16, 32, 2
assert rf["attention"] == 2 * (2 * T * T * C + 5 * h * T * T), rf
assert p["blocks"]["recompute"] == "blocks"
PY
echo "ok: the plan shows the recompute"
