#!/bin/sh
# SPDX-License-Identifier: MIT
# sync-overhead.sh DTRAIN JOB [--set KEY=VALUE ...]: samples/s of the job
# for a few hundred steps at 1 rank x 1 thread and 2 ranks x 1 thread; the
# shortfall of the 2-rank rate from twice the 1-rank rate is the cost of
# the gradient all-reduce (and of sharing the machine). The --set options
# (parallel.overlap, parallel.bucket_mb, parallel.grad_wire) go to both
# runs. Prints; asserts nothing.
set -eu
dtrain=$1 job=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
"$dtrain" run -q --run-dir "$tmp/np1" --set train.steps=400 \
	--set eval.every_steps=0 "$@" "$job" >/dev/null
mpirun -np 2 --bind-to core "$dtrain" run -q --run-dir "$tmp/np2" \
	--set train.steps=400 --set eval.every_steps=0 "$@" "$job" >/dev/null
r1=$(sed -n 's/.*"samples_per_s": \([0-9.e+]*\).*/\1/p' "$tmp/np1/summary.json")
r2=$(sed -n 's/.*"samples_per_s": \([0-9.e+]*\).*/\1/p' "$tmp/np2/summary.json")
awk -v a="$r1" -v b="$r2" 'BEGIN {
	printf "data-parallel   1 rank %.0f samples/s, 2 ranks %.0f samples/s\n", a, b
	printf "scaling         %.2fx of ideal 2x (sync + contention overhead %.1f%%)\n", b / a, 100 * (1 - b / (2 * a))
}'
