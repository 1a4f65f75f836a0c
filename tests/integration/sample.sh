#!/bin/sh
# SPDX-License-Identifier: MIT
# A tiny character model (one transformer block) trained for a few dozen
# steps on 2 ranks on a text written here: the held-out loss falls, and
# `dtrain sample` prints the prompt and then exactly the characters asked
# for, the same text for the same seed, one text at temperature 0 whatever
# the seed; prompts longer than the context, no prompt and -n 0 work; a
# character outside the vocabulary, a run without a checkpoint, a directory
# that is no run and bad options are refused with exit status 2.
. "${top_srcdir}/tests/integration/lib.sh"

# About 24 KB of lower-case English from a few sentences in a fixed
# pseudo-random order: 25 distinct characters, learnable in seconds.
"$PYTHON" - <<'PY'
words = ["the cat sat on the mat", "a dog ran to the park",
         "we like to read good books in the quiet room",
         "she sang a song for the old man", "rain fell on the hills all day"]
x, out = 12345, []
while sum(len(s) for s in out) < 24000:
    x = (1103515245 * x + 12345) % 2**31
    out.append(words[x % len(words)] + " .\n")
open("text.txt", "w").write("".join(out))
PY

cat >job.yaml <<YAML
name: tiny-gpt
seed: 3
data:
  format: text
  train: {file: $SCRATCH/text.txt}
  context: 16
  eval_fraction: 0.1
model:
  input_shape: [16]
  layers:
    - {type: embedding, name: tok, vocab: 32, dim: 32}
    - {type: pos_embedding, name: pos, length: 16, dim: 32}
    - repeat: 1
      name: block
      layers:
        - {type: layernorm, name: ln1}
        - {type: attention, name: attn, heads: 2}
        - {type: add, name: res1, inputs: [block_input, attn]}
        - {type: layernorm, name: ln2}
        - {type: dense, name: fc, units: 128, activation: gelu}
        - {type: dense, name: proj, units: 32}
        - {type: add, name: res2, inputs: [res1, proj]}
    - {type: layernorm, name: ln_f}
    - {type: dense, name: head, units: 32}
train:
  global_batch: 32
  steps: 60
  optimizer: adamw
  lr: 0.01
  schedule: {kind: cosine, warmup_steps: 5}
eval:
  every_steps: 10
log:
  every_steps: 10
YAML

mpi 2 "$DTRAIN" run -q --run-dir run job.yaml >/dev/null
[ -f run/vocab.bin ] || fail "no vocab.bin in the run directory"
"$PYTHON" - run <<'PY' || fail "the eval loss did not fall enough"
import collections, json, math, sys
ev = [json.loads(l)["eval_loss"] for l in open(sys.argv[1] + "/metrics.jsonl")
      if '"eval_loss"' in l]
# The unigram entropy (2.75 nats): what a model that ignores the context
# gets at best.
text = open("text.txt").read()
h = -sum(c / len(text) * math.log(c / len(text))
         for c in collections.Counter(text).values())
assert len(ev) == 6, ev
assert ev[-1] < ev[0] - 0.5 and ev[-1] < h - 1.0, (ev, h)
print("eval loss %.3f -> %.3f (unigram entropy %.3f)" % (ev[0], ev[-1], h))
PY

# check_out FILE PROMPT N: FILE is PROMPT, then N characters of the
# text's alphabet, then a newline.
check_out() {
	"$PYTHON" - "$@" <<'PY' || fail "sample output $1 is not the prompt and $3 characters"
import sys
out = open(sys.argv[1]).read()
prompt, n = sys.argv[2], int(sys.argv[3])
alphabet = set(open("text.txt").read())
assert out.startswith(prompt), (out, prompt)
gen = out[len(prompt):]
assert gen.endswith("\n"), repr(out)
gen = gen[:-1]
assert len(gen) == n, (len(gen), n, repr(out))
assert set(gen) <= alphabet, repr(gen)
PY
}

"$DTRAIN" sample --prompt "the cat " -n 40 --seed 5 run >s1
check_out s1 "the cat " 40
"$DTRAIN" sample run --seed 5 -n 40 --prompt "the cat " >s2
cmp s1 s2 || fail "the same seed gave different text"
"$DTRAIN" sample --prompt "the cat " -n 40 --seed 5 --temperature 0.5 run >s3
check_out s3 "the cat " 40
# Temperature 0 takes the most likely character: no randomness at all.
"$DTRAIN" sample --prompt "a dog " -n 60 --temperature 0 --seed 1 run >g1
"$DTRAIN" sample --prompt "a dog " -n 60 --temperature 0 --seed 2 run >g2
check_out g1 "a dog " 60
cmp g1 g2 || fail "temperature 0 depends on the seed"
# A prompt longer than the context (16) keeps its last 16 characters.
long="we like to read good books in the quiet room .
she sang "
"$DTRAIN" sample --prompt "$long" -n 30 --seed 9 run >l1
check_out l1 "$long" 30
# No prompt: the text starts as after a newline; -n 0: the prompt alone.
"$DTRAIN" sample -n 25 run >p1
check_out p1 "" 25
"$DTRAIN" sample -n 0 --prompt "rain" run >z1
check_out z1 "rain" 0

# Errors.
expect_fail 2 "character 'Z' \\(byte 0x5A\\) is not in the vocabulary" \
	"$DTRAIN" sample --prompt "the Zoo" run
expect_fail 2 'byte 4' "$DTRAIN" sample --prompt "the Zoo" run
mkdir empty
expect_fail 2 'not a run directory' "$DTRAIN" sample empty
cp -r run nockpt
rm -rf nockpt/checkpoints
expect_fail 2 'no checkpoint.*checkpoint.every_steps' "$DTRAIN" sample nockpt
expect_fail 2 'usage: dtrain sample' "$DTRAIN" sample -n ten run
expect_fail 2 'usage: dtrain sample' "$DTRAIN" sample --temperature -1 run
expect_fail 2 'usage: dtrain sample' "$DTRAIN" sample --seed x run
expect_fail 2 'usage: dtrain sample' "$DTRAIN" sample --bogus run
expect_fail 2 'usage: dtrain sample' "$DTRAIN" sample --prompt
expect_fail 2 'usage: dtrain sample' "$DTRAIN" sample
expect_fail 2 'usage: dtrain sample' "$DTRAIN" sample run run
echo "sample: ok"
