#!/usr/bin/env bash
# Interop system test: implementation A in one namespace against B in another.
#   usage: interop.sh A B      (A, B: solowg | wireguard-go | boringtun)
#
# Phase "v4" (outer IPv4, A initiates): inner IPv4/IPv6 ping, `wg show`
#   handshake and transfer counters, an iperf3 TCP transfer (IPERF_SIZE,
#   default 50M), roaming of A's outer address under a ping stream, and a
#   clean exit of both daemons on SIGTERM.
# Phase "v6" (fresh daemons and keys, outer IPv6, B initiates): inner
#   IPv4/IPv6 ping, `wg show` counters, the endpoint learnt over IPv6, and
#   each daemon exiting by itself after `ip link del`.
# Prints one PASS/FAIL line per check and ends with "N passed, M failed".
# NT_SABOTAGE=wrong-key hands A a wrong public key for B: a self-test of the
# harness, under which every tunnel check must FAIL.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

if [[ $# -ne 2 ]]; then
	echo "usage: $0 A B   (each: solowg | wireguard-go | boringtun)" >&2
	exit 2
fi
A=$1
B=$2
IPERF_SIZE=${IPERF_SIZE:-50M}

nt_setup
nt_require_tools iperf3 jq python3 sha256sum
nt_require_impl "$A" "$B"
nt_info "interop A=$A ($NT_NS_A/$NT_IF_A) <-> B=$B ($NT_NS_B/$NT_IF_B)"
nt_make_netns || nt_die "could not build the namespaces"

# Later checks are meaningless once a daemon did not start: close the run.
abort() {
	nt_info "aborting: $1"
	nt_summary || true
	exit 1
}

# The key A is given for B: deliberately wrong for the harness self-test.
pub_for_a() {
	if [[ ${NT_SABOTAGE:-} == wrong-key ]]; then
		wg genkey | wg pubkey
	else
		nt_pub "$1"
	fi
}

# configure_pair KEY_A KEY_B ENDPOINT_A_USES ENDPOINT_B_USES
# (an empty endpoint means that side waits to be contacted).
configure_pair() {
	nt_genkey "$1" || return 1
	nt_genkey "$2" || return 1
	nt_config_iface "$NT_NS_A" "$NT_IF_A" "$1" "$NT_PORT_A" || return 1
	nt_config_iface "$NT_NS_B" "$NT_IF_B" "$2" "$NT_PORT_B" || return 1
	nt_config_peer "$NT_NS_A" "$NT_IF_A" "$(pub_for_a "$2")" "$NT_IN4_B/32,$NT_IN6_B/128" "$3" || return 1
	nt_config_peer "$NT_NS_B" "$NT_IF_B" "$(nt_pub "$1")" "$NT_IN4_A/32,$NT_IN6_A/128" "$4" || return 1
	nt_iface_up "$NT_NS_A" "$NT_IF_A" "$NT_IN4_A" "$NT_IN6_A" || return 1
	nt_iface_up "$NT_NS_B" "$NT_IF_B" "$NT_IN4_B" "$NT_IN6_B"
}

# start_pair PHASE: both daemons up; the TUN contract is checked on the
# implementations whose behaviour we specify (boringtun leaves MTU 1500).
start_pair() {
	local p=$1
	nt_check "$p.start.A-$A" nt_start_daemon "$A" "$NT_NS_A" "$NT_IF_A" || abort "A did not start"
	nt_check "$p.start.B-$B" nt_start_daemon "$B" "$NT_NS_B" "$NT_IF_B" || abort "B did not start"
	if [[ $p == v4 ]]; then
		[[ $A == boringtun ]] || nt_check "$p.tun-mtu1420-down.A-$A" nt_tun_pristine "$NT_NS_A" "$NT_IF_A" || true
		[[ $B == boringtun ]] || nt_check "$p.tun-mtu1420-down.B-$B" nt_tun_pristine "$NT_NS_B" "$NT_IF_B" || true
	fi
}

wg_stats_checks() {
	local p=$1
	if nt_has_faithful_uapi "$A"; then
		nt_check "$p.wg-show.A-$A" nt_wg_stats_ok "$NT_NS_A" "$NT_IF_A" || true
	fi
	if nt_has_faithful_uapi "$B"; then
		nt_check "$p.wg-show.B-$B" nt_wg_stats_ok "$NT_NS_B" "$NT_IF_B" || true
	fi
}

# Bytes that went through the tunnel A->B, from a side whose counters we trust.
tunnel_bytes_a_to_b() {
	if nt_has_faithful_uapi "$B"; then
		nt_peer_field "$NT_NS_B" "$NT_IF_B" 6
	elif nt_has_faithful_uapi "$A"; then
		nt_peer_field "$NT_NS_A" "$NT_IF_A" 7
	else
		echo -1
	fi
}
tunnel_bytes_at_least() {
	local n
	n=$(tunnel_bytes_a_to_b) || return 1
	((n < 0 || n >= $1))
}

# iperf3 TCP bulk transfer A->B: all IPERF_SIZE bytes sent, and the tunnel's
# own counters (when trustworthy) grew by at least 90% of that.
iperf_test() {
	local name="v4.iperf3-$IPERF_SIZE.A-to-B" size before
	size=$(numfmt --from=iec "$IPERF_SIZE")
	before=$(tunnel_bytes_a_to_b) || before=0
	if ! nt_iperf "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" -n "$IPERF_SIZE"; then
		nt_fail "$name" "iperf3 failed: sent=$NT_IPERF_SENT received=$NT_IPERF_RECV"
	elif ((NT_IPERF_SENT < size)); then
		nt_fail "$name" "only $NT_IPERF_SENT bytes sent"
	# iperf3 counts bytes written to its socket; when it stops, up to a few MB may still sit
	# in socket buffers and never cross (its server exits at once), so require 90% here.
	elif ! nt_wait_until 5 tunnel_bytes_at_least $((before + size * 9 / 10)); then
		nt_fail "$name" "tunnel counter grew by $(($(tunnel_bytes_a_to_b) - before)) bytes only"
	else
		nt_pass "$name" "$NT_IPERF_MBPS Mbit/s, sent=$NT_IPERF_SENT received=$NT_IPERF_RECV"
	fi
}

# The bytes themselves: 16 MiB of random data over TCP each way, compared by SHA-256 (iperf3
# checks nothing, and a receiver that trusts a wrong checksum flag would not drop a segment
# cut or patched wrongly). The sender's TSO super-packets are what its daemon cuts.
RECV_PY='import hashlib, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
s.settimeout(20)
c, _ = s.accept()
c.settimeout(20)
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    h.update(b)
    n += len(b)
print(n, h.hexdigest())'
SEND_PY='import socket, sys, time
deadline = time.time() + 5
while True:
    try:
        s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
        break
    except OSError:
        if time.time() > deadline:
            raise
        time.sleep(0.1)
s.settimeout(20)
s.sendall(open(sys.argv[3], "rb").read())
s.shutdown(socket.SHUT_WR)
s.recv(1)'
content_test() {
	local data=$NT_TMP/content.bin want got dir from to addr
	head -c 16777216 /dev/urandom >"$data"
	want="16777216 $(sha256sum "$data" | cut -d' ' -f1)"
	for dir in A-to-B B-to-A; do
		if [[ $dir == A-to-B ]]; then
			from=$NT_NS_A to=$NT_NS_B addr=$NT_IN4_B
		else
			from=$NT_NS_B to=$NT_NS_A addr=$NT_IN4_A
		fi
		timeout 30 ip netns exec "$to" python3 -c "$RECV_PY" "$addr" 5301 >"$NT_TMP/content.got" &
		local recv=$!
		timeout 30 ip netns exec "$from" python3 -c "$SEND_PY" "$addr" 5301 "$data" || true
		wait "$recv" || true
		got=$(cat "$NT_TMP/content.got")
		if [[ $got == "$want" ]]; then
			nt_pass "v4.content-16M-sha256.$dir"
		else
			nt_fail "v4.content-16M-sha256.$dir" "received ${got:-nothing}, want $want"
		fi
	done
}

# Outer path MTU below the tunnel's datagram size (1420 + 32 + headers > 1400): the
# sender must still get full-size packets across (the kernel fragments them). A
# sender that batches with UDP GSO gets EMSGSIZE here and must fall back.
outer_mtu_test() {
	local name="v4.outer-mtu-1400.iperf3-10M"
	if ! ip -n "$NT_NS_A" link set "$NT_VETH_A" mtu 1400 ||
		! ip -n "$NT_NS_B" link set "$NT_VETH_B" mtu 1400; then
		nt_fail "$name" "cannot lower the veth MTU"
		return
	fi
	if nt_iperf "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" -n 10M && ((NT_IPERF_SENT >= 10485760)); then
		nt_pass "$name" "$NT_IPERF_MBPS Mbit/s with fragmented outer datagrams"
	else
		nt_fail "$name" "iperf3: sent=$NT_IPERF_SENT received=$NT_IPERF_RECV"
	fi
	ip -n "$NT_NS_A" link set "$NT_VETH_A" mtu 1500
	ip -n "$NT_NS_B" link set "$NT_VETH_B" mtu 1500
}

# Inner IPv6 TCP both ways: a daemon with TUN offload cuts the kernel's IPv6 TCP
# super-packets itself and rebuilds them on receive, so checksums, lengths and
# sequence numbers of IPv6 segments must survive the round trip (the v4 iperf
# covers IPv4).
inner6_iperf_test() {
	local dir name args
	for dir in A-to-B B-to-A; do
		name="v6.inner-ipv6.iperf3-10M.$dir"
		args=(-n 10M)
		[[ $dir == B-to-A ]] && args+=(-R)
		if nt_iperf "$NT_NS_A" "$NT_NS_B" "$NT_IN6_B" "${args[@]}" && ((NT_IPERF_SENT >= 10485760)); then
			nt_pass "$name" "$NT_IPERF_MBPS Mbit/s"
		else
			nt_fail "$name" "iperf3: sent=$NT_IPERF_SENT received=$NT_IPERF_RECV"
		fi
	done
}

roam_replies() { grep -c 'bytes from' "$1" 2>/dev/null || true; }
roam_replies_at_least() {
	local n
	n=$(roam_replies "$1")
	((n >= $2))
}

# Roaming: a ping stream runs from A to B while A's outer IPv4 address is
# replaced (new address added, old one deleted, same port); B must move its
# endpoint for A and the stream must resume within ROAM_RESUME_S. The bound
# is generous because wireguard-go 0.0.20220316 keeps sending from the deleted
# source address (ENETUNREACH) until its 15 s "stopped hearing back"
# re-handshake; the measured gap is printed so faster recovery is visible.
ROAM_RESUME_S=${ROAM_RESUME_S:-25}
# a_connected_from LOCAL: A has a UDP socket connected from LOCAL:port A to B's
# endpoint (solowg sends a peer's data from one; `ss -u` lists connected ones).
a_connected_from() {
	ip netns exec "$NT_NS_A" ss -Hnu | awk -v l="$1:$NT_PORT_A" -v p="$NT_OUT4_B:$NT_PORT_B" \
		'{ for (i = 1; i < NF; i++) if ($i == l && $(i + 1) == p) f = 1 } END { exit !f }'
}
# a_steered: A's IPv4 port is a SO_REUSEPORT group of two sockets (handshake steering),
# which is what lets solowg bind connected sockets to it (not under qemu-user: no
# SO_ATTACH_REUSEPORT_CBPF there, one socket per family, every datagram sent unconnected).
a_steered() {
	(($(ip netns exec "$NT_NS_A" ss -Hnua | awk -v l="0.0.0.0:$NT_PORT_A" '$4 == l' | wc -l) >= 2))
}
roam_test() {
	local log="$NT_TMP/roam-ping.log" ppid before t0 t1 conns=0
	# ping prints one line per reply and flushes it, so the file is live.
	ip netns exec "$NT_NS_A" timeout 50 ping -D -i 0.1 -W 1 -w $((ROAM_RESUME_S + 15)) "$NT_IN4_B" >"$log" 2>&1 &
	ppid=$!
	NT_BG_PIDS+=("$ppid")
	if ! nt_wait_until 5 roam_replies_at_least "$log" 5; then
		nt_fail v4.roam.stream-before
		nt_stop_job "$ppid"
		return 0
	fi
	before=$(roam_replies "$log")
	if [[ $A == solowg ]] && a_steered; then
		conns=1
	elif [[ $A == solowg ]]; then
		echo "SKIPPED v4.roam.connected-socket-*: A has one socket per family (no steering), so it sends unconnected"
	fi
	if ((conns)); then
		nt_check v4.roam.connected-socket-before nt_wait_until 2 a_connected_from "$NT_OUT4_A" ||
			nt_info "A's UDP sockets: $(ip netns exec "$NT_NS_A" ss -Hnua | tr -s ' \n' ' ')"
	fi
	if ! { ip -n "$NT_NS_A" addr add "$NT_OUT4_ROAM/24" dev "$NT_VETH_A" &&
		ip -n "$NT_NS_A" addr del "$NT_OUT4_A/24" dev "$NT_VETH_A"; }; then
		nt_fail v4.roam.move-address
		nt_stop_job "$ppid"
		return 0
	fi
	t0=$(nt_now_ms)
	nt_info "moved A's outer address $NT_OUT4_A -> $NT_OUT4_ROAM after $before replies"
	if nt_wait_until "$ROAM_RESUME_S" roam_replies_at_least "$log" $((before + 5)); then
		t1=$(nt_now_ms)
		nt_pass v4.roam.traffic-resumes "5 more replies within $((t1 - t0)) ms"
	else
		nt_fail v4.roam.traffic-resumes "fewer than 5 replies in $ROAM_RESUME_S s after the move"
	fi
	if ((conns)); then
		# The old source address is gone: the socket pinned to it must have been replaced.
		nt_check v4.roam.connected-socket-moved nt_wait_until 2 a_connected_from "$NT_OUT4_ROAM" || true
		if a_connected_from "$NT_OUT4_A"; then
			nt_fail v4.roam.connected-socket-old-closed
		else
			nt_pass v4.roam.connected-socket-old-closed
		fi
	fi
	if nt_has_faithful_uapi "$B"; then
		nt_check "v4.roam.endpoint-followed.B-$B" \
			nt_wait_until 5 nt_endpoint_is "$NT_NS_B" "$NT_IF_B" "$NT_OUT4_ROAM:$NT_PORT_A" || true
		nt_info "B's endpoint for A: $(nt_peer_field "$NT_NS_B" "$NT_IF_B" 3 || true)"
	fi
	nt_stop_job "$ppid"
}

# ---- phase v4: outer IPv4, A initiates --------------------------------------
nt_info "phase v4: outer IPv4, A initiates"
start_pair v4
nt_check v4.configure configure_pair a1 b1 "$NT_OUT4_B:$NT_PORT_B" "" || abort "configuration failed"
tunnel_ok=1
nt_check v4.ping4.A-initiates nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10 || tunnel_ok=0
nt_check v4.ping6.A-initiates nt_wait_ping "$NT_NS_A" "$NT_IN6_B" 5 || true
wg_stats_checks v4

if [[ $tunnel_ok -eq 1 ]]; then
	iperf_test
	content_test
	outer_mtu_test
	roam_test
else
	nt_fail "v4.iperf3-$IPERF_SIZE.A-to-B" "no tunnel"
	nt_fail v4.content-16M-sha256.A-to-B "no tunnel"
	nt_fail v4.content-16M-sha256.B-to-A "no tunnel"
	nt_fail v4.roam.traffic-resumes "no tunnel"
fi

# solowg's data-path counters, logged on SIGUSR1 (bench/router reads them): after the
# traffic above they must show datagrams in both directions and the calls that moved them.
counters_logged() {
	local log=$NT_TMP/daemon-$NT_IF_A-$A.log line
	kill -USR1 "$(nt_daemon_os_pid "$NT_IF_A")" || return 1
	nt_wait_until 3 grep -q "stats $NT_IF_A: " "$log" || return 1
	line=$(grep "stats $NT_IF_A: " "$log" | tail -n 1)
	nt_info "A's counters: $line"
	awk '{ for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) v[kv[1]] = kv[2] }
		END { exit !(v["udp_rx_datagrams"] > 1000 && v["udp_recv_calls"] > 0 && v["udp_tx_datagrams"] > 1000 &&
			v["udp_send_calls"] > 0 && v["tun_rx_packets"] > 0 && v["tun_tx_packets"] > 0) }' <<<"$line" &&
		kill -0 "$(nt_daemon_os_pid "$NT_IF_A")"
}
if [[ $A == solowg && $tunnel_ok -eq 1 ]]; then
	nt_check v4.sigusr1-logs-counters-and-keeps-running counters_logged || true
fi

nt_check "v4.sigterm-exit.A-$A" nt_stop_daemon "$NT_IF_A" || true
nt_check "v4.sigterm-exit.B-$B" nt_stop_daemon "$NT_IF_B" || true

# ---- phase v6: fresh daemons and keys, outer IPv6, B initiates --------------
nt_info "phase v6: restarted daemons, fresh keys, outer IPv6, B initiates"
start_pair v6
nt_check v6.configure configure_pair a2 b2 "" "[$NT_OUT6_A]:$NT_PORT_A" || abort "configuration failed"
nt_check v6.ping4.B-initiates nt_wait_ping "$NT_NS_B" "$NT_IN4_A" 10 || true
nt_check v6.ping6.B-initiates nt_wait_ping "$NT_NS_B" "$NT_IN6_A" 5 && inner6_iperf_test
wg_stats_checks v6
if nt_has_faithful_uapi "$A"; then
	nt_check "v6.endpoint-learnt.A-$A" nt_endpoint_is "$NT_NS_A" "$NT_IF_A" "[$NT_OUT6_B]:$NT_PORT_B" || true
fi
nt_check "v6.linkdel-exit.A-$A" nt_linkdel_daemon "$NT_NS_A" "$NT_IF_A" || true
nt_check "v6.linkdel-exit.B-$B" nt_linkdel_daemon "$NT_NS_B" "$NT_IF_B" || true

nt_summary
