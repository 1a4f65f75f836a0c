#!/bin/sh
# SPDX-License-Identifier: MIT
# dtrain predict on an NPY file of token ids for a text model: the ids go
# in as they are (data.scale, default 1/255, is for idx, npy and csv
# data), so "abababab" as ids 0 1 0 1 ... gives the logits of the text
# itself; ids the embedding has no row for (too large, negative,
# fractional, NaN) are refused naming the file, the sample and the
# embedding, exit status 1, and no output is written. Before the fix
# predict scaled the ids and the embedding aborted on an assertion.
. "${top_srcdir}/tests/integration/lib.sh"

NP_PY=
for p in "$PYTHON" /usr/bin/python3; do
	if "$p" -c 'import numpy' 2>/dev/null; then NP_PY=$p; break; fi
done
if [ -z "$NP_PY" ]; then
	echo "SKIP: no python3 with numpy (apt-get install python3-numpy)"
	exit 77
fi

i=0
: >ab.txt
while [ $i -lt 20 ]; do
	printf 'abbaabab' >>ab.txt
	i=$((i + 1))
done
cat >ab.yaml <<YAML
name: ab
data: {format: text, train: {file: ab.txt}, context: 8, text_unit: bytes}
model:
  input_shape: [8]
  layers:
    - {type: embedding, name: emb, vocab: 4, dim: 4}
    - {type: dense, units: 4}
train: {global_batch: 4, steps: 2, optimizer: sgd, lr: 0.1}
YAML
"$DTRAIN" run -q ab.yaml >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "the text run failed"; }
printf 'abababab' >in.txt
"$DTRAIN" predict --input in.txt -o text.npy runs/ab 2>/dev/null ||
	fail "predict on the text failed"
"$NP_PY" -c 'import numpy as np
np.save("ids.npy", np.array([[0, 1] * 4], dtype=np.int64))
np.save("big.npy", np.array([[0, 1, 0, 1, 0, 4, 0, 1]], dtype=np.int64))
np.save("neg.npy", np.array([[0, 1, 0, 1, 0, 1, 0, -1]], dtype=np.int64))
np.save("frac.npy", np.array([[0.5] * 8], dtype=np.float32))
np.save("nan.npy", np.array([[np.nan] * 8], dtype=np.float32))'
"$DTRAIN" predict --input ids.npy -o ids-out.npy runs/ab 2>err ||
	{ cat err >&2; fail "predict on NPY token ids failed"; }
"$NP_PY" -c 'import numpy as np
a, b = np.load("text.npy"), np.load("ids-out.npy")
assert a.shape == b.shape == (1, 8, 4), (a.shape, b.shape)
assert (a == b).all(), "the ids gave other logits than the text"' ||
	fail "NPY token ids and the text disagree"
expect_fail 1 'big.npy: sample 0 \(from 0\), input 5: 4 is not a token id: embedding emb takes whole numbers from 0 to 3' \
	"$DTRAIN" predict --input big.npy -o out.npy runs/ab
expect_fail 1 'neg.npy: sample 0 \(from 0\), input 7: -1 is not a token id' \
	"$DTRAIN" predict --input neg.npy -o out.npy runs/ab
expect_fail 1 'frac.npy: sample 0 \(from 0\), input 0: 0.5 is not a token id' \
	"$DTRAIN" predict --input frac.npy -o out.npy runs/ab
expect_fail 1 'nan.npy: .*nan is not a token id' \
	"$DTRAIN" predict --input nan.npy -o out.npy runs/ab
[ ! -e out.npy ] || fail "a refused predict left out.npy"
ls -a | grep -q '\.tmp\.' && fail "a temporary file was left behind"
echo "predict-token-ids: ok"
