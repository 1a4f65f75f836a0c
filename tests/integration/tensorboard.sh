#!/bin/sh
# SPDX-License-Identifier: MIT
# log.tensorboard: true writes RUN_DIR/tb/events.out.tfevents.*, decoded
# here with Python's standard library alone (TFRecord framing, masked
# CRC-32C of RFC 3720, the Event and Summary protocol buffers) and compared
# with metrics.jsonl: every logged loss, lr, grad_norm and samples/s and
# every evaluation's loss and accuracy, at the same steps, equal as float32
# (metrics.jsonl writes them in float32's shortest text; the test checks
# those texts, and that times carry microseconds). The
# decoder must refuse a copy with one byte changed. Without the key no tb
# directory is made.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
cat >job.yaml <<YAML
name: tb
seed: 4
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  eval:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 32, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 64
  steps: 20
  optimizer: adam
  lr: 0.002
log:
  every_steps: 5
  tensorboard: true
eval:
  every_steps: 10
YAML
mpi 2 "$DTRAIN" run -q --run-dir r job.yaml >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "the run failed"; }
"$DTRAIN" run -q --run-dir plain --set log.tensorboard=false job.yaml \
	>/dev/null 2>plain.err || { cat plain.err >&2; fail "the plain run failed"; }
[ ! -e plain/tb ] || fail "a tb directory without log.tensorboard"
set -- r/tb/events.out.tfevents.*
[ $# -eq 1 ] && [ -f "$1" ] || fail "not one events file in r/tb: $*"
cp "$1" events
"$PYTHON" - events r/metrics.jsonl <<'PY' || fail "the events file does not hold the logged scalars"
import json, struct, sys

def crc32c(data):
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff

def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xa282ead8) & 0xffffffff

def varint(b, i):
    v = shift = 0
    while True:
        x = b[i]; i += 1
        v |= (x & 0x7f) << shift; shift += 7
        if not x & 0x80:
            return v, i

def fields(b):
    """(field number, wire type, value) of a protocol buffer message."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v = b[i:i + 8]; i += 8
        elif wt == 5:
            v = b[i:i + 4]; i += 4
        elif wt == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v

def records(data):
    i = 0
    while i < len(data):
        head = data[i:i + 8]
        (n,) = struct.unpack("<Q", head)
        (hc,) = struct.unpack("<I", data[i + 8:i + 12])
        if hc != masked(head):
            raise ValueError("length CRC at byte %d" % i)
        body = data[i + 12:i + 12 + n]
        (bc,) = struct.unpack("<I", data[i + 12 + n:i + 16 + n])
        if len(body) != n or bc != masked(body):
            raise ValueError("payload CRC at byte %d" % i)
        yield body
        i += 16 + n

def decode(data):
    version, scalars = None, {}
    for body in records(data):
        step, vals = 0, []
        for num, wt, v in fields(body):
            if num == 2:
                step = v
            elif num == 3:
                version = v.decode()
            elif num == 5:
                for n2, w2, val in fields(v):
                    if n2 != 1:
                        continue
                    tag, x = None, None
                    for n3, w3, y in fields(val):
                        if n3 == 1:
                            tag = y.decode()
                        elif n3 == 2 and w3 == 5:
                            (x,) = struct.unpack("<f", y)
                    vals.append((tag, x))
        for tag, x in vals:
            scalars.setdefault(tag, {})[step] = x
    return version, scalars

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]

data = open(sys.argv[1], "rb").read()
version, got = decode(data)
if version != "brain.Event:2":
    sys.exit("file_version %r" % version)
want = {}
for line in open(sys.argv[2]):
    o = json.loads(line)
    keys = {"loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm",
            "samples_per_s": "train/samples_per_s", "eval_loss": "eval/loss",
            "eval_accuracy": "eval/accuracy"}
    for k, tag in keys.items():
        if k in o and o[k] is not None:
            want.setdefault(tag, {})[o["step"]] = o[k]
if sorted(got) != sorted(want):
    sys.exit("tags %r, metrics.jsonl has %r" % (sorted(got), sorted(want)))
for tag in want:
    if sorted(got[tag]) != sorted(want[tag]):
        sys.exit("%s: steps %r vs %r" % (tag, sorted(got[tag]), sorted(want[tag])))
    for step, v in want[tag].items():
        # metrics.jsonl writes these to float32 precision, as the events
        # file holds them: equal, every one.
        if got[tag][step] != f32(v):
            sys.exit("%s step %d: %r in the events, %r in metrics.jsonl"
                     % (tag, step, got[tag][step], v))
# The texts themselves (dtrain(1), FILES): floats in at most 9
# significant digits that read back as the same float32, times to the
# microsecond exactly.
import re
floats = {"loss", "lr", "grad_norm", "samples_per_s", "eval_loss",
          "eval_accuracy"}
times = {"elapsed_s", "data_wait_s", "compute_s", "comm_wait_s", "optim_s"}
seen = set()
for line in open(sys.argv[2]):
    for k, t in re.findall(r'"(\w+)":(-?[0-9][0-9.eE+-]*)', line):
        if k in floats:
            digits = len(re.sub(r"^[-0.]*|[.]|e.*$", "", t).rstrip("0") or "0")
            x = f32(float(t))
            if digits > 9 or (digits > 1 and
                              f32(float("%.*g" % (digits - 1, x))) == x):
                sys.exit("%s: %s is not a float32's shortest text" % (k, t))
            seen.add(k)
        elif k in times:
            if not re.fullmatch(r"[0-9]+\.[0-9]{6}", t):
                sys.exit("%s: %s is not seconds to the microsecond" % (k, t))
            seen.add(k)
if seen != floats | times:
    sys.exit("texts checked for %r only" % sorted(seen))
n = sum(len(v) for v in got.values())
if n != 4 * 4 + 2 * 2:
    sys.exit("%d scalars, expected 20 (4 train tags x 4 lines, 2 eval x 2)" % n)
# The decoder itself: one flipped byte in a payload is refused.
bad = bytearray(data)
bad[len(bad) - 6] ^= 0x01
try:
    decode(bytes(bad))
except ValueError as e:
    print("events file: %d scalars match metrics.jsonl; a flipped byte: %s" % (n, e))
else:
    sys.exit("the decoder took a corrupted file")
PY
