#!/bin/sh
# SPDX-License-Identifier: MIT
# The CPU kind (src/util/cpu_features.c): `dtrain --version` names the
# instruction sets the processor has, the same as the kernel's
# /proc/cpuinfo flags; DTRAIN_CPU lowers the kind and what is said
# (a kind the CPU lacks stays out, a word that names no kind is taken as
# generic), and the attention heads' kernel follows it; a run's first
# lines say the same as --version, with the kind the CPU gives, with
# the AVX2 fallback forced (DTRAIN_CPU=avx2: a run trains on that path)
# and with the plain C one.
. "${top_srcdir}/tests/integration/lib.sh"

# has FLAG: the flag is in /proc/cpuinfo's first processor.
has() {
	sed -n '/^flags/{p;q;}' /proc/cpuinfo | tr ' \t' '\n\n' | grep -qx "$1"
}

# want_kind: the kind the flags give, worked out here from /proc/cpuinfo.
want_kind() {
	k=generic
	if has avx2 && has fma; then
		k=avx2
		if has avx512f; then
			k=avx512
			has avx512_bf16 && k=avx512_bf16
		fi
	fi
	echo $k
}

cpuline() {
	DTRAIN_CPU=$1 "$DTRAIN" --version >v.txt
	grep '^CPU: ' v.txt || fail "DTRAIN_CPU=$1: no CPU line"
}

prodline() {
	grep '^products: ' v.txt || fail "no products line"
}

if [ -r /proc/cpuinfo ] && [ "$(uname -m)" = x86_64 ] &&
	grep -q '^flags' /proc/cpuinfo; then
	line=$(cpuline "")
	kind=$(want_kind)
	case $line in
	"CPU: $kind; CPUID:"*) ;;
	*) fail "want kind $kind, got: $line" ;;
	esac
	for f in avx2 fma avx512f avx512_bf16 amx_bf16; do
		if has $f; then
			echo "$line" | grep -Eq "[ :]$f([ ;]|\$)" ||
				fail "$f in /proc/cpuinfo, not in: $line"
		else
			echo "$line" | grep -Eq "[ :-]$f([ ;]|\$)" &&
				fail "$f not in /proc/cpuinfo, yet: $line"
		fi
	done
	simd="plain C"
	{ has avx2 && has fma; } && simd=avx2+fma
	prodline | grep -q "attention heads on dtrain's small kernel ($simd)" ||
		fail "want the $simd kernel: $(prodline)"
	# the OpenBLAS path names its core (auto may send every f32 product
	# to oneDNN on a CPU with full-width 512-bit FMAs: kernels.sh)
	DTRAIN_KERNELS=openblas "$DTRAIN" --version | grep '^products: ' |
		grep -Eq 'on OpenBLAS \([A-Za-z0-9]+ kernels' ||
		fail "no OpenBLAS core: $(prodline)"

	# avx2: AVX-512 taken away, AVX2 kept where the CPU has it.
	line=$(cpuline avx2)
	k=generic
	{ has avx2 && has fma; } && k=avx2
	case $line in
	"CPU: $k (DTRAIN_CPU=avx2); CPUID:"*) ;;
	*) fail "DTRAIN_CPU=avx2: want $k, got: $line" ;;
	esac
	if has avx512f; then
		echo "$line" | grep -q ' -avx512f' ||
			fail "DTRAIN_CPU=avx2 kept avx512f: $line"
	fi
fi

# generic: every set taken away, the plain C kernel, on any processor.
line=$(cpuline generic)
case $line in
"CPU: generic (DTRAIN_CPU=generic); CPUID:"*) ;;
*) fail "DTRAIN_CPU=generic: $line" ;;
esac
echo "$line" | sed 's/.*CPUID://; s/;.*//' | grep -Eq ' [a-z]' &&
	fail "DTRAIN_CPU=generic left a set: $line"
prodline | grep -q "small kernel (plain C)" ||
	fail "DTRAIN_CPU=generic: $(prodline)"
line=$(cpuline avx512_bf17)
case $line in
"CPU: generic (DTRAIN_CPU=avx512_bf17, which names no kind (generic, avx2, avx512, avx512_bf16): taken as generic); CPUID:"*) ;;
*) fail "DTRAIN_CPU=avx512_bf17: $line" ;;
esac

# The run's first lines: the same two lines after "dtrain: ".
cookie=/usr/share/games/fortunes/cookie
[ -f "$cookie" ] || { echo "SKIP: $cookie missing (fortunes-min)"; exit 77; }
cat >gpt.yaml <<YAML
name: tinygpt
seed: 3
data:
  format: text
  train:
    file: $cookie
  context: 8
  text_unit: bytes
model:
  input_shape: [8]
  layers:
    - {type: embedding, name: tok, vocab: 96, dim: 16}
    - {type: pos_embedding, name: pos, length: 8, dim: 16}
    - {type: attention, name: attn, heads: 2, causal: true}
    - {type: dense, name: head, units: 96}
  loss: softmax_cross_entropy
train:
  global_batch: 4
  steps: 2
  optimizer: sgd
  lr: 0.01
log:
  every_steps: 1
YAML
for v in "" avx2 generic; do
	DTRAIN_CPU=$v "$DTRAIN" --version >v.txt
	DTRAIN_CPU=$v "$DTRAIN" run --run-dir "r$v" gpt.yaml >out 2>err ||
		{ cat err >&2; fail "run with DTRAIN_CPU=$v"; }
	for l in CPU products; do
		want="dtrain: $(grep "^$l: " v.txt | sed "s/^CPU: /CPU /")"
		grep -qxF "$want" err ||
			fail "DTRAIN_CPU=$v: run lacks \"$want\": $(head -n 4 err)"
	done
done
