#!/bin/sh
# SPDX-License-Identifier: MIT
# zero3-bn-ckpt.sh - a parallel.zero 3 checkpoint in shards of a CNN
# whose batchnorm running statistics (untrained tensors, past the
# trained floats in the arena) sit between trained tensors in the
# model's list: conv1 (4 x 1 x 3 x 3 and 4), bn1 (weight, bias,
# running_mean, running_var: 4 each), pool, flatten, fc1 (784 x 64 and
# 64), bn2 (64 each), fc2 (64 x 10 and 10): tensors 0 to 13, 51066
# trained floats, on 2 ranks parts [0, 25533) and [25533, 51066).
# - The parameter files hold consecutive tensors of the list, each
#   untrained one with the trained one before it, so that their names
#   sort in the model's order: params-tensor-000000 (conv1, bn1 with its
#   statistics), -000006 (fc1.weight, [48, 50224), which the first
#   part's end cuts) and -000007 (fc1.bias to fc2.bias, bn2's
#   statistics after bn2.bias). On the code before, the first rank
#   wrote every untrained tensor after its own part's tensors, in
#   params-tensor-000004 (bn1's statistics, then fc1.bias ... fc2.bias),
#   so the export, which streams the files in name order, put
#   fc1.weight last: other bytes than zero 0's, and this failed.
# - Its export is a zero 0 run's, byte for byte: the statistics are the
#   first rank's, as every layout writes them (each rank updates its own
#   from its micro-batches), also where another rank writes the file.
# - Stopped after step 3 (its checkpoint) and resumed at dp 2 zero 1:
#   the zero 0 run's losses and export, byte for byte; resumed on 1 rank
#   at zero 0: its losses and trained tensors (that rank updates the
#   statistics from all 16 samples of a step, the first of 2 ranks from
#   its 8: those differ, as batchnorm.c says).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

{
	t10k_job bnorder
	cat <<YAML
    - {type: conv2d, name: conv1, channels: 4, kernel: 3, padding: 1, activation: relu}
    - {type: batchnorm, name: bn1}
    - {type: maxpool2d, name: pool1, kernel: 2}
    - {type: flatten, name: flat}
    - {type: dense, name: fc1, units: 64, activation: relu}
    - {type: batchnorm, name: bn2}
    - {type: dense, name: fc2, units: 10}
train: {global_batch: 16, micro_batch: 8, steps: 6, optimizer: adamw, lr: 0.01}
checkpoint: {every_steps: 2, keep_last: 0}
log: {every_steps: 1}
seed: 5
YAML
} >job.yaml
OFF="--set parallel.overlap=false"
DP1="--set parallel.strategy=data --set parallel.data_parallel=1"

# tensors FILE...: each safetensors file's tensor names in data order.
tensors() {
	"$PYTHON" - "$@" <<'PY'
import json, struct, sys
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    print(" ".join(k for k in sorted(h, key=lambda k: h[k]["data_offsets"][0])))
PY
}

for z in 0 3; do
	# shellcheck disable=SC2086
	mpi 2 "$DTRAIN" run -q --run-dir z$z job.yaml \
		--set parallel.zero=$z $OFF >z$z.out 2>&1 ||
		{ cat z$z.out >&2; fail "zero $z"; }
	export_of z$z z$z.st
done
ck=z3/checkpoints/step-000000006
(cd $ck && ls params-*.safetensors) >files.txt
printf '%s\n' params-tensor-000000.safetensors \
	params-tensor-000006.safetensors params-tensor-000007.safetensors |
	cmp -s - files.txt || { cat files.txt >&2; fail "zero 3's parameter files"; }
tensors $ck/params-tensor-000000.safetensors \
	$ck/params-tensor-000006.safetensors \
	$ck/params-tensor-000007.safetensors >in-files.txt
cat >want.txt <<TXT
conv1.weight conv1.bias bn1.weight bn1.bias bn1.running_mean bn1.running_var
fc1.weight
fc1.bias bn2.weight bn2.bias bn2.running_mean bn2.running_var fc2.weight fc2.bias
TXT
cmp -s want.txt in-files.txt ||
	{ cat in-files.txt >&2; fail "zero 3's files: tensors not in the model's order"; }
cmp z0.st z3.st || fail "zero 3's export: other bytes than zero 0's"
echo "ok: zero 3's files in the model's order, its export zero 0's"

set +e
DTRAIN_TEST_SIGNAL_AT_STEP=3 mpi 2 -x DTRAIN_TEST_SIGNAL_AT_STEP \
	"$DTRAIN" run -q --run-dir s3 job.yaml --set parallel.zero=3 $OFF \
	>s3.out 2>&1
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat s3.out >&2; fail "s3: exited $rc, expected 3"; }
cp -a s3 on1
cp -a s3 on2
# shellcheck disable=SC2086
"$DTRAIN" resume -q on1 $DP1 --set parallel.zero=0 >/dev/null 2>on1.err ||
	{ cat on1.err >&2; fail "on1: resume"; }
# shellcheck disable=SC2086
mpi 2 "$DTRAIN" resume -q on2 --set parallel.zero=1 $OFF >/dev/null 2>on2.err ||
	{ cat on2.err >&2; fail "on2: resume"; }
losses z0 >a.col
for d in on1 on2; do
	grep -q "resuming from .*step-000000003" $d.err || fail "$d: not from step 3"
	losses $d >b.col
	[ -s a.col ] && cmp -s a.col b.col || fail "$d: loss lines differ from zero 0's"
	export_of $d $d.st
done
cmp z0.st on2.st || fail "on2: export differs from zero 0's"
"$PYTHON" - z0.st on1.st <<'PY' || fail "on1: trained tensors differ from zero 0's"
import json, struct, sys
def load(p):
    with open(p, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    h.pop("__metadata__", None)
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]]
            for k, v in h.items()}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
trained = [k for k in a if "running_" not in k]
assert len(trained) == 10, trained
bad = [k for k in trained if a[k] != b[k]]
assert not bad, bad
PY
echo "ok: resumed at dp 2 zero 1 and on 1 rank zero 0 with zero 0's bits"
