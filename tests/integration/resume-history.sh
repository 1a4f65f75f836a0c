#!/bin/sh
# SPDX-License-Identifier: MIT
# A run's history is never silently started over (issue 31). A step-N
# entry that is a symbolic link is never followed, and is named with the
# reason; a resume of a run that has trained (metrics.jsonl with steps,
# summary.json) and has no usable checkpoint is refused, naming every
# candidate and why it was skipped, and leaves metrics.jsonl as it was
# (exit 1 when candidates failed, 2 when there is none); --start-over
# starts it from step 0 all the same, and is refused where a usable
# checkpoint exists. Before, the link was skipped without a word and the
# resume said "no checkpoint; starting from the beginning", exited 0 and
# rewrote metrics.jsonl and summary.json.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_tiny_job tiny.yaml
printf 'checkpoint: {every_steps: 1}\nlog: {every_steps: 1}\n' >>tiny.yaml
sed -i 's/steps: 1,/steps: 3,/' tiny.yaml
"$DTRAIN" run -q --run-dir r tiny.yaml >/dev/null 2>r.err ||
	{ cat r.err >&2; fail "the first run failed"; }
mkdir kept
rm -rf r/checkpoints/step-000000001
mv r/checkpoints/step-000000002 kept/
mv r/checkpoints/step-000000003 kept/
ln -s "$SCRATCH/kept/step-000000003" r/checkpoints/step-000000003
cp r/metrics.jsonl before.jsonl
cp r/summary.json before.json
expect_fail 1 "r: the run has trained \\(metrics.jsonl to step 3, summary.json\\) but .*resume --start-over r" \
	"$DTRAIN" resume -q --set train.steps=5 r
grep -q "warning: r/checkpoints/step-000000003: a symbolic link (to $SCRATCH/kept/step-000000003), not followed" err ||
	{ cat err >&2; fail "the symbolic link is not named with its reason"; }
cmp -s before.jsonl r/metrics.jsonl || fail "a refused resume rewrote metrics.jsonl"
cmp -s before.json r/summary.json || fail "a refused resume rewrote summary.json"

# No candidate at all: refused with exit 2.
rm r/checkpoints/step-000000003
expect_fail 2 "r: the run has trained \\(metrics.jsonl to step 3, summary.json\\) but r/checkpoints holds no checkpoint; .*--start-over r" \
	"$DTRAIN" resume -q --set train.steps=5 r
cmp -s before.jsonl r/metrics.jsonl || fail "a refused resume rewrote metrics.jsonl"

# --start-over: from step 0, metrics.jsonl written anew (5 lines, steps
# 1 to 5), the same parameters as a fresh run of 5 steps.
"$DTRAIN" resume -q --start-over --set train.steps=5 r >/dev/null 2>so.err ||
	{ cat so.err >&2; fail "resume --start-over failed"; }
grep -q "holds no checkpoint; starting from the beginning (--start-over)" so.err ||
	{ cat so.err >&2; fail "--start-over did not say it starts over"; }
steps=$("$PYTHON" -c '
import json, sys
print(" ".join(str(json.loads(l)["step"]) for l in open(sys.argv[1]) if "\"loss\"" in l))' r/metrics.jsonl)
[ "$steps" = "1 2 3 4 5" ] || fail "metrics.jsonl after --start-over: steps $steps"
sed 's/steps: 3,/steps: 5,/' tiny.yaml >five.yaml
"$DTRAIN" run -q --run-dir fresh five.yaml >/dev/null 2>fresh.err ||
	{ cat fresh.err >&2; fail "the fresh run failed"; }
export_of r r.st
export_of fresh fresh.st
cmp -s r.st fresh.st || fail "--start-over did not train as a fresh run does"

# A usable checkpoint: --start-over is refused, nothing written.
cp r/metrics.jsonl before.jsonl
expect_fail 2 "r: --start-over is for a run with no usable checkpoint, and r/checkpoints/step-000000005 is one" \
	"$DTRAIN" resume -q --start-over --set train.steps=7 r
cmp -s before.jsonl r/metrics.jsonl || fail "a refused --start-over rewrote metrics.jsonl"
echo "symbolic link named; history without a checkpoint refused (exit 1, 2); --start-over trains from step 0"
