#!/bin/sh
# SPDX-License-Identifier: MIT
# Every JSON file dtrain writes (run directory, checkpoints, eval --json,
# plan --json) parses with a strict parser (one that
# refuses NaN and Infinity), also when the run's numbers are not finite:
# those are written as null (dtrain(1), FILES). A run whose loss turns
# non-finite with train.on_nonfinite: skip_step logs windows where every
# step was skipped (mean loss NaN) and ends with a non-finite eval loss.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
cat >job.yaml <<YAML
name: strict
seed: 7
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  eval:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 64, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 96
  steps: 10
  optimizer: sgd
  lr: 1e30
  on_nonfinite: skip_step
log:
  every_steps: 1
eval:
  every_steps: 5
YAML
"$DTRAIN" run -q --run-dir r job.yaml >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "the run failed"; }
"$DTRAIN" plan --dry-run --json job.yaml >plan.json || fail "plan --json"
# The commands' JSON too: eval of the non-finite model, and plan --link.
"$DTRAIN" eval --json r >eval.json 2>eval.err ||
	{ cat eval.err >&2; fail "eval --json"; }
"$DTRAIN" plan --dry-run --json --link 1gbit,0.2ms --gflops 1 -n 2 job.yaml \
	>link.json || fail "plan --json --link"
"$PYTHON" - r plan.json eval.json link.json <<'PY' || fail "an output is not strict JSON"
import glob, json, sys
def strict(c):
    raise ValueError("non-standard JSON constant %s" % c)
run, plan = sys.argv[1], sys.argv[2]
nulls = 0
ckpt = glob.glob(run + "/checkpoints/step-*/meta.json") + \
    glob.glob(run + "/checkpoints/step-*/MANIFEST.json")
if len(ckpt) < 2:
    sys.exit("no checkpoint's meta.json and MANIFEST.json: %r" % ckpt)
for path in [run + "/summary.json", run + "/plan.json", plan] + \
        sys.argv[3:] + ckpt:
    json.loads(open(path).read(), parse_constant=strict)
for n, line in enumerate(open(run + "/metrics.jsonl"), 1):
    o = json.loads(line, parse_constant=strict)
    nulls += sum(1 for k in ("loss", "eval_loss") if k in o and o[k] is None)
s = json.loads(open(run + "/summary.json").read(), parse_constant=strict)
if nulls == 0:
    sys.exit("no null in metrics.jsonl: the run did not go non-finite")
if s["skipped_steps"] < 1:
    sys.exit("no step was skipped")
print("strict JSON: %d lines, %d nulls, %d steps skipped"
      % (n, nulls, s["skipped_steps"]))
PY
