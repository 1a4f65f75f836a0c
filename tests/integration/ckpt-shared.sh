#!/bin/sh
# SPDX-License-Identifier: MIT
# Every directory a run writes belongs to one run (issue 31): a second
# run given the checkpoint.dir of another is refused at once with exit 2,
# naming the holder, while the first runs (CKPT_DIR/owner is flock'ed)
# and after it has ended (the owner file names its run), and leaves no
# run directory behind; every checkpoint names its run (meta.json's
# run_id, the run's RUN_DIR/run-id), so export, eval and resume of run a
# refuse a checkpoint of run b put in a's checkpoint directory, naming
# both runs. Before, the second run trained into the first's directory
# with exit 0 and pruned its checkpoints.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job long.yaml 100000
"$DTRAIN" run -q --run-dir a --set checkpoint.dir="$SCRATCH/shared" \
	long.yaml >a.out 2>a.err &
first=$!
i=0
while [ ! -s a/metrics.jsonl ]; do
	i=$((i + 1))
	[ "$i" -le 600 ] || { kill -9 "$first"; cat a.err >&2; fail "run a logged nothing"; }
	kill -0 "$first" 2>/dev/null || { cat a.err >&2; fail "run a died"; }
	sleep 0.1
done
id_a=$(cat a/run-id 2>/dev/null || echo "(no run-id)")
expect_fail 2 "checkpoint directory $SCRATCH/shared is in use by another dtrain \\(run $id_a in $SCRATCH/a; pid $first on host" \
	timeout 60 "$DTRAIN" run -q --run-dir b --set checkpoint.dir="$SCRATCH/shared" long.yaml
[ ! -e b ] || fail "the refused run left its run directory b"
kill -9 "$first"
wait "$first" 2>/dev/null || :

# Run a has ended: its checkpoint directory is still its own.
write_tiny_job tiny.yaml
printf 'checkpoint: {every_steps: 1}\n' >>tiny.yaml
sed -i 's/steps: 1,/steps: 3,/' tiny.yaml
"$DTRAIN" run -q --run-dir c --set checkpoint.dir="$SCRATCH/own" tiny.yaml \
	>/dev/null 2>c.err || { cat c.err >&2; fail "run c failed"; }
id_c=$(cat c/run-id)
grep -q "\"run_id\": \"$id_c\"" own/step-000000003/meta.json ||
	fail "the checkpoint does not name run c ($id_c)"
expect_fail 2 "checkpoint directory $SCRATCH/own belongs to another run \\(run $id_c in $SCRATCH/c; .*not to this run [0-9a-f]+ \\(in $SCRATCH/d\\)" \
	"$DTRAIN" run -q --run-dir d --set checkpoint.dir="$SCRATCH/own" tiny.yaml
[ ! -e d ] || fail "the refused run left its run directory d"
[ -d own/step-000000001 ] && [ -d own/step-000000003 ] ||
	fail "the refused run touched run c's checkpoints"

# A checkpoint of another run in a run's checkpoint directory.
"$DTRAIN" run -q --run-dir e tiny.yaml >/dev/null 2>e.err ||
	{ cat e.err >&2; fail "run e failed"; }
id_e=$(cat e/run-id)
rm -rf own/step-*
cp -r e/checkpoints/step-000000003 own/
belongs="own/step-000000003 belongs to run $id_e \\(in $SCRATCH/e\\), not to run $id_c \\(in $SCRATCH/c\\)"
expect_fail 2 "$belongs" "$DTRAIN" export -o p.safetensors c
[ ! -e p.safetensors ] || fail "export wrote run e's parameters for run c"
expect_fail 2 "$belongs" "$DTRAIN" eval --data train c
expect_fail 2 "$belongs" "$DTRAIN" resume -q --set train.steps=5 c
echo "shared checkpoint.dir refused (running and ended); another run's checkpoint refused by export, eval and resume"
