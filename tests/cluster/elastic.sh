#!/bin/sh
# SPDX-License-Identifier: MIT
# Elastic restart (dtrain run -n 2 --max-restarts 2 --elastic MIN) on 2
# simulated hosts x 1 rank, started on host 1 as a user would, with the
# hostfile in --mpi-args or in Open MPI's default-hostfile variable. The
# job has a fixed global batch and micro-batch (600 = 150 x 2 x 2 ranks,
# or 150 x 4 on one rank), parallel.blas_threads 1 and the watchdog at 5 s.
#   (a) host 2's link goes down for good after the first checkpoint: the
#       job fails, the probe finds host 2 gone, and with --elastic 1 the run
#       restarts on host 1 alone (saying so, with its hosts and ranks) from
#       the newest checkpoint, at data-parallel degree 1 and 4 micro-batches
#       a step, and ends with the parameters and the loss lines of an
#       uninterrupted 2-rank run, byte for byte;
#   (b) the same with --elastic 2: the supervisor stops within 60 s of the
#       link going down, exit status not 0, naming the lost host;
#   (c) with --elastic 1, rank 1 SIGKILLed while host 2 stays up: mpirun
#       ends the job itself (the supervisor's teardown guard stays
#       quiet), the probe finds both hosts, and the run restarts on both
#       (no host lost).
# Before the cluster (these run anywhere): the usage errors of --elastic,
# and jobs/char-gpt.yaml resumed on fewer ranks with the same bits.
. "${top_srcdir}/tests/cluster/lib.sh"
need_fmnist

cat >job.yaml <<YAML
name: elastic
seed: 5
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 32, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 600
  micro_batch: 150
  steps: 1200
  optimizer: adam
  lr: 0.003
  schedule: {kind: cosine, warmup_steps: 50}
checkpoint:
  every_steps: 50
  keep_last: 2
log:
  every_steps: 20
parallel:
  blas_threads: 1
  timeout_s: 5
YAML

# Usage: --elastic needs -n, --max-restarts, MIN <= N and a hostfile.
expect_fail 2 '--elastic MIN goes with -n' \
	"$DTRAIN" run --max-restarts 1 --elastic 1 --run-dir u1 job.yaml
expect_fail 2 '--elastic MIN goes with -n' \
	"$DTRAIN" run -n 2 --elastic 1 --run-dir u2 job.yaml
expect_fail 2 '--elastic MIN goes with -n N \(N >= MIN\)' \
	"$DTRAIN" run -n 2 --max-restarts 1 --elastic 3 --run-dir u3 job.yaml
expect_fail 2 '--elastic needs a hostfile' \
	env -u OMPI_MCA_orte_default_hostfile \
	"$DTRAIN" run -n 2 --max-restarts 1 --elastic 1 --run-dir u4 job.yaml
printf 'node1 slots=two\n' >bad.hosts
expect_fail 2 'bad.hosts:1: "slots=two": expected slots=N' \
	"$DTRAIN" run -n 2 --max-restarts 1 --elastic 1 \
	--mpi-args "--hostfile bad.hosts" --run-dir u5 job.yaml
for d in u1 u2 u3 u4 u5; do
	[ ! -e $d ] || fail "a refused --elastic left $d"
done
echo "ok: --elastic usage errors"

# What (a) relies on, for jobs/char-gpt.yaml itself (dropout, attention,
# its fixed global batch and micro-batch, blas_threads 1), on one host:
# stopped at step 6 on 2 ranks (2 micro-batches each) and resumed on 1
# (4 micro-batches), it ends with the parameters and loss lines of the
# uninterrupted 2-rank run, byte for byte.
G=$top_srcdir/jobs/char-gpt.yaml
if [ -f /usr/share/games/fortunes/cookie ]; then
	GS="--set train.steps=12 --set train.global_batch=8 --set train.micro_batch=2
	    --set train.schedule.warmup_steps=3 --set log.every_steps=1
	    --set eval.every_steps=0 --set checkpoint.every_steps=4"
	# shellcheck disable=SC2086
	mpi 2 "$DTRAIN" run -q --run-dir gfull "$G" $GS >/dev/null
	set +e
	# shellcheck disable=SC2086
	DTRAIN_TEST_SIGNAL_AT_STEP=6 mpi 2 -x DTRAIN_TEST_SIGNAL_AT_STEP \
		"$DTRAIN" run -q --run-dir gstop "$G" $GS >/dev/null 2>gstop.err
	rc=$?
	set -e
	[ "$rc" -eq 3 ] || { cat gstop.err >&2; fail "char-gpt: the stopped run exited $rc"; }
	"$DTRAIN" resume -q gstop >/dev/null 2>gstop.err2
	grep -q 'resuming from .*(step 6)' gstop.err2 || { cat gstop.err2 >&2; fail "char-gpt: not resumed at step 6"; }
	grep -q '"world_size": 1' gstop/summary.json || fail "char-gpt: the resume did not run on 1 rank"
	export_of gfull gfull.st
	export_of gstop gstop.st
	cmp gfull.st gstop.st || fail "char-gpt: 2 ranks -> 1 changed the parameters"
	losses gfull >gfull.losses
	losses gstop >gstop.losses
	[ "$(wc -l <gfull.losses)" -eq 12 ] || fail "char-gpt: expected 12 loss lines"
	cmp gfull.losses gstop.losses || fail "char-gpt: 2 ranks -> 1 changed the loss lines"
	echo "ok: char-gpt stopped on 2 ranks, resumed on 1: the same bits"
else
	echo "char-gpt: /usr/share/games/fortunes/cookie missing; that part not run"
fi

cluster_up 2
H2=$DTC_PREFIX-h2
hosts=$(hostfile 2 1)

# The uninterrupted run at the full size (2 ranks on one host: the same
# sums as on two, bit for bit; tests/cluster/faults.sh).
mpi 2 "$DTRAIN" run -q --run-dir full job.yaml >/dev/null
export_of full full.st
losses full >full.losses
[ "$(wc -l <full.losses)" -eq 60 ] || fail "full: expected 60 loss lines"

# wait_ckpt DIR PID: until DIR has its first checkpoint (the ranks are
# in their steps).
wait_ckpt() {
	i=0
	while ! has_ckpt "$1"; do
		i=$((i + 1))
		[ $i -le 600 ] || { cat "$1.err" >&2; fail "$1: no checkpoint in 60 s"; }
		kill -0 "$2" 2>/dev/null || {
			cat "$1.err" >&2
			rc=0; wait "$2" || rc=$?
			fail "$1: ended (exit $rc, $(ls "$1/checkpoints" 2>/dev/null | wc -l) checkpoints) before one was seen"
		}
		sleep 0.1
	done
}

# Whatever is left on host 2 (a rank cut off by its link, a probe's
# daemon) goes, and the link comes back.
clean_h2() {
	for p in $(ip netns pids "$H2"); do
		kill -KILL "$p" 2>/dev/null || :
	done
	ip -n "$H2" link set eth0 up
}

# (a) --elastic 1, the hostfile in --mpi-args, with the cluster's Open MPI
# options but for the daemons' keepalive, which dtrain run -n sets from
# parallel.timeout_s (5 s here: a probe every 2 s, given up after 3).
mca=$(cluster_mca 1 | sed 's/ *--mca oob_tcp_keepalive_[a-z]* [0-9]*//g')
mkdir -p "$DTC_TMP_ROOT/h1"
t0=$(date +%s)
on 1 env TMPDIR="$DTC_TMP_ROOT/h1" timeout 200 "$DTRAIN" run -q -n 2 \
	--max-restarts 2 --elastic 1 --run-dir a \
	--mpi-args "--hostfile $hosts $mca" job.yaml \
	>a.out 2>a.err &
sup=$!
wait_ckpt a $sup
ip -n "$H2" link set eth0 down
t1=$(date +%s)
set +e
wait $sup
rc=$?
set -e
[ "$rc" -eq 0 ] || { cat a.err >&2; fail "(a) the elastic run failed (exit $rc)"; }
grep -q '^dtrain: 2 ranks on 2 hosts: 198.18.0.1 (rank 0), 198.18.0.2 (rank 1)$' a.err ||
	{ cat a.err >&2; fail "(a) the first launch did not say where it runs"; }
grep -q '^dtrain: --elastic: lost 198.18.0.2 (rank 1: no answer to a probe within 10 s)$' a.err ||
	{ cat a.err >&2; fail "(a) host 2 not named as lost"; }
grep -q 'restarting from the newest checkpoint in a (restart 1 of 2)' a.err ||
	{ cat a.err >&2; fail "(a) not restarted"; }
grep -q '^dtrain: restart 1: 1 rank on 1 host: 198.18.0.1 (rank 0)$' a.err ||
	{ cat a.err >&2; fail "(a) the restart did not say its hosts and ranks"; }
grep -Eq 'resuming from .*step-[0-9]{9} \(step [1-9][0-9]*0\)' a.err ||
	{ cat a.err >&2; fail "(a) did not resume from a checkpoint"; }
grep -q '"world_size": 1' a/summary.json || fail "(a) the run did not end on 1 rank"
export_of a a.st
cmp full.st a.st || fail "(a) the parameters differ from the uninterrupted 2-rank run"
losses a >a.losses
cmp full.losses a.losses || fail "(a) the loss lines differ from the uninterrupted run"
echo "ok: (a) link down at $(grep -Eo 'resuming from .*' a.err | head -n 1);" \
	"finished on host 1 in $(( $(date +%s) - t0 )) s, the bits of the uninterrupted run"
clean_h2

# (c) --elastic 1, rank 1 SIGKILLed with its host still up: both hosts
# answer the probe, and the restart runs on both again, at the full size.
t0=$(date +%s)
on 1 env TMPDIR="$DTC_TMP_ROOT/h1" timeout 200 "$DTRAIN" run -q -n 2 \
	--max-restarts 2 --elastic 1 --run-dir c \
	--mpi-args "--hostfile $hosts $mca" job.yaml >c.out 2>c.err &
sup=$!
wait_ckpt c $sup
p=
for q in $(ip netns pids "$H2"); do
	[ "$(cat /proc/$q/comm 2>/dev/null)" = dtrain ] && p=$q
done
[ -n "$p" ] || fail "(c) no dtrain process on host 2"
kill -KILL "$p"
set +e
wait $sup
rc=$?
set -e
[ "$rc" -eq 0 ] || { cat c.err >&2; fail "(c) the elastic run failed (exit $rc)"; }
grep '^dtrain: ' c.err | sed 's/^/(c) /'
if grep -q 'ending mpirun' c.err; then
	cat c.err >&2
	fail "(c) the supervisor ended an mpirun that ends the job itself"
fi
grep -q '^dtrain: restart 1: 2 ranks on 2 hosts: 198.18.0.1 (rank 0), 198.18.0.2 (rank 1)$' c.err ||
	{ cat c.err >&2; fail "(c) the restart did not run on both hosts"; }
if grep -q 'lost 198' c.err; then
	cat c.err >&2
	fail "(c) a host that answers was counted lost"
fi
grep -q '"world_size": 2' c/summary.json || fail "(c) the run did not end on 2 ranks"
export_of c c.st
cmp full.st c.st || fail "(c) the parameters differ from the uninterrupted run"
echo "ok: (c) rank 1 killed, host 2 up: restarted on both hosts, the same bits" \
	"($(( $(date +%s) - t0 )) s in all)"
clean_h2

# (b) --elastic 2, the hostfile in OMPI_MCA_orte_default_hostfile: the
# supervisor stops, naming host 2.
on 1 env OMPI_MCA_plm_rsh_agent="$DTC_AGENT" OMPI_MCA_plm_rsh_no_tree_spawn=1 \
	OMPI_MCA_orte_default_hostfile="$hosts" OMPI_MCA_btl=tcp,self \
	OMPI_MCA_btl_tcp_if_include=198.18.0.0/24 \
	OMPI_MCA_oob_tcp_if_include=198.18.0.0/24 \
	OMPI_MCA_hwloc_base_binding_policy=none TMPDIR="$DTC_TMP_ROOT/h1" \
	timeout 200 "$DTRAIN" run -q -n 2 --max-restarts 2 --elastic 2 \
	--run-dir b job.yaml >b.out 2>b.err &
sup=$!
wait_ckpt b $sup
ip -n "$H2" link set eth0 down
t1=$(date +%s)
set +e
wait $sup
rc=$?
set -e
dt=$(( $(date +%s) - t1 ))
[ "$rc" -ne 0 ] || { cat b.err >&2; fail "(b) exited 0 with a host lost"; }
[ "$dt" -lt 60 ] || { cat b.err >&2; fail "(b) took $dt s to stop"; }
grep -q '^dtrain: --elastic 2: lost 198.18.0.2 (rank 1: no answer to a probe within 10 s); the hosts that answered (198.18.0.1 (rank 0)) hold 1 slot, fewer than --elastic 2; stopping' b.err ||
	{ cat b.err >&2; fail "(b) the stop does not name the lost host"; }
if grep -q 'restarting from' b.err; then
	cat b.err >&2
	fail "(b) restarted below --elastic 2"
fi
echo "ok: (b) --elastic 2 stopped $dt s after the link went down (exit $rc)," \
	"naming 198.18.0.2"
clean_h2
