#!/bin/sh
# Every shipped job goes through `dtrain plan --dry-run` (text and JSON) at
# 1 and 2 ranks; and the plan's FLOPs for the MLP match a hand count.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
for job in "$top_srcdir"/jobs/*.yaml; do
	for np in 1 2; do
		"$DTRAIN" plan --dry-run -n $np "$job" >plan.txt ||
			fail "plan --dry-run -n $np $job"
		grep -q '^grid: ' plan.txt || fail "$job: no grid line"
		"$DTRAIN" plan --dry-run --json -n $np "$job" >plan.json ||
			fail "plan --json -n $np $job"
		"$PYTHON" -c 'import json,sys; json.load(open(sys.argv[1]))' \
			plan.json || fail "$job: --json is not JSON"
	done
	echo "planned $(basename "$job")"
done
# 784-512-256-10 MLP: dense forward 2*in*out + out per sample, relu one per
# element, softmax cross-entropy 5 per class; backward twice forward.
"$DTRAIN" plan --dry-run --json -n 2 "$top_srcdir/jobs/fashion-mnist-mlp.yaml" >mlp.json
"$PYTHON" - mlp.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
fwd = (2*784*512 + 512) + 512 + (2*512*256 + 256) + 256 + (2*256*10 + 10) + 5*10
assert p["fwd_flops_per_sample"] == fwd, (p["fwd_flops_per_sample"], fwd)
assert p["flops_per_sample"] == 3 * fwd, (p["flops_per_sample"], 3 * fwd)
assert p["params"] == 784*512 + 512 + 512*256 + 256 + 256*10 + 10
assert p["batch"]["micro_batch"] == 48 and p["batch"]["steps_per_epoch"] == 625
g = p["params"] * 4
assert p["communication_per_rank"]["sent_per_step"] == 2 * (2 - 1) * g // 2
print("MLP plan FLOPs and bytes match the hand count")
PY
# A layout the job cannot take is refused with the reason, exit 2.
expect_fail 2 'global batch 96 is not a multiple' \
	"$DTRAIN" plan --dry-run -n 5 "$top_srcdir/jobs/fashion-mnist-mlp.yaml"
