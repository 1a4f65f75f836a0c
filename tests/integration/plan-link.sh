#!/bin/sh
# SPDX-License-Identifier: MIT
# plan --link RATE,LATENCY: the per-step estimate against figures worked
# out here by hand for a one-layer model (784 x 10 weights + 10 biases =
# 7850 floats, 31400 gradient bytes): the ring all-reduce over p ranks,
# 2(p-1)/p x bytes / rate + 2(p-1) x latency; the compute time from the
# plan's FLOPs at a stated GFLOP/s; hidden = min(sync, backward). Each unit
# of the grammar, bad links, --gflops alone and --gflops 0 refused with
# exit 2; a link so slow that the sync overflows a double still prints a
# share of at most 100%.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
cat >job.yaml <<YAML
name: link
seed: 1
data:
  train:
    images: $FMNIST/train-images-idx3-ubyte.gz
    labels: $FMNIST/train-labels-idx1-ubyte.gz
model:
  input_shape: [28, 28]
  layers:
    - {type: dense, units: 10}
train:
  global_batch: 96
  steps: 10
  optimizer: sgd
  lr: 0.1
YAML

est() {
	n=$1 link=$2
	shift 2
	"$DTRAIN" plan --dry-run --json -n "$n" --link "$link" "$@" job.yaml \
		>"est-$n-$(echo "$link" | tr / _)$#.json" || fail "plan --link $link"
}
est 2 1gbit,0.2ms --gflops 0.5
est 2 125MB/s,200us --gflops 0.5
est 2 1Gbit,200000ns --gflops 0.5
est 2 0.001tbps,0.0002s --gflops 0.5
est 2 10mbit,1ms --gflops 0.5
est 4 10gbit,50us --gflops 2
est 1 1gbit,0.2ms --gflops 0.5
est 2 1gbit,0.2ms

"$PYTHON" - <<'PY' || fail "the link estimates differ from the hand-worked ones"
import json, math, sys

def load(n, link, measured=False):
    d = json.load(open("est-%d-%s%d.json" % (n, link.replace("/", "_"),
                                            0 if measured else 2)))
    return d, d["link_estimate"]

# The estimates are written to float32 precision (dtrain(1), plan):
# within one rounding, 2**-24 of the value, of the double worked out here.
def close(what, got, want, roundings=1):
    if not math.isclose(got, want, rel_tol=roundings * 2.0**-24,
                        abs_tol=1e-15):
        sys.exit("%s: %r, worked out %r" % (what, got, want))

grad = 7850 * 4                      # float gradient bytes, p <= 2
for link in ("1gbit,0.2ms", "125MB/s,200us", "1Gbit,200000ns",
             "0.001tbps,0.0002s"):
    d, e = load(2, link)
    close(link + " rate", e["rate_bytes_per_s"], 1.25e8)
    close(link + " latency", e["latency_s"], 2e-4)
    # p = 2: 2(p-1)/p = 1 of the bytes, 2(p-1) = 2 latencies.
    close(link + " comm_s", e["comm_s"], grad / 1.25e8 + 2 * 2e-4)
    flops = d["flops_per_sample"] * 48          # micro-batch 96 / 2
    close(link + " flops", e["flops_per_rank_step"], flops)
    close(link + " compute_s", e["compute_s"], flops / 0.5e9)
    bwd = flops / 0.5e9 * (d["flops_per_sample"] - d["fwd_flops_per_sample"]) \
        / d["flops_per_sample"]
    close(link + " backward_s", e["backward_s"], bwd)
    # The sync (0.65 ms) is shorter than backward (3 ms): all of it hides.
    close(link + " hidden_s", e["hidden_s"], e["comm_s"])
    close(link + " exposed_s", e["exposed_s"], 0)
    close(link + " step_s", e["step_s"], flops / 0.5e9)
    if e["gflops_source"] != "stated (--gflops)" or e["overlap"] is not True:
        sys.exit("%s: gflops_source %r, overlap %r" % (link,
                 e["gflops_source"], e["overlap"]))

# A slow link: the sync (27.1 ms) outlasts backward, which bounds what hides.
d, e = load(2, "10mbit,1ms")
comm = grad / 1.25e6 + 2 * 1e-3
close("10mbit comm_s", e["comm_s"], comm)
close("10mbit hidden_s", e["hidden_s"], e["backward_s"])
close("10mbit exposed_s", e["exposed_s"], comm - e["backward_s"])
close("10mbit step_s", e["step_s"], e["compute_s"] + comm - e["backward_s"])
if not e["backward_s"] < comm:
    sys.exit("10mbit: backward %r not below the sync %r" % (e["backward_s"], comm))

# p = 4: above two data-parallel ranks the gradient is summed in double
# (8 bytes a value), reduce-scattered, and the rounded floats (4 bytes)
# gathered back: (p-1)/p x 12 = 9 bytes a value, 6 latencies.
d, e = load(4, "10gbit,50us")
if d["communication_per_rank"]["gradient_bytes"] != 7850 * 8:
    sys.exit("p=4: gradient bytes %r" % d["communication_per_rank"])
close("p=4 comm_s", e["comm_s"], 0.75 * 7850 * 12 / 1.25e9 + 6 * 50e-6)
close("p=4 compute_s", e["compute_s"], d["flops_per_sample"] * 24 / 2e9)

# One rank: nothing to sync.
d, e = load(1, "1gbit,0.2ms")
close("p=1 comm_s", e["comm_s"], 0)
close("p=1 step_s", e["step_s"], e["compute_s"])

# No --gflops: measured here, a positive rate that says so.
d, e = load(2, "1gbit,0.2ms", measured=True)
if not e["gflops_source"].startswith("measured") or not e["gflops"] > 0:
    sys.exit("measured: %r %r" % (e["gflops_source"], e["gflops"]))
# Worked out from the written (float32) FLOPs and rate, each rounded
# once itself, against compute_s rounded once: three roundings apart at
# most (one measured rate put it 1.06 roundings away).
close("measured compute_s", e["compute_s"],
      e["flops_per_rank_step"] / (e["gflops"] * 1e9), roundings=3)
print("link estimates agree with the hand-worked figures")
PY

"$DTRAIN" plan --dry-run -n 2 --link 10mbit,1ms --gflops 0.5 job.yaml >plan.txt ||
	fail "plan --link (text)"
grep -q "on a link of 0.01 Gbit/s and 1 ms latency" plan.txt ||
	{ cat plan.txt >&2; fail "the text plan does not name the link"; }
grep -q "gradient sync 27.1 ms" plan.txt ||
	{ cat plan.txt >&2; fail "the text plan does not give the sync time"; }
grep -q "overlap on: parallel.overlap: true" plan.txt ||
	{ cat plan.txt >&2; fail "the text plan does not name parallel.overlap"; }
# Blocking sums hide nothing: the whole sync is exposed.
"$DTRAIN" plan --dry-run --json -n 2 --link 1gbit,0.2ms --gflops 0.5 \
	--set parallel.overlap=false job.yaml >off.json || fail "plan --link, overlap off"
"$PYTHON" - off.json <<'PY' || fail "overlap off: see above"
import json, math, sys
e = json.load(open(sys.argv[1]))["link_estimate"]
assert e["overlap"] is False and e["hidden_s"] == 0, e
assert e["exposed_s"] == e["comm_s"] > 0, e
# Three float32 roundings apart at most.
assert math.isclose(e["step_s"], e["compute_s"] + e["comm_s"],
                    rel_tol=3 * 2.0**-24), e
PY

# A rate of 1e-300 bit/s: the sync takes about 4e307 s, so 100 x the
# exposed seconds would overflow a double; the share still prints 100%.
"$DTRAIN" plan --dry-run -n 2 --link 1e-300bit,1us --gflops 0.5 job.yaml \
	>slow.txt || fail "plan --link 1e-300bit,1us"
grep -q "(100% of the sync)" slow.txt ||
	{ cat slow.txt >&2; fail "an overflowing sync is not 100% exposed"; }

for bad in 10g,50us 10gbit 10gbit,50 -1gbit,1us 0gbit,1us 10xbit,1us \
	   10gbit,-1us 10b,1us ,1us; do
	expect_fail 2 "--link: expected RATE,LATENCY.*\"$bad\"" \
		"$DTRAIN" plan --dry-run --link "$bad" job.yaml
done
expect_fail 2 "--gflops needs --link" "$DTRAIN" plan --dry-run --gflops 3 job.yaml
expect_fail 2 "--gflops needs --link" "$DTRAIN" plan --dry-run --gflops 0 job.yaml
expect_fail 2 '--gflops: expected a number > 0, found "0"' \
	"$DTRAIN" plan --dry-run -n 2 --link 1gbit,1ms --gflops 0 job.yaml
echo "plan --link: estimates, units and refusals as expected"
