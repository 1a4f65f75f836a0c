# SPDX-License-Identifier: MIT
# lib.sh - shared by the integration tests (sourced). Provides a scratch
# directory, the dtrain and mpirun paths, and small assertions.
set -eu
: "${DTRAIN:?run through make check}"
: "${MPIRUN:=mpirun}"
: "${top_srcdir:=.}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Tests run one BLAS thread per rank so results do not depend on the host.
export OPENBLAS_NUM_THREADS=1
PYTHON=${PYTHON:-python3}
FMNIST=/usr/share/datasets/fashion-mnist
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/dtrain-test.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
cd "$SCRATCH"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

need_fmnist() {
	if [ ! -f "$FMNIST/train-images-idx3-ubyte.gz" ]; then
		echo "SKIP: $FMNIST missing (apt-get install dataset-fashion-mnist)"
		exit 77
	fi
}

# mpirun with the flags every test wants.
mpi() {
	np=$1
	shift
	timeout 300 "$MPIRUN" -np "$np" --oversubscribe --bind-to none "$@"
}

# expect_fail CODE PATTERN CMD...: CMD exits CODE and its stderr matches
# PATTERN (grep -E).
expect_fail() {
	code=$1 pattern=$2
	shift 2
	set +e
	"$@" >"$SCRATCH/out" 2>"$SCRATCH/err"
	rc=$?
	set -e
	if [ "$rc" -ne "$code" ]; then
		cat "$SCRATCH/err" >&2
		fail "$* exited $rc, expected $code"
	fi
	if ! grep -Eq -- "$pattern" "$SCRATCH/err"; then
		cat "$SCRATCH/err" >&2
		fail "$*: stderr does not match /$pattern/"
	fi
}

# column RUN KEY: the KEY column of run dir RUN's metrics.jsonl, one
# value per line that has it, exactly as written (repr).
column() {
	"$PYTHON" -c '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if sys.argv[2] in o:
        print(repr(o[sys.argv[2]]))
' "$1/metrics.jsonl" "$2"
}

# Loss column of a run's metrics.jsonl, one value per logged step.
losses() {
	column "$1" loss
}

# compare_losses A B RELTOL: the loss sequences of run dirs A and B agree.
compare_losses() {
	"$PYTHON" - "$1" "$2" "$3" <<'PY'
import json, sys
def losses(d):
    return [json.loads(l)["loss"] for l in open(d + "/metrics.jsonl")
            if "\"loss\"" in l]
a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if len(a) != len(b) or not a:
    sys.exit("different number of logged steps: %d vs %d" % (len(a), len(b)))
for i, (x, y) in enumerate(zip(a, b)):
    if abs(x - y) > tol * abs(x):
        sys.exit("step %d: loss %r vs %r (rel %.3g > %g)"
                 % (i, x, y, abs(x - y) / abs(x), tol))
print("%d losses agree to %g relative" % (len(a), tol))
PY
}

# A small MLP job on Fashion-MNIST for tests: few steps, logged every step.
write_small_job() {
	cat >"$1" <<YAML
name: small
seed: 7
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 64, activation: relu}
    - {type: dense, units: 32, activation: tanh}
    - {type: dense, units: 10}
  loss: softmax_cross_entropy
train:
  global_batch: 96
  grad_accum_steps: 2
  steps: 20
  optimizer: sgd
  lr: 0.05
  momentum: 0.9
log:
  every_steps: 1
YAML
}

# A job that checkpoints: Adam with a warmup, so the optimizer state and
# the schedule position both matter on resume. Epochs of 40 steps (a
# global batch of 1500 from 60000 samples) put epoch boundaries in reach.
write_ckpt_job() {
	cat >"$1" <<YAML
name: ckpt
seed: 11
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 32, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 1500
  grad_accum_steps: 3
  steps: ${2:-120}
  optimizer: adam
  lr: 0.003
  schedule: {kind: cosine, warmup_steps: 15}
checkpoint:
  every_steps: 25
  keep_last: 2
log:
  every_steps: 5
YAML
}

# export_of RUN_DIR OUT: the run's newest parameters as one file.
export_of() {
	"$DTRAIN" export -o "$2" "$1" >/dev/null
}

# has_ckpt RUN_DIR: true once the run has written any checkpoint. A test
# that waits for one must not name a step: keep_last prunes it, and a
# poll that wakes late (CI saw one) would never find it.
has_ckpt() {
	for d in "$1"/checkpoints/step-*; do
		[ -d "$d" ] && return 0
	done
	return 1
}

# t10k_job NAME: the start of a job NAME on the Fashion-MNIST test
# images, to the model's list of layers, on stdout.
t10k_job() {
	cat <<YAML
name: $1
data:
  train:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
YAML
}

# write_tiny_job FILE: a one-step job of a single dense layer on the
# Fashion-MNIST test images (need_fmnist first).
write_tiny_job() {
	{
		t10k_job tiny
		cat <<YAML
    - {type: dense, units: 10}
train: {global_batch: 16, steps: 1, optimizer: sgd, lr: 0.1}
YAML
	} >"$1"
}

# write_mlp6_job FILE NAME: the tiny MLP of the exactness tests of the
# optimizer-state layouts (ckpt-shards.sh, zero.sh): 784 -> 6 -> 10 (4780
# trained floats), AdamW with clip_norm on, 12 steps of 32 samples in
# micro-batches of 8 (the exact sum), a loss line each step, on the
# Fashion-MNIST test images (need_fmnist first).
write_mlp6_job() {
	{
		t10k_job "$2"
		cat <<YAML
    - {type: dense, units: 6, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 32
  micro_batch: 8
  steps: 12
  optimizer: adamw
  lr: 0.01
  clip_norm: 0.5
log: {every_steps: 1}
seed: 5
YAML
	} >"$1"
}

# make_cgroup BYTES: a new memory cgroup limited to BYTES (v2, or v1
# under /sys/fs/cgroup/memory; no swap where it can be set), its
# directory in CG and the file that takes a process in CG_TASKS, and CG
# added to CGS (remove_cgroups); returns 1 when none can be made (not
# root, or no writable memory controller).
CG=
CGS=
make_cgroup() {
	name=dtrain-test-$$-$1
	rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
	if [ -n "$rel" ] && [ -f "/sys/fs/cgroup$rel/cgroup.controllers" ] &&
	   [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		CG=/sys/fs/cgroup${rel%/}/$name
		mkdir "$CG" 2>/dev/null || return 1
		CGS="$CGS $CG"
		echo "$1" >"$CG/memory.max" 2>/dev/null || return 1
		echo 0 >"$CG/memory.swap.max" 2>/dev/null || true
		CG_TASKS=$CG/cgroup.procs
		return 0
	fi
	rel=$(sed -n 's/^[0-9]*:\([^:]*,\)*memory\(,[^:]*\)*:\(.*\)$/\3/p' /proc/self/cgroup)
	[ -n "$rel" ] && [ -d /sys/fs/cgroup/memory ] || return 1
	CG=/sys/fs/cgroup/memory${rel%/}/$name
	mkdir "$CG" 2>/dev/null || return 1
	CGS="$CGS $CG"
	echo "$1" >"$CG/memory.limit_in_bytes" 2>/dev/null || return 1
	CG_TASKS=$CG/tasks
}

# remove_cgroups: removes the cgroups make_cgroup made (for the test's
# EXIT trap, with its processes gone), then the scratch directory.
remove_cgroups() {
	for c in $CGS; do
		rmdir "$c" 2>/dev/null || true
	done
	rm -rf "$SCRATCH"
}

# in_cgroup TASKS CMD...: CMD run inside the cgroup whose tasks file
# (CG_TASKS of make_cgroup) is TASKS.
in_cgroup() {
	cg_tasks=$1
	shift
	sh -c 'echo $$ >"$0" && exec "$@"' "$cg_tasks" "$@"
}

# need_torch: sets TORCH_PY to a python3 that imports torch and numpy
# ($PYTHON, else /usr/bin/python3), or skips the test (exit 77) saying so.
need_torch() {
	TORCH_PY=
	for p in "$PYTHON" /usr/bin/python3; do
		if "$p" -c 'import torch, numpy' 2>/dev/null; then
			TORCH_PY=$p
			return 0
		fi
	done
	echo "SKIP: import torch fails in $PYTHON and /usr/bin/python3" \
		"(apt-get install python3-torch)"
	exit 77
}

# bf16_layouts LOSSES JOB: JOB under train.precision: bf16 on 2 threads,
# on 2 data-parallel ranks (train.grad_accum_steps 1: each rank has the
# one rank's micro-batch of a job of 2 accumulation steps) and on 2
# pipeline stages gives the losses in file LOSSES, a one-rank bf16 run's
# (losses RUN_DIR), exactly.
# shellcheck disable=SC2086 # $bfs is two words
bf16_layouts() {
	bfs="--set train.precision=bf16"
	"$DTRAIN" run -q --run-dir th $bfs --set parallel.blas_threads=2 "$2"
	losses th | cmp -s "$1" - || fail "bf16: 2 threads differ from one"
	mpi 2 "$DTRAIN" run -q --run-dir dp $bfs \
		--set train.grad_accum_steps=1 "$2"
	losses dp | cmp -s "$1" - ||
		fail "bf16: 2 data-parallel ranks differ from one"
	mpi 2 "$DTRAIN" run -q --run-dir pp $bfs \
		--set parallel.strategy=model \
		--set parallel.pipeline_parallel=2 "$2"
	losses pp | cmp -s "$1" - ||
		fail "bf16: 2 pipeline stages differ from one rank"
}

# stop_resume_tp2 REF: a 2-rank run of "$JOB" $SET $TP2 (the caller's)
# stopped at step 3 (DTRAIN_TEST_SIGNAL_AT_STEP, exit 3) and resumed in
# run dir stop ends with run dir REF's 6 loss lines and exported
# parameters, byte for byte (tp-gpt.sh, tp-tied.sh).
stop_resume_tp2() {
	set +e
	# shellcheck disable=SC2086
	DTRAIN_TEST_SIGNAL_AT_STEP=3 mpi 2 -x DTRAIN_TEST_SIGNAL_AT_STEP \
		"$DTRAIN" run -q --run-dir stop "$JOB" $SET $TP2 \
		>/dev/null 2>stop.err
	rc=$?
	set -e
	[ "$rc" -eq 3 ] ||
		{ cat stop.err >&2; fail "stop: exited $rc, expected 3"; }
	mpi 2 "$DTRAIN" resume -q stop >/dev/null 2>stop.err2 ||
		{ cat stop.err2 >&2; fail "resume"; }
	grep -q "resuming from .*step-000000003" stop.err2 ||
		{ cat stop.err2 >&2; fail "did not resume from step 3"; }
	losses "$1" >a.losses
	losses stop >b.losses
	[ "$(wc -l <a.losses)" -eq 6 ] || fail "$1: not 6 loss lines"
	cmp a.losses b.losses || fail "tp 2: resumed loss lines differ"
	export_of "$1" "$1.st"
	export_of stop stop.st
	cmp "$1.st" stop.st || fail "tp 2: resumed parameters differ"
}
