#!/bin/sh
# SPDX-License-Identifier: MIT
# The default thread count (BLAS threads and the rank's own pool, one
# knob) counts the CPUs the process may run on, not the node's online
# CPUs: under `taskset -c 0` a single process runs 1 thread, said on the
# run's first line and in plan.json; with the whole mask it runs as many
# as nproc(1) counts (which reads the same mask).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
unset OPENBLAS_NUM_THREADS
command -v taskset >/dev/null || { echo "SKIP: no taskset"; exit 77; }
all=$(nproc)
[ "$all" -ge 2 ] || { echo "SKIP: one CPU only; nothing to restrict"; exit 77; }
write_small_job job.yaml
# threads FILE: the N of "N BLAS thread(s)" on the run's first line.
threads() {
	head -n 1 "$1" | sed -n 's/.* x \([0-9]*\) BLAS threads*,.*/\1/p'
}
plan_threads() {
	"$PYTHON" -c 'import json, sys
print(json.load(open(sys.argv[1]))["grid"]["blas_threads_per_rank"])' "$1/plan.json"
}
taskset -c 0 "$DTRAIN" run --run-dir one --set train.steps=2 job.yaml \
	>/dev/null 2>one.err || { cat one.err >&2; fail "the taskset run failed"; }
n=$(threads one.err)
[ "$n" = 1 ] || { cat one.err >&2; fail "taskset -c 0: $n threads announced, expected 1"; }
[ "$(plan_threads one)" = 1 ] || fail "taskset -c 0: plan.json says $(plan_threads one) threads"
"$DTRAIN" run --run-dir all --set train.steps=2 job.yaml \
	>/dev/null 2>all.err || { cat all.err >&2; fail "the run failed"; }
n=$(threads all.err)
[ "$n" = "$all" ] || { cat all.err >&2; fail "whole mask: $n threads announced, expected $all"; }
[ "$(plan_threads all)" = "$all" ] || fail "whole mask: plan.json says $(plan_threads all) threads"
echo "ok: taskset -c 0 runs 1 thread, the whole mask $all"
