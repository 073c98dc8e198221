#!/usr/bin/env bash
# OpenWrt mode end to end, with the real parts: the configuration is written by the real
# `uci` CLI (built from libuci's sources, tests/uci/build-uci.sh), the daemon runs as
# `solowg --uci` and registers its object with a real ubus broker (ubusd), and every call
# goes through the ubus CLI. A's peer B is a plain solowg configured with `wg`.
# What netifd would do with the `up` reply (addresses, link up) is done here with `ip`.
#   usage: openwrt.sh        env: SOLOWG_UCI_BIN, SOLOWG_UBUSD, SOLOWG_UBUS_CLIENT
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

UCI=${SOLOWG_UCI_BIN:-uci}
UBUSD=${SOLOWG_UBUSD:-ubusd}
UBUS=${SOLOWG_UBUS_CLIENT:-ubus-client}

nt_setup
nt_require_tools iperf3 jq busybox dnsmasq "$UCI" "$UBUSD" "$UBUS"
nt_require_impl solowg
nt_make_netns || nt_die "could not build the namespaces"
SOLOWG=$(nt_impl_bin solowg)

CFG=$NT_TMP/config
SAVE=$NT_TMP/uci-save
SOCK=$NT_TMP/ubus.sock
mkdir -p "$CFG" "$SAVE"
: >"$CFG/network"
IF=$NT_IF_A
uci_() { "$UCI" -c "$CFG" -t "$SAVE" "$@"; }
ubus_() { timeout 15 "$UBUS" -s "$SOCK" -t 10 "$@"; }

nt_genkey a
nt_genkey b
nt_genkey c
# A, managed, from UCI: peer B with a description containing a quote.
uci_ set "network.$IF=interface"
uci_ set "network.$IF.proto=solowg"
uci_ set "network.$IF.private_key=$(cat "$NT_TMP/a.key")"
uci_ set "network.$IF.listen_port=$NT_PORT_A"
uci_ add_list "network.$IF.addresses=$NT_IN4_A/24"
uci_ set "network.peerb=solowg_$IF"
uci_ set "network.peerb.public_key=$(nt_pub b)"
uci_ set "network.peerb.description=B's side"
uci_ add_list "network.peerb.allowed_ips=$NT_IN4_B/32"
# A host name: DNS is down when the interface comes up, and up later (see below).
uci_ set "network.peerb.endpoint_host=peer-b.test"
uci_ set "network.peerb.endpoint_port=$NT_PORT_B"
uci_ set "network.peerb.route_allowed_ips=1"
uci_ commit network

# A's resolver: `ip netns exec` puts this file over /etc/resolv.conf inside A's namespace.
mkdir -p "/etc/netns/$NT_NS_A"
echo "nameserver $NT_OUT4_B" >"/etc/netns/$NT_NS_A/resolv.conf"

ubusd_start() {
	ip netns exec "$NT_NS_A" timeout 300 "$UBUSD" --socket="$SOCK" >>"$NT_TMP/ubusd.log" 2>&1 &
	UBUSD_PID=$!
	NT_BG_PIDS+=("$UBUSD_PID")
	nt_wait_until 5 test -S "$SOCK"
}
nt_check ubusd.start ubusd_start || nt_die "ubusd did not start"

UBUS_SOCKET=$SOCK LOG_LEVEL=verbose ip netns exec "$NT_NS_A" timeout -k 5 "$NT_DAEMON_MAX_S" \
	"$SOLOWG" --uci --config-dir "$CFG" --uci-bin "$UCI" >>"$NT_TMP/solowg-uci.log" 2>&1 &
DPID=$!
NT_BG_PIDS+=("$DPID")
NT_IFACES+=("$IF" "${IF}n" "${IF}x")
object_there() { ubus_ list solowg 2>/dev/null | grep -q solowg; }
nt_check uci.object-registered nt_wait_until 10 object_there || nt_die "no ubus object"

# netifd's side: our protocol handler (files/solowg.sh) run as netifd would run it, with
# the real jshn, busybox ash (OpenWrt's shell) and the real ubus CLI (as `ubus`), and a stand-in of netifd's handler
# library that records what the handler announces (tests/netns/netifd-standin.sh).
mkdir -p "$NT_TMP/bin"
ln -sf "$(command -v "$UBUS")" "$NT_TMP/bin/ubus"
JSHN_DIR=$(dirname "$(command -v "$UCI")")
# shellcheck disable=SC2016 # the inner script's $1.. are its own arguments
handler() { # handler ACTION IFACE: runs proto_solowg_ACTION, returns the recorded lines
	: >"$NT_TMP/netifd.log"
	ip netns exec "$NT_NS_A" env PATH="$NT_TMP/bin:$JSHN_DIR:$PATH" UBUS_SOCKET="$SOCK" \
		NETIFD_LOG="$NT_TMP/netifd.log" INCLUDE_ONLY=1 timeout 30 busybox sh -c '
		. "$1/jshn.sh"; . "$2/netifd-standin.sh"; . "$3/files/solowg.sh"
		proto_solowg_$4 "$5"' sh "$JSHN_DIR" "$here" "$here/../.." "$1" "$2" || true
	cat "$NT_TMP/netifd.log"
}
[[ -x $JSHN_DIR/jshn ]] || nt_die "jshn not built next to $UCI (tests/uci/build-uci.sh needs libjson-c-dev)"
ann=$(handler setup "$IF")
printf '%s\n' "$ann" >"$NT_TMP/announce.log"
announced() { grep -qxF -- "$1" <<<"$ann"; }
setup_ok() {
	announced "proto_init_update $IF 1" &&
		announced "proto_add_ipv4_address $NT_IN4_A 24" &&
		announced "proto_add_ipv4_route $NT_IN4_B 32" &&
		announced "proto_send_update $IF" &&
		! grep -q proto_notify_error <<<"$ann" &&
		nt_link_exists "$NT_NS_A" "$IF" && nt_sock_exists "$IF"
}
nt_check netifd.setup-announces-addresses-routes-hostdeps setup_ok || true
# What netifd does with the announcement: claim the device (up) and add what was announced.
ip -n "$NT_NS_A" link set "$IF" up
while read -r what addr mask _; do
	case $what in
	proto_add_ipv4_address) ip -n "$NT_NS_A" addr add "$addr/$mask" dev "$IF" ;;
	proto_add_ipv4_route) ip -n "$NT_NS_A" route replace "$addr/$mask" dev "$IF" ;;
	esac
done <<<"$ann"

# B: plain solowg, waits to be contacted.
nt_check start.B nt_start_daemon solowg "$NT_NS_B" "$NT_IF_B" || nt_die "B did not start"
nt_config_iface "$NT_NS_B" "$NT_IF_B" b "$NT_PORT_B"
nt_config_peer "$NT_NS_B" "$NT_IF_B" "$(nt_pub a)" "$NT_IN4_A/32" ""
nt_iface_up "$NT_NS_B" "$NT_IF_B" "$NT_IN4_B" "$NT_IN6_B"

timeout 60 "$UBUS" -s "$SOCK" listen 'solowg.*' >"$NT_TMP/events.log" 2>&1 &
NT_BG_PIDS+=("$!")
sleep 0.3
# No DNS server yet: the interface is up (above) and nothing reaches B.
unresolved() {
	nt_link_exists "$NT_NS_A" "$IF" && ! nt_ping_ok "$NT_NS_A" "$NT_IN4_B" &&
		ubus_ call solowg status | jq -e '.interfaces[0].peers[0].endpoint == ""' >/dev/null
}
nt_check dns.down-at-start-does-not-block-the-interface unresolved || true
ip netns exec "$NT_NS_B" timeout 120 dnsmasq -k -u root --no-resolv --no-hosts --bind-interfaces \
	--listen-address="$NT_OUT4_B" --address="/peer-b.test/$NT_OUT4_B" --pid-file= \
	>>"$NT_TMP/dnsmasq.log" 2>&1 &
NT_BG_PIDS+=("$!")
nt_check dns.name-resolved-after-dns-comes-up nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 25 || true

status() { ubus_ call solowg status; }
peer_hs() { status | jq -r ".interfaces[] | select(.name==\"$IF\") | .peers[] | select(.public_key==\"$1\") | .latest_handshake"; }
b_hs() { ip netns exec "$NT_NS_B" wg show "$NT_IF_B" latest-handshakes | awk '{print $2}'; }
status_ok() {
	local s
	s=$(status) || return 1
	printf '%s\n' "$s" >"$NT_TMP/status.json"
	jq -e ".interfaces[0].name == \"$IF\" and .interfaces[0].public_key == \"$(nt_pub a)\"
		and .interfaces[0].listen_port == $NT_PORT_A
		and (.interfaces[0].peers[0] | .description == \"B's side\" and .latest_handshake > 0
			and .endpoint == \"$NT_OUT4_B:$NT_PORT_B\" and .endpoint_host == \"peer-b.test\"
			and .rx_bytes > 0 and .preshared_key == false and .allowed_ips == [\"$NT_IN4_B/32\"])
		and (.interfaces[0].drops | type == \"object\")" <<<"$s" >/dev/null
}
nt_check uci.status-shows-peer status_ok || true
no_secrets() {
	! grep -qF -- "$(cat "$NT_TMP/a.key")" "$NT_TMP/status.json" "$NT_TMP/announce.log" \
		"$NT_TMP/solowg-uci.log" "$NT_TMP/events.log"
}
nt_check uci.no-private-key-in-ubus-or-log no_secrets || true
event_seen() { grep -q 'solowg.handshake' "$NT_TMP/events.log"; }
nt_check uci.handshake-event nt_wait_until 5 event_seen || true

# Live reload: add a peer and change B's description and allowed IPs. B's session must
# stay (same handshake time on both sides) and traffic keep flowing.
hs_a=$(peer_hs "$(nt_pub b)")
hs_b=$(b_hs)
uci_ set "network.peerb.description=renamed"
uci_ add_list "network.peerb.allowed_ips=10.202.9.0/24"
uci_ set "network.peerc=solowg_$IF"
uci_ set "network.peerc.public_key=$(nt_pub c)"
uci_ add_list "network.peerc.allowed_ips=10.202.7.3/32"
uci_ commit network
reload=$(ubus_ call solowg reload || true)
reload_ok() {
	jq -e "(.errors | length) == 0 and .interfaces == [\"$IF\"]" <<<"$reload" >/dev/null &&
		status | jq -e ".interfaces[0].peers | length == 2" >/dev/null &&
		status | jq -e ".interfaces[0].peers[] | select(.public_key==\"$(nt_pub b)\")
			| .description == \"renamed\" and (.allowed_ips | index(\"10.202.9.0/24\"))" >/dev/null
}
nt_check uci.reload-applies-changes reload_ok || true
session_kept() {
	nt_ping_ok "$NT_NS_A" "$NT_IN4_B" &&
		[[ $(peer_hs "$(nt_pub b)") == "$hs_a" && $(b_hs) == "$hs_b" ]]
}
nt_check uci.reload-keeps-unchanged-session session_kept || true

# A bad section is reported by name and option and skipped; the rest keeps working.
uci_ set "network.peerc.public_key=not-a-key"
uci_ commit network
reload=$(ubus_ call solowg reload || true)
printf '%s\n' "$reload" >"$NT_TMP/reload-bad.json"
bad_reported() {
	jq -r '.errors[]' <<<"$reload" | grep -q 'peerc.*public_key' &&
		status | jq -e '.interfaces[0].peers | length == 1' >/dev/null &&
		nt_ping_ok "$NT_NS_A" "$NT_IN4_B"
}
nt_check uci.bad-peer-reported-and-skipped bad_reported || true
uci_ delete network.peerc
uci_ commit network

# Keys for LuCI without wireguard-tools.
keys_ok() {
	local g p
	g=$(ubus_ call solowg genkey) || return 1
	p=$(ubus_ call solowg pubkey "{\"private_key\":\"$(jq -r .private_key <<<"$g")\",\"ubus_rpc_session\":\"x\"}") || return 1
	[[ $(jq -r .public_key <<<"$p") == "$(jq -r .private_key <<<"$g" | wg pubkey)" ]] &&
		[[ $(jq -r .public_key <<<"$g") == "$(jq -r .public_key <<<"$p")" ]] &&
		[[ $(ubus_ call solowg genpsk | jq -r .preshared_key | base64 -d | wc -c) -eq 32 ]]
}
nt_check uci.genkey-pubkey-genpsk keys_ok || true

# private_key 'generate': created, saved through uci, and the same after a reload.
uci_ set "network.${IF}n=interface"
uci_ set "network.${IF}n.proto=solowg"
uci_ set "network.${IF}n.private_key=generate"
uci_ commit network
gen_ok() {
	local r k
	r=$(ubus_ call solowg up "{\"interface\":\"${IF}n\"}") || return 1
	[[ $(jq -r '.error // empty' <<<"$r") == "" ]] || return 1
	k=$(uci_ get "network.${IF}n.private_key") || return 1
	[[ ${#k} -eq 44 ]] &&
		status | jq -e ".interfaces[] | select(.name==\"${IF}n\") | .public_key == \"$(wg pubkey <<<"$k")\"" >/dev/null
}
nt_check uci.private-key-generated-and-saved gen_ok || true
handler teardown "${IF}n" >/dev/null
down_ok() { nt_sock_gone "${IF}n" && ! nt_link_exists "$NT_NS_A" "${IF}n"; }
nt_check netifd.teardown-removes-interface nt_wait_until 3 down_ok || true

# A fatal configuration error: reported to netifd, and no restart loop.
uci_ set "network.${IF}x=interface"
uci_ set "network.${IF}x.proto=solowg"
uci_ set "network.${IF}x.private_key=bad"
uci_ commit network
bad=$(handler setup "${IF}x")
printf '%s\n' "$bad" >"$NT_TMP/announce-bad.log"
fatal_ok() {
	grep -q "^proto_notify_error ${IF}x CONFIG_ERROR .*private_key" <<<"$bad" &&
		grep -qx "proto_block_restart ${IF}x" <<<"$bad" &&
		grep -qx "proto_setup_failed ${IF}x" <<<"$bad" &&
		! nt_link_exists "$NT_NS_A" "${IF}x"
}
nt_check netifd.bad-key-error-and-no-restart fatal_ok || true
# shellcheck disable=SC2016
init_ok() {
	: >"$NT_TMP/netifd.log"
	NETIFD_LOG="$NT_TMP/netifd.log" INCLUDE_ONLY=1 busybox sh -c '
		. "$1/netifd-standin.sh"; . "$2/files/solowg.sh"; proto_solowg_init_config
		echo "flags $available $no_device $no_proto_task" >>"$NETIFD_LOG"' sh "$here" "$here/../.." &&
		grep -qx "flags 1 1 1" "$NT_TMP/netifd.log" &&
		grep -qx "config string private_key" "$NT_TMP/netifd.log" &&
		grep -qx "config array addresses" "$NT_TMP/netifd.log"
}
nt_check netifd.init-config init_ok || true

# The broker restarts: the daemon reconnects and registers its object again.
nt_stop_job "$UBUSD_PID"
rm -f "$SOCK"
nt_check ubusd.restart ubusd_start || true
nt_check uci.object-back-after-broker-restart nt_wait_until 15 object_there || true
nt_check uci.tunnel-survived-broker-restart nt_ping_ok "$NT_NS_A" "$NT_IN4_B" || true

# SIGTERM: gone within a second, with its sockets.
term_ok() {
	kill -TERM "$DPID"
	nt_wait_until 1 nt_pid_gone "$DPID" && nt_wait_until 2 nt_sock_gone "$IF"
}
nt_check uci.sigterm-exit-within-1s term_ok || true
nt_summary
