#!/bin/sh
# SPDX-License-Identifier: MIT
# The convolution under train.precision: bf16 (graph/conv2d.c's bf16
# path: its weights rounded once a part of a pass, its columns made in
# bf16 a channel at a time, its output gradient rounded once for both
# backward products). A model of convolutions only (a same-size one with
# relu and a fused pooling, a stride-2 one with tanh, one whose kernel
# covers its whole input as the classifier), micro-batches of 21 (a
# one-sample chunk at the end, groups past the first): the loss stays
# within 2% of the f32 run's every step yet differs from it (the
# convolutions' products really are bf16: no other product is in the
# model); two runs give the same losses, and 2 threads, 2 data-parallel
# ranks (each with the one rank's micro-batch) and 2 pipeline stages
# give one rank's losses exactly. Skipped without AVX512_BF16 or AMX.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
{
	t10k_job conv-bf16
	cat <<YAML
    - {type: conv2d, name: c1, channels: 8, kernel: 3, padding: 1, activation: relu}
    - {type: maxpool2d, name: p1, kernel: 2}
    - {type: conv2d, name: c2, channels: 16, kernel: 3, stride: 2, padding: 1, activation: tanh}
    - {type: conv2d, name: c3, channels: 10, kernel: 7}
    - {type: flatten, name: f}
  loss: softmax_cross_entropy
train: {global_batch: 42, grad_accum_steps: 2, steps: 8, optimizer: adam, lr: 0.002}
log: {every_steps: 1}
YAML
} >job.yaml
bf="--set train.precision=bf16"
if ! "$DTRAIN" plan $bf job.yaml >/dev/null 2>&1; then
	echo "SKIP: this CPU has neither AVX512_BF16 nor AMX-BF16"
	exit 77
fi
"$DTRAIN" run -q --run-dir f32 job.yaml
"$DTRAIN" run -q --run-dir b1 $bf job.yaml
"$DTRAIN" run -q --run-dir b2 $bf job.yaml
compare_losses f32 b1 0.02
losses f32 >l32
losses b1 >l1
losses b2 >l2
[ "$(wc -l <l1)" -eq 8 ] || fail "not 8 logged losses: $(cat l1)"
cmp -s l32 l1 && fail "bf16 gave the f32 losses: no bf16 convolutions"
cmp l1 l2 || fail "two bf16 runs differ"
bf16_layouts l1 job.yaml
