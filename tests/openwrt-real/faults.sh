#!/usr/bin/env bash
# Faults a router sees, injected under traffic, on OpenWrt's own daemons (lib.sh: procd,
# netifd, the C ubusd with the package's ACL, logd, uci), and the secrets check. The
# router's wg0 has two peers with preshared keys, b and c: plain solowg daemons in a peer
# namespace, configured with wg(8). iperf3 runs from the router over the tunnel. Checked:
# - Save & Apply (uci, `reload_config`) four times during a transfer, peers added, changed
#   and removed meanwhile: the transfer completes at half the unloaded rate or more, without
#   a retransmission storm, b's session is kept and the changes are applied;
# - a peer removed mid-transfer (by Save & Apply, and by `wg set ... remove`): its transfer
#   stops, the other peer is served at half the rate or more, the daemon stays, the peer
#   added again carries traffic, and a reload puts the peer `wg` removed back;
# - /etc/config/network truncated mid-quote, made binary garbage, deleted, then
#   `/etc/init.d/solowg reload`: the message names the file, the tunnels run on as they were;
# - an interface whose listen port another socket holds: netifd shows the daemon's error
#   and does not retry in a loop; the port fixed by Save & Apply, it comes up;
# - wg0's UAPI socket flooded with connections, slow and oversized requests during a
#   transfer: throughput at half or more of the same flood on a daemon off the path, ping
#   round trips bounded, `wg show` answers after;
# - the TUN deleted under the daemon: it keeps running, netifd sets the interface up again;
# - no private or preshared key in the log, ubus replies and events, `wg show`, `solowg
#   show`, init script output or any command line (the search flags UAPI `get`); the UAPI
#   socket 0600; a plain daemon creates its socket directory 0700;
# - SIGTERM under load: gone within a second with its socket and TUN;
# - the daemon started by hand with CAP_NET_ADMIN alone: wg0 up through it, the init
#   script's reload reaches it, and it keeps only that capability.
#   usage: tests/openwrt-real/faults.sh
#   env:   SOLOWG_BIN, HANDLER, INIT, ACL (as netifd.sh), OW_KEEP=1
# shellcheck disable=SC2016 # checks given to eval run in this shell, which expands them
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/openwrt-real/lib.sh
. "$here/lib.sh"

ow_setup
for t in iperf3 python3; do command -v "$t" >/dev/null || ow_die "missing tool: $t"; done
start_s=$SECONDS
ow_wan_pair
ip -n "$NP" link set pwan up
SURF=$OW_TMP/surface # every output that must not hold a secret
mkdir -p "$SURF"
N=0

declare -A KEY PUB PSK DEV PORT IN4 TABLE
for k in wg0 b c d p; do
	KEY[$k]=$(wg genkey)
	PUB[$k]=$(wg pubkey <<<"${KEY[$k]}")
done
PSK=([b]=$(wg genpsk) [c]=$(wg genpsk))
DEV=([b]=wgp${OW_ID}b [c]=wgp${OW_ID}c)
PORT=([b]=51821 [c]=51822)
IN4=([b]=10.232.0.2 [c]=10.232.0.3)
TABLE=([b]=101 [c]=102)

# b and c: plain daemons (their UAPI sockets in the host's /var/run/wireguard), each
# answering from its own table (both share the router's tunnel address).
peer_up() {
	local p=$1 dev=${DEV[$1]}
	ip netns exec "$NP" timeout "$OW_MAX_S" "$OW_SOLOWG" -f "$dev" >>"$OW_TMP/peer-$p.log" 2>&1 &
	OW_BG+=("$!")
	ow_wait 5 test -S "/var/run/wireguard/$dev.sock" || ow_die "solowg $dev did not start"
	ip netns exec "$NP" wg set "$dev" private-key <(echo "${KEY[$p]}") listen-port "${PORT[$p]}" \
		peer "${PUB[wg0]}" allowed-ips 10.232.0.1/32 preshared-key <(echo "${PSK[$p]}")
	ip -n "$NP" addr add "${IN4[$p]}/32" dev "$dev"
	ip -n "$NP" link set "$dev" up
	ip -n "$NP" route add 10.232.0.1/32 dev "$dev" table "${TABLE[$p]}"
	ip -n "$NP" rule add from "${IN4[$p]}" table "${TABLE[$p]}"
}
peer_up b
peer_up c

ow_root r
d=$OW_TMP/r/root
peer_section() { # PEER
	printf "\nconfig solowg_wg0 'peer%s'\n\toption public_key '%s'\n\toption preshared_key '%s'\n" "$1" "${PUB[$1]}" "${PSK[$1]}"
	printf "\tlist allowed_ips '%s/32'\n\toption endpoint_host '10.231.0.2'\n\toption endpoint_port '%s'\n" "${IN4[$1]}" "${PORT[$1]}"
}
{
	cat <<CFG
$(ow_network_head)

config interface 'wg0'
	option proto 'solowg'
	option private_key '${KEY[wg0]}'
	option listen_port '51820'
	list addresses '10.232.0.1/24'
CFG
	# c first: the truncation below cuts into b's allowed_ips.
	peer_section c
	peer_section b
} >"$d/etc/config/network"

r() { ow_in r "$@"; }
# rs ARGS...: a command in the router whose output is also kept as a surface.
rs() {
	N=$((N + 1))
	r "$@" 2>&1 | tee "$SURF/out-$N.txt"
}
up() { r ubus call "network.interface.$1" status 2>/dev/null | jq -e '.up == true' >/dev/null; }
ping1() { r ping -n -q -c 1 -W 1 "$@" >/dev/null 2>&1; }
ping_b() { ping1 -I wg0 "${IN4[b]}"; }
ping_c() { ping1 -I wg0 "${IN4[c]}"; }
not() { ! "$@"; }
status() { rs ubus -t 10 call solowg status; }
peer_of() { # PEER FIELD (on wg0)
	status | jq -r ".interfaces[] | select(.name==\"wg0\") | .peers[] | select(.public_key==\"${PUB[$1]}\") | .$2"
}
npeers() { status | jq -r '.interfaces[] | select(.name=="wg0") | .peers | length'; }
daemon_pid() { r ubus call service list '{"name":"solowg"}' 2>/dev/null | jq -er '.solowg.instances.instance1.pid // empty'; }
apply() { r sh -c "$1 && uci commit network && reload_config"; }
# apply_batch: the same with `uci batch` commands on standard input, for keys, which no
# command line may hold (the search below reads every one).
apply_batch() { r sh -c 'uci batch && uci commit network && reload_config'; }
log_tail() { r logread | tail -n 25 | sed 's/^/    | /'; }
check() {
	local n=$1 why=$2
	shift 2
	if "$@"; then ow_pass "$n"; else ow_fail "$n" "$why" && log_tail; fi
}

ow_boot r "$NR"
r ubus listen >"$SURF/events.txt" 2>&1 &
OW_BG+=("$!")
# shellcheck disable=SC2016 # the router's shell expands them
r sh -c 'i=0; while [ $i -lt 20000 ]; do for f in /proc/[0-9]*/cmdline; do tr "\0" " " <"$f"; echo; done 2>/dev/null; i=$((i + 1)); sleep 0.1; done' \
	>"$SURF/cmdlines.txt" 2>/dev/null &
OW_BG+=("$!")
check boot.up "wg0 not up and answering from b and c within 30 s of boot" \
	ow_wait 30 eval 'up wg0 && ping_b && ping_c'
[[ $OW_FAIL == 0 ]] || ow_die "the router did not come up; later checks would only repeat it"
APID=$(daemon_pid)

# iperf_start NAME PEER PORT SECS: iperf3 from the router to PEER's tunnel address.
declare -A IPC=() IPS=()
iperf_start() {
	local name=$1 addr=${IN4[$2]} port=$3 secs=$4
	ip netns exec "$NP" timeout $((secs + 30)) iperf3 -s -1 -B "$addr" -p "$port" \
		>>"$OW_TMP/iperf3-server.log" 2>&1 &
	IPS[$name]=$!
	OW_BG+=("$!")
	ow_wait 5 eval "ip netns exec $NP ss -tln | grep -q ':$port '" || return 1
	r timeout $((secs + 20)) iperf3 -c "$addr" -p "$port" -t "$secs" --connect-timeout 5000 -J \
		>"$OW_TMP/iperf-$name.json" 2>>"$OW_TMP/iperf3-client.log" &
	IPC[$name]=$!
	OW_BG+=("$!")
}
stop_job() { kill "$1" 2>/dev/null || true; }
# iperf_wait NAME: sets IP_RC IP_RECV IP_RETR IP_MBPS.
iperf_wait() {
	local j=$OW_TMP/iperf-$1.json
	IP_RC=0
	wait "${IPC[$1]}" || IP_RC=$?
	stop_job "${IPS[$1]}"
	IP_RECV=$(jq -r '.end.sum_received.bytes // 0' "$j" 2>/dev/null || echo 0)
	IP_RETR=$(jq -r '.end.sum_sent.retransmits // 0' "$j" 2>/dev/null || echo 0)
	IP_MBPS=$(jq -r '.end.sum_received.bits_per_second // 0' "$j" 2>/dev/null | awk '{ printf "%d", $1 / 1e6 }' || echo 0)
	echo "# iperf3 $1: rc=$IP_RC recv=$IP_RECV retransmits=$IP_RETR $IP_MBPS Mbit/s"
}
# ping_max PEER COUNT: the largest round trip (ms) of COUNT pings 0.2 s apart; 99999 on loss.
ping_max() {
	r timeout 30 ping -n -c "$2" -i 0.2 -W 1 -q -I wg0 "${IN4[$1]}" 2>/dev/null |
		awk -F'/' -v n="$2" '/ received/ { split($0, a, ", "); if (a[2] + 0 != n) lost = 1 }
			/^rtt/ { max = $6 } END { if (lost || max == "") print 99999; else printf "%d\n", max + 0.5 }'
}

# --- baseline
iperf_start base b 5201 4
BASE_RTT=$(ping_max b 15)
iperf_wait base
BASE_MBPS=$IP_MBPS BASE_RECV=$IP_RECV BASE_RETR=$IP_RETR
check "baseline ($BASE_MBPS Mbit/s, max ping ${BASE_RTT} ms under load)" "iperf3 failed" \
	test "$IP_RC" -eq 0 -a "$BASE_MBPS" -gt 0

# --- Save & Apply x4 during a transfer
hs_b=$(peer_of b latest_handshake)
iperf_start reload b 5202 8
for step in 1 2 3 4; do
	sleep 1.3
	case $step in
	1) apply "uci set network.peerc.description=changed" ;;
	2) apply "uci set network.peerd=solowg_wg0 && uci set network.peerd.public_key=${PUB[d]} &&
		uci add_list network.peerd.allowed_ips=10.202.8.0/24" ;;
	3) apply "uci add_list network.peerc.allowed_ips=10.202.7.0/24" ;;
	4) apply "uci delete network.peerd" ;;
	esac
done
iperf_wait reload
check "reload.transfer-completed ($IP_MBPS vs $BASE_MBPS Mbit/s)" "8 s under reloads moved less than 4 s unloaded" \
	test "$IP_RC" -eq 0 -a "$IP_RECV" -ge "$BASE_RECV"
# A storm is thousands; undisturbed 3-4 s runs here showed up to 200 (and often 0), hence
# the allowance of 1000 over 4x the baseline.
check "reload.no-retransmission-storm ($IP_RETR vs $BASE_RETR unloaded)" "too many retransmissions" \
	test "$IP_RETR" -le $((BASE_RETR * 4 + 1000))
changes() {
	[[ $(peer_of b latest_handshake) == "$hs_b" && $(npeers) == 2 ]] &&
		peer_of c allowed_ips | grep -q 10.202.7.0/24 && [[ $(peer_of c description) == changed ]]
}
check reload.session-kept-changes-applied "b's handshake changed or the changes are missing: $(status | jq -c '.interfaces[0].peers')" \
	ow_wait 5 changes
check reload.same-daemon "the daemon restarted" test "$(daemon_pid)" = "$APID"

# --- a peer removed mid-transfer: by Save & Apply, then by `wg set ... remove`
c_rx() { ip netns exec "$NP" wg show "${DEV[c]}" transfer | awk '{ print $2 }'; }
iperf_start cgone c 5203 10
sleep 2
apply "uci delete network.peerc"
removed() { [[ $(npeers) == 1 && -z $(peer_of c public_key) ]]; }
check removed.peer-gone "c still configured after Save & Apply" ow_wait 5 removed
stopped() {
	local x y
	x=$(c_rx)
	sleep 1
	y=$(c_rx)
	[[ -n $x && $x == "$y" ]] && not ping_c
}
check removed.transfer-stopped "c still receives" stopped
iperf_start bstill b 5204 3
iperf_wait bstill
check "removed.other-peer-served ($IP_MBPS Mbit/s)" "b under half the unloaded rate" \
	test "$IP_RC" -eq 0 -a "$IP_MBPS" -ge $((BASE_MBPS / 2))
stop_job "${IPC[cgone]}"
stop_job "${IPS[cgone]}"
check removed.same-daemon "the daemon restarted" test "$(daemon_pid)" = "$APID"
apply_batch <<UCI
set network.peerc=solowg_wg0
set network.peerc.public_key=${PUB[c]}
set network.peerc.preshared_key=${PSK[c]}
add_list network.peerc.allowed_ips=${IN4[c]}/32
set network.peerc.endpoint_host=10.231.0.2
set network.peerc.endpoint_port=${PORT[c]}
UCI
readded() { ow_wait 15 ping_c && iperf_start cback c 5205 2 && iperf_wait cback && [[ $IP_RC -eq 0 ]]; }
check removed.re-added-peer-carries-traffic "c added again carries no traffic" readded
r wg set wg0 peer "${PUB[c]}" remove
check wgset.peer-gone-other-served "after wg set remove: c answers or b does not" eval 'not ping_c && ping_b'
rs /etc/init.d/solowg reload >/dev/null
check wgset.reload-puts-peer-back "c not back within 15 s of the init script's reload" ow_wait 15 ping_c

# --- /etc/config/network corrupted, then the init script's reload
NETFILE=$d/etc/config/network
cp "$NETFILE" "$OW_TMP/network.good"
allowed_b() { peer_of b 'allowed_ips | join(",")'; }
kept() { [[ $(npeers) == 2 && $(allowed_b) == "${IN4[b]}/32" ]] && ping_b && ping_c; }
corrupt_case() { # NAME REGEX: the reload's output must match REGEX; tunnels kept
	local out
	out=$(rs /etc/init.d/solowg reload)
	printf '%s\n' "$out" >"$OW_TMP/reload-$1.txt"
	grep -qE -- "$2" <<<"$out" || {
		echo "# $1: the reload said: $out"
		return 1
	}
	kept
}
off=$(grep -bo "list allowed_ips '${IN4[b]}" "$NETFILE" | cut -d: -f1)
head -c $((off + 22)) "$OW_TMP/network.good" >"$NETFILE" # ends inside the quote
check corrupt.truncated "no message naming the file and line, or the tunnels changed" \
	corrupt_case truncated '/etc/config/network.*line [0-9]+'
{
	head -c 3000 /dev/urandom
	printf 'config interface wg0\n\toption proto solowg\n\x00\x01\n'
} >"$NETFILE"
check corrupt.garbage "no message naming the file, or the tunnels changed" corrupt_case garbage '/etc/config/network'
rm -f "$NETFILE"
check corrupt.deleted "no message naming the file, or the tunnels changed" \
	corrupt_case deleted '/etc/config/network.*(No such file|not found)'
cp "$OW_TMP/network.good" "$NETFILE"
out=$(rs /etc/init.d/solowg reload)
check corrupt.restored "the reload of the restored file said: $out" eval '[[ -z $out ]] && kept'

# --- a listen port in use: netifd shows the error, then the fixed port comes up
ip netns exec "$NR" timeout 120 python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
print("bound", flush=True)
time.sleep(110)' 51830 >"$OW_TMP/port-holder.log" 2>&1 &
HOLDER=$!
OW_BG+=("$HOLDER")
ow_wait 5 grep -q bound "$OW_TMP/port-holder.log" || echo "# the port holder did not start"
apply_batch <<UCI
set network.wgp=interface
set network.wgp.proto=solowg
set network.wgp.private_key=${KEY[p]}
set network.wgp.listen_port=51830
UCI
port_error() {
	r ubus call network.interface.wgp status 2>/dev/null >"$OW_TMP/wgp-status.json" &&
		jq -e '.up == false and ([.errors[]? | select(.code == "CONFIG_ERROR")] | length) > 0' \
			"$OW_TMP/wgp-status.json" >/dev/null
}
check port-in-use.error-shown "netifd shows no CONFIG_ERROR for wgp: $(jq -c '.errors' "$OW_TMP/wgp-status.json" 2>/dev/null)" \
	ow_wait 20 port_error
echo "# port in use: $(jq -c '.errors' "$OW_TMP/wgp-status.json" 2>/dev/null)"
setups() { r logread | grep -c "Interface 'wgp' is setting up now" || true; }
setups0=$(setups)
sleep 5
check "port-in-use.no-retry-loop ($(($(setups) - setups0)) setups in 5 s)" "netifd retried the setup" test "$(setups)" -le $((setups0 + 1))
check port-in-use.others-kept "b does not answer" ping_b
# netifd leaves an interface whose setup blocked restarts down until it is brought up
# again (LuCI's Restart, `ifup`), a changed configuration alone does not.
apply "uci set network.wgp.listen_port=51831"
r ifup wgp
port_fixed() { up wgp && r ubus call solowg status | jq -e '.interfaces[] | select(.name=="wgp") | .listen_port == 51831' >/dev/null; }
check port-in-use.fixed-then-ifup "wgp not up on 51831 within 20 s of ifup" ow_wait 20 port_fixed
# procd runs the configuration's reload trigger 1 s after reload_config: let it pass first,
# or netifd would read the change below and set the interface up again instead of a renew.
sleep 3
# A renew the daemon refuses (the port changed to one held, committed, no reload): the
# interface goes on as it was, on its old port.
r sh -c 'uci set network.wgp.listen_port=51830 && uci commit network'
r ubus call network.interface.wgp renew
renew_logged() { r logread | grep -q "wgp: renew: .*in use"; }
check port-in-use.renew-refused-logged "no refused renew of wgp logged" ow_wait 10 renew_logged
check port-in-use.renew-refused-kept "wgp not up on 51831 after the refused renew" port_fixed
stop_job "$HOLDER"
r sh -c 'uci set network.wgp.listen_port=51831 && uci commit network'

# A bad key: netifd shows the error and does not retry.
apply "uci set network.wgx=interface && uci set network.wgx.proto=solowg && uci set network.wgx.private_key=bad"
key_error() {
	r ubus call network.interface.wgx status 2>/dev/null >"$OW_TMP/wgx-status.json" &&
		jq -e '.up == false and ([.errors[]? | select(.code == "CONFIG_ERROR") | .data[]? | select(test("private_key"))] | length) > 0' \
			"$OW_TMP/wgx-status.json" >/dev/null
}
check bad-key.error-shown "netifd shows no CONFIG_ERROR naming private_key for wgx: $(jq -c '.errors' "$OW_TMP/wgx-status.json" 2>/dev/null)" \
	ow_wait 20 key_error
setupsx() { r logread | grep -c "Interface 'wgx' is setting up now" || true; }
setupsx0=$(setupsx)
sleep 5
check "bad-key.no-retry-loop ($(($(setupsx) - setupsx0)) setups in 5 s)" "netifd retried the setup" test "$(setupsx)" -le $((setupsx0 + 1))
apply "uci delete network.wgx"

# The program missing while its package is upgraded: setup says the daemon is unavailable
# and netifd tries again, so the interface comes up once the program is back.
r ifdown wgp
# Inside the router: its /usr is an overlay, mounted.
r mv /usr/sbin/solowg /usr/sbin/solowg.away
r ifup wgp
unavailable() {
	r ubus call network.interface.wgp status 2>/dev/null | jq -e '[.errors[]? | select(.code == "DAEMON_UNAVAILABLE")] | length > 0' >/dev/null
}
check upgrade.program-missing-unavailable "no DAEMON_UNAVAILABLE for wgp within 20 s without the program" ow_wait 20 unavailable
r mv /usr/sbin/solowg.away /usr/sbin/solowg
check upgrade.up-once-back "wgp not up within 30 s of the program's return" ow_wait 30 port_fixed

# --- the UAPI socket flooded during a transfer
FLOOD_PY='
import socket, sys, time
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
def try_conn():                   # the listen backlog may be full: later
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
        for s in slow:            # one byte at a time, never a whole request
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
# flood_run NAME WHERE PORT: the flooder on c's socket (off) or the router's wg0 (on)
# during a 4 s transfer to b; sets IP_* and FLOOD_RTT.
flood_run() {
	if [[ $2 == on ]]; then
		r timeout 60 python3 -c "$FLOOD_PY" /var/run/wireguard/wg0.sock 9 >"$OW_TMP/flood-$1.log" 2>&1 &
	else
		ip netns exec "$NP" timeout 60 python3 -c "$FLOOD_PY" "/var/run/wireguard/${DEV[c]}.sock" 9 \
			>"$OW_TMP/flood-$1.log" 2>&1 &
	fi
	local fl=$!
	OW_BG+=("$fl")
	sleep 1
	iperf_start "$1" b "$3" 4
	FLOOD_RTT=$(ping_max b 15)
	iperf_wait "$1"
	wait "$fl" || true
	echo "# flooder $2 the path: $(cat "$OW_TMP/flood-$1.log")"
}
flood_run flood-control off 5206
CTRL_MBPS=$IP_MBPS CTRL_RTT=$FLOOD_RTT
flood_run flood on 5208
check uapi-flood.flooded "the flooder opened under 100 connections" grep -qE 'opened=[0-9]{3,}' "$OW_TMP/flood-flood.log"
check "uapi-flood.throughput ($IP_MBPS Mbit/s; flood off the path $CTRL_MBPS, none $BASE_MBPS)" \
	"under half the rate of the same flood off the path" test "$IP_RC" -eq 0 -a "$IP_MBPS" -ge $((CTRL_MBPS / 2))
check "uapi-flood.ping-rtt (max ${FLOOD_RTT} ms; off the path ${CTRL_RTT} ms, none ${BASE_RTT} ms)" \
	"round trips too long" test "$FLOOD_RTT" -le $((CTRL_RTT * 3 + 200)) -a "$FLOOD_RTT" -le 2000
wg_show_wg0() { r timeout 10 wg show wg0 latest-handshakes >/dev/null; }
check uapi-flood.wg-show-after "wg show wg0 does not answer" wg_show_wg0

# --- the TUN deleted under the daemon: netifd sets the interface up again
t0=$SECONDS
ip -n "$NR" link del wg0
reported() { r logread | grep -q "wg0: interface gone"; }
check tun-deleted.reported "the daemon did not log the TUN gone" ow_wait 5 reported
check tun-deleted.back "wg0 not back and answering within 30 s" ow_wait 30 eval 'up wg0 && ping_b && ping_c'
echo "# TUN deleted to both peers answering: $((SECONDS - t0)) s"
check tun-deleted.same-daemon "the daemon restarted" test "$(daemon_pid)" = "$APID"

# --- a routed peer added: netifd's renew adds its route and its endpoint's host route;
# b's session stays; removed, its route goes
hs_b=$(peer_of b latest_handshake)
apply "uci set network.peerr=solowg_wg0 && uci set network.peerr.public_key=${PUB[d]} &&
	uci add_list network.peerr.allowed_ips=10.202.5.0/24 && uci set network.peerr.route_allowed_ips=1 &&
	uci set network.peerr.endpoint_host=10.99.0.99 && uci set network.peerr.endpoint_port=51999"
routed() { r ip route show 10.202.5.0/24 | grep -q "dev wg0"; }
host_routed() { r ip route show 10.99.0.99 | grep -q "via 10.231.0.2 dev rwan"; }
check renew.route-and-host-route "no route to 10.202.5.0/24 via wg0 or host route to 10.99.0.99 within 10 s: $(r ip route | tr '\n' ';')" \
	ow_wait 10 eval 'routed && host_routed'
check renew.session-kept "b's session changed or b does not answer" eval '[[ $(peer_of b latest_handshake) == "$hs_b" ]] && ping_b'
apply "uci delete network.peerr"
check renew.route-withdrawn "the removed peer's route still there 10 s after" ow_wait 10 not routed

# --- the broker restarts: the daemon registers its object again, the tunnels run on
UPID=$(r pidof ubusd)
r kill "$UPID"
ow_wait 5 not r kill -0 "$UPID" 2>/dev/null || true
ow_bg r ubusd "/sbin/ubusd"
object_back() { r ubus -t 2 list solowg >/dev/null 2>&1 && status | jq -e '.interfaces | length > 0' >/dev/null; }
check ubusd-restart.object-back "the solowg object not back within 15 s of ubusd's restart" ow_wait 15 object_back
check ubusd-restart.tunnels-kept "b or c does not answer after ubusd's restart" eval 'ping_b && ping_c'
others_back() { r ubus -t 2 call network.interface.wg0 status >/dev/null 2>&1 && r ubus -t 2 list log >/dev/null 2>&1; }
check ubusd-restart.netifd-logd-back "netifd's or logd's objects not back within 15 s" ow_wait 15 others_back
r ubus listen >>"$SURF/events.txt" 2>&1 &
OW_BG+=("$!")

# --- the daemon down while netifd sets wg0 up (a boot race, or a crashed daemon): the
# handler waits for it, then pauses before failing, since netifd retries at once
r /etc/init.d/solowg stop >/dev/null 2>&1
setups0=$(r logread | grep -c "Interface 'wg0' is setting up now" || true)
r ifup wg0
# netifd clears an interface's errors when it sets it up again: watched through the 20 s.
wg0_unavailable() { r ubus call network.interface.wg0 status | jq -e '[.errors[]? | select(.code == "DAEMON_UNAVAILABLE")] | length > 0' >/dev/null; }
unavailable_seen=0
end=$((SECONDS + 20))
for ((i = 0; i < 200 && SECONDS < end; i++)); do
	wg0_unavailable && unavailable_seen=1
	sleep 0.3
done
nset=$(($(r logread | grep -c "Interface 'wg0' is setting up now" || true) - setups0))
check "daemon-down.setup-retried-with-pause ($nset setups in 20 s)" "setup retried $nset times in 20 s" \
	test "$nset" -ge 1 -a "$nset" -le 3
check daemon-down.unavailable-shown "netifd showed no DAEMON_UNAVAILABLE for wg0 in 20 s" test "$unavailable_seen" = 1
t0=$SECONDS
r /etc/init.d/solowg start >/dev/null 2>&1
check daemon-down.up-once-started "wg0 not up and answering within 30 s of the start" ow_wait 30 eval 'up wg0 && ping_b && ping_c'
echo "# daemon started to both peers answering: $((SECONDS - t0)) s"

# --- secrets
r wg show wg0 >"$SURF/wg-show.txt" 2>&1
r wg show all >"$SURF/wg-show-all.txt" 2>&1
r solowg show >"$SURF/solowg-show.txt" 2>&1 || true
status >/dev/null
r ubus call network.interface dump >"$SURF/netifd-dump.json"
r logread >"$SURF/logread.txt"
cp "$OW_TMP"/reload-*.txt "$OW_TMP/r/procd.log" "$OW_TMP/r/boot.log" "$SURF/"
hex() { base64 -d <<<"$1" | od -An -tx1 | tr -d ' \n'; }
leaks() { # DIR: the files holding a secret (base64 or hex)
	local k
	for k in "${KEY[wg0]}" "${KEY[p]}" "${PSK[b]}" "${PSK[c]}"; do
		grep -rlF -e "$k" "$1" || true
		grep -rliF -e "$(hex "$k")" "$1" || true
	done
}
found=$(leaks "$SURF" | sort -u | tr '\n' ' ')
check "secrets.nowhere ($(find "$SURF" -type f | wc -l) files, $(grep -c . "$SURF/cmdlines.txt") command lines)" \
	"a key in: $found" test -z "$found"
mkdir -p "$OW_TMP/control"
r wg show wg0 dump >"$OW_TMP/control/dump.txt"
r timeout 5 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"get=1\n\n")
d = b""
while not d.endswith(b"\n\n"):
    c = s.recv(65536)
    if not c: break
    d += c
sys.stdout.write(d.decode())' /var/run/wireguard/wg0.sock >"$OW_TMP/control/uapi-get.txt"
control() { local l; l=$(leaks "$OW_TMP/control") && grep -q dump.txt <<<"$l" && grep -q uapi-get.txt <<<"$l"; }
check secrets.search-flags-uapi-get "the search misses the keys in wg show dump or UAPI get" control
sockmode=$(r stat -L -c '%a %U' /var/run/wireguard/wg0.sock)
check secrets.uapi-socket-0600 "wg0's socket is $sockmode" test "$sockmode" = "600 solowg"
ip netns exec "$NP" unshare -m sh -c 'mount -t tmpfs tmpfs /run && exec timeout 30 "$1" -f "$2"' \
	sh "$OW_SOLOWG" "wgp${OW_ID}x" >>"$OW_TMP/daemon-dir.log" 2>&1 &
DIRD=$!
OW_BG+=("$DIRD")
dir_ok() {
	local p
	p=$(pgrep -P "$DIRD" -x timeout) || p=$DIRD
	p=$(pgrep -P "$p" solowg) || return 1
	[[ -S /proc/$p/root/run/wireguard/wgp${OW_ID}x.sock ]] &&
		[[ $(stat -c %a "/proc/$p/root/run/wireguard") == 700 ]] &&
		[[ $(stat -c %a "/proc/$p/root/run/wireguard/wgp${OW_ID}x.sock") == 600 ]]
}
check secrets.created-socket-dir-0700 "a plain daemon's own socket directory is not 0700 with a 0600 socket" ow_wait 5 dir_ok
stop_job "$DIRD"

# --- SIGTERM under load
iperf_start term b 5207 6
sleep 2
APID=$(daemon_pid)
t0=$(date +%s%N)
r kill -TERM "$APID"
gone() { ! r kill -0 "$APID" 2>/dev/null; }
term_ok() {
	ow_wait 1 gone || return 1
	echo "# exited $((($(date +%s%N) - t0) / 1000000)) ms after SIGTERM"
	! r test -e /var/run/solowg/wg0.sock && ! ip -n "$NR" link show wg0 >/dev/null 2>&1
}
check sigterm.under-load "not gone within 1 s with its socket and TUN" term_ok
stop_job "${IPC[term]}"
stop_job "${IPS[term]}"

# --- the daemon started with CAP_NET_ADMIN as its only capability (as a procd or ujail
# configured with a capability set would start it, without CAP_SETPCAP to drop the rest):
# root's fallback mode (no --user), reading /etc/config itself; it keeps that bounding set,
# netifd sets wg0 up through it and the init script's reload (LuCI's Reload) reaches it.
# (procd's Save & Apply trigger belongs to the procd service, stopped here.)
r /etc/init.d/solowg stop >/dev/null 2>&1
gone_all() { ! r pidof solowg >/dev/null; }
ow_wait 10 gone_all || echo "# a solowg process still there after stop"
ow_bg r solowg-capped "setpriv --bounding-set=-all,+net_admin --inh-caps=-all -- /usr/sbin/solowg --uci"
capped_object() { r ubus -t 2 list solowg >/dev/null 2>&1; }
ow_wait 10 capped_object || echo "# the capped daemon registered no object: $(tail -n 5 "$OW_TMP/r/solowg-capped.log")"
r ifup wg0 || true
check capped.up "wg0 not up and answering within 30 s through the capped daemon" ow_wait 30 eval 'up wg0 && ping_b && ping_c'
r sh -c 'uci set network.peerc.description=capped && uci commit network && /etc/init.d/solowg reload' >/dev/null
capped_reloaded() { [[ $(peer_of c description) == capped ]]; }
check capped.reload "the init script's reload not applied by the capped daemon" ow_wait 10 capped_reloaded
cst=$(r cat "/proc/$(r pidof solowg)/status" 2>/dev/null || true)
check capped.caps "capabilities: $(grep -E '^Cap(Eff|Bnd)' <<<"$cst" | tr '\n\t' '  ')" \
	eval 'grep -qx "CapEff:.0000000000001000" <<<"$cst" && grep -qx "CapBnd:.0000000000001000" <<<"$cst"'

echo "# scenarios: $((SECONDS - start_s)) s"
ow_summary
