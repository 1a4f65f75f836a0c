#!/bin/sh
# SPDX-License-Identifier: MIT
# Checkpoints without a gather (issue #27, dtrain(1) CHECKPOINTS): every
# rank writes its own shard, the manifest last. A tiny MLP (784 -> 6 ->
# 10: 4780 trained floats, AdamW's 2 buffers: 38240 bytes of optimizer
# state) trains 12 steps of 32 samples in micro-batches of 8 (the exact
# sum, so every layout gives one rank's bits), checkpointing every 4:
# - on 4 ranks (dp 4 at zero 1 and at zero 3, pp 2 x dp 2 at zero 0) a
#   checkpoint holds one parameter file per stage (at zero 3 instead
#   params-tensor-000000.safetensors, dense0.weight, which the first
#   part's end cuts, and params-tensor-000001.safetensors, the other
#   three tensors, wholly in the last part), one optimizer file per
#   rank and a manifest naming each with its size and CRC-32 (checked
#   here with zlib); each rank's file holds exactly its part of each
#   buffer, [n i / p, n (i + 1) / p) for chunk i = (rank + 1) mod p of
#   its stage's trained floats at their one-rank offsets (comm.h's cut,
#   worked out here), so no rank wrote, or needed, more than its part:
#   at most a quarter (dp 4) or a half (pp 2 x dp 2) of the 38240 bytes;
# - the plan says so and charges rank 0 no checkpoint gather;
# - a shard deleted, or truncated: resume names the file and what the
#   manifest expected, skips that checkpoint and resumes from the one
#   before; the only checkpoint damaged: resume refuses (exit 1, the
#   checkpoint error), naming the shard;
# - a manifest missing (a crash before it was written, in the step
#   directory or in the temporary one): that checkpoint is skipped as
#   partial and the one before used;
# - a 4-rank checkpoint (zero 3, and pp 2 x dp 2) resumes on 1 and on 2
#   ranks and ends with the uninterrupted one-rank run's exported
#   parameters and loss lines, byte for byte;
# - export of a pp 2 x dp 2 checkpoint (two stage files) equals the
#   one-rank run's export byte for byte.
# On the gathered format (integ before the shards) the first check fails:
# a 4-rank checkpoint held params.safetensors and optim.safetensors.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_mlp6_job job.yaml shards
echo 'checkpoint: {every_steps: 4, keep_last: 0}' >>job.yaml
OFF="--set parallel.overlap=false"
HY="--set parallel.strategy=hybrid --set parallel.pipeline_parallel=2 --set parallel.data_parallel=2"
DP2="--set parallel.strategy=data --set parallel.pipeline_parallel=1 --set parallel.data_parallel=2"
DP1="--set parallel.strategy=data --set parallel.pipeline_parallel=1 --set parallel.data_parallel=1"

# same REF RUN: RUN's loss lines and exported parameters are REF's.
same() {
	losses "$1" >a.col
	losses "$2" >b.col
	[ -s a.col ] && cmp -s a.col b.col || fail "$2: loss lines differ from $1"
	export_of "$1" "$1.st"
	export_of "$2" "$2.st"
	cmp -s "$1.st" "$2.st" || fail "$2: parameters differ from $1"
	echo "ok: $2 == $1"
}

# shards DIR PP DP STAGE_TRAINED...: the checkpoint DIR's files, their
# manifest and each rank's spans, as the header says.
shards() {
	"$PYTHON" - "$@" <<'PY'
import json, os, struct, sys, zlib
d, pp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
trained = [int(x) for x in sys.argv[4:]]
world, whole = pp * dp, 2 * 4 * sum(trained)
pfiles = ["params.safetensors"] if pp == 1 else \
    ["params-stage-%03d.safetensors" % s for s in range(pp)]
zero3 = {}
if os.environ.get("ZERO3"):
    # Each rank writes the tensors wholly in its part, named by the first
    # one's index, and the tensor its part's end cuts alone.
    tensors = [("dense0.weight", 4704), ("dense0.bias", 6),
               ("dense1.weight", 60), ("dense1.bias", 10)]
    assert pp == 1 and sum(n for _, n in tensors) == trained[0]
    starts = [sum(n for _, n in tensors[:j]) for j in range(len(tensors))]
    for i in range(dp):
        lo, hi = trained[0] * i // dp, trained[0] * (i + 1) // dp
        mine = [j for j in range(len(tensors)) if lo <= starts[j] < hi]
        inside = [j for j in mine if starts[j] + tensors[j][1] <= hi]
        if inside:
            zero3["params-tensor-%06d.safetensors" % inside[0]] = \
                [tensors[j][0] for j in inside]
        for j in mine:
            if j not in inside:
                zero3["params-tensor-%06d.safetensors" % j] = [tensors[j][0]]
    pfiles = sorted(zero3)
rfiles = ["rank-%05d.safetensors" % r for r in range(world)]
want = sorted(pfiles + rfiles + ["meta.json", "MANIFEST.json"])
got = sorted(os.listdir(d))
assert got == want, (d, got, want)
man = json.load(open(os.path.join(d, "MANIFEST.json")))
listed = {f["name"]: f for f in man["files"]}
assert sorted(listed) == sorted(pfiles + rfiles + ["meta.json"]), listed
for name, f in listed.items():
    data = open(os.path.join(d, name), "rb").read()
    assert len(data) == f["size"], (name, len(data), f["size"])
    assert "%08x" % zlib.crc32(data) == f["crc32"], (name, f["crc32"])

def header(name):
    b = open(os.path.join(d, name), "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return h

for name, names in zero3.items():
    assert list(header(name)) == names, (name, list(header(name)), names)

def part(n, p, r):
    i = (r + 1) % p
    return n * i // p, n * (i + 1) // p

covered = {"adam.m": [], "adam.v": []}
for r in range(world):
    # The grid puts consecutive ranks in consecutive stages (rank =
    # dp x pp + stage, as plan --json's "ranks" lists them).
    stage, q = r % pp, r // pp
    off = sum(trained[:stage])
    lo, hi = part(trained[stage], dp, q)
    h = header(rfiles[r])
    spans = {k: (v["shape"], v["data_offsets"]) for k, v in h.items()}
    exp = {"%s[%d:%d]" % (a, off + lo, off + hi): ([hi - lo],
           [k * 4 * (hi - lo), (k + 1) * 4 * (hi - lo)])
           for k, a in enumerate(("adam.m", "adam.v"))}
    assert spans == exp, (r, spans, exp)
    size = 8 * (hi - lo)
    assert size <= whole // dp + 8 and size < whole, (r, size, whole)
    for a in covered:
        covered[a] += range(off + lo, off + hi)
for a, c in covered.items():
    assert sorted(c) == list(range(sum(trained))), a
print("ok: %s: %d parameter file(s), %d rank files of at most %d of %d "
      "optimizer bytes, manifest sizes and CRCs" %
      (d, len(pfiles), world, max(8 * (part(t, dp, q)[1] - part(t, dp, q)[0])
                                  for t in trained for q in range(dp)), whole))
PY
}

"$DTRAIN" run -q --run-dir one job.yaml >/dev/null
mpi 4 "$DTRAIN" run -q --run-dir z1 job.yaml --set parallel.zero=1 $OFF >/dev/null
mpi 4 "$DTRAIN" run -q --run-dir z3 job.yaml --set parallel.zero=3 $OFF >/dev/null
mpi 4 "$DTRAIN" run -q --run-dir pp job.yaml $HY $OFF >/dev/null
for s in 4 8 12; do
	shards z1/checkpoints/step-0000000$(printf %02d $s) 1 4 4780
	ZERO3=1 shards z3/checkpoints/step-0000000$(printf %02d $s) 1 4 4780
	shards pp/checkpoints/step-0000000$(printf %02d $s) 2 2 4710 70
done
same one z1
same one z3
# The export of the stage files is the one-rank export, byte for byte.
same one pp

# The plan: each rank writes its shard; no checkpoint gather on rank 0.
"$DTRAIN" plan --dry-run -n 4 job.yaml $HY >plan.txt
grep -q 'checkpoints: each rank writes its own shard' plan.txt ||
	fail "plan does not say each rank writes its shard"
! grep -q checkpoint_gather plan.txt || fail "plan charges a checkpoint gather"
"$DTRAIN" plan --dry-run --json -n 4 job.yaml $HY >plan.json
"$PYTHON" - plan.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
c = p["checkpoint"]
assert c["format"] == "shards" and c["param_files"] == 2, c
assert c["optimizer_files"] == 4, c
# Stage 0's 4710 floats over 2 ranks: 2355 a rank, 2 buffers of 4 bytes.
assert c["optimizer_part_bytes_max"] == 2355 * 8, c
for r in p["ranks"]:
    assert "checkpoint_gather" not in r["memory"], r
print("ok: plan: shards, no gather")
PY
# checkpoint.compress keeps the gathered format, and the plan says so.
"$DTRAIN" plan --dry-run -n 4 job.yaml $HY --set checkpoint.compress=true >planz.txt
grep -q 'checkpoints: rank 0 gathers' planz.txt || fail "compress: plan"
grep -q 'checkpoint_gather' planz.txt || fail "compress: no gather charged"

# Stopped at step 10 on 4 ranks (checkpoints 4, 8 and 10), then damaged.
stop() {
	d=$1
	shift
	set +e
	DTRAIN_TEST_SIGNAL_AT_STEP=10 mpi 4 -x DTRAIN_TEST_SIGNAL_AT_STEP \
		"$DTRAIN" run -q --run-dir "$d" job.yaml "$@" >/dev/null 2>"$d.err"
	rc=$?
	set -e
	[ "$rc" -eq 3 ] || { cat "$d.err" >&2; fail "$d: exited $rc, expected 3"; }
}
stop s3 --set parallel.zero=3 $OFF
stop spp $HY $OFF
S10=checkpoints/step-000000010
for d in del trunc noman tmpman only; do
	cp -a s3 $d
done
rm del/$S10/rank-00002.safetensors
truncate -s 5000 trunc/$S10/rank-00001.safetensors
rm noman/$S10/MANIFEST.json
rm tmpman/$S10/MANIFEST.json
mv tmpman/$S10 tmpman/checkpoints/.step-000000010.tmp.shards.99999
for d in del trunc noman tmpman; do
	mpi 2 "$DTRAIN" resume -q $d $DP2 --set parallel.zero=0 >/dev/null 2>$d.err
	grep -q "resuming from .*step-000000008" $d.err ||
		{ cat $d.err >&2; fail "$d: did not fall back to step 8"; }
	same one $d
done
grep -q "step-000000010: rank-00002.safetensors: missing; MANIFEST.json lists it with 9840 bytes" del.err ||
	{ cat del.err >&2; fail "del: the missing shard is not named"; }
grep -q "step-000000010: rank-00001.safetensors: 5000 bytes, MANIFEST.json lists 9840 (truncated)" trunc.err ||
	{ cat trunc.err >&2; fail "trunc: the truncated shard is not named"; }
grep -q "step-000000010: no MANIFEST.json, so not a checkpoint; its files set aside in noman/checkpoints/step-000000010.no-manifest" noman.err ||
	{ cat noman.err >&2; fail "noman: not skipped as partial"; }
[ -f noman/checkpoints/step-000000010.no-manifest/rank-00002.safetensors ] ||
	fail "noman: the shards of the checkpoint without a manifest were removed"
[ ! -e tmpman/checkpoints/.step-000000010.tmp.shards.99999 ] ||
	fail "tmpman: the partial checkpoint was left"
echo "ok: damaged and partial checkpoints skipped, the one before used"
rm -r only/checkpoints/step-000000004 only/checkpoints/step-000000008
rm only/$S10/rank-00003.safetensors
expect_fail 1 "step-000000010: rank-00003.safetensors: missing; MANIFEST.json lists it with 9824 bytes" \
	"$DTRAIN" resume -q only
echo "ok: the only checkpoint damaged: refused, naming the shard"

# Resharding: 4-rank checkpoints resume on 1 and on 2 ranks with the
# uninterrupted run's bits.
for s in s3 spp; do
	cp -a $s $s-on1
	cp -a $s $s-on2
	"$DTRAIN" resume -q $s-on1 $DP1 --set parallel.zero=0 >/dev/null 2>$s-on1.err
	grep -q "resuming from .*step-000000010" $s-on1.err || fail "$s-on1: not from 10"
	same one $s-on1
	mpi 2 "$DTRAIN" resume -q $s-on2 $DP2 --set parallel.zero=2 >/dev/null 2>$s-on2.err
	grep -q "resuming from .*step-000000010" $s-on2.err || fail "$s-on2: not from 10"
	same one $s-on2
done
