#!/bin/sh
# SPDX-License-Identifier: MIT
# dtrain eval and predict on a short Fashion-MNIST MLP run with an eval
# split and a checkpoint every 10 steps:
# - eval of the last checkpoint gives the eval_loss and eval_accuracy of
#   summary.json to 1e-6, eval --checkpoint 10 those that metrics.jsonl
#   logged at step 10, on 1 and on 2 ranks; --data IMAGES,LABELS with the
#   eval files gives the same numbers, --data train the 60000 samples;
# - the per-class counts, the confusion matrix and the top-k accuracy
#   agree with the labels and with the logits and top-k ids that predict
#   writes (worked out again here with numpy);
# - predict cuts a text into whole windows of data.context inputs;
# - predict gives the same logits from the IDX file, an NPY copy of it
#   and a CSV of its first 50 rows (against the IDX file in batches of
#   50, as a row's bits may depend on its batch's size), the same file on
#   1, 2 and 3 ranks and
#   probabilities that are the softmax of the logits;
# - a missing checkpoint, inputs of the wrong size and bad options are
#   refused, --top-k above the classes too (it would count every label);
#   without --top-k, a model of 3 classes counts the top 3, not 5.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

NP_PY=
for p in "$PYTHON" /usr/bin/python3; do
	if "$p" -c 'import numpy' 2>/dev/null; then NP_PY=$p; break; fi
done
if [ -z "$NP_PY" ]; then
	echo "SKIP: no python3 with numpy (apt-get install python3-numpy)"
	exit 77
fi

"$DTRAIN" run -q "$top_srcdir/jobs/fashion-mnist-mlp.yaml" \
	--set name=mlp --set train.steps=20 --set eval.every_steps=10 \
	--set checkpoint.every_steps=10 --set log.every_steps=10 \
	>/dev/null 2>run.err || { cat run.err >&2; fail "training failed"; }

"$DTRAIN" eval --json runs/mlp >e1.json
"$DTRAIN" eval --json --checkpoint 10 runs/mlp >e10.json
mpi 2 "$DTRAIN" eval --json runs/mlp >e2.json
mpi 2 "$DTRAIN" eval --json --checkpoint 10 runs/mlp >e10n2.json
"$DTRAIN" eval --json --data \
	"$FMNIST/t10k-images-idx3-ubyte.gz,$FMNIST/t10k-labels-idx1-ubyte.gz" \
	runs/mlp >epath.json
"$DTRAIN" eval --json --data train --top-k 3 runs/mlp >etrain.json
"$DTRAIN" eval runs/mlp >e1.txt
grep -q '^accuracy ' e1.txt || fail "eval: no accuracy line in the text"
grep -q '^confusion matrix' e1.txt || fail "eval: no confusion matrix"

"$DTRAIN" predict runs/mlp --input "$FMNIST/t10k-images-idx3-ubyte.gz" \
	-o logits.npy 2>/dev/null
"$DTRAIN" predict runs/mlp --input "$FMNIST/t10k-images-idx3-ubyte.gz" \
	-o probs.npy --probabilities 2>/dev/null
"$DTRAIN" predict runs/mlp --input "$FMNIST/t10k-images-idx3-ubyte.gz" \
	-o top.npy --top-k 5 --batch 77 2>/dev/null
for n in 2 3; do
	mpi $n "$DTRAIN" predict runs/mlp \
		--input "$FMNIST/t10k-images-idx3-ubyte.gz" -o logits$n.npy \
		2>/dev/null
	cmp logits.npy logits$n.npy ||
		fail "predict on $n ranks wrote another file than on 1"
done

"$NP_PY" - "$FMNIST" <<'PY'
import gzip, sys
import numpy as np
d = sys.argv[1]
x = np.frombuffer(gzip.open(d + "/t10k-images-idx3-ubyte.gz").read()[16:],
                  np.uint8).reshape(-1, 28, 28)
y = np.frombuffer(gzip.open(d + "/t10k-labels-idx1-ubyte.gz").read()[8:],
                  np.uint8)
np.save("x.npy", x)
np.save("y.npy", y)
with open("x.csv", "w") as f:
    for i in range(50):
        f.write(",".join(str(v) for v in x[i].ravel()) + ",%d\n" % y[i])
PY
"$DTRAIN" predict runs/mlp --input x.npy -o logits_npy.npy 2>/dev/null
"$DTRAIN" predict runs/mlp --input x.csv -o logits_csv.npy 2>/dev/null
# The CSV's 50 rows are one batch: the IDX file's first batch of 50 holds
# the same rows (BLAS may round a row otherwise in a batch of 256).
"$DTRAIN" predict runs/mlp --input "$FMNIST/t10k-images-idx3-ubyte.gz" \
	-o logits_b50.npy --batch 50 2>/dev/null

"$NP_PY" - <<'PY'
import json, sys
import numpy as np

def load(p):
    return json.load(open(p))

summary = load("runs/mlp/summary.json")
evals = [json.loads(l) for l in open("runs/mlp/metrics.jsonl")
         if "eval_loss" in l]
at10 = [e for e in evals if e.get("step") == 10]
if not at10:
    sys.exit("metrics.jsonl has no eval line at step 10")
e1, e2, e10, e10n2 = (load(p) for p in
                      ("e1.json", "e2.json", "e10.json", "e10n2.json"))
ep, et = load("epath.json"), load("etrain.json")

def same(what, a, b, tol=1e-6):
    if abs(a - b) > tol:
        sys.exit("%s: %r vs %r (more than %g apart)" % (what, a, b, tol))

for e in (e1, e2, ep):
    same("eval loss vs summary", e["loss"], summary["eval_loss"])
    same("eval accuracy vs summary", e["accuracy"],
         summary["eval_accuracy"])
for e in (e10, e10n2):
    same("eval loss at step 10", e["loss"], at10[0]["eval_loss"])
    same("eval accuracy at step 10", e["accuracy"],
         at10[0]["eval_accuracy"])
if e1["step"] != 20 or e10["step"] != 10:
    sys.exit("wrong checkpoints: %r %r" % (e1["step"], e10["step"]))
if et["samples"] != 60000 or e1["samples"] != 10000:
    sys.exit("sample counts %r %r" % (et["samples"], e1["samples"]))

y = np.load("y.npy")
logits, probs, top = np.load("logits.npy"), np.load("probs.npy"), \
    np.load("top.npy")
if logits.shape != (10000, 10) or logits.dtype != np.float32:
    sys.exit("logits: %r %r" % (logits.shape, logits.dtype))
if top.shape != (10000, 5) or top.dtype != np.int64:
    sys.exit("top-k ids: %r %r" % (top.shape, top.dtype))
pred = logits.argmax(1)
same("accuracy from the logits", (pred == y).mean(), e1["accuracy"], 0)
same("top-5 from predict", (top == y[:, None]).any(1).mean(),
     e1["top_k_accuracy"], 0)
if (top[:, 0] != pred).any():
    sys.exit("top-k's first id is not the argmax of the logits")
conf = np.zeros((10, 10), int)
np.add.at(conf, (y, pred), 1)
if conf.tolist() != e1["confusion"]:
    sys.exit("confusion matrix differs from the one of the logits")
if e1["class_counts"] != np.bincount(y, minlength=10).tolist():
    sys.exit("class counts differ from the labels")
for c in range(10):
    same("class %d accuracy" % c, e1["per_class_accuracy"][c],
         conf[c, c] / conf[c].sum(), 1e-12)
e = np.exp(logits - logits.max(1, keepdims=True))
e /= e.sum(1, keepdims=True)
same("probabilities vs softmax of the logits", abs(e - probs).max(), 0,
     1e-6)
if not np.array_equal(np.load("logits_npy.npy"), logits):
    sys.exit("NPY input gives other logits than IDX")
if not np.array_equal(np.load("logits_csv.npy"), np.load("logits_b50.npy")[:50]):
    sys.exit("CSV input gives other logits than IDX")
same("logits in batches of 50 vs 256, over 1 + |logit|",
     (abs(np.load("logits_b50.npy") - logits) / (1 + abs(logits))).max(),
     0, 1e-5)
print("eval: loss %.9f accuracy %.4f = summary.json; predict agrees"
      % (e1["loss"], e1["accuracy"]))
PY

expect_fail 2 'no checkpoint of step 7' "$DTRAIN" eval --checkpoint 7 runs/mlp
expect_fail 2 'not a run directory' "$DTRAIN" eval .
expect_fail 2 'IMAGES,LABELS' "$DTRAIN" eval --data x.npy runs/mlp
expect_fail 2 'no such split|--data' "$DTRAIN" eval --data nope runs/mlp
expect_fail 2 '--input is required' "$DTRAIN" predict -o a.npy runs/mlp
expect_fail 2 'exclude each other' "$DTRAIN" predict --input x.npy \
	-o a.npy --top-k 2 --probabilities runs/mlp
"$NP_PY" -c 'import numpy as np; np.save("bad.npy", np.zeros((3, 5), np.float32))'
expect_fail 1 'samples have 5 values but the model takes 784' \
	"$DTRAIN" predict --input bad.npy -o a.npy runs/mlp
[ ! -e a.npy ] || fail "a refused predict left a.npy"

expect_fail 2 '--top-k 11: the model has 10 classes' \
	"$DTRAIN" eval --top-k 11 runs/mlp
i=0
: >three.csv
while [ $i -lt 30 ]; do
	c=$((i % 3))
	echo "$c.$i,-$c.$i,$c" >>three.csv
	i=$((i + 1))
done
cat >three.yaml <<YAML
name: three
data: {format: csv, train: {file: three.csv}, eval: {file: three.csv}}
model: {input_shape: [2], layers: [{type: dense, units: 3}]}
train: {global_batch: 10, steps: 3, optimizer: sgd, lr: 0.01}
YAML
"$DTRAIN" run -q three.yaml >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "the 3-class run failed"; }
"$DTRAIN" eval --json runs/three >e3.json
"$NP_PY" -c 'import json, sys
e = json.load(open("e3.json"))
if e["top_k"] != 3 or e["top_k_accuracy"] != 1:
    sys.exit("3 classes: top_k %r, top_k_accuracy %r, not 3 and 1"
             % (e["top_k"], e["top_k_accuracy"]))' || fail "eval's default top-k"
expect_fail 2 '--top-k 4: the model has 3 classes' \
	"$DTRAIN" eval --top-k 4 runs/three

# A text model's inputs are windows of data.context characters with no
# label after them: 16 characters give 2 windows of 8, 8 give 1 (the
# 17 and 9 of training samples are not needed), 7 none.
i=0
: >abc.txt
while [ $i -lt 40 ]; do
	echo "the cat sat on a mat $i" >>abc.txt
	i=$((i + 1))
done
cat >abc.yaml <<YAML
name: abc
data: {format: text, train: {file: abc.txt}, context: 8, text_unit: bytes}
model:
  input_shape: [8]
  layers:
    - {type: embedding, vocab: 32, dim: 4}
    - {type: dense, units: 32}
train: {global_batch: 4, steps: 2, optimizer: sgd, lr: 0.1}
YAML
"$DTRAIN" run -q abc.yaml >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "the text run failed"; }
for n in 16 8; do
	printf 'the cat sat on a' | head -c $n >in$n.txt
	"$DTRAIN" predict --input in$n.txt -o t$n.npy runs/abc 2>/dev/null ||
		fail "predict on $n characters failed"
	"$NP_PY" -c 'import numpy as np, sys
a = np.load(sys.argv[1]); want = (int(sys.argv[2]) // 8, 8, 32)
if a.shape != want:
    sys.exit("%s: shape %s, not %s" % (sys.argv[1], a.shape, want))' \
		t$n.npy $n || fail "predict on $n characters"
done
printf 'the cat' >in7.txt
expect_fail 1 'in7.txt: 7 tokens, too few for one input of context 8' \
	"$DTRAIN" predict --input in7.txt -o t7.npy runs/abc
echo "eval-predict: ok"
