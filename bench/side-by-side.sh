#!/bin/sh
# SPDX-License-Identifier: MIT
# side-by-side.sh DTRAIN SGEMM_PEAK [REPS [PEAK]]: the three shipped jobs
# trained by dtrain and by their PyTorch twins (bench/torch_twin.py), side
# by side.
#
# For jobs/fashion-mnist-mlp.yaml, jobs/fashion-mnist-cnn.yaml and
# jobs/char-gpt.yaml, each at 1 thread (parallel.blas_threads=1: one BLAS
# thread and a pool of one), 2 threads (2 and 2) and 2 ranks (mpirun -np 2,
# one thread each), it prints dtrain's samples/s, its model FLOPs (the
# plan's flops_per_sample from dtrain plan --json: 3x the forward's, each
# product 2 FLOPs a multiply-add) as a share of the sgemm peak measured in
# this run (square 1024 products on 1 and 2 BLAS threads; 2 ranks against
# twice the one-thread peak) and, as the MFU, of the f32 limit measured in
# this run (bench/peak --f32: the widest float32 multiply-add loop on
# registers alone, on 1 and 2 threads; 2 ranks against the 2-thread
# limit; PEAK, default bench/peak beside SGEMM_PEAK; without it that
# column is left out), and, where python3-torch is
# installed, the twin's samples/s on the same thread count and the ratio.
# The twin's 2 ranks are two processes of one thread each on half the
# batch, their rates added, with no gradient all-reduce: an upper bound for
# DistributedDataParallel, so the ratio there is the least dtrain leads by.
#
# Each figure is the median of REPS (default 3) runs, dtrain and the twin
# interleaved; a dtrain run's rate is the median of its logged windows
# after the first (which holds the warm-up), so the final evaluation and
# start-up do not count; the twin times its steps after 3 warm-up steps.
# A run is about BENCH_SECONDS (default 8) seconds on an idle 2-core
# machine; the whole script about 5 minutes. BENCH_JOBS (default "mlp cnn
# gpt") picks the jobs, and BENCH_TORCH=no leaves the twins out (to
# measure another dtrain build against the same twins). Prints; asserts
# nothing.
set -eu
dtrain=$1 peak=$2 reps=${3:-3}
fma=${4:-$(dirname "$peak")/peak}
secs=${BENCH_SECONDS:-8}
bench_jobs=${BENCH_JOBS:-mlp cnn gpt}
here=$(cd "$(dirname "$0")" && pwd)
jobs=$here/../jobs
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset OPENBLAS_NUM_THREADS OMP_NUM_THREADS
export OMPI_MCA_rmaps_base_oversubscribe=1

if [ "${BENCH_TORCH:-yes}" = no ]; then
	torch=no
elif $python -c 'import torch' 2>/dev/null; then
	torch=yes
else
	torch=no
	echo "python3-torch is not installed: no PyTorch column" \
		"(apt-get install python3-torch)"
fi

# job name: file, global batch, micro-batch, steps of about $secs s at one
# thread, log window in steps
spec() {
	case $1 in
	mlp) echo "fashion-mnist-mlp 96 96 $((360 * secs)) $((36 * secs))" ;;
	cnn) echo "fashion-mnist-cnn 128 128 $((15 * secs)) $((2 * secs))" ;;
	gpt) echo "char-gpt 32 8 $((7 * secs + 3)) $((secs))" ;;
	esac
}

# median of the numbers on standard input
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
		else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# run_dtrain JOB CONFIG: one dtrain run; prints the median of its logged
# rates after the first window.
run_dtrain() {
	set -- "$1" "$2" $(spec "$1")
	job=$1 config=$2 file=$3 steps=$6 window=$7
	d=$tmp/run
	rm -rf "$d"
	common="--set train.steps=$steps --set log.every_steps=$window --set eval.every_steps=0 --set checkpoint.at_end=false --set train.schedule.warmup_steps=1"
	case $config in
	1t) "$dtrain" run -q --run-dir "$d" $common \
		--set parallel.blas_threads=1 "$jobs/$file.yaml" >/dev/null ;;
	2t) "$dtrain" run -q --run-dir "$d" $common \
		--set parallel.blas_threads=2 "$jobs/$file.yaml" >/dev/null ;;
	2r) mpirun -np 2 --bind-to none "$dtrain" run -q --run-dir "$d" \
		$common --set parallel.blas_threads=1 "$jobs/$file.yaml" \
		>/dev/null ;;
	esac
	sed -n 's/.*"samples_per_s":\([0-9.e+]*\).*/\1/p' "$d/metrics.jsonl" |
		sed 1d | median
}

# run_torch JOB CONFIG: one twin run's samples/s.
run_torch() {
	set -- "$1" "$2" $(spec "$1")
	job=$1 config=$2 global=$4 micro=$5
	case $config in
	1t) $python "$here/torch_twin.py" "$job" 1 "$global" "$micro" "$secs" ;;
	2t) $python "$here/torch_twin.py" "$job" 2 "$global" "$micro" "$secs" ;;
	2r) half=$((global / 2))
	    m=$((micro < half ? micro : half))
	    $python "$here/torch_twin.py" "$job" 1 "$half" "$m" "$secs" \
		>"$tmp/r0" &
	    $python "$here/torch_twin.py" "$job" 1 "$half" "$m" "$secs" \
		>"$tmp/r1"
	    wait
	    awk '{ s += $1 } END { printf "%.1f\n", s }' "$tmp/r0" "$tmp/r1" ;;
	esac
}

peak1=$("$peak" 1 2)
peak2=$("$peak" 2 2)
echo "sgemm 1024^3: $peak1 GFLOP/s on 1 thread, $peak2 on 2 (medians)"
if [ -x "$fma" ]; then
	"$fma"
	lim1=$("$fma" --f32 1) lim2=$("$fma" --f32 2)
	echo "f32 limit: $lim1 GFLOP/s on 1 thread, $lim2 on 2 (best of 7)"
else
	lim1=- lim2=-
	echo "$fma is not there: no MFU against the f32 limit"
fi
uptime | sed 's/.*load/load/'

for rep in $(seq "$reps"); do
	for job in $bench_jobs; do
		for config in 1t 2t 2r; do
			run_dtrain $job $config >>"$tmp/d-$job-$config"
			[ $torch = no ] ||
				run_torch $job $config >>"$tmp/t-$job-$config"
		done
	done
done

printf "\n%-10s %-10s %10s %7s %7s %10s %7s\n" job config "dtrain/s" \
	"sgemm" "MFU" "torch/s" "ratio"
for job in $bench_jobs; do
	set -- $(spec $job)
	flops=$("$dtrain" plan --dry-run --json "$jobs/$1.yaml" |
		$python -c 'import json, sys; print(json.load(sys.stdin)["flops_per_sample"])')
	for config in 1t 2t 2r; do
		d=$(median <"$tmp/d-$job-$config")
		case $config in
		1t) p=$peak1 l=$lim1 name="1 thread" ;;
		2t) p=$peak2 l=$lim2 name="2 threads" ;;
		2r) p=$(echo "$peak1" | awk '{ print 2 * $1 }') l=$lim2
		    name="2 ranks" ;;
		esac
		share=$(echo "$d $flops $p" |
			awk '{ printf "%.0f%%", 100 * $1 * $2 / ($3 * 1e9) }')
		mfu=-
		[ "$l" = - ] || mfu=$(echo "$d $flops $l" |
			awk '{ printf "%.0f%%", 100 * $1 * $2 / ($3 * 1e9) }')
		if [ $torch = yes ]; then
			t=$(median <"$tmp/t-$job-$config")
			r=$(echo "$d $t" | awk '{ printf "%.2fx", $1 / $2 }')
		else
			t=- r=-
		fi
		printf "%-10s %-10s %10.0f %7s %7s %10s %7s\n" $job "$name" \
			"$d" "$share" "$mfu" "$t" "$r"
	done
done
printf "\n(medians of %s interleaved runs; dtrain threads = BLAS threads" "$reps"
printf " = pool threads per rank)\n"
uptime | sed 's/.*load/load/'
