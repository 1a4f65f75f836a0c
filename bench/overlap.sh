#!/bin/sh
# SPDX-License-Identifier: MIT
# overlap.sh [RATE]: the gradient all-reduce hidden behind backward, on 2
# simulated hosts (tests/cluster/lib.sh: network namespaces, needs root)
# whose links are shaped to RATE (tbf; default 1gbit), one rank each, one
# BLAS thread. For a 784-1024-1024-10 MLP (1.86 M parameters, batch 256)
# and jobs/char-gpt.yaml: samples/s with one blocking sum after backward
# (parallel.overlap: false) and with buckets of several sizes started
# during backward, and with bf16 on the wire. Prints; asserts nothing;
# on a shared machine the figures move by 10% from run to run.
# From the build tree, as root:
#   top_srcdir=$PWD DTRAIN=$PWD/dtrain sh bench/overlap.sh 1gbit
DTC_RATE=${1:-1gbit}
export DTC_RATE
. "${top_srcdir:=.}/tests/cluster/lib.sh"
need_fmnist
cluster_up 2
sed -e 's/units: 512, activation: relu/units: 1024, activation: relu/' \
	-e 's/units: 256, activation: relu/units: 1024, activation: relu/' \
	-e 's/global_batch: 96/global_batch: 256/' \
	"$top_srcdir/jobs/fashion-mnist-mlp.yaml" >mlp1024.yaml
COMMON="--set eval.every_steps=0 --set checkpoint.at_end=false --set parallel.blas_threads=1"

# run NAME JOB STEPS [--set ...]: prints NAME and the run's samples/s.
run() {
	name=$1 job=$2 steps=$3
	shift 3
	cmpi 2 1 -t 600 "$DTRAIN" run -q --run-dir "$name" "$job" $COMMON \
		--set train.steps="$steps" --set log.every_steps="$steps" "$@" \
		>"$name.out" 2>&1 || { cat "$name.out" >&2; fail "$name"; }
	"$PYTHON" - "$name" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
b = s["bytes_per_step"][0]["grad_allreduce_bytes"]
print("%-22s %8.1f samples/s  %6.2f MiB a step on the wire"
      % (sys.argv[1], s["samples_per_s"], b / 1048576.0))
PY
}
echo "2 hosts x 1 rank; $DTC_SHAPING"
# The bucket sizes (MiB; off: one blocking sum) of each job, and whether
# bf16 is tried: MLP_BUCKETS, GPT_BUCKETS and BF16 (yes/no) choose.
for b in ${MLP_BUCKETS-off 25 4 0.01}; do
	case $b in
	off) run mlp-blocking mlp1024.yaml 60 --set parallel.overlap=false ;;
	*) run "mlp-bucket-$b" mlp1024.yaml 60 --set parallel.bucket_mb="$b" ;;
	esac
done
[ "${BF16:-yes}" = no ] ||
	run mlp-bf16-bucket-4 mlp1024.yaml 60 --set parallel.grad_wire=bf16
gpt="$top_srcdir/jobs/char-gpt.yaml"
# A warmup shorter than the 20 steps, for a valid cosine schedule.
COMMON="$COMMON --set train.schedule.warmup_steps=2"
for b in ${GPT_BUCKETS-off 100 4 0.25}; do
	case $b in
	off) run gpt-blocking "$gpt" 20 --set parallel.overlap=false ;;
	*) run "gpt-bucket-$b" "$gpt" 20 --set parallel.bucket_mb="$b" ;;
	esac
done
