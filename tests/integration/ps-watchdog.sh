#!/bin/sh
# SPDX-License-Identifier: MIT
# The watchdog of parallel.timeout_s over parameter-server traffic, on one
# host (3 ranks on shared memory: workers 0 and 1, server 2; timeout 5 s):
#   - a healthy sync run with it on gives the losses of one without it,
#     bit for bit, and says nothing;
#   (a) sync, the server SIGSTOPped mid-run: worker 0, waiting for its
#       pull, names rank 2 within the timeout and the job ends, exit 1,
#       within 60 s;
#   (b) async with max_staleness 3, worker 1 SIGSTOPped: the server,
#       waiting in MPI_Waitany for the next push, names rank 1 (worker 0
#       runs on until the bound stops it, then names it too) and the job
#       ends, exit 1, within 60 s.
# Before the watchdog saw this traffic both jobs hung until killed. Each
# job runs under a 100 s timeout, so a hang fails the test instead of
# stalling it. tests/cluster/ps-faults.sh does the same across hosts.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
PS="--set parallel.sync=parameter_server --set parallel.servers=1"

write_small_job small.yaml
# shellcheck disable=SC2086
mpi 3 "$DTRAIN" run -q --run-dir plain $PS small.yaml >/dev/null
# shellcheck disable=SC2086
mpi 3 "$DTRAIN" run -q --run-dir watched $PS --set parallel.timeout_s=5 \
	small.yaml >/dev/null 2>watched.err || { cat watched.err >&2; fail "the watched run failed"; }
losses plain >plain.losses
losses watched >watched.losses
[ "$(wc -l <plain.losses)" -eq 20 ] || fail "expected 20 loss lines"
cmp plain.losses watched.losses || fail "the watchdog changed the losses"
! grep -q 'rank [0-9]*:' watched.err || { cat watched.err >&2; fail "the watchdog spoke in a healthy run"; }
echo "ok: a healthy parameter-server run with the watchdog: the same losses, no word"

write_ckpt_job job.yaml 3000
sed -i 's/every_steps: 25/every_steps: 100/' job.yaml

# rank_pid R: the pid of this test's dtrain rank R.
rank_pid() {
	for c in $(pgrep -x dtrain); do
		if tr '\0' '\n' 2>/dev/null <"/proc/$c/environ" |
		   grep -qx "OMPI_COMM_WORLD_RANK=$1" &&
		   tr '\0' '\n' 2>/dev/null <"/proc/$c/environ" | grep -q "^PWD=$SCRATCH\$"; then
			echo "$c"
			return
		fi
	done
}

# stopped NAME RANK ARGS...: runs the job with ARGS, SIGSTOPs rank RANK
# after the first checkpoint, and checks that the job ends with exit 1
# within 60 s; sets DT (seconds from the stop to the end).
stopped() {
	name=$1 victim=$2
	shift 2
	timeout -k 5 100 "$MPIRUN" -np 3 --oversubscribe --bind-to none \
		"$DTRAIN" run -q --run-dir "$name" $PS --set parallel.timeout_s=5 \
		"$@" job.yaml >"$name.out" 2>"$name.err" &
	job=$!
	i=0
	while [ ! -d "$name/checkpoints/step-000000100" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || { cat "$name.err" >&2; fail "$name: no checkpoint in 60 s"; }
		kill -0 $job 2>/dev/null || { cat "$name.err" >&2; fail "$name: the job died early"; }
		sleep 0.1
	done
	p=$(rank_pid "$victim")
	[ -n "$p" ] || fail "$name: rank $victim not found"
	t0=$(date +%s)
	kill -STOP "$p"
	set +e
	wait $job
	rc=$?
	set -e
	DT=$(( $(date +%s) - t0 ))
	kill -CONT "$p" 2>/dev/null || :
	[ $rc -ne 124 ] && [ $rc -ne 137 ] || { cat "$name.err" >&2; fail "$name: hung until killed ($DT s)"; }
	[ $rc -eq 1 ] || { cat "$name.err" >&2; fail "$name: exit $rc after SIGSTOP, expected 1"; }
	[ $DT -lt 60 ] || { cat "$name.err" >&2; fail "$name: the job took $DT s to end"; }
	grep -q 'ending the job (MPI_Abort)' "$name.err" ||
		{ cat "$name.err" >&2; fail "$name: the watchdog did not end the job"; }
}

# (a) sync, the server stops.
stopped sync 2
grep -Eq 'rank 0: waited [0-9]+ s in MPI_[A-Za-z_]+ \(parallel.timeout_s 5\); rank 2 silent for [0-9]+ s' sync.err ||
	{ cat sync.err >&2; fail "sync: the server (rank 2) not named"; }
echo "ok: (a) sync, server SIGSTOPped: named, and the job ended in $DT s:" \
	"$(grep -Eo 'rank 0: waited [0-9]+ s in MPI_[A-Za-z_]+' sync.err | head -n 1)"

# (b) async with a staleness bound, a worker stops.
stopped async 1 --set parallel.mode=async --set parallel.max_staleness=3
grep -Eq 'rank 2: waited [0-9]+ s in MPI_Waitany \(parallel.timeout_s 5\); rank 1 silent for [0-9]+ s' async.err ||
	{ cat async.err >&2; fail "async: the server did not name worker 1"; }
grep -Eq 'rank 0: waited [0-9]+ s in MPI_[A-Za-z_]+ \(parallel.timeout_s 5\); rank 1 silent for [0-9]+ s' async.err ||
	{ cat async.err >&2; fail "async: worker 0 did not name worker 1"; }
echo "ok: (b) async (bound 3), worker 1 SIGSTOPped: named by the server and" \
	"worker 0, and the job ended in $DT s"
