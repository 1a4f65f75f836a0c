#!/bin/sh
# SPDX-License-Identifier: MIT
# A run refused after it made its run directory but before its first step
# (a model.init_from that does not exist, a training file that is not
# IDX) leaves no directory behind, on one rank and on two; a directory
# that existed before keeps what it held. Before the fix each refused run
# left DIR/job.yaml and DIR/lock, and the next run's message about
# results was the user's first hint.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

write_tiny_job job.yaml
printf 'garbage' >bad.idx
for n in 1 2; do
	expect_fail 1 'model.init_from: .*missing/ckpt: cannot open' \
		"$DTRAIN" run -n $n -q --run-dir "new$n/run" \
		--set model.init_from="$SCRATCH/missing/ckpt" job.yaml
	[ ! -e "new$n/run" ] || fail "-n $n: new$n/run left: $(ls new$n/run)"
	expect_fail 1 'bad.idx: byte 0: bad magic' \
		"$DTRAIN" run -n $n -q --run-dir "idx$n" \
		--set data.train.images="$SCRATCH/bad.idx" job.yaml
	[ ! -e "idx$n" ] || fail "-n $n: idx$n left: $(ls idx$n)"
done
# a directory that was there stays, with what it held
mkdir kept
echo "mine" >kept/notes.txt
expect_fail 1 'cannot open' "$DTRAIN" run -q --run-dir kept \
	--set model.init_from="$SCRATCH/missing/ckpt" job.yaml
[ "$(cat kept/notes.txt)" = mine ] || fail "kept/notes.txt changed"
# and a good run in the same place then starts
"$DTRAIN" run -q --run-dir new1/run job.yaml >/dev/null 2>&1 ||
	fail "the next run in new1/run failed"
[ -f new1/run/summary.json ] || fail "new1/run has no summary.json"
echo "refused-rundir: ok"
