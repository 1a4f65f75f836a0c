#!/bin/sh
# SPDX-License-Identifier: MIT
# A --run-dir that names an existing regular file is bad usage: exit
# status 2 naming it, before mpirun starts under -n, and the file left as
# it was. Before the fix the run failed with exit status 1 and
# "DIR/lock: cannot open: Not a directory" (under -n after starting
# mpirun and the ranks).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

cat >job.yaml <<YAML
name: tiny
data:
  train:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 10}
train: {global_batch: 16, steps: 1, optimizer: sgd, lr: 0.1}
YAML
echo "not a run" >notes.txt
cp notes.txt notes.orig
want='notes.txt: exists and is not a directory; a run directory is one \(made when missing\): give another --run-dir'
expect_fail 2 "$want" "$DTRAIN" run -q --run-dir notes.txt job.yaml
expect_fail 2 "$want" "$DTRAIN" run -n 2 -q --run-dir notes.txt job.yaml
grep -q 'mpirun' "$SCRATCH/err" && fail "-n started mpirun first"
cmp -s notes.txt notes.orig || fail "notes.txt was changed"
echo "rundir-file: ok"
