#!/bin/sh
# SPDX-License-Identifier: MIT
# The per-rank Chrome trace (DTRAIN_TRACE=1, dtrain(1) ENVIRONMENT): a
# 2-rank run of 6 steps writes RUN_DIR/trace-rank0.json and
# trace-rank1.json, each valid JSON ({"traceEvents": [...]}, complete
# "X" events with ts and dur in microseconds, pid the rank); one "step"
# event a step; every pass, bucket sum, wait and optimizer event of the
# main thread lies inside a step; and the "allreduce" events (one a
# bucket a step) number buckets x steps, the buckets worked out here
# from `dtrain plan --json` (its layers' parameters and bucket_bytes)
# by dtrain-job(5)'s rule: walking the tensors from the last one down, a
# bucket takes whole tensors until it holds bucket_bytes / 4 values or
# more. At parallel.bucket_mb 0.000004 (4 bytes: one value) every tensor
# is a bucket of its own: 4 for the two dense layers' weights and biases,
# 24 sums in 6 steps; at the default 25 MiB, 1 (6 sums). A run without
# DTRAIN_TRACE writes no trace. dtrain report links the traces.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
cat >job.yaml <<YAML
name: trace
seed: 5
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 64, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 32
  steps: 6
  optimizer: sgd
  lr: 0.05
log:
  every_steps: 3
eval:
  every_steps: 0
checkpoint:
  at_end: false
YAML
JSONPY=/usr/bin/python3
[ -x $JSONPY ] || JSONPY=$PYTHON

# check RUN_DIR BUCKET_MB: the traces of the run in RUN_DIR.
check() {
	"$DTRAIN" plan --dry-run --json -n 2 job.yaml \
		--set parallel.bucket_mb="$2" >"$1.plan" || fail "plan $2"
	$JSONPY - "$1" "$1.plan" 6 <<'PY' || fail "the trace of $1 is wrong"
import json, sys

run, plan, steps = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
# The tensors in arena order: a dense layer's weight, then its bias
# (units values of its params).
sizes = []
for l in plan["layers"]:
    if l["params"]:
        units = l["output_shape"][-1]
        sizes += [l["params"] - units, units]
cap = plan["communication_per_rank"]["bucket_bytes"] // 4
buckets, held = 0, 0
for s in reversed(sizes):
    held += s
    if held >= cap:
        buckets, held = buckets + 1, 0
buckets += held > 0
NESTED = ("forward", "compute", "allreduce", "sync", "optimizer",
          "MPI_Waitall", "MPI_Waitall (first)", "colls_lock")
for rank in (0, 1):
    path = "%s/trace-rank%d.json" % (run, rank)
    ev = json.load(open(path))["traceEvents"]
    for e in ev:
        assert e["ph"] == "X" and e["pid"] == rank and e["dur"] >= 0, (path, e)
    main = [e for e in ev if e["tid"] == 1]
    st = [e for e in main if e["name"] == "step"]
    assert [e["args"]["step"] for e in st] == list(range(steps)), (path, st)
    for e in main:
        if e["name"] in NESTED:
            assert any(s["ts"] <= e["ts"] + 0.002 and
                       e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 0.002
                       for s in st), (path, "outside every step", e)
    for name in ("forward", "compute", "sync", "optimizer"):
        assert sum(e["name"] == name for e in main) == steps, (path, name)
    n = sum(e["name"] == "allreduce" for e in ev)
    assert n == buckets * steps, (path, n, buckets, steps)
    print("%s: %d events, %d all-reduce = %d buckets x %d steps"
          % (path, len(ev), n, buckets, steps))
PY
}
for mb in 0.000004 25; do
	DTRAIN_TRACE=1 mpi 2 -x DTRAIN_TRACE "$DTRAIN" run -q --run-dir "r$mb" \
		job.yaml --set parallel.bucket_mb=$mb >/dev/null 2>"r$mb.err" ||
		{ cat "r$mb.err" >&2; fail "the traced run (bucket_mb $mb) failed"; }
	check "r$mb" $mb
done
mpi 2 "$DTRAIN" run -q --run-dir plain job.yaml >/dev/null 2>plain.err ||
	{ cat plain.err >&2; fail "the untraced run failed"; }
! ls plain/trace-rank* >/dev/null 2>&1 || fail "a run without DTRAIN_TRACE wrote a trace"
"$DTRAIN" report r25 >report.out 2>&1 || { cat report.out >&2; fail "report"; }
grep -q '<a href="trace-rank0.json">' r25/report.html &&
	grep -q '<a href="trace-rank1.json">' r25/report.html ||
	fail "dtrain report does not link the traces"
"$DTRAIN" report plain >/dev/null 2>&1 || fail "report plain"
! grep -q 'trace-rank' plain/report.html || fail "dtrain report links traces that do not exist"

echo "trace: ok"
