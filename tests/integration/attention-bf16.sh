#!/bin/sh
# SPDX-License-Identifier: MIT
# The fused attention heads (graph/flash.c) under train.precision: bf16,
# whose tile products dt_kern_sgemm_small computes in bf16 on its
# AVX512_BF16 kernel (kern_small.c), on the char-GPT job: the products
# line says so; its losses stay within 1% of the f32 fused run's every
# step (measured 2026-12-07: 0.043% at most over the 6 steps) and differ
# from them; 2 data-parallel ranks, 2 pipeline stages, model.recompute:
# blocks and 2 threads splitting one sample's heads give one rank's
# losses and parameters byte for byte, tensor parallelism (heads over 2
# ranks) its losses within the 2e-3 of tests/integration/precision-
# bf16.sh. Skipped on a CPU without AVX512_BF16 (there bf16 is refused,
# precision-bf16.sh).
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] || {
	echo "SKIP: fortunes missing (apt-get install fortunes)"
	exit 77
}
JOB="$top_srcdir/jobs/char-gpt.yaml"
COMMON="--set train.steps=6 --set train.schedule.warmup_steps=2
	--set eval.every_steps=0 --set log.every_steps=1
	--set checkpoint.at_end=true --set model.attention=fused"
BF="--set train.precision=bf16"
if ! "$DTRAIN" plan $BF "$JOB" >/dev/null 2>&1 ||
	! grep -qw avx512_bf16 /proc/cpuinfo; then
	echo "SKIP: this CPU has no AVX512_BF16"
	exit 77
fi

# run NAME NP [--set ...]: trains the job and exports its parameters.
run() {
	name=$1 np=$2
	shift 2
	mpi "$np" "$DTRAIN" run --run-dir "$name" "$JOB" $COMMON "$@" \
		>"$name.out" 2>&1 || { cat "$name.out" >&2; fail "$name: exit"; }
	export_of "$name" "$name.st"
	losses "$name" >"$name.losses"
}
same() {
	cmp "$1.losses" "$2.losses" || fail "$2: losses differ from $1's"
	cmp "$1.st" "$2.st" || fail "$2: parameters differ from $1's"
	echo "ok: $2 == $1"
}

run f32 1
run bf16 1 $BF
grep -q "attention heads on dtrain's small kernel (avx512_bf16, bf16)" \
	bf16.out || fail "bf16: the heads are not said to be bf16: $(
	grep products bf16.out)"
[ "$(wc -l <bf16.losses)" -eq 6 ] || fail "bf16: expected 6 losses"
compare_losses f32 bf16 0.01 || fail "bf16: losses past 1% of f32's"
cmp -s f32.losses bf16.losses && fail "bf16: the f32 losses (not bf16?)"
echo "ok: bf16 within 1% of f32"
run bf16-dp2 2 $BF
same bf16 bf16-dp2
run bf16-pp2 2 $BF --set parallel.strategy=model \
	--set parallel.pipeline_parallel=2
same bf16 bf16-pp2
run bf16-rc 1 $BF --set model.recompute=blocks
same bf16 bf16-rc
run bf16-mb1 1 $BF --set train.micro_batch=1
run bf16-mb1-2t 1 $BF --set train.micro_batch=1 --set parallel.blas_threads=2
same bf16-mb1 bf16-mb1-2t
run bf16-tp2 2 $BF --set parallel.strategy=model \
	--set parallel.tensor_parallel=2
compare_losses bf16 bf16-tp2 2e-3 || fail "bf16-tp2: losses differ"
echo "ok: bf16-tp2 ~ bf16"
