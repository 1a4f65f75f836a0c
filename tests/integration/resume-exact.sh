#!/bin/sh
# SPDX-License-Identifier: MIT
# A run stopped by SIGTERM at a given step (in the warmup, mid-epoch, at an
# epoch boundary) and resumed ends with parameters byte-identical to the
# uninterrupted run and the same loss lines, at np=1 and np=2; a run
# stopped at np=2 resumes at np=1 with the same parameters at the resume
# point. DTRAIN_TEST_SIGNAL_AT_STEP sends the real SIGTERM at an exact step.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job job.yaml 120
for np in 1 2; do
	mpi $np "$DTRAIN" run -q --run-dir full$np job.yaml >/dev/null
	export_of full$np full$np.st
	losses full$np >full$np.losses
	# 10: inside the warmup; 57: mid-epoch 1; 80: epoch boundary.
	for stop in 10 57 80; do
		d=stop$np-$stop
		set +e
		DTRAIN_TEST_SIGNAL_AT_STEP=$stop mpi $np -x DTRAIN_TEST_SIGNAL_AT_STEP \
			"$DTRAIN" run -q --run-dir $d job.yaml >/dev/null 2>$d.err
		rc=$?
		set -e
		[ "$rc" -eq 3 ] || { cat $d.err >&2; fail "np=$np stop at $stop exited $rc, expected 3"; }
		grep -q "interrupted at step $stop" $d.err || fail "no interruption message"
		[ -f $d/checkpoints/step-$(printf %09d $stop)/MANIFEST.json ] ||
			fail "no checkpoint at step $stop"
		mpi $np "$DTRAIN" resume -q $d >/dev/null 2>$d.err2
		grep -q "resuming from .*step $stop" $d.err2 || fail "did not resume from $stop"
		export_of $d $d.st
		cmp full$np.st $d.st || fail "np=$np stopped at $stop: parameters differ"
		losses $d >$d.losses
		cmp full$np.losses $d.losses || fail "np=$np stopped at $stop: loss lines differ"
	done
done
# np=1 and np=2 agree to float rounding, not bits; the np=2 -> np=1 resume
# must give the same parameters as the np=2 run had at the checkpoint.
DTRAIN_TEST_SIGNAL_AT_STEP=57 mpi 2 -x DTRAIN_TEST_SIGNAL_AT_STEP \
	"$DTRAIN" run -q --run-dir cross job.yaml >/dev/null 2>&1 || [ $? -eq 3 ] ||
	fail "cross run"
cp cross/checkpoints/step-000000057/params.safetensors at57.st
"$DTRAIN" resume -q --set train.steps=57 cross >/dev/null 2>&1
export_of cross cross57.st
cmp at57.st cross57.st || fail "np=2 -> np=1 resume changed the parameters"
"$DTRAIN" resume -q --set train.steps=120 cross >/dev/null 2>&1
"$PYTHON" - full2 cross <<'PY'
import json, sys
def losses(d):
    return [json.loads(l)["loss"] for l in open(d + "/metrics.jsonl") if '"loss"' in l]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert len(a) == len(b), (len(a), len(b))
for x, y in zip(a, b):
    assert abs(x - y) <= 1e-4 * abs(x), (x, y)
print("np=2 -> np=1 resume: %d losses agree" % len(a))
PY
# Changing the model on resume is refused.
expect_fail 2 'model cannot change on resume' \
	"$DTRAIN" resume --set model.layers.0.units=8 cross
# A finished run: resuming it does nothing and changes no file; a length
# below the step reached is refused.
cp full1/summary.json before.json
cp full1/job.yaml before.yaml
"$DTRAIN" resume -q --set train.lr=0.5 full1 >done.out
grep -q 'already complete at step 120' done.out || fail "no nothing-to-do message"
cmp before.json full1/summary.json || fail "a no-op resume rewrote summary.json"
cmp before.yaml full1/job.yaml || fail "a no-op resume rewrote job.yaml"
expect_fail 2 'already reached step 120; train.steps 60 cannot take it back' \
	"$DTRAIN" resume -q --set train.steps=60 full1
