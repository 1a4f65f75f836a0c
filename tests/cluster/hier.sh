#!/bin/sh
# SPDX-License-Identifier: MIT
# The hierarchical gradient sum (parallel.hierarchical, src/comm/hier.c).
# tests/cluster/hier_probe first: on one host with 4 ranks, auto finds 1
# host of 4 ranks and stays flat, on sums host first; on 2 simulated hosts
# x 2 ranks every rank finds 2 hosts, its host's 2 ranks, its place among
# them and its host's index (ranks 0-1 on host 0, 2-3 on host 1), auto is
# on, off is flat, and the sums through it, in either form (reduce /
# all-reduce / broadcast, or reduce-scatter / all-reduce / all-gather),
# are the exact sums worked out by the probe (3 ranks on one host split
# the 1000 values into unequal parts; on hosts of 2 and 1 ranks the
# scatter form gives way to the reduce form). Then dtrain itself on 2 hosts x 2 ranks: the MLP job of
# tests/cluster/layouts.sh (20 steps, every loss logged, the same
# micro-batch in every run) data-parallel over 4 ranks with
# parallel.hierarchical on, off and auto says which sum it used and gives
# the losses of one rank, to the tolerance layouts.sh uses (0 for data
# parallel; 1e-5 relative where a layer is tensor-split); at 2
# data-parallel x 2 tensor-parallel ranks, whose tensor slices sum over
# one rank on each host, the sum is flat.
. "${top_srcdir}/tests/cluster/lib.sh"
need_fmnist
PROBE=$(dirname "$DTRAIN")/tests/cluster/hier_probe
J="$top_srcdir/jobs"
mlp=fashion-mnist-mlp
COMMON="--set train.steps=20 --set log.every_steps=1 --set eval.every_steps=0 --set checkpoint.at_end=false"

# probe_check FILE MODE HOSTS PER_HOST [FORM]: every rank's line of FILE
# says HOSTS hosts, PER_HOST ranks on its host at place rank % PER_HOST,
# host rank / PER_HOST (when the sum is hierarchical), hier MODE, the
# form FORM (the default, scatter, unless given), sums ok.
probe_check() {
	"$PYTHON" - "$@" <<'PY' || { cat "$1" >&2; fail "probe: $1"; }
import re, sys
path, mode, hosts, per = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
form = sys.argv[5] if len(sys.argv) > 5 else "scatter"
text = open(path).read()
seen = {}
for m in re.finditer(r"rank (\d+): hosts (\d+) max_per_host (\d+) local (\d+)/(\d+) host (\d+) hier (\w+) form (\w+)", text):
    r, h, mx, lr, ls, host, hier, fm = m.groups()
    r = int(r)
    seen[r] = True
    want = (hosts, per, r % per, per, mode, form if mode == "on" else "reduce")
    got = (int(h), int(mx), int(lr), int(ls), hier, fm)
    if got != want:
        sys.exit("rank %d: found %r, expected %r" % (r, got, want))
    if mode == "on" and int(host) != r // per:
        sys.exit("rank %d: host %s, expected %d" % (r, host, r // per))
n = hosts * per
if sorted(seen) != list(range(n)):
    sys.exit("ranks reporting: %r, expected 0..%d" % (sorted(seen), n - 1))
for r in range(n):
    if "rank %d: sums ok" % r not in text:
        sys.exit("rank %d: no \"sums ok\"" % r)
PY
}

# One host, 4 ranks (shared memory): auto stays flat, on goes host first.
mpi 4 "$PROBE" auto >probe-1x4-auto.out 2>&1 || { cat probe-1x4-auto.out >&2; fail "probe 1x4 auto"; }
probe_check probe-1x4-auto.out off 1 4
mpi 4 "$PROBE" on >probe-1x4-on.out 2>&1 || { cat probe-1x4-on.out >&2; fail "probe 1x4 on"; }
probe_check probe-1x4-on.out on 1 4
mpi 4 "$PROBE" reduce >probe-1x4-reduce.out 2>&1 || { cat probe-1x4-reduce.out >&2; fail "probe 1x4 reduce"; }
probe_check probe-1x4-reduce.out on 1 4 reduce
# 3 ranks: parts of 333, 333 and 334 of the 1000.
mpi 3 "$PROBE" scatter >probe-1x3-scatter.out 2>&1 || { cat probe-1x3-scatter.out >&2; fail "probe 1x3 scatter"; }
probe_check probe-1x3-scatter.out on 1 3 scatter
echo "ok: one host x 4 ranks: auto flat, on hierarchical (both forms), sums exact"

cluster_up 2
for mode in auto on off reduce; do
	cmpi 2 2 "$PROBE" $mode >probe-2x2-$mode.out 2>&1 ||
		{ cat probe-2x2-$mode.out >&2; fail "probe 2x2 $mode"; }
done
probe_check probe-2x2-auto.out on 2 2
probe_check probe-2x2-on.out on 2 2
probe_check probe-2x2-off.out off 2 2
probe_check probe-2x2-reduce.out on 2 2 reduce
echo "ok: 2 hosts x 2 ranks: detected, auto and on hierarchical (both forms), off flat, sums exact"

# Hosts of 2 and 1 ranks: the parts would not line up across hosts, so
# the scatter form gives way to the reduce form, and the sums stay exact.
printf '198.18.0.1 slots=2\n198.18.0.2 slots=1\n' >hosts.2+1
# shellcheck disable=SC2046
on 1 env TMPDIR="$DTC_TMP_ROOT/h1" timeout -k 5 120 "$MPIRUN" -np 3 \
	--hostfile hosts.2+1 $(cluster_mca 2) "$PROBE" scatter \
	>probe-2+1.out 2>&1 || { cat probe-2+1.out >&2; fail "probe 2+1"; }
for want in "rank 0: hosts 2 max_per_host 2 local 0/2 host 0 hier on form reduce" \
	    "rank 1: hosts 2 max_per_host 2 local 1/2 host 0 hier on form reduce" \
	    "rank 2: hosts 2 max_per_host 2 local 0/1 host 1 hier on form reduce" \
	    "rank 0: sums ok" "rank 1: sums ok" "rank 2: sums ok"; do
	grep -qx "$want" probe-2+1.out || { cat probe-2+1.out >&2; fail "probe 2+1: no \"$want\""; }
done
echo "ok: hosts of 2 and 1 ranks: the reduce form, sums exact"

# The reference: one rank on one host, 4 micro-batches a step.
mpi 1 "$DTRAIN" run -q --run-dir mlp-1 "$J/$mlp.yaml" $COMMON \
	--set train.grad_accum_steps=4 >/dev/null

# hrun NAME MODE SAYS TOL [--set ...]: the MLP on 2 hosts x 2 ranks with
# parallel.hierarchical MODE; its start-up line says SAYS; its losses
# against mlp-1 to TOL.
hrun() {
	name=$1 mode=$2 says=$3 tol=$4
	shift 4
	t0=$(date +%s)
	cmpi 2 2 "$DTRAIN" run --run-dir "$name" "$J/$mlp.yaml" $COMMON \
		--set parallel.hierarchical="$mode" "$@" >"$name.out" 2>&1 ||
		{ cat "$name.out" >&2; fail "$name: exit $?"; }
	grep -q "gradient sum over 2 hosts, at most ${PER_HOST:-2 ranks} on one: $says" "$name.out" ||
		{ cat "$name.out" >&2; fail "$name: no \"$says\" line"; }
	compare_losses mlp-1 "$name" "$tol" >/dev/null ||
		{ compare_losses mlp-1 "$name" "$tol" || true; fail "$name: losses differ from mlp-1 (tolerance $tol)"; }
	echo "ok: $name ($mode: $says, $(( $(date +%s) - t0 )) s)"
}
DP4="--set train.grad_accum_steps=1"
hrun mlp-dp4-on on hierarchical 0 $DP4
hrun mlp-dp4-off off flat 0 $DP4
hrun mlp-dp4-auto auto hierarchical 0 $DP4
# With tensor slices each tensor rank sums over its own data-parallel
# ranks, ranks 0 and 2 (1 and 3), one on each host: nothing to sum on a
# host first, so the sum is flat even with hierarchical on (before the
# slices, all 4 ranks summed and the sum was hierarchical).
PER_HOST="1 rank" hrun mlp-dp2-tp2-on on flat 1e-5 --set parallel.strategy=hybrid \
	--set parallel.data_parallel=2 --set parallel.tensor_parallel=2 \
	--set train.grad_accum_steps=2
