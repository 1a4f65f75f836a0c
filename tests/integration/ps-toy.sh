#!/bin/sh
# SPDX-License-Identifier: MIT
# The parameter server (src/comm/ps.h) on the toy least-squares problem of
# tests/ps/ps_toy.c, under mpirun:
#  - sync PS with 1 and 2 servers equals the all-reduce formulation to 1e-6
#    relative at each of 30 steps (SGD, SGD with Nesterov momentum, Adam);
#    async with max_staleness 0 equals sync bit for bit; a checkpoint taken
#    through the servers holds the reference's state and resuming from it
#    ends where the reference does;
#  - async with max_staleness 4 and one worker slowed by the test hook
#    (DTRAIN_TEST_DELAY_MS / DTRAIN_TEST_DELAY_RANK, a sleep before each of
#    its pushes) never applies a gradient staler than 4, the histogram has
#    gradients at 4 and none beyond, and the other workers had made more
#    steps than the slow one (by the time it was half way);
#  - layout errors and a bad hook value are refused with the reason.
. "${top_srcdir}/tests/integration/lib.sh"
PS_TOY=$(dirname "$DTRAIN")/tests/ps/ps_toy
[ -x "$PS_TOY" ] || fail "$PS_TOY is not built (make check builds it)"

mpi 4 "$PS_TOY" equiv 1 >equiv1.out
mpi 5 "$PS_TOY" equiv 2 >equiv2.out
cat equiv1.out equiv2.out
for f in equiv1.out equiv2.out; do
	[ "$(grep -c 'sync = allreduce (1e-6), async(0) = sync, checkpoint and resume agree' "$f")" -eq 3 ] ||
		fail "$f: expected 3 optimizers to agree"
done

for servers in 1 2; do
	mpi $((4 + servers)) -x DTRAIN_TEST_DELAY_MS=40 \
		-x DTRAIN_TEST_DELAY_RANK=1 "$PS_TOY" stale "$servers" 4 30 \
		>stale$servers.out
	cat stale$servers.out
	grep -q '| over 0;' stale$servers.out ||
		fail "stale$servers.out: gradients beyond the bound"
	[ "$(grep -c 'when slow worker 1 had made 15 steps' stale$servers.out)" -eq 3 ] ||
		fail "stale$servers.out: expected 3 fast workers counted"
done
# The bound holds without the hook too.
mpi 5 "$PS_TOY" stale 1 2 40 >stale-nodelay.out
grep -q '| over 0;' stale-nodelay.out || fail "stale-nodelay: beyond bound"

expect_fail 1 'leave no worker' mpi 2 "$PS_TOY" equiv 2
expect_fail 1 'DTRAIN_TEST_DELAY_MS: expected a whole number' \
	mpi 3 -x DTRAIN_TEST_DELAY_MS=soon -x DTRAIN_TEST_DELAY_RANK=0 \
	"$PS_TOY" stale 1 4 10
echo "ps-toy: ok"
