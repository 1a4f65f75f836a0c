#!/bin/sh
# SPDX-License-Identifier: MIT
# SIGKILL at random moments while checkpoints are being written (one every
# step): a resume always finds a valid checkpoint (or none, and starts
# over) and ends with the parameters of the uninterrupted run. Also the
# non-finite guard: abort names the step and writes no checkpoint of it;
# skip_step drops the updates and counts them.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job job.yaml 60
sed -i 's/every_steps: 25/every_steps: 1/; s/keep_last: 2/keep_last: 3/' job.yaml
"$DTRAIN" run -q --run-dir full job.yaml >/dev/null
export_of full full.st
for trial in 1 2 3 4 5; do
	"$DTRAIN" run -q --run-dir t$trial job.yaml >/dev/null 2>&1 &
	pid=$!
	# Once checkpoints are being written, a random moment 0 to 0.4 s on.
	i=0
	while ! ls t$trial/checkpoints 2>/dev/null | grep -q step- &&
	      [ $i -lt 300 ]; do
		sleep 0.1; i=$((i + 1))
	done
	sleep "$(awk -v s="$trial$$" 'BEGIN { srand(s); printf "%.2f", 0.4 * rand() }')"
	kill -KILL $pid 2>/dev/null || true
	wait $pid 2>/dev/null || true
	"$DTRAIN" resume -q t$trial >/dev/null 2>t$trial.err ||
		{ cat t$trial.err >&2; fail "trial $trial: resume failed"; }
	export_of t$trial t$trial.st
	cmp full.st t$trial.st || fail "trial $trial: parameters differ"
	! ls -a t$trial/checkpoints | grep -q '\.tmp\.' ||
		fail "trial $trial: a killed writer's temporary was left"
	echo "trial $trial: $(grep -o 'resuming from.*\|no checkpoint.*' t$trial.err)"
done

# A learning rate that blows up: abort names the step, no checkpoint of it.
write_ckpt_job nan.yaml 60
expect_fail 1 'step [0-9]+: non-finite (loss on rank 0|gradient)' \
	"$DTRAIN" run -q --run-dir nan --set train.lr=1e30 \
	--set train.optimizer=sgd --set train.schedule.kind=constant \
	--set train.schedule.warmup_steps=0 nan.yaml
step=$(sed -n 's/.*step \([0-9]*\): non-finite.*/\1/p' "$SCRATCH/err")
[ ! -e nan/checkpoints/step-$(printf %09d "$step") ] ||
	fail "a checkpoint of the non-finite step was written"
# skip_step: the run finishes and counts the dropped updates.
"$DTRAIN" run -q --run-dir skip --set train.lr=1e30 --set train.optimizer=sgd \
	--set train.schedule.kind=constant --set train.schedule.warmup_steps=0 \
	--set train.on_nonfinite=skip_step nan.yaml >/dev/null
"$PYTHON" - skip/summary.json <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["skipped_steps"] > 0, s
print("skipped", s["skipped_steps"], "of", s["steps"])
PY
