#!/bin/sh
# SPDX-License-Identifier: MIT
# A checkpoint directory is untrusted input: a FIFO or a symbolic link in
# place of a file the manifest lists is refused at once (never waited on,
# never followed), and resume and export fall back to the checkpoint
# before it, naming the file and the reason. A meta.json crafted with
# numbers this job and data cannot reach (a data position far past the
# training set, more epochs or logged steps than steps, a negative loss
# sum, a step the directory is not named for), its manifest entry
# recomputed so that it verifies, is refused by resume with exit status
# 1, naming the file and the key, before anything uses it.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
write_ckpt_job job.yaml 60
sed -i 's/keep_last: 2/keep_last: 0/' job.yaml
DTRAIN_TEST_SIGNAL_AT_STEP=50 "$DTRAIN" run -q --run-dir r job.yaml \
	>/dev/null 2>&1 || [ $? -eq 3 ] || fail "first run"
new=r/checkpoints/step-000000050
[ -f $new/params.safetensors ] || fail "no checkpoint at step 50"
cp -r r r2
cp -r r r3

# A FIFO: open would block forever without O_NONBLOCK, read likewise.
mv $new/params.safetensors params.real
mkfifo $new/params.safetensors
set +e
timeout 30 "$DTRAIN" export -o fifo.st r >/dev/null 2>fifo.err
rc=$?
set -e
[ "$rc" -ne 124 ] || fail "export hung on a FIFO in a checkpoint"
grep -q 'step-000000050.*params.safetensors.*not a regular file' fifo.err ||
	{ cat fifo.err >&2; fail "FIFO not named"; }
set +e
timeout 60 "$DTRAIN" resume -q r >/dev/null 2>fifo2.err
rc=$?
set -e
[ "$rc" -ne 124 ] || fail "resume hung on a FIFO in a checkpoint"
[ "$rc" -eq 0 ] || { cat fifo2.err >&2; fail "resume exited $rc"; }
grep -q 'not a regular file' fifo2.err || { cat fifo2.err >&2; fail "resume: FIFO not named"; }
grep -q 'resuming from .*step-000000025' fifo2.err ||
	{ cat fifo2.err >&2; fail "resume did not fall back to step 25"; }

# A symbolic link, here even to the file's own valid bytes: not followed,
# so verify cannot be made to read (and report on) any file it can reach.
new=r2/checkpoints/step-000000050
mv $new/params.safetensors params2.real
ln -s "$SCRATCH/params2.real" $new/params.safetensors
"$DTRAIN" resume -q r2 >/dev/null 2>link.err || { cat link.err >&2; fail "resume with a link"; }
grep -q 'params.safetensors.*symbolic link' link.err || { cat link.err >&2; fail "link not named"; }
grep -q 'resuming from .*step-000000025' link.err ||
	{ cat link.err >&2; fail "resume followed the link"; }

# craft DIR KEY VALUE: sets meta.json's KEY (extra.NAME for an extra
# value) in DIR to VALUE and recomputes its size and crc32 in the manifest.
craft() {
	"$PYTHON" - "$@" <<'PY'
import json, struct, sys, zlib
d, key, value = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
meta = json.load(open(d + "/meta.json"))
if key.startswith("extra."):
    e = meta["extra"][key[6:]]
    e["value"] = value
    if e["type"] == "double":
        e["bits"] = struct.pack(">d", float(value)).hex()
else:
    meta[key] = value
text = json.dumps(meta, indent=2).encode()
open(d + "/meta.json", "wb").write(text)
man = json.load(open(d + "/MANIFEST.json"))
for f in man["files"]:
    if f["name"] == "meta.json":
        f["size"], f["crc32"] = len(text), "%08x" % zlib.crc32(text)
open(d + "/MANIFEST.json", "w").write(json.dumps(man, indent=2))
PY
}
# Each: KEY VALUE and the end of the message, [LO, HI] or "finite".
for c in "epoch_samples 1000000000000 0 60000" \
	 "epoch 51 0 50" \
	 "optim_steps 51 0 50" \
	 "world_size 1048577 1 1048576" \
	 "extra.window_steps 4611686018427387904 0 50" \
	 "extra.skipped_steps 51 0 50" \
	 "extra.diverge_loss_n 21 0 20" \
	 "extra.window_loss -1 finite" \
	 "extra.diverge_norm_sum -1 finite"; do
	# shellcheck disable=SC2086
	set -- $c
	rm -rf rc && cp -r r3 rc
	craft rc/checkpoints/step-000000050 "$1" "$2"
	if [ "$3" = finite ]; then
		why="$2 is not a finite number >= 0"
	else
		why="$2 is outside \\[$3, $4\\]"
	fi
	# The message of this check, not of a checksum: the manifest holds.
	expect_fail 1 "step-000000050/meta.json: $1: $why" "$DTRAIN" resume -q rc
	! grep -q "resuming from" "$SCRATCH/err" || fail "$1: resumed from a crafted checkpoint"
done
# The untouched copy resumes.
"$DTRAIN" resume -q r3 >/dev/null 2>r3.err || { cat r3.err >&2; fail "resume of the untouched copy"; }
echo "FIFO and symbolic link in a checkpoint refused; crafted meta.json refused"
