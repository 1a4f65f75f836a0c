#!/bin/sh
# SPDX-License-Identifier: MIT
# tcp-eager.sh - Open MPI's TCP eager limit that each rank of dtrain run
# sets before MPI starts (parallel.tcp_eager_kb, plan/sync_plan.h's
# dt_plan_tcp_eager, comm/comm.h's dt_comm_mpi_tcp_eager):
# - the setter reaches Open MPI (mca_probe reads the three variables
#   back through MPI_T), and a user's value of any of the three in the
#   environment wins: nothing is set then;
# - the job 784-512-256-10 (jobs/fashion-mnist-mlp.yaml's model) at 2
#   ranks sums its float gradient in one bucket of 535818 floats, 2143272
#   bytes (1 MiB buckets cut at whole tensors from the head down: 2570,
#   131328, 401920 floats close only at the end), so auto chooses the
#   power of two at or above 2143272 + 4096: 4194304; summary.json's
#   tcp_eager_bytes and the run's first lines say so, and with
#   parallel.tcp_eager_kb 0 it is 0 (Open MPI's own);
# - with the ranks joined by TCP alone (--mca btl tcp,self), auto and 0
#   give the same losses and the same trained parameters and optimizer
#   state, byte for byte.
# On the code before summary.json had no tcp_eager_bytes: the test fails
# there.
. "${top_srcdir}/tests/integration/lib.sh"
PROBE=$(dirname "$DTRAIN")/tests/integration/mca_probe
unset OMPI_MCA_btl_tcp_eager_limit OMPI_MCA_btl_tcp_rndv_eager_limit \
	OMPI_MCA_btl_tcp_max_send_size MCA_PROBE_TCP_EAGER
VARS="btl_tcp_eager_limit btl_tcp_rndv_eager_limit btl_tcp_max_send_size"
# probe NAME [MPIRUN-OPTIONS]: rank 0's line into NAME.out, on 2 ranks.
probe() {
	n=$1
	shift
	mpi 2 "$@" "$PROBE" $VARS >"$n.out" 2>"$n.err" ||
		{ cat "$n.out" "$n.err" >&2; fail "mca_probe ($n)"; }
}
probe own
if grep -q ' btl_tcp_eager_limit missing' own.out; then
	echo "no TCP transport in this Open MPI: the probe part skipped"
else
	probe set -x MCA_PROBE_TCP_EAGER=4194304
	grep -qx 'set 4194304 btl_tcp_eager_limit 4194304 btl_tcp_rndv_eager_limit 4194304 btl_tcp_max_send_size 4194304' set.out ||
		{ cat own.out set.out >&2; fail "the three TCP settings did not reach Open MPI"; }
	# A user's eager limit: nothing set, the other two Open MPI's own.
	probe user -x MCA_PROBE_TCP_EAGER=4194304 \
		-x OMPI_MCA_btl_tcp_eager_limit=131072
	want="set -1 btl_tcp_eager_limit 131072 $(cut -d' ' -f3- own.out)"
	[ "$(cat user.out)" = "$want" ] ||
		{ cat own.out user.out >&2; fail "the user's eager limit did not win (expected: $want)"; }
	probe mca -x MCA_PROBE_TCP_EAGER=4194304 \
		--mca btl_tcp_max_send_size 262144
	grep -q '^set -1 .* btl_tcp_max_send_size 262144$' mca.out ||
		{ cat mca.out >&2; fail "mpirun --mca: the user's value did not win"; }
fi

need_fmnist
cat >job.yaml <<YAML
name: eager
seed: 5
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  scale: 0.00392156862745098
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 512, activation: relu}
    - {type: dense, units: 256, activation: relu}
    - {type: dense, units: 10}
  loss: softmax_cross_entropy
train:
  global_batch: 96
  steps: 6
  optimizer: adam
  lr: 0.001
parallel:
  blas_threads: 1
log:
  every_steps: 1
YAML
# eager RUN WANT: RUN's summary.json has tcp_eager_bytes WANT (JSON).
eager() {
	"$PYTHON" - "$1/summary.json" "$2" <<'PY' || fail "$1: tcp_eager_bytes"
import json, sys
s = json.load(open(sys.argv[1]))
if "tcp_eager_bytes" not in s or s["tcp_eager_bytes"] != json.loads(sys.argv[2]):
    sys.exit("%s: tcp_eager_bytes %r, expected %s" % (sys.argv[1], s.get("tcp_eager_bytes", "(absent)"), sys.argv[2]))
PY
}
tcp="--mca btl tcp,self"
mpi 2 $tcp "$DTRAIN" run --run-dir auto job.yaml 2>auto.err ||
	{ cat auto.err >&2; fail "run with auto"; }
mpi 2 $tcp "$DTRAIN" run -q --run-dir off job.yaml \
	--set parallel.tcp_eager_kb=0 || fail "run with tcp_eager_kb 0"
eager auto 4194304
eager off 0
grep -q '^dtrain: TCP eager limit: 4096 KiB (auto: the largest gradient bucket, 2093.0 KiB, fits)$' auto.err ||
	{ cat auto.err >&2; fail "auto: the first lines do not say the limit"; }
losses auto >auto.l
losses off >off.l
[ "$(wc -l <auto.l)" -eq 6 ] || fail "auto: expected 6 logged steps"
cmp auto.l off.l || fail "the losses differ between auto and 0"
for f in params.safetensors rank-00000.safetensors rank-00001.safetensors; do
	cmp "auto/checkpoints/step-000000006/$f" "off/checkpoints/step-000000006/$f" ||
		fail "auto and 0: $f differs"
done
# A value in the environment: dtrain sets nothing and says so.
mpi 2 -x OMPI_MCA_btl_tcp_eager_limit=131072 "$DTRAIN" run --run-dir env \
	job.yaml --set train.steps=1 2>env.err ||
	{ cat env.err >&2; fail "run with the environment's limit"; }
eager env null
grep -q "^dtrain: TCP eager limit: the environment's" env.err ||
	{ cat env.err >&2; fail "env: the first lines do not say whose limit"; }
echo "ok: $(cat set.out 2>/dev/null); auto 4194304, 0 and the environment's as said; the same bits"
