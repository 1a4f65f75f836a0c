#!/bin/sh
# SPDX-License-Identifier: MIT
# An epochs-based run resumed with another global batch ends at its
# epochs, counted in samples, and summary.json counts the samples that
# were trained. 4 epochs of the 60000 training samples at a global batch
# of 1500 (40 steps an epoch), stopped by SIGTERM at step 40 (the end of
# epoch 0), resumed at 2400 (25 steps an epoch): 40 + 3 x 25 = 115 steps,
# 4 x 60000 = 240000 samples. Resumed instead at 1800, which does not
# divide 60000, each epoch's last partial batch (600 samples) is dropped
# as in any epoch: 40 + 3 x 33 = 139 steps, 60000 + 3 x 59400 = 238200
# samples, within one batch of 4 x 60000 per epoch. The resumed session
# alone (summary.json session_steps, session_samples and the last line,
# which said the whole run's samples over the session's time): 75 steps,
# 180000 samples at 2400; 99 steps, 178200 samples at 1800.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job job.yaml
sed -i 's/^  steps: .*/  epochs: 4/; s/every_steps: 25/every_steps: 1000/' job.yaml
DTRAIN_TEST_SIGNAL_AT_STEP=40 "$DTRAIN" run -q --run-dir r job.yaml \
	>/dev/null 2>first.err && fail "the first run was not stopped"
[ -d r/checkpoints/step-000000040 ] || { cat first.err >&2; fail "no checkpoint at step 40"; }
cp -r r r2
check() {
	"$PYTHON" - "$@" <<'PY'
import json, sys
d, steps, samples, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ss, sn = int(sys.argv[5]), int(sys.argv[6])
s = json.load(open(d + "/summary.json"))
if s["session_steps"] != ss or s["session_samples"] != sn:
    sys.exit("%s: session_steps %d, session_samples %d; expected %d, %d"
             % (d, s["session_steps"], s["session_samples"], ss, sn))
rate = sn / s["wall_s"]
if abs(s["samples_per_s"] - rate) > 1e-3 * rate + 1:
    sys.exit("%s: samples_per_s %g, not session_samples / wall_s %g"
             % (d, s["samples_per_s"], rate))
if s["steps"] != steps or s["samples"] != samples or s["global_batch"] != batch:
    sys.exit("%s: steps %d, samples %d, global batch %d; expected %d, %d, %d"
             % (d, s["steps"], s["samples"], s["global_batch"], steps,
                samples, batch))
last = [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l][-1]
if last["step"] != steps or last["epoch"] != 3:
    sys.exit("%s: last logged step %d of epoch %d; expected %d of epoch 3"
             % (d, last["step"], last["epoch"], steps))
print("%s: %d steps, %d samples at global batch %d" % (d, steps, samples, batch))
PY
}
"$DTRAIN" resume -q --set train.global_batch=2400 r >r.out 2>r.err ||
	{ cat r.err >&2; fail "resume at 2400"; }
check r 115 240000 2400 75 180000 || fail "resume at 2400"
grep -Eq ': 115 steps \(75 this session\), 240000 samples; this session 180000 samples in [0-9.]+ s \([0-9]+ samples/s\)' r.out ||
	{ cat r.out >&2; fail "resume at 2400: the last line"; }
"$DTRAIN" resume -q --set train.global_batch=1800 r2 >r2.out 2>r2.err ||
	{ cat r2.err >&2; fail "resume at 1800"; }
check r2 139 238200 1800 99 178200 || fail "resume at 1800"
