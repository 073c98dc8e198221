# shellcheck shell=bash
# Shared helpers for solowg's network-namespace system tests.
# Sourced by interop.sh, wg-quick.sh and demo.sh; not meant to be run.
#
# Ground rules the helpers enforce:
#  - all traffic stays inside two namespaces created here (unique names with a
#    random run id), joined by one veth pair; the addresses below exist only
#    inside those namespaces;
#  - /var/run/wireguard is shared by every netns (it is a plain directory), so
#    the two sides use different interface names (wg<id>a / wg<id>b): their
#    UAPI sockets never clash, and `wg` can talk to each daemon without
#    per-namespace mount tricks. The run id keeps parallel runs apart too;
#  - every wait is bounded in iterations and in wall time; every process we
#    start is recorded by PID and stopped by PID from the EXIT trap.

# Constants are consumed by the scripts that source this file.
# shellcheck disable=SC2034

# Repo root from this file's own location (no machine-specific paths).
NT_LIB_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
NT_REPO_ROOT=$(cd -- "$NT_LIB_DIR/../.." && pwd)
# Fixed by the UAPI contract shared with wireguard-go and wg(8).
NT_SOCK_DIR=/var/run/wireguard

# Outer (veth) and inner (tunnel) addresses; private to our namespaces.
NT_OUT4_A=10.201.0.1
NT_OUT4_B=10.201.0.2
NT_OUT4_ROAM=10.201.0.11
NT_OUT6_A=fd00:201::1
NT_OUT6_B=fd00:201::2
NT_IN4_A=10.202.0.1
NT_IN4_B=10.202.0.2
NT_IN6_A=fd00:202::1
NT_IN6_B=fd00:202::2
NT_PORT_A=51820
NT_PORT_B=51821
NT_VETH_A=va
NT_VETH_B=vb
NT_IPERF_PORT=5201
# Safety net: a daemon dies by itself after this long even if our trap never
# runs (e.g. the harness is SIGKILLed).
NT_DAEMON_MAX_S=${NT_DAEMON_MAX_S:-900}

NT_PASS=0
NT_FAIL=0
NT_BG_PIDS=()
NT_ON_EXIT=()
NT_NAMESPACES=()
NT_IFACES=()
declare -A NT_DAEMON_PID=()
declare -A NT_DAEMON_IMPL=()
NT_TMP=
NT_ID=

nt_info() { printf '# %s\n' "$*"; }
nt_die() {
	printf 'ERROR: %s\n' "$*" >&2
	exit 2
}

nt_pass() {
	NT_PASS=$((NT_PASS + 1))
	printf 'PASS %s%s\n' "$1" "${2:+ ($2)}"
}
nt_fail() {
	NT_FAIL=$((NT_FAIL + 1))
	printf 'FAIL %s%s\n' "$1" "${2:+ ($2)}"
}
# nt_check NAME CMD...: one PASS/FAIL line from CMD's exit status (returned).
nt_check() {
	local name=$1
	shift
	if "$@"; then
		nt_pass "$name"
	else
		nt_fail "$name"
		return 1
	fi
}
# The closing line run-all.sh and CI parse; exit status follows the failures.
nt_summary() {
	printf '%d passed, %d failed\n' "$NT_PASS" "$NT_FAIL"
	[[ $NT_FAIL -eq 0 ]]
}

nt_now_ms() { date +%s%3N; }

# nt_wait_until SECS CMD...: poll CMD every 0.1 s; bounded by count and clock.
nt_wait_until() {
	local secs=$1 i max deadline
	shift
	max=$((secs * 10))
	deadline=$((SECONDS + secs + 1))
	for ((i = 0; i < max; i++)); do
		if "$@"; then return 0; fi
		((SECONDS < deadline)) || break
		sleep 0.1
	done
	return 1
}

nt_pid_gone() { ! kill -0 "$1" 2>/dev/null; }

# nt_stop_pid PID: TERM, up to 5 s grace, then KILL; reaps it if it is our child.
nt_stop_pid() {
	local pid=$1
	kill -TERM "$pid" 2>/dev/null || true
	nt_wait_until 5 nt_pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# True while PID is a still-running background job of this shell, so a PID
# that has exited (and might be reused by someone else) is never signalled.
nt_is_live_job() {
	local live
	live=" $(jobs -p | tr '\n' ' ') "
	[[ $live == *" $1 "* ]]
}

# nt_stop_job PID: nt_stop_pid, but only for our own live background jobs.
nt_stop_job() {
	if nt_is_live_job "$1"; then
		nt_stop_pid "$1"
	else
		wait "$1" 2>/dev/null || true
	fi
}

nt_require_root() {
	[[ $(id -u) -eq 0 ]] || nt_die "must run as root (namespaces, TUN devices)"
}

nt_require_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || nt_die "missing tool: $t (see .ci/install)"
	done
}

# Binary for an implementation name (solowg | wireguard-go | boringtun).
nt_impl_bin() {
	case $1 in
	solowg) printf '%s\n' "${SOLOWG_BIN:-$NT_REPO_ROOT/target/release/solowg}" ;;
	wireguard-go) command -v wireguard-go || printf 'wireguard-go\n' ;;
	boringtun)
		# cargo install puts it in CARGO_HOME, which may not be on PATH.
		command -v boringtun-cli || printf '%s\n' "${CARGO_HOME:-$HOME/.cargo}/bin/boringtun-cli"
		;;
	*) return 1 ;;
	esac
}

nt_impl_available() {
	local bin
	bin=$(nt_impl_bin "$1") || return 1
	[[ -x $bin ]]
}

# SOLOWG_EMULATOR: words put before the solowg binary where nt_start_daemon starts it, e.g.
# "qemu-mips -cpu 24Kc" for the big-endian OpenWrt build (tests/mips-user/run.sh); empty:
# it runs natively. qemu-user (and strace) pass signals and the exit status through, so the
# checks need no change. Scripts that start solowg themselves (wg-quick.sh, demo.sh)
# ignore it.
read -r -a NT_SOLOWG_EMULATOR <<<"${SOLOWG_EMULATOR:-}"

nt_require_impl() {
	local impl
	for impl in "$@"; do
		case $impl in
		solowg | wireguard-go | boringtun) ;;
		*) nt_die "unknown implementation '$impl' (solowg | wireguard-go | boringtun)" ;;
		esac
		if [[ $impl == solowg && ${#NT_SOLOWG_EMULATOR[@]} -gt 0 ]]; then
			command -v "${NT_SOLOWG_EMULATOR[0]}" >/dev/null ||
				nt_die "emulator ${NT_SOLOWG_EMULATOR[0]} not found (SOLOWG_EMULATOR)"
		fi
		nt_impl_available "$impl" ||
			nt_die "$impl not found at '$(nt_impl_bin "$impl")' (build with .ci/build or run .ci/install)"
	done
}

# boringtun's UAPI `get` is quirky (no private key, handshake time is an age),
# so wg(8) values are asserted only on the other implementations.
nt_has_faithful_uapi() { [[ $1 != boringtun ]]; }

# nt_setup: run id, names, temp dir and the cleanup trap.
nt_setup() {
	nt_require_root
	nt_require_tools ip wg ping timeout od mktemp ss awk
	NT_ID=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
	NT_NS_A="swg-$NT_ID-a"
	NT_NS_B="swg-$NT_ID-b"
	NT_IF_A="wg${NT_ID}a"
	NT_IF_B="wg${NT_ID}b"
	NT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/solowg-netns.XXXXXX")
	trap nt_cleanup EXIT
	# Turn signals into a normal exit so the EXIT trap cleans up.
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mkdir -p "$NT_SOCK_DIR"
}

nt_dump_logs() {
	local f
	for f in "$NT_TMP"/*.log; do
		[[ -f $f ]] || continue
		printf '\n----- %s (last 80 lines) -----\n' "${f##*/}"
		tail -n 80 "$f"
	done
	printf -- '----- end of logs -----\n'
}

nt_cleanup() {
	local rc=$? pid ns ifname cmd
	set +e
	trap - EXIT INT TERM
	for pid in "${NT_BG_PIDS[@]}"; do
		nt_stop_job "$pid"
	done
	# Host state a test changed and puts back (e.g. a device's group and mode).
	for cmd in "${NT_ON_EXIT[@]}"; do
		eval "$cmd"
	done
	# Anything still inside our uniquely named namespaces was started by this
	# run (e.g. a daemon that wg-quick forked): stop those PIDs too.
	for ns in "${NT_NAMESPACES[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			nt_stop_pid "$pid"
		done
		ip netns del "$ns" 2>/dev/null
	done
	for ifname in "${NT_IFACES[@]}"; do
		rm -f "$NT_SOCK_DIR/$ifname.sock"
	done
	# Per-namespace files a test created (e.g. /etc/netns/<ns>/resolv.conf).
	for ns in "${NT_NAMESPACES[@]}"; do
		[[ -n $ns && -d /etc/netns/$ns ]] && rm -rf -- "/etc/netns/$ns"
	done
	if [[ -n $NT_TMP && -d $NT_TMP ]]; then
		if [[ $rc -ne 0 || $NT_FAIL -gt 0 ]]; then
			nt_dump_logs
		fi
		if [[ ${NT_KEEP_TMP:-0} == 1 ]]; then
			nt_info "logs kept in $NT_TMP"
		else
			rm -rf "$NT_TMP"
		fi
	fi
	exit "$rc"
}

# nt_make_netns: namespaces A and B, one veth pair with IPv4 + IPv6 outer
# addresses (nodad so IPv6 is usable at once), and a bounded reachability wait.
nt_make_netns() {
	local ns
	for ns in "$NT_NS_A" "$NT_NS_B"; do
		ip netns add "$ns" || return 1
		NT_NAMESPACES+=("$ns")
		ip -n "$ns" link set lo up || return 1
		# Keep the remaining address (and its route) when the roaming test
		# deletes the primary one.
		ip netns exec "$ns" sysctl -q -w net.ipv4.conf.all.promote_secondaries=1 >/dev/null || return 1
	done
	ip -n "$NT_NS_A" link add "$NT_VETH_A" type veth peer name "$NT_VETH_B" netns "$NT_NS_B" || return 1
	ip -n "$NT_NS_A" addr add "$NT_OUT4_A/24" dev "$NT_VETH_A" || return 1
	ip -n "$NT_NS_A" addr add "$NT_OUT6_A/64" dev "$NT_VETH_A" nodad || return 1
	ip -n "$NT_NS_B" addr add "$NT_OUT4_B/24" dev "$NT_VETH_B" || return 1
	ip -n "$NT_NS_B" addr add "$NT_OUT6_B/64" dev "$NT_VETH_B" nodad || return 1
	ip -n "$NT_NS_A" link set "$NT_VETH_A" up || return 1
	ip -n "$NT_NS_B" link set "$NT_VETH_B" up || return 1
	nt_wait_until 5 nt_ping_ok "$NT_NS_A" "$NT_OUT4_B" || return 1
	nt_wait_until 5 nt_ping_ok "$NT_NS_A" "$NT_OUT6_B" || return 1
}

nt_link_exists() { ip -n "$1" link show dev "$2" >/dev/null 2>&1; }
nt_sock_exists() { [[ -S $NT_SOCK_DIR/$1.sock ]]; }
nt_sock_gone() { [[ ! -e $NT_SOCK_DIR/$1.sock ]]; }
nt_daemon_ready() {
	local ns=$1 ifname=$2 pid=$3
	kill -0 "$pid" 2>/dev/null || return 2
	nt_sock_exists "$ifname" && nt_link_exists "$ns" "$ifname"
}

# nt_track_daemon PID NS IFNAME IMPL LOG: record a daemon just started in the
# background (for cleanup and lookups) and wait, bounded, until it serves its socket.
nt_track_daemon() {
	local pid=$1 ns=$2 ifname=$3 impl=$4 log=$5
	NT_BG_PIDS+=("$pid")
	NT_DAEMON_PID[$ifname]=$pid
	NT_DAEMON_IMPL[$ifname]=$impl
	NT_IFACES+=("$ifname")
	if ! nt_wait_until 10 nt_daemon_ready "$ns" "$ifname" "$pid"; then
		printf 'daemon %s (%s) did not come up within 10 s\n' "$ifname" "$impl" >>"$log"
		return 1
	fi
}

# nt_start_daemon IMPL NS IFNAME: start IMPL in the foreground (as a tracked
# background job, logging to the temp dir); wait until TUN and socket exist.
# NT_WRAP: an optional command prefix for the next solowg/wireguard-go start (fault
# injection, e.g. strace --inject); empty by default.
NT_WRAP=()
nt_start_daemon() {
	local impl=$1 ns=$2 ifname=$3 bin log
	local -a cmd
	bin=$(nt_impl_bin "$impl") || return 1
	log="$NT_TMP/daemon-$ifname-$impl.log"
	case $impl in
	solowg) cmd=("${NT_WRAP[@]}" "${NT_SOLOWG_EMULATOR[@]}" "$bin" -f "$ifname") ;;
	wireguard-go) cmd=("${NT_WRAP[@]}" "$bin" -f "$ifname") ;;
	# --disable-drop-privileges: as root it would otherwise switch user.
	# --disable-connected-udp: its per-peer connected socket pins the local
	# source address, so after A's outer address moves it keeps sending from
	# the deleted one and never recovers; the roaming check needs the plain
	# unconnected socket, as the other implementations use.
	boringtun) cmd=("$bin" --foreground --disable-drop-privileges --disable-connected-udp --threads 1 --verbosity info "$ifname") ;;
	esac
	printf '\n===== %s start: %s\n' "$(date +%T.%3N)" "${cmd[*]}" >>"$log"
	LOG_LEVEL=verbose ip netns exec "$ns" timeout -k 5 "$NT_DAEMON_MAX_S" "${cmd[@]}" >>"$log" 2>&1 &
	nt_track_daemon $! "$ns" "$ifname" "$impl" "$log" || return 1
	if [[ $impl == boringtun ]]; then
		# boringtun leaves the TUN at 1500; match the WireGuard default.
		ip -n "$ns" link set dev "$ifname" mtu 1420 || return 1
	fi
}

# The daemon's own PID (NT_DAEMON_PID holds its `timeout` guard's PID). Under a
# SOLOWG_EMULATOR that starts with strace (tests/mips-user) the guard's child is strace,
# which a SIGUSR1 would kill: its child, the emulated daemon, is taken instead.
nt_daemon_os_pid() {
	local pid=${NT_DAEMON_PID[$1]} child=
	read -r child _ <"/proc/$pid/task/$pid/children" 2>/dev/null || true
	pid=${child:-$pid}
	while [[ $(cat "/proc/$pid/comm" 2>/dev/null) == strace ]]; do
		child=
		read -r child _ <"/proc/$pid/task/$pid/children" 2>/dev/null || true
		[[ -n $child ]] || break
		pid=$child
	done
	printf '%s\n' "$pid"
}

# Contract: TUN created with MTU 1420, left down, no addresses.
nt_tun_pristine() {
	local ns=$1 ifname=$2 line flags
	line=$(ip -n "$ns" -o link show dev "$ifname") || return 1
	[[ $line == *" mtu 1420 "* ]] || return 1
	flags=${line#*<}
	flags=${flags%%>*}
	[[ ,$flags, != *,UP,* ]] || return 1
	[[ -z $(ip -n "$ns" -o addr show dev "$ifname") ]]
}

# nt_stop_daemon IFNAME: SIGTERM; succeed if it exits and its socket is gone
# within 5 s (it is killed anyway afterwards).
nt_stop_daemon() {
	local ifname=$1 pid ok=0
	pid=${NT_DAEMON_PID[$ifname]}
	nt_is_live_job "$pid" || return 1
	kill -TERM "$pid" 2>/dev/null || true
	nt_wait_until 5 nt_pid_gone "$pid" || ok=1
	nt_wait_until 5 nt_sock_gone "$ifname" || ok=1
	nt_stop_job "$pid"
	return "$ok"
}

# nt_linkdel_daemon NS IFNAME: `ip link del`; the daemon must exit on its own.
nt_linkdel_daemon() {
	local ns=$1 ifname=$2 pid ok=0
	pid=${NT_DAEMON_PID[$ifname]}
	ip -n "$ns" link del dev "$ifname" || ok=1
	nt_wait_until 5 nt_pid_gone "$pid" || ok=1
	nt_wait_until 5 nt_sock_gone "$ifname" || ok=1
	nt_stop_job "$pid"
	return "$ok"
}

# nt_genkey NAME: NAME.key / NAME.pub in the temp dir.
nt_genkey() {
	(
		umask 077
		wg genkey >"$NT_TMP/$1.key" && wg pubkey <"$NT_TMP/$1.key" >"$NT_TMP/$1.pub"
	)
}
nt_pub() { cat "$NT_TMP/$1.pub"; }

nt_wg() {
	local ns=$1
	shift
	ip netns exec "$ns" timeout 10 wg "$@"
}

# nt_config_iface NS IFNAME KEYNAME PORT
nt_config_iface() {
	nt_wg "$1" set "$2" private-key "$NT_TMP/$3.key" listen-port "$4"
}

# nt_config_peer NS IFNAME PUBKEY ALLOWED_IPS [ENDPOINT]
nt_config_peer() {
	local -a args=(peer "$3" allowed-ips "$4")
	[[ -z ${5:-} ]] || args+=(endpoint "$5")
	nt_wg "$1" set "$2" "${args[@]}"
}

# nt_iface_up NS IFNAME INNER4 INNER6
nt_iface_up() {
	ip -n "$1" addr add "$3/24" dev "$2" || return 1
	ip -n "$1" addr add "$4/64" dev "$2" nodad || return 1
	ip -n "$1" link set dev "$2" up
}

# nt_config_pair KEY_A KEY_B [v4]: the usual pair, keys made here: A knows B's outer address,
# B learns A's from its first message; each allows the other's inner addresses (with v4,
# only IPv4: the kernel's own IPv6 chatter then stays out of the tunnel, for tests that
# count datagrams); both up.
nt_config_pair() {
	local to_a="$NT_IN4_A/32,$NT_IN6_A/128" to_b="$NT_IN4_B/32,$NT_IN6_B/128"
	[[ ${3:-} != v4 ]] || to_a=$NT_IN4_A/32 to_b=$NT_IN4_B/32
	nt_genkey "$1" && nt_genkey "$2" &&
		nt_config_iface "$NT_NS_A" "$NT_IF_A" "$1" "$NT_PORT_A" &&
		nt_config_iface "$NT_NS_B" "$NT_IF_B" "$2" "$NT_PORT_B" &&
		nt_config_peer "$NT_NS_A" "$NT_IF_A" "$(nt_pub "$2")" "$to_b" "$NT_OUT4_B:$NT_PORT_B" &&
		nt_config_peer "$NT_NS_B" "$NT_IF_B" "$(nt_pub "$1")" "$to_a" &&
		nt_iface_up "$NT_NS_A" "$NT_IF_A" "$NT_IN4_A" "$NT_IN6_A" &&
		nt_iface_up "$NT_NS_B" "$NT_IF_B" "$NT_IN4_B" "$NT_IN6_B"
}

# Field N of the single peer line of `wg show IF dump`:
# 3=endpoint 5=latest-handshake 6=rx-bytes 7=tx-bytes.
nt_peer_field() {
	nt_wg "$1" show "$2" dump | awk -F'\t' -v n="$3" 'NR == 2 { print $n }'
}

# nt_wg_stats_ok NS IFNAME [MAX_AGE]: a handshake at most MAX_AGE seconds old (default 120)
# and non-zero rx/tx; prints them.
nt_wg_stats_ok() {
	local dump hs rx tx now max_age=${3:-120}
	dump=$(nt_wg "$1" show "$2" dump | awk -F'\t' 'NR == 2 { print $5, $6, $7 }') || return 1
	read -r hs rx tx <<<"$dump"
	now=$(date +%s)
	[[ ${hs:-x} =~ ^[0-9]+$ && ${rx:-x} =~ ^[0-9]+$ && ${tx:-x} =~ ^[0-9]+$ ]] || {
		printf '# %s: no peer line in wg show dump\n' "$2"
		return 1
	}
	if ((hs > 0)); then
		printf '# %s: latest-handshake %ss ago, rx=%s tx=%s\n' "$2" "$((now - hs))" "$rx" "$tx"
	else
		printf '# %s: no handshake yet, rx=%s tx=%s\n' "$2" "$rx" "$tx"
	fi
	((hs > 0 && now - hs <= max_age && rx > 0 && tx > 0))
}

nt_endpoint_is() {
	local ep
	ep=$(nt_peer_field "$1" "$2" 3) || return 1
	[[ $ep == "$3" ]]
}

nt_ping_ok() {
	ip netns exec "$1" timeout 5 ping -c 1 -W 2 -q "$2" >/dev/null 2>&1
}

# nt_wait_ping NS ADDR SECS: the first packets also trigger the handshake.
nt_wait_ping() { nt_wait_until "$3" nt_ping_ok "$1" "$2"; }

# nt_ping_rtt NS ADDR: average RTT (ms) of 5 pings, empty on failure.
nt_ping_rtt() {
	ip netns exec "$1" timeout 10 ping -c 5 -i 0.2 -W 2 -q "$2" 2>/dev/null |
		awk -F'/' '/^rtt|^round-trip/ { print $5 }'
}

nt_listening() {
	ip netns exec "$1" ss -Htln "sport = :$2" 2>/dev/null | grep -q .
}

# nt_iperf CLIENT_NS SERVER_NS SERVER_ADDR ARGS...: one bounded iperf3 TCP run
# (server with -1 in SERVER_NS). Sets NT_IPERF_SENT / NT_IPERF_RECV (bytes)
# and NT_IPERF_MBPS (receiver side). The receiver total can trail the sender
# by what was still in flight when iperf3 closed its books, so callers judge
# completeness on the sender total (plus tunnel counters where trustworthy).
# NT_IPERF_MAX_S: the client's wall-clock bound (default 120 s; the server gets 30 s more).
nt_iperf() {
	local cns=$1 sns=$2 addr=$3 spid rc=0 json max=${NT_IPERF_MAX_S:-120}
	shift 3
	NT_IPERF_MBPS=
	NT_IPERF_SENT=0
	NT_IPERF_RECV=0
	json="$NT_TMP/iperf3-client.json"
	ip netns exec "$sns" timeout $((max + 30)) iperf3 -s -1 -B "$addr" -p "$NT_IPERF_PORT" >>"$NT_TMP/iperf3-server.log" 2>&1 &
	spid=$!
	NT_BG_PIDS+=("$spid")
	nt_wait_until 5 nt_listening "$sns" "$NT_IPERF_PORT" || return 1
	ip netns exec "$cns" timeout "$max" iperf3 -c "$addr" -p "$NT_IPERF_PORT" --connect-timeout 5000 -J "$@" >"$json" 2>>"$NT_TMP/iperf3-client.log" || rc=1
	nt_stop_job "$spid"
	NT_IPERF_SENT=$(jq -r '.end.sum_sent.bytes // 0' "$json" 2>/dev/null) || NT_IPERF_SENT=0
	NT_IPERF_RECV=$(jq -r '.end.sum_received.bytes // 0' "$json" 2>/dev/null) || NT_IPERF_RECV=0
	NT_IPERF_MBPS=$(jq -r '.end.sum_received.bits_per_second // 0' "$json" 2>/dev/null |
		awk '{ printf "%.1f", $1 / 1e6 }') || NT_IPERF_MBPS=
	[[ $NT_IPERF_SENT =~ ^[0-9]+$ && $NT_IPERF_RECV =~ ^[0-9]+$ ]] || return 1
	[[ $rc -eq 0 && $NT_IPERF_RECV -gt 0 ]]
}

# nt_csum_off NS DEV: DEV's TX and RX checksum offload off (csum-off.py), as on a router
# whose NIC has none; what it reports is printed as comments. Fails unless both are off.
nt_csum_off() {
	ip netns exec "$1" python3 "$NT_LIB_DIR/csum-off.py" "$2" both | sed 's/^/# /'
	return "${PIPESTATUS[0]}"
}

# nt_gso_refused NS ADDR: true if NS's kernel refuses UDP GSO (EIO) on its way to ADDR now
# (one 3-segment batch to ADDR's discard port).
nt_gso_refused() {
	ip netns exec "$1" timeout 5 python3 -c '
import errno, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_UDP, 103, 1000)  # UDP_SEGMENT
try:
    s.sendmsg([b"x" * 3000], [], 0, (sys.argv[1], 9))
except OSError as e:
    sys.exit(0 if e.errno == errno.EIO else 2)
sys.exit(1)' "$2"
}

# nt_gso_inject NS ADDR: sets NT_GSO_INJECT, the NT_WRAP words that make a daemon in NS see
# UDP GSO refused on its way to ADDR (checksum offload already off): none where the kernel
# refuses it by itself; on newer kernels (6.18), which checksum a GSO batch in software
# instead, strace failing sendmsg(2) with EIO (only GSO batches use it; the packet socket
# and single datagrams use sendmmsg/sendto), as gso-fallback.sh.
NT_GSO_INJECT=()
nt_gso_inject() {
	NT_GSO_INJECT=()
	if nt_gso_refused "$1" "$2"; then
		nt_info "the kernel refuses UDP GSO without TX checksum offload: no injection"
	else
		nt_require_tools strace
		nt_info "this kernel ($(uname -r)) sends UDP GSO without TX checksum offload: the daemon runs under strace, sendmsg(2) failing with EIO"
		NT_GSO_INJECT=(strace -f -qq --seccomp-bpf -o /dev/null -e trace=sendmsg -e inject=sendmsg:error=EIO)
	fi
}

# nt_more_stats_lines IF LOG N: LOG holds more than N stats lines for IF (counted on every
# call: a count taken once, before the daemon wrote its line, would never grow).
nt_more_stats_lines() { test "$(grep -c "stats $1: " "$2" || true)" -gt "$3"; }
# nt_counters IF: solowg's stats line for IF (its data path's counters), asked for with
# SIGUSR1 and waited for (5 s). The daemon's log is NT_TMP/daemon-IF-$U.log.
nt_counters() {
	local log="$NT_TMP/daemon-$1-$U.log" n
	n=$(grep -c "stats $1: " "$log" || true)
	kill -USR1 "$(nt_daemon_os_pid "$1")" || return 1
	if ! nt_wait_until 5 nt_more_stats_lines "$1" "$log" "$n"; then
		nt_info "no stats line from $1 within 5 s of SIGUSR1" >&2
		return 1
	fi
	grep "stats $1: " "$log" | tail -n 1
}
# nt_stats_field LINE KEY: the value of KEY in a stats line (empty if absent).
nt_stats_field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# nt_stats_delta LINE0 LINE1 KEY: KEY's increase between two stats lines; fails if KEY is
# missing from either.
nt_stats_delta() {
	local v0 v1
	v0=$(nt_stats_field "$1" "$3")
	v1=$(nt_stats_field "$2" "$3")
	[[ $v0 =~ ^[0-9]+$ && $v1 =~ ^[0-9]+$ ]] || return 1
	echo $((v1 - v0))
}
# nt_share_ok PART WHOLE PERCENT: PART >= PERCENT % of WHOLE (and WHOLE > 0).
nt_share_ok() { [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]] && (($2 > 0 && $1 * 100 >= $2 * $3)); }
# nt_iperf_check NS_FROM NS_TO ADDR NAME BYTES ARGS...: one iperf3 run, passed when the
# sender's total reaches BYTES.
nt_iperf_check() {
	local from=$1 to=$2 addr=$3 name=$4 bytes=$5
	shift 5
	if nt_iperf "$from" "$to" "$addr" "$@" && ((NT_IPERF_SENT >= bytes)); then
		nt_pass "$name" "$NT_IPERF_MBPS Mbit/s"
	else
		nt_fail "$name" "iperf3: sent=$NT_IPERF_SENT received=$NT_IPERF_RECV"
		return 1
	fi
}
# iperf3 stops its stream at the end of the test, dropping what the sender's socket still
# held (up to 4 MB): what the receiver got (at most 1380 bytes of TCP payload per datagram)
# says how many datagrams left at least; and at least 3,000 (about 4 MB) must have.
nt_datagrams_needed() {
	local n=$((NT_IPERF_RECV / 1400))
	echo $((n > 3000 ? n : 3000))
}

# nt_start_packet_path_pair IMPL NS_A NS_B [WRAP...]: A with the packet path on
# (SOLOWG_PACKET_TX=1, under WRAP, e.g. NT_GSO_INJECT), B with the default (the variable
# removed, whatever the caller's environment holds); the test ends if either fails to start.
nt_start_packet_path_pair() {
	local impl=$1 ns_a=$2 ns_b=$3
	shift 3
	NT_WRAP=(env SOLOWG_PACKET_TX=1 "$@")
	nt_check start.A-with-SOLOWG_PACKET_TX=1 nt_start_daemon "$impl" "$ns_a" "$NT_IF_A" || {
		nt_summary || true
		exit 1
	}
	NT_WRAP=(env -u SOLOWG_PACKET_TX)
	nt_check start.B nt_start_daemon "$impl" "$ns_b" "$NT_IF_B" || {
		nt_summary || true
		exit 1
	}
	NT_WRAP=()
}
