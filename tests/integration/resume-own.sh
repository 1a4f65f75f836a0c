#!/bin/sh
# SPDX-License-Identifier: MIT
# Resume without a gather (issue #27, dtrain(1) CHECKPOINTS): from a
# checkpoint written in shards each rank reads only its own part, straight
# from the shard files, and nothing is broadcast. An MLP 784 -> 8 x 1024
# -> 10 has P = 8161290 trained floats (784 x 1024 + 1024, 7 x (1024 x
# 1024 + 1024), 1024 x 10 + 10); with AdamW its whole state is the
# parameters and 2 moments, 12 P = 97935480 bytes. On 4 ranks at
# parallel.zero 3 a rank keeps a quarter of each (its optimizer's part,
# its part of the parameters, and one or two nodes gathered at a time).
# - A run stopped after the checkpoint of step 2 and resumed for steps 3
#   and 4 ends with the losses of the uninterrupted run.
# - Each rank's peak resident memory (VmHWM, summary.json) in the resumed
#   session exceeds the same rank's in an uninterrupted session of 4
#   steps (the same job, neither writing a checkpoint after the restore)
#   by less than a quarter of the whole state, 12 P / 4 = 24483870
#   bytes. Reading the whole checkpoint (rank 0) and receiving it (every
#   rank), as resume did before, holds all P parameters resident and a
#   whole copy of both moments, 8 P = 65290320 bytes more than a part of
#   them: on that code (integ before this test) rank 0 peaked at 183.5
#   MiB resumed against 111.8 MiB uninterrupted, 71.8 MiB over, and the
#   test failed; now every rank is within 0.2 MiB.
# - model.init_from naming that checkpoint: each rank reads its own part
#   of the parameters too. A new run from it on 4 ranks at zero 3 logs
#   the losses of one on 1 rank from the checkpoint and of one on 1 rank
#   from the checkpoint's export (one file, read whole by rank 0 as
#   before), bit for bit, and not those of a run from the random init;
#   its first parameter file (params-tensor-000000.safetensors: at zero
#   3 every rank writes the tensors of its part) truncated, the run is
#   refused (exit 1) naming the file, its size and the manifest's.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
cat >big.yaml <<YAML
name: own
seed: 5
data:
  train:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
YAML
for i in 1 2 3 4 5 6 7 8; do
	echo "    - {type: dense, units: 1024, activation: relu}" >>big.yaml
done
cat >>big.yaml <<YAML
    - {type: dense, units: 10}
train:
  global_batch: 32
  micro_batch: 8
  steps: 4
  optimizer: adamw
  lr: 0.0001
checkpoint: {every_steps: 2, keep_last: 0}
log: {every_steps: 1}
YAML
Z3="--set parallel.zero=3 --set parallel.overlap=false"
NOCK="--set checkpoint.every_steps=0 --set checkpoint.at_end=false"

mpi 4 "$DTRAIN" run -q --run-dir ref big.yaml $Z3 $NOCK >/dev/null
set +e
DTRAIN_TEST_SIGNAL_AT_STEP=2 mpi 4 -x DTRAIN_TEST_SIGNAL_AT_STEP \
	"$DTRAIN" run -q --run-dir cut big.yaml $Z3 >/dev/null 2>cut.err
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat cut.err >&2; fail "cut: exited $rc, expected 3"; }
[ -f cut/checkpoints/step-000000002/rank-00003.safetensors ] ||
	fail "cut: no sharded checkpoint at step 2"
mpi 4 "$DTRAIN" resume -q cut $NOCK >/dev/null 2>res.err ||
	{ cat res.err >&2; fail "resume failed"; }
grep -q "resuming from cut/checkpoints/step-000000002 (step 2)" res.err ||
	{ cat res.err >&2; fail "not resumed from step 2"; }
losses ref >a.col
losses cut >b.col
[ -s a.col ] && cmp -s a.col b.col || fail "resumed losses differ"
echo "ok: resumed losses == the uninterrupted run's"

"$PYTHON" - <<'PY'
import json
P = 8161290
whole = 12 * P
assert whole == 97935480
ref = json.load(open("ref/summary.json"))["ranks"]
cut = json.load(open("cut/summary.json"))["ranks"]
assert len(ref) == len(cut) == 4, (ref, cut)
for a, b in zip(ref, cut):
    d = b["peak_resident_bytes"] - a["peak_resident_bytes"]
    print("rank %d: peak resident %.2f MiB uninterrupted, %.2f MiB resumed "
          "(%+.2f MiB; the whole state is %.2f MiB)"
          % (a["rank"], a["peak_resident_bytes"] / 2**20,
             b["peak_resident_bytes"] / 2**20, d / 2**20, whole / 2**20))
    assert d < whole // 4, (a, b, d)
print("ok: no rank held more than a quarter of the whole state to resume")
PY

# model.init_from: a checkpoint in shards, read by each rank's part.
CK=cut/checkpoints/step-000000002
ONE="--set parallel.strategy=data --set parallel.data_parallel=1"
"$DTRAIN" export -o ck.safetensors --checkpoint 2 cut >/dev/null 2>exp.err ||
	{ cat exp.err >&2; fail "export of step 2"; }
B="--set train.steps=2 $NOCK"
mpi 4 "$DTRAIN" run -q --run-dir b4 big.yaml $Z3 $B \
	--set model.init_from=$CK >/dev/null 2>b4.err ||
	{ cat b4.err >&2; fail "b4"; }
"$DTRAIN" run -q --run-dir b1 big.yaml $ONE $B \
	--set model.init_from=$CK >/dev/null
"$DTRAIN" run -q --run-dir b1f big.yaml $ONE $B \
	--set model.init_from=ck.safetensors >/dev/null
"$DTRAIN" run -q --run-dir c1 big.yaml $ONE $B >/dev/null
losses b4 >a.col
for d in b1 b1f; do
	losses $d >b.col
	[ -s a.col ] && cmp -s a.col b.col || fail "b4's losses differ from $d's"
done
losses c1 >b.col
! cmp -s a.col b.col || fail "init_from changed nothing"
echo "ok: init_from of the checkpoint on 4 ranks at zero 3 == on 1 rank == its export"
cp -a cut bad
# At zero 3 each rank writes the tensors of its part: the first file.
[ -f bad/checkpoints/step-000000002/params-tensor-000000.safetensors ] ||
	fail "no params-tensor-000000.safetensors in the zero-3 checkpoint"
truncate -s 1000 bad/checkpoints/step-000000002/params-tensor-000000.safetensors
expect_fail 1 "step-000000002: params-tensor-000000.safetensors: 1000 bytes, MANIFEST.json lists [0-9]+ \(truncated\)" \
	"$MPIRUN" -np 4 --oversubscribe --bind-to none "$DTRAIN" run -q \
	--run-dir bad4 big.yaml $Z3 $B --set model.init_from=bad/checkpoints/step-000000002
echo "ok: a truncated parameter file refused, named"
