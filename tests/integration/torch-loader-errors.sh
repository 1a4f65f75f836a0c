#!/bin/sh
# SPDX-License-Identifier: MIT
# contrib/dtrain_torch.py on bad files and arguments: load() of a file
# that is not safetensors raises ValueError naming it (it raised a
# UnicodeDecodeError or struct.error that named nothing), and the script
# (dtrain_torch.py FILE INPUT.npy OUTPUT.npy) says what is wrong in one
# line, without a traceback: exit status 1 for a file that is not
# safetensors or inputs of the wrong shape (naming the file and the
# shapes), 2 for an unknown option (it was ignored), writing no output.
# Skipped (exit 77) where python3 cannot import torch.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

need_torch
LOADER="$top_srcdir/contrib/dtrain_torch.py"

write_tiny_job job.yaml
"$DTRAIN" run -q --run-dir r job.yaml >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "the run failed"; }
"$DTRAIN" export --format torch -o m.safetensors r >/dev/null ||
	fail "export --format torch failed"
"$TORCH_PY" -c 'import numpy as np
np.save("good.npy", np.zeros((3, 28, 28), np.float32))
np.save("wrong.npy", np.zeros((3, 20, 20), np.float32))'

"$TORCH_PY" - "$top_srcdir/contrib" <<'PY' || fail "load() of an NPY file"
import sys
sys.path.insert(0, sys.argv[1])
import dtrain_torch
try:
    dtrain_torch.load("good.npy")
except ValueError as e:
    if not str(e).startswith("good.npy: not a safetensors file"):
        sys.exit("load: %s" % e)
else:
    sys.exit("load took an NPY file")
PY

expect_fail 1 '^dtrain_torch.py: good.npy: not a safetensors file' \
	"$TORCH_PY" "$LOADER" good.npy good.npy out.npy
! grep -q Traceback "$SCRATCH/err" || fail "a traceback"
expect_fail 1 '^dtrain_torch.py: wrong.npy: samples of shape \(20, 20\) \(400 values\), the model takes 784 \(\(28, 28\)\)' \
	"$TORCH_PY" "$LOADER" m.safetensors wrong.npy out.npy
! grep -q Traceback "$SCRATCH/err" || fail "a traceback"
expect_fail 2 '^dtrain_torch.py: unknown option --probability' \
	"$TORCH_PY" "$LOADER" m.safetensors good.npy out.npy --probability
! grep -q Traceback "$SCRATCH/err" || fail "a traceback"
[ ! -e out.npy ] || fail "a refused run of the loader wrote out.npy"
"$TORCH_PY" "$LOADER" m.safetensors good.npy out.npy --probabilities ||
	fail "the loader as a script failed"
[ -f out.npy ] || fail "no out.npy"
echo "torch-loader-errors: ok"
