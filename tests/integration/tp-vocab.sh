#!/bin/sh
# SPDX-License-Identifier: MIT
# The vocabulary split under tensor parallelism (dtrain-job(5), "Tensor
# parallelism"; doc/DESIGN.md, "Tensor-parallel slices"): on the
# char-GPT job (vocab 96, an untied head), tensor_parallel 2 and 4 split
# the embedding's table by rows and the head's logits by classes, with
# the loss across the ranks:
# - the plan counts the floats the tensor group sums per sample: the
#   blocks' 4 x 64 x 128 per block, 4 blocks, plus the embedding's
#   output (64 x 128), the head's input gradient (64 x 128) and the
#   loss's 4 x tp x 64 (maxima, label logits, first maxima, running
#   sums): 147968 at tp 2, 148480 at tp 4 (131072 before the split);
# - the bytes each rank moved per step, counted by dtrain, are the
#   plan's;
# - the losses are one rank's within layouts.sh's tensor-parallel
#   tolerance (1e-5 relative);
# - a degree that does not divide the vocabulary splits it unevenly (the
#   first V mod tp ranks hold one row or class more): vocab 98 at tp 4
#   and vocab 97 (table and head) at tp 2 and 4 sum what the even split
#   sums, and a vocab-97 run at tp 4 logs one rank's losses within the
#   same tolerance and moves the plan's bytes.
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] || {
	echo "SKIP: fortunes missing (apt-get install fortunes)"
	exit 77
}
J="$top_srcdir/jobs/char-gpt.yaml"
COMMON="--set train.steps=8 --set log.every_steps=1 --set eval.every_steps=0 --set checkpoint.at_end=false --set train.global_batch=8 --set train.micro_batch=2 --set train.schedule.warmup_steps=2"
M="--set parallel.strategy=model"

for l in 2:147968 4:148480; do
	tp=${l%%:*} want=${l#*:}
	# shellcheck disable=SC2086
	"$DTRAIN" plan --dry-run --json -n $tp "$J" $COMMON $M \
		--set parallel.tensor_parallel=$tp >tp$tp.plan.json
	"$PYTHON" - tp$tp.plan.json "$want" <<'PY' || fail "tp$tp: plan's floats"
import json, sys
plan = json.load(open(sys.argv[1]))
got = plan["stages"][0]["tp_floats_per_sample"]
assert got == int(sys.argv[2]), (sys.argv[1], got, sys.argv[2])
PY
done

# shellcheck disable=SC2086
mpi 1 "$DTRAIN" run -q --run-dir one "$J" $COMMON >/dev/null
for tp in 2 4; do
	# shellcheck disable=SC2086
	mpi $tp "$DTRAIN" run -q --run-dir tp$tp "$J" $COMMON $M \
		--set parallel.tensor_parallel=$tp >tp$tp.out 2>&1 ||
		{ cat tp$tp.out >&2; fail "tp$tp: exit"; }
	compare_losses one tp$tp 1e-5 >/dev/null ||
		{ compare_losses one tp$tp 1e-5 || true
		  fail "tp$tp: losses differ from one rank"; }
	"$PYTHON" - tp$tp.plan.json tp$tp/summary.json <<'PY' || fail "tp$tp: bytes moved are not the plan's"
import json, sys
plan, summ = (json.load(open(p)) for p in sys.argv[1:])
want = {r["rank"]: r["bytes_per_step"]["tp_allreduce_bytes"]
        for r in plan["ranks"]}
got = {r["rank"]: r["tp_allreduce_bytes"] for r in summ["bytes_per_step"]}
assert want == got, (sys.argv[2], want, got)
PY
	echo "ok: tp$tp"
done

# vocab 98: 4 does not divide it, the head's 96 units it does: the table
# splits unevenly (25 + 25 + 24 + 24 rows), summed as the even split's
# is, 131072 + 64 x 128 + 64 x 128 + 4 x 4 x 64 (until this split, 98
# kept the table whole: 140288).
V="--set model.layers.tok.vocab=98"
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 4 "$J" $COMMON $M $V \
	--set parallel.tensor_parallel=4 >v98.plan.json ||
	fail "vocab 98 at tp 4: plan refused"
"$PYTHON" - v98.plan.json 148480 <<'PY' || fail "vocab 98: plan's floats"
import json, sys
plan = json.load(open(sys.argv[1]))
got = plan["stages"][0]["tp_floats_per_sample"]
assert got == int(sys.argv[2]), (sys.argv[1], got, sys.argv[2])
PY
echo "ok: vocab 98 at tp 4, the table split"

# vocab 97, the table and the head (GPT-2's 50257 is odd too): 49 + 48 at
# tp 2, 25 + 24 + 24 + 24 at tp 4; the plan's floats are the even
# split's, and a run at tp 4 gives one rank's losses (its own one-rank
# run at vocab 97) and moves the plan's bytes.
V="--set model.layers.tok.vocab=97 --set model.layers.head.units=97"
for l in 2:147968 4:148480; do
	tp=${l%%:*} want=${l#*:}
	# shellcheck disable=SC2086
	"$DTRAIN" plan --dry-run --json -n $tp "$J" $COMMON $M $V \
		--set parallel.tensor_parallel=$tp >v97tp$tp.plan.json ||
		fail "vocab 97 at tp $tp: plan refused"
	"$PYTHON" - v97tp$tp.plan.json "$want" <<'PY' || fail "vocab 97 tp$tp: plan's floats"
import json, sys
plan = json.load(open(sys.argv[1]))
got = plan["stages"][0]["tp_floats_per_sample"]
assert got == int(sys.argv[2]), (sys.argv[1], got, sys.argv[2])
PY
done
# shellcheck disable=SC2086
mpi 1 "$DTRAIN" run -q --run-dir one97 "$J" $COMMON $V >/dev/null
# shellcheck disable=SC2086
mpi 4 "$DTRAIN" run -q --run-dir v97tp4 "$J" $COMMON $M $V \
	--set parallel.tensor_parallel=4 >v97tp4.out 2>&1 ||
	{ cat v97tp4.out >&2; fail "vocab 97 tp4: exit"; }
compare_losses one97 v97tp4 1e-5 >/dev/null ||
	{ compare_losses one97 v97tp4 1e-5 || true
	  fail "vocab 97 tp4: losses differ from one rank"; }
cmp -s one/metrics.jsonl one97/metrics.jsonl &&
	fail "vocab 97: the one-rank run is vocab 96's"
"$PYTHON" - v97tp4.plan.json v97tp4/summary.json <<'PY' || fail "vocab 97 tp4: bytes moved are not the plan's"
import json, sys
plan, summ = (json.load(open(p)) for p in sys.argv[1:])
want = {r["rank"]: r["bytes_per_step"]["tp_allreduce_bytes"]
        for r in plan["ranks"]}
got = {r["rank"]: r["tp_allreduce_bytes"] for r in summ["bytes_per_step"]}
assert want == got, (sys.argv[2], want, got)
PY
echo "ok: vocab 97 at tp 4, the table and the head split unevenly"
