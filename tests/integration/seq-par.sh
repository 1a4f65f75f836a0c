#!/bin/sh
# SPDX-License-Identifier: MIT
# Sequence parallelism (parallel.sequence_parallel). Its row collectives
# over the tensor group (comm/comm.h: dt_comm_reduce_scatter_rows_f32,
# dt_comm_allgather_rows_f32): seqpar_probe on 1, 2 and 3 ranks checks
# each rank's share of rows (rank order, dt_comm_part's sizes, rows no
# rank count divides), the reduce-scatter's sums against the float
# all-reduce bit for bit (2 ranks: any values; 3: values whose sums are
# exact, the ring's order otherwise), the all-gather and the bytes.
. "${top_srcdir}/tests/integration/lib.sh"
PROBE=$(dirname "$DTRAIN")/tests/integration/seqpar_probe
for np in 1 2 3; do
	mpi $np "$PROBE" >p$np.out 2>&1 ||
		{ cat p$np.out >&2; fail "seqpar_probe on $np ranks"; }
	n=$(grep -c "^rank [0-9]* of $np: row collectives ok\$" p$np.out)
	[ "$n" -eq $np ] || { cat p$np.out >&2; fail "seqpar_probe on $np ranks: $n of $np ranks ok"; }
done
grep "inexact" p3.out >&2 || :
