#!/bin/sh
# SPDX-License-Identifier: MIT
# oneDNN's own memory in the plan (doc/DESIGN.md, "oneDNN's own memory"):
# - under DTRAIN_KERNELS=onednn every rank's memory has kernels_runtime,
#   2 MiB and 424 KiB for each distinct shape of product, and the total
#   counts it. jobs/char-gpt.yaml (5 steps, micro-batch 8 of 64 tokens:
#   512 rows) has 22 on one rank, counted by hand: the forward passes of
#   qkv (512x384x128), the attention's proj (512x128x128), fc
#   (512x512x128), proj (512x128 of 512 terms: two 256-term chunks of one
#   shape, both adding to the bias) and the head (512x96x128), 5; the
#   same at the evaluation's last micro-batch (382 eval samples: 47
#   micro-batches and one of 6 samples, 384 rows), 5; the five weight
#   gradients (A^T B, 512 terms in 256-term chunks, beta 1), 5; the input
#   gradients, beta 0 for the first chunk and 1 after: head 1, proj 1
#   (128 terms), fc 2 (512 terms), the attention's proj 1, qkv 2 (384
#   terms: 256 at beta 0, at qkv's strides, and 128 at beta 1), 7. At 2
#   threads 29, as oneDNN made them (DNNL_VERBOSE=2: the pool's cut of
#   each product's rows, 252 and 260, in forward and in the attention
#   proj's gradients; the other weight and input gradients side by side,
#   each whole on one thread); tp 2 21 on each rank; pp 2 18 (stage 0:
#   no head, whose 4 shapes stage 1 has) and 22.
# - dtrain plan --dry-run prints it after runtime;
# - DTRAIN_KERNELS=openblas gives no such term, and the total is less by
#   exactly it; under auto the term follows the run's choice (--version's
#   products line), none under DTRAIN_CPU=avx2;
# - a one-rank run makes as many primitives as the plan counts (oneDNN's
#   DNNL_VERBOSE=2 create:cache_miss lines).
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
F="$top_srcdir/jobs/char-gpt.yaml"
S="--set train.steps=5 --set train.schedule.warmup_steps=1 --set eval.every_steps=0"
M="--set parallel.strategy=model"

# shellcheck disable=SC2086
plan() {
	name=$1 k=$2
	shift 2
	DTRAIN_KERNELS=$k "$DTRAIN" plan --dry-run --json $S "$F" "$@" \
		>plan-$name-$k.json || fail "plan $name $k"
}
# shellcheck disable=SC2086
for k in onednn openblas; do
	plan one $k
	# lib.sh's OPENBLAS_NUM_THREADS=1 would win over blas_threads
	(OPENBLAS_NUM_THREADS=2 && export OPENBLAS_NUM_THREADS &&
		plan t2 $k --set parallel.blas_threads=2)
	plan tp2 $k -n 2 $M --set parallel.tensor_parallel=2
	plan pp2 $k -n 2 $M --set parallel.pipeline_parallel=2 \
		--set parallel.schedule=1f1b
done
"$PYTHON" - <<'PY' || fail "kernels_runtime"
import json
want = {"one": [22], "t2": [29], "tp2": [21, 21], "pp2": [18, 22]}
for name, shapes in want.items():
    on = json.load(open("plan-%s-onednn.json" % name))["ranks"]
    off = json.load(open("plan-%s-openblas.json" % name))["ranks"]
    assert len(on) == len(shapes), (name, on)
    for r, n in enumerate(shapes):
        m, o = on[r]["memory"], off[r]["memory"]
        assert m["kernels_runtime"] == (2 << 20) + n * (424 << 10), \
            (name, r, n, m)
        assert "kernels_runtime" not in o, (name, r, o)
        assert m["total"] == o["total"] + m["kernels_runtime"], (name, r)
    print("%s: kernels_runtime of %s shapes" % (name, shapes))
PY
# shellcheck disable=SC2086
DTRAIN_KERNELS=onednn "$DTRAIN" plan --dry-run $S "$F" >plan-one.txt ||
	fail "plan text"
grep -q '^memory per rank: .* runtime 30.00 MiB, kernels_runtime 11.11 MiB, total ' plan-one.txt ||
	{ cat plan-one.txt >&2; fail "plan text: kernels_runtime"; }
# shellcheck disable=SC2086
DTRAIN_KERNELS=openblas "$DTRAIN" plan --dry-run $S "$F" >plan-off.txt ||
	fail "plan text, openblas"
if grep -q kernels_runtime plan-off.txt; then
	cat plan-off.txt >&2
	fail "kernels_runtime under openblas"
fi

# Under auto the plan takes the run's choice: with the term where the
# products line of --version sends the dense products to oneDNN, without
# it under DTRAIN_CPU=avx2 (no AVX-512: OpenBLAS).
for cpu in "" avx2; do
	# shellcheck disable=SC2086
	DTRAIN_CPU=$cpu DTRAIN_KERNELS=auto "$DTRAIN" plan --dry-run --json \
		$S "$F" >plan-auto.json || fail "plan, auto, DTRAIN_CPU=$cpu"
	if DTRAIN_CPU=$cpu DTRAIN_KERNELS=auto "$DTRAIN" --version |
		grep -q '^products: dense, .* on oneDNN'; then
		want=22
	else
		want=0
	fi
	"$PYTHON" - "$want" <<'PY' || fail "auto, DTRAIN_CPU=$cpu"
import json, sys
n = int(sys.argv[1])
m = json.load(open("plan-auto.json"))["ranks"][0]["memory"]
got = m.get("kernels_runtime", 0)
assert got == ((2 << 20) + n * (424 << 10) if n else 0), (n, m)
PY
	echo "auto, DTRAIN_CPU=${cpu:-unset}: $want shapes"
done
[ "$want" -eq 0 ] || fail "DTRAIN_CPU=avx2 still sends the products to oneDNN"

# The run: as many primitives as the plan counts.
# shellcheck disable=SC2086
DTRAIN_KERNELS=onednn DNNL_VERBOSE=2 "$DTRAIN" run --run-dir r $S "$F" \
	>out 2>err || { cat err >&2; fail "the run"; }
made=$(grep -c '^onednn_verbose,create:cache_miss,cpu,matmul' out || true)
[ "$made" -eq 22 ] || fail "oneDNN made $made matmul primitives, the plan 22"
echo "ok: kernels_runtime in the plan where oneDNN runs the products; 22 primitives made"

# Tensor slices (tp 2, each rank holding its blocks: the products at the
# blocks' strides, the vocabulary's share of the head): each rank makes
# as many primitives as the plan counts for it (21, above), counted from
# its own DNNL_VERBOSE=2 lines (mpirun --tag-output).
# shellcheck disable=SC2086
DTRAIN_KERNELS=onednn mpi 2 --tag-output -x DTRAIN_KERNELS=onednn \
	-x DNNL_VERBOSE=2 "$DTRAIN" run --run-dir rtp $S "$F" $M \
	--set parallel.tensor_parallel=2 >out-tp 2>err-tp ||
	{ cat err-tp >&2; fail "the tp 2 run"; }
grep -q '"slices": true' rtp/plan.json || fail "tp 2: no slices"
for r in 0 1; do
	made=$(grep "^\[1,$r\]<stdout>:onednn_verbose,create:cache_miss,cpu,matmul" \
		out-tp | wc -l)
	[ "$made" -eq 21 ] ||
		fail "tp 2 rank $r: oneDNN made $made matmul primitives, the plan 21"
done
echo "ok: tp 2 with slices: 21 primitives made on each rank, as planned"
