#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.zero 1 with tensor slices, gathered checkpoints: every tensor
# rank's first data-parallel rank collects its blocks' optimizer state
# before a checkpoint (train/sync_zero.c, zero_collect), and the plan
# charges it there (plan/describe.c, zero_collect_bytes), on
# jobs/char-gpt.yaml at data_parallel 2 x tensor_parallel 2 (ranks: 0 is
# dp 0 tp 0, 1 is dp 0 tp 1, 2 and 3 dp 1). Worked out by hand:
# - a tensor rank's blocks are 418864 trained floats (tp-gpt.sh counts
#   them), AdamW's 2 moments: 2 x 418864 x 4 = 3350912 bytes of
#   checkpoint_gather on rank 1, and rank 1's total exactly that above
#   rank 3's (the same tensor rank, nothing collected);
# - rank 0 also gathers the whole model to write it: 3350912 + (826208
#   parameters + 2 x 826208 moments) x 4 = 13265408 bytes;
# - dp 1's ranks: no checkpoint_gather;
# - a run of 3 steps with its checkpoint at the end: rank 1's measured
#   peak resident memory (summary.json) is within 15% of its plan.
# Before dtrain 2026-12-07's zero_collect_bytes fix rank 1 was charged 0.
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
JOB="$top_srcdir/jobs/char-gpt.yaml"
SET="--set train.steps=3 --set train.schedule.warmup_steps=1 --set eval.every_steps=0 --set checkpoint.every_steps=0 --set checkpoint.at_end=true --set parallel.overlap=false"
HY="--set parallel.strategy=hybrid --set parallel.data_parallel=2 --set parallel.tensor_parallel=2 --set parallel.zero=1"

# shellcheck disable=SC2086
"$DTRAIN" plan --dry-run --json -n 4 "$JOB" $SET $HY >plan.json
# shellcheck disable=SC2086
mpi 4 "$DTRAIN" run -q --run-dir hy "$JOB" $SET $HY >/dev/null 2>hy.err ||
	{ cat hy.err >&2; fail "dp 2 x tp 2 zero 1"; }
has_ckpt hy || fail "no checkpoint written"
"$PYTHON" - <<'PY'
import json
p = json.load(open("plan.json"))
assert p["tensor_split"]["slices"] is True, p["tensor_split"]
assert p["checkpoint"]["format"] == "gathered", p["checkpoint"]
assert p["params"] == 826208, p["params"]
mem = {r["rank"]: r["memory"] for r in p["ranks"]}
pos = {r["rank"]: (r["dp"], r["tp"]) for r in p["ranks"]}
assert pos == {0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (1, 1)}, pos
blocks = 418864
collect = 2 * blocks * 4
assert collect == 3350912
assert mem[1]["checkpoint_gather"] == collect, mem[1]
assert mem[1]["total"] - mem[3]["total"] == collect, (mem[1], mem[3])
assert mem[0]["checkpoint_gather"] == collect + 3 * 826208 * 4 == 13265408, \
    mem[0]
for r in (2, 3):
    assert mem[r].get("checkpoint_gather", 0) == 0, (r, mem[r])
s = {x["rank"]: x for x in json.load(open("hy/summary.json"))["ranks"]}
peak = s[1]["peak_resident_bytes"]
print("rank 1: peak %.1f MiB, plan %.1f MiB (checkpoint_gather %.1f MiB)"
      % (peak / 2**20, mem[1]["total"] / 2**20, collect / 2**20))
assert 0.85 <= peak / mem[1]["total"] <= 1.15, (peak, mem[1]["total"])
print("ok: zero 1 dp 2 x tp 2: rank 1 collects 3350912 bytes")
PY
