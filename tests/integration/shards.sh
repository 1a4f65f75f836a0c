#!/bin/sh
# SPDX-License-Identifier: MIT
# Token data over many llm.c shards (data.format llmc, a pattern of
# shards):
# - a tiny GPT trains on 40 shards of uneven sizes named by a brace range,
#   with held-out evaluation over its own shards and its perplexity
#   (exp of the eval loss) in the eval lines and `dtrain eval`;
# - stopped mid-epoch on 1 rank and resumed on 2 (a fixed micro-batch, so
#   every layout sums the same micro-batch gradients), it ends with the
#   parameters of the uninterrupted 1-rank run, bit for bit;
# - a shard list changed since the checkpoint is refused, naming the first
#   differing shard; a bad header is refused naming file, field and byte;
# - a data set larger than a memory cgroup's limit (v1 or v2, made by the
#   test; skipped with a message when none can be made) trains inside it:
#   shards are mapped, never decoded whole, so the peak resident memory
#   stays below the limit.
. "${top_srcdir}/tests/integration/lib.sh"
mkdir -p data eval
# Shard i holds 700 + 37 * (i % 5) tokens, ids below 60: windows of 16
# tokens and the target after them give 43 to 52 samples a shard.
"$PYTHON" - <<'PY'
import struct
def shard(path, toks):
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, len(toks), *([0] * 253)))
        f.write(struct.pack("<%dH" % len(toks), *toks))
x = 12345
def tokens(n):
    global x
    out = []
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        # a little structure to learn: every other token is its
        # neighbour's successor
        out.append((x >> 16) % 60 if len(out) % 2 == 0 else (out[-1] + 1) % 60)
    return out
for i in range(40):
    shard("data/shard-%06d.bin" % i, tokens(700 + 37 * (i % 5)))
for i in range(3):
    shard("eval/val-%d.bin" % i, tokens(400))
PY
cat >job.yaml <<YAML
name: shards
seed: 5
data:
  format: llmc
  train:
    file: data/shard-{000000..000039}.bin
  eval:
    file: eval/val-*.bin
  context: 16
model:
  input_shape: [16]
  layers:
    - {type: embedding, name: tok, vocab: 64, dim: 16}
    - {type: pos_embedding, name: pos, length: 16, dim: 16}
    - {type: layernorm, name: ln1}
    - {type: attention, name: attn, heads: 2, causal: true}
    - {type: add, name: res1, inputs: [pos, attn]}
    - {type: layernorm, name: ln2}
    - {type: dense, name: fc, units: 32, activation: gelu}
    - {type: dense, name: proj, units: 16}
    - {type: add, name: res2, inputs: [res1, proj]}
    - {type: dense, name: head, units: 64}
train:
  global_batch: 16
  micro_batch: 4
  steps: 30
  optimizer: adamw
  lr: 0.01
parallel:
  blas_threads: 1
checkpoint:
  every_steps: 100
eval:
  every_steps: 15
log:
  every_steps: 1
YAML
"$DTRAIN" run -q --run-dir full job.yaml >/dev/null 2>full.err ||
	{ cat full.err >&2; fail "training on 40 llm.c shards"; }
# 40 shards: 8 of each size 700..848, windows (n - 17) / 16 + 1 each.
"$PYTHON" - full <<'PY'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
ev = [o for o in lines if "eval_loss" in o]
assert len(ev) == 2, ev
for o in ev:
    # Both written as float32 (shortest repr).
    assert abs(o["eval_perplexity"] - math.exp(o["eval_loss"])) <= 1e-6 * o["eval_perplexity"], o
    assert o["eval_perplexity"] < 60, o      # better than uniform over 60 ids
plan = json.load(open(sys.argv[1] + "/plan.json"))
n = sum(8 * ((700 + 37 * k - 17) // 16 + 1) for k in range(5))
assert plan["data"]["train_samples"] == n, (plan["data"], n)
assert plan["data"]["eval_samples"] == 3 * ((400 - 17) // 16 + 1), plan["data"]
print("ok: %d training windows over 40 shards, eval perplexity %.3f" % (n, ev[-1]["eval_perplexity"]))
PY
"$DTRAIN" eval full >ev.txt
grep -q "^perplexity [0-9.]*$" ev.txt || { cat ev.txt >&2; fail "dtrain eval prints no perplexity"; }
echo "ok: dtrain eval: $(grep perplexity ev.txt)"

# Stopped at step 11 on 1 rank (mid-shard: 176 windows of a shuffled
# epoch of 1894), resumed on 2 ranks: the uninterrupted run's bits.
set +e
DTRAIN_TEST_SIGNAL_AT_STEP=11 "$DTRAIN" run -q --run-dir stop job.yaml \
	>/dev/null 2>stop.err
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat stop.err >&2; fail "stop at step 11 exited $rc, expected 3"; }
grep -q '"data_shards": "shard-000000.bin\\t2424\\nshard-000001.bin\\t2498\\n' \
	stop/checkpoints/step-000000011/meta.json ||
	fail "the checkpoint does not record the shard list"
mpi 2 "$DTRAIN" resume -q stop >/dev/null 2>stop.err2 ||
	{ cat stop.err2 >&2; fail "resume on 2 ranks"; }
grep -q "resuming from .*step 11" stop.err2 || fail "did not resume from step 11"
export_of full full.st
export_of stop stop.st
cmp full.st stop.st || fail "1 rank -> 2 ranks resume: parameters differ from the uninterrupted run"
losses full >a.losses
losses stop >b.losses
cmp a.losses b.losses || fail "1 rank -> 2 ranks resume: loss lines differ"
echo "ok: stopped on 1 rank at step 11, resumed on 2: the same bits"

# A changed shard list is refused on resume, naming the first difference.
set +e
DTRAIN_TEST_SIGNAL_AT_STEP=5 "$DTRAIN" run -q --run-dir chg job.yaml \
	>/dev/null 2>/dev/null
set -e
"$PYTHON" - <<'PY'
import struct
with open("data/shard-000007.bin", "ab") as f:
    f.write(struct.pack("<2H", 1, 2))
with open("data/shard-000007.bin", "r+b") as f:
    f.seek(8)
    f.write(struct.pack("<i", 700 + 37 * 2 + 2))
PY
expect_fail 1 "checkpoints/step-000000005: the training shards changed since the checkpoint: shard 7 was shard-000007.bin \\(2572 bytes\\), is now shard-000007.bin \\(2576 bytes\\)" \
	"$DTRAIN" resume -q chg
echo "ok: a changed shard is refused on resume"
rm data/shard-000039.bin
expect_fail 1 "data/shard-000039.bin: cannot open: No such file" \
	"$DTRAIN" run -q --run-dir gone job.yaml
# A header that lies is refused naming the file, the field and its byte.
"$PYTHON" - <<'PY'
import struct
with open("data/shard-000003.bin", "r+b") as f:
    f.seek(4)
    f.write(struct.pack("<i", 2))
PY
expect_fail 1 "data/shard-000003.bin: byte 4: header field version is 2, expected 1" \
	"$DTRAIN" run -q --run-dir bad job.yaml --set data.train.file='data/shard-00000{0..5}.bin'
echo "ok: a missing shard and a bad header are refused"

# Memory: 96 MiB of shards (48 Mi tokens) under a 64 MiB limit, in
# windows of 128 tokens (the epoch's order, 8 bytes a window, is the one
# thing that grows with the data: 3 MiB here).
limit=$((64 * 1024 * 1024))
cg=
if [ -w /sys/fs/cgroup/memory ] && mkdir /sys/fs/cgroup/memory/dtrain-shards-$$ 2>/dev/null; then
	cg=/sys/fs/cgroup/memory/dtrain-shards-$$
	echo $limit >$cg/memory.limit_in_bytes
	echo $limit >$cg/memory.memsw.limit_in_bytes 2>/dev/null || true
elif [ -f /sys/fs/cgroup/cgroup.controllers ] &&
	mkdir /sys/fs/cgroup/dtrain-shards-$$ 2>/dev/null; then
	cg=/sys/fs/cgroup/dtrain-shards-$$
	if ! echo $limit >$cg/memory.max 2>/dev/null; then
		rmdir $cg
		cg=
	fi
	[ -z "$cg" ] || echo 0 >$cg/memory.swap.max 2>/dev/null || true
fi
if [ -z "$cg" ]; then
	echo "SKIP (memory part): no memory cgroup can be made here"
	exit 0
fi
# The run's helper processes (MPI's singleton server) may take a moment
# to leave the group.
drop_cg() {
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		rmdir "$cg" 2>/dev/null && return 0
		sleep 0.5
	done
	echo "warning: could not remove $cg" >&2
}
trap 'drop_cg; rm -rf "$SCRATCH"' EXIT
mkdir big
"$PYTHON" - <<'PY'
import array, struct
body = array.array("H", [i * 7 % 60 for i in range(2 * 1024 * 1024)])
assert body.itemsize == 2
for i in range(24):
    with open("big/b-%02d.bin" % i, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, len(body), *([0] * 253)))
        body.tofile(f)
PY
total=$(cat big/*.bin | wc -c)
[ "$total" -gt $((limit * 3 / 2)) ] || fail "the data set ($total bytes) is not larger than the limit"
# Run inside the cgroup; the peak resident memory of the run comes from
# getrusage of its process.
"$PYTHON" - "$cg" "$DTRAIN" >mem.out 2>mem.err <<'PY' || { cat mem.err >&2; fail "the run inside the memory cgroup failed"; }
import os, resource, subprocess, sys
cg, dtrain = sys.argv[1], sys.argv[2]
def enter():
    with open(cg + "/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))
r = subprocess.run([dtrain, "run", "-q", "--run-dir", "bigrun", "job.yaml",
                    "--set", "data.train.file=big/b-*.bin",
                    "--set", "data.eval.file=eval/val-0.bin",
                    "--set", "data.context=128",
                    "--set", "model.input_shape=[128]",
                    "--set", "model.layers.1.length=128",
                    "--set", "train.steps=20",
                    "--set", "eval.every_steps=0"],
                   preexec_fn=enter, stdout=subprocess.DEVNULL)
if r.returncode != 0:
    sys.exit("dtrain exited %d" % r.returncode)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
PY
peak=$(cat mem.out)
[ "$peak" -lt "$limit" ] || fail "peak resident memory $peak bytes is not below the $limit-byte limit"
echo "ok: $total bytes of shards trained in a $limit-byte cgroup, peak resident $peak bytes"
