#!/bin/sh
# SPDX-License-Identifier: MIT
# At a terminal (a tmux pane), the progress line covers more than the
# steps: `dtrain run -n 2` shows "read NAME  A/B MB ..." while it decodes
# a large gzip IDX file and "eval N/10000  ELAPSED  ETA ..." during an
# evaluation, in the one time-span format, and so do `dtrain eval` and
# `dtrain predict` of the run; each line is redrawn in place and cleared
# when its task ends. With stderr piped (a file) none of it appears: the
# same commands write the plain log lines alone, no carriage return.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
if ! command -v tmux >/dev/null 2>&1; then
	echo "SKIP: tmux missing (apt-get install tmux)"
	exit 77
fi
sock=$SCRATCH/tmux.sock
trap 'tmux -S "$sock" kill-server 2>/dev/null || :; rm -rf "$SCRATCH"' EXIT
unset DTRAIN_PROGRESS_TTY
# Three times Fashion-MNIST's training images, gzip at level 1: 80 MB to
# decode, a second or more.
"$PYTHON" - "$FMNIST" <<'PY' || fail "cannot write the large IDX files"
import gzip, struct, sys
d = gzip.open(sys.argv[1] + "/train-images-idx3-ubyte.gz").read()[16:]
l = gzip.open(sys.argv[1] + "/train-labels-idx1-ubyte.gz").read()[8:]
with gzip.open("big-images-idx3-ubyte.gz", "wb", compresslevel=1) as f:
    f.write(struct.pack(">IIII", 0x803, 180000, 28, 28))
    for _ in range(3):
        f.write(d)
with gzip.open("big-labels-idx1-ubyte.gz", "wb", compresslevel=1) as f:
    f.write(struct.pack(">II", 0x801, 180000))
    for _ in range(3):
        f.write(l)
PY
# A wide model: evaluating 10000 samples takes seconds (about 0.5 s a
# pass at 2048 units on oneDNN's f32 products on full-width AVX-512,
# under the line's 0.5 s delay; 4096 units do four times the work).
cat >job.yaml <<YAML
name: tasks
seed: 5
data:
  train:
    images: $SCRATCH/big-images-idx3-ubyte.gz
    labels: $SCRATCH/big-labels-idx1-ubyte.gz
  eval:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
  scale: 0.00392156862745098
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 4096, activation: relu}
    - {type: dense, units: 4096, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 64
  steps: 4
  optimizer: sgd
  lr: 0.01
log:
  every_steps: 2
eval:
  every_steps: 2
YAML

in_pane() {
	tmux -S "$sock" new-window -d -n "$1" \
		"cd '$SCRATCH' && $2; echo EXIT=\$?; sleep 600"
}
pane() {
	tmux -S "$sock" capture-pane -p -S - -t "$1"
}
# wait_for NAME PATTERN: until the pane shows a line matching PATTERN,
# which goes to NAME.seen.
wait_for() {
	i=0
	until pane "$1" >"$1.now" && grep -E "$2" "$1.now" >"$1.seen"; do
		[ $i -lt 1200 ] || { cat "$1.now" >&2; fail "$1: no /$2/ in 120 s"; }
		sleep 0.1
		i=$((i + 1))
	done
}
SPAN='[0-9]+m[0-9]{2}s'

tmux -S "$sock" new-session -d -s t -x 160 -y 40 "sleep 900"
# Each 64 KiB of the read waits 400 us more (DTRAIN_TEST_METER_DELAY_US),
# so that the read lasts about a second past the line's 0.5 s delay on a
# machine that would decode the file in less.
in_pane run "DTRAIN_TEST_METER_DELAY_US=400 '$DTRAIN' run -n 2 --run-dir r job.yaml"
wait_for run "^read big-images-idx3-ubyte\.gz [0-9]+\.[0-9]/[0-9]+\.[0-9] MB  $SPAN(  ETA $SPAN)?\$"
echo "reading: $(cat run.seen)"
wait_for run "^eval [0-9]+/10000  $SPAN  ETA $SPAN\$"
echo "evaluating: $(cat run.seen)"
wait_for run '^EXIT='
grep -q '^EXIT=0$' run.now || { cat run.now >&2; fail "the run failed"; }
grep -q '^eval at step 2: loss' run.now || { cat run.now >&2; fail "no eval result line"; }
# Cleared at their end: no task line is left on the screen.
! grep -Eq '^(read big|eval [0-9])' run.now || { cat run.now >&2; fail "a task line was left behind"; }

in_pane ev "'$DTRAIN' eval r"
wait_for ev "^eval [0-9]+/10000  $SPAN  ETA $SPAN\$"
wait_for ev '^EXIT='
grep -q '^EXIT=0$' ev.now || { cat ev.now >&2; fail "dtrain eval failed"; }
grep -q '^accuracy ' ev.now || { cat ev.now >&2; fail "dtrain eval printed no accuracy"; }
in_pane pr "'$DTRAIN' predict --input '$FMNIST/t10k-images-idx3-ubyte.gz' -o p.npy r"
wait_for pr "^predict [0-9]+/10000  $SPAN  ETA $SPAN\$"
wait_for pr '^EXIT='
grep -q '^EXIT=0$' pr.now || { cat pr.now >&2; fail "dtrain predict failed"; }

# Piped: the plain lines, nothing of the tasks.
"$DTRAIN" run -n 2 --run-dir q job.yaml >q.out 2>q.err ||
	{ cat q.err >&2; fail "the piped run failed"; }
"$DTRAIN" eval r >e.out 2>e.err || { cat e.err >&2; fail "piped eval failed"; }
"$DTRAIN" predict --input "$FMNIST/t10k-images-idx3-ubyte.gz" -o q.npy r \
	>p.out 2>p.err || { cat p.err >&2; fail "piped predict failed"; }
for f in q.err e.err p.err; do
	if grep -Eq '(read|eval|predict) [0-9.]+/|'"$(printf '\r')" "$f"; then
		cat -A "$f" >&2
		fail "$f: progress on a pipe"
	fi
done
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z eval at step 2: loss' q.err ||
	{ cat q.err >&2; fail "no timestamped eval line on the pipe"; }
[ ! -s e.err ] || { cat e.err >&2; fail "piped eval wrote to stderr"; }
echo "progress-tasks: read, eval and predict lines at a terminal, none on a pipe"
