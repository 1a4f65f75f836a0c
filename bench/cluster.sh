#!/bin/sh
# SPDX-License-Identifier: MIT
# cluster.sh - training across simulated hosts against the network alone
# (issue 12's benchmark; bench/README says how to read it).
#
#   bench/cluster.sh [--quick] DTRAIN ALLREDUCE_RAW BENCH_LAYERS
#
# Needs root and iproute2 (the hosts are network namespaces on a bridge,
# tests/cluster/lib.sh); elsewhere it says why and exits 77. Every
# simulated host runs on this machine's cores, one BLAS thread per rank:
# give it at least 4 idle cores (the 4-host and 2 x 2 runs have 4 ranks).
#
# 1. Forward and backward time of one rank's micro-batch of each job
#    (bench/bench_layers, the thread's CPU time, medians).
# 2. For bench/mlp-1m.yaml (784-1024-1024-10, 1.86 M parameters, batch
#    256) and jobs/char-gpt.yaml, on 2 and 4 hosts x 1 rank with every
#    link shaped to 1 Gbit/s and to 10 Gbit/s (tc tbf; netem delay only
#    where the kernel has it, and the script says which): samples/s and
#    the exposed-communication fraction (breakdown comm_wait_s over the
#    step's four times, rank 0, the median of the logged intervals after
#    the first) with
#    parallel.overlap true and false, next to the raw all-reduce of the
#    same bytes on the same link (bench/allreduce_raw, measured just
#    before) and to the same ranks on one host (shared memory).
# 3. Several ranks per host: 2 hosts x 2 ranks at 1 Gbit/s, the raw sum
#    flat, host first (src/comm/hier.c, both forms) and under Open MPI's
#    coll/han, and the MLP with parallel.hierarchical on and off.
# 4. For each job: the link rate at which the raw all-reduce of its
#    gradient takes about its backward time (one rank's step on 2 hosts,
#    part 1's), found by shaping and measuring; at that rate on 2 hosts,
#    REPS pairs, each: forward and backward of one rank alone
#    (bench_layers, as part 1) and the raw all-reduce, measured anew,
#    then the step with overlap and without (one run each, on then off,
#    each the median of its 10-step intervals after the first), the
#    forward and backward measured again between the two runs (the
#    pair's: the mean of the two measures), and the
#    pair's step_overlap / (forward + max(backward, all-reduce)); the
#    verdict, PASS when <= 1.15, is on the median of the pairs' ratios.
#    The overlap run uses the accumulation schedule auto
#    chooses (parallel.accum_schedule: breadth_first for char-GPT's 2
#    micro-batches a rank), which the script prints with what drove the
#    sums (parallel.progress_us), and is compared with the same run under
#    depth_first and with buckets of 0.25 MiB (parallel.bucket_mb).
#    For a job summed in double (char-GPT) the script also times, at
#    that rate, the exact mode's own sum of the same doubles
#    (allreduce_raw --ring: reduce-scatter of doubles, all-gather of
#    the rounded floats), what its steps send; the ideal stays the raw
#    all-reduce's.
# Where this dtrain lacks parallel.overlap or the breakdown fields, the
# script says so and leaves those figures out; it invents none.
# --quick: 2 hosts only, 1 Gbit/s only, half the steps (a few minutes).
# --balanced: parts 1 and 4 only (the must-show of issue 12).
# --ddp: part 5 only (issue 28): on 2 hosts x 1 rank at 1 Gbit/s, dtrain
#    and its PyTorch DDP twin (bench/torch_ddp.py: gloo over TCP on the
#    hosts' own addresses, one process a host, one thread each, the same
#    model, global batch and Adam) back to back on the fashion-mnist MLP
#    (jobs/fashion-mnist-mlp.yaml, batch 96) and bench/mlp-1m.yaml (batch
#    256): samples/s of each and the ratio dtrain / DDP, and rank 0's
#    breakdown a step (forward, backward, exposed communication,
#    optimizer). Without python3-torch (/usr/bin/python3, or $TORCH_PYTHON)
#    it says so and runs no DDP twin.
# --zero3: part 1 for char-GPT, then part 6 alone (issue 27): on 2 hosts
#    x 1 rank at the rate part 4 finds for char-GPT (its balance), REPS
#    pairs of runs (at least 3) of jobs/char-gpt.yaml at parallel.zero 0
#    and 3, which goes first alternating from pair to pair; zero 0 as the
#    job has it (overlap on, buckets of 0.25 MiB, breadth first), zero 3
#    with overlap off (levels 2 and 3 refuse it) and $ZERO3_ARGS
#    (default --set parallel.gather_mb=4: char-GPT's 826,208 floats one
#    gather unit; add --set parallel.zero_resident_grads=true for
#    zero 3 with the gradient's pages resident, bench/README "zero 3
#    with the gradient resident"); each run's step time (the median
#    of its 10-step intervals after the first), each pair's zero 3 /
#    zero 0, their median and its verdict (PASS at 1.2 or less), rank
#    0's breakdown of the first pair, and the load average before and
#    after.
# About 10 minutes in full on an idle 8-core machine. Asserts nothing but
# exits non-zero if a run fails.
set -eu
quick=0 balanced=0 ddp=0 zero3=0
while :; do
	case ${1:-} in
	--quick) quick=1 ;;
	--balanced) balanced=1 ;;
	--ddp) ddp=1 ;;
	--zero3) zero3=1 ;;
	*) break ;;
	esac
	shift
done
if [ $# -ne 3 ]; then
	echo "usage: bench/cluster.sh [--quick] [--balanced | --ddp | --zero3] DTRAIN ALLREDUCE_RAW BENCH_LAYERS" >&2
	exit 2
fi
abs() {
	case $1 in
	/*) echo "$1" ;;
	*) echo "$(pwd -P)/$1" ;;
	esac
}
DTRAIN=$(abs "$1")
RAW=$(abs "$2")
LAYERS=$(abs "$3")
top_srcdir=$(cd "$(dirname "$0")/.." && pwd -P)
export DTRAIN top_srcdir
# The harness: scratch directory (the cwd from here on), mpi, cmpi,
# cluster_up, teardown on exit.
. "$top_srcdir/tests/cluster/lib.sh"
need_fmnist

MLP=$top_srcdir/bench/mlp-1m.yaml
GPT=$top_srcdir/jobs/char-gpt.yaml
FM=$top_srcdir/jobs/fashion-mnist-mlp.yaml
if [ $quick = 1 ]; then
	HOSTS="2" RATES="1gbit" S_MLP=20 S_GPT=12 ITERS=10
else
	HOSTS="2 4" RATES="1gbit 10gbit" S_MLP=40 S_GPT=40 ITERS=20
fi
# Part 5's steps (logged in 4 intervals; the first is left out).
if [ $quick = 1 ]; then D_FM=200 D_MLP=80; else D_FM=400 D_MLP=160; fi
# Part 4 runs more steps, logged every 10, and REPS interleaved pairs.
if [ $quick = 1 ]; then BAL_MLP=100 BAL_GPT=40 REPS=3; else BAL_MLP=200 BAL_GPT=60 REPS=5; fi
BAL=0
steps_of() {
	if [ "$1" = fm ]; then
		echo $D_FM
	elif [ $BAL = 2 ]; then
		echo $D_MLP
	elif [ $BAL = 1 ]; then
		[ "$1" = mlp ] && echo $BAL_MLP || echo $BAL_GPT
	else
		[ "$1" = mlp ] && echo $S_MLP || echo $S_GPT
	fi
}
# every_of JOBKEY: the steps a logged interval holds.
every_of() { [ $BAL = 1 ] && echo 10 || echo $(( $(steps_of "$1") / 4 )); }
# BAL=2: part 5's steps (steps_of).
job_of() {
	case $1 in
	mlp) echo "$MLP" ;;
	fm) echo "$FM" ;;
	*) echo "$GPT" ;;
	esac
}

echo "bench/cluster.sh: $(nproc) cores, $("$MPIRUN" --version 2>/dev/null | head -1)," \
     "OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS"
[ "$(nproc)" -ge 4 ] ||
	echo "note: fewer than 4 cores: the 4-rank runs share cores, and their times say so"

# What this dtrain offers (other work of issue 12 may not be merged yet).
if "$DTRAIN" plan --dry-run -n 2 --set parallel.overlap=false "$MLP" >/dev/null 2>&1; then
	have_overlap=1
	echo "parallel.overlap: present (runs with true and with false)"
else
	have_overlap=0
	echo "parallel.overlap: NOT in this dtrain (the overlap work is not merged):" \
	     "every run below is the blocking all-reduce after backward, and the" \
	     "figures that need overlap are not measured"
fi
"$DTRAIN" run -q --run-dir probe "$MLP" --set train.steps=2 \
	--set log.every_steps=1 >probe.out 2>&1 || { cat probe.out >&2; fail "probe run"; }
if grep -q '"comm_wait_s"' probe/metrics.jsonl; then
	have_breakdown=1
	echo "breakdown: present (exposed communication = comm_wait_s / (compute_s + comm_wait_s + data_wait_s + optim_s), rank 0)"
else
	have_breakdown=0
	echo "breakdown: NOT in this dtrain (metrics.jsonl has no comm_wait_s): the exposed-communication fraction is not measured"
fi
if [ $have_overlap = 1 ]; then OVERLAPS="true false"; else OVERLAPS="none"; fi
if "$DTRAIN" plan --dry-run -n 2 --set parallel.accum_schedule=depth_first "$MLP" >/dev/null 2>&1; then
	have_accum=1
	echo "parallel.accum_schedule: present (part 4 also runs overlap under depth_first)"
else
	have_accum=0
	echo "parallel.accum_schedule: NOT in this dtrain (every step is depth first)"
fi
# schedule_of RUN_DIR: the accumulation schedule the run used, and what
# drove its sums (parallel.progress_us of the job it saved).
schedule_of() {
	"$PYTHON" -c '
import json, sys
print(json.load(open(sys.argv[1])).get("grid", {}).get("accum_schedule", "depth_first (no key)"))' "$1/plan.json"
	us=$(sed -n 's/^  progress_us: *\([0-9]*\)$/\1/p' "$1/job.yaml")
	case $us in
	'') echo ", sums driven between layers (no parallel.progress_us)" ;;
	0) echo ", sums driven between layers (parallel.progress_us 0)" ;;
	*) echo ", a progress thread every $us us" ;;
	esac
}

# plan_get JOB NP FIELD: gradient_bytes, params, micro_batch,
# grad_accum_steps or global_batch from `dtrain plan --json`.
plan_get() {
	"$DTRAIN" plan --dry-run --json -n "$2" "$1" | "$PYTHON" -c '
import json, sys
o = json.load(sys.stdin)
f = sys.argv[1]
v = {"gradient_bytes": o["communication_per_rank"]["gradient_bytes"],
     "params": o["params"], "micro_batch": o["batch"]["micro_batch"],
     "grad_accum_steps": o["batch"]["grad_accum_steps"],
     "global_batch": o["batch"]["global_batch"]}[f]
print(v)' "$3"
}
# wire_type JOB NP: f32 or f64, the element the gradient sum sends.
wire_type() {
	b=$(plan_get "$1" "$2" gradient_bytes)
	p=$(plan_get "$1" "$2" params)
	[ "$b" -ge $((8 * p)) ] && echo f64 || echo f32
}

# shape RATE: every host's link to RATE (tc tbf, as cluster_up set it).
shape() {
	for k in $(seq 1 "$DTC_HOSTS"); do
		case $DTC_SHAPING in
		*"+ netem delay"*)
			tc -n "$DTC_PREFIX-h$k" qdisc change dev eth0 parent 1: \
				handle 2: tbf rate "$1" burst 1mb latency 100ms ;;
		*)
			tc -n "$DTC_PREFIX-h$k" qdisc replace dev eth0 root \
				tbf rate "$1" burst 1mb latency 100ms ;;
		esac || fail "tc: cannot shape host $k to $1"
	done
}

# raw H R BYTES TYPE [MPIRUN-OPTIONS...] [-- RAW-OPTIONS]: median ms of
# the raw sum on H hosts x R ranks.
raw() {
	h=$1 r=$2 b=$3 t=$4
	shift 4
	cmpi "$h" "$r" -t 300 "$@" "$RAW" --iters "$ITERS" "$b" "$t" \
		>raw.out 2>&1 || { cat raw.out >&2; fail "allreduce_raw on $h x $r"; }
	raw_ms
}
# The median of raw.out, or a failure.
raw_ms() {
	grep -q ' median [0-9.]* ms' raw.out || { cat raw.out >&2; fail "allreduce_raw printed no median"; }
	sed -n 's/.* median \([0-9.]*\) ms.*/\1/p' raw.out
}
# raw_hier H R BYTES TYPE FORM: the same host first (src/comm/hier.c) in
# FORM: hier (reduce / all-reduce / broadcast) or hier-scatter
# (reduce-scatter / all-reduce / all-gather).
raw_hier() {
	cmpi "$1" "$2" -t 300 "$RAW" --"$5" --iters "$ITERS" "$3" "$4" \
		>raw.out 2>&1 || { cat raw.out >&2; fail "allreduce_raw --$5"; }
	raw_ms
}

# train NAME WHERE NP JOBKEY OVERLAP [--set ...]: one run; WHERE is
# "cluster H R" or "local" (NP ranks on one host, shared memory).
# $TRAIN_MPI: more mpirun options for a cluster run (words).
train() {
	name=$1 where=$2 np=$3 jk=$4 ov=$5
	shift 5
	s=$(steps_of "$jk")
	set -- --set train.steps="$s" --set log.every_steps="$(every_of "$jk")" \
		--set eval.every_steps=0 --set checkpoint.at_end=false \
		--set parallel.blas_threads=1 "$@"
	[ "$ov" = none ] || set -- --set parallel.overlap="$ov" "$@"
	# char-gpt's cosine schedule warms up for 100 steps, more than run.
	[ "$jk" != gpt ] || set -- --set train.schedule.warmup_steps=0 "$@"
	case $where in
	local) mpi "$np" "$DTRAIN" run -q --run-dir "$name" "$(job_of "$jk")" "$@" ;;
	*) cmpi ${where#cluster } -t 600 ${TRAIN_MPI:-} "$DTRAIN" run -q --run-dir "$name" \
		"$(job_of "$jk")" "$@" ;;
	esac >"$name.out" 2>&1 || { cat "$name.out" >&2; fail "$name"; }
}
# figures NAME GLOBAL_BATCH: "samples/s step_ms exposed", the medians of
# the logged intervals after the first (4 intervals of a quarter of the
# steps each; the first holds the warm-up; exposed: "n/a" without the
# breakdown).
figures() {
	"$PYTHON" - "$1/metrics.jsonl" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r.get("samples_per_s")]
rows = rows[1:] if len(rows) > 1 else rows
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
sps = median([r["samples_per_s"] for r in rows])
fr = []
for r in rows:
    b = r.get("breakdown")
    if b:
        total = b["compute_s"] + b["comm_wait_s"] + b["data_wait_s"] + b["optim_s"]
        if total > 0:
            fr.append(b["comm_wait_s"] / total)
exposed = "%.1f%%" % (100.0 * median(fr)) if fr else "n/a"
print("%.1f %.2f %s" % (sps, 1e3 * float(sys.argv[2]) / sps, exposed))
PY
}
# per_step NAME JOBKEY: rank 0's breakdown in ms a step (compute,
# comm_wait, optim, data_wait), each the median over the logged
# intervals after the first, and where metrics.jsonl has "passes" the
# forward and backward of the interval whose compute is the median one
# (medians taken apart would not add up), or nothing.
per_step() {
	"$PYTHON" - "$1/metrics.jsonl" "$(every_of "$2")" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r.get("breakdown")]
rows = rows[1:] if len(rows) > 1 else rows
def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
if rows:
    n = float(sys.argv[2])
    ms = lambda part, k: 1e3 * median([r[part][k] for r in rows]) / n
    split = ""
    if all("passes" in r for r in rows):
        # The interval whose compute is the median one (the lower of
        # the middle two), so that forward and backward add up to it.
        mid = sorted(rows, key=lambda r: r["breakdown"]["compute_s"])[(len(rows) - 1) // 2]
        split = " (forward %.2f, backward %.2f of an interval's %.2f)" % tuple(
            1e3 * x / n for x in (mid["passes"]["forward_s"], mid["passes"]["backward_s"],
                                  mid["breakdown"]["compute_s"]))
    print("compute %.2f%s, exposed communication %.2f, optimizer %.2f, data %.2f ms a step (rank 0)"
          % ((ms("breakdown", "compute_s"), split) +
             tuple(ms("breakdown", k) for k in ("comm_wait_s", "optim_s", "data_wait_s"))))
PY
}
# calc EXPR: awk's value of EXPR (comparisons give 1 or 0).
calc() { awk "BEGIN { print ($1) }"; }
# median X...: the median of the numbers (the mean of the middle two of
# an even count).
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 }
	END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# verdict RATIO: PASS at 1.15 or less.
verdict() { [ "$(calc "$1 <= 1.15")" = 1 ] && echo PASS || echo "FAIL (> 1.15)"; }
row() { printf '%-8s %-6s %-16s %-8s %10s %9s %9s %12s %s\n' "$@"; }

# balance: the link rate (Mbit/s) at which the raw all-reduce of $bytes
# of $type on 2 hosts takes about $bwd ms (job $jk's backward), found by
# shaping and measuring (at most 5 tries, from 1 Gbit/s, stopping within
# 10%); sets rate, ms (the raw sum there) and best_off (the larger of
# sum / backward and its inverse), and leaves every link shaped to rate.
balance() {
	rate=1000 i=0 best=
	while :; do
		shape "${rate}mbit"
		ms=$(raw 2 1 "$bytes" "$type")
		echo "$jk: ${rate}mbit: raw sum $ms ms (backward $bwd ms)"
		# The closest so far, by |log(sum / backward)|.
		off=$(calc "($ms > $bwd) ? $ms / $bwd : $bwd / $ms")
		if [ -z "$best" ] || [ "$(calc "$off < $best_off")" = 1 ]; then
			best=$rate best_ms=$ms best_off=$off
		fi
		i=$((i + 1))
		# Within 10%, or out of tries.
		[ "$(calc "$off < 1.1")" = 1 ] && break
		[ $i -lt 5 ] || break
		next=$(calc "int($rate * $ms / $bwd)")
		[ "$next" -ge 10 ] || next=10
		[ "$next" -le 100000 ] || next=100000
		[ "$next" != "$rate" ] || break
		rate=$next
	done
	rate=$best ms=$best_ms
	shape "${rate}mbit"
	[ "$(calc "$best_off < 1.25")" = 1 ] ||
		echo "$jk: note: no rate tried brings the raw sum within 25% of the backward time here (the link is not the limit, or the machine is loaded); the closest is used"
}

# 1. Forward and backward per micro-batch.
# pass_ms JOBKEY NP: "fwd bwd" of one micro-batch as NP ranks split it.
pass_ms() {
	mb=$(plan_get "$(job_of "$1")" "$2" micro_batch)
	"$LAYERS" "$(job_of "$1")" "$ITERS" train.micro_batch="$mb" \
		train.grad_accum_steps=1 train.global_batch="$mb" >layers.out 2>&1 ||
		{ cat layers.out >&2; fail "bench_layers $1"; }
	sed -n 's/^pass *forward \([0-9.]*\) ms, backward \([0-9.]*\) ms.*/\1 \2/p' layers.out
}
# 6. zero 3 against zero 0 at char-GPT's balanced rate (--zero3).
# zstep NAME ZERO [--set ...]: one run of char-GPT on 2 hosts at level
# ZERO; prints its step ms (figures).
zstep() {
	n=$1 z=$2
	shift 2
	ov=true
	[ "$z" -lt 2 ] || ov=false
	train "$n" "cluster 2 1" 2 gpt "$ov" --set parallel.zero="$z" "$@"
	set -- $(figures "$n" "$gb")
	echo "$2"
}
zero3_part() {
	jk=gpt job=$GPT
	bytes=$(plan_get "$job" 2 gradient_bytes)
	type=$(wire_type "$job" 2)
	bwd=$bwd_gpt
	echo
	echo "== 6. zero 3 against zero 0, char-GPT on 2 hosts x 1 rank at its balanced rate"
	balance
	gb=$(plan_get "$job" 1 global_batch)
	z3args=${ZERO3_ARGS:---set parallel.gather_mb=4}
	BAL=1
	echo "load before: $(uptime)"
	printf '  %4s %-7s %9s %9s %7s\n' pair first "zero 0" "zero 3" ratio
	ratios= s0= s3=
	for pair in $(seq 1 "$REPS"); do
		# shellcheck disable=SC2086
		if [ $((pair % 2)) = 1 ]; then
			a=$(zstep "gpt-z0-$pair" 0)
			b=$(zstep "gpt-z3-$pair" 3 $z3args)
			first="zero 0"
		else
			b=$(zstep "gpt-z3-$pair" 3 $z3args)
			a=$(zstep "gpt-z0-$pair" 0)
			first="zero 3"
		fi
		r=$(calc "int(1000 * $b / $a + 0.5) / 1000")
		ratios="$ratios $r" s0="$s0 $a" s3="$s3 $b"
		printf '  %4s %-7s %9.2f %9.2f %7.3f\n' "$pair" "$first" "$a" "$b" "$r"
	done
	echo "load after: $(uptime)"
	BAL=0
	ratio=$(median $ratios)
	printf 'char-GPT at %smbit (raw all-reduce of its %s B of %s %.2f ms, backward %.2f ms), %s steps a run, step ms (the median of the 10-step intervals after the first):\n' \
		"$rate" "$bytes" "$type" "$ms" "$bwd" "$(BAL=1 steps_of gpt)"
	printf '  zero 0 (overlap, %s): median %.2f ms; zero 3 (overlap off, %s): median %.2f ms\n' \
		"$(schedule_of gpt-z0-1 | tr -d '\n')" "$(median $s0)" "$z3args" "$(median $s3)"
	v=PASS
	[ "$(calc "$ratio <= 1.2")" = 1 ] || v="FAIL (> 1.2)"
	printf '  zero 3 / zero 0, the median of the %s pairs'"'"' ratios = %.3f: %s\n' \
		"$REPS" "$ratio" "$v"
	for n in gpt-z0-1 gpt-z3-1; do
		echo "  $n: $(BAL=1 per_step "$n" gpt)"
	done
	"$PYTHON" -c '
import json, sys
z = json.load(open(sys.argv[1])).get("zero", {})
print("  gpt-z3-1, summary.json zero: " + ", ".join(
    "%s %s" % (k, z[k]) for k in sorted(z)))' gpt-z3-1/summary.json
}

# 5. dtrain against its PyTorch DDP twin (--ddp: this part alone).
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}
# ddp_run JOBKEY TWIN STEPS: the twin's "samples/s step_ms" on hosts 1
# and 2 (gloo over eth0, rank 0's address 198.18.0.1).
ddp_run() {
	port=$((29500 + $$ % 1000))
	for k in 1 2; do
		on $k env GLOO_SOCKET_IFNAME=eth0 timeout -k 5 600 "$TORCH_PYTHON" \
			"$top_srcdir/bench/torch_ddp.py" "$2" $((k - 1)) 2 198.18.0.1 \
			"$port" "$3" >"ddp-$1-$k.out" 2>&1 &
		eval "pid_$k=$!"
	done
	rc=0
	wait "$pid_1" || rc=$?
	wait "$pid_2" || rc=$?
	[ $rc = 0 ] || { cat "ddp-$1-1.out" "ddp-$1-2.out" >&2; fail "torch_ddp.py $2"; }
	sed -n 's/^ddp [a-z0-9]* samples\/s \([0-9.]*\) step_ms \([0-9.]*\)$/\1 \2/p' "ddp-$1-1.out"
}
# trace_summary TRACE: medians a step (ms) of the step, its passes, the
# bucket sums' starts and the waits of one rank's Chrome trace, steps
# of the first quarter left out.
trace_summary() {
	"$PYTHON" - "$1" <<'PY'
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["tid"] == 1]
steps = [e for e in ev if e["name"] == "step"]
steps = steps[len(steps) // 4:]
def med(v):
    v = sorted(v)
    return v[len(v) // 2] if v else 0.0
def per_step(name):
    out = []
    for s in steps:
        a, b = s["ts"], s["ts"] + s["dur"]
        out.append(sum(e["dur"] for e in ev if e["name"] == name and
                       a <= e["ts"] and e["ts"] + e["dur"] <= b + 0.002))
    return med(out) / 1e3
names = ("step", "compute", "forward", "allreduce", "sync", "colls_lock",
         "MPI_Waitall", "MPI_Allreduce", "optimizer")
print(", ".join("%s %.2f" % (n, per_step(n)) for n in names) +
      " ms a step (rank 0, medians; allreduce: starting the buckets' sums)")
PY
}
if [ $ddp = 1 ]; then
	echo
	echo "== 5. dtrain against PyTorch DDP (gloo), 2 hosts x 1 rank at 1gbit, one thread a rank"
	if "$TORCH_PYTHON" -c 'import torch' 2>/dev/null; then
		have_torch=1
		echo "torch $("$TORCH_PYTHON" -c 'import torch; print(torch.__version__)')" \
		     "($TORCH_PYTHON; DDP's defaults: 25 MiB buckets, all-reduce overlapped with backward)"
	else
		have_torch=0
		echo "python3-torch is not installed ($TORCH_PYTHON cannot import torch):" \
		     "no DDP twin, dtrain alone (apt-get install python3-torch)"
	fi
	cluster_up 2
	shape 1gbit
	BAL=2
	for jk in fm mlp; do
		job=$(job_of $jk)
		gb=$(plan_get "$job" 1 global_batch)
		s=$(steps_of $jk)
		train "$jk-dt" "cluster 2 1" 2 $jk none
		set -- $(figures "$jk-dt" "$gb")
		dsps=$1 dms=$2
		echo "$jk ($(basename "$job"), batch $gb, $(plan_get "$job" 2 params) parameters):" \
		     "dtrain $dsps samples/s, step $dms ms ($s steps, the median of the 3 logged intervals after the first)"
		echo "  dtrain: $(per_step "$jk-dt" $jk)"
		# The TCP eager limit the ranks set (parallel.tcp_eager_kb).
		echo "  dtrain's TCP eager limit: $("$PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1]))
b = s.get("tcp_eager_bytes", "absent")
print({"absent": "not said (a dtrain before parallel.tcp_eager_kb)",
       None: "the environment'"'"'s", 0: "Open MPI'"'"'s own"}.get(b, "%s bytes" % b))
' "$jk-dt/summary.json")"
		# The same run traced (DTRAIN_TRACE=1, util/trace.h): where
		# rank 0's step goes, the medians after the first quarter.
		export DTRAIN_TRACE=1
		TRAIN_MPI="-x DTRAIN_TRACE"
		train "$jk-tr" "cluster 2 1" 2 $jk none
		unset DTRAIN_TRACE TRAIN_MPI
		echo "  dtrain traced: $(trace_summary "$jk-tr/trace-rank0.json")"
		if [ $have_torch = 1 ]; then
			tw=mlp	# torch_ddp.py's names
			[ $jk = fm ] || tw=mlp1m
			set -- $(ddp_run $jk $tw "$s")
			[ $# -eq 2 ] || fail "torch_ddp.py printed no samples/s line"
			echo "  DDP: $1 samples/s, step $2 ms ($s steps after 5 of warm-up)"
			echo "  dtrain / DDP = $(calc "int(1000 * $dsps / $1 + 0.5) / 1000")"
		fi
	done
	BAL=0
	echo "shaping: $DTC_SHAPING, then tbf 1gbit"
	exit 0
fi

echo
echo "== 1. one rank's forward and backward (bench_layers, CPU time, medians of $ITERS)"
JOBS1="mlp gpt"
[ $zero3 = 0 ] || JOBS1=gpt
for jk in $JOBS1; do
	set -- $(pass_ms $jk 2)
	[ $# -eq 2 ] || { cat layers.out >&2; fail "bench_layers printed no pass line"; }
	acc=$(plan_get "$(job_of $jk)" 2 grad_accum_steps)
	f=$(calc "$1 * $acc")
	b=$(calc "$2 * $acc")
	eval "fwd_$jk=$f bwd_$jk=$b"
	echo "$jk: micro-batch $(plan_get "$(job_of $jk)" 2 micro_batch) x $acc per step" \
	     "on each of 2 ranks: forward $f ms, backward $b ms per step"
done

if [ $zero3 = 1 ]; then
	cluster_up 2
	zero3_part
	exit 0
fi
cluster_up 4
if [ $balanced = 0 ]; then
# 2. The grid.
echo
echo "== 2. samples/s and exposed communication, 1 rank per host"
row job hosts link overlap samples/s "step ms" exposed "raw sum ms" "vs one host"
for jk in mlp gpt; do
	job=$(job_of $jk)
	gb=$(plan_get "$job" 1 global_batch)
	train "$jk-1" local 1 $jk none
	set -- $(figures "$jk-1" "$gb")
	row $jk 1 "one rank" - "$1" "$2" "$3" - -
	for h in $HOSTS; do
		ov0=$(echo $OVERLAPS | cut -d' ' -f1)
		train "$jk-local$h" local "$h" $jk "$ov0"
		set -- $(figures "$jk-local$h" "$gb")
		local_sps=$1
		row $jk "$h" "one host (shm)" "$ov0" "$1" "$2" "$3" - -
		bytes=$(plan_get "$job" "$h" gradient_bytes)
		type=$(wire_type "$job" "$h")
		for rate in $RATES; do
			shape "$rate"
			ms=$(raw "$h" 1 "$bytes" "$type")
			for ov in $OVERLAPS; do
				n=$jk-h$h-$rate-$ov
				train "$n" "cluster $h 1" "$h" $jk "$ov"
				set -- $(figures "$n" "$gb")
				row $jk "$h" "$rate" "$ov" "$1" "$2" "$3" \
				    "$ms ($bytes B $type)" \
				    "$(calc "int(100 * $1 / $local_sps) / 100")x"
			done
		done
	done
done
echo "(overlap none: this dtrain has no parallel.overlap; exposed n/a: no breakdown;" \
     "vs one host: samples/s over the same ranks on one host with shared memory)"

# 3. Several ranks per host.
echo
echo "== 3. 2 hosts x 2 ranks at 1gbit: the sum flat, host first, coll/han"
shape 1gbit
bytes=$(plan_get "$MLP" 4 gradient_bytes)
type=$(wire_type "$MLP" 4)
flat=$(raw 2 2 "$bytes" "$type")
hier=$(raw_hier 2 2 "$bytes" "$type" hier)
scat=$(raw_hier 2 2 "$bytes" "$type" hier-scatter)
# Open MPI 4.1.4's coll/han crashed in its node reduce over vader's
# single-copy reads on these hosts (a segfault after "Read -1, expected
# 65536, errno = 14"): it runs with vader's copy-in/copy-out, and a
# failure is reported, not fatal.
if cmpi 2 2 -t 300 --mca coll_han_priority 100 \
	--mca btl_vader_single_copy_mechanism none "$RAW" --iters "$ITERS" \
	"$bytes" "$type" >raw.out 2>&1 && grep -q ' median ' raw.out; then
	han="$(raw_ms) ms"
else
	han="failed (Open MPI: $(grep -m1 -E 'Signal:|error|Error' raw.out || echo "exit status $?"))"
fi
echo "raw sum of $bytes B $type: flat $flat ms; host first (src/comm/hier.c):" \
     "reduce form $hier ms, scatter form (the default) $scat ms;" \
     "coll/han (vader single copy off) $han"
gb=$(plan_get "$MLP" 1 global_batch)
ov0=$(echo $OVERLAPS | cut -d' ' -f1)
for hm in on off; do
	train "mlp-2x2-$hm" "cluster 2 2" 4 mlp "$ov0" --set parallel.hierarchical=$hm
	set -- $(figures "mlp-2x2-$hm" "$gb")
	echo "mlp 2 x 2, parallel.hierarchical $hm: $1 samples/s, step $2 ms, exposed $3"
done
fi

# 4. The balanced link.
echo
echo "== 4. at the rate where the raw sum takes about the backward time (2 hosts x 1 rank)"
for jk in mlp gpt; do
	job=$(job_of $jk)
	bytes=$(plan_get "$job" 2 gradient_bytes)
	type=$(wire_type "$job" 2)
	eval "fwd=\$fwd_$jk bwd=\$bwd_$jk"
	balance
	gb=$(plan_get "$job" 1 global_batch)
	acc=$(plan_get "$job" 2 grad_accum_steps)
	BAL=1
	# REPS pairs, overlap on then off, one after the other, each after
	# its own forward, backward (bench_layers, one rank alone) and raw
	# sum at this rate, so that the ideal a pair's step is held to was
	# measured the same minute: this shared machine's speed drifts by
	# more than the margin between runs (pair, not k: the harness's
	# loops use k).
	steps_t= steps_f= ratios= ideals= rows=
	for pair in $(seq 1 $REPS); do
		set -- $(pass_ms $jk 2)
		[ $# -eq 2 ] || { cat layers.out >&2; fail "bench_layers printed no pass line"; }
		fa=$1 ba=$2
		mp=$(raw 2 1 "$bytes" "$type")
		first=1
		for ov in $OVERLAPS; do
			train "$jk-bal-$ov-$pair" "cluster 2 1" 2 $jk "$ov"
			set -- $(figures "$jk-bal-$ov-$pair" "$gb")
			eval "step_${ov}_$pair=$2"
			# Forward and backward again right after the first
			# run, the pair's being the mean of the two: the
			# machine's speed drifts between minutes, and a run
			# bracketed by its ideal sees the same drift.
			if [ $first = 1 ]; then
				set -- $(pass_ms $jk 2)
				[ $# -eq 2 ] || { cat layers.out >&2; fail "bench_layers printed no pass line"; }
				fp=$(calc "($fa + $1) / 2 * $acc") bp=$(calc "($ba + $2) / 2 * $acc")
				first=0
			fi
		done
		ip=$(calc "$fp + ($bp > $mp ? $bp : $mp)")
		ideals="$ideals $ip"
		if [ $have_overlap = 1 ]; then
			eval "st=\$step_true_$pair sf=\$step_false_$pair"
			steps_t="$steps_t $st" steps_f="$steps_f $sf"
			rp=$(calc "$st / $ip")
			ratios="$ratios $rp"
			rows="$rows$(printf '    %4s %8.2f %9.2f %11.2f %8.2f %8.2f %9.2f %9.2f %6.3f' \
				"$pair" "$fp" "$bp" "$mp" "$ip" "$(calc "$fp + $bp + $mp")" "$st" "$sf" "$rp")
"
		else
			eval "sn=\$step_none_$pair"
			rows="$rows$(printf '    %4s %8.2f %9.2f %11.2f %8.2f %8.2f %9s %9.2f %6s' \
				"$pair" "$fp" "$bp" "$mp" "$ip" "$(calc "$fp + $bp + $mp")" - "$sn" -)
"
		fi
	done
	sched=$(schedule_of "$jk-bal-${OVERLAPS%% *}-1" | tr -d '\n')
	if [ $have_overlap = 1 ] && [ $have_accum = 1 ]; then
		train "$jk-bal-df" "cluster 2 1" 2 $jk true \
			--set parallel.accum_schedule=depth_first
		set -- $(figures "$jk-bal-df" "$gb")
		step_df=$2
	fi
	if [ $have_overlap = 1 ]; then
		train "$jk-bal-b025" "cluster 2 1" 2 $jk true \
			--set parallel.bucket_mb=0.25
		set -- $(figures "$jk-bal-b025" "$gb")
		step_b025=$2
	fi
	# The exact mode's own sum of the same doubles (a reduce-scatter of
	# them and an all-gather of the rounded floats), where this dtrain
	# has it: what its steps send instead of the raw all-reduce.
	ring_ms=
	if [ "$type" = f64 ] &&
	   cmpi 2 1 -t 300 "$RAW" --ring --iters "$ITERS" "$bytes" f64 >raw.out 2>&1; then
		ring_ms=$(raw_ms)
	fi
	BAL=0
	ideal=$(median $ideals)
	printf '%s at %smbit (the rate found with part 1'"'"'s backward, %.2f ms: raw all-reduce %.2f ms)\n' \
		$jk "$rate" "$bwd" "$ms"
	[ -z "$ring_ms" ] ||
		printf '  the exact mode'"'"'s own sum of the same doubles (f64 reduce-scatter, f32 all-gather; what the steps send): %.2f ms at this rate\n' \
			"$ring_ms"
	printf '  %s pairs, each: forward, backward (one rank alone), raw all-reduce at this rate, then 2 runs of %s steps, overlap on and off (step: the median of the 10-step intervals after the first) with forward and backward measured again between them (a pair'"'"'s: the mean of the two), ms:\n' \
		$REPS "$(BAL=1 steps_of $jk)"
	printf '    pair  forward  backward  all-reduce    ideal blocking   step on  step off  ratio\n'
	printf '%s' "$rows"
	printf '    (ideal: forward + max(backward, all-reduce); blocking: forward + backward + all-reduce; ratio: step on / ideal)\n'
	if [ $have_overlap = 1 ]; then
		ratio=$(median $ratios)
		printf '  step with overlap (accumulation %s): median %.2f ms; without: median %.2f ms\n' \
			"$sched" "$(median $steps_t)" "$(median $steps_f)"
		printf '  step_overlap / (forward + max(backward, all-reduce)), the median of the pairs'"'"' ratios = %.3f: %s\n' \
			"$ratio" "$(verdict "$ratio")"
		[ $have_accum = 0 ] ||
			printf '  step with overlap, accumulation depth_first %.2f ms (%.3f x the pairs'"'"' median ideal, %.2f ms)\n' \
				"$step_df" "$(calc "$step_df / $ideal")" "$ideal"
		printf '  step with overlap in buckets of 0.25 MiB %.2f ms (%.3f x the median ideal)\n' \
			"$step_b025" "$(calc "$step_b025 / $ideal")"
		for n in "$jk-bal-true-1" "$jk-bal-false-1" "$jk-bal-df" "$jk-bal-b025"; do
			[ -d "$n" ] && echo "  $n: $(BAL=1 per_step "$n" $jk)"
		done
	else
		printf '  step (blocking) %.2f ms; with overlap: not measured (no parallel.overlap in this dtrain), ratio not computed\n' \
			"$step_none_1"
	fi
done
echo
case $DTC_SHAPING in
*"+ netem delay"*) echo "shaping: tc tbf on each host's link at the rates above, under netem delay ${DTC_DELAY:-100us}" ;;
*) echo "shaping: tc tbf on each host's link at the rates above; no delay (this kernel has no netem)" ;;
esac
