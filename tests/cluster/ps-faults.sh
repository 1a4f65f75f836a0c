#!/bin/sh
# SPDX-License-Identifier: MIT
# The watchdog (parallel.timeout_s 5) over parameter-server traffic across
# 2 simulated hosts x 1 rank: worker 0 on host 1, the server (rank 1) on
# host 2, a 3000-step job; each case ends within 60 s, exit 1, with the
# stopped rank named in the watchdog's form, never a hang:
#   (a) sync, the server SIGSTOPped on host 2: worker 0, waiting for its
#       push (MPI_Wait) or its pull (MPI_Recv), whichever the stop caught,
#       names rank 1;
#   (b) async with max_staleness 2, the worker SIGSTOPped on host 1: the
#       server, waiting in MPI_Waitany for the next push, names rank 0.
# tests/integration/ps-watchdog.sh does the same on one host.
. "${top_srcdir}/tests/cluster/lib.sh"
need_fmnist
cluster_up 2
write_ckpt_job job.yaml 3000
sed -i 's/every_steps: 25/every_steps: 100/' job.yaml
cat >>job.yaml <<YAML
parallel:
  sync: parameter_server
  servers: 1
  timeout_s: 5
YAML

# dtrain_on K: the dtrain process on host K (its one rank).
dtrain_on() {
	for p in $(ip netns pids "$DTC_PREFIX-h$1"); do
		if [ "$(cat /proc/$p/comm 2>/dev/null)" = dtrain ]; then
			echo "$p"
			return
		fi
	done
}

# stopped NAME HOST ARGS...: the job with ARGS on the cluster; after its
# first checkpoint the rank on HOST is SIGSTOPped, and the job must end
# with exit 1 within 60 s, ended by the watchdog.
stopped() {
	name=$1 host=$2
	shift 2
	cmpi 2 1 -t 100 "$DTRAIN" run -q --run-dir "$name" "$@" job.yaml \
		>"$name.out" 2>"$name.err" &
	job=$!
	i=0
	while [ ! -d "$name/checkpoints/step-000000100" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || { cat "$name.err" >&2; fail "$name: no checkpoint in 60 s"; }
		kill -0 $job 2>/dev/null || { cat "$name.err" >&2; fail "$name: the job died early"; }
		sleep 0.1
	done
	p=$(dtrain_on "$host")
	[ -n "$p" ] || fail "$name: no dtrain process on host $host"
	t0=$(date +%s)
	kill -STOP "$p"
	set +e
	wait $job
	rc=$?
	set -e
	dt=$(( $(date +%s) - t0 ))
	kill -CONT "$p" 2>/dev/null || :
	[ $rc -ne 124 ] && [ $rc -ne 137 ] || { cat "$name.err" >&2; fail "$name: hung until killed ($dt s)"; }
	[ $rc -eq 1 ] || { cat "$name.err" >&2; fail "$name: exit $rc after SIGSTOP, expected 1"; }
	[ $dt -lt 60 ] || { cat "$name.err" >&2; fail "$name: the job took $dt s to end"; }
	grep -q 'ending the job (MPI_Abort)' "$name.err" ||
		{ cat "$name.err" >&2; fail "$name: the watchdog did not end the job"; }
	for q in $(ip netns pids "$DTC_PREFIX-h$host"); do
		kill -KILL "$q" 2>/dev/null || :
	done
}

# (a) sync, the server on host 2 stops.
stopped sync 2
grep -Eq 'rank 0: waited [0-9]+ s in MPI_(Wait|Recv) \(parallel.timeout_s 5\); rank 1 silent for [0-9]+ s' sync.err ||
	{ cat sync.err >&2; fail "sync: the server (rank 1) not named"; }
echo "ok: (a) sync, the server on host 2 SIGSTOPped: named by worker 0" \
     "($(grep -Eo 'waited [0-9]+ s in MPI_[A-Za-z]+' sync.err | head -n 1)), the job ended in $dt s"

# (b) async with a staleness bound, the worker on host 1 stops.
stopped async 1 --set parallel.mode=async --set parallel.max_staleness=2
grep -Eq 'rank 1: waited [0-9]+ s in MPI_Waitany \(parallel.timeout_s 5\); rank 0 silent for [0-9]+ s' async.err ||
	{ cat async.err >&2; fail "async: the server did not name worker 0"; }
echo "ok: (b) async (bound 2), the worker on host 1 SIGSTOPped: named by the server, the job ended in $dt s"
