#!/bin/sh
# SPDX-License-Identifier: MIT
# Data over HTTP: a job whose four Fashion-MNIST sources are URLs (with
# sha256 and size) served by tests/http_server.py on 127.0.0.1.
#   (a) np=4 downloads each file exactly once (one rank per node fetches,
#       the others read the cache), counted in the server's request log;
#   (b) a connection dropped halfway through the largest file is resumed
#       and the cached file has the right digest;
#   (c) a second run makes no request at all, and plan --dry-run says
#       cached;
#   (d) a wrong sha256 fails with exit 1 naming both digests and leaves
#       nothing at the final cache name;
#   (e) a 404 fails at once naming the URL and the status;
#   (f) a 200 with an HTML page for an IDX source without a digest is
#       refused before it reaches the cache.
# Every dtrain command runs under `timeout 60`; the server stops with the
# test (trap), when its parent is gone, and after --max-seconds at most.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

SERVER=
trap 'if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || :; fi
rm -rf "$SCRATCH"' EXIT

TRAIN_IMAGES=train-images-idx3-ubyte.gz
FILES="$TRAIN_IMAGES train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz
t10k-labels-idx1-ubyte.gz"

mkdir www
for f in $FILES; do
	cp "$FMNIST/$f" www/
done

"$PYTHON" "$top_srcdir/tests/http_server.py" --root www --log requests.log \
	--max-seconds 280 >port 2>server.err &
SERVER=$!
i=0
while [ ! -s port ]; do
	i=$((i + 1))
	[ "$i" -le 100 ] || { cat server.err >&2; fail "test server did not start"; }
	kill -0 "$SERVER" 2>/dev/null || { cat server.err >&2; fail "test server died"; }
	sleep 0.1
done
BASE="http://127.0.0.1:$(cat port)"

sha() {
	sha256sum "$1" | cut -d' ' -f1
}
size() {
	wc -c <"$1" | tr -d ' '
}

# url_job FILE [TRAIN_IMAGES_URL]: the small MLP of lib.sh on the four files
# from the server, a few steps, one evaluation at the end.
url_job() {
	timg=${2:-$BASE/$TRAIN_IMAGES}
	{
		echo "name: http"
		echo "seed: 7"
		echo "data:"
		for split in train eval; do
			echo "  $split:"
			for part in images labels; do
				case $split-$part in
				train-images) f=$TRAIN_IMAGES url=$timg ;;
				train-labels) f=train-labels-idx1-ubyte.gz ;;
				eval-images) f=t10k-images-idx3-ubyte.gz ;;
				eval-labels) f=t10k-labels-idx1-ubyte.gz ;;
				esac
				[ "$split-$part" = train-images ] || url=$BASE/$f
				echo "    $part:"
				echo "      path: $url"
				echo "      sha256: $(sha "www/$f")"
				echo "      size: $(size "www/$f")"
			done
		done
		cat <<YAML
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 32, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 96
  steps: 4
  optimizer: sgd
  lr: 0.05
eval:
  every_steps: 4
log:
  every_steps: 1
YAML
	} >"$1"
}

# requests PATH: how many requests for PATH the server has logged.
requests() {
	if [ ! -f requests.log ]; then
		echo 0
		return
	fi
	grep -c "^$1 " requests.log || :
}

run60() {
	np=$1
	shift
	timeout 60 "$MPIRUN" -np "$np" --oversubscribe --bind-to none \
		"$DTRAIN" run -q "$@"
}

# (a) Four ranks on one node: every file is downloaded once.
url_job job.yaml
export DTRAIN_CACHE="$SCRATCH/cache"
run60 4 --run-dir a job.yaml >a.out 2>a.err || { cat a.err >&2; fail "(a) np=4 run failed"; }
for f in $FILES; do
	n=$(requests "/$f")
	[ "$n" -eq 1 ] || { cat requests.log >&2; fail "(a) $f requested $n times at np=4, expected 1"; }
done
grep -q '"eval_accuracy"' a/summary.json || fail "(a) no evaluation in summary.json"
for f in $FILES; do
	c=$(ls cache/*-"$f")
	[ "$(sha "$c")" = "$(sha "www/$f")" ] || fail "(a) cached $f differs"
done

# (c) The same job again: the cache answers, the server sees nothing; plan
# says every source is cached, in text and JSON.
before=$(wc -l <requests.log)
run60 2 --run-dir c job.yaml >c.out 2>c.err || { cat c.err >&2; fail "(c) second run failed"; }
after=$(wc -l <requests.log)
[ "$before" -eq "$after" ] || { cat requests.log >&2; fail "(c) second run made $((after - before)) requests, expected 0"; }
timeout 60 "$DTRAIN" plan --dry-run job.yaml >plan.txt || fail "(c) plan failed"
[ "$(grep -c ' cached  ' plan.txt)" -eq 4 ] || { cat plan.txt >&2; fail "(c) plan does not say cached four times"; }
grep -q '^steps: .* per epoch' plan.txt || fail "(c) plan lacks the sample counts of cached data"
timeout 60 "$DTRAIN" plan --dry-run --json job.yaml >plan.json || fail "(c) plan --json failed"
"$PYTHON" - plan.json "$SCRATCH/cache" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["sources"]
if len(s) != 4 or not all(x["cached"] for x in s):
    sys.exit("(c) plan --json sources: %r" % s)
if sorted((x["split"], x["part"]) for x in s) != [
        ("eval", "images"), ("eval", "labels"),
        ("train", "images"), ("train", "labels")]:
    sys.exit("(c) plan --json splits/parts: %r" % s)
for x in s:
    if not x["url"].startswith("http://") or \
       not x["path"].startswith(sys.argv[2] + "/"):
        sys.exit("(c) plan --json url/path: %r" % x)
if d["data"]["train_samples"] != 60000:
    sys.exit("(c) train_samples %r" % d["data"]["train_samples"])
PY
# Not cached: the plan still prints, without sample counts.
DTRAIN_CACHE="$SCRATCH/empty-cache" timeout 60 "$DTRAIN" plan --dry-run \
	job.yaml >plan2.txt || fail "(c) plan of uncached URLs failed"
[ "$(grep -c 'not cached' plan2.txt)" -eq 4 ] || { cat plan2.txt >&2; fail "(c) plan does not say not cached"; }
! grep -q '^steps:' plan2.txt || fail "(c) plan invents sample counts"
[ ! -e "$SCRATCH/empty-cache" ] || fail "(c) plan created the cache"
DTRAIN_CACHE="$SCRATCH/empty-cache" timeout 60 "$DTRAIN" plan --dry-run \
	--json job.yaml >plan2.json || fail "(c) plan --json of uncached URLs failed"
"$PYTHON" - plan2.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if any(x["cached"] for x in d["sources"]) or d["data"]["train_samples"] is not None:
    sys.exit("(c) uncached plan --json: %r %r" % (d["sources"], d["data"]))
PY

# dtrain fetch on a warm cache: one line per source, no request.
before=$(wc -l <requests.log)
timeout 60 "$DTRAIN" fetch job.yaml >fetch.out || fail "fetch on a warm cache failed"
[ "$(wc -l <requests.log)" -eq "$before" ] || fail "fetch on a warm cache made requests"
grep -q "^data.train.images $SCRATCH/cache/.*-$TRAIN_IMAGES\$" fetch.out ||
	{ cat fetch.out >&2; fail "fetch does not print the cached path"; }
[ "$(wc -l <fetch.out)" -eq 4 ] || fail "fetch printed $(wc -l <fetch.out) lines, expected 4"

# (b) The first request for the train images is cut halfway: the fetch
# resumes with a Range request, the run completes, the digest matches.
url_job drop.yaml "$BASE/fault/drop/$TRAIN_IMAGES"
export DTRAIN_CACHE="$SCRATCH/cache-b"
run60 2 --run-dir b drop.yaml >b.out 2>b.err || { cat b.err >&2; fail "(b) run after a dropped connection failed"; }
[ "$(requests "/fault/drop/$TRAIN_IMAGES")" -eq 2 ] || { cat requests.log >&2; fail "(b) expected a cut request and one resume"; }
grep -q "^/fault/drop/$TRAIN_IMAGES range=bytes=[1-9][0-9]*- status=206" requests.log ||
	{ cat requests.log >&2; fail "(b) the retry did not resume with a Range request"; }
c=$(ls cache-b/*-"$TRAIN_IMAGES")
[ "$(sha "$c")" = "$(sha "www/$TRAIN_IMAGES")" ] || fail "(b) cached file's sha256 differs"
[ -z "$(ls cache-b/ | grep '\.part$')" ] || fail "(b) a .part file is left"

# (d) A wrong sha256: exit 1, both digests named, nothing at the final name.
export DTRAIN_CACHE="$SCRATCH/cache-d"
bad=0000000000000000000000000000000000000000000000000000000000000000
good=$(sha www/train-labels-idx1-ubyte.gz)
expect_fail 1 "train-labels-idx1-ubyte.gz: sha256 mismatch: expected $bad, got $good" \
	timeout 60 "$DTRAIN" fetch --set "data.train.labels.sha256=$bad" job.yaml
expect_fail 1 "sha256 mismatch: expected $bad, got $good" \
	run60 2 --run-dir d --set "data.train.labels.sha256=$bad" job.yaml
for f in cache-d/*; do
	case $f in
	*-train-labels-idx1-ubyte.gz|*-train-labels-idx1-ubyte.gz.part)
		fail "(d) $f exists after a sha256 mismatch" ;;
	esac
done

# (e) A 404: exit 1 at once, naming the URL and the status; the same from
# fetch and run.
export DTRAIN_CACHE="$SCRATCH/cache-e"
t0=$(date +%s)
expect_fail 1 "$BASE/no-such-file.gz: HTTP 404 Not Found" \
	timeout 60 "$DTRAIN" fetch --set "data.eval.labels=$BASE/no-such-file.gz" job.yaml
expect_fail 1 "$BASE/no-such-file.gz: HTTP 404 Not Found" \
	run60 2 --run-dir e --set "data.eval.labels=$BASE/no-such-file.gz" job.yaml
t1=$(date +%s)
[ $((t1 - t0)) -lt 30 ] || fail "(e) a 404 took $((t1 - t0)) s to fail"
[ ! -e cache-e/*-no-such-file.gz ] || fail "(e) a 404 body was stored"

# (g) Under mpirun rank 0's stderr is a pipe: DTRAIN_PROGRESS_TTY (which
# `run -n` sets on a terminal) decides whether the download bars are drawn.
for tty in 1 0; do
	DTRAIN_CACHE="$SCRATCH/cache-g$tty" DTRAIN_PROGRESS_TTY=$tty \
		timeout 60 "$MPIRUN" -np 2 --oversubscribe --bind-to none \
		"$DTRAIN" run --run-dir g$tty job.yaml >g.out 2>g$tty.err ||
		{ cat g$tty.err >&2; fail "(g) run with DTRAIN_PROGRESS_TTY=$tty failed"; }
done
grep -q "$TRAIN_IMAGES .* 100%" g1.err ||
	{ cat g1.err >&2; fail "(g) no download bar with DTRAIN_PROGRESS_TTY=1"; }
! grep -q '100%' g0.err ||
	{ cat g0.err >&2; fail "(g) a download bar with DTRAIN_PROGRESS_TTY=0"; }

# (f) A 200 whose body is an HTML page, for a source with no digest:
# exit 1 naming the URL and what it starts with; nothing cached.
export DTRAIN_CACHE="$SCRATCH/cache-f"
page=$BASE/fault/html200/t10k-labels-idx1-ubyte.gz
expect_fail 1 "$page: the download is not an IDX file: it starts with \"<!DOCTYPE html>" \
	timeout 60 "$DTRAIN" fetch --set "data.eval.labels=$page" job.yaml
[ -z "$(ls cache-f/ | grep -- '-t10k-labels-idx1-ubyte.gz\(.part\)*$')" ] ||
	{ ls cache-f >&2; fail "(f) an HTML page was cached"; }

# (h) A URL with a query (a signed or token URL) is one file of any
# format, not a pattern: it was refused, exit 2, "a pattern of shards is
# read for data.format tokens, llmc and u16 only".
export DTRAIN_CACHE="$SCRATCH/cache-h"
"$DTRAIN" fetch --set "data.eval.labels=$BASE/t10k-labels-idx1-ubyte.gz?token=a" \
	job.yaml >h.out 2>h.err || { cat h.err >&2; fail "(h) a URL with a query"; }
grep -q "^data.eval.labels $SCRATCH/cache-h/[0-9a-f]*-t10k-labels-idx1-ubyte.gz$" h.out ||
	{ cat h.out >&2; fail "(h) the URL with a query was not cached"; }

# (i) An llm.c shard whose header counts more tokens than its body holds
# (a body cut short, the server's Content-Length agreeing), in a job
# with no digest: `dtrain fetch` exits 1 naming the field and caches
# nothing (it cached the shard and exited 0); a whole one is cached.
"$PYTHON" - <<'PY'
import struct
for name, count, n in (("bad-000.bin", 200, 100), ("good-000.bin", 100, 100)):
    with open("www/" + name, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, count, *([0] * 253)))
        f.write(struct.pack("<%dH" % n, *range(n)))
PY
cat >llmc.yaml <<YAML
name: llmc-http
data: {format: llmc, context: 8, train: {file: "$BASE/bad-{000..000}.bin"}}
model:
  layers:
    - {type: embedding, vocab: 128, dim: 4}
    - {type: dense, units: 128}
train: {global_batch: 2, steps: 1, optimizer: sgd, lr: 0.1}
YAML
export DTRAIN_CACHE="$SCRATCH/cache-i"
expect_fail 1 "bad-000.bin: the download is not a whole llm.c token shard: .*byte 8: header field token count is 200, but the file's 200 bytes after the header hold 100 uint16 tokens" \
	timeout 60 "$DTRAIN" fetch llmc.yaml
[ -z "$(ls cache-i/ | grep -- '-bad-000.bin\(.part\)*$')" ] ||
	{ ls cache-i >&2; fail "(i) a shard of the wrong length was cached"; }
timeout 60 "$DTRAIN" fetch --set "data.train.file=$BASE/good-{000..000}.bin" \
	llmc.yaml >i.out 2>i.err || { cat i.err >&2; fail "(i) a whole shard"; }
grep -q -- '-good-000.bin$' i.out || { cat i.out >&2; fail "(i) not cached"; }

# A bad job: exit 2 before any request.
before=$(wc -l <requests.log)
expect_fail 2 "train.steps" timeout 60 "$DTRAIN" fetch --set train.steps=-1 job.yaml
[ "$(wc -l <requests.log)" -eq "$before" ] || fail "a bad job made requests"

kill "$SERVER" 2>/dev/null || :
wait "$SERVER" 2>/dev/null || :
SERVER=
echo "http: one download per file at np=4, resume after a cut, cache hits, errors named"
