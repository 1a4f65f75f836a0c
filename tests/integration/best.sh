#!/bin/sh
# SPDX-License-Identifier: MIT
# eval.keep_best, eval.patience and eval.monitor on a Fashion-MNIST MLP
# whose eval loss stops improving (SGD, lr 0.2, momentum 0.9, an
# evaluation every 4 steps, patience 3, 80 steps at most). The best
# evaluation and the stop are worked out again here from the eval lines
# of metrics.jsonl:
# - the run ends with exit 0 at that step, says why on stderr and in
#   summary.json ("early_stop", "best"), evaluates that step once;
# - CKPT_DIR/best holds the best step's checkpoint alone, though
#   checkpoint.keep_last 1 pruned it from CKPT_DIR; `--checkpoint best`
#   takes it: `dtrain eval` gives the best eval loss, `dtrain predict` the
#   best step's accuracy, `dtrain export` (both formats) its parameters;
#   a run without one is refused with exit 2 naming eval.keep_best;
# - stopped by a signal at step 34 (after the best, one evaluation
#   without improvement) and resumed, the run stops at the same step
#   with the same best and the same metrics (the count is in the
#   checkpoint's meta); a resume of the stopped run does nothing, one
#   with a larger eval.patience goes on to where that patience ends;
# - monitor accuracy (patience 1) and perplexity (exp of the loss) pick
#   their own best;
# - keep_best without an eval split is refused.
. "${top_srcdir}/tests/integration/lib.sh"
need_fmnist
JOB="$top_srcdir/jobs/fashion-mnist-mlp.yaml"

# es NAME [--set ...]: the early-stopping job into runs/NAME.
es() {
	name=$1
	shift
	"$DTRAIN" run -q "$JOB" --set name="$name" --set train.steps=80 \
		--set eval.every_steps=4 --set log.every_steps=4 \
		--set train.optimizer=sgd --set train.lr=0.2 \
		--set train.momentum=0.9 --set eval.patience=3 \
		--set eval.keep_best=true --set checkpoint.every_steps=10 \
		--set checkpoint.keep_last=1 "$@"
}

# expect RUN_DIR MONITOR PATIENCE: summary.json's best and early_stop
# against the eval lines of metrics.jsonl; prints "STOP BEST".
expect() {
	"$PYTHON" - "$@" <<'PY'
import json, math, sys
d, monitor, patience = sys.argv[1], sys.argv[2], int(sys.argv[3])
evals = [json.loads(l) for l in open(d + "/metrics.jsonl")
         if '"eval_loss"' in l]
best = best_step = None
bad, stop = 0, None
for e in evals:
    v = {"loss": e["eval_loss"], "accuracy": e["eval_accuracy"],
         "perplexity": math.exp(e["eval_loss"])}[monitor]
    if best is None or (v > best if monitor == "accuracy" else v < best):
        best, best_step, bad = v, e["step"], 0
    else:
        bad += 1
        if bad >= patience:
            stop = e["step"]
            break
s = json.load(open(d + "/summary.json"))
errors = []
steps = [e["step"] for e in evals]
if len(steps) != len(set(steps)):
    errors.append("a step evaluated twice: %r" % steps)
if evals and evals[-1]["step"] != s["steps"]:
    errors.append("the last evaluation is at step %d, the run ended at %d"
                  % (evals[-1]["step"], s["steps"]))
b = s.get("best") or {}
# Both files write float32 texts (dtrain(1)): the loss and the accuracy
# are the same float; the perplexity dtrain took from the unrounded loss,
# exp() of the rounded one here, a few float32 steps apart at most.
tol = 2.0**-21 if monitor == "perplexity" else 0
if b.get("monitor") != monitor or b.get("step") != best_step or \
   not abs(b.get("value", float("nan")) - best) <= tol * abs(best):
    errors.append("best %r, expected %s %r at step %r"
                  % (b, monitor, best, best_step))
es = s.get("early_stop")
if stop is None:
    if es is not None or s["steps"] != 80:
        errors.append("no early stop expected: %r, steps %d"
                      % (es, s["steps"]))
elif es is None or es.get("step") != stop or s["steps"] != stop:
    errors.append("early_stop %r, steps %d, expected a stop at %d"
                  % (es, s["steps"], stop))
if errors:
    sys.exit("%s: %s" % (d, "; ".join(errors)))
print(stop, best_step)
PY
}

es u >/dev/null 2>u.err || { cat u.err >&2; fail "the run failed"; }
out=$(expect runs/u loss 3) || fail "runs/u: see above"
set -- $out
stop=$1 best=$2
[ "$stop" != None ] && [ "$stop" -lt 80 ] ||
	fail "the test job did not stop early (stop $stop); retune it"
[ "$best" -lt 34 ] && [ "$stop" -gt 34 ] ||
	fail "best $best and stop $stop leave no room for the resume at 34"
grep -q "early stop at step $stop: eval loss has not improved on .* (step $best) for 3 evaluations" u.err ||
	fail "stderr does not say why the run stopped"
bdir=runs/u/checkpoints/best/$(printf 'step-%09d' "$best")
[ "$(ls runs/u/checkpoints/best)" = "$(basename "$bdir")" ] ||
	fail "checkpoints/best holds $(ls runs/u/checkpoints/best), not $bdir"
[ -f "$bdir/MANIFEST.json" ] || fail "$bdir is not a whole checkpoint"
[ -e "runs/u/checkpoints/$(basename "$bdir")" ] &&
	fail "keep_last 1 kept the best step in the checkpoint directory too"
"$PYTHON" -c 'import json, sys
sys.exit(json.load(open("runs/u/summary.json"))["best"]["checkpoint"] != sys.argv[1])' \
	"$bdir" || fail "summary.json does not name $bdir"
# --checkpoint best: eval, predict and export take CKPT_DIR/best, not the
# newest checkpoint (that of the stop).
"$DTRAIN" eval --json --checkpoint best runs/u >e.json
"$DTRAIN" eval --json runs/u >newest.json
"$PYTHON" - "$best" "$stop" <<'PY' || fail "eval --checkpoint best: see above"
import json, sys
best, stop = int(sys.argv[1]), int(sys.argv[2])
b = json.load(open("runs/u/summary.json"))["best"]["value"]
e = json.load(open("e.json"))
n = json.load(open("newest.json"))
assert e["step"] == best and e["checkpoint"].endswith("best/step-%09d" % best), e
assert abs(e["loss"] - b) <= 1e-9 * b, (e["loss"], b)
assert n["step"] == stop, n
PY
"$DTRAIN" predict --checkpoint best --top-k 1 runs/u \
	--input "$FMNIST/t10k-images-idx3-ubyte.gz" -o top1.npy 2>p1.err ||
	{ cat p1.err >&2; fail "predict --checkpoint best failed"; }
grep -q "(checkpoint of step $best)" p1.err ||
	{ cat p1.err >&2; fail "predict --checkpoint best did not use step $best"; }
"$PYTHON" - top1.npy "$FMNIST/t10k-labels-idx1-ubyte.gz" "$best" <<'PY' ||
import ast, gzip, json, struct, sys
raw = open(sys.argv[1], "rb").read()
hl = struct.unpack("<H", raw[8:10])[0]
head = ast.literal_eval(raw[10:10 + hl].decode())
assert head["descr"] == "<i8" and head["shape"] == (10000, 1), head
ids = struct.unpack("<10000q", raw[10 + hl:])
labels = gzip.open(sys.argv[2]).read()[8:]
correct = sum(1 for i, y in zip(ids, labels) if int(i) == y)
want = [json.loads(l) for l in open("runs/u/metrics.jsonl")
        if '"eval_accuracy"' in l and json.loads(l)["step"] == int(sys.argv[3])]
assert len(want) == 1, want
# metrics.jsonl writes the float32 of correct / 10000 in its shortest text.
assert round(want[0]["eval_accuracy"] * 10000) == correct, (want, correct)
print("predict --checkpoint best: %d of 10000 right, as at step %s"
      % (correct, sys.argv[3]))
PY
	fail "predict --checkpoint best does not give the best step's accuracy"
"$DTRAIN" export --checkpoint best -o best.safetensors runs/u >x.out ||
	fail "export --checkpoint best failed"
cmp best.safetensors "$bdir/params.safetensors" ||
	fail "export --checkpoint best did not write $bdir's parameters"
grep -q "parameters of step $best ($bdir)" x.out || fail "export said: $(cat x.out)"
"$DTRAIN" export --format torch --checkpoint best -o t.safetensors runs/u \
	>t.out || fail "export --format torch --checkpoint best failed"
grep -q "parameters of step $best in PyTorch" t.out || fail "export said: $(cat t.out)"
# A run without a kept best: refused, naming the run and the key.
cp -r runs/u nobest
rm -r nobest/checkpoints/best
for c in "eval" "predict --input x.npy -o y.npy" "export" \
	 "export --format torch"; do
	# shellcheck disable=SC2086
	expect_fail 2 "^dtrain: nobest: no best checkpoint \(nobest/checkpoints/best holds none\).*eval.keep_best: true" \
		"$DTRAIN" $c --checkpoint best nobest
	# shellcheck disable=SC2086
	expect_fail 2 "--checkpoint 4x: expected a step or best" \
		"$DTRAIN" $c --checkpoint 4x runs/u
done

# Interrupted after the best and one evaluation without improvement.
set +e
DTRAIN_TEST_SIGNAL_AT_STEP=34 es i >/dev/null 2>i.err
rc=$?
set -e
[ "$rc" -eq 3 ] || { cat i.err >&2; fail "the interrupted run exited $rc"; }
"$PYTHON" - runs/i/checkpoints/step-000000034/meta.json "$best" <<'PY' ||
import json, sys
x = json.load(open(sys.argv[1]))["extra"]
assert x["best_step"]["value"] == int(sys.argv[2]), x
assert x["best_bad_evals"]["value"] == 1, x
PY
	fail "the checkpoint at step 34 does not hold the best and the count"
"$DTRAIN" resume -q runs/i >/dev/null 2>r.err ||
	{ cat r.err >&2; fail "resume failed"; }
out=$(expect runs/i loss 3) || fail "runs/i: see above"
set -- $out
[ "$1 $2" = "$stop $best" ] ||
	fail "resumed: stop $1 best $2; uninterrupted: stop $stop best $best"
compare_losses runs/u runs/i 0 >/dev/null || fail "resumed losses differ"
# The lines less their wall-clock "time".
grep '"eval_loss"' runs/u/metrics.jsonl | sed 's/"time":"[^"]*",//' >u.evals
grep '"eval_loss"' runs/i/metrics.jsonl | sed 's/"time":"[^"]*",//' >i.evals
grep -q '"eval_loss":[0-9]' u.evals || fail "no eval lines in runs/u"
cmp u.evals i.evals || fail "resumed eval lines differ"

# The stopped run: nothing to do, unless eval.patience grows.
cp runs/u/summary.json u.summary
"$DTRAIN" resume -q --set train.steps=400 runs/u >s.out 2>s.err ||
	fail "resume of a stopped run failed"
grep -q "stopped early at step $stop" s.err || fail "resume did not say the run stopped early"
# Not the advice of a run at its last step, which a longer run ignores.
grep -q "^u: stopped early at step $stop (eval.patience); nothing to do$" s.out ||
	{ cat s.out >&2; fail "resume of a stopped run: not its line on stdout"; }
cmp u.summary runs/u/summary.json || fail "resume of a stopped run changed summary.json"
"$DTRAIN" resume -q --set eval.patience=6 runs/u >/dev/null 2>p.err ||
	{ cat p.err >&2; fail "resume with eval.patience 6 failed"; }
out=$(expect runs/u loss 6) || fail "patience 6: see above"
set -- $out
[ "$1" = None ] || [ "$1" -gt "$stop" ] || fail "patience 6 stopped at $1"

es acc --set eval.monitor=accuracy --set eval.patience=1 >/dev/null 2>&1 ||
	fail "monitor accuracy failed"
expect runs/acc accuracy 1 >/dev/null || fail "monitor accuracy: see above"
es ppl --set eval.monitor=perplexity >/dev/null 2>&1 ||
	fail "monitor perplexity failed"
out=$(expect runs/ppl perplexity 3) || fail "monitor perplexity: see above"
set -- $out
[ "$1 $2" = "$stop $best" ] || fail "perplexity picked $1 $2, loss $stop $best"

write_small_job small.yaml
expect_fail 2 'eval.keep_best: needs an evaluation split' \
	"$DTRAIN" run -q small.yaml --set eval.keep_best=true
expect_fail 2 'eval.patience: needs an evaluation split' \
	"$DTRAIN" run -q small.yaml --set eval.patience=2
echo "best: ok (best step $best, early stop at $stop)"
