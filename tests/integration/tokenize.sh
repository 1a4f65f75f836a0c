#!/bin/sh
# SPDX-License-Identifier: MIT
# dtrain tokenize end to end: a tokenizer learned from a fortunes text has
# exactly the size asked (or says why fewer), the same text gives the same
# file twice, and encoding then decoding gives back every byte of the
# whole fortunes corpus (every file ./bootstrap installs, concatenated),
# of random bytes and of invalid UTF-8; the token file is uint16 ids that
# data.format: tokens reads; malformed tokenizers and token files and bad
# usage are refused with the file and the place, and exit 1 or 2.
. "${top_srcdir}/tests/integration/lib.sh"

FORTUNES=/usr/share/games/fortunes
if [ ! -f "$FORTUNES/cookie" ]; then
	echo "SKIP: $FORTUNES missing (apt-get install fortunes)"
	exit 77
fi

"$DTRAIN" tokenize --vocab-size 1000 -o tok.json "$FORTUNES/cookie" >out
grep -q '^tok.json: 1000 tokens (256 bytes and 744 merges)$' out ||
	fail "learn: $(cat out)"
"$DTRAIN" tokenize --vocab-size 1000 -o tok2.json "$FORTUNES/cookie" >/dev/null
cmp -s tok.json tok2.json || fail "the same text gave two tokenizers"
"$PYTHON" - <<'PY' || fail "tok.json is not the tokenizer.json expected"
import json
t = json.load(open("tok.json"))
v, m = t["model"]["vocab"], t["model"]["merges"]
assert t["model"]["type"] == "BPE" and len(v) == 1000 and len(m) == 744
assert sorted(v.values()) == list(range(1000))
assert v["!"] == 0 and v["\u0120"] == 220 and v["\u010a"] == 198
PY

# the whole corpus, byte for byte
for f in "$FORTUNES"/*; do
	case $f in *.dat|*.u8) ;; *) [ -f "$f" ] && cat "$f" ;; esac
done >corpus.txt
[ "$(wc -c <corpus.txt)" -gt 1000000 ] || fail "corpus too small"
"$DTRAIN" tokenize -t tok.json -o corpus.tok corpus.txt >out
n=$(sed -n 's/^corpus.tok: \([0-9]*\) tokens (uint16)$/\1/p' out)
[ -n "$n" ] || fail "encode: $(cat out)"
[ "$(wc -c <corpus.tok)" -eq $((2 * n)) ] || fail "corpus.tok is not uint16"
"$DTRAIN" tokenize -t tok.json --decode -o corpus.back corpus.tok
cmp corpus.txt corpus.back || fail "the corpus did not come back"
"$DTRAIN" tokenize -t tok.json -o again.tok corpus.txt >/dev/null
cmp -s corpus.tok again.tok || fail "encoding is not deterministic"

# random bytes and invalid UTF-8
head -c 300000 /dev/urandom >random.bin
printf '\377\376a\303( \355\240\200 \364\220\200\200 \300\257\342\202' >bad.bin
for f in random.bin bad.bin; do
	"$DTRAIN" tokenize -t tok.json -o "$f.tok" "$f" >/dev/null
	"$DTRAIN" tokenize -t tok.json --decode -o "$f.back" "$f.tok"
	cmp "$f" "$f.back" || fail "$f did not come back"
done

# fewer than asked, and why
printf 'abab abab' >tiny.txt
"$DTRAIN" tokenize --vocab-size 300 -o tiny.json tiny.txt >out 2>err
grep -q 'tiny.txt: 259 tokens, not the 300 asked for: after 3 merges' err ||
	fail "no reason for fewer tokens: $(cat err)"

# refused: a merge naming an unknown token in GPT-2's pair, bad JSON, a
# token file that ends inside a token or holds an id past the vocabulary
"$PYTHON" - <<'PY'
import json
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs = bs[:] + [256 + k for k in range(256 - len(bs))]
bs += [b for b in range(256) if b not in bs]
enc = {chr(c): i for i, c in enumerate(cs)}
enc["\u0120t"] = 256
json.dump(enc, open("encoder.json", "w"))
open("vocab.bpe", "w").write("#version: 0.2\n\u0120 t\nh qq\n")
PY
expect_fail 1 'vocab.bpe:3:3: the merge names "qq", which is not in the vocabulary' \
	"$DTRAIN" tokenize -t encoder.json -o x.tok tiny.txt
printf '{"a": 0,,}' >broken.json
expect_fail 1 'broken.json:1:9: invalid JSON' \
	"$DTRAIN" tokenize -t broken.json -o x.tok tiny.txt
# a tokenizer.json that lost its "model" is read as GPT-2's encoder.json:
# the message says so (it named only "version" and an id range)
printf '{"version": "1.0", "added_tokens": []}' >nomodel.json
expect_fail 1 'nomodel.json: "version": expected an id .* found "1.0" \(a file without a "model" key is read as GPT-2.s encoder.json\)$' \
	"$DTRAIN" tokenize -t nomodel.json -o x.tok tiny.txt
printf 'abc' >odd.tok
expect_fail 1 'odd.tok: byte 2: the file ends inside a token' \
	"$DTRAIN" tokenize -t tok.json --decode -o x.txt odd.tok
printf '\350\003' >big.tok
expect_fail 1 'big.tok: byte 0: token 1000 is not below' \
	"$DTRAIN" tokenize -t tok.json --decode -o x.txt big.tok
[ ! -e x.txt ] && [ ! -e x.tok ] || fail "a refused run left a file"

# usage
expect_fail 2 'give --vocab-size' "$DTRAIN" tokenize -o x tiny.txt
expect_fail 2 'give --vocab-size' \
	"$DTRAIN" tokenize --vocab-size 300 -t tok.json -o x tiny.txt
expect_fail 2 '-o output is required' "$DTRAIN" tokenize -t tok.json tiny.txt
expect_fail 2 'vocab-size' "$DTRAIN" tokenize --vocab-size 255 -o x tiny.txt
expect_fail 2 'decode needs -t' "$DTRAIN" tokenize --decode -o x tiny.txt
echo "ok: dtrain tokenize learns, encodes and round-trips $n tokens"
