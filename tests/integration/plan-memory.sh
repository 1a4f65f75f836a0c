#!/bin/sh
# SPDX-License-Identifier: MIT
# The plan is the contract: the peak resident memory of a real run (GNU
# time's maximum RSS) is within 25% of the plan's per-rank total, for the
# shipped jobs (a few steps each).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
[ -x /usr/bin/time ] || { echo "SKIP: /usr/bin/time missing (apt-get install time)"; exit 77; }
for job in fashion-mnist-mlp fashion-mnist-cnn char-gpt; do
	f="$top_srcdir/jobs/$job.yaml"
	[ -f "$f" ] || continue
	"$DTRAIN" plan --dry-run --json "$f" >plan.json
	/usr/bin/time -f '%M' -o rss "$DTRAIN" run -q --run-dir r-$job \
		--set train.steps=5 --set train.schedule.warmup_steps=1 \
		--set eval.every_steps=0 "$f" >/dev/null
	"$PYTHON" - plan.json rss "$job" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))["memory_per_rank"]["total"]
rss = int(open(sys.argv[2]).read().split()[-1]) * 1024
ratio = rss / plan
print("%s: plan %.1f MiB, peak RSS %.1f MiB (%.2f)" % (sys.argv[3], plan / 2**20, rss / 2**20, ratio))
assert 0.75 <= ratio <= 1.25, ratio
PY
done
# A pipeline: each rank's peak RSS against the plan's total for that rank
# (its stage's parameters, gradients, optimizer state and activations of
# the micro-batches in flight; the checkpoint at the end is written in
# shards, so rank 0 gathers nothing for it).
f="$top_srcdir/jobs/char-gpt.yaml"
L="--set parallel.strategy=model --set parallel.pipeline_parallel=2 --set parallel.schedule=1f1b --set train.grad_accum_steps=4 --set train.global_batch=32"
"$DTRAIN" plan --dry-run --json -n 2 "$f" $L >plan2.json
mpi 2 sh -c '/usr/bin/time -f "%M" -o rss.$OMPI_COMM_WORLD_RANK "$@"' sh \
	"$DTRAIN" run -q --run-dir r-pp2 --set train.steps=5 \
	--set train.schedule.warmup_steps=1 --set eval.every_steps=0 "$f" $L \
	>/dev/null
"$PYTHON" - plan2.json <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
for r in plan["ranks"]:
    want = r["memory"]["total"]
    rss = int(open("rss.%d" % r["rank"]).read().split()[-1]) * 1024
    ratio = rss / want
    print("pp2 rank %d (stage %d): plan %.1f MiB, peak RSS %.1f MiB (%.2f)"
          % (r["rank"], r["stage"], want / 2**20, rss / 2**20, ratio))
    assert 0.75 <= ratio <= 1.25, ratio
PY
