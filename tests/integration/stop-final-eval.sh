#!/bin/sh
# SPDX-License-Identifier: MIT
# A stop during the final evaluation is honoured like one during a step:
# the final checkpoint, exit 3, no summary.json and no eval line (the
# evaluation did not finish), on one rank and on two (the other rank
# signalled). The evaluation is bounded by eval.max_batches and the
# run's first lines say what it scores: the shipped MLP's global batch is
# 96, so 50 batches score 4800 of the 10000 test samples.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
J="$top_srcdir/jobs"
set_short="--set train.steps=3 --set eval.every_steps=0 --set checkpoint.every_steps=0"
# shellcheck disable=SC2086
DTRAIN_TEST_SIGNAL_IN_EVAL=0 expect_fail 3 \
	"interrupted during the final evaluation, after the last step 3; checkpoint written; evaluate it with: dtrain eval one" \
	"$DTRAIN" run --run-dir one $set_short --set eval.max_batches=50 \
	"$J/fashion-mnist-mlp.yaml"
grep -q "^dtrain: evaluation: 4800 of 10000 samples (eval.max_batches 50 x global batch 96) at the end$" "$SCRATCH/err" ||
	{ cat "$SCRATCH/err" >&2; fail "the run did not say what its evaluation scores"; }
[ -f one/checkpoints/step-000000003/meta.json ] || fail "no checkpoint of step 3"
[ ! -e one/summary.json ] || fail "an interrupted run wrote summary.json"
! grep -q eval_loss one/metrics.jsonl || fail "an interrupted evaluation was logged"
# The checkpoint is whole: dtrain eval scores it.
"$DTRAIN" eval one >eval.out 2>eval.err || { cat eval.err >&2; fail "dtrain eval of the checkpoint failed"; }
# Two ranks, rank 1 signalled: both stop at the same piece.
# shellcheck disable=SC2086
DTRAIN_TEST_SIGNAL_IN_EVAL=1 expect_fail 3 \
	"interrupted during the final evaluation, after the last step 3; checkpoint written" \
	mpi 2 "$DTRAIN" run -q --run-dir two $set_short "$J/fashion-mnist-mlp.yaml"
[ -f two/checkpoints/step-000000003/meta.json ] || fail "two ranks: no checkpoint of step 3"
[ ! -e two/summary.json ] || fail "two ranks: an interrupted run wrote summary.json"
# Without a bound the run says it scores them all, and does.
"$DTRAIN" run --run-dir all $set_short --set eval.max_batches=0 \
	"$J/fashion-mnist-mlp.yaml" >/dev/null 2>all.err ||
	{ cat all.err >&2; fail "the unbounded run failed"; }
grep -q "^dtrain: evaluation: all 10000 samples at the end$" all.err ||
	{ cat all.err >&2; fail "the unbounded run did not say so"; }
[ -f all/summary.json ] || fail "the unbounded run wrote no summary.json"
echo "ok: a stop in the final evaluation checkpointed step 3 and exited 3 (1 and 2 ranks)"
