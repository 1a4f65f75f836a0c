#!/bin/sh
# SPDX-License-Identifier: MIT
# No diverged checkpoint is left newest (issue 31). A run checkpointed
# every step, resumed at step 3 with train.lr 1e6: step 4's update blows
# up the weights, its checkpoint is written, and the loss of step 5
# (computed with step 4's weights) trips the guard. step-000000004 holds a
# state the guard rejects: it is set aside as step-000000004.diverged,
# the error says so, and a resume at the job's own lr continues from step
# 3 (the lr saved back in job.yaml), ending with the parameters of an uninterrupted run. Before, step 4
# stayed the newest checkpoint and the resume continued from it.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_tiny_job tiny.yaml
printf 'checkpoint: {every_steps: 1}\nlog: {every_steps: 1}\n' >>tiny.yaml
sed -i 's/steps: 1,/steps: 3,/' tiny.yaml
"$DTRAIN" run -q --run-dir r tiny.yaml >/dev/null 2>r.err ||
	{ cat r.err >&2; fail "the first run failed"; }
expect_fail 1 "step 5: loss [0-9.e+]+ above the divergence threshold .*the checkpoint of step 4, whose state gave that loss, is set aside as r/checkpoints/step-000000004.diverged: a resume continues from the checkpoint before it" \
	"$DTRAIN" resume -q --set train.steps=6 --set train.lr=1e6 r
[ -d r/checkpoints/step-000000004.diverged ] || fail "step 4 not set aside"
[ ! -e r/checkpoints/step-000000004 ] || fail "the diverged step 4 is still a checkpoint"
"$DTRAIN" resume -q --set train.steps=6 --set train.lr=0.1 r >/dev/null 2>res.err ||
	{ cat res.err >&2; fail "the resume failed"; }
grep -q "resuming from r/checkpoints/step-000000003 (step 3)" res.err ||
	{ cat res.err >&2; fail "the resume did not continue from step 3"; }
sed 's/steps: 3,/steps: 6,/' tiny.yaml >six.yaml
"$DTRAIN" run -q --run-dir whole six.yaml >/dev/null 2>whole.err ||
	{ cat whole.err >&2; fail "the whole run failed"; }
export_of r r.st
export_of whole whole.st
cmp -s r.st whole.st || fail "the resumed run does not end as the whole run"
echo "diverged step 4 set aside; resume continued from step 3, bit-equal to a whole run"
