#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 27's must-show for the plan that does not hold yet, an expected
# failure (XFAIL_TESTS in tests/integration/local.mk): `dtrain plan
# --dry-run -n 4` of the GPT-2-small-shaped job
# (bench/gpt2-small-untied.yaml) at tensor_parallel 4 gives a model state
# per rank (params + grads + optimizer_state + grad_accumulator) of at
# most 0.35 x one data-parallel rank's. Today 0.609 (1.000 before the
# trainer's own slices): the table and the untied head, half the
# parameters, stay whole, as 4 does not divide 50257. When this passes, take
# it out of XFAIL_TESTS. The parts that hold are
# tests/integration/plan-sharded-must.sh.
# Only the ratio may fail as expected: anything else (a plan that does
# not run, no figures) exits 99, a hard error that XFAIL_TESTS does not
# hide.
. "${top_srcdir}/tests/integration/lib.sh"
# hard MSG: an error that is not the expected failure.
hard() {
	echo "ERROR: $*" >&2
	exit 99
}
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
J="$top_srcdir/bench/gpt2-small-untied.yaml"
"$DTRAIN" plan --dry-run --json -n 4 "$J" --set parallel.overlap=false \
	>plan-dp.json || hard "plan dp 4"
"$DTRAIN" plan --dry-run --json -n 4 "$J" --set parallel.overlap=false \
	--set parallel.strategy=model --set parallel.tensor_parallel=4 \
	>plan-tp.json || hard "plan tp 4"
set +e
"$PYTHON" - <<'PY'
import json, sys
try:
    m = {k: json.load(open("plan-%s.json" % k))["memory_per_rank"]
         for k in ("dp", "tp")}
    keys = ("params", "grads", "optimizer_state", "grad_accumulator")
    dp = sum(m["dp"][k] for k in keys)
    state = sum(m["tp"][k] for k in keys) / dp
except Exception as e:
    print("no model state in the plans: %r" % e, file=sys.stderr)
    sys.exit(99)
print("model state at tensor_parallel 4: %.3f x data parallel's "
      "(want <= 0.35)" % state)
sys.exit(0 if state <= 0.35 else 1)
PY
rc=$?
set -e
[ "$rc" -ne 99 ] || hard "the plans' figures"
[ "$rc" -eq 0 ] || fail "the must-show ratio"
