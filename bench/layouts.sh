#!/bin/sh
# SPDX-License-Identifier: MIT
# layouts.sh DTRAIN JOB GLOBAL_BATCH [STEPS]: samples/s of JOB on 2 ranks x
# 1 BLAS thread in each 2-rank layout (data-parallel, pipeline with GPipe
# and 1F1B, tensor-parallel), next to 1 rank, with micro-batches of a
# quarter of GLOBAL_BATCH (4 per step on 1 rank and through the pipeline,
# 2 per rank with data parallelism),
# with the bubble the plan predicts and the bytes each run counted per
# step (summary.json; the same numbers as `dtrain plan`). The shortfall of
# a layout from the data-parallel rate is what its communication and idle
# stages cost on this machine. Prints; asserts nothing.
set -eu
dtrain=$1 job=$2 global=$3 steps=${4:-100}
micro=$((global / 4))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
common="--set train.steps=$steps --set train.schedule.warmup_steps=1 --set eval.every_steps=0 --set checkpoint.at_end=false --set train.global_batch=$global --set train.micro_batch=$micro"

rate() {
	sed -n 's/.*"samples_per_s": \([0-9.e+]*\).*/\1/p' "$1/summary.json"
}

# bytes RUN: point-to-point, gradient and tensor all-reduce bytes per step
# of rank 0, in KiB.
bytes() {
	python3 - "$1/summary.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))["bytes_per_step"][0]
print("p2p %.0f KiB, grad %.0f KiB, tp %.0f KiB" % (b["p2p_bytes"] / 1024,
      b["grad_allreduce_bytes"] / 1024, b["tp_allreduce_bytes"] / 1024))
PY
}

"$dtrain" run -q --run-dir "$tmp/np1" $common \
	--set train.grad_accum_steps=4 "$job" >/dev/null
r1=$(rate "$tmp/np1")
printf "%-22s %8.0f samples/s\n" "1 rank" "$r1"
k4="--set train.grad_accum_steps=4"
for layout in "dp2:--set parallel.strategy=data --set train.grad_accum_steps=2" \
	"pp2 gpipe:--set parallel.strategy=model --set parallel.pipeline_parallel=2 $k4" \
	"pp2 1f1b:--set parallel.strategy=model --set parallel.pipeline_parallel=2 --set parallel.schedule=1f1b $k4" \
	"tp2:--set parallel.strategy=model --set parallel.tensor_parallel=2 $k4"; do
	name=${layout%%:*}
	flags=${layout#*:}
	d="$tmp/$(echo "$name" | tr ' ' _)"
	mpirun -np 2 --bind-to core "$dtrain" run -q --run-dir "$d" $common \
		$flags "$job" >/dev/null
	bubble=$("$dtrain" plan --dry-run --json -n 2 $common $flags "$job" |
		 python3 -c 'import json, sys; print("%.0f%%" % (100 * json.load(sys.stdin)["grid"]["bubble_fraction"]))')
	printf "%-22s %8.0f samples/s  %.2fx of 1 rank  bubble %4s  %s\n" \
		"2 ranks $name" "$(rate "$d")" \
		"$(awk -v a="$r1" -v b="$(rate "$d")" 'BEGIN { print b / a }')" \
		"$bubble" "$(bytes "$d")"
done
