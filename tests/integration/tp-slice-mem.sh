#!/bin/sh
# SPDX-License-Identifier: MIT
# Tensor parallelism that owns its slice (doc/DESIGN.md, "Tensor-parallel
# slices"): a rank of tensor_parallel 2 of a wide MLP (784-4096-4096-10,
# 20037642 trained floats, AdamW, 2 micro-batches a step: the exact
# mode's double accumulator) holds its blocks of the column and row
# layers and of the head (split by its 10 classes, the vocabulary split)
# only.
# - plan --dry-run --json: the rank's parameters are the blocks' floats,
#   784 x 2048 + 2048 + 2048 x 4096 + 4096 + 4096 x 5 + 5 = 10020869
#   (counted here by hand), and the plan lists d0.weight, d0.bias,
#   d1.weight, head.weight and head.bias as split, d1.bias as replicated;
# - each rank's measured peak resident memory (summary.json's VmHWM) is
#   within 15% of its plan (less the checkpoint gather the plan charges
#   rank 0 though none is written), and below 0.65 x the one-rank plan's figure
#   for the whole tensors (parameters, gradients, Adam's two buffers and
#   the double accumulator: 24 bytes a float, about 480 MB; the blocks
#   are about half). With whole tensors on every rank (the code before
#   the slices) both ranks peaked above the one-rank figure.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
{
	t10k_job wide
	cat <<YAML
    - {type: dense, name: d0, units: 4096, activation: relu}
    - {type: dense, name: d1, units: 4096}
    - {type: dense, name: head, units: 10}
train:
  global_batch: 16
  micro_batch: 8
  steps: 2
  optimizer: adamw
  lr: 0.001
checkpoint: {at_end: false}
seed: 3
YAML
} >job.yaml
TP="--set parallel.strategy=model --set parallel.tensor_parallel=2"

"$DTRAIN" plan --dry-run --json job.yaml >plan-one.json
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 2 job.yaml $TP >plan-tp2.json
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run -n 2 job.yaml $TP >plan-tp2.txt
grep -q "split over the tensor ranks: d0.weight, d0.bias, d1.weight, head.weight, head.bias" \
	plan-tp2.txt || { cat plan-tp2.txt >&2; fail "plan: the split list"; }
grep -q "replicated on every tensor rank: d1.bias$" \
	plan-tp2.txt || fail "plan: the replicated list"
grep -q "of the split tensors its tensor rank's block only" plan-tp2.txt ||
	fail "plan: does not say the ranks hold blocks"
# shellcheck disable=SC2086
mpi 2 "$DTRAIN" run -q --run-dir tp2 job.yaml $TP >/dev/null 2>tp2.err ||
	{ cat tp2.err >&2; fail "tp2 run"; }
"$PYTHON" - <<'PY'
import json
one = json.load(open("plan-one.json"))["ranks"][0]["memory"]
plan = json.load(open("plan-tp2.json"))
ranks = json.load(open("tp2/summary.json"))["ranks"]
whole = 784 * 4096 + 4096 + 4096 * 4096 + 4096 + 4096 * 10 + 10
block = 784 * 2048 + 2048 + 2048 * 4096 + 4096 + 4096 * 5 + 5
assert whole == 20037642 and block == 10020869
assert one["params"] == whole * 4, one
split = plan["tensor_split"]
assert split["slices"] is True, split
assert split["split"] == ["d0.weight", "d0.bias", "d1.weight",
                          "head.weight", "head.bias"], split
assert split["replicated"] == ["d1.bias"], split
for r in ranks:
    m = plan["ranks"][r["rank"]]["memory"]
    assert m["params"] == block * 4, m
    assert m["grads"] == block * 4, m
    assert m["optimizer_state"] == 2 * block * 4, m
    assert m["grad_accumulator"] == block * 8, m
    peak = r["peak_resident_bytes"]
    # No checkpoint is written (at_end: false); the plan charges rank 0
    # the gathered format's whole model all the same.
    plan_total = m["total"] - m.get("checkpoint_gather", 0)
    print("rank %d: peak %.1f MiB, plan %.1f MiB, one rank's whole %.1f MiB"
          % (r["rank"], peak / 2**20, plan_total / 2**20,
             one["total"] / 2**20))
    assert 0.85 <= peak / plan_total <= 1.15, (peak, plan_total)
    assert peak < 0.65 * one["total"], (peak, one["total"])
print("ok: a tp 2 rank holds its blocks")
PY
