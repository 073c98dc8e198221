#!/usr/bin/env bash
# IPv4 data datagrams through a packet socket where UDP GSO is refused and
# SOLOWG_PACKET_TX=1 turns that path on (it is off by default). Both outer veths lose their
# TX and RX checksum offload (csum-off.py; RX off on B too, or B's veth would mark our
# CHECKSUM_NONE frames as verified and a wrong UDP checksum would go unnoticed). A, started
# with SOLOWG_PACKET_TX=1, must notice that GSO is refused, send most datagrams through its
# packet socket (packet_tx_datagrams, part of udp_tx_datagrams in its SIGUSR1 stats line)
# and still:
#  - keep A's connection tracking entry alive on its own (one datagram a second through
#    the UDP socket): with 2 s UDP timeouts and "established only" for A's port, B reaches
#    A after 6 s of one-way traffic A->B (a negative control with A's sends untracked
#    shows that the check can fail);
#  - carry traffic while A's neighbour table is flushed, and use the packet socket again
#    afterwards;
#  - follow a route change to a second veth and back;
#  - behind a shaper (tbf, 30 Mbit/s, a queue of about 20 frames) overrun by 100 Mbit/s of
#    UDP, lose only the frames the qdisc refuses: A's udp_tx_dropped grows by about the
#    qdisc's own drop count, and the qdisc sees nearly every frame (a refused frame once
#    cost the rest of its sendmmsg batch too, unseen by the qdisc: several times as many);
#  - restarted without the variable (the default), send nothing through it and log nothing
#    about a packet socket.
# Newer kernels (6.18 here) compute the checksum of a GSO batch in software instead of refusing
# it; there A runs under strace, which fails sendmsg(2) (only GSO batches use it; the
# packet socket and single datagrams use sendmmsg/sendto) with EIO, as gso-fallback.sh
# (nt_gso_inject in lib.sh).
#   usage: packet-tx.sh solowg
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

U=${1:-solowg}
nt_setup
nt_require_tools iperf3 jq python3 nft sysctl tc
nt_require_impl "$U"
nt_make_netns || nt_die "could not build the namespaces"

LOG_A="$NT_TMP/daemon-$NT_IF_A-$U.log"
# The second veth pair of the route-change check (a subnet of its own).
VETH2_A=va2
VETH2_B=vb2
OUT4_A2=10.203.0.1
OUT4_B2=10.203.0.2
SINK_PORT=5400 # B's one-way UDP receiver (inner address)
MB5=5242880
MB10=10485760

csum_off() { nt_csum_off "$@"; }
nt_check csum-off.A csum_off "$NT_NS_A" "$NT_VETH_A" || true
nt_check csum-off.B csum_off "$NT_NS_B" "$NT_VETH_B" || true

# Does A's kernel refuse UDP GSO on its veth now? If not, A runs under strace (INJECT).
nt_gso_inject "$NT_NS_A" "$NT_OUT4_B"
INJECT=("${NT_GSO_INJECT[@]}")

# The packet path is opt-in: A with SOLOWG_PACKET_TX=1, B with the default (the variable
# removed, whatever the caller's environment holds).
nt_start_packet_path_pair "$U" "$NT_NS_A" "$NT_NS_B" "${INJECT[@]}"
nt_check configure nt_config_pair pa pb v4 || true
nt_check ping4 nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10 || true

# One iperf3 A->B run (TCP unless ARGS say otherwise), judged on the sender's total.
iperf_check() { nt_iperf_check "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" "$@"; }
tx_packets() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_packets"; }

# --- 2. Bulk traffic: GSO refused, the packet socket carries it.
iperf_check iperf3-20M.A-to-B 20971520 -n 20M || true
gso_logged() { grep -q 'UDP GSO unavailable' "$LOG_A"; }
nt_check gso-unavailable-logged gso_logged || true
c=$(nt_counters "$NT_IF_A") || c=
nt_info "A's counters: $c"
pkt=$(nt_stats_field "$c" packet_tx_datagrams)
udp=$(nt_stats_field "$c" udp_tx_datagrams)
bulk_ok() { [[ ${udp:-0} -gt 10000 ]] && nt_share_ok "$pkt" "$udp" 90; }
nt_check "packet-tx.carries->=90%-of-datagrams" bulk_ok || nt_info "packet_tx_datagrams=${pkt:-missing} udp_tx_datagrams=${udp:-missing}"

# --- 3. Connection tracking in A: only established flows reach A's port, 2 s UDP timeouts.
# Rules first (they load conntrack into the namespace, and with it the sysctls).
ct_ok=1
ip netns exec "$NT_NS_A" nft -f - <<NFT || ct_ok=0
table inet swg_pkt {
	counter drops { }
	chain input {
		type filter hook input priority 0; policy accept;
		udp dport $NT_PORT_A ct state established,related accept
		udp dport $NT_PORT_A counter name "drops" drop
	}
	chain out {
		type filter hook output priority raw; policy accept;
	}
}
NFT
for k in nf_conntrack_udp_timeout nf_conntrack_udp_timeout_stream; do
	ip netns exec "$NT_NS_A" sysctl -q -w "net.netfilter.$k=2" >/dev/null || ct_ok=0
done
nt_check ct.rules-and-2s-timeouts test "$ct_ok" = 1 || true
drops() {
	ip netns exec "$NT_NS_A" nft -j list counter inet swg_pkt drops 2>/dev/null |
		jq -r '[.nftables[] | select(.counter) | .counter.packets][0] // empty'
}
recv_listening() { ip netns exec "$NT_NS_B" ss -Huln "sport = :$SINK_PORT" 2>/dev/null | grep -q .; }

# one_way LABEL: B's receiver up; ping A->B (fresh traffic); 6 s of one-way UDP A->B at
# about 100 datagrams/s (nothing comes back: B's passive keepalive is 10 s away); then
# B->A ping (bounded, 4 s). Sets OW_PING_BACK (0 = B reached A), OW_DROPS, OW_GOT.
one_way() {
	local label=$1 rpid d0 d1
	OW_PING_BACK=1 OW_DROPS="?" OW_GOT="?"
	# Receiver: counts until an "END" datagram, or 25 s; it stays bound meanwhile, so B's
	# kernel sends no port-unreachable back to A.
	ip netns exec "$NT_NS_B" timeout 30 python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
end = time.monotonic() + 25
n = 0
while time.monotonic() < end:
    s.settimeout(max(0.1, end - time.monotonic()))
    try:
        d = s.recv(2048)
    except socket.timeout:
        break
    if d == b"END":
        break
    n += 1
print(n)' "$NT_IN4_B" "$SINK_PORT" >"$NT_TMP/sink-$label.out" 2>&1 &
	rpid=$!
	NT_BG_PIDS+=("$rpid")
	nt_wait_until 5 recv_listening || nt_info "$label: B's receiver did not bind"
	nt_check "ct.$label.ping-A-to-B" nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 5 || true
	[[ $label != negative-control ]] ||
		ip netns exec "$NT_NS_A" nft add rule inet swg_pkt out udp sport "$NT_PORT_A" notrack
	ip netns exec "$NT_NS_A" timeout 15 python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
to = (sys.argv[1], int(sys.argv[2]))
t0 = time.monotonic()
for i in range(600):
    s.sendto(b"%05d" % i + b"x" * 195, to)
    wait = t0 + (i + 1) * 0.01 - time.monotonic()
    if wait > 0:
        time.sleep(wait)
s.sendto(b"END", to)' "$NT_IN4_B" "$SINK_PORT" || nt_info "$label: sender failed"
	d0=$(drops) || d0=
	if nt_wait_until 4 nt_ping_ok "$NT_NS_B" "$NT_IN4_A"; then OW_PING_BACK=0; fi
	d1=$(drops) || d1=
	[[ $label != negative-control ]] || ip netns exec "$NT_NS_A" nft flush chain inet swg_pkt out
	nt_stop_job "$rpid"
	OW_GOT=$(tail -n 1 "$NT_TMP/sink-$label.out" 2>/dev/null) || OW_GOT="?"
	[[ $d0 =~ ^[0-9]+$ && $d1 =~ ^[0-9]+$ ]] && OW_DROPS=$((d1 - d0))
	nt_info "$label: B received ${OW_GOT:-?} of 600 one-way datagrams; A's firewall dropped $OW_DROPS of B's datagrams during the B->A ping (total $d1)"
}
ct_c0=$(nt_counters "$NT_IF_A") || ct_c0=
one_way refreshed
ct_c1=$(nt_counters "$NT_IF_A") || ct_c1=
nt_info "during the one-way run: packet_tx_datagrams +$(nt_stats_delta "$ct_c0" "$ct_c1" packet_tx_datagrams || echo '?') of udp_tx_datagrams +$(nt_stats_delta "$ct_c0" "$ct_c1" udp_tx_datagrams || echo '?')"
got_most() { [[ $OW_GOT =~ ^[0-9]+$ ]] && ((OW_GOT >= 570)); }
nt_check ct.one-way-datagrams-arrived got_most || true
nt_check ct.B-reaches-A-after-6s-one-way test "$OW_PING_BACK" = 0 || true
# Negative control: A's own sends untracked (notrack in its raw output hook) for the same
# run, so nothing refreshes the entry: B's datagrams must then be dropped as new.
one_way negative-control
neg_ok() { [[ $OW_PING_BACK != 0 && $OW_DROPS =~ ^[0-9]+$ ]] && ((OW_DROPS > 0)); }
nt_check ct.negative-control.B-dropped-once-the-entry-expired neg_ok || true
ip netns exec "$NT_NS_A" nft delete table inet swg_pkt || true
nt_check ct.tunnel-up-without-the-rules nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10 || true

# --- 4. A's neighbour table flushed under a ping stream; the packet socket comes back.
ip netns exec "$NT_NS_A" timeout 20 ping -q -c 50 -i 0.05 -W 1 "$NT_IN4_B" >"$NT_TMP/ping-flush.out" 2>&1 &
ppid=$!
NT_BG_PIDS+=("$ppid")
sleep 0.7
nt_check neigh.flush ip -n "$NT_NS_A" neigh flush dev "$NT_VETH_A" || true
wait_job() { # PID: wait for our job, bounded (20 s), then stop it
	nt_wait_until 20 nt_pid_gone "$1" || true
	nt_stop_job "$1"
}
wait_job "$ppid"
loss=$(grep -oE '[0-9.]+% packet loss' "$NT_TMP/ping-flush.out" | grep -oE '^[0-9.]+' || true)
rcvd=$(grep -oE '[0-9]+ received' "$NT_TMP/ping-flush.out" | grep -oE '^[0-9]+' || true)
nt_info "ping across the flush: ${rcvd:-?} of 50 replies (${loss:-?}% loss)"
nt_check "neigh.ping-loss-<=10%-across-the-flush" test "${rcvd:-0}" -ge 45 || true
n0=$(nt_counters "$NT_IF_A") || n0=
iperf_check iperf3-5M.A-to-B.after-neigh-flush "$MB5" -n 5M || true
n1=$(nt_counters "$NT_IF_A") || n1=
dp=$(nt_stats_delta "$n0" "$n1" packet_tx_datagrams) || dp=
du=$(nt_stats_delta "$n0" "$n1" udp_tx_datagrams) || du=
nt_info "after the flush: packet_tx_datagrams +${dp:-?} of udp_tx_datagrams +${du:-?}"
nt_check "neigh.packet-tx->=80%-after-the-flush" nt_share_ok "$dp" "$du" 80 || true

# --- 5. A route change: B's outer address by a second veth pair, then back.
veth2() {
	ip -n "$NT_NS_A" link add "$VETH2_A" type veth peer name "$VETH2_B" netns "$NT_NS_B" &&
		ip -n "$NT_NS_A" addr add "$OUT4_A2/24" dev "$VETH2_A" &&
		ip -n "$NT_NS_B" addr add "$OUT4_B2/24" dev "$VETH2_B" &&
		csum_off "$NT_NS_A" "$VETH2_A" && csum_off "$NT_NS_B" "$VETH2_B" &&
		ip -n "$NT_NS_A" link set "$VETH2_A" up && ip -n "$NT_NS_B" link set "$VETH2_B" up &&
		# B takes datagrams for its other address on vb2 (weak host model): no reverse
		# path filtering in the way.
		for k in all default "$VETH2_B" "$NT_VETH_B"; do
			ip netns exec "$NT_NS_B" sysctl -q -w "net.ipv4.conf.$k.rp_filter=0" >/dev/null || return 1
		done &&
		nt_wait_until 5 nt_ping_ok "$NT_NS_A" "$OUT4_B2"
}
nt_check route.second-veth-pair veth2 || true
# Only A's way out changes: its source address stays, so neither side's endpoint roams (B
# answers by its own route, through the first pair).
nt_check route.add-via-second-veth ip -n "$NT_NS_A" route add "$NT_OUT4_B/32" via "$OUT4_B2" dev "$VETH2_A" src "$NT_OUT4_A" || true
r0=$(nt_counters "$NT_IF_A") || r0=
t0_2=$(tx_packets "$NT_NS_A" "$VETH2_A") || t0_2=0
iperf_check iperf3-10M.A-to-B.via-second-veth "$MB10" -n 10M || true
need=$(nt_datagrams_needed)
t1_2=$(tx_packets "$NT_NS_A" "$VETH2_A") || t1_2=0
r1=$(nt_counters "$NT_IF_A") || r1=
dp=$(nt_stats_delta "$r0" "$r1" packet_tx_datagrams) || dp=
du=$(nt_stats_delta "$r0" "$r1" udp_tx_datagrams) || du=
nt_info "via $VETH2_A: its tx_packets +$((t1_2 - t0_2)); packet_tx_datagrams +${dp:-?} of udp_tx_datagrams +${du:-?}; A's endpoint for B: $(nt_peer_field "$NT_NS_A" "$NT_IF_A" 3)"
nt_check "route.datagrams-left-on-$VETH2_A" test $((t1_2 - t0_2)) -ge "$need" || nt_info "wanted >= $need"
nt_check "route.packet-tx->=80%-on-the-new-route" nt_share_ok "$dp" "$du" 80 || true
nt_check route.delete ip -n "$NT_NS_A" route del "$NT_OUT4_B/32" via "$OUT4_B2" dev "$VETH2_A" src "$NT_OUT4_A" || true
nt_info "A's route to B now: $(ip -n "$NT_NS_A" route get "$NT_OUT4_B" | head -n 1)"
nt_info "A's UDP sockets: $(ip netns exec "$NT_NS_A" ss -Huan | awk '{ print $4, $5 }' | tr '\n' ';')"
t0_1=$(tx_packets "$NT_NS_A" "$NT_VETH_A") || t0_1=0
t0_2=$(tx_packets "$NT_NS_A" "$VETH2_A") || t0_2=0
r0=$(nt_counters "$NT_IF_A") || r0=
iperf_check iperf3-10M.A-to-B.back-on-first-veth "$MB10" -n 10M || true
need=$(nt_datagrams_needed)
r1=$(nt_counters "$NT_IF_A") || r1=
t1_1=$(tx_packets "$NT_NS_A" "$NT_VETH_A") || t1_1=0
t1_2=$(tx_packets "$NT_NS_A" "$VETH2_A") || t1_2=0
dp=$(nt_stats_delta "$r0" "$r1" packet_tx_datagrams) || dp=
du=$(nt_stats_delta "$r0" "$r1" udp_tx_datagrams) || du=
nt_info "back: $NT_VETH_A tx_packets +$((t1_1 - t0_1)), $VETH2_A +$((t1_2 - t0_2)); packet_tx_datagrams +${dp:-?} of udp_tx_datagrams +${du:-?}"
nt_check "route.datagrams-back-on-$NT_VETH_A" test $((t1_1 - t0_1)) -ge "$need" || nt_info "wanted >= $need"
nt_check "route.packet-tx->=80%-back-on-$NT_VETH_A" nt_share_ok "$dp" "$du" 80 || true

# --- 6. A shaped uplink: a frame the qdisc refuses costs that frame only. tbf at 30 Mbit/s
# with a queue of 30,000 bytes (about 20 frames) on A's veth, 100 Mbit/s of UDP into the
# tunnel for 5 s: most frames meet a full queue, and the qdisc counts each it refuses. A
# counts in udp_tx_dropped what its sends did not get into the queue; that must be about
# the qdisc's count, not the rest of every batch a refusal cut short (several times more).
# The qdisc's count can only be the larger: it also holds what the UDP socket lost there
# (the kernel reports no ENOBUFS for UDP sockets without IP_RECVERR).
qdisc_stat() { # NS DEV FIELD: a counter of the root qdisc (drops, packets)
	tc -n "$1" -s -j qdisc show dev "$2" | jq -r --arg f "$3" '[.[] | select(.root) | .[$f]][0] // empty'
}
shape_ok=1
tc -n "$NT_NS_A" qdisc replace dev "$NT_VETH_A" root tbf rate 30mbit burst 6000 limit 30000 || shape_ok=0
nt_check shape.tbf-30mbit-20-frame-queue-on-A test "$shape_ok" = 1 || true
s0=$(nt_counters "$NT_IF_A") || s0=
q0=$(qdisc_stat "$NT_NS_A" "$NT_VETH_A" drops) || q0=
k0=$(qdisc_stat "$NT_NS_A" "$NT_VETH_A" packets) || k0=
name=shape.iperf3-udp-100M-5s.A-to-B-through-the-shaper
if nt_iperf "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" -u -b 100M -l 1300 -t 5 && ((NT_IPERF_RECV > 1000000)); then
	nt_pass "$name" "$NT_IPERF_MBPS Mbit/s"
else
	nt_fail "$name" "iperf3: sent=$NT_IPERF_SENT received=$NT_IPERF_RECV"
fi
sleep 1 # the queue drains (30,000 bytes at 30 Mbit/s: 8 ms)
s1=$(nt_counters "$NT_IF_A") || s1=
q1=$(qdisc_stat "$NT_NS_A" "$NT_VETH_A" drops) || q1=
k1=$(qdisc_stat "$NT_NS_A" "$NT_VETH_A" packets) || k1=
nt_info "A's shaper: $(tc -n "$NT_NS_A" -s qdisc show dev "$NT_VETH_A" | tr -s '\n ' ' ')"
dp=$(nt_stats_delta "$s0" "$s1" packet_tx_datagrams) || dp=
du=$(nt_stats_delta "$s0" "$s1" udp_tx_datagrams) || du=
dd=$(nt_stats_delta "$s0" "$s1" udp_tx_dropped) || dd=
qd=
qk=
[[ $q0 =~ ^[0-9]+$ && $q1 =~ ^[0-9]+$ ]] && qd=$((q1 - q0))
[[ $k0 =~ ^[0-9]+$ && $k1 =~ ^[0-9]+$ ]] && qk=$((k1 - k0))
nt_info "through the shaper: packet_tx_datagrams +${dp:-?} of udp_tx_datagrams +${du:-?}; A's udp_tx_dropped +${dd:-?}; the qdisc sent +${qk:-?} and dropped +${qd:-?}"
shape_pkt_ok() { [[ ${du:-0} =~ ^[0-9]+$ ]] && ((du > 10000)) && nt_share_ok "$dp" "$du" 80; }
nt_check "shape.packet-tx->=80%-of-datagrams" shape_pkt_ok || true
# The case is only a test if the qdisc refused plenty.
nt_check shape.qdisc-refused-frames test "${qd:-0}" -ge 500 || true
# slack: 50 frames or a tenth of the qdisc's count, whichever is more.
slack() { local t=$((${qd:-0} / 10)); echo $((t > 50 ? t : 50)); }
at_most_qdisc() { [[ $dd =~ ^[0-9]+$ && $qd =~ ^[0-9]+$ ]] && ((dd <= qd + $(slack))); }
nt_check "shape.udp_tx_dropped-<=-qdisc-drops+max(50,10%)" at_most_qdisc ||
	nt_info "A's udp_tx_dropped +${dd:-?}, wanted <= ${qd:-?} + $(slack)"
# And the refused frames are counted at all (at least half the qdisc's count).
counted() { [[ $dd =~ ^[0-9]+$ && $qd =~ ^[0-9]+$ ]] && ((dd * 2 >= qd)); }
nt_check "shape.udp_tx_dropped->=-half-the-qdisc-drops" counted || true
# The frames after a refused one reach the qdisc too: what it sent and dropped adds up to at
# least 90% of what A gave its packet socket (a refusal once ended the batch unseen).
offered() { [[ $dp =~ ^[0-9]+$ && $qd =~ ^[0-9]+$ && $qk =~ ^[0-9]+$ ]] && (((qk + qd) * 10 >= dp * 9)); }
nt_check "shape.qdisc-saw->=90%-of-the-packet-socket-frames" offered ||
	nt_info "the qdisc sent and dropped $((${qk:-0} + ${qd:-0})) of ${dp:-?}"
nt_check shape.remove-the-shaper tc -n "$NT_NS_A" qdisc del dev "$NT_VETH_A" root || true
nt_check shape.tunnel-up-afterwards nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10 || true

# --- 7. The default: A restarted without SOLOWG_PACKET_TX (removed from its environment):
# the same GSO refusal, but every datagram through the UDP socket, and not a word about a
# packet socket in its log.
restart_a() {
	nt_stop_daemon "$NT_IF_A" || return 1
	NT_WRAP=(env -u SOLOWG_PACKET_TX "${INJECT[@]}")
	nt_start_daemon "$U" "$NT_NS_A" "$NT_IF_A" || return 1
	NT_WRAP=()
	nt_config_iface "$NT_NS_A" "$NT_IF_A" pa "$NT_PORT_A" &&
		nt_config_peer "$NT_NS_A" "$NT_IF_A" "$(nt_pub pb)" "$NT_IN4_B/32" "$NT_OUT4_B:$NT_PORT_B" &&
		nt_iface_up "$NT_NS_A" "$NT_IF_A" "$NT_IN4_A" "$NT_IN6_A" &&
		nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10
}
NT_WRAP=()
nt_check off.restart-A-without-SOLOWG_PACKET_TX restart_a || true
iperf_check iperf3-10M.A-to-B.packet-tx-off "$MB10" -n 10M || true
c=$(nt_counters "$NT_IF_A") || c=
nt_info "A's counters: $c"
pkt=$(nt_stats_field "$c" packet_tx_datagrams)
udp=$(nt_stats_field "$c" udp_tx_datagrams)
# The restarted A's part of the log: after the last start line nt_start_daemon wrote.
last_run_log() { awk '/^===== / { n = 0; delete l; next } { l[++n] = $0 } END { for (i = 1; i <= n; i++) print l[i] }' "$LOG_A"; }
# It ran without GSO, so the packet path would have been taken had it been on.
off_gso_logged() { last_run_log | grep -q 'UDP GSO unavailable'; }
nt_check off.GSO-refused-logged-by-the-restarted-A off_gso_logged || true
packet_socket_lines() { last_run_log | grep -Ei 'packet[ _-]?socket' || true; }
off_silent() { [[ -z $(packet_socket_lines) ]]; }
nt_check off.nothing-logged-about-a-packet-socket off_silent ||
	nt_info "the restarted A logged: $(packet_socket_lines | head -n 3 | tr '\n' '|')"
off_ok() { [[ $pkt == 0 && ${udp:-0} -gt 3000 ]]; }
nt_check off.packet-tx-datagrams-stays-0 off_ok || nt_info "packet_tx_datagrams=${pkt:-missing} udp_tx_datagrams=${udp:-missing}"
nt_summary
