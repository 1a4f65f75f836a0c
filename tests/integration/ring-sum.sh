#!/bin/sh
# SPDX-License-Identifier: MIT
# The exact mode's gradient sum in 6 bytes a value (comm/comm.h,
# dt_comm_allreduce_sum_f64_f32): ring_probe on 1 to 4 ranks, with and
# without the progress thread, on the world and on a split, gives every
# rank the floats each works out itself (the rank-order double sum,
# rounded once), bit for bit, blocking and started four at a time with a
# plain double sum among them. Then a 2-rank exact-mode run (gradient
# accumulation) sends 6 bytes a value: the plan says so, and the
# parameters match the 1-rank run's bits with overlap on and off.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
PROBE=$(dirname "$DTRAIN")/tests/integration/ring_probe
for np in 1 2 3 4; do
	for us in 0 200; do
		mpi $np "$PROBE" $us >p$np-$us.out 2>&1 ||
			{ cat p$np-$us.out >&2; fail "ring_probe on $np ranks, progress_us $us"; }
		n=$(grep -c "^rank [0-9]* of $np: ring sums ok (progress_us [0-9]*), split of [0-9]* ok\$" p$np-$us.out)
		[ "$n" -eq $np ] || { cat p$np-$us.out >&2; fail "ring_probe on $np ranks: $n of $np ranks ok"; }
	done
done
grep -q 'progress_us 200' p2-200.out || { cat p2-200.out >&2; fail "no progress thread in the probe"; }

write_small_job job.yaml
# Gradient accumulation: micro-batches of 24, 2 a rank on 2 ranks, 4 on 1.
"$DTRAIN" plan --dry-run --json -n 2 job.yaml >plan.json
"$PYTHON" - plan.json <<'PY' || fail "the plan's bytes of the 6-byte sum"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["communication_per_rank"]
n = d["params"]
assert c["wire"] == "f64", c
assert c["gradient_bytes"] == 8 * n, (c, n)
# Reduce-scatter of doubles and all-gather of floats: (p-1)/p x 12 n.
assert c["sent_per_step"] == 6 * n and c["received_per_step"] == 6 * n, (c, n)
assert "reduce-scatter" in c["algorithm"], c
PY
"$DTRAIN" run -q --run-dir one job.yaml --set train.grad_accum_steps=4 \
	>one.out 2>&1 || { cat one.out >&2; fail "1 rank"; }
export_of one one.st
for ov in true false; do
	mpi 2 "$DTRAIN" run -q --run-dir two-$ov job.yaml \
		--set parallel.overlap=$ov --set parallel.bucket_mb=0.004 \
		>two-$ov.out 2>&1 || { cat two-$ov.out >&2; fail "2 ranks, overlap $ov"; }
	export_of two-$ov two-$ov.st
	cmp one.st two-$ov.st || fail "2 ranks (overlap $ov) differ from 1 rank"
done
