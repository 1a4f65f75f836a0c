#!/bin/sh
# SPDX-License-Identifier: MIT
# dtrain eval's top-k accuracy ranks the classes by their logits, and a
# model whose logits are NaN is reported as such (issue 31).
# A one-layer model is given by hand weights 0 and biases 0, -200, -300,
# ..., -1000 (its checkpoint's crc32s recomputed so that it verifies):
# every sample's logits are the biases, class c ranks c-th, so on the
# 10000 test images (1000 a class) the top-k accuracy is k/10 exactly:
# top-1 0.1, top-2 0.2, top-5 0.5. Ranked by probabilities, every class
# but 0 underflows to probability 0 in float and ties with the label, so
# the old count gave top-2 and top-5 accuracy 1.0. The same model with
# NaN biases gave top-5 accuracy 1.0 (NaN compares false); it is now
# "not a number" for all 10000 labels, with loss and accuracies NaN in
# the text and null in --json.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_tiny_job job.yaml
"$DTRAIN" run -q --run-dir r job.yaml >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "training failed"; }
cp -r r rnan

# set_params RUN BIAS...: dense0.weight 0 and dense0.bias the values in
# RUN's newest checkpoint, tensor and manifest crc32s recomputed.
set_params() {
	"$PYTHON" - "$@" <<'PY'
import glob, json, struct, sys, zlib
run, bias = sys.argv[1], [float(v) for v in sys.argv[2:]]
d = sorted(glob.glob(run + "/checkpoints/step-*"))[-1]
raw = open(d + "/params.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
data = bytearray(raw[8 + n:])
for name, t in head.items():
    if name == "__metadata__":
        continue
    lo, hi = t["data_offsets"]
    k = (hi - lo) // 4
    vals = [0.0] * k if name.endswith("weight") else bias
    assert len(vals) == k, name
    data[lo:hi] = struct.pack("<%df" % k, *vals)
    head["__metadata__"]["crc32:" + name] = "%08x" % zlib.crc32(data[lo:hi])
h = json.dumps(head, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
out = struct.pack("<Q", len(h)) + h + bytes(data)
open(d + "/params.safetensors", "wb").write(out)
man = json.load(open(d + "/MANIFEST.json"))
for f in man["files"]:
    if f["name"] == "params.safetensors":
        f["size"], f["crc32"] = len(out), "%08x" % zlib.crc32(out)
open(d + "/MANIFEST.json", "w").write(json.dumps(man, indent=2))
PY
}
set_params r 0 -200 -300 -400 -500 -600 -700 -800 -900 -1000
for k in 1 2 5 9; do
	"$DTRAIN" eval --data train --top-k $k --json r >k$k.json 2>k$k.err ||
		{ cat k$k.err >&2; fail "eval --top-k $k failed"; }
	"$PYTHON" - k$k.json $k <<'PY' || fail "top-$k"
import json, sys
o, k = json.load(open(sys.argv[1])), int(sys.argv[2])
want = {"samples": 10000, "nan_labels": 0, "top_k": k,
        "top_k_accuracy": k / 10, "accuracy": 0.1}
bad = [(key, o.get(key), v) for key, v in want.items() if o.get(key) != v]
if bad:
    sys.exit("got %r" % bad)
PY
done
"$DTRAIN" eval --data train --top-k 2 r >k2.txt
grep -qx 'top-2 accuracy 0.200000' k2.txt || { cat k2.txt >&2; fail "text top-2"; }

nan=nan
set_params rnan $nan $nan $nan $nan $nan $nan $nan $nan $nan $nan
"$DTRAIN" eval --data train --json rnan >nan.json 2>nan.err ||
	{ cat nan.err >&2; fail "eval of a NaN model failed"; }
"$PYTHON" - nan.json <<'PY' || fail "NaN model, --json"
import json, sys
o = json.load(open(sys.argv[1]))
want = {"nan_labels": 10000, "top_k": 5, "top_k_accuracy": None,
        "accuracy": None, "loss": None}
bad = [(key, o.get(key), v) for key, v in want.items() if o.get(key) != v]
if bad:
    sys.exit("got %r" % bad)
PY
"$DTRAIN" eval --data train rnan >nan.txt
grep -q '^not a number: the model.s logits hold a NaN for 10000 of 10000 labels' nan.txt ||
	{ cat nan.txt >&2; fail "NaN model not said"; }
grep -qx 'top-5 accuracy nan' nan.txt || { cat nan.txt >&2; fail "text top-5 of NaN"; }
echo "ok: top-1/2/5/9 accuracy 0.1/0.2/0.5/0.9 by logits; a NaN model said"
