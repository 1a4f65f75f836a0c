#!/bin/sh
# SPDX-License-Identifier: MIT
# What a command writes to standard output is checked (issue 13, "every
# write is checked"): with stdout on /dev/full (every write fails with
# ENOSPC) dtrain --help, --version, help, plan and plan --dry-run --json
# exit 1 saying so, where they used to exit 0 with their output lost;
# with stdout on a file they still exit 0 and write it whole.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
if ! [ -c /dev/full ]; then
	echo "SKIP: no /dev/full here"
	exit 77
fi
cat >job.yaml <<YAML
name: out
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 10}
train:
  global_batch: 8
  steps: 4
  lr: 0.1
YAML
msg="^dtrain: write error on standard output: No space left on device$"
for args in "--help" "--version" "help" "help plan" "plan --help" \
	"plan --dry-run job.yaml" "plan --dry-run --json job.yaml"; do
	# shellcheck disable=SC2086
	"$DTRAIN" $args >out.txt 2>err.txt ||
		{ cat err.txt >&2; fail "dtrain $args failed to a file"; }
	[ -s out.txt ] || fail "dtrain $args wrote nothing"
	# shellcheck disable=SC2086
	set +e
	"$DTRAIN" $args >/dev/full 2>full.err
	rc=$?
	set -e
	[ "$rc" -eq 1 ] || { cat full.err >&2;
		fail "dtrain $args >/dev/full exited $rc, expected 1"; }
	grep -q "$msg" full.err || { cat full.err >&2;
		fail "dtrain $args >/dev/full: no write error named"; }
done
# A command that fails on its own keeps its status and its one message.
set +e
"$DTRAIN" plan --no-such-option >/dev/full 2>bad.err
rc=$?
set -e
[ "$rc" -eq 2 ] || { cat bad.err >&2; fail "a bad option exited $rc, expected 2"; }
! grep -q "write error" bad.err || fail "a failed command got a second message"
echo "ok: 7 commands to /dev/full exit 1 naming the write error; to a file 0"
