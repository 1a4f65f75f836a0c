#!/bin/sh
# SPDX-License-Identifier: MIT
# With parallel.overlap the gradient sums in flight are driven from
# inside backward's long products (graph/kern.h's progress hook), not
# only between nodes, and the bits stay those without overlap.
# The job: 784-1024-10 at 2 ranks, one BLAS thread, buckets of 0.01 MiB,
# so the head's bucket begins first and the first layer's weight
# gradient, dW (784, 1024) = X^T dY over the micro-batch's M rows, is
# the one long product left while a sum is in flight. The hook runs
# between its min(floor(784 * 1024 * M / 2^24), floor(784 / 256)) parts,
# once per part after the first (784 rows make at least 16 blocks of
# 48, so no part is empty):
#   float sums, M = 128:               min(6, 3) = 3 parts, 2 calls a
#   step;
#   exact sums, 2 micro-batches M = 64: min(3, 3) = 3 parts, 2 calls in
#   the last micro-batch's pass depth first, 2 x 2 breadth first (both
#   passes of the first layer follow the head's last).
# Between nodes the sums are driven once a node a pass: 4 nodes (dense,
# relu, dense, loss), one pass a step (the last micro-batch's) depth
# first, 2 breadth first. 4 steps each; all zeros without overlap. On
# the code before the hook summary.json had no progress_tests_rank0.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
cat >job.yaml <<YAML
name: wide
seed: 3
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  scale: 0.00392156862745098
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 1024, activation: relu}
    - {type: dense, units: 10}
  loss: softmax_cross_entropy
train:
  global_batch: 256
  grad_accum_steps: 1
  steps: 4
  optimizer: adam
  lr: 0.001
parallel:
  blas_threads: 1
  bucket_mb: 0.01
log:
  every_steps: 1
YAML
# counts RUN BETWEEN IN: rank 0's progress tests in RUN's summary.json.
counts() {
	"$PYTHON" - "$1/summary.json" "$2" "$3" <<'PY' || fail "$1: progress tests"
import json, sys
p = json.load(open(sys.argv[1])).get("progress_tests_rank0")
want = {"between_nodes": int(sys.argv[2]), "in_products": int(sys.argv[3])}
if p != want:
    sys.exit("%s: progress_tests_rank0 %r, expected %r" % (sys.argv[1], p, want))
PY
}
# same A B: the same losses and the same trained parameters and
# optimizer state, byte for byte.
same() {
	losses "$1" >"$1.l"
	losses "$2" >"$2.l"
	[ "$(wc -l <"$1.l")" -eq 4 ] || fail "$1: expected 4 logged steps"
	cmp "$1.l" "$2.l" || fail "$1 and $2: the losses differ"
	for f in params.safetensors rank-00000.safetensors rank-00001.safetensors; do
		cmp "$1/checkpoints/step-000000004/$f" \
		    "$2/checkpoints/step-000000004/$f" || fail "$1 and $2: $f differs"
	done
}
off="--set parallel.overlap=false"
acc="--set train.grad_accum_steps=2"
mpi 2 "$DTRAIN" run -q --run-dir f-on job.yaml
mpi 2 "$DTRAIN" run -q --run-dir f-off job.yaml $off
counts f-on 16 8
counts f-off 0 0
same f-on f-off
for s in depth_first breadth_first; do
	mpi 2 "$DTRAIN" run -q --run-dir "$s-on" job.yaml $acc \
		--set parallel.accum_schedule=$s
	mpi 2 "$DTRAIN" run -q --run-dir "$s-off" job.yaml $acc \
		--set parallel.accum_schedule=$s $off
	same "$s-on" "$s-off"
done
counts depth_first-on 16 8
counts breadth_first-on 32 16
counts depth_first-off 0 0
