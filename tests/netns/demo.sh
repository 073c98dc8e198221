#!/usr/bin/env bash
# solowg demo: two network namespaces, a solowg daemon in each on a built-in
# configuration with freshly generated keys, then handshake, ping, a short
# iperf3 run and `wg show`, narrated step by step. Everything is torn down at
# the end (or on Ctrl-C). Takes well under a minute.
#   usage: demo.sh            (DEMO_IMPL=wireguard-go|boringtun to compare;
#                              SKIP_BUILD=1 to use an existing binary)
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

IMPL=${DEMO_IMPL:-solowg}
DEMO_SECONDS=${DEMO_SECONDS:-3}
step=0
say() {
	step=$((step + 1))
	printf '\n[%d] %s\n' "$step" "$*"
}
fail() {
	printf '\nDEMO FAILED: %s\n' "$*"
	exit 1
}

if [[ $IMPL == solowg && ${SKIP_BUILD:-0} != 1 ]]; then
	say "Building solowg (.ci/build)"
	(cd "$NT_REPO_ROOT" && .ci/build --quiet) || fail "build failed"
fi

nt_setup
nt_require_tools iperf3 jq
nt_require_impl "$IMPL"
bin=$(nt_impl_bin "$IMPL")

say "Creating namespaces $NT_NS_A and $NT_NS_B, joined by a veth pair"
nt_make_netns || fail "could not create the namespaces"
printf '    %-14s outer %s, %s\n' "$NT_NS_A" "$NT_OUT4_A" "$NT_OUT6_A" "$NT_NS_B" "$NT_OUT4_B" "$NT_OUT6_B"

say "Starting one $IMPL daemon per namespace ($bin)"
nt_start_daemon "$IMPL" "$NT_NS_A" "$NT_IF_A" || fail "daemon in $NT_NS_A did not start"
nt_start_daemon "$IMPL" "$NT_NS_B" "$NT_IF_B" || fail "daemon in $NT_NS_B did not start"
printf '    %s: interface %s, pid %s, UAPI %s\n' \
	"$NT_NS_A" "$NT_IF_A" "$(nt_daemon_os_pid "$NT_IF_A")" "$NT_SOCK_DIR/$NT_IF_A.sock" \
	"$NT_NS_B" "$NT_IF_B" "$(nt_daemon_os_pid "$NT_IF_B")" "$NT_SOCK_DIR/$NT_IF_B.sock"

say "Generating keys and configuring both sides with wg(8)"
nt_genkey a
nt_genkey b
{
	nt_config_iface "$NT_NS_A" "$NT_IF_A" a "$NT_PORT_A" &&
		nt_config_iface "$NT_NS_B" "$NT_IF_B" b "$NT_PORT_B" &&
		nt_config_peer "$NT_NS_A" "$NT_IF_A" "$(nt_pub b)" "$NT_IN4_B/32,$NT_IN6_B/128" "$NT_OUT4_B:$NT_PORT_B" &&
		nt_config_peer "$NT_NS_B" "$NT_IF_B" "$(nt_pub a)" "$NT_IN4_A/32,$NT_IN6_A/128" &&
		nt_iface_up "$NT_NS_A" "$NT_IF_A" "$NT_IN4_A" "$NT_IN6_A" &&
		nt_iface_up "$NT_NS_B" "$NT_IF_B" "$NT_IN4_B" "$NT_IN6_B"
} || fail "configuration failed"
printf '    A %s  tunnel %s, %s  listens on :%s, peer endpoint %s:%s\n' \
	"$(nt_pub a)" "$NT_IN4_A" "$NT_IN6_A" "$NT_PORT_A" "$NT_OUT4_B" "$NT_PORT_B"
printf '    B %s  tunnel %s, %s  listens on :%s, waits to be contacted\n' \
	"$(nt_pub b)" "$NT_IN4_B" "$NT_IN6_B" "$NT_PORT_B"

say "Handshake: A sends the first packet to B through the tunnel"
t0=$(nt_now_ms)
nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10 || fail "no reply through the tunnel within 10 s"
t1=$(nt_now_ms)
printf '    first reply through the tunnel after %d ms (handshake included)\n' $((t1 - t0))
if nt_has_faithful_uapi "$IMPL"; then
	hs=$(nt_peer_field "$NT_NS_A" "$NT_IF_A" 5)
	printf '    latest handshake on A: %s (unix %s)\n' "$(date -d "@$hs" '+%F %T')" "$hs"
fi

say "Ping through the tunnel (IPv4 and IPv6, 5 packets each)"
rtt4=$(nt_ping_rtt "$NT_NS_A" "$NT_IN4_B")
rtt6=$(nt_ping_rtt "$NT_NS_A" "$NT_IN6_B")
[[ -n $rtt4 && -n $rtt6 ]] || fail "ping failed"
printf '    %s -> %s: average RTT %s ms\n' "$NT_IN4_A" "$NT_IN4_B" "$rtt4" "$NT_IN6_A" "$NT_IN6_B" "$rtt6"

say "Throughput: iperf3 TCP for $DEMO_SECONDS s from A to B through the tunnel"
nt_iperf "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" -t "$DEMO_SECONDS" || fail "iperf3 failed"
printf '    %s Mbit/s (%s bytes received)\n' "$NT_IPERF_MBPS" "$NT_IPERF_RECV"

say "wg show on both sides"
for side in A B; do
	if [[ $side == A ]]; then ns=$NT_NS_A ifname=$NT_IF_A; else ns=$NT_NS_B ifname=$NT_IF_B; fi
	printf -- '--- %s (%s)\n' "$ns" "$side"
	nt_wg "$ns" show "$ifname" | sed 's/^/    /'
done

say "Stopping the daemons and removing the namespaces"
for ifname in "$NT_IF_A" "$NT_IF_B"; do
	nt_stop_daemon "$ifname" || fail "daemon for $ifname did not exit cleanly on SIGTERM"
done
printf '\nDemo finished: %s <-> %s, handshake+first reply %d ms, RTT %s ms, %s Mbit/s.\n' \
	"$IMPL" "$IMPL" $((t1 - t0)) "$rtt4" "$NT_IPERF_MBPS"
