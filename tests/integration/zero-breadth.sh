#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.zero 2 and 3 with parallel.accum_schedule: breadth_first in
# the exact mode (more than one micro-batch a rank): each node's
# gradient goes to its parts' owners as its backward over the last
# micro-batch ends (src/train/sync_zero.c, zero_node_done). The sum went
# in pieces of the plan's part_seg floats, which is 0 without
# grad_parts (breadth first), so the first piece never ended: the run
# sent empty messages until it was killed for memory.
# - char-GPT on 2 ranks, 2 micro-batches a rank, at zero 2 and 3,
#   breadth first: it ends, and its loss and gradient-norm lines equal
#   zero 0 depth first's byte for byte (the schedules and the levels give
#   one set of bits: dtrain-job(5), parallel.accum_schedule and
#   parallel.zero), as do the exported parameters.
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
F="$top_srcdir/jobs/char-gpt.yaml"
G="--set train.steps=3 --set train.schedule.warmup_steps=1
   --set log.every_steps=1 --set eval.every_steps=0
   --set parallel.overlap=false"

norms() {
	column "$1" grad_norm
}

# shellcheck disable=SC2086
mpi 2 "$DTRAIN" run -q --run-dir z0 "$F" $G --set parallel.zero=0 \
	--set parallel.accum_schedule=depth_first >/dev/null ||
	fail "zero 0 depth first"
losses z0 >a.loss
norms z0 >a.norm
[ "$(wc -l <a.loss)" -eq 3 ] || fail "zero 0: not 3 losses"
export_of z0 z0.st
for z in 2 3; do
	# shellcheck disable=SC2086
	(ulimit -v 4000000; mpi 2 "$DTRAIN" run -q --run-dir b$z "$F" $G \
		--set parallel.zero=$z \
		--set parallel.accum_schedule=breadth_first >/dev/null) ||
		fail "zero $z breadth first did not end"
	grep -q '"accum_schedule": *"breadth_first"' b$z/plan.json ||
		fail "zero $z: the plan is not breadth first"
	losses b$z >b.loss
	norms b$z >b.norm
	cmp -s a.loss b.loss || fail "zero $z breadth first: losses differ"
	cmp -s a.norm b.norm || fail "zero $z breadth first: norms differ"
	export_of b$z b$z.st
	cmp -s z0.st b$z.st || fail "zero $z breadth first: parameters differ"
done
echo "ok: zero 2 and 3 breadth first end with zero 0's bits"
