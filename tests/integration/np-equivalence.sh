#!/bin/sh
# SPDX-License-Identifier: MIT
# The same job at np=1, 2 and 3 (oversubscribed), same global batch, gives
# the same loss at every step to 1e-5 relative; every rank ends with the
# same parameters (checked by the loss staying equal step after step).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job job.yaml
mpi 1 "$DTRAIN" run -q --run-dir np1 job.yaml
mpi 2 "$DTRAIN" run -q --run-dir np2 job.yaml
mpi 3 "$DTRAIN" run -q --run-dir np3 job.yaml
[ "$(losses np1 | wc -l)" -eq 20 ] || fail "expected 20 logged steps"
compare_losses np1 np2 1e-5
compare_losses np1 np3 1e-5
# The loss must actually fall: a run that learns nothing is no evidence.
"$PYTHON" - np1 <<'PY'
import json, sys
l = [json.loads(x)["loss"] for x in open(sys.argv[1] + "/metrics.jsonl")]
if not (l[-1] < 0.8 * l[0]):
    sys.exit("loss did not fall: %r -> %r" % (l[0], l[-1]))
PY
# summary.json reports the layout.
grep -q '"world_size": 3' np3/summary.json || fail "np3 summary world_size"
grep -q '"micro_batch": 16' np3/summary.json || fail "np3 micro_batch"
