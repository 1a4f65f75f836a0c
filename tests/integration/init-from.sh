#!/bin/sh
# SPDX-License-Identifier: MIT
# model.init_from: a 20-step Fashion-MNIST MLP run A is exported
# (dtrain export, the default format); run B starts from that file with
# the eval split as its training data and one step of the whole 10000
# samples, so that its first logged loss is the mean loss of A's
# parameters over A's eval set: it must equal A's eval_loss in
# summary.json (to 1e-9 relative; the sums differ only in order), on one
# rank, on two data-parallel ranks and on a two-stage pipeline (where the
# file is read whole and cut into stages). The same run without
# init_from is far from it (random init: about ln 10). A layer of another
# width is refused naming the tensor and both shapes, an extra layer
# naming the missing tensor, a --format torch file as being of that
# format (its square weights would pass the shape check); a run directory
# or its checkpoints/ (no MANIFEST.json) as not a checkpoint, saying what
# is expected (before, only "MANIFEST.json: cannot open"), with no run
# directory left; a resumed run keeps its checkpoint's parameters, not
# the file's.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
JOB="$top_srcdir/jobs/fashion-mnist-mlp.yaml"

"$DTRAIN" run -q "$JOB" --set name=a --set train.steps=20 \
	--set log.every_steps=10 >/dev/null 2>a.err ||
	{ cat a.err >&2; fail "run A failed"; }
"$DTRAIN" export -o a.safetensors runs/a >/dev/null

# b NAME [--set ...]: one step over the whole eval set, as training data.
b() {
	name=$1
	shift
	"$DTRAIN" run -q "$JOB" --set name="$name" \
		--set data.train.images="$FMNIST/t10k-images-idx3-ubyte.gz" \
		--set data.train.labels="$FMNIST/t10k-labels-idx1-ubyte.gz" \
		--set train.global_batch=10000 --set train.steps=1 \
		--set log.every_steps=1 "$@"
}

first_loss() {
	"$PYTHON" -c 'import json, sys
print(repr(json.loads(open(sys.argv[1] + "/metrics.jsonl").readline())["loss"]))' "$1"
}
eval_loss=$("$PYTHON" -c 'import json
print(repr(json.load(open("runs/a/summary.json"))["eval_loss"]))')

# near A B RELTOL: |A - B| <= RELTOL * |B|.
near() {
	"$PYTHON" -c 'import sys
a, b, t = map(float, sys.argv[1:])
sys.exit(0 if abs(a - b) <= t * abs(b) else 1)' "$1" "$2" "$3"
}

b b1 --set model.init_from=a.safetensors >/dev/null 2>b1.err ||
	{ cat b1.err >&2; fail "run B failed"; }
grep -q 'parameters from .*a.safetensors' b1.err ||
	fail "run B did not say where its parameters came from"
got=$(first_loss runs/b1)
near "$got" "$eval_loss" 1e-9 ||
	fail "B's first loss $got is not A's eval loss $eval_loss"
grep -q 'init_from: .*a.safetensors' runs/b1/job.yaml ||
	fail "job.yaml does not keep model.init_from"

mpi 2 "$DTRAIN" run -q "$JOB" --set name=b2 \
	--set data.train.images="$FMNIST/t10k-images-idx3-ubyte.gz" \
	--set data.train.labels="$FMNIST/t10k-labels-idx1-ubyte.gz" \
	--set train.global_batch=10000 --set train.steps=1 \
	--set log.every_steps=1 --set model.init_from=a.safetensors \
	>/dev/null 2>b2.err || { cat b2.err >&2; fail "B on 2 ranks failed"; }
near "$(first_loss runs/b2)" "$eval_loss" 1e-9 ||
	fail "B on 2 ranks: first loss $(first_loss runs/b2), not $eval_loss"
mpi 2 "$DTRAIN" run -q "$JOB" --set name=bp \
	--set data.train.images="$FMNIST/t10k-images-idx3-ubyte.gz" \
	--set data.train.labels="$FMNIST/t10k-labels-idx1-ubyte.gz" \
	--set train.global_batch=10000 --set train.steps=1 \
	--set log.every_steps=1 --set model.init_from=a.safetensors \
	--set parallel.strategy=model >/dev/null 2>bp.err ||
	{ cat bp.err >&2; fail "B on a 2-stage pipeline failed"; }
grep -q '"pipeline_parallel": 2' runs/bp/summary.json ||
	fail "the pipeline run was not cut in two stages"
near "$(first_loss runs/bp)" "$eval_loss" 1e-9 ||
	fail "B on 2 stages: first loss $(first_loss runs/bp), not $eval_loss"

b b0 >/dev/null 2>b0.err || { cat b0.err >&2; fail "run B0 failed"; }
near "$(first_loss runs/b0)" "$eval_loss" 0.5 &&
	fail "without init_from the first loss $(first_loss runs/b0) is near A's"

expect_fail 1 'model.init_from: .*a.safetensors: tensor dense1.weight has shape \[512, 256\], the model expects \[512, 128\]' \
	b c1 --set model.init_from=a.safetensors --set model.layers.1.units=128
cat >extra.yaml <<YAML
name: extra
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  scale: 0.00392156862745098
model:
  input_shape: [28, 28]
  init_from: a.safetensors
  layers:
    - {type: dense, units: 512, activation: relu}
    - {type: dense, units: 256, activation: relu}
    - {type: dense, units: 10}
    - {type: dense, units: 10}
train: {global_batch: 96, steps: 1, optimizer: adam, lr: 0.001}
YAML
expect_fail 1 'extra.yaml:[0-9]+:[0-9]+: model.init_from: .*: no tensor named dense3.weight' \
	"$DTRAIN" run -q extra.yaml
"$DTRAIN" export --format torch -o t.safetensors runs/a >/dev/null
expect_fail 1 'model.init_from: .*t.safetensors: written by dtrain export --format torch' \
	b c2 --set model.init_from=t.safetensors

for d in runs/a runs/a/checkpoints; do
	hint=
	[ $d = runs/a ] && hint=' \(a run directory: its checkpoints are in checkpoints/\)'
	expect_fail 1 "model.init_from: .*/$d: a directory without MANIFEST.json, so no checkpoint$hint; expected a safetensors file or a checkpoint's directory, RUN_DIR/checkpoints/step-NNNNNNNNN" \
		b c3 --set model.init_from=$d
	[ ! -e runs/c3 ] || fail "init_from $d: runs/c3 left behind"
done

# A resume takes its checkpoint, not the file: B1's one step resumed to
# two gives the loss of an uninterrupted two-step run from the file.
b full --set model.init_from=a.safetensors --set train.steps=2 \
	>/dev/null 2>&1 || fail "two-step run failed"
"$DTRAIN" resume -q --set train.steps=2 runs/b1 >/dev/null 2>r.err ||
	{ cat r.err >&2; fail "resume failed"; }
grep -q 'parameters from' r.err && fail "the resume read model.init_from"
compare_losses runs/b1 runs/full 0 >/dev/null ||
	fail "the resumed run's losses differ from the uninterrupted one's"
echo "init-from: ok (first loss $got, eval loss $eval_loss)"
