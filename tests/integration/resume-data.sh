#!/bin/sh
# SPDX-License-Identifier: MIT
# A single training file (not a pattern of shards) whose bytes changed
# between sessions is refused on resume, as a changed shard list is
# (shards.sh): exit 1, naming the checkpoint, the key, the file and both
# sizes and sha256 digests. Before, a label file with one label changed
# (the same size) resumed with exit 0 and trained on the other labels.
# The same bytes resume, and a checkpoint records the files in meta.json
# (data_files).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
gzip -dc "$FMNIST/t10k-labels-idx1-ubyte.gz" >labels.idx
write_tiny_job job.yaml
sed -i "s|labels: .*|labels: $SCRATCH/labels.idx|; s/steps: 1,/steps: 3,/" job.yaml
printf 'checkpoint: {every_steps: 1}\n' >>job.yaml
"$DTRAIN" run -q --run-dir r job.yaml >/dev/null 2>r.err ||
	{ cat r.err >&2; fail "the first session failed"; }
was=$(sha256sum labels.idx | cut -d' ' -f1)
size=$(wc -c <labels.idx)
[ "$size" -eq 10008 ] || fail "labels.idx has $size bytes, expected 10008"
img=$FMNIST/t10k-images-idx3-ubyte.gz
isize=$(wc -c <"$img")
isha=$(sha256sum "$img" | cut -d' ' -f1)
grep -q "\"data_files\": \"data.train.images\\\\t$isize\\\\t$isha\\\\t$img\\\\ndata.train.labels\\\\t10008\\\\t$was\\\\t$SCRATCH/labels.idx\\\\n\"" \
	r/checkpoints/step-000000003/meta.json ||
	{ cat r/checkpoints/step-000000003/meta.json >&2; fail "meta.json does not record the data files"; }

# Label 0 (byte 8) changed to another class: same size, other bytes.
cp labels.idx kept.idx
"$PYTHON" - <<'PY'
with open("labels.idx", "r+b") as f:
    f.seek(8)
    b = f.read(1)[0]
    f.seek(8)
    f.write(bytes([(b + 1) % 10]))
PY
now=$(sha256sum labels.idx | cut -d' ' -f1)
[ "$now" != "$was" ] || fail "the label file did not change"
cp r/metrics.jsonl before.jsonl
expect_fail 1 "r/checkpoints/step-000000003: the training data changed since the checkpoint: data.train.labels \\($SCRATCH/labels.idx\\) was 10008 bytes, sha256 $was, is now 10008 bytes, sha256 $now; resume with the data it was saved with" \
	"$DTRAIN" resume -q --set train.steps=5 r
cmp -s before.jsonl r/metrics.jsonl || fail "the refused resume trained"

# The same bytes again (a new copy: another inode and times, so hashed
# anew) resume.
cp kept.idx labels.idx
"$DTRAIN" resume -q --set train.steps=5 r >/dev/null 2>res.err ||
	{ cat res.err >&2; fail "the resume over the same bytes failed"; }
grep -q "resuming from .*step-000000003" res.err || { cat res.err >&2; fail "did not resume from step 3"; }
echo "ok: a changed single training file is refused on resume; the same bytes resume"
