#!/bin/sh
# SPDX-License-Identifier: MIT
# Every rank reads the bytes the job names, and the cache holds nothing a
# check can show is wrong (issue 31). Each case failed on the tree before
# it was fixed:
#   (a) a local file with a wrong sha256 is refused before training, exit 1,
#       naming the key's place, the file and both digests (it trained with
#       exit 0); the digest lands in the cache (CACHE/sha256/);
#   (b) under mpirun -np 2, rank 1 alone sees another file of the same size
#       at the same path (a private mount namespace): every rank stops with
#       exit 2 before training, naming rank 1, the key and both digests (the
#       agreement compared sizes only); skipped when unshare or mount is
#       not permitted;
#   (c) over HTTP (tests/http_server.py on 127.0.0.1), an IDX file without
#       a digest that the server holds truncated is refused and never
#       cached (fetch cached it and exited 0), and so is a token file sent
#       without Content-Length;
#   (d) a truncated file at its final cache name (as an older version
#       stored it) is named and downloaded again;
#   (e) fetch --refresh downloads a cached file again;
#   (f) a --refresh whose download fails its sha256, or that the server
#       refuses, keeps the cached file and says so (it deleted it, and a
#       plain fetch then failed too).
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

SERVER=
trap 'if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || :; fi
rm -rf "$SCRATCH"' EXIT
export DTRAIN_CACHE="$SCRATCH/cache"

# labels.idx: the 10000 test labels as a plain IDX file (10008 bytes);
# other.idx: the same with one label changed, so the same size.
"$PYTHON" - "$FMNIST/t10k-labels-idx1-ubyte.gz" <<'PY'
import gzip, sys
d = bytearray(gzip.open(sys.argv[1]).read())
open("labels.idx", "wb").write(bytes(d))
d[100] = (d[100] + 1) % 10
open("other.idx", "wb").write(bytes(d))
PY
[ "$(wc -c <labels.idx)" -eq 10008 ] && [ "$(wc -c <other.idx)" -eq 10008 ] ||
	fail "the label files are not 10008 bytes each"
good=$(sha256sum labels.idx | cut -d' ' -f1)
other=$(sha256sum other.idx | cut -d' ' -f1)

cat >job.yaml <<YAML
name: trust
data:
  train:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $SCRATCH/labels.idx
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 10}
train: {global_batch: 16, steps: 1, optimizer: sgd, lr: 0.1}
YAML

# (a) A wrong digest for a local file.
expect_fail 1 "job.yaml:[0-9]+:[0-9]+: data.train.labels: $SCRATCH/labels.idx: sha256 mismatch: expected $other, got $good" \
	timeout 60 "$DTRAIN" run -q --run-dir a --set "data.train.labels.sha256=$other" job.yaml
[ ! -e a ] || fail "(a) a run directory was left after a wrong digest"
expect_fail 1 "data.train.labels: $SCRATCH/labels.idx: size mismatch: expected 10007 bytes, got 10008" \
	timeout 60 "$DTRAIN" run -q --run-dir a --set data.train.labels.size=10007 job.yaml
# The right digest trains, and the digest is cached under its version key.
timeout 60 "$DTRAIN" run -q --run-dir a2 --set "data.train.labels.sha256=$good" \
	job.yaml >/dev/null 2>a2.err || { cat a2.err >&2; fail "(a) the right digest was refused"; }
grep -lq "$SCRATCH/labels.idx" cache/sha256/* 2>/dev/null ||
	fail "(a) no digest of labels.idx in $DTRAIN_CACHE/sha256"
grep -q "^$good\$" $(grep -l "$SCRATCH/labels.idx" cache/sha256/*) ||
	fail "(a) the cached digest of labels.idx is not $good"

# (b) One rank reads other bytes of the same size at the same path.
if unshare -m sh -c "mount --bind '$SCRATCH/other.idx' '$SCRATCH/labels.idx' &&
		cmp -s '$SCRATCH/labels.idx' '$SCRATCH/other.idx'" 2>/dev/null; then
	for digest in none given; do
		set --
		[ "$digest" = none ] || set -- --set "data.train.labels.sha256=$good"
		if [ "$digest" = none ]; then
			pattern="ranks disagree before training: rank 1: data.train.labels is 10008 bytes, sha256 $other .*rank 0 has 10008 bytes, sha256 $good; every rank stops"
			code=2
		else
			pattern="rank 1: job.yaml:[0-9]+:[0-9]+: data.train.labels: $SCRATCH/labels.idx: sha256 mismatch: expected $good, got $other"
			code=1
		fi
		set +e
		timeout 120 "$MPIRUN" --bind-to none \
			-np 1 "$DTRAIN" run -q --run-dir b "$@" job.yaml : \
			-np 1 unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
			sh "$SCRATCH/other.idx" "$SCRATCH/labels.idx" \
			"$DTRAIN" run -q --run-dir b "$@" job.yaml >b.out 2>b.err
		rc=$?
		set -e
		[ "$rc" -eq "$code" ] || { cat b.err >&2; fail "(b, digest $digest) exited $rc, expected $code"; }
		grep -Eq -- "$pattern" b.err || { cat b.err >&2; fail "(b, digest $digest) the message does not name rank 1 and the source"; }
		! grep -q '"step"' b/metrics.jsonl 2>/dev/null || fail "(b, digest $digest) trained"
	done
else
	echo "(b) skipped: unshare -m or mount --bind is not permitted here"
fi

# (c) to (e) over HTTP.
mkdir www
head -c 5000 labels.idx >www/cut.idx
cp labels.idx www/labels.idx
head -c 4000 /dev/urandom >www/tokens.bin
"$PYTHON" "$top_srcdir/tests/http_server.py" --root www --log requests.log \
	--max-seconds 200 >port 2>server.err &
SERVER=$!
i=0
while [ ! -s port ]; do
	i=$((i + 1))
	[ "$i" -le 100 ] || { cat server.err >&2; fail "test server did not start"; }
	kill -0 "$SERVER" 2>/dev/null || { cat server.err >&2; fail "test server died"; }
	sleep 0.1
done
BASE="http://127.0.0.1:$(cat port)"
requests() {
	grep -c "^$1 " requests.log 2>/dev/null || :
}

# (c) A truncated IDX body, whole as far as HTTP can tell.
expect_fail 1 "$BASE/cut.idx: the download is not a whole IDX file: .*truncated: expected 10000 bytes of data, found 4992" \
	timeout 60 "$DTRAIN" fetch --set "data.train.labels=$BASE/cut.idx" job.yaml
grep -q "(the download has been deleted)" err || fail "(c) the message does not say the download was deleted"
[ -z "$(ls cache | grep -- '-cut\.idx\(\.part\)*$')" ] || { ls cache >&2; fail "(c) the truncated body was cached"; }
# A token file without a digest, sent without Content-Length.
cat >tokens.yaml <<YAML
name: tokens
data:
  format: tokens
  token_bytes: 2
  context: 8
  train: {file: $BASE/fault/nolen/tokens.bin}
model:
  input_shape: [8]
  layers:
    - {type: embedding, vocab: 65536, dim: 4}
    - {type: dense, units: 65536}
train: {global_batch: 4, steps: 1, optimizer: sgd, lr: 0.1}
YAML
expect_fail 1 "$BASE/fault/nolen/tokens.bin: the server sent neither a Content-Length nor a chunked body" \
	timeout 60 "$DTRAIN" fetch tokens.yaml
[ -z "$(ls cache | grep -- '-tokens\.bin\(\.part\)*$')" ] || { ls cache >&2; fail "(c) a body of unknown length was cached"; }
# With a size the same answer is whole and cached.
timeout 60 "$DTRAIN" fetch --set data.train.file.size=4000 tokens.yaml >c.out 2>c.err ||
	{ cat c.err >&2; fail "(c) a sized body without Content-Length was refused"; }

# (d) A truncated file at the final name: named, and fetched again.
url=$BASE/labels.idx
timeout 60 "$DTRAIN" fetch --set "data.train.labels=$url" job.yaml >d.out 2>d.err ||
	{ cat d.err >&2; fail "(d) first fetch failed"; }
cached=$(cut -d' ' -f2 <d.out | grep -- '-labels\.idx$')
[ -f "$cached" ] || fail "(d) fetch printed no cached file"
head -c 6000 labels.idx >"$cached"
[ "$(requests /labels.idx)" -eq 1 ] || fail "(d) expected one request so far"
timeout 60 "$DTRAIN" fetch --set "data.train.labels=$url" job.yaml >d2.out 2>d2.err ||
	{ cat d2.err >&2; fail "(d) a damaged cached file was not replaced"; }
grep -q "dtrain: $cached: the cached file fails its check (.*truncated.*); downloading it again" d2.err ||
	{ cat d2.err >&2; fail "(d) the damaged cached file was not named"; }
[ "$(requests /labels.idx)" -eq 2 ] || fail "(d) no new request for the damaged file"
cmp -s "$cached" labels.idx || fail "(d) the cached file is not whole again"

# (e) --refresh downloads again; without it the cache answers.
timeout 60 "$DTRAIN" fetch --set "data.train.labels=$url" job.yaml >/dev/null 2>e.err ||
	{ cat e.err >&2; fail "(e) fetch failed"; }
[ "$(requests /labels.idx)" -eq 2 ] || fail "(e) a cached file was requested again"
timeout 60 "$DTRAIN" fetch --refresh --set "data.train.labels=$url" job.yaml >e.out 2>e.err ||
	{ cat e.err >&2; fail "(e) fetch --refresh failed"; }
[ "$(requests /labels.idx)" -eq 3 ] || fail "(e) fetch --refresh made $(($(requests /labels.idx) - 2)) requests, expected 1"
cmp -s "$cached" labels.idx || fail "(e) the refreshed file differs"

# (f) A --refresh whose download fails its check keeps the cached file.
cp other.idx www/labels.idx
expect_fail 1 "$url: sha256 mismatch: expected $good, got $other \\(the download has been deleted; the cached file $cached is kept\\)" \
	timeout 60 "$DTRAIN" fetch --refresh --set "data.train.labels=$url" \
	--set "data.train.labels.sha256=$good" job.yaml
[ "$(requests /labels.idx)" -eq 4 ] || fail "(f) fetch --refresh made no new request"
cmp -s "$cached" labels.idx || fail "(f) the cached file was not kept as it was"
[ ! -e "$cached.part" ] || fail "(f) the failed download was left in $cached.part"
timeout 60 "$DTRAIN" fetch --set "data.train.labels=$url" \
	--set "data.train.labels.sha256=$good" job.yaml >f.out 2>f.err ||
	{ cat f.err >&2; fail "(f) a plain fetch failed after the refused refresh"; }
[ "$(requests /labels.idx)" -eq 4 ] || fail "(f) the kept file was downloaded again"
# A refresh that the server refuses (404) keeps it too.
rm www/labels.idx
expect_fail 1 "$url: .*404.*\\(the cached file $cached is kept\\)" \
	timeout 60 "$DTRAIN" fetch --refresh --set "data.train.labels=$url" job.yaml
cmp -s "$cached" labels.idx || fail "(f) a refused refresh did not keep the cached file"

kill "$SERVER" 2>/dev/null || :
wait "$SERVER" 2>/dev/null || :
SERVER=
echo "data-trust: local digests checked, ranks agree on bytes read, no cut download cached, --refresh keeps a good file"
