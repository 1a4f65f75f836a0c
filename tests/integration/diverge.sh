#!/bin/sh
# SPDX-License-Identifier: MIT
# The divergence guard (train.on_divergence, dtrain-job(5)). The shipped
# MLP job with Adam at lr 1e6 stops at step 2 with exit 1, naming the
# step, the loss and the threshold (10 x max(early mean, ln 10)), without
# a checkpoint of step 2; the checkpoint of step 1, whose weights gave
# step 2's loss, is set aside as step-000000001.diverged, so a resume
# finds no checkpoint and, the run having logged step 1, refuses to start
# it over silently (diverge-aside.sh: one before it); with warn it runs
# to the end and says so once; with off it says nothing. The shipped jobs
# at their own settings (cut to their first 100 steps) never trip it.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
J="$top_srcdir/jobs"
short="--set train.steps=30 --set eval.every_steps=0 --set log.every_steps=1"
# shellcheck disable=SC2086
expect_fail 1 "step 2: loss [0-9.e+]+ above the divergence threshold 2[0-9.]+ \\(10 x max\\(early mean 2\\.[0-9]+, ln\\(classes\\) 2\\.30259\\)\\): the run is diverging; stopping without a checkpoint" \
	"$DTRAIN" run -q --run-dir abort $short --set train.lr=1e6 \
	--set checkpoint.every_steps=1 "$J/fashion-mnist-mlp.yaml"
[ -d abort/checkpoints/step-000000001.diverged ] || fail "the checkpoint of step 1 was not set aside"
[ ! -e abort/checkpoints/step-000000001 ] || fail "the diverged state of step 1 is still a checkpoint"
[ ! -e abort/checkpoints/step-000000002 ] || fail "the diverged step 2 was checkpointed"
[ ! -e abort/summary.json ] || fail "a diverged run wrote summary.json"
n=$(grep -c '"loss"' abort/metrics.jsonl || true)
[ "$n" -eq 1 ] || fail "the diverged run logged $n steps, expected 1"
expect_fail 2 "abort: the run has trained \\(metrics.jsonl to step 1\\) but abort/checkpoints holds no checkpoint" \
	"$DTRAIN" resume -q abort
# shellcheck disable=SC2086
"$DTRAIN" run -q --run-dir warn $short --set train.lr=1e6 \
	--set train.on_divergence=warn "$J/fashion-mnist-mlp.yaml" \
	>/dev/null 2>warn.err || { cat warn.err >&2; fail "warn: the run failed"; }
n=$(grep -c "warning: step 2: loss .* above the divergence threshold" warn.err || true)
[ "$n" -eq 1 ] || { cat warn.err >&2; fail "warn: $n warnings, expected 1"; }
# shellcheck disable=SC2086
"$DTRAIN" run -q --run-dir off $short --set train.lr=1e6 \
	--set train.on_divergence=off "$J/fashion-mnist-mlp.yaml" \
	>/dev/null 2>off.err || { cat off.err >&2; fail "off: the run failed"; }
! grep -q diverg off.err || { cat off.err >&2; fail "off: a divergence was reported"; }
for job in fashion-mnist-mlp fashion-mnist-cnn char-gpt; do
	# char-gpt warms up over 100 steps: one past it.
	"$DTRAIN" run -q --run-dir "ok-$job" --set train.steps=101 \
		--set eval.every_steps=0 "$J/$job.yaml" >/dev/null 2>"$job.err" ||
		{ cat "$job.err" >&2; fail "$job: the run failed"; }
	! grep -q diverg "$job.err" || { cat "$job.err" >&2; fail "$job tripped the guard"; }
done
echo "ok: lr 1e6 stopped at step 2; warn and off; the shipped jobs ran 101 steps untripped"
