#!/bin/sh
# SPDX-License-Identifier: MIT
# gpt2-mfu.sh PEAK DTRAIN [DTRAIN...]: the GPT-2-shaped job at context
# 1024 (bench/gpt2-small-untied.yaml, model.attention: fused, micro-batch
# and global batch 1, so a step is one sample of 1024 tokens) trained a few
# steps by each DTRAIN at 1 and at 2 threads (parallel.blas_threads), the
# builds alternated run by run, beside the f32 limit that PEAK (bench/peak)
# measures in the same run.
#
# For each run it prints tokens/s over the steps after the first (the
# first holds the warm-up) by the wall clock, and by CPU time over the
# same steps (utime + stime from /proc, sampled every 0.2 s and
# interpolated at the steps' logged times), which is what the wall clock
# would give on cores of its own when the machine is shared: the main
# thread's (its serial work, its part of each split loop and its
# polling for the other thread count; its sleeps while the other thread
# finishes do not, so it errs high by those), and the whole process's
# times the threads (errs high by every stretch one thread runs alone
# while the other sleeps; with 1 thread the two agree).
# MFU = tokens/s x the model FLOPs per token / the f32 limit on that
# many threads. The model FLOPs are the plan's flops_per_sample less its
# recompute_flops_per_sample, / 1024, as dtrain plan --json counts them:
# 3x the forward's, each multiply-add 2 FLOPs, the full T x T scores of
# every head, the fused attention's recomputed ones not counted: 0.858
# GFLOP a token.
# BENCH_PRECISION (default "f32 bf16") the train.precision values, run
# one after the other for each build and thread count, so that a load
# that comes and goes falls on both alike; at the end, for each build
# and thread count, bf16's tokens/s over f32's (wall and process CPU)
# per rep, the pair of runs next to each other. bf16's MFU is against
# the same f32 limit. Where the CPU refuses bf16 (no AVX512_BF16 or
# AMX) it says so and runs f32 alone.
# BENCH_STEPS (default 4) steps a run, BENCH_REPS (default 2) runs of
# each build, thread count and precision, BENCH_THREADS (default "1 2")
# the thread counts. Prints; asserts nothing. One GPT-2 process at a
# time (about 6 GiB; bf16 adds its bf16 copies of the operands).
set -eu
peak=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
job=$here/gpt2-small-untied.yaml
steps=${BENCH_STEPS:-4}
threads=${BENCH_THREADS:-1 2}
reps=${BENCH_REPS:-2}
precs=${BENCH_PRECISION:-f32 bf16}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset OPENBLAS_NUM_THREADS OMP_NUM_THREADS
hz=$(getconf CLK_TCK)

flops=$("$1" plan --json "$job" --set model.attention=fused |
	python3 -c 'import json, sys
p = json.load(sys.stdin)
print((p["flops_per_sample"] - p["recompute_flops_per_sample"]) / 1024)')
lim1=$("$peak" --f32 1) lim2=$("$peak" --f32 2)
echo "f32 limit: $lim1 GFLOP/s on 1 thread, $lim2 on 2 (bench/peak)"
echo "model FLOPs per token: $flops (the plan's, without recompute)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# has PREC: whether PREC is one of the precisions to run.
has() {
	case " $precs " in *" $1 "*) return 0 ;; esac
	return 1
}
if has bf16; then
	if ! "$1" plan --set train.precision=bf16 "$job" >/dev/null 2>"$tmp/err"
	then
		echo "bf16 refused, f32 alone: $(cat "$tmp/err")"
		precs=f32
	fi
fi

# run DTRAIN THREADS PRECISION: one run; prints wall and CPU tokens/s.
run() {
	d=$tmp/run
	rm -rf "$d"
	"$1" run -q --run-dir "$d" --set train.steps="$steps" \
		--set train.schedule.warmup_steps=1 \
		--set train.global_batch=1 --set log.every_steps=1 \
		--set eval.max_batches=1 --set checkpoint.at_end=false \
		--set model.attention=fused --set train.precision="$3" \
		--set parallel.blas_threads="$2" "$job" >/dev/null 2>&1 &
	pid=$!
	: >"$tmp/cpu"
	while kill -0 $pid 2>/dev/null; do
		# the time, and utime + stime of the process (fields 14, 15)
		t=$(date +%s.%N)
		c=$(awk '{ print $14 + $15 }' /proc/$pid/stat \
			/proc/$pid/task/$pid/stat 2>/dev/null | tr '\n' ' ') ||
			break
		[ -n "$c" ] || break
		echo "$t $c" >>"$tmp/cpu"
		sleep 0.2
	done
	wait $pid
	python3 - "$d/metrics.jsonl" "$tmp/cpu" "$hz" "$2" <<'PY'
import datetime, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steps = [r for r in rows if "tokens_per_s" in r]
hz, threads = float(sys.argv[3]), int(sys.argv[4])
cpu = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
cpu = [c for c in cpu if len(c) == 3]
def at(t, k):	# CPU seconds (k 1: process, 2: main thread) at wall t
	for a, b in zip(cpu, cpu[1:]):
		if a[0] <= t <= b[0]:
			f = (t - a[0]) / (b[0] - a[0])
			return (a[k] + (b[k] - a[k]) * f) / hz
	raise SystemExit("no CPU sample at %f" % t)
def when(r):
	return datetime.datetime.strptime(r["time"], "%Y-%m-%dT%H:%M:%S.%fZ") \
		.replace(tzinfo=datetime.timezone.utc).timestamp()
a, b = steps[0], steps[-1]
tokens = 1024 * (len(steps) - 1)
wall = b["elapsed_s"] - a["elapsed_s"]
proc = at(when(b), 1) - at(when(a), 1)
main = at(when(b), 2) - at(when(a), 2)
print("%.1f %.1f %.1f" % (tokens / wall, tokens / main,
			  tokens / proc * threads))
PY
}

echo "tokens/s and MFU by the wall clock, the main thread's CPU time, the"
echo "process's CPU time x threads; build 0 is the first DTRAIN"
echo "build threads prec rep |   wall       |   main       |   process    | load"
: >"$tmp/rows"
for rep in $(seq "$reps"); do
	for th in $threads; do
		lim=$lim1
		[ "$th" = 2 ] && lim=$lim2
		b=0
		for dtrain in "$@"; do
			for prec in $precs; do
				r=$(run "$dtrain" "$th" "$prec")
				echo "$b $th $prec $rep $r $flops $lim $(cut -d' ' -f1 /proc/loadavg)" |
					tee -a "$tmp/rows" |
					awk '{ m = 100 * $8 / ($9 * 1e9)
						printf "%5s %7s %4s %3s | %6.1f %4.1f%% | %6.1f %4.1f%% | %6.1f %4.1f%% | %s\n",
						$1, $2, $3, $4, $5, $5 * m, $6, $6 * m,
						$7, $7 * m, $10 }'
			done
			b=$((b + 1))
		done
	done
done
if has f32 && has bf16; then
	echo "bf16 over f32, tokens/s (the two runs of a rep next to each other)"
	echo "build threads rep | wall  process"
	awk '{ k = $1 " " $2 " " $4; v[k, $3, "w"] = $5; v[k, $3, "p"] = $7
		if (!(k in seen)) { seen[k] = 1; order[n++] = k } }
	END { for (i = 0; i < n; i++) { k = order[i]; split(k, f, " ")
		printf "%5s %7s %3s | %5.2f %5.2f\n", f[1], f[2], f[3],
		       v[k, "bf16", "w"] / v[k, "f32", "w"],
		       v[k, "bf16", "p"] / v[k, "f32", "p"] } }' "$tmp/rows"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
