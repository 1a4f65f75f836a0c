#!/bin/sh
# SPDX-License-Identifier: MIT
# dtrain report on a run directory whose summary.json and metrics.jsonl
# hold numbers that json-c's lenient reader takes but JSON does not (0.,
# 00.5, -0.e1, NaN, Infinity, -Infinity, 1e999): the page's data block
# parses with Python's json module refusing NaN and Infinity (as a
# browser's JSON.parse does), the numbers come out as their values (0.0,
# 0.5, -0.0), and NaN and the infinities as null in summary.json's
# "ranks" and left out of the curves (as dtrain's own null is). Before
# issue 31 the page carried "0.", "00.5" and "NaN" as they were read.
. "${top_srcdir}/tests/integration/lib.sh"
mkdir run
cat >run/summary.json <<'EOF2'
{"name": "hostile", "steps": 3, "eval_loss": 0.,
 "ranks": [{"rank": 0, "compute_s": 0., "comm_wait_s": 00.5,
            "data_wait_s": NaN, "optim_s": -Infinity},
           {"rank": 1, "compute_s": 1e999, "comm_wait_s": -0.e1,
            "data_wait_s": 2, "optim_s": 0.25}]}
EOF2
cat >run/metrics.jsonl <<'EOF2'
{"step": 1, "loss": 0., "lr": 00.5, "grad_norm": NaN}
{"step": 2, "loss": 1.5, "lr": -0.e1, "grad_norm": Infinity}
{"step": 3, "loss": 2, "eval_loss": NaN, "eval_accuracy": 00.25}
EOF2
"$DTRAIN" report run >out.txt 2>err.txt || { cat err.txt >&2; fail "report refused the run"; }
"$PYTHON" - run/report.html <<'PY' || fail "the page's JSON"
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script id="dt-data" type="application/json">(.*?)</script>',
              page, re.S)
assert m, "no data block"
def refuse(c):
    raise ValueError("not JSON: " + c)
data = json.loads(m.group(1), parse_constant=refuse)
ranks = data["bars"]["ranks"]
assert ranks == [{"rank": 0, "compute_s": 0.0, "comm_wait_s": 0.5,
                  "data_wait_s": None, "optim_s": None},
                 {"rank": 1, "compute_s": None, "comm_wait_s": -0.0,
                  "data_wait_s": 2, "optim_s": 0.25}], ranks
series = dict((c["id"] + "/" + s["name"], s["points"])
              for c in data["charts"] for s in c["series"])
want = {"loss/train": [[1, 0.0], [2, 1.5], [3, 2.0]],
        "lr/lr": [[1, 0.5], [2, -0.0]],
        "accuracy/eval": [[3, 0.25]]}
for k, v in want.items():
    assert series.get(k) == v, (k, series.get(k))
assert "grad_norm/grad_norm" not in series, series
assert "loss/eval" not in series, series
PY
echo "ok: the page's data is strict JSON; NaN and the infinities null or left out"
