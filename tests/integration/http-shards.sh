#!/bin/sh
# SPDX-License-Identifier: MIT
# llm.c shards named by a URL pattern (data.train.file:
# http://127.0.0.1:PORT/shard-{000000..000009}.bin), served by
# tests/http_server.py on 127.0.0.1, read by 2 ranks on one host:
#   (a) each rank reads every shard's header with one ranged request
#       (bytes=0-1023); a shard's body is downloaded only when a window of
#       it is first read, and once per host: 3 steps of 2 windows touch 6
#       of the 10 one-window shards, so 6 whole downloads, 6 distinct
#       shards, and the other 4 never fetched;
#   (b) data.cache_max_bytes 2200 holds two shards (1064..1082 bytes), not
#       three: the shard files in the cache never pass 2200 bytes (sampled
#       while the run goes) and at the end at most two are left, so the
#       others were evicted;
#   (c) the losses equal, bit for bit, those of the same job on the local
#       files;
#   (d) a glob in a URL pattern and a bound below the largest shard are
#       refused before training (exit 2), naming the pattern, or the
#       setting's place, the shard and the bound it needs.
# On the tree before this change a URL pattern was refused outright.
. "${top_srcdir}/tests/integration/lib.sh"

SERVER=
WATCH=
trap 'for p in $SERVER $WATCH; do kill "$p" 2>/dev/null || :; done
rm -rf "$SCRATCH"' EXIT
export DTRAIN_CACHE="$SCRATCH/cache"

mkdir www
# Shard i holds 20 + i tokens (ids below 60): one window of 16 and its
# target each, 1024 + 2 * (20 + i) bytes.
"$PYTHON" - <<'PY'
import struct
x = 4242
for i in range(10):
    n = 20 + i
    toks = []
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        toks.append((x >> 16) % 60)
    with open("www/shard-%06d.bin" % i, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
        f.write(struct.pack("<%dH" % n, *toks))
PY

"$PYTHON" "$top_srcdir/tests/http_server.py" --root www --log requests.log \
	--max-seconds 250 >port 2>server.err &
SERVER=$!
i=0
while [ ! -s port ]; do
	i=$((i + 1))
	[ "$i" -le 100 ] || { cat server.err >&2; fail "test server did not start"; }
	kill -0 "$SERVER" 2>/dev/null || { cat server.err >&2; fail "test server died"; }
	sleep 0.1
done
BASE="http://127.0.0.1:$(cat port)"

# job FILE PATTERN: a tiny GPT, 2 windows a step, 3 steps, no held-out
# tail (every window is a training window), no batch prepared ahead (the
# loader's data.prefetch would read the windows of steps 4 and 5 too) and
# no shard fetched ahead (data.prefetch_shards: a cache of two shards is
# too small for 2 ranks each reading one and fetching the next, so one
# would be fetched twice; tests/cluster/http-shards-hosts.sh tests that).
job() {
	cat >"$1" <<YAML
name: http-shards
seed: 3
data:
  format: llmc
  train:
    file: $2
  context: 16
  eval_fraction: 0
  prefetch: 0
  prefetch_shards: 0
  cache_max_bytes: 2200
model:
  input_shape: [16]
  layers:
    - {type: embedding, name: tok, vocab: 64, dim: 8}
    - {type: pos_embedding, name: pos, length: 16, dim: 8}
    - {type: attention, name: attn, heads: 2, causal: true}
    - {type: add, name: res, inputs: [pos, attn]}
    - {type: dense, name: head, units: 64}
train:
  global_batch: 2
  micro_batch: 1
  steps: 3
  optimizer: adamw
  lr: 0.01
parallel:
  blas_threads: 1
log:
  every_steps: 1
YAML
}
job url.yaml "$BASE/shard-{000000..000009}.bin"
job local.yaml "$SCRATCH/www/shard-{000000..000009}.bin"

# The shard files in the cache, in bytes, sampled every 20 ms.
mkdir cache
(
	while :; do
		b=0
		for f in cache/*-shard-*.bin; do
			[ -f "$f" ] || continue
			# A file evicted between the test and the read
			# counts 0 (an empty $(...) would end the shell).
			s=$(wc -c <"$f" 2>/dev/null) || s=0
			b=$((b + ${s:-0}))
		done 2>/dev/null
		echo "$b"
		sleep 0.02
	done
) >sizes.log &
WATCH=$!

mpi 2 "$DTRAIN" run -q --run-dir url url.yaml >/dev/null 2>url.err ||
	{ cat url.err >&2; fail "2 ranks on a URL pattern of llm.c shards"; }
kill "$WATCH"
WATCH=

# (a) Requests at the server.
heads=$(grep -c ' range=bytes=0-1023 status=206' requests.log || :)
[ "$heads" -eq 20 ] ||
	{ cat requests.log >&2; fail "(a) $heads header requests, expected 10 per rank (20)"; }
grep ' range=- status=200' requests.log >whole.log || :
whole=$(wc -l <whole.log)
distinct=$(cut -d' ' -f1 whole.log | sort -u | wc -l)
[ "$whole" -eq 6 ] && [ "$distinct" -eq 6 ] ||
	{ cat requests.log >&2; fail "(a) $whole whole downloads of $distinct shards, expected 6 of 6 (each read shard once per host)"; }
others=$(grep -vc -e ' range=bytes=0-1023 status=206' -e ' range=- status=200' requests.log || :)
[ "$others" -eq 0 ] || { cat requests.log >&2; fail "(a) $others other requests"; }
echo "ok: (a) 20 header requests, 6 whole downloads of 6 distinct shards out of 10"

# (b) The bound.
max=$(sort -n sizes.log | tail -1)
[ "$(wc -l <sizes.log)" -ge 2 ] || fail "(b) the cache was not sampled"
[ "$max" -le 2200 ] || fail "(b) the cache held $max bytes of shards, over data.cache_max_bytes 2200"
left=$(ls cache/*-shard-*.bin 2>/dev/null | wc -l)
[ "$left" -ge 1 ] && [ "$left" -le 2 ] ||
	fail "(b) $left shard files left in the cache, expected 1 or 2 (the others evicted)"
echo "ok: (b) at most $max bytes of shards in the cache, $left left of 6 fetched"

# (c) The same job on the local files.
mpi 2 "$DTRAIN" run -q --run-dir local local.yaml >/dev/null 2>local.err ||
	{ cat local.err >&2; fail "2 ranks on the local shards"; }
losses url >url.losses
losses local >local.losses
[ "$(wc -l <url.losses)" -eq 3 ] || fail "(c) expected 3 losses, got $(wc -l <url.losses)"
cmp url.losses local.losses ||
	{ paste url.losses local.losses >&2; fail "(c) the losses over HTTP differ from the local files'"; }
echo "ok: (c) the 3 losses over HTTP equal the local run's bit for bit"

# (d) Refusals before training.
expect_fail 2 "a pattern of URLs takes brace ranges" \
	timeout 60 "$DTRAIN" run -q --run-dir d1 \
	--set "data.train.file=$BASE/shard-*.bin" url.yaml
# A bound below the largest shard (shard 9, 1024 + 2 * 29 bytes) is a
# bad setting: exit 2 naming where it was given, the shard and the bound
# it needs (it was exit 1, naming the first shard over the bound).
big=$(wc -c <www/shard-000009.bin)
[ "$big" -eq 1082 ] || fail "(d) shard 9 is $big bytes, expected 1082"
expect_fail 2 "^dtrain: --set data.cache_max_bytes=1070: data.cache_max_bytes: 1070 bytes cannot hold shard 9 \\($BASE/shard-000009.bin\\) of 1082 bytes; give at least 1082, the largest shard" \
	timeout 60 "$DTRAIN" run -q --run-dir d2 \
	--set data.cache_max_bytes=1070 url.yaml
sed 's/cache_max_bytes: 2200/cache_max_bytes: 1081/' url.yaml >small.yaml
line=$(grep -n 'cache_max_bytes: 1081' small.yaml | cut -d: -f1)
expect_fail 2 "small.yaml:$line:[0-9]+: data.cache_max_bytes: 1081 bytes cannot hold shard 9 .* give at least 1082" \
	timeout 60 "$DTRAIN" run -q --run-dir d3 small.yaml
[ ! -e d2 ] && [ ! -e d3 ] || fail "(d) a refused run left its run directory"
echo "ok: (d) a URL glob and a shard over the bound are refused"
