#!/bin/sh
# SPDX-License-Identifier: MIT
# compare-losses.sh [-k] [BASELINE] - the guard of a refactor that must
# change no bit: runs the three shipped jobs (jobs/fashion-mnist-mlp.yaml,
# jobs/fashion-mnist-cnn.yaml, jobs/char-gpt.yaml) for their first STEPS
# optimizer steps (default 200; more than char-gpt's 100 warmup steps,
# which its cosine schedule needs), logging every step, with the dtrain
# of this tree (./dtrain, built) and with that of the commit BASELINE
# (default aaa1ff8, the commit before issue 11), and compares the loss
# lines of metrics.jsonl byte for byte: step, epoch, loss, lr, the eval
# lines and skipped_steps; the timing fields (samples_per_s, data_wait_s)
# are cut out since they never repeat.
#
# The baseline is built in a temporary git worktree under /tmp (configure
# and make of the library and the binary only, no tests), which is
# removed at the end (-k keeps it and its runs, and says where). This
# tree's ./dtrain is copied first, so the tree may be rebuilt meanwhile.
# Checked to fail: with the update's learning rate scaled by 1 + 1e-6,
# the MLP and CNN lines differ from step 2 on.
# A baseline from before train.decay (which decays every tensor, as
# train.decay: all does) is compared with this tree's runs under
# --set train.decay=all: the default, weights, changes char-gpt's bits
# (its weight_decay is 0.1), and the comparison is of the rest.
# RANKS (default "1 2") lists the rank counts each job runs at: 1 is the
# plain loop, 2 the data-parallel sum (the float all-reduce for the MNIST
# jobs, the exact double sum for char-gpt). Every run has one BLAS thread
# per rank and no checkpoints, so the comparison does not depend on the
# machine's load.
#
# Prints one line per job and rank count, "same" or "DIFFERENT" (with the
# first differing lines), and exits 0 when every one is the same, 1
# otherwise, 2 on a usage or build error. About 3 minutes per build on 2
# cores (char-gpt is most of it), plus the baseline's build.
set -eu

keep=0
if [ "${1:-}" = "-k" ]; then
	keep=1
	shift
fi
base=${1:-aaa1ff8}
steps=${STEPS:-200}
ranks=${RANKS:-"1 2"}
top=$(git rev-parse --show-toplevel)
cd "$top"
if [ ! -x ./dtrain ]; then
	echo "compare-losses: build this tree first (./dtrain is missing)" >&2
	exit 2
fi
git rev-parse --verify -q "$base^{commit}" >/dev/null || {
	echo "compare-losses: no commit $base" >&2
	exit 2
}

tmp=$(mktemp -d /tmp/compare-losses.XXXXXX)
wt="$tmp/baseline"
cleanup() {
	if [ "$keep" -eq 1 ]; then
		echo "compare-losses: kept $tmp"
		return
	fi
	git -C "$top" worktree remove --force "$wt" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# This tree's dtrain as it is now, so the tree can be rebuilt meanwhile.
cp ./dtrain "$tmp/dtrain.this"
git worktree add -q --detach "$wt" "$base"
(
	cd "$wt"
	autoreconf -fi >"$tmp/build.log" 2>&1
	./configure >>"$tmp/build.log" 2>&1
	make -j2 dtrain >>"$tmp/build.log" 2>&1
) || {
	echo "compare-losses: the baseline $base did not build:" >&2
	tail -20 "$tmp/build.log" >&2
	exit 2
}

export OPENBLAS_NUM_THREADS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
this_extra=""
"$wt/dtrain" plan --dry-run --set train.decay=all jobs/char-gpt.yaml \
	>/dev/null 2>&1 || this_extra="--set train.decay=all"

# run DTRAIN JOB N OUT: the loss lines of JOB's first $steps steps on N
# ranks, into OUT.
run() {
	r_dir="$tmp/run.$(basename "$4")"
	set -- "$1" "$2" "$3" "$4" run -q --run-dir "$r_dir" \
		--set train.steps="$steps" --set log.every_steps=1 \
		--set checkpoint.every_steps=0 --set checkpoint.at_end=false \
		--set checkpoint.every_seconds=0 --set parallel.blas_threads=1
	r_bin=$1 r_job=$2 r_n=$3 r_out=$4
	shift 4
	# shellcheck disable=SC2086
	[ "$r_bin" = "$tmp/dtrain.this" ] && set -- "$@" $this_extra
	if [ "$r_n" -eq 1 ]; then
		"$r_bin" "$@" "$r_job" >/dev/null
	else
		over=""
		[ "$r_n" -gt "$cores" ] && over=--oversubscribe
		mpirun -np "$r_n" $over "$r_bin" "$@" "$r_job" >/dev/null
	fi
	sed -e 's/,"samples_per_s":[^,}]*//' \
	    -e 's/,"data_wait_s":[^,}]*//' "$r_dir/metrics.jsonl" >"$r_out"
	rm -rf "$r_dir"
}

fail=0
for job in fashion-mnist-mlp fashion-mnist-cnn char-gpt; do
	for n in $ranks; do
		a="$tmp/$job.np$n.base" b="$tmp/$job.np$n.this"
		run "$wt/dtrain" "jobs/$job.yaml" "$n" "$a"
		run "$tmp/dtrain.this" "jobs/$job.yaml" "$n" "$b"
		lines=$(wc -l <"$b")
		if [ "$lines" -gt 0 ] && cmp -s "$a" "$b"; then
			printf '%-18s np %s  same (%s lines)\n' "$job" "$n" \
			       "$lines"
		else
			printf '%-18s np %s  DIFFERENT from %s:\n' "$job" "$n" \
			       "$base"
			diff "$a" "$b" | head -6 || true
			fail=1
		fi
	done
done
exit $fail
