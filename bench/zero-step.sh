#!/bin/sh
# SPDX-License-Identifier: MIT
# zero-step.sh - a zero-3 step against a zero-0 step on one host (issue
# 27: within 1.2 x).
#
#   bench/zero-step.sh DTRAIN JOB GLOBAL_BATCH [STEPS [PAIRS [RANKS]]]
#
# JOB on RANKS (default 4) ranks of one BLAS thread on this host
# (--oversubscribe where the cores are fewer), micro-batches of
# GLOBAL_BATCH / RANKS (one a rank and step), STEPS optimizer steps
# (default 40) logged every 5, no evaluation during the run, no
# checkpoint, and
# parallel.overlap false for both levels (zero 2 and 3 reduce-scatter
# after the last backward, so they cannot overlap; zero 0 is measured the
# same way so that the ratio is of the sharding alone). PAIRS (default 3)
# pairs of runs, zero 0 and zero 3, alternating which goes first, so
# that other work on the machine weighs on both alike. Each run's step
# time is the median over its logged intervals after the first of
# GLOBAL_BATCH / samples_per_s; the pair's ratio is zero 3's over zero
# 0's, and the verdict (PASS at most 1.2) is on the median ratio. Also
# prints rank 0's median breakdown per step (compute, communication
# wait, optimizer; metrics.jsonl), where the difference goes, and the
# machine's load (uptime) before and after. ZERO3_ARGS (default none)
# adds settings to the zero-3 runs (say --set parallel.gather_mb=4).
# Asserts nothing but exits non-zero if a run fails.
set -eu
if [ $# -lt 3 ] || [ $# -gt 6 ]; then
	echo "usage: bench/zero-step.sh DTRAIN JOB GLOBAL_BATCH [STEPS [PAIRS [RANKS]]]" >&2
	exit 2
fi
dtrain=$1 job=$2 global=$3 steps=${4:-40} pairs=${5:-3} ranks=${6:-4}
micro=$((global / ranks))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 \
	OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
common="--set train.steps=$steps --set train.schedule.warmup_steps=1 --set eval.every_steps=0 --set checkpoint.at_end=false --set log.every_steps=5 --set train.global_batch=$global --set train.micro_batch=$micro --set parallel.overlap=false --set parallel.blas_threads=1"

# run ZERO DIR: one run; prints "step_ms compute_ms comm_ms optim_ms",
# each the median per step over the intervals after the first.
run() {
	# shellcheck disable=SC2046,SC2086
	mpirun -np "$ranks" --oversubscribe --bind-to none "$dtrain" run -q \
		--run-dir "$2" $common --set parallel.zero="$1" \
		$([ "$1" = 3 ] && echo "${ZERO3_ARGS:-}") "$job" \
		>"$2.out" 2>&1 || { cat "$2.out" >&2; exit 1; }
	python3 - "$2/metrics.jsonl" "$global" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
lines = [l for l in lines if "samples_per_s" in l][1:]
assert lines, "no logged interval after the first"
g = float(sys.argv[2])
prev = None
step, comp, comm, opt = [], [], [], []
for l in lines:
    step.append(1000 * g / l["samples_per_s"])
    b = l["breakdown"]
    # The breakdown covers the interval (log.every_steps steps).
    comp.append(1000 * b["compute_s"] / 5)
    comm.append(1000 * b["comm_wait_s"] / 5)
    opt.append(1000 * b["optim_s"] / 5)
print(" ".join("%.2f" % statistics.median(x) for x in (step, comp, comm, opt)))
PY
}

echo "$(basename "$job"): $ranks ranks on $(nproc) cores, global batch $global, micro-batch $micro, $steps steps, overlap off${ZERO3_ARGS:+; zero 3 with $ZERO3_ARGS}"
echo "load before: $(uptime)"
printf "%-6s %-6s %9s %10s %9s %9s\n" pair level "step ms" "compute" "comm wait" "optim"
ratios=
i=1
while [ "$i" -le "$pairs" ]; do
	order="0 3"
	[ $((i % 2)) -eq 1 ] || order="3 0"
	for z in $order; do
		# shellcheck disable=SC2046
		set -- $(run "$z" "$tmp/p$i-z$z")
		[ $# -eq 4 ] || exit 1
		eval "t$z=$1"
		printf "%-6s %-6s %9s %10s %9s %9s\n" "$i" "zero $z" "$1" "$2" "$3" "$4"
	done
	# shellcheck disable=SC2154
	r=$(awk -v a="$t0" -v b="$t3" 'BEGIN { printf "%.3f", b / a }')
	echo "pair $i: zero 3 / zero 0 = $r"
	ratios="$ratios $r"
	i=$((i + 1))
done
echo "load after: $(uptime)"
# shellcheck disable=SC2086
med=$(printf "%s\n" $ratios | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
verdict=FAIL
[ "$(awk -v m="$med" 'BEGIN { print (m <= 1.2) }')" = 1 ] && verdict=PASS
echo "median zero 3 / zero 0 step time: $med ($verdict at <= 1.2)"
