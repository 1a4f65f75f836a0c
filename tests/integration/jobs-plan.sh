#!/bin/sh
# SPDX-License-Identifier: MIT
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
# The CNN and the character model, counted by hand with the same rules:
# conv 2*K*K*Cin*Cout*H*W + bias, pooling K*K per output, dense
# 2*in*out + out per row, relu/gelu/dropout/add 1 per element,
# layernorm 8 per element, embeddings 1 per output element, attention
# 2*T*C*3C + 2*T*C*C + 2*2*T*T*C + 4*T*C (biases) + 5*h*T*T (softmax),
# softmax cross-entropy 5 per class (per token).
for job in fashion-mnist-cnn char-gpt; do
	"$DTRAIN" plan --dry-run --json "$top_srcdir/jobs/$job.yaml" >$job.json
done
"$PYTHON" - fashion-mnist-cnn.json char-gpt.json <<'PY'
import json, sys
cnn = json.load(open(sys.argv[1]))
conv1 = 2*3*3*1*32*28*28 + 32*28*28
conv2 = 2*3*3*32*64*14*14 + 64*14*14
fwd = (conv1 + 32*28*28 + 4*32*14*14 + conv2 + 64*14*14 + 4*64*7*7
       + (2*3136*128 + 128) + 128 + 128 + (2*128*10 + 10) + 5*10)
assert cnn["fwd_flops_per_sample"] == fwd, (cnn["fwd_flops_per_sample"], fwd)
assert cnn["flops_per_step"] == 3 * fwd * cnn["batch"]["global_batch"]
T, C, h, V, F = 64, 128, 4, 96, 512
attn = 2*T*C*3*C + 2*T*C*C + 2*2*T*T*C + 4*T*C + 5*h*T*T
block = (8*T*C + attn + T*C + T*C + 8*T*C + T*(2*C*F + F) + T*F
         + T*(2*F*C + C) + T*C + T*C)
fwd = T*C + T*C + 4*block + 8*T*C + T*(2*C*V + V) + 5*T*V
gpt = json.load(open(sys.argv[2]))
assert gpt["fwd_flops_per_sample"] == fwd, (gpt["fwd_flops_per_sample"], fwd)
assert gpt["flops_per_sample"] == 3 * fwd
print("CNN and char-gpt plan FLOPs match the hand count")
PY
