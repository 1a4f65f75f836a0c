#!/bin/sh
# SPDX-License-Identifier: MIT
# Faults across simulated hosts, on 2 hosts x 1 rank of a 1500-step job
# with parallel.timeout_s 10 (the watchdog): each case ends within 60 s
# with a message naming the lost rank, never a hang.
#   (a) host 2's link taken down mid-run (ip link set eth0 down in its
#       namespace): rank 0's watchdog names rank 1 as silent, and mpirun,
#       whose daemons probe their links (oob_tcp_keepalive_*, as dtrain
#       run -n sets them), ends the job;
#   (b) host 2's dtrain process SIGKILLed: mpirun names rank 1;
#   (c) rank 1 SIGSTOPped: rank 0's watchdog names it and ends the job;
#   (d) dtrain run -n 2 --max-restarts 2 on the cluster (Open MPI's
#       settings in OMPI_MCA_* variables), host 2's link down until the
#       first attempt has failed, then up again: the run restarts from its
#       newest checkpoint and ends with the parameters of an uninterrupted
#       run, bit for bit.
. "${top_srcdir}/tests/cluster/lib.sh"
need_fmnist
cluster_up 2
write_ckpt_job job.yaml 1500
sed -i 's/every_steps: 25/every_steps: 100/' job.yaml
echo "parallel: {timeout_s: 10}" >>job.yaml
H2=$DTC_PREFIX-h2

# start NAME: the job on the cluster in the background; returns once its
# first checkpoint is written (the ranks are in their steps).
start() {
	T0=$(date +%s)
	cmpi 2 1 -t 200 "$DTRAIN" run -q --run-dir "$1" job.yaml \
		>"$1.out" 2>"$1.err" &
	JOB=$!
	i=0
	while [ ! -d "$1/checkpoints/step-000000100" ]; do
		i=$((i + 1))
		[ $i -le 600 ] || { cat "$1.err" >&2; fail "$1: no checkpoint in 60 s"; }
		kill -0 $JOB 2>/dev/null || { cat "$1.err" >&2; fail "$1: the job died early"; }
		sleep 0.1
	done
	T1=$(date +%s)
}

# ended NAME PATTERN: the job ends within 60 s of the fault, not with 0,
# its stderr matching PATTERN.
ended() {
	set +e
	wait $JOB
	rc=$?
	set -e
	dt=$(( $(date +%s) - T1 ))
	[ "$rc" -ne 0 ] || fail "$1: the job exited 0 after the fault"
	# (mpirun's own timeout is 200 s; 137 is also its code for a rank
	# killed by SIGKILL.)
	[ $dt -lt 60 ] || { cat "$1.err" >&2; fail "$1: the job took $dt s to end (exit $rc)"; }
	grep -Eq -- "$2" "$1.err" || { cat "$1.err" >&2; fail "$1: stderr does not match /$2/"; }
	echo "ok: $1: ended $dt s after the fault (exit $rc): $(grep -Eo -- "$2" "$1.err" | head -n 1)"
}

# The dtrain process on host 2 (rank 1).
rank1() {
	for p in $(ip netns pids "$H2"); do
		if [ "$(cat /proc/$p/comm 2>/dev/null)" = dtrain ]; then
			echo "$p"
			return
		fi
	done
}

# Whatever is left on host 2 (a rank cut off by its link) goes.
clean_h2() {
	for p in $(ip netns pids "$H2"); do
		kill -KILL "$p" 2>/dev/null || :
	done
	ip -n "$H2" link set eth0 up
}

# (a) The link goes down.
start linkdown
ip -n "$H2" link set eth0 down
ended linkdown 'rank 1 silent for [0-9]+ s'
clean_h2

# (b) Rank 1 is killed.
start kill
p=$(rank1)
[ -n "$p" ] || fail "kill: no dtrain process on host 2"
kill -KILL "$p"
ended kill 'rank 1 with PID [0-9]+ on node 198.18.0.2 exited on signal 9'
clean_h2

# (c) Rank 1 stops.
start stop
p=$(rank1)
[ -n "$p" ] || fail "stop: no dtrain process on host 2"
kill -STOP "$p"
ended stop 'rank 1 silent for [0-9]+ s'
grep -q 'rank 0: ending the job' stop.err || { cat stop.err >&2; fail "stop: the watchdog did not end the job"; }
kill -CONT "$p" 2>/dev/null || :
clean_h2

# (d) A supervised run (dtrain run -n 2 --max-restarts 2, started on host
# 1 as a user would, Open MPI's settings in the environment) loses host
# 2's link until the first attempt has failed; with the link back, the
# restart from the newest checkpoint ends with the parameters of an
# uninterrupted run (one host, np=2: the same sums, bit for bit).
sed 's/steps: 1500/steps: 400/' job.yaml >short.yaml
# The reference runs without the watchdog: its heartbeats change no bit.
mpi 2 "$DTRAIN" run -q --run-dir full --set parallel.timeout_s=0 short.yaml >/dev/null
export_of full full.st
hosts=$(hostfile 2 1)
t0=$(date +%s)
on 1 env OMPI_MCA_plm_rsh_agent="$DTC_AGENT" OMPI_MCA_plm_rsh_no_tree_spawn=1 \
	OMPI_MCA_orte_default_hostfile="$hosts" OMPI_MCA_btl=tcp,self \
	OMPI_MCA_btl_tcp_if_include=198.18.0.0/24 \
	OMPI_MCA_oob_tcp_if_include=198.18.0.0/24 \
	OMPI_MCA_hwloc_base_binding_policy=none TMPDIR="$DTC_TMP_ROOT" \
	timeout 300 "$DTRAIN" run -q -n 2 --max-restarts 2 --run-dir r \
	short.yaml >r.out 2>r.err &
sup=$!
i=0
while [ ! -d r/checkpoints/step-000000100 ]; do
	i=$((i + 1))
	[ $i -le 600 ] || { cat r.err >&2; fail "restart: no checkpoint in 60 s"; }
	sleep 0.1
done
ip -n "$H2" link set eth0 down
t1=$(date +%s)
i=0
while ! grep -q 'restarting from the newest checkpoint' r.err; do
	i=$((i + 1))
	[ $i -le 600 ] || { cat r.err >&2; fail "restart: the first attempt did not end in 60 s"; }
	sleep 0.1
done
echo "restart: the first attempt ended $(( $(date +%s) - t1 )) s after the link went down"
grep -Eq 'rank 1 silent for [0-9]+ s' r.err || { cat r.err >&2; fail "restart: rank 1 not named"; }
ip -n "$H2" link set eth0 up
wait $sup || { cat r.err >&2; fail "restart: the supervised run failed"; }
grep -q 'restarting from the newest checkpoint in r (restart 1 of 2)' r.err ||
	{ cat r.err >&2; fail "restart: not restarted once"; }
export_of r r.st
cmp full.st r.st || fail "restart: the restarted run differs from the uninterrupted one"
echo "ok: restart: finished after a restart in $(( $(date +%s) - t0 )) s, the same bits as the uninterrupted run"
