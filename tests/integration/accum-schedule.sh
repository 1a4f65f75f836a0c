#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.accum_schedule: breadth_first (every forward of a step, then
# the backward node by node over the micro-batches) gives the bits of
# depth_first (F0 B0 F1 B1 ...): byte-identical exported parameters and
# loss lines for the small MLP (2 and 4 micro-batches), a tiny char-GPT
# (embeddings, causal attention, layernorm, dropout, GELU dense, residual
# adds) and a model with batchnorm of maps and of vectors, a conv, a
# concat that reads a node twice over, at 1 rank and at 2 ranks with
# overlap on (buckets of a few KiB, so several begin inside the
# backward), with the bf16 wire, and with one micro-batch (the float
# sum). Two doubles add the same in either order, so the jobs also run
# with 4 or more micro-batches a rank, where an order changed by the
# schedule would show. The plan says which schedule auto chooses (breadth_first with
# overlap on, 2 ranks and 2 micro-batches; depth_first on one rank, with
# overlap off, with one micro-batch), counts the activations of every
# micro-batch in its memory (the memory check refuses what does not fit),
# and breadth_first where it cannot apply is a job error naming the key.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job mlp.yaml
cat >gpt.yaml <<'YAML'
name: tinygpt
seed: 3
data:
  format: text
  train:
    file: /usr/share/games/fortunes/cookie
  context: 16
  text_unit: bytes
model:
  input_shape: [16]
  layers:
    - {type: embedding, name: tok, vocab: 96, dim: 32}
    - {type: pos_embedding, name: pos, length: 16, dim: 32}
    - repeat: 2
      name: block
      layers:
        - {type: layernorm, name: ln1}
        - {type: attention, name: attn, heads: 2, causal: true}
        - {type: dropout, name: attn_drop, rate: 0.2}
        - {type: add, name: res1, inputs: [block_input, attn_drop]}
        - {type: layernorm, name: ln2}
        - {type: dense, name: fc, units: 64, activation: gelu}
        - {type: dense, name: proj, units: 32}
        - {type: dropout, name: mlp_drop, rate: 0.2}
        - {type: add, name: res2, inputs: [res1, mlp_drop]}
    - {type: layernorm, name: ln_f}
    - {type: dense, name: head, units: 96}
  loss: softmax_cross_entropy
train:
  global_batch: 16
  micro_batch: 4
  steps: 12
  optimizer: adamw
  lr: 0.003
  weight_decay: 0.1
  clip_norm: 1.0
parallel:
  blas_threads: 1
log:
  every_steps: 1
YAML
cat >bn.yaml <<YAML
name: bn
seed: 5
data:
  format: idx
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  scale: 0.00392156862745098
model:
  input_shape: [28, 28]
  layers:
    - {type: conv2d, name: c1, channels: 4, kernel: 3, stride: 2, padding: 1, bias: false, activation: tanh}
    - {type: batchnorm, name: bn1}
    - {type: maxpool2d, name: mp, kernel: 2}
    - {type: reshape, name: rs, shape: [7, -1]}
    - {type: dense, name: d1, units: 16, activation: sigmoid}
    - {type: attention, name: att, heads: 2, causal: false}
    - {type: layernorm, name: ln}
    - {type: concat, name: cat, inputs: [d1, ln, d1]}
    - {type: flatten, name: fl}
    - {type: batchnorm, name: bn2}
    - {type: dropout, name: dr, rate: 0.5}
    - {type: dense, name: out, units: 10}
  loss: softmax_cross_entropy
train:
  global_batch: 32
  micro_batch: 4
  steps: 10
  optimizer: adam
  lr: 0.01
parallel:
  blas_threads: 1
log:
  every_steps: 1
YAML

# schedule_of JSON: the plan's accum_schedule.
schedule_of() {
	"$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["grid"]["accum_schedule"])' "$1"
}
# pair NAME NP JOB [--set ...]: the job under both schedules on NP ranks;
# the same parameters (export, cmp) and loss lines, and each run used the
# schedule it was given (its plan.json).
pair() {
	name=$1 np=$2 job=$3
	shift 3
	for s in depth_first breadth_first; do
		d=$name-$s
		mpi "$np" "$DTRAIN" run -q --run-dir "$d" "$job" \
			--set parallel.accum_schedule=$s "$@" >"$d.out" 2>&1 ||
			{ cat "$d.out" >&2; fail "$d: run failed"; }
		[ "$(schedule_of "$d/plan.json")" = $s ] ||
			fail "$d: plan.json says $(schedule_of "$d/plan.json")"
		export_of "$d" "$d.st"
		losses "$d" >"$d.l"
	done
	n=$(wc -l <"$name-depth_first.l")
	[ "$n" -ge 10 ] || fail "$name: only $n logged steps"
	cmp "$name-depth_first.st" "$name-breadth_first.st" ||
		fail "$name: breadth_first parameters differ from depth_first"
	cmp "$name-depth_first.l" "$name-breadth_first.l" ||
		fail "$name: breadth_first losses differ from depth_first"
	echo "ok: $name: $n steps, the same bits under both schedules"
}
small="--set parallel.overlap=true --set parallel.bucket_mb=0.004"
# shellcheck disable=SC2086
{
	pair mlp1 1 mlp.yaml
	pair mlp2 2 mlp.yaml $small
	pair mlp2x4 2 mlp.yaml $small --set train.grad_accum_steps=4 \
		--set train.global_batch=128
	pair mlp2-bf16 2 mlp.yaml $small --set parallel.grad_wire=bf16
	pair mlp2-float 2 mlp.yaml $small --set train.grad_accum_steps=1
	pair gpt1 1 gpt.yaml
	pair gpt2 2 gpt.yaml $small
	pair bn1 1 bn.yaml
	pair bn2 2 bn.yaml $small
}
# The runs learned something: the first loss is not the last.
[ "$(head -1 gpt2-breadth_first.l)" != "$(tail -1 gpt2-breadth_first.l)" ] ||
	fail "gpt2: the loss did not move"

# auto: breadth_first with overlap on, 2 ranks and 2 micro-batches a
# step; depth_first otherwise.
auto() {
	"$DTRAIN" plan --dry-run --json "$@" mlp.yaml >auto.json ||
		fail "plan $*"
	schedule_of auto.json
}
[ "$(auto -n 2)" = breadth_first ] || fail "auto on 2 ranks: $(auto -n 2)"
[ "$(auto -n 1)" = depth_first ] || fail "auto on 1 rank"
[ "$(auto -n 2 --set parallel.overlap=false)" = depth_first ] ||
	fail "auto without overlap"
[ "$(auto -n 2 --set train.grad_accum_steps=1)" = depth_first ] ||
	fail "auto with one micro-batch"
[ "$(auto -n 4 --set parallel.strategy=hybrid --set parallel.pipeline_parallel=2 --set parallel.data_parallel=2)" = depth_first ] ||
	fail "auto with a pipeline"
"$DTRAIN" plan --dry-run -n 2 mlp.yaml >plan.txt
grep -q '^accumulation schedule: breadth_first (every forward, then the backward node by node over the micro-batches)$' plan.txt ||
	fail "plan text does not give the schedule"

# Memory: mlp.yaml at 2 ranks has micro-batches of 96 / (2 x 2) = 24
# samples; breadth_first holds both micro-batches' activations and
# inputs, twice depth_first's, and says so.
"$DTRAIN" plan --dry-run --json -n 2 mlp.yaml \
	--set parallel.accum_schedule=depth_first >df.json
"$DTRAIN" plan --dry-run --json -n 2 mlp.yaml \
	--set parallel.accum_schedule=breadth_first >bf.json
"$PYTHON" - df.json bf.json <<'PY' || fail "breadth_first memory"
import json, sys
df, bf = (json.load(open(f)) for f in sys.argv[1:])
a, b = df["memory_per_rank"], bf["memory_per_rank"]
s = df["stages"][0]
# One slot: the nodes' floats per sample and the 784 inputs, 24 samples.
one = (s["activation_floats_per_sample"] + 784) * 24 * 4
if a["activations"] != one:
    sys.exit("depth_first activations %d, expected %d" % (a["activations"], one))
if b["activations"] != 2 * one:
    sys.exit("breadth_first activations %d, expected %d" % (b["activations"], 2 * one))
if b["total"] - a["total"] != one:
    sys.exit("totals differ by %d, expected %d" % (b["total"] - a["total"], one))
if bf["stages"][0]["micro_batches_in_flight"] != 2 or s["micro_batches_in_flight"] != 1:
    sys.exit("micro-batches in flight")
PY
# ... and the memory check before a run counts them: a node with room
# for two depth_first ranks but not two breadth_first ones runs the one
# and refuses the other (mem-precheck.sh's figures: less the runtime,
# the data and the loader's epoch order). 512-sample micro-batches make
# the activations the larger part.
big="--set train.global_batch=2048 --set train.steps=2"
for s in df bf; do
	w=$( [ $s = df ] && echo depth_first || echo breadth_first)
	# shellcheck disable=SC2086
	"$DTRAIN" plan --dry-run --json -n 2 mlp.yaml $big \
		--set parallel.accum_schedule=$w >$s-big.json
done
avail=$("$PYTHON" - df-big.json bf-big.json <<'PY'
import json, sys
def need(f):
    p = json.load(open(f))
    m = p["memory_per_rank"]
    return m["total"] - m["runtime"] - m["dataset"] - 8 * p["data"]["train_samples"]
a, b = need(sys.argv[1]), need(sys.argv[2])
# oneDNN's kernels_runtime, where the products run there, is the same
# under both schedules (the same shapes): the 1.2 is of the rest.
k = [json.load(open(f))["memory_per_rank"].get("kernels_runtime", 0)
     for f in sys.argv[1:3]]
assert k[0] == k[1], k
assert b - k[1] > (a - k[0]) * 1.2, (a, b, k)
print(a + b)
PY
)
# shellcheck disable=SC2086
DTRAIN_TEST_MEM_AVAILABLE=$avail mpi 2 -x DTRAIN_TEST_MEM_AVAILABLE \
	"$DTRAIN" run -q --run-dir mem-df mlp.yaml $big \
	--set parallel.accum_schedule=depth_first >mem.out 2>&1 ||
	{ cat mem.out >&2; fail "depth_first in $avail bytes"; }
# shellcheck disable=SC2086
DTRAIN_TEST_MEM_AVAILABLE=$avail expect_fail 2 \
	"not enough memory: the plan needs 2 ranks x [0-9]+ bytes .* but only $avail bytes .*; lower train.micro_batch, set parallel.accum_schedule: depth_first \\(which holds one micro-batch of activations" \
	mpi 2 -x DTRAIN_TEST_MEM_AVAILABLE "$DTRAIN" run -q --run-dir mem-bf \
	mlp.yaml $big --set parallel.accum_schedule=breadth_first

# Where it cannot apply, breadth_first is refused before anything runs.
bf="--set parallel.accum_schedule=breadth_first"
# shellcheck disable=SC2086
{
	expect_fail 2 "parallel.accum_schedule: breadth_first applies to plain data parallelism only \\(a pipeline" \
		"$DTRAIN" plan --dry-run -n 4 mlp.yaml $bf \
		--set parallel.strategy=hybrid --set parallel.pipeline_parallel=2 --set parallel.data_parallel=2
	expect_fail 2 "parallel.accum_schedule: breadth_first applies to plain data parallelism only \\(tensor-parallel" \
		"$DTRAIN" plan --dry-run -n 2 mlp.yaml $bf \
		--set parallel.strategy=model --set parallel.tensor_parallel=2
	expect_fail 2 "parallel.accum_schedule: breadth_first applies to plain data parallelism only \\(parameter servers" \
		"$DTRAIN" plan --dry-run -n 3 mlp.yaml $bf \
		--set parallel.sync=parameter_server
	expect_fail 2 "parallel.accum_schedule: breadth_first applies" \
		mpi 2 "$DTRAIN" run -q --run-dir refused mlp.yaml $bf \
		--set parallel.strategy=model --set parallel.tensor_parallel=2
}
[ ! -e refused ] || fail "a refused run made its run directory"
expect_fail 2 'parallel.accum_schedule' \
	"$DTRAIN" plan --dry-run mlp.yaml --set parallel.accum_schedule=sideways

# auto keeps depth first where breadth first would hold more than 1 GiB of
# activations beyond one micro-batch (plan.h DT_PLAN_BREADTH_AUTO_BYTES):
# 16384-unit layers, micro-batches of 1024 (512 KiB of activations a
# sample, 512 MiB a micro-batch), 4 a rank: 1.5 GiB more. Asked for by
# name, breadth_first stays. The plan only: nothing is allocated.
sched() {
	"$DTRAIN" plan --dry-run --json -n 2 wide.yaml "$@" |
		"$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["grid"]["accum_schedule"])'
}
sed -e 's/units: [0-9]*, activation/units: 16384, activation/' mlp.yaml >wide.yaml
[ "$(sched --set train.global_batch=8192 --set train.grad_accum_steps=4)" = depth_first ] ||
	fail "auto chose breadth_first past 1 GiB of extra activations"
[ "$(sched --set train.global_batch=8192 --set train.grad_accum_steps=4 \
	--set parallel.accum_schedule=breadth_first)" = breadth_first ] ||
	fail "breadth_first asked for by name was not kept"
[ "$(sched --set train.global_batch=512 --set train.grad_accum_steps=4)" = breadth_first ] ||
	fail "auto did not choose breadth_first for small activations"
