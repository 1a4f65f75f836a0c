#!/bin/sh
# SPDX-License-Identifier: MIT
# Before it allocates, a run compares the plan's memory per rank (its
# parameters, gradients, optimizer state, activations and loader: the
# shipped MLP's plan less its runtime term and the terms of the data,
# not read yet) times the ranks on this node
# with the memory available (DTRAIN_TEST_MEM_AVAILABLE stands in for
# the node's and the cgroup's figures, dtrain(1)), and refuses with exit
# status 2, both figures and no run directory. Between one and two
# ranks' worth, one rank runs and two ranks on this node are refused.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
J="$top_srcdir/jobs/fashion-mnist-mlp.yaml"
S="--set train.steps=3 --set eval.every_steps=0"
# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json $S "$J" >plan.json || fail "plan --json"
need=$("$PYTHON" -c '
import json, sys
p = json.load(open(sys.argv[1]))
m = p["memory_per_rank"]
# Before the data is read the run knows neither the dataset term nor the
# epoch order of the loader (8 bytes a training sample).
print(m["total"] - m["runtime"] - m["dataset"] - 8 * p["data"]["train_samples"])' plan.json)
# shellcheck disable=SC2086
DTRAIN_TEST_MEM_AVAILABLE=1000000 expect_fail 2 \
	"not enough memory: the plan needs 1 rank x $need bytes .* but only 1000000 bytes \\(1\\.0 MiB\\) are available" \
	"$DTRAIN" run -q --run-dir r1 $S "$J"
[ ! -e r1 ] || fail "a refused run made its run directory"
half=$((need * 3 / 2))
# shellcheck disable=SC2086
DTRAIN_TEST_MEM_AVAILABLE=$half "$DTRAIN" run -q --run-dir r2 $S "$J" \
	>/dev/null 2>r2.err || { cat r2.err >&2; fail "one rank in 1.5 ranks' memory"; }
# shellcheck disable=SC2086
DTRAIN_TEST_MEM_AVAILABLE=$half expect_fail 2 \
	"not enough memory: the plan needs 2 ranks x [0-9]+ bytes .* but only $half bytes" \
	mpi 2 -x DTRAIN_TEST_MEM_AVAILABLE "$DTRAIN" run -q --run-dir r3 $S "$J"
[ ! -e r3 ] || fail "a refused 2-rank run made its run directory"
echo "ok: $need bytes a rank: refused in 1000000, one rank in $half, two refused"
