# shellcheck shell=bash
# Helpers shared by bench/run and bench/scale; sourced, not run.
#
# Builds on tests/netns/lib.sh (namespace names, veth, keys, `wg` wrappers,
# PID bookkeeping and the cleanup trap) and adds what a benchmark needs and
# the tests do not: CPU pinning from the very first instruction, the exact
# daemon flags under test, quiet logging, /proc and TUN counters, iperf3 runs
# whose JSON is kept, and syscall counting with perf (or strace).

# Variables set here are read by the scripts that source this file.
# shellcheck disable=SC2034

BENCH_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/netns/lib.sh
. "$BENCH_DIR/../tests/netns/lib.sh"

BENCH_IMPLS_KNOWN=(solowg boringtun-1t boringtun wireguard-go)
# Fixed-rate UDP: low enough that every implementation can carry it on one
# CPU, so loss % compares how cleanly each one does it, not who is fastest.
# 1380 B payload + 28 B UDP/IP headers fits the 1420 B inner MTU unfragmented.
BENCH_UDP_RATE=${BENCH_UDP_RATE:-200M}
BENCH_UDP_LEN=1380
BENCH_MTU=1420
CLK_TCK=$(getconf CLK_TCK)

# Per side (a / b): namespace, interface, CPU, daemon PID (the daemon itself,
# not its `timeout` guard), filled by bench_pair_start.
declare -A SIDE_NS=() SIDE_IF=() SIDE_CPU=() SIDE_PID=()
# One measurement's fields (k -> v), written out by bench_emit.
declare -A REC=()
declare -A BENCH_SC_PID=()
BENCH_SC_TOOL=none

bench_log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }

# The repo's own checks run on cargo from rustup or Debian; add CARGO_HOME's
# bin so boringtun-cli (cargo install) and cargo are found when not on PATH.
bench_path_setup() {
	local cb=${CARGO_HOME:-$HOME/.cargo}/bin
	[[ :$PATH: == *":$cb:"* || ! -d $cb ]] || PATH=$PATH:$cb
}

# The report is written in Python (stdlib only); install it when missing.
bench_need_python() {
	command -v python3 >/dev/null && return 0
	bench_log "python3 missing: installing it with apt-get"
	DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3 </dev/null
}

# solowg is benchmarked as built in this checkout; build it only if absent
# (a benchmark should not silently rebuild what someone else is editing).
bench_need_solowg() {
	local bin
	bin=$(nt_impl_bin solowg)
	[[ -x $bin ]] && return 0
	bench_log "no $bin: .ci/build"
	(cd "$NT_REPO_ROOT" && timeout 1800 .ci/build </dev/null) || nt_die "build failed"
	[[ -x $bin ]] || nt_die "build did not produce $bin"
}

bench_impl_bin() {
	case $1 in
	boringtun-1t) nt_impl_bin boringtun ;;
	*) nt_impl_bin "$1" ;;
	esac
}

bench_impl_version() {
	local bin
	bin=$(bench_impl_bin "$1") || return 0
	case $1 in
	# HEAD alone does not identify the build (the tree may be edited): add
	# the binary's time and hash.
	solowg) printf 'solowg (HEAD %s, binary built %s, sha256 %.12s)\n' \
		"$(git -C "$NT_REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')" \
		"$(date -r "$bin" '+%F %T' 2>/dev/null || echo '?')" "$(sha256sum <"$bin")" ;;
	wireguard-go) timeout 5 "$bin" --version 2>/dev/null | head -n 1 ;;
	boringtun*) timeout 5 "$bin" --version 2>/dev/null | head -n 1 ;;
	esac
}

bench_check_impls() {
	local impl known k
	for impl in "$@"; do
		known=0
		for k in "${BENCH_IMPLS_KNOWN[@]}"; do [[ $impl == "$k" ]] && known=1; done
		[[ $known == 1 ]] || nt_die "unknown implementation '$impl' (known: ${BENCH_IMPLS_KNOWN[*]})"
		[[ $impl == solowg ]] && bench_need_solowg
		[[ -x $(bench_impl_bin "$impl") ]] ||
			nt_die "$impl not found at '$(bench_impl_bin "$impl")' (run .ci/install)"
	done
}

# perf counting the raw_syscalls:sys_enter tracepoint is exact and costs the
# daemon next to nothing; strace -c stops the daemon at every syscall, so it
# is only a fallback (and the counts then come from a separate run anyway).
# BENCH_SYSCALL_TOOL=perf|strace|none forces a choice.
bench_pick_sc_tool() {
	local out
	if [[ -n ${BENCH_SYSCALL_TOOL:-} ]]; then
		BENCH_SC_TOOL=$BENCH_SYSCALL_TOOL
	elif command -v perf >/dev/null &&
		out=$(timeout 20 perf stat -x, -e raw_syscalls:sys_enter -- true 2>&1) &&
		[[ $out =~ (^|$'\n')[0-9]+,[^$'\n']*raw_syscalls ]]; then
		BENCH_SC_TOOL=perf
	elif command -v strace >/dev/null; then
		BENCH_SC_TOOL=strace
	else
		BENCH_SC_TOOL=none
	fi
}

# bench_start_daemon IMPL NS IFNAME CPU MAX_S: start IMPL pinned to CPU.
# taskset runs first, so every thread the daemon ever creates inherits the
# affinity (pinning after start would miss threads spawned later).
bench_start_daemon() {
	local impl=$1 ns=$2 ifname=$3 cpu=$4 max=$5 bin log
	local -a cmd
	bin=$(bench_impl_bin "$impl") || return 1
	case $impl in
	solowg | wireguard-go) cmd=("$bin" -f "$ifname") ;;
	boringtun-1t) cmd=("$bin" --disable-drop-privileges --foreground --threads 1 --disable-multi-queue "$ifname") ;;
	boringtun) cmd=("$bin" --disable-drop-privileges --foreground "$ifname") ;;
	*) return 1 ;;
	esac
	log="$NT_TMP/daemon-$ifname-$impl.log"
	printf '===== %s start on CPU %s: %s\n' "$(date +%T.%3N)" "$cpu" "${cmd[*]}" >>"$log"
	# LOG_LEVEL=error for both Go and Rust daemons that read it: per-event
	# logging must not be part of what is measured (boringtun's default is
	# already errors only).
	LOG_LEVEL=error ip netns exec "$ns" taskset -c "$cpu" timeout -k 5 "$max" "${cmd[@]}" >>"$log" 2>&1 &
	nt_track_daemon $! "$ns" "$ifname" "$impl" "$log" || return 1
}

# PID of the daemon proper (its guard is `timeout`); refuse to measure the
# guard by mistake if /proc/<pid>/task/<pid>/children is unavailable.
bench_daemon_pid() {
	local pid
	pid=$(nt_daemon_os_pid "$1")
	[[ -n $pid && $pid != "${NT_DAEMON_PID[$1]}" && -r /proc/$pid/stat ]] || return 1
	printf '%s\n' "$pid"
}

# bench_iface_up NS IFNAME ADDR4: IPv4 only and IPv6 off, so no router
# solicitations or MLD reports cross the tunnel while we count packets.
bench_iface_up() {
	ip netns exec "$1" sysctl -q -w "net.ipv6.conf.$2.disable_ipv6=1" >/dev/null || return 1
	# boringtun leaves its TUN at 1500; all sides get the WireGuard default.
	ip -n "$1" link set dev "$2" mtu "$BENCH_MTU" || return 1
	ip -n "$1" addr add "$3/24" dev "$2" || return 1
	ip -n "$1" link set dev "$2" up
}

# bench_pair_start IMPL IF_A IF_B CPU_A CPU_B MAX_S: the same implementation
# in both namespaces, configured with wg (keys, port, peer, allowed IP,
# endpoint on both sides), up, and one ping through (handshake done).
bench_pair_start() {
	local impl=$1 max=$6 s
	SIDE_NS=([a]=$NT_NS_A [b]=$NT_NS_B)
	SIDE_IF=([a]=$2 [b]=$3)
	SIDE_CPU=([a]=$4 [b]=$5)
	SIDE_PID=()
	for s in a b; do
		bench_start_daemon "$impl" "${SIDE_NS[$s]}" "${SIDE_IF[$s]}" "${SIDE_CPU[$s]}" "$max" || return 1
		SIDE_PID[$s]=$(bench_daemon_pid "${SIDE_IF[$s]}") || return 1
	done
	nt_config_iface "$NT_NS_A" "$2" a "$NT_PORT_A" &&
		nt_config_iface "$NT_NS_B" "$3" b "$NT_PORT_B" &&
		nt_config_peer "$NT_NS_A" "$2" "$(nt_pub b)" "$NT_IN4_B/32" "$NT_OUT4_B:$NT_PORT_B" &&
		nt_config_peer "$NT_NS_B" "$3" "$(nt_pub a)" "$NT_IN4_A/32" "$NT_OUT4_A:$NT_PORT_A" &&
		bench_iface_up "$NT_NS_A" "$2" "$NT_IN4_A" &&
		bench_iface_up "$NT_NS_B" "$3" "$NT_IN4_B" &&
		nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10
}

# bench_stop_daemon IFNAME: stop by the PID we started, then make sure the
# TUN and the UAPI socket are gone before the next implementation starts.
bench_stop_daemon() {
	local ifname=$1 ns=$2
	[[ -n ${NT_DAEMON_PID[$ifname]:-} ]] || return 0
	nt_stop_job "${NT_DAEMON_PID[$ifname]}"
	if nt_link_exists "$ns" "$ifname"; then
		ip -n "$ns" link del dev "$ifname" 2>/dev/null || true
	fi
	rm -f "$NT_SOCK_DIR/$ifname.sock"
	unset "NT_DAEMON_PID[$ifname]"
}

bench_pair_stop() {
	local s
	for s in a b; do
		[[ -n ${SIDE_IF[$s]:-} ]] && bench_stop_daemon "${SIDE_IF[$s]}" "${SIDE_NS[$s]}"
	done
	return 0
}

# --- counters ---------------------------------------------------------------

# utime+stime in clock ticks. /proc/<tgid>/stat covers every thread of the
# process, including threads that already exited.
bench_ticks() {
	local s
	local -a f
	s=$(<"/proc/$1/stat") || return 1
	s=${s##*) } # comm may contain spaces and ')': cut after the last ')'
	read -r -a f <<<"$s"
	printf '%s\n' $((f[11] + f[12]))
}

# "voluntary nonvoluntary" context switches summed over all threads (the
# process-level status line counts only the main thread). cat, not a glob
# handed to awk, so a thread exiting mid-read is skipped, not fatal.
bench_ctxsw() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/^voluntary_ctxt_switches/ { v += $2 } /^nonvoluntary_ctxt_switches/ { n += $2 } END { print v + 0, n + 0 }'
}

# bench_status PID FIELD: a numeric /proc/<pid>/status field (Threads, VmHWM
# and VmRSS in kB).
bench_status() {
	awk -v k="$2:" '$1 == k { print $2; found = 1 } END { if (!found) print 0 }' "/proc/$1/status" 2>/dev/null || echo 0
}

# "rx_packets tx_packets" of the TUN, read in its namespace (sysfs there).
# tx = packets the kernel handed the daemon (daemon reads), rx = packets the
# daemon wrote into the kernel.
bench_tun() {
	ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_packets" "/sys/class/net/$2/statistics/tx_packets" | tr '\n' ' '
}

# bench_snap ARRAY: every counter of both daemons into the associative ARRAY.
bench_snap() {
	local -n _snap=$1
	local s t v n rx tx
	for s in a b; do
		t=$(bench_ticks "${SIDE_PID[$s]}") || return 1
		read -r v n <<<"$(bench_ctxsw "${SIDE_PID[$s]}")"
		read -r rx tx <<<"$(bench_tun "${SIDE_NS[$s]}" "${SIDE_IF[$s]}")"
		[[ $t =~ ^[0-9]+$ && $v =~ ^[0-9]+$ && $n =~ ^[0-9]+$ && $rx =~ ^[0-9]+$ && $tx =~ ^[0-9]+$ ]] || return 1
		_snap["ticks_$s"]=$t
		_snap["vcs_$s"]=$v
		_snap["nvcs_$s"]=$n
		_snap["rx_$s"]=$rx
		_snap["tx_$s"]=$tx
	done
}

# --- iperf3 -----------------------------------------------------------------

# One-shot server (-1) in B on B's CPU; sets BENCH_SPID.
bench_iperf_server() {
	local bound=$1
	ip netns exec "$NT_NS_B" taskset -c "${SIDE_CPU[b]}" timeout "$bound" \
		iperf3 -s -1 -B "$NT_IN4_B" -p "$NT_IPERF_PORT" >>"$NT_TMP/iperf3-server.log" 2>&1 &
	BENCH_SPID=$!
	NT_BG_PIDS+=("$BENCH_SPID")
	nt_wait_until 5 nt_listening "$NT_NS_B" "$NT_IPERF_PORT"
}

# bench_measure JSON SECS IPERF_ARGS...: one iperf3 run from A's client to
# B's server (-R for B->A) with every counter around it. Thread counts are
# sampled half-way through, under load. Fills REC with deltas d_* (over both
# daemons, per side), threads_a/b, the JSON path and iperf3's exit status.
bench_measure() {
	local json=$1 secs=$2 cpid rc=0 k half
	local -A s0=() s1=()
	shift 2
	REC=()
	# On failure, stop this server at once: a leftover one would hold the
	# port and fail every later measurement too.
	bench_iperf_server $((secs + 40)) || { nt_stop_job "$BENCH_SPID"; return 1; }
	bench_snap s0 || { nt_stop_job "$BENCH_SPID"; return 1; }
	ip netns exec "$NT_NS_A" taskset -c "${SIDE_CPU[a]}" timeout $((secs + 30)) \
		iperf3 -c "$NT_IN4_B" -p "$NT_IPERF_PORT" --connect-timeout 5000 -J -t "$secs" "$@" \
		>"$json" 2>>"$NT_TMP/iperf3-client.log" &
	cpid=$!
	NT_BG_PIDS+=("$cpid")
	half=$((secs / 2))
	((half >= 1)) || half=1
	sleep "$half"
	REC[threads_a]=$(bench_status "${SIDE_PID[a]}" Threads)
	REC[threads_b]=$(bench_status "${SIDE_PID[b]}" Threads)
	wait "$cpid" || rc=$?
	bench_snap s1 || rc=99
	nt_stop_job "$BENCH_SPID"
	for k in "${!s0[@]}"; do
		REC[d_$k]=$((${s1[$k]:-0} - ${s0[$k]}))
	done
	REC[json]=${json##*/}
	REC[rc]=$rc
	[[ $rc -eq 0 ]]
}

# --- syscall counting -------------------------------------------------------

bench_sc_start() {
	local side=$1 out=$2 bound=$3 pid=${SIDE_PID[$1]}
	case $BENCH_SC_TOOL in
	# -p PID covers all threads that exist now, and counters are inherited by
	# threads created later.
	perf) timeout -s INT "$bound" perf stat -x, -o "$out" -e raw_syscalls:sys_enter -p "$pid" >/dev/null 2>&1 & ;;
	strace) timeout -s INT "$bound" strace -c -f -q -o "$out" -p "$pid" >/dev/null 2>&1 & ;;
	*) return 1 ;;
	esac
	BENCH_SC_PID[$side]=$!
	NT_BG_PIDS+=("${BENCH_SC_PID[$side]}")
}

# SIGINT is how both perf stat -p and strace -p are told to stop and print;
# `timeout` forwards it.
bench_sc_stop() {
	local pid=${BENCH_SC_PID[$1]}
	kill -INT "$pid" 2>/dev/null || true
	nt_wait_until 10 nt_pid_gone "$pid" || true
	nt_stop_job "$pid"
}

bench_sc_count() {
	case $BENCH_SC_TOOL in
	perf) awk -F, '$3 ~ /raw_syscalls:sys_enter/ { c = ($1 ~ /^[0-9]+$/) ? $1 : 0 } END { print c + 0 }' "$1" 2>/dev/null ;;
	strace) awk '$NF == "total" { c = $4 } END { print c + 0 }' "$1" 2>/dev/null ;;
	esac
}

# bench_measure_sc TAG SECS IPERF_ARGS...: a run only for counting syscalls
# of each daemon (not used for throughput: the counting itself could weigh on
# it). Fills REC with sc_a/sc_b and the TUN deltas of the same window.
bench_measure_sc() {
	local tag=$1 secs=$2 s rc=0 k
	local -A s0=() s1=()
	shift 2
	REC=()
	BENCH_SC_PID=()
	bench_iperf_server $((secs + 40)) || { nt_stop_job "$BENCH_SPID"; return 1; }
	for s in a b; do
		bench_sc_start "$s" "$NT_TMP/sc-$tag-$s.txt" $((secs + 60)) || rc=98
	done
	# Let the counters attach; the daemons are idle meanwhile.
	sleep 1
	bench_snap s0 || rc=99
	ip netns exec "$NT_NS_A" taskset -c "${SIDE_CPU[a]}" timeout $((secs + 30)) \
		iperf3 -c "$NT_IN4_B" -p "$NT_IPERF_PORT" --connect-timeout 5000 -J -t "$secs" "$@" \
		>"$NT_TMP/sc-$tag.json" 2>>"$NT_TMP/iperf3-client.log" || rc=$?
	bench_snap s1 || rc=99
	for s in a b; do
		[[ -n ${BENCH_SC_PID[$s]:-} ]] && bench_sc_stop "$s"
		REC[sc_$s]=$(bench_sc_count "$NT_TMP/sc-$tag-$s.txt")
	done
	nt_stop_job "$BENCH_SPID"
	for k in "${!s0[@]}"; do
		REC[d_$k]=$((${s1[$k]:-0} - ${s0[$k]}))
	done
	# Payload bytes of the run: TUN packet counts stop meaning wire packets once a daemon
	# uses TUN offload (one TSO read or coalesced write carries many), bytes do not.
	REC[bytes]=$(jq -r '.end.sum_received.bytes // 0' "$NT_TMP/sc-$tag.json" 2>/dev/null || echo 0)
	REC[rc]=$rc
	[[ $rc -eq 0 && ${REC[sc_a]:-0} -gt 0 && ${REC[sc_b]:-0} -gt 0 ]]
}

# bench_emit FILE FIELDS...: one raw line: the fixed FIELDS tab-separated,
# then REC as k=v (sorted, so lines diff well).
bench_emit() {
	local file=$1 k line
	shift
	line=$(printf '%s\t' "$@")
	for k in $(printf '%s\n' "${!REC[@]}" | sort); do
		line+="$k=${REC[$k]}"$'\t'
	done
	printf '%s\n' "${line%$'\t'}" >>"$file"
}
