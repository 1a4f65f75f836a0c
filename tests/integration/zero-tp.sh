#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.zero with tensor parallelism: dp 2 x tp 2 at zero 0, 1, 2 and
# 3 give the same loss lines and byte-identical exported parameters, on
# an MLP whose dense pairs and head are split (784-32-16-10, AdamW with
# clip_norm, the exact mode) and on jobs/char-gpt.yaml (6 steps: heads,
# MLP pairs, token table and head split). At zero 0 and 1 the tensor
# ranks own their slices (the gradient summed over the data-parallel
# ranks of each tensor rank, over blocks), at 2 and 3 they hold whole
# tensors (plan --json's tensor_split.slices says which): both give the
# bits of whole tensors.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_mlp6_job job.yaml zt
"$PYTHON" - job.yaml <<'PY'
import sys
p = sys.argv[1]
t = open(p).read().replace(
    "    - {type: dense, units: 6, activation: relu}\n",
    "    - {type: dense, units: 32, activation: relu}\n"
    "    - {type: dense, units: 16, activation: tanh}\n", 1)
open(p, "w").write(t)
PY
HY="--set parallel.strategy=hybrid --set parallel.data_parallel=2 --set parallel.tensor_parallel=2 --set parallel.overlap=false"

# layouts JOB NAME SLICED SETTINGS...: dp 2 x tp 2 at every level,
# compared with level 0; SLICED: whether zero 0 and 1 own their slices
# (true, or any).
layouts() {
	job=$1 name=$2 sliced=$3
	shift 3
	for z in 0 1 2 3; do
		d=$name-z$z
		# shellcheck disable=SC2086
		"$DTRAIN" plan --dry-run --json -n 4 "$job" $HY "$@" \
			--set parallel.zero=$z >$d.plan
		# shellcheck disable=SC2086
		mpi 4 "$DTRAIN" run -q --run-dir $d "$job" $HY "$@" \
			--set parallel.zero=$z >/dev/null 2>$d.err ||
			{ cat $d.err >&2; fail "$d"; }
		export_of $d $d.st
		losses $d >$d.losses
		[ -s $d.losses ] || fail "$d: no losses"
	done
	"$PYTHON" - $name $sliced <<'PY'
import json, sys
n, want = sys.argv[1], sys.argv[2]
s = [json.load(open("%s-z%d.plan" % (n, z)))["tensor_split"]["slices"]
     for z in range(4)]
assert s[0] == s[1] and s[2] is False and s[3] is False, (n, s)
assert want == "any" or s[0] is True, (n, s)
PY
	for z in 1 2 3; do
		cmp $name-z0.losses $name-z$z.losses ||
			fail "$name: zero $z: loss lines differ from zero 0"
		cmp $name-z0.st $name-z$z.st ||
			fail "$name: zero $z: parameters differ from zero 0"
	done
	echo "ok: $name: dp 2 x tp 2 at zero 0-3, the same bits"
}
layouts job.yaml mlp true
[ -f /usr/share/games/fortunes/cookie ] ||
	{ echo "SKIP: fortunes missing (apt-get install fortunes)"; exit 77; }
layouts "$top_srcdir/jobs/char-gpt.yaml" gpt true --set train.steps=6 \
	--set train.schedule.warmup_steps=1 --set eval.every_steps=0 \
	--set log.every_steps=1
