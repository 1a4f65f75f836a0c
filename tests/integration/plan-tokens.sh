#!/bin/sh
# SPDX-License-Identifier: MIT
# dtrain plan counts the dataset memory of token and text jobs as run
# allocates it (issue 31: plan counted 0 bytes for them). Worked out by
# hand from the loaders (src/train/source.c, src/data/tokens.c, text.c):
#   tokens: 3000 uint16 ids, context 16, eval file = the same file:
#     windows (3000 - 17) / 16 + 1 = 187 per split; train 3000 * 2 ids
#     + 187 * 8 (the epoch order) = 7496 bytes, eval 6000: 13496;
#   text: 800 bytes "abbaabab" x 100, text_unit bytes, context 8, no eval
#     file (data.eval_fraction 0.1): windows (800 - 9) / 8 + 1 = 99, 9
#     held out, 90 trained; ids uint16, and the eval split holds the
#     file's ids again: train 1600 + 90 * 8 = 2320, eval 1600: 3920.
# Both plan --json and the run's own plan.json must say so.
. "${top_srcdir}/tests/integration/lib.sh"

"$PYTHON" - <<'PY'
import struct
open("tok.bin", "wb").write(b"".join(struct.pack("<H", (7 * i) % 50)
                                     for i in range(3000)))
open("ab.txt", "w").write("abbaabab" * 100)
PY
cat >tok.yaml <<'YAML'
name: tok
data: {format: tokens, token_bytes: 2, context: 16, train: {file: tok.bin}, eval: {file: tok.bin}}
model:
  input_shape: [16]
  layers:
    - {type: embedding, vocab: 50, dim: 4}
    - {type: dense, units: 50}
train: {global_batch: 4, steps: 1, optimizer: sgd, lr: 0.1}
YAML
cat >text.yaml <<'YAML'
name: text
data: {format: text, context: 8, text_unit: bytes, train: {file: ab.txt}}
model:
  input_shape: [8]
  layers:
    - {type: embedding, vocab: 4, dim: 4}
    - {type: dense, units: 4}
train: {global_batch: 4, steps: 1, optimizer: sgd, lr: 0.1}
YAML

# check JOB BYTES TRAIN EVAL
check() {
	"$DTRAIN" plan --json "$1.yaml" >"$1.plan.json" ||
		fail "plan of $1 failed"
	"$DTRAIN" run -q --run-dir "r-$1" "$1.yaml" >/dev/null 2>"$1.err" ||
		{ cat "$1.err" >&2; fail "run of $1 failed"; }
	for f in "$1.plan.json" "r-$1/plan.json"; do
		"$PYTHON" - "$f" "$2" "$3" "$4" <<'PY' || fail "$1: $f"
import json, sys
d = json.load(open(sys.argv[1]))
got = (d["memory_per_rank"]["dataset"], d["data"]["train_samples"],
       d["data"]["eval_samples"])
want = tuple(int(x) for x in sys.argv[2:5])
if got != want:
    sys.exit("%s: dataset bytes, train and eval samples %r, expected %r"
             % (sys.argv[1], got, want))
PY
	done
}
check tok 13496 187 187
check text 3920 90 9

# A pattern of llm.c shards (data.format llmc): plan sees every shard
# there, as run does, and names the first missing one as run would (it
# looked for a file named by the pattern itself and failed, exit 1).
"$PYTHON" - <<'PY'
import struct
for i in range(2):
    with open("shard-%03d.bin" % i, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, 100, *([0] * 253)))
        f.write(struct.pack("<100H", *[(3 * j + i) % 50 for j in range(100)]))
PY
sed -e 's/format: tokens, token_bytes: 2,/format: llmc,/' \
	-e 's/file: tok.bin}, eval: {file: tok.bin}/file: "shard-{000..001}.bin"}/' \
	tok.yaml >shards.yaml
"$DTRAIN" plan shards.yaml >shards.out 2>shards.err ||
	{ cat shards.err >&2; fail "plan of a shard pattern failed"; }
grep -Eq '^  train.file +local +.*/shard-\{000\.\.001\}\.bin$' shards.out ||
	fail "plan does not show the shard pattern as local"
"$DTRAIN" run -q --run-dir r-shards shards.yaml >/dev/null 2>shards.err ||
	{ cat shards.err >&2; fail "run of the shard pattern failed"; }
expect_fail 1 "^dtrain: --set data.train.file=shard-\{000\.\.002\}\.bin: data\.train\.file: .*/shard-002\.bin: cannot open: No such file or directory$" \
	"$DTRAIN" plan shards.yaml --set 'data.train.file=shard-{000..002}.bin'
echo "plan-tokens: plan and run agree on token and text dataset memory"
