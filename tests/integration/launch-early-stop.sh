#!/bin/sh
# SPDX-License-Identifier: MIT
# A stop that reaches `dtrain run -n 2` before any rank noted its pid
# (mpirun still starting them) is held by the launcher and passed on to
# each rank as its note appears: the ranks stop after their set-up, say
# so and exit 3 at once, not after mpirun's 15 s kill delay with their
# messages lost. A launch that ends before any rank started says that it
# was stopped before the ranks started and exits 3. To be sure that no
# rank has noted its pid when the stop comes, mpirun's process group
# (mpirun and the ranks it forked) is held with SIGSTOP meanwhile.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
cat >job.yaml <<YAML
name: early
seed: 1
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  scale: 0.00392156862745098
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 32, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 64
  steps: 30000
  lr: 0.05
YAML
mkdir tmp

# held NAME: starts `dtrain run -n 2` into run dir NAME and stops mpirun's
# process group as soon as the launcher started it, before any rank noted
# its pid (exit 77 when it never caught it that early). Leaves the
# launcher's pid in $pid and mpirun's (its group's) in $mp.
held() {
	for try in 1 2 3 4 5; do
		rm -rf "$1" tmp/*
		TMPDIR=$SCRATCH/tmp "$DTRAIN" run -q -n 2 --run-dir "$1" \
			job.yaml >"$1.out" 2>"$1.err" &
		pid=$!
		mp=
		while [ -z "$mp" ]; do
			mp=$(pgrep -P $pid | head -n 1)
			kill -0 $pid 2>/dev/null || fail "$1: ended early"
		done
		kill -STOP -- -"$mp" 2>/dev/null || kill -STOP "$mp"
		[ -n "$(ls tmp/dtrain-launch.*/0/rank-*.pid 2>/dev/null)" ] ||
			return 0
		kill -CONT -- -"$mp" 2>/dev/null || true
		kill -KILL $pid
		kill -KILL -- -"$mp" 2>/dev/null || true
		wait $pid || true
	done
	echo "SKIP: the ranks noted their pids before mpirun could be held"
	exit 77
}

# said FILE PATTERN: waits up to 20 s for a line matching PATTERN in FILE
# (the launcher's word that it holds the stop, so that it has the stop
# before mpirun goes on); goes on without it all the same.
said() {
	i=0
	until grep -q "$2" "$1"; do
		[ $i -lt 200 ] || return 0
		sleep 0.1
		i=$((i + 1))
	done
}

# finish: waits for the launcher ($pid) to end (at most 60 s) and leaves
# its exit code in $rc and the seconds it took in $took.
finish() {
	t0=$(date +%s)
	set +e
	i=0
	while kill -0 $pid 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL $pid 2>/dev/null
	wait $pid
	rc=$?
	set -e
	took=$(($(date +%s) - t0))
}

# 1. The stop comes while the ranks start: each gets it once it noted its
# pid, stops after its set-up and says so; no 15 s of mpirun's delay.
held a
kill -TERM $pid
said a.err 'passing it on to each as it starts'
kill -CONT -- -"$mp"
finish
[ "$rc" -eq 3 ] ||
	{ cat a.err >&2; fail "an early stop exited $rc, expected 3"; }
grep -q 'interrupted while setting up' a.err ||
	{ cat a.err >&2; fail "the ranks did not say they were stopped"; }
[ "$took" -lt 12 ] ||
	{ cat a.err >&2; fail "the ranks took ${took} s to stop: not passed on"; }
grep -q 'passing it on to each as it starts' a.err ||
	{ cat a.err >&2; fail "the launcher did not say it held the stop"; }
[ ! -d a/checkpoints ] || [ -z "$(ls a/checkpoints)" ] ||
	fail "a checkpoint after a stop before the first step"

# 2. The launch ends before any rank started (mpirun killed here while
# held): the launcher says it was stopped before the ranks started, 3.
held b
kill -TERM $pid
said b.err 'passing it on to each as it starts'
kill -KILL -- -"$mp"
finish
[ "$rc" -eq 3 ] || { cat b.err >&2;
	fail "a stop before the ranks started exited $rc, expected 3"; }
grep -q 'stopped before the ranks started; nothing was trained' b.err ||
	{ cat b.err >&2; fail "the launcher did not say what happened"; }
# Nothing of the launcher's is left behind in its TMPDIR.
[ -z "$(ls tmp | grep dtrain-launch)" ] ||
	fail "the launcher left $(ls tmp) in TMPDIR"
