#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh [SECONDS_PER_TARGET] - fuzz dtrain's readers of untrusted input.
#
# Builds the library and the libFuzzer targets of tests/fuzz/ with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer in a build directory of
# their own ($DTRAIN_FUZZ_BUILD, default /tmp/dtrain-fuzz; the source tree
# is left as it is), then runs each target for SECONDS_PER_TARGET seconds
# (default 60) from its seed corpus, tests/fuzz/corpus/NAME/, and its past
# crashes, tests/fuzz/regress/NAME/, with the words of its format
# (tests/fuzz/NAME.dict) where there is a dictionary. New inputs go to
# BUILD/corpus/NAME/, which later runs start from too.
# $DTRAIN_FUZZ_TARGETS picks targets (default: all of them).
#
# Exits 0 when no target found anything; 1 after a crash, a leak, a
# timeout (10 s for one input) or running out of memory, naming the
# target and the reproducer (BUILD/artifacts/NAME-crash-...), which
# `BUILD/obj/tests/fuzz/fuzz_NAME FILE` replays; 2 when it cannot build.
# Needs clang and libFuzzer (Debian: apt-get install clang
# libclang-rt-14-dev).
set -eu

secs=${1:-60}
case $secs in
'' | *[!0-9]*)
	echo "usage: $0 [SECONDS_PER_TARGET]" >&2
	exit 2
	;;
esac
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${DTRAIN_FUZZ_BUILD:-/tmp/dtrain-fuzz}
cc=${FUZZ_CC:-clang}
all="job idx csv npy tokens llmc vocab safetensors ckpt_meta ckpt_manifest
http_header sniff hostfile report"
targets=${DTRAIN_FUZZ_TARGETS:-$all}

die() {
	echo "run.sh: $*" >&2
	exit 2
}

command -v "$cc" >/dev/null 2>&1 ||
	die "$cc not found (apt-get install clang libclang-rt-14-dev)"
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n)
{ (void)d; (void)n; return 0; }' >"${TMPDIR:-/tmp}/dtrain-fuzz-probe.$$.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined \
	-o "${TMPDIR:-/tmp}/dtrain-fuzz-probe.$$" \
	"${TMPDIR:-/tmp}/dtrain-fuzz-probe.$$.c" >/dev/null 2>&1; then
	rm -f "${TMPDIR:-/tmp}/dtrain-fuzz-probe.$$"*
	die "$cc cannot link -fsanitize=fuzzer (apt-get install libclang-rt-14-dev)"
fi
rm -f "${TMPDIR:-/tmp}/dtrain-fuzz-probe.$$"*

mkdir -p "$build"
build=$(cd "$build" && pwd)

# A source tree configured in place cannot be configured again elsewhere
# (configure refuses), so such a tree is copied first: the files git
# knows (tracked, or new and not ignored) and the generated build files.
if [ -f "$src/config.status" ]; then
	command -v git >/dev/null 2>&1 && [ -e "$src/.git" ] ||
		die "$src is configured in place and is no git checkout: run 'make distclean' there first"
	mkdir -p "$build/src"
	(cd "$src" &&
		{ git ls-files -z --cached --others --exclude-standard
		  for f in configure Makefile.in aclocal.m4 config.h.in; do
			[ -f "$f" ] && printf '%s\0' "$f"
		  done
		  find build-aux m4 -type f -print0 2>/dev/null || true
		} | xargs -0 tar cf - 2>/dev/null) | (cd "$build/src" && tar xpf -) ||
		die "cannot copy $src to $build/src"
	top=$build/src
	[ -f "$top/configure" ] || (cd "$top" && autoreconf -fi) ||
		die "autoreconf failed in $top"
else
	top=$src
	[ -f "$top/configure" ] || (cd "$top" && autoreconf -fi) ||
		die "autoreconf failed in $top"
fi

obj=$build/obj
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
mkdir -p "$obj"
if [ ! -f "$obj/Makefile" ] ||
   [ "$(cat "$obj/.flags" 2>/dev/null)" != "$cc $flags $top" ]; then
	echo "run.sh: configuring in $obj ($cc, libFuzzer, ASan, UBSan)"
	# Objects of another source tree or other flags must not survive.
	rm -rf "$obj" && mkdir -p "$obj"
	(cd "$obj" && "$top/configure" CC="$cc" CFLAGS="$flags" \
		LDFLAGS="-fsanitize=address,undefined" >configure.out 2>&1) || {
		tail -30 "$obj/configure.out" >&2
		die "configure failed (log: $obj/configure.out)"
	}
	echo "$cc $flags $top" >"$obj/.flags"
fi
echo "run.sh: building in $obj"
make -C "$obj" -j"$(nproc 2>/dev/null || echo 2)" libdtrain.la >"$obj/make.out" 2>&1 &&
	make -C "$obj" fuzz-targets FUZZ_TARGETS="$(echo $targets)" \
		>>"$obj/make.out" 2>&1 || {
	tail -30 "$obj/make.out" >&2
	die "build failed (log: $obj/make.out)"
}

export OPENBLAS_NUM_THREADS=1
# The targets whose readers take a path write each input to a file: in
# memory (/dev/shm) that is ten times faster than on a disk.
if [ -z "${DTRAIN_FUZZ_TMP:-}" ]; then
	DTRAIN_FUZZ_TMP=$build/tmp
	if [ -d /dev/shm ] && [ -w /dev/shm ]; then
		DTRAIN_FUZZ_TMP=/dev/shm/dtrain-fuzz.$$
		trap 'rm -rf "$DTRAIN_FUZZ_TMP"' EXIT
	fi
fi
export DTRAIN_FUZZ_TMP
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "$DTRAIN_FUZZ_TMP" "$build/artifacts" "$build/logs"

failed=""
for t in $targets; do
	bin=$obj/tests/fuzz/fuzz_$t
	seeds=$src/tests/fuzz/corpus/$t
	log=$build/logs/$t.log
	[ -x "$bin" ] || die "no target $t"
	[ -d "$seeds" ] || die "no seed corpus $seeds"
	mkdir -p "$build/corpus/$t"
	set -- "$build/corpus/$t" "$seeds"
	[ -d "$src/tests/fuzz/regress/$t" ] && set -- "$@" "$src/tests/fuzz/regress/$t"
	# A dictionary of the format's words, where there is one.
	case $t in
	ckpt_*) dict=$src/tests/fuzz/ckpt.dict ;;
	*) dict=$src/tests/fuzz/$t.dict ;;
	esac
	[ -f "$dict" ] && set -- -dict="$dict" "$@"
	rm -f "$build/artifacts/$t-"*
	echo "run.sh: fuzzing $t for ${secs}s"
	rc=0
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
		-malloc_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$build/artifacts/$t-" "$@" >"$log" 2>&1 ||
		rc=$?
	# libFuzzer's last status line ("#N DONE cov: C ft: F corp: ...")
	# and its count of executions.
	grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 | sed "s/^/  $t: /" || true
	grep -E '^stat::number_of_executed_units' "$log" | sed "s/^/  $t: /" || true
	if [ "$rc" -ne 0 ]; then
		echo "run.sh: $t FAILED (exit $rc); log: $log" >&2
		grep -E 'ERROR: |SUMMARY: |runtime error|fuzz: ' "$log" | head -5 >&2 || true
		for a in "$build/artifacts/$t-"*; do
			[ -f "$a" ] && echo "run.sh: reproducer: $a (replay: $bin $a)" >&2
		done
		failed="$failed $t"
	fi
done

if [ -n "$failed" ]; then
	echo "run.sh: FAILED:$failed" >&2
	exit 1
fi
echo "run.sh: no crash, leak or timeout in $(echo $targets | wc -w) targets (${secs}s each)"
