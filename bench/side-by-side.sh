#!/bin/sh
# SPDX-License-Identifier: MIT
# side-by-side.sh DTRAIN SGEMM_PEAK [REPS [PEAK]]: the three shipped jobs
# and the GPT-2-shaped job trained by dtrain and by their PyTorch twins
# (bench/torch_twin.py), side by side, in f32 and in bf16.
#
# For jobs/fashion-mnist-mlp.yaml (mlp), jobs/fashion-mnist-cnn.yaml
# (cnn), jobs/char-gpt.yaml (gpt) and bench/gpt2-small-untied.yaml at a
# context of 64 tokens and a batch of 4 in micro-batches of 2 (gpt2, issue
# 28's B 4, T 64), each
# at 1 thread (parallel.blas_threads=1: one BLAS thread and a pool of
# one), 2 threads (2 and 2) and 2 ranks (mpirun -np 2, one thread each),
# and in each precision of BENCH_PRECISION (default "f32 bf16": dtrain
# with train.precision f32 and bf16, the twin in float and under
# torch.autocast("cpu", dtype=torch.bfloat16)), it prints dtrain's
# samples/s, its model FLOPs (the plan's flops_per_sample from dtrain plan
# --json: 3x the forward's, each product 2 FLOPs a multiply-add) as a
# share of the sgemm peak measured in this run (square 1024 products on 1
# and 2 BLAS threads; 2 ranks against twice the one-thread peak) and, as
# the MFU, of the f32 limit measured in this run (bench/peak --f32: the
# widest float32 multiply-add loop on registers alone, on 1 and 2
# threads; 2 ranks against the 2-thread limit; PEAK, default bench/peak
# beside SGEMM_PEAK; without it that column is left out), bf16 rows
# against the same f32 limit, and, where python3-torch is installed, the
# twin's samples/s on the same thread count and the ratio. The twin's 2
# ranks are two processes of one thread each on half the batch, their
# rates added, with no gradient all-reduce: an upper bound for
# DistributedDataParallel, so the ratio there is the least dtrain leads
# by. Where dtrain refuses bf16 (a CPU without AVX512_BF16 or AMX, or
# DTRAIN_CPU below avx512_bf16) the bf16 rows are skipped with dtrain's
# message; where PyTorch's bf16 autocast does not run, their twin column
# is left out with a message. For gpt2 both programs' parameter counts
# are printed (163,037,184 each).
#
# Each figure is the median of REPS (default 3) runs, dtrain and the twin
# interleaved; a dtrain run's rate is the median of its logged windows
# after the first (which holds the warm-up), so the final evaluation and
# start-up do not count; the twin times its steps after 3 warm-up steps
# (1 for gpt2). A run is about BENCH_SECONDS (default 8) seconds on an
# idle 2-core machine; gpt2 runs are 5 steps of dtrain and at least 2
# timed steps of the twin, BENCH_GPT2_REPS (default 1) of them. The whole
# script takes about 10 minutes for the three jobs in both precisions and
# about 10 more for gpt2. A gpt2 run (each process about 2.5 GiB, twice
# that at 2 ranks) holds the lock file BENCH_GPT2_LOCK (default
# /tmp/gpt2.lock) with flock(1), so only one GPT-2-shaped run is under
# way on the machine. BENCH_JOBS (default "mlp cnn gpt gpt2") picks the
# jobs, BENCH_CONFIGS (default "1t 2t 2r") the thread counts, and
# BENCH_TORCH=no leaves the twins out (to measure another dtrain build
# against the same twins, or the AVX2 fallback under DTRAIN_CPU=avx2).
# Prints; asserts nothing.
set -eu
dtrain=$1 peak=$2 reps=${3:-3}
fma=${4:-$(dirname "$peak")/peak}
secs=${BENCH_SECONDS:-8}
bench_jobs=${BENCH_JOBS:-mlp cnn gpt gpt2}
configs=${BENCH_CONFIGS:-1t 2t 2r}
precs=${BENCH_PRECISION:-f32 bf16}
gpt2_reps=${BENCH_GPT2_REPS:-1}
gpt2_lock=${BENCH_GPT2_LOCK:-/tmp/gpt2.lock}
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

# bf16: dtrain's own refusal (plan) says whether this CPU can.
case " $precs " in
*" bf16 "*)
	if ! "$dtrain" plan --dry-run --set train.precision=bf16 \
		"$jobs/char-gpt.yaml" >/dev/null 2>"$tmp/bf16"; then
		echo "bf16 rows skipped: $(tail -n 1 "$tmp/bf16")"
		precs=$(echo "$precs" | sed 's/bf16//')
	fi ;;
esac
torch_bf16=$torch
if [ $torch = yes ] && case " $precs " in *" bf16 "*) ;; *) false ;; esac &&
	! $python -c 'import torch
with torch.autocast("cpu", dtype=torch.bfloat16):
	y = torch.nn.Linear(4, 4)(torch.ones(2, 4))
assert y.dtype == torch.bfloat16' 2>"$tmp/autocast"; then
	torch_bf16=no
	echo "PyTorch's bf16 autocast does not run here: no PyTorch column" \
		"for bf16 ($(tail -n 1 "$tmp/autocast"))"
fi

# job name: job file, global batch, micro-batch, steps of about $secs s at
# one thread (gpt2: 5), log window in steps
spec() {
	case $1 in
	mlp) echo "$jobs/fashion-mnist-mlp.yaml 96 96 $((360 * secs))" \
		"$((36 * secs))" ;;
	cnn) echo "$jobs/fashion-mnist-cnn.yaml 128 128 $((15 * secs))" \
		"$((2 * secs))" ;;
	gpt) echo "$jobs/char-gpt.yaml 32 8 $((7 * secs + 3)) $((secs))" ;;
	gpt2) echo "$here/gpt2-small-untied.yaml 4 2 5 1" ;;
	esac
}

# sets JOB: the job's own settings for this bench (gpt2: context 64,
# micro-batches of 2, so that 2 ranks take one each, one eval batch at
# the end)
sets() {
	case $1 in
	gpt2) echo "--set data.context=64 --set train.global_batch=4" \
		"--set train.micro_batch=2 --set eval.max_batches=1" ;;
	esac
}

# locked JOB COMMAND...: COMMAND, under flock on $gpt2_lock for gpt2.
locked() {
	if [ "$1" = gpt2 ] && command -v flock >/dev/null; then
		shift
		flock "$gpt2_lock" "$@"
	else
		shift
		"$@"
	fi
}

# median of the numbers on standard input
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
		else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# run_dtrain JOB CONFIG PRECISION: one dtrain run; prints the median of
# its logged rates after the first window.
run_dtrain() {
	set -- "$1" "$2" "$3" $(spec "$1")
	job=$1 config=$2 prec=$3 file=$4 steps=$7 window=$8
	d=$tmp/run
	rm -rf "$d"
	common="--set train.steps=$steps --set log.every_steps=$window --set eval.every_steps=0 --set checkpoint.at_end=false --set train.schedule.warmup_steps=1 --set train.precision=$prec $(sets "$job")"
	case $config in
	1t) locked $job "$dtrain" run -q --run-dir "$d" $common \
		--set parallel.blas_threads=1 "$file" >/dev/null ;;
	2t) locked $job "$dtrain" run -q --run-dir "$d" $common \
		--set parallel.blas_threads=2 "$file" >/dev/null ;;
	2r) locked $job mpirun -np 2 --bind-to none "$dtrain" run -q \
		--run-dir "$d" $common --set parallel.blas_threads=1 "$file" \
		>/dev/null ;;
	esac
	sed -n 's/.*"samples_per_s":\([0-9.e+]*\).*/\1/p' "$d/metrics.jsonl" |
		sed 1d | median
}

# run_torch JOB CONFIG PRECISION: one twin run's samples/s (gpt2: its
# parameter count to $tmp/params).
run_torch() {
	set -- "$1" "$2" "$3" $(spec "$1")
	job=$1 config=$2 prec=$3 global=$5 micro=$6
	twin="$here/torch_twin.py $job"
	case $config in
	1t) locked $job $python $twin 1 "$global" "$micro" "$secs" "$prec" \
		2>"$tmp/params" ;;
	2t) locked $job $python $twin 2 "$global" "$micro" "$secs" "$prec" \
		2>"$tmp/params" ;;
	2r) half=$((global / 2))
	    m=$((micro < half ? micro : half))
	    # both halves at once, under one lock
	    locked $job sh -c '"$@" >"$0/r0" 2>/dev/null & "$@" >"$0/r1" \
		2>/dev/null; wait' "$tmp" $python $twin 1 "$half" "$m" "$secs" "$prec"
	    awk '{ s += $1 } END { printf(s >= 100 ? "%.1f\n" : "%.4g\n", s) }' \
		"$tmp/r0" "$tmp/r1" ;;
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

# rate R: R to 3 digits below 100, to the unit above.
rate() {
	echo "$1" | awk '{ if ($1 < 100) printf "%.3g", $1;
		else printf "%.0f", $1 }'
}

# has_torch PRECISION: the twin runs in that precision.
has_torch() {
	[ $torch = yes ] && { [ "$1" = f32 ] || [ $torch_bf16 = yes ]; }
}

for rep in $(seq "$reps"); do
	for job in $bench_jobs; do
		[ $job != gpt2 ] || [ "$rep" -le "$gpt2_reps" ] || continue
		for prec in $precs; do
			for config in $configs; do
				k=$job-$config-$prec
				run_dtrain $job $config $prec >>"$tmp/d-$k"
				! has_torch $prec ||
					run_torch $job $config $prec >>"$tmp/t-$k"
				[ $job != gpt2 ] || [ ! -s "$tmp/params" ] ||
					cp "$tmp/params" "$tmp/params-twin"
			done
		done
	done
done

printf "\n%-6s %-10s %-5s %10s %7s %7s %10s %7s\n" job config prec \
	"dtrain/s" "sgemm" "MFU" "torch/s" "ratio"
for job in $bench_jobs; do
	set -- $(spec $job)
	plan=$("$dtrain" plan --dry-run --json $(sets $job) "$1")
	flops=$(echo "$plan" | $python -c 'import json, sys; print(json.load(sys.stdin)["flops_per_sample"])')
	[ $job != gpt2 ] || params=$(echo "$plan" |
		$python -c 'import json, sys; print(json.load(sys.stdin)["params"])')
	for prec in $precs; do
	for config in $configs; do
		d=$(median <"$tmp/d-$job-$config-$prec")
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
		if has_torch $prec; then
			t=$(median <"$tmp/t-$job-$config-$prec")
			r=$(echo "$d $t" | awk '{ printf "%.2fx", $1 / $2 }')
		else
			t=- r=-
		fi
		printf "%-6s %-10s %-5s %10s %7s %7s %10s %7s\n" $job \
			"$name" $prec "$(rate "$d")" "$share" "$mfu" "$t" "$r"
	done
	done
done
printf "\n(medians of %s interleaved runs, gpt2 of %s; dtrain threads =" \
	"$reps" "$gpt2_reps"
printf " BLAS threads = pool threads per rank; MFU against the f32 limit"
printf " in both precisions)\n"
case " $bench_jobs " in
*" gpt2 "*)
	echo "gpt2: samples of 64 tokens; parameters: dtrain $params," \
		"twin $(sed -n 's/^params //p' "$tmp/params-twin" 2>/dev/null)" ;;
esac
uptime | sed 's/.*load/load/'
