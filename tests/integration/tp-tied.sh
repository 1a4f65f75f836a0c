#!/bin/sh
# SPDX-License-Identifier: MIT
# A tied head with tensor slices (parallel.tied_slices, dtrain-job(5)):
# jobs/char-gpt.yaml with its head tied to the token table (tie: tok, no
# bias) at tensor_parallel 2. The vocabulary split of the table (rows)
# and of the head (classes) are the same rows, so the head's tied copy
# is split as its table is and each rank holds the block of its rows of
# both (their gradients summed, train/tie_sum.c), 6 steps:
# - plan --json: slices on with the key, off without (a tied head kept
#   whole); a rank's parameters are 418816 floats, counted here by hand:
#   tok (96, 128) -> 48 rows, 6144; pos 8192 whole; a block's ln1, ln2
#   (256 each), attn.proj_bias and proj.bias (128 each) whole, qkv (128,
#   384) + (384) -> 24576 + 192, attn.proj_weight (128, 128) -> 8192, fc
#   (128, 512) + (512) -> 32768 + 256, proj (512, 128) -> 32768: 99520 a
#   block, 4 blocks; ln_f 256; the head's tied copy (96, 128) -> 6144;
# - the tp 2 losses follow one rank's within layouts.sh's tensor-parallel
#   tolerance (1e-5 relative);
# - a tp 2 run stopped at step 3 and resumed on tp 2 ends with the
#   uninterrupted run's loss lines and exported parameters, byte for byte;
# - at dp 2 x tp 2, zero 2 with parallel.zero_slices, the same losses.
# Before, a tied head kept every tensor whole under tensor parallelism.
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
"$PYTHON" - "$top_srcdir/jobs/char-gpt.yaml" <<'PY'
import sys
t = open(sys.argv[1]).read()
old = "    - {type: dense, name: head, units: 96}"
assert old in t
open("tied.yaml", "w").write(t.replace(
    old, "    - {type: dense, name: head, units: 96, tie: tok, bias: false}"))
PY
JOB=tied.yaml
SET="--set train.steps=6 --set train.schedule.warmup_steps=1 --set eval.every_steps=0 --set log.every_steps=1 --set checkpoint.every_steps=0 --set parallel.overlap=false"
TP2="--set parallel.strategy=model --set parallel.tensor_parallel=2 --set parallel.tied_slices=true"

# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 2 "$JOB" $SET $TP2 >sliced.json
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 2 "$JOB" $SET $TP2 \
	--set parallel.tied_slices=false >whole.json
"$PYTHON" - <<'PY'
import json
p = json.load(open("sliced.json"))
w = json.load(open("whole.json"))
s = p["tensor_split"]
assert s["slices"] is True, s
assert w["tensor_split"]["slices"] is False, w["tensor_split"]
assert "tok.weight" in s["split"], s
block = 256 + 24576 + 192 + 8192 + 128 + 256 + 32768 + 256 + 32768 + 128
rank = 6144 + 8192 + 4 * block + 256 + 6144
assert block == 99520 and rank == 418816, (block, rank)
for r in (0, 1):
    m = p["ranks"][r]["memory"]
    assert m["params"] == rank * 4, (r, m)
    assert m["grads"] == rank * 4, (r, m)
    assert m["optimizer_state"] == 2 * rank * 4, (r, m)
    # whole: the 826160 floats of the untied model less its head's
    # bias, and the tied copy (96, 128) beside the table
    assert w["ranks"][r]["memory"]["params"] == \
        (826208 - 96) * 4, w["ranks"][r]
print("ok: plan: a tp 2 rank of the tied char-GPT holds 418816 floats")
PY

# run NAME NP SETTINGS...
run() {
	d=$1 n=$2
	shift 2
	# shellcheck disable=SC2086
	mpi "$n" "$DTRAIN" run -q --run-dir "$d" "$JOB" $SET "$@" \
		>/dev/null 2>"$d.err" || { cat "$d.err" >&2; fail "$d"; }
}
run one 1
# shellcheck disable=SC2086
run tp2 2 $TP2
compare_losses one tp2 1e-5 || fail "tp 2: losses differ from one rank's"
echo "ok: tied char-GPT tp 2 with slices follows one rank"

# zero 2 over slices at dp 2 x tp 2: the tie summed on the parts, the
# same losses; data-parallel rank 1 sends its part's floats of the split
# blocks (zero_block_bytes, tp-zero-block-bytes.sh's count less the
# head's bias): of [0, 418816 / 2 = 209408), tok 6144, block 0's 98752,
# block 1's 24576 + 192 + 8192 + 32768 + 256 and proj.weight's from
# 180480 on, 28928: 199808 floats; the tied copy is not sent.
# shellcheck disable=SC2086
run z2 4 $TP2 --set parallel.strategy=hybrid --set parallel.data_parallel=2 \
	--set parallel.zero=2 --set parallel.zero_slices=true
compare_losses one z2 1e-5 || fail "zero 2: losses differ from one rank's"
"$PYTHON" - <<'PY'
import json
sent = 6144 + 98752 + 24576 + 192 + 8192 + 32768 + 256 + 209408 - 180480
assert sent == 199808, sent
got = {r["rank"]: r["zero_block_bytes"]
       for r in json.load(open("z2/summary.json"))["bytes_per_step"]}
assert got == {0: 0, 1: 0, 2: 4 * sent, 3: 4 * sent}, got
print("ok: tied char-GPT zero 2 over slices follows one rank")
PY

stop_resume_tp2 tp2
echo "ok: tied char-GPT tp 2 stop and resume, bit for bit"
