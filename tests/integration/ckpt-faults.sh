#!/bin/sh
# SPDX-License-Identifier: MIT
# Damaged checkpoints are skipped with the reason; a write limit during a
# checkpoint fails clearly and leaves the previous checkpoint loadable; an
# exported file reads back with numpy alone.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job job.yaml 120
"$DTRAIN" run -q --run-dir full job.yaml >/dev/null
export_of full full.st
sed -i 's/keep_last: 2/keep_last: 0/' job.yaml

# A flipped byte in the newest checkpoint: resume falls back and says why.
DTRAIN_TEST_SIGNAL_AT_STEP=60 "$DTRAIN" run -q --run-dir flip job.yaml \
	>/dev/null 2>&1 || [ $? -eq 3 ] || fail "flip run"
f=flip/checkpoints/step-000000060/params.safetensors
size=$(stat -c %s $f)
printf '\377' | dd of=$f bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
"$DTRAIN" resume -q flip >/dev/null 2>flip.err
grep -q 'step-000000060.*crc32 mismatch' flip.err || { cat flip.err >&2; fail "no crc32 message"; }
grep -q 'resuming from .*step-000000050' flip.err || fail "did not fall back to step 50"
export_of flip flip.st
cmp full.st flip.st || fail "fallback resume differs"

# A truncated file: the same.
DTRAIN_TEST_SIGNAL_AT_STEP=60 "$DTRAIN" run -q --run-dir trunc job.yaml \
	>/dev/null 2>&1 || [ $? -eq 3 ] || fail "trunc run"
truncate -s 1000 trunc/checkpoints/step-000000060/params.safetensors
"$DTRAIN" resume -q trunc >/dev/null 2>trunc.err
grep -q 'step-000000060' trunc.err || fail "truncation not named"
grep -q 'resuming from .*step-000000050' trunc.err || fail "did not fall back"

# A file-size limit during a checkpoint: exit 1 naming the path, and the
# previous checkpoint still loads.
DTRAIN_TEST_SIGNAL_AT_STEP=30 "$DTRAIN" run -q --run-dir lim job.yaml \
	>/dev/null 2>&1 || [ $? -eq 3 ] || fail "limit run"
set +e
# PMIx keeps its shared store in files; the hash store keeps it in memory
# so that only dtrain's own writes meet the limit.
(ulimit -f 64; PMIX_MCA_gds=hash exec "$DTRAIN" resume -q lim) >/dev/null 2>lim.err
rc=$?
set -e
[ "$rc" -eq 1 ] || { cat lim.err >&2; fail "write limit: exit $rc, expected 1"; }
grep -Eq 'checkpoints/.*(File too large|write)' lim.err || { cat lim.err >&2; fail "write limit: unclear error"; }
ls -a lim/checkpoints | grep -q '\.tmp\.' && fail "a temporary checkpoint was left"
"$DTRAIN" resume -q lim >/dev/null 2>lim.err2
grep -q 'resuming from .*step-000000030' lim.err2 || fail "previous checkpoint did not load"
export_of lim lim.st
cmp full.st lim.st || fail "resume after the write failure differs"

# numpy reads the export with no dtrain code.
"$PYTHON" - full.st <<'PY' || fail "numpy could not read the export"
import json, struct, sys, zlib
try:
    import numpy as np
except ImportError:
    sys.exit(0)
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
meta = hdr.pop("__metadata__")
body = raw[8 + n:]
shapes = {k: v["shape"] for k, v in hdr.items()}
assert shapes["dense0.weight"] == [784, 32], shapes
assert shapes["dense1.bias"] == [10], shapes
for k, v in hdr.items():
    b, e = v["data_offsets"]
    a = np.frombuffer(body[b:e], dtype="<f4").reshape(v["shape"])
    assert np.isfinite(a).all()
    assert "%08x" % zlib.crc32(body[b:e]) == meta["crc32:" + k]
print("numpy read", len(hdr), "tensors")
PY
