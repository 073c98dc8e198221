#!/usr/bin/env bash
# A router with two uplinks and policy routing by firewall mark (as mwan3 or pbr set it
# up): the packet path (SOLOWG_PACKET_TX=1) must not take the tunnel's datagrams past it.
#
#   A (router, solowg)  wan  10.204.1.2 ---- 10.204.1.1 isp1 \
#                       wan2 10.204.2.2 ---- 10.204.2.1 isp2 -- I (internet) -- ib 10.204.3.1
#                                                                              |
#                                                  B (the peer, solowg) vb 10.204.3.2
#
# A's main default route is via wan; `ip rule fwmark 0x100/0xff00 lookup 100` and table 100's
# default via wan2 send marked traffic out of wan2; an nftables route-type output chain marks
# UDP from A's listen port 0x100, and a postrouting nat chain masquerades what leaves wan2
# (the source address was chosen by the unmarked lookup: wan's). Both uplinks have no
# checksum offload and A's UDP GSO is refused (by its kernel, or strace as in packet-tx.sh),
# so A would otherwise send through its packet socket, which passes no netfilter hook: out
# of wan, unmarked and unmasqueraded.
#
# With the fwmark rule in place, A must keep every datagram on the UDP socket:
#  - B receives every datagram from A from wan2's (masqueraded) address (counted in B's
#    input hook), none crossed I from wan (I's forward hook), and B's endpoint for A stays
#    the same throughout (no roaming);
#  - a 10 MB TCP transfer through the tunnel completes;
#  - A's packet_tx_datagrams stays 0, and A logs a line about fwmark rules.
# The rule (and the mark chain) deleted: A uses its packet socket again within 10 s, the
# datagrams leave via wan and reach B from wan's address (the negative control: what the
# checks above would see had A ignored the rule). The rule added back: within 10 s no more
# datagrams through the packet socket, and all of them reach B from wan2's address again.
# A's connection tracking is flushed after each change of the policy (stale entries would
# keep the old NAT decision or clash with the new one).
#   usage: multi-wan.sh solowg
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

U=${1:-solowg}
[[ $U == solowg ]] || nt_die "multi-wan.sh tests solowg's packet path (usage: multi-wan.sh solowg)"
nt_setup
nt_require_tools iperf3 jq python3 nft sysctl
nt_require_impl "$U"

NS_A=$NT_NS_A
NS_B=$NT_NS_B
NS_I="swg-$NT_ID-i"
LOG_A="$NT_TMP/daemon-$NT_IF_A-$U.log"
# Addresses private to our namespaces: one subnet per uplink, one behind the internet.
WAN_A=10.204.1.2
WAN_GW=10.204.1.1
WAN2_A=10.204.2.2
WAN2_GW=10.204.2.1
B_GW=10.204.3.1
B_OUT=10.204.3.2
MARK=0x100/0xff00
TABLE=100
# Bound on each switch of A's way out after a rule change (they should take a few seconds).
SWITCH_MAX_S=10
# A transfer that stalls fails after 30 s rather than iperf3's 120 (10 MB take well under 1 s).
NT_IPERF_MAX_S=30
MB10=10485760

# --- 1. The topology.
make_topology() {
	local ns k dev
	for ns in "$NS_A" "$NS_I" "$NS_B"; do
		ip netns add "$ns" || return 1
		NT_NAMESPACES+=("$ns")
		ip -n "$ns" link set lo up || return 1
	done
	ip -n "$NS_A" link add wan type veth peer name isp1 netns "$NS_I" &&
		ip -n "$NS_A" link add wan2 type veth peer name isp2 netns "$NS_I" &&
		ip -n "$NS_I" link add ib type veth peer name vb netns "$NS_B" &&
		ip -n "$NS_A" addr add "$WAN_A/24" dev wan &&
		ip -n "$NS_A" addr add "$WAN2_A/24" dev wan2 &&
		ip -n "$NS_I" addr add "$WAN_GW/24" dev isp1 &&
		ip -n "$NS_I" addr add "$WAN2_GW/24" dev isp2 &&
		ip -n "$NS_I" addr add "$B_GW/24" dev ib &&
		ip -n "$NS_B" addr add "$B_OUT/24" dev vb || return 1
	# Without checksum offload on every end (RX off too: a veth would mark our frames'
	# checksums verified, and a wrong one would go unnoticed at B).
	for k in "$NS_A wan" "$NS_A wan2" "$NS_I isp1" "$NS_I isp2" "$NS_I ib" "$NS_B vb"; do
		read -r ns dev <<<"$k"
		nt_csum_off "$ns" "$dev" || return 1
		ip -n "$ns" link set "$dev" up || return 1
	done
	ip netns exec "$NS_I" sysctl -q -w net.ipv4.ip_forward=1 >/dev/null || return 1
	# No reverse path filter: B's answers to wan2's address come in on wan2 while A's main
	# route to B is wan (mwan3 setups run without it as well).
	for ns in "$NS_A" "$NS_I"; do
		for k in all default; do
			ip netns exec "$ns" sysctl -q -w "net.ipv4.conf.$k.rp_filter=0" >/dev/null || return 1
		done
	done
	for k in wan wan2; do
		ip netns exec "$NS_A" sysctl -q -w "net.ipv4.conf.$k.rp_filter=0" >/dev/null || return 1
	done
	for k in isp1 isp2 ib; do
		ip netns exec "$NS_I" sysctl -q -w "net.ipv4.conf.$k.rp_filter=0" >/dev/null || return 1
	done
	ip -n "$NS_B" route add default via "$B_GW" &&
		ip -n "$NS_A" route add default via "$WAN_GW" dev wan &&
		ip -n "$NS_A" route add default via "$WAN2_GW" dev wan2 table "$TABLE" || return 1
	nt_wait_until 5 nt_ping_ok "$NS_A" "$B_OUT"
}
nt_check topology.A-two-uplinks-I-B make_topology || {
	nt_summary || true
	exit 1
}

# nft_in NS: `nft -f -` in NS (the commands from stdin).
nft_in() { ip netns exec "$1" nft -f -; }
mark_chain_add() {
	nft_in "$NS_A" <<NFT
add chain ip swg_mwan mark_out { type route hook output priority mangle; policy accept; }
add rule ip swg_mwan mark_out udp sport $NT_PORT_A meta mark set 0x100
NFT
}
mark_chain_del() {
	nft_in "$NS_A" <<NFT
flush chain ip swg_mwan mark_out
delete chain ip swg_mwan mark_out
NFT
}
rule_add() { ip -n "$NS_A" -4 rule add fwmark "$MARK" lookup "$TABLE"; }
rule_del() { ip -n "$NS_A" -4 rule del fwmark "$MARK" lookup "$TABLE"; }
# ct_flush: every IPv4 connection tracking entry of A's namespace (ctnetlink's delete
# without a tuple; conntrack(8) -F, which may not be installed).
ct_flush() {
	ip netns exec "$NS_A" timeout 5 python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)  # NETLINK_NETFILTER
s.settimeout(3)
# nlmsghdr (IPCTNL_MSG_CT_DELETE of NFNL_SUBSYS_CTNETLINK; NLM_F_REQUEST | NLM_F_ACK), nfgenmsg
s.send(struct.pack("=IHHII", 20, (1 << 8) | 2, 1 | 4, 1, 0) + struct.pack("=BBH", socket.AF_INET, 0, 0))
r = s.recv(4096)
t, err = struct.unpack_from("=H", r, 4)[0], struct.unpack_from("=i", r, 16)[0]
sys.exit(0 if t == 2 and err == 0 else 1)'
}

policy_ok=1
nft_in "$NS_A" <<NFT || policy_ok=0
table ip swg_mwan {
	chain nat_out {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "wan2" masquerade
	}
}
NFT
mark_chain_add || policy_ok=0
rule_add || policy_ok=0
nt_check policy.mark-chain-masquerade-and-fwmark-rule test "$policy_ok" = 1 || true
route_dev() { ip -n "$NS_A" -4 route get "$B_OUT" "$@" | grep -o ' dev [^ ]*' | head -n 1 | cut -d' ' -f3; }
nt_info "A's route to B: unmarked dev $(route_dev), marked dev $(route_dev mark 0x100)"
nt_check policy.marked-traffic-routed-via-wan2 test "$(route_dev mark 0x100)" = wan2 || true
nt_check policy.unmarked-traffic-routed-via-wan test "$(route_dev)" = wan || true

# Counters: I's forward hook by the uplink a datagram to B's port came in on; B's input hook
# by its source address (wan2's, or any other).
counters_ok=1
nft_in "$NS_I" <<NFT || counters_ok=0
table ip swg_mw_i {
	counter via_wan { }
	counter via_wan2 { }
	chain forward_count {
		type filter hook forward priority 0; policy accept;
		iifname "isp1" udp dport $NT_PORT_B counter name "via_wan"
		iifname "isp2" udp dport $NT_PORT_B counter name "via_wan2"
	}
}
NFT
nft_in "$NS_B" <<NFT || counters_ok=0
table ip swg_mw_b {
	counter from_wan2 { }
	counter from_other { }
	chain input_count {
		type filter hook input priority 0; policy accept;
		udp dport $NT_PORT_B ip saddr $WAN2_A counter name "from_wan2" accept
		udp dport $NT_PORT_B counter name "from_other" accept
	}
}
NFT
nt_check counters.in-I-and-B test "$counters_ok" = 1 || true
# counter NS TABLE NAME: its packet count.
counter() {
	ip netns exec "$1" nft -j list counter ip "$2" "$3" 2>/dev/null |
		jq -r '[.nftables[] | select(.counter) | .counter.packets][0] // empty'
}
via_wan() { counter "$NS_I" swg_mw_i via_wan; }
via_wan2() { counter "$NS_I" swg_mw_i via_wan2; }
from_wan2() { counter "$NS_B" swg_mw_b from_wan2; }
from_other() { counter "$NS_B" swg_mw_b from_other; }
# grew V0 V1 [MIN]: both numbers, V1 - V0 >= MIN (default 1).
grew() { [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]] && (($2 - $1 >= ${3:-1})); }
same() { [[ $1 =~ ^[0-9]+$ && $1 == "$2" ]]; }
# unchanged V0 V1: both numbers, equal.
unchanged() { [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]] && (($1 == $2)); }

# --- 2. The daemons: A with the packet path on, under strace where its kernel would not
# refuse GSO; B with the default (the variable removed from its environment).
nt_gso_inject "$NS_A" "$B_OUT"
nt_start_packet_path_pair "$U" "$NS_A" "$NS_B" "${NT_GSO_INJECT[@]}"
configure() {
	nt_genkey ma && nt_genkey mb &&
		nt_config_iface "$NS_A" "$NT_IF_A" ma "$NT_PORT_A" &&
		nt_config_iface "$NS_B" "$NT_IF_B" mb "$NT_PORT_B" &&
		nt_config_peer "$NS_A" "$NT_IF_A" "$(nt_pub mb)" "$NT_IN4_B/32" "$B_OUT:$NT_PORT_B" &&
		nt_config_peer "$NS_B" "$NT_IF_B" "$(nt_pub ma)" "$NT_IN4_A/32" &&
		nt_iface_up "$NS_A" "$NT_IF_A" "$NT_IN4_A" "$NT_IN6_A" &&
		nt_iface_up "$NS_B" "$NT_IF_B" "$NT_IN4_B" "$NT_IN6_B"
}
nt_check configure configure || true
nt_check ping4.through-the-tunnel nt_wait_ping "$NS_A" "$NT_IN4_B" 10 || true

# One iperf3 A->B run (TCP unless ARGS say otherwise), judged on the sender's total.
iperf_check() { nt_iperf_check "$NS_A" "$NS_B" "$NT_IN4_B" "$@"; }
endpoint() { nt_peer_field "$NS_B" "$NT_IF_B" 3; }
# A ping stream A->B through the tunnel (50 a second, bounded in count and time) that the
# switch checks below watch; traffic_stop ends it.
TRAFFIC_PID=
traffic_start() {
	ip netns exec "$NS_A" timeout 40 ping -q -i 0.02 -c 1500 -W 1 "$NT_IN4_B" >>"$NT_TMP/ping-stream.out" 2>&1 &
	TRAFFIC_PID=$!
	NT_BG_PIDS+=("$TRAFFIC_PID")
}
traffic_stop() {
	[[ -z $TRAFFIC_PID ]] || nt_stop_job "$TRAFFIC_PID"
	TRAFFIC_PID=
}
# poll SECS CMD...: CMD every 0.5 s until it succeeds, bounded by count and clock; sets
# WAITED to the seconds it took.
WAITED=
poll() {
	local secs=$1 i t0=$SECONDS deadline
	shift
	deadline=$((SECONDS + secs))
	WAITED=
	for ((i = 0; i < secs * 2; i++)); do
		if "$@"; then
			WAITED=$((SECONDS - t0))
			return 0
		fi
		((SECONDS < deadline)) || break
		sleep 0.5
	done
	return 1
}

# --- 3. With the fwmark rule: every datagram on the UDP socket, marked, out of wan2.
ep0=$(endpoint) || ep0=
nt_info "B's endpoint for A after the handshake: ${ep0:-none}"
nt_check fwmark.B-sees-A-at-wan2s-address test "${ep0%:*}" = "$WAN2_A" || true
eps=("$ep0")
c0=$(nt_counters "$NT_IF_A") || c0=
w0=$(via_wan2) || w0=
iperf_check fwmark.iperf3-10M.A-to-B "$MB10" -n 10M || true
need=$(nt_datagrams_needed)
eps+=("$(endpoint)")
# Some seconds more of traffic, past A's periodic path checks, B's endpoint sampled.
traffic_start
for ((i = 0; i < 6; i++)); do
	sleep 0.5
	eps+=("$(endpoint)")
done
traffic_stop
sleep 0.3
c1=$(nt_counters "$NT_IF_A") || c1=
w1=$(via_wan2) || w1=
nt_info "A's counters: $c1"
udp=$(nt_stats_delta "$c0" "$c1" udp_tx_datagrams) || udp=
pkt=$(nt_stats_field "$c1" packet_tx_datagrams)
nt_info "A sent $udp datagrams during the transfer, $(nt_stats_field "$c1" packet_tx_datagrams) through the packet socket since it started"
nt_info "B got $(from_wan2) datagrams from wan2's address, $(from_other) from any other; I saw $(via_wan2) come in from wan2, $(via_wan) from wan"
gso_logged() { grep -q 'UDP GSO unavailable' "$LOG_A"; }
# Without this the check below would not mean anything: with GSO, A never takes its packet
# socket.
nt_check fwmark.A-without-UDP-GSO gso_logged || true
fwmark_logged() { grep -qi fwmark "$LOG_A"; }
nt_check fwmark.A-logged-a-line-about-fwmark fwmark_logged || true
nt_check fwmark.A-packet-tx-datagrams-stays-0 same "$pkt" 0 || nt_info "packet_tx_datagrams=${pkt:-missing}"
nt_check fwmark.A-sent-the-transfer test "${udp:-0}" -ge "$need" || nt_info "wanted >= $need"
nt_check fwmark.I-saw-the-transfer-come-in-from-wan2 grew "$w0" "$w1" "$need" || true
nt_check fwmark.I-saw-nothing-from-wan same "$(via_wan)" 0 || true
nt_check fwmark.B-got-nothing-but-from-wan2s-address same "$(from_other)" 0 || true
one_endpoint() {
	local e
	for e in "${eps[@]}"; do
		[[ -n $e && $e == "$ep0" ]] || return 1
	done
}
nt_check "fwmark.B-sees-one-endpoint-for-A-throughout(${#eps[@]}-samples)" one_endpoint ||
	nt_info "B's endpoints for A: ${eps[*]}"

# --- 4. The rule and the mark chain deleted (the negative control): the packet socket again,
# out of wan, from wan's address.
del_policy() { rule_del && mark_chain_del && ct_flush; }
p0=$(nt_stats_field "$(nt_counters "$NT_IF_A")" packet_tx_datagrams) || p0=
nt_check nofwmark.delete-the-rule-and-the-mark-chain del_policy || true
packet_tx_grew() {
	local p
	p=$(nt_stats_field "$(nt_counters "$NT_IF_A")" packet_tx_datagrams) || return 1
	grew "$p0" "$p"
}
traffic_start
if poll "$SWITCH_MAX_S" packet_tx_grew; then
	nt_pass "nofwmark.A-takes-its-packet-socket-again-within-${SWITCH_MAX_S}s" "after ${WAITED}s"
else
	nt_fail "nofwmark.A-takes-its-packet-socket-again-within-${SWITCH_MAX_S}s"
fi
traffic_stop
c0=$(nt_counters "$NT_IF_A") || c0=
v0=$(via_wan) || v0=
o0=$(from_other) || o0=
iperf_check nofwmark.iperf3-10M.A-to-B "$MB10" -n 10M || true
need=$(nt_datagrams_needed)
c1=$(nt_counters "$NT_IF_A") || c1=
v1=$(via_wan) || v1=
o1=$(from_other) || o1=
dp=$(nt_stats_delta "$c0" "$c1" packet_tx_datagrams) || dp=
du=$(nt_stats_delta "$c0" "$c1" udp_tx_datagrams) || du=
nt_info "without the rule: packet_tx_datagrams +${dp:-?} of udp_tx_datagrams +${du:-?}; I saw +$((${v1:-0} - ${v0:-0})) from wan; B got +$((${o1:-0} - ${o0:-0})) from other than wan2's address; B's endpoint for A: $(endpoint)"
nt_check "nofwmark.packet-tx->=80%-of-datagrams" nt_share_ok "$dp" "$du" 80 || true
nt_check nofwmark.negative-control.datagrams-leave-via-wan grew "$v0" "$v1" "$need" || nt_info "wanted >= $need"
nt_check nofwmark.negative-control.B-gets-them-from-another-address grew "$o0" "$o1" "$need" || true

# --- 5. The rule added back: the UDP socket again, out of wan2.
add_policy() { mark_chain_add && rule_add; }
nt_check fwmark-again.add-the-mark-chain-and-the-rule add_policy || true
# packet_tx_stopped: in one second of the ping stream, datagrams went out but none through
# the packet socket.
packet_tx_stopped() {
	local a b
	a=$(nt_counters "$NT_IF_A") || return 1
	sleep 1
	b=$(nt_counters "$NT_IF_A") || return 1
	grew "$(nt_stats_field "$a" udp_tx_datagrams)" "$(nt_stats_field "$b" udp_tx_datagrams)" 10 &&
		same "$(nt_stats_field "$a" packet_tx_datagrams)" "$(nt_stats_field "$b" packet_tx_datagrams)"
}
traffic_start
if poll "$SWITCH_MAX_S" packet_tx_stopped; then
	nt_pass "fwmark-again.A-leaves-its-packet-socket-within-${SWITCH_MAX_S}s" "after ${WAITED}s"
else
	nt_fail "fwmark-again.A-leaves-its-packet-socket-within-${SWITCH_MAX_S}s"
fi
traffic_stop
sleep 0.3
# The entries made meanwhile (unmasqueraded) go; A's next datagram makes the new one.
nt_check fwmark-again.flush-A-connection-tracking ct_flush || true
c0=$(nt_counters "$NT_IF_A") || c0=
v0=$(via_wan) || v0=
w0=$(via_wan2) || w0=
o0=$(from_other) || o0=
nt_check fwmark-again.ping4 nt_wait_ping "$NS_A" "$NT_IN4_B" 5 || true
iperf_check fwmark-again.iperf3-10M.A-to-B "$MB10" -n 10M || true
need=$(nt_datagrams_needed)
c1=$(nt_counters "$NT_IF_A") || c1=
v1=$(via_wan) || v1=
w1=$(via_wan2) || w1=
o1=$(from_other) || o1=
dp=$(nt_stats_delta "$c0" "$c1" packet_tx_datagrams) || dp=
ep=$(endpoint) || ep=
nt_info "with the rule again: packet_tx_datagrams +${dp:-?} of udp_tx_datagrams +$(nt_stats_delta "$c0" "$c1" udp_tx_datagrams || echo '?'); I saw +$((${w1:-0} - ${w0:-0})) from wan2, +$((${v1:-0} - ${v0:-0})) from wan; B got +$((${o1:-0} - ${o0:-0})) from other than wan2's address; B's endpoint for A: ${ep:-none}"
nt_check fwmark-again.A-packet-tx-datagrams-stays-put same "$dp" 0 || true
nt_check fwmark-again.I-saw-the-transfer-come-in-from-wan2 grew "$w0" "$w1" "$need" || nt_info "wanted >= $need"
nt_check fwmark-again.I-saw-nothing-from-wan unchanged "$v0" "$v1" || true
nt_check fwmark-again.B-got-nothing-but-from-wan2s-address unchanged "$o0" "$o1" || true
nt_check fwmark-again.B-sees-A-at-its-first-endpoint test "${ep:-none}" = "$ep0" || true
nt_summary
