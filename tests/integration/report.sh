#!/bin/sh
# SPDX-License-Identifier: MIT
# dtrain report on a short Fashion-MNIST run with evaluations, loaded in
# headless Chromium:
# - the page is one file that names no other (no src=, href=, <link>,
#   url(), fetch); -o writes the same bytes as the default place;
# - its script drew every chart: <body data-status="ok">, as many charts
#   and, for the loss chart and in all, as many points as metrics.jsonl
#   holds (counted again here with Python, by the rules of dtrain(1));
#   no console message was logged; a screenshot is written;
# - a copy of the run given a per-interval "breakdown" and summary.json
#   "ranks" (as issue 14's breakdown writes them) gets the breakdown
#   chart and one bar segment per rank and time;
# - job.yaml text that looks like markup is shown as text;
# - a bad metrics.jsonl or summary.json line is refused naming the file
#   and the line; a directory without metrics.jsonl is bad usage;
# - the browser check itself refuses a page whose script fails.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist

CHROMIUM=${CHROMIUM:-}
if [ -z "$CHROMIUM" ]; then
	for c in chromium chromium-browser google-chrome; do
		if command -v "$c" >/dev/null 2>&1; then CHROMIUM=$c; break; fi
	done
fi
if [ -z "$CHROMIUM" ]; then
	echo "SKIP: no chromium (apt-get install chromium)"
	exit 77
fi

"$DTRAIN" run -q "$top_srcdir/jobs/fashion-mnist-mlp.yaml" \
	--set name=rep --set train.steps=20 --set eval.every_steps=5 \
	--set log.every_steps=2 >/dev/null 2>run.err ||
	{ cat run.err >&2; fail "training failed"; }

"$DTRAIN" report runs/rep >out.txt || fail "report failed"
grep -qx 'runs/rep/report.html' out.txt || fail "report did not name its file"
[ -s runs/rep/report.html ] || fail "no runs/rep/report.html"
"$DTRAIN" report -o other.html runs/rep >/dev/null
cmp runs/rep/report.html other.html || fail "-o wrote another page"
if grep -Eiq '(src|href) *=|<link|url\(|@import|fetch\(|XMLHttpRequest' \
	runs/rep/report.html; then
	fail "the page refers to something outside it"
fi

# browse PAGE NAME: the DOM after the page's scripts ran into NAME.dom,
# the browser's log into NAME.log; fails if the browser does not run.
browse() {
	timeout 120 "$CHROMIUM" --headless --disable-gpu --no-sandbox \
		--user-data-dir="$SCRATCH/chrome-$2" --enable-logging=stderr \
		--v=0 --dump-dom "file://$SCRATCH/$1" >"$2.dom" 2>"$2.log" ||
		{ cat "$2.log" >&2; fail "chromium failed on $1"; }
}

# check_page NAME: what the dump of NAME shows against metrics.jsonl and
# summary.json of the run directory $3 (the counts of dtrain(1)'s rules).
check_page() {
	"$PYTHON" - "$1.dom" "$1.log" "$2" <<'PY'
import json, re, sys
dom, log, run = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
errors = []
for line in log.splitlines():
    if ":CONSOLE" in line:
        errors.append("console: " + line)
m = re.search(r'<body([^>]*)>', dom)
attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1) if m else ""))
if attrs.get("data-status") != "ok":
    errors.append("data-status is %r, not 'ok'" % attrs.get("data-status"))
series = {"loss": [("loss",), ("eval_loss",)],
          "accuracy": [("eval_accuracy",)],
          "samples_per_s": [("samples_per_s",)],
          "tokens_per_s": [("tokens_per_s",)], "lr": [("lr",)],
          "grad_norm": [("grad_norm",)],
          "breakdown": [("breakdown", k) for k in
                        ("compute_s", "comm_wait_s", "data_wait_s", "optim_s")],
          "slowest": [("slowest", k) for k in
                      ("compute_s", "comm_wait_s", "data_wait_s", "optim_s")],
          "data_wait_s": [("data_wait_s",)]}
counts = dict((c, 0) for c in series)
for line in open(run + "/metrics.jsonl"):
    o = json.loads(line)
    for c, keys in series.items():
        for k in keys:
            v = o
            for part in k:
                v = v.get(part) if isinstance(v, dict) else None
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                counts[c] += 1
if counts["breakdown"]:
    counts["data_wait_s"] = 0
want = dict((c, n) for c, n in counts.items() if n)
try:
    ranks = json.load(open(run + "/summary.json")).get("ranks") or []
except FileNotFoundError:
    ranks = []
if ranks:
    want["ranks"] = 4 * len(ranks)
got = dict(re.findall(r'<svg[^>]*data-chart="([\w]+)"[^>]*data-points="(\d+)"',
                      dom))
got = dict((k, int(v)) for k, v in got.items())
if got != want:
    errors.append("charts and points drawn %r, expected %r" % (got, want))
if attrs.get("data-charts") != str(len(want)):
    errors.append("data-charts %r, expected %d" % (attrs.get("data-charts"),
                                                 len(want)))
if attrs.get("data-points") != str(sum(want.values())):
    errors.append("data-points %r, expected %d" % (attrs.get("data-points"),
                                                 sum(want.values())))
if errors:
    sys.exit("\n".join(errors))
print("%d charts, %d points: %s" % (len(want), sum(want.values()), want))
PY
}

cp runs/rep/report.html rep.html
browse rep.html rep
check_page rep runs/rep || fail "the report of runs/rep did not render"
grep -q 'data-chart="loss"' rep.dom || fail "no loss chart"
grep -q 'data-chart="accuracy"' rep.dom || fail "no accuracy chart"
timeout 120 "$CHROMIUM" --headless --disable-gpu --no-sandbox \
	--user-data-dir="$SCRATCH/chrome-shot" --window-size=1200,2400 \
	--screenshot="$SCRATCH/rep.png" "file://$SCRATCH/rep.html" \
	>/dev/null 2>&1 || fail "chromium --screenshot failed"
head -c 8 rep.png | od -An -c | grep -q 'P   N   G' ||
	fail "no PNG screenshot"
if [ -n "${DTRAIN_REPORT_SHOT:-}" ]; then cp rep.png "$DTRAIN_REPORT_SHOT"; fi

# The per-rank time of issue 14, written into a copy of the run: the
# breakdown chart replaces the data-wait one, and the bars appear.
cp -r runs/rep fake
"$PYTHON" - fake <<'PY'
import json, sys
d = sys.argv[1]
lines = [json.loads(l) for l in open(d + "/metrics.jsonl")]
with open(d + "/metrics.jsonl", "w") as f:
    for o in lines:
        if "loss" in o:
            o["breakdown"] = {"compute_s": 0.5, "comm_wait_s": 0.1,
                              "data_wait_s": 0.01, "optim_s": 0.05}
            o["slowest"] = {"rank": 1, "compute_s": 0.6, "comm_wait_s": 0.1,
                            "data_wait_s": 0.02, "optim_s": 0.05}
        f.write(json.dumps(o) + "\n")
s = json.load(open(d + "/summary.json"))
s["ranks"] = [{"rank": r, "compute_s": 5.0 + r, "comm_wait_s": 1.0,
               "data_wait_s": 0.1, "optim_s": 0.5} for r in range(3)]
json.dump(s, open(d + "/summary.json", "w"))
with open(d + "/job.yaml", "a") as f:
    f.write("# </pre><script>document.title='x'</script><b id=inj>\n")
PY
"$DTRAIN" report -o fake.html fake >/dev/null
browse fake.html fake
check_page fake fake || fail "the report with a breakdown did not render"
grep -q 'data-chart="breakdown"' fake.dom || fail "no breakdown chart"
grep -q 'data-chart="ranks"' fake.dom || fail "no per-rank bars"
grep -q 'id="inj"' fake.dom && fail "job.yaml text became markup"
grep -q '&lt;/pre&gt;&lt;script&gt;' fake.dom ||
	fail "job.yaml's markup-like text is not shown as text"

# The checker refuses a page whose script fails.
sed 's/var charts = 0, points = 0;/&  no_such_function();/' rep.html >bad.html
cmp -s rep.html bad.html && fail "could not damage the page"
browse bad.html bad
if check_page bad runs/rep 2>bad.why; then
	fail "the check passed a page whose script fails"
fi
grep -q 'console' bad.why || fail "the console error was not seen"

# Errors name the file and the line.
cp -r runs/rep broken
rm -f broken/report.html
sed -i '3s/.*/{"step": 4, "loss": 1.0,/' broken/metrics.jsonl
expect_fail 1 'broken/metrics.jsonl:3: not JSON' "$DTRAIN" report broken
# A last line cut short (the run is writing it, or was killed): left out,
# saying so; the page is written from the lines before it.
cp runs/rep/metrics.jsonl broken/metrics.jsonl
printf '{"step": 99, "loss": 0.5' >>broken/metrics.jsonl
"$DTRAIN" report broken >/dev/null 2>cut.err ||
	{ cat cut.err >&2; fail "report refused a run whose last line is unfinished"; }
grep -q "broken/metrics.jsonl:$(($(wc -l <runs/rep/metrics.jsonl) + 1)): an unfinished last line" cut.err ||
	{ cat cut.err >&2; fail "no warning for the unfinished last line"; }
rm -f broken/report.html
cp runs/rep/metrics.jsonl broken/metrics.jsonl
sed -i '4s/"loss"/"loss": "high", "x"/' broken/metrics.jsonl
expect_fail 1 'broken/metrics.jsonl:4: loss: expected a number' \
	"$DTRAIN" report broken
cp runs/rep/metrics.jsonl broken/metrics.jsonl
sed -i '5s/,$/,,/' broken/summary.json
expect_fail 1 'broken/summary.json:5: not JSON' "$DTRAIN" report broken
[ -e broken/report.html ] && fail "a refused report left a page"
mkdir empty
expect_fail 2 'empty: not a run directory \(no metrics.jsonl\)' \
	"$DTRAIN" report empty
echo "report: ok"
