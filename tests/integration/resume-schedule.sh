#!/bin/sh
# SPDX-License-Identifier: MIT
# `resume --set train.steps=N` with a cosine schedule spreads the decay
# over the new length, and says so: the span before and after and the
# next step's rate on each. lr 0.001, no warmup, min_lr 0: the rate of
# update s+1 is 0.0005 x (1 + cos(pi s / T)); stopped after 5 of 10
# steps, step 6 had 0.0005 (T 10) and has 0.000853553 (T 20), which the
# metrics line of step 6 shows. A resume that keeps the length says
# nothing.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
J="$top_srcdir/jobs"
expected=$("$PYTHON" -c 'import math
f = lambda s, t: 0.0005 * (1 + math.cos(math.pi * s / t))
print("%g %g" % (f(5, 20), f(5, 10)))')
new=${expected% *} old=${expected#* }
DTRAIN_TEST_SIGNAL_AT_STEP=5 expect_fail 3 "interrupted at step 5" \
	"$DTRAIN" run -q --run-dir cos --set train.steps=10 \
	--set train.schedule.kind=cosine --set eval.every_steps=0 \
	--set log.every_steps=1 "$J/fashion-mnist-mlp.yaml"
"$DTRAIN" resume -q --set train.steps=20 cos >/dev/null 2>longer.err ||
	{ cat longer.err >&2; fail "the resume failed"; }
grep -qF "dtrain: the cosine schedule now spans 20 steps (it spanned 10): the rate of step 6 is $new (it was $old on the old span)" longer.err ||
	{ cat longer.err >&2; fail "the resume did not say the schedule changed ($new, was $old)"; }
lr6=$("$PYTHON" -c 'import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o.get("step") == 6 and "lr" in o:
        print("%g" % o["lr"])' cos/metrics.jsonl)
[ "$lr6" = "$new" ] || fail "step 6 ran at lr $lr6, expected $new"
DTRAIN_TEST_SIGNAL_AT_STEP=5 expect_fail 3 "interrupted at step 5" \
	"$DTRAIN" run -q --run-dir same --set train.steps=10 \
	--set train.schedule.kind=cosine --set eval.every_steps=0 \
	"$J/fashion-mnist-mlp.yaml"
"$DTRAIN" resume -q same >/dev/null 2>same.err ||
	{ cat same.err >&2; fail "the plain resume failed"; }
! grep -q "cosine schedule" same.err || { cat same.err >&2; fail "a plain resume spoke of the schedule"; }
echo "ok: the reshaped schedule was said ($old -> $new at step 6)"
