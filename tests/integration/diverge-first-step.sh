#!/bin/sh
# SPDX-License-Identifier: MIT
# The divergence guard judges nothing before it has an early mean: the
# first step's loss is the reference, however high the untrained model
# starts. Fashion-MNIST's raw bytes (data.scale 1, inputs up to 255) give
# the shipped MLP a first loss far above the ln(10) floor's threshold,
# 10 x 2.302585 = 23.03; the run goes on, and the guard still judges the
# steps after against that first loss (lr 1e6 stops the run at step 2,
# naming the early mean, a number, not nan).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
J="$top_srcdir/jobs"
short="--set train.steps=3 --set eval.every_steps=0 --set log.every_steps=1"
# shellcheck disable=SC2086
"$DTRAIN" run -q --run-dir raw $short --set data.scale=1 \
	"$J/fashion-mnist-mlp.yaml" >/dev/null 2>raw.err ||
	{ cat raw.err >&2; fail "the run stopped on its untrained loss"; }
! grep -q diverg raw.err || { cat raw.err >&2; fail "the guard spoke"; }
first=$(column raw loss | head -n 1)
"$PYTHON" -c 'import sys; sys.exit(not float(sys.argv[1]) > 23.03)' "$first" ||
	fail "step 1's loss $first is not above 23.03: the test proves nothing"
n=$(column raw loss | wc -l)
[ "$n" -eq 3 ] || fail "$n steps logged, expected 3"
# shellcheck disable=SC2086
expect_fail 1 "step 2: loss [0-9.e+]+ above the divergence threshold [0-9.e+]+ \\(10 x max\\(early mean [0-9.e+]+, ln\\(classes\\) 2\\.30259\\)\\)" \
	"$DTRAIN" run -q --run-dir blown $short --set data.scale=1 \
	--set train.lr=1e6 "$J/fashion-mnist-mlp.yaml"
echo "ok: a first loss of $first passed; lr 1e6 stopped at step 2"
