#!/bin/sh
# SPDX-License-Identifier: MIT
# --checkpoint STEP finds the checkpoint of that step where
# eval.keep_best keeps it, CKPT_DIR/best/step-N, once
# checkpoint.keep_last has pruned it from CKPT_DIR: summary.json names
# that step as "best", so eval, predict and export must take it by its
# number as by "best". Before the fix they said "no checkpoint of step
# N". A step that is in neither place is still refused, exit status 2.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

cat >job.yaml <<YAML
name: kb
data:
  train:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
  eval:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 16, activation: relu}
    - {type: dense, units: 10}
train: {global_batch: 32, steps: 20, optimizer: sgd, lr: 0.05}
eval: {every_steps: 5, keep_best: true}
checkpoint: {every_steps: 5, keep_last: 1}
log: {every_steps: 5}
YAML
"$DTRAIN" run -q --run-dir r job.yaml >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "the run failed"; }
best=$("$PYTHON" -c 'import json; print(json.load(open("r/summary.json"))["best"]["step"])')
dir=r/checkpoints/step-$(printf %09d "$best")
# As keep_last prunes it when the best is not the last step.
rm -rf "$dir"
[ -d "r/checkpoints/best/step-$(printf %09d "$best")" ] ||
	fail "no best checkpoint of step $best"
"$DTRAIN" eval --json --checkpoint "$best" r >e.json 2>e.err ||
	{ cat e.err >&2; fail "eval --checkpoint $best (the best) failed"; }
"$DTRAIN" eval --json --checkpoint best r >b.json 2>b.err ||
	{ cat b.err >&2; fail "eval --checkpoint best failed"; }
"$PYTHON" - "$best" <<'PY' || fail "eval --checkpoint STEP of the best"
import json, sys
e, b = json.load(open("e.json")), json.load(open("b.json"))
if e["step"] != int(sys.argv[1]) or e != b:
    sys.exit("--checkpoint %s: %r\n--checkpoint best: %r"
             % (sys.argv[1], e, b))
PY
"$DTRAIN" export --checkpoint "$best" -o best.safetensors r >/dev/null ||
	fail "export --checkpoint $best failed"
expect_fail 2 "r: no checkpoint of step 999 \(r/checkpoints/step-000000999, nor r/checkpoints/best\)" \
	"$DTRAIN" eval --checkpoint 999 r
echo "checkpoint-step-best: ok (best step $best)"
