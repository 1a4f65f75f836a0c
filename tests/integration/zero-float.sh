#!/bin/sh
# SPDX-License-Identifier: MIT
# zero-float.sh - parallel.zero 2 with float sums (dtrain-job(5): one
# micro-batch a rank on 2 ranks) holds only its part of the gradient
# once backward has passed a node: each node's floats go to their part's
# owner as its backward ends and the pages of the floats the rank does
# not own are handed back.
#
# The MLP of zero.sh's memory check, 784 -> 8 x 1024 -> 10: P = 8161290
# trained floats (784 x 1024 + 1024, 7 x (1024 x 1024 + 1024), 1024 x 10
# + 10), on 2 ranks with a global batch of 16 in micro-batches of 8 (the
# float sum). Each rank owns P / 2 = 4080645 floats; the own floats
# hold the sum as it builds up, so rank 0, whose part is the back half
# (dt_comm_part), which backward passes first, holds all of them while
# the front layers go through, and its largest node (1049600) and the
# 262144 floats pending beside it. Zero 2
# thus keeps 4 x (P - 4080645 - 1049600 - 262144) = 11075604 bytes of
# gradient fewer than zero 1 (which keeps all P), and adds the piece it
# receives (262144 floats and one, 1048580 bytes) and the copy of the
# weight the part boundary cuts (the fifth layer's, [3952640, 5001216):
# 1048576 floats, 4194304 bytes): the plan's totals differ by 5832720
# bytes, and each rank's measured peak (VmHWM, summary.json) at zero 2 is
# below zero 1's by at least as much. On the code before (the gradient
# whole during backward and reduce-scattered after it) zero 2's measured
# peaks were 5.5 MiB above zero 1's (153.8 MiB against 148.2), so the
# memory check fails there; now zero 2 peaks at 124 to 128 MiB, rank 0
# about a node above rank 1 (127.7 against 124.1 MiB; the plan counted
# only the part, 4 x 4080645 bytes of gradient, before the review of
# 2026-12-07). The losses of both levels are the same bits.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_mlp6_job job.yaml zerofloat
OFF="--set parallel.overlap=false"
F16="--set train.global_batch=16"
sed 's/units: 6,/units: 1024,/; s/lr: 0.01/lr: 0.0001/' job.yaml >big.yaml
"$PYTHON" - big.yaml <<'PY'
import sys
f = sys.argv[1]
t = open(f).read().replace(
    "    - {type: dense, units: 1024, activation: relu}\n",
    "    - {type: dense, units: 1024, activation: relu}\n" * 8)
open(f, "w").write(t)
PY
for z in 1 2; do
	"$DTRAIN" plan --dry-run --json -n 2 big.yaml $F16 \
		--set parallel.zero=$z $OFF >plan-z$z.json
	mpi 2 "$DTRAIN" run -q --run-dir big-z$z big.yaml $F16 \
		--set train.steps=2 --set parallel.zero=$z \
		--set checkpoint.at_end=false $OFF >/dev/null
done
grep -q '"sums": *"allreduce"' big-z2/plan.json ||
	fail "big-z2: not the float sum"
"$PYTHON" - <<'PY'
import json
P, own, node, seg, cut = 8161290, 4080645, 1049600, 262144, 1048576
assert 784 * 1024 + 1024 + 7 * (1024 * 1024 + 1024) + 1024 * 10 + 10 == P
assert own > node + seg
# the fifth dense layer's weight holds the boundary P / 2
lo = 784 * 1024 + 1024 + 3 * (1024 * 1024 + 1024)
assert lo < P // 2 < lo + cut, lo
drop = 4 * (P - own - node - seg) - (4 * seg + 4) - 4 * cut
assert drop == 5832720, drop
z1, z2 = (json.load(open("big-z%d/summary.json" % z)) for z in (1, 2))
assert z1["train_loss"] == z2["train_loss"], (z1["train_loss"],
                                              z2["train_loss"])
for a, b in zip(z1["ranks"], z2["ranks"]):
    d = a["peak_resident_bytes"] - b["peak_resident_bytes"]
    print("rank %d: peak resident zero 1 %.2f MiB, zero 2 %.2f MiB"
          % (a["rank"], a["peak_resident_bytes"] / 2**20,
             b["peak_resident_bytes"] / 2**20))
    assert d >= drop, (a, b, drop)
print("ok: float zero 2 below zero 1 by at least %d bytes on every rank"
      % drop)
p1, p2 = (json.load(open("plan-z%d.json" % z))["memory_per_rank"]
          for z in (1, 2))
assert p2["grads"] == 4 * (own + node + seg), p2
assert p1["total"] - p2["total"] == drop, (p1["total"], p2["total"], drop)
print("ok: the plan's totals differ by %d bytes" % drop)
PY
