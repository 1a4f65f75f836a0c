#!/bin/sh
# SPDX-License-Identifier: MIT
# data.format: text with text_unit: bpe: a tokenizer learned by dtrain
# tokenize (300 ids) from a text written here; a tiny GPT trains on it on
# one rank and its held-out loss falls; the text is encoded once, into
# the download cache (one bpe-T-X.tok file, which is the encoding
# dtrain tokenize writes), and a second run maps it instead of encoding
# again; the run keeps the tokenizer as tokenizer.json, with which
# `dtrain sample` prints the prompt and then text that decodes from the
# tokenizer's pieces; a missing data.tokenizer, a tokenizer with more ids
# than the model's output, a tokenizer with another text_unit and a
# damaged cache file are refused, the last leaving no run directory; a
# resume over another tokenizer is refused (resume --start-over takes it).
. "${top_srcdir}/tests/integration/lib.sh"
export DTRAIN_CACHE="$SCRATCH/cache"

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
"$DTRAIN" tokenize --vocab-size 300 -o tok.json text.txt >/dev/null

job() {
	cat <<YAML
name: tiny-bpe
seed: 3
data:
  format: text
  train: {file: $SCRATCH/text.txt}
  text_unit: bpe
$1
  context: 16
  eval_fraction: 0.1
model:
  input_shape: [16]
  layers:
    - {type: embedding, name: tok, vocab: $2, dim: 32}
    - {type: pos_embedding, name: pos, length: 16, dim: 32}
    - repeat: 1
      name: block
      layers:
        - {type: layernorm, name: ln1}
        - {type: attention, name: attn, heads: 2}
        - {type: add, name: res1, inputs: [block_input, attn]}
        - {type: layernorm, name: ln2}
        - {type: dense, name: fc, units: 64, activation: gelu}
        - {type: dense, name: proj, units: 32}
        - {type: add, name: res2, inputs: [res1, proj]}
    - {type: layernorm, name: ln_f}
    - {type: dense, name: head, units: $2}
train:
  global_batch: 16
  steps: 40
  optimizer: adamw
  lr: 0.01
eval:
  every_steps: 20
log:
  every_steps: 20
YAML
}
job "  tokenizer: tok.json" 300 >job.yaml

"$DTRAIN" run -q --run-dir run job.yaml >/dev/null
[ -f run/tokenizer.json ] || fail "no tokenizer.json in the run directory"
cmp -s run/tokenizer.json tok.json || fail "the run's tokenizer differs"
set -- "$DTRAIN_CACHE"/bpe-*.tok
[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one cached encoding: $*"
cached=$1
"$DTRAIN" tokenize -t tok.json -o direct.tok text.txt >/dev/null
cmp "$cached" direct.tok || fail "the cached ids are not the encoding"
"$PYTHON" - run <<'PY' || fail "the eval loss did not fall"
import json, sys
ev = [json.loads(l)["eval_loss"] for l in open(sys.argv[1] + "/metrics.jsonl")
      if '"eval_loss"' in l]
assert len(ev) == 2 and ev[-1] < 0.75 * ev[0], ev
print("eval loss %.3f -> %.3f" % (ev[0], ev[-1]))
PY

# the second run maps the cache: make it recognisable and see it read
touch -d '2001-01-01' "$cached"
"$DTRAIN" run -q --run-dir run2 job.yaml >/dev/null
[ "$(find "$DTRAIN_CACHE" -name 'bpe-*.tok' | wc -l)" -eq 1 ] ||
	fail "the second run encoded again"
[ -z "$(find "$cached" -newer text.txt)" ] || fail "the cache was rewritten"
cmp run/metrics.jsonl run2/metrics.jsonl >/dev/null 2>&1 ||
	"$PYTHON" - <<'PY' || fail "the runs from cache and text differ"
import json
a = [json.loads(l).get("loss") for l in open("run/metrics.jsonl")]
b = [json.loads(l).get("loss") for l in open("run2/metrics.jsonl")]
assert a == b, (a, b)
PY

"$DTRAIN" sample --prompt "the cat" -n 12 --seed 5 run >s1
"$PYTHON" - <<'PY' || fail "sample did not print the prompt and 12 tokens"
import json
out = open("s1", "rb").read()
assert out.startswith(b"the cat") and out.endswith(b"\n"), out
v = json.load(open("tok.json"))["model"]["vocab"]
assert len(out) - len("the cat") - 1 >= 12, out
print(out)
PY
"$DTRAIN" sample -n 5 run >/dev/null

# refused
job "" 300 >nojob.yaml
expect_fail 2 'text_unit bpe needs data.tokenizer' \
	"$DTRAIN" run -q --run-dir r3 nojob.yaml
sed 's/text_unit: bpe/text_unit: bytes/' job.yaml >bytes.yaml
expect_fail 2 'data.tokenizer: a tokenizer is used only with data.text_unit: bpe' \
	"$DTRAIN" run -q --run-dir r6 bytes.yaml
job "  tokenizer: tok.json" 200 >small.yaml
expect_fail 1 'tok.json: the tokenizer has 300 ids but the model.s output has 200' \
	"$DTRAIN" run -q --run-dir r4 small.yaml
printf 'xyz' >"$cached"
expect_fail 1 'bpe-.*\.tok: byte 2: the file ends inside a token' \
	"$DTRAIN" run -q --run-dir r5 job.yaml
# refused before its first step, the run leaves no directory (it kept
# r5/tokenizer.json, written before the text's ids were read)
[ ! -e r5 ] || fail "a refused run left $(ls r5) in its run directory"

# A resume over another tokenizer under the same path is refused naming
# both, and the run's tokenizer.json is kept (it went on, exit 0, with
# the ids meaning other tokens, and replaced tokenizer.json); the same
# tokenizer resumes as before; --start-over takes the new one.
rm "$cached"
cp tok.json tokr.json
job "  tokenizer: tokr.json" 300 >resume.yaml
"$DTRAIN" run -q --run-dir r7 --set checkpoint.every_steps=20 resume.yaml \
	>/dev/null
rm -r r7/checkpoints/step-000000040
"$DTRAIN" resume -q r7 >/dev/null 2>r7.err ||
	{ cat r7.err >&2; fail "resume with the same tokenizer"; }
rm -r r7/checkpoints/step-000000040
tr 'a-z' 'b-za' <text.txt >other.txt
"$DTRAIN" tokenize --vocab-size 300 -o tokr.json other.txt >/dev/null
expect_fail 1 "r7/tokenizer.json: the run was trained with this tokenizer, and .*/tokr.json now gives another" \
	"$DTRAIN" resume -q r7
cmp -s r7/tokenizer.json tok.json || fail "the run's tokenizer.json was replaced"
[ ! -e r7/checkpoints/step-000000040 ] || fail "the refused resume trained"
# --start-over starts a new run in the directory, so the tokenizer it
# gives now is taken and kept as tokenizer.json (it was refused, exit 1);
# while a checkpoint is left, --start-over is refused and keeps the old.
expect_fail 2 "r7: --start-over is for a run with no usable checkpoint" \
	"$DTRAIN" resume -q --start-over r7
cmp -s r7/tokenizer.json tok.json || fail "a refused --start-over replaced tokenizer.json"
rm -r r7/checkpoints/step-*
"$DTRAIN" resume -q --start-over r7 >/dev/null 2>r7.so ||
	{ cat r7.so >&2; fail "resume --start-over with another tokenizer"; }
grep -q "r7/tokenizer.json: replaced by the tokenizer of .*tokr.json (--start-over)" r7.so ||
	{ cat r7.so >&2; fail "--start-over did not say it replaced tokenizer.json"; }
cmp -s r7/tokenizer.json tokr.json || fail "--start-over did not keep the new tokenizer"
[ -e r7/checkpoints/step-000000040 ] || fail "--start-over did not train"
echo "ok: a BPE text job trains, caches its encoding and samples"
