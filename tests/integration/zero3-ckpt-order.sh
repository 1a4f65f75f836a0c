#!/bin/sh
# SPDX-License-Identifier: MIT
# zero3-ckpt-order.sh - a parallel.zero 3 checkpoint in shards names its
# parameter files so that they sort in the model's order, also where the
# first rank's part holds whole trained tensors and the model has
# untrained ones (batchnorm's running statistics, which come last in the
# model and in no rank's part: the first rank writes them). The model
# 784 -> 4 -> bn -> 512 -> bn -> 10 has 11862 trained floats; on 2 ranks
# rank 0's part [0, 5931) holds dense0 to dense1 whole and cuts bn2's
# weight, rank 1's holds the rest. The untrained tensors go to a file of
# their own, params-tensor-000010.safetensors, after rank 1's
# params-tensor-000007; the export, which streams the files in name
# order, is zero 0's byte for byte. On the code before, rank 0 wrote them
# in its file params-tensor-000000 after dense1's bias, so the export
# put them before bn2's weight: other bytes than zero 0's, and this
# failed.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

{
	t10k_job z3order
	cat <<YAML
    - {type: dense, units: 4, activation: relu}
    - {type: batchnorm, name: bn1}
    - {type: dense, units: 512, activation: relu}
    - {type: batchnorm, name: bn2}
    - {type: dense, units: 10}
train: {global_batch: 16, micro_batch: 8, steps: 2, optimizer: adamw, lr: 0.01}
checkpoint: {at_end: true}
seed: 5
YAML
} >job.yaml
for z in 0 3; do
	mpi 2 "$DTRAIN" run -q --run-dir z$z job.yaml --set parallel.zero=$z \
		--set parallel.overlap=false >z$z.out 2>&1 ||
		{ cat z$z.out >&2; fail "zero $z"; }
	export_of z$z z$z.st
done
ck=z3/checkpoints/step-000000002
names=$(cd $ck && ls params-*.safetensors | tr '\n' ' ')
[ "$names" = "params-tensor-000000.safetensors params-tensor-000006.safetensors params-tensor-000007.safetensors params-tensor-000010.safetensors " ] ||
	fail "zero 3's parameter files: $names"
"$PYTHON" - $ck <<'PY' || fail "the untrained tensors' file"
import json, struct, sys
with open(sys.argv[1] + "/params-tensor-000010.safetensors", "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    h = json.loads(f.read(n))
names = sorted(k for k in h if k != "__metadata__")
assert all("running_" in k for k in names) and len(names) == 4, names
PY
cmp z0.st z3.st || fail "zero 3's export: other bytes than zero 0's"
echo "ok: zero 3's parameter files sort in the model's order"
