#!/bin/sh
# SPDX-License-Identifier: MIT
# Parameter-server data parallelism in whole runs: sync mode with 1 and 2
# servers gives the all-reduce losses (same global batch, same number of
# workers) to 1e-5 relative over 30 steps; async with max_staleness 0
# equals sync; async with a bound of 4 and one worker slowed down applies
# no gradient staler than 4; a sync run stopped and resumed ends with the
# parameters of the uninterrupted one.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job job.yaml
sed -i 's/steps: 20/steps: 30/' job.yaml
PS="--set parallel.sync=parameter_server"
mpi 3 "$DTRAIN" run -q --run-dir ar job.yaml >/dev/null
mpi 4 "$DTRAIN" run -q --run-dir s1 $PS --set parallel.servers=1 job.yaml >/dev/null
mpi 5 "$DTRAIN" run -q --run-dir s2 $PS --set parallel.servers=2 job.yaml >/dev/null
compare_losses ar s1 1e-5
compare_losses ar s2 1e-5
mpi 4 "$DTRAIN" run -q --run-dir a0 $PS --set parallel.servers=1 \
	--set parallel.mode=async --set parallel.max_staleness=0 job.yaml >/dev/null
losses s1 >l.s1
losses a0 >l.a0
cmp l.s1 l.a0 || fail "async with max_staleness 0 differs from sync"
grep -q '"ps_mode": "sync"' s1/summary.json || fail "summary lacks ps_mode"

# One worker 20 ms slower per step; the bound holds.
DTRAIN_TEST_DELAY_MS=20 DTRAIN_TEST_DELAY_RANK=1 mpi 4 \
	-x DTRAIN_TEST_DELAY_MS -x DTRAIN_TEST_DELAY_RANK \
	"$DTRAIN" run -q --run-dir a4 $PS --set parallel.servers=1 \
	--set parallel.mode=async --set parallel.max_staleness=4 \
	--set train.steps=60 --set log.every_steps=20 job.yaml >/dev/null
"$PYTHON" - a4 <<'PY'
import json, sys
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
h = s["staleness_histogram"]
assert len(h) == 6 and h[-1] == 0, h
assert sum(h) == 60 * 3, (sum(h), h)
for l in open(d + "/metrics.jsonl"):
    o = json.loads(l)
    if "staleness_max" in o:
        assert o["staleness_max"] <= 4, o
print("async staleness histogram", h)
PY

# Exact resume in sync mode.
write_ckpt_job ck.yaml 60
mpi 3 "$DTRAIN" run -q --run-dir full $PS ck.yaml >/dev/null
export_of full full.st
DTRAIN_TEST_SIGNAL_AT_STEP=37 mpi 3 -x DTRAIN_TEST_SIGNAL_AT_STEP \
	"$DTRAIN" run -q --run-dir part $PS ck.yaml >/dev/null 2>&1 ||
	[ $? -eq 3 ] || fail "stopped ps run"
mpi 3 "$DTRAIN" resume -q part >/dev/null 2>part.err
grep -q 'resuming from .*step 37' part.err || { cat part.err >&2; fail "no resume"; }
export_of part part.st
cmp full.st part.st || fail "parameter-server resume differs"
# No worker left: refused before anything runs.
expect_fail 2 'parameter servers leave no worker' \
	mpi 2 "$DTRAIN" run $PS --set parallel.servers=2 job.yaml
