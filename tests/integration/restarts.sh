#!/bin/sh
# SPDX-License-Identifier: MIT
# dtrain run -n 2 --max-restarts 2: one rank SIGKILLed mid-run; the job is
# restarted from its newest checkpoint and ends with the parameters of the
# uninterrupted run.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job job.yaml 1500
sed -i 's/every_steps: 25/every_steps: 100/' job.yaml
mpi 2 "$DTRAIN" run -q --run-dir full job.yaml >/dev/null
export_of full full.st

timeout 600 "$DTRAIN" run -q -n 2 --max-restarts 2 --run-dir r job.yaml \
	>r.out 2>r.err &
sup=$!
# Wait for the first checkpoint, then kill one rank.
i=0
while [ ! -d r/checkpoints/step-000000100 ] && [ $i -lt 600 ]; do
	sleep 0.1; i=$((i + 1))
done
mpirun_pid=$(pgrep -P $sup | head -n 1)
rank=$(pgrep -P "$mpirun_pid" | tail -n 1)
[ -n "$rank" ] || fail "no rank process found"
kill -KILL "$rank"
wait $sup || { cat r.err >&2; fail "the supervised run failed"; }
grep -q 'restarting from the newest checkpoint' r.err || { cat r.err >&2; fail "no restart message"; }
export_of r r.st
cmp full.st r.st || fail "restarted run differs from the uninterrupted one"
