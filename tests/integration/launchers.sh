#!/bin/sh
# SPDX-License-Identifier: MIT
# What a user of mpirun, srun and scripts relies on: `dtrain --version`
# names the licence and the build; the exit status of `run -n` is the
# ranks' (3 after a clean stop, not mpirun's); --mpi-args reaches mpirun,
# and a hostfile it (or the environment) names that cannot be read ends
# the command before mpirun starts;
# a launcher's rank variables inherited into a singleton do not silence
# its errors, while a real launch's do; -n inside srun is refused as
# inside mpirun; plan --print-job prints the resolved job.
. "${top_srcdir}/tests/integration/lib.sh"

# --version: every field, with values from the libraries themselves.
"$DTRAIN" --version >version.txt
head -n 1 version.txt | grep -Eq '^dtrain [0-9]+\.[0-9]+\.[0-9]+$' ||
	fail "first line: $(head -n 1 version.txt)"
grep -q '^License: MIT License; see COPYING$' version.txt || fail "no licence"
for f in BLAS MPI mpirun libyaml zlib libcurl json-c compiler sanitizers \
	debug werror; do
	grep -q "^$f: ." version.txt || fail "--version has no $f line"
done
grep -Eq '^BLAS: OpenBLAS [0-9]+\.[0-9]+' version.txt || fail "BLAS: $(grep ^BLAS version.txt)"
grep -Eq '^MPI: .*\(MPI [0-9]\.[0-9]\)$' version.txt || fail "MPI: $(grep ^MPI: version.txt)"
if command -v ompi_info >/dev/null 2>&1; then
	v=$(ompi_info --parsable | sed -n 's/^ompi:version:full://p')
	grep -q "^MPI: Open MPI v$v" version.txt || fail "MPI line lacks Open MPI $v"
fi
zv=$("$PYTHON" -c 'import zlib; print(zlib.ZLIB_RUNTIME_VERSION)')
grep -qx "zlib: $zv" version.txt || fail "zlib: want $zv, got $(grep ^zlib version.txt)"
expect_fail 2 '^dtrain: --version takes no arguments, found "extra"$' \
	"$DTRAIN" --version extra
grep -Eqx 'sanitizers: (yes|no)' version.txt || fail "sanitizers is not yes or no"
# The configure switch, as config.h records it.
cfg="$(dirname "$DTRAIN")/config.h"
if [ -f "$cfg" ]; then
	s=$(sed -n 's/^#define DT_BUILD_SANITIZERS "\(.*\)"/\1/p' "$cfg")
	grep -qx "sanitizers: $s" version.txt || fail "sanitizers differs from config.h ($s)"
fi

# plan --print-job: defaults, --set and repeat blocks resolved, and what
# it prints is a job that prints itself again unchanged.
cat >rep.yaml <<YAML
name: rep
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {repeat: 2, name: blk, layers: [{type: dense, units: 16, activation: relu}]}
    - {type: dense, units: 10}
train:
  global_batch: 32
  steps: 5
YAML
"$DTRAIN" plan --print-job --set train.lr=0.25 rep.yaml >resolved.yaml
grep -q '^  lr: 0.25$' resolved.yaml || fail "--set not applied"
grep -q '^  optimizer: sgd$' resolved.yaml || fail "default optimizer missing"
[ "$(grep -c 'name: "blk\.[01]\.dense0"' resolved.yaml)" -eq 2 ] || fail "repeat block not expanded"
"$DTRAIN" plan --print-job resolved.yaml >again.yaml
diff resolved.yaml again.yaml || fail "the printed job does not print itself back"
expect_fail 2 'train.lr: must be > 0' "$DTRAIN" plan --print-job --set train.lr=-1 rep.yaml
# -n checks the layout as run -n would (32 = 3 x 10 + 2 does not split);
# a plan's options are refused, not left out.
expect_fail 2 'train.global_batch: .* data-parallel degree 3' \
	"$DTRAIN" plan --print-job -n 3 --set train.lr=0.25 rep.yaml
"$DTRAIN" plan --print-job -n 4 --set train.lr=0.25 rep.yaml |
	cmp - resolved.yaml || fail "--print-job -n 4 changed the job"
for o in --json '--link 1gbit,1ms' '--gflops 5 --link 1gbit,1ms'; do
	# shellcheck disable=SC2086
	expect_fail 2 "--print-job prints the job, not a plan" \
		"$DTRAIN" plan --print-job $o --set train.lr=0.25 rep.yaml
done

# A bad job refused before MPI starts: rank variables of a real launch
# keep the other ranks quiet, inherited ones in a singleton do not.
printf 'name: x\ntrain:\n  lr: fast\n' >bad.yaml
quiet_or_not() {
	want=$1
	shift
	set +e
	env "$@" "$DTRAIN" run bad.yaml >o 2>e
	rc=$?
	set -e
	[ $rc -eq 2 ] || fail "$*: exit $rc, expected 2"
	if [ "$want" = speaks ]; then
		grep -q 'train.lr' e || fail "$*: the error was silenced"
	else
		[ ! -s e ] || fail "$*: rank 1 printed: $(cat e)"
	fi
}
quiet_or_not speaks SLURM_PROCID=1 SLURM_NTASKS=2
quiet_or_not speaks PMI_RANK=1
quiet_or_not speaks OMPI_COMM_WORLD_RANK=1
quiet_or_not speaks PMIX_RANK=1 SLURM_NTASKS=1
quiet_or_not quiet OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2
quiet_or_not quiet PMI_RANK=1 PMI_SIZE=2
quiet_or_not quiet PMIX_RANK=1 SLURM_STEP_NUM_TASKS=2

need_fmnist
write_small_job small.yaml
# -n inside a parallel launch is refused, naming the launcher.
expect_fail 2 'ranks that srun started' env SLURM_STEP_ID=0 \
	SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=0 "$DTRAIN" run -n 2 small.yaml
expect_fail 2 'ranks that an MPI launcher \(PMI\) started' env PMIX_RANK=0 \
	"$DTRAIN" run -n 2 small.yaml
expect_fail 2 'ranks that mpirun started' env OMPI_COMM_WORLD_SIZE=2 \
	OMPI_COMM_WORLD_RANK=0 "$DTRAIN" run --max-restarts 1 small.yaml
[ ! -e runs ] || fail "a refused launch wrote runs/"

# The exit status is the ranks': a stop asked on rank 0 at step 3 ends
# with a checkpoint on every rank and 3 (also through --max-restarts).
set +e
DTRAIN_TEST_SIGNAL_AT_STEP=3 timeout 300 "$DTRAIN" run -q -n 2 \
	--run-dir s1 small.yaml >s1.out 2>s1.err
rc=$?
set -e
[ $rc -eq 3 ] || { cat s1.err >&2; fail "run -n 2 stopped at step 3 exited $rc"; }
[ -d s1/checkpoints/step-000000003 ] || fail "no checkpoint at step 3"
set +e
DTRAIN_TEST_SIGNAL_AT_STEP=3 timeout 300 "$DTRAIN" run -q -n 2 \
	--max-restarts 1 --run-dir s2 small.yaml >s2.out 2>s2.err
rc=$?
set -e
[ $rc -eq 3 ] || { cat s2.err >&2; fail "--max-restarts: exit $rc, expected 3"; }
! grep -q restarting s2.err || fail "a stopped job was restarted"
# mpirun's own failure stays a failure: an option it does not know.
set +e
timeout 300 "$DTRAIN" run -q -n 2 --mpi-args "--no-such-mpirun-option" \
	--run-dir s3 small.yaml >s3.out 2>s3.err
rc=$?
set -e
[ $rc -ne 0 ] && [ $rc -ne 3 ] || fail "an unknown mpirun option: exit $rc"
grep -q -- '--no-such-mpirun-option' s3.err || { cat s3.err >&2; fail "mpirun did not get --mpi-args"; }
expect_fail 2 'mpi-args goes with -n' "$DTRAIN" run --mpi-args "-x A=1" small.yaml
# A hostfile that cannot be read is refused before mpirun starts, exit 1,
# naming the file and what named it, with no run directory and no
# restart; in three spellings and from Open MPI's variable.
for form in "--hostfile nohosts" "--hostfile=nohosts" "-machinefile nohosts"; do
	expect_fail 1 "^dtrain: nohosts: cannot read the hostfile that --mpi-args names: No such file or directory\$" \
		"$DTRAIN" run -q -n 2 --max-restarts 2 --run-dir hf \
		--mpi-args "-x A=1 $form" small.yaml
	grep -q restart "$SCRATCH/err" && fail "$form: restarted: $(cat "$SCRATCH/err")"
	[ ! -e hf ] || fail "$form: a run directory was made"
done
expect_fail 1 \
	"^dtrain: $PWD/nohosts: cannot read the hostfile that OMPI_MCA_orte_default_hostfile names" \
	env OMPI_MCA_orte_default_hostfile="$PWD/nohosts" \
	"$DTRAIN" run -q -n 2 --run-dir hf small.yaml
[ ! -e hf ] || fail "a run directory was made"
# --mpi-args reaches mpirun: its --output-filename writes one directory
# per rank, and -x passes a variable on.
timeout 300 "$DTRAIN" run -q -n 2 --mpi-args "--output-filename od -x FOO=1" \
	--run-dir s4 small.yaml >s4.out 2>s4.err ||
	{ cat s4.err >&2; fail "run -n 2 --mpi-args failed"; }
[ -f od/1/rank.0/stderr ] && [ -f od/1/rank.1/stderr ] ||
	fail "--mpi-args --output-filename od made no per-rank files"
grep -q '^small: 20 steps' s4.out || fail "no final line with --mpi-args"
