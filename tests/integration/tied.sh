#!/bin/sh
# SPDX-License-Identifier: MIT
# Tied weights (a dense layer's `tie:`, dtrain-job(5)): the shipped GPT-2
# jobs plan GPT-2's parameter counts; a tiny tied model trains the same
# bits on 1 rank, data-parallel on 2, tensor-parallel on 2 (nothing of it
# splits: the tied head stays whole, as its embedding does) and in a
# pipeline of 2 stages with the embedding on the first and the head on
# the last (their gradients summed across the stages), and at
# parallel.zero 2 and 3 on 2 ranks and on 2 stages x 2; a run stopped and
# resumed gives the bits of the whole run; the checkpoint and the torch
# export hold the table once, and the contrib loader ties it again and
# gives dtrain's logits to 1e-5 (where torch is installed).
. "${top_srcdir}/tests/integration/lib.sh"
[ -f /usr/share/games/fortunes/cookie ] || {
	echo "SKIP: fortunes missing (apt-get install fortunes)"
	exit 77
}

# The counts of GPT-2 small and medium (jobs' comments work them out).
for j in gpt2-124m:124439808 gpt2-350m:354823168; do
	"$DTRAIN" plan "$top_srcdir/jobs/${j%%:*}.yaml" >plan.out
	grep -q "^total: ${j#*:} parameters;" plan.out ||
		{ grep total plan.out >&2; fail "${j%%:*}: not ${j#*:} parameters"; }
done

cat >tied.yaml <<'YAML'
name: tied
seed: 3
data:
  format: text
  train: {file: /usr/share/games/fortunes/cookie}
  context: 16
  text_unit: bytes
  eval_fraction: 0.1
model:
  layers:
    - {type: embedding, name: tok, vocab: 96, dim: 16}
    - {type: pos_embedding, name: pos, dim: 16}
    - {type: layernorm, name: ln}
    - {type: dense, name: fc, units: 16, activation: tanh}
    - {type: dense, name: head, units: 96, bias: false, tie: tok}
  loss: softmax_cross_entropy
train: {global_batch: 8, micro_batch: 2, steps: 8, optimizer: adamw,
        lr: 0.01, weight_decay: 0.1, clip_norm: 1.0}
parallel: {blas_threads: 1}
eval: {every_steps: 0}
log: {every_steps: 1}
checkpoint: {every_steps: 4}
YAML

# 96 x 16 + 16 x 16 + 2 x 16 + 16 x 16 + 16 = 2096: the head adds none.
"$DTRAIN" plan tied.yaml | grep -q "^total: 2096 parameters;" ||
	fail "tied.yaml: not 2096 parameters"
# A second tie to tok on a layer that cannot take the table: its shape is
# the problem (it was reported at head as "tied to fc already").
expect_fail 2 "model.layers.3 \\(fc\\): tie: tok's table is \\(96, 16\\), so units must be 96 and the input width 16; found units 16, input width 16" \
	"$DTRAIN" plan tied.yaml --set model.layers.fc.tie=tok
# The one-tie rule still holds where the shapes fit: fc (16 -> 96) tied
# to tok, a dense back to 16, then the head.
sed 's/name: fc, units: 16,/name: fc, units: 96, tie: tok,/
/name: head/i\
    - {type: dense, name: back, units: 16}' tied.yaml >two.yaml
expect_fail 2 "model.layers.5 \\(head\\): tie: \"tok\" is tied to fc already; one layer a table" \
	"$DTRAIN" plan two.yaml
# An empty tie clears it: the head takes a 16 x 96 weight of its own,
# 2096 + 1536 = 3632 (it was refused: "expected a name, found nothing").
"$DTRAIN" plan tied.yaml --set model.layers.head.tie= |
	grep -q "^total: 3632 parameters;" || fail "tie= did not clear the tie"
M="--set parallel.strategy=model"
"$DTRAIN" plan tied.yaml $M --set parallel.pipeline_parallel=2 -n 2 >pp.plan
grep -Eq "^tok +embedding .* 0$" pp.plan && grep -Eq "^head +dense .* 1$" pp.plan ||
	{ cat pp.plan >&2; fail "pp2: tok not on stage 0 or head not on stage 1"; }

mpi 1 "$DTRAIN" run -q --run-dir one tied.yaml >/dev/null
export_of one one.st
for l in "dp2:--set parallel.strategy=data" \
	 "tp2:$M --set parallel.tensor_parallel=2" \
	 "pp2:$M --set parallel.pipeline_parallel=2"; do
	name=${l%%:*}
	# shellcheck disable=SC2086
	mpi 2 "$DTRAIN" run -q --run-dir $name tied.yaml ${l#*:} \
		>$name.out 2>&1 || { cat $name.out >&2; fail "$name: exit"; }
	compare_losses one $name 0 >/dev/null ||
		{ compare_losses one $name 0 || true; fail "$name: losses differ from one rank"; }
	export_of $name $name.st
	cmp one.st $name.st || fail "$name: parameters differ from one rank"
	echo "ok: $name"
done

# parallel.zero 2 and 3 sum the gradient into each rank's part: the
# tie's two gradients are summed there too, so the bits are zero 0's: in
# the exact mode on 2 ranks (2 micro-batches a rank: one rank's bits),
# with float sums (one micro-batch a rank: the 2-rank zero-0 run's), and
# on 2 stages x 2 data-parallel ranks (summed across the stages as well).
# Before, zero 2 and 3 never summed them (nor left the copy out of the
# norm), and every one of these runs differed.
Z="--set parallel.overlap=false --set parallel.zero"
HY="--set parallel.strategy=hybrid --set parallel.pipeline_parallel=2 --set parallel.data_parallel=2"
mpi 2 "$DTRAIN" run -q --run-dir f0 tied.yaml --set parallel.strategy=data \
	--set train.micro_batch=4 >/dev/null
export_of f0 f0.st
for z in 2 3; do
	for l in "dp2-z$z:2:one:--set parallel.strategy=data" \
		 "f-z$z:2:f0:--set parallel.strategy=data --set train.micro_batch=4" \
		 "pp2dp2-z$z:4:one:$HY"; do
		name=${l%%:*}; l=${l#*:}; np=${l%%:*}; l=${l#*:}
		ref=${l%%:*}
		# shellcheck disable=SC2086
		mpi $np "$DTRAIN" run -q --run-dir $name tied.yaml ${l#*:} \
			$Z=$z >$name.out 2>&1 ||
			{ cat $name.out >&2; fail "$name: exit"; }
		compare_losses $ref $name 0 >/dev/null ||
			{ compare_losses $ref $name 0 || true
			  fail "$name: losses differ from $ref"; }
		export_of $name $name.st
		cmp $ref.st $name.st || fail "$name: parameters differ from $ref"
		echo "ok: $name == $ref"
	done
done

# Stopped at step 3 and resumed from its checkpoint, in the pipeline too.
for np in 1 2; do
	set -- ; [ $np -eq 2 ] && set -- $M --set parallel.pipeline_parallel=2
	d=stop$np
	set +e
	DTRAIN_TEST_SIGNAL_AT_STEP=3 mpi $np -x DTRAIN_TEST_SIGNAL_AT_STEP \
		"$DTRAIN" run -q --run-dir $d tied.yaml "$@" >/dev/null 2>$d.err
	rc=$?
	set -e
	[ "$rc" -eq 3 ] || { cat $d.err >&2; fail "np=$np: stop exited $rc"; }
	mpi $np "$DTRAIN" resume -q $d >/dev/null 2>$d.err2 ||
		{ cat $d.err2 >&2; fail "np=$np: resume"; }
	grep -q "resuming from .*step 3" $d.err2 || fail "np=$np: not resumed at 3"
	export_of $d $d.st
	cmp one.st $d.st || fail "np=$np: resumed parameters differ"
	echo "ok: resume np=$np"
done

# One table in the checkpoint, the export and its torch form.
"$DTRAIN" export --format torch -o tied.pt.safetensors one >/dev/null
"$PYTHON" - one.st tied.pt.safetensors <<'PY'
import json, struct, sys
def header(path):
    b = open(path, "rb").read()
    (n,) = struct.unpack("<Q", b[:8])
    return json.loads(b[8:8 + n])
st, pt = header(sys.argv[1]), header(sys.argv[2])
names = sorted(k for k in st if k != "__metadata__")
want = ["fc.bias", "fc.weight", "ln.bias", "ln.weight", "pos.weight",
        "tok.weight"]
if names != want:
    sys.exit("export: tensors %r, expected %r" % (names, want))
if st["tok.weight"]["shape"] != [96, 16]:
    sys.exit("export: tok.weight %r" % st["tok.weight"]["shape"])
names = sorted(k for k in pt if k != "__metadata__")
if names != want:
    sys.exit("torch export: tensors %r, expected %r" % (names, want))
head = [l for l in json.loads(pt["__metadata__"]["graph"])["layers"]
        if l["name"] == "head"]
if len(head) != 1 or head[0].get("tie") != "tok":
    sys.exit("torch export: head's tie %r" % head)
PY
echo "ok: one table saved"

"$DTRAIN" sample --prompt "The " -n 20 one >sample.out ||
	fail "sample of a tied model"
[ -s sample.out ] || fail "sample printed nothing"

# A GPT-style tied model (GPT-2's blocks in miniature, its init): pre-norm
# causal attention and a GELU MLP with residual adds, a final norm and the
# head tied to tok. 96 x 16 (tok) + 16 x 16 (pos) + 2 blocks x (2 x 32
# norms + 16 x 48 + 48 qkv + 16 x 16 + 16 proj + 16 x 64 + 64 fc +
# 64 x 16 + 16 proj = 3280) + 32 (ln_f) = 8384; the run says so too (it
# said 9920, the tied copy counted again).
cat >gpt.yaml <<'YAML'
name: gpt
seed: 5
data:
  format: text
  train: {file: /usr/share/games/fortunes/cookie}
  context: 16
  text_unit: bytes
  eval_fraction: 0.1
model:
  init: gpt2
  layers:
    - {type: embedding, name: tok, vocab: 96, dim: 16}
    - {type: pos_embedding, name: pos, dim: 16}
    - repeat: 2
      name: block
      layers:
        - {type: layernorm, name: ln1}
        - {type: attention, name: attn, heads: 2, causal: true}
        - {type: add, name: res1, inputs: [block_input, attn]}
        - {type: layernorm, name: ln2}
        - {type: dense, name: fc, units: 64, activation: gelu}
        - {type: dense, name: proj, units: 16}
        - {type: add, name: res2, inputs: [res1, proj]}
    - {type: layernorm, name: ln_f}
    - {type: dense, name: head, units: 96, bias: false, tie: tok}
  loss: softmax_cross_entropy
train: {global_batch: 8, micro_batch: 2, steps: 6, optimizer: adamw,
        lr: 0.01, weight_decay: 0.1, clip_norm: 1.0}
parallel: {blas_threads: 1}
eval: {every_steps: 0}
log: {every_steps: 1}
YAML
"$DTRAIN" plan gpt.yaml | grep -q "^total: 8384 parameters;" ||
	fail "gpt.yaml: not 8384 parameters"
mpi 1 "$DTRAIN" run --run-dir gpt gpt.yaml >gpt.out 2>gpt.err ||
	{ cat gpt.err >&2; fail "gpt: exit"; }
grep -q "^dtrain: gpt: .*, 8384 parameters\$" gpt.err ||
	{ grep "parameters" gpt.err >&2; fail "gpt: the run's count is not 8384"; }
"$DTRAIN" export --format torch -o gpt.pt.safetensors gpt >/dev/null

if "$PYTHON" -c 'import torch, numpy' 2>/dev/null ||
   /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
	need_torch
	head -c 4000 /usr/share/games/fortunes/cookie | tail -c 1600 >tail.txt
	cat >logits.py <<'PY'
# logits.py CONTRIB RUN_DIR TORCH_EXPORT DTRAIN_LOGITS: the contrib
# loader's model, tied again, gives dtrain's logits on tail.txt to 1e-5.
import struct, sys
import numpy as np
import torch
sys.path.insert(0, sys.argv[1])
import dtrain_torch
torch.set_num_threads(1)
run, pt, npy = sys.argv[2:5]
model = dtrain_torch.load(pt)
if model.head.weight is not model.tok.weight:
    sys.exit(run + ": the loader did not tie head.weight to tok.weight")
v = open(run + "/vocab.bin", "rb").read()
(n,) = struct.unpack("<q", v[24:32])
ids = {int(u): i for i, u in enumerate(np.frombuffer(v, "<u4", n, 32))}
tokens = np.array([ids[b] for b in open("tail.txt", "rb").read()])
ctx = model.input_shape[0]
nx = (len(tokens) - ctx) // ctx + 1
x = np.stack([tokens[i * ctx:i * ctx + ctx] for i in range(nx)])
with torch.no_grad():
    ours = model(torch.from_numpy(x.astype(np.float32))).numpy()
theirs = np.load(npy)
if ours.shape != theirs.shape or theirs.shape[0] != 100:
    sys.exit("%s: torch gives %r, dtrain %r, expected 100 windows"
             % (run, ours.shape, theirs.shape))
diff = np.abs(ours.astype(np.float64) - theirs)
if (diff > 1e-5 * (1 + np.abs(theirs))).any():
    sys.exit("%s: torch logits differ from dtrain's by up to %g"
             % (run, diff.max()))
print("%s: %d logits, largest difference %.3g" % (run, diff.size, diff.max()))
PY
	for m in one:tied gpt:gpt; do
		"$DTRAIN" predict --input tail.txt -o ${m#*:}.logits.npy \
			${m%%:*} 2>/dev/null
		"$TORCH_PY" logits.py "$top_srcdir/contrib" ${m%%:*} \
			${m#*:}.pt.safetensors ${m#*:}.logits.npy ||
			fail "${m%%:*}: torch logits"
	done
	echo "ok: torch logits"
else
	echo "torch missing (apt-get install python3-torch): the logits" \
		"check is skipped; the tensor list above was checked"
fi
