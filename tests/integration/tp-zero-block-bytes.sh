#!/bin/sh
# SPDX-License-Identifier: MIT
# At parallel.zero 2 and 3 over tensor slices (parallel.zero_slices) the
# data-parallel ranks other than 0 send data-parallel rank 0 of their
# tensor rank their parts of each split tensor's summed block before the
# gradient norm (train/sync_zero.c, block_whole), counted by plan --json
# and summary.json as zero_block_bytes per step. Before this neither
# counted them. jobs/char-gpt.yaml at data_parallel 2 x tensor_parallel
# 2; counted here by hand from the tensor shapes. A tensor rank's trained
# floats, in model order (S: split, its block of tensor_parallel 2):
#   tok (96, 128) S 48 x 128 = 6144, pos (64, 128) 8192;
#   each of 4 blocks, 99520: ln1 2 x 128, attn.qkv_weight S (128, 192)
#   24576, qkv_bias S 192, proj_weight S (64, 128) 8192, proj_bias 128,
#   ln2 2 x 128, fc.weight S (128, 256) 32768, fc.bias S 256,
#   proj.weight S (256, 128) 32768, proj.bias 128;
#   ln_f 2 x 128, head.weight S (128, 48) 6144, head.bias S 48.
# n = 14336 + 4 x 99520 + 256 + 6192 = 418864. comm/comm.h's parts of 2:
# data-parallel rank 1 holds chunk 0, [0, 209432). In it: tok (6144),
# block 0's split floats (98752) and block 1's from 113856 on: its qkv
# 24576 + 192, proj_weight 8192, fc 32768 + 256 and of proj.weight
# [180480, 213248) the floats up to 209432, 28952: 199832 floats,
# 799328 bytes from data-parallel rank 1 (each tensor rank), 0 from
# data-parallel rank 0. At zero 0 nothing is sent (the blocks are whole).
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
JOB="$top_srcdir/jobs/char-gpt.yaml"
SET="--set train.steps=2 --set train.schedule.warmup_steps=1 --set eval.every_steps=0 --set checkpoint.every_steps=0 --set parallel.overlap=false"
HY="--set parallel.strategy=hybrid --set parallel.data_parallel=2 --set parallel.tensor_parallel=2 --set parallel.zero_slices=true"

n=$(( 6144 + 8192 + 4 * 99520 + 256 + 6144 + 48 ))
b1=$(( 113856 + 256 + 24576 + 192 + 8192 + 128 + 256 + 32768 + 256 ))
sent=$(( 6144 + 98752 + 24576 + 192 + 8192 + 32768 + 256 + n / 2 - b1 ))
if [ "$n" != 418864 ] || [ "$b1" != 180480 ] || [ "$sent" != 199832 ]; then
	fail "hand count: $n $b1 $sent"
fi
bytes=$(( 4 * sent ))

# check NAME ZERO WANT: plan --json's zero_block_bytes of each rank is
# WANT on data-parallel rank 1 and 0 on rank 0, and summary.json says the
# same.
check() {
	d=$1 z=$2
	# shellcheck disable=SC2086
	"$DTRAIN" plan --dry-run --json -n 4 "$JOB" $SET $HY \
		--set parallel.zero="$z" >"$d.plan"
	# shellcheck disable=SC2086
	mpi 4 "$DTRAIN" run -q --run-dir "$d" "$JOB" $SET $HY \
		--set parallel.zero="$z" >/dev/null 2>"$d.err" ||
		{ cat "$d.err" >&2; fail "$d"; }
	"$PYTHON" - "$d.plan" "$d/summary.json" "$3" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
summ = json.load(open(sys.argv[2]))
sent = int(sys.argv[3])
assert plan["tensor_split"]["slices"] is True, plan["tensor_split"]
got = {r["rank"]: r["zero_block_bytes"] for r in summ["bytes_per_step"]}
for r in plan["ranks"]:
    want = sent if r["dp"] == 1 else 0
    have = r["bytes_per_step"]["zero_block_bytes"]
    assert have == want, ("plan", r["rank"], have, want)
    assert got[r["rank"]] == want, ("run", r["rank"], got[r["rank"]], want)
print("ok:", sys.argv[1], sorted(got.items()))
PY
}
check z2 2 "$bytes"
check z3 3 "$bytes"
check z0 0 0
