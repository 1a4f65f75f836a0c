#!/bin/sh
# SPDX-License-Identifier: MIT
# A full disk under metrics.jsonl stops the run (issue 13, "outputs that
# never lie"): the run directory is a 64 KiB tmpfs, the checkpoints go
# elsewhere (checkpoint.dir), and a line a step fills it within a few
# hundred steps. The run must exit 1 naming metrics.jsonl, write a
# checkpoint at the step it stopped, leave no summary.json and no part of
# a line at the end of metrics.jsonl (issue 31: it ended in
# `{"step":303,"epoch"`); on 2 ranks too (rank 0 writes, every rank
# stops). A disk full at the start (issue 31): each file the run makes
# before its first step failing in turn, the error names the file and no
# run directory (nor an empty lock, nor tb/ with log.tensorboard) is left
# behind. Needs mount(8) of a tmpfs (root); skipped with a message
# elsewhere.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
mkdir full
if ! mount -t tmpfs -o size=64k dtrain-test-full full 2>mount.err; then
	echo "SKIP: cannot mount a tmpfs here ($(cat mount.err))"
	exit 77
fi
trap 'umount "$SCRATCH/full" 2>/dev/null; rm -rf "$SCRATCH"' EXIT
cat >job.yaml <<YAML
name: full
seed: 2
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 10}
train:
  global_batch: 32
  steps: 2000
  optimizer: sgd
  lr: 0.01
log:
  every_steps: 1
YAML

# check_full RUN_DIR CKPT_DIR: the run stopped on the full disk.
check_full() {
	grep -q "metrics.jsonl: write failed: No space left on device" err ||
		{ cat err >&2; fail "the error does not name metrics.jsonl and ENOSPC"; }
	step=$(sed -n 's/.*stopping at step \([0-9]*\) (checkpoint written;.*/\1/p' err)
	[ -n "$step" ] || { cat err >&2; fail "no checkpoint at the stop"; }
	[ "$step" -lt 2000 ] || fail "stopped at step $step, after the end"
	ls "$2" | grep -qx "step-0*$step" ||
		{ ls "$2" >&2; fail "no checkpoint of step $step in $2"; }
	[ ! -e "$1/summary.json" ] || fail "summary.json written after the failure"
	# Every whole line before the cut parses; the steps go up to the stop.
	"$PYTHON" - "$1/metrics.jsonl" "$step" <<'PY' || fail "metrics.jsonl is wrong"
import json, sys
text = open(sys.argv[1]).read()
if text and not text.endswith("\n"):
    sys.exit("metrics.jsonl ends in part of a line: %r" % text[-60:])
lines = text.split("\n")
whole = [json.loads(l) for l in lines[:-1]]
if not whole or whole[-1]["step"] > int(sys.argv[2]):
    sys.exit("last whole line %r, stopped at %s" % (whole[-1:], sys.argv[2]))
print("%d whole lines, stopped at step %s" % (len(whole), sys.argv[2]))
PY
}

expect_fail 1 "metrics.jsonl" "$DTRAIN" run -q --run-dir full/r1 \
	--set checkpoint.dir="$SCRATCH/ckpt1" job.yaml
check_full full/r1 ckpt1
rm -rf full/r1
expect_fail 1 "metrics.jsonl" mpi 2 "$DTRAIN" run -q --run-dir full/r2 \
	--set checkpoint.dir="$SCRATCH/ckpt2" job.yaml
check_full full/r2 ckpt2
rm -rf full/r2

# Full at the start: 1 to 4 free blocks of 4 KiB let the lock, run-id,
# checkpoints/owner, job.yaml and plan.json through one after another,
# and the next one fails.
for free in 0 1 2 3 4; do
	rm -f full/fill
	dd if=/dev/zero of=full/fill bs=4096 count=$((16 - free)) 2>/dev/null || :
	set +e
	"$DTRAIN" run -q --run-dir full/s job.yaml >/dev/null 2>err
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || { cat err >&2; fail "$free blocks free: exit $rc, expected 1"; }
	grep -Eq "full/s/(lock|run-id|checkpoints/owner|job.yaml|plan.json)[^:]*: .*No space left on device" err ||
		{ cat err >&2; fail "$free blocks free: the error names no file"; }
	[ ! -e full/s ] || { ls -lR full/s >&2; fail "$free blocks free: the run directory was left behind"; }
	sed 's/^/  /' err
done

# The same with log.tensorboard, whose tb/ folder and event file come
# last (issue 31: a full disk there left tb/, and with it the run
# directory): 5 free blocks let plan.json through, the event file's
# first record fails.
for free in 4 5; do
	rm -f full/fill
	dd if=/dev/zero of=full/fill bs=4096 count=$((16 - free)) 2>/dev/null || :
	set +e
	"$DTRAIN" run -q --run-dir full/s --set log.tensorboard=true \
		job.yaml >/dev/null 2>err
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || { cat err >&2; fail "tensorboard, $free blocks free: exit $rc, expected 1"; }
	grep -Eq "full/s/(plan.json|tb/events)[^:]*: .*No space left on device" err ||
		{ cat err >&2; fail "tensorboard, $free blocks free: the error names no file"; }
	[ ! -e full/s ] || { ls -lR full/s >&2; fail "tensorboard, $free blocks free: the run directory was left behind"; }
	sed 's/^/  /' err
done
grep -q "tb/events" err || fail "the event file never failed: the case tests nothing"
rm -f full/fill
echo "a full disk under metrics.jsonl: exit 1, named, checkpointed, whole lines; full at the start (tensorboard too): named, nothing left"
