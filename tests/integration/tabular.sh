#!/bin/sh
# SPDX-License-Identifier: MIT
# Tabular data and regression (issue 32), on data this test writes with
# numpy: a CSV classifier (jobs/tabular-csv.yaml) whose features span
# scales from 0.01 to 1000, trained with data.normalize: standard and on
# features numpy standardised with the default scale (now 1 for CSV) and
# with data.scale: 1; the statistics in meta.json against numpy's, the
# same after a resume, refused when the training file changed; eval
# applying them (its accuracy is the run's); predict on unlabelled CSV
# (header detected, --header, --no-header) and NPY, bit for bit the
# labelled file's; the export's tensors and input_normalize giving
# predict's outputs in numpy (no torch needed); a row of the wrong width
# refused naming its line and column; a file named with [ and {. Then
# regressions (jobs/regression-npy.yaml, NPY with two targets, and a CSV
# column), their R^2 against numpy least squares, eval's MSE/MAE/R^2 against the
# predictions.
. "${top_srcdir}/tests/integration/lib.sh"
NP=/usr/bin/python3
"$NP" -c 'import numpy' 2>/dev/null || { echo "SKIP: no numpy"; exit 77; }
JOBS="$top_srcdir/jobs"

# Three well-separated classes (a margin of several standard deviations
# between the blobs): every reference classifies the eval set exactly,
# which numpy's logistic regression below confirms.
"$NP" - <<'PY'
import numpy as np
rng = np.random.default_rng(7)
scales = np.array([0.01, 1.0, 100.0, 1000.0])
centres = np.array([[0, 0, 0, 0], [4, -3, 3, 0], [-3, 4, 0, 4]], float)
def blob(n):
    y = rng.integers(0, 3, n)
    return (centres[y] + rng.normal(0, 0.5, (n, 4))) * scales + 5 * scales, y
def csv(path, x, y=None, header=True):
    with open(path, "w") as f:
        if header:
            f.write("x0,x1,x2,x3" + (",label" if y is not None else "") + "\n")
        for i, row in enumerate(x):
            f.write(",".join("%.9g" % v for v in row)
                    + (",%d" % y[i] if y is not None else "") + "\n")
xt, yt = blob(480)
xe, ye = blob(240)
csv("train.csv", xt, yt)
csv("eval.csv", xe, ye)
# the numbers as dtrain reads them: float32 of the text
xt32 = np.loadtxt("train.csv", delimiter=",", skiprows=1, dtype=np.float32)[:, :4]
xe32 = np.loadtxt("eval.csv", delimiter=",", skiprows=1, dtype=np.float32)[:, :4]
mean = xt32.astype(np.float64).mean(0)
std = xt32.astype(np.float64).std(0)
np.save("stats.npy", np.stack([mean, std]))
csv("train-std.csv", (xt32 - mean) / std, yt)
csv("eval-std.csv", (xe32 - mean) / std, ye)
csv("eval-nolabel.csv", xe32)
csv("eval-nolabel-nohead.csv", xe32, header=False)
np.save("eval-x.npy", xe32)
np.save("eval-y.npy", ye)
# numpy's reference: softmax regression on the standardised features
zt, ze = (xt32 - mean) / std, (xe32 - mean) / std
w, b = np.zeros((4, 3)), np.zeros(3)
for _ in range(500):
    p = np.exp(zt @ w + b); p /= p.sum(1, keepdims=True)
    p[np.arange(len(yt)), yt] -= 1
    w -= 0.5 * zt.T @ p / len(yt); b -= 0.5 * p.mean(0)
ref = float(((ze @ w + b).argmax(1) == ye).mean())
open("ref-acc", "w").write("%.6f\n" % ref)
PY
cp "$JOBS/tabular-csv.yaml" job.yaml
sed -i 's|data/tabular-train.csv|train.csv|; s|data/tabular-eval.csv|eval.csv|' job.yaml
common="--set train.epochs=10 --set checkpoint.every_steps=100"
"$DTRAIN" run -q $common --run-dir std job.yaml >std.out 2>std.err ||
	{ cat std.err; fail "run with normalize standard"; }
sed 's|eval.csv|eval-std.csv|; s|train.csv|train-std.csv|; /normalize:/d' \
	job.yaml >job-pre.yaml
"$DTRAIN" run -q $common --run-dir pre job-pre.yaml >pre.out 2>&1 ||
	fail "run on standardised features"
"$DTRAIN" run -q $common --set data.scale=1 --run-dir one job-pre.yaml \
	>one.out 2>&1 || fail "run with data.scale 1"
# A file whose name holds pattern characters ([ ] { }) is that file for
# a format that takes no shards: it was refused, exit 2, "a pattern of
# shards is read for data.format tokens, llmc and u16 only".
cp train.csv 'train[1]{a}.csv'
"$DTRAIN" run -q $common --run-dir brackets \
	--set 'data.train.file="train[1]{a}.csv"' job.yaml >br.out 2>br.err ||
	{ cat br.err; fail "a CSV file named train[1]{a}.csv"; }
"$NP" -c 'import json, sys
a, b = (json.load(open(d + "/summary.json")) for d in ("std", "brackets"))
sys.exit(a["eval_accuracy"] != b["eval_accuracy"] or a["train_loss"] != b["train_loss"])' ||
	fail "train[1]{a}.csv did not train as train.csv"
# The run's first lines say the scale and the normalisation.
"$DTRAIN" run $common --set train.epochs=1 --run-dir say job.yaml \
	>/dev/null 2>say.err || fail "run (announce)"
grep -q '^dtrain: inputs: scale 1 (the default for features stored as numbers), normalize standard (statistics of the training split)$' say.err ||
	{ cat say.err; fail "no inputs line at the start of the run"; }
"$DTRAIN" plan --dry-run job.yaml >plan.txt || fail "plan"
grep -q '^inputs: scale 1 (CSV numbers go in as read); normalize standard per feature' plan.txt ||
	fail "plan does not say the scale and normalisation"
"$DTRAIN" plan --dry-run "$JOBS/regression-npy.yaml" | grep -q \
	'^inputs: scale 1/255 if the features are stored as bytes (uint8), else 1; normalize standard' ||
	fail "plan of the npy job"
"$NP" - <<'PY' || fail "accuracies"
import json
acc = {k: json.load(open(k + "/summary.json"))["eval_accuracy"]
       for k in ("std", "pre", "one")}
ref = float(open("ref-acc").read())
print("accuracy: normalize standard %(std).4f, standardised by numpy "
      "(default scale) %(pre).4f, data.scale 1 %(one).4f" % acc,
      "numpy logistic regression %.4f" % ref)
assert ref == 1.0, ref
assert acc["pre"] == acc["one"], acc          # the default is 1 for CSV
assert abs(acc["std"] - acc["one"]) <= 0.005, acc
assert acc["std"] >= ref - 0.005, (acc, ref)
PY
# meta.json keeps numpy's statistics (shift = mean, mul = 1 / std).
check_stats() {
	"$NP" - "$1" <<'PY' || fail "statistics in $1"
import glob, json, sys
import numpy as np
mean, std = np.load("stats.npy")
for meta in sorted(glob.glob(sys.argv[1] + "/checkpoints/step-*/meta.json")):
    lines = json.load(open(meta))["data_norm"].splitlines()
    assert lines[0] == "scale 1" and lines[1] == "normalize standard 4", lines
    got = np.array([[float(v) for v in l.split()] for l in lines[2:]])
    assert np.allclose(got[:, 0], mean, rtol=1e-12, atol=1e-12), (got, mean)
    assert np.allclose(1 / got[:, 1], std, rtol=1e-12), (got, std)
print("meta.json statistics match numpy's in", sys.argv[1])
PY
}
check_stats std
# A resume keeps them: the newest checkpoint after it says the same text.
"$DTRAIN" resume -q --set train.epochs=12 std >resume.out 2>&1 ||
	{ cat resume.out; fail "resume"; }
check_stats std
first=$(ls -d std/checkpoints/step-* | head -1)
last=$(ls -d std/checkpoints/step-* | tail -1)
[ "$first" != "$last" ] || fail "the resume wrote no checkpoint"
"$NP" -c 'import json,sys; a,b=(json.load(open(p+"/meta.json"))["data_norm"] for p in sys.argv[1:]); assert a==b' \
	"$first" "$last" || fail "statistics changed over the resume"
# A changed training file is refused on resume, not silently re-fitted.
cp -r std changed
sed -i '2s/^[^,]*,/99999,/' train.csv
expect_fail 1 'other data.normalize statistics than the training data gives now' \
	"$DTRAIN" resume -q --set train.epochs=14 changed
# eval applies them: its accuracy and loss are the run's.
"$DTRAIN" eval --json std >eval.json || fail "eval"
"$NP" - <<'PY' || fail "eval against the run"
import json
e, s = json.load(open("eval.json")), json.load(open("std/summary.json"))
assert abs(e["accuracy"] - s["eval_accuracy"]) < 1e-12, (e, s)
assert abs(e["loss"] - s["eval_loss"]) < 1e-5, (e["loss"], s["eval_loss"])
PY
# predict: the labelled file, unlabelled with a detected header, with
# --header, without a header (detected and --no-header), and NPY: the
# same bits every time.
"$DTRAIN" predict std --input eval.csv -o p-lab.npy 2>/dev/null || fail "predict labelled"
"$DTRAIN" predict std --input eval-nolabel.csv -o p-det.npy 2>/dev/null ||
	fail "predict unlabelled"
"$DTRAIN" predict std --header --input eval-nolabel.csv -o p-head.npy \
	2>/dev/null || fail "predict --header"
"$DTRAIN" predict std --input eval-nolabel-nohead.csv -o p-none.npy \
	2>/dev/null || fail "predict without a header"
"$DTRAIN" predict std --no-header --input eval-nolabel-nohead.csv \
	-o p-nohead.npy 2>/dev/null || fail "predict --no-header"
"$DTRAIN" predict std --input eval-x.npy -o p-npy.npy 2>/dev/null ||
	fail "predict npy"
for f in p-det p-head p-none p-nohead p-npy; do
	cmp -s p-lab.npy $f.npy || fail "$f.npy differs from the labelled file's"
done
# --header on a file without one drops its first row; --no-header on a
# file with one refuses the names, naming the place.
"$DTRAIN" predict std --header --input eval-nolabel-nohead.csv -o p-drop.npy \
	2>/dev/null || fail "predict --header on data"
"$NP" -c 'import numpy as np; assert np.load("p-drop.npy").shape == (239, 3)' ||
	fail "--header did not take line 1 as the header"
expect_fail 1 'eval-nolabel.csv: line 1, column 1: expected a number, found "x0"' \
	"$DTRAIN" predict std --no-header --input eval-nolabel.csv -o x.npy
expect_fail 2 'exclude each other' \
	"$DTRAIN" predict std --header --no-header --input eval.csv -o x.npy
# A row of the wrong width: its line, the first column missing or extra,
# and the first data row's line (line 2 after the header; it said line 1,
# the header's, before).
{ head -3 eval-nolabel.csv; echo "1,2,3"; } >short.csv
expect_fail 1 'short.csv: line 4, column 4: 3 columns, expected 4 \(as on line 2\)' \
	"$DTRAIN" predict std --input short.csv -o x.npy
{ head -3 eval-nolabel.csv; echo "1,2,3,4,5,6"; } >long.csv
expect_fail 1 'long.csv: line 4, column 5: 6 columns, expected 4 \(as on line 2\)' \
	"$DTRAIN" predict std --input long.csv -o x.npy
{ head -1 eval-nolabel.csv; echo; sed -n 2,3p eval-nolabel.csv; echo "1,2,3"; } \
	>blank.csv
expect_fail 1 'blank.csv: line 5, column 4: 3 columns, expected 4 \(as on line 3\)' \
	"$DTRAIN" predict std --input blank.csv -o x.npy
# The first data row decides, not the header: a header that names the
# label column over rows without it reads (it was refused: "line 2,
# column 5: 4 columns, expected 5"), the same bits as the labelled file;
# a header of another width is refused naming both lines.
{ echo "x0,x1,x2,x3,label"; tail -n +2 eval-nolabel.csv; } >h5.csv
"$DTRAIN" predict std --input h5.csv -o p-h5.npy 2>/dev/null ||
	fail "predict: a header naming the label over unlabelled rows"
cmp -s p-lab.npy p-h5.npy || fail "p-h5.npy differs from the labelled file's"
{ echo "a,b,c,d,e,f"; tail -n +2 eval-nolabel.csv; } >h6.csv
expect_fail 1 'h6.csv: line 1: the header has 6 columns, the first data row 4 \(line 2\), or that and the label' \
	"$DTRAIN" predict std --input h6.csv -o x.npy
{ echo "x0,x1,x2,x3"; tail -n +2 eval.csv; } >h4.csv
expect_fail 1 'h4.csv: line 1: the header has 4 columns, the first data row 5 \(line 2\)$' \
	"$DTRAIN" predict std --input h4.csv -o x.npy
echo "1,2,3,4,5,6,7" >wide.csv
expect_fail 1 'wide.csv: line 1, column 6: 7 columns, but the model takes 4 features' \
	"$DTRAIN" predict std --input wide.csv -o x.npy
# The torch export: its tensors and input_normalize give predict's
# logits in numpy, without torch.
"$DTRAIN" export --format torch -o model.safetensors std 2>/dev/null ||
	fail "export --format torch"
"$NP" - <<'PY' || fail "the export against predict"
import json, struct
import numpy as np
blob = open("model.safetensors", "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
head = json.loads(blob[8:8 + n])
meta = head.pop("__metadata__")
t = {k: np.frombuffer(blob[8 + n + v["data_offsets"][0]:
                           8 + n + v["data_offsets"][1]],
                      "<f4").reshape(v["shape"]) for k, v in head.items()}
g = json.loads(meta["graph"])
mean, std = np.load("stats.npy")
norm = g["input_normalize"]
assert norm["kind"] == "standard" and g["input_scale"] == 1.0, g
assert np.allclose(norm["shift"], mean, rtol=1e-6), norm
assert np.allclose(1 / np.array(norm["mul"]), std, rtol=1e-6), norm
x = np.load("eval-x.npy") * np.float32(g["input_scale"])
x = (x - np.float32(norm["shift"])) * np.float32(norm["mul"])
h = np.maximum(x @ t["dense0.weight"].T + t["dense0.bias"], 0)
z = h @ t["dense1.weight"].T + t["dense1.bias"]
p = np.load("p-lab.npy")
assert np.allclose(z, p, rtol=1e-4, atol=1e-4), abs(z - p).max()
print("export: numpy forward matches predict, max |diff| %.2e" % abs(z - p).max())
PY

# Regression from NPY, two targets: jobs/regression-npy.yaml on data
# written here; R^2 against numpy least squares fitted on the training
# split.
"$NP" - <<'PY'
import numpy as np
rng = np.random.default_rng(11)
w = np.array([[3.0, -1.0], [0.5, 2.0], [-0.02, 0.01], [0.001, -0.002]])
def data(n):
    x = rng.normal(0, 1, (n, 4)) * np.array([0.1, 1, 100, 1000]) + 50
    y = (x - 50) @ w + np.array([1.0, -2.0]) + rng.normal(0, 0.1, (n, 2))
    return x.astype(np.float32), y.astype(np.float32)
xt, yt = data(480)
xe, ye = data(240)
for name, a in (("rx", xt), ("ry", yt), ("ex", xe), ("ey", ye)):
    np.save(name + ".npy", a)
A = np.hstack([xt, np.ones((len(xt), 1))]).astype(np.float64)
coef = np.linalg.lstsq(A, yt.astype(np.float64), rcond=None)[0]
pe = np.hstack([xe, np.ones((len(xe), 1))]) @ coef
r2 = 1 - ((pe - ye) ** 2).sum() / ((ye - ye.mean(0)) ** 2).sum()
open("ref-r2", "w").write("%.9f\n" % r2)
# the same with one target as the last CSV column
with open("rtrain.csv", "w") as f:
    for a, b in zip(xt, yt[:, 0]):
        f.write(",".join("%.9g" % v for v in a) + ",%.9g\n" % b)
with open("reval.csv", "w") as f:
    for a, b in zip(xe, ye[:, 0]):
        f.write(",".join("%.9g" % v for v in a) + ",%.9g\n" % b)
coef1 = np.linalg.lstsq(A, yt[:, 0].astype(np.float64), rcond=None)[0]
p1 = np.hstack([xe, np.ones((len(xe), 1))]) @ coef1
r21 = 1 - ((p1 - ye[:, 0]) ** 2).sum() / ((ye[:, 0] - ye[:, 0].mean()) ** 2).sum()
open("ref-r2-csv", "w").write("%.9f\n" % r21)
PY
sed 's|data/regression-train-x.npy|rx.npy|; s|data/regression-train-y.npy|ry.npy|;
     s|data/regression-eval-x.npy|ex.npy|; s|data/regression-eval-y.npy|ey.npy|' \
	"$JOBS/regression-npy.yaml" >reg.yaml
"$DTRAIN" run -q --run-dir reg reg.yaml >reg.out 2>&1 ||
	{ cat reg.out; fail "regression run"; }
"$DTRAIN" eval --json reg >reg-eval.json || fail "regression eval"
"$DTRAIN" predict reg --input ex.npy -o reg-p.npy 2>/dev/null ||
	fail "regression predict"
# One output from a CSV column, a linear model (one dense layer).
cat >reg-csv.yaml <<'YAML'
name: reg-csv
seed: 3
data:
  format: csv
  train: {file: rtrain.csv}
  eval: {file: reval.csv}
  normalize: standard
model:
  input_shape: [4]
  layers:
    - {type: dense, units: 1}
  loss: mse
train: {global_batch: 24, epochs: 30, optimizer: adam, lr: 0.05}
YAML
"$DTRAIN" run -q --run-dir regc reg-csv.yaml >regc.out 2>&1 ||
	{ cat regc.out; fail "csv regression run"; }
"$DTRAIN" eval --json regc >regc-eval.json || fail "csv regression eval"
"$DTRAIN" predict regc --input reval.csv -o regc-p.npy 2>/dev/null ||
	fail "csv regression predict"
"$NP" - <<'PY' || fail "regression figures"
import json
import numpy as np
for run, ev, pred, y, ref in (("reg", "reg-eval.json", "reg-p.npy",
                               np.load("ey.npy"), "ref-r2"),
                              ("regc", "regc-eval.json", "regc-p.npy",
                               np.loadtxt("reval.csv", delimiter=",",
                                          dtype=np.float32)[:, 4:],
                               "ref-r2-csv")):
    e = json.load(open(ev))
    p = np.load(pred).astype(np.float64).reshape(y.shape)
    y = y.astype(np.float64)
    mse = ((p - y) ** 2).mean()
    mae = abs(p - y).mean()
    r2 = 1 - ((p - y) ** 2).sum() / ((y - y.mean(0)) ** 2).sum()
    r2ref = float(open(ref).read())
    print("%s: R^2 %.6f (eval says %.6f), numpy least squares %.6f, "
          "mse %.5f, mae %.5f" % (run, r2, e["r2"], r2ref, mse, mae))
    assert abs(e["mse"] - mse) <= 1e-5 * max(1, mse), (e["mse"], mse)
    assert abs(e["mae"] - mae) <= 1e-5 * max(1, mae), (e["mae"], mae)
    assert abs(e["r2"] - r2) <= 1e-6, (e["r2"], r2)
    assert e["outputs"] == y.shape[1] and e["samples"] == len(y), e
    assert r2 >= r2ref - 0.01, (r2, r2ref)
PY
# predict writes the predicted values, one row of outputs per sample.
"$NP" -c 'import numpy as np; assert np.load("reg-p.npy").shape == (240, 2)' ||
	fail "regression predict shape"
echo "tabular and regression: ok"
