#!/bin/sh
# SPDX-License-Identifier: MIT
# Threads get their cores. A rank whose affinity mask holds fewer CPUs
# than its threads warns, naming the rank, its CPUs and the fix under
# mpirun and srun: under taskset -c 0 with 2 threads (rank 0, CPU 0), and
# under mpirun --bind-to hwthread, which pins each of 2 ranks to one CPU
# (each names its own). With the whole mask, no warning. And `dtrain run
# -n 1` with 2 threads gives its rank 2 CPUs (mpirun alone would bind it
# to one): summary.json's cpus_rank0 is the whole mask, as
# /proc/self/status writes it. Needs 2 CPUs or more.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
unset OPENBLAS_NUM_THREADS
command -v taskset >/dev/null || { echo "SKIP: no taskset"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one CPU only"; exit 77; }
whole=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
first=${whole%%[-,]*}
write_small_job job.yaml
two="--set train.steps=2 --set parallel.blas_threads=2"
# cpus DIR: summary.json's cpus_rank0.
cpus() {
	"$PYTHON" -c 'import json, sys
print(json.load(open(sys.argv[1]))["cpus_rank0"])' "$1/summary.json"
}
# warns FILE RANK CPUS: FILE holds the warning of RANK on CPUS, with the
# fix under mpirun and srun.
warns() {
	grep "^dtrain: rank $2: 2 threads, but its CPU affinity allows 1 CPU (CPU $3)" "$1" |
		grep -e '--map-by slot:PE=2 --bind-to core' |
		grep -q -e '--cpus-per-task=2' ||
		{ cat "$1" >&2; fail "$1: no warning for rank $2 on CPU $3"; }
}
# quiet FILE: no affinity warning in FILE.
quiet() {
	if grep -q 'CPU affinity' "$1"; then
		cat "$1" >&2
		fail "$1: an affinity warning with the CPUs for the threads"
	fi
}

taskset -c "$first" "$DTRAIN" run --run-dir set $two job.yaml \
	>/dev/null 2>set.err || { cat set.err >&2; fail "the taskset run failed"; }
warns set.err 0 "$first"
[ "$(cpus set)" = "$first" ] || fail "taskset: cpus_rank0 $(cpus set), expected $first"

"$DTRAIN" run --run-dir all $two job.yaml >/dev/null 2>all.err ||
	{ cat all.err >&2; fail "the run failed"; }
quiet all.err
[ "$(cpus all)" = "$whole" ] || fail "whole mask: cpus_rank0 $(cpus all), expected $whole"

timeout 300 "$MPIRUN" -np 2 --bind-to hwthread "$DTRAIN" run --run-dir bound \
	$two job.yaml >/dev/null 2>bound.err ||
	{ cat bound.err >&2; fail "the run under mpirun --bind-to hwthread failed"; }
# on RANK: the CPU rank RANK's warning names.
on() {
	sed -n "s/^dtrain: rank $1: .* allows 1 CPU (CPU \([0-9]*\)).*/\1/p" bound.err
}
warns bound.err 0 "$(on 0)"
warns bound.err 1 "$(on 1)"
[ "$(on 0)" != "$(on 1)" ] || { cat bound.err >&2; fail "ranks 0 and 1 name the same CPU"; }
[ "$(grep -c 'CPU affinity' bound.err)" = 2 ] || { cat bound.err >&2; fail "expected one warning from each rank"; }

"$DTRAIN" run -n 1 --run-dir n1 $two job.yaml >/dev/null 2>n1.err ||
	{ cat n1.err >&2; fail "run -n 1 failed"; }
quiet n1.err
[ "$(cpus n1)" = "$whole" ] ||
	{ cat n1.err >&2; fail "run -n 1 with 2 threads: the rank may run on CPUs $(cpus n1), expected $whole"; }
echo "ok: taskset and --bind-to hwthread warn; run -n 1 gives its rank CPUs $whole"
