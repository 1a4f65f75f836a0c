#!/bin/sh
# SPDX-License-Identifier: MIT
# `make install DESTDIR=...`: the program, the manual pages, the README,
# doc/DESIGN.md,
# the example jobs and the torch loader (contrib/dtrain_torch.py) under
# the docdir (where dtrain(1) says), the bash
# completion script where bash-completion looks; the installed example
# plans; and the completion script completes a command, an option and a
# --set key and the words such a key takes (eval.monitor=loss ...).
. "${top_srcdir}/tests/integration/lib.sh"
build=$(dirname "$DTRAIN")
dest=$SCRATCH/dest
make -s -C "$build" install DESTDIR="$dest" prefix=/usr >make.out 2>&1 ||
	{ cat make.out >&2; fail "make install failed"; }
for f in bin/dtrain share/man/man1/dtrain.1 share/man/man5/dtrain-job.5 \
	share/doc/dtrain/README share/doc/dtrain/COPYING \
	share/doc/dtrain/DESIGN.md \
	share/doc/dtrain/examples/fashion-mnist-mlp.yaml \
	share/doc/dtrain/examples/fashion-mnist-cnn.yaml \
	share/doc/dtrain/examples/char-gpt.yaml \
	share/doc/dtrain/contrib/dtrain_torch.py \
	share/bash-completion/completions/dtrain; do
	[ -f "$dest/usr/$f" ] || fail "make install did not install /usr/$f"
done
for j in "$top_srcdir"/jobs/*.yaml; do
	cmp "$j" "$dest/usr/share/doc/dtrain/examples/$(basename "$j")" ||
		fail "$(basename "$j") is not installed as it is"
done
cmp "$top_srcdir/contrib/dtrain_torch.py" \
	"$dest/usr/share/doc/dtrain/contrib/dtrain_torch.py" ||
	fail "contrib/dtrain_torch.py is not installed as it is"
grep -q 'share/doc/dtrain/contrib' "$top_srcdir/man/dtrain.1" ||
	fail "dtrain(1) does not say where the torch loader is"
grep -q 'share/doc/dtrain/examples' "$top_srcdir/man/dtrain.1" ||
	fail "dtrain(1) does not say where the examples are"
if [ -f "$FMNIST/train-images-idx3-ubyte.gz" ]; then
	"$dest/usr/bin/dtrain" plan --dry-run \
		"$dest/usr/share/doc/dtrain/examples/fashion-mnist-mlp.yaml" \
		>plan.out || fail "the installed example does not plan"
fi

# complete WORDS...: what _dtrain offers for the last word.
complete_words() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
		_dtrain; echo "${COMPREPLY[*]}"' sh \
		"$dest/usr/share/bash-completion/completions/dtrain" "$@"
}
[ "$(complete_words dtrain res)" = resume ] ||
	fail "res completes to '$(complete_words dtrain res)'"
[ "$(complete_words dtrain p)" = "plan predict" ] || fail "p: $(complete_words dtrain p)"
[ "$(complete_words dtrain pl)" = plan ] || fail "pl: $(complete_words dtrain pl)"
[ "$(complete_words dtrain run --max)" = --max-restarts ] ||
	fail "run --max: $(complete_words dtrain run --max)"
[ "$(complete_words dtrain plan --print)" = --print-job ] ||
	fail "plan --print: $(complete_words dtrain plan --print)"
[ "$(complete_words dtrain run --set train.l)" = train.lr= ] ||
	fail "--set train.l: $(complete_words dtrain run --set train.l)"
got=$(complete_words dtrain run --set checkpoint.k)
[ "$got" = checkpoint.keep_last= ] || fail "--set checkpoint.k: $got"
# the values of a key with words, however bash split at the =
got=$(complete_words dtrain run --set eval.monitor = '')
[ "$got" = "loss accuracy perplexity" ] || fail "--set eval.monitor=: $got"
# At the = itself readline replaces the empty text after it, so the
# words come without an = of their own: "eval.monitor=" + "loss", never
# "eval.monitor==loss" (the old script offered "=loss").
got=$(complete_words dtrain run --set eval.monitor =)
[ "$got" = "loss accuracy perplexity" ] || fail "--set eval.monitor= (at =): $got"
line="dtrain run --set data.text_unit=$(complete_words dtrain run --set \
	data.text_unit = | cut -d' ' -f1)"
[ "$line" = "dtrain run --set data.text_unit=bytes" ] ||
	fail "--set data.text_unit=<Tab> reads '$line'"
got=$(complete_words dtrain run --set model.layers.2.activation=ge)
[ "$got" = model.layers.2.activation=gelu ] || fail "--set ...activation=ge: $got"
got=$(complete_words dtrain plan --set parallel.overlap = f)
[ "$got" = false ] || fail "--set parallel.overlap=f: $got"
[ -z "$(complete_words dtrain run --set train.lr = '')" ] ||
	fail "--set train.lr= offers words"
[ "$(complete_words dtrain help sam)" = sample ] || fail "help sam"
[ "$(complete_words dtrain rep)" = report ] || fail "rep: $(complete_words dtrain rep)"
[ "$(complete_words dtrain report --o)" = --output ] ||
	fail "report --o: $(complete_words dtrain report --o)"
# Every command of `dtrain help` completes, and nothing else does.
want=$("$DTRAIN" help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p' | sort | tr '\n' ' ')
got=$(complete_words dtrain '' | tr ' ' '\n' | grep -v '^-' | sort | tr '\n' ' ')
[ "$want" = "$got" ] || fail "commands: want '$want', completion has '$got'"
