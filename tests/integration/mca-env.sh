#!/bin/sh
# SPDX-License-Identifier: MIT
# The Open MPI settings each rank makes before MPI_Init, as Open MPI
# reads them back (mca_probe, MPI_T): the TCP eager limit and largest
# send at 1 MiB and the ring for the non-blocking sums where the user set
# none of them; a user's value in the environment wins, and one of the
# TCP pair alone leaves the other at Open MPI's own default.
. "${top_srcdir}/tests/integration/lib.sh"
PROBE=$(dirname "$DTRAIN")/tests/integration/mca_probe
unset OMPI_MCA_btl_tcp_eager_limit OMPI_MCA_btl_tcp_max_send_size \
	OMPI_MCA_coll_libnbc_iallreduce_algorithm
# probe NAME [MPIRUN-OPTIONS]: rank 0's line into NAME.out.
probe() {
	n=$1
	shift
	mpi 2 "$@" "$PROBE" >"$n.out" 2>"$n.err" ||
		{ cat "$n.out" "$n.err" >&2; fail "mca_probe ($n)"; }
	[ "$(wc -l <"$n.out")" -eq 1 ] || { cat "$n.out" >&2; fail "mca_probe ($n): expected one line"; }
}
probe def
if grep -q 'btl_tcp_eager_limit missing' def.out; then
	echo "SKIP: this Open MPI has no TCP transport (no btl_tcp_eager_limit)"
	exit 77
fi
grep -q '^ btl_tcp_eager_limit 1048576 btl_tcp_max_send_size 1048576 coll_libnbc_iallreduce_algorithm 1$' def.out ||
	{ cat def.out >&2; fail "defaults: expected eager limit and largest send 1048576, the ring (1)"; }
probe own -x OMPI_MCA_btl_tcp_eager_limit=131072 \
	-x OMPI_MCA_coll_libnbc_iallreduce_algorithm=2
grep -q '^ btl_tcp_eager_limit 131072 btl_tcp_max_send_size [0-9]* coll_libnbc_iallreduce_algorithm 2$' own.out ||
	{ cat own.out >&2; fail "the user's own values were not kept"; }
grep -q 'btl_tcp_max_send_size 1048576 ' own.out &&
	{ cat own.out >&2; fail "the largest send was set beside the user's eager limit"; }
probe mca --mca btl_tcp_max_send_size 262144
grep -q '^ btl_tcp_eager_limit [0-9]* btl_tcp_max_send_size 262144 coll_libnbc_iallreduce_algorithm 1$' mca.out ||
	{ cat mca.out >&2; fail "mpirun --mca btl_tcp_max_send_size was not kept"; }
grep -q 'btl_tcp_eager_limit 1048576 ' mca.out &&
	{ cat mca.out >&2; fail "the eager limit was raised past the user's largest send"; }
echo "ok: $(cat def.out)"
