#!/bin/sh
# SPDX-License-Identifier: MIT
# The reduce-scatter and the all-gather of comm/comm.h: rsag_probe on 1,
# 2 and 3 ranks (3 with the progress thread too), on the world and on a
# split, checks each rank's part against the cut (dt_comm_part), the
# order of the ring's sums, reduce-scatter + all-gather against the
# all-reduce (floats, and doubles rounded once against MPI_Allreduce of
# the doubles) bit for bit, the started forms and the bytes counted.
. "${top_srcdir}/tests/integration/lib.sh"
PROBE=$(dirname "$DTRAIN")/tests/integration/rsag_probe
for run in 1:0 2:0 3:0 3:200; do
	np=${run%:*} us=${run#*:}
	mpi $np "$PROBE" $us >p$np-$us.out 2>&1 ||
		{ cat p$np-$us.out >&2; fail "rsag_probe on $np ranks, progress_us $us"; }
	n=$(grep -c "^rank [0-9]* of $np: reduce-scatter and all-gather ok (progress_us [0-9]*), split of [0-9]* ok\$" p$np-$us.out)
	[ "$n" -eq $np ] || { cat p$np-$us.out >&2; fail "rsag_probe on $np ranks: $n of $np ranks ok"; }
done
grep -q 'progress_us 200' p3-200.out || { cat p3-200.out >&2; fail "no progress thread in the probe"; }
