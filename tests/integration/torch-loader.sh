#!/bin/sh
# SPDX-License-Identifier: MIT
# contrib/dtrain_torch.py against dtrain: short runs of the shipped MLP,
# CNN and char-GPT jobs (few steps, small batches, through --set) and of
# a job made here of the remaining layer types and settings, each
# exported with `dtrain export --format torch`, loaded into a torch module
# with no other step; the module's logits must equal those of `dtrain
# predict` on the same inputs to |torch - dtrain| <= 1e-5 * (1 + |dtrain|)
# elementwise (numpy.allclose with rtol = atol = 1e-5: relative for large
# logits, absolute near 0), and its accuracy on the eval data must be the
# accuracy of `dtrain eval` exactly (the same count of correct labels).
# The file's __metadata__ must hold the resolved job and the graph.
# Skipped (exit 77) where python3 cannot import torch.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

need_torch
LOADER="$top_srcdir/contrib"
J="$top_srcdir/jobs"

TEXT=/usr/share/games/fortunes/cookie
if [ ! -f "$TEXT" ]; then
	# Without fortunes: some English in a fixed order, few characters.
	"$PYTHON" -c '
import itertools
w = ["the cat sat on the mat. ", "a dog ran to the park, ",
     "We like to read good books! ", "rain fell on the hills all day\n"]
open("text.txt", "w").write("".join(w[(i * 7) % 4] for i in range(2000)))'
	TEXT=$SCRATCH/text.txt
fi

run() {
	"$DTRAIN" run -q "$@" >/dev/null 2>run.err ||
		{ cat run.err >&2; fail "training $* failed"; }
}
run "$J/fashion-mnist-mlp.yaml" --set name=mlp --set train.steps=20
run "$J/fashion-mnist-cnn.yaml" --set name=cnn --set train.steps=5 \
	--set train.global_batch=32
# Every other layer type and setting the loader maps: strided, padded,
# bias-free conv; batchnorm of maps and of vectors (running statistics);
# padded pools; reshape; dense row by row; attention without the causal
# mask; layernorm with its eps; concat; softmax; an activation layer;
# dropout.
cat >mix.yaml <<YAML
name: mix
seed: 5
data:
  format: idx
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  eval:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
  scale: 0.00392156862745098
model:
  input_shape: [28, 28]
  layers:
    - {type: conv2d, name: c1, channels: 4, kernel: 3, stride: 2, padding: 1, bias: false, activation: tanh}
    - {type: batchnorm, name: bn1}
    - {type: avgpool2d, name: ap, kernel: 3, stride: 2, padding: 1}
    - {type: maxpool2d, name: mp, kernel: 3, stride: 1, padding: 1}
    - {type: reshape, name: rs, shape: [7, -1]}
    - {type: dense, name: d1, units: 16, activation: sigmoid}
    - {type: attention, name: att, heads: 2, causal: false}
    - {type: layernorm, name: ln, eps: 0.001}
    - {type: concat, name: cat, inputs: [d1, ln]}
    - {type: softmax, name: sm}
    - {type: gelu, name: act}
    - {type: flatten, name: fl}
    - {type: batchnorm, name: bn2}
    - {type: dropout, name: dr, rate: 0.5}
    - {type: dense, name: out, units: 10, bias: false}
  loss: softmax_cross_entropy
train:
  global_batch: 32
  steps: 20
  optimizer: adam
  lr: 0.01
YAML
run mix.yaml
run "$J/char-gpt.yaml" --set name=gpt --set train.steps=3 \
	--set train.global_batch=8 --set train.micro_batch=8 \
	--set train.schedule.warmup_steps=1 --set data.eval_fraction=0.05 \
	--set "data.train.file=$TEXT"

"$TORCH_PY" - "$FMNIST" "$TEXT" <<'PY'
import gzip, sys
import numpy as np
d, text = sys.argv[1], sys.argv[2]
x = np.frombuffer(gzip.open(d + "/t10k-images-idx3-ubyte.gz").read()[16:],
                  np.uint8).reshape(-1, 28, 28)
np.save("x.npy", x[:2000])
open("tail.txt", "wb").write(open(text, "rb").read()[-8000:])
PY

for r in mlp cnn mix gpt; do
	"$DTRAIN" export --format torch -o $r.safetensors runs/$r >/dev/null
	"$DTRAIN" eval --json runs/$r >$r.eval.json
done
"$DTRAIN" eval --json --data tail.txt runs/gpt >gpt.tail.json
"$DTRAIN" predict --input x.npy -o mlp.logits.npy runs/mlp 2>/dev/null
"$DTRAIN" predict --input x.npy -o cnn.logits.npy runs/cnn 2>/dev/null
"$DTRAIN" predict --input x.npy -o mix.logits.npy runs/mix 2>/dev/null
"$DTRAIN" predict --input tail.txt -o gpt.logits.npy runs/gpt 2>/dev/null

"$TORCH_PY" - "$LOADER" "$FMNIST" <<'PY'
import gzip, json, struct, sys
import numpy as np
import torch
sys.path.insert(0, sys.argv[1])
import dtrain_torch

d = sys.argv[2]
torch.set_num_threads(1)
images = np.frombuffer(gzip.open(d + "/t10k-images-idx3-ubyte.gz")
                       .read()[16:], np.uint8).reshape(-1, 28, 28)
labels = np.frombuffer(gzip.open(d + "/t10k-labels-idx1-ubyte.gz")
                       .read()[8:], np.uint8)
failed = []

def compare(name, ours, theirs):
    if ours.shape != theirs.shape:
        sys.exit("%s: torch gives %r, dtrain %r" % (name, ours.shape,
                                                     theirs.shape))
    diff = np.abs(ours.astype(np.float64) - theirs)
    rel = diff / np.maximum(np.abs(theirs), 1e-30)
    print("%s logits %s: max abs diff %.3g, max rel diff %.3g, max "
          "diff / (1 + |logit|) %.3g (|logit| up to %.3g)"
          % (name, theirs.shape, diff.max(), rel.max(),
             (diff / (1 + np.abs(theirs))).max(), np.abs(theirs).max()))
    if not (diff <= 1e-5 * (1 + np.abs(theirs))).all():
        failed.append("%s: logits differ past 1e-5" % name)

def check_accuracy(name, correct, total, ev):
    print("%s accuracy: torch %d of %d, dtrain eval %.6f"
          % (name, correct, total, ev["accuracy"]))
    if ev["labels_per_sample"] * ev["samples"] != total or \
            round(ev["accuracy"] * total) != correct:
        failed.append("%s: torch accuracy %d/%d, dtrain eval %r of %d"
                      % (name, correct, total, ev["accuracy"],
                         ev["samples"]))

for name in ("mlp", "cnn", "mix"):
    model = dtrain_torch.load(name + ".safetensors")
    meta_job = model.job
    if "name: \"%s\"" % name not in meta_job or model.step < 1:
        failed.append("%s: no resolved job or step in __metadata__" % name)
    with torch.no_grad():
        x = model.prepare(np.load("x.npy"))
        compare(name, model(x).numpy(), np.load(name + ".logits.npy"))
        pred = np.concatenate([model(model.prepare(images[i:i + 1000]))
                               .argmax(1).numpy()
                               for i in range(0, len(images), 1000)])
    check_accuracy(name, int((pred == labels).sum()), len(labels),
                   json.load(open(name + ".eval.json")))

# char-GPT: the windows of tail.txt as dtrain cuts them (stride = context),
# token ids from the run's vocabulary: predict's windows of inputs (all
# 8000 / 64 = 125), eval's with the next character as the label (124: the
# last has none).
model = dtrain_torch.load("gpt.safetensors")
v = open("runs/gpt/vocab.bin", "rb").read()
(n,) = struct.unpack("<q", v[24:32])
ids = {int(u): i for i, u in enumerate(np.frombuffer(v, "<u4", n, 32))}
tokens = np.array([ids[b] for b in open("tail.txt", "rb").read()])
ctx = model.input_shape[0]
nx = (len(tokens) - ctx) // ctx + 1
nw = (len(tokens) - ctx - 1) // ctx + 1
x = np.stack([tokens[i * ctx:i * ctx + ctx] for i in range(nx)])
y = np.stack([tokens[i * ctx + 1:i * ctx + ctx + 1] for i in range(nw)])
with torch.no_grad():
    logits = model(torch.from_numpy(x.astype(np.float32))).numpy()
compare("char-gpt", logits, np.load("gpt.logits.npy"))
check_accuracy("char-gpt", int((logits[:nw].argmax(-1) == y).sum()), y.size,
               json.load(open("gpt.tail.json")))
graph = json.loads(dtrain_torch.read_safetensors("gpt.safetensors")[1]
                   ["graph"])
kinds = sorted({l["type"] for l in graph["layers"]})
if kinds != ["add", "attention", "dense", "dropout", "embedding",
             "layernorm", "pos_embedding"]:
    failed.append("char-gpt graph layer types: %r" % kinds)
if failed:
    sys.exit("\n".join(failed))
PY
echo "torch-loader: ok"
