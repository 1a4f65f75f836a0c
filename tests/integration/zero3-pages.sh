#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.zero 3 (src/train/sync_zero3.c): after the update a rank hands
# back the pages of the parameters it does not own, but not those of the
# gather unit the next step gathers first, since that gather writes them
# again at once (a page handed back costs a fault when written again;
# bench/README, "zero 3's extra CPU time"). The tiny MLP (4780 trained
# floats) on 2 ranks with parallel.gather_mb 0.02 (both nodes one unit,
# as tests/integration/zero.sh runs it) for 12 steps, no evaluation and
# no checkpoint:
# - summary.json's zero.released_bytes (world rank 0's count of the
#   bytes it handed back, whole pages only) is 13 times the whole pages
#   of rank 0's unowned floats: once at the start, then the gradient's
#   once a step; the parameters' are never handed back again (before,
#   at every update and every step's beginning: 37 times);
# - the losses are one rank's, bit for bit.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_mlp6_job job.yaml zero3pages
SET="--set eval.every_steps=0 --set checkpoint.at_end=false"

"$DTRAIN" run -q --run-dir one job.yaml $SET >/dev/null
mpi 2 "$DTRAIN" run -q --run-dir z3 job.yaml $SET --set parallel.zero=3 \
	--set parallel.overlap=false --set parallel.gather_mb=0.02 >/dev/null
losses one >a.col
losses z3 >b.col
[ -s a.col ] && cmp -s a.col b.col || fail "zero 3: losses differ from one rank's"

# Rank 0 owns the second of the two parts (comm/comm.c, dt_comm_part:
# the part where the ring's sum ends), floats [2390, 4780), so its
# unowned floats are [0, 2390): 9560 bytes from the page-aligned arena's
# start, of which the whole pages are handed back.
page=$(getconf PAGESIZE)
unowned=$((9560 / page * page))
[ "$unowned" -gt 0 ] || fail "page size $page: no whole page to count"
"$PYTHON" - z3/summary.json "$unowned" <<'PY' || fail "zero 3: released_bytes"
import json, sys
z = json.load(open(sys.argv[1]))["zero"]
unowned = int(sys.argv[2])
assert z["optimizer_params"] == 2390, z
want = 13 * unowned
got = z["released_bytes"]
if got != want:
    print("released_bytes %d, expected 13 x %d = %d (37 x: %d)"
          % (got, unowned, want, 37 * unowned), file=sys.stderr)
    sys.exit(1)
print("ok: released_bytes %d = 13 x %d" % (got, unowned))
PY
echo "ok: zero 3 keeps the first unit's pages across the update"
