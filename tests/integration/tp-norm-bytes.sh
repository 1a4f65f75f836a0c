#!/bin/sh
# SPDX-License-Identifier: MIT
# The gradient norm's sends where the tensor ranks own their slices
# (doc/DESIGN.md, "Tensor-parallel slices", "Gradient norm"), counted by
# plan --json and summary.json as tp_norm_bytes per step, on
# jobs/char-gpt.yaml at tensor_parallel 2, then data_parallel 2 x
# tensor_parallel 2 (where only data-parallel rank 0 of each tensor group
# takes the norm). Counted here by hand from the tensor shapes:
# - chained (each block a run of whole rows, 8 double lanes = 64 bytes
#   from tensor rank 0 to 1): tok (96, 128) rows, and each of the 4
#   blocks' attn.proj_weight (128, 128) and proj.weight (512, 128) rows:
#   9 x 64 = 576 bytes from tensor rank 0;
# - gathered (tensor rank 1 sends its block to tensor rank 0): each
#   block's qkv (128, 3 x 64) + (3 x 64) = 24576 + 192 and fc (128, 256)
#   + (256) = 32768 + 256 floats, 57792 a block, 4 blocks, and the untied
#   head (128, 48) + (48) = 6192: 237360 floats = 949440 bytes from tensor
#   rank 1.
# The runs' summary.json counts the same on every rank. Before this
# neither counted them (plan --json had no tp_norm_bytes).
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
JOB="$top_srcdir/jobs/char-gpt.yaml"
SET="--set train.steps=2 --set train.schedule.warmup_steps=1 --set eval.every_steps=0 --set checkpoint.every_steps=0 --set parallel.overlap=false"
TP2="--set parallel.strategy=model --set parallel.tensor_parallel=2"
HY="--set parallel.strategy=hybrid --set parallel.data_parallel=2 --set parallel.tensor_parallel=2"

chained=$(( (1 + 4 * 2) * 64 ))
gathered=$(( (4 * (24576 + 192 + 32768 + 256) + 6144 + 48) * 4 ))
[ "$chained" = 576 ] && [ "$gathered" = 949440 ] || fail "hand count"

# check NAME NP SETTINGS...: plan --json's tp_norm_bytes of each rank is
# the hand count for its (dp, tp), and a run's summary.json says the same.
check() {
	d=$1 n=$2
	shift 2
	# shellcheck disable=SC2086
	"$DTRAIN" plan --dry-run --json -n "$n" "$JOB" $SET "$@" >"$d.plan"
	# shellcheck disable=SC2086
	mpi "$n" "$DTRAIN" run -q --run-dir "$d" "$JOB" $SET "$@" \
		>/dev/null 2>"$d.err" || { cat "$d.err" >&2; fail "$d"; }
	"$PYTHON" - "$d.plan" "$d/summary.json" "$chained" "$gathered" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
summ = json.load(open(sys.argv[2]))
chained, gathered = int(sys.argv[3]), int(sys.argv[4])
assert plan["tensor_split"]["slices"] is True, plan["tensor_split"]
got = {r["rank"]: r["tp_norm_bytes"] for r in summ["bytes_per_step"]}
for r in plan["ranks"]:
    want = 0 if r["dp"] != 0 else chained if r["tp"] == 0 else gathered
    have = r["bytes_per_step"]["tp_norm_bytes"]
    assert have == want, ("plan", r["rank"], have, want)
    assert got[r["rank"]] == want, ("run", r["rank"], got[r["rank"]], want)
print("ok:", sys.argv[1], sorted(got.items()))
PY
}
# shellcheck disable=SC2086
check tp2 2 $TP2
# shellcheck disable=SC2086
check hy 4 $HY
# zero 2 over slices (parallel.zero_slices) takes the same norms on its
# data-parallel rank 0's tensor group from the blocks made whole there:
# the same sends (sync_zero.c's split_block_norms)
# shellcheck disable=SC2086
check hz2 4 $HY --set parallel.zero=2 --set parallel.zero_slices=true
