#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.zero 2 and 3 over tensor-parallel slices
# (parallel.zero_slices: true; doc/DESIGN.md, "Tensor-parallel slices"):
# each tensor rank holds its blocks only, and the gradient's
# reduce-scatter, the optimizer's parts and zero 3's gathers run over
# the rank's arena of blocks, its data-parallel peers'.
# - dp 2 x tp 2 (4 ranks): the MLP of zero-tp.sh (784-32-16-10 split in
#   column and row pairs and the head's classes, AdamW, clip_norm, the
#   exact mode) and jobs/char-gpt.yaml (6 steps: heads, MLP pairs, the
#   token table and head) at zero 2 and 3 give the loss lines and the
#   exported parameters of zero 0 with slices, byte for byte (the
#   gradient norm over whole tensors from the blocks, replicated tensors
#   once: a wrong norm shows in the clipped updates at once); plan --json
#   says slices at every level;
# - stopped by SIGTERM at step 6 and resumed (gathered checkpoints), the
#   MLP at zero 2 and 3 ends with the uninterrupted run's bits;
# - a wide MLP (784-4096-4096-10, AdamW, 2 micro-batches: the exact
#   mode's accumulator): the plan's model state per rank at zero 2 is
#   zero 0's less the halves of the optimizer state and the double
#   accumulator and the gradient not pending, worked out by hand below
#   (147.7 MiB against 229.4 MiB), and each rank's measured peak
#   (summary.json's VmHWM) is within 15% of its plan at zero 2 and 3.
# Before parallel.zero_slices, zero 2 and 3 held whole tensors on every
# tensor rank (slices false), and this test failed at its first plan.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_mlp6_job job.yaml zs
"$PYTHON" - job.yaml <<'PY'
import sys
p = sys.argv[1]
t = open(p).read().replace(
    "    - {type: dense, units: 6, activation: relu}\n",
    "    - {type: dense, units: 32, activation: relu}\n"
    "    - {type: dense, units: 16, activation: tanh}\n", 1)
open(p, "w").write(t)
PY
HY="--set parallel.strategy=hybrid --set parallel.data_parallel=2 --set parallel.tensor_parallel=2 --set parallel.overlap=false --set parallel.zero_slices=true"

# levels JOB NAME SETTINGS...: dp 2 x tp 2 at zero 0, 2 and 3, all
# sliced, compared with zero 0.
levels() {
	job=$1 name=$2
	shift 2
	for z in 0 2 3; do
		d=$name-z$z
		# shellcheck disable=SC2086
		"$DTRAIN" plan --dry-run --json -n 4 "$job" $HY "$@" \
			--set parallel.zero=$z >$d.plan
		# shellcheck disable=SC2086
		mpi 4 "$DTRAIN" run -q --run-dir $d "$job" $HY "$@" \
			--set parallel.zero=$z >/dev/null 2>$d.err ||
			{ cat $d.err >&2; fail "$d"; }
		export_of $d $d.st
		losses $d >$d.losses
		[ -s $d.losses ] || fail "$d: no losses"
	done
	"$PYTHON" - $name <<'PY'
import json, sys
n = sys.argv[1]
s = [json.load(open("%s-z%d.plan" % (n, z)))["tensor_split"]["slices"]
     for z in (0, 2, 3)]
assert s == [True, True, True], (n, s)
PY
	for z in 2 3; do
		cmp $name-z0.losses $name-z$z.losses ||
			fail "$name: zero $z: loss lines differ from zero 0"
		cmp $name-z0.st $name-z$z.st ||
			fail "$name: zero $z: parameters differ from zero 0"
	done
	echo "ok: $name: dp 2 x tp 2 sliced at zero 0, 2 and 3, the same bits"
}
levels job.yaml mlp

# stop Z: the MLP at zero Z checkpointed every 4 steps, stopped at step 6
# and resumed, against the uninterrupted run of levels above.
stop() {
	d=stop-z$1
	set +e
	# shellcheck disable=SC2086
	DTRAIN_TEST_SIGNAL_AT_STEP=6 mpi 4 -x DTRAIN_TEST_SIGNAL_AT_STEP \
		"$DTRAIN" run -q --run-dir $d job.yaml $HY \
		--set parallel.zero=$1 --set checkpoint.every_steps=4 \
		>/dev/null 2>$d.err
	rc=$?
	set -e
	[ "$rc" -eq 3 ] || { cat $d.err >&2; fail "$d: exited $rc, expected 3"; }
	mpi 4 "$DTRAIN" resume -q $d >/dev/null 2>$d.err2 ||
		{ cat $d.err2 >&2; fail "$d: resume"; }
	grep -q "resuming from .*step-000000006" $d.err2 ||
		{ cat $d.err2 >&2; fail "$d: did not resume from 6"; }
	export_of $d $d.st
	losses $d >$d.losses
	cmp mlp-z$1.st $d.st ||
		fail "zero $1: resumed parameters differ from the uninterrupted run"
	cmp mlp-z$1.losses $d.losses || fail "zero $1: resumed loss lines differ"
	echo "ok: zero $1 sliced: stop and resume, bit for bit"
}
stop 2
stop 3

# The wide MLP's memory: plan and measured peaks.
{
	t10k_job wide
	cat <<YAML
    - {type: dense, name: d0, units: 4096, activation: relu}
    - {type: dense, name: d1, units: 4096}
    - {type: dense, name: head, units: 10}
train:
  global_batch: 32
  micro_batch: 8
  steps: 2
  optimizer: adamw
  lr: 0.001
checkpoint: {at_end: false}
seed: 3
YAML
} >wide.yaml
for z in 0 2 3; do
	# shellcheck disable=SC2086
	"$DTRAIN" plan --dry-run --json -n 4 wide.yaml $HY \
		--set parallel.zero=$z >wide-z$z.plan
done
for z in 2 3; do
	# shellcheck disable=SC2086
	mpi 4 "$DTRAIN" run -q --run-dir wide-z$z wide.yaml $HY \
		--set parallel.zero=$z >/dev/null 2>wide-z$z.err ||
		{ cat wide-z$z.err >&2; fail "wide zero $z"; }
done
"$PYTHON" - <<'PY'
import json
# A tensor rank's blocks, by hand: d0 by columns (784 x 2048 and its
# bias), d1 by rows (2048 x 4096, its bias whole), the head by its 10
# classes (4096 x 5 and 5).
block = 784 * 2048 + 2048 + 2048 * 4096 + 4096 + 4096 * 5 + 5
assert block == 10020869
own = (block + 1) // 2          # the larger of the two data-parallel parts
keys = ("params", "grads", "optimizer_state", "grad_accumulator")
plan = {z: json.load(open("wide-z%d.plan" % z)) for z in (0, 2, 3)}
for z in (0, 2, 3):
    assert plan[z]["tensor_split"]["slices"] is True, (z, plan[z])
m0 = plan[0]["ranks"][0]["memory"]
m2 = plan[2]["ranks"][0]["memory"]
assert m0["optimizer_state"] == 2 * block * 4, m0
assert m0["grad_accumulator"] == block * 8, m0
assert m2["optimizer_state"] == 2 * own * 4, m2
assert m2["grad_accumulator"] == own * 8, m2
# Zero 2's gradient, summed node by node into the parts as backward
# goes: at most the largest node's floats (d1's block) and one piece of
# 2^18 floats (the plan's part_seg) pending, more than the own part.
d1 = 2048 * 4096 + 4096
grads2 = max(own, d1 + 262144)
assert m2["grads"] == grads2 * 4, (m2, grads2)
# Adam's two buffers (4 bytes) and the double accumulator (8 bytes) of
# the other part's floats leave each rank at zero 2, and the gradient
# beyond what is pending.
less = (2 * 4 + 8) * (block - own) + (block - grads2) * 4
s0 = sum(m0[k] for k in keys)
s2 = sum(m2[k] for k in keys)
print("model state per rank: zero 0 %.1f MiB, zero 2 %.1f MiB"
      % (s0 / 2**20, s2 / 2**20))
assert m0["params"] == m2["params"] == block * 4, (m0, m2)
assert m2["grads"] < m0["grads"] == block * 4, (m0, m2)
assert s0 - s2 == less, (s0, s2, less)
assert s0 - s2 > 16 * (block - own), (s0, s2)
for z in (2, 3):
    ranks = json.load(open("wide-z%d/summary.json" % z))["ranks"]
    assert len(ranks) == 4, ranks
    for r in ranks:
        m = plan[z]["ranks"][r["rank"]]["memory"]
        want = m["total"] - m.get("checkpoint_gather", 0)
        peak = r["peak_resident_bytes"]
        print("zero %d rank %d: peak %.1f MiB, plan %.1f MiB"
              % (z, r["rank"], peak / 2**20, want / 2**20))
        assert 0.85 <= peak / want <= 1.15, (z, r["rank"], peak, want)
print("ok: the wide MLP's plan and peaks at zero 2 and 3 with slices")
PY

[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
levels "$top_srcdir/jobs/char-gpt.yaml" gpt --set train.steps=6 \
	--set train.schedule.warmup_steps=1 --set eval.every_steps=0 \
	--set log.every_steps=1
