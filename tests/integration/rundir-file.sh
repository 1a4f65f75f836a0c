#!/bin/sh
# SPDX-License-Identifier: MIT
# A --run-dir that names an existing regular file is bad usage: exit
# status 2 naming it, before mpirun starts under -n, and the file left as
# it was. Before the fix the run failed with exit status 1 and
# "DIR/lock: cannot open: Not a directory" (under -n after starting
# mpirun and the ranks).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

write_tiny_job job.yaml
echo "not a run" >notes.txt
cp notes.txt notes.orig
want='notes.txt: exists and is not a directory; a run directory is one \(made when missing\): give another --run-dir'
expect_fail 2 "$want" "$DTRAIN" run -q --run-dir notes.txt job.yaml
expect_fail 2 "$want" "$DTRAIN" run -n 2 -q --run-dir notes.txt job.yaml
grep -q 'mpirun' "$SCRATCH/err" && fail "-n started mpirun first"
cmp -s notes.txt notes.orig || fail "notes.txt was changed"
echo "rundir-file: ok"
