#!/bin/sh
# SPDX-License-Identifier: MIT
# Same job, same seed, same world size: byte-identical losses; and
# `dtrain run -n 2` (which starts mpirun itself) equals mpirun -np 2.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job job.yaml
mpi 2 "$DTRAIN" run -q --run-dir a job.yaml
mpi 2 "$DTRAIN" run -q --run-dir b job.yaml
timeout 300 "$DTRAIN" run -q -n 2 --run-dir c job.yaml
losses a >la
losses b >lb
losses c >lc
cmp la lb || fail "two identical runs differ"
cmp la lc || fail "dtrain run -n 2 differs from mpirun -np 2"
grep -q '"train_loss"' a/summary.json || fail "summary.json lacks train_loss"
[ "$(grep train_loss a/summary.json)" = "$(grep train_loss b/summary.json)" ] ||
	fail "summary train_loss differs"
# The resolved job is saved and loads back.
"$DTRAIN" run -q --run-dir d --set train.steps=1 a/job.yaml >/dev/null
# A run directory holding results is not overwritten.
expect_fail 2 'already holds results.*--run-dir' \
	"$DTRAIN" run -q --run-dir a job.yaml
losses a >la2
cmp la la2 || fail "the existing run directory was modified"
# -n refuses what it can before mpirun starts: no MPI banner, nothing made.
expect_fail 2 'already holds results' "$DTRAIN" run -q -n 2 --run-dir a job.yaml
grep -q 'mpirun\|Primary job' "$SCRATCH/err" && fail "mpirun was started"
expect_fail 2 'train.schedule: lr schedule' "$DTRAIN" run -q -n 2 \
	--run-dir e --set train.schedule.kind=cosine \
	--set train.schedule.warmup_steps=50 job.yaml
[ ! -e e ] || fail "a refused -n run created its run directory"
