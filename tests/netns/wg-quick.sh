#!/usr/bin/env bash
# wg-quick system test: `wg-quick up` in namespace A with
# WG_QUICK_USERSPACE_IMPLEMENTATION=<IMPL> on a generated config file (this
# kernel has no wireguard module, so wg-quick falls back to the userspace
# daemon, which must daemonize only once its TUN and UAPI socket exist).
# The peer in namespace B runs PEER_IMPL (default wireguard-go) configured
# with wg(8). Ping through, `wg-quick down`, then the daemon must exit and
# its socket disappear within 5 s.
#   usage: wg-quick.sh IMPL [PEER_IMPL]
# Prints one PASS/FAIL line per check and ends with "N passed, M failed".
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

if [[ $# -lt 1 || $# -gt 2 ]]; then
	echo "usage: $0 IMPL [PEER_IMPL]   (solowg | wireguard-go | boringtun)" >&2
	exit 2
fi
IMPL=$1
PEER=${2:-wireguard-go}

nt_setup
nt_require_tools wg-quick
nt_require_impl "$IMPL" "$PEER"
nt_info "wg-quick with $IMPL ($NT_NS_A/$NT_IF_A) <-> $PEER ($NT_NS_B/$NT_IF_B)"
nt_make_netns || nt_die "could not build the namespaces"

abort() {
	nt_info "aborting: $1"
	nt_summary || true
	exit 1
}

# Peer side, configured with wg(8); it waits to be contacted (no endpoint).
nt_check "wg-quick.peer-start.$PEER" nt_start_daemon "$PEER" "$NT_NS_B" "$NT_IF_B" || abort "peer did not start"
nt_genkey a
nt_genkey b
{
	nt_config_iface "$NT_NS_B" "$NT_IF_B" b "$NT_PORT_B" &&
		nt_config_peer "$NT_NS_B" "$NT_IF_B" "$(nt_pub a)" "$NT_IN4_A/32,$NT_IN6_A/128" &&
		nt_iface_up "$NT_NS_B" "$NT_IF_B" "$NT_IN4_B" "$NT_IN6_B"
} || abort "peer configuration failed"

# wg-quick derives the interface name from the file name.
conf="$NT_TMP/$NT_IF_A.conf"
(
	umask 077
	cat >"$conf" <<CONF
[Interface]
PrivateKey = $(cat "$NT_TMP/a.key")
ListenPort = $NT_PORT_A
Address = $NT_IN4_A/24, $NT_IN6_A/64

[Peer]
PublicKey = $(nt_pub b)
AllowedIPs = $NT_IN4_B/32, $NT_IN6_B/128
Endpoint = $NT_OUT4_B:$NT_PORT_B
CONF
)
NT_IFACES+=("$NT_IF_A")

# wg-quick wants a bare command or path (no arguments). WG_SUDO/WG_LOG_FILE
# are boringtun's environment spellings of --disable-drop-privileges/--log.
# Output goes to a file, never a pipe: the daemon inherits it and lives on.
wg_quick() {
	WG_QUICK_USERSPACE_IMPLEMENTATION=$(nt_impl_bin "$IMPL") \
		WG_SUDO=true WG_LOG_FILE="$NT_TMP/daemon-$NT_IF_A-$IMPL.log" LOG_LEVEL=verbose \
		ip netns exec "$NT_NS_A" timeout 30 wg-quick "$1" "$conf" >>"$NT_TMP/wg-quick.log" 2>&1
}

nt_check wg-quick.up wg_quick up || abort "wg-quick up failed"

# Namespace A held no process before: whatever runs there now is the daemon
# that wg-quick started.
mapfile -t daemon_pids < <(ip netns pids "$NT_NS_A")
if [[ ${#daemon_pids[@]} -gt 0 ]]; then
	nt_pass wg-quick.daemon-running "pid ${daemon_pids[*]}: $(cat "/proc/${daemon_pids[0]}/comm" 2>/dev/null || echo '?')"
else
	nt_fail wg-quick.daemon-running "no process left in $NT_NS_A"
fi

link_up_1420() {
	local line
	line=$(ip -n "$NT_NS_A" -o link show dev "$NT_IF_A") || return 1
	[[ $line == *" mtu 1420 "* && $line == *"<"*UP*">"* ]]
}
nt_check wg-quick.link-up-mtu1420 link_up_1420 || true
nt_check wg-quick.socket-exists nt_sock_exists "$NT_IF_A" || true
nt_check wg-quick.ping4 nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10 || true
nt_check wg-quick.ping6 nt_wait_ping "$NT_NS_A" "$NT_IN6_B" 5 || true
if nt_has_faithful_uapi "$IMPL"; then
	nt_check "wg-quick.wg-show.$IMPL" nt_wg_stats_ok "$NT_NS_A" "$NT_IF_A" || true
fi
if nt_has_faithful_uapi "$PEER"; then
	nt_check "wg-quick.wg-show.peer-$PEER" nt_wg_stats_ok "$NT_NS_B" "$NT_IF_B" || true
fi

nt_check wg-quick.down wg_quick down || true

all_gone() {
	local pid
	for pid in "$@"; do
		kill -0 "$pid" 2>/dev/null && return 1
	done
	return 0
}
nt_check wg-quick.daemon-exited nt_wait_until 5 all_gone "${daemon_pids[@]}" || true
nt_check wg-quick.socket-removed nt_wait_until 5 nt_sock_gone "$NT_IF_A" || true
link_gone() { ! nt_link_exists "$NT_NS_A" "$NT_IF_A"; }
nt_check wg-quick.link-removed link_gone || true

nt_summary
