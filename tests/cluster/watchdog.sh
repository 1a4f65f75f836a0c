#!/bin/sh
# SPDX-License-Identifier: MIT
# The watchdog of parallel.timeout_s on one host (no namespaces, no root):
# a healthy run with it on gives the losses of one without it, bit for
# bit, and says nothing; rank 1 of 2 (shared memory) SIGSTOPped mid-run
# is named by rank 0 within 2 timeouts and the job ends, exit 1, within
# 60 s. faults.sh does the same across hosts.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job small.yaml
mpi 2 "$DTRAIN" run -q --run-dir plain small.yaml >/dev/null
mpi 2 "$DTRAIN" run -q --run-dir watched --set parallel.timeout_s=5 \
	small.yaml >/dev/null 2>watched.err || { cat watched.err >&2; fail "the watched run failed"; }
compare_losses plain watched 0 >/dev/null || fail "the watchdog changed the losses"
! grep -q 'rank [0-9]*:' watched.err || { cat watched.err >&2; fail "the watchdog spoke in a healthy run"; }

write_ckpt_job job.yaml 3000
sed -i 's/every_steps: 25/every_steps: 100/' job.yaml
mpi 2 "$DTRAIN" run -q --run-dir r --set parallel.timeout_s=5 job.yaml \
	>r.out 2>r.err &
job=$!
i=0
while [ ! -d r/checkpoints/step-000000100 ]; do
	i=$((i + 1))
	[ $i -le 600 ] || { cat r.err >&2; fail "no checkpoint in 60 s"; }
	sleep 0.1
done
# Rank 1: the dtrain process whose environment says so.
p=
for c in $(pgrep -x dtrain); do
	if tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null |
	   grep -qx OMPI_COMM_WORLD_RANK=1 &&
	   tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -q "^PWD=$SCRATCH\$"; then
		p=$c
	fi
done
[ -n "$p" ] || fail "rank 1 not found"
t0=$(date +%s)
kill -STOP "$p"
set +e
wait $job
rc=$?
set -e
dt=$(( $(date +%s) - t0 ))
kill -CONT "$p" 2>/dev/null || :
[ $rc -eq 1 ] || { cat r.err >&2; fail "exit $rc after SIGSTOP, expected 1"; }
[ $dt -lt 60 ] || fail "the job took $dt s to end"
grep -Eq 'rank 0: waited [0-9]+ s in MPI_[A-Za-z_]+ \(parallel.timeout_s 5\); rank 1 silent for [0-9]+ s' r.err ||
	{ cat r.err >&2; fail "rank 1 not named"; }
echo "ok: SIGSTOP of rank 1 named and the job ended in $dt s"
