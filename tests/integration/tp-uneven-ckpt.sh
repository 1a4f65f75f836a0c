#!/bin/sh
# SPDX-License-Identifier: MIT
# Checkpoints of a vocabulary split in uneven shares (doc/DESIGN.md,
# "Tensor-parallel slices"): the char-GPT job (untied head) at vocab 97,
# table and head, on tensor_parallel 4 with slices (25 + 24 + 24 + 24
# rows of the table, classes of the head), 6 steps, a checkpoint every 3:
# - the plan says the tensor ranks own their slices, tok and head split;
# - a run stopped by SIGTERM at step 3 and resumed on tp 4 ends with the
#   uninterrupted run's loss lines, exported parameters and step-6
#   checkpoint tensors, byte for byte;
# - the tp 4 checkpoint of step 3 resumed on 1 rank and on tp 2 (49 + 48
#   rows) logs the uninterrupted run's losses within layouts.sh's
#   tensor-parallel tolerance (1e-5 relative): a block put in a wrong
#   place, or cut at V / tp rows, would show at once;
# - dtrain eval (one process) of the tp 4 run's last checkpoint gives the
#   loss and accuracy of a one-rank run's checkpoint within that
#   tolerance.
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] || {
	echo "SKIP: fortunes missing (apt-get install fortunes)"
	exit 77
}
J="$top_srcdir/jobs/char-gpt.yaml"
COMMON="--set train.steps=6 --set log.every_steps=1 --set eval.every_steps=0 --set eval.max_batches=2 --set checkpoint.every_steps=3 --set checkpoint.keep_last=0 --set train.global_batch=8 --set train.micro_batch=2 --set train.schedule.warmup_steps=2 --set model.layers.tok.vocab=97 --set model.layers.head.units=97"
TP4="--set parallel.strategy=model --set parallel.tensor_parallel=4"
TP2="--set parallel.strategy=model --set parallel.tensor_parallel=2"

# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 4 "$J" $COMMON $TP4 >plan.json ||
	fail "plan at tp 4 refused"
"$PYTHON" - plan.json <<'PY' || fail "plan: vocab 97 at tp 4 not sliced"
import json, sys
ts = json.load(open(sys.argv[1]))["tensor_split"]
assert ts["slices"] is True, ts
assert {"tok.weight", "head.weight", "head.bias"} <= set(ts["split"]), ts
PY

# shellcheck disable=SC2086
mpi 4 "$DTRAIN" run -q --run-dir full "$J" $COMMON $TP4 >/dev/null \
	2>full.err || { cat full.err >&2; fail "tp 4: uninterrupted run"; }
export_of full full.st
[ "$(losses full | wc -l)" -eq 6 ] || fail "tp 4: not 6 loss lines"

set +e
# shellcheck disable=SC2086
DTRAIN_TEST_SIGNAL_AT_STEP=3 mpi 4 -x DTRAIN_TEST_SIGNAL_AT_STEP \
	"$DTRAIN" run -q --run-dir stop "$J" $COMMON $TP4 >/dev/null 2>stop.err
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat stop.err >&2; fail "stop: exited $rc, expected 3"; }
cp -a stop stop-on1
cp -a stop stop-tp2
mpi 4 "$DTRAIN" resume -q stop >/dev/null 2>stop.err2 ||
	{ cat stop.err2 >&2; fail "tp 4: resume"; }
grep -q "resuming from .*step-000000003" stop.err2 ||
	{ cat stop.err2 >&2; fail "tp 4: did not resume from 3"; }
export_of stop stop.st
losses full >a.losses
losses stop >b.losses
cmp a.losses b.losses || fail "tp 4: loss lines differ after the resume"
cmp full.st stop.st || fail "tp 4: resumed parameters differ from the uninterrupted run"
# the step-6 checkpoints' tensors (parameters and optimizer state)
n=0
for f in full/checkpoints/step-000000006/*.safetensors; do
	[ -f "$f" ] || fail "tp 4: no tensors in the step-6 checkpoint"
	cmp "$f" "stop/checkpoints/step-000000006/${f##*/}" ||
		fail "tp 4: ${f##*/} of step 6 differs after the resume"
	n=$((n + 1))
done
echo "ok: vocab 97 at tp 4, stop and resume, bit for bit ($n checkpoint files)"

"$DTRAIN" resume -q stop-on1 --set parallel.strategy=data \
	--set parallel.tensor_parallel=1 >/dev/null 2>on1.err ||
	{ cat on1.err >&2; fail "resume on 1 rank"; }
grep -q "resuming from .*step-000000003" on1.err || fail "on 1: not from 3"
# shellcheck disable=SC2086
mpi 2 "$DTRAIN" resume -q stop-tp2 $TP2 >/dev/null 2>tp2.err ||
	{ cat tp2.err >&2; fail "resume on tp 2"; }
grep -q "resuming from .*step-000000003" tp2.err || fail "tp 2: not from 3"
"$PYTHON" - <<'PY' || fail "the tp 4 checkpoint on 1 rank and tp 2: losses"
import json
def losses(d):
    return {l["step"]: l["loss"] for l in map(json.loads,
            open(d + "/metrics.jsonl")) if "loss" in l}
a = losses("full")
for d in ("stop-on1", "stop-tp2"):
    b = losses(d)
    after = sorted(s for s in b if s > 3)
    assert after == [4, 5, 6], (d, after)
    for s in after:
        assert abs(a[s] - b[s]) <= 1e-5 * abs(a[s]), (d, s, a[s], b[s])
print("ok: the tp 4 checkpoint on 1 rank and on tp 2: the losses of tp 4 "
      "(step 6: %r, %r, %r)" % (a[6], losses("stop-on1")[6],
                                losses("stop-tp2")[6]))
PY

# shellcheck disable=SC2086
mpi 1 "$DTRAIN" run -q --run-dir one "$J" $COMMON >/dev/null 2>one.err ||
	{ cat one.err >&2; fail "one rank"; }
compare_losses one full 1e-5 >/dev/null ||
	{ compare_losses one full 1e-5 || true; fail "tp 4: losses differ from one rank"; }
"$DTRAIN" eval --json full >e-full.json || fail "eval of the tp 4 checkpoint"
"$DTRAIN" eval --json one >e-one.json || fail "eval of the one-rank checkpoint"
"$PYTHON" - <<'PY' || fail "eval of the tp 4 checkpoint differs from one rank's"
import json
a, b = (json.load(open(f)) for f in ("e-one.json", "e-full.json"))
assert abs(a["loss"] - b["loss"]) <= 1e-5 * abs(a["loss"]), (a, b)
assert abs(a["accuracy"] - b["accuracy"]) <= 1e-5, (a, b)
print("ok: eval of the tp 4 checkpoint: one rank's (%r, %r)"
      % (a["loss"], b["loss"]))
PY
