#!/bin/sh
# SPDX-License-Identifier: MIT
# gpt2-mem-fit.sh - the GPT-2-shaped job that does not fit, trained in a
# memory cgroup at zero 3 (issue 27's must-show in bench/; the small
# version runs in make check: tests/integration/mem-fit.sh).
#
#   bench/gpt2-mem-fit.sh [--ref-zero N] [--steps S] DTRAIN [JOB]
#
# JOB (default bench/gpt2-small-untied.yaml, 163 M parameters untied) at
# data.context 256 (the job's input shape and position table follow
# data.context), 4 ranks of one BLAS thread, no checkpoint, no held-out
# data and no evaluation (zero 3 gathers its whole parameters for
# neither since issue 27's change; only the gathered format does),
# S optimizer steps (default 3) of 8 samples, each logged. From the
# plans (`dtrain plan --dry-run --json -n 4`) it works out a cgroup limit
# below what the memory check before allocation needs at zero 0 and
# above 1.15 x the 4 ranks' planned total at zero 3 with
# model.recompute: blocks, plus 64 MiB for mpirun (the midpoint, or
# less where the node has less free memory), makes a memory cgroup of
# that limit (v2, or v1 under /sys/fs/cgroup/memory), and asserts:
# - zero 0 in the cgroup is refused by the check, exit status 2, the
#   message naming the bytes the plan needs (the figure worked out here
#   from the plan) and the bytes the cgroup leaves (at most the limit);
# - 4 ranks at zero 3 with recompute blocks train in the cgroup and log
#   the losses, byte for byte as metrics.jsonl writes them, of an
#   unlimited 4-rank run at zero N (default 0) without recompute, run
#   first; the exactness promise makes zero 0 to 3 bit-equal
#   (tests/integration/zero.sh), so on a machine without room for zero
#   0 (4 x 4.4 GiB here) --ref-zero 2 (4 x 1.9 GiB) is the reference;
# - each rank's peak resident memory (summary.json) of both runs is
#   within 15% of its plan's figure, and the zero-3 ranks' sum under
#   the limit.
# Before each run it reads MemAvailable and refuses (exit 77, with a
# message) to start a run whose planned total (or, in the cgroup, the
# limit if less) exceeds it less 4 GiB, the margin for other work.
# Exit 77 also where no cgroup can be made (not root, no writable
# memory controller). Prints the limit, each rank's plan and peak, the
# losses and the wall time of each run (bench/README has one run).
set -eu
ref=0 steps=3
while :; do
	case ${1:-} in
	--ref-zero) ref=$2; shift ;;
	--steps) steps=$2; shift ;;
	*) break ;;
	esac
	shift
done
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: bench/gpt2-mem-fit.sh [--ref-zero N] [--steps S] DTRAIN [JOB]" >&2
	exit 2
fi
case $ref in
0|1|2|3) ;;
*) echo "gpt2-mem-fit.sh: --ref-zero: expected 0 to 3, found '$ref'" >&2
   exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
dtrain=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
job=$(cd "$(dirname "${2:-$here/gpt2-small-untied.yaml}")" && pwd)/$(basename "${2:-$here/gpt2-small-untied.yaml}")
MPIRUN=${MPIRUN:-mpirun}
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 \
	OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
CG=
cleanup() {
	[ -z "$CG" ] || rmdir "$CG" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"

fail() {
	echo "gpt2-mem-fit.sh: FAIL: $*" >&2
	exit 1
}

# make_cgroup BYTES: a new memory cgroup limited to BYTES, its directory
# in CG and the file that takes a process in CG_TASKS; returns 1 when
# none can be made.
make_cgroup() {
	name=dtrain-gpt2-memfit-$$
	rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
	if [ -n "$rel" ] && [ -f "/sys/fs/cgroup$rel/cgroup.controllers" ] &&
	   [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		CG=/sys/fs/cgroup${rel%/}/$name
		mkdir "$CG" 2>/dev/null || { CG=; return 1; }
		echo "$1" >"$CG/memory.max" 2>/dev/null || return 1
		echo 0 >"$CG/memory.swap.max" 2>/dev/null || true
		CG_TASKS=$CG/cgroup.procs
		return 0
	fi
	rel=$(sed -n 's/^[0-9]*:\([^:]*,\)*memory\(,[^:]*\)*:\(.*\)$/\3/p' /proc/self/cgroup)
	[ -n "$rel" ] && [ -d /sys/fs/cgroup/memory ] || return 1
	CG=/sys/fs/cgroup/memory${rel%/}/$name
	mkdir "$CG" 2>/dev/null || { CG=; return 1; }
	echo "$1" >"$CG/memory.limit_in_bytes" 2>/dev/null || return 1
	CG_TASKS=$CG/tasks
}
# in_cgroup CMD...: CMD run inside the cgroup.
in_cgroup() {
	sh -c 'echo $$ >"$0" && exec "$@"' "$CG_TASKS" "$@"
}
# room BYTES WHAT: exit 77 unless MemAvailable less 4 GiB holds BYTES.
room() {
	avail=$(awk '/^MemAvailable:/ { print $2 * 1024 }' /proc/meminfo)
	if [ "$(awk -v a="$avail" -v b="$1" 'BEGIN { print (b <= a - 4 * 2^30) }')" != 1 ]; then
		echo "SKIP: $2 plans $1 bytes, but MemAvailable ($avail bytes) less 4 GiB for other work cannot hold it"
		exit 77
	fi
	echo "$2: plans $(awk -v b="$1" 'BEGIN { printf "%.2f GiB", b / 2^30 }'), MemAvailable $(awk -v a="$avail" 'BEGIN { printf "%.2f GiB", a / 2^30 }')"
}
# mpi4 RUNDIR SET...: the job on 4 ranks (optionally in the cgroup:
# IN=in_cgroup), its wall time in seconds into RUNDIR.wall.
mpi4() {
	d=$1
	shift
	t0=$(date +%s.%N)
	rc=0
	# shellcheck disable=SC2086
	${IN:-} timeout 3600 "$MPIRUN" -np 4 --oversubscribe --bind-to none \
		"$dtrain" run -q --run-dir "$d" "$job" $common "$@" \
		>"$d.out" 2>"$d.err" || rc=$?
	awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f\n", b - a }' >"$d.wall"
	return $rc
}
# losses RUNDIR: the loss field of each line of metrics.jsonl, as written.
losses() {
	sed -n 's/.*"loss": *\([^,}]*\).*/\1/p' "$1/metrics.jsonl"
}
# peaks PLAN RUNDIR: each rank's peak resident memory against the plan's
# figure, within 15%; prints both; the sum of the peaks on stdout's last
# line.
peaks() {
	python3 - "$1" "$2" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))["ranks"]
ranks = json.load(open(sys.argv[2] + "/summary.json"))["ranks"]
assert len(ranks) == 4, ranks
bad = 0
for r in sorted(ranks, key=lambda r: r["rank"]):
    want = plan[r["rank"]]["memory"]["total"]
    got = r["peak_resident_bytes"]
    print("  rank %d: peak resident %.1f MiB, plan %.1f MiB (%.3f)"
          % (r["rank"], got / 2**20, want / 2**20, got / want))
    bad |= not 0.85 <= got / want <= 1.15
print(sum(r["peak_resident_bytes"] for r in ranks))
sys.exit(bad)
PY
}

common="--set data.context=256 --set data.eval_fraction=0 --set eval.every_steps=0 --set checkpoint.at_end=false --set log.every_steps=1 --set train.steps=$steps --set train.schedule.warmup_steps=1 --set parallel.overlap=false --set parallel.blas_threads=1"
Z3="--set parallel.zero=3 --set model.recompute=blocks"
# shellcheck disable=SC2086
"$dtrain" plan --dry-run --json -n 4 "$job" $common >plan0.json
# shellcheck disable=SC2086
"$dtrain" plan --dry-run --json -n 4 "$job" $common \
	--set parallel.zero="$ref" >planref.json
# shellcheck disable=SC2086
"$dtrain" plan --dry-run --json -n 4 "$job" $common $Z3 >plan3.json
# The limit, and what the check before allocation needs at zero 0 (the
# plan's totals less the runtime, resident by then, and the data's
# terms, not read yet: tests/integration/mem-precheck.sh).
python3 - >figures <<'PY'
import json
p0, pr, p3 = (json.load(open(f)) for f in
              ("plan0.json", "planref.json", "plan3.json"))
def need(p):
    return sum(r["memory"]["total"] - r["memory"]["runtime"] -
               r["memory"]["dataset"] - 8 * p["data"]["train_samples"]
               for r in p["ranks"])
def total(p):
    return sum(r["memory"]["total"] for r in p["ranks"])
avail = [int(l.split()[1]) * 1024 for l in open("/proc/meminfo")
         if l.startswith("MemAvailable:")][0]
held3 = total(p3)
low, high = int(1.15 * held3) + (64 << 20), need(p0)
assert low < high, ("no limit between", low, high)
assert need(p3) < low, (need(p3), low)
# The midpoint; where the node has less free, a limit above what is
# free would let the node's figure, not the cgroup's, refuse zero 0.
limit = min((low + high) // 2, avail - (512 << 20), high - (256 << 20))
limit = max(limit, low) // 4096 * 4096
print(p0["params"], limit, high, held3, total(pr), low)
PY
read -r params limit need0 held3 heldref low <figures
echo "$(basename "$job") at context 256: $params parameters, 4 ranks"
echo "cgroup limit $limit bytes ($(awk -v b="$limit" 'BEGIN { printf "%.2f GiB", b / 2^30 }')): zero 0 needs $need0 before allocation, zero 3 with recompute plans $held3 (lowest limit $low)"

# The reference, unlimited: zero $ref, no recompute.
room "$heldref" "the unlimited reference (zero $ref, 4 ranks)"
# shellcheck disable=SC2086
mpi4 ref --set parallel.zero="$ref" ||
	{ cat ref.err >&2; fail "the unlimited zero-$ref run"; }
losses ref >ref.losses
[ "$(wc -l <ref.losses)" -eq "$steps" ] ||
	fail "the reference logged $(wc -l <ref.losses) losses, expected $steps"
echo "zero $ref unlimited: $(cat ref.wall) s; losses $(tr '\n' ' ' <ref.losses)"
peaks planref.json ref >ref.peaks || { cat ref.peaks; fail "zero $ref: a rank's peak is not within 15% of its plan"; }
sed '$d' ref.peaks

if ! make_cgroup "$limit"; then
	echo "SKIP: cannot make a memory cgroup (not root, or no writable cgroup v1 or v2 memory controller)"
	exit 77
fi
IN=in_cgroup
# Refused before allocation: the cgroup bounds it even if the check
# failed to.
room "$(awk -v a="$limit" -v b="$need0" 'BEGIN { printf "%.0f", a < b ? a : b }')" "zero 0 in the cgroup"
rc=0
mpi4 z0 || rc=$?
[ "$rc" -eq 2 ] || { cat z0.err >&2; fail "zero 0 in the cgroup exited $rc, expected 2"; }
msg=$(grep -E -m1 "not enough memory: the plan needs 4 ranks x [0-9]+ bytes \([0-9.]+ MiB: [a-z, ]+\) = $need0 bytes \([0-9.]+ [GM]iB\) on this node, but only [0-9]+ bytes \([0-9.]+ [GM]iB\) are available \(the cgroup's memory limit less its usage\)" z0.err) ||
	{ cat z0.err >&2; fail "zero 0's refusal does not name $need0 bytes and the cgroup's room"; }
left=$(echo "$msg" | sed 's/.* but only \([0-9]*\) bytes.*/\1/')
if [ "$left" -gt "$limit" ] || [ "$left" -le $((limit - (1 << 30))) ]; then
	fail "zero 0's refusal names $left bytes available, not the cgroup's $limit less its usage"
fi
[ ! -e z0 ] || fail "the refused zero-0 run made its run directory"
echo "zero 0 in the cgroup: refused, exit 2 ($(cat z0.wall) s): ${msg#*: }"

room "$(awk -v a="$limit" -v b="$held3" 'BEGIN { printf "%.0f", a < b ? a : b }')" "zero 3 with recompute in the cgroup"
# shellcheck disable=SC2086
mpi4 z3 $Z3 || { cat z3.err >&2; fail "zero 3 with recompute in $limit bytes"; }
losses z3 >z3.losses
echo "zero 3 recompute blocks in the cgroup: $(cat z3.wall) s; losses $(tr '\n' ' ' <z3.losses)"
peaks plan3.json z3 >z3.peaks || { cat z3.peaks; fail "zero 3: a rank's peak is not within 15% of its plan"; }
sed '$d' z3.peaks
sum=$(tail -n 1 z3.peaks)
[ "$sum" -lt "$limit" ] || fail "zero 3's peaks sum to $sum bytes, over the limit $limit"
cmp ref.losses z3.losses ||
	fail "zero 3 in the cgroup logged other losses than zero $ref unlimited"
echo "ok: in $limit bytes zero 0 is refused ($need0 needed), zero 3 with recompute trains zero $ref's losses (peaks sum $sum bytes)"
