#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.progress_us: a thread drives the non-blocking gradient sums.
# progress_probe (2 ranks, a 1 Mi-double sum, then 300 ms without MPI
# calls) finds its sum done at the first test with the thread, and right
# (every value checked); without the thread it prints how many tests the
# sum took; of two sums started in a row, the first is right after
# dt_comm_coll_wait_first(1), the second after the wait for all. A run
# with the thread gives the bits of one without (the same sums: exported
# parameters and loss lines), says which drives its sums, and the key's
# range is checked.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
PROBE=$(dirname "$DTRAIN")/tests/integration/progress_probe
mpi 2 "$PROBE" 200 >on.out 2>&1 || { cat on.out >&2; fail "probe with the thread"; }
[ "$(grep -c 'progress_us 200, done after 1 tests, sums ok$' on.out)" -eq 2 ] ||
	{ cat on.out >&2; fail "with the thread the sum was not done after the pause"; }
mpi 2 "$PROBE" 0 >off.out 2>&1 || { cat off.out >&2; fail "probe without the thread"; }
[ "$(grep -c 'progress_us 0, done after [0-9]* tests, sums ok$' off.out)" -eq 2 ] ||
	{ cat off.out >&2; fail "probe without the thread"; }
# dt_comm_coll_wait_first: the first of two sums waited for alone.
[ "$(cat on.out off.out | grep -c 'first of two sums ok after wait_first, then the second$')" -eq 4 ] ||
	{ cat on.out off.out >&2; fail "dt_comm_coll_wait_first"; }
echo "without the thread: $(sed -n 's/.*done after \([0-9]*\) tests.*/\1/p' off.out | tr '\n' ' ')tests"

write_small_job job.yaml
for us in 0 200; do
	mpi 2 "$DTRAIN" run --run-dir p$us job.yaml \
		--set parallel.progress_us=$us --set parallel.bucket_mb=0.004 \
		>p$us.out 2>p$us.err || { cat p$us.err >&2; fail "run with progress_us $us"; }
	export_of p$us p$us.st
	losses p$us >p$us.l
done
grep -q '^dtrain: gradient sums during backward: [0-9]* buckets, accumulation breadth_first, a progress thread every 200 us$' p200.err ||
	{ cat p200.err >&2; fail "no progress thread announced"; }
grep -q '^dtrain: gradient sums during backward: [0-9]* buckets, accumulation breadth_first, progress between layers$' p0.err ||
	{ cat p0.err >&2; fail "progress_us 0 announced a thread"; }
cmp p0.st p200.st || fail "the progress thread changed the parameters"
cmp p0.l p200.l || fail "the progress thread changed the losses"
[ "$(wc -l <p0.l)" -eq 20 ] || fail "expected 20 logged steps"
expect_fail 2 'parallel.progress_us: must be in \[0, 1000000\], found 1000001' \
	"$DTRAIN" plan --dry-run job.yaml --set parallel.progress_us=1000001
