#!/bin/sh
# SPDX-License-Identifier: MIT
# Layouts across simulated hosts train the model of one rank: the MLP job
# of tests/integration/layouts.sh (20 steps, every loss logged, the same
# micro-batch in every run) on 2 hosts x 1 rank (data parallel, pp2 with
# GPipe and 1F1B, tp2), 2 hosts x 2 ranks (a dp2 x pp2 grid, tp2 within a
# host and dp2 across) and 4 hosts x 1 rank (dp2 x pp2, pp4 1F1B). The
# losses equal the one-rank run's bit
# for bit, or to 1e-5 relative where a layer is tensor-split, as on one
# host; so do bucketed sums started during backward (parallel.overlap)
# and the one blocking sum on 2 hosts. The parameter server (sync, one
# server) on 2 x 2 and 4 x 1 gives the losses of the all-reduce run with
# the same three workers on one host, to 1e-5 relative
# (tests/integration/ps-train.sh).
. "${top_srcdir}/tests/cluster/lib.sh"
need_fmnist
cluster_up 4
J="$top_srcdir/jobs"
COMMON="--set train.steps=20 --set log.every_steps=1 --set eval.every_steps=0 --set checkpoint.at_end=false"

# clayout NAME H R JOB K REF [--set ...]: JOB on H hosts x R ranks with K
# micro-batches per rank; its losses against run REF.
clayout() {
	name=$1 h=$2 r=$3 job=$4 k=$5 ref=$6
	shift 6
	t0=$(date +%s)
	cmpi "$h" "$r" "$DTRAIN" run -q --run-dir "$name" "$J/$job.yaml" \
		$COMMON --set train.grad_accum_steps="$k" "$@" \
		>"$name.out" 2>&1 || { cat "$name.out" >&2; fail "$name: exit $?"; }
	case $name in
	*tp*|*ps*) tol=1e-5 ;;
	*) tol=0 ;;
	esac
	compare_losses "$ref" "$name" $tol >/dev/null ||
		{ compare_losses "$ref" "$name" $tol || true; fail "$name: losses differ from $ref (tolerance $tol)"; }
	echo "ok: $name ($h hosts x $r ranks, $(( $(date +%s) - t0 )) s)"
}
H="--set parallel.strategy=hybrid"
M="--set parallel.strategy=model"
S1="--set parallel.schedule=1f1b"
PS="--set parallel.sync=parameter_server --set parallel.servers=1"
pp() { echo "--set parallel.pipeline_parallel=$1"; }
tp() { echo "--set parallel.tensor_parallel=$1"; }
dp() { echo "--set parallel.data_parallel=$1"; }

mlp=fashion-mnist-mlp
# The references, on one host without the cluster: one rank, and three
# all-reduce workers for the parameter server.
mpi 1 "$DTRAIN" run -q --run-dir mlp-1 "$J/$mlp.yaml" $COMMON \
	--set train.grad_accum_steps=4 >/dev/null
mpi 3 "$DTRAIN" run -q --run-dir mlp-ar3 "$J/$mlp.yaml" $COMMON \
	--set train.global_batch=96 --set train.grad_accum_steps=1 >/dev/null

clayout mlp-dp2 2 1 $mlp 2 mlp-1
# Buckets of 0.1 MiB started during backward, over TCP between hosts,
# and the one blocking sum: the same bits.
clayout mlp-dp2-buckets 2 1 $mlp 2 mlp-1 --set parallel.bucket_mb=0.1
clayout mlp-dp2-blocking 2 1 $mlp 2 mlp-1 --set parallel.overlap=false
clayout mlp-pp2 2 1 $mlp 4 mlp-1 $M $(pp 2)
clayout mlp-pp2-1f1b 2 1 $mlp 4 mlp-1 $M $(pp 2) $S1
clayout mlp-tp2 2 1 $mlp 4 mlp-1 $M $(tp 2)
clayout mlp-dp2-pp2-2x2 2 2 $mlp 2 mlp-1 $H $(dp 2) $(pp 2)
clayout mlp-dp2-tp2-2x2 2 2 $mlp 2 mlp-1 $H $(dp 2) $(tp 2)
clayout mlp-dp2-pp2-4x1 4 1 $mlp 2 mlp-1 $H $(dp 2) $(pp 2)
clayout mlp-pp4-1f1b 4 1 $mlp 4 mlp-1 $M $(pp 4) $S1
clayout mlp-ps-2x2 2 2 $mlp 1 mlp-ar3 $PS
clayout mlp-ps-4x1 4 1 $mlp 1 mlp-ar3 $PS
grep -q '"ps_mode": "sync"' mlp-ps-4x1/summary.json || fail "the ps run's summary lacks ps_mode"
