#!/bin/sh
# SPDX-License-Identifier: MIT
# train.precision: bf16 (graph/kern_bf16.c). Refused with exit 2 before
# anything runs, by run and plan alike, where DTRAIN_CPU takes
# AVX512_BF16 and AMX away (avx2, generic, avx512), as --version says.
# On a CPU with them:
# the run's products line says bf16; the loss of a short MLP run stays
# within 2% of the f32 run's every step, yet differs from it (the
# products really are bf16); two runs give the same losses; and 2 ranks
# data-parallel and 2 pipeline stages (each with the one rank's micro-
# batch of 48, as tests/integration/layouts.sh keeps it) and 2 BLAS
# threads give one rank's losses exactly, tensor parallel (its partial
# products summed over the group, each rounded to float) within 2e-3:
# a last-bit difference in a weight moves its bf16 rounding by 2^-8 now
# and then, so the drift grows faster than in f32 (about 1e-6); measured
# 1.9e-5 at step 6, 1e-4 at step 8.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job job.yaml
bf="--set train.precision=bf16"

for cpu in avx2 generic avx512; do
	expect_fail 2 'train.precision.*bf16 needs AVX512_BF16 or AMX-BF16' \
		env DTRAIN_CPU=$cpu "$DTRAIN" run -q --run-dir r-$cpu $bf \
		job.yaml
	[ ! -e r-$cpu/metrics.jsonl ] || fail "DTRAIN_CPU=$cpu: a step ran"
	expect_fail 2 'bf16 needs AVX512_BF16 or AMX-BF16' \
		env DTRAIN_CPU=$cpu "$DTRAIN" plan $bf job.yaml
done
DTRAIN_CPU=avx2 "$DTRAIN" --version | grep -q \
	'^products: .*train.precision: bf16 refused (no AVX512_BF16' ||
	fail "--version under DTRAIN_CPU=avx2 does not say bf16 is refused"
# f32 is never refused, whatever the CPU.
DTRAIN_CPU=generic "$DTRAIN" plan --set train.precision=f32 job.yaml \
	>/dev/null || fail "f32 refused on generic"

if ! "$DTRAIN" plan $bf job.yaml >/dev/null 2>&1; then
	echo "SKIP: this CPU has neither AVX512_BF16 nor AMX-BF16"
	exit 77
fi
"$DTRAIN" --version | grep -q '^products: .*bf16 on oneDNN' ||
	fail "--version does not say where bf16 goes"
"$DTRAIN" run -q --run-dir f32 job.yaml
"$DTRAIN" run --run-dir b1 $bf job.yaml 2>b1.err
grep -q "^dtrain: products: .*in bf16 on oneDNN" b1.err ||
	fail "no bf16 products line: $(grep products b1.err)"
"$DTRAIN" run -q --run-dir b2 $bf job.yaml
compare_losses f32 b1 0.02
losses f32 >l32
losses b1 >l1
losses b2 >l2
cmp -s l32 l1 && fail "bf16 gave the f32 losses: no bf16 products"
cmp l1 l2 || fail "two bf16 runs differ"
bf16_layouts l1 job.yaml
mpi 2 "$DTRAIN" run -q --run-dir tp $bf \
	--set parallel.strategy=model --set parallel.tensor_parallel=2 job.yaml
compare_losses b1 tp 2e-3
