#!/bin/sh
# SPDX-License-Identifier: MIT
# Checkpoints of tensor ranks that own their slices (doc/DESIGN.md,
# "Tensor-parallel slices"): the files hold whole tensors in model order,
# gathered from the blocks, and a restore gives each rank its block.
# On an MLP 784-32-16-10 (d0 split by columns, d1 by rows), AdamW with
# clip_norm, 6 micro-batches a step (the exact mode), 16 steps:
# - a tp 2 run stopped by SIGTERM at step 6 and resumed on tp 2 ends with
#   the uninterrupted tp 2 run's exported parameters, byte for byte, and
#   its loss lines; so does a pp 2 x tp 2 run on 4 ranks;
# - the tp 2 checkpoint of step 6 resumed on 1 rank and on pp 2 (tp 1)
#   gives both the same bits (one rank's), and their losses follow the
#   uninterrupted tp 2 run's within 1e-4 (a block put in the wrong place,
#   or the optimizer state, would show at once);
# - the same job with whole tensors on each tensor rank (parallel.zero 2)
#   exports the same bytes, and dtrain eval (one process) of both
#   checkpoints gives the same loss and accuracy.
# - on the CNN at pp 2 x tp 2 (no split node on stage 0), slices give the
#   bits of whole tensors.
# The plan says the checkpoints are gathered. Before the slices a rank
# held whole tensors, and plan --json had no tensor_split.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
{
	cat <<YAML
name: tpck
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
    - {type: dense, name: d0, units: 32, activation: relu}
    - {type: dense, name: d1, units: 16, activation: tanh}
    - {type: dense, name: head, units: 10}
train:
  global_batch: 48
  micro_batch: 8
  steps: 16
  optimizer: adamw
  lr: 0.01
  clip_norm: 0.5
  schedule: {kind: cosine, warmup_steps: 3}
eval: {every_steps: 16}
checkpoint: {every_steps: 4, keep_last: 0}
log: {every_steps: 1}
seed: 9
YAML
} >job.yaml
TP2="--set parallel.strategy=model --set parallel.tensor_parallel=2"
PT="--set parallel.strategy=model --set parallel.tensor_parallel=2 --set parallel.pipeline_parallel=2"
PP2="--set parallel.strategy=model --set parallel.pipeline_parallel=2"

# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run -n 2 job.yaml $TP2 >plan.txt
grep -q "checkpoints: rank 0 gathers" plan.txt ||
	{ cat plan.txt >&2; fail "plan: checkpoints not gathered"; }

# run NAME NP LAYOUT: the uninterrupted run; stop NAME NP LAYOUT: stopped
# at step 6 and resumed on the same layout.
run() {
	mpi "$2" "$DTRAIN" run -q --run-dir "$1" job.yaml $3 >/dev/null \
		2>"$1.err" || { cat "$1.err" >&2; fail "$1"; }
	export_of "$1" "$1.st"
}
stop() {
	d=$1
	set +e
	DTRAIN_TEST_SIGNAL_AT_STEP=6 mpi "$2" -x DTRAIN_TEST_SIGNAL_AT_STEP \
		"$DTRAIN" run -q --run-dir $d job.yaml $3 >/dev/null 2>$d.err
	rc=$?
	set -e
	[ "$rc" -eq 3 ] || { cat $d.err >&2; fail "$d: exited $rc, expected 3"; }
	cp -a $d $d-on1
	cp -a $d $d-pp2
	mpi "$2" "$DTRAIN" resume -q $d >/dev/null 2>$d.err2 ||
		{ cat $d.err2 >&2; fail "$d: resume"; }
	grep -q "resuming from .*step-000000006" $d.err2 ||
		{ cat $d.err2 >&2; fail "$d: did not resume from 6"; }
	export_of $d $d.st
}
run full 2 "$TP2"
stop stop 2 "$TP2"
cmp full.st stop.st || fail "tp 2: resumed parameters differ from the uninterrupted run"
losses full >a.losses
losses stop >b.losses
cmp a.losses b.losses || fail "tp 2: loss lines differ"
echo "ok: tp 2 stop and resume, bit for bit"

run pfull 4 "$PT"
stop pstop 4 "$PT"
cmp pfull.st pstop.st || fail "pp 2 x tp 2: resumed parameters differ"
losses pfull >c.losses
losses pstop >d.losses
cmp c.losses d.losses || fail "pp 2 x tp 2: loss lines differ"
echo "ok: pp 2 x tp 2 stop and resume, bit for bit"

# The tp 2 checkpoint of step 6 on 1 rank and on pp 2 x tp 1.
"$DTRAIN" resume -q stop-on1 --set parallel.strategy=data \
	--set parallel.tensor_parallel=1 >/dev/null 2>on1.err ||
	{ cat on1.err >&2; fail "resume on 1 rank"; }
grep -q "resuming from .*step-000000006" on1.err || fail "on 1: not from 6"
# shellcheck disable=SC2086
mpi 2 "$DTRAIN" resume -q stop-pp2 $PP2 --set parallel.tensor_parallel=1 \
	>/dev/null 2>pp2.err || { cat pp2.err >&2; fail "resume on pp 2"; }
grep -q "resuming from .*step-000000006" pp2.err || fail "pp 2: not from 6"
export_of stop-on1 on1.st
export_of stop-pp2 pp2.st
cmp on1.st pp2.st || fail "the tp 2 checkpoint on 1 rank and on pp 2 differ"
"$PYTHON" - <<'PY'
import json
def losses(d):
    return {l["step"]: l["loss"] for l in map(json.loads,
            open(d + "/metrics.jsonl")) if "loss" in l}
a, b = losses("full"), losses("stop-on1")
after = sorted(s for s in b if s > 6)
assert after and after[-1] == 16, after
for s in after:
    assert abs(a[s] - b[s]) <= 1e-4 * abs(a[s]), (s, a[s], b[s])
print("ok: the tp 2 checkpoint on 1 rank and on pp 2: the same bits, "
      "the losses of tp 2 (step 16: %r, %r)" % (a[16], b[16]))
PY

# The same job with whole tensors on every tensor rank (parallel.zero 2
# keeps them, zero-tp.sh): the same parameters byte for byte, and dtrain
# eval (one process) of both checkpoints the same loss and accuracy.
# shellcheck disable=SC2086
run whole 2 "$TP2 --set parallel.zero=2 --set parallel.overlap=false"
cmp full.st whole.st || fail "slices and whole tensors: parameters differ"
"$DTRAIN" eval --json full >e-full.json
"$DTRAIN" eval --json whole >e-whole.json
"$PYTHON" - <<'PY'
import json
a, b = (json.load(open(f)) for f in ("e-full.json", "e-whole.json"))
assert a["loss"] == b["loss"] and a["accuracy"] == b["accuracy"], (a, b)
print("ok: eval of the tp 2 checkpoint: whole tensors' (%r)" % a["loss"])
PY

# A pipeline stage with no split node of its own: jobs/fashion-mnist-cnn
# on pp 2 x tp 2 puts the convolutions (replicated) on stage 0 and the
# dense pair on stage 1. Its tensor ranks sum their gradients alone, so
# stage 0's tensor rank 1 must keep its replicated gradients (the code
# before zeroed them there, as for a sum over the tensor group, and its
# copy of the convolutions fell behind: step 2's loss 2.0213888 against
# 2.0207636). 3 steps with slices and with whole tensors (zero 2): the
# same loss lines and bytes.
for z in 0 2; do
	# shellcheck disable=SC2086
	"$DTRAIN" plan --dry-run --json -n 4 \
		"$top_srcdir/jobs/fashion-mnist-cnn.yaml" $PT \
		--set parallel.overlap=false --set parallel.zero=$z \
		>cnn-z$z.plan || fail "cnn z$z: plan"
	# shellcheck disable=SC2086
	mpi 4 "$DTRAIN" run -q --run-dir cnn-z$z \
		"$top_srcdir/jobs/fashion-mnist-cnn.yaml" $PT \
		--set train.steps=3 --set log.every_steps=1 \
		--set eval.every_steps=0 --set train.grad_accum_steps=4 \
		--set parallel.overlap=false --set parallel.zero=$z \
		>/dev/null 2>cnn-z$z.err || { cat cnn-z$z.err >&2; fail "cnn z$z"; }
	losses cnn-z$z >cnn-z$z.losses
	export_of cnn-z$z cnn-z$z.st
done
# zero 0 must be the sliced side and zero 2 the whole one, or this
# compares whole tensors with whole tensors.
"$PYTHON" - <<'PY' || fail "cnn pp 2 x tp 2: zero 0 sliced, zero 2 whole"
import json
s = [json.load(open("cnn-z%d.plan" % z))["tensor_split"]["slices"]
     for z in (0, 2)]
assert s == [True, False], s
PY
[ "$(wc -l <cnn-z0.losses)" -eq 3 ] || fail "cnn: not 3 loss lines"
cmp cnn-z0.losses cnn-z2.losses || fail "cnn pp 2 x tp 2: slices' losses differ from whole tensors'"
cmp cnn-z0.st cnn-z2.st || fail "cnn pp 2 x tp 2: slices' parameters differ from whole tensors'"
echo "ok: a stage with no split node: the bits of whole tensors"
