#!/bin/sh
# SPDX-License-Identifier: MIT
# `dtrain run -n 2` leaves out mpirun's failure banners ("Primary job
# terminated normally, but 1 process returned a non-zero exit code" and
# "mpirun detected that one or more processes exited with non-zero
# status") when the job was stopped cleanly: every rank checkpointed and
# exited 3, after a stop at a step (the test hook) or a real SIGINT to the
# launcher. A real failure still shows both banners, after the rank's
# message, and mpirun's other messages (a rank killed by a signal) pass
# as they are.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job small.yaml
mkdir tmp

# no_banners FILE: FILE holds none of mpirun's rules or banners.
no_banners() {
	if grep -Eq -- '^-{20,}$|Primary job|mpirun detected' "$1"; then
		cat "$1" >&2
		fail "$1: mpirun's banners after a clean stop"
	fi
}

# A stop at step 3 on both ranks (what a signal does, without its timing).
set +e
DTRAIN_TEST_SIGNAL_AT_STEP=3 timeout 300 "$DTRAIN" run -q -n 2 \
	--mpi-args "-x DTRAIN_TEST_SIGNAL_AT_STEP" --run-dir a \
	--set train.steps=50 small.yaml >a.out 2>a.err
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat a.err >&2; fail "the stopped run exited $rc, expected 3"; }
grep -q '^dtrain: interrupted at step 3; checkpoint written' a.err ||
	{ cat a.err >&2; fail "no interruption message"; }
no_banners a.err

# A real SIGINT to the launcher, as Ctrl-C sends it, in a long run.
TMPDIR=$SCRATCH/tmp timeout 300 "$DTRAIN" run -q -n 2 --run-dir b \
	--set train.steps=1000000 --set log.every_steps=1 small.yaml \
	>b.out 2>b.err &
pid=$!
i=0
while [ "$(cat b/metrics.jsonl 2>/dev/null | wc -l)" -lt 2 ]; do
	kill -0 $pid 2>/dev/null || { cat b.err >&2; fail "run b ended early"; }
	[ $i -lt 1800 ] || fail "run b: no second step in 180 s"
	sleep 0.1
	i=$((i + 1))
done
# timeout would relay it; send it to dtrain itself
kill -INT "$(pgrep -P $pid | head -n 1)"
set +e
wait $pid
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat b.err >&2; fail "run -n 2 after SIGINT exited $rc, expected 3"; }
grep -q '^dtrain: interrupted at step [0-9]*; checkpoint written' b.err ||
	{ cat b.err >&2; fail "no interruption message after SIGINT"; }
no_banners b.err

# A real failure: rank 1 cannot read its data; both ranks exit 1.
set +e
DTRAIN_TEST_FAIL_READ_RANK=1 timeout 300 "$DTRAIN" run -q -n 2 \
	--mpi-args "-x DTRAIN_TEST_FAIL_READ_RANK" --run-dir c small.yaml \
	>c.out 2>c.err
rc=$?
set -e
[ "$rc" -eq 1 ] || { cat c.err >&2; fail "the failed run exited $rc, expected 1"; }
grep -q 'rank 1: .*missing-for-test: cannot open' c.err ||
	{ cat c.err >&2; fail "no message from rank 1"; }
grep -q '^Primary job  terminated normally, but 1 process returned' c.err ||
	{ cat c.err >&2; fail "a failure without mpirun's first banner"; }
grep -q '^mpirun detected that one or more processes exited with non-zero status' c.err ||
	{ cat c.err >&2; fail "a failure without mpirun's second banner"; }

# A rank killed outright: mpirun's word on it passes.
TMPDIR=$SCRATCH/tmp timeout 300 "$DTRAIN" run -q -n 2 --run-dir d \
	--set train.steps=1000000 --set log.every_steps=1 small.yaml \
	>d.out 2>d.err &
pid=$!
i=0
while [ "$(cat d/metrics.jsonl 2>/dev/null | wc -l)" -lt 2 ]; do
	kill -0 $pid 2>/dev/null || { cat d.err >&2; fail "run d ended early"; }
	[ $i -lt 1800 ] || fail "run d: no second step in 180 s"
	sleep 0.1
	i=$((i + 1))
done
set -- tmp/dtrain-launch.*/0/rank-1.pid
[ -f "$1" ] || fail "no rank-1.pid in tmp: $(ls tmp/*)"
kill -KILL "$(cut -d' ' -f1 "$1")"
set +e
wait $pid
rc=$?
set -e
[ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] || { cat d.err >&2; fail "a killed rank gave exit $rc"; }
grep -q 'mpirun noticed that process rank 1 .* exited on signal 9' d.err ||
	{ cat d.err >&2; fail "mpirun's message on the killed rank is missing"; }
echo "launch-quiet: no banners after a clean stop; a failure shows them"
