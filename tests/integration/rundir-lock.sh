#!/bin/sh
# SPDX-License-Identifier: MIT
# One run per run directory: while a run holds RUN_DIR (an flock on
# RUN_DIR/lock), a second run or a resume into it fails at once, naming
# the holder's pid and host, and writes nothing there; once the holder
# has gone (here killed with SIGKILL: the kernel drops the lock), a
# resume takes the directory.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job job.yaml 100000
"$DTRAIN" run -q --run-dir r job.yaml >first.out 2>first.err &
first=$!
i=0
while [ ! -s r/metrics.jsonl ]; do
	i=$((i + 1))
	[ "$i" -le 600 ] || { kill -9 "$first"; cat first.err >&2; fail "the first run logged nothing"; }
	kill -0 "$first" 2>/dev/null || { cat first.err >&2; fail "the first run died"; }
	sleep 0.1
done
host=$(hostname)
cp r/metrics.jsonl before.jsonl
cp r/job.yaml before.yaml
for cmd in "run -q --run-dir r job.yaml" "resume -q r"; do
	t0=$(date +%s)
	# shellcheck disable=SC2086
	expect_fail 2 "r is in use by another dtrain \\(pid $first on host $host; r/lock\\)" \
		timeout 60 "$DTRAIN" $cmd
	[ $(($(date +%s) - t0)) -lt 30 ] || fail "dtrain $cmd waited for the lock"
done
kill -9 "$first"
wait "$first" 2>/dev/null || :
# Nothing of the refused runs reached the directory: job.yaml is the first
# run's, and metrics.jsonl only grew by the first run's own lines.
cmp -s before.yaml r/job.yaml || fail "job.yaml replaced by a refused run"
head -n "$(wc -l <before.jsonl)" r/metrics.jsonl | cmp -s - before.jsonl ||
	fail "metrics.jsonl was rewritten by a refused run"
# The holder is gone: a resume takes the directory.
last=$(ls r/checkpoints | grep '^step-' | sort | tail -n 1 | sed 's/^step-0*//')
last=${last:-0}
timeout 120 "$DTRAIN" resume -q --set "train.steps=$((last + 5))" r \
	>resume.out 2>resume.err ||
	{ cat resume.err >&2; fail "resume after the holder died"; }
grep -q "pid [0-9]* on host $host" r/lock || fail "r/lock does not name its holder"
echo "run directory lock: second run and resume refused at once, naming pid $first"
