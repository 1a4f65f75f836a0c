#!/bin/sh
# SPDX-License-Identifier: MIT
# Model-parallel layouts keep what data parallelism promises:
# - a pp2 x dp2 run stopped by SIGTERM and resumed under the same layout
#   ends with parameters byte-identical to the uninterrupted run and the
#   same loss lines (GPipe and 1F1B; the char-GPT job with dropout too);
# - with exact gradient accumulation a pp2 x dp2 run computes the one-rank
#   gradient, so its exported parameters equal a one-rank run's bit for
#   bit, and the checkpoint holds the whole model gathered from the stages;
# - export and sample work on the run directory of any layout;
# - evaluation through the pipeline gives the one-rank eval loss;
# - the bytes each rank moved per step, counted by dtrain into
#   summary.json, equal what `dtrain plan --json` predicted for the layout;
# - layouts that cannot work are refused by run with exit 2 and a reason.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
HY="--set parallel.strategy=hybrid --set parallel.pipeline_parallel=2 --set parallel.data_parallel=2"

write_ckpt_job job.yaml 60
for sched in gpipe 1f1b; do
	L="$HY --set parallel.schedule=$sched"
	mpi 4 "$DTRAIN" run -q --run-dir full-$sched job.yaml $L >/dev/null
	export_of full-$sched full-$sched.st
	for stop in 10 37; do
		d=stop-$sched-$stop
		set +e
		DTRAIN_TEST_SIGNAL_AT_STEP=$stop mpi 4 -x DTRAIN_TEST_SIGNAL_AT_STEP \
			"$DTRAIN" run -q --run-dir $d job.yaml $L >/dev/null 2>$d.err
		rc=$?
		set -e
		[ "$rc" -eq 3 ] || { cat $d.err >&2; fail "$d: exited $rc, expected 3"; }
		mpi 4 "$DTRAIN" resume -q $d >/dev/null 2>$d.err2
		grep -q "resuming from .*step $stop" $d.err2 || fail "$d: did not resume from $stop"
		export_of $d $d.st
		cmp full-$sched.st $d.st || fail "$d: parameters differ from the uninterrupted run"
		losses full-$sched >a.losses
		losses $d >b.losses
		cmp a.losses b.losses || fail "$d: loss lines differ"
		echo "ok: $d"
	done
done
# The one-rank run with the same micro-batch (3 per rank x 2 ranks = 6 of
# 250 samples): the same bits.
"$DTRAIN" run -q --run-dir one job.yaml --set train.grad_accum_steps=6 >/dev/null
export_of one one.st
cmp one.st full-gpipe.st || fail "pp2 x dp2 parameters differ from one rank's"
cmp one.st full-1f1b.st || fail "pp2 x dp2 (1F1B) parameters differ from one rank's"
echo "ok: pp2 x dp2 == np=1 bit for bit"

# Evaluation through the pipeline, with an eval set.
cat >>job.yaml <<YAML
eval:
  every_steps: 20
YAML
"$PYTHON" - job.yaml "$FMNIST" <<'PY'
import sys
path, d = sys.argv[1], sys.argv[2]
text = open(path).read().replace("data:\n", "data:\n  eval:\n    images: %s/t10k-images-idx3-ubyte.gz\n    labels: %s/t10k-labels-idx1-ubyte.gz\n" % (d, d), 1)
open(path, "w").write(text)
PY
"$DTRAIN" run -q --run-dir ev1 job.yaml --set train.steps=20 --set train.grad_accum_steps=6 >/dev/null
mpi 4 "$DTRAIN" run -q --run-dir ev4 job.yaml --set train.steps=20 $HY >/dev/null
"$PYTHON" - ev1 ev4 <<'PY'
import json, sys
a, b = (json.load(open(d + "/summary.json")) for d in sys.argv[1:])
assert a["eval_loss"] is not None
assert abs(a["eval_loss"] - b["eval_loss"]) <= 1e-6 * a["eval_loss"], (a["eval_loss"], b["eval_loss"])
assert a["eval_accuracy"] == b["eval_accuracy"], (a["eval_accuracy"], b["eval_accuracy"])
print("ok: eval through the pipeline", b["eval_loss"], b["eval_accuracy"])
PY

# char-GPT: dropout, residuals across the cut, 1F1B; stop, resume, sample.
[ -f /usr/share/games/fortunes/cookie ] || { echo "SKIP: fortunes missing"; exit 77; }
G="$top_srcdir/jobs/char-gpt.yaml"
GS="--set train.steps=12 --set train.global_batch=8 --set train.micro_batch=2 --set train.schedule.warmup_steps=3 --set log.every_steps=1 --set eval.every_steps=0 --set checkpoint.every_steps=4 --set parallel.schedule=1f1b"
mpi 4 "$DTRAIN" run -q --run-dir gfull "$G" $GS $HY >/dev/null
set +e
DTRAIN_TEST_SIGNAL_AT_STEP=6 mpi 4 -x DTRAIN_TEST_SIGNAL_AT_STEP \
	"$DTRAIN" run -q --run-dir gstop "$G" $GS $HY >/dev/null 2>gstop.err
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat gstop.err >&2; fail "gpt stop exited $rc"; }
mpi 4 "$DTRAIN" resume -q gstop >/dev/null 2>&1
export_of gfull gfull.st
export_of gstop gstop.st
cmp gfull.st gstop.st || fail "char-gpt pp2 x dp2: resumed parameters differ"
"$DTRAIN" sample --prompt "The " -n 30 --seed 3 gstop >s.txt
[ "$(head -c 4 s.txt)" = "The " ] || fail "sample output does not start with the prompt"
[ "$(wc -c <s.txt)" -ge 34 ] || fail "sample output too short"
echo "ok: char-gpt pp2 x dp2 resume, export, sample"

# Bytes moved per step: plan --json against what the run counted, for
# pipeline, tensor-parallel and hybrid grids.
check_bytes() {
	name=$1 np=$2
	shift 2
	"$DTRAIN" plan --dry-run --json -n "$np" "$@" >$name.plan.json
	mpi "$np" "$DTRAIN" run -q --run-dir $name "$@" >/dev/null
	"$PYTHON" - $name.plan.json $name/summary.json <<'PY'
import json, sys
plan, summ = (json.load(open(p)) for p in sys.argv[1:])
keys = ("p2p_bytes", "grad_allreduce_bytes", "tp_allreduce_bytes")
want = {r["rank"]: r["bytes_per_step"] for r in plan["ranks"]}
got = {r["rank"]: r for r in summ["bytes_per_step"]}
assert sorted(want) == sorted(got), (sorted(want), sorted(got))
for rank in want:
    for k in keys:
        assert want[rank][k] == got[rank][k], (sys.argv[2], rank, k, want[rank][k], got[rank][k])
print("ok: bytes", sys.argv[2], [tuple(got[r][k] for k in keys) for r in sorted(got)])
PY
}
check_bytes b-hy 4 "$G" $GS $HY
check_bytes b-tp 4 "$G" $GS --set parallel.strategy=hybrid --set parallel.tensor_parallel=2 --set parallel.pipeline_parallel=2 --set parallel.data_parallel=1
check_bytes b-cnn 4 "$top_srcdir/jobs/fashion-mnist-cnn.yaml" --set train.steps=3 --set train.grad_accum_steps=2 --set eval.every_steps=0 --set parallel.strategy=model --set parallel.pipeline_parallel=2 --set parallel.tensor_parallel=2
check_bytes b-dp 2 job.yaml --set train.steps=20
check_bytes b-dptp 4 job.yaml --set train.steps=20 --set parallel.strategy=hybrid --set parallel.tensor_parallel=2 --set parallel.data_parallel=2

# Layouts that cannot work: refused before anything runs.
expect_fail 2 'pipeline_parallel.*8 stages.*4 nodes|more stages than' \
	mpi 8 "$DTRAIN" run --run-dir bad1 job.yaml --set parallel.strategy=model --set parallel.pipeline_parallel=8
[ ! -e bad1 ] || fail "a refused layout left a run directory"
expect_fail 2 'tensor_parallel 3 does not divide' \
	mpi 3 "$DTRAIN" run --run-dir bad2 job.yaml --set parallel.strategy=model --set parallel.tensor_parallel=3
expect_fail 2 'parallel' \
	mpi 4 "$DTRAIN" run --run-dir bad3 job.yaml --set parallel.strategy=hybrid --set parallel.pipeline_parallel=3
