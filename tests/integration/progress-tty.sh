#!/bin/sh
# SPDX-License-Identifier: MIT
# `dtrain run -n 2` at a terminal (a tmux pane) draws the progress line
# although mpirun pipes the ranks' stderr, and redraws it in place: two
# captures of the pane a while apart show one progress line each, with
# different contents; with log.every_steps past the run's end the step
# count still moves every step. With DTRAIN_PROGRESS_TTY=0 the same run prints
# plain log lines with ISO 8601 times instead.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
if ! command -v tmux >/dev/null 2>&1; then
	echo "SKIP: tmux missing (apt-get install tmux)"
	exit 77
fi
sock=$SCRATCH/tmux.sock
trap 'tmux -S "$sock" kill-server 2>/dev/null || :; rm -rf "$SCRATCH"' EXIT
unset DTRAIN_PROGRESS_TTY
# A job of some seconds, logged every 5 steps.
cat >job.yaml <<YAML
name: tty
seed: 5
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  scale: 0.00392156862745098
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 1024, activation: relu}
    - {type: dense, units: 1024, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 256
  steps: 80
  optimizer: sgd
  lr: 0.01
log:
  every_steps: 5
YAML

# in_pane NAME CMD: runs CMD in a new tmux window NAME, then "EXIT=rc".
in_pane() {
	tmux -S "$sock" new-window -d -n "$1" \
		"cd '$SCRATCH' && $2; echo EXIT=\$?; sleep 600"
}
# The pane's text, its history included.
pane() {
	tmux -S "$sock" capture-pane -p -S - -t "$1"
}
# wait_for NAME PATTERN: until the pane shows a line matching PATTERN.
wait_for() {
	i=0
	until pane "$1" | grep -Eq "$2"; do
		[ $i -lt 1800 ] || { pane "$1" >&2; fail "$1: no /$2/ in 180 s"; }
		sleep 0.1
		i=$((i + 1))
	done
}

tmux -S "$sock" new-session -d -s t -x 160 -y 40 "sleep 900"
in_pane tty "'$DTRAIN' run -n 2 --run-dir r job.yaml"
wait_for tty '^step [0-9]+/80 '
pane tty >cap1
sleep 2
pane tty >cap2
wait_for tty '^EXIT='
pane tty >cap3
grep -q '^EXIT=0$' cap3 || { cat cap3 >&2; fail "the run failed"; }
for c in cap1 cap2; do
	n=$(grep -Ec '^step [0-9]+/80 ' $c)
	[ "$n" -eq 1 ] || { cat $c >&2; fail "$c has $n progress lines, not one redrawn line"; }
done
l1=$(grep -E '^step [0-9]+/80 ' cap1)
l2=$(grep -E '^step [0-9]+/80 ' cap2)
echo "first:  $l1"
echo "second: $l2"
echo "$l1" | grep -Eq 'ETA [0-9]+m[0-9][0-9]s' || fail "no ETA in the progress line"
[ "$l1" != "$l2" ] || fail "the progress line was not redrawn in 2 s"
! grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' cap3 || fail "plain log lines on a terminal"

# The step count moves every step, not only at logged steps: with no
# step logged before the last, the line still counts up while it runs.
in_pane nolog "'$DTRAIN' run -n 2 --run-dir n --set log.every_steps=1000 --set train.steps=200 job.yaml"
wait_for nolog '^step [0-9]+/200 '
n1=$(pane nolog | sed -n 's|^step \([0-9]*\)/200 .*|\1|p' | tail -n 1)
sleep 1
n2=$(pane nolog | sed -n 's|^step \([0-9]*\)/200 .*|\1|p' | tail -n 1)
echo "unlogged steps: $n1 then $n2"
[ "$n1" -lt 200 ] || fail "no progress line before the last step with log.every_steps 1000"
[ "$n2" -gt "$n1" ] || fail "the step count did not move between logged steps ($n1, $n2)"
pane nolog | grep -Eq '^step [0-9]+/200  epoch 0  loss [0-9]' ||
	fail "no running loss in the unlogged progress line"
wait_for nolog '^EXIT='
pane nolog | grep -q '^EXIT=0$' || { pane nolog >&2; fail "the unlogged run failed"; }

# The other way, and the timestamps of plain lines.
in_pane plain "DTRAIN_PROGRESS_TTY=0 '$DTRAIN' run -n 2 --run-dir p job.yaml"
wait_for plain '^EXIT='
pane plain >cap4
grep -q '^EXIT=0$' cap4 || { cat cap4 >&2; fail "the plain run failed"; }
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z step 5/80 .* eta [0-9]+m[0-9][0-9]s$' cap4 ||
	{ cat cap4 >&2; fail "no timestamped plain log line"; }
