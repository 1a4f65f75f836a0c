#!/bin/sh
# SPDX-License-Identifier: MIT
# np1.sh DTRAIN [JOB] [STEPS] [PAIRS]: samples/s of JOB (default
# jobs/char-gpt.yaml) at parallel.blas_threads=2 run by dtrain itself
# (no -n) and under `dtrain run -n 1` (mpirun starts the one rank, with
# the mapping the launcher chooses), STEPS steps each (default 150),
# evaluation and checkpoints off, in PAIRS pairs (default 3) that
# alternate which run goes first (ABBA), so that a shared machine's drift
# in load falls on both sides alike. Issue 28 asks the -n 1 run to be
# within 5% of the plain one. The rate is the run's own (summary.json,
# samples over the training loop's wall time), so mpirun's start-up does
# not count. Prints each pair, the ratio -n 1 / plain, their median,
# whether it is within 5% and whether -n 1 is more than 5% slower, the
# CPUs each run's rank held (summary.json cpus_rank0) and any affinity
# warning the rank gave. Asserts nothing; exits non-zero when a run
# fails. NP1_MPI_ARGS, when set, goes to the
# -n 1 runs as --mpi-args: NP1_MPI_ARGS="--bind-to core" gives the rank
# Open MPI's own one-core binding, as before issue 28's fix.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dtrain=$1
job=${2:-$here/../jobs/char-gpt.yaml}
steps=${3:-150}
pairs=${4:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# OPENBLAS_NUM_THREADS would win over parallel.blas_threads.
unset OPENBLAS_NUM_THREADS OMP_NUM_THREADS
common="--set train.steps=$steps --set train.schedule.warmup_steps=1
	--set eval.every_steps=0 --set checkpoint.at_end=false
	--set checkpoint.every_steps=0 --set checkpoint.every_seconds=0
	--set parallel.blas_threads=2"

# field DIR NAME: a top-level number or string of DIR/summary.json.
field() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
		"$1/summary.json" "$2"
}

# one KIND DIR: run the job plainly (KIND plain) or under -n 1 (KIND n1)
# into DIR; its stderr is kept in DIR.err.
one() {
	if [ "$1" = plain ]; then
		set --  "$2"
	else
		set -- "$2" -n 1 ${NP1_MPI_ARGS:+--mpi-args "$NP1_MPI_ARGS"}
	fi
	d=$1
	shift
	# shellcheck disable=SC2086
	if ! "$dtrain" run -q "$@" --run-dir "$d" $common "$job" \
	    >"$d.out" 2>"$d.err"; then
		echo "np1.sh: dtrain run $* failed:" >&2
		cat "$d.err" >&2
		exit 1
	fi
}

echo "np1.sh: $(basename "$job"), $steps steps, parallel.blas_threads=2," \
	"$(nproc) CPUs${NP1_MPI_ARGS:+, -n 1 with --mpi-args \"$NP1_MPI_ARGS\"};" \
	"load average$(uptime | sed 's/.*load average//')"
ratios=""
i=1
while [ "$i" -le "$pairs" ]; do
	if [ $((i % 2)) -eq 1 ]; then
		one plain "$tmp/p$i"
		one n1 "$tmp/n$i"
	else
		one n1 "$tmp/n$i"
		one plain "$tmp/p$i"
	fi
	p=$(field "$tmp/p$i" samples_per_s)
	n=$(field "$tmp/n$i" samples_per_s)
	r=$(awk -v a="$p" -v b="$n" 'BEGIN { printf "%.3f", b / a }')
	ratios="$ratios $r"
	printf "pair %d: plain %7.1f samples/s (CPUs %s)  -n 1 %7.1f" \
		"$i" "$p" "$(field "$tmp/p$i" cpus_rank0)" "$n"
	printf " (CPUs %s)  ratio %s\n" "$(field "$tmp/n$i" cpus_rank0)" "$r"
	for f in "$tmp/p$i.err" "$tmp/n$i.err"; do
		grep -i "affinity" "$f" | sed 's/^/  /' || true
	done
	i=$((i + 1))
done
med=$(echo "$ratios" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '
	{ v[NR] = $1 }
	END { if (NR % 2) print v[(NR + 1) / 2]
	      else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
ok=$(awk -v m="$med" 'BEGIN { print (m >= 0.95 && m <= 1.05) ? "yes" : "no" }')
slow=$(awk -v m="$med" 'BEGIN { print (m < 0.95) ? "yes" : "no" }')
echo "median ratio -n 1 / plain: $med; within 5%: $ok;" \
	"-n 1 more than 5% slower: $slow;" \
	"load average$(uptime | sed 's/.*load average//')"
