#!/bin/sh
# SPDX-License-Identifier: MIT
# An empty file or directory name given to an option (-o "", --input "",
# --run-dir "") is bad usage: exit status 2 with the option named, before
# anything runs. Before the fix predict, export and report did all their
# work and then failed with exit status 1 naming a temporary file that
# was never made ("dtrain: .tmp.PID: cannot rename to : ..."), and run
# said "cannot create run directory: File name too long".
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

write_tiny_job job.yaml
"$DTRAIN" run -q --run-dir r job.yaml >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "the run failed"; }

expect_fail 2 '^dtrain predict: -o: expected a file name, found ""' \
	"$DTRAIN" predict --input "$FMNIST/t10k-images-idx3-ubyte.gz" -o "" r
expect_fail 2 '^dtrain predict: --input: expected a file name, found ""' \
	"$DTRAIN" predict --input "" -o out.npy r
expect_fail 2 '^dtrain export: --output: expected a file name, found ""' \
	"$DTRAIN" export --output= r
expect_fail 2 '^dtrain report: -o: expected a file name, found ""' \
	"$DTRAIN" report -o "" r
expect_fail 2 '^dtrain run: --run-dir: expected a directory name, found ""' \
	"$DTRAIN" run --run-dir "" job.yaml
[ ! -e out.npy ] || fail "a refused predict wrote out.npy"
ls -a | grep -q '\.tmp\.' && fail "a temporary file was left behind"
[ ! -e runs ] || fail "a refused run made a run directory"
echo "empty-path-args: ok"
