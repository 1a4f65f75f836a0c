#!/bin/sh
# SPDX-License-Identifier: MIT
# dtrain eval and predict of a GPT-2-shaped model (a vocabulary of 50257,
# one attention block: 74 MiB of activations a sample, 25 MiB of logits a
# sample: `dtrain plan`'s activations for training, where the loss works
# in place over the logits, plus the two (T, V) buffers an evaluation's
# model keeps apart, its probabilities and the logits' gradient, 2 x 25
# MiB) inside a memory cgroup that this test makes
# (v2, or v1 under /sys/fs/cgroup/memory; skipped with a message when
# none can be made). Before issue 31 both took batches of 128 and 256
# (9.5 GB of activations) with no check and died (SIGABRT, or the
# cgroup's OOM kill). Now, within 400 MiB:
# - eval sizes its batch from the memory left, says so, and gives the
#   loss of an unlimited eval to 1e-6;
# - predict does likewise and writes the bits of `predict --batch N`
#   outside the cgroup, N the batch it chose;
# - --batch 128 (eval) and 256 (predict) are refused with exit status 2,
#   the bytes needed and available and the largest batch that fits;
# and within 100 MiB, where a batch of 1 does not fit (50 MiB of
# parameters and gradients and 74 MiB a sample), both are refused with
# exit status 2 and the figures, nothing written.
. "${top_srcdir}/tests/integration/lib.sh"

trap remove_cgroups EXIT

if ! make_cgroup $((400 << 20)); then
	echo "SKIP: cannot make a memory cgroup (not root, or no writable cgroup v1 or v2 memory controller)"
	exit 77
fi
big=$CG_TASKS
make_cgroup $((100 << 20)) || fail "made one cgroup but not a second"
small=$CG_TASKS

"$PYTHON" -c "
import random, struct
random.seed(1)
n = 4000
open('tok.bin', 'wb').write(struct.pack('<%dH' % n,
    *[random.randrange(50257) for _ in range(n)]))
open('in.bin', 'wb').write(open('tok.bin', 'rb').read()[:1024])"
cat >job.yaml <<'YAML'
name: gpt2ish
seed: 1
data:
  format: tokens
  train: {file: tok.bin}
  token_bytes: 2
  context: 128
  eval_fraction: 0.25
model:
  input_shape: [128]
  layers:
    - {type: embedding, name: tok, vocab: 50257, dim: 64}
    - {type: pos_embedding, name: pos, length: 128, dim: 64}
    - {type: layernorm, name: ln1}
    - {type: attention, name: attn, heads: 2, causal: true}
    - {type: layernorm, name: ln_f}
    - {type: dense, name: head, units: 50257}
  loss: softmax_cross_entropy
train: {global_batch: 1, steps: 1, optimizer: sgd, lr: 0.01}
YAML
"$DTRAIN" plan --dry-run --json job.yaml >plan.json || fail "plan"
"$PYTHON" - plan.json <<'PY' || fail "the model is not the size this test counts on"
import json, sys
m = json.load(open(sys.argv[1]))["memory_per_rank"]
T, V = 128, 50257
assert 70 << 20 < m["activations"] + 2 * 4 * T * V < 80 << 20, m
assert 24 << 20 < m["params"] < 26 << 20, m
PY
"$DTRAIN" run -q --run-dir r --set eval.every_steps=0 job.yaml \
	>/dev/null 2>run.err || { cat run.err >&2; fail "training failed"; }

# eval: unlimited with --batch 2, then in 400 MiB by itself.
"$DTRAIN" eval --json --batch 2 r >ref.json 2>ref.err ||
	{ cat ref.err >&2; fail "eval --batch 2"; }
set +e
in_cgroup "$big" "$DTRAIN" eval --json r >lim.json 2>lim.err
rc=$?
set -e
[ "$rc" -eq 0 ] || { cat lim.err >&2; fail "eval in 400 MiB exited $rc"; }
grep -Eq '^dtrain: eval: batches of [0-9]+ samples, not 128: [0-9]+ bytes .* are available \(cgroup\)' lim.err ||
	{ cat lim.err >&2; fail "eval did not say its batch"; }
"$PYTHON" - ref.json lim.json <<'PY' || fail "eval in 400 MiB"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["samples"] == b["samples"] > 0, (a, b)
assert abs(a["loss"] - b["loss"]) <= 1e-6 * a["loss"], (a["loss"], b["loss"])
assert 1 <= b["batch"] < 128, b["batch"]
PY
expect_fail 2 "not enough memory: eval in batches of 128 samples needs [0-9]+ bytes .* but only [0-9]+ bytes .* are available \(the cgroup's memory limit less its usage\); the largest batch that fits is --batch [0-9]+" \
	in_cgroup "$big" "$DTRAIN" eval --batch 128 r
expect_fail 2 "not enough memory: eval in batches of 1 sample needs [0-9]+ bytes .* are available \(the cgroup's memory limit less its usage\); even a batch of 1 does not fit" \
	in_cgroup "$small" "$DTRAIN" eval r

# predict: 512 tokens, 4 windows of 128, 103 MiB of logits.
set +e
in_cgroup "$big" "$DTRAIN" predict --input in.bin -o lim.npy r 2>plim.err
rc=$?
set -e
[ "$rc" -eq 0 ] || { cat plim.err >&2; fail "predict in 400 MiB exited $rc"; }
b=$(sed -n 's/^dtrain: predict: batches of \([0-9]*\) samples, not 256.*/\1/p' plim.err)
[ -n "$b" ] || { cat plim.err >&2; fail "predict did not say its batch"; }
"$DTRAIN" predict --batch "$b" --input in.bin -o ref.npy r 2>/dev/null ||
	fail "predict --batch $b"
cmp ref.npy lim.npy || fail "predict in 400 MiB: other bits than --batch $b"
# The first run's file pages (the binary, libdnnl's 39 MB, the checkpoint)
# stay charged to the cgroup, so the second run may see one sample less.
expect_fail 2 "not enough memory: predict in batches of 256 samples needs [0-9]+ bytes .*; the largest batch that fits is --batch ($b|$((b - 1)))\$" \
	in_cgroup "$big" "$DTRAIN" predict --batch 256 --input in.bin -o no.npy r
expect_fail 2 "not enough memory: predict in batches of 1 sample .* even a batch of 1 does not fit" \
	in_cgroup "$small" "$DTRAIN" predict --input in.bin -o no.npy r
[ ! -e no.npy ] || fail "a refused predict wrote its file"
echo "ok: eval and predict of a 50257-class model in 400 MiB (batch $b), refused in 100 MiB"
