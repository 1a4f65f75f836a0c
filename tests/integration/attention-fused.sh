#!/bin/sh
# SPDX-License-Identifier: MIT
# model.attention: fused (graph/flash.c) on the char-GPT job: it trains to
# the losses of the materialized heads within 1e-5 relative (the softmax
# sums in another order); data-parallel and pipeline layouts give its
# one-rank losses and parameters byte for byte, as does model.recompute
# (blocks and attention), and tensor parallelism (heads split over 2
# ranks) its losses to the 1e-5 that layouts.sh holds every tensor-split
# layout to (the group sums partial products of the output projection;
# the heads themselves do not depend on the split); 2 threads split one
# sample's heads with one thread's bits.
# The plan's activation bytes at context 2048 fall by the (T, T) term,
# as worked out below by hand, and its FLOPs rise by the backward's
# recomputed scores; a run at context 1024 peaks lower in resident memory
# (summary.json). A bad value is a job error naming file, line and column.
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] || {
	echo "SKIP: fortunes missing (apt-get install fortunes)"
	exit 77
}
JOB="$top_srcdir/jobs/char-gpt.yaml"
COMMON="--set train.steps=6 --set train.schedule.warmup_steps=2
	--set eval.every_steps=0 --set log.every_steps=1
	--set checkpoint.at_end=true"
F="--set model.attention=fused"

# run NAME NP [--set ...]: trains the job and exports its parameters.
run() {
	name=$1 np=$2
	shift 2
	mpi "$np" "$DTRAIN" run -q --run-dir "$name" "$JOB" $COMMON "$@" \
		>"$name.out" 2>&1 || { cat "$name.out" >&2; fail "$name: exit"; }
	export_of "$name" "$name.st"
	losses "$name" >"$name.losses"
}
same() {
	cmp "$1.losses" "$2.losses" || fail "$2: losses differ from $1's"
	cmp "$1.st" "$2.st" || fail "$2: parameters differ from $1's"
	echo "ok: $2 == $1"
}

run mat 1
run fused 1 $F
[ "$(wc -l <fused.losses)" -eq 6 ] || fail "fused: expected 6 losses"
compare_losses mat fused 1e-5 || fail "fused: losses differ from materialized"
cmp -s mat.st fused.st && fail "fused: the same bits as materialized (not run?)"
echo "ok: fused trains as materialized"
run fused-dp2 2 $F
same fused fused-dp2
# recompute: blocks runs the fused forward again, the same bits; with
# fused, recompute: attention has nothing to drop
for rc in blocks attention; do
	run fused-$rc 1 $F --set model.recompute=$rc
	same fused fused-$rc
done
# The fused heads split over the pool by (sample, head): at micro-batch
# 1 the 4 heads of the one sample run on 2 threads (and the loss's rows
# too), with the one-thread bits.
run fused-mb1 1 $F --set train.micro_batch=1
run fused-mb1-2t 1 $F --set train.micro_batch=1 --set parallel.blas_threads=2
same fused-mb1 fused-mb1-2t
run fused-pp2 2 $F --set parallel.strategy=model \
	--set parallel.pipeline_parallel=2
same fused fused-pp2
run fused-tp2 2 $F --set parallel.strategy=model \
	--set parallel.tensor_parallel=2
compare_losses fused fused-tp2 1e-5 || fail "fused-tp2: losses differ"
echo "ok: fused-tp2 ~ fused"

# The plan at context 2048, micro-batch 8: per attention layer and
# sample the materialized scratch is 4*T*C + (h+1)*T*T floats, the fused
# one 5*T*C + (h+1)*T + 2*64*(C/h) (attention.c); T = 2048, C = 128,
# h = 4: 22020096 against 1325056, 20695040 floats less, times 4 layers,
# 8 samples and 4 bytes: 2648965120 bytes. FLOPs per sample rise by the
# recomputed scores and softmax, 2*T*T*C + 5*h*T*T = 1157627904 a layer.
L="--set data.context=2048 --set model.input_shape=[2048]
	--set model.layers.1.length=2048"
"$DTRAIN" plan --json "$JOB" $L >plan-mat.json || fail "plan: exit"
"$DTRAIN" plan --json "$JOB" $L $F >plan-fused.json || fail "plan fused: exit"
"$PYTHON" - <<'PY' || fail "the plans do not follow model.attention"
import json
m, f = (json.load(open("plan-%s.json" % k)) for k in ("mat", "fused"))
am, af = (p["memory_per_rank"]["activations"] for p in (m, f))
print("activations", am, af)
assert am - af == 2648965120, am - af
assert m["recompute_flops_per_sample"] == 0
assert f["recompute_flops_per_sample"] == 4 * 1157627904, f
assert f["flops_per_sample"] - m["flops_per_sample"] == 4 * 1157627904
assert (m["attention"], f["attention"]) == ("materialized", "fused")
PY
# The text names the choice, and its recomputed FLOPs.
"$DTRAIN" plan "$JOB" $L $F >plan-fused.txt || fail "plan text: exit"
grep -q '^attention: fused (tiles with an online softmax: no (T, T) scores kept)$' plan-fused.txt ||
	{ cat plan-fused.txt >&2; fail "plan text: no line for fused attention"; }
grep -q "^recompute: none, and the fused attention's tiles; its forward again in backward adds 4.631 GFLOP per sample (in the total)$" plan-fused.txt ||
	{ cat plan-fused.txt >&2; fail "plan text: fused attention's recomputed FLOPs"; }
"$DTRAIN" plan "$JOB" $L >plan-mat.txt || fail "plan text: exit"
! grep -q '^attention:\|^recompute:' plan-mat.txt || fail "plan text: materialized named"
echo "ok: the plan's bytes and FLOPs follow"

# Measured: two steps at context 1024, micro-batch 2: the materialized
# probabilities are 5*T*T floats a layer and sample, 168 MB in all.
P="--set data.context=1024 --set model.input_shape=[1024]
	--set model.layers.1.length=1024 --set train.global_batch=2
	--set train.micro_batch=2 --set train.steps=2
	--set train.schedule.warmup_steps=1 --set eval.every_steps=0"
for a in materialized fused; do
	"$DTRAIN" run -q --run-dir "long-$a" "$JOB" $P \
		--set model.attention=$a >"long-$a.out" 2>&1 ||
		{ cat "long-$a.out" >&2; fail "long-$a: exit"; }
done
"$PYTHON" - <<'PY' || fail "fused does not peak lower"
import json
pm, pf = (json.load(open("long-%s/summary.json" % a))["ranks"][0]
          ["peak_resident_bytes"] for a in ("materialized", "fused"))
print("peak resident bytes: materialized %d, fused %d" % (pm, pf))
assert pf + 100e6 < pm, (pm, pf)
PY
echo "ok: fused peaks lower"

sed 's/^  loss: softmax_cross_entropy.*/  attention: flash/' "$JOB" >bad.yaml
line=$(grep -n "attention: flash" bad.yaml | cut -d: -f1)
expect_fail 2 \
	"bad.yaml:$line:14: model.attention: expected one of materialized, fused" \
	"$DTRAIN" plan bad.yaml
echo "ok: a bad model.attention is a job error"
