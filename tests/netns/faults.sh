#!/usr/bin/env bash
# Faults a router sees, injected under traffic, and the secrets check.
#
# Router A runs `solowg --uci` (managed mode, as openwrt.sh: its own ubusd, /etc/config
# written by the real `uci` CLI, interfaces brought up through our netifd handler under
# busybox with the real jshn). Its interface has two peers: B (namespace B) and C (a third
# namespace behind A), both plain `solowg -f` daemons configured with wg(8), every peer with
# a preshared key. When setpriv is there, A's daemon runs with CAP_NET_ADMIN as its only
# capability, as procd can start it.
#
# Checks, in order: reload x4 during an iperf3 transfer (peers added/changed/removed
# meanwhile) without resetting the stream; a peer removed mid-transfer (by reload, and by
# `wg set ... remove`), the other served, the peer re-added; network file truncated
# mid-quote / binary garbage / deleted before reload (error names the file, old config
# kept, traffic flows); listen port in use at `up` and fixed; the UAPI socket flooded with
# connections, slow and oversized requests while iperf3 runs (throughput and ping RTT);
# the TUN deleted under the managed daemon and brought back with `up`; every output
# surface grepped for the keys (base64 and hex); socket/directory modes; SIGTERM under load.
#   usage: faults.sh        env: SOLOWG_UCI_BIN, SOLOWG_UBUSD, SOLOWG_UBUS_CLIENT
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

nt_openwrt_setup python3 unshare
mkdir -p "$NT_TMP/surface"
SURF=$NT_TMP/surface # every output that must not hold a secret

# Namespace C hangs off A by its own veth.
NT_NS_C="swg-$NT_ID-c"
NT_IF_C="wg${NT_ID}c"
IF_P="${NT_IF_A}p" # the interface of the port-in-use check
NT_PORT_C=51822
PORT_P=51830
OUT4_AC=10.201.1.1
OUT4_C=10.201.1.2
IN4_C=10.202.0.3
NT_IFACES+=("$NT_IF_A" "$IF_P")
ip netns add "$NT_NS_C" || nt_die "netns C"
NT_NAMESPACES+=("$NT_NS_C")
ip -n "$NT_NS_C" link set lo up
ip -n "$NT_NS_A" link add vc type veth peer name va netns "$NT_NS_C"
ip -n "$NT_NS_A" addr add "$OUT4_AC/24" dev vc
ip -n "$NT_NS_C" addr add "$OUT4_C/24" dev va
ip -n "$NT_NS_A" link set vc up
ip -n "$NT_NS_C" link set va up
nt_wait_until 5 nt_ping_ok "$NT_NS_A" "$OUT4_C" || nt_die "veth A-C"

CFG=$NT_TMP/a/config
SOCK=$NT_TMP/a/ubus.sock
NETFILE=$CFG/network
uci_() { "$UCI" -c "$CFG" -t "$NT_TMP/a/save" "$@"; }
N=0
# ubus_ ARGS...: one bounded ubus CLI call on A's broker; the reply is also kept as a surface.
ubus_() {
	N=$((N + 1))
	ip netns exec "$NT_NS_A" timeout 15 "$UBUS" -s "$SOCK" -t 10 "$@" | tee "$SURF/ubus-$N.json"
}
status() { ubus_ call solowg status; }
reload() { ubus_ call solowg reload || true; }
peer_of() { # peer_of PUBKEY FIELD (on A's interface)
	status | jq -r ".interfaces[] | select(.name==\"$NT_IF_A\") | .peers[] |
		select(.public_key==\"$1\") | .$2"
}
npeers() { status | jq -r ".interfaces[] | select(.name==\"$NT_IF_A\") | .peers | length"; }

for k in a b c d p; do nt_genkey $k; done
(
	umask 077
	wg genpsk >"$NT_TMP/psk-b"
	wg genpsk >"$NT_TMP/psk-c"
)

# --- B and C: plain daemons, configured with wg(8)
plain_peer() { # NS IF KEY PORT INNER PSKFILE
	nt_start_daemon solowg "$1" "$2" &&
		nt_config_iface "$1" "$2" "$3" "$4" &&
		nt_wg "$1" set "$2" peer "$(nt_pub a)" allowed-ips "$NT_IN4_A/32" preshared-key "$6" &&
		ip -n "$1" addr add "$5/24" dev "$2" && ip -n "$1" link set "$2" up
}
nt_check b.plain-daemon plain_peer "$NT_NS_B" "$NT_IF_B" b "$NT_PORT_B" "$NT_IN4_B" "$NT_TMP/psk-b" ||
	nt_die "B did not start"
nt_check c.plain-daemon plain_peer "$NT_NS_C" "$NT_IF_C" c "$NT_PORT_C" "$IN4_C" "$NT_TMP/psk-c" ||
	nt_die "C did not start"

# --- A: UCI. peerc first, then peerb: the truncation below cuts into peerb's allowed_ips.
mkdir -p "$CFG" "$NT_TMP/a/save"
: >"$NETFILE"
uci_ set "network.$NT_IF_A=interface"
uci_ set "network.$NT_IF_A.proto=solowg"
uci_ set "network.$NT_IF_A.private_key=$(cat "$NT_TMP/a.key")"
uci_ set "network.$NT_IF_A.listen_port=$NT_PORT_A"
uci_ add_list "network.$NT_IF_A.addresses=$NT_IN4_A/24"
add_peerc() {
	uci_ set "network.peerc=solowg_$NT_IF_A"
	uci_ set "network.peerc.public_key=$(nt_pub c)"
	uci_ set "network.peerc.preshared_key=$(cat "$NT_TMP/psk-c")"
	uci_ set "network.peerc.endpoint_host=$OUT4_C"
	uci_ set "network.peerc.endpoint_port=$NT_PORT_C"
	uci_ add_list "network.peerc.allowed_ips=$IN4_C/32"
	uci_ commit network
}
add_peerc
uci_ set "network.peerb=solowg_$NT_IF_A"
uci_ set "network.peerb.public_key=$(nt_pub b)"
uci_ set "network.peerb.preshared_key=$(cat "$NT_TMP/psk-b")"
uci_ set "network.peerb.endpoint_host=$NT_OUT4_B"
uci_ set "network.peerb.endpoint_port=$NT_PORT_B"
uci_ add_list "network.peerb.allowed_ips=$NT_IN4_B/32"
uci_ commit network

CAPS=()
if command -v setpriv >/dev/null; then
	# Only CAP_NET_ADMIN in the bounding set: root's exec then gets nothing else.
	CAPS=(setpriv "--bounding-set=-all,+net_admin" "--inh-caps=-all" --)
fi
ip netns exec "$NT_NS_A" timeout 600 "$UBUSD" --socket="$SOCK" >>"$NT_TMP/ubusd.log" 2>&1 &
NT_BG_PIDS+=("$!")
nt_wait_until 5 test -S "$SOCK" || nt_die "ubusd did not start"
# Run as root (with CAP_NET_ADMIN alone), reading the configuration directory itself; the
# handler's `solowg export` (this wrapper) still saves generated keys.
# shellcheck disable=SC2016 # $1 and $@ are the wrapper's own
printf '#!/bin/sh\n[ "$1" = export ] && shift\nexec "%s" export --config-dir "%s" --uci-bin "%s" --to "%s" "$@"\n' \
	"$SOLOWG" "$CFG" "$UCI" "$NT_TMP/a/run" >"$NT_TMP/bin/solowg"
chmod +x "$NT_TMP/bin/solowg"
UBUS_SOCKET=$SOCK LOG_LEVEL=verbose ip netns exec "$NT_NS_A" "${CAPS[@]}" timeout -k 5 "$NT_DAEMON_MAX_S" \
	"$SOLOWG" --uci --config-dir "$CFG" --state-file "$NT_TMP/a/state" >>"$NT_TMP/solowg-a.log" 2>&1 &
DPID=$!
NT_BG_PIDS+=("$DPID")
object_there() { ip netns exec "$NT_NS_A" timeout 5 "$UBUS" -s "$SOCK" -t 3 list solowg 2>/dev/null | grep -q solowg; }
nt_check a.managed-daemon-registered nt_wait_until 10 object_there || nt_die "no ubus object"
daemon_pid() { pgrep -P "$DPID" solowg; }
APID=$(daemon_pid)
timeout 600 "$UBUS" -s "$SOCK" listen 'solowg.*' >"$SURF/events.log" 2>&1 &
NT_BG_PIDS+=("$!")

# handler ACTION IFACE: proto_solowg_ACTION as netifd runs it; prints what it announced.
# shellcheck disable=SC2016 # the inner script's $1.. are its own arguments
handler() {
	: >"$NT_TMP/netifd.log"
	ip netns exec "$NT_NS_A" env PATH="$NT_TMP/bin:$JSHN_DIR:$PATH" UBUS_SOCKET="$SOCK" \
		NETIFD_LOG="$NT_TMP/netifd.log" INCLUDE_ONLY=1 timeout 30 busybox sh -c '
		. "$1/jshn.sh"; . "$2/netifd-standin.sh"; . "$3/files/solowg.sh"
		proto_solowg_$4 "$5"' sh "$JSHN_DIR" "$here" "$here/../.." "$1" "$2" || true
	N=$((N + 1))
	tee "$SURF/announce-$N.log" <"$NT_TMP/netifd.log"
}
# What netifd does with the announcement: link up, addresses.
ifup_a() {
	local ann what addr mask
	ann=$(handler setup "$NT_IF_A")
	grep -qx "proto_send_update $NT_IF_A" <<<"$ann" || return 1
	ip -n "$NT_NS_A" link set "$NT_IF_A" up || return 1
	while read -r what addr mask _; do
		[[ $what == proto_add_ipv4_address ]] && ip -n "$NT_NS_A" addr add "$addr/$mask" dev "$NT_IF_A"
	done <<<"$ann"
	nt_wait_ping "$NT_NS_A" "$NT_IN4_B" 10 && nt_wait_ping "$NT_NS_A" "$IN4_C" 10
}
nt_check a.up-through-handler-reaches-b-and-c ifup_a || nt_die "tunnel A did not come up"

# --- iperf3 in the background: iperf_start NAME CLIENT_NS SERVER_NS ADDR PORT SECS
declare -A IPC=() IPS=()
iperf_start() {
	local name=$1 cns=$2 sns=$3 addr=$4 port=$5 secs=$6
	ip netns exec "$sns" timeout $((secs + 30)) iperf3 -s -1 -B "$addr" -p "$port" \
		>>"$NT_TMP/iperf3-server.log" 2>&1 &
	IPS[$name]=$!
	NT_BG_PIDS+=("$!")
	nt_wait_until 5 nt_listening "$sns" "$port" || return 1
	ip netns exec "$cns" timeout $((secs + 20)) iperf3 -c "$addr" -p "$port" -t "$secs" \
		--connect-timeout 5000 -J >"$NT_TMP/iperf-$name.json" 2>>"$NT_TMP/iperf3-client.log" &
	IPC[$name]=$!
	NT_BG_PIDS+=("$!")
}
# iperf_wait NAME: waits for the client; sets IP_RC IP_SENT IP_RECV IP_RETR IP_MBPS.
iperf_wait() {
	local j=$NT_TMP/iperf-$1.json
	IP_RC=0
	wait "${IPC[$1]}" || IP_RC=$?
	nt_stop_job "${IPS[$1]}"
	IP_SENT=$(jq -r '.end.sum_sent.bytes // 0' "$j" 2>/dev/null || echo 0)
	IP_RECV=$(jq -r '.end.sum_received.bytes // 0' "$j" 2>/dev/null || echo 0)
	IP_RETR=$(jq -r '.end.sum_sent.retransmits // 0' "$j" 2>/dev/null || echo 0)
	IP_MBPS=$(jq -r '.end.sum_received.bits_per_second // 0' "$j" 2>/dev/null |
		awk '{ printf "%d", $1 / 1e6 }' || echo 0)
	nt_info "iperf3 $1: rc=$IP_RC sent=$IP_SENT recv=$IP_RECV retransmits=$IP_RETR $IP_MBPS Mbit/s"
}
# ping_max NS ADDR COUNT: the largest RTT (ms, integer) of COUNT pings 0.2 s apart; 99999 on loss.
ping_max() {
	ip netns exec "$1" timeout 30 ping -c "$3" -i 0.2 -W 1 -q "$2" 2>/dev/null |
		awk -F'/' -v n="$3" '/ received/ { split($0, a, ", "); if (a[2] + 0 != n) lost = 1 }
			/^rtt/ { max = $6 } END { if (lost || max == "") print 99999; else printf "%d\n", max + 0.5 }'
}

# --- baseline: unloaded throughput A->B, and ping RTT during it
iperf_start base "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" 5201 4
BASE_RTT=$(ping_max "$NT_NS_A" "$NT_IN4_B" 15)
iperf_wait base
BASE_MBPS=$IP_MBPS BASE_RECV=$IP_RECV BASE_RETR=$IP_RETR
nt_check "baseline.iperf3 ($BASE_MBPS Mbit/s, max ping RTT under load ${BASE_RTT} ms)" \
	test "$IP_RC" -eq 0 -a "$BASE_MBPS" -gt 0 || true

# --- reload x4 during a transfer, with peers added, changed and removed meanwhile
hs_b=$(peer_of "$(nt_pub b)" latest_handshake)
iperf_start reload "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" 5202 8
reload_errs=0
for step in 1 2 3 4; do
	sleep 1.3
	case $step in
	1) uci_ set "network.peerc.description=changed" ;;
	2) uci_ set "network.peerd=solowg_$NT_IF_A"
	   uci_ set "network.peerd.public_key=$(nt_pub d)"
	   uci_ add_list "network.peerd.allowed_ips=10.202.8.0/24" ;;
	3) uci_ add_list "network.peerc.allowed_ips=10.202.7.0/24" ;;
	4) uci_ delete network.peerd ;;
	esac
	uci_ commit network
	r=$(reload)
	jq -e "(.errors | length) == 0 and .interfaces == [\"$NT_IF_A\"]" <<<"$r" >/dev/null ||
		reload_errs=$((reload_errs + 1))
done
iperf_wait reload
nt_check reload.four-reloads-answered-without-errors test "$reload_errs" -eq 0 || true
# 8 s against a 4 s baseline: at least the baseline's bytes (half the unloaded rate).
nt_check "reload.iperf3-completed-at-half-rate-or-more ($IP_MBPS vs $BASE_MBPS Mbit/s)" \
	test "$IP_RC" -eq 0 -a "$IP_RECV" -ge "$BASE_RECV" || true
nt_check "reload.no-retransmission-storm ($IP_RETR vs $BASE_RETR unloaded)" \
	test "$IP_RETR" -le $((BASE_RETR * 4 + 200)) || true
changes_ok() {
	[[ $(peer_of "$(nt_pub b)" latest_handshake) == "$hs_b" ]] &&
		[[ $(npeers) == 2 ]] &&
		peer_of "$(nt_pub c)" allowed_ips | grep -q 10.202.7.0/24
}
nt_check reload.session-kept-and-changes-applied changes_ok || true
if [[ ${#CAPS[@]} -gt 0 ]]; then
	caps_ok() { grep -qx $'CapEff:\t0000000000001000' "/proc/$APID/status"; }
	nt_check caps.managed-daemon-reloads-with-only-cap-net-admin caps_ok || true
else
	nt_info "setpriv not found: the CAP_NET_ADMIN-only run is skipped"
fi

# --- a peer removed mid-transfer: by reload, then by `wg set ... remove`
c_rx() { nt_wg "$NT_NS_C" show "$NT_IF_C" transfer | awk '{ print $2 }'; }
iperf_start cgone "$NT_NS_A" "$NT_NS_C" "$IN4_C" 5203 10
sleep 2
uci_ delete network.peerc
uci_ commit network
r=$(reload)
removed_ok() {
	jq -e '(.errors | length) == 0' <<<"$r" >/dev/null && [[ $(npeers) == 1 ]] &&
		[[ -z $(peer_of "$(nt_pub c)" public_key) ]]
}
nt_check removed.peer-gone-after-reload removed_ok || true
stopped() {
	local x y
	x=$(c_rx)
	sleep 1
	y=$(c_rx)
	[[ -n $x && $x == "$y" ]] && ! nt_ping_ok "$NT_NS_A" "$IN4_C"
}
nt_check removed.transfer-to-removed-peer-stopped stopped || true
iperf_start bstill "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" 5204 3
iperf_wait bstill
nt_check "removed.other-peer-still-served ($IP_MBPS Mbit/s)" \
	test "$IP_RC" -eq 0 -a "$IP_MBPS" -ge $((BASE_MBPS / 2)) || true
# The dead stream to C is ours to end; then C comes back.
nt_stop_job "${IPC[cgone]}"
nt_stop_job "${IPS[cgone]}"
nt_check removed.daemon-alive kill -0 "$APID" || true
add_peerc
r=$(reload)
readded() {
	jq -e '(.errors | length) == 0' <<<"$r" >/dev/null && nt_wait_ping "$NT_NS_A" "$IN4_C" 15 &&
		iperf_start cback "$NT_NS_A" "$NT_NS_C" "$IN4_C" 5205 2 && iperf_wait cback && [[ $IP_RC -eq 0 ]]
}
nt_check removed.re-added-peer-carries-traffic readded || true
ip netns exec "$NT_NS_A" timeout 10 wg set "$NT_IF_A" peer "$(nt_pub c)" remove
wgset_removed() { ! nt_ping_ok "$NT_NS_A" "$IN4_C" && nt_ping_ok "$NT_NS_A" "$NT_IN4_B"; }
nt_check wgset-remove.peer-gone-other-served wgset_removed || true
r=$(reload)
nt_check wgset-remove.reload-puts-configured-peer-back nt_wait_ping "$NT_NS_A" "$IN4_C" 15 || true

# --- the network file corrupted before reload
cp "$NETFILE" "$NT_TMP/network.good"
allowed_b() { peer_of "$(nt_pub b)" 'allowed_ips | join(",")'; }
kept() {
	[[ $(npeers) == 2 ]] && [[ $(allowed_b) == "$NT_IN4_B/32" ]] &&
		nt_ping_ok "$NT_NS_A" "$NT_IN4_B" && nt_ping_ok "$NT_NS_A" "$IN4_C"
}
# corrupt_case NAME REGEX: reload; the reply's error must match REGEX; config kept.
corrupt_case() {
	local r
	r=$(reload)
	printf '%s\n' "$r" >"$NT_TMP/reload-$1.json"
	jq -r '.error // ""' <<<"$r" | grep -qE -- "$2" || {
		nt_info "$1: reply was: $r"
		return 1
	}
	kept
}
off=$(grep -bo "list allowed_ips '$NT_IN4_B" "$NETFILE" | cut -d: -f1)
head -c $((off + 22)) "$NT_TMP/network.good" >"$NETFILE" # ends inside the quote
nt_check corrupt.truncated-mid-quote-error-names-file-and-line-old-kept \
	corrupt_case truncated "^$NETFILE:.*line [0-9]+" || true
head -c 3000 /dev/urandom >"$NETFILE"
printf 'config interface %s\n\toption proto solowg\n\x00\x01\n' "$NT_IF_A" >>"$NETFILE"
nt_check corrupt.binary-garbage-error-names-file-old-kept corrupt_case garbage "^$NETFILE:" || true
rm -f "$NETFILE"
nt_check corrupt.deleted-file-error-names-file-old-kept \
	corrupt_case deleted "^$NETFILE: .*(No such file|not found)" || true
cp "$NT_TMP/network.good" "$NETFILE"
r=$(reload)
nt_check corrupt.restored-file-reloads-cleanly jq -e '(.errors | length) == 0 and (.error == null)' <<<"$r" || true

# --- listen port in use at `up`, then fixed
ip netns exec "$NT_NS_A" timeout 120 python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
print("bound", flush=True)
time.sleep(110)' "$PORT_P" >"$NT_TMP/port-holder.log" 2>&1 &
HOLDER=$!
NT_BG_PIDS+=("$HOLDER")
nt_wait_until 5 grep -q bound "$NT_TMP/port-holder.log" || nt_info "port holder did not start"
uci_ set "network.$IF_P=interface"
uci_ set "network.$IF_P.proto=solowg"
uci_ set "network.$IF_P.private_key=$(cat "$NT_TMP/p.key")"
uci_ set "network.$IF_P.listen_port=$PORT_P"
uci_ commit network
r=$(ubus_ call solowg up "{\"interface\":\"$IF_P\"}" || true)
port_refused() {
	jq -r '.error // ""' <<<"$r" | grep -qiE "$IF_P.*(in use|listen_port|$PORT_P)" &&
		! nt_link_exists "$NT_NS_A" "$IF_P" && nt_sock_gone "$IF_P" &&
		nt_ping_ok "$NT_NS_A" "$NT_IN4_B"
}
nt_check "port-in-use.up-refused-clearly ($(jq -c . <<<"$r" 2>/dev/null || echo "$r"))" port_refused || true
uci_ set "network.$IF_P.listen_port=$((PORT_P + 1))"
uci_ commit network
r=$(ubus_ call solowg up "{\"interface\":\"$IF_P\"}" || true)
port_fixed() {
	jq -e '.error == null' <<<"$r" >/dev/null &&
		status | jq -e ".interfaces[] | select(.name==\"$IF_P\") | .listen_port == $((PORT_P + 1))" >/dev/null
}
nt_check port-in-use.fixed-port-then-up-works port_fixed || true
ubus_ call solowg down "{\"interface\":\"$IF_P\"}" >/dev/null || true
nt_stop_job "$HOLDER"

# --- the UAPI socket flooded while iperf3 runs
FLOOD_PY='
import os, socket, sys, time
path, secs = sys.argv[1], float(sys.argv[2])
end = time.time() + secs
idle, opened, big_sent, slow = [], 0, 0, []
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(path)
    except OSError:
        s.close()
        raise
    return s
def try_conn():                   # the listen backlog may be full: try again later
    try:
        return conn()
    except OSError:
        return None
big = try_conn()
chunk = b"set=1\n" + b"x" * 65536
i = 0
while time.time() < end:
    i += 1
    try:
        s = conn()
        opened += 1
        if len(idle) < 300:
            idle.append(s)        # held open, silent
        elif i % 3 == 0:
            s.send(b"get=1\n\n")  # a real request, then gone
            s.close()
        else:
            s.close()
    except OSError:
        time.sleep(0.001)
    if i % 50 == 0:
        if len(slow) < 20:
            try:
                slow.append(conn())
            except OSError:
                pass
        for s in slow:            # one byte at a time, never a full request
            try:
                s.send(b"g")
            except OSError:
                pass
        try:                      # an oversized request, as fast as it is taken
            big_sent += big.send(chunk) if big else 0
            big = big or try_conn()
        except BlockingIOError:
            pass
        except OSError:
            big = try_conn()
print(f"opened={opened} oversized_bytes={big_sent}")
'
# flood_run NAME NS IFNAME PORT: the flooder on IFNAME's socket during a 4 s iperf3 A->B;
# sets IP_* and FLOOD_RTT.
flood_run() {
	ip netns exec "$2" timeout 60 python3 -c "$FLOOD_PY" "$NT_SOCK_DIR/$3.sock" 9 \
		>"$NT_TMP/flood-$1.log" 2>&1 &
	local fl=$!
	NT_BG_PIDS+=("$fl")
	sleep 1
	iperf_start "$1" "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" "$4" 4
	FLOOD_RTT=$(ping_max "$NT_NS_A" "$NT_IN4_B" 15)
	iperf_wait "$1"
	wait "$fl" || true
	nt_info "flooder on $3: $(cat "$NT_TMP/flood-$1.log")"
}
# The control: the same flood on C's daemon (not on the A-B path) costs the machine the
# same CPU; the daemon under test must then keep at least half of that rate.
flood_run flood-control "$NT_NS_C" "$NT_IF_C" 5206
CTRL_MBPS=$IP_MBPS CTRL_RTT=$FLOOD_RTT
flood_run flood "$NT_NS_A" "$NT_IF_A" 5208
flooded() { grep -qE 'opened=[0-9]{3,}' "$NT_TMP/flood-flood.log"; }
nt_check uapi-flood.flooder-really-flooded flooded || true
nt_check "uapi-flood.throughput-at-least-half ($IP_MBPS Mbit/s; same flood elsewhere $CTRL_MBPS, unloaded $BASE_MBPS)" \
	test "$IP_RC" -eq 0 -a "$IP_MBPS" -ge $((CTRL_MBPS / 2)) || true
# A stalled loop shows as ping RTTs of the stall's length (the UAPI client idle limit is 10 s).
nt_check "uapi-flood.ping-rtt-bounded (max ${FLOOD_RTT} ms; same flood elsewhere ${CTRL_RTT} ms, no flood ${BASE_RTT} ms)" \
	test "$FLOOD_RTT" -le $((CTRL_RTT * 3 + 200)) -a "$FLOOD_RTT" -le 2000 || true
nt_check uapi-flood.wg-show-answers-after nt_wg "$NT_NS_A" show "$NT_IF_A" latest-handshakes || true

# --- the TUN deleted under the managed daemon
ip -n "$NT_NS_A" link del "$NT_IF_A"
gone_reported() {
	kill -0 "$APID" && grep -q "$NT_IF_A: interface gone" "$NT_TMP/solowg-a.log" &&
		nt_sock_gone "$NT_IF_A" &&
		status | jq -e "[.interfaces[] | select(.name==\"$NT_IF_A\")] | length == 0" >/dev/null
}
nt_check tun-deleted.daemon-keeps-running-and-reports-it nt_wait_until 5 gone_reported || true
nt_check tun-deleted.up-again-brings-the-tunnel-back ifup_a || true

# --- secrets: nothing but UAPI `get` may show a private or preshared key
hexkey() { base64 -d <"$1" | od -An -tx1 | tr -d ' \n'; }
nt_wg "$NT_NS_A" show "$NT_IF_A" >"$SURF/wg-show-a.txt"
nt_wg "$NT_NS_B" show "$NT_IF_B" >"$SURF/wg-show-b.txt"
nt_wg "$NT_NS_C" show all >"$SURF/wg-show-c.txt"
ip netns exec "$NT_NS_A" "$SOLOWG" show "$NT_IF_A" >"$SURF/solowg-show-a.txt" 2>&1
ip netns exec "$NT_NS_A" "$SOLOWG" show >"$SURF/solowg-show-all.txt" 2>&1 || true
status >/dev/null
reload >/dev/null
ubus_ call solowg up "{\"interface\":\"$NT_IF_A\"}" >/dev/null || true
handler setup "$NT_IF_A" >/dev/null
cp "$NT_TMP"/solowg-a.log "$NT_TMP"/daemon-*.log "$NT_TMP"/reload-*.json "$SURF/"
# leaks DIR: prints every file in DIR holding a secret (base64 or hex).
leaks() {
	local k
	for k in a b c psk-b psk-c; do
		local f=$NT_TMP/$k
		[[ -f $f ]] || f=$NT_TMP/$k.key
		grep -rlF -e "$(cat "$f")" "$1" || true
		grep -rliF -e "$(hexkey "$f")" "$1" || true
	done
}
found=$(leaks "$SURF")
nt_check "secrets.no-key-on-any-surface ($(find "$SURF" -type f | wc -l) files)" test -z "$found" ||
	nt_info "leaked in: $found"
# The detector itself: UAPI get (where keys belong) must be flagged, base64 and hex.
mkdir -p "$NT_TMP/control"
nt_wg "$NT_NS_A" show "$NT_IF_A" dump >"$NT_TMP/control/dump.txt"
ip netns exec "$NT_NS_A" timeout 5 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"get=1\n\n")
d = b""
while not d.endswith(b"\n\n"):
    c = s.recv(65536)
    if not c: break
    d += c
sys.stdout.write(d.decode())' "$NT_SOCK_DIR/$NT_IF_A.sock" >"$NT_TMP/control/uapi-get.txt"
control_ok() {
	local l
	l=$(leaks "$NT_TMP/control")
	grep -q dump.txt <<<"$l" && grep -q uapi-get.txt <<<"$l"
}
nt_check secrets.detector-flags-uapi-get control_ok || true
mode_ok() { [[ $(stat -c %a "$NT_SOCK_DIR/$NT_IF_A.sock") == 600 ]]; }
nt_check secrets.uapi-socket-mode-0600 mode_ok || true
# The directory, when the daemon creates it: a private /run for one short daemon.
# shellcheck disable=SC2016 # the inner script's $1 $2 are its own
ip netns exec "$NT_NS_C" unshare -m sh -c 'mount -t tmpfs tmpfs /run && exec timeout 30 "$1" -f "$2"' \
	sh "$SOLOWG" "${NT_IF_C}d" >>"$NT_TMP/daemon-dir.log" 2>&1 &
DIRD=$!
NT_BG_PIDS+=("$DIRD")
dir_ok() {
	local p
	p=$(pgrep -P "$DIRD" -x timeout) || p=$DIRD
	p=$(pgrep -P "$p" solowg) || return 1
	[[ -S /proc/$p/root/run/wireguard/${NT_IF_C}d.sock ]] &&
		[[ $(stat -c %a "/proc/$p/root/run/wireguard") == 700 ]] &&
		[[ $(stat -c %a "/proc/$p/root/run/wireguard/${NT_IF_C}d.sock") == 600 ]]
}
nt_check secrets.created-socket-dir-0700-socket-0600 nt_wait_until 5 dir_ok || true
nt_stop_job "$DIRD"

# --- SIGTERM under load
iperf_start term "$NT_NS_A" "$NT_NS_B" "$NT_IN4_B" 5207 6
sleep 2
t0=$(nt_now_ms)
kill -TERM "$APID"
term_ok() {
	nt_wait_until 1 nt_pid_gone "$APID" || return 1
	nt_info "exited $(($(nt_now_ms) - t0)) ms after SIGTERM"
	nt_sock_gone "$NT_IF_A" && ! nt_link_exists "$NT_NS_A" "$NT_IF_A"
}
nt_check sigterm-under-load.exit-within-1s-socket-and-tun-gone term_ok || true
nt_stop_job "${IPC[term]}"
nt_stop_job "${IPS[term]}"

nt_summary
