#!/bin/sh
# SPDX-License-Identifier: MIT
# Bad job files and bad options exit 2 with a message naming the place,
# under plain runs and under mpirun, and nothing is written.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job good.yaml
sed 's/lr: 0.05/lr: fast/' good.yaml >bad.yaml
expect_fail 2 'bad.yaml:19:7: train.lr: expected a number, found "fast"' \
	"$DTRAIN" run --run-dir r1 bad.yaml
[ ! -e r1 ] || fail "a bad job created its run directory"
expect_fail 2 'bad.yaml:19:7: train.lr' mpi 2 "$DTRAIN" run --run-dir r2 bad.yaml
[ ! -e r2 ] || fail "a bad job under mpirun created its run directory"
expect_fail 2 '^dtrain: --set train.lr=-1: train.lr: must be > 0' \
	"$DTRAIN" run --set train.lr=-1 good.yaml
expect_fail 2 'global batch 96 is not a multiple of grad_accum_steps 2 x data-parallel degree 5' \
	mpi 5 "$DTRAIN" run good.yaml
expect_fail 2 'global batch 96 is not a multiple' \
	"$DTRAIN" run -n 5 good.yaml
# The degree comes from -n: the message lists the degrees that fit 96 / 2.
expect_fail 2 'data-parallel degrees that fit: 1, 2, 3, 4, 6, 8, 12, 16 \(-n sets' \
	"$DTRAIN" run -n 5 good.yaml
# A job that fixes the degree gets no such list.
expect_fail 2 'degree 5 = 10$' \
	"$DTRAIN" run -n 5 --set parallel.data_parallel=5 good.yaml
expect_fail 2 'usage: dtrain run' "$DTRAIN" run
expect_fail 2 'unknown command' "$DTRAIN" frobnicate
expect_fail 2 'No such file|cannot' "$DTRAIN" run missing.yaml
# Out-of-range labels name the file, the record and the value.
"$PYTHON" - <<'PY'
import gzip, struct
src = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"
d = bytearray(gzip.open(src).read())
d[8 + 1234] = 12
open("badlabels", "wb").write(bytes(d))
PY
sed "s|labels: .*train-labels.*|labels: $SCRATCH/badlabels|" good.yaml >badlab.yaml
expect_fail 1 'badlabels: record 1234: label 12 out of range \[0, 10\)' \
	"$DTRAIN" run --run-dir r3 badlab.yaml
[ ! -e r3/summary.json ] || fail "a failed run wrote a summary"
# plan finds what run would find, with the same words: data that does not
# fit the model's input (a bad job: exit 2, as run's; it was 1), a
# schedule that does not fit the run.
expect_fail 2 'model.input_shape: training data: samples have 784 inputs but the model takes 812' \
	"$DTRAIN" plan --dry-run --set 'model.input_shape=[28, 29]' good.yaml
expect_fail 2 'train.schedule: lr schedule: the run'"'"'s 20 steps \(train.steps, or train.epochs of the data\) must be more than train.schedule.warmup_steps \(50\) for a cosine schedule' \
	"$DTRAIN" plan --dry-run --set train.schedule.kind=cosine \
	--set train.schedule.warmup_steps=50 good.yaml
expect_fail 1 'data.train.labels: /nonexistent/labels.gz: cannot open' \
	"$DTRAIN" plan --dry-run --set data.train.labels=/nonexistent/labels.gz good.yaml
