#!/bin/sh
# SPDX-License-Identifier: MIT
# Bucketed gradient sums started during backward (parallel.overlap) give
# the same bits as one blocking sum after it, at 2 ranks, where a sum is
# one addition: data-parallel with the exact (double) accumulator, with
# the float sum, and tensor-parallel 2 (buckets then zero the replicated
# gradients bucket by bucket); buckets of 0.01 MiB cut the small MLP's
# six tensors into several buckets, and a tensor larger than a bucket.
# With train.clip_norm the gradient norms (taken bucket by bucket as the
# sums finish, with overlap) and so the clipped updates are the same bits
# too: data-parallel, over 2 pipeline stages x 2 data-parallel ranks, with
# the bf16 wire and tensor-parallel 2.
# The bf16 wire moves 2 bytes a gradient value (summary.json and plan
# agree) and changes the losses, but by less than 5e-3 relative (7e-4
# measured).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_small_job job.yaml
same() {
	losses "$1" >"$1.l"
	losses "$2" >"$2.l"
	[ "$(wc -l <"$1.l")" -eq 20 ] || fail "$1: expected 20 logged steps"
	cmp "$1.l" "$2.l" || fail "$1 and $2 differ"
}
# same_clipped A B CLIP: as same, and the norms too, which exceed CLIP
# in some step (so the clipping ran).
same_clipped() {
	same "$1" "$2"
	column "$1" grad_norm >"$1.n"
	column "$2" grad_norm >"$2.n"
	[ "$(wc -l <"$1.n")" -eq 20 ] || fail "$1: expected 20 grad_norm values"
	cmp "$1.n" "$2.n" || fail "$1 and $2: the gradient norms differ"
	awk -v c="$3" '$1 > c { n++ } END { exit !n }' "$1.n" ||
		fail "$1: no step's gradient norm is above clip_norm $3"
}
on="--set parallel.overlap=true --set parallel.bucket_mb=0.01"
off="--set parallel.overlap=false"
mpi 2 "$DTRAIN" run -q --run-dir exact-on job.yaml $on
mpi 2 "$DTRAIN" run -q --run-dir exact-off job.yaml $off
same exact-on exact-off
a1="--set train.grad_accum_steps=1"
mpi 2 "$DTRAIN" run -q --run-dir float-on job.yaml $a1 $on
mpi 2 "$DTRAIN" run -q --run-dir float-off job.yaml $a1 $off
same float-on float-off
tp="--set parallel.strategy=model --set parallel.tensor_parallel=2"
mpi 2 "$DTRAIN" run -q --run-dir tp-on job.yaml $a1 $tp $on
mpi 2 "$DTRAIN" run -q --run-dir tp-off job.yaml $a1 $tp $off
same tp-on tp-off
clip="--set train.clip_norm=0.5"
mpi 2 "$DTRAIN" run -q --run-dir clip-on job.yaml $clip $on
mpi 2 "$DTRAIN" run -q --run-dir clip-off job.yaml $clip $off
same_clipped clip-on clip-off 0.5
pp="--set parallel.strategy=hybrid --set parallel.pipeline_parallel=2 --set parallel.data_parallel=2"
mpi 4 "$DTRAIN" run -q --run-dir pp-on job.yaml $clip $pp $on
mpi 4 "$DTRAIN" run -q --run-dir pp-off job.yaml $clip $pp $off
same_clipped pp-on pp-off 0.5
w16="--set parallel.grad_wire=bf16"
mpi 2 "$DTRAIN" run -q --run-dir w16-on job.yaml $clip $w16 $on
mpi 2 "$DTRAIN" run -q --run-dir w16-off job.yaml $clip $w16 $off
same_clipped w16-on w16-off 0.5
mpi 2 "$DTRAIN" run -q --run-dir tpc-on job.yaml $a1 $clip $tp $on
mpi 2 "$DTRAIN" run -q --run-dir tpc-off job.yaml $a1 $clip $tp $off
same_clipped tpc-on tpc-off 0.5
# Overlap on is not the same as nothing summed: the losses of one rank
# with the same global batch agree to 1e-5 (np-equivalence.sh's bound).
mpi 1 "$DTRAIN" run -q --run-dir one job.yaml $a1
compare_losses one float-on 1e-5 >/dev/null || fail "float-on differs from 1 rank"

# bf16 on the wire: 52650 trained floats, 2 bytes each per step.
mpi 2 "$DTRAIN" run -q --run-dir bf16 job.yaml $a1 $on \
	--set parallel.grad_wire=bf16
"$DTRAIN" plan --dry-run --json -n 2 job.yaml $a1 \
	--set parallel.grad_wire=bf16 >plan.json
"$PYTHON" - <<'PY' || fail "bf16 bytes or losses"
import json, sys
s = json.load(open("bf16/summary.json"))
for r in s["bytes_per_step"]:
    if r["grad_allreduce_bytes"] != 2 * 52650:
        sys.exit("rank %d: %d gradient bytes a step, expected %d"
                 % (r["rank"], r["grad_allreduce_bytes"], 2 * 52650))
p = json.load(open("plan.json"))
c = p["communication_per_rank"]
if c["wire"] != "bf16" or c["wire_bytes_per_value"] != 2 or \
   c["gradient_bytes"] != 2 * 52650:
    sys.exit("plan: %r" % c)
def losses(d):
    return [json.loads(l)["loss"] for l in open(d + "/metrics.jsonl")
            if '"loss"' in l]
a, b = losses("float-on"), losses("bf16")
if a == b:
    sys.exit("bf16 gave the f32 losses: nothing was rounded")
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
if worst > 5e-3:
    sys.exit("bf16 losses %.3g relative from f32 (> 5e-3)" % worst)
PY
# The exact mode's cost is in the plan: 8 bytes a value out, 4 back.
"$DTRAIN" plan --dry-run -n 2 job.yaml >plan.txt
grep -q 'on the wire as f64 (the exact double sum: 8 bytes a value reduce-scattered, the rounded float.s 4 gathered back, 1.5 x the bytes of f32)' plan.txt ||
	fail "plan does not state the exact mode's cost"
