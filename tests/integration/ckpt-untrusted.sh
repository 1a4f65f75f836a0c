#!/bin/sh
# SPDX-License-Identifier: MIT
# A checkpoint directory is untrusted input: a FIFO or a symbolic link in
# place of a file the manifest lists is refused at once (never waited on,
# never followed), and resume and export fall back to the checkpoint
# before it, naming the file and the reason.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job job.yaml 60
sed -i 's/keep_last: 2/keep_last: 0/' job.yaml
DTRAIN_TEST_SIGNAL_AT_STEP=50 "$DTRAIN" run -q --run-dir r job.yaml \
	>/dev/null 2>&1 || [ $? -eq 3 ] || fail "first run"
new=r/checkpoints/step-000000050
[ -f $new/params.safetensors ] || fail "no checkpoint at step 50"
cp -r r r2

# A FIFO: open would block forever without O_NONBLOCK, read likewise.
mv $new/params.safetensors params.real
mkfifo $new/params.safetensors
set +e
timeout 30 "$DTRAIN" export -o fifo.st r >/dev/null 2>fifo.err
rc=$?
set -e
[ "$rc" -ne 124 ] || fail "export hung on a FIFO in a checkpoint"
grep -q 'step-000000050.*params.safetensors.*not a regular file' fifo.err ||
	{ cat fifo.err >&2; fail "FIFO not named"; }
set +e
timeout 60 "$DTRAIN" resume -q r >/dev/null 2>fifo2.err
rc=$?
set -e
[ "$rc" -ne 124 ] || fail "resume hung on a FIFO in a checkpoint"
[ "$rc" -eq 0 ] || { cat fifo2.err >&2; fail "resume exited $rc"; }
grep -q 'not a regular file' fifo2.err || { cat fifo2.err >&2; fail "resume: FIFO not named"; }
grep -q 'resuming from .*step-000000025' fifo2.err ||
	{ cat fifo2.err >&2; fail "resume did not fall back to step 25"; }

# A symbolic link, here even to the file's own valid bytes: not followed,
# so verify cannot be made to read (and report on) any file it can reach.
new=r2/checkpoints/step-000000050
mv $new/params.safetensors params2.real
ln -s "$SCRATCH/params2.real" $new/params.safetensors
"$DTRAIN" resume -q r2 >/dev/null 2>link.err || { cat link.err >&2; fail "resume with a link"; }
grep -q 'params.safetensors.*symbolic link' link.err || { cat link.err >&2; fail "link not named"; }
grep -q 'resuming from .*step-000000025' link.err ||
	{ cat link.err >&2; fail "resume followed the link"; }
echo "FIFO and symbolic link in a checkpoint refused"
