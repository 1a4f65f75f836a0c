# SPDX-License-Identifier: MIT
# lib.sh - a simulated cluster for the tests in tests/cluster/ (sourced,
# after tests/integration/lib.sh's helpers). cluster_up N makes N hosts:
# network namespaces $DTC_PREFIX-h1..hN, each with a veth link (eth0,
# 198.18.0.K/24, from the 198.18.0.0/15 range set aside for network
# benchmarks) to a bridge that lives in a namespace of its own
# ($DTC_PREFIX-br); nothing is added to the root namespace, and no host
# has a route off the bridge. Every link is shaped with tc (tbf at
# $DTC_RATE, 10gbit unless set; netem delay where the kernel has it, which
# the harness says). Open MPI reaches the hosts through tests/cluster/
# netns-rsh (--mca plm_rsh_agent) and talks TCP over eth0 only; mpirun
# itself runs on host 1, its daemons probing their links as dtrain run -n
# sets them for parallel.timeout_s 10 (oob_tcp_keepalive_*). Everything
# is torn down on exit, also on failure.
# Where namespaces cannot be made the test says "SKIP: ..." and exits 77.
. "${top_srcdir}/tests/integration/lib.sh"

DTC_PREFIX=dtc$$
DTC_HOSTS=0
DTC_WWW=
DTC_AGENT=$top_srcdir/tests/cluster/netns-rsh
case $DTC_AGENT in
/*) ;;
*) DTC_AGENT=$(pwd -P)/../$DTC_AGENT ;;
esac
export DTC_PREFIX

# Tears the cluster down: every process still in one of its namespaces is
# killed (all were started by this test), then the namespaces go, and
# their veth ends with them.
cluster_down() {
	if [ -n "$DTC_WWW" ]; then
		kill "$DTC_WWW" 2>/dev/null || :
		wait "$DTC_WWW" 2>/dev/null || :
	fi
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		case $ns in
		"$DTC_PREFIX"-*)
			for p in $(ip netns pids "$ns" 2>/dev/null); do
				kill -KILL "$p" 2>/dev/null || :
			done
			ip netns del "$ns" 2>/dev/null || :
			;;
		esac
	done
}
DTC_T0=$(date +%s)
trap 'rc=$?; cluster_down; rm -rf "$SCRATCH"
echo "cluster: ${0##*/}: $(( $(date +%s) - DTC_T0 )) s"; exit $rc' EXIT
trap 'exit 1' INT TERM HUP

skip() {
	echo "SKIP: $*"
	exit 77
}

# on K CMD...: CMD on host K (its namespace, host name dtc-hK).
on() {
	k=$1
	shift
	ip netns exec "$DTC_PREFIX-h$k" unshare --uts sh -c \
		'hostname "$0" && shift && exec "$@"' "dtc-h$k" sh "$@"
}

# cluster_up N: N hosts on one bridge; sets DTC_HOSTS and DTC_SHAPING.
cluster_up() {
	[ "$(id -u)" -eq 0 ] || skip "the simulated cluster needs root (network namespaces)"
	for t in ip tc unshare hostname; do
		command -v $t >/dev/null 2>&1 ||
			skip "the simulated cluster needs $t (apt-get install iproute2)"
	done
	ip netns add "$DTC_PREFIX-br" 2>/dev/null ||
		skip "cannot make network namespaces here (ip netns add failed)"
	ip -n "$DTC_PREFIX-br" link add br0 type bridge 2>/dev/null ||
		skip "cannot make a bridge in a network namespace"
	ip -n "$DTC_PREFIX-br" link set br0 up
	ip -n "$DTC_PREFIX-br" link set lo up
	# A switch forwards frames without filtering them: where the kernel
	# has br_netfilter loaded (these settings are per namespace), the
	# bridge's frames skip iptables, which otherwise ran on every
	# segment between hosts.
	for f in iptables ip6tables arptables; do
		ip netns exec "$DTC_PREFIX-br" sh -c \
			'[ ! -e "$0" ] || echo 0 >"$0"' \
			"/proc/sys/net/bridge/bridge-nf-call-$f" 2>/dev/null || :
	done
	rate=${DTC_RATE:-10gbit}
	netem=no
	DTC_HOSTS=$1
	for k in $(seq 1 "$1"); do
		dtc_host "$DTC_PREFIX-h$k" "198.18.0.$k"
		if tc -n "$DTC_PREFIX-h$k" qdisc add dev eth0 root handle 1: \
		      netem delay ${DTC_DELAY:-100us} 2>/dev/null; then
			netem=yes
			tc -n "$DTC_PREFIX-h$k" qdisc add dev eth0 parent 1: \
				handle 2: tbf rate "$rate" burst 1mb latency 100ms
		else
			tc -n "$DTC_PREFIX-h$k" qdisc add dev eth0 root tbf \
				rate "$rate" burst 1mb latency 100ms ||
				fail "tc tbf on host $k"
		fi
	done
	if [ $netem = yes ]; then
		DTC_SHAPING="tbf rate $rate + netem delay ${DTC_DELAY:-100us} on each host's link"
	else
		DTC_SHAPING="tbf rate $rate on each host's link (netem: not in this kernel, no delay added)"
	fi
	echo "cluster: $1 hosts on 198.18.0.0/24; shaping: $DTC_SHAPING"
	export DTC_TMP_ROOT="$SCRATCH/tmp"
	mkdir -p "$DTC_TMP_ROOT"
}

# dtc_host NS ADDR: a namespace with eth0 (ADDR/24) on the bridge, lo up.
dtc_host() {
	ip netns add "$1" || fail "ip netns add $1"
	port=p${2##*.}
	ip -n "$DTC_PREFIX-br" link add "$port" type veth peer name eth0 \
		netns "$1" || fail "veth for $1"
	ip -n "$DTC_PREFIX-br" link set "$port" master br0
	ip -n "$DTC_PREFIX-br" link set "$port" up
	ip -n "$1" link set lo up
	ip -n "$1" addr add "$2/24" dev eth0
	ip -n "$1" link set eth0 up
}

# www_up ROOT: tests/http_server.py serving ROOT from a host of its own on
# the bridge (198.18.0.200); sets WWW (the base URL) and leaves the
# request log in $SCRATCH/requests.log.
www_up() {
	dtc_host "$DTC_PREFIX-www" 198.18.0.200
	ip netns exec "$DTC_PREFIX-www" "$PYTHON" \
		"$top_srcdir/tests/http_server.py" --bind 198.18.0.200 \
		--log-client --root "$1" --log "$SCRATCH/requests.log" --max-seconds 300 \
		>"$SCRATCH/www.port" 2>"$SCRATCH/www.err" &
	DTC_WWW=$!
	i=0
	while [ ! -s "$SCRATCH/www.port" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || { cat "$SCRATCH/www.err" >&2; fail "test server did not start"; }
		sleep 0.1
	done
	WWW=http://198.18.0.200:$(cat "$SCRATCH/www.port")
}

# The hostfile for H hosts with R slots each.
hostfile() {
	for k in $(seq 1 "$1"); do
		echo "198.18.0.$k slots=$2"
	done >"$SCRATCH/hosts.$1x$2"
	echo "$SCRATCH/hosts.$1x$2"
}

# The mpirun options that run on the simulated cluster, for R ranks per
# host (shared memory between a host's own ranks when R > 1).
cluster_mca() {
	btl=tcp,self
	[ "$1" -gt 1 ] && btl=tcp,vader,self
	echo "--mca plm_rsh_agent $DTC_AGENT --mca plm_rsh_no_tree_spawn 1" \
	     "--mca btl $btl --mca btl_tcp_if_include 198.18.0.0/24" \
	     "--mca oob_tcp_if_include 198.18.0.0/24 --bind-to none" \
	     "--mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 5" \
	     "--mca oob_tcp_keepalive_probes 3"
}

# cmpi H R [-t SECONDS] ARGS...: mpirun on host 1 with H x R ranks, R per
# host, ranks 0..R-1 on host 1 and so on; ARGS are mpirun's (options, then
# the program). Under `timeout` (120 s unless -t).
cmpi() {
	h=$1 r=$2
	shift 2
	t=120
	if [ "$1" = -t ]; then
		t=$2
		shift 2
	fi
	[ "$h" -le "$DTC_HOSTS" ] || fail "cmpi: only $DTC_HOSTS hosts"
	# shellcheck disable=SC2046
	mkdir -p "$DTC_TMP_ROOT/h1"
	on 1 env TMPDIR="$DTC_TMP_ROOT/h1" \
		${DTC_CACHE_ROOT:+DTRAIN_CACHE="$DTC_CACHE_ROOT/h1"} \
		timeout -k 5 "$t" "$MPIRUN" -np $((h * r)) \
		--hostfile "$(hostfile "$h" "$r")" $(cluster_mca "$r") "$@"
}
