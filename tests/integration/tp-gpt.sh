#!/bin/sh
# SPDX-License-Identifier: MIT
# Tensor parallelism that owns its slice on jobs/char-gpt.yaml (doc/
# DESIGN.md, "Tensor-parallel slices"): at tensor_parallel 2 a rank holds
# its blocks of the attention heads (qkv columns, proj rows), of the MLP's
# column and row layers and of the vocabulary split (the token table's
# rows, the untied head's classes), 6 steps:
# - plan --json: slices on; the rank's parameters are 418864 floats, not
#   826208, counted here by hand: tok (96, 128) -> 6144 rows' floats; pos
#   8192 whole; a block's ln1, ln2 (256 each), attn.proj_bias and
#   proj.bias (128 each) whole, qkv (128, 384) + (384) -> 24576 + 192,
#   attn.proj_weight (128, 128) -> 8192, fc (128, 512) + (512) -> 32768 +
#   256, proj (512, 128) -> 32768: 99520 a block, 4 blocks; ln_f 256;
#   head (128, 96) + (96) -> 6144 + 48;
# - the tp 2 losses follow one rank's within layouts.sh's tensor-parallel
#   tolerance (1e-5 relative);
# - a tp 2 run stopped at step 3 and resumed on tp 2 ends with the
#   uninterrupted run's loss lines and exported parameters, byte for byte;
# - tensor rank 1's measured peak resident memory (summary.json; rank 0
#   gathers the whole model for the final checkpoint) is within 15% of
#   its plan and below the whole-tensor figure, one rank's plan (the
#   plans differ by about 9.4 MB: 407344 floats fewer of parameters,
#   gradients, Adam's two moments and the double accumulator);
# - a tied head (tie: tok) keeps the model whole: its table would be a
#   block of rows while the copy stays (V, C), so the plan says no slices
#   (tied.sh holds that run to one rank's bits).
# Before the slices every rank held the whole 826208 floats and plan
# --json had no tensor_split.
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
JOB="$top_srcdir/jobs/char-gpt.yaml"
SET="--set train.steps=6 --set train.schedule.warmup_steps=1 --set eval.every_steps=0 --set log.every_steps=1 --set checkpoint.every_steps=0 --set parallel.overlap=false"
TP2="--set parallel.strategy=model --set parallel.tensor_parallel=2"

# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 2 "$JOB" $SET $TP2 >sliced.json
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 2 "$JOB" $SET $TP2 \
	--set parallel.zero=2 >whole.json
"$PYTHON" - <<'PY'
import json
p = json.load(open("sliced.json"))
w = json.load(open("whole.json"))
s = p["tensor_split"]
assert s["slices"] is True, s
assert w["tensor_split"]["slices"] is False, w["tensor_split"]
for t in ("tok.weight", "block.0.attn.qkv_weight", "block.0.attn.qkv_bias",
          "block.0.attn.proj_weight", "block.3.fc.weight", "block.3.fc.bias",
          "block.3.proj.weight", "head.weight", "head.bias"):
    assert t in s["split"], (t, s)
for t in ("pos.weight", "block.0.ln1.weight", "block.0.attn.proj_bias",
          "block.3.proj.bias", "ln_f.bias"):
    assert t in s["replicated"], (t, s)
block = 256 + 24576 + 192 + 8192 + 128 + 256 + 32768 + 256 + 32768 + 128
rank = 6144 + 8192 + 4 * block + 256 + 6144 + 48
assert block == 99520 and rank == 418864, (block, rank)
for r in (0, 1):
    m = p["ranks"][r]["memory"]
    assert m["params"] == rank * 4, (r, m)
    assert m["grads"] == rank * 4, (r, m)
    assert m["optimizer_state"] == 2 * rank * 4, (r, m)
    assert w["ranks"][r]["memory"]["params"] == 826208 * 4, w["ranks"][r]
print("ok: plan: a tp 2 rank of char-GPT holds 418864 floats")
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

stop_resume_tp2 tp2
echo "ok: char-GPT tp 2 stop and resume, bit for bit"

# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json "$JOB" $SET >one.json
"$PYTHON" - <<'PY'
import json
p = json.load(open("sliced.json"))["ranks"]
one = json.load(open("one.json"))["ranks"][0]["memory"]
a = json.load(open("tp2/summary.json"))["ranks"]
b = json.load(open("one/summary.json"))["ranks"][0]
checked = 0
for x in a:
    r = x["rank"]
    m = p[r]["memory"]
    # rank 0 gathers the whole model for the checkpoint at the end
    # (checkpoint_gather): its peak is the one rank's; rank 1's is not.
    if m.get("checkpoint_gather", 0) > 0:
        continue
    checked += 1
    print("rank %d: peak %.1f MiB (plan %.1f); one rank's whole tensors: "
          "plan %.1f MiB, peak %.1f MiB"
          % (r, x["peak_resident_bytes"] / 2**20, m["total"] / 2**20,
             one["total"] / 2**20, b["peak_resident_bytes"] / 2**20))
    assert one["total"] - m["total"] > 8e6, (one["total"], m["total"])
    assert x["peak_resident_bytes"] < one["total"], (x, one["total"])
    assert 0.85 <= x["peak_resident_bytes"] / m["total"] <= 1.15, (x, m)
assert checked == 1, "no rank without the checkpoint's gather was checked"
PY

# A tied head: no slices (the trainer keeps a tied head whole).
"$PYTHON" - "$JOB" <<'PY'
import sys
t = open(sys.argv[1]).read()
old = "    - {type: dense, name: head, units: 96}"
assert old in t
open("tied.yaml", "w").write(t.replace(
    old, "    - {type: dense, name: head, units: 96, tie: tok, bias: false}"))
PY
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 2 tied.yaml $SET $TP2 >tied.json
"$PYTHON" - <<'PY'
import json
s = json.load(open("tied.json"))["tensor_split"]
assert s["slices"] is False, s
print("ok: a tied head keeps whole tensors")
PY
