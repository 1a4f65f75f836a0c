#!/bin/sh
# SPDX-License-Identifier: MIT
# The Open MPI setting each rank makes before MPI_Init, as Open MPI reads
# it back (mca_probe, MPI_T): for the non-blocking gradient sums where
# the user set no algorithm, recursive doubling (4) in a world of 2 ranks
# and the ring (1) in any other; a user's value in the environment
# (mpirun -x) or on mpirun's command line (--mca) wins. Nothing else is
# set: Open MPI's TCP eager limit stays its own.
. "${top_srcdir}/tests/integration/lib.sh"
PROBE=$(dirname "$DTRAIN")/tests/integration/mca_probe
unset OMPI_MCA_coll_libnbc_iallreduce_algorithm OMPI_MCA_btl_tcp_eager_limit
# probe NAME [MPIRUN-OPTIONS]: rank 0's line into NAME.out, on 2 ranks
# (RANKS, where set, otherwise).
probe() {
	n=$1
	shift
	mpi "${RANKS:-2}" "$@" "$PROBE" coll_libnbc_iallreduce_algorithm \
		btl_tcp_eager_limit >"$n.out" 2>"$n.err" ||
		{ cat "$n.out" "$n.err" >&2; fail "mca_probe ($n)"; }
	[ "$(wc -l <"$n.out")" -eq 1 ] || { cat "$n.out" >&2; fail "mca_probe ($n): expected one line"; }
}
probe def
grep -q '^coll_libnbc_iallreduce_algorithm 4 btl_tcp_eager_limit ' def.out ||
	{ cat def.out >&2; fail "default, 2 ranks: expected recursive doubling (4)"; }
RANKS=3 probe def3
grep -q '^coll_libnbc_iallreduce_algorithm 1 btl_tcp_eager_limit ' def3.out ||
	{ cat def3.out >&2; fail "default, 3 ranks: expected the ring (1)"; }
probe env -x OMPI_MCA_coll_libnbc_iallreduce_algorithm=2 \
	-x OMPI_MCA_btl_tcp_eager_limit=131072
grep -q '^coll_libnbc_iallreduce_algorithm 2 btl_tcp_eager_limit 131072$' env.out ||
	{ cat env.out >&2; fail "mpirun -x: the user's values were not kept"; }
probe mca --mca coll_libnbc_iallreduce_algorithm 3
grep -q '^coll_libnbc_iallreduce_algorithm 3 ' mca.out ||
	{ cat mca.out >&2; fail "mpirun --mca: the user's value was not kept"; }
# The TCP eager limit is Open MPI's own (ompi_info's), where this build
# has TCP.
if ! grep -q ' btl_tcp_eager_limit missing$' def.out; then
	own=$(ompi_info --param btl tcp --level 9 --parsable 2>/dev/null |
		sed -n 's/^mca:btl:tcp:param:btl_tcp_eager_limit:value://p')
	[ -n "$own" ] || fail "ompi_info gives no btl_tcp_eager_limit"
	grep -q " btl_tcp_eager_limit $own\$" def.out ||
		{ cat def.out >&2; fail "the TCP eager limit is not Open MPI's $own"; }
fi
echo "ok: $(cat def.out)"
