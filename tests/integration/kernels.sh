#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.kernels and DTRAIN_KERNELS (graph/kern.h): `dtrain --version`
# and a run's first lines say where each class of f32 product goes, and
# the run takes that path. Under auto on a CPU with AVX-512 (as
# DTRAIN_CPU leaves it) the convolutions go to oneDNN's f32 matmul (the
# large ones only, beside OpenBLAS's AVX-512 kernels) and the dense
# products to oneDNN too where the CPU runs 512-bit FMAs at full width
# (worked out here from /proc/cpuinfo: AMX-BF16, or AMD family 26 models
# 0-31 and 64-79), to OpenBLAS elsewhere; DTRAIN_CPU=avx2 sends everything to
# OpenBLAS; DTRAIN_KERNELS=openblas and onednn force one library and win
# over the job key; a word that names no path is ignored and said so.
# On such a CPU, 4 steps of the shipped CNN: auto gives the same losses
# twice and 2 data-parallel ranks give them too (with the micro-batch of
# the one-rank run: the convolution's products then have the same shapes
# under every layout); the OpenBLAS path (by DTRAIN_KERNELS and by the
# key, the same parameters) gives other parameters (so the products
# really moved) and losses within 1e-5 of auto's (measured on AMD Zen 5:
# equal to the 8 digits logged, but for 6e-8 at step 4 beside OpenBLAS's
# Haswell kernels), and so does onednn for every product.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

has() {
	sed -n '/^flags/{p;q;}' /proc/cpuinfo 2>/dev/null | tr ' \t' '\n\n' |
		grep -qx "$1"
}

prod() {
	env "$@" "$DTRAIN" --version | grep '^products: ' ||
		fail "$*: no products line"
}

ALL_BLAS='^products: dense, convolution and attention projections on OpenBLAS ('
ALL_DNN="^products: dense, convolution and attention projections on oneDNN's f32 matmul"
SPLIT="^products: dense and attention projections on OpenBLAS (.*), convolutions on oneDNN's f32 matmul (avx512_core"

prod DTRAIN_KERNELS=openblas | grep -q "$ALL_BLAS.*parallel.kernels: openblas (DTRAIN_KERNELS)" ||
	fail "DTRAIN_KERNELS=openblas: $(prod DTRAIN_KERNELS=openblas)"
prod DTRAIN_CPU=avx2 DTRAIN_KERNELS= | grep -q "$ALL_BLAS.*parallel.kernels: auto;" ||
	fail "DTRAIN_CPU=avx2: $(prod DTRAIN_CPU=avx2 DTRAIN_KERNELS=)"
prod DTRAIN_CPU=generic DTRAIN_KERNELS= | grep -q "$ALL_BLAS" ||
	fail "DTRAIN_CPU=generic: $(prod DTRAIN_CPU=generic DTRAIN_KERNELS=)"
prod DTRAIN_KERNELS=onednn | grep -q "$ALL_DNN.*parallel.kernels: onednn (DTRAIN_KERNELS)" ||
	fail "DTRAIN_KERNELS=onednn: $(prod DTRAIN_KERNELS=onednn)"
prod DTRAIN_KERNELS=fast | grep -q 'parallel.kernels: auto (DTRAIN_KERNELS=fast names no path, ignored)' ||
	fail "DTRAIN_KERNELS=fast: $(prod DTRAIN_KERNELS=fast)"
# oneDNN's f32 on AVX2 where AVX-512 is taken away
prod DTRAIN_CPU=avx2 DTRAIN_KERNELS=onednn | grep -q "$ALL_DNN (avx2" ||
	fail "onednn under avx2: $(prod DTRAIN_CPU=avx2 DTRAIN_KERNELS=onednn)"

if ! has avx512f; then
	echo "SKIP: no AVX-512: auto takes OpenBLAS for every product"
	prod DTRAIN_KERNELS= | grep -q "$ALL_BLAS" || fail "auto without AVX-512"
	exit 77
fi
# 512-bit FMAs at full width, by /proc/cpuinfo
full=0
has amx_bf16 && full=1
fam=$(sed -n 's/^cpu family[[:space:]]*: //p;' /proc/cpuinfo | head -1)
mod=$(sed -n 's/^model[[:space:]]*: //p;' /proc/cpuinfo | head -1)
if grep -q '^vendor_id.*AuthenticAMD' /proc/cpuinfo && [ "$fam" = 26 ] &&
	{ [ "$mod" -le 31 ] || { [ "$mod" -ge 64 ] && [ "$mod" -le 79 ]; }; }; then
	full=1
fi
if [ $full = 1 ]; then
	SPLIT="$ALL_DNN (avx512_core"
	prod DTRAIN_KERNELS= | grep -q "$SPLIT.*512-bit FMAs at full width: " ||
		fail "auto, full width: $(prod DTRAIN_KERNELS=)"
else
	prod DTRAIN_KERNELS= | grep -q "512-bit FMAs not at full width: " ||
		fail "auto, half width: $(prod DTRAIN_KERNELS=)"
fi
prod DTRAIN_KERNELS= | grep -q "$SPLIT.*parallel.kernels: auto;" ||
	fail "auto: $(prod DTRAIN_KERNELS=)"

# micro-batches of 64: 2 a step on one rank, 1 on each of 2
C="--set train.steps=4 --set log.every_steps=1 --set eval.every_steps=0 --set parallel.blas_threads=1 --set train.grad_accum_steps=2"
J="$top_srcdir/jobs/fashion-mnist-cnn.yaml"
run() {
	dir=$1
	shift
	env "$@" "$DTRAIN" run --run-dir "$dir" $C $RUNSET "$J" \
		>"$dir.out" 2>&1 || { cat "$dir.out" >&2; fail "$dir: exit $?"; }
}
RUNSET= run auto DTRAIN_KERNELS=
grep -q "^dtrain: $(echo "$SPLIT" | sed 's/^^//')" auto.out ||
	fail "auto run's first lines: $(grep products auto.out)"
RUNSET= run auto2 DTRAIN_KERNELS=
compare_losses auto auto2 0 || fail "auto: two runs differ"
export_of auto auto.bin
export_of auto2 auto2.bin
cmp -s auto.bin auto2.bin || fail "auto: two runs' parameters differ"
RUNSET= run blas DTRAIN_KERNELS=openblas
grep -q "^dtrain: products: dense, convolution and attention projections on OpenBLAS" blas.out ||
	fail "openblas run's first lines: $(grep products blas.out)"
RUNSET="--set parallel.kernels=openblas" run key DTRAIN_KERNELS=
grep -q "parallel.kernels: openblas;" key.out ||
	fail "the key: $(grep products key.out)"
compare_losses blas key 0 || fail "the key and DTRAIN_KERNELS differ"
export_of blas blas.bin
export_of key key.bin
cmp -s blas.bin key.bin || fail "the key and DTRAIN_KERNELS: parameters differ"
RUNSET="--set parallel.kernels=openblas" run envwins DTRAIN_KERNELS=auto
# the losses alone cannot tell (auto's and OpenBLAS's agree to the
# digits logged): the first lines and the parameters must be auto's
grep -q "parallel.kernels: auto (DTRAIN_KERNELS);" envwins.out ||
	fail "DTRAIN_KERNELS=auto over the key: $(grep products envwins.out)"
compare_losses auto envwins 0 || fail "DTRAIN_KERNELS did not win"
export_of envwins envwins.bin
cmp -s auto.bin envwins.bin ||
	fail "DTRAIN_KERNELS did not win: parameters differ from auto's"
compare_losses auto blas 1e-5 || fail "oneDNN's convolutions off OpenBLAS's"
cmp -s auto.bin blas.bin &&
	fail "auto and openblas give the same parameters: the path did not change"
RUNSET= run dnn DTRAIN_KERNELS=onednn
compare_losses dnn blas 1e-5 || fail "onednn off OpenBLAS"
mpi 2 env DTRAIN_KERNELS= "$DTRAIN" run -q --run-dir dp2 $C \
	--set train.grad_accum_steps=1 "$J" >dp2.out 2>&1 ||
	{ cat dp2.out >&2; fail "2 ranks: exit $?"; }
compare_losses auto dp2 0 || fail "2 ranks differ from 1 under auto"
echo "ok"
