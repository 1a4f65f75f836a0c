#!/bin/sh
# SPDX-License-Identifier: MIT
# -o never replaces a file the command reads or a file of the run: export,
# report and predict refuse, with exit 2, an -o that names an existing file
# of the run directory (however spelt: ./r/../r/x, or a symbolic link), and
# predict and tokenize one that names their input (the tokenizer too). Each
# refusal names the file and why, and leaves every byte as it was: the run
# still resumes and evaluates. Before the fix each of these commands wrote
# over the file and exited 0. A command's own default file
# (r/model.safetensors, r/report.html) and files elsewhere are still
# written.
. "${top_srcdir}/tests/integration/lib.sh"

sed "s|data/tabular|$top_srcdir/jobs/data/tabular|" \
	"$top_srcdir/jobs/tabular-csv.yaml" >job.yaml
timeout 120 "$DTRAIN" run -q --run-dir r --set train.steps=3 job.yaml \
	>run.out 2>run.err || { cat run.err >&2; fail "the 3-step run failed"; }
ckpt=r/checkpoints/step-000000003
[ -f "$ckpt/params.safetensors" ] || fail "no checkpoint of step 3 in $ckpt"
head -6 "$top_srcdir/jobs/data/tabular-eval.csv" >x.csv
printf 'the cat sat on the mat; the cat ate the rat\n' >small.txt
"$DTRAIN" tokenize --vocab-size 260 -o tok.json small.txt >/dev/null ||
	fail "tokenize could not learn tok.json"
ln -s r/metrics.jsonl link.jsonl
ln -s small.txt link.txt

# The bytes that must survive.
sums() {
	find r x.csv small.txt tok.json -type f ! -name lock | LC_ALL=C sort |
		xargs sha256sum
}
sums >before

run_dir='is a file of the run directory r; write elsewhere'
for o in r/job.yaml ./r/../r/metrics.jsonl "$SCRATCH/r/summary.json" \
	r/plan.json "$ckpt/params.safetensors" link.jsonl; do
	expect_fail 2 "^dtrain export: -o $o $run_dir\$" \
		"$DTRAIN" export -o "$o" r
	expect_fail 2 "^dtrain report: -o $o $run_dir\$" \
		"$DTRAIN" report -o "$o" r
	expect_fail 2 "^dtrain predict: -o $o $run_dir\$" \
		"$DTRAIN" predict --input x.csv -o "$o" r
done
# Another command's default file is still the run's: export keeps off
# r/report.html.
: >r/report.html
expect_fail 2 "^dtrain export: -o r/report.html $run_dir\$" \
	"$DTRAIN" export -o r/report.html r
rm r/report.html

expect_fail 2 '^dtrain predict: -o x.csv is the input x.csv; write elsewhere$' \
	"$DTRAIN" predict --input x.csv -o x.csv r
expect_fail 2 '^dtrain predict: -o ./x.csv is the input x.csv; write elsewhere$' \
	"$DTRAIN" predict --input x.csv -o ./x.csv r
for o in small.txt link.txt "$SCRATCH/small.txt"; do
	expect_fail 2 "^dtrain tokenize: -o $o is the input small.txt; write elsewhere\$" \
		"$DTRAIN" tokenize -t tok.json -o "$o" small.txt
	expect_fail 2 "^dtrain tokenize: -o $o is the input small.txt; write elsewhere\$" \
		"$DTRAIN" tokenize --vocab-size 260 -o "$o" small.txt
done
expect_fail 2 '^dtrain tokenize: -o tok.json is the input tok.json; write elsewhere$' \
	"$DTRAIN" tokenize -t tok.json -o tok.json small.txt

sums >after
cmp -s before after || { diff before after >&2; fail "a refused -o changed a file"; }

# What stays allowed: the command's own file in the run, and files elsewhere.
"$DTRAIN" export -o r/model.safetensors r >/dev/null ||
	fail "export -o r/model.safetensors was refused"
cmp -s r/model.safetensors "$ckpt/params.safetensors" ||
	fail "r/model.safetensors is not the step-3 parameters"
"$DTRAIN" report -o r/report.html r >/dev/null ||
	fail "report -o r/report.html was refused"
"$DTRAIN" predict --input x.csv -o p.npy r >/dev/null 2>&1 ||
	fail "predict -o p.npy was refused"
"$DTRAIN" tokenize -t tok.json -o small.tok small.txt >/dev/null ||
	fail "tokenize -o small.tok was refused"

# The run is whole: it resumes to step 5 and evaluates.
timeout 120 "$DTRAIN" resume -q --set train.steps=5 r >resume.out 2>resume.err ||
	{ cat resume.err >&2; fail "the run no longer resumes"; }
[ -f r/checkpoints/step-000000005/params.safetensors ] ||
	fail "the resume made no checkpoint of step 5"
"$DTRAIN" eval r >eval.out 2>eval.err ||
	{ cat eval.err >&2; fail "the run no longer evaluates"; }
grep -q 'step 5' eval.out || { cat eval.out >&2; fail "eval did not use step 5"; }
echo "output-guard: export, report, predict and tokenize refuse an -o that is the run's or the input"
