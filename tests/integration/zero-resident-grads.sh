#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.zero_resident_grads (src/train/sync_zero.c, sync_zero3.c):
# at zero 2 and 3 the float gradient's pages are never handed back, so
# they are not faulted in again each micro-batch (bench/README, "zero 3
# with the gradient resident"), and the plan counts the whole gradient.
# - The tiny MLP (4780 trained floats) on 2 ranks at zero 2 and at zero
#   3 (gather_mb 0.02: both nodes one unit) with the key gives one
#   rank's losses bit for bit; at zero 3 summary.json's
#   zero.released_bytes is once rank 0's unowned whole pages (the
#   parameters' at the start; without the key 13 times,
#   tests/integration/zero3-pages.sh: the gradient's once a step too).
# - jobs/char-gpt.yaml (826,208 floats) on 2 ranks at zero 3, gather_mb
#   4, 5 steps, with and without the key: the same losses bit for bit;
#   each rank's minor page faults (GNU time) at least 5 x 1000 fewer
#   with it (counted from the code: each of a rank's 2 micro-batches a
#   step writes all 807 gradient pages again, and the final rounding the
#   own part's 403, about 2000 a rank and step); each rank's peak
#   resident memory within 15% of the plan's total for the layout;
#   plan --dry-run --json's grads are the 826,208 floats with the key
#   and fewer without, the totals differing by as much; the text names
#   the key; at zero 3 with gathered checkpoints over tensor slices the
#   plan's params_gather holds the whole parameters beside the whole
#   gradient (826,208 x 4 bytes less the step's params).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
[ -x /usr/bin/time ] || { echo "SKIP: GNU time missing"; exit 77; }
write_mlp6_job job.yaml zeroresident
SET="--set eval.every_steps=0 --set checkpoint.at_end=false"
R="--set parallel.zero_resident_grads=true --set parallel.overlap=false"

"$DTRAIN" run -q --run-dir one job.yaml $SET >/dev/null
losses one >a.col
[ -s a.col ] || fail "one rank: no losses"
for z in 2 3; do
	# shellcheck disable=SC2086
	mpi 2 "$DTRAIN" run -q --run-dir z$z job.yaml $SET $R \
		--set parallel.zero=$z --set parallel.gather_mb=0.02 >/dev/null
	losses z$z >b.col
	cmp -s a.col b.col ||
		fail "zero $z, resident: losses differ from one rank's"
done

# Rank 0's unowned floats are [0, 2390) (zero3-pages.sh).
page=$(getconf PAGESIZE)
unowned=$((9560 / page * page))
[ "$unowned" -gt 0 ] || fail "page size $page: no whole page to count"
"$PYTHON" - z3/summary.json "$unowned" <<'PY' || fail "released_bytes"
import json, sys
z = json.load(open(sys.argv[1]))["zero"]
unowned = int(sys.argv[2])
assert z["optimizer_params"] == 2390, z
if z["released_bytes"] != unowned:
    print("released_bytes %d, expected %d (without the key: 13 x)"
          % (z["released_bytes"], unowned), file=sys.stderr)
    sys.exit(1)
PY

# char-GPT, each rank under GNU time (its minor faults in flt-NAME.R).
F="$top_srcdir/jobs/char-gpt.yaml"
G="--set train.steps=5 --set train.schedule.warmup_steps=1
   --set eval.every_steps=0 --set checkpoint.at_end=false
   --set parallel.zero=3 --set parallel.overlap=false
   --set parallel.gather_mb=4"
gpt() {
	name=$1
	shift
	# shellcheck disable=SC2086
	mpi 2 sh -c \
		'/usr/bin/time -f %R -o "flt-$0.$OMPI_COMM_WORLD_RANK" "$@"' \
		"$name" "$DTRAIN" run -q --run-dir "g-$name" "$F" $G "$@" \
		>/dev/null 2>"err-$name" ||
		{ cat "err-$name" >&2; fail "$name"; }
}
gpt off
# shellcheck disable=SC2086
gpt on --set parallel.zero_resident_grads=true
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 2 "$F" $G \
	--set parallel.zero_resident_grads=true >plan-gpt.json
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 2 "$F" $G >plan-off.json
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run -n 2 "$F" $G \
	--set parallel.zero_resident_grads=true >plan-on.txt
grep -q "whole float gradient kept resident (parallel.zero_resident_grads)" \
	plan-on.txt || fail "plan --dry-run does not name the key"
losses g-off >a.col
losses g-on >b.col
[ -s a.col ] && cmp -s a.col b.col || fail "char-GPT: resident losses differ"
"$PYTHON" - <<'PY' || fail "char-GPT: faults or peak"
import json
plan = json.load(open("plan-gpt.json"))["ranks"]
off = json.load(open("plan-off.json"))["ranks"]
for a, b in zip(plan, off):
    # every parameter's float; without the key the own part (413,104)
    # and the pending nodes, less (describe.c, plan_stage)
    assert a["memory"]["grads"] == 826208 * 4, a["memory"]
    assert b["memory"]["grads"] < 826208 * 4, b["memory"]
    assert a["memory"]["total"] - b["memory"]["total"] == \
        a["memory"]["grads"] - b["memory"]["grads"], (a, b)
ranks = json.load(open("g-on/summary.json"))["ranks"]
for r in (0, 1):
    off = int(open("flt-off.%d" % r).read().split()[-1])
    on = int(open("flt-on.%d" % r).read().split()[-1])
    print("rank %d: minor faults %d with the key, %d without" % (r, on, off))
    assert on <= off - 5 * 1000, (r, on, off)
for r in ranks:
    want = plan[r["rank"]]["memory"]["total"]
    assert r["plan_memory_bytes"] == want, (r, want)
    print("rank %d: peak %d, plan %d (%.3f)"
          % (r["rank"], r["peak_resident_bytes"], want,
             r["peak_resident_bytes"] / want))
    assert 0.85 <= r["peak_resident_bytes"] / want <= 1.15, (r, want)
PY

# zero 3 that checkpoints in the gathered format with tensor slices
# (checkpoint.compress): every summing rank gathers the whole parameters
# after an update, beside the gradient it holds then. With the key that
# gradient is the whole 826,208 floats, so the checkpoint holds both
# whole: the plan's params_gather must be what that exceeds the step's
# params and grads by, 826,208 x 4 bytes less the step's params (it
# was left out, the formula taking the own part of the gradient).
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 2 "$F" --set parallel.strategy=model \
	--set parallel.tensor_parallel=2 --set parallel.zero=3 \
	--set parallel.overlap=false --set checkpoint.compress=true \
	--set parallel.zero_resident_grads=true >plan-ckpt.json
"$PYTHON" - <<'PY' || fail "plan: params_gather with the key"
import json
for r in json.load(open("plan-ckpt.json"))["ranks"]:
    m = r["memory"]
    assert m["grads"] == 826208 * 4, m
    assert m.get("params_gather") == 826208 * 4 - m["params"], m
PY
echo "ok: zero 2 and 3 with the gradient resident"
