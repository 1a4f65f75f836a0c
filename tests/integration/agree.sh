#!/bin/sh
# SPDX-License-Identifier: MIT
# Ranks prove they hold the same job before they train (src/train/agree.c),
# under mpirun with tests/agree/agree_probe: the same job on every rank
# agrees; rank 1 (or rank 2 of 3) started with another --set (lr, a layer
# width, the seed) is refused on every rank with exit 2 and a message that
# names that rank, the key, both values and where the odd one came from.
. "${top_srcdir}/tests/integration/lib.sh"
PROBE=$(dirname "$DTRAIN")/tests/agree/agree_probe
[ -x "$PROBE" ] || fail "$PROBE is not built (make check builds it)"

head -c 1000 /dev/zero >images.idx
head -c 100 /dev/zero >labels.idx
cat >job.yaml <<YAML
seed: 7
data:
  train: {images: images.idx, labels: labels.idx}
model:
  input_shape: [4]
  layers:
    - {type: dense, units: 32, activation: relu}
    - {type: dense, units: 3}
train: {micro_batch: 8, steps: 10, lr: 0.001}
YAML

mpi 2 "$PROBE" job.yaml >same.out
cat same.out
[ "$(grep -c ': agree$' same.out)" -eq 2 ] || fail "2 ranks did not agree"
# The same value reached by another route is the same job.
mpi 2 "$PROBE" job.yaml 1:train.lr=1e-3 >route.out
[ "$(grep -c ': agree$' route.out)" -eq 2 ] || fail "lr 1e-3 != 0.001"

# expect_both PATTERN NP ARGS...: every rank exits 2 with PATTERN.
expect_both() {
	pattern=$1 np=$2
	shift 2
	expect_fail 2 "$pattern" mpi "$np" "$PROBE" job.yaml "$@"
	cat "$SCRATCH/err"
	n=$(grep -Ec "ranks disagree before training: $pattern" "$SCRATCH/err" ||
		true)
	[ "$n" -eq "$np" ] || fail "$*: $n of $np ranks gave the message"
}

expect_both 'rank 1: train\.lr is 0\.002 \(--set train\.lr=0\.002\), rank 0 has 0\.001' \
	2 1:train.lr=0.002
expect_both 'rank 1: model\.layers\.0\.units is 64 \(--set model\.layers\.0\.units=64\), rank 0 has 32' \
	2 1:model.layers.0.units=64
expect_both 'rank 1: seed is 8 \(--set seed=8\), rank 0 has 7' 2 1:seed=8
# The lowest differing rank is named, with 3 ranks.
expect_both 'rank 2: train\.lr is 0\.5 \(--set train\.lr=0\.5\), rank 0 has 0\.001' \
	3 2:train.lr=0.5
expect_both 'rank 1: model\.layers\.1\.units is 5 \(--set model\.layers\.1\.units=5\), rank 0 has 3' \
	2 1:model.layers.1.units=5
# A layer more on one rank: the first key rank 0 lacks.
expect_both 'rank 1: model\.layers\.2\.type is relu \(--set model\.layers=.*\), rank 0 has not set' \
	2 '1:model.layers=[{type: dense, units: 32, activation: relu}, {type: dense, units: 3}, {type: relu}]'
# The building blocks: lengths that differ are caught before any buffer
# of that length is sent, and bytes that differ, naming the rank, on 3
# ranks alike.
mpi 3 "$PROBE" --lengths >lengths.out
cat lengths.out
[ "$(grep -c ': length: 7 rank 1: the test buffer: 11, rank 0 has 10$' lengths.out)" -eq 3 ] ||
	fail "length mismatch not reported on every rank"
[ "$(grep -c ": same-length: 2 1 rank 1: the test bytes differs from rank 0's (11 bytes, rank 0 has 10)$" lengths.out)" -eq 3 ] ||
	fail "check_same: length mismatch not reported on every rank"
[ "$(grep -c ": same-bytes: 2 1 rank 1: the test bytes differs from rank 0's$" lengths.out)" -eq 3 ] ||
	fail "check_same: byte mismatch not reported on every rank"
grep -q '^rank 1: short: 7 rank 1: MPI_Recv from rank 0 (tag 5): 3 floats arrived, expected 4$' lengths.out ||
	fail "a short point-to-point message was not refused"

# The trainer itself: an MPMD line whose second rank has another learning
# rate, then another layer width, stops every rank with exit 2 before
# anything is written, naming rank 1 and the key.
need_fmnist
write_small_job small.yaml
for bad in train.lr=0.5 model.layers.0.units=48; do
	set +e
	mpi 1 "$DTRAIN" run -q --run-dir trained small.yaml : \
		-np 1 "$DTRAIN" run -q --run-dir trained --set "$bad" small.yaml \
		>train.out 2>train.err
	rc=$?
	set -e
	[ "$rc" -eq 2 ] || { cat train.err >&2; fail "dtrain run with $bad on rank 1: exit $rc, expected 2"; }
	key=${bad%%=*}
	grep -q "ranks disagree before training: rank 1: $key is ${bad#*=} (--set $bad)" train.err ||
		{ cat train.err >&2; fail "dtrain run: $bad not named"; }
	[ ! -e trained ] || fail "dtrain run with $bad on rank 1 wrote a run directory"
done
echo "agree: ok"
