#!/bin/sh
# SPDX-License-Identifier: MIT
# A batch scheduler's cancel: SIGTERM to every process of the job at once
# (the launcher, mpirun and every rank), SIGKILL to any survivor 30 s
# later (Slurm's KillWait). Under `dtrain run -n 2`, started from a shell
# that traps SIGTERM as dtrain(1)'s batch script does, the job exits 3;
# under plain mpirun given the odls_base_sigkill_timeout dtrain(1) names,
# the ranks stop as well, but mpirun exits 1: Open MPI 4.1's clean_abort
# (orte/mca/ess/hnp/ess_hnp_module.c) sets its status to 1 on its own
# SIGTERM, and ORTE_UPDATE_EXIT_STATUS (orte/runtime/orte_globals.h) never
# replaces a status already set, so the ranks' 3 cannot (issue 31 asked
# for 3 there; no setting gives it, dtrain(1) CHECKPOINTS). Asserting 1
# shows when an Open MPI changes that. Either way the ranks finish the
# step, write its checkpoint, and a resume ends with parameters and loss
# lines bit-equal to an uninterrupted run.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
cat >job.yaml <<YAML
name: cancel
seed: 5
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 256, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 128
  steps: 120
  optimizer: adam
  lr: 0.001
checkpoint:
  every_steps: 1000
log:
  every_steps: 1
YAML

mpi 2 "$DTRAIN" run -q --run-dir full job.yaml >/dev/null
export_of full full.st
losses full >full.losses

# tree PID: PID and every process below it.
tree() {
	echo "$1"
	for c in $(pgrep -P "$1"); do
		tree "$c"
	done
}

# cancel DIR CMD...: starts CMD, waits for its 10th logged step, sends
# SIGTERM to every process of the job at once, SIGKILL to those left 30 s
# later; leaves CMD's exit code in $rc. Rank 0 waits 50 ms for each
# step's data (DTRAIN_TEST_DATA_DELAY; no bit changes), so the 110 steps
# after the 10th take 5 s or more and the cancel lands mid-run: without
# it the 120 steps could end before the signal (seen under load: a
# checkpoint at step 120, or every rank done with exit 0 as the cancel
# came).
cancel() {
	d=$1
	shift
	DTRAIN_TEST_DATA_DELAY=0:50 "$@" >"$d.out" 2>"$d.err" &
	pid=$!
	i=0
	while [ "$(cat "$d/metrics.jsonl" 2>/dev/null | wc -l)" -lt 10 ]; do
		kill -0 $pid 2>/dev/null || { cat "$d.err" >&2; fail "$d: ended early"; }
		[ $i -lt 1200 ] || fail "$d: no tenth step in 120 s"
		sleep 0.1
		i=$((i + 1))
	done
	all=$(tree $pid)
	[ "$(echo "$all" | wc -l)" -ge 3 ] || fail "$d: found only $all"
	# shellcheck disable=SC2086
	kill -TERM $all
	i=0
	while kill -0 $pid 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	# shellcheck disable=SC2086
	kill -KILL $all 2>/dev/null || :
	set +e
	wait $pid
	rc=$?
	set -e
	echo "$d: exit $rc after $((i / 10)) s"
	! grep -q 'second signal' "$d.err" || { cat "$d.err" >&2; fail "$d: a copy of the cancel stopped a rank at once"; }
}

# stopped_and_resumed DIR RESUME...: DIR's newest checkpoint is that of
# the last step it logged (the step the cancel came in), and RESUME DIR
# ends bit-equal to the uninterrupted run.
stopped_and_resumed() {
	d=$1
	shift
	ckpt=$(ls "$d/checkpoints" | grep '^step-' | tail -n 1)
	[ -n "$ckpt" ] || { cat "$d.err" >&2; fail "$d: no checkpoint after the cancel"; }
	[ -f "$d/checkpoints/$ckpt/MANIFEST.json" ] || fail "$d: $ckpt has no manifest"
	step=$(echo "$ckpt" | sed 's/^step-0*//')
	last=$(column "$d" step | tail -n 1)
	[ "$step" -eq "$last" ] || fail "$d: checkpoint at $step, last step logged $last"
	[ "$step" -ge 10 ] && [ "$step" -lt 120 ] || fail "$d: stopped at step $step"
	timeout 300 "$@" "$d" >"$d.res.out" 2>"$d.res.err" ||
		{ cat "$d.res.err" >&2; fail "$d: resume failed"; }
	grep -q "resuming from .*$ckpt" "$d.res.err" || { cat "$d.res.err" >&2; fail "$d: did not resume from $ckpt"; }
	export_of "$d" "$d.st"
	cmp full.st "$d.st" || fail "$d: parameters differ from the uninterrupted run"
	losses "$d" >"$d.losses"
	cmp full.losses "$d.losses" || fail "$d: loss lines differ"
}

mkdir tmp
# As in a batch script (sbatch): the shell is signalled too; its trap
# keeps it alive to pass on dtrain's status, and its children get
# SIGTERM's default disposition back.
cancel n2 sh -c 'trap : TERM; TMPDIR="$1" "$2" run -q -n 2 --run-dir n2 job.yaml' \
	sh "$SCRATCH/tmp" "$DTRAIN"
[ "$rc" -eq 3 ] || { cat n2.err >&2; fail "run -n 2 after a cancel exited $rc, expected 3"; }
[ -z "$(ls tmp)" ] || fail "the launcher left $(ls tmp) in TMPDIR"
stopped_and_resumed n2 "$DTRAIN" resume -q -n 2

cancel mp "$MPIRUN" -np 2 --oversubscribe --bind-to none \
	--mca odls_base_sigkill_timeout 15 "$DTRAIN" run -q --run-dir mp job.yaml
[ "$rc" -eq 1 ] || { cat mp.err >&2; fail "mpirun after a cancel exited $rc, expected Open MPI 4.1's 1 (if 3: update dtrain(1), CHECKPOINTS)"; }
! grep -q 'warning: mpirun kills' mp.err || fail "warned with the timeout given"
stopped_and_resumed mp "$MPIRUN" -np 2 --oversubscribe --bind-to none \
	"$DTRAIN" resume -q
