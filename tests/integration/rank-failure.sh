#!/bin/sh
# SPDX-License-Identifier: MIT
# One rank that cannot read its data ends the whole job quickly, the
# message naming the rank; the others do not hang.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job job.yaml
start=$(date +%s)
DTRAIN_TEST_FAIL_READ_RANK=1 expect_fail 1 \
	'rank 1: .*missing-for-test' mpi 3 -x DTRAIN_TEST_FAIL_READ_RANK \
	"$DTRAIN" run -q --run-dir r job.yaml
elapsed=$(( $(date +%s) - start ))
[ "$elapsed" -lt 60 ] || fail "the job took ${elapsed}s to stop"
[ ! -e r/summary.json ] || fail "a failed run wrote a summary"
