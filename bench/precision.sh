#!/bin/sh
# SPDX-License-Identifier: MIT
# precision.sh - train.precision f32 against bf16 on the shipped jobs:
# samples/s (and tokens/s for char-GPT: x 64) and the eval loss and
# accuracy at the end of the same short run, one table.
#
#   bench/precision.sh [DTRAIN [JOBS_DIR [THREADS [SCALE]]]]
#
# Each job runs at f32 then bf16, on one rank with parallel.blas_threads
# THREADS (default 1), for its steps below times SCALE (default 1): the
# MLP 600 steps, the CNN 150, char-GPT 300 (warmup 30); eval once, on its
# whole held-out set, at the end. samples/s is the run's own figure
# (summary.json: wall clock of the steps), so a loaded machine lowers
# both columns; per_cpu_s is the samples over the whole process's CPU
# time (user + system, start and evaluation included), which a load
# moves far less at one thread. Refused bf16 (a CPU without AVX512_BF16 or AMX) prints
# the refusal and stops.
set -eu
DTRAIN=${1:-./dtrain}
JOBS=${2:-jobs}
THREADS=${3:-1}
SCALE=${4:-1}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/precision.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# field RUN KEY: KEY of RUN's summary.json.
field() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
		"$1/summary.json" "$2"
}

# run JOB STEPS PREC [--set ...]: one run, its summary's figures.
run() {
	job=$1 steps=$2 prec=$3
	shift 3
	d="$TMP/$job-$prec"
	/usr/bin/time -f '%U %S' -o "$TMP/time" \
		"$DTRAIN" run -q --run-dir "$d" --set train.steps="$steps" \
		--set train.precision="$prec" \
		--set parallel.blas_threads="$THREADS" \
		--set eval.every_steps=0 --set checkpoint.at_end=false \
		"$@" "$JOBS/$job.yaml" >/dev/null
	cpu=$(awk '{ print $1 + $2 }' "$TMP/time")
	printf '%-18s %-5s %9.1f %9.1f %10.4f %9.4f\n' "$job" "$prec" \
		"$(field "$d" samples_per_s)" \
		"$(echo "$(field "$d" samples) $cpu" | awk '{ print $1 / $2 }')" \
		"$(field "$d" eval_loss)" "$(field "$d" eval_accuracy)"
}

"$DTRAIN" plan --set train.precision=bf16 "$JOBS/fashion-mnist-mlp.yaml" \
	>/dev/null || exit 1
echo "threads $THREADS; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
printf '%-18s %-5s %9s %9s %10s %9s\n' job prec samples/s per_cpu_s \
	eval_loss accuracy
for spec in "fashion-mnist-mlp 600" "fashion-mnist-cnn 150" "char-gpt 300"; do
	set -- $spec
	job=$1 steps=$(($2 * SCALE))
	extra=""
	[ "$job" = char-gpt ] && extra="--set train.schedule.warmup_steps=30"
	for prec in f32 bf16; do
		# shellcheck disable=SC2086
		run "$job" "$steps" "$prec" $extra
	done
done
