#!/bin/sh
# SPDX-License-Identifier: MIT
# The per-rank time breakdown and the new metrics.jsonl fields (dtrain(1),
# FILES). On 1 and 2 ranks: every step line has an ISO 8601 UTC "time"
# inside the run's wall-clock span, "elapsed_s" that grows, a finite
# "grad_norm" (the same on 1 and 2 ranks, as the gradient is), and a
# "breakdown" whose four parts add up to the time between lines, and
# "passes", rank 0's compute_s split into forward_s and backward_s; rank 0's
# windows add up to its totals in summary.json "ranks". With rank 1 made
# to wait 30 ms for each step's data (DTRAIN_TEST_DATA_DELAY), the wait is
# rank 1's data_wait_s and rank 0's comm_wait_s (exposed communication).
# A language model's lines carry tokens_per_s = samples_per_s x context.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
cat >job.yaml <<YAML
name: breakdown
seed: 5
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
  eval:
    images: $FMNIST/t10k-images-idx3-ubyte.gz
    labels: $FMNIST/t10k-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 64, activation: relu}
    - {type: dense, units: 10}
train:
  global_batch: 96
  steps: 30
  optimizer: sgd
  lr: 0.05
log:
  every_steps: 5
eval:
  every_steps: 15
YAML
t0=$(date +%s)
"$DTRAIN" run -q --run-dir r1 job.yaml >/dev/null 2>r1.err ||
	{ cat r1.err >&2; fail "the 1-rank run failed"; }
mpi 2 "$DTRAIN" run -q --run-dir r2 job.yaml >/dev/null 2>r2.err ||
	{ cat r2.err >&2; fail "the 2-rank run failed"; }
DTRAIN_TEST_DATA_DELAY=1:30 mpi 2 -x DTRAIN_TEST_DATA_DELAY \
	"$DTRAIN" run -q --run-dir slow job.yaml >/dev/null 2>slow.err ||
	{ cat slow.err >&2; fail "the run with a slow rank 1 failed"; }
t1=$(date +%s)

"$PYTHON" - "$t0" "$t1" <<'PY' || fail "the breakdown is wrong"
import datetime, json, math, re, sys

t0, t1 = int(sys.argv[1]), int(sys.argv[2]) + 1
PARTS = ("compute_s", "comm_wait_s", "data_wait_s", "optim_s")

def lines(d):
    return [json.loads(l) for l in open(d + "/metrics.jsonl")]

def check_run(d, world):
    steps = [o for o in lines(d) if "loss" in o]
    summ = json.load(open(d + "/summary.json"))
    if len(steps) != 6:
        sys.exit("%s: %d step lines, expected 6" % (d, len(steps)))
    prev_elapsed, prev_step, total, evals = 0, 0, dict.fromkeys(PARTS, 0), set()
    for o in lines(d):
        if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["time"]):
            sys.exit("%s: time %r is not ISO 8601 UTC" % (d, o["time"]))
        t = datetime.datetime.strptime(o["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
        t = t.replace(tzinfo=datetime.timezone.utc).timestamp()
        if not t0 <= t <= t1:
            sys.exit("%s: time %s outside the run (%d..%d)" % (d, o["time"], t0, t1))
        if "eval_loss" in o:
            evals.add(o["step"])
    for o in steps:
        b, s = o["breakdown"], o["slowest"]
        if set(b) != set(PARTS) or set(s) != set(PARTS) | {"rank"}:
            sys.exit("%s: breakdown keys %r, slowest keys %r" % (d, b, s))
        if any(not v >= 0 for v in list(b.values()) + [s[k] for k in PARTS]):
            sys.exit("%s step %d: a negative part %r %r" % (d, o["step"], b, s))
        if not b["compute_s"] > 0:
            sys.exit("%s step %d: no compute time" % (d, o["step"]))
        # passes: rank 0's compute_s split into its forward passes and
        # the rest, each written to the microsecond.
        ps = o["passes"]
        if set(ps) != {"forward_s", "backward_s"}:
            sys.exit("%s step %d: passes keys %r" % (d, o["step"], ps))
        if not (ps["forward_s"] > 0 and ps["backward_s"] > 0):
            sys.exit("%s step %d: passes %r" % (d, o["step"], ps))
        if abs(ps["forward_s"] + ps["backward_s"] - b["compute_s"]) > 2.5e-6:
            sys.exit("%s step %d: forward_s + backward_s = %r, compute_s %r"
                     % (d, o["step"], ps["forward_s"] + ps["backward_s"], b["compute_s"]))
        if not 0 <= s["rank"] < world:
            sys.exit("%s: slowest rank %r" % (d, s["rank"]))
        if sum(s[k] for k in PARTS) < sum(b.values()) - 1e-5:
            sys.exit("%s step %d: the slowest rank %r is faster than rank 0"
                     % (d, o["step"], s))
        if world == 1 and {k: s[k] for k in PARTS} != b:
            sys.exit("%s: one rank, yet slowest %r != breakdown %r" % (d, s, b))
        if o["data_wait_s"] != b["data_wait_s"]:
            sys.exit("%s: data_wait_s %r vs breakdown %r" % (d, o["data_wait_s"], b))
        if not (math.isfinite(o["grad_norm"]) and o["grad_norm"] > 0):
            sys.exit("%s: grad_norm %r" % (d, o["grad_norm"]))
        if "tokens_per_s" in o:
            sys.exit("%s: tokens_per_s for an image classifier" % d)
        span = o["elapsed_s"] - prev_elapsed
        if not span > 0:
            sys.exit("%s step %d: elapsed_s %r does not grow" % (d, o["step"], o["elapsed_s"]))
        # Windows with no evaluation in them: the parts are nearly all of
        # the steps' time (what is left: the loop's own work between them).
        part_sum = sum(b.values())
        if prev_step not in evals and not 0.5 * span <= part_sum <= span + 1e-5:
            sys.exit("%s step %d: parts add up to %.6f s of a %.6f s window"
                     % (d, o["step"], part_sum, span))
        for k in PARTS:
            total[k] += b[k]
        prev_elapsed, prev_step = o["elapsed_s"], o["step"]
    ranks = summ["ranks"]
    if [x["rank"] for x in ranks] != list(range(world)):
        sys.exit("%s: summary ranks %r" % (d, ranks))
    for k in PARTS:
        if not math.isclose(ranks[0][k], total[k], rel_tol=1e-4, abs_tol=1e-5):
            sys.exit("%s: summary ranks[0].%s %r, the windows add up to %r"
                     % (d, k, ranks[0][k], total[k]))
    return steps, summ

one, _ = check_run("r1", 1)
two, _ = check_run("r2", 2)
for a, b in zip(one, two):
    if not math.isclose(a["grad_norm"], b["grad_norm"], rel_tol=1e-3):
        sys.exit("step %d: grad_norm %r on 1 rank, %r on 2"
                 % (a["step"], a["grad_norm"], b["grad_norm"]))
steps, summ = check_run("slow", 2)
r0, r1 = summ["ranks"]
delay = 30 * 0.001 * 30               # 30 steps of 30 ms
if not r1["data_wait_s"] >= delay:
    sys.exit("rank 1 waited %r s for data, at least %r expected" % (r1["data_wait_s"], delay))
if not r0["comm_wait_s"] >= 0.7 * delay:
    sys.exit("rank 0 waited %r s in the sync for rank 1, about %r expected"
             % (r0["comm_wait_s"], delay))
# Rank 1 waits in the sync too where the cores are shared (rank 0 must be
# scheduled to answer), but rank 0 waits for the whole delay besides.
if not r0["comm_wait_s"] > r1["comm_wait_s"] + 0.5 * delay:
    sys.exit("comm_wait_s: rank 0 %r, rank 1 %r" % (r0["comm_wait_s"], r1["comm_wait_s"]))
if not r0["data_wait_s"] < 0.5 * delay:
    sys.exit("rank 0 data_wait_s %r: the delay was rank 1's" % r0["data_wait_s"])
last = steps[-1]["slowest"]
print("breakdown: rank 0 %s, rank 1 %s; last window slowest rank %d"
      % ({k: round(r0[k], 4) for k in PARTS}, {k: round(r1[k], 4) for k in PARTS},
         last["rank"]))
PY

# A language model: tokens per second are samples per second x context.
"$PYTHON" - <<'PY'
words = ["the cat sat on the mat", "a dog ran to the park", "we read books"]
x, out = 7, []
while sum(len(s) for s in out) < 8000:
    x = (1103515245 * x + 12345) % 2**31
    out.append(words[x % len(words)] + " .\n")
open("text.txt", "w").write("".join(out))
PY
cat >lm.yaml <<YAML
name: lm
seed: 3
data:
  format: text
  train: {file: $SCRATCH/text.txt}
  context: 8
model:
  input_shape: [8]
  layers:
    - {type: embedding, name: tok, vocab: 32, dim: 16}
    - {type: dense, name: head, units: 32}
train:
  global_batch: 16
  steps: 10
  optimizer: adam
  lr: 0.01
log:
  every_steps: 5
YAML
"$DTRAIN" run -q --run-dir lm lm.yaml >/dev/null 2>lm.err ||
	{ cat lm.err >&2; fail "the language-model run failed"; }
"$PYTHON" - <<'PY' || fail "tokens_per_s is wrong"
import json, math, sys
for line in open("lm/metrics.jsonl"):
    o = json.loads(line)
    if "loss" not in o:
        continue
    # Both are printed to 6 digits: agree to that.
    if not math.isclose(o["tokens_per_s"], 8 * o["samples_per_s"], rel_tol=2e-5):
        sys.exit("step %d: tokens_per_s %r, samples_per_s %r x 8"
                 % (o["step"], o["tokens_per_s"], o["samples_per_s"]))
print("tokens_per_s = 8 x samples_per_s")
PY
