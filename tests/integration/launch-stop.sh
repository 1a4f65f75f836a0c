#!/bin/sh
# SPDX-License-Identifier: MIT
# A SIGINT to `dtrain run -n 2` (what Ctrl-C at a terminal sends it) reaches
# the ranks, which finish their step, checkpoint and exit 3, and the
# launcher exits 3 too, even though each step and its checkpoint take
# seconds: longer than the second Open MPI gives ranks between SIGTERM and
# SIGKILL when mpirun itself is signalled. `dtrain resume -n 2` then
# continues from that checkpoint to the end. The same under --max-restarts,
# which must not restart a job that was stopped on request.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
# About 12 million parameters: a step of a second or so on one BLAS thread,
# a checkpoint of 140 MB with the Adam state.
cat >wide.yaml <<YAML
name: wide
seed: 3
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  scale: 0.00392156862745098
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 3072, activation: relu}
    - {type: dense, units: 3072, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 256
  steps: 9
  optimizer: adam
  lr: 0.0001
checkpoint:
  every_steps: 1000
  at_end: true
log:
  every_steps: 1
YAML

# interrupt DIR ARGS...: starts `dtrain ARGS`, waits for its second logged
# step, sends SIGINT to the dtrain process alone, and leaves its exit code
# in $rc and the seconds it took to stop in $took.
interrupt() {
	d=$1
	shift
	TMPDIR=$SCRATCH/tmp timeout 300 "$DTRAIN" "$@" >"$d.out" 2>"$d.err" &
	pid=$!
	i=0
	while [ "$(cat "$d/metrics.jsonl" 2>/dev/null | wc -l)" -lt 2 ]; do
		kill -0 $pid 2>/dev/null || { cat "$d.err" >&2; fail "$*: ended early"; }
		[ $i -lt 1800 ] || fail "$*: no second step in 180 s"
		sleep 0.1
		i=$((i + 1))
	done
	t0=$(date +%s)
	# timeout would relay it; send it to dtrain itself
	kill -INT "$(pgrep -P $pid | head -n 1)"
	set +e
	wait $pid
	rc=$?
	set -e
	took=$(($(date +%s) - t0))
}

mkdir tmp
interrupt r run -q -n 2 --run-dir r wide.yaml
[ "$rc" -eq 3 ] || { cat r.err >&2; fail "run -n 2 after SIGINT exited $rc, expected 3"; }
grep -q 'interrupted at step [0-9]*; checkpoint written' r.err ||
	{ cat r.err >&2; fail "no interruption message"; }
ckpt=$(ls r/checkpoints | grep '^step-' | tail -n 1)
[ -n "$ckpt" ] || fail "no checkpoint after the interruption"
[ -f "r/checkpoints/$ckpt/MANIFEST.json" ] || fail "$ckpt has no manifest"
step=$(echo "$ckpt" | sed 's/^step-0*//')
[ "$step" -ge 2 ] && [ "$step" -lt 9 ] || fail "interrupted at step $step"
echo "stopped in ${took}s at step $step"
# Nothing of the launcher's is left behind in its TMPDIR.
[ -z "$(ls tmp)" ] || fail "the launcher left $(ls tmp) in TMPDIR"

timeout 300 "$DTRAIN" resume -q -n 2 r >res.out 2>res.err ||
	{ cat res.err >&2; fail "resume -n 2 failed"; }
grep -q "resuming from .*$ckpt" res.err || { cat res.err >&2; fail "did not resume from $ckpt"; }
last=$("$PYTHON" -c '
import json, sys
print([json.loads(l)["step"] for l in open(sys.argv[1]) if "\"loss\"" in l][-1])
' r/metrics.jsonl)
[ "$last" -eq 9 ] || fail "the resumed run ended at step $last, not 9"
grep -q '^wide: 9 steps' res.out || { cat res.out >&2; fail "no final line"; }

# Under --max-restarts the stop is not a failure to restart from.
interrupt s run -q -n 2 --max-restarts 2 --run-dir s wide.yaml
[ "$rc" -eq 3 ] || { cat s.err >&2; fail "--max-restarts after SIGINT exited $rc, expected 3"; }
! grep -q 'restarting' s.err || fail "a stopped job was restarted"
